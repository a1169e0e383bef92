//! The driver: runs the same operations on the real store and on the
//! reference model and compares every outcome.

use super::ops::*;
use super::reference::Model;
use super::*;
use relaystore::stream::{GroupConfig, GroupStart, StreamConfig, WhenFull};
use relaystore::time::ManualClock;
use relaystore::{AttemptId, JoinTicket, LeaseId, Store, TenantId};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// Runs `ops` on a fresh store and a fresh model; returns the first step at
/// which they disagree, with both outcomes.
pub fn run(ops: &[Op]) -> Result<(), String> {
    run_with_model_grace(ops, GRACE_MS)
}

/// [`run`], with a model whose replay grace is `grace_ms` (a wrong value is
/// a deliberate fault, to show the comparison catches it).
pub fn run_with_model_grace(ops: &[Op], grace_ms: u64) -> Result<(), String> {
    let clock = Arc::new(ManualClock::new());
    let store = Store::new(config(), clock.clone()).map_err(|e| e.to_string())?;
    let mut model = Model::with_grace(grace_ms);
    let mut leases: Vec<LeaseId> = Vec::new();
    let mut tickets: Vec<JoinTicket> = Vec::new();
    // Per acquisition index (the model's), the store's fence.
    let mut fences: Vec<u64> = Vec::new();
    let mut listeners: Vec<relaystore::wake::Listener> = Vec::new();
    // Jobs by enqueue order, and claims by claim order (job, token).
    let mut jobs: Vec<relaystore::JobId> = Vec::new();
    let mut claims: Vec<(relaystore::JobId, relaystore::queue::ClaimToken)> = Vec::new();
    for tenant in [0, 1] {
        store
            .create_queue(TenantId(tenant), "q", queue_config())
            .map_err(|e| e.to_string())?;
    }
    // Outcome counts, printed with RELAYSTORE_MODEL_STATS=1 to tune the mix.
    let stats = std::env::var_os("RELAYSTORE_MODEL_STATS").is_some();
    let mut seen: HashMap<String, u64> = HashMap::new();
    for (step, op) in ops.iter().enumerate() {
        // Resolve indexes against what exists; skip ops that name nothing.
        let counts = [
            leases.len(),
            tickets.len(),
            fences.len(),
            listeners.len(),
            claims.len(),
            jobs.len(),
        ];
        let op = match resolve(op, counts) {
            Some(op) => op,
            None => continue,
        };
        let t = |tenant: u8| TenantId(u64::from(tenant));
        let ttl = |ms: u64| Duration::from_millis(ms);
        let key = |k: u8| format!("k{k}");
        let got = match op.clone() {
            Op::Grant { tenant, ttl_ms } => {
                let r = store.grant(t(tenant), "h", ttl(ttl_ms), None);
                if let Ok(g) = &r {
                    leases.push(g.id);
                }
                outcome(&r)
            }
            Op::Renew {
                tenant,
                lease,
                ttl_ms,
            } => outcome(&store.renew(t(tenant), leases[lease], ttl(ttl_ms))),
            Op::Revoke { tenant, lease } => outcome(&store.revoke(t(tenant), leases[lease])),
            Op::GetLease { tenant, lease } => outcome(&store.get_lease(t(tenant), leases[lease])),
            Op::Publish {
                tenant,
                lease,
                key: k,
            } => outcome(&store.publish(t(tenant), leases[lease], &key(k), b"", None)),
            Op::GetListing { tenant, key: k } => outcome(&store.get_listing(t(tenant), &key(k))),
            Op::Unpublish { tenant, key: k } => outcome(&store.unpublish(t(tenant), &key(k), None)),
            Op::BeginJoin {
                tenant,
                key: k,
                ttl_ms,
            } => {
                let r = store.begin_join(t(tenant), &key(k), "c", ttl(ttl_ms), None);
                if let Ok(ticket) = &r {
                    tickets.push(ticket.clone());
                }
                outcome(&r)
            }
            Op::Bind {
                tenant,
                attempt,
                port,
            } => {
                let ticket = &tickets[attempt];
                let addr = SocketAddr::from(([192, 0, 2, 1], 1000 + u16::from(port)));
                outcome(&store.bind_endpoint(t(tenant), ticket.attempt, &ticket.token, addr))
            }
            Op::Consume { tenant, attempt } => {
                outcome(&store.consume(t(tenant), &tickets[attempt].token, None))
            }
            Op::Cancel { tenant, attempt } => {
                let id: AttemptId = tickets[attempt].attempt;
                outcome(&store.cancel_join(t(tenant), id))
            }
            Op::Heartbeat {
                tenant,
                member,
                ttl_ms,
            } => {
                outcome(&store.heartbeat(t(tenant), &format!("m{member}"), ttl(ttl_ms), None, None))
            }
            Op::GetPresence { tenant, member } => {
                outcome(&store.get_presence(t(tenant), &format!("m{member}")))
            }
            Op::Leave { tenant, member } => outcome(&store.leave(t(tenant), &format!("m{member}"))),
            Op::TryLock {
                tenant,
                name,
                ttl_ms,
            } => match store.try_lock(t(tenant), &format!("n{name}"), "w", ttl(ttl_ms), None) {
                Ok(Some(g)) => {
                    fences.push(g.fence());
                    Outcome::Locked(true)
                }
                Ok(None) => Outcome::Locked(false),
                Err(e) => Outcome::Err(kind(&e)),
            },
            Op::Release {
                tenant,
                name,
                fence,
            } => outcome(&store.release_lock(t(tenant), &format!("n{name}"), fences[fence])),
            Op::GetLock { tenant, name } => {
                outcome(&store.get_lock(t(tenant), &format!("n{name}")))
            }
            Op::CreateStream {
                tenant,
                stream,
                attached,
                lease,
                trim,
                aged,
            } => {
                let when_full = if trim {
                    WhenFull::TrimOldest
                } else {
                    WhenFull::Refuse
                };
                let mut cfg = StreamConfig::new(STREAM_ENTRIES, 1024, when_full);
                if aged {
                    cfg = cfg.with_age_max(Duration::from_millis(STREAM_AGE_MS));
                }
                if attached {
                    cfg = cfg.attached_to(leases[lease]);
                }
                outcome(&store.create_stream(t(tenant), &format!("s{stream}"), cfg))
            }
            Op::Append { tenant, stream } => {
                match store.append(t(tenant), &format!("s{stream}"), STREAM_PAYLOAD, None) {
                    Ok(offset) => Outcome::Offset(offset),
                    Err(e) => Outcome::Err(kind(&e)),
                }
            }
            Op::ReadStream {
                tenant,
                stream,
                from,
            } => match store.read_stream(t(tenant), &format!("s{stream}"), u64::from(from), 2) {
                Ok(read) => {
                    // Rising, from `from` on, below `next` (gaps are a
                    // dropped transaction's offsets).
                    let offsets: Vec<u64> = read.entries.iter().map(|e| e.offset).collect();
                    let rising = offsets.windows(2).all(|w| w[0] < w[1])
                        && offsets
                            .iter()
                            .all(|&o| o >= u64::from(from) && o < read.next);
                    if !rising {
                        return Err(format!("step {step}: {op:?}: offsets {offsets:?}"));
                    }
                    Outcome::Read {
                        entries: read.entries.len(),
                        next: read.next,
                    }
                }
                Err(e) => Outcome::Err(kind(&e)),
            },
            Op::CommitStream {
                tenant,
                stream,
                consumer,
                offset,
            } => outcome(&store.commit(
                t(tenant),
                &format!("s{stream}"),
                &format!("c{consumer}"),
                u64::from(offset),
            )),
            Op::CreateGroup {
                tenant,
                stream,
                group,
                end,
            } => {
                let start = if end {
                    GroupStart::End
                } else {
                    GroupStart::Oldest
                };
                let config = GroupConfig::new(start, GROUP_PENDING, GROUP_DELIVERIES);
                outcome(&store.create_group(
                    t(tenant),
                    &format!("s{stream}"),
                    &format!("g{group}"),
                    config,
                ))
            }
            Op::ReadGroup {
                tenant,
                stream,
                group,
                member,
            } => match store.read_group(
                t(tenant),
                &format!("s{stream}"),
                &format!("g{group}"),
                &format!("m{member}"),
                2,
            ) {
                Ok(read) => Outcome::GroupRead(
                    read.entries
                        .iter()
                        .map(|e| (e.offset, e.deliveries))
                        .collect(),
                    read.skipped,
                ),
                Err(e) => Outcome::Err(kind(&e)),
            },
            Op::AckGroup {
                tenant,
                stream,
                group,
                offset,
            } => match store.ack_group(
                t(tenant),
                &format!("s{stream}"),
                &format!("g{group}"),
                &[u64::from(offset)],
            ) {
                Ok(n) => Outcome::Count(n),
                Err(e) => Outcome::Err(kind(&e)),
            },
            Op::ClaimIdle {
                tenant,
                stream,
                group,
                member,
            } => match store.claim_idle(
                t(tenant),
                &format!("s{stream}"),
                &format!("g{group}"),
                &format!("m{member}"),
                Duration::from_millis(GROUP_IDLE_MS),
                2,
            ) {
                Ok(c) => Outcome::GroupClaim(
                    c.entries.iter().map(|e| (e.offset, e.deliveries)).collect(),
                    c.dead,
                    c.trimmed,
                ),
                Err(e) => Outcome::Err(kind(&e)),
            },
            Op::GroupInfo {
                tenant,
                stream,
                group,
            } => match store.group_info(t(tenant), &format!("s{stream}"), &format!("g{group}")) {
                Ok(i) => Outcome::Group([i.next, i.pending as u64, i.dead as u64]),
                Err(e) => Outcome::Err(kind(&e)),
            },
            Op::DeleteStream { tenant, stream } => {
                outcome(&store.delete_stream(t(tenant), &format!("s{stream}")))
            }
            Op::StreamInfo { tenant, stream } => {
                match store.stream_info(t(tenant), &format!("s{stream}")) {
                    Ok(i) => Outcome::Stream([
                        i.first,
                        i.next,
                        i.entries as u64,
                        i.bytes as u64,
                        i.consumers as u64,
                    ]),
                    Err(e) => Outcome::Err(kind(&e)),
                }
            }
            Op::TrimStream {
                tenant,
                stream,
                before,
            } => match store.trim_stream(t(tenant), &format!("s{stream}"), u64::from(before)) {
                Ok(first) => Outcome::Offset(first),
                Err(e) => Outcome::Err(kind(&e)),
            },
            Op::Listen { tenant, channel } => {
                match store.listen(t(tenant), &format!("c{channel}")) {
                    Ok(l) => {
                        listeners.push(l);
                        Outcome::Ok
                    }
                    Err(e) => Outcome::Err(kind(&e)),
                }
            }
            Op::Notify { tenant, channel } => {
                outcome(&store.notify(t(tenant), &format!("c{channel}")))
            }
            Op::TryRecv { listener } => Outcome::Woke(listeners[listener].try_recv().is_some()),
            Op::Enqueue {
                tenant,
                delayed,
                big,
                low,
            } => {
                let r = store.enqueue(t(tenant), "q", payload(big), job_options(delayed, low));
                if let Ok(id) = &r {
                    jobs.push(*id);
                }
                outcome(&r)
            }
            Op::Claim { tenant, short } => {
                let visibility = short.then(|| Duration::from_millis(QUEUE_SHORT_MS));
                match store.claim(t(tenant), "q", "w", visibility, 1) {
                    Ok(claimed) => Outcome::Claimed(claimed.first().map(|job| {
                        claims.push((job.id, job.claim));
                        let index = jobs.iter().position(|&j| j == job.id);
                        (index.expect("a job this run enqueued"), job.attempt)
                    })),
                    Err(e) => Outcome::Err(kind(&e)),
                }
            }
            Op::Settle { tenant, claim, ack } => {
                let (job, token) = claims[claim];
                if ack {
                    outcome(&store.ack(t(tenant), "q", job, token))
                } else {
                    match store.fail(t(tenant), "q", job, token, "boom") {
                        Ok(relaystore::queue::Failed::RetryIn(d)) => {
                            Outcome::Failed(Some(d.as_millis() as u64))
                        }
                        Ok(relaystore::queue::Failed::DeadLettered) => Outcome::Failed(None),
                        Err(e) => Outcome::Err(kind(&e)),
                    }
                }
            }
            Op::Tx { ops, commit } => {
                let mut tx = store.begin_tx();
                let (mut staged, mut offsets, mut enqueued) = (Vec::new(), Vec::new(), Vec::new());
                for op in ops {
                    let taken = match op {
                        Op::Publish {
                            tenant,
                            lease,
                            key: k,
                        } => tx.publish(t(tenant), leases[lease], &key(k), b"").is_ok(),
                        Op::Unpublish { tenant, key: k } => {
                            tx.unpublish(t(tenant), &key(k), None).is_ok()
                        }
                        Op::Append { tenant, stream } => {
                            match tx.append(t(tenant), &format!("s{stream}"), STREAM_PAYLOAD) {
                                Ok(offset) => {
                                    offsets.push(offset);
                                    true
                                }
                                Err(_) => false,
                            }
                        }
                        Op::Notify { tenant, channel } => {
                            tx.notify(t(tenant), &format!("c{channel}")).is_ok()
                        }
                        Op::CommitStream {
                            tenant,
                            stream,
                            consumer,
                            offset,
                        } => tx
                            .commit_offset(
                                t(tenant),
                                &format!("s{stream}"),
                                &format!("c{consumer}"),
                                u64::from(offset),
                            )
                            .is_ok(),
                        Op::TrimStream {
                            tenant,
                            stream,
                            before,
                        } => tx
                            .trim_stream(t(tenant), &format!("s{stream}"), u64::from(before))
                            .is_ok(),
                        Op::Schedule { tenant, name, slow } => tx
                            .schedule(t(tenant), &schedule_name(name), spec(slow), "q", b"")
                            .is_ok(),
                        Op::Unschedule { tenant, name } => {
                            tx.unschedule(t(tenant), &schedule_name(name)).is_ok()
                        }
                        Op::Enqueue {
                            tenant,
                            delayed,
                            big,
                            low,
                        } => match tx.enqueue(
                            t(tenant),
                            "q",
                            payload(big),
                            job_options(delayed, low),
                        ) {
                            Ok(id) => {
                                enqueued.push(id);
                                true
                            }
                            Err(_) => false,
                        },
                        Op::Settle { tenant, claim, ack } => {
                            let (job, token) = claims[claim];
                            if ack {
                                tx.ack(t(tenant), "q", job, token).is_ok()
                            } else {
                                tx.fail(t(tenant), "q", job, token, "boom").is_ok()
                            }
                        }
                        other => return Err(format!("step {step}: {other:?} in a transaction")),
                    };
                    staged.push(taken);
                }
                let (committed, failed) = if commit {
                    match tx.commit() {
                        Ok(done) => {
                            jobs.extend(enqueued);
                            let failed = done
                                .failed
                                .iter()
                                .map(|(_, f)| match f {
                                    relaystore::queue::Failed::RetryIn(d) => {
                                        Some(d.as_millis() as u64)
                                    }
                                    relaystore::queue::Failed::DeadLettered => None,
                                })
                                .collect();
                            (Some(true), failed)
                        }
                        Err(_) => (Some(false), Vec::new()),
                    }
                } else {
                    drop(tx);
                    (None, Vec::new())
                };
                Outcome::Tx {
                    staged,
                    offsets,
                    committed,
                    failed,
                }
            }
            Op::EnqueueBatch {
                tenant,
                n,
                delayed,
                big,
                low,
            } => {
                let payloads = vec![payload(big); usize::from(n)];
                let options = job_options(delayed, low);
                let r = store.enqueue_batch(t(tenant), "q", &payloads, options);
                if let Ok(ids) = &r {
                    jobs.extend(ids);
                }
                outcome(&r)
            }
            Op::ExtendClaim { tenant, claim } => {
                let (job, token) = claims[claim];
                outcome(&store.extend_claim(t(tenant), "q", job, token, None))
            }
            Op::Snooze {
                tenant,
                claim,
                delayed,
            } => {
                let (job, token) = claims[claim];
                let delay = Duration::from_millis(if delayed { QUEUE_DELAY_MS } else { 0 });
                outcome(&store.snooze(t(tenant), "q", job, token, delay))
            }
            Op::CancelJob { tenant, job } => outcome(&store.cancel_job(t(tenant), "q", jobs[job])),
            Op::PurgeDead { tenant } => match store.purge_dead(t(tenant), "q") {
                Ok(n) => Outcome::Count(n),
                Err(e) => Outcome::Err(kind(&e)),
            },
            Op::QueueInfo { tenant } => match store.queue_info(t(tenant), "q") {
                Ok(i) => Outcome::Queue([i.ready, i.delayed, i.claimed, i.dead, i.bytes]),
                Err(e) => Outcome::Err(kind(&e)),
            },
            Op::Job { tenant, job } => match store.job(t(tenant), "q", jobs[job]) {
                Ok(info) => {
                    use relaystore::queue::JobState;
                    let ms = |d: Duration| d.as_millis() as u64;
                    let (state, left) = match info.state {
                        JobState::Ready => ('r', 0),
                        JobState::Delayed { ready_in } => ('d', ms(ready_in)),
                        JobState::Claimed { lapses_in, .. } => ('c', ms(lapses_in)),
                        JobState::Dead { reason } if &*reason == "boom" => ('f', 0),
                        JobState::Dead { .. } => ('l', 0),
                    };
                    Outcome::Job(state, left, info.attempts)
                }
                Err(e) => Outcome::Err(kind(&e)),
            },
            Op::DeadLetters { tenant } => match store.dead_letters(t(tenant), "q", None, 64) {
                Ok(dead) => Outcome::Jobs(
                    dead.iter()
                        .map(|d| jobs.iter().position(|&j| j == d.id).expect("enqueued here"))
                        .collect(),
                ),
                Err(e) => Outcome::Err(kind(&e)),
            },
            Op::RequeueDead { tenant, job } => {
                outcome(&store.requeue_dead(t(tenant), "q", jobs[job]))
            }
            Op::Schedule { tenant, name, slow } => {
                outcome(&store.schedule(t(tenant), &schedule_name(name), spec(slow), "q", b""))
            }
            Op::Unschedule { tenant, name } => {
                outcome(&store.unschedule(t(tenant), &schedule_name(name)))
            }
            Op::ListSchedules { tenant } => Outcome::Schedules(
                store
                    .schedules(t(tenant))
                    .iter()
                    .map(|s| {
                        let name = (0..3).find(|&n| *s.name == *schedule_name(n));
                        let name = name.expect("a schedule this run made");
                        (name, s.next_in.as_millis() as u64)
                    })
                    .collect(),
            ),
            Op::Advance { ms } => {
                clock.advance(Duration::from_millis(ms));
                Outcome::Ok
            }
            Op::Sweep => {
                store.sweep();
                Outcome::Ok
            }
        };
        // The model names acquisitions 1, 2, 3...; the driver's list is 0-based.
        let model_op = match op.clone() {
            Op::Release {
                tenant,
                name,
                fence,
            } => Op::Release {
                tenant,
                name,
                fence: fence + 1,
            },
            other => other,
        };
        let expected = model.apply(&model_op, tickets.len());
        if got != expected {
            return Err(format!(
                "step {step}: {op:?}: store {got:?}, model {expected:?}"
            ));
        }
        if let Err(e) = store.audit() {
            return Err(format!("step {step}: {op:?}: audit: {e}"));
        }
        if stats {
            let name = format!("{op:?}");
            let name = name.split([' ', '{']).next().unwrap_or("").to_string();
            *seen.entry(format!("{name} {got:?}")).or_default() += 1;
        }
    }
    if stats {
        let mut all: Vec<_> = seen.into_iter().collect();
        all.sort();
        eprintln!("{all:?}");
    }
    Ok(())
}

