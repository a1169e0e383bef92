//! Transactions: staged changes read back inside the transaction, applied
//! all at once or not at all, with wakes only after the commit.

mod common;

use common::ops::*;
use relaystore::events::Collection;
use relaystore::queue::{JobOptions, JobState, QueueConfig};
use relaystore::stream::{StreamConfig, WhenFull};
use relaystore::{ConflictReason, Error, LeaseId, Scope, Store, OUTBOX_QUEUE};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

/// A store with a lease, a listing `lobby` under it, a stream `log` that
/// refuses past 3 entries, a queue `work` of at most 3 jobs and a
/// listener on channel `lobby-changed`.
fn relay() -> (
    std::sync::Arc<relaystore::time::ManualClock>,
    Store,
    LeaseId,
) {
    let (clock, s) = store();
    let lease = s.grant(T, "host", 60 * SEC, None).unwrap().id;
    s.publish(T, lease, "lobby", b"v1", None).unwrap();
    s.create_stream(T, "log", StreamConfig::new(3, 1 << 20, WhenFull::Refuse))
        .unwrap();
    let queue = QueueConfig::default()
        .jobs_max(3)
        .dead_letters_max(Some(3))
        .jitter_seed(Some(7));
    s.create_queue(T, "work", queue).unwrap();
    (clock, s, lease)
}

/// Everything a reader of the transactional collections can see, as text
/// (but the stream's next offset, which staging an append moves: the
/// documented gap).
fn seen(s: &Store) -> String {
    let listings = s.list_listings(T, None, 100).unwrap();
    let info = s.stream_info(T, "log").unwrap();
    let log = s.read_stream(T, "log", info.first, 100).unwrap();
    let log_info = (info.first, info.entries, info.bytes, info.consumers);
    let work = s.queue_info(T, "work").unwrap();
    let outbox = s.queue_info(T, OUTBOX_QUEUE);
    let schedules = s.schedules(T);
    s.audit().unwrap();
    format!(
        "{:x} {listings:?} {log:?} {log_info:?} {work:?} {outbox:?} {schedules:?} {:?}",
        s.digest(),
        s.committed(T, "log", "reader")
    )
}

#[test]
fn reads_inside_a_transaction_see_its_own_writes() {
    let (_clock, s, lease) = relay();
    let v1 = s.get_listing(T, "lobby").unwrap().version;
    let mut tx = s.begin_tx();
    tx.update_listing(T, "lobby", v1, b"v2").unwrap();
    tx.publish(T, lease, "lobby-2", b"new").unwrap();
    let offset = tx.append(T, "log", b"lobby v2").unwrap();
    let job = tx
        .enqueue(T, "work", b"announce", JobOptions::default())
        .unwrap();
    let later = tx
        .enqueue(T, "work", b"later", JobOptions::delayed(5 * SEC))
        .unwrap();

    let updated = tx.get_listing(T, "lobby").unwrap();
    assert_eq!((&*updated.attrs, updated.version), (&b"v2"[..], v1));
    assert_eq!(&*tx.get_listing(T, "lobby-2").unwrap().attrs, b"new");
    let read = tx.read_stream(T, "log", 0, 10).unwrap();
    assert_eq!(read.entries.len(), 1);
    assert_eq!(
        (read.entries[0].offset, &*read.entries[0].payload),
        (offset, &b"lobby v2"[..])
    );
    assert_eq!(read.next, offset + 1);
    assert_eq!(tx.job(T, "work", job).unwrap().state, JobState::Ready);
    assert_eq!(
        tx.job(T, "work", later).unwrap().state,
        JobState::Delayed { ready_in: 5 * SEC }
    );
    let info = tx.queue_info(T, "work").unwrap();
    assert_eq!((info.ready, info.delayed), (1, 1));

    // Outside the transaction nothing of it is visible yet.
    assert_eq!(&*s.get_listing(T, "lobby").unwrap().attrs, b"v1");
    assert_eq!(s.get_listing(T, "lobby-2"), Err(Error::NotFound));
    assert!(s.read_stream(T, "log", 0, 10).unwrap().entries.is_empty());
    assert_eq!(s.job(T, "work", job), Err(Error::NotFound));

    let committed = tx.commit().unwrap();
    let now = s.get_listing(T, "lobby").unwrap();
    assert_eq!(&*now.attrs, b"v2");
    assert_eq!(committed.listing_version(T, "lobby"), Some(now.version));
    assert!(now.version > v1);
    assert_eq!(
        committed.listing_version(T, "lobby-2"),
        Some(s.get_listing(T, "lobby-2").unwrap().version)
    );
    assert_eq!(s.read_stream(T, "log", 0, 10).unwrap().entries.len(), 1);
    assert_eq!(s.job(T, "work", job).unwrap().state, JobState::Ready);
    s.audit().unwrap();
}

