//! Job queues: claims, the one claim-validity rule, backoff, visibility
//! lapses, dead letters and bounds. Every rule on a `ManualClock`.

mod common;

use common::ops::*;
use relaystore::events::{Cause, Collection, RecordId};
use relaystore::queue::{Backoff, Failed, Jitter, JobOptions, JobState, QueueConfig, Unique};
use relaystore::{Error, Scope, Store};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

fn seeded(seed: u64) -> QueueConfig {
    QueueConfig::default().jitter_seed(Some(seed))
}

fn queue(s: &Store, cfg: QueueConfig) {
    s.create_queue(T, "work", cfg).unwrap();
}

fn enqueue(s: &Store, payload: &[u8]) -> relaystore::JobId {
    s.enqueue(T, "work", payload, JobOptions::default())
        .unwrap()
}

#[test]
fn claims_hand_out_ready_jobs_oldest_first_and_ack_removes_them() {
    let (_c, s) = store();
    queue(&s, seeded(1));
    let ids: Vec<_> = (0..5u8).map(|i| enqueue(&s, &[i])).collect();
    let first = s.claim(T, "work", "w1", None, 2).unwrap();
    assert_eq!(
        first.iter().map(|j| j.id).collect::<Vec<_>>(),
        ids[..2].to_vec()
    );
    assert_eq!(first[0].payload.as_ref(), &[0]);
    assert_eq!(first[0].attempt, 1);
    assert_eq!(first[0].visibility, Duration::from_secs(300), "the default");
    let second = s.claim(T, "work", "w2", Some(SEC * 10), 10).unwrap();
    assert_eq!(
        second.iter().map(|j| j.id).collect::<Vec<_>>(),
        ids[2..].to_vec(),
        "never a job another live claim holds"
    );
    assert_eq!(second[0].visibility, SEC * 10);
    assert!(s.claim(T, "work", "w3", None, 10).unwrap().is_empty());
    for job in first.iter().chain(&second) {
        s.ack(T, "work", job.id, job.claim).unwrap();
    }
    assert_eq!(s.queue_info(T, "work").unwrap(), Default::default());
    assert_eq!(s.job(T, "work", ids[0]), Err(Error::NotFound));
    s.audit().unwrap();
}

#[test]
fn a_stale_foreign_or_lapsed_claim_is_refused_and_changes_nothing() {
    let (clock, s) = store();
    queue(&s, seeded(1));
    let a = enqueue(&s, b"a");
    let b = enqueue(&s, b"b");
    let claims = s.claim(T, "work", "w", Some(SEC * 10), 2).unwrap();
    let (ca, cb) = (claims[0].claim, claims[1].claim);
    let before = (s.job(T, "work", a).unwrap(), s.job(T, "work", b).unwrap());
    // Foreign: another job's claim.
    assert_eq!(s.ack(T, "work", a, cb), Err(Error::StaleClaim));
    assert_eq!(s.fail(T, "work", b, ca, "boom"), Err(Error::StaleClaim));
    // Another tenant's probe looks like a missing queue.
    assert_eq!(s.ack(OTHER, "work", a, ca), Err(Error::NotFound));
    assert_eq!(
        (s.job(T, "work", a).unwrap(), s.job(T, "work", b).unwrap()),
        before,
        "byte for byte as it was"
    );
    // Lapsed, not yet swept: refused, and the job is not moved by it.
    clock.advance(SEC * 10);
    let lapsed = s.job(T, "work", a).unwrap();
    assert_eq!(s.ack(T, "work", a, ca), Err(Error::StaleClaim));
    assert_eq!(s.job(T, "work", a).unwrap(), lapsed);
    // Stale: the job was claimed again since.
    let again = s.claim(T, "work", "w2", None, 1).unwrap();
    assert_eq!(
        (again[0].id, again[0].attempt),
        (a, 2),
        "a lapse uses an attempt"
    );
    let held = s.job(T, "work", a).unwrap();
    assert_eq!(s.ack(T, "work", a, ca), Err(Error::StaleClaim));
    assert_eq!(s.fail(T, "work", a, ca, "late"), Err(Error::StaleClaim));
    assert_eq!(s.job(T, "work", a).unwrap(), held);
    s.ack(T, "work", a, again[0].claim).unwrap();
    s.audit().unwrap();
}

