//! Job queues, the outbox and schedules (SPEC §10): claims by priority,
//! oldest first within one, and never twice, one validity rule for every claim operation, bounded
//! retries into dead letters, lapses that use an attempt, grid-aligned
//! fires for the scheduler lock's holder only.

use super::{config, ensure, ensure_eq, Fault, Harness, Outcome};
use crate::base::error::{Error, Scope};
use crate::base::ids::TenantId;
use crate::contract::engine::{Engine, RelayEngine};
use crate::contract::queue::{
    Backoff, Failed, JobOptions, JobState, QueueConfig, Unique, UniqueStates, PRIORITY_MAX,
};
use std::time::Duration;

const T: TenantId = TenantId(1);
const OTHER: TenantId = TenantId(2);

fn queue_config(attempts_max: u32) -> QueueConfig {
    QueueConfig {
        jobs_max: 8,
        bytes_max: 1024,
        dead_letters_max: Some(4),
        attempts_max,
        backoff: Backoff {
            base: Duration::ZERO,
            max: Duration::ZERO,
        },
        jitter_seed: Some(7),
        ..QueueConfig::default()
    }
}

pub(super) async fn claims_and_acks<H: Harness>(h: &H) -> Outcome
where
    H::Engine: Engine,
{
    let e = h.engine(config(h.unit())).await?;
    e.create_queue(T, "work", queue_config(3)).await?;
    let first = e.enqueue(T, "work", b"a", JobOptions::default()).await?;
    let second = e.enqueue(T, "work", b"b", JobOptions::default()).await?;
    let claimed = e.claim(T, "work", "w1", None, 1).await?;
    ensure_eq!(claimed.len(), 1, "one job per claim of one");
    ensure_eq!(claimed[0].id, first, "oldest first");
    ensure_eq!(claimed[0].attempt, 1, "the first attempt");
    let other = e.claim(T, "work", "w2", None, 5).await?;
    ensure_eq!(
        other.iter().map(|j| j.id).collect::<Vec<_>>(),
        vec![second],
        "a claimed job is not handed out again"
    );
    ensure_eq!(
        e.ack(T, "work", first, other[0].claim).await,
        Err(Error::StaleClaim),
        "another job's claim"
    );
    ensure_eq!(
        e.ack(OTHER, "work", first, claimed[0].claim).await,
        Err(Error::NotFound),
        "another tenant's probe"
    );
    let before = e.job(T, "work", first).await?;
    ensure!(
        matches!(before.state, JobState::Claimed { .. }),
        "a refused ack leaves the job claimed: {before:?}"
    );
    e.ack(T, "work", first, claimed[0].claim).await?;
    ensure_eq!(
        e.ack(T, "work", first, claimed[0].claim).await,
        Err(Error::NotFound),
        "an acked job is gone"
    );
    e.ack(T, "work", second, other[0].claim).await?;
    ensure_eq!(
        e.queue_info(T, "work").await?,
        Default::default(),
        "an empty queue"
    );
    ensure_eq!(
        e.enqueue(T, "missing", b"", JobOptions::default()).await,
        Err(Error::NotFound),
        "a missing queue"
    );
    ensure_eq!(
        e.create_queue(T, "work", queue_config(4)).await,
        Err(Error::Exists),
        "the name with other settings"
    );
    Ok(())
}