#[test]
fn acks_fails_and_unpublishes_read_back_and_commit() {
    let (_clock, s, _lease) = relay();
    let a = s.enqueue(T, "work", b"a", JobOptions::default()).unwrap();
    let b = s
        .enqueue(T, "work", b"b", JobOptions::default().with_attempts_max(1))
        .unwrap();
    let claimed = s.claim(T, "work", "w", None, 2).unwrap();
    let mut tx = s.begin_tx();
    tx.ack(T, "work", a, claimed[0].claim).unwrap();
    tx.fail(T, "work", b, claimed[1].claim, "broken").unwrap();
    tx.unpublish(T, "lobby", None).unwrap();
    assert_eq!(tx.job(T, "work", a), Err(Error::NotFound));
    assert!(matches!(
        tx.job(T, "work", b).unwrap().state,
        JobState::Dead { .. }
    ));
    let info = tx.queue_info(T, "work").unwrap();
    assert_eq!((info.claimed, info.dead, info.bytes), (0, 1, 1));
    assert_eq!(tx.get_listing(T, "lobby"), Err(Error::NotFound));
    let committed = tx.commit().unwrap();
    assert_eq!(
        committed.failed,
        vec![(b, relaystore::queue::Failed::DeadLettered)]
    );
    assert_eq!(s.queue_info(T, "work").unwrap(), info);
    assert_eq!(s.get_listing(T, "lobby"), Err(Error::NotFound));
}

/// Each staged change that the commit must refuse, placed last, behind
/// changes that would succeed: the commit changes nothing at all.
#[test]
fn a_refused_commit_changes_nothing() {
    type Spoil = fn(&Store, &mut relaystore::Transaction, LeaseId);
    type Expected = fn(&Error) -> bool;
    let spoilers: Vec<(&str, Spoil, Expected)> = vec![
        (
            "stream full",
            |s, tx, _| {
                let config = StreamConfig::new(1, 1 << 20, WhenFull::Refuse);
                s.create_stream(T, "full", config).unwrap();
                s.append(T, "full", b"old", None).unwrap();
                tx.append(T, "full", b"one too many").unwrap();
            },
            |e| e.capacity_scope().is_some(),
        ),
        (
            "queue full",
            |_, tx, _| {
                for _ in 0..3 {
                    tx.enqueue(T, "work", b"j", JobOptions::default()).unwrap();
                }
                tx.enqueue(T, "work", b"j", JobOptions::default()).unwrap();
            },
            |e| e.capacity_scope().is_some(),
        ),
        (
            "listing version moved",
            |s, tx, _| {
                let v = s.get_listing(T, "lobby").unwrap().version;
                tx.update_listing(T, "lobby", v, b"mine").unwrap();
                s.update_listing(T, "lobby", v, b"theirs").unwrap();
            },
            |e| matches!(e, Error::Conflict { .. }),
        ),
        (
            "key taken",
            |s, tx, lease| {
                tx.publish(T, lease, "lobby-9", b"mine").unwrap();
                let other = s.grant(T, "other-host", 60 * SEC, None).unwrap().id;
                s.publish(T, other, "lobby-9", b"theirs", None).unwrap();
            },
            |e| matches!(e, Error::Conflict { .. }),
        ),
        (
            "stale claim",
            |s, tx, _| {
                let job = s.enqueue(T, "work", b"j", JobOptions::default()).unwrap();
                let claim = s.claim(T, "work", "w", None, 1).unwrap()[0].claim;
                s.ack(T, "work", job, claim).unwrap();
                tx.ack(T, "work", job, claim).unwrap();
            },
            |e| matches!(e, Error::StaleClaim | Error::NotFound),
        ),
        (
            "missing queue",
            |_, tx, _| {
                tx.enqueue(T, "nowhere", b"j", JobOptions::default())
                    .unwrap();
            },
            |e| matches!(e, Error::NotFound),
        ),
        (
            "schedule of a missing queue",
            |_, tx, _| {
                tx.schedule(T, "tick", "@every 1m", "nowhere", b"t")
                    .unwrap();
            },
            |e| matches!(e, Error::NotFound),
        ),
        (
            "unschedule of nothing",
            |_, tx, _| {
                tx.unschedule(T, "never").unwrap();
            },
            |e| matches!(e, Error::NotFound),
        ),
        (
            "revoked lease",
            |s, tx, lease| {
                tx.publish(T, lease, "lobby-9", b"mine").unwrap();
                s.revoke(T, lease).unwrap();
            },
            |e| matches!(e, Error::Revoked | Error::NotFound),
        ),
    ];
    for (what, spoil, expected) in spoilers {
        let (_clock, s, lease) = relay();
        let listener = s.listen(T, "lobby-changed").unwrap();
        let mut tx = s.begin_tx();
        // Changes of every kind that would go in on their own.
        let v = s.get_listing(T, "lobby").unwrap().version;
        tx.publish(T, lease, "lobby-3", b"x").unwrap();
        if what != "listing version moved" {
            tx.update_listing(T, "lobby", v, b"v2").unwrap();
        }
        tx.append(T, "log", b"entry").unwrap();
        tx.commit_offset(T, "log", "reader", 0).unwrap();
        tx.outbox_put(T, "lobby.changed", b"lobby").unwrap();
        tx.schedule(T, "refresh", "@every 1m", "work", b"r")
            .unwrap();
        tx.notify(T, "lobby-changed").unwrap();
        spoil(&s, &mut tx, lease);
        let before = seen(&s);
        let refused = tx.commit().expect_err(what);
        assert!(expected(&refused), "{what}: refused with {refused:?}");
        assert_eq!(
            seen(&s),
            before,
            "{what}: the refused commit changed something"
        );
        assert_eq!(
            listener.try_recv(),
            None,
            "{what}: a refused commit woke a listener"
        );
    }
}

