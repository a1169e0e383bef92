//! Job queues, the outbox and schedules on the Redis engine, across
//! instances (a standalone server and a Redis Cluster): racing workers on
//! two handles claim each job exactly once; a worker waiting on one
//! handle wakes for an enqueue on another, for a delay that ends with
//! nobody enqueueing, and for the queue's deletion; an outbox filled on
//! one handle is delivered from another; one scheduler lock holder fires
//! a schedule, the other cannot; the store-wide queue and schedule
//! budgets refuse exactly and get their room back. (The contract's own
//! queue checks are in `redis_conformance_queues.rs`.)

mod redis;

use redis::{config, instances, on_every_target};
use relaystore::events::Collection;
use relaystore::queue::{Backoff, JobOptions, QueueConfig};
use relaystore::{Error, JobId, Scope, TenantId};
use std::collections::HashSet;
use std::time::{Duration, Instant};

const T: TenantId = TenantId(1);
const OTHER: TenantId = TenantId(2);
/// Long enough for a wake to reach another handle here.
const SETTLE: Duration = Duration::from_secs(3);

fn queue(jobs_max: usize) -> QueueConfig {
    QueueConfig::default()
        .jobs_max(jobs_max)
        .bytes_max(1 << 16)
        .dead_letters_max(Some(jobs_max))
        .visibility(Duration::from_secs(30))
        .attempts_max(3)
        .backoff(Backoff {
            base: Duration::ZERO,
            max: Duration::ZERO,
        })
        .jitter_seed(None)
}

#[test]
fn racing_workers_on_two_instances_claim_each_job_once() {
    on_every_target("queues-race", |target, name| async move {
        let engines = instances(&target, &name, 2, config()).await;
        engines[0]
            .create_queue(T, "work", queue(100))
            .await
            .unwrap();
        let mut enqueued = HashSet::new();
        for i in 0..40u32 {
            let id = engines[i as usize % 2]
                .enqueue(T, "work", &i.to_le_bytes(), JobOptions::default())
                .await
                .unwrap();
            assert!(enqueued.insert(id), "{name}: an id issued twice");
        }
        let mut workers = Vec::new();
        for w in 0..8 {
            let e = engines[w % 2].clone();
            workers.push(tokio::spawn(async move {
                let mut mine = Vec::new();
                loop {
                    let jobs = e.claim(T, "work", "w", None, 3).await.unwrap();
                    if jobs.is_empty() {
                        return mine;
                    }
                    for job in jobs {
                        e.ack(T, "work", job.id, job.claim).await.unwrap();
                        mine.push(job.id);
                    }
                }
            }));
        }
        let mut claimed: Vec<JobId> = Vec::new();
        for worker in workers {
            claimed.extend(worker.await.unwrap());
        }
        assert_eq!(claimed.len(), 40, "{name}: a job claimed twice, or lost");
        let distinct: HashSet<JobId> = claimed.into_iter().collect();
        assert_eq!(distinct, enqueued, "{name}");
        let info = engines[1].queue_info(T, "work").await.unwrap();
        assert_eq!(info, Default::default(), "{name}: all acked");
    });
}

