//! Work that must happen at least once, with bounded retries: when a relay
//! session ends, the relay enqueues the cleanup of its allocations on a
//! media server (unique per port, so a repeated "session ended" signal
//! makes no second job) and puts a "session ended" message on its outbox
//! for the matchmaker; a worker processes the cleanup with retries,
//! extends its claim (a heartbeat) while a slow teardown runs, and a flaky
//! allocation ends up as a dead letter an operator can see. The session's
//! usage records go to a stream that two billing workers share through a
//! consumer group: when one dies holding records, the other takes them
//! over once they are idle, and a record no worker can bill is marked
//! dead after three deliveries for an operator. Meanwhile two
//! relay instances compete to run a 30-second reconciliation schedule: one
//! leads, and when it stalls the other takes over, with every grid point
//! fired once. On a `ManualClock`, so every run prints the same thing.
//!
//! ```text
//! cargo run --example session_cleanup
//! ```

use relaystore::queue::{Failed, JobOptions, QueueConfig, Unique};
use relaystore::stream::{GroupConfig, GroupStart, StreamConfig, WhenFull};
use relaystore::time::ManualClock;
use relaystore::{Scheduler, Store, StoreConfig, TenantId};
use std::sync::Arc;
use std::time::Duration;

const RELAY: TenantId = TenantId(3);
const SEC: Duration = Duration::from_secs(1);