pub(super) async fn retries_and_dead_letters<H: Harness>(h: &H) -> Outcome
where
    H::Engine: Engine,
{
    let e = h.engine(config(h.unit())).await?;
    e.create_queue(T, "work", queue_config(2)).await?;
    let id = e
        .enqueue(T, "work", b"poison", JobOptions::default())
        .await?;
    let job = e.claim(T, "work", "w", None, 1).await?.remove(0);
    ensure_eq!(
        e.fail(T, "work", id, job.claim, "boom").await,
        Ok(Failed::RetryIn(Duration::ZERO)),
        "the first failure retries"
    );
    ensure_eq!(
        e.fail(T, "work", id, job.claim, "again").await,
        Err(Error::StaleClaim),
        "a failed claim is spent"
    );
    let job = e.claim(T, "work", "w", None, 1).await?.remove(0);
    ensure_eq!(job.attempt, 2, "the second attempt");
    ensure_eq!(
        e.fail(T, "work", id, job.claim, "boom").await,
        Ok(Failed::DeadLettered),
        "the last attempt dead-letters"
    );
    let dead = e.dead_letters(T, "work", None, 10).await?;
    ensure_eq!(dead.len(), 1, "one dead letter");
    ensure_eq!(
        (dead[0].id, dead[0].attempts, &*dead[0].reason),
        (id, 2, "boom"),
        "the dead letter"
    );
    e.requeue_dead(T, "work", id).await?;
    let job = e.claim(T, "work", "w", None, 1).await?.remove(0);
    ensure_eq!(job.attempt, 1, "a requeued job starts over");
    e.fail(T, "work", id, job.claim, "x").await?;
    let job = e.claim(T, "work", "w", None, 1).await?.remove(0);
    e.fail(T, "work", id, job.claim, "x").await?;
    ensure_eq!(e.purge_dead(T, "work").await, Ok(1), "purged");
    for _ in 0..4 {
        let id = e.enqueue(T, "work", b"", JobOptions::default()).await?;
        let job = e.claim(T, "work", "w", None, 1).await?.remove(0);
        e.fail(T, "work", id, job.claim, "x").await?;
        let job = e.claim(T, "work", "w", None, 1).await?.remove(0);
        e.fail(T, "work", id, job.claim, "x").await?;
    }
    ensure_eq!(
        e.enqueue(T, "work", b"", JobOptions::default()).await,
        Err(Error::CapacityExceeded {
            scope: Scope::QueueDeadLetters,
            limit: 4,
            used: 4,
        }),
        "a full dead-letter set stops the queue"
    );
    // Dead letters are listed oldest first, a page at a time.
    let all = e.dead_letters(T, "work", None, 10).await?;
    ensure_eq!(all.len(), 4, "every dead letter");
    let ids =
        |page: &[crate::contract::queue::DeadLetter]| page.iter().map(|d| d.id).collect::<Vec<_>>();
    let first = e.dead_letters(T, "work", None, 2).await?;
    ensure_eq!(ids(&first), ids(&all[..2]), "a page of two");
    let rest = e.dead_letters(T, "work", Some(first[1].id), 10).await?;
    ensure_eq!(ids(&rest), ids(&all[2..]), "the page after it");
    // A smaller queue with the other settings left at their defaults is a
    // valid queue: its dead-letter cap follows its jobs_max.
    let small = QueueConfig {
        jobs_max: 20,
        attempts_max: 1,
        ..QueueConfig::default()
    };
    ensure_eq!(small.dead_letters_cap(), 2, "a tenth of jobs_max");
    ensure_eq!(
        e.create_queue(T, "small", small).await,
        Ok(()),
        "a queue with only jobs_max set"
    );
    for _ in 0..2 {
        let id = e.enqueue(T, "small", b"", JobOptions::default()).await?;
        let job = e.claim(T, "small", "w", None, 1).await?.remove(0);
        e.fail(T, "small", id, job.claim, "x").await?;
    }
    ensure_eq!(
        e.enqueue(T, "small", b"", JobOptions::default()).await,
        Err(Error::CapacityExceeded {
            scope: Scope::QueueDeadLetters,
            limit: 2,
            used: 2,
        }),
        "the default dead-letter cap"
    );
    ensure!(
        matches!(
            e.create_queue(
                T,
                "contradiction",
                QueueConfig {
                    jobs_max: 20,
                    dead_letters_max: Some(21),
                    ..QueueConfig::default()
                }
            )
            .await,
            Err(Error::InvalidArgument { .. })
        ),
        "dead_letters_max above jobs_max"
    );
    Ok(())
}

pub(super) async fn lapses_and_delays<H: Harness>(h: &H) -> Outcome
where
    H::Engine: Engine,
{
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    e.create_queue(T, "work", queue_config(2)).await?;
    let id = e.enqueue(T, "work", b"", JobOptions::default()).await?;
    let late = e
        .enqueue(T, "work", b"", JobOptions::delayed(u * 20))
        .await?;
    let job = e.claim(T, "work", "w", Some(u * 5), 5).await?;
    ensure_eq!(job.len(), 1, "a delayed job is not claimable");
    h.advance(u * 6).await;
    ensure_eq!(
        e.ack(T, "work", id, job[0].claim).await,
        Err(Error::StaleClaim),
        "a lapsed claim"
    );
    let again = e.claim(T, "work", "w", Some(u * 5), 5).await?;
    ensure_eq!(
        again.iter().map(|j| (j.id, j.attempt)).collect::<Vec<_>>(),
        vec![(id, 2)],
        "a lapsed job returns and its lapse used an attempt"
    );
    h.advance(u * 6).await;
    let info = e.job(T, "work", id).await?;
    ensure!(
        matches!(info.state, JobState::Dead { .. }),
        "its last lapse dead-letters it: {info:?}"
    );
    h.advance(u * 10).await;
    let due = e.claim(T, "work", "w", None, 5).await?;
    ensure_eq!(
        due.iter().map(|j| j.id).collect::<Vec<_>>(),
        vec![late],
        "a delayed job once due"
    );
    Ok(())
}

/// Whichever call comes first after a claim's last lapse sees the dead
/// letter it made: no call's answer depends on another call, a read
/// included, having looked at the queue before it.
pub(super) async fn lapses_seen_by_every_call<H: Harness>(h: &H) -> Outcome
where
    H::Engine: Engine,
{
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    // A queue per call, each with one job whose only claim lapses.
    let queues = ["purged", "listed", "requeued", "full"];
    let mut jobs = Vec::new();
    for queue in queues {
        let one_dead_letter = QueueConfig {
            dead_letters_max: Some(1),
            ..queue_config(1)
        };
        e.create_queue(T, queue, one_dead_letter).await?;
        jobs.push(e.enqueue(T, queue, b"j", JobOptions::default()).await?);
        e.claim(T, queue, "w", Some(u * 5), 1).await?;
    }
    h.advance(u * 6).await;
    ensure_eq!(
        e.purge_dead(T, "purged").await,
        Ok(1),
        "purge_dead counts the lapse's dead letter"
    );
    let listed = e.dead_letters(T, "listed", None, 10).await?;
    ensure_eq!(
        listed.iter().map(|d| d.id).collect::<Vec<_>>(),
        vec![jobs[1]],
        "dead_letters lists it"
    );
    ensure_eq!(
        e.requeue_dead(T, "requeued", jobs[2]).await,
        Ok(()),
        "requeue_dead finds it"
    );
    let refused = e.enqueue(T, "full", b"k", JobOptions::default()).await;
    ensure!(
        matches!(
            refused,
            Err(Error::CapacityExceeded {
                scope: Scope::QueueDeadLetters,
                ..
            })
        ),
        "an enqueue counts it against the dead-letter cap: {refused:?}"
    );
    Ok(())
}

