//! The in-memory schedule hub: each tenant's schedule book under one
//! mutex (rung `Schedule`), held while a run enqueues its fires, all or
//! none, and while it checks that its runner leads. What a schedule promises
//! is the contract's (`contract/schedule.rs`).

use crate::base::error::{Error, Result, Scope};
use crate::base::ids::TenantId;
use crate::base::sync::{lock_at, Arc, AtomicU64, Mutex, Ordering, Rung};
use crate::base::words::LimitSnapshot;
use crate::contract::config::{Limits, SCHEDULE_CATCH_UP_MAX};
use crate::contract::events::Collection;
use crate::contract::rules::catch_up;
use crate::contract::rules::ScheduleLimits;
use crate::contract::schedule::{ScheduleInfo, ScheduleRun};
use crate::mem::quota::Counter;
use crate::mem::shard::{ShardMap, Upsert};
use std::collections::BTreeMap;
use std::time::Duration;

pub(crate) struct Schedule {
    spec: Arc<str>,
    interval_ms: u64,
    next_ms: u64,
    queue: Arc<str>,
    payload: Arc<[u8]>,
    fired: u64,
}

/// One tenant's schedules.
#[derive(Default)]
pub(crate) struct Book {
    schedules: BTreeMap<Arc<str>, Schedule>,
}

/// A tenant's book in the map, with a count readable without its lock:
/// the schedules it holds plus schedulings under way, so an empty book is
/// forgotten (the map holds books only for tenants with schedules) and a
/// scheduling never writes into a book that was forgotten under it.
#[derive(Default)]
pub(crate) struct Shelf {
    held: AtomicU64,
    book: Mutex<Book>,
}

/// Rounds a scheduling makes when its tenant's book keeps being forgotten
/// under it, before it answers `InFlight` (retry).
const SHELF_ROUNDS_MAX: usize = 4;

/// How a fire reaches its queue: enqueue `n` copies of the payload, all or
/// none.
/// Enqueues as many as fit of `n` jobs carrying the payload onto the
/// queue (at least one, or the refusal of the first): how many it took.
pub(crate) type Fire<'a> = &'a mut dyn FnMut(&str, &[u8], usize) -> Result<u64>;

/// Whether the runner leads now (`LeadershipLost` if not).
pub(crate) type Leads<'a> = &'a mut dyn FnMut() -> Result<()>;

pub(crate) struct ScheduleHub {
    books: ShardMap<TenantId, Arc<Shelf>>,
    count: Counter,
    limits: ScheduleLimits,
    /// The caps that change at run time (per tenant and store-wide), read
    /// whole by each scheduling.
    live: Arc<LimitSnapshot<Limits>>,
}

impl ScheduleHub {
    pub(crate) fn new(limits: ScheduleLimits, live: Arc<LimitSnapshot<Limits>>) -> Self {
        let ceiling = live.read(|l| l.ceiling(Collection::Schedules));
        ScheduleHub {
            books: ShardMap::with_capacity(16),
            count: Counter::new(Scope::Collection(Collection::Schedules), ceiling),
            limits,
            live,
        }
    }

    /// Sets the counter's own limit to `l`'s (what it reports; every
    /// admission takes its limits from the snapshot).
    pub(crate) fn relimit(&self, l: &Limits) {
        self.count.set_limit(l.ceiling(Collection::Schedules));
    }

    /// Schedules held, store-wide.
    pub(crate) fn len(&self) -> u64 {
        self.count.used()
    }

    fn shelf(&self, tenant: TenantId) -> Arc<Shelf> {
        if let Some(shelf) = self.books.read(&tenant, Arc::clone) {
            return shelf;
        }
        let (shelf, _) = self.books.upsert(tenant, |held| match held {
            Some(s) => Upsert::Keep(Arc::clone(s)),
            None => {
                let s = Arc::new(Shelf::default());
                Upsert::Put(Arc::clone(&s), s)
            }
        });
        shelf
    }

    /// Forgets the tenant's book if it holds nothing and no scheduling is
    /// under way in it (atomics only under the shard lock).
    fn forget_if_empty(&self, tenant: TenantId) {
        self.books.remove_if(&tenant, |s| {
            if s.held.load(Ordering::Acquire) == 0 {
                Ok(())
            } else {
                Err(())
            }
        });
    }