#[test]
fn failures_back_off_with_equal_jitter_from_the_queue_seed() {
    let backoff = Backoff {
        base: SEC,
        max: SEC * 8,
    };
    let cfg = seeded(42).attempts_max(6).backoff(backoff);
    let (clock, s) = store();
    queue(&s, cfg);
    let id = enqueue(&s, b"x");
    let mut jitter = Jitter::seeded(42);
    let mut delays = Vec::new();
    for attempt in 1..=5u32 {
        let job = s.claim(T, "work", "w", None, 1).unwrap().remove(0);
        assert_eq!(job.attempt, attempt);
        let Failed::RetryIn(delay) = s.fail(T, "work", id, job.claim, "boom").unwrap() else {
            panic!("attempt {attempt} of 6 dead-lettered");
        };
        let capped = backoff.capped(attempt);
        assert_eq!(capped, (SEC * (1 << (attempt - 1))).min(SEC * 8));
        assert_eq!(delay, backoff.delay(attempt, jitter.next()));
        assert!(
            delay >= capped / 2 && delay <= capped,
            "{delay:?} of {capped:?}"
        );
        assert_eq!(
            s.job(T, "work", id).unwrap().state,
            JobState::Delayed { ready_in: delay }
        );
        // Invisible until its backoff has passed, then claimable.
        clock.advance(delay - Duration::from_millis(1));
        assert!(s.claim(T, "work", "w", None, 1).unwrap().is_empty());
        clock.advance(Duration::from_millis(1));
        delays.push(delay);
    }
    // Same seed, same operations: the same delays.
    let (clock2, s2) = store();
    s2.create_queue(T, "work", seeded(42).attempts_max(6).backoff(backoff))
        .unwrap();
    let id2 = s2.enqueue(T, "work", b"x", JobOptions::default()).unwrap();
    for (attempt, &delay) in (1..).zip(&delays) {
        let job = s2.claim(T, "work", "w", None, 1).unwrap().remove(0);
        assert_eq!(job.attempt, attempt);
        assert_eq!(
            s2.fail(T, "work", id2, job.claim, "boom").unwrap(),
            Failed::RetryIn(delay)
        );
        clock2.advance(delay);
    }
    // Another seed draws other delays.
    let (_c3, s3) = store();
    s3.create_queue(T, "work", seeded(43).attempts_max(6).backoff(backoff))
        .unwrap();
    let id3 = s3.enqueue(T, "work", b"x", JobOptions::default()).unwrap();
    let job = s3.claim(T, "work", "w", None, 1).unwrap().remove(0);
    let other = s3.fail(T, "work", id3, job.claim, "boom").unwrap();
    let mut j43 = Jitter::seeded(43);
    assert_eq!(other, Failed::RetryIn(backoff.delay(1, j43.next())));
    s.audit().unwrap();
}

