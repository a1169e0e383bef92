//! Loom models of job queues and schedules: two claims racing for one job,
//! an ack racing the visibility lapse that hands its job to another
//! worker, and a schedule run racing a change of leader. Each runs the
//! real `Store` and has a broken twin the model catches.
#![cfg(relaystore_loom)]

#[path = "common.rs"]
mod common;

use loom::thread;
use relaystore::model::faults::{store_fault, StoreFault};
use relaystore::queue::{JobOptions, QueueConfig};
use relaystore::time::ManualClock;
use relaystore::{Error, Store, StoreConfig, TenantId};
use std::sync::Arc;
use std::time::Duration;

const T: TenantId = TenantId(1);
const SEC: Duration = Duration::from_secs(1);

fn store() -> (Arc<ManualClock>, Store) {
    let clock = Arc::new(ManualClock::new());
    let store = Store::new(StoreConfig::default(), clock.clone()).unwrap();
    let config = QueueConfig::default().jitter_seed(Some(1));
    store.create_queue(T, "work", config).unwrap();
    (clock, store)
}

fn name(fault: StoreFault, model: &str) -> String {
    if fault == StoreFault::None {
        model.to_string()
    } else {
        format!("{model} ({fault:?})")
    }
}

/// Two workers claim from a queue holding one ready job: exactly one of
/// them gets it.
fn claim_vs_claim(fault: StoreFault) {
    common::explore(&name(fault, "claim_vs_claim"), move || {
        store_fault(fault);
        let (_clock, store) = store();
        store
            .enqueue(T, "work", b"job", JobOptions::default())
            .unwrap();
        let other = {
            let store = store.clone();
            thread::spawn(move || {
                store_fault(fault);
                store.claim(T, "work", "w2", None, 1).unwrap().len()
            })
        };
        let mine = store.claim(T, "work", "w1", None, 1).unwrap().len();
        let theirs = other.join().unwrap();
        assert_eq!(
            mine + theirs,
            1,
            "one job, handed to {} claims",
            mine + theirs
        );
    });
}

/// Worker A's claim lapses while A acks; meanwhile the clock passes the
/// lapse and worker B claims the job. Either A's ack lands first (B finds
/// nothing) or B holds the job and A's ack is refused: never both.
fn ack_vs_reclaim(fault: StoreFault) {
    common::explore(&name(fault, "ack_vs_reclaim"), move || {
        store_fault(fault);
        let (clock, store) = store();
        let id = store
            .enqueue(T, "work", b"job", JobOptions::default())
            .unwrap();
        let held = store.claim(T, "work", "a", Some(SEC), 1).unwrap().remove(0);
        let b = {
            let store = store.clone();
            thread::spawn(move || {
                store_fault(fault);
                clock.advance(SEC);
                store.claim(T, "work", "b", None, 1).unwrap()
            })
        };
        let acked = store.ack(T, "work", id, held.claim);
        let b_holds = !b.join().unwrap().is_empty();
        match acked {
            Ok(()) => assert!(!b_holds, "acked while another worker holds the job"),
            Err(e) => assert_eq!((e, b_holds), (Error::StaleClaim, true)),
        }
    });
}