pub(super) async fn outbox_and_schedules<H: Harness>(h: &H) -> Outcome
where
    H::Engine: Engine,
{
    let u = h.unit();
    let e = scheduling(h).await?;
    let id = e.outbox_put(T, "session.ended", b"s-1", None).await?;
    let mut seen = Vec::new();
    let run = e
        .outbox_run_once(T, "relay", 10, |m| {
            seen.push((m.id, m.topic.to_string(), m.payload.to_vec()));
            Err::<(), _>("unreachable")
        })
        .await?;
    ensure_eq!(
        (run.delivered, run.retried),
        (0, 1),
        "a failed delivery retries"
    );
    ensure_eq!(
        seen,
        vec![(id, "session.ended".to_string(), b"s-1".to_vec())],
        "the message"
    );

    e.create_queue(T, "ticks", QueueConfig::default()).await?;
    let spec = format!("@every {}ms", (u * 5).as_millis());
    e.schedule(T, "beat", &spec, "ticks", b"tick").await?;
    let leader = e.try_lead_schedules(T, "r1", u * 1000).await?;
    let Some(leader) = leader else {
        return Err(super::Fault::new("the scheduler lock was free".into()));
    };
    ensure_eq!(
        e.try_lead_schedules(T, "r2", u * 1000).await?,
        None,
        "one leader"
    );
    h.advance(u * 12).await;
    let run = e.run_schedules(T, leader.fence).await?;
    ensure_eq!(run.fired, 2, "two grid points passed");
    ensure_eq!(
        e.run_schedules(T, leader.fence + 1).await,
        Err(Error::LeadershipLost),
        "a fence that does not hold the lock"
    );
    ensure_eq!(
        e.queue_info(T, "ticks").await?.ready,
        2,
        "the fires are jobs"
    );
    ensure!(
        matches!(
            e.schedule(T, "bad", "@every soon", "ticks", b"").await,
            Err(Error::InvalidArgument { .. })
        ),
        "a malformed spec"
    );
    Ok(())
}

/// A catch-up larger than the target queue's room enqueues what fits,
/// skips the rest and moves to the grid (it used to be refused whole, so
/// a schedule whose catch-up outgrew its queue never fired again); a
/// queue with no room at all leaves the schedule due, refused with the
/// queue's real use; room made later is filled at the next run.
pub(super) async fn catch_up_fills_what_fits<H: Harness>(h: &H) -> Outcome
where
    H::Engine: Engine,
{
    let u = h.unit();
    let e = scheduling(h).await?;
    let small = QueueConfig {
        jobs_max: 3,
        ..QueueConfig::default()
    };
    e.create_queue(T, "small", small).await?;
    let spec = format!("@every {}ms", (u * 4).as_millis());
    e.schedule(T, "beat", &spec, "small", b"tick").await?;
    let Some(leader) = e.try_lead_schedules(T, "r1", u * 1000).await? else {
        return Err(super::Fault::new("the scheduler lock was free".into()));
    };
    h.advance(u * 22).await;
    let run = e.run_schedules(T, leader.fence).await?;
    ensure!(run.refused.is_empty(), "refused: {:?}", run.refused);
    ensure_eq!(run.fired, 3, "as many fires as the queue had room for");
    ensure!(run.skipped >= 2, "the rest skipped: {run:?}");
    ensure_eq!(
        e.queue_info(T, "small").await?.ready,
        3,
        "the fires are jobs"
    );
    h.advance(u * 5).await;
    let run = e.run_schedules(T, leader.fence).await?;
    ensure_eq!(run.fired, 0, "no room");
    let refusal = run
        .refused
        .first()
        .map(|(name, e)| (name.to_string(), e.clone()));
    ensure_eq!(
        refusal,
        Some((
            "beat".to_string(),
            Error::CapacityExceeded {
                scope: Scope::QueueJobs,
                limit: 3,
                used: 3,
            }
        )),
        "refused with the queue's use"
    );
    let claimed = e.claim(T, "small", "w", None, 1).await?;
    ensure_eq!(claimed.len(), 1, "a job claimed");
    e.ack(T, "small", claimed[0].id, claimed[0].claim).await?;
    let run = e.run_schedules(T, leader.fence).await?;
    ensure_eq!(run.fired, 1, "the room made is filled");
    ensure!(run.refused.is_empty(), "refused: {:?}", run.refused);
    Ok(())
}

