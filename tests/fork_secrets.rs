//! A forked child and its parent issue join tokens whose secrets neither
//! can predict from the other: the child starts with a copy of the
//! parent's token generator, and must reseed before its first secret.
//! (The generator's own tests replay the fork handler without a fork; this
//! one forks for real.)
#![cfg(unix)]

use relaystore::time::ManualClock;
use relaystore::{Store, StoreConfig, TenantId, TOKEN_SECRET_BYTES};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::Duration;

const T: TenantId = TenantId(1);

/// The secret part of a new join token (after the 16-byte attempt id).
fn secret(store: &Store) -> [u8; TOKEN_SECRET_BYTES] {
    let ticket = store
        .begin_join(T, "lobby", "client", Duration::from_secs(10), None)
        .expect("a join");
    let bytes = ticket.token.to_bytes();
    bytes[16..]
        .try_into()
        .expect("16 bytes of id, then the secret")
}

#[test]
#[allow(unsafe_code)]
fn a_forked_child_issues_secrets_its_parent_cannot_predict() {
    let store = Store::new(StoreConfig::default(), Arc::new(ManualClock::new())).unwrap();
    let lease = store
        .grant(T, "host", Duration::from_secs(60), None)
        .unwrap();
    store.publish(T, lease.id, "lobby", b"", None).unwrap();
    // Seeds this thread's generator before the fork.
    secret(&store);
    let (mut parent_end, mut child_end) = UnixStream::pair().unwrap();
    // SAFETY: the child only issues one token through the store (no other
    // thread of this process uses the store, so no lock it takes can be
    // held by a thread the fork left behind), writes it to a socket and
    // leaves with `_exit`, running no destructors or test harness code.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let ok = child_end.write_all(&secret(&store)).is_ok();
        // SAFETY: `_exit` ends the child at once; always sound.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let mine = secret(&store);
    let mut theirs = [0; TOKEN_SECRET_BYTES];
    parent_end
        .read_exact(&mut theirs)
        .expect("the child's secret");
    let mut status = 0;
    // SAFETY: waits for the child this test forked; `status` is a valid
    // out-pointer for the call's duration.
    let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(waited, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    assert_ne!(
        mine, theirs,
        "parent and child issued the same secret after the fork"
    );
}
