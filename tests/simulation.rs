//! Seeded deterministic simulation of the whole store.
//!
//! A seeded generator drives a mixed stream of operations over every
//! collection (grant, renew, revoke, publish, update, unpublish, list,
//! heartbeat, leave, begin_join, bind, consume, cancel, locks, endpoints,
//! tenant revocation, drain, restart) interleaved with clock events (small
//! steps, jumps past the longest TTL, wall-clock jumps both ways, a driver
//! that stalls). After every step it checks what the contract promises:
//!
//! - I1 nothing expired or revoked is observable (every visible record is
//!   live, and a revoked lease's children are gone);
//! - I3 every counter equals the records it counts, every index its records
//!   (`Store::audit`, every 25 steps and at the end);
//! - I4 versions strictly increase per key, fences per lock name and per
//!   grant;
//! - I5 a token is consumed at most once, and only a consumed token is
//!   `ReplayRejected`;
//! - I6 a revocation closes every descendant;
//! - I7 the wheel holds exactly one live entry per record (the audit
//!   compares counts; the wheel's property test checks its deadlines);
//! - I12 a job has at most one live claim, and only the latest live claim
//!   acks or fails it (`queue_step`); the audit checks every job is in
//!   exactly one of ready / delayed / claimed / dead;
//! - I8 neighbour fairness: a creation refused for capacity (grants,
//!   publishes, joins and locks without idempotency keys, whose claim may
//!   clean up after a revoked tenant) leaves every record, counter and the
//!   tenant registry exactly as they were, so a tenant at its limit costs
//!   the others nothing. (That a doomed operation holds nothing *while* it
//!   runs is checked on two threads in `tests/admission.rs` and by the
//!   loom model `a_doomed_admission_never_takes_anothers_room`.)
//!
//! I2 (nothing removed before its deadline unless revoked, released or
//! consumed) is checked exactly, outcome by outcome, by the model-based
//! test in `tests/model_based.rs`. The audit, this file's main oracle, is
//! shown to catch each kind of broken bookkeeping by its unit tests.
//!
//! Each seed runs twice and the traces and final digests must match.
//! A failure prints the seed; reproduce one with
//! `RELAYSTORE_SIM_SEEDS=<seed> cargo test --release --test simulation`.
//! Longer runs: `RELAYSTORE_SIM_SEEDS=32 RELAYSTORE_SIM_STEPS=1000000`.

use relaystore::queue::{Backoff, ClaimToken, JobOptions, QueueConfig};
use relaystore::stream::{StreamConfig, WhenFull};
use relaystore::time::Clock;
use relaystore::time::ManualClock;
use relaystore::wake::{Listener, Missed};
use relaystore::{
    Error, JobId, JoinTicket, LeaseId, Scope, Store, StoreConfig, TenantId, TenantQuota,
    Unavailable,
};
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

const MS: Duration = Duration::from_millis(1);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Wakes one listener queues: small, so listeners fill and drop (I9).
const WAKE_QUEUE: u64 = 3;

fn config() -> StoreConfig {
    StoreConfig::default()
        .wake_queue_max(WAKE_QUEUE as usize)
        .ttl_min(MS * 10)
        .ttl_max(Duration::from_secs(60))
        // Tight enough that every kind of scope refuses now and then (I8).
        .leases_max(12)
        .listings_max(10)
        .presence_max(10)
        .attempts_max(8)
        .replay_max(14)
        .locks_max(6)
        .tombstones_max(40)
        .idempotency_max(30)
        .tenants_max(3)
        .tenant(
            TenantQuota::unlimited()
                .leases_max(6)
                .listings_max(5)
                .presence_max(5)
                .attempts_max(4)
                .replay_max(8)
                .idempotency_max(15)
                .locks_max(3),
        )
        .listings_per_lease_max(2)
        .attempts_per_listing_max(2)
        .endpoints_per_lease_max(2)
        .presence_per_lease_max(4)
        .locks_per_lease_max(2)
        .replay_grace(Duration::from_secs(5))
        .tombstone_ttl(Duration::from_secs(10))
        .idempotency_ttl(Duration::from_secs(10))
        .driver_stall_max(Duration::from_secs(5))
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64: good enough, and seeds 1, 2, 3... are fine.
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// An item, usually one of the 16 most recent (live records are
    /// mostly recent ones), sometimes any (old ids must keep failing well).
    fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            return None;
        }
        let len = items.len() as u64;
        let index = if self.below(5) == 0 {
            self.below(len)
        } else {
            len - 1 - self.below(len.min(16))
        };
        Some(&items[index as usize])
    }
}

