//! Records of declared kinds (ADR 0080): put, renew, read, list and
//! remove under a lease; each kind's own TTL range and limits; a record
//! goes with its lease, runs out on its own or is removed, each removal
//! announced once with its kind, lease and name.

use super::lifecycle::taken;
use super::{config, ensure, ensure_eq, Harness, Outcome};
use crate::base::collection::Kind;
use crate::base::error::{Error, Scope};
use crate::base::ids::TenantId;
use crate::contract::config::StoreConfig;
use crate::contract::engine::RelayEngine;
use crate::contract::events::{Cause, Collection, RecordId, Root};
use crate::contract::kinds::RecordKind;
use crate::contract::usage::Usage;
use std::time::Duration;

const T: TenantId = TenantId(1);
const OTHER: TenantId = TenantId(2);

/// Two kinds: `permission` (TTLs of 1 to 50 units, two per lease, three
/// per tenant, four in the store) and `channel` (the defaults).
fn kinds(u: Duration) -> StoreConfig {
    config(u)
        .declare(
            RecordKind::new("permission")
                .ttl_min(u)
                .ttl_max(u * 50)
                .per_lease_max(2)
                .per_tenant_max(3)
                .max(4),
        )
        .declare(
            RecordKind::new("channel")
                .ttl_min(u / 100)
                .ttl_max(u * 3600),
        )
}

