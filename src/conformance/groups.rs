//! Consumer groups (SPEC §10, `contract/group.rs`): delivery into a
//! bounded pending list, acknowledgement, idle claims that end in dead
//! entries after `deliveries_max`, and trims passed over and reported.

use super::{config, ensure, ensure_eq, Harness, Outcome};
use crate::base::error::{Error, Scope};
use crate::base::ids::TenantId;
use crate::contract::config::StoreConfig;
use crate::contract::engine::{GroupMember, StreamEngine};
use crate::contract::group::{GroupConfig, GroupEntry, GroupStart, START_PAST_THE_END};
use crate::contract::stream::{StreamConfig, WhenFull};

const T: TenantId = TenantId(1);

fn offsets(entries: &[GroupEntry]) -> Vec<u64> {
    entries.iter().map(|e| e.offset).collect()
}

/// A stream "log" with `entries` entries appended ("e0", "e1", ...).
async fn stream_with<E: StreamEngine>(e: &E, entries: u64) -> Outcome {
    e.create_stream(T, "log", StreamConfig::new(100, 1 << 16, WhenFull::Refuse))
        .await?;
    for i in 0..entries {
        e.append(T, "log", format!("e{i}").as_bytes(), None).await?;
    }
    Ok(())
}

/// Reads deliver in offset order into a pending list of at most
/// `pending_max`; acks count what the list held; a group is created once
/// per name and settings, starts where asked, and counts with the named
/// consumers against `consumers_per_stream_max`.
pub(super) async fn deliveries_and_acks<H: Harness>(h: &H) -> Outcome
where
    H::Engine: StreamEngine,
{
    let e = h
        .engine(StoreConfig {
            consumers_per_stream_max: 3,
            ..config(h.unit())
        })
        .await?;
    stream_with(&e, 4).await?;
    let workers = GroupConfig::new(GroupStart::Oldest, 3, 5);
    e.create_group(T, "log", "workers", workers).await?;
    ensure_eq!(
        e.create_group(T, "log", "workers", workers).await,
        Ok(()),
        "the same group again"
    );
    ensure_eq!(
        e.create_group(T, "log", "workers", GroupConfig::new(GroupStart::End, 3, 5))
            .await,
        Err(Error::Exists),
        "the name with other settings"
    );
    let read = e.read_group(T, "log", "workers", "a", 10).await?;
    ensure_eq!(offsets(&read.entries), vec![0, 1, 2], "at most pending_max");
    ensure_eq!(
        (
            &*read.entries[1].payload,
            read.entries[1].deliveries,
            read.skipped
        ),
        (&b"e1"[..], 1, 0),
        "an entry's payload and first delivery"
    );
    ensure_eq!(
        e.read_group(T, "log", "workers", "b", 10).await,
        Err(Error::CapacityExceeded {
            scope: Scope::StreamGroupPending,
            limit: 3,
            used: 3,
        }),
        "a read with a full pending list"
    );
    let pending = e.pending(T, "log", "workers", 0, 10).await?;
    ensure_eq!(
        pending
            .iter()
            .map(|p| (p.offset, p.member.as_str(), p.deliveries, p.dead))
            .collect::<Vec<_>>(),
        vec![(0, "a", 1, false), (1, "a", 1, false), (2, "a", 1, false)],
        "the pending list"
    );
    ensure_eq!(
        e.pending(T, "log", "workers", 1, 1)
            .await?
            .iter()
            .map(|p| p.offset)
            .collect::<Vec<_>>(),
        vec![1],
        "the pending list from an offset"
    );
    ensure_eq!(
        e.ack_group(T, "log", "workers", &[1, 3, 99]).await,
        Ok(1),
        "an ack counts what the list held"
    );
    ensure_eq!(
        e.ack_group(T, "log", "workers", &[1]).await,
        Ok(0),
        "an ack repeated"
    );
    e.append(T, "log", b"e4", None).await?;
    let read = e.read_group(T, "log", "workers", "b", 10).await?;
    ensure_eq!(offsets(&read.entries), vec![3], "one slot free");
    let info = e.group_info(T, "log", "workers").await?;
    ensure_eq!(
        (info.next, info.pending, info.dead, info.config),
        (4, 3, 0, workers),
        "group_info"
    );
    // Another group reads the same entries on its own.
    e.create_group(T, "log", "late", GroupConfig::new(GroupStart::End, 10, 5))
        .await?;
    ensure_eq!(
        e.read_group(T, "log", "late", "a", 10)
            .await
            .map(|r| r.entries.len()),
        Ok(0),
        "a group started at the end"
    );
    e.append(T, "log", b"e5", None).await?;
    ensure_eq!(
        e.read_group(T, "log", "late", "a", 10)
            .await
            .map(|r| offsets(&r.entries)),
        Ok(vec![5]),
        "only what was appended after it"
    );
    ensure_eq!(
        e.create_group(T, "log", "far", GroupConfig::new(GroupStart::At(7), 10, 5))
            .await,
        Err(Error::InvalidArgument {
            reason: START_PAST_THE_END
        }),
        "a start past the end"
    );
    e.commit(T, "log", "named", 0).await?;
    ensure_eq!(
        e.create_group(T, "log", "fourth", GroupConfig::new(GroupStart::End, 10, 5))
            .await,
        Err(Error::CapacityExceeded {
            scope: Scope::StreamConsumers,
            limit: 3,
            used: 3,
        }),
        "named consumers and groups share consumers_per_stream_max"
    );
    ensure_eq!(
        e.stream_info(T, "log")
            .await
            .map(|i| (i.consumers, i.groups)),
        Ok((1, 2)),
        "stream_info counts the groups"
    );
    for (bad, what) in [
        (
            GroupConfig::new(GroupStart::End, 0, 5),
            "a pending_max of 0",
        ),
        (
            GroupConfig::new(GroupStart::End, 1, 0),
            "a deliveries_max of 0",
        ),
    ] {
        let made = e.create_group(T, "log", "bad", bad).await;
        ensure!(
            matches!(made, Err(Error::InvalidArgument { .. })),
            "{what}: {made:?}"
        );
    }
    ensure_eq!(
        e.read_group(T, "log", "nobody", "a", 1).await,
        Err(Error::NotFound),
        "a group that does not exist"
    );
    e.delete_group(T, "log", "late").await?;
    ensure_eq!(
        e.group_info(T, "log", "late").await,
        Err(Error::NotFound),
        "a deleted group"
    );
    e.delete_stream(T, "log").await?;
    stream_with(&e, 1).await?;
    ensure_eq!(
        e.group_info(T, "log", "workers").await,
        Err(Error::NotFound),
        "groups go with their stream"
    );
    Ok(())
}

