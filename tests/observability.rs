//! What the store reports through `tracing`: refusals (rate-limited, with
//! tenant, scope, limit and use), a stalled driver and its recovery, the
//! start of an incarnation, drains, and the spans of sweeps and tenant
//! revocations. A capturing subscriber records every event and span.

mod common;

use common::ops::*;
use relaystore::events::Collection;
use relaystore::time::ManualClock;
use relaystore::{Error, Scope, Store};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

/// Every event as "LEVEL message field=value ...", and every span opened.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<String>>>);

impl Captured {
    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    fn matching(&self, needle: &str) -> Vec<String> {
        self.lines()
            .into_iter()
            .filter(|l| l.contains(needle))
            .collect()
    }
}

struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, " {value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
}

impl<S: tracing::Subscriber> Layer<S> for Captured {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let mut fields = Fields(event.metadata().level().to_string());
        event.record(&mut fields);
        self.0.lock().unwrap().push(fields.0);
    }

    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: Context<'_, S>,
    ) {
        let mut fields = Fields(format!("SPAN {}", attrs.metadata().name()));
        attrs.record(&mut fields);
        self.0.lock().unwrap().push(fields.0);
    }
}

fn captured<R>(f: impl FnOnce() -> R) -> (R, Captured) {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::registry().with(captured.clone());
    let r = tracing::subscriber::with_default(subscriber, f);
    (r, captured)
}

#[test]
fn refusals_are_logged_with_their_limit_at_most_once_a_second() {
    let ((), log) = captured(|| {
        let (c, s) = store_with(config().tenant(config().tenant.leases_max(1)));
        s.grant(T, "host", SEC * 60, None).unwrap();
        let refused = Err(Error::CapacityExceeded {
            scope: Scope::Tenant(Collection::Leases),
            limit: 1,
            used: 1,
        });
        for _ in 0..5 {
            assert_eq!(s.grant(T, "host", SEC * 60, None).map(drop), refused);
        }
        c.advance(SEC);
        assert_eq!(s.grant(T, "host", SEC * 60, None).map(drop), refused);
    });
    let refusals = log.matching("refused new work");
    assert_eq!(refusals.len(), 2, "{refusals:#?}");
    for field in [
        "tenant=1",
        "scope=tenant quota for leases",
        "limit=1",
        "used=1",
    ] {
        assert!(refusals[0].contains(field), "{field} in {}", refusals[0]);
    }
    assert!(
        refusals[0].contains("refusals_not_logged=0"),
        "{}",
        refusals[0]
    );
    assert!(
        refusals[1].contains("refusals_not_logged=4"),
        "the four left out are counted: {}",
        refusals[1]
    );
}

#[test]
fn a_stalled_driver_is_reported_once_and_so_is_its_recovery() {
    let ((), log) = captured(|| {
        let clock = Arc::new(ManualClock::new());
        let s = Store::new(config(), clock.clone()).unwrap();
        clock.advance(config().driver_stall_max + SEC);
        assert!(matches!(s.health(), relaystore::Health::Degraded { .. }));
        assert!(matches!(s.health(), relaystore::Health::Degraded { .. }));
        s.sweep();
        assert_eq!(s.health(), relaystore::Health::Ready);
    });
    let stalled = log.matching("driver stalled");
    assert_eq!(stalled.len(), 1, "{:#?}", log.lines());
    assert!(stalled[0].starts_with("WARN"), "{}", stalled[0]);
    assert!(
        stalled[0].contains("driver_stall_max_ms="),
        "{}",
        stalled[0]
    );
    assert_eq!(
        log.matching("driver recovered").len(),
        1,
        "{:#?}",
        log.lines()
    );
}

#[test]
fn lifecycle_and_revocations_are_traced() {
    let ((), log) = captured(|| {
        let (c, s) = store();
        s.grant(T, "host", SEC * 60, None).unwrap();
        s.revoke_tenant(T).unwrap();
        s.sweep();
        s.begin_drain(SEC).unwrap();
        c.advance(SEC);
        s.sweep();
    });
    let lines = log.lines();
    let has = |needle: &str| lines.iter().any(|l| l.contains(needle));
    assert!(has("INFO relaystore store started"), "{lines:#?}");
    assert!(has("incarnation="), "{lines:#?}");
    assert!(has("SPAN relaystore_revoke_tenant tenant=1"), "{lines:#?}");
    assert!(has("SPAN relaystore_sweep"), "{lines:#?}");
    assert!(
        has("relaystore draining") && has("window_ms=1000"),
        "{lines:#?}"
    );
    assert!(has("SPAN relaystore_drain_end"), "{lines:#?}");
    assert!(has("relaystore stopped"), "{lines:#?}");
    assert!(has("relaystore drained removed=0"), "{lines:#?}");
}

#[test]
fn stream_and_wake_refusals_are_logged_too() {
    let ((), log) = captured(|| {
        let (c, s) = store_with(config().listeners_per_channel_max(1));
        let full =
            relaystore::stream::StreamConfig::new(1, 64, relaystore::stream::WhenFull::Refuse);
        s.create_stream(T, "log", full).unwrap();
        s.append(T, "log", b"x", None).unwrap();
        assert!(matches!(
            s.append(T, "log", b"y", None),
            Err(Error::CapacityExceeded { .. })
        ));
        c.advance(SEC);
        let _first = s.listen(T, "lobby").unwrap();
        assert!(matches!(
            s.listen(T, "lobby"),
            Err(Error::CapacityExceeded { .. })
        ));
    });
    let refusals = log.matching("refused new work");
    assert_eq!(refusals.len(), 2, "{refusals:#?}");
    assert!(
        refusals[0].contains("scope=stream retention"),
        "{}",
        refusals[0]
    );
    assert!(
        refusals[1].contains("scope=per-channel cap on listeners"),
        "{}",
        refusals[1]
    );
    assert!(
        refusals.iter().all(|r| r.contains("tenant=1")),
        "{refusals:#?}"
    );
}