/// A claim extended before it lapses stays the worker's past its first
/// visibility, with its attempt unused; a lapsed claim cannot be extended
/// (`StaleClaim`, nothing changed), nor one whose job is gone; a
/// visibility outside the TTL range is refused.
pub(super) async fn claims_extend<H: Harness>(h: &H) -> Outcome
where
    H::Engine: Engine,
{
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    e.create_queue(T, "long", QueueConfig::default()).await?;
    e.enqueue(T, "long", b"a", JobOptions::default()).await?;
    e.enqueue(T, "long", b"b", JobOptions::default()).await?;
    let mut claimed = e.claim(T, "long", "w", Some(u * 10), 2).await?;
    ensure_eq!(claimed.len(), 2, "two claims");
    let (a, b) = (claimed.remove(0), claimed.remove(0));
    h.advance(u * 6).await;
    ensure_eq!(
        e.extend_claim(T, "long", a.id, a.claim, Some(u * 10))
            .await?,
        u * 10,
        "the visibility granted"
    );
    ensure!(
        matches!(
            e.extend_claim(T, "long", a.id, a.claim, Some(Duration::ZERO))
                .await,
            Err(Error::InvalidArgument { .. })
        ),
        "a visibility outside the TTL range"
    );
    h.advance(u * 6).await;
    // Past the first visibility: b's claim lapsed, a's holds.
    ensure_eq!(
        e.extend_claim(T, "long", b.id, b.claim, None).await,
        Err(Error::StaleClaim),
        "a lapsed claim"
    );
    ensure_eq!(e.job(T, "long", a.id).await?.attempts, 1, "no attempt used");
    let again = e.claim(T, "long", "w2", None, 2).await?;
    ensure_eq!(
        again.iter().map(|c| (c.id, c.attempt)).collect::<Vec<_>>(),
        vec![(b.id, 2)],
        "only the lapsed job is claimed again"
    );
    e.ack(T, "long", a.id, a.claim).await?;
    ensure_eq!(
        e.extend_claim(T, "long", a.id, a.claim, None).await,
        Err(Error::NotFound),
        "a job acknowledged"
    );
    Ok(())
}

/// A snoozed job comes back after its delay (at once for none) with its
/// attempt unused; the claim it ended is stale; a delay past the TTL
/// range is refused.
pub(super) async fn snooze_gives_the_attempt_back<H: Harness>(h: &H) -> Outcome
where
    H::Engine: Engine,
{
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    e.create_queue(T, "later", QueueConfig::default()).await?;
    let id = e.enqueue(T, "later", b"a", JobOptions::default()).await?;
    let first = e.claim(T, "later", "w", None, 1).await?.remove(0);
    ensure!(
        matches!(
            e.snooze(T, "later", id, first.claim, u * 100_000).await,
            Err(Error::InvalidArgument { .. })
        ),
        "a delay past the TTL range"
    );
    e.snooze(T, "later", id, first.claim, u * 10).await?;
    ensure_eq!(
        e.snooze(T, "later", id, first.claim, u).await,
        Err(Error::StaleClaim),
        "the claim it ended"
    );
    ensure!(
        e.claim(T, "later", "w", None, 1).await?.is_empty(),
        "not ready before its delay"
    );
    ensure_eq!(
        e.job(T, "later", id).await?.attempts,
        0,
        "the attempt given back"
    );
    h.advance(u * 11).await;
    let second = e.claim(T, "later", "w", None, 1).await?;
    ensure_eq!(
        second.iter().map(|c| (c.id, c.attempt)).collect::<Vec<_>>(),
        vec![(id, 1)],
        "ready after its delay, as its first attempt"
    );
    e.snooze(T, "later", id, second[0].claim, Duration::ZERO)
        .await?;
    let third = e.claim(T, "later", "w", None, 1).await?;
    ensure_eq!(
        third.iter().map(|c| (c.id, c.attempt)).collect::<Vec<_>>(),
        vec![(id, 1)],
        "no delay: ready at once"
    );
    Ok(())
}

/// A batch is enqueued all or none, in its order, with one admission: a
/// batch the queue has no room for leaves nothing; an empty one is
/// refused.
pub(super) async fn batches_all_or_none<H: Harness>(h: &H) -> Outcome
where
    H::Engine: Engine,
{
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let four = QueueConfig {
        jobs_max: 4,
        ..QueueConfig::default()
    };
    e.create_queue(T, "batch", four).await?;
    let ids = e
        .enqueue_batch(T, "batch", &[b"a", b"b", b"c"], JobOptions::default())
        .await?;
    ensure_eq!(ids.len(), 3, "an id per job");
    let refused = e
        .enqueue_batch(T, "batch", &[b"d", b"e"], JobOptions::default())
        .await;
    ensure_eq!(
        refused,
        Err(Error::CapacityExceeded {
            scope: Scope::QueueJobs,
            limit: 4,
            used: 3,
        }),
        "two more do not fit"
    );
    ensure!(
        matches!(
            e.enqueue_batch(T, "batch", &[], JobOptions::default())
                .await,
            Err(Error::InvalidArgument { .. })
        ),
        "an empty batch"
    );
    let claimed = e.claim(T, "batch", "w", None, 10).await?;
    ensure_eq!(
        claimed
            .iter()
            .map(|c| (c.id, c.payload.to_vec()))
            .collect::<Vec<_>>(),
        vec![
            (ids[0], b"a".to_vec()),
            (ids[1], b"b".to_vec()),
            (ids[2], b"c".to_vec())
        ],
        "the batch, in its order, and nothing of the refused one"
    );
    Ok(())
}

