//! Streams on the Redis engine, across instances (a standalone server and
//! a Redis Cluster): a follower on one handle wakes for appends on another
//! and finds a deleted stream gone; a stream's removal is announced (also
//! in a lease's cascade); the store-wide stream budget counts every
//! handle's streams, refuses exactly at its limits and gets its room back
//! from deletions and cascades, also after a tenant's revocation (which
//! keeps the tenant's own streams, as in memory). (The contract's own
//! stream checks are in `redis_conformance_streams.rs`.)

mod redis;

use redis::{config, instances, instances_swept_by_hand, on_every_target};
use relaystore::events::{Cause, Collection, Event, Received, RecordId, Root};
use relaystore::stream::{StreamConfig, WhenFull};
use relaystore::{Error, Scope, StoreConfig, TenantId};
use std::sync::Arc;
use std::time::Duration;

const T: TenantId = TenantId(1);
const OTHER: TenantId = TenantId(2);
/// Long enough for a wake or an event to reach another handle here.
const SETTLE: Duration = Duration::from_secs(3);

fn log() -> StreamConfig {
    StreamConfig::new(100, 1 << 16, WhenFull::Refuse)
}

#[test]
fn a_follower_on_one_instance_reads_what_another_appends() {
    on_every_target("streams-follow", |target, name| async move {
        let engines = instances(&target, &name, 2, config()).await;
        let (a, b) = (&engines[0], &engines[1]);
        a.create_stream(T, "room", log()).await.unwrap();
        let mut follower = b.follow(T, "room", "worker").await.unwrap();
        assert_eq!(follower.position(), 0, "{name}");
        let waiting = tokio::spawn(async move {
            let read = follower.next(10).await;
            (read, follower)
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(a.append(T, "room", b"hello", None).await, Ok(0), "{name}");
        let (read, mut follower) = tokio::time::timeout(SETTLE, waiting)
            .await
            .unwrap_or_else(|_| panic!("{name}: the follower was not woken"))
            .unwrap();
        let read = read.unwrap();
        assert_eq!(read.next, 1, "{name}");
        assert_eq!(&*read.entries[0].payload, b"hello", "{name}");
        follower.commit().await.unwrap();
        assert_eq!(
            a.committed(T, "room", "worker").await,
            Ok(Some(1)),
            "{name}"
        );
        // Another tenant's stream of the same name is another stream.
        assert_eq!(
            b.append(OTHER, "room", b"x", None).await,
            Err(Error::NotFound),
            "{name}"
        );
        // Deleted on one instance: the follower on the other wakes and
        // finds it gone.
        let waiting = tokio::spawn(async move { follower.next(10).await });
        tokio::time::sleep(Duration::from_millis(100)).await;
        a.delete_stream(T, "room").await.unwrap();
        let after = tokio::time::timeout(SETTLE, waiting)
            .await
            .unwrap_or_else(|_| panic!("{name}: the follower did not see the deletion"))
            .unwrap();
        assert_eq!(after.map(drop), Err(Error::NotFound), "{name}");
    });
}

#[test]
fn removals_are_announced_and_cascade_with_the_lease() {
    on_every_target("streams-events", |target, name| async move {
        let engines = instances(&target, &name, 2, config()).await;
        let (a, b) = (&engines[0], &engines[1]);
        let events = b.subscribe_to(&[Collection::Streams]).await.unwrap();
        a.create_stream(T, "plain", log()).await.unwrap();
        a.delete_stream(T, "plain").await.unwrap();
        let lease = a
            .grant(T, "host", Duration::from_secs(30), None)
            .await
            .unwrap();
        a.create_stream(T, "attached", log().attached_to(lease.id))
            .await
            .unwrap();
        a.append(T, "attached", b"x", None).await.unwrap();
        a.revoke(T, lease.id).await.unwrap();
        let mut seen = Vec::new();
        while seen.len() < 2 {
            match tokio::time::timeout(SETTLE, events.recv()).await {
                Ok(Ok(Received::Event(event))) => seen.push(event),
                other => panic!("{name}: {other:?} after {seen:?}"),
            }
        }
        let stream = |id: &str, cause, root| Event {
            collection: Collection::Streams,
            tenant: T,
            id: RecordId::Stream(Arc::from(id)),
            cause,
            holder: None,
            root,
            seq: 0,
        };
        // The numbers are the tenant's (checked in the conformance suite).
        for event in &mut seen {
            event.seq = 0;
        }
        let root = Root {
            collection: Collection::Leases,
            id: RecordId::Lease(lease.id),
            cause: Cause::Revoked,
        };
        assert_eq!(
            seen,
            vec![
                stream("plain", Cause::Released, None),
                stream("attached", Cause::Cascaded, Some(root))
            ],
            "{name}"
        );
        // Both gave their room back.
        let used = a.ceiling_usage(Collection::Streams).await.unwrap();
        assert_eq!(used.map(|u| u.used), Some(0), "{name}");
    });
}

/// A budget of 2 streams, 3000 bytes and 300 entries over every tenant.
fn budget() -> StoreConfig {
    config()
        .streams_max(2)
        .stream_bytes_total_max(3000)
        .stream_entries_total_max(300)
}

fn sized(bytes: usize, entries: usize) -> StreamConfig {
    StreamConfig::new(entries, bytes, WhenFull::Refuse)
}

#[test]
fn the_stream_budget_counts_every_instance_and_refuses_exactly() {
    on_every_target("streams-budget", |target, name| async move {
        let engines = instances_swept_by_hand(&target, &name, 2, budget()).await;
        let (a, b) = (&engines[0], &engines[1]);
        a.create_stream(T, "one", sized(2000, 100)).await.unwrap();
        // Over the bytes left (1000), whoever asks.
        assert_eq!(
            b.create_stream(OTHER, "two", sized(1001, 100)).await,
            Err(Error::CapacityExceeded {
                scope: Scope::StreamBytesTotal,
                limit: 3000,
                used: 2000,
            }),
            "{name}"
        );
        assert_eq!(
            b.create_stream(OTHER, "two", sized(1000, 201)).await,
            Err(Error::CapacityExceeded {
                scope: Scope::StreamEntriesTotal,
                limit: 300,
                used: 100,
            }),
            "{name}"
        );
        b.create_stream(OTHER, "two", sized(1000, 200))
            .await
            .unwrap();
        // A retried creation takes nothing.
        b.create_stream(OTHER, "two", sized(1000, 200))
            .await
            .unwrap();
        assert_eq!(
            a.create_stream(T, "three", sized(1, 1)).await,
            Err(Error::CapacityExceeded {
                scope: Scope::Collection(Collection::Streams),
                limit: 2,
                used: 2,
            }),
            "{name}"
        );
        // A refused creation left nothing behind.
        assert_eq!(
            a.stream_info(T, "three").await.map(drop),
            Err(Error::NotFound),
            "{name}"
        );
        let used = b.ceiling_usage(Collection::Streams).await.unwrap();
        assert_eq!(used.map(|u| (u.used, u.limit)), Some((2, 2)), "{name}");
        // A deletion gives the room back to any tenant.
        a.delete_stream(T, "one").await.unwrap();
        b.create_stream(OTHER, "three", sized(2000, 100))
            .await
            .unwrap();
        // A tenant's revocation keeps its own streams (as in memory) but
        // not those attached to its leases: once the revoked epoch is
        // buried, their room is back.
        let lease = b
            .grant(OTHER, "host", Duration::from_secs(30), None)
            .await
            .unwrap();
        b.delete_stream(OTHER, "two").await.unwrap();
        b.create_stream(OTHER, "attached", sized(1000, 200).attached_to(lease.id))
            .await
            .unwrap();
        b.revoke_tenant(OTHER).await.unwrap();
        assert_eq!(
            a.stream_info(OTHER, "three").await.map(|i| i.next),
            Ok(0),
            "{name}: a revoked tenant's own stream stays"
        );
        assert_eq!(
            a.stream_info(OTHER, "attached").await.map(drop),
            Err(Error::NotFound),
            "{name}: a stream of a revoked lease is gone at once"
        );
        b.sweep().await.unwrap();
        let used = a.ceiling_usage(Collection::Streams).await.unwrap();
        assert_eq!(used.map(|u| u.used), Some(1), "{name}");
        a.delete_stream(OTHER, "three").await.unwrap();
        a.create_stream(T, "four", sized(3000, 300)).await.unwrap();
    });
}

#[test]
fn appends_keep_each_streams_retention() {
    on_every_target("streams-retention", |target, name| async move {
        let engines = instances(&target, &name, 1, config()).await;
        let e = &engines[0];
        e.create_stream(T, "bytes", StreamConfig::new(10, 4, WhenFull::TrimOldest))
            .await
            .unwrap();
        for payload in [&b"ab"[..], b"cd", b"efg"] {
            e.append(T, "bytes", payload, None).await.unwrap();
        }
        // Three bytes do not fit beside four: the oldest two entries went.
        let info = e.stream_info(T, "bytes").await.unwrap();
        assert_eq!(
            (info.first, info.next, info.entries, info.bytes),
            (2, 3, 1, 3),
            "{name}"
        );
        assert_eq!(
            e.append(T, "bytes", b"hello", None).await,
            Err(Error::InvalidArgument {
                reason: "payload is larger than the stream's bytes_max"
            }),
            "{name}"
        );
        assert_eq!(
            e.read_stream(T, "bytes", 4, 10).await.map(drop),
            Err(Error::InvalidArgument {
                reason: "offset is beyond the end of the stream"
            }),
            "{name}"
        );
        assert_eq!(
            e.commit(T, "bytes", "c", 4).await,
            Err(Error::InvalidArgument {
                reason: "offset is beyond the end of the stream"
            }),
            "{name}"
        );
        let aged =
            StreamConfig::new(10, 100, WhenFull::Refuse).with_age_max(Duration::from_millis(200));
        e.create_stream(T, "aged", aged).await.unwrap();
        e.append(T, "aged", b"old", None).await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            e.read_stream(T, "aged", 0, 10).await.map(drop),
            Err(Error::Trimmed { first: 1 }),
            "{name}: an entry past the stream's age"
        );
        // The next append drops it.
        e.append(T, "aged", b"new", None).await.unwrap();
        let info = e.stream_info(T, "aged").await.unwrap();
        assert_eq!((info.first, info.entries, info.bytes), (1, 1, 3), "{name}");
    });
}

#[test]
fn budget_room_no_record_holds_is_given_back() {
    on_every_target("streams-reclaim", |target, name| async move {
        let namespace = redis::fresh_namespace("reclaim");
        let e = redis::connect_fresh(&target, &namespace, config())
            .await
            .unwrap();
        e.create_stream(T, "kept", log()).await.unwrap();
        let mut raw = redis::Raw::connect(&target).await;
        // A reservation a handle that died between its two calls left:
        // one stream of 100 bytes and 10 entries, whose record was never
        // written.
        let room = format!("{{{namespace}}}:room");
        let lost = format!("100/10|{{{namespace}:1}}:0000000000000000:s:lost|0");
        let _: () = raw
            .query(
                ::redis::cmd("HSET")
                    .arg(format!("{room}:s"))
                    .arg("s999999")
                    .arg(lost),
            )
            .await;
        for (field, by) in [(1, 1), (2, 100), (3, 10)] {
            let _: i64 = raw
                .query(
                    ::redis::cmd("HINCRBY")
                        .arg(format!("{room}:S"))
                        .arg(field)
                        .arg(by),
                )
                .await;
        }
        // The kept stream's own reservation, made to look as old: it is
        // held, so it stays.
        let held: Vec<String> = raw
            .query(::redis::cmd("HGETALL").arg(format!("{room}:s")))
            .await;
        for pair in held.chunks(2) {
            let (weights_and_key, _) = pair[1].rsplit_once('|').unwrap();
            let old = format!("{weights_and_key}|0");
            let _: () = raw
                .query(
                    ::redis::cmd("HSET")
                        .arg(format!("{room}:s"))
                        .arg(&pair[0])
                        .arg(old),
                )
                .await;
        }
        // One taken just now (its second call may be on its way): it
        // stays, however unheld.
        let young = format!("1/1|{{{namespace}:1}}:0000000000000000:s:young|99999999999999");
        let _: () = raw
            .query(
                ::redis::cmd("HSET")
                    .arg(format!("{room}:s"))
                    .arg("s999998")
                    .arg(young),
            )
            .await;
        for field in 1..=3 {
            let _: i64 = raw
                .query(
                    ::redis::cmd("HINCRBY")
                        .arg(format!("{room}:S"))
                        .arg(field)
                        .arg(1),
                )
                .await;
        }
        let used = |e: relaystore::redis::RedisEngine| async move {
            e.ceiling_usage(Collection::Streams)
                .await
                .unwrap()
                .map(|u| u.used)
        };
        assert_eq!(used(e.clone()).await, Some(3), "{name}");
        assert_eq!(e.reclaim_budgets().await, Ok(1), "{name}");
        assert_eq!(used(e.clone()).await, Some(2), "{name}");
        assert_eq!(e.reclaim_budgets().await, Ok(0), "{name}: once");
        assert_eq!(e.append(T, "kept", b"x", None).await, Ok(0), "{name}");
        let sums: Vec<i64> = raw
            .query(
                ::redis::cmd("HMGET")
                    .arg(format!("{room}:S"))
                    .arg(1)
                    .arg(2)
                    .arg(3),
            )
            .await;
        assert_eq!(
            sums,
            vec![2, (1 << 16) + 1, 101],
            "{name}: the kept stream's weights and the young one's"
        );
    });
}

/// Two relay instances reading one consumer group concurrently share its
/// entries: each entry goes to exactly one member, and the pending list
/// holds every one of them once.
#[test]
fn members_on_two_instances_share_a_group_exactly() {
    use relaystore::stream::{GroupConfig, GroupStart};
    on_every_target("streams-groups", |target, name| async move {
        let engines = instances(&target, &name, 2, config()).await;
        engines[0].create_stream(T, "work", log()).await.unwrap();
        for i in 0..100u32 {
            engines[0]
                .append(T, "work", &i.to_be_bytes(), None)
                .await
                .unwrap();
        }
        let group = GroupConfig::new(GroupStart::Oldest, 200, 3);
        engines[1]
            .create_group(T, "work", "relays", group)
            .await
            .unwrap();
        let drain = |e: relaystore::redis::RedisEngine, member: &'static str| async move {
            let mut got = Vec::new();
            loop {
                let read = e.read_group(T, "work", "relays", member, 7).await.unwrap();
                if read.entries.is_empty() {
                    return got;
                }
                got.extend(read.entries.iter().map(|e| e.offset));
            }
        };
        let (a, b) = tokio::join!(
            tokio::spawn(drain(engines[0].clone(), "a")),
            tokio::spawn(drain(engines[1].clone(), "b"))
        );
        let (a, b) = (a.unwrap(), b.unwrap());
        assert!(
            !a.is_empty() && !b.is_empty(),
            "{name}: one member took all"
        );
        let mut all: Vec<u64> = a.iter().chain(&b).copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..100).collect::<Vec<_>>(), "{name}");
        let pending = engines[0]
            .pending(T, "work", "relays", 0, 1000)
            .await
            .unwrap();
        let owners: Vec<(u64, bool)> = pending
            .iter()
            .map(|p| (p.offset, p.member.as_str() == "a"))
            .collect();
        let expected: Vec<(u64, bool)> = (0..100).map(|o| (o, a.contains(&o))).collect();
        assert_eq!(owners, expected, "{name}: the pending list's members");
    });
}

