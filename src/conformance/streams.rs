//! Streams (SPEC §10): offsets never reused, explicit retention, commits
//! never backwards, followers that miss nothing.

use super::{config, ensure_eq, Harness, Outcome};
use crate::engine::{Engine, Follow};
use crate::error::{Error, Scope};
use crate::ids::TenantId;
use crate::stream::{StreamConfig, StreamRead, WhenFull};

const T: TenantId = TenantId(1);
const OTHER: TenantId = TenantId(2);

fn offsets(read: &StreamRead) -> Vec<u64> {
    read.entries.iter().map(|e| e.offset).collect()
}

pub(super) async fn offsets_and_retention<H: Harness>(h: &H) -> Outcome {
    let e = h.engine(config(h.unit())).await?;
    e.create_stream(T, "refusing", StreamConfig::new(2, 1024, WhenFull::Refuse))
        .await?;
    ensure_eq!(e.append(T, "refusing", b"a").await, Ok(0), "first offset");
    ensure_eq!(e.append(T, "refusing", b"b").await, Ok(1), "second offset");
    ensure_eq!(
        e.append(T, "refusing", b"c").await,
        Err(Error::CapacityExceeded {
            scope: Scope::StreamEntries
        }),
        "a full refusing stream"
    );
    ensure_eq!(
        offsets(&e.read_stream(T, "refusing", 0, 10).await?),
        vec![0, 1],
        "nothing lost"
    );
    e.create_stream(
        T,
        "trimming",
        StreamConfig::new(2, 1024, WhenFull::TrimOldest),
    )
    .await?;
    for _ in 0..3 {
        e.append(T, "trimming", b"x").await?;
    }
    ensure_eq!(
        e.read_stream(T, "trimming", 0, 10).await,
        Err(Error::Trimmed { first: 1 }),
        "a trimmed offset"
    );
    ensure_eq!(e.trim_stream(T, "trimming", 3).await, Ok(3), "emptied");
    ensure_eq!(
        e.append(T, "trimming", b"y").await,
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

pub(super) async fn consumers_and_followers<H: Harness>(h: &H) -> Outcome {
    let e = h.engine(config(h.unit())).await?;
    e.create_stream(T, "log", StreamConfig::new(100, 1 << 16, WhenFull::Refuse))
        .await?;
    e.append(T, "log", b"0").await?;
    let mut follower = e.follow(T, "log", "worker").await?;
    e.append(T, "log", b"1").await?;
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
        Err(Error::Conflict { current_version: 2 }),
        "a commit backwards"
    );
    drop(follower);
    e.append(T, "log", b"2").await?;
    let mut again = e.follow(T, "log", "worker").await?;
    ensure_eq!(again.position(), 2, "a new follower starts at the commit");
    ensure_eq!(offsets(&again.next(10).await?), vec![2], "nothing repeated");
    Ok(())
}
