//! A small, sequential reference model of the store's contract, and a
//! driver that runs the same operations against the real store and the
//! model and compares every outcome.
//!
//! The model is written straight from the contract, with plain maps and no
//! concurrency: a record is live while `now < deadline`, removed only by the
//! sweep or an explicit removal, a revoked lease leaves a tombstone, a
//! listing is visible only while its lease is, a consumed token is
//! remembered for the grace period, and authorizations fail closed when the
//! sweep has not run for `driver_stall_max`.
#![allow(dead_code)]

use relaystore::time::ManualClock;
use relaystore::{AttemptId, Error, JoinTicket, LeaseId, Store, StoreConfig, TenantId};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

pub const TTL_MIN_MS: u64 = 10;
pub const TTL_MAX_MS: u64 = 60_000;
const GRACE_MS: u64 = 5_000;
const TOMBSTONE_MS: u64 = 10_000;
const STALL_MS: u64 = 5_000;
const LISTINGS_PER_LEASE: usize = 2;
const ATTEMPTS_PER_LISTING: usize = 2;

pub fn config() -> StoreConfig {
    StoreConfig {
        ttl_min: Duration::from_millis(TTL_MIN_MS),
        ttl_max: Duration::from_millis(TTL_MAX_MS),
        replay_grace: Duration::from_millis(GRACE_MS),
        tombstone_ttl: Duration::from_millis(TOMBSTONE_MS),
        driver_stall_max: Duration::from_millis(STALL_MS),
        listings_per_lease_max: LISTINGS_PER_LEASE,
        attempts_per_listing_max: ATTEMPTS_PER_LISTING,
        ..StoreConfig::default()
    }
}

/// One operation. Indexes (`lease`, `attempt`, `fence`) pick among what was
/// created so far, modulo its length; keys and names come from small sets.
#[derive(Clone, Debug)]
pub enum Op {
    Grant {
        tenant: u8,
        ttl_ms: u64,
    },
    Renew {
        tenant: u8,
        lease: usize,
        ttl_ms: u64,
    },
    Revoke {
        tenant: u8,
        lease: usize,
    },
    GetLease {
        tenant: u8,
        lease: usize,
    },
    Publish {
        tenant: u8,
        lease: usize,
        key: u8,
    },
    GetListing {
        tenant: u8,
        key: u8,
    },
    Unpublish {
        tenant: u8,
        key: u8,
    },
    BeginJoin {
        tenant: u8,
        key: u8,
        ttl_ms: u64,
    },
    Bind {
        tenant: u8,
        attempt: usize,
        port: u8,
    },
    Consume {
        tenant: u8,
        attempt: usize,
    },
    Cancel {
        tenant: u8,
        attempt: usize,
    },
    Heartbeat {
        tenant: u8,
        member: u8,
        ttl_ms: u64,
    },
    GetPresence {
        tenant: u8,
        member: u8,
    },
    Leave {
        tenant: u8,
        member: u8,
    },
    TryLock {
        tenant: u8,
        name: u8,
        ttl_ms: u64,
    },
    Release {
        tenant: u8,
        name: u8,
        fence: usize,
    },
    GetLock {
        tenant: u8,
        name: u8,
    },
    Advance {
        ms: u64,
    },
    Sweep,
}

/// The shape of an outcome: which error, or that it succeeded (with the
/// parts of a success the model can predict).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Locked(bool),
    Err(Kind),
}

/// An error with its data reduced to what the model can know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    NotFound,
    Expired,
    Revoked,
    Conflict,
    ReplayRejected,
    Capacity(String),
    ServiceUnavailable,
    InvalidArgument,
    Other(String),
}

fn kind(e: &Error) -> Kind {
    match e {
        Error::NotFound => Kind::NotFound,
        Error::Expired => Kind::Expired,
        Error::Revoked => Kind::Revoked,
        Error::Conflict { .. } => Kind::Conflict,
        Error::ReplayRejected => Kind::ReplayRejected,
        Error::CapacityExceeded { scope } => Kind::Capacity(scope.to_string()),
        Error::ServiceUnavailable => Kind::ServiceUnavailable,
        Error::InvalidArgument { .. } => Kind::InvalidArgument,
        other => Kind::Other(other.to_string()),
    }
}