pub(super) async fn put_get_list_remove<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(kinds(u)).await?;
    let permission = e.kind("permission")?;
    let channel = e.kind("channel")?;
    ensure!(permission != channel, "two kinds, one handle");
    ensure_eq!(
        e.kind("nope").map(drop),
        Err(Error::NotFound),
        "an undeclared name"
    );
    let g = e.grant(T, "alloc", u * 100, None).await?;

    let first = e
        .put_record(T, permission, g.id, "10.0.0.1", u * 30, Some(b"a"))
        .await?;
    let got = e.get_record(T, permission, g.id, "10.0.0.1").await?;
    ensure_eq!(
        (got.kind, got.lease, &*got.name, &*got.attrs, got.version),
        (permission, g.id, "10.0.0.1", &b"a"[..], first.version),
        "a record as put"
    );
    ensure!(
        got.remaining <= u * 30 && got.remaining > u * 20,
        "remaining {:?}",
        got.remaining
    );
    // A put renews (an absolute reset) and, with attributes, replaces them.
    let second = e
        .put_record(T, permission, g.id, "10.0.0.1", u * 40, None)
        .await?;
    ensure!(
        second.version > first.version,
        "a put renews: {first:?} then {second:?}"
    );
    let got = e.get_record(T, permission, g.id, "10.0.0.1").await?;
    ensure_eq!(
        &*got.attrs,
        &b"a"[..],
        "a put without attributes keeps them"
    );
    ensure!(
        got.remaining > u * 30,
        "the put's TTL counts: {:?}",
        got.remaining
    );
    let third = e
        .put_record(T, permission, g.id, "10.0.0.1", u * 40, Some(b"b"))
        .await?;
    let renewed = e
        .renew_record(T, permission, g.id, "10.0.0.1", u * 10)
        .await?;
    ensure!(
        renewed.version > third.version,
        "a renewal moves the version"
    );
    let got = e.get_record(T, permission, g.id, "10.0.0.1").await?;
    ensure_eq!(
        (&*got.attrs, got.version),
        (&b"b"[..], renewed.version),
        "renewed"
    );
    ensure!(
        got.remaining <= u * 10,
        "a renewal is an absolute reset: {:?}",
        got.remaining
    );

    // The same name under another kind, lease or tenant is another record.
    e.put_record(T, channel, g.id, "10.0.0.1", u * 30, Some(b"c"))
        .await?;
    let g2 = e.grant(T, "alloc", u * 100, None).await?;
    e.put_record(T, permission, g2.id, "10.0.0.1", u * 30, Some(b"d"))
        .await?;
    let og = e.grant(OTHER, "alloc", u * 100, None).await?;
    e.put_record(OTHER, permission, og.id, "10.0.0.1", u * 30, Some(b"e"))
        .await?;
    for (tenant, kind, lease, attrs) in [
        (T, permission, g.id, b"b"),
        (T, channel, g.id, b"c"),
        (T, permission, g2.id, b"d"),
        (OTHER, permission, og.id, b"e"),
    ] {
        let got = e.get_record(tenant, kind, lease, "10.0.0.1").await?;
        ensure_eq!(&*got.attrs, &attrs[..], "{tenant:?} {kind} {lease:?}");
    }
    ensure_eq!(
        e.get_record(T, channel, g2.id, "10.0.0.1").await.map(drop),
        Err(Error::NotFound),
        "a record of another kind under another lease"
    );

    // A lease's records of one kind, in the order they were made.
    e.put_record(T, permission, g.id, "10.0.0.2", u * 30, None)
        .await?;
    let listed: Vec<String> = e
        .list_records(T, permission, g.id)
        .await?
        .iter()
        .map(|r| format!("{}={}", &*r.name, String::from_utf8_lossy(&r.attrs)))
        .collect();
    ensure_eq!(
        listed,
        ["10.0.0.1=b", "10.0.0.2="],
        "the lease's permissions"
    );
    ensure_eq!(
        e.list_records(T, channel, g.id).await?.len(),
        1,
        "the lease's channels"
    );

    e.remove_record(T, permission, g.id, "10.0.0.1").await?;
    ensure_eq!(
        e.get_record(T, permission, g.id, "10.0.0.1")
            .await
            .map(drop),
        Err(Error::NotFound),
        "a removed record"
    );
    ensure_eq!(
        e.remove_record(T, permission, g.id, "10.0.0.1").await,
        Err(Error::NotFound),
        "a second removal"
    );
    ensure_eq!(
        e.renew_record(T, permission, g.id, "10.0.0.1", u * 10)
            .await
            .map(drop),
        Err(Error::NotFound),
        "a renewal of a removed record"
    );

    // Bad input is refused and leaves nothing behind.
    let undeclared = Kind::at(7).ok_or_else(|| super::Fault::new("no kind 7".into()))?;
    ensure!(
        matches!(
            e.put_record(T, undeclared, g.id, "x", u * 10, None).await,
            Err(Error::InvalidArgument { .. })
        ),
        "a kind the engine did not declare"
    );
    for ttl in [u / 2, u * 51] {
        ensure!(
            matches!(
                e.put_record(T, permission, g.id, "x", ttl, None).await,
                Err(Error::InvalidArgument { .. })
            ),
            "a TTL of {ttl:?}, outside the kind's range"
        );
    }
    ensure_eq!(
        e.put_record(T, permission, g.id, "", u * 10, None)
            .await
            .map(drop),
        Err(Error::InvalidName),
        "an empty name"
    );
    ensure_eq!(
        e.list_records(T, permission, g.id).await?.len(),
        1,
        "nothing left behind"
    );

    // A record needs a live lease.
    e.revoke(T, g2.id).await?;
    ensure_eq!(
        e.put_record(T, permission, g2.id, "y", u * 10, None)
            .await
            .map(drop),
        Err(Error::Revoked),
        "a put under a revoked lease"
    );
    ensure_eq!(
        e.list_records(T, permission, g2.id).await.map(|r| r.len()),
        Err(Error::NotFound),
        "the records of a revoked lease"
    );
    Ok(())
}

