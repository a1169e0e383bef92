//! The store's metrics through a Prometheus recorder, scraped over HTTP on
//! loopback: counters and gauges move as operations happen. One test: the
//! recorder is the process's.

#[path = "../examples/support/http.rs"]
mod http;

use relaystore::time::ManualClock;
use relaystore::{Error, Store, StoreConfig, TenantId, TenantQuota};
use std::sync::Arc;
use std::time::Duration;

const T: TenantId = TenantId(1);
const SEC: Duration = Duration::from_secs(1);

#[test]
fn counters_and_gauges_move_as_operations_happen() {
    let handle = http::install_recorder();
    let clock = Arc::new(ManualClock::new());
    let config = StoreConfig::default()
        .tenant(TenantQuota::default().leases_max(3))
        .subscriber_buffer_max(2);
    let store = Store::new(config, clock.clone()).unwrap();
    // A subscriber that never reads: its backlog grows to its buffer, and
    // then events are dropped for it.
    let slow = store
        .subscribe_to(&[relaystore::events::Collection::Leases])
        .unwrap();
    let addr = http::serve(store.clone(), handle, 0).unwrap();
    let scrape = || {
        let (status, body) = http::get(addr, "/metrics").unwrap();
        assert_eq!(status, 200);
        body
    };
    let admitted =
        |b: &str| http::sample(b, "relaystore_admissions_total", &["collection=\"leases\""]);
    let refused = |b: &str| {
        http::sample(
            b,
            "relaystore_refusals_total",
            &["scope=\"tenant\"", "collection=\"leases\""],
        )
    };
    let removed = |b: &str, cause: &str| {
        let cause = format!("cause=\"{cause}\"");
        http::sample(
            b,
            "relaystore_removals_total",
            &["collection=\"leases\"", &cause],
        )
    };
    let held = |b: &str| http::sample(b, "relaystore_records", &["collection=\"leases\""]);

    let before = scrape();
    // Described, and present at 0 before anything happened to them.
    for name in [
        "relaystore_admissions_total",
        "relaystore_removals_total",
        "relaystore_records",
        "relaystore_health",
        "relaystore_events_dropped_total",
    ] {
        assert!(
            before.contains(&format!("# HELP {name} ")),
            "{name}: {before}"
        );
    }
    // A series is there at 0, not merely absent (which `sample` reads as 0).
    let series = |b: &str, name: &str, labels: &[&str]| {
        b.lines()
            .find(|l| {
                l.strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with('{'))
                    && labels.iter().all(|want| l.contains(want))
            })
            .map(|l| l.rsplit_once(' ').map(|(_, v)| v.to_owned()))
    };
    assert_eq!(
        series(
            &before,
            "relaystore_admissions_total",
            &["collection=\"queues\""]
        ),
        Some(Some("0".to_owned())),
        "a collection nothing was created in: {before}"
    );
    assert_eq!(
        series(
            &before,
            "relaystore_removals_total",
            &["collection=\"locks\"", "cause=\"drained\""]
        ),
        Some(Some("0".to_owned()))
    );
    assert!(series(&before, "relaystore_health", &["state=\"stopped\""]).is_some());
    let leases: Vec<_> = (0..3)
        .map(|i| store.grant(T, &format!("h{i}"), SEC * 10, None).unwrap())
        .collect();
    assert!(matches!(
        store.grant(T, "h3", SEC * 10, None),
        Err(Error::CapacityExceeded { .. })
    ));
    store.revoke(T, leases[0].id).unwrap();
    store.sweep();
    let after = scrape();
    assert_eq!(admitted(&after) - admitted(&before), 3.0, "{after}");
    assert_eq!(refused(&after) - refused(&before), 1.0, "{after}");
    assert_eq!(
        removed(&after, "revoked") - removed(&before, "revoked"),
        1.0
    );
    assert_eq!(held(&after), 2.0, "the gauge after a sweep");
    assert!(http::sample(&after, "relaystore_sweep_removed_count", &[]) >= 1.0);
    let gauge = |b: &str, name: &str| http::sample(b, name, &[]);
    let dropped = |b: &str| http::sample(b, "relaystore_events_dropped_total", &[]);
    assert_eq!(gauge(&after, "relaystore_subscribers"), 1.0, "{after}");
    assert_eq!(gauge(&after, "relaystore_subscriber_backlog"), 1.0);

    clock.advance(SEC * 10);
    store.sweep();
    let expired = scrape();
    assert_eq!(
        removed(&expired, "expired") - removed(&after, "expired"),
        2.0
    );
    assert_eq!(held(&expired), 0.0);
    // Three events for a buffer of two: one dropped, two waiting.
    assert_eq!(gauge(&expired, "relaystore_subscriber_backlog"), 2.0);
    assert_eq!(dropped(&expired) - dropped(&after), 1.0, "{expired}");
    assert_eq!(slow.try_recv_all().len(), 3, "two events and a lag report");
    // Two expired records, each removed at its deadline on the manual clock.
    let lags = http::sample(&expired, "relaystore_expiry_lag_seconds_count", &[]);
    assert_eq!(lags, 2.0, "{expired}");
    let late = http::sample(&expired, "relaystore_expiry_lag_seconds_sum", &[]);
    assert_eq!(late, 0.0);
    // Histograms, not summaries, with the documented buckets: both lags
    // fall in the first bucket (0.001 s), as they are 0 here.
    assert_eq!(
        http::sample(
            &expired,
            "relaystore_expiry_lag_seconds_bucket",
            &["le=\"0.001\""]
        ),
        2.0,
        "{expired}"
    );
    assert!(
        expired.contains("relaystore_sweep_duration_seconds_bucket{engine=\"memory\",le=\"+Inf\"}"),
        "{expired}"
    );
    assert!(!expired.contains("relaystore_expiry_lag_seconds{quantile="));
    let state =
        |b: &str, s: &str| http::sample(b, "relaystore_health", &[&format!("state=\"{s}\"")]);
    assert_eq!(
        ["ready", "degraded", "draining", "stopped"].map(|s| state(&expired, s)),
        [1.0, 0.0, 0.0, 0.0]
    );

    store.begin_drain(SEC).unwrap();
    store.sweep();
    let draining = scrape();
    assert_eq!(
        ["ready", "degraded", "draining", "stopped"].map(|s| state(&draining, s)),
        [0.0, 0.0, 1.0, 0.0],
        "draining"
    );
    let (status, _) = http::get(addr, "/ready").unwrap();
    assert_eq!(status, 503, "not ready while draining");
}