/// A consumer group's keys go with the group, and with its stream.
#[test]
fn a_groups_keys_go_with_it_and_with_its_stream() {
    use relaystore::stream::{GroupConfig, GroupStart};
    let target = redis::targets()
        .into_iter()
        .find(|t| t.name == "standalone")
        .expect("targets() has the standalone server");
    redis::block_on(async move {
        let namespace = redis::fresh_namespace("group-keys");
        let e = redis::connect_fresh(&target, &namespace, config())
            .await
            .unwrap();
        let raw = redis::Raw::connect(&target).await;
        let pattern = format!("{{{namespace}:1}}:*");
        let keys = || {
            let (mut raw, pattern) = (raw.clone(), pattern.clone());
            async move {
                let mut found: Vec<String> = raw.query(::redis::cmd("KEYS").arg(pattern)).await;
                found.sort();
                found
            }
        };
        e.create_stream(T, "s", log()).await.unwrap();
        e.append(T, "s", b"x", None).await.unwrap();
        let plain = keys().await;
        let group = GroupConfig::new(GroupStart::Oldest, 10, 1);
        e.create_group(T, "s", "g", group).await.unwrap();
        e.read_group(T, "s", "g", "m", 10).await.unwrap();
        e.claim_idle(T, "s", "g", "m", Duration::ZERO, 10)
            .await
            .unwrap();
        assert!(keys().await.len() > plain.len(), "the group made no keys");
        e.delete_group(T, "s", "g").await.unwrap();
        assert_eq!(keys().await, plain, "a deleted group's keys are left");
        e.create_group(T, "s", "g", group).await.unwrap();
        e.read_group(T, "s", "g", "m", 10).await.unwrap();
        e.delete_stream(T, "s").await.unwrap();
        let left: Vec<String> = keys()
            .await
            .into_iter()
            .filter(|k| k.contains(":s") || k.contains(":g"))
            .collect();
        assert_eq!(
            left,
            Vec::<String>::new(),
            "a deleted stream's keys are left"
        );
    });
}

/// A member waiting on one instance wakes for an append made on another.
#[test]
fn a_member_on_one_instance_wakes_for_an_append_on_another() {
    use relaystore::stream::{GroupConfig, GroupStart};
    on_every_target("streams-member", |target, name| async move {
        let engines = instances(&target, &name, 2, config()).await;
        let (a, b) = (&engines[0], &engines[1]);
        a.create_stream(T, "room", log()).await.unwrap();
        a.create_group(T, "room", "g", GroupConfig::new(GroupStart::End, 16, 3))
            .await
            .unwrap();
        let member = b.join_group(T, "room", "g", "m").await.unwrap();
        let waiting = tokio::spawn(async move { member.next(10).await });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(a.append(T, "room", b"hello", None).await, Ok(0), "{name}");
        let read = tokio::time::timeout(SETTLE, waiting)
            .await
            .unwrap_or_else(|_| panic!("{name}: the member was not woken"))
            .unwrap()
            .unwrap();
        assert_eq!(read.entries.len(), 1, "{name}");
        assert_eq!(&*read.entries[0].payload, b"hello", "{name}");
    });
}