#[test]
fn the_last_failed_attempt_dead_letters_and_dead_letters_can_be_requeued_or_purged() {
    let (_c, s) = store();
    queue(
        &s,
        seeded(1).attempts_max(2).backoff(Backoff {
            base: Duration::ZERO,
            max: Duration::ZERO,
        }),
    );
    let id = enqueue(&s, b"poison");
    let keep = s
        .enqueue(
            T,
            "work",
            b"other",
            JobOptions::default().with_attempts_max(1),
        )
        .unwrap();
    let claimed = s.claim(T, "work", "w", None, 2).unwrap();
    assert_eq!(
        s.fail(T, "work", id, claimed[0].claim, "e1").unwrap(),
        Failed::RetryIn(Duration::ZERO)
    );
    assert_eq!(
        s.fail(T, "work", keep, claimed[1].claim, "once").unwrap(),
        Failed::DeadLettered,
        "a job's own attempts_max"
    );
    let again = s.claim(T, "work", "w", None, 1).unwrap().remove(0);
    assert_eq!(again.attempt, 2);
    assert_eq!(
        s.fail(T, "work", id, again.claim, "e2").unwrap(),
        Failed::DeadLettered
    );
    let dead = s.dead_letters(T, "work", None, 10).unwrap();
    assert_eq!(
        dead.iter().map(|d| d.id).collect::<Vec<_>>(),
        vec![id, keep]
    );
    assert_eq!((dead[0].attempts, dead[0].reason.as_ref()), (2, "e2"));
    assert_eq!(dead[0].payload.as_ref(), b"poison");
    assert_eq!(
        s.dead_letters(T, "work", Some(id), 10).unwrap().len(),
        1,
        "paged after an id"
    );
    assert!(
        s.claim(T, "work", "w", None, 10).unwrap().is_empty(),
        "dead is not ready"
    );
    s.requeue_dead(T, "work", id).unwrap();
    assert_eq!(
        s.requeue_dead(T, "work", id),
        Err(Error::NotFound),
        "not dead any more"
    );
    let revived = s.claim(T, "work", "w", None, 1).unwrap().remove(0);
    assert_eq!(
        (revived.id, revived.attempt),
        (id, 1),
        "attempts start over"
    );
    assert_eq!(s.purge_dead(T, "work").unwrap(), 1);
    let info = s.queue_info(T, "work").unwrap();
    assert_eq!((info.claimed, info.dead, info.bytes), (1, 0, 6));
    s.audit().unwrap();
}

#[test]
fn a_lapsed_claim_returns_its_job_through_the_sweep_and_its_last_lapse_dead_letters() {
    let (clock, s) = store();
    queue(&s, seeded(1).attempts_max(2));
    let id = enqueue(&s, b"j");
    s.claim(T, "work", "w", Some(SEC * 5), 1).unwrap();
    clock.advance(SEC * 5);
    s.sweep();
    assert_eq!(
        s.job(T, "work", id).unwrap().state,
        JobState::Ready,
        "the sweep returned it"
    );
    assert_eq!(s.job(T, "work", id).unwrap().attempts, 1);
    s.claim(T, "work", "w", Some(SEC * 5), 1).unwrap();
    clock.advance(SEC * 5);
    s.sweep();
    assert_eq!(
        s.job(T, "work", id).unwrap().state,
        JobState::Dead {
            reason: Arc::from("visibility lapsed")
        }
    );
    s.audit().unwrap();
}

/// A queue whose one job's last claim lapsed at this instant, the sweep
/// not run since.
fn lapsed_and_unswept() -> (Store, relaystore::JobId) {
    let (clock, s) = store();
    queue(&s, seeded(1).attempts_max(1).dead_letters_max(Some(1)));
    let id = enqueue(&s, b"j");
    s.claim(T, "work", "w", Some(SEC), 1).unwrap();
    clock.advance(SEC);
    (s, id)
}

