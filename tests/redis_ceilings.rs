//! Store-wide ceilings on the Redis engine (ADR 0031), on a standalone
//! server and on a Redis Cluster, where a ceiling spans every slot: exact
//! under racing instances, never spent on a refused creation, given back
//! by every way a record leaves (revoke, expiry, a tenant's revocation),
//! given back by a creation that lost its race, kept by records renewed
//! past their first reservation, lapsing when no instance is left to give
//! it back, and counting exactly the live records after a racing mix.

mod redis;

use redis::{config, instances, instances_swept_by_hand, on_every_target};
use relaystore::events::Collection;
use relaystore::{Error, Scope, StoreConfig, TenantId, Usage};
use std::time::Duration;

const T: TenantId = TenantId(1);
const OTHER: TenantId = TenantId(2);
const MS: Duration = Duration::from_millis(1);

/// The refusal of a full store-wide ceiling on `collection`.
fn full(collection: Collection, limit: u64) -> Error {
    Error::CapacityExceeded {
        scope: Scope::Collection(collection),
        limit,
        used: limit,
    }
}

fn ceilings(leases: u64) -> StoreConfig {
    config().leases_max(leases)
}

#[test]
fn a_ceiling_is_exact_under_racing_instances_and_tenants() {
    on_every_target("ceiling-race", |target, name| async move {
        let engines = instances(&target, &name, 3, ceilings(8)).await;
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..40u64 {
            let e = engines[i as usize % 3].clone();
            // Tenants spread over the cluster's slots.
            let tenant = TenantId(100 + i);
            tasks.spawn(async move { (tenant, e.grant(tenant, "h", MS * 60_000, None).await) });
        }
        let mut granted = Vec::new();
        while let Some(outcome) = tasks.join_next().await {
            match outcome.unwrap() {
                (tenant, Ok(g)) => granted.push((tenant, g.id)),
                (_, Err(e)) => assert_eq!(e, full(Collection::Leases, 8), "{name}"),
            }
        }
        assert_eq!(granted.len(), 8, "{name}: N admitted, never N+1");
        assert_eq!(
            engines[0]
                .grant(OTHER, "h", MS * 60_000, None)
                .await
                .map(drop),
            Err(full(Collection::Leases, 8)),
            "{name}"
        );
        let usage = |used| Some(Usage { used, limit: 8 });
        assert_eq!(
            engines[2].ceiling_usage(Collection::Leases).await.unwrap(),
            usage(8),
            "{name}"
        );
        // A revoke on one instance gives the room back to every instance.
        let (tenant, id) = granted[0];
        engines[1].revoke(tenant, id).await.unwrap();
        assert_eq!(
            engines[2].ceiling_usage(Collection::Leases).await.unwrap(),
            usage(7),
            "{name}"
        );
        engines[2]
            .grant(OTHER, "h", MS * 60_000, None)
            .await
            .unwrap_or_else(|e| panic!("{name}: revoke did not give room back: {e}"));
        assert_eq!(
            engines[0].ceiling_usage(Collection::Leases).await.unwrap(),
            usage(8),
            "{name}"
        );
        assert_eq!(
            engines[0].ceiling_usage(Collection::Tombstones).await,
            Ok(None),
            "{name}: no ceiling on tombstones here"
        );
    });
}

#[test]
fn a_tenant_refused_by_its_quota_takes_no_store_room() {
    on_every_target("ceiling-neighbour", |target, name| async move {
        let mut limits = ceilings(2);
        limits.tenant.leases_max = 1;
        let engines = instances(&target, &name, 2, limits).await;
        engines[0].grant(T, "h", MS * 60_000, None).await.unwrap();
        // Many doomed grants of the tenant at its quota in flight, racing
        // one grant of another tenant for the store's last room.
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..64 {
            let e = engines[i % 2].clone();
            tasks.spawn(async move { e.grant(T, "h", MS * 60_000, None).await.map(drop) });
        }
        let other = engines[1].grant(OTHER, "h", MS * 60_000, None).await;
        while let Some(outcome) = tasks.join_next().await {
            assert_eq!(
                outcome.unwrap(),
                Err(Error::CapacityExceeded {
                    scope: Scope::Tenant(Collection::Leases),
                    limit: 1,
                    used: 1,
                }),
                "{name}"
            );
        }
        other.unwrap_or_else(|e| panic!("{name}: a doomed grant held the store's room: {e}"));
    });
}