fn outcome<T>(r: &Result<T, Error>) -> Outcome {
    match r {
        Ok(_) => Outcome::Ok,
        Err(e) => Outcome::Err(kind(e)),
    }
}

// ----- the model ---------------------------------------------------------------

struct LeaseM {
    tenant: u8,
    deadline: u64,
    present: bool,
}

struct ListingM {
    lease: usize,
    instance: usize,
}

#[derive(Clone, Copy, PartialEq)]
enum PhaseM {
    Pending,
    Bound(u8),
    Consumed,
}

struct AttemptM {
    tenant: u8,
    key: u8,
    instance: usize,
    deadline: u64,
    phase: PhaseM,
    present: bool,
}

struct LockM {
    deadline: u64,
    acquisition: usize,
}

#[derive(Default)]
pub struct Model {
    /// The replay grace the model believes in (the store's, unless a test
    /// injects a disagreement on purpose).
    grace_ms: u64,
    now: u64,
    last_sweep: u64,
    leases: Vec<LeaseM>,
    tombstones: HashMap<usize, u64>,
    listings: HashMap<(u8, u8), ListingM>,
    instances: usize,
    attempts: Vec<AttemptM>,
    presence: HashMap<(u8, u8), u64>,
    locks: HashMap<(u8, u8), LockM>,
    acquisitions: usize,
}

fn ttl_ok(ttl_ms: u64) -> bool {
    (TTL_MIN_MS..=TTL_MAX_MS).contains(&ttl_ms)
}

const INVALID: Outcome = Outcome::Err(Kind::InvalidArgument);

impl Model {
    fn lease_status(&self, tenant: u8, lease: usize) -> Result<(), Kind> {
        match self.leases.get(lease) {
            Some(l) if l.tenant == tenant && l.present => {
                if self.now < l.deadline {
                    Ok(())
                } else {
                    Err(Kind::Expired)
                }
            }
            Some(l)
                if l.tenant == tenant
                    && self.tombstones.get(&lease).is_some_and(|&d| self.now < d) =>
            {
                Err(Kind::Revoked)
            }
            _ => Err(Kind::NotFound),
        }
    }

    fn listing_visible(&self, tenant: u8, key: u8) -> Option<&ListingM> {
        self.listings
            .get(&(tenant, key))
            .filter(|l| self.lease_status(tenant, l.lease).is_ok())
    }

    fn stalled(&self) -> bool {
        self.now - self.last_sweep > STALL_MS
    }

    fn remove_listing(&mut self, tenant: u8, key: u8) {
        if let Some(l) = self.listings.remove(&(tenant, key)) {
            for a in &mut self.attempts {
                if a.present && a.instance == l.instance && a.phase != PhaseM::Consumed {
                    a.present = false;
                }
            }
        }
    }

    fn remove_lease(&mut self, lease: usize) {
        self.leases[lease].present = false;
        let tenant = self.leases[lease].tenant;
        let keys: Vec<u8> = self
            .listings
            .iter()
            .filter(|(k, l)| k.0 == tenant && l.lease == lease)
            .map(|(k, _)| k.1)
            .collect();
        for key in keys {
            self.remove_listing(tenant, key);
        }
    }

    fn pending_on(&self, instance: usize) -> usize {
        self.attempts
            .iter()
            .filter(|a| a.present && a.instance == instance && a.phase != PhaseM::Consumed)
            .count()
    }