/// A store whose queue `work` holds at most `jobs_max` jobs and one dead
/// letter, with one job (`options`) enqueued and claimed: the store, the
/// job and its claim.
fn a_claimed_job(
    jobs_max: usize,
    options: JobOptions,
) -> (Store, relaystore::JobId, relaystore::queue::ClaimToken) {
    let (_clock, s) = store();
    let config = QueueConfig::default()
        .jobs_max(jobs_max)
        .dead_letters_max(Some(1))
        .jitter_seed(Some(7));
    s.create_queue(T, "work", config).unwrap();
    let job = s.enqueue(T, "work", b"first", options).unwrap();
    let claim = s.claim(T, "work", "w", None, 1).unwrap()[0].claim;
    (s, job, claim)
}

#[test]
fn a_fail_that_fills_the_dead_letters_refuses_the_enqueues_staged_after_it() {
    // A commit applies its changes in staging order, so a fail that
    // dead-letters a job up to the queue's cap stops an enqueue staged
    // after it, as it would outside a transaction, and the whole commit
    // is refused with nothing changed; an enqueue staged before the fail
    // goes in with it.
    for fail_first in [true, false] {
        let last_try = JobOptions::default().with_attempts_max(1);
        let (s, job, claim) = a_claimed_job(10, last_try);
        let mut tx = s.begin_tx();
        let enqueue = |tx: &mut relaystore::Transaction| {
            tx.enqueue(T, "work", b"next", JobOptions::default())
                .unwrap();
        };
        if !fail_first {
            enqueue(&mut tx);
        }
        tx.fail(T, "work", job, claim, "broken").unwrap();
        if fail_first {
            enqueue(&mut tx);
        }
        let before = s.queue_info(T, "work").unwrap();
        let committed = tx.commit();
        s.audit().unwrap();
        let after = s.queue_info(T, "work").unwrap();
        if fail_first {
            let refused = committed.expect_err("the enqueue finds the dead letters full");
            assert_eq!(refused.capacity_scope(), Some(Scope::QueueDeadLetters));
            assert_eq!(after, before, "the refused commit changed the queue");
            // The claim is still live: the job was not dead-lettered.
            assert_eq!(
                s.fail(T, "work", job, claim, "broken"),
                Ok(relaystore::queue::Failed::DeadLettered)
            );
        } else {
            let committed = committed.unwrap();
            assert_eq!(
                committed.failed,
                vec![(job, relaystore::queue::Failed::DeadLettered)]
            );
            assert_eq!((after.ready, after.claimed, after.dead), (1, 0, 1));
        }
    }
}

#[test]
fn consumer_commits_count_only_the_consumers_they_add() {
    // One slot left under the stream's cap on consumers: a commit that
    // moves an existing consumer and adds one new one fits, as the same
    // two commits outside a transaction would; one that adds two does
    // not, and changes nothing.
    let (_clock, s) = store_with(config().consumers_per_stream_max(2));
    s.create_stream(T, "log", StreamConfig::new(3, 1 << 20, WhenFull::Refuse))
        .unwrap();
    s.append(T, "log", b"e", None).unwrap();
    s.commit(T, "log", "old", 0).unwrap();
    let mut tx = s.begin_tx();
    tx.commit_offset(T, "log", "new-1", 1).unwrap();
    tx.commit_offset(T, "log", "new-2", 1).unwrap();
    let refused = tx.commit().expect_err("two new consumers, one slot");
    assert_eq!(refused.capacity_scope(), Some(Scope::StreamConsumers));
    assert_eq!(s.stream_info(T, "log").unwrap().consumers, 1);
    let mut tx = s.begin_tx();
    tx.commit_offset(T, "log", "old", 1).unwrap();
    tx.commit_offset(T, "log", "new-1", 1).unwrap();
    tx.commit().unwrap();
    assert_eq!(s.committed(T, "log", "old"), Ok(Some(1)));
    assert_eq!(s.committed(T, "log", "new-1"), Ok(Some(1)));
    assert_eq!(s.stream_info(T, "log").unwrap().consumers, 2);
    s.audit().unwrap();
}

