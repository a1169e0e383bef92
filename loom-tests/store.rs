//! Loom models of the relay store's races: join vs revoke, bind vs bind,
//! bind vs the republication of its listing, consume vs consume, renew vs
//! revoke, renew and get vs the reuse of the lease's slot, a read that
//! takes no lock vs that reuse and vs a tenant's revocation, a child's
//! read vs its lease's revocation, a read vs the replacement of its
//! attributes by longer ones kept out of line, a named
//! record's read that takes no lock vs the reuse of its slot by another
//! name and vs the name index's rebuilds, two heartbeats
//! of one member, a creation's tenant hold vs the forgetting of that
//! tenant, a doomed admission vs another tenant's admission at the
//! shared ceiling, an admission vs a reconfiguration of the limits it
//! checks, a grant vs the end of a drain, and a slab fill vs a stop and a
//! visit of every slot. Each runs the real code (the `Store`, or the slab
//! or the named slab alone) and has a broken twin that the model catches (a
//! `model::faults::StoreFault`), except the republication model, which
//! uses a twin to reach the state its second line of defence must handle.
#![cfg(relaystore_loom)]

#[path = "common.rs"]
mod common;

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;
use relaystore::model::faults::{store_fault, StoreFault};
use relaystore::model::{ModelNamed, ModelSlab};
use relaystore::time::ManualClock;
use relaystore::{
    ConflictReason, Error, Health, JoinTicket, LeaseId, Scope, Store, StoreConfig, TenantId,
};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

const T: TenantId = TenantId(1);
const MINUTE: Duration = Duration::from_secs(60);

fn store() -> Arc<Store> {
    let config = StoreConfig::default()
        .subscribers_max(1)
        .subscriber_buffer_max(8);
    Arc::new(Store::new(config, Arc::new(ManualClock::new())).unwrap())
}

/// A lease hosting the listing "lobby".
fn lobby(store: &Store) -> LeaseId {
    let lease = store.grant(T, "host", MINUTE, None).unwrap();
    store.publish(T, lease.id, "lobby", b"", None).unwrap();
    lease.id
}

/// A lobby and one client's join ticket for it.
fn joined(store: &Store) -> (LeaseId, JoinTicket) {
    let lease = lobby(store);
    let ticket = store
        .begin_join(T, "lobby", "client", MINUTE, None)
        .unwrap();
    (lease, ticket)
}

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([198, 51, 100, 1], port))
}

fn name(fault: StoreFault, model: &str) -> String {
    if fault == StoreFault::None {
        model.to_string()
    } else {
        format!("{model} ({fault:?})")
    }
}

/// A join racing the revocation of its listing's lease: once revoke has
/// returned nothing under the lease is visible, and once both are done no
/// attempt is left behind (every admission counter is back to zero).
/// Within two preemptions: three explore about 305,000 interleavings
/// (three minutes of CI), two catch the twin as well.
fn join_vs_revoke(fault: StoreFault) {
    common::explore_bounded(&name(fault, "join_vs_revoke"), 2, move || {
        store_fault(fault);
        let store = store();
        let lease = lobby(&store);
        let joiner = {
            let store = Arc::clone(&store);
            thread::spawn(move || store.begin_join(T, "lobby", "client", MINUTE, None))
        };
        store.revoke(T, lease).unwrap();
        assert_eq!(store.get_listing(T, "lobby"), Err(Error::NotFound));
        let joined = joiner.join().unwrap();
        if let Ok(ticket) = &joined {
            let bound = store.bind_endpoint(T, ticket.attempt, &ticket.token, addr(1));
            assert_eq!(
                bound,
                Err(Error::NotFound),
                "a join survived its lease's revocation"
            );
        }
        let stats = store.stats();
        assert_eq!(
            (stats.attempts, stats.attempts_pending, stats.listings),
            (0, 0, 0),
            "an attempt was orphaned by the revocation: {joined:?}"
        );
    });
}

/// Two binds of one attempt with different addresses: exactly one wins, the
/// other gets `Conflict`, and the admission carries the winner's address.
fn bind_vs_bind(fault: StoreFault) {
    common::explore(&name(fault, "bind_vs_bind"), move || {
        store_fault(fault);
        let store = store();
        let (_, ticket) = joined(&store);
        let other = {
            let (store, ticket) = (Arc::clone(&store), ticket.clone());
            thread::spawn(move || store.bind_endpoint(T, ticket.attempt, &ticket.token, addr(2)))
        };
        let mine = store.bind_endpoint(T, ticket.attempt, &ticket.token, addr(1));
        let theirs = other.join().unwrap();
        let winners: Vec<SocketAddr> = [&mine, &theirs]
            .iter()
            .filter_map(|r| r.as_ref().ok())
            .map(|b| b.addr)
            .collect();
        assert_eq!(
            winners.len(),
            1,
            "exactly one bind wins: {mine:?} {theirs:?}"
        );
        assert!(matches!(
            [&mine, &theirs].iter().find(|r| r.is_err()),
            Some(Err(Error::Conflict {
                reason: ConflictReason::BoundElsewhere,
                ..
            }))
        ));
        assert_eq!(
            store.consume(T, &ticket.token, None).unwrap().addr,
            winners[0]
        );
    });
}