struct Sim {
    rng: Rng,
    clock: Arc<ManualClock>,
    store: Arc<Store>,
    leases: Vec<(TenantId, LeaseId)>,
    listings: Vec<(TenantId, String, LeaseId)>,
    tickets: Vec<(TenantId, JoinTicket)>,
    locks: Vec<(TenantId, String, u64)>,
    consumed: HashSet<u128>,
    versions: HashMap<String, u64>,
    lock_fences: HashMap<(TenantId, String), u64>,
    lease_fence: u64,
    old_ids: Vec<(TenantId, LeaseId, JoinTicket)>,
    trace: std::hash::DefaultHasher,
    steps_since_sweep: u32,
    /// Successful operations by kind, to show the run exercised them.
    successes: HashMap<u8, u64>,
    /// How many capacity refusals I8 compared.
    refusals_checked: u64,
    /// Wake listeners, with what the model says they hold.
    listeners: Vec<Heard>,
    /// Notifies made per channel: the next one's number, its payload.
    sent: HashMap<(TenantId, &'static str), u64>,
    /// Listeners of the store before the last restart, with the number of
    /// notifies their channel had.
    retired: Vec<(Heard, u64)>,
    /// Streams created: (first offset held, next offset), per the model.
    streams: HashMap<(TenantId, &'static str), (u64, u64)>,
    /// Tenants with a job queue, and per job its latest claim and the tick
    /// that claim lapses at (0 once failed).
    queues: HashMap<TenantId, HashMap<JobId, (ClaimToken, u64)>>,
}

/// A wake listener in the model: the number of the next notify of its
/// channel it should receive if it has dropped nothing.
struct Heard {
    tenant: TenantId,
    channel: &'static str,
    listener: Listener,
    expected: u64,
}

impl Heard {
    /// I9: with `sent` notifies of its channel made, the listener's next
    /// wake is the oldest of the newest `WAKE_QUEUE` it has not received,
    /// counting the ones dropped before it; none if there is none.
    fn receive(&mut self, sent: u64) {
        let got = self.listener.try_recv();
        if self.expected == sent {
            assert_eq!(
                got, None,
                "I9: {:?}/{}: no wake due",
                self.tenant, self.channel
            );
            return;
        }
        let wake =
            got.unwrap_or_else(|| panic!("I9: {:?}/{}: a wake lost", self.tenant, self.channel));
        let number = u64::from_be_bytes(wake.payload.as_ref().try_into().expect("8 bytes"));
        let oldest_kept = self.expected.max(sent.saturating_sub(WAKE_QUEUE));
        assert_eq!(number, oldest_kept, "I9: the oldest wake kept");
        let dropped = number - self.expected;
        let missed = if dropped == 0 {
            Missed::None
        } else {
            Missed::Dropped(dropped)
        };
        assert_eq!(wake.missed, missed, "I9: the wakes dropped before it");
        self.expected = number + 1;
    }
}

fn tenant(rng: &mut Rng) -> TenantId {
    TenantId(rng.below(3))
}

fn addr(rng: &mut Rng) -> SocketAddr {
    SocketAddr::from(([198, 51, 100, 7], 4000 + rng.below(3) as u16))
}

fn ttl(rng: &mut Rng) -> Duration {
    match rng.below(10) {
        0 => MS * 5,                     // below the minimum: invalid
        1 => Duration::from_secs(61),    // above the maximum: invalid
        _ => ms(10 + rng.below(20_000)), // 10 ms .. 20 s
    }
}

impl Sim {
    fn new(seed: u64) -> Self {
        let clock = Arc::new(ManualClock::new());
        let store = Arc::new(Store::new(config(), clock.clone()).unwrap());
        Sim {
            rng: Rng(seed),
            clock,
            store,
            leases: Vec::new(),
            listings: Vec::new(),
            tickets: Vec::new(),
            locks: Vec::new(),
            consumed: HashSet::new(),
            versions: HashMap::new(),
            lock_fences: HashMap::new(),
            lease_fence: 0,
            old_ids: Vec::new(),
            trace: std::hash::DefaultHasher::new(),
            steps_since_sweep: 0,
            successes: HashMap::new(),
            refusals_checked: 0,
            listeners: Vec::new(),
            sent: HashMap::new(),
            retired: Vec::new(),
            streams: HashMap::new(),
            queues: HashMap::new(),
        }
    }

    /// Records an outcome's shape (not its ids, which carry the random
    /// incarnation) in the trace.
    fn note<T>(&mut self, op: u8, r: &Result<T, Error>) {
        (op, r.as_ref().err().cloned()).hash(&mut self.trace);
        if r.is_ok() {
            *self.successes.entry(op).or_default() += 1;
        }
    }

    /// What I8 compares: every record (digest) and every count.
    fn fingerprint(&self) -> (u64, relaystore::Stats) {
        (self.store.digest(), self.store.stats())
    }

    /// I8: a creation refused for capacity changed nothing.
    fn refusal_changed_nothing<T>(
        &mut self,
        r: &Result<T, Error>,
        before: (u64, relaystore::Stats),
    ) {
        if let Err(e @ Error::CapacityExceeded { .. }) = r {
            self.refusals_checked += 1;
            assert_eq!(
                self.fingerprint(),
                before,
                "I8: a creation refused with {e} changed the store"
            );
        }
    }

    /// I4: versions strictly increase per key.
    fn version(&mut self, key: String, version: u64) {
        let last = self.versions.insert(key.clone(), version).unwrap_or(0);
        assert!(
            version > last,
            "version of {key} went from {last} to {version}"
        );
    }

    fn step(&mut self) {
        // I10: the listeners of a store that is gone get their queued
        // wakes, then `Closed` (without waiting).
        for (mut heard, sent) in self.retired.drain(..) {
            while heard.expected < sent {
                heard.receive(sent);
            }
            assert_eq!(
                heard.listener.blocking_recv_timeout(Duration::ZERO),
                Err(relaystore::wake::RecvError::Closed),
                "I10"
            );
        }
        let op = self.rng.below(100) as u8;
        let s = Arc::clone(&self.store);
        match op {
            0..=9 => {
                let (t, ttl) = (tenant(&mut self.rng), ttl(&mut self.rng));
                let key = (self.rng.below(4) == 0).then(|| format!("req-{}", self.rng.below(5)));
                let before = self.fingerprint();
                let r = s.grant(t, "host", ttl, key.as_deref());
                if key.is_none() {
                    self.refusal_changed_nothing(&r, before);
                }
                if let Ok(g) = &r {
                    if g.fence > self.lease_fence {
                        self.lease_fence = g.fence;
                        self.leases.push((t, g.id));
                        self.version(format!("lease {:x}", g.id.to_bits()), g.version);
                    }
                }
                self.note(op, &r);
            }
            10..=19 => {
                if let Some(&(t, id)) = self.rng.pick(&self.leases) {
                    let ttl = ttl(&mut self.rng);
                    let r = s.renew(t, id, ttl);
                    if let Ok(stamp) = &r {
                        assert!(stamp.remaining > Duration::ZERO, "renewed into the past");
                        self.version(format!("lease {:x}", id.to_bits()), stamp.version);
                    }
                    self.note(op, &r);
                }
            }
            20..=22 => {
                if let Some(&(t, id)) = self.rng.pick(&self.leases) {
                    let r = s.revoke(t, id);
                    if r.is_ok() {
                        // I6: every descendant is closed the moment it returns.
                        // (A stopped store refuses the renewal outright.)
                        assert!(matches!(
                            s.renew(t, id, MS * 100),
                            Err(Error::Revoked
                                | Error::NotFound
                                | Error::ServiceUnavailable {
                                    reason: Unavailable::Stopped
                                })
                        ));
                        for (lt, key, lease) in &self.listings {
                            if *lt == t && *lease == id {
                                // The key may since carry another lease's
                                // listing; never this lease's.
                                if let Ok(l) = s.get_listing(t, key) {
                                    assert_ne!(
                                        l.lease, id,
                                        "I6: a revoked lease's listing is visible"
                                    );
                                }
                            }
                        }
                    }
                    self.note(op, &r);
                }
            }
            23..=27 => {
                if let Some(&(t, id)) = self.rng.pick(&self.leases) {
                    let key = format!("l{}", self.rng.below(8));
                    let idem =
                        (self.rng.below(5) == 0).then(|| format!("pub-{}", self.rng.below(3)));
                    let before = self.fingerprint();
                    let r = s.publish(t, id, &key, b"a", idem.as_deref());
                    if idem.is_none() {
                        self.refusal_changed_nothing(&r, before);
                    }
                    if let Ok(l) = &r {
                        // An idempotent replay returns the stored outcome,
                        // not a new transition.
                        if idem.is_none() {
                            self.version(format!("listing {}/{key}", t.0), l.version);
                        }
                        self.listings.push((t, key, id));
                    }
                    self.note(op, &r);
                }
            }
            28..=30 => {
                if let Some((t, key, _)) = self.rng.pick(&self.listings).cloned() {
                    if let Ok(current) = s.get_listing(t, &key) {
                        let stale = self.rng.below(3) == 0;
                        let expected = if stale {
                            current.version.saturating_sub(1)
                        } else {
                            current.version
                        };
                        let r = s.update_listing(t, &key, expected, b"b");
                        if stale {
                            assert!(r.is_err(), "a stale version updated");
                        } else if let Ok(v) = &r {
                            assert!(*v > current.version);
                        }
                        self.note(op, &r);
                    }
                }
            }
            31..=32 => {
                if let Some((t, key, _)) = self.rng.pick(&self.listings).cloned() {
                    let r = if self.rng.below(2) == 0 {
                        s.unpublish(t, &key, None)
                    } else {
                        s.revoke_listing(t, &key)
                    };
                    if r.is_ok() {
                        assert_eq!(s.get_listing(t, &key), Err(Error::NotFound));
                    }
                    self.note(op, &r);
                }
            }
            33..=35 => {
                let t = tenant(&mut self.rng);
                let r = s.list_listings(t, None, 1 + self.rng.below(5) as usize);
                if let Ok(page) = &r {
                    for l in &page.items {
                        // I1: what a list shows is visible, and so is its lease.
                        s.get_lease(t, l.lease)
                            .expect("listed listing's lease is visible");
                    }
                }
                self.note(op, &r);
            }
            36..=44 => {
                let t = tenant(&mut self.rng);
                let member = format!("m{}", self.rng.below(8));
                let lease = if self.rng.below(3) == 0 {
                    self.rng.pick(&self.leases).map(|l| l.1)
                } else {
                    None
                };
                let ttl = ttl(&mut self.rng);
                let r = s.heartbeat(t, &member, ttl, Some(b"x"), lease);
                if let Ok(stamp) = &r {
                    assert!(stamp.remaining > Duration::ZERO);
                    self.version(format!("member {}/{member}", t.0), stamp.version);
                }
                self.note(op, &r);
                if let Ok(p) = s.get_presence(t, &member) {
                    assert!(p.remaining > Duration::ZERO, "I1: expired presence visible");
                }
            }
            45..=46 => {
                let t = tenant(&mut self.rng);
                let r = s.leave(t, &format!("m{}", self.rng.below(8)));
                self.note(op, &r);
            }
            47..=54 => {
                if let Some((t, key, _)) = self.rng.pick(&self.listings).cloned() {
                    let ttl = ttl(&mut self.rng);
                    let idem =
                        (self.rng.below(5) == 0).then(|| format!("join-{}", self.rng.below(3)));
                    let before = self.fingerprint();
                    let r = s.begin_join(t, &key, "client", ttl, idem.as_deref());
                    if idem.is_none() {
                        self.refusal_changed_nothing(&r, before);
                    }
                    if let Ok(ticket) = &r {
                        self.tickets.push((t, ticket.clone()));
                    }
                    self.note(op, &r);
                }
            }
            55..=61 => {
                if let Some((t, ticket)) = self.rng.pick(&self.tickets).cloned() {
                    let a = addr(&mut self.rng);
                    let r = s.bind_endpoint(t, ticket.attempt, &ticket.token, a);
                    if let Ok(b) = &r {
                        assert_eq!(b.addr, a);
                        // Usually the relay admits the client right away.
                        if self.rng.below(3) != 0 {
                            let admitted = s.consume(t, &ticket.token, None);
                            if admitted.is_ok() {
                                assert!(
                                    self.consumed.insert(ticket.attempt.to_bits()),
                                    "token consumed twice"
                                );
                            }
                            self.note(op, &admitted);
                        }
                    }
                    self.note(op, &r);
                }
            }
            62..=68 => {
                if let Some((t, ticket)) = self.rng.pick(&self.tickets).cloned() {
                    let id = ticket.attempt.to_bits();
                    let r = s.consume(t, &ticket.token, None);
                    match &r {
                        // I5: at most once.
                        Ok(_) => assert!(self.consumed.insert(id), "token consumed twice"),
                        Err(Error::ReplayRejected) => assert!(
                            self.consumed.contains(&id),
                            "unconsumed token rejected as replay"
                        ),
                        Err(_) => {}
                    }
                    self.note(op, &r);
                }
            }
            69..=70 => {
                if let Some((t, ticket)) = self.rng.pick(&self.tickets).cloned() {
                    let r = s.cancel_join(t, ticket.attempt);
                    self.note(op, &r);
                }
            }
            71..=76 => {
                let t = tenant(&mut self.rng);
                let name = format!("k{}", self.rng.below(4));
                let lease = if self.rng.below(4) == 0 {
                    self.rng.pick(&self.leases).map(|l| l.1)
                } else {
                    None
                };
                let ttl = ttl(&mut self.rng);
                let before = self.fingerprint();
                let r = s
                    .try_lock(t, &name, "w", ttl, lease)
                    .map(|g| g.map(|g| g.fence()));
                self.refusal_changed_nothing(&r, before);
                if let Ok(Some(fence)) = &r {
                    let last = self
                        .lock_fences
                        .insert((t, name.clone()), *fence)
                        .unwrap_or(0);
                    assert!(*fence > last, "lock fence went from {last} to {fence}");
                    assert_eq!(s.get_lock(t, &name).map(|l| l.fence), Ok(*fence));
                    self.locks.push((t, name, *fence));
                }
                self.note(op, &r);
            }
            77..=79 => {
                if let Some((t, name, fence)) = self.rng.pick(&self.locks).cloned() {
                    let r = if self.rng.below(2) == 0 {
                        s.renew_lock(t, &name, fence, ttl(&mut self.rng)).map(drop)
                    } else {
                        s.release_lock(t, &name, fence)
                    };
                    self.note(op, &r);
                    if let Ok(l) = s.get_lock(t, &name) {
                        assert!(l.remaining > Duration::ZERO, "I1: lapsed lock visible");
                    }
                }
            }
            80..=81 => {
                if let Some(&(t, id)) = self.rng.pick(&self.leases) {
                    let a = addr(&mut self.rng);
                    let r = s.observe_endpoint(t, id, a);
                    self.note(op, &r);
                    if let Ok(seen) = s.endpoints(t, id) {
                        assert!(seen.len() <= 2, "endpoint cap exceeded");
                    }
                }
            }
            82 if self.rng.below(5) == 0 => {
                let t = tenant(&mut self.rng);
                let r = s.revoke_tenant(t);
                for &(lt, id) in &self.leases {
                    if lt == t {
                        assert!(
                            s.get_lease(t, id).is_err(),
                            "I6: a revoked tenant's lease is visible"
                        );
                    }
                }
                self.note(op, &r);
            }
            83..=84 => {
                if let Some(&(t, id)) = self.rng.pick(&self.leases) {
                    if let Ok(info) = s.get_lease(t, id) {
                        assert!(info.remaining > Duration::ZERO, "I1: expired lease visible");
                    }
                }
            }
            85..=96 => {
                let step = match self.rng.below(200) {
                    0 => Duration::from_secs(61), // past every TTL
                    1..=20 => ms(self.rng.below(5000)),
                    _ => ms(self.rng.below(300)),
                };
                self.clock.advance(step);
                match self.rng.below(10) {
                    0 => self.clock.jump_wall_forward(Duration::from_secs(3600)),
                    1 => self.clock.jump_wall_backward(Duration::from_secs(3600)),
                    _ => {}
                }
            }
            97 if self.rng.below(200) == 0 => {
                let r = s.begin_drain(ms(self.rng.below(3000)));
                self.note(op, &r);
            }
            // A stopped store is restarted soon; a running one rarely.
            98 if s.health() == relaystore::Health::Stopped || self.rng.below(100) == 0 => {
                self.restart();
            }
            99 => match self.rng.below(3) {
                0 => self.wake_step(),
                1 => self.stream_step(),
                _ => self.queue_step(),
            },
            _ => {}
        }
        // The driver: usually sweeps every step; sometimes stalls for a while.
        self.steps_since_sweep += 1;
        let stall = self.rng.below(200) == 0;
        if !stall && self.steps_since_sweep > self.rng.below(3) as u32 {
            self.store.sweep();
            self.steps_since_sweep = 0;
        }
    }

    /// Wake channels. I9: a listener receives one wake per notify of its
    /// channel made after it attached, in order, with its payload; past
    /// `WAKE_QUEUE` unreceived, the oldest are dropped and counted.
    fn wake_step(&mut self) {
        let t = tenant(&mut self.rng);
        let channel = ["a", "b"][self.rng.below(2) as usize];
        let sent = *self.sent.get(&(t, channel)).unwrap_or(&0);
        match self.rng.below(4) {
            0 if self.listeners.len() < 8 => match self.store.listen(t, channel) {
                Ok(listener) => self.listeners.push(Heard {
                    tenant: t,
                    channel,
                    listener,
                    expected: sent,
                }),
                Err(e) => assert_eq!(e, Error::STOPPED, "listen"),
            },
            // A burst of notifies, so queues fill and drop.
            1 => {
                for n in sent..sent + 1 + self.rng.below(WAKE_QUEUE + 2) {
                    match self.store.notify_with(t, channel, &n.to_be_bytes()) {
                        Ok(()) => {
                            self.sent.insert((t, channel), n + 1);
                        }
                        Err(e) => assert_eq!(e, Error::STOPPED, "notify"),
                    }
                }
            }
            2 if !self.listeners.is_empty() => {
                let i = self.rng.below(self.listeners.len() as u64) as usize;
                let heard = &mut self.listeners[i];
                let sent = *self.sent.get(&(heard.tenant, heard.channel)).unwrap_or(&0);
                heard.receive(sent);
            }
            3 if !self.listeners.is_empty() => {
                let i = self.rng.below(self.listeners.len() as u64) as usize;
                self.listeners.swap_remove(i);
            }
            _ => {}
        }
        9u8.hash(&mut self.trace);
        self.store.listeners().hash(&mut self.trace);
    }

    /// Streams. I11: offsets are issued in sequence and never reused; a
    /// trimming stream keeps its newest 4, a refusing one refuses the 5th;
    /// a read returns exactly the offsets the model holds from its start,
    /// or `Trimmed` with the model's first offset.
    fn stream_step(&mut self) {
        let t = tenant(&mut self.rng);
        let name = ["trimming", "refusing"][self.rng.below(2) as usize];
        let when_full = if name == "trimming" {
            WhenFull::TrimOldest
        } else {
            WhenFull::Refuse
        };
        if !self.streams.contains_key(&(t, name)) {
            match self
                .store
                .create_stream(t, name, StreamConfig::new(4, 1 << 10, when_full))
            {
                Ok(()) => {
                    self.streams.insert((t, name), (0, 0));
                }
                Err(e) => assert!(
                    matches!(e, Error::Draining | Error::ServiceUnavailable { .. }),
                    "create_stream: {e:?}"
                ),
            }
            return;
        }
        let choice = self.rng.below(6);
        // A burst of appends, so retention is reached often.
        for _ in 0..if choice < 3 { 1 + self.rng.below(3) } else { 0 } {
            let (first, next) = self.streams[&(t, name)];
            match self.store.append(t, name, b"entry", None) {
                Ok(offset) => {
                    assert_eq!(offset, next, "I11: offsets in sequence");
                    // A full trimming stream dropped its oldest entry.
                    let first = if next - first == 4 { first + 1 } else { first };
                    self.streams.insert((t, name), (first, next + 1));
                }
                Err(Error::CapacityExceeded { .. }) => {
                    assert_eq!(
                        when_full,
                        WhenFull::Refuse,
                        "I11: a trimming stream refused"
                    );
                    assert_eq!(next - first, 4, "I11: refused before it was full");
                }
                Err(e) => assert_eq!(e, Error::STOPPED, "append"),
            }
        }
        let (first, next) = self.streams[&(t, name)];
        match choice {
            0..=2 => {}
            3..=4 => {
                let from = first.saturating_sub(1) + self.rng.below(next - first + 2);
                let from = from.min(next);
                match self.store.read_stream(t, name, from, 3) {
                    Ok(read) => {
                        assert!(from >= first, "I11: read below the first offset held");
                        let got: Vec<u64> = read.entries.iter().map(|e| e.offset).collect();
                        let want: Vec<u64> = (from..next).take(3).collect();
                        assert_eq!(got, want, "I11: read from {from}");
                    }
                    Err(Error::Trimmed { first: held }) => {
                        assert!(from < first, "I11: Trimmed for a held offset");
                        assert_eq!(held, first, "I11: the first offset held");
                    }
                    Err(e) => panic!("read: {e:?}"),
                }
            }
            _ => {
                let before = first + self.rng.below(next - first + 1);
                assert_eq!(self.store.trim_stream(t, name, before), Ok(before));
                self.streams.insert((t, name), (before, next));
            }
        }
        11u8.hash(&mut self.trace);
    }

    /// Job queues. I12: a job has at most one live claim: each claim
    /// makes the job's earlier claims stale; an ack or fail succeeds
    /// exactly when its claim is the job's latest and has not lapsed, and a
    /// refused one is `StaleClaim` (or `NotFound` once the job is gone).
    /// The audit checks that every job is in exactly one of ready /
    /// delayed / claimed / dead.
    fn queue_step(&mut self) {
        let t = tenant(&mut self.rng);
        let s = Arc::clone(&self.store);
        let now = self.clock.now().as_millis();
        if let std::collections::hash_map::Entry::Vacant(slot) = self.queues.entry(t) {
            let config = QueueConfig::default()
                .jobs_max(6)
                .bytes_max(1024)
                .dead_letters_max(Some(3))
                .attempts_max(2)
                .visibility(ms(500))
                .backoff(Backoff {
                    base: ms(10),
                    max: ms(100),
                })
                .jitter_seed(Some(9));
            match s.create_queue(t, "jobs", config) {
                Ok(()) => {
                    slot.insert(HashMap::new());
                }
                Err(e) => assert!(
                    matches!(e, Error::Draining | Error::ServiceUnavailable { .. }),
                    "create_queue: {e:?}"
                ),
            }
            return;
        }
        let held = |model: &HashMap<JobId, (ClaimToken, u64)>, rng: &mut Rng| {
            let mut ids: Vec<JobId> = model.keys().copied().collect();
            ids.sort_by_key(|id| id.to_bits());
            rng.pick(&ids).copied()
        };
        match self.rng.below(7) {
            0..=1 => {
                let delay = if self.rng.below(2) == 0 {
                    ms(0)
                } else {
                    ms(self.rng.below(200))
                };
                let r = s.enqueue(t, "jobs", b"job", JobOptions::delayed(delay));
                match &r {
                    Ok(_) | Err(Error::Draining | Error::ServiceUnavailable { .. }) => {}
                    Err(Error::CapacityExceeded {
                        scope: Scope::QueueJobs | Scope::QueueDeadLetters,
                        ..
                    }) => {}
                    Err(e) => panic!("enqueue: {e:?}"),
                }
                self.note(12, &r);
            }
            2..=3 => {
                let visibility = match self.rng.below(3) {
                    0 => None,
                    _ => Some(ms(10 + self.rng.below(1000))),
                };
                let max = 1 + self.rng.below(3) as usize;
                let r = s.claim(t, "jobs", "worker", visibility, max);
                match &r {
                    Ok(jobs) => {
                        let lapse = now + visibility.map_or(500, |v| v.as_millis() as u64);
                        for job in jobs {
                            let model = self.queues.get_mut(&t).expect("created");
                            if let Some(&(earlier, _)) = model.get(&job.id) {
                                let before = s.job(t, "jobs", job.id);
                                assert_eq!(
                                    s.ack(t, "jobs", job.id, earlier),
                                    Err(Error::StaleClaim),
                                    "I12: an earlier claim after a new one"
                                );
                                assert_eq!(
                                    s.job(t, "jobs", job.id),
                                    before,
                                    "I12: refused, unchanged"
                                );
                            }
                            model.insert(job.id, (job.claim, lapse));
                        }
                    }
                    Err(e) => assert_eq!(*e, Error::STOPPED, "claim"),
                }
                self.note(13, &r);
            }
            4..=5 => {
                let Some(id) = held(&self.queues[&t], &mut self.rng) else {
                    return;
                };
                let (token, lapse) = self.queues[&t][&id];
                let ack = self.rng.below(2) == 0;
                let r = if ack {
                    s.ack(t, "jobs", id, token)
                } else {
                    s.fail(t, "jobs", id, token, "boom").map(drop)
                };
                if now < lapse {
                    assert_eq!(r, Ok(()), "I12: the latest live claim");
                    let model = self.queues.get_mut(&t).expect("created");
                    if ack {
                        model.remove(&id);
                    } else {
                        model.insert(id, (token, 0));
                    }
                } else {
                    assert!(
                        matches!(r, Err(Error::StaleClaim | Error::NotFound)),
                        "I12: a stale or lapsed claim: {r:?}"
                    );
                }
                self.note(14, &r);
            }
            _ => {
                let r = s.purge_dead(t, "jobs");
                self.note(15, &r);
            }
        }
    }

    /// A restart: a new store, empty, with a new incarnation. Ids from the
    /// old one must answer `Restarted`, its join tokens `NotFound`.
    fn restart(&mut self) {
        if let (Some(&(t, id)), Some((_, ticket))) = (self.leases.last(), self.tickets.last()) {
            self.old_ids.push((t, id, ticket.clone()));
        }
        self.store = Arc::new(Store::new(config(), self.clock.clone()).unwrap());
        // The old store's listeners are checked once it is gone (I10).
        let sent = std::mem::take(&mut self.sent);
        self.retired = std::mem::take(&mut self.listeners)
            .into_iter()
            .map(|heard| {
                let n = *sent.get(&(heard.tenant, heard.channel)).unwrap_or(&0);
                (heard, n)
            })
            .collect();
        self.streams.clear();
        self.queues.clear();
        self.leases.clear();
        self.listings.clear();
        self.tickets.clear();
        self.locks.clear();
        self.lock_fences.clear();
        self.versions.clear();
        self.lease_fence = 0;
        for (t, id, ticket) in &self.old_ids {
            assert_eq!(self.store.renew(*t, *id, MS * 100), Err(Error::Restarted));
            assert_eq!(
                self.store.get_attempt(*t, ticket.attempt).map(drop),
                Err(Error::Restarted)
            );
            // A client's token from before is unknown, not a restart.
            assert_eq!(
                self.store.consume(*t, &ticket.token, None).map(drop),
                Err(Error::NotFound)
            );
        }
        7u8.hash(&mut self.trace);
    }

    fn run(mut self, steps: u64) -> (u64, u64) {
        for i in 0..steps {
            self.step();
            // Keep the tracked ids bounded; forgetting ids is always safe.
            for list_len in [self.leases.len(), self.tickets.len()] {
                assert!(list_len < 100_000);
            }
            if self.leases.len() > 200 {
                self.leases.drain(..100);
            }
            if self.listings.len() > 200 {
                self.listings.drain(..100);
            }
            if self.tickets.len() > 200 {
                self.tickets.drain(..100);
            }
            if self.locks.len() > 200 {
                self.locks.drain(..100);
            }
            if i % 25 == 0 {
                if let Err(e) = self.store.audit() {
                    panic!("step {i}: audit failed: {e}");
                }
            }
        }
        let mut by_op: Vec<(u8, u64)> = self.successes.iter().map(|(k, v)| (*k, *v)).collect();
        by_op.sort_unstable();
        eprintln!(
            "successes by op: {by_op:?}; I8 compared {} refusals",
            self.refusals_checked
        );
        assert!(
            self.refusals_checked > 0,
            "I8 never ran: no creation was refused for capacity"
        );
        for op in [12, 13, 14] {
            assert!(
                self.successes.get(&op).is_some_and(|&n| n > 0),
                "I12 never ran: no queue operation {op} succeeded"
            );
        }
        self.clock.advance(Duration::from_secs(200));
        self.store.sweep();
        self.store.audit().expect("final audit");
        let st = self.store.stats();
        assert_eq!(
            (
                st.leases,
                st.listings,
                st.presence,
                st.attempts,
                st.locks,
                st.idempotency,
                st.tombstones
            ),
            (0, 0, 0, 0, 0, 0, 0),
            "records outlived every deadline"
        );
        (self.trace.finish(), self.store.digest())
    }
}

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn seeded_simulation_keeps_every_invariant_and_is_deterministic() {
    let steps = env("RELAYSTORE_SIM_STEPS", 30_000);
    let seeds: Vec<u64> = match std::env::var("RELAYSTORE_SIM_SEEDS") {
        Ok(v) if v.contains(',') => v.split(',').filter_map(|s| s.parse().ok()).collect(),
        Ok(v) => match v.parse::<u64>() {
            // A small number means "this many seeds"; a large one, one seed.
            Ok(n) if n <= 64 => (1..=n).collect(),
            Ok(n) => vec![n],
            Err(_) => vec![1, 2, 3, 4],
        },
        Err(_) => vec![1, 2, 3, 4],
    };
    for seed in seeds {
        let run = || {
            std::panic::catch_unwind(|| Sim::new(seed).run(steps)).unwrap_or_else(|e| {
                eprintln!(
                    "simulation failed; reproduce with: RELAYSTORE_SIM_SEEDS={seed},{seed} RELAYSTORE_SIM_STEPS={steps} cargo test --release --test simulation"
                );
                std::panic::resume_unwind(e)
            })
        };
        // The two runs side by side, one per core: each store's trace and
        // digest depend only on its seed, whatever the other thread does.
        let (first, second) = std::thread::scope(|s| {
            let first = s.spawn(run);
            let second = run();
            let first = first
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e));
            (first, second)
        });
        assert_eq!(first, second, "seed {seed} is not deterministic");
    }
}