#[test]
fn a_consumer_committed_twice_in_one_commit_never_goes_backwards() {
    // Two commits of one consumer are taken in staging order: forwards
    // they go in, ending at the later; backwards the second is a
    // `Conflict` and the commit changes nothing, not even the first.
    let (_clock, s) = store();
    s.create_stream(T, "log", StreamConfig::new(3, 1 << 20, WhenFull::Refuse))
        .unwrap();
    s.append(T, "log", b"a", None).unwrap();
    s.append(T, "log", b"b", None).unwrap();
    s.commit(T, "log", "reader", 0).unwrap();
    let mut tx = s.begin_tx();
    tx.commit_offset(T, "log", "reader", 2).unwrap();
    tx.commit_offset(T, "log", "reader", 1).unwrap();
    let refused = tx.commit().expect_err("the second commit goes backwards");
    assert!(matches!(refused, Error::Conflict { .. }), "{refused:?}");
    assert_eq!(s.committed(T, "log", "reader"), Ok(Some(0)));
    let mut tx = s.begin_tx();
    tx.commit_offset(T, "log", "reader", 1).unwrap();
    tx.commit_offset(T, "log", "reader", 2).unwrap();
    tx.commit().unwrap();
    assert_eq!(s.committed(T, "log", "reader"), Ok(Some(2)));
    s.audit().unwrap();
}

#[test]
fn a_consumer_reads_from_where_it_stands_in_the_transaction() {
    // A worker's step: read what its consumer has not processed (staged
    // appends included), move the consumer past it, commit both at once.
    let (_clock, s) = store();
    s.create_stream(T, "log", StreamConfig::new(8, 1 << 20, WhenFull::Refuse))
        .unwrap();
    let offsets: Vec<u64> = [b"a", b"b", b"c"]
        .iter()
        .map(|p| s.append(T, "log", *p, None).unwrap())
        .collect();
    s.commit(T, "log", "worker", offsets[1]).unwrap();
    let payloads = |read: relaystore::stream::StreamRead| -> Vec<Vec<u8>> {
        read.entries.iter().map(|e| e.payload.to_vec()).collect()
    };
    let mut tx = s.begin_tx();
    assert_eq!(tx.committed(T, "log", "worker"), Ok(Some(offsets[1])));
    assert_eq!(tx.committed(T, "log", "nobody"), Ok(None));
    let d = tx.append(T, "log", b"d").unwrap();
    let unread = tx.read_from_committed(T, "log", "worker", 10).unwrap();
    assert_eq!(
        payloads(unread),
        [b"b".to_vec(), b"c".to_vec(), b"d".to_vec()]
    );
    let all = tx.read_from_committed(T, "log", "nobody", 10).unwrap();
    assert_eq!(
        all.entries.len(),
        4,
        "a new consumer reads from the first held"
    );
    tx.commit_offset(T, "log", "worker", d).unwrap();
    assert_eq!(
        tx.committed(T, "log", "worker"),
        Ok(Some(d)),
        "the staged offset"
    );
    let rest = tx.read_from_committed(T, "log", "worker", 10).unwrap();
    assert_eq!(payloads(rest), [b"d".to_vec()]);
    assert_eq!(
        s.committed(T, "log", "worker"),
        Ok(Some(offsets[1])),
        "not before the commit"
    );
    assert_eq!(tx.committed(T, "gone", "worker"), Err(Error::NotFound));
    assert_eq!(
        tx.read_from_committed(T, "gone", "worker", 1).err(),
        Some(Error::NotFound)
    );
    tx.commit().unwrap();
    assert_eq!(s.committed(T, "log", "worker"), Ok(Some(d)));
    s.audit().unwrap();
}

#[test]
fn an_unschedule_staged_first_makes_room_for_a_schedule_at_the_cap() {
    // The tenant holds as many schedules as it may: unscheduling one and
    // scheduling another in one commit fits, as the two calls outside a
    // transaction would, in that order; the other order does not, and
    // changes nothing.
    let (_clock, s) = store_with(config().schedules_per_tenant_max(1));
    s.create_queue(T, "work", QueueConfig::default()).unwrap();
    s.schedule(T, "old", "@every 1m", "work", b"o").unwrap();
    let mut tx = s.begin_tx();
    tx.schedule(T, "new", "@every 1m", "work", b"n").unwrap();
    tx.unschedule(T, "old").unwrap();
    let refused = tx.commit().expect_err("a new schedule before the room");
    assert!(refused.capacity_scope().is_some(), "{refused:?}");
    let names =
        |s: &Store| -> Vec<String> { s.schedules(T).iter().map(|i| i.name.to_string()).collect() };
    assert_eq!(names(&s), ["old"]);
    let mut tx = s.begin_tx();
    tx.unschedule(T, "old").unwrap();
    tx.schedule(T, "new", "@every 1m", "work", b"n").unwrap();
    tx.commit().unwrap();
    assert_eq!(names(&s), ["new"]);
    s.audit().unwrap();
}