/// A job's payload: empty, or `QUEUE_BIG_BYTES`.
fn payload(big: bool) -> &'static [u8] {
    static BIG: [u8; QUEUE_BIG_BYTES] = [7; QUEUE_BIG_BYTES];
    if big {
        &BIG
    } else {
        b""
    }
}

fn job_options(delayed: bool, low: bool) -> relaystore::queue::JobOptions {
    let delay = Duration::from_millis(if delayed { QUEUE_DELAY_MS } else { 0 });
    let priority = if low { PRIORITY_MAX } else { 0 };
    relaystore::queue::JobOptions::delayed(delay).with_priority(priority)
}

fn schedule_name(name: u8) -> String {
    format!("n{name}")
}

/// A schedule's spec: every `SCHEDULE_FAST_MS` or `SCHEDULE_SLOW_MS`.
fn spec(slow: bool) -> &'static str {
    const _: () = assert!(SCHEDULE_FAST_MS == 1_000 && SCHEDULE_SLOW_MS == 3_000);
    if slow {
        "@every 3s"
    } else {
        "@every 1s"
    }
}

/// Maps an op's free indexes onto what exists (leases, attempts, fences,
/// listeners, claims, jobs, as counted in `counts`), or drops it.
pub fn resolve(op: &Op, counts: [usize; 6]) -> Option<Op> {
    let [leases, attempts, fences, listeners, claims, jobs] = counts;
    // Three picks in four take one of the two newest (live ones are mostly
    // recent); the rest take any, so old ids keep being exercised too.
    let pick = |i: usize, n: usize| {
        (n > 0).then(|| {
            if i.is_multiple_of(4) {
                (i / 4) % n
            } else {
                n - 1 - (i % 2).min(n - 1)
            }
        })
    };
    let mut op = op.clone();
    match &mut op {
        Op::Renew { lease, .. }
        | Op::Revoke { lease, .. }
        | Op::GetLease { lease, .. }
        | Op::Publish { lease, .. } => *lease = pick(*lease, leases)?,
        Op::Bind { attempt, .. } | Op::Consume { attempt, .. } | Op::Cancel { attempt, .. } => {
            *attempt = pick(*attempt, attempts)?
        }
        Op::Release { fence, .. } => *fence = pick(*fence, fences)?,
        Op::CreateStream {
            attached: true,
            lease,
            ..
        } => *lease = pick(*lease, leases)?,
        Op::TryRecv { listener } => *listener = pick(*listener, listeners)?,
        Op::Settle { claim, .. } | Op::ExtendClaim { claim, .. } | Op::Snooze { claim, .. } => {
            *claim = pick(*claim, claims)?
        }
        Op::Job { job, .. } | Op::RequeueDead { job, .. } | Op::CancelJob { job, .. } => {
            *job = pick(*job, jobs)?
        }
        Op::Tx { ops, .. } => {
            *ops = ops.iter().filter_map(|op| resolve(op, counts)).collect();
        }
        _ => {}
    }
    Some(op)
}