/// Entries idle for `min_idle` go to the claiming member, the longest
/// idle first, until they were delivered `deliveries_max` times; then they
/// are marked dead and stay listed until acknowledged. Trimmed entries
/// leave the list on a claim, and a read passes over what was trimmed.
pub(super) async fn idle_claims_and_dead_entries<H: Harness>(h: &H) -> Outcome
where
    H::Engine: StreamEngine,
{
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    stream_with(&e, 3).await?;
    e.create_group(T, "log", "g", GroupConfig::new(GroupStart::Oldest, 10, 2))
        .await?;
    e.read_group(T, "log", "g", "a", 1).await?;
    h.advance(u).await;
    e.read_group(T, "log", "g", "a", 1).await?;
    ensure_eq!(
        e.claim_idle(T, "log", "g", "b", u * 100, 10).await,
        Ok(Default::default()),
        "nothing idle that long"
    );
    h.advance(u * 3).await;
    let claimed = e.claim_idle(T, "log", "g", "b", u * 2, 10).await?;
    ensure_eq!(
        claimed
            .entries
            .iter()
            .map(|e| (e.offset, e.deliveries, e.payload.to_vec()))
            .collect::<Vec<_>>(),
        vec![(0, 2, b"e0".to_vec()), (1, 2, b"e1".to_vec())],
        "the longest idle first, delivered again"
    );
    ensure_eq!(
        e.claim_idle(T, "log", "g", "c", u * 2, 10).await,
        Ok(Default::default()),
        "a claim resets the idle time"
    );
    let pending = e.pending(T, "log", "g", 0, 10).await?;
    ensure_eq!(
        pending
            .iter()
            .map(|p| (p.member.as_str(), p.deliveries))
            .collect::<Vec<_>>(),
        vec![("b", 2), ("b", 2)],
        "the claiming member holds them"
    );
    ensure!(
        pending.iter().all(|p| p.idle < u * 2),
        "idle times after the claim: {pending:?}"
    );
    h.advance(u * 3).await;
    let claimed = e.claim_idle(T, "log", "g", "c", u * 2, 1).await?;
    ensure_eq!(
        (claimed.entries.len(), claimed.dead, claimed.trimmed),
        (0, vec![0], vec![]),
        "delivered deliveries_max times: dead, at most max looked at"
    );
    let claimed = e.claim_idle(T, "log", "g", "c", u * 2, 10).await?;
    ensure_eq!(claimed.dead, vec![1], "the next one dead too");
    let pending = e.pending(T, "log", "g", 0, 10).await?;
    ensure_eq!(
        pending.iter().map(|p| p.dead).collect::<Vec<_>>(),
        vec![true, true],
        "dead entries stay listed"
    );
    ensure!(
        pending.iter().all(|p| p.idle >= u * 2),
        "marking dead is not a delivery: {pending:?}"
    );
    let info = e.group_info(T, "log", "g").await?;
    ensure_eq!((info.pending, info.dead), (0, 2), "counted as dead");
    h.advance(u * 3).await;
    ensure_eq!(
        e.claim_idle(T, "log", "g", "c", u * 2, 10).await,
        Ok(Default::default()),
        "a dead entry is never delivered again"
    );
    ensure_eq!(
        e.ack_group(T, "log", "g", &[0, 1]).await,
        Ok(2),
        "dead entries acknowledged"
    );
    // Offset 2 pending for "a"; 3 and 4 appended; then everything below 4
    // trimmed: the claim drops 2, the read passes over 3.
    e.read_group(T, "log", "g", "a", 1).await?;
    e.append(T, "log", b"e3", None).await?;
    e.append(T, "log", b"e4", None).await?;
    e.trim_stream(T, "log", 4).await?;
    h.advance(u * 3).await;
    let claimed = e.claim_idle(T, "log", "g", "a", u * 2, 10).await?;
    ensure_eq!(
        (claimed.entries.len(), claimed.dead, claimed.trimmed),
        (0, vec![], vec![2]),
        "a trimmed pending entry leaves the list"
    );
    let read = e.read_group(T, "log", "g", "a", 10).await?;
    ensure_eq!(
        (offsets(&read.entries), read.skipped),
        (vec![4], 1),
        "a read passes over what was trimmed"
    );
    let info = e.group_info(T, "log", "g").await?;
    ensure_eq!(
        (info.next, info.pending, info.dead),
        (5, 1, 0),
        "at the end"
    );
    Ok(())
}