pub(super) async fn limits<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(kinds(u)).await?;
    let permission = e.kind("permission")?;
    let channel = e.kind("channel")?;
    let g = e.grant(T, "alloc", u * 100, None).await?;
    let g2 = e.grant(T, "alloc", u * 100, None).await?;
    e.put_record(T, permission, g.id, "a", u * 30, None).await?;
    e.put_record(T, permission, g.id, "b", u * 30, None).await?;
    ensure_eq!(
        e.put_record(T, permission, g.id, "c", u * 30, None)
            .await
            .map(drop),
        Err(Error::CapacityExceeded {
            scope: Scope::KindParent(permission),
            limit: 2,
            used: 2,
        }),
        "the kind's cap per lease"
    );
    // Another kind counts on its own; a renewal takes no new unit.
    e.put_record(T, channel, g.id, "c", u * 30, None).await?;
    e.put_record(T, permission, g.id, "b", u * 30, None).await?;
    e.put_record(T, permission, g2.id, "c", u * 30, None)
        .await?;
    ensure_eq!(
        e.put_record(T, permission, g2.id, "d", u * 30, None)
            .await
            .map(drop),
        Err(Error::CapacityExceeded {
            scope: Scope::KindTenant(permission),
            limit: 3,
            used: 3,
        }),
        "the kind's tenant quota"
    );
    // Each kind's use of its tenant quota, and none for a kind not declared.
    let usage = e.usage(T).await?;
    ensure_eq!(
        (usage.of_kind(permission), usage.of_kind(channel)),
        (
            Some(Usage { used: 3, limit: 3 }),
            Some(Usage {
                used: 1,
                limit: RecordKind::new("channel").per_tenant_max,
            })
        ),
        "the kinds' usage"
    );
    let undeclared = Kind::at(2).ok_or_else(|| super::Fault::new("no kind 2".into()))?;
    ensure_eq!(
        usage.of_kind(undeclared),
        None,
        "an undeclared kind's usage"
    );
    let og = e.grant(OTHER, "alloc", u * 100, None).await?;
    e.put_record(OTHER, permission, og.id, "a", u * 30, None)
        .await?;
    ensure_eq!(
        e.put_record(OTHER, permission, og.id, "b", u * 30, None)
            .await
            .map(drop),
        Err(Error::CapacityExceeded {
            scope: Scope::KindCeiling(permission),
            limit: 4,
            used: 4,
        }),
        "the kind's store-wide ceiling"
    );
    // A removal gives its units back: the lease's, the tenant's, the store's.
    e.remove_record(T, permission, g.id, "a").await?;
    e.put_record(OTHER, permission, og.id, "b", u * 30, None)
        .await
        .map_err(|err| super::Fault::new(format!("a removal freed no room: {err:?}")))?;
    e.remove_record(OTHER, permission, og.id, "b").await?;
    e.put_record(T, permission, g.id, "a", u * 30, None)
        .await
        .map_err(|err| super::Fault::new(format!("a removal freed no unit: {err:?}")))?;
    // So does a lease's revocation, for every record under it.
    e.revoke(T, g.id).await?;
    e.put_record(T, permission, g2.id, "d", u * 30, None)
        .await
        .map_err(|err| super::Fault::new(format!("a revocation freed no unit: {err:?}")))?;
    Ok(())
}

