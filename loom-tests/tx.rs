//! Loom models of transactions: a commit racing a claim (the claim sees
//! all of the commit's jobs or none), a commit racing a plain append to
//! its stream (offsets keep rising), a commit racing a read of two
//! listings (both old or both new), and a listener woken by a commit
//! (it reads the commit). Each runs the real `Store` and has a broken twin
//! the model catches.
#![cfg(relaystore_loom)]

#[path = "common.rs"]
mod common;

use loom::thread;
use relaystore::model::faults::{store_fault, StoreFault};
use relaystore::queue::{JobOptions, QueueConfig};
use relaystore::stream::{StreamConfig, WhenFull};
use relaystore::time::ManualClock;
use relaystore::{Store, StoreConfig, TenantId};
use std::sync::Arc;
use std::time::Duration;

const T: TenantId = TenantId(1);

fn name(fault: StoreFault, model: &str) -> String {
    if fault == StoreFault::None {
        model.to_string()
    } else {
        format!("{model} ({fault:?})")
    }
}

fn store() -> Store {
    let clock = Arc::new(ManualClock::new());
    Store::new(StoreConfig::default(), clock).unwrap()
}

/// A store with listings `keys` (attributes `old`) under one lease, and
/// their versions.
fn with_listings(keys: &[&str]) -> (Store, Vec<u64>) {
    let store = store();
    let lease = store
        .grant(T, "host", Duration::from_secs(60), None)
        .unwrap()
        .id;
    let versions = keys
        .iter()
        .map(|k| store.publish(T, lease, k, b"old", None).unwrap().version)
        .collect();
    (store, versions)
}

/// A transaction enqueues two jobs while a worker claims up to two: the
/// worker gets both or neither, never one.
fn commit_vs_claim(fault: StoreFault) {
    common::explore(&name(fault, "commit_vs_claim"), move || {
        store_fault(fault);
        let store = store();
        let config = QueueConfig::default().jitter_seed(Some(1));
        store.create_queue(T, "work", config).unwrap();
        let mut tx = store.begin_tx();
        tx.enqueue(T, "work", b"a", JobOptions::default()).unwrap();
        tx.enqueue(T, "work", b"b", JobOptions::default()).unwrap();
        let worker = {
            let store = store.clone();
            thread::spawn(move || {
                store_fault(fault);
                store.claim(T, "work", "w", None, 2).unwrap().len()
            })
        };
        tx.commit().unwrap();
        let claimed = worker.join().unwrap();
        assert!(claimed != 1, "the claim saw one of the commit's two jobs");
    });
}

/// A transaction's staged append commits while another thread appends to
/// the same stream plainly: the plain append either came first (and the
/// commit is refused with `Conflict`) or comes after the committed entry;
/// offsets in the stream always rise.
fn commit_vs_append(fault: StoreFault) {
    common::explore(&name(fault, "commit_vs_append"), move || {
        store_fault(fault);
        let store = store();
        let config = StreamConfig::new(8, 1 << 10, WhenFull::Refuse);
        store.create_stream(T, "log", config).unwrap();
        let mut tx = store.begin_tx();
        let staged = tx.append(T, "log", b"tx").unwrap();
        let other = {
            let store = store.clone();
            thread::spawn(move || {
                store_fault(fault);
                store.append(T, "log", b"plain", None).unwrap()
            })
        };
        let committed = tx.commit();
        let plain = other.join().unwrap();
        let read = store.read_stream(T, "log", 0, 8).unwrap();
        let offsets: Vec<u64> = read.entries.iter().map(|e| e.offset).collect();
        assert!(
            offsets.windows(2).all(|w| w[0] < w[1]),
            "offsets out of order: {offsets:?}"
        );
        match committed {
            Ok(_) => assert_eq!(offsets, vec![staged, plain]),
            Err(e) => {
                assert!(
                    matches!(
                        e,
                        relaystore::Error::Conflict {
                            reason: relaystore::ConflictReason::StreamMoved,
                            ..
                        }
                    ),
                    "{e:?}"
                );
                assert_eq!(offsets, vec![plain]);
            }
        }
    });
}

/// A transaction updates two listings while a reader lists them: the page
/// shows both old or both new. One preemption: a listing's read is many
/// loads of its slot's words (ADR 0078), and at two the model explores
/// 435,619 interleavings in three minutes; one already puts the whole
/// commit between the page's two reads, or the page between the commit's
/// two updates (the twin is caught).
fn commit_vs_list(fault: StoreFault) {
    common::explore_bounded(&name(fault, "commit_vs_list"), 1, move || {
        store_fault(fault);
        let (store, versions) = with_listings(&["a", "b"]);
        let (va, vb) = (versions[0], versions[1]);
        let reader = {
            let store = store.clone();
            thread::spawn(move || {
                store_fault(fault);
                let page = store.list_listings(T, None, 10).unwrap();
                page.items
                    .iter()
                    .map(|l| l.attrs.to_vec())
                    .collect::<Vec<_>>()
            })
        };
        let mut tx = store.begin_tx();
        tx.update_listing(T, "a", va, b"new").unwrap();
        tx.update_listing(T, "b", vb, b"new").unwrap();
        tx.commit().unwrap();
        let seen = reader.join().unwrap();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0], seen[1], "the reader saw half of a commit");
    });
}

/// A listener is woken by a commit that updates a listing and notifies:
/// once woken, it reads the update.
fn wake_after_commit(fault: StoreFault) {
    common::explore(&name(fault, "wake_after_commit"), move || {
        store_fault(fault);
        let (store, versions) = with_listings(&["a"]);
        let v = versions[0];
        let listener = store.listen(T, "changed").unwrap();
        let reader = {
            let store = store.clone();
            thread::spawn(move || {
                store_fault(fault);
                listener.blocking_recv().unwrap();
                store.get_listing(T, "a").unwrap().attrs.to_vec()
            })
        };
        let mut tx = store.begin_tx();
        tx.update_listing(T, "a", v, b"new").unwrap();
        tx.notify(T, "changed").unwrap();
        tx.commit().unwrap();
        let seen = reader.join().unwrap();
        assert_eq!(
            seen, b"new",
            "a listener woken by a commit read the state before it"
        );
    });
}

#[test]
fn commit_is_atomic_for_a_claim() {
    commit_vs_claim(StoreFault::None);
}

#[test]
#[should_panic]
fn commit_is_atomic_for_a_claim_broken_twin() {
    commit_vs_claim(StoreFault::TxGateBypassed);
}

#[test]
fn commit_and_a_plain_append_keep_offsets_rising() {
    commit_vs_append(StoreFault::None);
}

#[test]
#[should_panic]
fn commit_and_a_plain_append_keep_offsets_rising_broken_twin() {
    commit_vs_append(StoreFault::TxGateBypassed);
}

#[test]
fn commit_is_atomic_for_a_listing_page() {
    commit_vs_list(StoreFault::None);
}

#[test]
#[should_panic]
fn commit_is_atomic_for_a_listing_page_broken_twin() {
    commit_vs_list(StoreFault::TxReadUnchecked);
}

#[test]
fn a_woken_listener_reads_the_commit() {
    wake_after_commit(StoreFault::None);
}

#[test]
#[should_panic]
fn a_woken_listener_reads_the_commit_broken_twin() {
    wake_after_commit(StoreFault::TxWakeAtStaging);
}
