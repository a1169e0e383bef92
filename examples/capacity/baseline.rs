//! The baseline of `capacity --baseline`: the store a relay engineer
//! writes first, holding the run's records under the run's rules, so the
//! capacity run can print relaystore beside it.
//!
//! One `Mutex<HashMap>` per collection, each with its tenants' counts
//! under the same lock; a `BinaryHeap` of deadlines under its own mutex;
//! a sweeper thread that wakes every 10 ms, pops what is due and removes
//! it. The rules are the ones the run relies on:
//!
//! - exactly-once consume: an attempt is taken out of its map under the
//!   map's lock, so one consume wins; a consumed token is remembered
//!   (replay memory) until its deadline plus the grace, and a second
//!   consume is refused;
//! - cascade: a revoked or expired lease takes its listings, and their
//!   join attempts, with it;
//! - caps: every collection has a per-tenant cap and a store-wide one,
//!   checked under the collection's lock; a refusal names the collection;
//! - a renewal or heartbeat moves the record's deadline only: its heap
//!   entry stays, and the sweeper pushes it again at the new deadline
//!   when it comes due early, so the heap holds one entry per record.
//!
//! Locks are taken in one order: leases, listings, attempts, then the
//! presence, replay and heap locks, each alone.

use super::Failure;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha12Rng;
use relaystore::StoreConfig;
use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::Hash;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often the sweeper wakes (the embedded store's driver ticks at the
/// same period in the run).
const SWEEP_EVERY: Duration = Duration::from_millis(10);

type Token = [u8; 16];

struct Lease {
    tenant: u64,
    #[allow(dead_code)] // held, as a relay's record would hold it
    holder: String,
    #[allow(dead_code)]
    fence: u64,
    deadline: Instant,
    /// The deadline its heap entry was pushed at.
    queued: Instant,
    listings: Vec<String>,
}

struct Listing {
    lease: u64,
    attrs: Vec<u8>,
    /// Its pending join attempts (ids; consumed ones are dropped lazily).
    attempts: Vec<u64>,
}

struct Attempt {
    tenant: u64,
    #[allow(dead_code)]
    client: String,
    token: Token,
    deadline: Instant,
    endpoint: Option<SocketAddr>,
}

struct Timed {
    deadline: Instant,
    queued: Instant,
}

/// A collection: its records and how many each tenant holds.
struct Table<K, V> {
    map: HashMap<K, V>,
    per_tenant: HashMap<u64, u64>,
    tenant_max: u64,
    total_max: u64,
    name: &'static str,
}

impl<K: Hash + Eq, V> Table<K, V> {
    fn new(name: &'static str, tenant_max: u64, total_max: u64) -> Self {
        Table {
            map: HashMap::new(),
            per_tenant: HashMap::new(),
            tenant_max,
            total_max,
            name,
        }
    }

    /// Counts one more record of `tenant`, or refuses it.
    fn admit(&mut self, tenant: u64) -> Result<(), Failure> {
        if self.map.len() as u64 >= self.total_max {
            return Err(Failure::Refused(format!("store's {} ceiling", self.name)));
        }
        let held = self.per_tenant.entry(tenant).or_default();
        if *held >= self.tenant_max {
            return Err(Failure::Refused(format!("tenant's {} quota", self.name)));
        }
        *held += 1;
        Ok(())
    }

    fn remove(&mut self, key: &K, tenant_of: impl Fn(&V) -> u64) -> Option<V> {
        let v = self.map.remove(key)?;
        if let Some(held) = self.per_tenant.get_mut(&tenant_of(&v)) {
            *held -= 1;
        }
        Some(v)
    }

    /// Whether the counts match the records.
    fn audit(&self, tenant_of: impl Fn(&K, &V) -> u64) -> Result<(), String> {
        let mut counted: HashMap<u64, u64> = HashMap::new();
        for (k, v) in &self.map {
            *counted.entry(tenant_of(k, v)).or_default() += 1;
        }
        counted.retain(|_, n| *n > 0);
        let mut held = self.per_tenant.clone();
        held.retain(|_, n| *n > 0);
        if counted != held {
            return Err(format!("{}: counts do not match the records", self.name));
        }
        Ok(())
    }
}

/// `tenant`'s lease `id`, if it is live at `now`.
fn live(
    leases: &mut Table<u64, Lease>,
    tenant: u64,
    id: u64,
    now: Instant,
) -> Result<&mut Lease, Failure> {
    leases
        .map
        .get_mut(&id)
        .filter(|l| l.tenant == tenant && l.deadline > now)
        .ok_or(Failure::Failed)
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Lease(u64),
    Presence(u64, String),
    Attempt(u64),
    Replay(Token),
}

pub struct Baseline {
    leases: Mutex<Table<u64, Lease>>,
    listings: Mutex<Table<(u64, String), Listing>>,
    attempts: Mutex<Table<u64, Attempt>>,
    presence: Mutex<Table<(u64, String), Timed>>,
    /// Consumed tokens, remembered until the attempt's deadline plus the
    /// grace: (tenant, forget at).
    replay: Mutex<Table<Token, (u64, Instant)>>,
    deadlines: Mutex<BinaryHeap<Reverse<(Instant, Key)>>>,
    next_id: AtomicU64,
    next_fence: AtomicU64,
    replay_grace: Duration,
    /// Expired members, for the run's expiry-lag reader.
    expired: crossbeam_channel::Sender<String>,
    receiver: Mutex<Option<crossbeam_channel::Receiver<String>>>,
    stop: AtomicBool,
}

thread_local! {
    static RNG: RefCell<ChaCha12Rng> = RefCell::new(ChaCha12Rng::from_os_rng());
}

fn token() -> Token {
    let mut t = [0; 16];
    RNG.with(|r| r.borrow_mut().fill_bytes(&mut t));
    t
}

impl Baseline {
    /// A store with the run's limits (the same per-tenant quotas and
    /// store-wide ceilings, and replay grace, as the embedded store's),
    /// its sweeper thread, and the receiving end of its expired members.
    pub fn new(limits: &StoreConfig) -> Arc<Self> {
        let (tx, rx) = crossbeam_channel::bounded(1 << 20);
        let (c, t) = (limits, &limits.tenant);
        Arc::new(Baseline {
            leases: Mutex::new(Table::new("lease", t.leases_max, c.leases_max)),
            listings: Mutex::new(Table::new("listing", t.listings_max, c.listings_max)),
            attempts: Mutex::new(Table::new("attempt", t.attempts_max, c.attempts_max)),
            presence: Mutex::new(Table::new("presence", t.presence_max, c.presence_max)),
            replay: Mutex::new(Table::new("replay", t.replay_max, c.replay_max)),
            deadlines: Mutex::new(BinaryHeap::new()),
            next_id: AtomicU64::new(1),
            next_fence: AtomicU64::new(1),
            replay_grace: c.replay_grace,
            expired: tx,
            receiver: Mutex::new(Some(rx)),
            stop: AtomicBool::new(false),
        })
    }

    /// Starts the sweeper thread; the receiving end of the expired
    /// members' names (the first call only).
    pub fn run_sweeper(self: &Arc<Self>) -> Option<crossbeam_channel::Receiver<String>> {
        let sweeper = Arc::clone(self);
        std::thread::spawn(move || {
            while !sweeper.stop.load(Ordering::Relaxed) {
                std::thread::sleep(SWEEP_EVERY);
                sweeper.sweep(Instant::now());
            }
        });
        self.receiver.lock().unwrap().take()
    }

    /// Stops the sweeper thread (at its next wake).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    fn queue(&self, deadline: Instant, key: Key) {
        self.deadlines
            .lock()
            .unwrap()
            .push(Reverse((deadline, key)));
    }

    pub fn grant(&self, tenant: u64, holder: &str, ttl: Duration) -> Result<u64, Failure> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let fence = self.next_fence.fetch_add(1, Ordering::Relaxed);
        let deadline = Instant::now() + ttl;
        {
            let mut leases = self.leases.lock().unwrap();
            leases.admit(tenant)?;
            leases.map.insert(
                id,
                Lease {
                    tenant,
                    holder: holder.to_owned(),
                    fence,
                    deadline,
                    queued: deadline,
                    listings: Vec::new(),
                },
            );
        }
        self.queue(deadline, Key::Lease(id));
        Ok(id)
    }

    pub fn publish(
        &self,
        tenant: u64,
        lease: u64,
        name: &str,
        attrs: &[u8],
    ) -> Result<(), Failure> {
        let now = Instant::now();
        let mut leases = self.leases.lock().unwrap();
        let l = live(&mut leases, tenant, lease, now)?;
        let mut listings = self.listings.lock().unwrap();
        let key = (tenant, name.to_owned());
        if listings.map.contains_key(&key) {
            return Err(Failure::Failed);
        }
        listings.admit(tenant)?;
        listings.map.insert(
            key,
            Listing {
                lease,
                attrs: attrs.to_vec(),
                attempts: Vec::new(),
            },
        );
        l.listings.push(name.to_owned());
        Ok(())
    }

    pub fn heartbeat(&self, tenant: u64, member: &str, ttl: Duration) -> Result<(), Failure> {
        let deadline = Instant::now() + ttl;
        let key = (tenant, member.to_owned());
        {
            let mut presence = self.presence.lock().unwrap();
            if let Some(p) = presence.map.get_mut(&key) {
                p.deadline = deadline;
                return Ok(());
            }
            presence.admit(tenant)?;
            presence.map.insert(
                key,
                Timed {
                    deadline,
                    queued: deadline,
                },
            );
        }
        self.queue(deadline, Key::Presence(tenant, member.to_owned()));
        Ok(())
    }

    /// A visible listing's attributes.
    pub fn get_listing(&self, tenant: u64, name: &str) -> Result<Vec<u8>, Failure> {
        let now = Instant::now();
        let (lease, attrs) = {
            let listings = self.listings.lock().unwrap();
            let l = listings
                .map
                .get(&(tenant, name.to_owned()))
                .ok_or(Failure::Failed)?;
            (l.lease, l.attrs.clone())
        };
        let leases = self.leases.lock().unwrap();
        match leases.map.get(&lease) {
            Some(l) if l.deadline > now => Ok(attrs),
            _ => Err(Failure::Failed),
        }
    }

    /// Begins a join of a visible listing: the attempt's id and token.
    pub fn begin_join(
        &self,
        tenant: u64,
        listing: &str,
        client: &str,
        ttl: Duration,
    ) -> Result<(u64, Token), Failure> {
        let now = Instant::now();
        let deadline = now + ttl;
        let (id, secret) = (self.next_id.fetch_add(1, Ordering::Relaxed), token());
        let leases = self.leases.lock().unwrap();
        let mut listings = self.listings.lock().unwrap();
        let l = listings
            .map
            .get_mut(&(tenant, listing.to_owned()))
            .ok_or(Failure::Failed)?;
        if leases.map.get(&l.lease).is_none_or(|l| l.deadline <= now) {
            return Err(Failure::Failed);
        }
        drop(leases);
        let mut attempts = self.attempts.lock().unwrap();
        attempts.admit(tenant)?;
        attempts.map.insert(
            id,
            Attempt {
                tenant,
                client: client.to_owned(),
                token: secret,
                deadline,
                endpoint: None,
            },
        );
        l.attempts.retain(|a| attempts.map.contains_key(a));
        l.attempts.push(id);
        drop(attempts);
        drop(listings);
        self.queue(deadline, Key::Attempt(id));
        Ok((id, secret))
    }

    /// Binds a pending attempt to the address its client came from; the
    /// same address again is the same binding, another is refused.
    pub fn bind_endpoint(
        &self,
        tenant: u64,
        attempt: u64,
        secret: &Token,
        addr: SocketAddr,
    ) -> Result<(), Failure> {
        let now = Instant::now();
        let mut attempts = self.attempts.lock().unwrap();
        let a = attempts
            .map
            .get_mut(&attempt)
            .filter(|a| a.tenant == tenant && a.token == *secret && a.deadline > now)
            .ok_or(Failure::Failed)?;
        match a.endpoint {
            None => a.endpoint = Some(addr),
            Some(bound) if bound == addr => {}
            Some(_) => return Err(Failure::Failed),
        }
        Ok(())
    }

    /// Consumes a bound token, exactly once: the bound address.
    pub fn consume(
        &self,
        tenant: u64,
        attempt: u64,
        secret: &Token,
    ) -> Result<SocketAddr, Failure> {
        let now = Instant::now();
        let (addr, forget_at) = {
            let mut attempts = self.attempts.lock().unwrap();
            match attempts.map.get(&attempt) {
                Some(a) if a.tenant == tenant && a.token == *secret && a.deadline > now => {
                    let addr = a.endpoint.ok_or(Failure::Failed)?;
                    let deadline = a.deadline;
                    attempts.remove(&attempt, |a| a.tenant);
                    (addr, deadline + self.replay_grace)
                }
                // A replay (its token is in the replay memory) or a token
                // never issued: refused either way.
                _ => return Err(Failure::Failed),
            }
        };
        {
            let mut replay = self.replay.lock().unwrap();
            replay.admit(tenant)?;
            replay.map.insert(*secret, (tenant, forget_at));
        }
        self.queue(forget_at, Key::Replay(*secret));
        Ok(addr)
    }

    pub fn renew(&self, tenant: u64, lease: u64, ttl: Duration) -> Result<(), Failure> {
        let now = Instant::now();
        let mut leases = self.leases.lock().unwrap();
        let l = live(&mut leases, tenant, lease, now)?;
        l.deadline = now + ttl;
        Ok(())
    }

    /// Revokes a lease with its listings and their attempts.
    pub fn revoke(&self, tenant: u64, lease: u64) -> Result<(), Failure> {
        let mut leases = self.leases.lock().unwrap();
        match leases.map.get(&lease) {
            Some(l) if l.tenant == tenant => {}
            _ => return Err(Failure::Failed),
        }
        let l = leases.remove(&lease, |l| l.tenant).ok_or(Failure::Failed)?;
        self.cascade(tenant, l.listings);
        Ok(())
    }

    /// Removes a gone lease's listings and their attempts (the leases lock
    /// is held by the caller).
    fn cascade(&self, tenant: u64, names: Vec<String>) {
        let mut listings = self.listings.lock().unwrap();
        let mut attempts = self.attempts.lock().unwrap();
        for name in names {
            if let Some(l) = listings.remove(&(tenant, name), |_| tenant) {
                for a in l.attempts {
                    attempts.remove(&a, |a| a.tenant);
                }
            }
        }
    }

    /// Removes every record due at `now`; an entry whose record's deadline
    /// moved later goes back into the heap at that deadline.
    fn sweep(&self, now: Instant) {
        let mut due = Vec::new();
        {
            let mut heap = self.deadlines.lock().unwrap();
            while heap.peek().is_some_and(|Reverse((at, _))| *at <= now) {
                due.push(heap.pop().expect("peeked").0);
            }
        }
        let mut again = Vec::new();
        for (at, key) in due {
            match key {
                Key::Lease(id) => {
                    let mut leases = self.leases.lock().unwrap();
                    let Some(l) = leases.map.get_mut(&id).filter(|l| l.queued == at) else {
                        continue;
                    };
                    if l.deadline > now {
                        l.queued = l.deadline;
                        again.push(Reverse((l.deadline, Key::Lease(id))));
                    } else {
                        let l = leases.remove(&id, |l| l.tenant).expect("present");
                        self.cascade(l.tenant, l.listings);
                    }
                }
                Key::Presence(tenant, member) => {
                    let mut presence = self.presence.lock().unwrap();
                    let key = (tenant, member);
                    let Some(p) = presence.map.get_mut(&key).filter(|p| p.queued == at) else {
                        continue;
                    };
                    if p.deadline > now {
                        p.queued = p.deadline;
                        again.push(Reverse((p.deadline, Key::Presence(tenant, key.1))));
                    } else {
                        presence.remove(&key, |_| tenant);
                        drop(presence);
                        let _ = self.expired.try_send(key.1);
                    }
                }
                Key::Attempt(id) => {
                    let mut attempts = self.attempts.lock().unwrap();
                    if attempts.map.get(&id).is_some_and(|a| a.deadline <= now) {
                        attempts.remove(&id, |a| a.tenant);
                    }
                }
                Key::Replay(token) => {
                    let mut replay = self.replay.lock().unwrap();
                    if let Some(&(tenant, forget_at)) = replay.map.get(&token) {
                        if forget_at <= now {
                            replay.remove(&token, |_| tenant);
                        }
                    }
                }
            }
        }
        if !again.is_empty() {
            self.deadlines.lock().unwrap().extend(again);
        }
    }

    /// Records held: leases, listings, presence.
    pub fn counts(&self) -> (usize, usize, usize) {
        (
            self.leases.lock().unwrap().map.len(),
            self.listings.lock().unwrap().map.len(),
            self.presence.lock().unwrap().map.len(),
        )
    }

    /// Checks the counts against the records, and that every listing and
    /// its lease name each other.
    pub fn audit(&self) -> Result<(), String> {
        let leases = self.leases.lock().unwrap();
        let listings = self.listings.lock().unwrap();
        let attempts = self.attempts.lock().unwrap();
        leases.audit(|_, l| l.tenant)?;
        listings.audit(|(tenant, _), _| *tenant)?;
        attempts.audit(|_, a| a.tenant)?;
        self.presence
            .lock()
            .unwrap()
            .audit(|(tenant, _), _| *tenant)?;
        self.replay
            .lock()
            .unwrap()
            .audit(|_, (tenant, _)| *tenant)?;
        for ((tenant, name), l) in &listings.map {
            match leases.map.get(&l.lease) {
                Some(lease) if lease.tenant == *tenant && lease.listings.contains(name) => {}
                _ => return Err(format!("listing {name} of tenant {tenant} has no lease")),
            }
        }
        for (id, l) in &leases.map {
            for name in &l.listings {
                if !listings.map.contains_key(&(l.tenant, name.clone())) {
                    return Err(format!("lease {id} names a missing listing {name}"));
                }
            }
        }
        Ok(())
    }
}