/// A batch of acks is taken one by one: each live claim's job leaves,
/// each stale or foreign claim is refused on its own, a job already gone
/// is `NotFound`; an empty batch and a missing queue are refused whole.
pub(super) async fn acks_in_batches<H: Harness>(h: &H) -> Outcome
where
    H::Engine: Engine,
{
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    e.create_queue(T, "acks", QueueConfig::default()).await?;
    let ids = e
        .enqueue_batch(T, "acks", &[b"a", b"b", b"c"], JobOptions::default())
        .await?;
    let claimed = e.claim(T, "acks", "w", None, 2).await?;
    ensure_eq!(claimed.len(), 2, "two claims");
    let (a, b) = (&claimed[0], &claimed[1]);
    let outcomes = e
        .ack_batch(
            T,
            "acks",
            &[(a.id, a.claim), (b.id, a.claim), (ids[2], a.claim)],
        )
        .await?;
    ensure_eq!(
        outcomes,
        vec![Ok(()), Err(Error::StaleClaim), Err(Error::StaleClaim)],
        "each on its own"
    );
    let info = e.queue_info(T, "acks").await?;
    ensure_eq!(
        (info.claimed, info.ready),
        (1, 1),
        "the stale ones untouched"
    );
    ensure_eq!(
        e.ack_batch(T, "acks", &[(a.id, a.claim), (b.id, b.claim)])
            .await?,
        vec![Err(Error::NotFound), Ok(())],
        "a job already gone, and b's own claim"
    );
    ensure!(
        matches!(
            e.ack_batch(T, "acks", &[]).await,
            Err(Error::InvalidArgument { .. })
        ),
        "an empty batch"
    );
    ensure_eq!(
        e.ack_batch(T, "none", &[(a.id, a.claim)]).await,
        Err(Error::NotFound),
        "a missing queue"
    );
    Ok(())
}

/// A cancelled job leaves whatever its state (ready, delayed, claimed):
/// it is `NotFound` after, to a read, to its claim's ack and to a second
/// cancel.
pub(super) async fn cancel_removes_a_job<H: Harness>(h: &H) -> Outcome
where
    H::Engine: Engine,
{
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    e.create_queue(T, "gone", QueueConfig::default()).await?;
    let claimed = e.enqueue(T, "gone", b"c", JobOptions::default()).await?;
    let claim = e.claim(T, "gone", "w", None, 1).await?.remove(0);
    ensure_eq!(claim.id, claimed, "the claimed one");
    let ready = e.enqueue(T, "gone", b"r", JobOptions::default()).await?;
    let later = JobOptions {
        delay: u * 100,
        ..JobOptions::default()
    };
    let delayed = e.enqueue(T, "gone", b"d", later).await?;
    for job in [ready, delayed, claimed] {
        e.cancel_job(T, "gone", job).await?;
        ensure_eq!(
            e.job(T, "gone", job).await.map(drop),
            Err(Error::NotFound),
            "a cancelled job"
        );
        ensure_eq!(
            e.cancel_job(T, "gone", job).await,
            Err(Error::NotFound),
            "cancelled twice"
        );
    }
    ensure_eq!(
        e.ack(T, "gone", claim.id, claim.claim).await,
        Err(Error::NotFound),
        "the claim of a cancelled job"
    );
    let info = e.queue_info(T, "gone").await?;
    ensure_eq!(
        (info.ready, info.delayed, info.claimed, info.bytes),
        (0, 0, 0, 0),
        "nothing left"
    );
    Ok(())
}

/// An engine whose schedules may fire every `h.unit()`.
async fn scheduling<H: Harness>(h: &H) -> Result<H::Engine, super::Fault>
where
    H::Engine: Engine,
{
    let u = h.unit();
    let mut cfg = config(u);
    cfg.schedule_interval_min = u;
    Ok(h.engine(cfg).await?)
}