#[test]
fn every_collection_is_capped_and_expiry_gives_room_back() {
    on_every_target("ceiling-expiry", |target, name| async move {
        let limits = config()
            .leases_max(2)
            .listings_max(1)
            .presence_max(1)
            .attempts_max(1)
            .locks_max(1);
        let engines = instances_swept_by_hand(&target, &name, 2, limits).await;
        let (a, b) = (&engines[0], &engines[1]);
        let long = MS * 60_000;
        let g = a.grant(T, "h", long, None).await.unwrap();
        a.publish(T, g.id, "room", b"", None).await.unwrap();
        a.begin_join(T, "room", "c", MS * 200, None).await.unwrap();
        a.heartbeat(T, "alice", MS * 200, None, None).await.unwrap();
        a.try_lock(T, "job", "a", MS * 200, None)
            .await
            .unwrap()
            .unwrap();
        let h = b.grant(OTHER, "h", long, None).await.unwrap();
        assert_eq!(
            b.publish(OTHER, h.id, "room", b"", None).await.map(drop),
            Err(full(Collection::Listings, 1)),
            "{name}"
        );
        assert_eq!(
            b.heartbeat(OTHER, "bob", long, None, None).await.map(drop),
            Err(full(Collection::Presence, 1)),
            "{name}"
        );
        assert_eq!(
            b.try_lock(OTHER, "job", "b", long, None).await.map(drop),
            Err(full(Collection::Locks, 1)),
            "{name}"
        );
        // The attempt, the presence record and the lock lapse; the sweeper
        // (run here at once) gives their room back.
        tokio::time::sleep(MS * 300).await;
        a.sweep().await.unwrap();
        b.heartbeat(OTHER, "bob", long, None, None)
            .await
            .unwrap_or_else(|e| panic!("{name}: presence room after expiry: {e}"));
        b.try_lock(OTHER, "job", "b", long, None)
            .await
            .unwrap_or_else(|e| panic!("{name}: lock room after expiry: {e}"))
            .unwrap();
        a.begin_join(T, "room", "d", long, None)
            .await
            .unwrap_or_else(|e| panic!("{name}: attempt room after expiry: {e}"));
        // Unpublishing gives the listing's room back.
        a.unpublish(T, "room", None).await.unwrap();
        b.publish(OTHER, h.id, "room", b"", None)
            .await
            .unwrap_or_else(|e| panic!("{name}: listing room after unpublish: {e}"));
    });
}

#[test]
fn a_revoked_tenants_room_comes_back_once_swept() {
    on_every_target("ceiling-revoke-tenant", |target, name| async move {
        let engines = instances_swept_by_hand(&target, &name, 2, ceilings(3)).await;
        for _ in 0..3 {
            engines[0].grant(T, "h", MS * 60_000, None).await.unwrap();
        }
        assert_eq!(
            engines[1]
                .grant(OTHER, "h", MS * 60_000, None)
                .await
                .map(drop),
            Err(full(Collection::Leases, 3)),
            "{name}"
        );
        engines[0].revoke_tenant(T).await.unwrap();
        engines[1].sweep().await.unwrap();
        for _ in 0..3 {
            engines[1]
                .grant(OTHER, "h", MS * 60_000, None)
                .await
                .unwrap_or_else(|e| panic!("{name}: the revoked tenant's room: {e}"));
        }
    });
}

#[test]
fn records_renewed_past_their_first_reservation_keep_their_room() {
    on_every_target("ceiling-renewed", |target, name| async move {
        // The first TTLs are short so that the first reservations lapse
        // within the test; the check needs every record renewed before its
        // first deadline. A machine too loaded to make four calls within
        // the TTL is tried again, on a fresh store, with four times it.
        let mut short = MS * 100;
        loop {
            let engines = instances_swept_by_hand(&target, &name, 2, renewed_limits()).await;
            match renew_past_first_reservations(&engines, &name, short).await {
                Ok(()) => break,
                Err(e @ (Error::Expired | Error::NotFound)) if short < MS * 1_600 => {
                    eprintln!("{name}: a renewal came too late for {short:?} ({e}); trying longer");
                    short *= 4;
                }
                Err(e) => panic!("{name}: no renewal landed within {short:?}: {e}"),
            }
        }
    });
}

fn renewed_limits() -> StoreConfig {
    config()
        .leases_max(2)
        .listings_max(1)
        .presence_max(1)
        .locks_max(1)
}