fn main() -> Result<(), relaystore::Error> {
    let clock = Arc::new(ManualClock::new());
    let store = Store::new(StoreConfig::default(), clock.clone())?;
    let cleanup = QueueConfig::default()
        .attempts_max(3)
        .visibility(SEC * 30)
        .jitter_seed(Some(2026));
    store.create_queue(RELAY, "cleanup", cleanup)?;
    store.create_queue(RELAY, "reconcile", QueueConfig::default())?;

    // The session ends: one cleanup job per allocation, and a message.
    // The signal comes twice (a retried call): the jobs are unique by
    // port, so the second time each enqueue names the job already there.
    for signal in 1..=2 {
        for port in [4000, 4001, 4002] {
            let payload = format!("free port {port}");
            let unique = Unique::key(&format!("free-{port}"));
            let options = JobOptions::default().with_unique(unique);
            match store.enqueue(RELAY, "cleanup", payload.as_bytes(), options) {
                Ok(_) => println!("relay: session s-17 ended; enqueued {payload:?}"),
                Err(relaystore::Error::DuplicateJob { existing }) => {
                    let held = store.job(RELAY, "cleanup", existing)?;
                    let what = String::from_utf8_lossy(&held.payload);
                    println!(
                        "relay: signal {signal}: already queued: {what:?}, {:?}",
                        held.state
                    );
                }
                Err(e) => return Err(e),
            }
        }
    }
    store.outbox_put(RELAY, "session.ended", b"s-17", None)?;

    // The matchmaker is reachable: the outbox message is delivered.
    let run = store.outbox_run_once(RELAY, "relay-a", 10, |m| {
        println!(
            "outbox: delivered {:?} {:?} to the matchmaker",
            m.topic,
            String::from_utf8_lossy(&m.payload)
        );
        Ok::<_, String>(())
    })?;
    assert_eq!(run.delivered, 1);

    // The worker: port 4001's media server fails once, port 4002's always.
    let mut failures_4001 = 0;
    for round in 1..=6 {
        for job in store.claim(RELAY, "cleanup", "worker-1", None, 10)? {
            let what = String::from_utf8_lossy(&job.payload).into_owned();
            let fails = match what.as_str() {
                "free port 4001" => {
                    failures_4001 += 1;
                    failures_4001 == 1
                }
                "free port 4002" => true,
                _ => false,
            };
            if !fails {
                if what == "free port 4000" {
                    // A slow teardown: the claim is extended before its
                    // 30 s visibility lapses, without using an attempt.
                    let held = store.extend_claim(RELAY, "cleanup", job.id, job.claim, None)?;
                    println!("worker (round {round}): {what}: slow; claim extended by {held:?}");
                }
                store.ack(RELAY, "cleanup", job.id, job.claim)?;
                println!(
                    "worker (round {round}): {what}: done (attempt {})",
                    job.attempt
                );
                continue;
            }
            match store.fail(RELAY, "cleanup", job.id, job.claim, "media server said 503")? {
                Failed::RetryIn(after) => println!(
                    "worker (round {round}): {what}: failed (attempt {}), retry in {after:?}",
                    job.attempt
                ),
                Failed::DeadLettered => {
                    println!("worker (round {round}): {what}: failed its last attempt; dead letter")
                }
            }
        }
        clock.advance(SEC * 20);
        store.sweep();
    }
    for dead in store.dead_letters(RELAY, "cleanup", None, 10)? {
        println!(
            "operator: dead letter {:?} after {} attempts: {}",
            String::from_utf8_lossy(&dead.payload),
            dead.attempts,
            dead.reason
        );
    }

    // Usage records, billed by whichever billing worker gets them.
    let usage = StreamConfig::new(1024, 1 << 16, WhenFull::Refuse);
    store.create_stream(RELAY, "usage", usage)?;
    let billing = GroupConfig::new(GroupStart::Oldest, 256, 3);
    store.create_group(RELAY, "usage", "billing", billing)?;
    for record in ["s-17 4000 1.2MB", "s-17 4001 800KB", "s-17 4002 ???"] {
        store.append(RELAY, "usage", record.as_bytes(), None)?;
    }
    let one = store.join_group(RELAY, "usage", "billing", "billing-1")?;
    let two = store.join_group(RELAY, "usage", "billing", "billing-2")?;
    let held = one.try_next(2)?.entries;
    println!(
        "billing-1: took {} records, then its process died",
        held.len()
    );
    let read = two.try_next(10)?;
    for entry in read.entries {
        // "???" cannot be billed: left pending, to be tried again.
        if !entry.payload.ends_with(b"???") {
            two.ack(&[entry.offset])?;
        }
    }
    for round in 1..=4 {
        clock.advance(SEC * 60);
        let claimed = two.claim_idle(SEC * 60, 10)?;
        for entry in &claimed.entries {
            let what = String::from_utf8_lossy(&entry.payload).into_owned();
            if what.ends_with("???") {
                println!(
                    "billing-2 (round {round}): {what:?}: unbillable (delivery {})",
                    entry.deliveries
                );
            } else {
                two.ack(&[entry.offset])?;
                println!(
                    "billing-2 (round {round}): took over {what:?} (delivery {}); billed",
                    entry.deliveries
                );
            }
        }
        for offset in claimed.dead {
            println!("billing-2 (round {round}): record {offset} delivered 3 times: dead");
        }
    }
    for pending in store.pending(RELAY, "usage", "billing", 0, 10)? {
        assert!(pending.dead);
        println!(
            "operator: dead usage record {} (last with {}), set aside and acknowledged",
            pending.offset, pending.member
        );
        store.ack_group(RELAY, "usage", "billing", &[pending.offset])?;
    }
    assert_eq!(store.group_info(RELAY, "usage", "billing")?.pending, 0);

    // Reconciliation every 30 s by exactly one of two relay instances.
    store.schedule(RELAY, "reconcile", "@every 30s", "reconcile", b"all")?;
    let mut relay_a = Scheduler::new(&store, RELAY, "relay-a", SEC * 15);
    let mut relay_b = Scheduler::new(&store, RELAY, "relay-b", SEC * 15);
    for tick in 0..=36 {
        let now = tick * 5;
        // relay-a stalls from 60 s to 100 s (a long GC pause, say).
        let a_runs = !(60..100).contains(&now);
        for (name, runner, runs) in [
            ("relay-a", &mut relay_a, a_runs),
            ("relay-b", &mut relay_b, true),
        ] {
            if !runs {
                continue;
            }
            let step = match runner.step() {
                Ok(step) => step,
                // Its lock lapsed while it stalled, and the other leads.
                Err(relaystore::Error::LeadershipLost) => {
                    println!("scheduler: at {now:>3} s {name} lost the lead");
                    continue;
                }
                Err(e) => return Err(e),
            };
            if let Some(run) = step.run {
                if run.fired > 0 {
                    println!(
                        "scheduler: at {now:>3} s {name} fired {} reconcile job(s)",
                        run.fired
                    );
                }
            }
        }
        clock.advance(SEC * 5);
    }
    let jobs = store.queue_info(RELAY, "reconcile")?.ready;
    println!("scheduler: {jobs} reconcile jobs for 180 s at one per 30 s");
    assert_eq!(jobs, 6);
    Ok(())
}