/// An enqueue (or an outbox put) under an idempotency key is safe to
/// retry: its repeat answers the jobs it made and makes none; other
/// payloads or options under the key are refused; a failed enqueue
/// leaves its key unused.
pub(super) async fn enqueue_retried_with_a_key<H: Harness>(h: &H) -> Outcome
where
    H::Engine: Engine,
{
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    e.create_queue(T, "keyed", queue_config(3)).await?;
    let keyed = JobOptions::default().with_idempotency_key("job-1");
    let id = e.enqueue(T, "keyed", b"a", keyed.clone()).await?;
    ensure_eq!(
        e.enqueue(T, "keyed", b"a", keyed.clone()).await,
        Ok(id),
        "the enqueue repeated under its key"
    );
    ensure_eq!(
        e.enqueue(T, "keyed", b"b", keyed.clone()).await,
        Err(Error::IdempotencyMismatch),
        "another payload under the key"
    );
    ensure_eq!(
        e.enqueue(T, "keyed", b"a", keyed.clone().with_attempts_max(1))
            .await,
        Err(Error::IdempotencyMismatch),
        "other options under the key"
    );
    let batch = JobOptions::default().with_idempotency_key("batch-1");
    let ids = e
        .enqueue_batch(T, "keyed", &[b"x", b"y"], batch.clone())
        .await?;
    ensure_eq!(
        e.enqueue_batch(T, "keyed", &[b"x", b"y"], batch.clone())
            .await,
        Ok(ids.clone()),
        "a batch repeated under its key"
    );
    ensure_eq!(
        e.enqueue_batch(T, "keyed", &[b"y", b"x"], batch).await,
        Err(Error::IdempotencyMismatch),
        "the batch in another order"
    );
    // A failed enqueue remembers nothing under its key.
    let later = JobOptions::default().with_idempotency_key("job-2");
    ensure_eq!(
        e.enqueue(T, "absent", b"c", later.clone()).await,
        Err(Error::NotFound),
        "an enqueue on a missing queue"
    );
    e.create_queue(T, "absent", queue_config(3)).await?;
    let made = e.enqueue(T, "absent", b"c", later.clone()).await?;
    ensure_eq!(
        e.enqueue(T, "absent", b"c", later).await,
        Ok(made),
        "the key a failed enqueue left unused"
    );
    let claimed = e.claim(T, "keyed", "w", None, 10).await?;
    ensure_eq!(
        claimed
            .iter()
            .map(|c| (c.id, c.payload.to_vec()))
            .collect::<Vec<_>>(),
        vec![
            (id, b"a".to_vec()),
            (ids[0], b"x".to_vec()),
            (ids[1], b"y".to_vec())
        ],
        "each job once, whatever was repeated"
    );
    let put = e
        .outbox_put(T, "lobby.closed", b"l-1", Some("out-1"))
        .await?;
    ensure_eq!(
        e.outbox_put(T, "lobby.closed", b"l-1", Some("out-1")).await,
        Ok(put),
        "an outbox put repeated under its key"
    );
    ensure_eq!(
        e.outbox_put(T, "lobby.closed", b"l-2", Some("out-1")).await,
        Err(Error::IdempotencyMismatch),
        "another message under the key"
    );
    let mut delivered = 0;
    e.outbox_run_once(T, "w", 10, |_| {
        delivered += 1;
        Ok::<(), String>(())
    })
    .await?;
    ensure_eq!(delivered, 1, "the repeated put is one message");
    Ok(())
}

/// A job enqueued for a wall-clock time waits for it by the engine's own
/// clock; a time already past is ready at once; a `run_at` given with a
/// delay, or more than `ttl_max` away, is refused.
pub(super) async fn jobs_run_at<H: Harness>(h: &H) -> Outcome
where
    H::Engine: Engine,
{
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    e.create_queue(T, "timed", queue_config(3)).await?;
    // The engine's wall clock now: a lease's expiry less its TTL.
    let probe = e.grant(T, "clock", u * 600, None).await?;
    let now = probe.expires_at - u * 600;
    let later = e
        .enqueue(T, "timed", b"later", JobOptions::at(now + u * 8))
        .await?;
    let past = e
        .enqueue(T, "timed", b"past", JobOptions::at(now - u * 5))
        .await?;
    match e.job(T, "timed", later).await?.state {
        JobState::Delayed { ready_in } => ensure!(
            ready_in <= u * 8 && ready_in >= u * 3,
            "a job for 8 units from now is ready in {ready_in:?}"
        ),
        other => return Err(Fault::new(format!("a job for later is {other:?}"))),
    }
    let claimed = e.claim(T, "timed", "w", None, 10).await?;
    ensure_eq!(
        claimed.iter().map(|c| c.id).collect::<Vec<_>>(),
        vec![past],
        "only the job whose time has come"
    );
    h.advance(u * 9).await;
    let claimed = e.claim(T, "timed", "w", None, 10).await?;
    ensure_eq!(
        claimed.iter().map(|c| c.id).collect::<Vec<_>>(),
        vec![later],
        "the later job once its time came"
    );
    let both = JobOptions {
        delay: u,
        ..JobOptions::at(now)
    };
    ensure!(
        matches!(
            e.enqueue(T, "timed", b"x", both).await,
            Err(Error::InvalidArgument { .. })
        ),
        "a run_at with a delay"
    );
    ensure!(
        matches!(
            e.enqueue(T, "timed", b"x", JobOptions::at(now + u * 4000))
                .await,
            Err(Error::InvalidArgument { .. })
        ),
        "a run_at beyond ttl_max"
    );
    Ok(())
}