    /// Applies `op`; `fence_of` maps an acquisition index to whether it is
    /// the current holder of its name.
    pub fn apply(&mut self, op: &Op, created_attempts: usize) -> Outcome {
        let now = self.now;
        match *op {
            Op::Grant { tenant, ttl_ms } => {
                if !ttl_ok(ttl_ms) {
                    return INVALID;
                }
                self.leases.push(LeaseM {
                    tenant,
                    deadline: now + ttl_ms,
                    present: true,
                });
                Outcome::Ok
            }
            Op::Renew {
                tenant,
                lease,
                ttl_ms,
            } => {
                if !ttl_ok(ttl_ms) {
                    return INVALID;
                }
                match self.lease_status(tenant, lease) {
                    Ok(()) => {
                        self.leases[lease].deadline = now + ttl_ms;
                        Outcome::Ok
                    }
                    Err(k) => Outcome::Err(k),
                }
            }
            Op::Revoke { tenant, lease } => match self.lease_status(tenant, lease) {
                Ok(()) => {
                    self.tombstones.insert(lease, now + TOMBSTONE_MS);
                    self.remove_lease(lease);
                    Outcome::Ok
                }
                Err(Kind::Revoked) => Outcome::Ok,
                Err(k) => Outcome::Err(k),
            },
            Op::GetLease { tenant, lease } => match self.lease_status(tenant, lease) {
                Ok(()) => Outcome::Ok,
                Err(k) => Outcome::Err(k),
            },
            Op::Publish { tenant, lease, key } => {
                if let Err(k) = self.lease_status(tenant, lease) {
                    return Outcome::Err(k);
                }
                // The narrow scope (the lease's cap) is decided before the
                // key is looked at.
                let on_lease = self
                    .listings
                    .iter()
                    .filter(|(k, l)| k.0 == tenant && l.lease == lease)
                    .count();
                if on_lease >= LISTINGS_PER_LEASE {
                    return Outcome::Err(Kind::Capacity("per-parent cap on listings".into()));
                }
                if self.listings.contains_key(&(tenant, key)) {
                    if self.listing_visible(tenant, key).is_some() {
                        return Outcome::Err(Kind::Conflict);
                    }
                    self.remove_listing(tenant, key);
                }
                self.instances += 1;
                self.listings.insert(
                    (tenant, key),
                    ListingM {
                        lease,
                        instance: self.instances,
                    },
                );
                Outcome::Ok
            }
            Op::GetListing { tenant, key } => match self.listing_visible(tenant, key) {
                Some(_) => Outcome::Ok,
                None => Outcome::Err(Kind::NotFound),
            },
            Op::Unpublish { tenant, key } => {
                if self.listing_visible(tenant, key).is_none() {
                    return Outcome::Err(Kind::NotFound);
                }
                self.remove_listing(tenant, key);
                Outcome::Ok
            }
            Op::BeginJoin {
                tenant,
                key,
                ttl_ms,
            } => {
                if !ttl_ok(ttl_ms) {
                    return INVALID;
                }
                if self.stalled() {
                    return Outcome::Err(Kind::ServiceUnavailable);
                }
                let Some(instance) = self.listing_visible(tenant, key).map(|l| l.instance) else {
                    return Outcome::Err(Kind::NotFound);
                };
                if self.pending_on(instance) >= ATTEMPTS_PER_LISTING {
                    return Outcome::Err(Kind::Capacity("per-parent cap on attempts".into()));
                }
                self.attempts.push(AttemptM {
                    tenant,
                    key,
                    instance,
                    deadline: now + ttl_ms,
                    phase: PhaseM::Pending,
                    present: true,
                });
                Outcome::Ok
            }
            Op::Bind {
                tenant, attempt, ..
            }
            | Op::Consume { tenant, attempt }
                if created_attempts > 0 =>
            {
                let is_bind = matches!(op, Op::Bind { .. });
                if self.stalled() {
                    return Outcome::Err(Kind::ServiceUnavailable);
                }
                let a = &self.attempts[attempt];
                if !a.present || a.tenant != tenant {
                    return Outcome::Err(Kind::NotFound);
                }
                if now >= a.deadline {
                    return Outcome::Err(Kind::Expired);
                }
                if a.phase == PhaseM::Consumed {
                    return Outcome::Err(Kind::ReplayRejected);
                }
                match self.listing_visible(tenant, a.key) {
                    Some(l) if l.instance == a.instance => {}
                    _ => return Outcome::Err(Kind::NotFound),
                }
                let a = &mut self.attempts[attempt];
                if is_bind {
                    let p = port_of(op);
                    match a.phase {
                        PhaseM::Pending => {
                            a.phase = PhaseM::Bound(p);
                            Outcome::Ok
                        }
                        PhaseM::Bound(q) if q == p => Outcome::Ok,
                        _ => Outcome::Err(Kind::Conflict),
                    }
                } else {
                    match a.phase {
                        PhaseM::Bound(_) => {
                            a.phase = PhaseM::Consumed;
                            a.deadline += self.grace_ms;
                            Outcome::Ok
                        }
                        _ => Outcome::Err(Kind::Conflict),
                    }
                }
            }
            Op::Cancel { tenant, attempt } if created_attempts > 0 => {
                let a = &mut self.attempts[attempt];
                if !a.present || a.tenant != tenant {
                    return Outcome::Err(Kind::NotFound);
                }
                if now >= a.deadline {
                    return Outcome::Err(Kind::Expired);
                }
                if a.phase == PhaseM::Consumed {
                    return Outcome::Err(Kind::ReplayRejected);
                }
                // The same ancestor rule as every other path.
                let (key, instance) = (a.key, a.instance);
                match self.listing_visible(tenant, key) {
                    Some(l) if l.instance == instance => {}
                    _ => return Outcome::Err(Kind::NotFound),
                }
                self.attempts[attempt].present = false;
                Outcome::Ok
            }
            Op::Bind { .. } | Op::Consume { .. } | Op::Cancel { .. } => Outcome::Ok,
            Op::Heartbeat {
                tenant,
                member,
                ttl_ms,
            } => {
                if !ttl_ok(ttl_ms) {
                    return INVALID;
                }
                self.presence.insert((tenant, member), now + ttl_ms);
                Outcome::Ok
            }
            Op::GetPresence { tenant, member } => match self.presence.get(&(tenant, member)) {
                Some(&d) if now < d => Outcome::Ok,
                Some(_) => Outcome::Err(Kind::Expired),
                None => Outcome::Err(Kind::NotFound),
            },
            Op::Leave { tenant, member } => match self.presence.get(&(tenant, member)) {
                Some(&d) if now < d => {
                    self.presence.remove(&(tenant, member));
                    Outcome::Ok
                }
                Some(_) => Outcome::Err(Kind::Expired),
                None => Outcome::Err(Kind::NotFound),
            },
            Op::TryLock {
                tenant,
                name,
                ttl_ms,
            } => {
                if !ttl_ok(ttl_ms) {
                    return INVALID;
                }
                match self.locks.get(&(tenant, name)) {
                    Some(l) if now < l.deadline => Outcome::Locked(false),
                    _ => {
                        self.acquisitions += 1;
                        self.locks.insert(
                            (tenant, name),
                            LockM {
                                deadline: now + ttl_ms,
                                acquisition: self.acquisitions,
                            },
                        );
                        Outcome::Locked(true)
                    }
                }
            }
            Op::Release {
                tenant,
                name,
                fence,
            } => {
                if self
                    .locks
                    .get(&(tenant, name))
                    .is_some_and(|l| l.acquisition == fence)
                {
                    self.locks.remove(&(tenant, name));
                }
                Outcome::Ok
            }
            Op::GetLock { tenant, name } => match self.locks.get(&(tenant, name)) {
                Some(l) if now < l.deadline => Outcome::Ok,
                _ => Outcome::Err(Kind::NotFound),
            },
            Op::Advance { ms } => {
                self.now += ms;
                Outcome::Ok
            }
            Op::Sweep => {
                let now = self.now;
                self.last_sweep = now;
                let expired: Vec<usize> = (0..self.leases.len())
                    .filter(|&i| self.leases[i].present && self.leases[i].deadline <= now)
                    .collect();
                for i in expired {
                    self.remove_lease(i);
                }
                for a in &mut self.attempts {
                    if a.present && a.deadline <= now {
                        a.present = false;
                    }
                }
                self.presence.retain(|_, d| now < *d);
                self.locks.retain(|_, l| now < l.deadline);
                self.tombstones.retain(|_, d| now < *d);
                Outcome::Ok
            }
        }
    }
}