#[test]
fn schedules_of_several_tenants_in_one_commit_meet_the_stores_ceiling_together() {
    // The store holds two of its three schedules, one per tenant. A
    // commit adding one for each tenant would take four: refused, with
    // nothing changed, although each tenant's alone fits. An unschedule of
    // one tenant staged before the other's new schedule makes room, as
    // the two calls outside a transaction would; the other order does not.
    let (_clock, s) = store_with(config().schedules_max(3));
    for tenant in [T, OTHER] {
        s.create_queue(tenant, "work", QueueConfig::default())
            .unwrap();
        s.schedule(tenant, "old", "@every 1m", "work", b"o")
            .unwrap();
    }
    let names = |s: &Store, tenant| -> Vec<String> {
        s.schedules(tenant)
            .iter()
            .map(|i| i.name.to_string())
            .collect()
    };
    let unchanged = |s: &Store| {
        assert_eq!(names(s, T), ["old"]);
        assert_eq!(names(s, OTHER), ["old"]);
        s.audit().unwrap();
    };
    let mut tx = s.begin_tx();
    tx.schedule(T, "new", "@every 1m", "work", b"n").unwrap();
    tx.schedule(OTHER, "new", "@every 1m", "work", b"n")
        .unwrap();
    let refused = tx.commit().expect_err("four schedules in a store of three");
    assert_eq!(
        refused.capacity_scope(),
        Some(Scope::Collection(Collection::Schedules))
    );
    unchanged(&s);
    let mut tx = s.begin_tx();
    tx.schedule(OTHER, "new", "@every 1m", "work", b"n")
        .unwrap();
    tx.schedule(T, "more", "@every 1m", "work", b"m").unwrap();
    tx.unschedule(OTHER, "old").unwrap();
    let refused = tx.commit().expect_err("the room comes after the schedules");
    assert_eq!(
        refused.capacity_scope(),
        Some(Scope::Collection(Collection::Schedules))
    );
    unchanged(&s);
    let mut tx = s.begin_tx();
    tx.unschedule(OTHER, "old").unwrap();
    tx.schedule(T, "new", "@every 1m", "work", b"n").unwrap();
    tx.commit().unwrap();
    assert_eq!(names(&s, T), ["new", "old"]);
    assert!(names(&s, OTHER).is_empty());
    s.audit().unwrap();
}

#[test]
fn an_ack_staged_first_makes_room_for_an_enqueue_at_the_cap() {
    // A worker acks its job and enqueues the next in one commit on a
    // full queue: the ack frees the slot first, as outside a
    // transaction; staged the other way round, the enqueue finds the
    // queue full and the commit changes nothing.
    let (s, job, claim) = a_claimed_job(1, JobOptions::default());
    let mut tx = s.begin_tx();
    tx.enqueue(T, "work", b"next", JobOptions::default())
        .unwrap();
    tx.ack(T, "work", job, claim).unwrap();
    let refused = tx.commit().expect_err("the enqueue comes before the room");
    assert_eq!(refused.capacity_scope(), Some(Scope::QueueJobs));
    let info = s.queue_info(T, "work").unwrap();
    assert_eq!((info.ready, info.claimed), (0, 1));
    let mut tx = s.begin_tx();
    tx.ack(T, "work", job, claim).unwrap();
    let next = tx
        .enqueue(T, "work", b"next", JobOptions::default())
        .unwrap();
    tx.commit().unwrap();
    let info = s.queue_info(T, "work").unwrap();
    assert_eq!((info.ready, info.claimed, info.bytes), (1, 0, 4));
    assert_eq!(s.job(T, "work", job), Err(Error::NotFound));
    assert_eq!(s.job(T, "work", next).unwrap().state, JobState::Ready);
    s.audit().unwrap();
}

#[test]
fn a_dropped_or_panicked_transaction_leaves_nothing() {
    let (_clock, s, lease) = relay();
    let listener = s.listen(T, "lobby-changed").unwrap();
    let stage = |tx: &mut relaystore::Transaction| {
        let v = s.get_listing(T, "lobby").unwrap().version;
        tx.update_listing(T, "lobby", v, b"v2").unwrap();
        tx.publish(T, lease, "lobby-3", b"x").unwrap();
        tx.append(T, "log", b"entry").unwrap();
        tx.enqueue(T, "work", b"j", JobOptions::default()).unwrap();
        tx.outbox_put(T, "lobby.changed", b"lobby").unwrap();
        tx.notify(T, "lobby-changed").unwrap();
    };
    let before = seen(&s);
    let mut tx = s.begin_tx();
    stage(&mut tx);
    assert_eq!(tx.len(), 6);
    drop(tx);
    assert_eq!(seen(&s), before);
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        let mut tx = s.begin_tx();
        stage(&mut tx);
        panic!("the relay's handler failed mid-transaction");
    }));
    assert!(panicked.is_err());
    assert_eq!(seen(&s), before);
    assert_eq!(
        listener.try_recv(),
        None,
        "a rolled-back transaction woke a listener"
    );
}

