//! Transactions (SPEC §10, ADR 0069): a batch of one tenant's changes goes
//! in whole or not at all, its wakes fire only once it is in, each change
//! is refused as its plain operation is, and staging refuses what no
//! state can change.

use super::{config, ensure, ensure_eq, Fault, Harness, Outcome};
use crate::base::error::{ConflictReason, Error, Scope};
use crate::base::ids::{LeaseId, TenantId};
use crate::base::name::Name;
use crate::contract::engine::{Engine, RelayEngine, StreamEngine, WakeEngine, Wakes};
use crate::contract::queue::{Backoff, Failed, JobOptions, QueueConfig};
use crate::contract::stream::{StreamConfig, WhenFull};
use crate::contract::tx::{TxApplied, TxBatch, TX_OPS_MAX};

const T: TenantId = TenantId(1);

/// Every kind of change a relay commits together, then (if `refused`) a
/// last change that is refused: an update of a listing that does not
/// exist.
fn lobby_batch(lease: LeaseId, v1: u64, refused: bool) -> Result<TxBatch, Error> {
    let mut tx = TxBatch::new(T);
    tx.update_listing("lobby-1", v1, b"players=4")?;
    tx.append("lobby-1.log", b"joined")?;
    tx.enqueue("work", b"greet", JobOptions::default())?;
    tx.outbox_put("lobby.changed", b"lobby-1")?;
    tx.notify_with("lobby-changed", b"lobby-1")?;
    tx.publish(lease, "lobby-2", b"players=1")?;
    if refused {
        tx.update_listing("lobby-3", 1, b"players=0")?;
    }
    Ok(tx)
}

/// A fresh engine with a lease and the listing "lobby-1" on it, and
/// that listing's version.
async fn lobby<H: Harness>(h: &H) -> Result<(H::Engine, LeaseId, u64), Fault>
where
    H::Engine: Engine,
{
    let e = h.engine(config(h.unit())).await?;
    let lease = e.grant(T, "host-a", h.unit() * 1000, None).await?.id;
    let v1 = e
        .publish(T, lease, "lobby-1", b"players=3", None)
        .await?
        .version;
    Ok((e, lease, v1))
}

