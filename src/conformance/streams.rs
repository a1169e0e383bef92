//! Streams (SPEC §10): offsets never reused, explicit retention, commits
//! never backwards, followers that miss nothing, appends retried under
//! their idempotency key.

use super::{config, ensure_eq, Harness, Outcome};
use crate::base::error::{ConflictReason, Error, Scope};
use crate::base::ids::TenantId;
use crate::contract::engine::{Follow, RelayEngine, StreamEngine};
use crate::contract::stream::{StreamConfig, StreamRead, WhenFull};

const T: TenantId = TenantId(1);
const OTHER: TenantId = TenantId(2);

fn offsets(read: &StreamRead) -> Vec<u64> {
    read.entries.iter().map(|e| e.offset).collect()
}

pub(super) async fn offsets_and_retention<H: Harness>(h: &H) -> Outcome
where
    H::Engine: StreamEngine,
{
    let e = h.engine(config(h.unit())).await?;
    e.create_stream(T, "refusing", StreamConfig::new(2, 1024, WhenFull::Refuse))
        .await?;
    ensure_eq!(
        e.append(T, "refusing", b"a", None).await,
        Ok(0),
        "first offset"
    );
    ensure_eq!(
        e.append(T, "refusing", b"b", None).await,
        Ok(1),
        "second offset"
    );
    ensure_eq!(
        e.append(T, "refusing", b"c", None).await,
        Err(Error::CapacityExceeded {
            scope: Scope::StreamEntries,
            limit: 2,
            used: 2,
        }),
        "a full refusing stream"
    );
    ensure_eq!(
        offsets(&e.read_stream(T, "refusing", 0, 10).await?),
        vec![0, 1],
        "nothing lost"
    );
    let info = e.stream_info(T, "refusing").await?;
    ensure_eq!(
        (info.first, info.next, info.entries, info.bytes),
        (0, 2, 2, 2),
        "stream_info"
    );
    e.create_stream(
        T,
        "trimming",
        StreamConfig::new(2, 1024, WhenFull::TrimOldest),
    )
    .await?;
    for _ in 0..3 {
        e.append(T, "trimming", b"x", None).await?;
    }
    ensure_eq!(
        e.read_stream(T, "trimming", 0, 10).await,
        Err(Error::Trimmed { first: 1 }),
        "a trimmed offset"
    );
    ensure_eq!(e.trim_stream(T, "trimming", 3).await, Ok(3), "emptied");
    ensure_eq!(
        e.append(T, "trimming", b"y", None).await,
        Ok(3),
        "offsets continue after the stream was emptied"
    );
    ensure_eq!(
        e.read_stream(OTHER, "trimming", 0, 10).await,
        Err(Error::NotFound),
        "another tenant's stream"
    );
    ensure_eq!(
        e.create_stream(T, "refusing", StreamConfig::new(3, 1024, WhenFull::Refuse))
            .await,
        Err(Error::Exists),
        "the name with other settings"
    );
    Ok(())
}