    /// Schedules `name` (a new one, or a replacement of the same name,
    /// which keeps nothing of the old one) from `now_ms`.
    pub(crate) fn schedule(
        &self,
        tenant: TenantId,
        name: Arc<str>,
        spec: &str,
        queue: Arc<str>,
        payload: Arc<[u8]>,
        now_ms: u64,
    ) -> Result<()> {
        let interval_ms = self.interval_ms(spec)?;
        for _ in 0..SHELF_ROUNDS_MAX {
            let shelf = self.shelf(tenant);
            let mut book = lock_at(Rung::Schedule, &shelf.book);
            // Count this scheduling first, so the book is not forgotten
            // from here on; then make sure it was not forgotten before.
            shelf.held.fetch_add(1, Ordering::SeqCst);
            let current = self
                .books
                .read(&tenant, |s| Arc::ptr_eq(s, &shelf))
                .unwrap_or(false);
            if !current {
                shelf.held.fetch_sub(1, Ordering::SeqCst);
                continue;
            }
            let added = self.add(&mut book, name, spec, interval_ms, queue, payload, now_ms);
            shelf
                .held
                .store(book.schedules.len() as u64, Ordering::SeqCst);
            drop(book);
            if added.is_err() {
                self.forget_if_empty(tenant);
            }
            return added;
        }
        Err(Error::InFlight)
    }

    /// The interval of `spec` in milliseconds, within the configured range.
    pub(crate) fn interval_ms(&self, spec: &str) -> Result<u64> {
        self.limits.interval_ms(spec)
    }

    /// Whether the schedules take `changes` (tenant, name, and `true` for
    /// [`schedule`](Self::schedule), `false` for
    /// [`unschedule`](Self::unschedule)), one after another in staging
    /// order, as those calls would: a new schedule within its tenant's cap
    /// and the store's ceiling, a replacement of one the tenant holds, an
    /// unschedule of one it holds; each tenant's name at most once. The
    /// store-wide count runs across every tenant's changes. A
    /// transaction's check before its commit, inside the closed gate, so
    /// nothing changes the books between their reads here.
    pub(crate) fn check(&self, changes: &[(TenantId, &str, bool)]) -> Result<()> {
        // Per tenant the changes name: how many it holds, and which of
        // the named schedules it holds, each book read under its lock.
        let mut books: Vec<(TenantId, u64, Vec<&str>)> = Vec::new();
        for &(tenant, _, _) in changes {
            if books.iter().any(|b| b.0 == tenant) {
                continue;
            }
            let (held, holds) = match self.books.read(&tenant, Arc::clone) {
                Some(shelf) => {
                    let book = lock_at(Rung::Schedule, &shelf.book);
                    let holds = changes
                        .iter()
                        .filter(|c| c.0 == tenant && book.schedules.contains_key(c.1))
                        .map(|c| c.1)
                        .collect();
                    (book.schedules.len() as u64, holds)
                }
                None => (0, Vec::new()),
            };
            books.push((tenant, held, holds));
        }
        let mut count = self.count.used();
        for &(tenant, name, adds) in changes {
            let book = books
                .iter_mut()
                .find(|b| b.0 == tenant)
                .expect("read above");
            match (adds, book.2.contains(&name)) {
                (false, false) => return Err(Error::NotFound),
                (false, true) => {
                    book.1 -= 1;
                    count -= 1;
                }
                (true, true) => {}
                (true, false) => {
                    let ceiling = self.tenant_room(book.1)?;
                    if count >= ceiling {
                        return Err(Error::capacity(
                            Scope::Collection(Collection::Schedules),
                            ceiling,
                            count,
                        ));
                    }
                    book.1 += 1;
                    count += 1;
                }
            }
        }
        Ok(())
    }

    /// Refuses one more schedule of a tenant holding `held` if that is
    /// its cap; else the store's ceiling, which the caller checks against
    /// the store-wide count. The one cap rule of new schedules.
    fn tenant_room(&self, held: u64) -> Result<u64> {
        let (per_tenant, ceiling) = self.live.read(|l| {
            let c = l.ceiling(Collection::Schedules);
            (l.schedules_per_tenant_max, c)
        });
        if held >= per_tenant {
            let scope = Scope::Tenant(Collection::Schedules);
            return Err(Error::capacity(scope, per_tenant, held));
        }
        Ok(ceiling)
    }

    /// Puts the schedule in `book`, within the caps.
    #[allow(clippy::too_many_arguments)]
    fn add(
        &self,
        book: &mut Book,
        name: Arc<str>,
        spec: &str,
        interval_ms: u64,
        queue: Arc<str>,
        payload: Arc<[u8]>,
        now_ms: u64,
    ) -> Result<()> {
        if let Some(held) = book.schedules.get(&name) {
            if held.interval_ms == interval_ms && held.queue == queue && held.payload == payload {
                // A repeat (a retried call): the schedule keeps its grid
                // and its fires.
                return Ok(());
            }
        }
        let replacing = book.schedules.contains_key(&name);
        if !replacing {
            let ceiling = self.tenant_room(book.schedules.len() as u64)?;
            self.count.acquire_under(1, ceiling)?;
        }
        book.schedules.insert(
            name,
            Schedule {
                spec: Arc::from(spec),
                interval_ms,
                next_ms: now_ms.saturating_add(interval_ms),
                queue,
                payload,
                fired: 0,
            },
        );
        Ok(())
    }

