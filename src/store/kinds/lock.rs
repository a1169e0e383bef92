//! Named locks with a TTL and fencing tokens.
//!
//! `try_lock` either takes the lock (returning a [`LockGuard`] with a fence
//! strictly greater than every earlier fence) or reports that another live
//! owner holds it (`Ok(None)`: losing is a value, not an error). A lock lapses
//! silently at its deadline and can then be taken again. `release` checks the
//! fence, so a holder whose lock lapsed can never release its successor's.

use crate::base::error::{Error, Result};
use crate::base::ids::{LeaseId, TenantId};
use crate::base::name::Holder;
use crate::base::name::Name;
use crate::base::sync::Arc;
use crate::base::sync::Ordering;
use crate::base::time::MonoTime;
use crate::contract::config::StoreConfig;
use crate::contract::events::Cause;
use crate::contract::events::RecordId;
use crate::contract::names::RESERVED_PREFIX;
use crate::contract::relay::LockInfo;
use crate::mem::named_slab::{NamedSlab, NamedTable};
use crate::mem::record::{Head, Stamp};
use crate::mem::table::Removed;
use crate::store::protocol::attach::ChildOf;
use crate::store::protocol::attach::{Child, OnLease, Parent};
use crate::store::protocol::decide;
use crate::store::protocol::retire::Stored;
use crate::store::protocol::retire::Why;
use crate::store::protocol::visible::Ancestry;
use crate::store::tenant::Owner;
use crate::store::{owned_by, Collection, NameKey, NameLookup, Renewal, Store};
use std::sync::atomic::AtomicU64;
use std::time::Duration;

pub(crate) struct Lock {
    pub(in crate::store) owner: Owner,
    pub(in crate::store) holder: Holder,
    fence: u64,
    pub(in crate::store) lease: Option<u64>,
    pub(in crate::store) attached: bool,
}

impl Stored for Lock {
    type Key = NameKey;
    type Storage = NamedSlab<NameKey, Self>;

    fn table(store: &Store) -> &NamedTable<NameKey, Lock> {
        &store.shared.locks
    }

    fn retire(
        store: &Store,
        place: u64,
        removed: Removed<NameKey, Self>,
        why: Why,
        _now: MonoTime,
        detach: bool,
    ) -> usize {
        store.retire_lock(place, removed, why, detach);
        0
    }
}

impl OnLease for Lock {
    const COLLECTION: Collection = Collection::Locks;

    fn cap(config: &StoreConfig) -> usize {
        config.locks_per_lease_max
    }

    fn lease_of(&self) -> Option<u64> {
        self.lease
    }

    fn key_at(store: &Store, place: u64) -> Option<NameKey> {
        store.shared.locks.key_at(place)
    }

    #[cfg(any(test, feature = "internals"))]
    fn named(key: &NameKey) -> (TenantId, Name) {
        key.clone()
    }
}

impl Child for Lock {
    const QUOTAS: &'static [Collection] = &[Collection::Locks];

    fn attached(&self) -> bool {
        self.attached
    }

    fn set_attached(&mut self) {
        self.attached = true;
    }

    fn ancestry(&self) -> Ancestry {
        Ancestry {
            owner_valid: self.owner.valid(),
            lease: self.lease,
            listing: None,
        }
    }

    /// The fence is the version the lock was inserted at.
    fn made_at(&self, version: u64) -> bool {
        self.fence == version
    }
}

/// A held lock: its fence plus a handle on the store, so it is `'static`
/// and `Send` and can move into a spawned task. It does **not** release on
/// drop (a lock outliving its guard lapses at its deadline, which is what a
/// fenced lock is for); call [`release`](Self::release).
///
/// ```
/// use relaystore::{time::ManualClock, Store, StoreConfig, TenantId};
/// use std::{sync::Arc, time::Duration};
///
/// // A resource that refuses writes from stale holders by fence.
/// struct Storage { highest_fence: u64, value: &'static str }
/// impl Storage {
///     fn write(&mut self, fence: u64, value: &'static str) -> Result<(), &'static str> {
///         if fence < self.highest_fence { return Err("stale holder"); }
///         self.highest_fence = fence;
///         self.value = value;
///         Ok(())
///     }
/// }
///
/// let clock = Arc::new(ManualClock::new());
/// let store = Store::new(StoreConfig::default(), clock.clone())?;
/// let mut storage = Storage { highest_fence: 0, value: "" };
/// let t = TenantId(1);
///
/// let first = store.try_lock(t, "match-42", "worker-a", Duration::from_secs(5), None)?.unwrap();
/// assert!(store.try_lock(t, "match-42", "worker-b", Duration::from_secs(5), None)?.is_none());
///
/// clock.advance(Duration::from_secs(6)); // worker-a stalls; its lock lapses
/// let second = store.try_lock(t, "match-42", "worker-b", Duration::from_secs(5), None)?.unwrap();
/// assert!(second.fence() > first.fence());
/// storage.write(second.fence(), "b").unwrap();
/// assert_eq!(storage.write(first.fence(), "a"), Err("stale holder")); // fenced off
/// first.release()?; // cannot release worker-b's lock
/// assert!(store.get_lock(t, "match-42").is_ok());
/// # Ok::<(), relaystore::Error>(())
/// ```
#[must_use = "a lock is held until released or until its TTL lapses"]
pub struct LockGuard {
    store: Store,
    tenant: TenantId,
    name: Name,
    fence: u64,
    deadline_ms: AtomicU64,
}