pub(super) async fn consumers_and_followers<H: Harness>(h: &H) -> Outcome
where
    H::Engine: StreamEngine,
{
    let e = h.engine(config(h.unit())).await?;
    e.create_stream(T, "log", StreamConfig::new(100, 1 << 16, WhenFull::Refuse))
        .await?;
    e.append(T, "log", b"0", None).await?;
    let mut follower = e.follow(T, "log", "worker").await?;
    e.append(T, "log", b"1", None).await?;
    ensure_eq!(
        offsets(&follower.next(10).await?),
        vec![0, 1],
        "from the first offset"
    );
    follower.commit().await?;
    ensure_eq!(
        e.committed(T, "log", "worker").await,
        Ok(Some(2)),
        "committed"
    );
    ensure_eq!(
        e.commit(T, "log", "worker", 1).await,
        Err(Error::conflict(ConflictReason::CommitBehind, 2)),
        "a commit backwards"
    );
    drop(follower);
    e.append(T, "log", b"2", None).await?;
    let mut again = e.follow(T, "log", "worker").await?;
    ensure_eq!(again.position(), 2, "a new follower starts at the commit");
    ensure_eq!(offsets(&again.next(10).await?), vec![2], "nothing repeated");
    // A follower whose position was trimmed away reads `Trimmed` until it
    // seeks; it can also seek back over what is still held.
    e.append(T, "log", b"3", None).await?;
    let mut behind = e.follow(T, "log", "late").await?;
    e.trim_stream(T, "log", 2).await?;
    ensure_eq!(
        behind.next(10).await.map(|r| offsets(&r)),
        Err(Error::Trimmed { first: 2 }),
        "a follower behind a trim"
    );
    ensure_eq!(
        behind.seek_to_first().await,
        Ok(2),
        "seek to the first held"
    );
    ensure_eq!(
        offsets(&behind.next(10).await?),
        vec![2, 3],
        "read after the seek"
    );
    // An entry past the position, so a seek that did not move reads it
    // alone rather than waiting.
    e.append(T, "log", b"4", None).await?;
    behind.seek(3);
    ensure_eq!(
        offsets(&behind.next(10).await?),
        vec![3, 4],
        "read after a seek back"
    );
    ensure_eq!(
        e.committed(T, "log", "late").await,
        Ok(None),
        "a seek commits nothing"
    );
    Ok(())
}

/// A stream's lifetimes: entries past its age limit are never returned,
/// a stream attached to a lease is gone with it (hidden the moment the
/// lease is revoked or expires, its name free again, and with the
/// tenant's leases when the tenant is revoked), and a tenant's revocation
/// leaves its own streams.
pub(super) async fn lifetimes<H: Harness>(h: &H) -> Outcome
where
    H::Engine: StreamEngine,
{
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    let aged = StreamConfig::new(100, 1 << 16, WhenFull::Refuse).with_age_max(u * 10);
    // One stream per call that must see the first entry's age, whichever
    // comes first: the read, the report, a new follower, a trim.
    let names = ["aged", "agedinfo", "agedfollow", "agedtrim"];
    for name in names {
        e.create_stream(T, name, aged.clone()).await?;
        e.append(T, name, b"old", None).await?;
    }
    h.advance(u * 6).await;
    for name in names {
        e.append(T, name, b"new", None).await?;
    }
    h.advance(u * 6).await;
    let info = e.stream_info(T, "agedinfo").await?;
    ensure_eq!(
        (info.first, info.entries, info.bytes),
        (1, 1, 3),
        "a report counts no entry past the stream's age"
    );
    let follower = e.follow(T, "agedfollow", "new").await?;
    ensure_eq!(
        follower.position(),
        1,
        "a new follower starts at the first entry a read returns"
    );
    ensure_eq!(
        e.trim_stream(T, "agedtrim", 0).await,
        Ok(1),
        "a trim answers the first offset a read returns"
    );
    ensure_eq!(
        e.read_stream(T, "aged", 0, 10).await,
        Err(Error::Trimmed { first: 1 }),
        "an entry past the stream's age"
    );
    ensure_eq!(
        offsets(&e.read_stream(T, "aged", 1, 10).await?),
        vec![1],
        "a younger entry stays"
    );

    let g = e.grant(T, "host", u * 10, None).await?;
    let attached = StreamConfig::new(10, 1024, WhenFull::Refuse).attached_to(g.id);
    e.create_stream(T, "room", attached.clone()).await?;
    ensure_eq!(
        e.create_stream(OTHER, "room", attached.clone()).await,
        Err(Error::NotFound),
        "another tenant's lease takes no streams"
    );
    e.append(T, "room", b"hello", None).await?;
    e.revoke(T, g.id).await?;
    ensure_eq!(
        e.append(T, "room", b"late", None).await,
        Err(Error::NotFound),
        "append after the lease was revoked"
    );
    ensure_eq!(
        e.read_stream(T, "room", 0, 10).await.map(drop),
        Err(Error::NotFound),
        "read after the lease was revoked"
    );
    ensure_eq!(
        e.create_stream(T, "room", attached).await,
        Err(Error::Revoked),
        "a revoked lease takes no streams"
    );

    let g = e.grant(T, "host", u * 10, None).await?;
    let attached = StreamConfig::new(10, 1024, WhenFull::Refuse).attached_to(g.id);
    e.create_stream(T, "room", attached).await?;
    h.advance(u * 11).await;
    ensure_eq!(
        e.append(T, "room", b"late", None).await,
        Err(Error::NotFound),
        "append after the lease expired"
    );
    e.create_stream(T, "room", StreamConfig::new(10, 1024, WhenFull::Refuse))
        .await?;
    ensure_eq!(
        e.append(T, "room", b"again", None).await,
        Ok(0),
        "the name is free once its lease is gone"
    );

    // A tenant's revocation removes what hangs from its leases, not its
    // own streams.
    let g = e.grant(T, "host", u * 10, None).await?;
    let attached = StreamConfig::new(10, 1024, WhenFull::Refuse).attached_to(g.id);
    e.create_stream(T, "leased", attached).await?;
    e.revoke_tenant(T).await?;
    ensure_eq!(
        e.append(T, "leased", b"x", None).await,
        Err(Error::NotFound),
        "a revoked tenant's lease takes its stream"
    );
    ensure_eq!(
        e.append(T, "room", b"kept", None).await,
        Ok(1),
        "a revoked tenant keeps its own stream"
    );
    Ok(())
}