/// Two consumes of one bound token: exactly one is admitted, the other is
/// `ReplayRejected`, and the pending counters are released exactly once.
fn consume_vs_consume(fault: StoreFault) {
    common::explore(&name(fault, "consume_vs_consume"), move || {
        store_fault(fault);
        let store = store();
        let (_, ticket) = joined(&store);
        store
            .bind_endpoint(T, ticket.attempt, &ticket.token, addr(1))
            .unwrap();
        let other = {
            let (store, token) = (Arc::clone(&store), ticket.token);
            thread::spawn(move || store.consume(T, &token, None))
        };
        let mine = store.consume(T, &ticket.token, None);
        let theirs = other.join().unwrap();
        let admitted = [&mine, &theirs].iter().filter(|r| r.is_ok()).count();
        assert_eq!(admitted, 1, "exactly one consume wins: {mine:?} {theirs:?}");
        assert!([&mine, &theirs].contains(&&Err(Error::ReplayRejected)));
        assert_eq!(store.stats().attempts_pending, 0);
    });
}

/// A bind racing the republication of its listing, for an attempt the
/// cascade cannot reach (its attach was skipped, as if the attempt were
/// still in flight when the listing went): the bind may land before the
/// listing goes, but once the listing is published again the attempt hangs
/// from a publication that no longer exists, and authorises nothing. The
/// check that decides it is the attempt's recorded origin against the
/// listing's current one (`ancestors_visible`).
fn bind_vs_republish() {
    common::explore("bind_vs_republish (JoinWithoutAttach)", move || {
        store_fault(StoreFault::JoinWithoutAttach);
        let store = store();
        let (lease, ticket) = joined(&store);
        // Another tenant's revocation: the bind then reads the listing
        // under its slot's lock, a step the model checker orders against
        // the republication's. (A read that takes no lock, on the thread
        // that runs first, is explored in one order only; the named slab's
        // own models race that read.)
        store.grant(TenantId(2), "other", MINUTE, None).unwrap();
        store.revoke_tenant(TenantId(2)).unwrap();
        let republish = {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                store.unpublish(T, "lobby", None).unwrap();
                store.publish(T, lease, "lobby", b"", None).unwrap();
            })
        };
        let bound = store.bind_endpoint(T, ticket.attempt, &ticket.token, addr(1));
        assert!(
            matches!(bound, Ok(_) | Err(Error::NotFound)),
            "a bind is either first or finds nothing: {bound:?}"
        );
        republish.join().unwrap();
        assert_eq!(
            store.consume(T, &ticket.token, None).map(|_| ()),
            Err(Error::NotFound),
            "an attempt of an earlier publication authorises nothing"
        );
    });
}

/// A renewal racing a revocation: the renewal either happened first (`Ok`)
/// or saw the revocation (`Revoked`), never a bare `NotFound`; afterwards
/// the lease is revoked.
fn renew_vs_revoke(fault: StoreFault) {
    common::explore(&name(fault, "renew_vs_revoke"), move || {
        store_fault(fault);
        let store = store();
        let lease = store.grant(T, "host", MINUTE, None).unwrap();
        let renewer = {
            let store = Arc::clone(&store);
            thread::spawn(move || store.renew(T, lease.id, MINUTE))
        };
        store.revoke(T, lease.id).unwrap();
        let renewed = renewer.join().unwrap();
        assert!(
            matches!(renewed, Ok(_) | Err(Error::Revoked)),
            "renewal saw the lease neither live nor revoked: {renewed:?}"
        );
        assert_eq!(store.renew(T, lease.id, MINUTE), Err(Error::Revoked));
        assert_eq!(store.stats().leases, 0);
    });
}