impl LockGuard {
    /// The fencing token: strictly greater than any earlier holder's.
    pub fn fence(&self) -> u64 {
        self.fence
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tenant the lock belongs to.
    pub fn tenant(&self) -> TenantId {
        self.tenant
    }

    /// Resets the lock's deadline to `now + ttl`. [`Error::Expired`] once it
    /// has lapsed, even if nobody took it since.
    pub fn renew(&self, ttl: Duration) -> Result<Renewal> {
        match self
            .store
            .renew_lock_at(self.tenant, &self.name, self.fence, ttl)
        {
            Ok((stamp, now)) => {
                self.deadline_ms
                    .store(stamp.deadline.as_millis(), Ordering::Release);
                Ok(Renewal::of(stamp, now))
            }
            // Reclaimed after lapsing: the guard knows its own deadline.
            Err(Error::NotFound) if self.store.shared.clock.now() >= self.deadline() => {
                Err(Error::Expired)
            }
            Err(e) => Err(e),
        }
    }

    /// Releases the lock if this guard still holds it. Idempotent, and never
    /// releases a later holder's lock.
    pub fn release(&self) -> Result<()> {
        self.store.release_lock(self.tenant, &self.name, self.fence)
    }

    /// The deadline as of the last acquire or renew by this guard.
    pub fn deadline(&self) -> MonoTime {
        MonoTime::from_millis(self.deadline_ms.load(Ordering::Acquire))
    }

    /// The state of a lock this guard has just taken for `holder`: the
    /// engine contract's answer to `try_lock`. A lock's version is its
    /// fence when it is taken.
    pub(in crate::store) fn taken_by(self, holder: &str) -> LockInfo {
        LockInfo {
            holder: Holder::new(holder),
            fence: self.fence,
            version: self.fence,
            remaining: self
                .deadline()
                .saturating_since(self.store.shared.clock.now()),
        }
    }
}

impl std::fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("tenant", &self.tenant)
            .field("name", &self.name)
            .field("fence", &self.fence)
            .finish()
    }
}

impl Store {
    /// Takes the lock `name` for `owner` for `ttl`, or returns `Ok(None)` if
    /// another live owner holds it. With `lease`, the lock is attached to the
    /// lease and released (cause `Cascaded`) when the lease goes.
    ///
    /// Empty name: [`Error::InvalidName`]; a name starting with `__`:
    /// [`Error::ReservedName`]; `ttl == 0` or outside the configured range:
    /// [`Error::InvalidArgument`].
    pub fn try_lock(
        &self,
        tenant: TenantId,
        name: &str,
        owner: &str,
        ttl: Duration,
        lease: Option<LeaseId>,
    ) -> Result<Option<LockGuard>> {
        if name.starts_with(RESERVED_PREFIX) {
            return Err(Error::ReservedName);
        }
        self.take_lock(tenant, name, owner, ttl, lease)
    }