/// An append under an idempotency key is safe to retry: its repeat
/// answers the offset it appended at and appends nothing, on a refusing
/// stream and on a trimming one; another payload or stream under the key
/// is refused; a failed append leaves its key unused.
pub(super) async fn append_retried_with_a_key<H: Harness>(h: &H) -> Outcome
where
    H::Engine: StreamEngine,
{
    let e = h.engine(config(h.unit())).await?;
    e.create_stream(T, "log", StreamConfig::new(3, 1024, WhenFull::Refuse))
        .await?;
    e.create_stream(T, "feed", StreamConfig::new(2, 1024, WhenFull::TrimOldest))
        .await?;
    ensure_eq!(e.append(T, "log", b"a", Some("a-1")).await, Ok(0), "first");
    ensure_eq!(
        e.append(T, "log", b"a", Some("a-1")).await,
        Ok(0),
        "the append repeated under its key"
    );
    ensure_eq!(
        e.append(T, "log", b"b", Some("a-1")).await,
        Err(Error::IdempotencyMismatch),
        "another payload under the key"
    );
    ensure_eq!(
        e.append(T, "feed", b"a", Some("a-1")).await,
        Err(Error::IdempotencyMismatch),
        "another stream under the key"
    );
    ensure_eq!(
        e.append(T, "log", b"b", None).await,
        Ok(1),
        "the next offset"
    );
    // On a trimming stream the repeat trims nothing.
    for (i, key) in ["f-0", "f-1", "f-2"].into_iter().enumerate() {
        let payload = [b'x', i as u8];
        let offset = e.append(T, "feed", &payload, Some(key)).await?;
        ensure_eq!(
            e.append(T, "feed", &payload, Some(key)).await,
            Ok(offset),
            "a repeat on a trimming stream"
        );
    }
    ensure_eq!(
        offsets(&e.read_stream(T, "feed", 1, 10).await?),
        vec![1, 2],
        "each entry once, the oldest trimmed by the third"
    );
    // A failed append remembers nothing under its key.
    ensure_eq!(
        e.append(T, "absent", b"c", Some("a-2")).await,
        Err(Error::NotFound),
        "an append to a missing stream"
    );
    e.create_stream(T, "absent", StreamConfig::new(2, 1024, WhenFull::Refuse))
        .await?;
    ensure_eq!(
        e.append(T, "absent", b"c", Some("a-2")).await,
        Ok(0),
        "the key a failed append left unused"
    );
    ensure_eq!(
        offsets(&e.read_stream(T, "log", 0, 10).await?),
        vec![0, 1],
        "each entry of the refusing stream once"
    );
    Ok(())
}