/// A renewal of a lease racing its revocation and a grant that reuses its
/// slot: the renewal happened first (`Ok`) or finds the first lease
/// revoked, and it never lands on the second lease, whose version stays
/// the one it was granted at.
fn renew_vs_reuse(fault: StoreFault) {
    common::explore(&name(fault, "renew_vs_reuse"), move || {
        store_fault(fault);
        let store = store();
        let first = store.grant(T, "first", MINUTE, None).unwrap();
        let renewer = {
            let store = Arc::clone(&store);
            thread::spawn(move || store.renew(T, first.id, MINUTE))
        };
        store.revoke(T, first.id).unwrap();
        let second = store.grant(T, "second", MINUTE, None).unwrap();
        assert_eq!(slot(second.id), slot(first.id), "the slot is reused");
        let renewed = renewer.join().unwrap();
        assert!(
            matches!(renewed, Ok(_) | Err(Error::Revoked)),
            "renewal saw the first lease neither live nor revoked: {renewed:?}"
        );
        assert_eq!(
            store.get_lease(T, second.id).unwrap().version,
            second.version,
            "a renewal of the first lease landed on the second"
        );
        assert_eq!(store.renew(T, first.id, MINUTE), Err(Error::Revoked));
    });
}

/// Two renewals of one lease from two threads. A lease lives in a slab
/// slot, whose lock a renewal holds while it reads the state word and
/// writes the next one with a plain store (ADR 0051): both succeed, with
/// distinct, rising versions, and the lease ends at the later one.
fn renew_vs_renew(fault: StoreFault) {
    common::explore(&name(fault, "renew_vs_renew"), move || {
        store_fault(fault);
        let store = store();
        let lease = store.grant(T, "holder", MINUTE, None).unwrap();
        let renewals: Vec<_> = (0..2)
            .map(|_| {
                let store = Arc::clone(&store);
                thread::spawn(move || store.renew(T, lease.id, MINUTE).unwrap().version)
            })
            .collect();
        let mut versions: Vec<u64> = renewals.into_iter().map(|r| r.join().unwrap()).collect();
        versions.sort_unstable();
        assert_eq!(
            versions,
            vec![lease.version + 1, lease.version + 2],
            "two renewals were given distinct, rising versions"
        );
        assert_eq!(
            store.get_lease(T, lease.id).unwrap().version,
            lease.version + 2
        );
    });
}

/// A read of a lease racing its revocation and a grant that reuses its
/// slot: the read sees the first lease whole or its revocation, never the
/// second lease, nor a mix of the two (the first lease's holder with the
/// second's fence). `warm`: the lease was read once before, so its epoch
/// is known valid and the racing read takes no lock (the slot's sequence
/// check, ADR 0076); otherwise the read goes to the slot's lock. Two
/// preemptions keep the models to about 11,000 interleavings warm and
/// 62,000 cold (three took 352,000 cold, the loom run's longest model);
/// every twin is caught within two. Twins: a
/// lookup that ignores the generation (it reads the second lease) and,
/// for the warm read, one that keeps what it loaded without looking at
/// the slot's word again (it mixes the leases).
fn read_vs_reuse(fault: StoreFault, warm: bool) {
    let model = if warm {
        "peek_vs_reuse"
    } else {
        "get_vs_reuse"
    };
    let body = move || {
        store_fault(fault);
        let store = store();
        let first = store.grant(T, "first", MINUTE, None).unwrap();
        if warm {
            store.get_lease(T, first.id).unwrap();
        }
        let reader = {
            let store = Arc::clone(&store);
            thread::spawn(move || store.get_lease(T, first.id))
        };
        store.revoke(T, first.id).unwrap();
        let second = store.grant(T, "second", MINUTE, None).unwrap();
        assert_eq!(slot(second.id), slot(first.id), "the slot is reused");
        match reader.join().unwrap() {
            Ok(info) => assert_eq!(
                (&*info.holder, info.fence),
                ("first", first.fence),
                "a read of the first lease saw the second, or a mix"
            ),
            Err(e) => assert_eq!(e, Error::Revoked),
        }
    };
    common::explore_bounded(&name(fault, model), 2, body);
}

/// A reader reads a lease whose holder is too long to be kept beside its
/// slot (so its read takes the slot's lock), then another lease of the
/// same tenant by a read that takes no lock, while the tenant is revoked.
/// Once the first read saw the revocation, the second cannot answer `Ok`.
/// Twin: a revocation counted only after it ended the epoch, with nothing
/// marked while it works. Two preemptions (about 200,000 interleavings,
/// a minute): each thread runs whole store operations.
fn peek_vs_revoke_tenant(fault: StoreFault) {
    common::explore_bounded(&name(fault, "peek_vs_revoke_tenant"), 2, move || {
        store_fault(fault);
        let store = store();
        let long = store
            .grant(T, "a-holder-longer-than-23-bytes", MINUTE, None)
            .unwrap();
        let short = store.grant(T, "host", MINUTE, None).unwrap();
        // Seen valid once each, so the second read takes no lock.
        store.get_lease(T, long.id).unwrap();
        store.get_lease(T, short.id).unwrap();
        let reader = {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                let first = store.get_lease(T, long.id);
                let second = store.get_lease(T, short.id);
                (first, second)
            })
        };
        store.revoke_tenant(T).unwrap();
        let (first, second) = reader.join().unwrap();
        assert!(
            !(first == Err(Error::Revoked) && second.is_ok()),
            "a lease of a revoked tenant read as live after another read saw the revocation"
        );
    });
}