#[test]
fn with_tx_commits_on_ok_and_leaves_nothing_on_err_panic_or_refusal() {
    let (_clock, s, _lease) = relay();
    let stage = |tx: &mut relaystore::Transaction| -> Result<u64, Error> {
        let v = s.get_listing(T, "lobby")?.version;
        tx.update_listing(T, "lobby", v, b"v2")?;
        tx.enqueue(T, "work", b"j", JobOptions::default())?;
        tx.append(T, "log", b"entry")
    };
    let before = seen(&s);
    let failed: Result<(u64, _), Error> = s.with_tx(|tx| {
        stage(tx)?;
        Err(Error::NotFound)
    });
    assert_eq!(failed.map(drop), Err(Error::NotFound));
    assert_eq!(seen(&s), before, "an Err staged nothing");
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        let _ = s.with_tx(|tx| -> Result<(), Error> {
            stage(tx)?;
            panic!("the relay's handler failed mid-transaction");
        });
    }));
    assert!(panicked.is_err());
    assert_eq!(seen(&s), before, "a panic staged nothing");
    // A commit that is refused (a stale version) changes nothing.
    let stale = s.get_listing(T, "lobby").unwrap().version;
    s.update_listing(T, "lobby", stale, b"moved").unwrap();
    let moved = seen(&s);
    let refused = s.with_tx(|tx| {
        tx.update_listing(T, "lobby", stale, b"v3")?;
        tx.enqueue(T, "work", b"j", JobOptions::default())
    });
    assert!(
        matches!(refused, Err(Error::Conflict { .. })),
        "{refused:?}"
    );
    assert_eq!(seen(&s), moved, "a refused commit changed nothing");
    let (offset, committed) = s.with_tx(stage).unwrap();
    assert_eq!(
        s.read_stream(T, "log", offset, 1).unwrap().entries[0].payload[..],
        b"entry"[..]
    );
    assert_eq!(
        committed.listing_version(T, "lobby"),
        Some(s.get_listing(T, "lobby").unwrap().version)
    );
    assert_eq!(s.queue_info(T, "work").unwrap().ready, 1);
}

#[test]
fn ids_and_offsets_of_a_rolled_back_transaction_are_never_reused() {
    let (_clock, s, _lease) = relay();
    let mut tx = s.begin_tx();
    let offset = tx.append(T, "log", b"rolled back").unwrap();
    let job = tx
        .enqueue(T, "work", b"rolled back", JobOptions::default())
        .unwrap();
    drop(tx);
    let next = s.append(T, "log", b"kept", None).unwrap();
    assert!(next > offset, "offset {offset} handed out again");
    let next_job = s
        .enqueue(T, "work", b"kept", JobOptions::default())
        .unwrap();
    assert_ne!(next_job, job);
    assert_eq!(s.job(T, "work", job), Err(Error::NotFound));
    // Readers skip the gap.
    let read = s.read_stream(T, "log", 0, 10).unwrap();
    assert_eq!(read.entries.len(), 1);
    assert_eq!((read.entries[0].offset, read.next), (next, next + 1));
    assert_eq!(
        s.read_stream(T, "log", offset, 10).unwrap().entries[0].offset,
        next
    );
}

#[test]
fn an_append_above_a_staged_offset_conflicts_the_commit() {
    let (_clock, s, _lease) = relay();
    let mut tx = s.begin_tx();
    let offset = tx.append(T, "log", b"mine").unwrap();
    let theirs = s.append(T, "log", b"theirs", None).unwrap();
    assert_eq!(theirs, offset + 1);
    assert_eq!(
        tx.commit(),
        Err(Error::Conflict {
            reason: ConflictReason::StreamMoved,
            current_version: theirs + 1
        })
    );
    // Two transactions on one stream: the later offsets commit first,
    // and the earlier transaction conflicts.
    let mut first = s.begin_tx();
    let mut second = s.begin_tx();
    first.append(T, "log", b"first").unwrap();
    second.append(T, "log", b"second").unwrap();
    second.commit().unwrap();
    assert!(matches!(first.commit(), Err(Error::Conflict { .. })));
    let read = s.read_stream(T, "log", 0, 10).unwrap();
    let payloads: Vec<&[u8]> = read.entries.iter().map(|e| &*e.payload).collect();
    assert_eq!(payloads, vec![&b"theirs"[..], &b"second"[..]]);
}