pub(super) async fn lifecycle<H: Harness>(h: &H) -> Outcome {
    let u = h.unit();
    let e = h.engine(kinds(u)).await?;
    let permission = e.kind("permission")?;
    let channel = e.kind("channel")?;
    let events = e.subscribe_to(&[Collection::Records]).await?;
    let id = |kind, lease, name: &str| RecordId::Record {
        kind,
        lease,
        name: name.into(),
    };

    // A record goes with its lease, the lease its removal's root.
    let g = e.grant(T, "alloc", u * 100, None).await?;
    e.put_record(T, permission, g.id, "p", u * 30, None).await?;
    e.put_record(T, channel, g.id, "0x4000", u * 30, None)
        .await?;
    e.revoke(T, g.id).await?;
    ensure_eq!(
        e.get_record(T, permission, g.id, "p").await.map(drop),
        Err(Error::NotFound),
        "a record of a revoked lease"
    );
    ensure_eq!(
        e.get_record(T, channel, g.id, "0x4000").await.map(drop),
        Err(Error::NotFound),
        "a record of another kind of a revoked lease"
    );
    let mut seen: Vec<(RecordId, Cause, Option<Root>)> = taken(&events)?
        .into_iter()
        .map(|ev| (ev.id, ev.cause, ev.root))
        .collect();
    seen.sort_by_key(|(id, ..)| format!("{id:?}"));
    let root = Some(Root {
        collection: Collection::Leases,
        id: RecordId::Lease(g.id),
        cause: Cause::Revoked,
    });
    let mut want = vec![
        (id(permission, g.id, "p"), Cause::Cascaded, root.clone()),
        (id(channel, g.id, "0x4000"), Cause::Cascaded, root),
    ];
    want.sort_by_key(|(id, ..)| format!("{id:?}"));
    ensure_eq!(seen, want, "the cascade's removals");

    // A record runs out on its own under a live lease, or is removed.
    let g = e.grant(T, "alloc", u * 100, None).await?;
    e.put_record(T, permission, g.id, "short", u, None).await?;
    e.put_record(T, permission, g.id, "long", u * 30, None)
        .await?;
    e.put_record(T, channel, g.id, "gone", u * 30, None).await?;
    e.remove_record(T, channel, g.id, "gone").await?;
    h.advance(u * 2).await;
    let expired = e.get_record(T, permission, g.id, "short").await.map(drop);
    ensure!(
        matches!(expired, Err(Error::Expired | Error::NotFound)),
        "a record past its deadline: {expired:?}"
    );
    ensure!(
        e.get_record(T, permission, g.id, "long").await.is_ok(),
        "its sibling lives"
    );
    let names: Vec<String> = e
        .list_records(T, permission, g.id)
        .await?
        .iter()
        .map(|r| r.name.to_string())
        .collect();
    ensure_eq!(names, ["long"], "the lease's live records");
    let seen: Vec<(RecordId, Cause, Option<Root>)> = taken(&events)?
        .into_iter()
        .map(|ev| (ev.id, ev.cause, ev.root))
        .collect();
    ensure_eq!(
        seen,
        [
            (id(channel, g.id, "gone"), Cause::Released, None),
            (id(permission, g.id, "short"), Cause::Expired, None),
        ],
        "a removal and an expiry, each announced once"
    );
    // A put of an expired name makes a new record.
    let again = e
        .put_record(T, permission, g.id, "short", u * 30, Some(b"n"))
        .await?;
    let got = e.get_record(T, permission, g.id, "short").await?;
    ensure_eq!(
        (got.version, &*got.attrs),
        (again.version, &b"n"[..]),
        "made again"
    );

    // A tenant's revocation takes its records with its leases.
    e.revoke_tenant(T).await?;
    ensure_eq!(
        e.get_record(T, permission, g.id, "long").await.map(drop),
        Err(Error::NotFound),
        "a record of a revoked tenant"
    );
    h.advance(u).await;
    let mut gone: Vec<RecordId> = taken(&events)?.into_iter().map(|ev| ev.id).collect();
    gone.sort_by_key(|id| format!("{id:?}"));
    ensure_eq!(
        gone,
        [id(permission, g.id, "long"), id(permission, g.id, "short")],
        "a tenant revocation's records, announced"
    );

    // While the engine drains, a record is renewed and no new one made.
    let g = e.grant(T, "alloc", u * 100, None).await?;
    e.put_record(T, permission, g.id, "kept", u * 30, None)
        .await?;
    e.begin_drain(u * 10).await?;
    e.put_record(T, permission, g.id, "kept", u * 30, Some(b"k"))
        .await
        .map_err(|err| super::Fault::new(format!("a renewal while draining: {err:?}")))?;
    ensure_eq!(
        e.put_record(T, permission, g.id, "new", u * 30, None)
            .await
            .map(drop),
        Err(Error::Draining),
        "a new record while draining"
    );
    Ok(())
}