/// Two heartbeats of one member from two threads, neither with new
/// attributes, so both renew the record under its slot's lock with a
/// plain store (ADR 0051, ADR 0078): both succeed with distinct versions,
/// and the record ends at the later one. Twin: a renewal that reads the
/// state under one hold of the slot's lock and writes it under another.
fn heartbeat_vs_heartbeat(fault: StoreFault) {
    common::explore(&name(fault, "heartbeat_vs_heartbeat"), move || {
        store_fault(fault);
        let store = store();
        let v0 = store.heartbeat(T, "m", MINUTE, None, None).unwrap().version;
        let beats: Vec<_> = (0..2)
            .map(|_| {
                let store = Arc::clone(&store);
                thread::spawn(move || store.heartbeat(T, "m", MINUTE, None, None).unwrap().version)
            })
            .collect();
        let mut versions: Vec<u64> = beats.into_iter().map(|b| b.join().unwrap()).collect();
        versions.sort_unstable();
        assert_eq!(
            versions,
            vec![v0 + 1, v0 + 2],
            "two heartbeats were given distinct, rising versions"
        );
        assert_eq!(store.get_presence(T, "m").unwrap().version, v0 + 2);
    });
}

/// A fill racing a stop and a visit of every slot, as a creation races the
/// end of a drain (the drain stops the store, then walks the lease slab;
/// the creation fills its slot, then looks at the store's state): the
/// visit sees the value or the filler sees the stop. Store buffering: the
/// visit reads the count of slots with a read-modify-write, which orders
/// it against the claim that made the slot.
fn fill_vs_visit(fault: StoreFault) {
    common::explore(&name(fault, "fill_vs_visit"), move || {
        store_fault(fault);
        let slab = Arc::new(ModelSlab::new());
        let stopped = Arc::new(AtomicBool::new(false));
        let filler = {
            let (slab, stopped) = (Arc::clone(&slab), Arc::clone(&stopped));
            thread::spawn(move || {
                slab.fill(7);
                stopped.load(Ordering::Acquire)
            })
        };
        // The drain's stop is a compare-and-swap on the store's state.
        stopped.swap(true, Ordering::AcqRel);
        let seen = slab.visit();
        let saw_stop = filler.join().unwrap();
        assert!(
            saw_stop || seen == [7],
            "the visit missed a fill whose filler missed the stop"
        );
    });
}

/// A grant racing the end of a drain, in a tenant that holds nothing yet:
/// the drain finds the new lease in its one pass over the lease slab, or
/// the grant sees the store stopped and takes its lease back. Either way
/// no lease outlives the drain. (The stop is `begin_drain`'s; the pass is
/// the sweep's, racing the grant too.)
fn grant_vs_drain(fault: StoreFault) {
    common::explore(&name(fault, "grant_vs_drain"), move || {
        store_fault(fault);
        let store = store();
        let granter = {
            let store = Arc::clone(&store);
            thread::spawn(move || store.grant(T, "host", MINUTE, None))
        };
        store.begin_drain(Duration::ZERO).unwrap();
        store.sweep();
        let granted = granter.join().unwrap();
        assert_eq!(store.health(), Health::Stopped);
        assert_eq!(
            store.stats().leases,
            0,
            "a lease outlived the drain (its grant answered {granted:?})"
        );
    });
}

/// A grant taking its tenant hold through the thread's last one, racing
/// the removal of the tenant's only record, which forgets the tenant: the
/// grant holds the tenant the registry has once both are done (the one it
/// held before, if its hold came first, or a new registration), never one
/// the registry forgot.
fn hold_vs_forget(fault: StoreFault) {
    common::explore(&name(fault, "hold_vs_forget"), move || {
        store_fault(fault);
        let store = store();
        // Two grants in a row: this thread keeps the tenant's epoch.
        let first = store.grant(T, "first", MINUTE, None).unwrap();
        let kept = store.grant(T, "kept", MINUTE, None).unwrap();
        store.revoke(T, kept.id).unwrap();
        let revoker = {
            let store = Arc::clone(&store);
            thread::spawn(move || store.revoke(T, first.id))
        };
        let second = store.grant(T, "second", MINUTE, None).unwrap();
        revoker.join().unwrap().unwrap();
        assert_eq!(store.stats().leases, 1);
        assert_eq!(
            store.stats().tenants,
            1,
            "a lease holds a tenant the registry forgot"
        );
        store.revoke(T, second.id).unwrap();
        assert_eq!(store.stats().tenants, 0, "the tenant outlived its leases");
    });
}