    /// [`try_lock`](Self::try_lock) under any name (the store's own
    /// reserved ones too).
    pub(in crate::store) fn take_lock(
        &self,
        tenant: TenantId,
        name: &str,
        owner: &str,
        ttl: Duration,
        lease: Option<LeaseId>,
    ) -> Result<Option<LockGuard>> {
        let name = self.key_name(name)?;
        self.check_name(owner)?;
        let holder = Holder::new(owner);
        let lease = lease.map(|l| self.lease_seq(l)).transpose()?;
        let now = self.shared.clock.now();
        let deadline = self.deadline(now, ttl)?;
        let key: NameKey = (tenant, name.clone());
        let parent = match lease {
            Some(seq) => Parent::Lease {
                seq,
                kind: Lock::CHILD,
            },
            None => Parent::None,
        };
        // The fence is the record's version at insert: issued under the
        // shard lock and strictly increasing per name across holders (and
        // above every fence of an earlier incarnation), so a later holder
        // always has a higher fence.
        let made = self.create(tenant, key, parent, now, deadline, |owner, version| Lock {
            owner,
            holder,
            fence: version,
            lease,
            attached: false,
        });
        match made {
            Ok(stamp) => Ok(Some(LockGuard {
                store: self.clone(),
                tenant,
                name,
                fence: stamp.version,
                deadline_ms: AtomicU64::new(deadline),
            })),
            // Another live owner holds it: losing is a value.
            Err(Error::Conflict { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The lock `name`, if a live, visible owner holds it.
    pub fn get_lock(&self, tenant: TenantId, name: &str) -> Result<LockInfo> {
        self.check_name(name)?;
        let key: &dyn NameLookup = &(tenant, name);
        let now = self.shared.clock.now();
        let seen = self.shared.locks.read(key, now, |v, stamp| {
            (v.attached && v.owner.valid()).then(|| {
                (
                    v.lease,
                    LockInfo {
                        holder: v.holder.clone(),
                        fence: v.fence,
                        version: stamp.version,
                        remaining: stamp.remaining(now),
                    },
                )
            })
        });
        match seen {
            Ok(Some((lease, info))) => {
                if let Some(seq) = lease {
                    self.lease_status(tenant, seq, now)
                        .map_err(|_| Error::NotFound)?;
                }
                Ok(info)
            }
            Ok(None) | Err(Error::Expired) => Err(Error::NotFound),
            Err(e) => Err(e),
        }
    }

    /// Renews the lock `name` held with `fence` (what [`LockGuard::renew`]
    /// does, for callers that keep the fence rather than the guard).
    /// [`Error::Expired`] once it has lapsed, also if another owner has
    /// taken it since; [`Error::NotFound`] after it was released.
    pub fn renew_lock(
        &self,
        tenant: TenantId,
        name: &str,
        fence: u64,
        ttl: Duration,
    ) -> Result<Renewal> {
        self.renew_lock_at(tenant, name, fence, ttl)
            .map(|(stamp, now)| Renewal::of(stamp, now))
    }

    /// [`renew_lock`](Self::renew_lock), also returning the record's stamp
    /// and the reading it was renewed at.
    fn renew_lock_at(
        &self,
        tenant: TenantId,
        name: &str,
        fence: u64,
        ttl: Duration,
    ) -> Result<(Stamp, MonoTime)> {
        self.check_name(name)?;
        let key: &dyn NameLookup = &(tenant, name);
        let fence = self.fence_of_this_incarnation(fence)?;
        self.refuse_if_stopped()?;
        let now = self.shared.clock.now();
        let deadline = self.deadline(now, ttl)?;
        // A lock attached to a lease that is no longer visible is gone.
        if let Ok(Some(seq)) = self.shared.locks.read(key, now, |v, _| v.lease) {
            self.lease_status(tenant, seq, now)
                .map_err(|_| Error::NotFound)?;
        }
        let guard = |_: &Head, lock: &Lock| {
            if lock.fence == fence && lock.owner.valid() {
                Ok(())
            } else {
                Err(Error::Expired)
            }
        };
        self.shared
            .locks
            .renew_guarded(key, now, deadline, None, guard)
            .map(|stamp| (stamp, now))
    }

    /// Releases the lock `name` if it is still held with `fence`. Idempotent,
    /// and never releases a later holder's lock.
    pub fn release_lock(&self, tenant: TenantId, name: &str, fence: u64) -> Result<()> {
        let key = (tenant, self.key_name(name)?);
        let fence = self.fence_of_this_incarnation(fence)?;
        let now = self.shared.clock.now();
        // Live or lapsed-but-unswept: only this fence's lock is removed.
        match self.shared.locks.remove_placed(
            &key,
            |v, _, _| owned_by(decide::release(v.fence, fence)),
            now,
            |&place| place,
        ) {
            Ok((place, removed)) => {
                self.retire_lock(place, removed, Cause::Released, true);
                Ok(())
            }
            Err(Error::NotFound) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

impl Store {
    pub(in crate::store) fn retire_lock(
        &self,
        place: u64,
        r: Removed<NameKey, Lock>,
        why: impl Into<Why>,
        detach: bool,
    ) {
        let why = why.into();
        let (tenant, name) = r.key;
        let held = r.value;
        if let (true, Some(seq)) = (detach, held.lease) {
            self.detach_from_lease(seq, Lock::CHILD, ChildOf::Place(place));
        }
        if held.attached {
            held.owner.tenant().quota(Collection::Locks).release(1);
            self.announce(
                Collection::Locks,
                tenant,
                || RecordId::Key(Arc::from(name)),
                &why,
                || Some(held.holder.clone()),
            );
            self.release_owner(&held.owner);
        }
    }
}
