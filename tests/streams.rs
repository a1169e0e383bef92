//! Streams: offsets, retention, trimming, consumers and followers.
//! Every rule and typed refusal, on a `ManualClock`.

mod common;

use common::ops::*;
use relaystore::stream::{StreamConfig, WhenFull};
use relaystore::{ConflictReason, Error, Scope};
use std::time::Duration;

fn offsets(read: &relaystore::stream::StreamRead) -> Vec<u64> {
    read.entries.iter().map(|e| e.offset).collect()
}

#[test]
fn offsets_increase_and_reads_come_in_order() {
    let (_c, s) = store();
    s.create_stream(T, "log", StreamConfig::new(100, 1 << 20, WhenFull::Refuse))
        .unwrap();
    for i in 0..5u8 {
        assert_eq!(s.append(T, "log", &[i], None).unwrap(), u64::from(i));
    }
    let read = s.read_stream(T, "log", 1, 3).unwrap();
    assert_eq!(offsets(&read), vec![1, 2, 3]);
    assert_eq!(read.entries[0].payload.as_ref(), &[1]);
    assert_eq!(read.next, 4);
    let rest = s.read_stream(T, "log", read.next, 10).unwrap();
    assert_eq!((offsets(&rest), rest.next), (vec![4], 5));
    assert_eq!(s.read_stream(T, "log", 5, 10).unwrap().entries, vec![]);
    assert!(matches!(
        s.read_stream(T, "log", 6, 10),
        Err(Error::InvalidArgument { .. })
    ));
    assert_eq!(
        s.read_stream(OTHER, "log", 0, 10),
        Err(Error::NotFound),
        "per tenant"
    );
}

#[test]
fn a_refusing_stream_refuses_when_full_and_loses_nothing() {
    let (_c, s) = store();
    s.create_stream(T, "log", StreamConfig::new(2, 1 << 20, WhenFull::Refuse))
        .unwrap();
    s.append(T, "log", b"a", None).unwrap();
    s.append(T, "log", b"b", None).unwrap();
    assert_eq!(
        (s.append(T, "log", b"c", None)).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::StreamEntries))
    );
    assert_eq!(
        offsets(&s.read_stream(T, "log", 0, 10).unwrap()),
        vec![0, 1]
    );
    assert_eq!(s.trim_stream(T, "log", 1).unwrap(), 1);
    assert_eq!(
        s.append(T, "log", b"c", None).unwrap(),
        2,
        "room after a trim"
    );
}

#[test]
fn a_trimming_stream_drops_its_oldest_and_never_reuses_an_offset() {
    let (_c, s) = store();
    s.create_stream(
        T,
        "log",
        StreamConfig::new(3, 1 << 20, WhenFull::TrimOldest),
    )
    .unwrap();
    for i in 0..5u8 {
        s.append(T, "log", &[i], None).unwrap();
    }
    assert_eq!(
        s.read_stream(T, "log", 0, 10),
        Err(Error::Trimmed { first: 2 })
    );
    assert_eq!(
        offsets(&s.read_stream(T, "log", 2, 10).unwrap()),
        vec![2, 3, 4]
    );
    // Emptied by a trim, the stream still continues its offsets.
    assert_eq!(s.trim_stream(T, "log", 5).unwrap(), 5);
    assert_eq!(
        s.read_stream(T, "log", 4, 10),
        Err(Error::Trimmed { first: 5 })
    );
    assert_eq!(s.append(T, "log", b"x", None).unwrap(), 5);
}

#[test]
fn byte_and_age_limits_trim_too() {
    let (_c, s) = store();
    s.create_stream(T, "bytes", StreamConfig::new(100, 10, WhenFull::TrimOldest))
        .unwrap();
    s.append(T, "bytes", &[0; 6], None).unwrap();
    s.append(T, "bytes", &[1; 6], None).unwrap();
    assert_eq!(
        s.read_stream(T, "bytes", 0, 10),
        Err(Error::Trimmed { first: 1 })
    );
    assert!(matches!(
        s.append(T, "bytes", &[0; 11], None),
        Err(Error::InvalidArgument { .. })
    ));
    let s = aged_stream();
    assert_eq!(
        s.read_stream(T, "aged", 0, 10),
        Err(Error::Trimmed { first: 1 })
    );
    assert_eq!(offsets(&s.read_stream(T, "aged", 1, 10).unwrap()), vec![1]);
}

