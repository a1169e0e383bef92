//! Join-token secrets: a per-thread ChaCha20 generator, seeded from the OS
//! random source and reseeded after every [`RESEED_AFTER_BYTES`] of output
//! and after every `fork`, so a secret costs a few nanoseconds of
//! userspace work instead of a system call (ADR 0027).
//!
//! - **Unpredictable across threads**: each thread seeds its own generator
//!   from the OS (256-bit seeds); no state is shared.
//! - **Unpredictable across forks**: a child process starts with a copy of
//!   the parent's generator, which would hand both the same secrets. A
//!   `pthread_atfork` child handler bumps a process-wide fork count; a
//!   thread whose generator was seeded under another count reseeds before
//!   its next draw, so nothing buffered before the fork is ever used after
//!   it.
//! - **Reseeded periodically**, so a thread's generator state seen at one
//!   moment (a memory disclosure, say) predicts at most the next 64 KiB of
//!   secrets (4,096 tokens).

use crate::base::error::{Error, Result};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Fills `buf` from the OS CSPRNG. A failure is reported as
/// [`Error::ServiceUnavailable`]: the store cannot issue a secret, so it
/// refuses rather than issue a weak one.
pub(crate) fn random_bytes(buf: &mut [u8]) -> Result<()> {
    getrandom::fill(buf).map_err(|_| Error::ServiceUnavailable {
        reason: crate::base::error::Unavailable::Entropy,
    })
}

/// Output a thread's generator gives before it is reseeded from the OS.
pub const RESEED_AFTER_BYTES: u64 = 64 * 1024;

/// Forks this process has gone through (as seen in the child).
static FORKS: AtomicU64 = AtomicU64::new(0);

struct Local {
    rng: ChaCha20Rng,
    drawn: u64,
    /// `FORKS` when the generator was seeded.
    forks: u64,
}

std::thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
}

/// Fills `buf` with secret bytes. `ServiceUnavailable` (`Entropy`) if the
/// OS random source fails when the generator needs a seed.
pub(crate) fn fill(buf: &mut [u8]) -> Result<()> {
    watch_forks();
    let forks = FORKS.load(Ordering::Relaxed);
    // A thread whose locals are being torn down (a token issued from a
    // thread-local destructor) asks the OS directly.
    let drawn = LOCAL.try_with(|cell| {
        let mut local = cell.borrow_mut();
        let fresh = local
            .as_ref()
            .is_some_and(|l| l.forks == forks && l.drawn < RESEED_AFTER_BYTES);
        if !fresh {
            let mut seed = [0; 32];
            random_bytes(&mut seed)?;
            *local = Some(Local {
                rng: ChaCha20Rng::from_seed(seed),
                drawn: 0,
                forks,
            });
        }
        let l = local.as_mut().expect("seeded above");
        l.rng.fill_bytes(buf);
        l.drawn += buf.len() as u64;
        Ok(())
    });
    drawn.unwrap_or_else(|_| random_bytes(buf))
}

/// What the fork handler does in the child: every thread's generator is
/// stale from now on. (Only the forking thread survives a fork.)
#[cfg_attr(not(unix), allow(dead_code))] // No fork, no handler.
extern "C" fn forked() {
    FORKS.fetch_add(1, Ordering::Relaxed);
}

/// Registers [`forked`] as a fork child handler, once per process.
#[allow(unsafe_code)] // The fork handler's registration: ADR 0027.
fn watch_forks() {
    #[cfg(unix)]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // SAFETY: `pthread_atfork` only records the three function
            // pointers; the one given, `forked`, is an `extern "C" fn`
            // with no arguments that does one atomic add (async-signal
            // safe, cannot unwind), and lives as long as the process. It
            // is registered once (`Once`). A failure (ENOMEM) leaves
            // forks undetected, so it is treated as fatal.
            let registered = unsafe { libc::pthread_atfork(None, None, Some(forked)) };
            assert_eq!(registered, 0, "pthread_atfork failed: {registered}");
        });
    }
}

#[cfg(all(test, not(relaystore_loom)))]
mod tests {
    use super::*;

    /// The next 16 bytes this thread's generator would give, without
    /// drawing them.
    fn peek() -> [u8; 16] {
        LOCAL.with(|cell| {
            let mut copy = cell.borrow().as_ref().expect("seeded").rng.clone();
            let mut out = [0; 16];
            copy.fill_bytes(&mut out);
            out
        })
    }

    #[test]
    fn a_fork_makes_the_next_secret_come_from_a_new_seed() {
        let mut secret = [0; 16];
        fill(&mut secret).unwrap();
        // Without a fork the next secret is the generator's next output:
        // what a forked child would share with its parent.
        let expected = peek();
        fill(&mut secret).unwrap();
        assert_eq!(secret, expected, "no fork: the same generator goes on");
        // A fork (the handler as the child runs it): the next secret comes
        // from a fresh seed, not from the copied state.
        let copied = peek();
        forked();
        fill(&mut secret).unwrap();
        assert_ne!(secret, copied, "after a fork the copied state was used");
    }

    #[test]
    fn the_generator_is_reseeded_after_its_budget() {
        let drawn = || LOCAL.with(|c| c.borrow().as_ref().expect("seeded").drawn);
        let mut chunk = [0; 4096];
        fill(&mut chunk).unwrap();
        while drawn() < RESEED_AFTER_BYTES {
            fill(&mut chunk).unwrap();
        }
        // Spent: the next draw comes from a new seed.
        let copied = peek();
        let mut next = [0; 16];
        fill(&mut next).unwrap();
        assert_eq!(drawn(), 16, "a fresh generator gave the draw");
        assert_ne!(next, copied, "the spent generator went on");
    }

    #[test]
    fn threads_draw_different_secrets() {
        let draw = || {
            let mut s = [0; 16];
            fill(&mut s).unwrap();
            s
        };
        let theirs = std::thread::spawn(draw).join().unwrap();
        assert_ne!(draw(), theirs);
    }
}