/// The slot a lease id names (its low 32 bits; the high half is the
/// slot's generation).
fn slot(id: LeaseId) -> u32 {
    id.to_bits() as u32
}

/// Tenant A publishes under a lease at its per-lease cap (doomed by its
/// own narrow scope) while tenant B publishes with the one unit left under
/// the store-wide ceiling: A is refused by the lease's cap and B, whose
/// admission had room at every instant, is admitted.
fn doomed_vs_neighbour(fault: StoreFault) {
    common::explore(&name(fault, "doomed_vs_neighbour"), move || {
        store_fault(fault);
        let config = StoreConfig::default()
            .listings_per_lease_max(1)
            .listings_max(2)
            .subscribers_max(1)
            .subscriber_buffer_max(8);
        let store = Arc::new(Store::new(config, Arc::new(ManualClock::new())).unwrap());
        let a = TenantId(1);
        let b = TenantId(2);
        let la = store.grant(a, "host", MINUTE, None).unwrap().id;
        let lb = store.grant(b, "host", MINUTE, None).unwrap().id;
        store.publish(a, la, "a1", b"", None).unwrap();
        let doomed = {
            let store = Arc::clone(&store);
            thread::spawn(move || store.publish(a, la, "a2", b"", None))
        };
        let neighbour = store.publish(b, lb, "b1", b"", None);
        assert!(
            matches!(
                doomed.join().unwrap(),
                Err(Error::CapacityExceeded {
                    scope: Scope::Parent(_),
                    ..
                })
            ),
            "a doomed admission was refused by a shared scope: it took shared room first"
        );
        assert!(
            neighbour.is_ok(),
            "a doomed admission took the neighbour's room: {neighbour:?}"
        );
    });
}

/// A join racing a reconfiguration that swaps which of its two store-wide
/// limits is tight: before, pending attempts are full (1 of 1) and the
/// attempt records have room (1 of 2); after, the other way round. Under
/// either configuration whole the join is refused; only a mix of the new
/// pending limit and the old record limit would admit it.
fn admission_vs_reconfigure(fault: StoreFault) {
    common::explore(&name(fault, "admission_vs_reconfigure"), move || {
        store_fault(fault);
        let old = StoreConfig::default()
            .attempts_max(1)
            .replay_max(2)
            .subscribers_max(1)
            .subscriber_buffer_max(8);
        let s = Arc::new(Store::new(old.clone(), Arc::new(ManualClock::new())).unwrap());
        let g = s.grant(T, "host", MINUTE, None).unwrap();
        s.publish(T, g.id, "lobby", b"", None).unwrap();
        s.begin_join(T, "lobby", "c1", MINUTE, None).unwrap();
        let operator = {
            let s = Arc::clone(&s);
            thread::spawn(move || {
                s.reconfigure(old.attempts_max(2).replay_max(1)).unwrap();
            })
        };
        let joined = s.begin_join(T, "lobby", "c2", MINUTE, None);
        operator.join().unwrap();
        assert!(
            matches!(
                joined.as_ref().map_err(|e| e.capacity_scope()),
                Err(Some(Scope::Collection(_)))
            ),
            "admitted under a mix of the old and the new limits: {joined:?}"
        );
    });
}