#[test]
fn wakes_fire_after_the_commit_and_see_it() {
    let (_clock, s, _lease) = relay();
    let channel = s.listen(T, "lobby-changed").unwrap();
    let mut follower = s.follow(T, "log", "reader").unwrap();
    let mut tx = s.begin_tx();
    tx.notify(T, "lobby-changed").unwrap();
    tx.append(T, "log", b"lobby v2").unwrap();
    assert_eq!(channel.try_recv(), None, "a staged notify woke a listener");
    assert!(follower.try_next(10).unwrap().entries.is_empty());
    tx.commit().unwrap();
    assert!(channel.try_recv().is_some());
    assert_eq!(follower.try_next(10).unwrap().entries.len(), 1);
}

#[test]
fn staging_validates_input_and_refuses_second_writes() {
    let (_clock, s, lease) = relay();
    let mut tx = s.begin_tx();
    assert_eq!(tx.publish(T, lease, "", b"x"), Err(Error::InvalidName));
    assert!(matches!(
        tx.schedule(T, "tick", "@every fortnight", "work", b""),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        tx.enqueue(T, "work", b"j", JobOptions::default().with_attempts_max(0)),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        tx.append(T, "log", &vec![0; 2 << 20]),
        Err(Error::InvalidArgument { .. })
    ));
    assert_eq!(tx.notify(T, "__mine"), Err(Error::ReservedName));
    tx.unpublish(T, "lobby", None).unwrap();
    assert!(matches!(
        tx.update_listing(T, "lobby", 1, b"again"),
        Err(Error::InvalidArgument { .. })
    ));
    assert_eq!(tx.len(), 1, "refused stagings staged nothing");
    for _ in 1..relaystore::TX_OPS_MAX {
        tx.notify(T, "lobby-changed").unwrap();
    }
    assert!(matches!(
        tx.notify(T, "lobby-changed"),
        Err(Error::InvalidArgument { .. })
    ));
}

#[test]
fn a_commit_inside_an_outbox_handler_goes_in() {
    let (_clock, s, _lease) = relay();
    s.outbox_put(T, "t", b"m", None).unwrap();
    let mut inner = None;
    s.outbox_run_once(T, "w", 1, |_| {
        let mut tx = s.begin_tx();
        tx.notify(T, "c").unwrap();
        inner = Some(tx.commit());
        Ok::<_, String>(())
    })
    .unwrap();
    // The handler runs outside the store's calls: its commit goes in.
    assert_eq!(inner.map(|r| r.is_ok()), Some(true));
}

#[test]
fn a_draining_store_refuses_the_commit() {
    let (_clock, s, _lease) = relay();
    let mut tx = s.begin_tx();
    tx.enqueue(T, "work", b"j", JobOptions::default()).unwrap();
    s.begin_drain(Duration::from_secs(10)).unwrap();
    let before = seen(&s);
    assert_eq!(tx.commit(), Err(Error::Draining));
    assert_eq!(seen(&s), before);
}

/// Real threads: one writer commits a listing update and an append of the
/// same number, again and again, while another appends plainly to a
/// second stream and a reader reads the listing, then the stream. The
/// reader never sees the listing ahead of the stream: a commit is seen
/// whole or not at all, and a later read sees at least as much.
#[test]
fn readers_never_see_half_a_commit() {
    let rounds = common::rounds("RELAYSTORE_TX_ROUNDS", 2_000) as u64;
    let (_clock, s, _lease) = relay();
    s.create_stream(
        T,
        "round",
        StreamConfig::new(4, 1 << 20, WhenFull::TrimOldest),
    )
    .unwrap();
    s.create_stream(
        T,
        "noise",
        StreamConfig::new(4, 1 << 20, WhenFull::TrimOldest),
    )
    .unwrap();
    let number = |bytes: &[u8]| std::str::from_utf8(bytes).unwrap().parse::<u64>().unwrap();
    let mut version = s
        .update_listing(T, "lobby", s.get_listing(T, "lobby").unwrap().version, b"0")
        .unwrap();
    s.append(T, "round", b"0", None).unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut reads = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let listed = number(&s.get_listing(T, "lobby").unwrap().attrs);
                // From the first entry held (trimming may move it meanwhile).
                let mut from = 0;
                let read = loop {
                    match s.read_stream(T, "round", from, 4) {
                        Err(Error::Trimmed { first }) => from = first,
                        other => break other.unwrap(),
                    }
                };
                let appended = number(&read.entries.last().expect("an entry").payload);
                assert!(
                    appended >= listed,
                    "the listing says {listed} but the stream's last entry is {appended}"
                );
                reads += 1;
            }
            reads
        });
        scope.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                s.append(T, "noise", b"n", None).unwrap();
            }
        });
        for n in 1..=rounds {
            let text = n.to_string();
            let mut tx = s.begin_tx();
            tx.update_listing(T, "lobby", version, text.as_bytes())
                .unwrap();
            tx.append(T, "round", text.as_bytes()).unwrap();
            version = tx.commit().unwrap().listing_version(T, "lobby").unwrap();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(reader.join().unwrap() > 0, "the reader read nothing");
    });
    s.audit().unwrap();
}