/// A refused commit leaves nothing of the batch (listings, the stream,
/// the queue, the outbox) and wakes nobody; the same batch without the
/// refused change goes in whole, reports what it did, and wakes once.
pub(super) async fn all_or_nothing<H: Harness>(h: &H) -> Outcome
where
    H::Engine: Engine,
{
    let (e, lease, v1) = lobby(h).await?;
    let log = StreamConfig::new(8, 1024, WhenFull::Refuse);
    e.create_stream(T, "lobby-1.log", log).await?;
    e.create_queue(T, "work", QueueConfig::default()).await?;
    let changed = e.listen(T, "lobby-changed").await?;

    ensure_eq!(
        e.commit_tx(lobby_batch(lease, v1, true)?).await.map(drop),
        Err(Error::NotFound),
        "a batch whose last change is refused"
    );
    let lobby = e.get_listing(T, "lobby-1").await?;
    ensure_eq!(
        (&*lobby.attrs, lobby.version),
        (&b"players=3"[..], v1),
        "the listing after a refused commit"
    );
    ensure_eq!(
        e.get_listing(T, "lobby-2").await.map(drop),
        Err(Error::NotFound),
        "a publish of a refused commit"
    );
    ensure_eq!(
        e.stream_info(T, "lobby-1.log").await?.entries,
        0,
        "entries of a refused commit"
    );
    ensure_eq!(
        e.queue_info(T, "work").await?.ready,
        0,
        "jobs of a refused commit"
    );
    let run = e
        .outbox_run_once(T, "relay", 10, |_| Ok::<(), String>(()))
        .await?;
    ensure_eq!(run.delivered, 0, "outbox messages of a refused commit");
    ensure!(
        changed.try_recv().is_none(),
        "a refused commit woke a listener"
    );

    let done = e.commit_tx(lobby_batch(lease, v1, false)?).await?;
    let lobby = e.get_listing(T, "lobby-1").await?;
    ensure_eq!(&*lobby.attrs, &b"players=4"[..], "the updated listing");
    ensure!(lobby.version > v1, "the update moved the version");
    ensure_eq!(
        done.listing_version("lobby-1"),
        Some(lobby.version),
        "the update's version in the outcome"
    );
    let second = e.get_listing(T, "lobby-2").await?;
    ensure_eq!(
        (second.lease, done.listing_version("lobby-2")),
        (lease, Some(second.version)),
        "the published listing"
    );
    let read = e.read_stream(T, "lobby-1.log", 0, 10).await?;
    let entries: Vec<(u64, &[u8])> = read
        .entries
        .iter()
        .map(|en| (en.offset, &*en.payload))
        .collect();
    let offsets = done.offsets("lobby-1.log");
    ensure_eq!(
        entries.iter().map(|(o, _)| *o).collect::<Vec<_>>(),
        offsets,
        "the outcome's offsets"
    );
    ensure_eq!(
        entries.iter().map(|(_, p)| *p).collect::<Vec<_>>(),
        vec![&b"joined"[..]],
        "the appended entry at the outcome's offset"
    );
    let jobs = done.jobs();
    ensure_eq!(jobs.len(), 2, "a job and an outbox message: {done:?}");
    let claimed = e.claim(T, "work", "w", None, 10).await?;
    ensure_eq!(
        claimed
            .iter()
            .map(|j| (j.id, j.payload.to_vec()))
            .collect::<Vec<_>>(),
        vec![(jobs[0], b"greet".to_vec())],
        "the enqueued job"
    );
    let mut seen = Vec::new();
    e.outbox_run_once(T, "relay", 10, |m| {
        seen.push((m.id, m.topic.to_string(), m.payload.to_vec()));
        Ok::<(), String>(())
    })
    .await?;
    ensure_eq!(
        seen,
        vec![(jobs[1], "lobby.changed".to_string(), b"lobby-1".to_vec())],
        "the outbox message"
    );
    let wake = changed.try_recv();
    ensure_eq!(
        wake.map(|w| w.payload.to_vec()),
        Some(b"lobby-1".to_vec()),
        "the commit's wake"
    );
    ensure!(changed.try_recv().is_none(), "one notify woke twice");
    Ok(())
}

/// Each change is refused at the commit as its plain operation is (a full
/// stream, a moved version, a bad name), with nothing applied; staging
/// refuses a second write of one listing, a job with a key, and a change
/// past `TX_OPS_MAX`.
pub(super) async fn refusals_are_the_operations<H: Harness>(h: &H) -> Outcome
where
    H::Engine: Engine,
{
    let (e, _, v1) = lobby(h).await?;
    e.create_stream(T, "log", StreamConfig::new(1, 1024, WhenFull::Refuse))
        .await?;

    let mut tx = TxBatch::new(T);
    tx.append("log", b"one")?;
    tx.append("log", b"two")?;
    let full = e.commit_tx(tx).await.map(drop);
    ensure!(
        matches!(
            full,
            Err(Error::CapacityExceeded {
                scope: Scope::StreamEntries,
                ..
            })
        ),
        "a second entry into a stream of one: {full:?}"
    );
    ensure_eq!(
        e.stream_info(T, "log").await?.entries,
        0,
        "the first entry of a refused commit"
    );

    let mut tx = TxBatch::new(T);
    tx.append("log", b"one")?;
    tx.update_listing("lobby-1", v1 + 1, b"players=4")?;
    ensure_eq!(
        e.commit_tx(tx).await.map(drop),
        Err(Error::conflict(ConflictReason::Version, v1)),
        "an update at a version the listing is not at"
    );

    let mut tx = TxBatch::new(T);
    tx.append("log", b"one")?;
    tx.append("", b"two")?;
    ensure_eq!(
        e.commit_tx(tx).await.map(drop),
        Err(Error::InvalidName),
        "an append to an empty name"
    );
    ensure_eq!(
        e.stream_info(T, "log").await?.entries,
        0,
        "the entries of refused commits"
    );

    let mut tx = TxBatch::new(T);
    tx.update_listing("lobby-1", v1, b"players=4")?;
    ensure!(
        matches!(
            tx.unpublish("lobby-1", None),
            Err(Error::InvalidArgument { .. })
        ),
        "a second write of one listing was staged"
    );
    let keyed = JobOptions {
        idempotency_key: Some(Name::new("k")),
        ..JobOptions::default()
    };
    ensure!(
        matches!(
            tx.enqueue("work", b"x", keyed),
            Err(Error::InvalidArgument { .. })
        ),
        "a job with an idempotency key was staged"
    );
    for _ in 1..TX_OPS_MAX {
        tx.notify("lobby")?;
    }
    ensure!(
        matches!(tx.notify("lobby"), Err(Error::InvalidArgument { .. })),
        "a change past TX_OPS_MAX was staged"
    );
    ensure_eq!(tx.len(), TX_OPS_MAX, "what the full batch holds");
    let done = e.commit_tx(tx).await?;
    ensure_eq!(
        done.listing_version("lobby-1"),
        Some(e.get_listing(T, "lobby-1").await?.version),
        "a full batch commits"
    );
    Ok(())
}

