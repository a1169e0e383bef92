//! What both engines report through the `metrics` facade (feature
//! `metrics`, on by default), each series labelled with its `engine`. Without a recorder installed a per-record call is a look
//! at the facade's recorder slots and nothing else (its key is built once,
//! not per call); with the feature off, nothing at all. The metrics, their
//! labels and the histograms' buckets are documented in the public module
//! `relaystore::metrics` (`src/lib.rs`), which a unit test here holds to
//! the names this module describes.

use crate::base::error::Scope;
use crate::contract::events::{Cause, Collection};
use crate::contract::lifecycle::Health;

/// Every histogram the store records, with the upper bounds of the
/// buckets it is meant to be exported with (in the metric's own unit,
/// ascending; an exporter adds `+Inf`).
#[cfg(feature = "metrics")]
pub const HISTOGRAMS: [(&str, &[f64]); 3] = [
    (
        "relaystore_sweep_duration_seconds",
        &[
            0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1,
            0.25, 0.5, 1.0,
        ],
    ),
    (
        "relaystore_sweep_removed",
        &[
            0.0,
            1.0,
            4.0,
            16.0,
            64.0,
            256.0,
            1024.0,
            4096.0,
            16384.0,
            65536.0,
            262_144.0,
            1_048_576.0,
        ],
    ),
    (
        "relaystore_expiry_lag_seconds",
        &[
            0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
        ],
    ),
];

/// The engine a metric comes from: its `engine` label, on every series,
/// so a process that runs both engines tells them apart.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum EngineLabel {
    /// The in-memory store.
    Memory = 0,
    /// A Redis engine handle.
    #[allow(dead_code)] // Without the `redis` feature.
    Redis = 1,
}

impl EngineLabel {
    #[allow(dead_code)] // Read by the label test, and by the build without the feature.
    const ALL: [EngineLabel; 2] = [EngineLabel::Memory, EngineLabel::Redis];

    /// The label value.
    #[allow(dead_code)] // Read by the label test, and by the build without the feature.
    fn name(self) -> &'static str {
        match self {
            EngineLabel::Memory => "memory",
            EngineLabel::Redis => "redis",
        }
    }
}

/// A health's number, as `relaystore_health`'s `state` label is indexed.
pub(crate) fn health_state(health: &Health) -> u8 {
    match health {
        Health::Ready => 0,
        Health::Degraded { .. } => 1,
        Health::Draining { .. } => 2,
        _ => 3,
    }
}

/// The label value of a collection.
fn collection(c: Collection) -> &'static str {
    c.name()
}

/// A scope's kind and collection, as label values.
fn scope_labels(scope: Scope) -> (&'static str, &'static str) {
    match scope {
        Scope::Collection(c) => ("collection", collection(c)),
        Scope::Tenant(c) => ("tenant", collection(c)),
        Scope::Holder(c) => ("holder", collection(c)),
        Scope::Parent(c) => ("parent", collection(c)),
        Scope::Tenants => ("tenants", ""),
        Scope::Subscribers => ("subscribers", ""),
        Scope::Listeners => ("listeners", ""),
        Scope::ChannelListeners => ("channel_listeners", ""),
        Scope::TenantChannels => ("tenant_channels", ""),
        Scope::StreamEntries => ("stream_entries", "streams"),
        Scope::StreamConsumers => ("stream_consumers", "streams"),
        Scope::StreamGroupPending => ("stream_group_pending", "streams"),
        Scope::StreamBytesTotal => ("stream_bytes_total", "streams"),
        Scope::StreamEntriesTotal => ("stream_entries_total", "streams"),
        Scope::QueueJobs => ("queue_jobs", "queues"),
        Scope::QueueBytes => ("queue_bytes", "queues"),
        Scope::QueueDeadLetters => ("queue_dead_letters", "queues"),
        Scope::QueueUniqueKeys => ("queue_unique_keys", "queues"),
        Scope::QueueJobsTotal => ("queue_jobs_total", "queues"),
        Scope::QueueBytesTotal => ("queue_bytes_total", "queues"),
        Scope::Named(name) => (name, ""),
        Scope::KindCeiling(_) => ("collection", collection(Collection::Records)),
        Scope::KindTenant(_) => ("tenant", collection(Collection::Records)),
        Scope::KindParent(_) => ("parent", collection(Collection::Records)),
    }
}