#[test]
fn a_waiting_worker_wakes_for_another_instances_enqueue_and_for_time() {
    on_every_target("queues-wait", |target, name| async move {
        let engines = instances(&target, &name, 2, config()).await;
        let (a, b) = (engines[0].clone(), engines[1].clone());
        a.create_queue(T, "work", queue(10)).await.unwrap();
        let waiter = {
            let b = b.clone();
            tokio::spawn(async move { b.claim_wait(T, "work", "w", None, 1).await })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        let id = a
            .enqueue(T, "work", b"now", JobOptions::default())
            .await
            .unwrap();
        let got = tokio::time::timeout(SETTLE, waiter)
            .await
            .unwrap_or_else(|_| panic!("{name}: the worker was not woken"))
            .unwrap()
            .unwrap();
        assert_eq!(got[0].id, id, "{name}");
        b.ack(T, "work", got[0].id, got[0].claim).await.unwrap();

        // A delayed job wakes nobody when enqueued; the waiting worker
        // sleeps until its delay ends, and then claims it.
        let id = a
            .enqueue(
                T,
                "work",
                b"later",
                JobOptions::delayed(Duration::from_millis(300)),
            )
            .await
            .unwrap();
        let started = std::time::Instant::now();
        let got = tokio::time::timeout(SETTLE, b.claim_wait(T, "work", "w", None, 1))
            .await
            .unwrap_or_else(|_| panic!("{name}: the delay ended and nobody claimed"))
            .unwrap();
        assert_eq!(got[0].id, id, "{name}");
        assert!(
            started.elapsed() >= Duration::from_millis(250),
            "{name}: claimed before its delay ended"
        );

        // Deleted on one instance: the worker waiting on the other wakes
        // and finds it gone.
        let waiter = {
            let b = b.clone();
            tokio::spawn(async move { b.claim_wait(T, "work", "w", None, 1).await })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        a.delete_queue(T, "work").await.unwrap();
        let after = tokio::time::timeout(SETTLE, waiter)
            .await
            .unwrap_or_else(|_| panic!("{name}: the worker did not see the deletion"))
            .unwrap();
        assert_eq!(after, Err(Error::NotFound), "{name}");
    });
}

#[test]
fn an_outbox_filled_on_one_instance_is_delivered_from_another() {
    on_every_target("queues-outbox", |target, name| async move {
        let engines = instances(&target, &name, 2, config()).await;
        let (a, b) = (&engines[0], &engines[1]);
        let first = a.outbox_put(T, "match.ended", b"m-1", None).await.unwrap();
        let second = a.outbox_put(T, "match.ended", b"m-2", None).await.unwrap();
        let mut seen = Vec::new();
        let run = b
            .outbox_run_once(T, "relay-b", 10, |m| {
                seen.push((m.id, m.payload.to_vec()));
                if &*m.payload == b"m-2" {
                    return Err("the peer is down");
                }
                Ok(())
            })
            .await
            .unwrap();
        assert_eq!((run.delivered, run.retried, run.dead), (1, 1, 0), "{name}");
        assert_eq!(
            seen,
            vec![(first, b"m-1".to_vec()), (second, b"m-2".to_vec())],
            "{name}"
        );
        // The failed one waits for its backoff (5 s at least): not now.
        let again = a
            .outbox_run_once(T, "relay-a", 10, |_| Ok::<(), String>(()))
            .await
            .unwrap();
        assert_eq!(again.delivered, 0, "{name}");
        assert_eq!(
            b.outbox_run_once(OTHER, "relay-b", 10, |_| Ok::<(), String>(()))
                .await,
            Ok(Default::default()),
            "{name}: another tenant has no outbox"
        );
    });
}

/// Two handles on a fresh store whose tenant `T` has a queue "ticks" and
/// a schedule "beat" firing onto it every 100 ms, scheduled from the
/// second handle (the first creates the queue); with the instants just
/// before and just after the schedule was made (the server read its own
/// clock in between).
async fn ticking(
    target: &redis::Target,
    name: &str,
) -> (Vec<relaystore::redis::RedisEngine>, Bracket) {
    let cfg = config().schedule_interval_min(Duration::from_millis(10));
    let engines = instances(target, name, 2, cfg).await;
    engines[0]
        .create_queue(T, "ticks", queue(100))
        .await
        .unwrap();
    let before = Instant::now();
    engines[1]
        .schedule(T, "beat", "@every 100ms", "ticks", b"tick")
        .await
        .unwrap();
    (engines, (before, Instant::now()))
}

/// The instants just before and just after a call: the server's clock
/// reading inside it lies between them.
type Bracket = (Instant, Instant);

/// Runs `call`, returning its result and its bracket.
async fn bracketed<T>(call: impl std::future::Future<Output = T>) -> (T, Bracket) {
    let before = Instant::now();
    let out = call.await;
    (out, (before, Instant::now()))
}

/// How many grid points of `ticking`'s schedule (due 100 ms, 200 ms, ...
/// after it was made) had passed when a run read the clock: at least
/// those between the end of `made` and the start of `ran`, at most those
/// between the start of `made` and the end of `ran`. The test's clock and
/// the server's may read a few milliseconds apart; 5 ms of slack either
/// way. However slow the machine, the count fits the window: a test that
/// asserts a fixed count assumes its sleeps are exact.
fn grid_points(made: Bracket, ran: Bracket) -> std::ops::RangeInclusive<u64> {
    let slack = Duration::from_millis(5);
    let least = ran.0.saturating_duration_since(made.1 + slack);
    let most = (ran.1 + slack).duration_since(made.0);
    let points = |d: Duration| (d.as_millis() / 100) as u64;
    points(least)..=points(most)
}

#[test]
fn one_scheduler_lock_holder_fires_and_the_other_cannot() {
    on_every_target("queues-schedules", |target, name| async move {
        let (engines, made) = ticking(&target, &name).await;
        let (a, b) = (&engines[0], &engines[1]);
        let ttl = Duration::from_secs(10);
        let lead = a.try_lead_schedules(T, "runner-a", ttl).await.unwrap();
        let lead = lead.unwrap_or_else(|| panic!("{name}: the lock was free"));
        assert_eq!(
            b.try_lead_schedules(T, "runner-b", ttl).await,
            Ok(None),
            "{name}: one leader across instances"
        );
        tokio::time::sleep(Duration::from_millis(350)).await;
        assert_eq!(
            b.run_schedules(T, lead.fence - 1).await,
            Err(Error::LeadershipLost),
            "{name}: a fence that does not hold the lock"
        );
        let (run, ran) = bracketed(a.run_schedules(T, lead.fence)).await;
        let run = run.unwrap();
        // At least three grid points passed during the sleep.
        let passed = grid_points(made, ran);
        assert!(
            passed.contains(&run.fired) && run.fired >= 3,
            "{name}: fired {} with {passed:?} grid points passed",
            run.fired
        );
        assert_eq!(run.skipped, 0, "{name}");
        // Fired and advanced in one step: running again fires nothing
        // (unless the next grid point has come since).
        let (again, ran) = bracketed(b.run_schedules(T, lead.fence)).await;
        let fired = run.fired + again.unwrap().fired;
        let passed = grid_points(made, ran);
        assert!(
            passed.contains(&fired),
            "{name}: {fired} fired in all with {passed:?} grid points passed"
        );
        assert_eq!(
            b.queue_info(T, "ticks").await.unwrap().ready,
            fired as usize,
            "{name}: each fire enqueued once"
        );
        let listed = b.schedules(T).await.unwrap();
        assert_eq!(
            listed
                .iter()
                .map(|s| (&*s.name, s.fired))
                .collect::<Vec<_>>(),
            vec![("beat", fired)],
            "{name}"
        );
        // Once released, the lock's old fence fires nothing.
        a.release_lock(T, relaystore::SCHEDULER_LOCK, lead.fence)
            .await
            .unwrap();
        assert_eq!(
            a.run_schedules(T, lead.fence).await,
            Err(Error::LeadershipLost),
            "{name}"
        );
        b.unschedule(T, "beat").await.unwrap();
        assert_eq!(b.schedules(T).await, Ok(Vec::new()), "{name}");
    });
}

#[test]
fn the_queue_and_schedule_budgets_refuse_exactly() {
    on_every_target("queues-budget", |target, name| async move {
        let cfg = config()
            .queues_max(2)
            .queue_jobs_total_max(150)
            .queue_bytes_total_max(1 << 20)
            .schedules_max(1);
        let engines = instances(&target, &name, 2, cfg).await;
        let (a, b) = (&engines[0], &engines[1]);
        a.create_queue(T, "one", queue(100)).await.unwrap();
        assert_eq!(
            b.create_queue(OTHER, "two", queue(51)).await,
            Err(Error::CapacityExceeded {
                scope: Scope::QueueJobsTotal,
                limit: 150,
                used: 100,
            }),
            "{name}"
        );
        b.create_queue(OTHER, "two", queue(50)).await.unwrap();
        assert_eq!(
            a.create_queue(T, "three", queue(1)).await,
            Err(Error::CapacityExceeded {
                scope: Scope::Collection(Collection::Queues),
                limit: 2,
                used: 2,
            }),
            "{name}"
        );
        a.schedule(T, "beat", "@every 1s", "one", b"")
            .await
            .unwrap();
        // Replacing a schedule takes no more room.
        a.schedule(T, "beat", "@every 2s", "one", b"")
            .await
            .unwrap();
        assert_eq!(
            b.schedule(OTHER, "beat", "@every 1s", "two", b"").await,
            Err(Error::CapacityExceeded {
                scope: Scope::Collection(Collection::Schedules),
                limit: 1,
                used: 1,
            }),
            "{name}"
        );
        let used = |c| async move { b.ceiling_usage(c).await.unwrap().map(|u| u.used) };
        assert_eq!(used(Collection::Queues).await, Some(2), "{name}");
        assert_eq!(used(Collection::Schedules).await, Some(1), "{name}");
        a.unschedule(T, "beat").await.unwrap();
        a.delete_queue(T, "one").await.unwrap();
        assert_eq!(used(Collection::Queues).await, Some(1), "{name}");
        assert_eq!(used(Collection::Schedules).await, Some(0), "{name}");
        b.schedule(OTHER, "beat", "@every 1s", "two", b"")
            .await
            .unwrap();
        a.create_queue(T, "three", queue(100)).await.unwrap();
    });
}

#[test]
fn schedule_runners_on_two_instances_lead_one_at_a_time() {
    on_every_target("queues-runners", |target, name| async move {
        let (engines, made) = ticking(&target, &name).await;
        let (a, b) = (&engines[0], &engines[1]);
        let ttl = Duration::from_secs(10);
        let mut first = relaystore::ScheduleRunner::new(a, T, "runner-a", ttl);
        let mut second = relaystore::ScheduleRunner::new(b, T, "runner-b", ttl);
        tokio::time::sleep(Duration::from_millis(250)).await;
        let (led, ran) = bracketed(first.step()).await;
        let led = led.unwrap();
        let before = led.run.map(|r| r.fired).unwrap_or(0);
        let passed = grid_points(made, ran);
        assert!(
            passed.contains(&before) && before >= 2,
            "{name}: the leader fired {before} with {passed:?} grid points passed"
        );
        assert!(
            led.wait <= ttl / 3,
            "{name}: renews within a third of its TTL"
        );
        let waited = second.step().await.unwrap();
        assert_eq!(waited.run, None, "{name}: one leader");
        assert!(first.is_leader() && !second.is_leader(), "{name}");
        // The leader resigns: the other leads at its next step and fires
        // what came due meanwhile, nothing twice.
        tokio::time::sleep(Duration::from_millis(100)).await;
        first.resign().await.unwrap();
        let (took, ran) = bracketed(second.step()).await;
        let after = took.unwrap().run.map(|r| r.fired).unwrap_or(0);
        let passed = grid_points(made, ran);
        assert!(
            after >= 1 && passed.contains(&(before + after)),
            "{name}: fired {before} then {after} with {passed:?} grid points passed"
        );
        assert!(second.is_leader() && !first.is_leader(), "{name}");
        assert_eq!(first.step().await.unwrap().run, None, "{name}");
        assert_eq!(
            a.queue_info(T, "ticks").await.unwrap().ready,
            (before + after) as usize,
            "{name}: each fire enqueued once"
        );
    });
}

#[test]
fn a_draining_instance_fires_nothing_and_leaves_the_fires_due() {
    on_every_target("queues-drain", |target, name| async move {
        let (engines, made) = ticking(&target, &name).await;
        let (a, b) = (&engines[0], &engines[1]);
        let ttl = Duration::from_secs(10);
        let lead = a
            .try_lead_schedules(T, "runner-a", ttl)
            .await
            .unwrap()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(150)).await;
        a.begin_drain(Duration::from_secs(30)).await.unwrap();
        let run = a.run_schedules(T, lead.fence).await.unwrap();
        assert_eq!(run.fired, 0, "{name}");
        assert_eq!(
            run.refused,
            vec![(std::sync::Arc::from("beat"), Error::Draining)],
            "{name}"
        );
        assert_eq!(b.queue_info(T, "ticks").await.unwrap().ready, 0, "{name}");
        // The lead handed over, the fire is still due and fires once.
        a.release_lock(T, relaystore::SCHEDULER_LOCK, lead.fence)
            .await
            .unwrap();
        let lead = b
            .try_lead_schedules(T, "runner-b", ttl)
            .await
            .unwrap()
            .unwrap();
        let (run, ran) = bracketed(b.run_schedules(T, lead.fence)).await;
        let fired = run.unwrap().fired;
        let passed = grid_points(made, ran);
        assert!(
            fired >= 1 && passed.contains(&fired),
            "{name}: fired {fired} with {passed:?} grid points passed"
        );
    });
}