/// Creates a lease (with a listing), a presence record and a lock with
/// TTL `short`, renews each to 10 s on another instance, waits past their
/// first reservations' horizons and checks that each still holds its
/// room. `Err` (nothing checked) when a record was gone (`Expired`,
/// `NotFound`) or re-created by the time it was renewed, or a call failed.
async fn renew_past_first_reservations(
    engines: &[relaystore::redis::RedisEngine],
    name: &str,
    short: Duration,
) -> Result<(), Error> {
    let (a, b) = (&engines[0], &engines[1]);
    let long = MS * 10_000;
    let g = a.grant(T, "h", short, None).await?;
    a.publish(T, g.id, "room", b"", None).await?;
    let first = a.heartbeat(T, "alice", short, None, None).await?;
    let lock = a
        .try_lock(T, "job", "a", short, None)
        .await?
        .expect("a lock nobody holds");
    // Renewed far past that: the reservations move out first (the
    // listing's with its lease).
    b.renew(T, g.id, long).await?;
    if b.heartbeat(T, "alice", long, None, None).await?.version != first.version + 1 {
        // Expired and made again: not the refresh this checks.
        return Err(Error::Expired);
    }
    b.renew_lock(T, "job", lock.fence, long).await?;
    // Each first reservation lasts its TTL and three more for renewals,
    // and on a cluster twice the clock allowance (1 s) more.
    tokio::time::sleep(short * 4 + MS * 2_600).await;
    a.sweep().await.unwrap();
    let leases = b.ceiling_usage(Collection::Leases).await.unwrap();
    assert_eq!(
        leases,
        Some(Usage { used: 1, limit: 2 }),
        "{name}: the renewed lease's room (short {short:?})"
    );
    let h = b.grant(OTHER, "h", long, None).await.unwrap();
    assert_eq!(
        b.grant(OTHER, "h", long, None).await.map(drop),
        Err(full(Collection::Leases, 2)),
        "{name}: a renewed lease lost its room (short {short:?})"
    );
    assert_eq!(
        b.publish(OTHER, h.id, "room", b"", None).await.map(drop),
        Err(full(Collection::Listings, 1)),
        "{name}: a renewed lease's listing lost its room (short {short:?})"
    );
    assert_eq!(
        b.heartbeat(OTHER, "bob", long, None, None).await.map(drop),
        Err(full(Collection::Presence, 1)),
        "{name}: a refreshed presence record lost its room (short {short:?})"
    );
    assert_eq!(
        b.try_lock(OTHER, "job", "b", long, None).await.map(drop),
        Err(full(Collection::Locks, 1)),
        "{name}: a renewed lock lost its room (short {short:?})"
    );
    Ok(())
}

#[test]
fn room_no_instance_gives_back_lapses_at_its_horizon() {
    on_every_target("ceiling-lapse", |target, name| async move {
        // No sweeper within the test (the loop first waits a minute), and
        // no later call of the tenant: nothing gives the expired lease's
        // room back, as when every instance that could have died.
        let options = target
            .options
            .clone()
            .sweep_interval(Duration::from_secs(60));
        let e = relaystore::redis::RedisEngine::connect(
            options.namespace(&redis::fresh_namespace(&name)),
            ceilings(1),
        )
        .await
        .unwrap();
        e.grant(T, "h", MS * 100, None).await.unwrap();
        assert_eq!(
            e.grant(OTHER, "h", MS * 100, None).await.map(drop),
            Err(full(Collection::Leases, 1)),
            "{name}"
        );
        // The reservation's horizon: the TTL, three more for renewals, and
        // on a cluster twice the clock allowance (0.4 s, or 2.4 s); then it
        // stops counting.
        tokio::time::sleep(MS * 3_000).await;
        e.grant(OTHER, "h", MS * 100, None)
            .await
            .unwrap_or_else(|e| panic!("{name}: room past its horizon still counted: {e}"));
    });
}

#[test]
fn room_taken_for_a_creation_that_lost_its_race_is_given_back() {
    on_every_target("ceiling-lost-race", |target, name| async move {
        let mut limits = ceilings(20);
        limits.tenant.leases_max = 1;
        let engines = instances(&target, &name, 2, limits).await;
        // Sixteen grants of one tenant at once: on a cluster each first
        // asks for room, all pass the tenant's check (nothing committed
        // yet), all take room; one commits, the others find the tenant
        // full on their second call and must give their room back.
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..16 {
            let e = engines[i % 2].clone();
            tasks.spawn(async move { e.grant(T, "h", MS * 60_000, None).await.is_ok() });
        }
        let mut won = 0;
        while let Some(ok) = tasks.join_next().await {
            won += usize::from(ok.unwrap());
        }
        assert_eq!(won, 1, "{name}");
        // So the store holds one lease, and other tenants get the rest.
        for n in 0..19 {
            engines[1]
                .grant(TenantId(10 + n), "h", MS * 60_000, None)
                .await
                .unwrap_or_else(|e| panic!("{name}: grant {n} of the 19 left: {e}"));
        }
        assert_eq!(
            engines[0]
                .grant(OTHER, "h", MS * 60_000, None)
                .await
                .map(drop),
            Err(full(Collection::Leases, 20)),
            "{name}"
        );
    });
}