/// A child record read racing its lease's revocation, whose cascade
/// removes the lease before the lease's children: a reader that saw the
/// lease gone then reads the child (a listing, or a member's presence
/// record attached to the lease), and must not find it, although the
/// child may still be in its slot. The child was read once before, so
/// the racing read takes no lock. One preemption (about 36,000
/// interleavings, 17 s; 250,000 and two minutes at two): the twin needs
/// one, the revocation stopped between the lease's removal and its
/// cascade. Twin: a child's read that answers from its own words without
/// reading its lease after them.
fn child_read_vs_parent_revoke(fault: StoreFault, member: bool) {
    let model = if member {
        "member_read_vs_lease_revoke"
    } else {
        "listing_read_vs_lease_revoke"
    };
    common::explore_bounded(&name(fault, model), 1, move || {
        store_fault(fault);
        let store = store();
        let lease = store.grant(T, "host", MINUTE, None).unwrap().id;
        let read_child = move |store: &Store| {
            if member {
                store.get_presence(T, "player").map(drop)
            } else {
                store.get_listing(T, "lobby").map(drop)
            }
        };
        if member {
            store
                .heartbeat(T, "player", MINUTE, None, Some(lease))
                .unwrap();
        } else {
            store.publish(T, lease, "lobby", b"", None).unwrap();
        }
        read_child(&store).unwrap();
        let reader = {
            let store = Arc::clone(&store);
            // The child's read, once the lease was seen gone.
            thread::spawn(move || store.get_lease(T, lease).err().map(|_| read_child(&store)))
        };
        store.revoke(T, lease).unwrap();
        if let Some(read) = reader.join().unwrap() {
            assert_eq!(
                read,
                Err(Error::NotFound),
                "a child read as visible after its lease was seen gone"
            );
        }
        assert_eq!(read_child(&store), Err(Error::NotFound));
    });
}

/// A listing's read racing the replacement of its attributes, kept in
/// the slot's words (16 bytes), by attributes too long for them (kept out
/// of line in the record, read under the slot's lock): the read answers
/// the old attributes whole or the new ones whole, never a mix of the
/// words. The listing was read once before, so the racing read takes no
/// lock. Twin: a read that keeps what it loaded without looking at the
/// slot's word again.
fn attrs_read_vs_replacement(fault: StoreFault) {
    common::explore_bounded(&name(fault, "attrs_read_vs_replacement"), 2, move || {
        store_fault(fault);
        let store = store();
        let lease = store.grant(T, "host", MINUTE, None).unwrap().id;
        const SHORT: &[u8] = b"mode=ffa;slots=8";
        const LONG: &[u8] = b"mode=ffa;slots=8;region=eu-west;map=harbour";
        let version = store
            .publish(T, lease, "lobby", SHORT, None)
            .unwrap()
            .version;
        store.get_listing(T, "lobby").unwrap();
        let reader = {
            let store = Arc::clone(&store);
            thread::spawn(move || store.get_listing(T, "lobby").unwrap().attrs.to_vec())
        };
        store.update_listing(T, "lobby", version, LONG).unwrap();
        let read = reader.join().unwrap();
        assert!(
            read == SHORT || read == LONG,
            "a read saw a mix of two attributes: {:?}",
            String::from_utf8_lossy(&read)
        );
        assert_eq!(&*store.get_listing(T, "lobby").unwrap().attrs, LONG);
    });
}

/// A read without a lock of the named record 1 racing its removal and
/// the creation of record 2, which takes the slot 1 left (and, as the
/// index's first table holds both, no rebuild): the read answers 1's value, or nothing;
/// never 2's. Twins: a read that keeps the first live record under the
/// name's tag without comparing its key, and one that does not look at
/// the slot's word again.
fn named_read_vs_reuse(fault: StoreFault) {
    common::explore_bounded(&name(fault, "named_read_vs_reuse"), 2, move || {
        store_fault(fault);
        let named = Arc::new(ModelNamed::new());
        named.insert(1, 10);
        let reader = {
            let named = Arc::clone(&named);
            thread::spawn(move || named.read(1))
        };
        assert!(named.remove(1));
        named.insert(2, 20);
        let read = reader.join().unwrap();
        assert!(
            matches!(read, Some(10) | None),
            "a read of record 1 saw record 2: {read:?}"
        );
    });
}

/// A read without a lock of the named record 1 racing the creation of
/// record 2, which grows the index's one shard (the model checker's
/// tables start at four words, three taken before the read): 1 was there
/// before the read began, so the read finds it, whatever the table held
/// when it probed. Twin: a rebuild that marks its end before its entries
/// are back.
fn named_read_vs_growth(fault: StoreFault) {
    common::explore(&name(fault, "named_read_vs_growth"), move || {
        store_fault(fault);
        let named = Arc::new(ModelNamed::new());
        for name in [1, 3, 4] {
            named.insert(name, name * 10);
        }
        let reader = {
            let named = Arc::clone(&named);
            thread::spawn(move || named.read(1))
        };
        named.insert(2, 20);
        assert_eq!(
            reader.join().unwrap(),
            Some(10),
            "a live record went missing"
        );
    });
}