fn port_of(op: &Op) -> u8 {
    match op {
        Op::Bind { port, .. } => *port,
        _ => 0,
    }
}

// ----- the driver ----------------------------------------------------------------

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
    let mut model = Model {
        grace_ms,
        ..Model::default()
    };
    let mut leases: Vec<LeaseId> = Vec::new();
    let mut tickets: Vec<JoinTicket> = Vec::new();
    // Per acquisition index (the model's), the store's fence.
    let mut fences: Vec<u64> = Vec::new();
    // Outcome counts, printed with RELAYSTORE_MODEL_STATS=1 to tune the mix.
    let stats = std::env::var_os("RELAYSTORE_MODEL_STATS").is_some();
    let mut seen: HashMap<String, u64> = HashMap::new();
    for (step, op) in ops.iter().enumerate() {
        // Resolve indexes against what exists; skip ops that name nothing.
        let op = match resolve(op, leases.len(), tickets.len(), fences.len()) {
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
                outcome(&store.consume(t(tenant), &tickets[attempt].token))
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

/// Maps an op's free indexes onto what exists, or drops it.
fn resolve(op: &Op, leases: usize, attempts: usize, fences: usize) -> Option<Op> {
    // Three picks in four take one of the two newest (live ones are mostly
    // recent); the rest take any, so old ids keep being exercised too.
    let pick = |i: usize, n: usize| {
        (n > 0).then(|| {
            if i % 4 == 0 {
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
        _ => {}
    }
    Some(op)
}

/// Decodes arbitrary bytes into operations (for fuzzing): two bytes per op.
pub fn decode(bytes: &[u8]) -> Vec<Op> {
    bytes
        .chunks(3)
        .filter(|c| c.len() == 3)
        .map(|c| {
            let (a, b, x) = (c[0], c[1], c[2]);
            // Mostly tenant 0, so ids usually meet their own tenant.
            let tenant = u8::from(b & 7 == 7);
            let small = (b >> 1) & 1;
            let idx = usize::from(x);
            let ttl_ms = match x % 16 {
                0 => 5,
                1 => 70_000,
                n => 10 + u64::from(n) * 2_000,
            };
            // Weighted toward the grant -> publish -> join -> bind -> consume
            // chain, which needs several steps to line up.
            const KINDS: [u8; 32] = [
                0, 0, 0, 1, 1, 2, 3, 4, 4, 4, 5, 6, 7, 7, 7, 7, 8, 8, 8, 9, 9, 9, 10, 11, 12, 13,
                14, 15, 16, 17, 18, 19,
            ];
            match KINDS[usize::from(a) % 32] {
                0 => Op::Grant { tenant, ttl_ms },
                1 => Op::Renew {
                    tenant,
                    lease: idx,
                    ttl_ms,
                },
                2 => Op::Revoke { tenant, lease: idx },
                3 => Op::GetLease { tenant, lease: idx },
                4 => Op::Publish {
                    tenant,
                    lease: idx,
                    key: small,
                },
                5 => Op::GetListing { tenant, key: small },
                6 => Op::Unpublish { tenant, key: small },
                7 => Op::BeginJoin {
                    tenant,
                    key: small,
                    ttl_ms,
                },
                8 => Op::Bind {
                    tenant,
                    attempt: idx,
                    port: small,
                },
                9 => Op::Consume {
                    tenant,
                    attempt: idx,
                },
                10 => Op::Cancel {
                    tenant,
                    attempt: idx,
                },
                11 => Op::Heartbeat {
                    tenant,
                    member: small,
                    ttl_ms,
                },
                12 => Op::GetPresence {
                    tenant,
                    member: small,
                },
                13 => Op::Leave {
                    tenant,
                    member: small,
                },
                14 => Op::TryLock {
                    tenant,
                    name: small,
                    ttl_ms,
                },
                15 => Op::Release {
                    tenant,
                    name: small,
                    fence: idx,
                },
                16 => Op::GetLock {
                    tenant,
                    name: small,
                },
                17 => Op::Advance {
                    ms: u64::from(x) * 4,
                },
                18 => Op::Advance {
                    ms: u64::from(x) * 40,
                },
                _ => Op::Sweep,
            }
        })
        .collect()
}