#[test]
fn every_call_sees_a_lapse_as_of_now_whether_or_not_a_read_settled_it() {
    // The same calls on a queue nobody touched since the lapse and on one
    // an operator's read (`queue_info`) came to first: a read changes no
    // other call's answer, and each answers as of now.
    for read_first in [false, true] {
        let fresh = || {
            let (s, id) = lapsed_and_unswept();
            if read_first {
                assert_eq!(s.queue_info(T, "work").unwrap().dead, 1);
            }
            (s, id)
        };
        let (s, id) = fresh();
        assert_eq!(
            s.job(T, "work", id).unwrap().state,
            JobState::Dead {
                reason: Arc::from("visibility lapsed")
            },
            "read first: {read_first}"
        );
        let (s, id) = fresh();
        let dead = s.dead_letters(T, "work", None, 10).unwrap();
        assert_eq!(
            dead.iter().map(|d| d.id).collect::<Vec<_>>(),
            vec![id],
            "read first: {read_first}"
        );
        let (s, _) = fresh();
        assert_eq!(s.purge_dead(T, "work"), Ok(1), "read first: {read_first}");
        let (s, id) = fresh();
        assert_eq!(
            s.requeue_dead(T, "work", id),
            Ok(()),
            "read first: {read_first}"
        );
        let (s, _) = fresh();
        assert!(
            matches!(
                s.enqueue(T, "work", b"k", JobOptions::default()),
                Err(Error::CapacityExceeded {
                    scope: Scope::QueueDeadLetters,
                    ..
                })
            ),
            "the dead letter fills its cap; read first: {read_first}"
        );
        s.audit().unwrap();
    }
}

#[test]
fn a_call_that_readies_jobs_early_leaves_the_wake_for_a_waiting_worker() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    let mut cx = Context::from_waker(Waker::noop());
    // Jobs whose delay ends become ready for whichever call comes first:
    // an operator's read, or another worker's claim. Either way a worker
    // waiting on the queue must still be woken by the sweep.
    type Early = fn(&Store);
    let readers: [(&str, Early); 2] = [
        ("a read", |s| {
            assert_eq!(s.queue_info(T, "work").unwrap().ready, 2);
        }),
        ("another worker's claim", |s| {
            assert_eq!(s.claim(T, "work", "other", None, 1).unwrap().len(), 1);
        }),
    ];
    for (what, early) in readers {
        let (clock, s) = store();
        queue(&s, seeded(1));
        for payload in [b"one", b"two"] {
            s.enqueue(T, "work", payload, JobOptions::delayed(SEC * 2))
                .unwrap();
        }
        let mut waiter = std::pin::pin!(s.claim_wait(T, "work", "w", None, 1));
        assert!(waiter.as_mut().poll(&mut cx).is_pending(), "nothing ready");
        clock.advance(SEC * 2);
        early(&s);
        s.sweep();
        match waiter.as_mut().poll(&mut cx) {
            Poll::Ready(Ok(jobs)) => assert_eq!(jobs.len(), 1, "after {what}"),
            other => {
                panic!("after {what}, the waiting worker slept through a ready job: {other:?}")
            }
        }
    }
}

#[test]
fn delayed_jobs_are_invisible_until_due() {
    let (clock, s) = store();
    queue(&s, seeded(1));
    let late = s
        .enqueue(T, "work", b"late", JobOptions::delayed(SEC * 30))
        .unwrap();
    let now = enqueue(&s, b"now");
    let got = s.claim(T, "work", "w", None, 10).unwrap();
    assert_eq!(got.iter().map(|j| j.id).collect::<Vec<_>>(), vec![now]);
    assert_eq!(
        s.job(T, "work", late).unwrap().state,
        JobState::Delayed { ready_in: SEC * 30 }
    );
    clock.advance(SEC * 29);
    assert!(s.claim(T, "work", "w", None, 10).unwrap().is_empty());
    clock.advance(SEC);
    assert_eq!(s.claim(T, "work", "w", None, 10).unwrap()[0].id, late);
    assert!(matches!(
        s.enqueue(T, "work", b"", JobOptions::delayed(SEC * 7200)),
        Err(Error::InvalidArgument { .. })
    ));
    s.audit().unwrap();
}

