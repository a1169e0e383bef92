//! Values a relay logs or sends print in words: removal events and their
//! parts, health, usage; causes and collections read back from their
//! names.

mod common;

use common::{store, store_with, A, SEC};
use relaystore::events::{Cause, Collection, Gap, Received};
use relaystore::{
    DegradedReason, Health, ParseNameError, RecordKind, StoreConfig, TenantId, TenantQuota,
};
use std::time::Duration;

#[test]
fn causes_and_collections_read_back_from_their_names() {
    let causes: Vec<&str> = Cause::ALL.iter().map(|c| c.name()).collect();
    assert_eq!(
        causes,
        ["expired", "revoked", "cascaded", "released", "consumed", "drained"]
    );
    for cause in Cause::ALL {
        assert_eq!(cause.to_string(), cause.name());
        assert_eq!(cause.name().parse(), Ok(cause));
    }
    for collection in Collection::ALL {
        assert_eq!(collection.to_string(), collection.name());
        assert_eq!(collection.name().parse(), Ok(collection));
    }
    assert_eq!(Collection::Presence.name(), "presence");
    assert_eq!(
        "Expired".parse::<Cause>(),
        Err(ParseNameError { of: "cause" })
    );
    assert_eq!(
        "lease".parse::<Collection>().unwrap_err().to_string(),
        "not the name of a collection"
    );
}

#[test]
fn an_event_prints_as_one_log_line() {
    let (clock, s) = store();
    let events = s.subscribe().unwrap();
    let lease = s.grant(A, "host-a", SEC * 10, None).unwrap().id;
    s.publish(A, lease, "lobby", b"", None).unwrap();
    clock.advance(SEC * 11);
    s.sweep();
    let lines: Vec<String> = std::iter::from_fn(|| events.try_recv())
        .map(|r| r.to_string())
        .collect();
    assert_eq!(
        lines,
        [
            format!("{A}: lease {lease} expired, held by host-a (#1)"),
            format!("{A}: listing lobby cascaded, from lease {lease} expired (#2)"),
        ]
    );
    let lagged = Received::Lagged {
        missed: 3,
        gaps: vec![Gap {
            tenant: TenantId(7),
            from: 4,
            to: 9,
        }],
        every_tenant: false,
    };
    assert_eq!(
        lagged.to_string(),
        "lagged: 3 events missed, of tenant-7 (#4..=#9)"
    );
}

#[test]
fn health_prints_its_state_and_reason() {
    let shown = [
        (Health::Ready, "ready"),
        (
            Health::Degraded {
                reason: DegradedReason::DriverStalled,
            },
            "degraded: expiry driver stalled",
        ),
        (
            Health::Draining {
                remaining: Duration::from_millis(2500),
            },
            "draining: 2.5s left",
        ),
        (Health::Stopped, "stopped"),
    ];
    for (health, text) in shown {
        assert_eq!(health.to_string(), text);
    }
}

#[test]
fn usage_prints_each_figure_by_name() {
    let config = StoreConfig::default()
        .tenant(TenantQuota::default().leases_max(100).presence_max(10))
        .declare(RecordKind::new("permission").per_tenant_max(64));
    let (_clock, s) = store_with(config);
    let lease = s.grant(A, "host-a", SEC * 10, None).unwrap().id;
    s.heartbeat(A, "alice", SEC * 10, None, None).unwrap();
    let perm = s.kind("permission").unwrap();
    s.put_record(A, perm, lease, "10.0.0.1", SEC * 10, None)
        .unwrap();
    let usage = s.usage(A);
    let text = usage.to_string();
    for part in ["leases: 1/100", "presence: 1/10", "kind 0: 1/64"] {
        assert!(text.contains(part), "{part} in {text}");
    }
    let debug = format!("{usage:?}");
    assert!(
        debug.contains("\"leases\": Usage { used: 1, limit: 100 }"),
        "{debug}"
    );
    assert!(!debug.contains("None"), "{debug}");
}
