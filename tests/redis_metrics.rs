//! The Redis engine's metrics, through a Prometheus recorder: the same
//! series as the in-memory store's, labelled `engine="redis"`, for what a
//! handle sees (its refusals, the removals its calls and its sweeper made,
//! its health probes, its sweeps). One test: the recorder is the
//! process's.

mod redis;

use metrics_exporter_prometheus::PrometheusBuilder;
use redis::{config, instances, on_every_target};
use relaystore::{Error, Health, TenantId, TenantQuota};
use std::time::Duration;

const T: TenantId = TenantId(1);

/// The sum of `name`'s samples whose labels include every one of `labels`.
fn sample(body: &str, name: &str, labels: &[&str]) -> f64 {
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .filter(|(series, _)| {
            let (metric, rest) = series.split_once('{').unwrap_or((series, ""));
            metric == name && labels.iter().all(|want| rest.contains(want))
        })
        .filter_map(|(_, value)| value.parse::<f64>().ok())
        .sum()
}

#[test]
fn a_handle_reports_its_refusals_removals_health_and_sweeps() {
    let handle = PrometheusBuilder::new()
        .install_recorder()
        .expect("no other recorder in this process");
    let redis = "engine=\"redis\"";
    on_every_target("metrics", |target, name| {
        let handle = handle.clone();
        async move {
            let config = config().tenant(TenantQuota::default().leases_max(1));
            let engines = instances(&target, &name, 1, config).await;
            let e = &engines[0];
            let before = handle.render();
            assert!(
                before.contains("# HELP relaystore_removals_total "),
                "{name}: described at connect: {before}"
            );
            let lease = e
                .grant(T, "h", Duration::from_secs(30), None)
                .await
                .unwrap();
            assert!(matches!(
                e.grant(T, "h", Duration::from_secs(30), None).await,
                Err(Error::CapacityExceeded { .. })
            ));
            e.revoke(T, lease.id).await.unwrap();
            assert_eq!(e.health().await, Health::Ready, "{name}");
            // The sweeper loop sweeps every sweep_interval (100 ms here).
            tokio::time::sleep(Duration::from_millis(500)).await;
            let after = handle.render();
            let refused = |b: &str| {
                sample(
                    b,
                    "relaystore_refusals_total",
                    &[redis, "scope=\"tenant\"", "collection=\"leases\""],
                )
            };
            assert_eq!(refused(&after) - refused(&before), 1.0, "{name}: {after}");
            let revoked = |b: &str| {
                sample(
                    b,
                    "relaystore_removals_total",
                    &[redis, "collection=\"leases\"", "cause=\"revoked\""],
                )
            };
            assert_eq!(revoked(&after) - revoked(&before), 1.0, "{name}: {after}");
            assert_eq!(
                sample(&after, "relaystore_health", &[redis, "state=\"ready\""]),
                1.0,
                "{name}: {after}"
            );
            let sweeps = sample(&after, "relaystore_sweep_duration_seconds_count", &[redis]);
            assert!(sweeps > 0.0, "{name}: no sweep reported: {after}");
            assert_eq!(
                sample(&after, "relaystore_removals_total", &["engine=\"memory\""]),
                0.0,
                "{name}: a Redis removal counted as the memory engine's"
            );
        }
    });
}