    /// Removes schedule `name`.
    pub(crate) fn unschedule(&self, tenant: TenantId, name: &str) -> Result<()> {
        let shelf = self
            .books
            .read(&tenant, Arc::clone)
            .ok_or(Error::NotFound)?;
        let mut book = lock_at(Rung::Schedule, &shelf.book);
        let removed = book.schedules.remove(name);
        shelf
            .held
            .store(book.schedules.len() as u64, Ordering::SeqCst);
        drop(book);
        removed.ok_or(Error::NotFound)?;
        self.count.release(1);
        self.forget_if_empty(tenant);
        Ok(())
    }

    /// The tenant's schedules at `now_ms`, by name.
    pub(crate) fn list(&self, tenant: TenantId, now_ms: u64) -> Vec<ScheduleInfo> {
        let Some(shelf) = self.books.read(&tenant, Arc::clone) else {
            return Vec::new();
        };
        let book = lock_at(Rung::Schedule, &shelf.book);
        book.schedules
            .iter()
            .map(|(name, s)| ScheduleInfo {
                name: Arc::clone(name),
                spec: Arc::clone(&s.spec),
                interval: Duration::from_millis(s.interval_ms),
                queue: Arc::clone(&s.queue),
                next_in: Duration::from_millis(s.next_ms.saturating_sub(now_ms)),
                fired: s.fired,
            })
            .collect()
    }

    /// Schedules tenant `tenant` holds, and its cap.
    pub(crate) fn tenant_usage(&self, tenant: TenantId) -> (u64, u64) {
        let held = self.books.read(&tenant, Arc::clone).map_or(0, |s| {
            lock_at(Rung::Schedule, &s.book).schedules.len() as u64
        });
        (held, self.live.read(|l| l.schedules_per_tenant_max))
    }

    /// Fires what is due at `now()` for a runner, if `leads` says it
    /// leads. Both are asked under the book, so no other run fires between
    /// the answer and these fires.
    pub(crate) fn run(
        &self,
        tenant: TenantId,
        leads: Leads,
        now: &dyn Fn() -> u64,
        fire: Fire,
    ) -> Result<ScheduleRun> {
        let mut run = ScheduleRun::default();
        let early =
            crate::base::faults::active(crate::base::faults::StoreFault::LeaderCheckedOutside);
        if early {
            // Broken twin: the lead is checked before the book is taken.
            leads()?;
        }
        let Some(shelf) = self.books.read(&tenant, Arc::clone) else {
            return Ok(run);
        };
        let mut book = lock_at(Rung::Schedule, &shelf.book);
        if !early {
            leads()?;
        }
        let now_ms = now();
        for (name, s) in book.schedules.iter_mut() {
            let most = u64::from(SCHEDULE_CATCH_UP_MAX);
            let wanted = catch_up(s.next_ms, now_ms, s.interval_ms, most, u64::MAX);
            if wanted.due > 0 {
                // The queue takes what it has room for; the step for that
                // room is the one rule every engine applies.
                match fire(&s.queue, &s.payload, wanted.fires as usize) {
                    Ok(taken) => {
                        let step = catch_up(s.next_ms, now_ms, s.interval_ms, most, taken);
                        run.fired += step.fires;
                        run.skipped += step.skipped();
                        s.fired += step.fires;
                        s.next_ms = step.next_ms;
                    }
                    Err(e) => run.refused.push((Arc::clone(name), e)),
                }
            }
            let next_in = Duration::from_millis(s.next_ms.saturating_sub(now_ms));
            run.next_in = Some(run.next_in.map_or(next_in, |n| n.min(next_in)));
        }
        Ok(run)
    }

    /// Schedules held per the books against the count.
    #[cfg(any(test, feature = "internals"))]
    pub(crate) fn audit(&self) -> std::result::Result<(), String> {
        let mut shelves = Vec::new();
        self.books
            .for_each(|t, s| shelves.push((*t, Arc::clone(s))));
        let mut held = 0;
        for (tenant, shelf) in &shelves {
            let n = lock_at(Rung::Schedule, &shelf.book).schedules.len() as u64;
            if n == 0 || shelf.held.load(Ordering::Acquire) != n {
                return Err(format!(
                    "schedules: {tenant}'s book holds {n}, counted {} (an empty book is forgotten)",
                    shelf.held.load(Ordering::Acquire)
                ));
            }
            held += n;
        }
        if held != self.count.used() {
            return Err(format!(
                "schedules: {held} held, {} admitted",
                self.count.used()
            ));
        }
        Ok(())
    }
}