/// A store with the stream "aged" (entries live ten seconds) whose first
/// entry ("old") has just come of age and whose second ("new") has not;
/// nothing swept.
fn aged_stream() -> relaystore::Store {
    let (c, s) = store();
    let aged = StreamConfig::new(100, 1 << 20, WhenFull::Refuse).with_age_max(SEC * 10);
    s.create_stream(T, "aged", aged).unwrap();
    s.append(T, "aged", b"old", None).unwrap();
    c.advance(SEC * 5);
    s.append(T, "aged", b"new", None).unwrap();
    c.advance(SEC * 5);
    s
}

#[test]
fn every_call_sees_an_entry_past_its_age_as_gone_before_the_sweep() {
    // A report, a new follower and a trim answer what a read does,
    // whichever comes first.
    let s = aged_stream();
    let info = s.stream_info(T, "aged").unwrap();
    assert_eq!(
        (info.first, info.next, info.entries, info.bytes),
        (1, 2, 1, 3)
    );
    let s = aged_stream();
    let mut follower = s.follow(T, "aged", "new").unwrap();
    assert_eq!(follower.position(), 1, "where a read starts");
    assert_eq!(offsets(&follower.try_next(10).unwrap()), vec![1]);
    let s = aged_stream();
    assert_eq!(s.trim_stream(T, "aged", 0), Ok(1));
    assert_eq!(
        s.read_stream(T, "aged", 0, 10),
        Err(Error::Trimmed { first: 1 })
    );
    s.audit().unwrap();
}

#[test]
fn the_sweep_trims_aged_entries_that_nobody_reads() {
    let (c, s) = store();
    let aged = StreamConfig::new(100, 1 << 20, WhenFull::Refuse).with_age_max(SEC * 10);
    s.create_stream(T, "aged", aged.clone()).unwrap();
    s.append(T, "aged", b"first", None).unwrap();
    c.advance(SEC * 4);
    s.append(T, "aged", b"second", None).unwrap();
    c.advance(SEC * 4);
    s.append(T, "aged", b"third", None).unwrap();
    s.sweep();
    assert_eq!(
        s.stream_info(T, "aged").unwrap().entries,
        3,
        "nothing aged yet"
    );
    // The first entry comes of age at 10 s; the sweep alone trims it.
    c.advance(SEC * 2);
    s.sweep();
    let info = s.stream_info(T, "aged").unwrap();
    assert_eq!((info.first, info.entries, info.bytes), (1, 2, 11));
    // The next timer follows the new oldest entry (due at 14 s, then 18 s).
    c.advance(SEC * 4);
    s.sweep();
    assert_eq!(s.stream_info(T, "aged").unwrap().entries, 1);
    c.advance(SEC * 4);
    s.sweep();
    let info = s.stream_info(T, "aged").unwrap();
    assert_eq!(
        (info.first, info.next, info.entries, info.bytes),
        (3, 3, 0, 0)
    );
    s.audit().unwrap();
    // An emptied stream ages again from its next entry, at the next offset.
    s.append(T, "aged", b"later", None).unwrap();
    c.advance(SEC * 10);
    s.sweep();
    assert_eq!(s.stream_info(T, "aged").unwrap().first, 4);
    // A timer set for a deleted stream never touches a new one of that name.
    s.append(T, "aged", b"doomed", None).unwrap();
    s.delete_stream(T, "aged").unwrap();
    s.create_stream(T, "aged", aged).unwrap();
    c.advance(SEC * 5);
    s.append(T, "aged", b"young", None).unwrap();
    c.advance(SEC * 5);
    s.sweep();
    assert_eq!(s.stream_info(T, "aged").unwrap().entries, 1);
    s.audit().unwrap();
    // A stream without an age limit keeps its entries.
    s.create_stream(T, "kept", StreamConfig::new(10, 100, WhenFull::Refuse))
        .unwrap();
    s.append(T, "kept", b"x", None).unwrap();
    c.advance(SEC * 3600);
    s.sweep();
    assert_eq!(s.stream_info(T, "kept").unwrap().entries, 1);
    assert_eq!(s.stream_info(T, "gone"), Err(Error::NotFound));
}