/// Ready jobs are claimed by priority, oldest first within one; a job
/// keeps its priority through a failure, a snooze and a requeue from the
/// dead letters; a priority above `PRIORITY_MAX` is refused and leaves
/// nothing; the priority is part of what an idempotency key compares.
pub(super) async fn priorities<H: Harness>(h: &H) -> Outcome
where
    H::Engine: Engine,
{
    let e = h.engine(config(h.unit())).await?;
    e.create_queue(T, "work", queue_config(2)).await?;
    let at = |p: u8| JobOptions::default().with_priority(p);
    let low = e.enqueue(T, "work", b"low", at(3)).await?;
    let first = e.enqueue(T, "work", b"first", at(0)).await?;
    let mid = e.enqueue(T, "work", b"mid", at(1)).await?;
    let second = e
        .enqueue(T, "work", b"second", JobOptions::default())
        .await?;
    let batch = e.enqueue_batch(T, "work", &[b"b1", b"b2"], at(2)).await?;
    ensure!(
        matches!(
            e.enqueue(T, "work", b"x", at(PRIORITY_MAX + 1)).await,
            Err(Error::InvalidArgument { .. })
        ),
        "a priority above PRIORITY_MAX"
    );
    ensure_eq!(
        e.queue_info(T, "work").await?.ready,
        6,
        "a refused enqueue left a job"
    );
    ensure_eq!(e.job(T, "work", low).await?.priority, 3, "a job's priority");
    let claimed = e.claim(T, "work", "w", None, 8).await?;
    let order: Vec<_> = claimed.iter().map(|c| c.id).collect();
    ensure_eq!(
        order,
        vec![first, second, mid, batch[0], batch[1], low],
        "claimed by priority, oldest first within one"
    );
    let claim_of = |id| {
        let claim = claimed.iter().find(|c| c.id == id).map(|c| c.claim);
        claim.ok_or_else(|| Fault::new(format!("no claim of {id:?}")))
    };
    for done in [second, batch[0], batch[1]] {
        e.ack(T, "work", done, claim_of(done)?).await?;
    }
    // `first` fails (no backoff: ready again), `low` is snoozed, `mid`
    // fails its last attempt; newer jobs of their priorities come after.
    e.fail(T, "work", first, claim_of(first)?, "again").await?;
    e.snooze(T, "work", low, claim_of(low)?, Duration::ZERO)
        .await?;
    let newer_low = e.enqueue(T, "work", b"newer-low", at(3)).await?;
    let newer = e.enqueue(T, "work", b"newer", at(0)).await?;
    let again = e.claim(T, "work", "w", None, 8).await?;
    ensure_eq!(
        again.iter().map(|c| c.id).collect::<Vec<_>>(),
        vec![first, newer, low, newer_low],
        "a failed and a snoozed job keep their priority and their place"
    );
    let mid_again = e.claim(T, "work", "w", None, 1).await?;
    ensure!(mid_again.is_empty(), "nothing else ready");
    // `mid` (attempts_max 2) is claimed once more and fails into the dead
    // letters, then is requeued with its priority.
    e.fail(T, "work", mid, claim_of(mid)?, "no").await?;
    let last = e.claim(T, "work", "w", None, 1).await?;
    ensure_eq!(last.first().map(|c| c.id), Some(mid), "mid retried");
    let dead = e.fail(T, "work", mid, last[0].claim, "no").await?;
    ensure_eq!(dead, Failed::DeadLettered, "mid out of attempts");
    e.requeue_dead(T, "work", mid).await?;
    ensure_eq!(
        e.job(T, "work", mid).await?.priority,
        1,
        "requeued with its priority"
    );
    let keyed = at(1).with_idempotency_key("prio-1");
    let id = e.enqueue(T, "work", b"k", keyed.clone()).await?;
    ensure_eq!(
        e.enqueue(T, "work", b"k", keyed.clone().with_priority(2))
            .await,
        Err(Error::IdempotencyMismatch),
        "another priority under the key"
    );
    ensure_eq!(e.enqueue(T, "work", b"k", keyed).await, Ok(id), "the same");
    Ok(())
}