/// A read without a lock of record 1 racing removals and creations of
/// other names that rebuild the index's shard in place twice, clearing
/// the table while the read may probe it. Record 1 is there throughout,
/// so the read finds it. Twin: a read that trusts a miss without looking
/// whether a rebuild was under way or came between its two looks.
fn named_read_vs_rebuild(fault: StoreFault) {
    common::explore_bounded(&name(fault, "named_read_vs_rebuild"), 2, move || {
        store_fault(fault);
        let named = Arc::new(ModelNamed::new());
        // Record 1 in the first table, of four words, with one
        // tombstone: the next removals and creations rebuild it twice.
        named.insert(1, 10);
        named.insert(2, 20);
        assert!(named.remove(2));
        let reader = {
            let named = Arc::clone(&named);
            thread::spawn(move || named.read(1))
        };
        for name in 3..=6 {
            named.insert(name, name * 10);
            assert!(named.remove(name));
        }
        assert_eq!(
            reader.join().unwrap(),
            Some(10),
            "a live record went missing"
        );
    });
}

#[test]
fn an_admission_sees_a_reconfiguration_whole_or_not_at_all() {
    admission_vs_reconfigure(StoreFault::None);
}

#[test]
#[should_panic]
fn broken_twin_limits_read_apart_admit_under_a_mix() {
    admission_vs_reconfigure(StoreFault::LimitsReadApart);
}

#[test]
fn a_doomed_admission_never_takes_anothers_room() {
    doomed_vs_neighbour(StoreFault::None);
}

#[test]
#[should_panic(expected = "a doomed admission")]
fn broken_twin_shared_scope_first_refuses_the_neighbour() {
    doomed_vs_neighbour(StoreFault::SharedScopeFirst);
}

#[test]
fn join_racing_revoke_leaves_nothing_visible_or_orphaned() {
    join_vs_revoke(StoreFault::None);
}

#[test]
#[should_panic(expected = "orphaned")]
fn broken_twin_join_without_attach_orphans_an_attempt() {
    join_vs_revoke(StoreFault::JoinWithoutAttach);
}

#[test]
fn an_attempt_of_an_earlier_publication_authorises_nothing() {
    bind_vs_republish();
}

#[test]
fn exactly_one_of_two_binds_wins() {
    bind_vs_bind(StoreFault::None);
}

#[test]
#[should_panic(expected = "exactly one bind wins")]
fn broken_twin_bind_ignoring_the_phase_lets_both_win() {
    bind_vs_bind(StoreFault::BindIgnoresPhase);
}

#[test]
fn exactly_one_of_two_consumes_wins() {
    consume_vs_consume(StoreFault::None);
}

/// Caught either as two admissions or, where the second release comes
/// first, as the pending counter's underflow assertion.
#[test]
#[should_panic]
fn broken_twin_consume_ignoring_the_phase_admits_twice() {
    consume_vs_consume(StoreFault::ConsumeIgnoresPhase);
}

#[test]
fn renewal_racing_revocation_is_ok_or_revoked() {
    renew_vs_revoke(StoreFault::None);
}

#[test]
#[should_panic(expected = "neither live nor revoked")]
fn broken_twin_late_tombstone_answers_not_found() {
    renew_vs_revoke(StoreFault::TombstoneAfterRemoval);
}

#[test]
fn a_renewal_never_lands_on_the_record_that_reused_its_slot() {
    renew_vs_reuse(StoreFault::None);
}

#[test]
#[should_panic(expected = "landed on the second")]
fn broken_twin_slot_ignoring_the_generation_renews_the_new_lease() {
    renew_vs_reuse(StoreFault::SlotIgnoresGeneration);
}

#[test]
fn two_renewals_of_one_lease_both_renew_it() {
    renew_vs_renew(StoreFault::None);
}

#[test]
#[should_panic(expected = "distinct, rising versions")]
fn broken_twin_renewal_reading_apart_gives_two_renewals_one_version() {
    renew_vs_renew(StoreFault::RenewalReadsApart);
}

#[test]
fn two_heartbeats_of_one_member_both_refresh_it() {
    heartbeat_vs_heartbeat(StoreFault::None);
}

#[test]
#[should_panic(expected = "distinct, rising versions")]
fn broken_twin_renewal_reading_apart_gives_two_heartbeats_one_version() {
    heartbeat_vs_heartbeat(StoreFault::RenewalReadsApart);
}

#[test]
fn a_read_never_sees_the_record_that_reused_its_slot() {
    read_vs_reuse(StoreFault::None, false);
}

#[test]
#[should_panic(expected = "saw the second")]
fn broken_twin_slot_ignoring_the_generation_reads_the_new_lease() {
    read_vs_reuse(StoreFault::SlotIgnoresGeneration, false);
}