#[allow(dead_code)] // Read by the label test, and by the build without the feature.
fn cause(c: Cause) -> &'static str {
    c.name()
}

#[cfg(feature = "metrics")]
mod on {
    use super::*;
    use metrics::{Key, Label, Level, Metadata};
    use std::time::Duration;

    // Labels are static parts, so neither building a key nor a call
    // allocates, whether or not a recorder is installed.
    const CAUSES: [Cause; 6] = Cause::ALL;
    static META: Metadata<'static> =
        Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

    /// The keys the per-record calls report under, built once. Building a
    /// key hashes its name and labels (about 170 instructions), which was
    /// most of what a call cost with no recorder installed; a built key is
    /// only read.
    struct Keys {
        /// `relaystore_admissions_total`, by collection.
        admissions: Vec<Key>,
        /// `relaystore_removals_total`, by collection and cause
        /// (`collection * CAUSES.len() + cause_index`).
        removals: Vec<Key>,
        /// `relaystore_records`, by collection.
        records: Vec<Key>,
    }

    static KEYS: std::sync::OnceLock<[Keys; 2]> = std::sync::OnceLock::new();

    /// The keys of `engine`'s series.
    fn keys(engine: EngineLabel) -> &'static Keys {
        &KEYS.get_or_init(|| EngineLabel::ALL.map(Keys::of))[engine as usize]
    }

    impl Keys {
        fn of(engine: EngineLabel) -> Keys {
            // Every label comes from the enums' own names, so no engine,
            // collection or cause can be left out or misspelled.
            let by_collection = |name: &'static str| {
                Collection::ALL
                    .iter()
                    .map(|&c| {
                        let labels = vec![
                            Label::new("engine", engine.name()),
                            Label::new("collection", collection(c)),
                        ];
                        Key::from_parts(name, labels)
                    })
                    .collect()
            };
            Keys {
                admissions: by_collection("relaystore_admissions_total"),
                removals: Collection::ALL
                    .iter()
                    .flat_map(|&c| {
                        CAUSES.iter().map(move |&why| {
                            Key::from_parts(
                                "relaystore_removals_total",
                                vec![
                                    Label::new("engine", engine.name()),
                                    Label::new("collection", collection(c)),
                                    Label::new("cause", cause(why)),
                                ],
                            )
                        })
                    })
                    .collect(),
                records: by_collection("relaystore_records"),
            }
        }
    }

    fn cause_index(why: Cause) -> usize {
        CAUSES.iter().position(|&c| c == why).unwrap_or(0)
    }

    #[cfg(test)]
    #[test]
    fn built_keys_carry_their_name_and_labels() {
        let label = |k: &Key, name: &str| {
            k.labels()
                .find(|l| l.key() == name)
                .map(|l| l.value().to_owned())
        };
        for engine in EngineLabel::ALL {
            let keys = keys(engine);
            let engine = Some(engine.name());
            for c in Collection::ALL {
                let (admitted, held) = (&keys.admissions[c as usize], &keys.records[c as usize]);
                assert_eq!(admitted.name(), "relaystore_admissions_total");
                assert_eq!(held.name(), "relaystore_records");
                for k in [admitted, held] {
                    assert_eq!(label(k, "collection").as_deref(), Some(collection(c)));
                    assert_eq!(label(k, "engine").as_deref(), engine);
                }
                for why in CAUSES {
                    let k = &keys.removals[c as usize * CAUSES.len() + cause_index(why)];
                    assert_eq!(k.name(), "relaystore_removals_total");
                    assert_eq!(label(k, "collection").as_deref(), Some(collection(c)));
                    assert_eq!(label(k, "cause").as_deref(), Some(cause(why)));
                    assert_eq!(label(k, "engine").as_deref(), engine);
                }
            }
        }
    }

    pub(crate) fn admission(engine: EngineLabel, c: Collection) {
        let k = &keys(engine).admissions[c as usize];
        metrics::with_recorder(|r| r.register_counter(k, &META)).increment(1);
    }

    /// Refusals are the rare path: their labels are built per call.
    pub(crate) fn refusal(engine: EngineLabel, scope: Scope) {
        let (kind, c) = scope_labels(scope);
        let e = engine.name();
        metrics::counter!("relaystore_refusals_total", "engine" => e, "scope" => kind, "collection" => c)
            .increment(1);
    }

    pub(crate) fn removal(engine: EngineLabel, c: Collection, why: Cause) {
        let k = &keys(engine).removals[c as usize * CAUSES.len() + cause_index(why)];
        metrics::with_recorder(|r| r.register_counter(k, &META)).increment(1);
    }

    pub(crate) fn records(engine: EngineLabel, c: Collection, held: u64) {
        let k = &keys(engine).records[c as usize];
        metrics::with_recorder(|r| r.register_gauge(k, &META)).set(held as f64);
    }

    /// A sweep: how long it took, and (where the engine counts them) how
    /// many records it removed.
    pub(crate) fn sweep(engine: EngineLabel, took: Duration, removed: Option<usize>) {
        let e = engine.name();
        metrics::histogram!("relaystore_sweep_duration_seconds", "engine" => e)
            .record(took.as_secs_f64());
        if let Some(removed) = removed {
            metrics::histogram!("relaystore_sweep_removed", "engine" => e).record(removed as f64);
        }
    }

    pub(crate) fn events_dropped(engine: EngineLabel, n: u64) {
        metrics::counter!("relaystore_events_dropped_total", "engine" => engine.name())
            .increment(n);
    }

    /// Once per removed record: the labels are literals, so the key is a
    /// static (a label computed per call builds the key, and allocates
    /// its label list, on every removal).
    pub(crate) fn expiry_lag(engine: EngineLabel, late: Duration) {
        let lag = match engine {
            EngineLabel::Memory => {
                metrics::histogram!("relaystore_expiry_lag_seconds", "engine" => "memory")
            }
            EngineLabel::Redis => {
                metrics::histogram!("relaystore_expiry_lag_seconds", "engine" => "redis")
            }
        };
        lag.record(late.as_secs_f64());
    }

    pub(crate) fn health(engine: EngineLabel, state: u8) {
        let e = engine.name();
        for (i, name) in HEALTH_STATES.iter().enumerate() {
            let on = usize::from(state) == i;
            metrics::gauge!("relaystore_health", "engine" => e, "state" => *name).set(if on {
                1.0
            } else {
                0.0
            });
        }
    }

    /// The `state` label of `relaystore_health`, by the state's number.
    const HEALTH_STATES: [&str; 4] = ["ready", "degraded", "draining", "stopped"];

    /// Describes every metric to the installed recorder (its help text and
    /// unit: Prometheus's `# HELP`) and makes every counter and gauge
    /// series exist at 0, so a dashboard sees them before the first event.
    pub(crate) fn announce(engine: EngineLabel) {
        use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
        describe_counter!(
            "relaystore_admissions_total",
            Unit::Count,
            "Records created, by collection."
        );
        describe_counter!("relaystore_refusals_total", Unit::Count, "Creations refused at a limit (CapacityExceeded), by the kind of limit and the collection it bounds.");
        describe_counter!(
            "relaystore_removals_total",
            Unit::Count,
            "Records removed, by collection and cause."
        );
        describe_gauge!(
            "relaystore_records",
            Unit::Count,
            "Records held, by collection (set by the sweep at most once a second)."
        );
        describe_histogram!(
            "relaystore_sweep_duration_seconds",
            Unit::Seconds,
            "Time each sweep took."
        );
        describe_histogram!(
            "relaystore_sweep_removed",
            Unit::Count,
            "Records each sweep removed."
        );
        describe_histogram!(
            "relaystore_expiry_lag_seconds",
            Unit::Seconds,
            "Per expired record, from its deadline to its removal."
        );
        describe_counter!(
            "relaystore_events_dropped_total",
            Unit::Count,
            "Removal events dropped for a subscriber that fell behind."
        );
        describe_gauge!(
            "relaystore_subscribers",
            Unit::Count,
            "Event subscriptions held."
        );
        describe_gauge!(
            "relaystore_subscriber_backlog",
            Unit::Count,
            "The most events buffered for one subscriber: the slowest reader's lag."
        );
        describe_gauge!(
            "relaystore_health",
            Unit::Count,
            "1 for the store's state (ready, degraded, draining, stopped), 0 for the others."
        );
        let keys = keys(engine);
        for c in Collection::ALL {
            metrics::with_recorder(|r| r.register_counter(&keys.admissions[c as usize], &META))
                .increment(0);
            // Registered, not set: another store of the process may have
            // set it already.
            metrics::with_recorder(|r| r.register_gauge(&keys.records[c as usize], &META))
                .increment(0.0);
        }
        for k in &keys.removals {
            metrics::with_recorder(|r| r.register_counter(k, &META)).increment(0);
        }
        let e = engine.name();
        metrics::counter!("relaystore_events_dropped_total", "engine" => e).increment(0);
        metrics::gauge!("relaystore_subscribers", "engine" => e).increment(0.0);
        metrics::gauge!("relaystore_subscriber_backlog", "engine" => e).increment(0.0);
        for name in HEALTH_STATES {
            metrics::gauge!("relaystore_health", "engine" => e, "state" => name).increment(0.0);
        }
    }

    pub(crate) fn subscribers(engine: EngineLabel, held: usize, backlog: usize) {
        let e = engine.name();
        metrics::gauge!("relaystore_subscribers", "engine" => e).set(held as f64);
        metrics::gauge!("relaystore_subscriber_backlog", "engine" => e).set(backlog as f64);
    }
}