#[test]
fn creation_is_checked_and_bounded() {
    let (_c, s) = store_with(config().streams_per_tenant_max(2).stream_bytes_max(1 << 20));
    let cfg = StreamConfig::new(10, 1000, WhenFull::Refuse);
    s.create_stream(T, "a", cfg.clone()).unwrap();
    s.create_stream(T, "a", cfg.clone()).unwrap();
    assert_eq!(s.streams(), 1, "creating it again is a no-op");
    assert_eq!(
        s.create_stream(T, "a", StreamConfig::new(10, 1000, WhenFull::TrimOldest)),
        Err(Error::Exists)
    );
    s.create_stream(T, "b", cfg.clone()).unwrap();
    assert_eq!(
        (s.create_stream(T, "c", cfg.clone())).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::Tenant(relaystore::events::Collection::Streams)))
    );
    s.create_stream(OTHER, "c", cfg.clone()).unwrap();
    s.delete_stream(T, "b").unwrap();
    s.create_stream(T, "c", cfg.clone()).unwrap();
    assert_eq!(s.create_stream(T, "", cfg.clone()), Err(Error::InvalidName));
    assert_eq!(
        s.create_stream(T, "__x", cfg.clone()),
        Err(Error::ReservedName)
    );
    for bad in [
        StreamConfig::new(0, 10, WhenFull::Refuse),
        StreamConfig::new(10, 0, WhenFull::Refuse),
        StreamConfig::new(10, (1 << 20) + 1, WhenFull::Refuse),
        StreamConfig::new(10, 10, WhenFull::Refuse).with_age_max(Duration::ZERO),
    ] {
        assert!(matches!(
            s.create_stream(OTHER, "d", bad),
            Err(Error::InvalidArgument { .. })
        ));
    }
    assert_eq!(s.append(T, "missing", b"x", None), Err(Error::NotFound));
}

#[test]
fn commits_never_go_backwards_and_consumers_are_bounded() {
    let (_c, s) = store_with(config().consumers_per_stream_max(1));
    s.create_stream(T, "log", StreamConfig::new(10, 1000, WhenFull::Refuse))
        .unwrap();
    for _ in 0..4 {
        s.append(T, "log", b"x", None).unwrap();
    }
    assert_eq!(s.committed(T, "log", "worker").unwrap(), None);
    s.commit(T, "log", "worker", 3).unwrap();
    assert_eq!(
        s.commit(T, "log", "worker", 2),
        Err(Error::Conflict {
            reason: ConflictReason::CommitBehind,
            current_version: 3
        })
    );
    s.commit(T, "log", "worker", 3).unwrap();
    assert_eq!(s.committed(T, "log", "worker").unwrap(), Some(3));
    assert!(matches!(
        s.commit(T, "log", "worker", 5),
        Err(Error::InvalidArgument { .. })
    ));
    assert_eq!(
        (s.commit(T, "log", "other", 0)).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::StreamConsumers))
    );
}

#[test]
fn a_follower_misses_nothing_and_repeats_nothing_across_restarts() {
    let (_c, s) = store();
    s.create_stream(T, "log", StreamConfig::new(100, 1 << 20, WhenFull::Refuse))
        .unwrap();
    s.append(T, "log", b"0", None).unwrap();
    let mut seen = Vec::new();
    let mut f = s.follow(T, "log", "worker").unwrap();
    s.append(T, "log", b"1", None).unwrap();
    seen.extend(offsets(&f.blocking_next(10).unwrap()));
    f.commit().unwrap();
    drop(f);
    s.append(T, "log", b"2", None).unwrap();
    let mut f = s.follow(T, "log", "worker").unwrap();
    assert_eq!(f.position(), 2, "from the committed offset");
    s.append(T, "log", b"3", None).unwrap();
    seen.extend(offsets(&f.blocking_next(10).unwrap()));
    assert_eq!(f.try_next(10).unwrap().entries, vec![]);
    assert_eq!(seen, vec![0, 1, 2, 3]);
}

#[test]
fn a_follower_waits_for_appends_blocking_and_async() {
    let (_c, s) = store();
    s.create_stream(T, "log", StreamConfig::new(100, 1 << 20, WhenFull::Refuse))
        .unwrap();
    let mut f = s.follow(T, "log", "worker").unwrap();
    assert_eq!(
        f.blocking_next_timeout(10, Duration::from_millis(20))
            .unwrap()
            .entries,
        vec![]
    );
    let appender = {
        let s = s.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            s.append(T, "log", b"a", None).unwrap();
        })
    };
    assert_eq!(offsets(&f.blocking_next(10).unwrap()), vec![0]);
    appender.join().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let appender = {
        let s = s.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            s.append(T, "log", b"b", None).unwrap();
        })
    };
    let read = runtime.block_on(f.next(10)).unwrap();
    assert_eq!(offsets(&read), vec![1]);
    appender.join().unwrap();
    s.begin_drain(Duration::ZERO).unwrap();
    assert_eq!(f.blocking_next(10).map(drop), Err(Error::STOPPED));
    assert_eq!(s.append(T, "log", b"c", None), Err(Error::STOPPED));
}