#[test]
fn a_grant_racing_the_drain_leaves_no_lease() {
    grant_vs_drain(StoreFault::None);
}

#[test]
#[should_panic(expected = "outlived the drain")]
fn broken_twin_creation_not_looking_at_the_stop_outlives_the_drain() {
    grant_vs_drain(StoreFault::StopUnchecked);
}

#[test]
fn a_visit_sees_a_fill_whose_filler_missed_the_stop() {
    fill_vs_visit(StoreFault::None);
}

#[test]
#[should_panic(expected = "missed a fill")]
fn broken_twin_visit_loading_the_count_misses_a_fill() {
    fill_vs_visit(StoreFault::SlabVisitLoadsCount);
}

#[test]
fn a_hold_through_the_last_one_never_revives_a_forgotten_tenant() {
    hold_vs_forget(StoreFault::None);
}

#[test]
#[should_panic(expected = "the registry forgot")]
fn broken_twin_hold_by_plain_increment_revives_a_forgotten_tenant() {
    hold_vs_forget(StoreFault::HoldRevivesForgotten);
}

#[test]
fn a_read_without_the_lock_answers_the_first_lease_whole_or_not_at_all() {
    read_vs_reuse(StoreFault::None, true);
}

#[test]
#[should_panic(expected = "saw the second, or a mix")]
fn broken_twin_read_not_looking_again_mixes_two_leases() {
    read_vs_reuse(StoreFault::SlotReadUnchecked, true);
}

#[test]
#[should_panic(expected = "saw the second, or a mix")]
fn broken_twin_read_without_the_lock_ignoring_the_generation_reads_the_new_lease() {
    read_vs_reuse(StoreFault::SlotIgnoresGeneration, true);
}

#[test]
fn a_read_without_the_lock_never_trusts_a_revoked_tenant() {
    peek_vs_revoke_tenant(StoreFault::None);
}

#[test]
#[should_panic(expected = "read as live after another read saw the revocation")]
fn broken_twin_revocation_counted_after_the_end_is_trusted_by_a_read() {
    peek_vs_revoke_tenant(StoreFault::EpochEndUnmarked);
}

#[test]
fn a_listing_read_after_its_lease_was_seen_gone_finds_nothing() {
    child_read_vs_parent_revoke(StoreFault::None, false);
}

#[test]
#[should_panic(expected = "a child read as visible after its lease was seen gone")]
fn broken_twin_listing_read_not_reading_its_lease_outlives_the_lease() {
    child_read_vs_parent_revoke(StoreFault::ChildParentUnread, false);
}

#[test]
fn a_member_read_after_its_lease_was_seen_gone_finds_nothing() {
    child_read_vs_parent_revoke(StoreFault::None, true);
}

#[test]
#[should_panic(expected = "a child read as visible after its lease was seen gone")]
fn broken_twin_member_read_not_reading_its_lease_outlives_the_lease() {
    child_read_vs_parent_revoke(StoreFault::ChildParentUnread, true);
}

#[test]
fn a_listing_read_sees_replaced_attributes_whole() {
    attrs_read_vs_replacement(StoreFault::None);
}

#[test]
#[should_panic(expected = "a read saw a mix of two attributes")]
fn broken_twin_read_not_looking_again_mixes_two_attributes() {
    attrs_read_vs_replacement(StoreFault::SlotReadUnchecked);
}

#[test]
fn a_named_read_without_the_lock_answers_its_own_name_or_nothing() {
    named_read_vs_reuse(StoreFault::None);
}

#[test]
#[should_panic(expected = "saw record 2")]
fn broken_twin_named_read_not_comparing_the_key_reads_another_name() {
    named_read_vs_reuse(StoreFault::NameUnverified);
}

#[test]
#[should_panic(expected = "saw record 2")]
fn broken_twin_named_read_not_looking_again_reads_another_name() {
    named_read_vs_reuse(StoreFault::SlotReadUnchecked);
}

#[test]
fn a_named_read_finds_its_record_while_the_index_grows() {
    named_read_vs_growth(StoreFault::None);
}

#[test]
#[should_panic(expected = "a live record went missing")]
fn broken_twin_index_rebuild_ending_before_its_entries_loses_a_record() {
    named_read_vs_growth(StoreFault::IndexEndMarkedEarly);
}

#[test]
fn a_named_read_finds_its_record_while_its_table_is_rebuilt() {
    named_read_vs_rebuild(StoreFault::None);
}

#[test]
#[should_panic(expected = "a live record went missing")]
fn broken_twin_index_read_trusting_a_miss_loses_a_record() {
    named_read_vs_rebuild(StoreFault::IndexMissUnchecked);
}