#[cfg(not(feature = "metrics"))]
mod on {
    use super::*;
    use std::time::Duration;

    pub(crate) fn admission(_: EngineLabel, _: Collection) {}
    pub(crate) fn refusal(_: EngineLabel, _: Scope) {}
    pub(crate) fn removal(_: EngineLabel, _: Collection, _: Cause) {}
    pub(crate) fn records(_: EngineLabel, _: Collection, _: u64) {}
    pub(crate) fn sweep(_: EngineLabel, _: Duration, _: Option<usize>) {}
    pub(crate) fn events_dropped(_: EngineLabel, _: u64) {}
    pub(crate) fn expiry_lag(_: EngineLabel, _: Duration) {}
    pub(crate) fn health(_: EngineLabel, _: u8) {}
    pub(crate) fn announce(_: EngineLabel) {}
    pub(crate) fn subscribers(_: EngineLabel, _: usize, _: usize) {}

    // Keep the label helpers compiled (and checked) without the feature.
    #[allow(dead_code)]
    fn labels() -> [&'static str; 4] {
        [
            collection(Collection::Leases),
            scope_labels(Scope::Tenants).0,
            cause(Cause::Expired),
            EngineLabel::Memory.name(),
        ]
    }
}

pub(crate) use on::*;

#[cfg(all(test, feature = "metrics", not(relaystore_loom)))]
mod tests {
    use super::HISTOGRAMS;