#[test]
fn a_job_for_a_wall_clock_time_waits_by_the_stores_clock_even_staged() {
    use relaystore::time::Clock;
    let (clock, s) = store();
    queue(&s, seeded(1));
    let at = clock.wall() + SEC * 30;
    let plain = s.enqueue(T, "work", b"plain", JobOptions::at(at)).unwrap();
    let mut tx = s.begin_tx();
    let staged = tx
        .enqueue(T, "work", b"staged", JobOptions::at(at))
        .unwrap();
    tx.commit().unwrap();
    for job in [plain, staged] {
        assert_eq!(
            s.job(T, "work", job).unwrap().state,
            JobState::Delayed { ready_in: SEC * 30 }
        );
    }
    // A wall-clock jump moves nothing already enqueued: its wait is set.
    clock.jump_wall_backward(SEC * 3600);
    clock.advance(SEC * 29);
    s.sweep();
    assert!(s.claim(T, "work", "w", None, 10).unwrap().is_empty());
    clock.advance(SEC);
    s.sweep();
    let got = s.claim(T, "work", "w", None, 10).unwrap();
    assert_eq!(
        got.iter().map(|j| j.id).collect::<Vec<_>>(),
        vec![plain, staged]
    );
    let past = s
        .enqueue(T, "work", b"past", JobOptions::at(clock.wall() - SEC))
        .unwrap();
    assert_eq!(s.job(T, "work", past).unwrap().state, JobState::Ready);
    s.audit().unwrap();
}

#[test]
fn claim_wait_wakes_on_enqueue_and_when_a_delay_ends() {
    let (clock, s) = store();
    queue(&s, seeded(1));
    let waiter = {
        let s = s.clone();
        std::thread::spawn(move || s.blocking_claim_wait(T, "work", "w", None, 1, SEC * 60))
    };
    // The waiter may attach before or after this enqueue: either way it
    // gets the job, and never sleeps through it.
    let id = enqueue(&s, b"hello");
    let got = waiter.join().unwrap().unwrap();
    assert_eq!(got[0].id, id);

    s.enqueue(T, "work", b"later", JobOptions::delayed(SEC * 2))
        .unwrap();
    let waiter = {
        let s = s.clone();
        std::thread::spawn(move || s.blocking_claim_wait(T, "work", "w", None, 1, SEC * 60))
    };
    std::thread::sleep(Duration::from_millis(20));
    clock.advance(SEC * 2);
    s.sweep(); // the delay's timer fires and wakes the waiter
    let got = waiter.join().unwrap().unwrap();
    assert_eq!(got[0].payload.as_ref(), b"later");
    // Nothing comes: an empty claim when the wait is over.
    assert!(s
        .blocking_claim_wait(T, "work", "w", None, 1, Duration::from_millis(10))
        .unwrap()
        .is_empty());
}

