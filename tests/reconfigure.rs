//! Limits and quota policy changed at run time: raising admits more at
//! once, lowering below use evicts nothing and refuses until use falls
//! under, fixed fields are refused by name, and a refused change changes
//! nothing.

mod common;

use common::ops::*;
use relaystore::events::Collection;
use relaystore::{Error, QuotaPolicy, Scope, TenantId, TenantQuota, UniformQuota};
use std::sync::Arc;

fn grant(s: &relaystore::Store, t: TenantId) -> Result<relaystore::LeaseGrant, Error> {
    s.grant(t, "h", SEC * 60, None)
}

#[test]
fn raising_a_ceiling_admits_at_once_and_lowering_it_evicts_nothing() {
    let (_c, s) = store_with(config().leases_max(2));
    let a = grant(&s, T).unwrap();
    grant(&s, OTHER).unwrap();
    assert_eq!(
        grant(&s, T).map(drop),
        Err(Error::CapacityExceeded {
            scope: Scope::Collection(Collection::Leases),
            limit: 2,
            used: 2
        })
    );
    s.reconfigure(s.config().leases_max(3)).unwrap();
    assert_eq!(s.config().leases_max, 3);
    let b = grant(&s, T).unwrap();
    // Lowered below use: everything stays, new work waits for room.
    s.reconfigure(s.config().leases_max(1)).unwrap();
    assert_eq!(s.stats().leases, 3, "nothing evicted");
    assert!(s.get_lease(T, a.id).is_ok() && s.get_lease(T, b.id).is_ok());
    assert_eq!(
        grant(&s, T).map(drop),
        Err(Error::CapacityExceeded {
            scope: Scope::Collection(Collection::Leases),
            limit: 1,
            used: 3
        })
    );
    s.revoke(T, a.id).unwrap();
    s.revoke(T, b.id).unwrap();
    assert_eq!(
        grant(&s, T).map(drop).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::Collection(Collection::Leases))),
        "still at the new limit (one lease held)"
    );
    s.reconfigure(s.config().leases_max(2)).unwrap();
    grant(&s, T).unwrap();
    s.audit().unwrap();
}

#[test]
fn tenant_quotas_change_for_registered_tenants_each_whole() {
    let (_c, s) = store_with(config().tenant(config().tenant.leases_max(1)));
    grant(&s, T).unwrap();
    assert_eq!(
        grant(&s, T).map(drop).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::Tenant(Collection::Leases)))
    );
    // Through reconfigure: a new uniform quota, for the registered tenant
    // too.
    s.reconfigure(s.config().tenant(config().tenant.leases_max(2)))
        .unwrap();
    grant(&s, T).unwrap();
    assert_eq!(
        s.usage(T).of(Collection::Leases).map(|u| (u.used, u.limit)),
        Some((2, 2))
    );
    // Through a policy: a paying tenant gets more, the others less.
    struct Tiered;
    impl QuotaPolicy for Tiered {
        fn quota(&self, tenant: TenantId) -> TenantQuota {
            let leases_max = if tenant == T { 3 } else { 1 };
            TenantQuota::default().leases_max(leases_max)
        }
    }
    s.set_quota_policy(Arc::new(Tiered));
    grant(&s, T).unwrap();
    assert_eq!(
        grant(&s, T).map(drop),
        Err(Error::CapacityExceeded {
            scope: Scope::Tenant(Collection::Leases),
            limit: 3,
            used: 3
        })
    );
    grant(&s, OTHER).unwrap();
    assert_eq!(
        grant(&s, OTHER).map(drop).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::Tenant(Collection::Leases))),
        "a tenant registered after the swap gets the new policy"
    );
    s.set_quota_policy(Arc::new(UniformQuota(TenantQuota::default())));
    grant(&s, OTHER).unwrap();
    s.audit().unwrap();
}