    /// The names in the public table (`relaystore::metrics`, in
    /// `src/lib.rs`), with their kinds.
    fn documented() -> Vec<(String, String)> {
        let doc = include_str!("../lib.rs");
        doc.lines()
            .filter_map(|line| {
                let row = line.trim_start().strip_prefix("//! | `relaystore_")?;
                let (name, rest) = row.split_once("` | ")?;
                let kind = rest.split(" |").next()?;
                Some((format!("relaystore_{name}"), kind.to_owned()))
            })
            .collect()
    }

    /// The names this module describes to the recorder, with their kinds.
    fn described() -> Vec<(String, String)> {
        let code = include_str!("metrics.rs");
        let mut found = Vec::new();
        for kind in ["counter", "gauge", "histogram"] {
            let call = format!("describe_{kind}!(");
            for part in code.split(&call).skip(1) {
                let name = part.split('"').nth(1).expect("a quoted name");
                if name.starts_with("relaystore_") {
                    found.push((name.to_owned(), kind.to_owned()));
                }
            }
        }
        found
    }

    #[test]
    fn the_public_table_lists_every_described_metric_and_its_kind() {
        let mut doc = documented();
        let mut code = described();
        doc.sort();
        code.sort();
        assert!(!code.is_empty());
        assert_eq!(doc, code);
        let histograms: Vec<&str> = code
            .iter()
            .filter(|(_, kind)| kind == "histogram")
            .map(|(name, _)| name.as_str())
            .collect();
        let mut bucketed: Vec<&str> = HISTOGRAMS.iter().map(|(name, _)| *name).collect();
        bucketed.sort_unstable();
        assert_eq!(bucketed, histograms, "every histogram has its buckets");
        for (name, buckets) in HISTOGRAMS {
            assert!(
                buckets.windows(2).all(|w| w[0] < w[1]),
                "{name}'s buckets ascend"
            );
        }
    }
}