#[test]
fn every_bound_refuses_with_its_own_scope_and_changes_nothing() {
    let cfg = config()
        .queues_per_tenant_max(2)
        .queue_jobs_total_max(30)
        .job_payload_bytes_max(8);
    let (_c, s) = store_with(cfg);
    let small = |jobs_max, dead_letters_max| {
        QueueConfig::default()
            .jobs_max(jobs_max)
            .bytes_max(10)
            .dead_letters_max(Some(dead_letters_max))
            .attempts_max(1)
    };
    s.create_queue(T, "work", small(2, 1)).unwrap();
    assert_eq!(
        s.create_queue(T, "work", small(3, 1)),
        Err(Error::Exists),
        "same name, other settings"
    );
    s.create_queue(T, "work", small(2, 1)).unwrap(); // a retry is a no-op
    assert_eq!(
        (s.create_queue(T, "q2", small(29, 1))).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::QueueJobsTotal))
    );
    s.create_queue(T, "q2", small(2, 1)).unwrap();
    assert_eq!(
        (s.create_queue(T, "q3", small(2, 1))).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::Tenant(Collection::Queues)))
    );
    s.create_queue(OTHER, "q3", small(2, 1)).unwrap();
    assert_eq!(
        s.usage(T).of(Collection::Queues).map(|u| (u.used, u.limit)),
        Some((2, 2))
    );

    assert!(matches!(
        s.enqueue(T, "work", &[0; 9], JobOptions::default()),
        Err(Error::InvalidArgument { .. })
    ));
    let a = s
        .enqueue(T, "work", &[0; 6], JobOptions::default())
        .unwrap();
    // The refusal says what is full, in the scope's unit: payload bytes.
    assert_eq!(
        s.enqueue(T, "work", &[0; 5], JobOptions::default()),
        Err(Error::CapacityExceeded {
            scope: Scope::QueueBytes,
            limit: 10,
            used: 6,
        })
    );
    s.enqueue(T, "work", &[0; 4], JobOptions::default())
        .unwrap();
    assert_eq!(
        (s.enqueue(T, "work", &[], JobOptions::default())).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::QueueJobs))
    );
    // A dead letter keeps its slot; at dead_letters_max the queue stops
    // taking jobs until it is dealt with.
    let job = s.claim(T, "work", "w", None, 1).unwrap().remove(0);
    assert_eq!(job.id, a);
    s.fail(T, "work", a, job.claim, "boom").unwrap();
    let job = s.claim(T, "work", "w", None, 1).unwrap().remove(0);
    s.ack(T, "work", job.id, job.claim).unwrap();
    assert_eq!(
        (s.enqueue(T, "work", &[], JobOptions::default())).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::QueueDeadLetters))
    );
    s.purge_dead(T, "work").unwrap();
    s.enqueue(T, "work", &[], JobOptions::default()).unwrap();

    assert_eq!(
        s.create_queue(T, "__mine", small(2, 1)),
        Err(Error::ReservedName)
    );
    assert_eq!(
        s.enqueue(T, "__relaystore_outbox", b"", JobOptions::default()),
        Err(Error::ReservedName)
    );
    for bad in [
        (small(2, 1)).jobs_max(0),
        (small(2, 1)).dead_letters_max(Some(3)),
        (small(2, 1)).attempts_max(0),
        (small(2, 1)).visibility(Duration::ZERO),
        (small(2, 1)).backoff(relaystore::queue::Backoff {
            base: SEC,
            max: SEC * 7200,
        }),
        (small(2, 1))
            .jobs_max((1 << 20) + 1)
            .dead_letters_max(Some(1)),
    ] {
        assert!(
            matches!(
                s.create_queue(OTHER, "bad", bad.clone()),
                Err(Error::InvalidArgument { .. })
            ),
            "{bad:?}"
        );
    }
    assert!(matches!(
        s.claim(T, "work", "w", None, 0),
        Err(Error::InvalidArgument { .. })
    ));
    assert_eq!(
        s.enqueue(T, "nope", b"", JobOptions::default()),
        Err(Error::NotFound)
    );
    s.audit().unwrap();
}

#[test]
fn deleting_a_queue_takes_its_jobs_announces_it_and_makes_claims_stale() {
    let (_c, s) = store();
    queue(&s, seeded(1));
    let events = s.subscribe_to(&[Collection::Queues]).unwrap();
    let id = enqueue(&s, b"x");
    let job = s.claim(T, "work", "w", None, 1).unwrap().remove(0);
    s.delete_queue(T, "work").unwrap();
    assert_eq!(s.ack(T, "work", id, job.claim), Err(Error::NotFound));
    assert_eq!(s.queues(), 0);
    let event = events.try_recv().unwrap();
    let relaystore::events::Received::Event(event) = event else {
        panic!("{event:?}")
    };
    assert_eq!(
        (event.collection, event.id, event.cause),
        (
            Collection::Queues,
            RecordId::Queue(Arc::from("work")),
            Cause::Released
        )
    );
    // The name is free, and a new queue starts empty.
    queue(&s, seeded(1));
    assert_eq!(s.queue_info(T, "work").unwrap(), Default::default());
    s.audit().unwrap();
}