/// The old leader runs its schedules while its lock lapses, a new leader
/// takes the lock and runs, and time goes on. Every fire of the old
/// leader comes before every fire of the new one: once the new leader
/// has fired, the old one fires nothing.
fn fire_vs_leadership_loss(fault: StoreFault) {
    common::explore(&name(fault, "fire_vs_leadership_loss"), move || {
        store_fault(fault);
        let (clock, store) = store();
        store.schedule(T, "beat", "@every 1s", "work", b"").unwrap();
        let old = store
            .try_lead_schedules(T, "old", SEC + SEC / 2)
            .unwrap()
            .unwrap();
        clock.advance(SEC + SEC / 5);
        let new = {
            let store = store.clone();
            let clock = Arc::clone(&clock);
            thread::spawn(move || {
                store_fault(fault);
                clock.advance(SEC);
                let leader = store
                    .try_lead_schedules(T, "new", SEC)
                    .unwrap()
                    .expect("the old lock lapsed");
                let run = store.run_schedules(&leader).unwrap();
                clock.advance(SEC);
                run.fired
            })
        };
        let old_fired = match store.run_schedules(&old) {
            Ok(run) => run.fired,
            Err(e) => {
                assert_eq!(e, Error::LeadershipLost);
                0
            }
        };
        let new_fired = new.join().unwrap();
        // The jobs in id order: the old leader's first, if any.
        let jobs = store.claim(T, "work", "check", None, 16).unwrap();
        assert_eq!(jobs.len() as u64, old_fired + new_fired);
        let info = store.schedules(T);
        assert!(
            old_fired + new_fired <= 2,
            "fired {old_fired} (old) + {new_fired} (new): a point after the new leader's run \
             fired by the old leader; next in {:?}",
            info[0].next_in
        );
    });
}

#[test]
fn two_claims_never_take_the_same_job() {
    claim_vs_claim(StoreFault::None);
}

#[test]
#[should_panic]
fn broken_twin_picking_and_taking_under_two_holds_hands_a_job_out_twice() {
    claim_vs_claim(StoreFault::ClaimSplitHold);
}

#[test]
fn an_ack_racing_a_reclaim_never_removes_another_workers_job() {
    ack_vs_reclaim(StoreFault::None);
}

#[test]
#[should_panic]
fn broken_twin_checking_and_removing_under_two_holds_acks_anothers_job() {
    ack_vs_reclaim(StoreFault::AckSplitHold);
}

#[test]
fn a_leader_change_never_lets_the_old_leader_fire_after_the_new_one() {
    fire_vs_leadership_loss(StoreFault::None);
}

#[test]
#[should_panic]
fn broken_twin_checking_the_lead_outside_the_book_fires_for_a_lost_leader() {
    fire_vs_leadership_loss(StoreFault::LeaderCheckedOutside);
}

/// A waker that records that it was woken.
struct Flag(loom::sync::atomic::AtomicBool);

impl std::task::Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, loom::sync::atomic::Ordering::SeqCst);
    }
}

/// A worker's `claim_wait` polled once while another thread enqueues:
/// either the poll claims the job, or the enqueue wakes the worker. The
/// enqueue looks for waiting workers only after its job is ready, and a
/// worker counts itself waiting before it claims.
fn enqueue_vs_claim_wait(fault: StoreFault) {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    common::explore(&name(fault, "enqueue_vs_claim_wait"), move || {
        store_fault(fault);
        let (_clock, store) = store();
        let producer = {
            let store = store.clone();
            thread::spawn(move || {
                store_fault(fault);
                store
                    .enqueue(T, "work", b"job", JobOptions::default())
                    .unwrap();
            })
        };
        let flag = Arc::new(Flag(loom::sync::atomic::AtomicBool::new(false)));
        let waker = Waker::from(Arc::clone(&flag));
        let mut future = std::pin::pin!(store.claim_wait(T, "work", "w", None, 1));
        let polled = future.as_mut().poll(&mut Context::from_waker(&waker));
        producer.join().unwrap();
        match polled {
            Poll::Ready(claimed) => assert_eq!(claimed.unwrap().len(), 1),
            Poll::Pending => assert!(
                flag.0.load(loom::sync::atomic::Ordering::SeqCst),
                "the enqueue was lost: the worker is pending and was never woken"
            ),
        }
    });
}

#[test]
fn an_enqueue_racing_a_waiting_worker_always_reaches_it() {
    enqueue_vs_claim_wait(StoreFault::None);
}

#[test]
#[should_panic]
fn broken_twin_counting_waiters_before_the_job_is_ready_loses_the_wake() {
    enqueue_vs_claim_wait(StoreFault::WaitersReadEarly);
}