#[test]
fn fixed_fields_and_invalid_sets_are_refused_and_change_nothing() {
    let (_c, s) = store();
    let before = s.config();
    assert_eq!(
        s.reconfigure(s.config().name_bytes_max(64)),
        Err(Error::InvalidConfig {
            field: "name_bytes_max",
            rule: "cannot change at run time",
            values: format!("name_bytes_max = {} now, 64 asked", before.name_bytes_max),
        })
    );
    // The wake bounds are fixed too (a listener's queue is sized when it
    // attaches): refused by name, not a panic.
    for (field, next) in [
        ("wake_queue_max", s.config().wake_queue_max(3)),
        (
            "wake_payload_bytes_max",
            s.config().wake_payload_bytes_max(3),
        ),
    ] {
        assert!(
            matches!(
                s.reconfigure(next),
                Err(Error::InvalidConfig { field: f, rule: "cannot change at run time", .. }) if f == field
            ),
            "{field}"
        );
    }
    assert_eq!(
        s.reconfigure(s.config().leases_max(0)),
        Err(Error::InvalidConfig {
            field: "leases_max",
            rule: "must be positive",
            values: "leases_max = 0".into(),
        })
    );
    assert_eq!(s.config(), before);
    // The same configuration again is a no-op.
    s.reconfigure(s.config()).unwrap();
    assert_eq!(s.config(), before);
}

#[test]
fn reconfiguring_while_eight_threads_create_keeps_every_count() {
    let (_c, s) = store_with(config().leases_max(50).tenant(TenantQuota::unlimited()));
    std::thread::scope(|scope| {
        for w in 0..8u64 {
            let s = s.clone();
            scope.spawn(move || {
                for _ in 0..300 {
                    match s.grant(TenantId(w), "h", SEC * 60, None) {
                        Ok(g) => s.revoke(TenantId(w), g.id).unwrap(),
                        Err(e) => assert_eq!(
                            e.capacity_scope(),
                            Some(Scope::Collection(Collection::Leases)),
                            "{e:?}"
                        ),
                    }
                }
            });
        }
        for round in 0..50u64 {
            s.reconfigure(s.config().leases_max(1 + round % 7)).unwrap();
        }
    });
    s.audit().unwrap();
    assert_eq!(s.stats().leases, 0);
}