#[test]
fn streams_are_bounded_store_wide_and_in_entries() {
    let (_c, s) = store_with(config().streams_max(2).stream_entries_max(100));
    let cfg = StreamConfig::new(100, 1000, WhenFull::Refuse);
    s.create_stream(T, "a", cfg.clone()).unwrap();
    s.create_stream(OTHER, "a", cfg.clone()).unwrap();
    assert_eq!(
        (s.create_stream(relaystore::TenantId(3), "a", cfg.clone()))
            .map_err(|e| e.capacity_scope()),
        Err(Some(Scope::Collection(
            relaystore::events::Collection::Streams
        ))),
        "a third tenant's stream past streams_max"
    );
    // A refused creation holds nothing: after a delete there is room.
    s.delete_stream(OTHER, "a").unwrap();
    s.create_stream(relaystore::TenantId(3), "a", cfg).unwrap();
    assert!(matches!(
        s.create_stream(
            OTHER,
            "b",
            StreamConfig::new(101, 1000, WhenFull::TrimOldest)
        ),
        Err(Error::InvalidArgument { .. })
    ));
    assert_eq!(s.streams(), 2);
}

#[test]
fn a_stream_attached_to_a_lease_dies_with_it() {
    use relaystore::events::{Cause, Collection, RecordId};
    let (c, s) = store_with(config().streams_per_lease_max(2));
    let events = s.subscribe_to(&[Collection::Streams]).unwrap();
    let next_event = || match events.try_recv() {
        Some(relaystore::events::Received::Event(e)) => Some(e),
        _ => None,
    };
    let g = s.grant(T, "host", SEC * 60, None).unwrap();
    let under = |cfg: StreamConfig| cfg.attached_to(g.id);
    let cfg = under(StreamConfig::new(10, 1024, WhenFull::Refuse));
    s.create_stream(T, "room", cfg.clone()).unwrap();
    s.create_stream(T, "room", cfg.clone()).unwrap();
    s.create_stream(T, "chat", cfg.clone()).unwrap();
    assert_eq!(
        (s.create_stream(T, "third", cfg.clone())).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::Parent(Collection::Streams))),
        "past streams_per_lease_max"
    );
    assert_eq!(s.streams(), 2);
    assert_eq!(
        s.create_stream(OTHER, "room", cfg.clone()),
        Err(Error::NotFound),
        "another tenant's lease"
    );
    s.append(T, "room", b"hello", None).unwrap();
    let mut follower = s.follow(T, "room", "worker").unwrap();
    s.audit().unwrap();

    // Revoking the lease removes its streams at once, with their events.
    s.revoke(T, g.id).unwrap();
    for op in [
        s.append(T, "room", b"late", None).map(drop),
        s.read_stream(T, "room", 0, 10).map(drop),
        s.stream_info(T, "chat").map(drop),
        s.commit(T, "chat", "worker", 0),
        s.delete_stream(T, "chat"),
    ] {
        assert_eq!(op, Err(Error::NotFound));
    }
    assert_eq!(
        follower.blocking_next(10),
        Err(Error::NotFound),
        "the follower wakes"
    );
    let mut removed: Vec<_> = std::iter::from_fn(next_event)
        .map(|e| (e.id, e.cause))
        .collect();
    removed.sort_by_key(|(id, _)| format!("{id:?}"));
    assert_eq!(
        removed,
        vec![
            (RecordId::Stream("chat".into()), Cause::Cascaded),
            (RecordId::Stream("room".into()), Cause::Cascaded),
        ]
    );
    assert_eq!(s.streams(), 0);
    assert_eq!(
        s.create_stream(T, "late", cfg.clone()),
        Err(Error::Revoked),
        "a revoked lease takes no streams"
    );
    s.audit().unwrap();

    // An expired lease hides its streams before the sweep removes them.
    let g = s.grant(T, "host", SEC * 10, None).unwrap();
    let cfg = StreamConfig::new(10, 1024, WhenFull::Refuse).attached_to(g.id);
    s.create_stream(T, "room", cfg.clone()).unwrap();
    s.delete_stream(T, "room").unwrap();
    s.create_stream(T, "room", cfg).unwrap();
    assert_eq!(
        next_event().map(|e| e.cause),
        Some(Cause::Released),
        "a deleted stream's event"
    );
    s.audit().unwrap();
    c.advance(SEC * 10);
    assert_eq!(
        s.read_stream(T, "room", 0, 1).map(drop),
        Err(Error::NotFound)
    );
    assert_eq!(s.streams(), 1, "not yet swept");
    s.sweep();
    assert_eq!(s.streams(), 0);
    assert_eq!(next_event().map(|e| e.cause), Some(Cause::Cascaded));
    s.audit().unwrap();

    // The name of a stream whose lease expired is free before the sweep.
    let g = s.grant(T, "host", SEC * 10, None).unwrap();
    let cfg = StreamConfig::new(10, 1024, WhenFull::Refuse).attached_to(g.id);
    s.create_stream(T, "room", cfg).unwrap();
    c.advance(SEC * 10);
    let free = StreamConfig::new(5, 1024, WhenFull::Refuse);
    s.create_stream(T, "room", free).unwrap();
    s.audit().unwrap();
    assert_eq!(next_event().map(|e| e.cause), Some(Cause::Cascaded));
    assert_eq!(s.append(T, "room", b"new", None), Ok(0));
    s.sweep();
    assert_eq!(
        s.append(T, "room", b"kept", None),
        Ok(1),
        "the lease's sweep spares it"
    );
    s.delete_stream(T, "room").unwrap();
    assert_eq!(next_event().map(|e| e.cause), Some(Cause::Released));
    s.audit().unwrap();

    // A stream without a lease survives the lease of the same name's stream.
    let g = s.grant(T, "host", SEC * 10, None).unwrap();
    s.create_stream(T, "free", StreamConfig::new(10, 1024, WhenFull::Refuse))
        .unwrap();
    s.revoke(T, g.id).unwrap();
    s.append(T, "free", b"still here", None).unwrap();
    s.audit().unwrap();
}