/// A unique key is taken while its job waits or is claimed (by default),
/// for its window whatever became of the job, and while dead if asked;
/// a duplicate names the job that takes the key and enqueues nothing; a
/// queue remembers at most `jobs_max` keys; bad input is refused.
pub(super) async fn unique_jobs<H: Harness>(h: &H) -> Outcome
where
    H::Engine: Engine,
{
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    e.create_queue(T, "work", queue_config(1)).await?;
    e.create_queue(T, "other", queue_config(1)).await?;
    let unique = |key: &str| JobOptions::default().with_unique(Unique::key(key));
    let dup = |existing| Err(Error::DuplicateJob { existing });
    let a = e.enqueue(T, "work", b"a", unique("cleanup")).await?;
    ensure_eq!(
        e.enqueue(T, "work", b"b", unique("cleanup")).await,
        dup(a),
        "a waiting job takes its key"
    );
    ensure_eq!(
        e.queue_info(T, "work").await?.ready,
        1,
        "a duplicate left a job"
    );
    e.enqueue(T, "other", b"a", unique("cleanup")).await?;
    e.enqueue(T, "work", b"c", unique("cleanup-2")).await?;
    let claimed = e.claim(T, "work", "w", None, 1).await?;
    ensure_eq!(claimed.first().map(|c| c.id), Some(a), "the oldest claimed");
    ensure_eq!(
        e.enqueue(T, "work", b"b", unique("cleanup")).await,
        dup(a),
        "a claimed job takes its key"
    );
    e.ack(T, "work", a, claimed[0].claim).await?;
    let after = e.enqueue(T, "work", b"b", unique("cleanup")).await?;
    ensure!(after != a, "a key free again once its job is done");
    // A window keeps the key taken after the job is done, until it ends.
    let windowed = JobOptions::default().with_unique(Unique::key("w").window(u * 3));
    let w = e.enqueue(T, "other", b"w", windowed.clone()).await?;
    e.cancel_job(T, "other", w).await?;
    ensure_eq!(
        e.enqueue(T, "other", b"w", windowed.clone()).await,
        dup(w),
        "within its window, a cancelled job's key"
    );
    // Dead letters take their key only when asked.
    let dead = |key: &str, dead: bool| {
        let states = UniqueStates {
            dead,
            ..UniqueStates::default()
        };
        JobOptions::default().with_unique(Unique::key(key).states(states))
    };
    for (key, counts) in [("d-no", false), ("d-yes", true)] {
        let id = e.enqueue(T, "other", b"d", dead(key, counts)).await?;
        let claim = e.claim(T, "other", "w", None, 4).await?;
        let claim = claim.iter().find(|c| c.id == id).map(|c| c.claim);
        let claim = claim.ok_or_else(|| Fault::new(format!("{key}: not claimed")))?;
        ensure_eq!(
            e.fail(T, "other", id, claim, "no").await?,
            Failed::DeadLettered,
            "one attempt"
        );
        let again = e.enqueue(T, "other", b"d", dead(key, counts)).await;
        if counts {
            ensure_eq!(again, dup(id), "a dead letter asked to take its key");
            e.purge_dead(T, "other").await?;
            e.enqueue(T, "other", b"d", dead(key, counts)).await?;
        } else {
            ensure!(again.is_ok(), "a dead letter took its key: {again:?}");
        }
    }
    h.advance(u * 4).await;
    ensure!(
        e.enqueue(T, "other", b"w", windowed).await.is_ok(),
        "the window over"
    );
    // Bad input.
    for (what, options, payloads) in [
        ("a batch under one key", unique("batch"), 2),
        (
            "a window above ttl_max",
            JobOptions::default().with_unique(Unique::key("k").window(u * 3601)),
            1,
        ),
        ("an empty key", unique(""), 1),
    ] {
        let batch = vec![&b"x"[..]; payloads];
        ensure!(
            matches!(
                e.enqueue_batch(T, "work", &batch, options).await,
                Err(Error::InvalidArgument { .. } | Error::InvalidName)
            ),
            "{what}"
        );
    }
    // A queue remembers at most `jobs_max` keys, lingering ones included.
    let small = QueueConfig {
        jobs_max: 2,
        dead_letters_max: Some(1),
        ..queue_config(1)
    };
    e.create_queue(T, "small", small).await?;
    let lingering = |key: &str| JobOptions::default().with_unique(Unique::key(key).window(u * 3));
    for key in ["k1", "k2"] {
        let id = e.enqueue(T, "small", b"k", lingering(key)).await?;
        e.cancel_job(T, "small", id).await?;
    }
    ensure_eq!(
        e.enqueue(T, "small", b"k", lingering("k3")).await.map(drop),
        Err(Error::CapacityExceeded {
            scope: Scope::QueueUniqueKeys,
            limit: 2,
            used: 2
        }),
        "a third key with two remembered"
    );
    e.enqueue(T, "small", b"plain", JobOptions::default())
        .await?;
    h.advance(u * 4).await;
    e.enqueue(T, "small", b"k", lingering("k3")).await?;
    Ok(())
}

/// A schedule repeated with the same interval, queue and payload (a
/// retried call) keeps its grid; changed, it is replaced and its grid
/// starts again.
pub(super) async fn schedule_repeated_keeps_its_grid<H: Harness>(h: &H) -> Outcome
where
    H::Engine: Engine,
{
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    e.create_queue(T, "ticks", QueueConfig::default()).await?;
    let spec = format!("@every {}ms", (u * 10).as_millis());
    let next_in = |list: Vec<crate::contract::schedule::ScheduleInfo>| {
        list.first().map(|s| (s.next_in, s.fired))
    };
    e.schedule(T, "beat", &spec, "ticks", b"tick").await?;
    h.advance(u * 6).await;
    e.schedule(T, "beat", &spec, "ticks", b"tick").await?;
    let (left, fired) =
        next_in(e.schedules(T).await?).ok_or_else(|| Fault::new("no schedule".into()))?;
    ensure!(
        left <= u * 4 && fired == 0,
        "a repeat moved the grid: next in {left:?}"
    );
    ensure_eq!(e.schedules(T).await?.len(), 1, "one schedule");
    e.schedule(T, "beat", &spec, "ticks", b"other").await?;
    let (left, _) =
        next_in(e.schedules(T).await?).ok_or_else(|| Fault::new("no schedule".into()))?;
    ensure!(
        left > u * 8,
        "a changed payload replaces the schedule: next in {left:?}"
    );
    Ok(())
}