#[test]
fn appends_staged_on_a_stream_since_replaced_are_refused() {
    let (_clock, s, _lease) = relay();
    for _ in 0..2 {
        s.append(T, "log", b"old", None).unwrap();
    }
    let mut tx = s.begin_tx();
    assert_eq!(tx.append(T, "log", b"for the old stream").unwrap(), 2);
    s.delete_stream(T, "log").unwrap();
    s.create_stream(T, "log", StreamConfig::new(3, 1 << 20, WhenFull::Refuse))
        .unwrap();
    let before = seen(&s);
    assert_eq!(tx.commit(), Err(Error::NotFound));
    assert_eq!(seen(&s), before);
    // The new stream's offsets start again below the staged one, unharmed.
    assert_eq!(s.append(T, "log", b"new", None).unwrap(), 0);
    s.audit().unwrap();
}

#[test]
fn a_trim_past_a_staged_offset_conflicts_the_commit() {
    let (_clock, s, _lease) = relay();
    s.append(T, "log", b"old", None).unwrap();
    let mut tx = s.begin_tx();
    let offset = tx.append(T, "log", b"mine").unwrap();
    let next = s.stream_info(T, "log").unwrap().next;
    assert_eq!(next, offset + 1);
    assert_eq!(s.trim_stream(T, "log", next).unwrap(), next);
    let before = seen(&s);
    assert_eq!(
        tx.commit(),
        Err(Error::Conflict {
            reason: ConflictReason::StreamMoved,
            current_version: next
        })
    );
    assert_eq!(seen(&s), before);
}

#[test]
fn a_trim_staged_before_an_append_drops_what_lies_below_it() {
    let (_clock, s, _lease) = relay();
    s.append(T, "log", b"old", None).unwrap();
    let mut tx = s.begin_tx();
    // Trims past the offset the append then takes.
    tx.trim_stream(T, "log", 2).unwrap();
    let offset = tx.append(T, "log", b"new").unwrap();
    assert_eq!(offset, 1);
    tx.commit().unwrap();
    let info = s.stream_info(T, "log").unwrap();
    assert_eq!((info.first, info.entries, info.next), (2, 0, 2));
    s.audit().unwrap();
}

#[test]
fn the_receipt_lists_publishes_then_updates_in_staging_order() {
    let (_clock, s, lease) = relay();
    let v = s.get_listing(T, "lobby").unwrap().version;
    let mut tx = s.begin_tx();
    tx.publish(T, lease, "b", b"").unwrap();
    tx.update_listing(T, "lobby", v, b"v2").unwrap();
    tx.publish(T, lease, "a", b"").unwrap();
    let done = tx.commit().unwrap();
    let keys: Vec<&str> = done.listings.iter().map(|(_, k, _)| &**k).collect();
    assert_eq!(keys, vec!["b", "a", "lobby"]);
    for (tenant, key, version) in &done.listings {
        assert_eq!(s.get_listing(*tenant, key).unwrap().version, *version);
    }
}

/// A refused commit changes nothing visible, but a publish it staged
/// reclaims, on the way, an invisible listing it finds under its key (its
/// lease expired, nothing swept yet), as the sweeper would have: that
/// listing's expired join attempt then answers as swept, `NotFound`
/// rather than `Expired`.
#[test]
fn a_refused_commit_reclaims_only_what_was_already_invisible() {
    let (clock, s, lease) = relay();
    let short = s.grant(T, "short-host", SEC, None).unwrap().id;
    s.publish(T, short, "old", b"", None).unwrap();
    let join = s.begin_join(T, "old", "c1", SEC / 2, None).unwrap();
    clock.advance(SEC * 2); // lease and attempt expired; nothing swept
    assert_eq!(
        s.bind_endpoint(T, join.attempt, &join.token, addr(1)),
        Err(Error::Expired)
    );
    let visible = s.list_listings(T, None, 100).unwrap();
    let mut tx = s.begin_tx();
    tx.publish(T, lease, "old", b"new").unwrap();
    for _ in 0..4 {
        // The queue holds 3.
        tx.enqueue(T, "work", b"j", JobOptions::default()).unwrap();
    }
    let refused = tx.commit().unwrap_err();
    assert!(refused.capacity_scope().is_some(), "{refused:?}");
    assert_eq!(s.list_listings(T, None, 100).unwrap(), visible);
    assert_eq!(s.get_listing(T, "old"), Err(Error::NotFound));
    assert_eq!(
        s.bind_endpoint(T, join.attempt, &join.token, addr(1)),
        Err(Error::NotFound)
    );
    s.audit().unwrap();
}
