//! Interval schedules and their leader: grid-aligned fires, the catch-up
//! cap, leadership by the scheduler lock and its fence. On a `ManualClock`.

mod common;

use common::ops::*;
use relaystore::queue::{JobOptions, QueueConfig};
use relaystore::{Error, Scheduler, Scope, Store, SCHEDULER_LOCK, SCHEDULE_CATCH_UP_MAX};
use std::time::Duration;

const MS: Duration = Duration::from_millis(1);

fn with_queue() -> (std::sync::Arc<relaystore::time::ManualClock>, Store) {
    let (clock, s) = store();
    s.create_queue(T, "ticks", QueueConfig::default()).unwrap();
    (clock, s)
}

fn ready(s: &Store) -> usize {
    s.queue_info(T, "ticks").unwrap().ready
}

#[test]
fn fires_stay_on_the_grid() {
    let (clock, s) = with_queue();
    s.schedule(T, "reconcile", "@every 10s", "ticks", b"go")
        .unwrap();
    let leader = s.try_lead_schedules(T, "r1", SEC * 3600).unwrap().unwrap();
    clock.advance(SEC * 10 - MS);
    assert_eq!(s.run_schedules(&leader).unwrap().fired, 0);
    clock.advance(MS);
    let run = s.run_schedules(&leader).unwrap();
    assert_eq!((run.fired, run.next_in), (1, Some(SEC * 10)));
    // Late runs do not shift the grid: the fire due at 20 s is enqueued at
    // 25 s, and the next one is still due at 30 s.
    clock.advance(SEC * 15);
    let run = s.run_schedules(&leader).unwrap();
    assert_eq!((run.fired, run.next_in), (1, Some(SEC * 5)));
    assert_eq!(s.run_schedules(&leader).unwrap().fired, 0, "fired once");
    assert_eq!(ready(&s), 2);
    let job = s.claim(T, "ticks", "w", None, 1).unwrap().remove(0);
    assert_eq!(job.payload.as_ref(), b"go");
    let listed = s.schedules(T);
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].interval, listed[0].next_in, listed[0].fired),
        (SEC * 10, SEC * 5, 2)
    );
    s.audit().unwrap();
}

#[test]
fn after_a_pause_at_most_64_missed_fires_are_enqueued_then_the_grid_skips() {
    let (clock, s) = with_queue();
    s.schedule(T, "beat", "@every 1s", "ticks", b"").unwrap();
    let leader = s.try_lead_schedules(T, "r1", SEC * 3600).unwrap().unwrap();
    clock.advance(SEC * 100 + MS * 300);
    let run = s.run_schedules(&leader).unwrap();
    assert_eq!(u64::from(SCHEDULE_CATCH_UP_MAX), 64);
    assert_eq!((run.fired, run.skipped), (64, 36));
    assert_eq!(run.next_in, Some(MS * 700), "back on the grid");
    assert_eq!(ready(&s), 64);
}

#[test]
fn a_runner_whose_lock_lapsed_gets_leadership_lost_and_fires_nothing() {
    let (clock, s) = with_queue();
    s.schedule(T, "beat", "@every 1s", "ticks", b"").unwrap();
    let old = s.try_lead_schedules(T, "r1", SEC * 5).unwrap().unwrap();
    assert!(
        s.try_lead_schedules(T, "r2", SEC * 5).unwrap().is_none(),
        "one leader"
    );
    clock.advance(SEC * 6);
    assert_eq!(s.run_schedules(&old), Err(Error::LeadershipLost));
    assert_eq!(ready(&s), 0);
    // A new runner takes over with a higher fence; the old one stays out.
    let new = s.try_lead_schedules(T, "r2", SEC * 5).unwrap().unwrap();
    assert!(new.fence() > old.fence());
    assert_eq!(s.run_schedules(&new).unwrap().fired, 6);
    clock.advance(SEC);
    assert_eq!(s.run_schedules(&old), Err(Error::LeadershipLost));
    assert_eq!(ready(&s), 6);
    // Not the scheduler lock: refused.
    let other = s.try_lock(T, "other", "r1", SEC, None).unwrap().unwrap();
    assert!(matches!(
        s.run_schedules(&other),
        Err(Error::InvalidArgument { .. })
    ));
    assert_eq!(
        s.try_lock(T, SCHEDULER_LOCK, "r3", SEC, None)
            .map(|g| g.is_some()),
        Err(Error::ReservedName),
        "only through try_lead_schedules"
    );
}