#[test]
fn a_draining_store_takes_no_jobs_but_finishes_claimed_ones() {
    let (_c, s) = store();
    queue(&s, seeded(1));
    let id = enqueue(&s, b"x");
    let job = s.claim(T, "work", "w", None, 1).unwrap().remove(0);
    s.begin_drain(SEC * 60).unwrap();
    assert_eq!(
        s.enqueue(T, "work", b"", JobOptions::default()),
        Err(Error::Draining)
    );
    s.ack(T, "work", id, job.claim).unwrap();
}

#[test]
fn eight_workers_ack_every_job_exactly_once() {
    let jobs = common::rounds("RELAYSTORE_QUEUE_JOBS", 100_000);
    let cfg = config().queue_jobs_max(jobs);
    let (_c, s) = store_with(cfg);
    s.create_queue(T, "work", seeded(1).jobs_max(jobs).bytes_max(jobs * 8))
        .unwrap();
    for chunk in 0..jobs / 1000 {
        for i in 0..1000u64 {
            let n = chunk as u64 * 1000 + i;
            s.enqueue(T, "work", &n.to_le_bytes(), JobOptions::default())
                .unwrap();
        }
    }
    let workers: Vec<_> = (0..8)
        .map(|w| {
            let s = s.clone();
            std::thread::spawn(move || {
                let mut done = Vec::new();
                loop {
                    let claimed = s.claim(T, "work", &format!("w{w}"), None, 16).unwrap();
                    if claimed.is_empty() {
                        return done;
                    }
                    for job in claimed {
                        s.ack(T, "work", job.id, job.claim).unwrap();
                        done.push(u64::from_le_bytes(job.payload[..].try_into().unwrap()));
                    }
                }
            })
        })
        .collect();
    let mut seen = HashSet::new();
    for worker in workers {
        for n in worker.join().unwrap() {
            assert!(seen.insert(n), "job {n} acked twice");
        }
    }
    assert_eq!(seen.len(), jobs / 1000 * 1000);
    assert_eq!(s.queue_info(T, "work").unwrap(), Default::default());
    s.audit().unwrap();
}

#[test]
fn racing_enqueues_under_one_unique_key_make_one_job() {
    // Eight threads enqueue under one key at once: one job goes in, and
    // every other enqueue names that job.
    let (_c, s) = store();
    queue(&s, seeded(1));
    let options = JobOptions::default().with_unique(Unique::key("session-9"));
    let results: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (s, options) = (s.clone(), options.clone());
                scope.spawn(move || s.enqueue(T, "work", b"cleanup", options))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let made: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(made.len(), 1, "{results:?}");
    for r in &results {
        if let Err(e) = r {
            assert_eq!(*e, Error::DuplicateJob { existing: *made[0] });
        }
    }
    assert_eq!(s.queue_info(T, "work").unwrap().ready, 1);
}

#[test]
fn a_unique_key_with_an_idempotency_key_and_in_a_transaction() {
    let (_c, s) = store();
    queue(&s, seeded(1));
    let keyed = JobOptions::default()
        .with_unique(Unique::key("u"))
        .with_idempotency_key("req-1");
    let id = s.enqueue(T, "work", b"x", keyed.clone()).unwrap();
    // A retry under its idempotency key answers its job, not a duplicate.
    assert_eq!(s.enqueue(T, "work", b"x", keyed.clone()), Ok(id));
    // Another unique key under the same idempotency key is another request.
    let other = keyed.clone().with_unique(Unique::key("v"));
    assert_eq!(
        s.enqueue(T, "work", b"x", other),
        Err(Error::IdempotencyMismatch)
    );
    // Without the idempotency key, the unique key speaks.
    let plain = JobOptions::default().with_unique(Unique::key("u"));
    assert_eq!(
        s.enqueue(T, "work", b"x", plain.clone()),
        Err(Error::DuplicateJob { existing: id })
    );
    let mut tx = s.begin_tx();
    assert!(matches!(
        tx.enqueue(T, "work", b"x", plain),
        Err(Error::InvalidArgument { reason }) if reason.contains("transaction")
    ));
    s.audit().unwrap();
}