/// An attached stream's creation racing its lease's revocation: whichever
/// wins, no stream outlives the lease, and a creation that answered `Ok`
/// made a stream the revocation then removed (with its event).
#[test]
fn an_attached_creation_racing_the_revocation_leaves_nothing() {
    let rounds = common::rounds("RELAYSTORE_STREAM_RACE_ROUNDS", 300);
    let (_c, s) = store();
    let events = s
        .subscribe_to(&[relaystore::events::Collection::Streams])
        .unwrap();
    let (mut created, mut refused) = (0, 0);
    for round in 0..rounds {
        let g = s.grant(T, "host", SEC * 60, None).unwrap();
        let cfg = StreamConfig::new(4, 64, WhenFull::Refuse).attached_to(g.id);
        let start = std::sync::Arc::new(std::sync::Barrier::new(2));
        let maker = {
            let (s, start) = (s.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                s.create_stream(T, "room", cfg)
            })
        };
        start.wait();
        // Spread the revocation over the creation's steps.
        for _ in 0..round % 64 {
            std::hint::spin_loop();
        }
        s.revoke(T, g.id).unwrap();
        let made = match maker.join().unwrap() {
            Ok(()) => 1,
            Err(Error::Revoked | Error::NotFound) => 0,
            Err(e) => panic!("round {round}: {e:?}"),
        };
        assert_eq!(s.streams(), 0, "round {round}: a stream outlived its lease");
        s.audit().unwrap();
        let removed = std::iter::from_fn(|| events.try_recv()).count();
        assert_eq!(removed, made, "round {round}: one event per stream made");
        created += made;
        refused += 1 - made;
    }
    eprintln!("attached creations racing a revocation: {created} made, {refused} refused");
}