/// A member that joined a group reads what is there and what is appended
/// later, and acknowledges and claims as that member; joining a group that
/// does not exist is `NotFound`.
pub(super) async fn members_join_and_read<H: Harness>(h: &H) -> Outcome
where
    H::Engine: StreamEngine,
{
    let u = h.unit();
    let e = h.engine(config(u)).await?;
    stream_with(&e, 1).await?;
    ensure_eq!(
        e.join_group(T, "log", "g", "a").await.map(drop),
        Err(Error::NotFound),
        "a member of a group that does not exist"
    );
    e.create_group(T, "log", "g", GroupConfig::new(GroupStart::Oldest, 10, 3))
        .await?;
    let mut a = e.join_group(T, "log", "g", "a").await?;
    ensure_eq!(
        offsets(&a.next(10).await?.entries),
        vec![0],
        "what the stream held"
    );
    e.append(T, "log", b"e1", None).await?;
    let read = a.next(10).await?;
    ensure_eq!(
        (offsets(&read.entries), &*read.entries[0].payload),
        (vec![1], &b"e1"[..]),
        "what was appended after the join"
    );
    let b = e.join_group(T, "log", "g", "b").await?;
    h.advance(u * 3).await;
    let claimed = b.claim_idle(u * 2, 1).await?;
    ensure_eq!(
        claimed
            .entries
            .iter()
            .map(|e| (e.offset, e.deliveries))
            .collect::<Vec<_>>(),
        vec![(0, 2)],
        "a member's idle claim"
    );
    ensure_eq!(a.ack(&[0, 1]).await, Ok(2), "a member's ack");
    ensure_eq!(
        e.group_info(T, "log", "g").await.map(|i| i.pending),
        Ok(0),
        "nothing left pending"
    );
    Ok(())
}