/// Acks, failures and enqueues of one queue settle together: a stale
/// claim refuses the commit with nothing applied; live ones go in, and the
/// outcome says how the failure went.
pub(super) async fn claims_settle_together<H: Harness>(h: &H) -> Outcome
where
    H::Engine: Engine,
{
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let queue = QueueConfig {
        attempts_max: 3,
        backoff: Backoff {
            base: u * 100,
            max: u * 100,
        },
        jitter_seed: Some(7),
        ..QueueConfig::default()
    };
    e.create_queue(T, "work", queue).await?;
    e.enqueue(T, "work", b"a", JobOptions::default()).await?;
    e.enqueue(T, "work", b"b", JobOptions::default()).await?;
    let claimed = e.claim(T, "work", "w", Some(u * 1000), 2).await?;
    let [first, second] = &claimed[..] else {
        return Err(Fault::new(format!("claimed {} jobs, not 2", claimed.len())));
    };

    let mut tx = TxBatch::new(T);
    tx.ack("work", first.id, first.claim)?;
    tx.fail("work", second.id, second.claim, "busy")?;
    tx.enqueue("work", b"c", JobOptions::default())?;
    let done = e.commit_tx(tx).await?;
    ensure!(
        matches!(
            done.applied.get(1),
            Some(TxApplied::Failed(Failed::RetryIn(_)))
        ),
        "the failure's outcome: {:?}",
        done.applied
    );
    ensure_eq!(
        e.job(T, "work", first.id).await.map(drop),
        Err(Error::NotFound),
        "the acked job"
    );
    let info = e.queue_info(T, "work").await?;
    ensure_eq!(
        (info.ready, info.delayed, info.claimed),
        (1, 1, 0),
        "the new job is ready, the failed one waits its backoff"
    );

    let mut tx = TxBatch::new(T);
    tx.enqueue("work", b"d", JobOptions::default())?;
    tx.ack("work", second.id, second.claim)?;
    ensure_eq!(
        e.commit_tx(tx).await.map(drop),
        Err(Error::StaleClaim),
        "an ack with a claim its failure ended"
    );
    let after = e.queue_info(T, "work").await?;
    ensure_eq!(
        (after.ready, after.delayed),
        (1, 1),
        "the enqueue of a refused commit"
    );
    ensure_eq!(
        e.commit_tx(TxBatch::new(T)).await.map(|d| d.applied.len()),
        Ok(0),
        "an empty batch"
    );
    Ok(())
}