/// The mechanisms' caps (streams, queues, schedules, listeners, channels,
/// subscribers and the stream and queue budgets) change at run time too:
/// each refusal reports the limit in force, lowering evicts nothing, and
/// `usage` reports the new per-tenant caps.
#[test]
fn the_mechanisms_caps_change_at_run_time_and_lowering_evicts_nothing() {
    use relaystore::queue::QueueConfig;
    use relaystore::stream::{StreamConfig, WhenFull};
    let (_c, s) = store_with(
        config()
            .streams_per_tenant_max(1)
            .queues_max(1)
            .schedules_per_tenant_max(1)
            .listeners_max(1)
            .channels_per_tenant_max(8)
            .subscribers_max(1),
    );
    let small_stream = || StreamConfig::new(4, 64, WhenFull::Refuse);
    let small_queue = || {
        QueueConfig::default()
            .jobs_max(4)
            .bytes_max(64)
            .dead_letters_max(Some(1))
    };
    let cap = |r: Result<(), Error>| match r {
        Err(Error::CapacityExceeded { scope, limit, used }) => Some((scope, limit, used)),
        _ => None,
    };
    let tenant_streams = Scope::Tenant(Collection::Streams);
    let all_queues = Scope::Collection(Collection::Queues);
    let tenant_schedules = Scope::Tenant(Collection::Schedules);

    s.create_stream(T, "a", small_stream()).unwrap();
    s.create_queue(T, "q1", small_queue()).unwrap();
    s.schedule(T, "s1", "@every 1m", "q1", b"x").unwrap();
    let _l1 = s.listen(T, "c1").unwrap();
    let _sub1 = s.subscribe().unwrap();
    assert_eq!(
        cap(s.create_stream(T, "b", small_stream())),
        Some((tenant_streams, 1, 1))
    );
    assert_eq!(
        cap(s.create_queue(OTHER, "q2", small_queue())),
        Some((all_queues, 1, 1))
    );
    assert_eq!(
        cap(s.schedule(T, "s2", "@every 1m", "q1", b"x")),
        Some((tenant_schedules, 1, 1))
    );
    assert_eq!(
        cap(s.listen(T, "c2").map(drop)),
        Some((Scope::Listeners, 1, 1))
    );
    assert_eq!(
        cap(s.subscribe().map(drop)),
        Some((Scope::Subscribers, 1, 1))
    );

    // Raised: each admits at once, and usage reports the new caps.
    s.reconfigure(
        s.config()
            .streams_per_tenant_max(2)
            .queues_max(2)
            .schedules_per_tenant_max(2)
            .listeners_max(2)
            .subscribers_max(2),
    )
    .unwrap();
    s.create_stream(T, "b", small_stream()).unwrap();
    s.create_queue(OTHER, "q2", small_queue()).unwrap();
    s.schedule(T, "s2", "@every 1m", "q1", b"x").unwrap();
    let _l2 = s.listen(T, "c2").unwrap();
    let _sub2 = s.subscribe().unwrap();
    let usage = s.usage(T);
    let of = |c| usage.of(c).map(|u| (u.used, u.limit));
    assert_eq!(of(Collection::Streams), Some((2, 2)));
    assert_eq!(of(Collection::Schedules), Some((2, 2)));

    // Lowered below use: everything stays; new work is refused with the
    // new limit and the use it saw.
    s.reconfigure(
        s.config()
            .streams_per_tenant_max(1)
            .queues_max(1)
            .schedules_per_tenant_max(1)
            .listeners_max(1)
            .subscribers_max(1)
            .channels_per_tenant_max(1),
    )
    .unwrap();
    assert_eq!(s.streams(), 2, "no stream evicted");
    assert_eq!(s.queues(), 2, "no queue evicted");
    assert_eq!(s.schedules(T).len(), 2, "no schedule evicted");
    assert_eq!(s.listeners(), 2, "no listener detached");
    assert_eq!(
        cap(s.create_stream(T, "c", small_stream())),
        Some((tenant_streams, 1, 2))
    );
    assert_eq!(
        cap(s.create_queue(T, "q3", small_queue())),
        Some((all_queues, 1, 2))
    );
    assert_eq!(
        cap(s.schedule(T, "s3", "@every 1m", "q1", b"x")),
        Some((tenant_schedules, 1, 2))
    );
    assert_eq!(
        cap(s.listen(T, "c3").map(drop)),
        Some((Scope::Listeners, 1, 2))
    );
    assert_eq!(
        cap(s.subscribe().map(drop)),
        Some((Scope::Subscribers, 1, 2))
    );
    drop(_l2);
    assert_eq!(
        cap(s.listen(OTHER, "c3").map(drop)),
        Some((Scope::Listeners, 1, 1))
    );
    drop(_l1);
    let _l3 = s
        .listen(OTHER, "c3")
        .expect("room once use fell under the new limit");
    // The lowered per-tenant channel cap: T, holding no channel now, gets
    // one and no second.
    s.reconfigure(s.config().listeners_max(10)).unwrap();
    let _l4 = s.listen(T, "c4").unwrap();
    assert_eq!(
        cap(s.listen(T, "c5").map(drop)),
        Some((Scope::TenantChannels, 1, 1))
    );
    s.audit().unwrap();
}

/// A stream or queue reserves its whole capacity from a store-wide budget
/// at creation; the budgets change at run time like the counts.
#[test]
fn the_stream_and_queue_budgets_change_at_run_time() {
    use relaystore::queue::QueueConfig;
    use relaystore::stream::{StreamConfig, WhenFull};
    let (_c, s) = store();
    let budget = |bytes| {
        s.config()
            .stream_bytes_total_max(bytes)
            .queue_bytes_total_max(bytes)
    };
    s.reconfigure(budget(100)).unwrap();
    let stream = StreamConfig::new(4, 60, WhenFull::Refuse);
    let queue = QueueConfig::default()
        .jobs_max(4)
        .bytes_max(60)
        .dead_letters_max(Some(1));
    s.create_stream(T, "a", stream.clone()).unwrap();
    s.create_queue(T, "a", queue.clone()).unwrap();
    let refused = |r: Result<(), Error>| match r {
        Err(Error::CapacityExceeded { scope, limit, used }) => (scope, limit, used),
        other => panic!("expected a refusal, got {other:?}"),
    };
    assert_eq!(
        refused(s.create_stream(T, "b", stream.clone())),
        (Scope::StreamBytesTotal, 100, 60)
    );
    assert_eq!(
        refused(s.create_queue(T, "b", queue.clone())),
        (Scope::QueueBytesTotal, 100, 60)
    );
    s.reconfigure(budget(120)).unwrap();
    s.create_stream(T, "b", stream).unwrap();
    s.create_queue(T, "b", queue).unwrap();
    s.audit().unwrap();
}