#[test]
fn two_competing_schedulers_fire_each_grid_point_once() {
    let (clock, s) = with_queue();
    s.schedule(T, "beat", "@every 2s", "ticks", b"").unwrap();
    let mut a = Scheduler::new(&s, T, "a", SEC * 3);
    let mut b = Scheduler::new(&s, T, "b", SEC * 3);
    let mut fired = 0;
    let mut leaders = Vec::new();
    let mut lost = Vec::new();
    for step in 0..60u32 {
        // a stalls for a while in the middle: b takes over.
        let a_alive = !(20..30).contains(&step);
        for (name, runner, alive) in [("a", &mut a, a_alive), ("b", &mut b, true)] {
            if !alive {
                continue;
            }
            let outcome = match runner.step() {
                Err(Error::LeadershipLost) => {
                    assert!(!runner.is_leader());
                    lost.push((name, step));
                    continue;
                }
                outcome => outcome.unwrap(),
            };
            if let Some(run) = outcome.run {
                fired += run.fired;
                leaders.push(name);
                assert!(outcome.wait <= SEC, "renews within a third of its TTL");
            }
        }
        assert!(
            !(a.is_leader() && b.is_leader()) || (20..30).contains(&step),
            "one leader while both run"
        );
        clock.advance(MS * 500);
    }
    // Steps at 0 s, 0.5 s, ... 29.5 s: grid points 2 s, 4 s, ... 28 s.
    assert_eq!(fired, 14, "each grid point once, across the takeover");
    assert_eq!(lost, [("a", 30)], "a learns it lost the lead when it wakes");
    assert_eq!(ready(&s) as u64, fired);
    assert!(
        leaders.contains(&"a") && leaders.contains(&"b"),
        "{leaders:?}"
    );
}

#[test]
fn a_catch_up_fills_the_room_its_queue_has_and_a_full_queue_leaves_it_due() {
    let (clock, s) = store();
    s.create_queue(
        T,
        "ticks",
        QueueConfig::default().jobs_max(3).dead_letters_max(Some(1)),
    )
    .unwrap();
    s.enqueue(T, "ticks", b"", JobOptions::default()).unwrap();
    s.schedule(T, "beat", "@every 1s", "ticks", b"").unwrap();
    let leader = s.try_lead_schedules(T, "r", SEC * 3600).unwrap().unwrap();
    clock.advance(SEC * 5);
    let run = s.run_schedules(&leader).unwrap();
    assert_eq!(
        (run.fired, run.skipped, run.refused.len()),
        (2, 3, 0),
        "five fires due, room for two: two fire, three are skipped"
    );
    assert_eq!(run.next_in, Some(SEC), "on the grid");
    assert_eq!(ready(&s), 3);
    clock.advance(SEC);
    let run = s.run_schedules(&leader).unwrap();
    assert_eq!(run.fired, 0, "no room");
    assert_eq!(
        run.refused[0].1,
        Error::CapacityExceeded {
            scope: Scope::QueueJobs,
            limit: 3,
            used: 3,
        },
        "refused with the queue's real use"
    );
    let job = s.claim(T, "ticks", "w", None, 1).unwrap().remove(0);
    s.ack(T, "ticks", job.id, job.claim).unwrap();
    clock.advance(SEC);
    let run = s.run_schedules(&leader).unwrap();
    assert_eq!(
        (run.fired, run.skipped),
        (1, 1),
        "still due: the room made is filled, the rest skipped"
    );
}

#[test]
fn specs_intervals_and_bounds_are_checked() {
    let cfg = config()
        .schedules_per_tenant_max(1)
        .schedule_interval_min(SEC)
        .schedule_interval_max(SEC * 3600);
    let (_c, s) = store_with(cfg);
    s.create_queue(T, "ticks", QueueConfig::default()).unwrap();
    for bad in [
        "every 1s",
        "@every 1x",
        "@every 500ms",
        "@every 2h",
        "@every 1m1h",
    ] {
        assert!(
            matches!(
                s.schedule(T, "n", bad, "ticks", b""),
                Err(Error::InvalidArgument { .. })
            ),
            "{bad}"
        );
    }
    assert_eq!(
        s.schedule(T, "n", "@every 1s", "missing", b""),
        Err(Error::NotFound)
    );
    s.schedule(T, "n", "@every 1h", "ticks", b"").unwrap();
    s.schedule(T, "n", "@every 30m", "ticks", b"").unwrap(); // a replacement
    assert_eq!(
        (s.schedule(T, "m", "@every 1s", "ticks", b"")).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::Tenant(
            relaystore::events::Collection::Schedules
        )))
    );
    assert_eq!(s.schedules(T)[0].interval, SEC * 1800);
    s.unschedule(T, "n").unwrap();
    assert_eq!(s.unschedule(T, "n"), Err(Error::NotFound));
    s.schedule(T, "m", "@every 1s", "ticks", b"").unwrap();
    s.audit().unwrap();
}

#[test]
fn a_tenant_whose_schedules_are_gone_leaves_nothing_behind() {
    let (_c, s) = store_with(config().schedules_max(1));
    // Many tenants schedule and unschedule, and some are refused: the
    // store keeps a book only for a tenant holding schedules (the audit
    // reports an empty one).
    for t in 1..=50u64 {
        let t = relaystore::TenantId(t);
        s.create_queue(t, "ticks", small_queue()).unwrap();
        s.schedule(t, "beat", "@every 1s", "ticks", b"").unwrap();
        let other = relaystore::TenantId(t.0 + 1000);
        s.create_queue(other, "ticks", small_queue()).unwrap();
        assert_eq!(
            s.schedule(other, "beat", "@every 1s", "ticks", b"")
                .map_err(|e| e.capacity_scope()),
            Err(Some(Scope::Collection(
                relaystore::events::Collection::Schedules
            )))
        );
        s.audit().unwrap();
        s.unschedule(t, "beat").unwrap();
        s.audit().unwrap();
        assert!(s.schedules(t).is_empty());
    }
}

fn small_queue() -> QueueConfig {
    QueueConfig::default()
        .jobs_max(8)
        .bytes_max(64)
        .dead_letters_max(Some(1))
}