#[test]
fn after_a_racing_mix_the_count_is_exactly_the_live_records() {
    on_every_target("ceiling-mix", |target, name| async move {
        let engines = instances_swept_by_hand(&target, &name, 3, ceilings(60)).await;
        let mut tasks = tokio::task::JoinSet::new();
        for worker in 0..12u64 {
            let e = engines[worker as usize % 3].clone();
            let other = engines[(worker as usize + 1) % 3].clone();
            tasks.spawn(async move {
                let tenant = TenantId(100 + worker % 6);
                let mut mine = Vec::new();
                // A fixed pseudo-random walk per worker (no clock, no OS
                // randomness): the same mix every run.
                let mut x = worker.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                for _ in 0..40 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    match x % 5 {
                        // Short leases expire during the run.
                        0 | 1 => {
                            let ttl = if x % 2 == 0 { MS * 150 } else { MS * 60_000 };
                            if let Ok(g) = e.grant(tenant, "h", ttl, None).await {
                                mine.push(g.id);
                            }
                        }
                        // Revoked from another instance.
                        2 if !mine.is_empty() => {
                            let id = mine.swap_remove((x / 5) as usize % mine.len());
                            let _ = other.revoke(tenant, id).await;
                        }
                        // Renewed far out: past its reservation's horizon.
                        3 if !mine.is_empty() => {
                            let id = mine[(x / 5) as usize % mine.len()];
                            let _ = e.renew(tenant, id, MS * 60_000).await;
                        }
                        _ => tokio::time::sleep(MS * 10).await,
                    }
                }
                (tenant, mine)
            });
        }
        let mut held = Vec::new();
        while let Some(done) = tasks.join_next().await {
            let (tenant, mine) = done.unwrap();
            held.extend(mine.into_iter().map(|id| (tenant, id)));
        }
        // Let the short ones lapse, and sweep them.
        tokio::time::sleep(MS * 300).await;
        engines[0].sweep().await.unwrap();
        let mut live = 0;
        for (tenant, id) in held {
            live += u64::from(engines[1].get_lease(tenant, id).await.is_ok());
        }
        assert_eq!(
            engines[2].ceiling_usage(Collection::Leases).await.unwrap(),
            Some(Usage {
                used: live,
                limit: 60
            }),
            "{name}: the count drifted from the live leases"
        );
    });
}

/// A ceiling lowered below what the store holds refuses, with the whole
/// use, until removals bring the use under it, although on a cluster the
/// shares that hold nothing have room under their new parts (ADR 0070):
/// one tenant's four leases fill two shares (two each under a ceiling of
/// 32), and the ceiling lowered to 4 gives shares 0 to 3 a part of one,
/// at least two of them empty.
#[test]
fn a_ceiling_lowered_below_its_use_refuses_until_use_is_under_it() {
    on_every_target("ceiling-lowered", |target, name| async move {
        let mut limits = ceilings(2 * relaystore::redis::ROOM_SHARES as u64);
        let engines = instances(&target, &name, 1, limits.clone()).await;
        let e = &engines[0];
        let mut held = Vec::new();
        for _ in 0..4 {
            held.push(e.grant(T, "h", MS * 60_000, None).await.unwrap().id);
        }
        limits.leases_max = 4;
        e.reconfigure(limits).await.unwrap();
        for _ in 0..2 {
            assert_eq!(
                e.grant(OTHER, "h", MS * 60_000, None).await.map(drop),
                Err(full(Collection::Leases, 4)),
                "{name}: a ceiling lowered to its use"
            );
        }
        e.revoke(T, held[0]).await.unwrap();
        e.grant(OTHER, "h", MS * 60_000, None)
            .await
            .unwrap_or_else(|e| panic!("{name}: room under the lowered ceiling: {e}"));
        assert_eq!(
            e.grant(OTHER, "h", MS * 60_000, None).await.map(drop),
            Err(full(Collection::Leases, 4)),
            "{name}: the lowered ceiling, reached again"
        );
    });
}