/// A stream reserves its whole capacity from the store-wide budget when it
/// is created, so the streams together can never hold more than the store
/// committed to; deleting one gives its share back.
#[test]
fn streams_reserve_their_capacity_from_a_store_wide_budget() {
    let (_c, s) = store_with(
        config()
            .stream_bytes_total_max(1000)
            .stream_entries_total_max(30),
    );
    let cfg = |entries, bytes| StreamConfig::new(entries, bytes, WhenFull::Refuse);
    s.create_stream(T, "a", cfg(10, 600)).unwrap();
    assert_eq!(
        (s.create_stream(T, "b", cfg(10, 500))).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::StreamBytesTotal)),
        "600 + 500 bytes reserved"
    );
    s.create_stream(T, "b", cfg(10, 400)).unwrap();
    assert_eq!(
        (s.create_stream(OTHER, "c", cfg(11, 1))).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::StreamBytesTotal)),
        "the byte budget is spent"
    );
    s.delete_stream(T, "b").unwrap();
    assert_eq!(
        (s.create_stream(OTHER, "c", cfg(21, 100))).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::StreamEntriesTotal)),
        "10 + 21 entries reserved"
    );
    assert_eq!(s.streams(), 1, "a refusal holds nothing");
    s.create_stream(OTHER, "c", cfg(20, 100)).unwrap();
    // A retried creation reserves nothing twice.
    s.create_stream(OTHER, "c", cfg(20, 100)).unwrap();
    s.audit().unwrap();
    assert_eq!(s.streams(), 2);
}

/// Members on four threads reading one consumer group while entries are
/// appended and acknowledged share it exactly: each entry goes to one
/// member once, and what they acknowledged leaves the pending list.
#[test]
fn members_on_four_threads_share_a_group_exactly() {
    use relaystore::stream::{GroupConfig, GroupStart};
    let (_c, s) = store();
    s.create_stream(T, "log", StreamConfig::new(4096, 1 << 20, WhenFull::Refuse))
        .unwrap();
    s.create_group(T, "log", "g", GroupConfig::new(GroupStart::Oldest, 64, 3))
        .unwrap();
    let total = 2000u64;
    let members: Vec<_> = (0..4)
        .map(|m| {
            let s = s.clone();
            std::thread::spawn(move || {
                let member = format!("m{m}");
                let mut got = Vec::new();
                while (got.len() as u64) < total {
                    match s.read_group(T, "log", "g", &member, 5) {
                        Ok(read) => {
                            let offsets: Vec<u64> = read.entries.iter().map(|e| e.offset).collect();
                            if !offsets.is_empty() {
                                assert_eq!(s.ack_group(T, "log", "g", &offsets), Ok(offsets.len()));
                            }
                            got.extend(offsets);
                        }
                        Err(Error::CapacityExceeded { .. }) => {}
                        Err(e) => panic!("{e:?}"),
                    }
                    if s.group_info(T, "log", "g").unwrap().next == total {
                        return got;
                    }
                    std::thread::yield_now();
                }
                got
            })
        })
        .collect();
    for i in 0..total {
        s.append(T, "log", &i.to_be_bytes(), None).unwrap();
    }
    let mut all: Vec<u64> = members
        .into_iter()
        .flat_map(|m| m.join().unwrap())
        .collect();
    all.sort_unstable();
    assert_eq!(all, (0..total).collect::<Vec<_>>());
    let info = s.group_info(T, "log", "g").unwrap();
    assert_eq!((info.next, info.pending, info.dead), (total, 0, 0));
    s.audit().unwrap();
}

/// A member blocked on an empty group wakes for an append made after it
/// started waiting, and a timed wait with nothing appended returns empty.
#[test]
fn a_blocked_member_wakes_for_an_append() {
    use relaystore::stream::{GroupConfig, GroupStart};
    let (_c, s) = store();
    s.create_stream(T, "log", StreamConfig::new(16, 1 << 10, WhenFull::Refuse))
        .unwrap();
    s.create_group(T, "log", "g", GroupConfig::new(GroupStart::End, 16, 3))
        .unwrap();
    let member = s.join_group(T, "log", "g", "a").unwrap();
    let quiet = member
        .blocking_next(10, Some(Duration::from_millis(20)))
        .unwrap();
    assert!(quiet.entries.is_empty());
    let waiting = std::thread::spawn(move || member.blocking_next(10, None));
    std::thread::sleep(Duration::from_millis(50));
    s.append(T, "log", b"late", None).unwrap();
    let read = waiting.join().unwrap().unwrap();
    assert_eq!(offsets_of(&read.entries), vec![0]);
    assert_eq!(&*read.entries[0].payload, b"late");
}

fn offsets_of(entries: &[relaystore::stream::GroupEntry]) -> Vec<u64> {
    entries.iter().map(|e| e.offset).collect()
}
