//! Every limit of a [`Store`](crate::Store), in one place.
//!
//! Each field is a hard limit with its unit in its name. [`StoreConfig`] has
//! [`Default`]s sized for a mid-size relay node; change what you need with
//! its setters (one per field, of the same name) and
//! [`Store::new`](crate::Store::new) validates the whole set. The settings
//! structs are `#[non_exhaustive]`: their fields can be read, but a value is
//! built from a default and setters, so a new limit is not a breaking
//! change.

use crate::base::error::{Error, Result};
use crate::base::time::duration_to_millis_ceil;
use crate::base::time::DEADLINE_MAX_MS;
use crate::base::words::Words;
use crate::contract::events::Collection;
use crate::contract::kinds::RecordKind;
use std::time::Duration;

use crate::contract::settings::settings;

/// Most missed fires a schedule enqueues after a pause; then it skips
/// forward to its grid.
pub const SCHEDULE_CATCH_UP_MAX: u32 = 64;

settings! {
/// Per-tenant quotas, as a [`QuotaPolicy`] hands them out.
///
/// A field set to [`TenantQuota::OFF`] switches that quota off: the store
/// keeps no per-tenant count for it, and only the store-wide ceiling
/// bounds the tenant. Meant for single-tenant deployments, where the
/// per-tenant counter would only repeat the store-wide one; in a
/// multi-tenant store, a tenant with a quota off can take a collection up
/// to its store-wide ceiling. [`TenantQuota::unlimited`] switches all of
/// them off (ADR 0011).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TenantQuota {
    /// Leases one tenant may hold.
    pub leases_max: u64 = 10_000,
    /// Listings one tenant may publish.
    pub listings_max: u64 = 10_000,
    /// Presence records one tenant may hold.
    pub presence_max: u64 = 100_000,
    /// Pending (not yet consumed) join attempts one tenant may have.
    pub attempts_max: u64 = 50_000,
    /// Attempt records one tenant may hold, including consumed tokens
    /// remembered for replay rejection.
    pub replay_max: u64 = 100_000,
    /// Idempotency records one tenant may hold.
    pub idempotency_max: u64 = 50_000,
    /// Named locks one tenant may hold.
    pub locks_max: u64 = 10_000,
    /// Leases one holder (a [`grant`](crate::Store::grant)'s `holder`) may
    /// hold within the tenant: a publisher's quota. Whether it is counted
    /// is decided when the tenant registers, as for every tenant quota.
    pub leases_per_holder_max: u64 = Self::OFF,
    /// Listings one holder may publish within the tenant, under all of its
    /// leases together.
    pub listings_per_holder_max: u64 = Self::OFF,
}
}

impl TenantQuota {
    /// Where the quota on `c` is among the words (`Words::put`); `None`
    /// for a collection no tenant quota bounds.
    pub(crate) fn word_of(c: Collection) -> Option<usize> {
        match c {
            Collection::Leases => Some(0),
            Collection::Listings => Some(1),
            Collection::Presence => Some(2),
            Collection::Attempts => Some(3),
            Collection::Replay => Some(4),
            Collection::Idempotency => Some(5),
            Collection::Locks => Some(6),
            Collection::Tombstones
            | Collection::Streams
            | Collection::Queues
            | Collection::Schedules
            | Collection::Records => None,
        }
    }

    /// The per-holder quota on collection `c` ([`OFF`](Self::OFF) but for
    /// leases and listings).
    pub fn per_holder(&self, c: Collection) -> u64 {
        match c {
            Collection::Leases => self.leases_per_holder_max,
            Collection::Listings => self.listings_per_holder_max,
            _ => Self::OFF,
        }
    }
}

/// A tenant's quotas as words, for the snapshot each of its admissions
/// reads (`WordSnapshot`); every field named on both sides.
impl Words for TenantQuota {
    const LEN: usize = 9;

    fn put(&self, out: &mut [u64]) {
        let TenantQuota {
            leases_max,
            listings_max,
            presence_max,
            attempts_max,
            replay_max,
            idempotency_max,
            locks_max,
            leases_per_holder_max,
            listings_per_holder_max,
        } = self;
        out.copy_from_slice(&[
            *leases_max,
            *listings_max,
            *presence_max,
            *attempts_max,
            *replay_max,
            *idempotency_max,
            *locks_max,
            *leases_per_holder_max,
            *listings_per_holder_max,
        ]);
    }

    fn get(words: &[u64]) -> Self {
        // Fields are evaluated in the order written: the order of `put`.
        let mut words = words.iter().copied();
        let mut next = || words.next().expect("TenantQuota::LEN words");
        TenantQuota {
            leases_max: next(),
            listings_max: next(),
            presence_max: next(),
            attempts_max: next(),
            replay_max: next(),
            idempotency_max: next(),
            locks_max: next(),
            leases_per_holder_max: next(),
            listings_per_holder_max: next(),
        }
    }
}

impl TenantQuota {
    /// The value of a quota field that switches the quota off.
    pub const OFF: u64 = u64::MAX;

    /// The quota on collection `c` ([`OFF`](Self::OFF) for tombstones,
    /// which no tenant quota bounds, and for streams, queues and schedules,
    /// which [`StoreConfig::streams_per_tenant_max`],
    /// [`queues_per_tenant_max`](StoreConfig::queues_per_tenant_max) and
    /// [`schedules_per_tenant_max`](StoreConfig::schedules_per_tenant_max)
    /// bound alike for every tenant, and for records, which each kind's
    /// [`per_tenant_max`](RecordKind::per_tenant_max) bounds).
    pub fn limit(&self, c: Collection) -> u64 {
        match c {
            Collection::Leases => self.leases_max,
            Collection::Listings => self.listings_max,
            Collection::Presence => self.presence_max,
            Collection::Attempts => self.attempts_max,
            Collection::Replay => self.replay_max,
            Collection::Idempotency => self.idempotency_max,
            Collection::Locks => self.locks_max,
            Collection::Tombstones
            | Collection::Streams
            | Collection::Queues
            | Collection::Schedules
            | Collection::Records => Self::OFF,
        }
    }

    /// Every per-tenant quota off; the store-wide ceilings still apply.
    pub fn unlimited() -> Self {
        TenantQuota {
            leases_max: Self::OFF,
            listings_max: Self::OFF,
            presence_max: Self::OFF,
            attempts_max: Self::OFF,
            replay_max: Self::OFF,
            idempotency_max: Self::OFF,
            locks_max: Self::OFF,
            leases_per_holder_max: Self::OFF,
            listings_per_holder_max: Self::OFF,
        }
    }
}

/// Where a store gets each tenant's quotas. Asked when the store registers
/// a tenant (its first creation, and again after it held nothing and was
/// forgotten), outside every lock; a policy can give a paying customer more
/// room than a free tier. A quota of 0 refuses that collection to the
/// tenant without registering it.
pub trait QuotaPolicy: Send + Sync + 'static {
    /// The quotas for `tenant`.
    fn quota(&self, tenant: crate::base::ids::TenantId) -> TenantQuota;
}

/// The default policy: the same quotas for every tenant.
#[derive(Debug, Clone)]
pub struct UniformQuota(pub TenantQuota);

impl QuotaPolicy for UniformQuota {
    fn quota(&self, _tenant: crate::base::ids::TenantId) -> TenantQuota {
        self.0.clone()
    }
}

/// The limits a store changes at run time ([`Store::reconfigure`]), read
/// whole by every admission: one snapshot for every limit it checks.
///
/// [`Store::reconfigure`]: crate::Store::reconfigure
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Limits {
    ceilings: [u64; Collection::ALL.len()],
    pub(crate) tenants_max: u64,
    /// The named mechanisms' caps (their store-wide ceilings are in
    /// `ceilings`): what each creation, listen and subscription checks.
    pub(crate) streams_per_tenant_max: u64,
    pub(crate) stream_bytes_total_max: u64,
    pub(crate) stream_entries_total_max: u64,
    pub(crate) queues_per_tenant_max: u64,
    pub(crate) queue_jobs_total_max: u64,
    pub(crate) queue_bytes_total_max: u64,
    pub(crate) schedules_per_tenant_max: u64,
    pub(crate) listeners_max: u64,
    pub(crate) listeners_per_channel_max: usize,
    pub(crate) channels_per_tenant_max: u64,
    pub(crate) subscribers_max: usize,
}

/// A `usize` limit as a word (lossless: `usize` is at most 64 bits).
fn word(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// A word back as the `usize` limit it was made from.
fn size(w: u64) -> usize {
    usize::try_from(w).unwrap_or(usize::MAX)
}

impl Limits {
    /// Where the limit of the store-wide scope `scope` is among the words
    /// (`Words::put`): a collection's ceiling, or the tenants ceiling.
    pub(crate) fn word_of(scope: crate::base::error::Scope) -> Option<usize> {
        match scope {
            crate::base::error::Scope::Collection(c) => Some(c as usize),
            crate::base::error::Scope::Tenants => Some(Collection::ALL.len()),
            _ => None,
        }
    }
}

/// The limits as words, for the snapshot every admission reads
/// (`WordSnapshot`). The fields are named in full on both sides, so a
/// field added to `Limits` does not compile until it is added here.
impl Words for Limits {
    const LEN: usize = Collection::ALL.len() + 12;

    fn put(&self, out: &mut [u64]) {
        let Limits {
            ceilings,
            tenants_max,
            streams_per_tenant_max,
            stream_bytes_total_max,
            stream_entries_total_max,
            queues_per_tenant_max,
            queue_jobs_total_max,
            queue_bytes_total_max,
            schedules_per_tenant_max,
            listeners_max,
            listeners_per_channel_max,
            channels_per_tenant_max,
            subscribers_max,
        } = self;
        let (head, rest) = out.split_at_mut(ceilings.len());
        head.copy_from_slice(ceilings);
        rest.copy_from_slice(&[
            *tenants_max,
            *streams_per_tenant_max,
            *stream_bytes_total_max,
            *stream_entries_total_max,
            *queues_per_tenant_max,
            *queue_jobs_total_max,
            *queue_bytes_total_max,
            *schedules_per_tenant_max,
            *listeners_max,
            word(*listeners_per_channel_max),
            *channels_per_tenant_max,
            word(*subscribers_max),
        ]);
    }

    fn get(words: &[u64]) -> Self {
        let (head, rest) = words.split_at(Collection::ALL.len());
        // Fields are evaluated in the order written: the order of `put`.
        let mut rest = rest.iter().copied();
        let mut next = || rest.next().expect("Limits::LEN words");
        Limits {
            ceilings: head.try_into().expect("one ceiling per collection"),
            tenants_max: next(),
            streams_per_tenant_max: next(),
            stream_bytes_total_max: next(),
            stream_entries_total_max: next(),
            queues_per_tenant_max: next(),
            queue_jobs_total_max: next(),
            queue_bytes_total_max: next(),
            schedules_per_tenant_max: next(),
            listeners_max: next(),
            listeners_per_channel_max: size(next()),
            channels_per_tenant_max: next(),
            subscribers_max: size(next()),
        }
    }
}

impl Limits {
    pub(crate) fn of(config: &StoreConfig) -> Self {
        Limits {
            ceilings: Collection::ALL.map(|c| config.ceiling(c)),
            tenants_max: config.tenants_max,
            streams_per_tenant_max: config.streams_per_tenant_max,
            stream_bytes_total_max: config.stream_bytes_total_max,
            stream_entries_total_max: config.stream_entries_total_max,
            queues_per_tenant_max: config.queues_per_tenant_max,
            queue_jobs_total_max: config.queue_jobs_total_max,
            queue_bytes_total_max: config.queue_bytes_total_max,
            schedules_per_tenant_max: config.schedules_per_tenant_max,
            listeners_max: config.listeners_max,
            listeners_per_channel_max: config.listeners_per_channel_max,
            channels_per_tenant_max: config.channels_per_tenant_max,
            subscribers_max: config.subscribers_max,
        }
    }

    /// The store-wide ceiling on `c`.
    pub(crate) fn ceiling(&self, c: Collection) -> u64 {
        self.ceilings[c as usize]
    }
}

settings! {
/// The limits of a [`Store`](crate::Store). Every field has a setter of
/// its name, so a configuration is a chain from the defaults:
///
/// ```
/// use relaystore::{Store, StoreConfig, TenantQuota};
/// use std::time::Duration;
///
/// let config = StoreConfig::default()
///     .leases_max(50_000)
///     .ttl_max(Duration::from_secs(3600))
///     .tenant(TenantQuota::default().leases_max(500));
/// assert_eq!(config.tenant.leases_max, 500);
/// let store = Store::builder().config(config).build()?;
/// # Ok::<(), relaystore::Error>(())
/// ```
///
/// The struct is `#[non_exhaustive]`, so a literal does not compile outside
/// the crate (a limit added later breaks no caller):
///
/// ```compile_fail,E0639
/// use relaystore::StoreConfig;
///
/// let config = StoreConfig { leases_max: 50_000, ..StoreConfig::default() };
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreConfig {
    /// Shortest TTL accepted anywhere; shorter is `InvalidArgument`.
    pub ttl_min: Duration = Duration::from_millis(100),
    /// Longest TTL accepted anywhere; longer is `InvalidArgument`.
    pub ttl_max: Duration = Duration::from_secs(24 * 60 * 60),
    /// Store-wide ceiling on leases. At most 2^28 (268,435,456): a lease
    /// id names one of that many slots.
    pub leases_max: u64 = 1_000_000,
    /// Store-wide ceiling on listings.
    pub listings_max: u64 = 1_000_000,
    /// Store-wide ceiling on presence records.
    pub presence_max: u64 = 2_000_000,
    /// Store-wide ceiling on pending join attempts.
    pub attempts_max: u64 = 500_000,
    /// Store-wide ceiling on attempt records including remembered tokens.
    /// At most 2^28 (268,435,456): an attempt id names one of that many
    /// slots.
    pub replay_max: u64 = 1_000_000,
    /// Store-wide ceiling on idempotency records.
    pub idempotency_max: u64 = 500_000,
    /// Store-wide ceiling on named locks.
    pub locks_max: u64 = 100_000,
    /// Store-wide ceiling on lease revocation tombstones.
    pub tombstones_max: u64 = 500_000,
    /// Most distinct tenants the store will track.
    pub tenants_max: u64 = 10_000,
    /// Quotas applied to each tenant.
    pub tenant: TenantQuota = TenantQuota::default(),
    /// Listings one lease may carry.
    pub listings_per_lease_max: usize = 16,
    /// Pending attempts one listing may have.
    pub attempts_per_listing_max: usize = 64,
    /// Observed endpoints kept per lease (least recently seen replaced).
    pub endpoints_per_lease_max: usize = 8,
    /// Presence records one lease may carry.
    pub presence_per_lease_max: usize = 256,
    /// Named locks one lease may carry.
    pub locks_per_lease_max: usize = 64,
    /// Streams one lease may carry (streams created attached to it).
    pub streams_per_lease_max: usize = 16,
    /// Largest attribute blob on a listing or presence record.
    pub attrs_bytes_max: usize = 1024,
    /// Longest listing key, member name, holder, client or idempotency key.
    pub name_bytes_max: usize = 128,
    /// Most listings or members returned by one `list` call.
    pub page_len_max: usize = 1000,
    /// How long a consumed token is remembered after its own deadline.
    pub replay_grace: Duration = Duration::from_secs(60),
    /// How long a revoked lease answers `Revoked` rather than `NotFound`.
    pub tombstone_ttl: Duration = Duration::from_secs(600),
    /// How long an idempotency key returns its original outcome.
    pub idempotency_ttl: Duration = Duration::from_secs(600),
    /// Most event subscribers at once.
    pub subscribers_max: usize = 16,
    /// Events buffered per subscriber before it lags.
    pub subscriber_buffer_max: usize = 4096,
    /// Most wake listeners attached at once, store-wide.
    pub listeners_max: u64 = 65_536,
    /// Most listeners on one wake channel.
    pub listeners_per_channel_max: usize = 1_024,
    /// Most wake channels (with at least one listener) per tenant.
    pub channels_per_tenant_max: u64 = 4_096,
    /// Wakes queued per listener, not yet received. A notify to a listener
    /// whose queue is full drops its oldest wake, which the next wake
    /// counts in [`Wake::missed`](crate::wake::Wake::missed). A listener
    /// holds at most this many wakes, each 32 bytes plus its payload
    /// (shared by every listener it reaches).
    pub wake_queue_max: usize = 64,
    /// Largest payload one notify carries, in bytes
    /// ([`notify_with`](crate::Store::notify_with)); 0 allows only empty
    /// payloads.
    pub wake_payload_bytes_max: usize = 256,
    /// Most streams held, store-wide.
    pub streams_max: u64 = 65_536,
    /// Most streams per tenant.
    pub streams_per_tenant_max: u64 = 1_024,
    /// Largest `entries_max` a stream may be created with (entries cost
    /// memory even when their payloads are empty).
    pub stream_entries_max: usize = 1 << 20,
    /// Largest `bytes_max` a stream may be created with, in payload bytes.
    pub stream_bytes_max: usize = 16 << 20,
    /// Stream capacity the store commits to, in payload bytes: the
    /// `bytes_max` of every stream held, together. A stream reserves its
    /// whole `bytes_max` when it is created, so the streams' payloads can
    /// never need more than this.
    pub stream_bytes_total_max: u64 = 1 << 30,
    /// The same for entries: the `entries_max` of every stream held,
    /// together (an entry costs about 50 bytes besides its payload).
    pub stream_entries_total_max: u64 = 1 << 22,
    /// Largest payload of one stream entry, in bytes.
    pub stream_payload_bytes_max: usize = 64 << 10,
    /// Most named consumers per stream.
    pub consumers_per_stream_max: usize = 64,
    /// Most job queues held, store-wide.
    pub queues_max: u64 = 16_384,
    /// Most job queues per tenant.
    pub queues_per_tenant_max: u64 = 256,
    /// Largest `jobs_max` a queue may be created with.
    pub queue_jobs_max: usize = 1 << 20,
    /// Largest `bytes_max` a queue may be created with, in payload bytes.
    pub queue_bytes_max: usize = 64 << 20,
    /// Queue capacity the store commits to, in jobs: the `jobs_max` of
    /// every queue held, together (a queue reserves it at creation; a job
    /// costs about 150 bytes besides its payload).
    pub queue_jobs_total_max: u64 = 1 << 22,
    /// The same in payload bytes: the queues' `bytes_max` together.
    pub queue_bytes_total_max: u64 = 1 << 30,
    /// Largest payload of one job, in bytes.
    pub job_payload_bytes_max: usize = 64 << 10,
    /// Most schedules held, store-wide.
    pub schedules_max: u64 = 16_384,
    /// Most schedules per tenant.
    pub schedules_per_tenant_max: u64 = 256,
    /// Shortest interval a schedule accepts.
    pub schedule_interval_min: Duration = Duration::from_millis(100),
    /// Longest interval a schedule accepts.
    pub schedule_interval_max: Duration = Duration::from_secs(7 * 24 * 60 * 60),
    /// How long the expiry driver may go without sweeping before joins,
    /// binds and consumes are refused with `ServiceUnavailable` (expiry, and
    /// so token validity, can no longer be guaranteed).
    pub driver_stall_max: Duration = Duration::from_secs(5),
    /// Longest drain window `begin_drain` accepts; longer is
    /// `InvalidArgument`, so a drain always ends.
    pub drain_window_max: Duration = Duration::from_secs(60 * 60),
    /// Lowest fence (lease or lock) the store may issue, as a number the
    /// host persisted from an earlier incarnation (0: none). Fences start
    /// above the wall clock at start in nanoseconds since the Unix epoch,
    /// or above this floor if it is higher; set it when the wall clock may
    /// have stepped back across a restart. At most `u64::MAX / 2`.
    pub fence_floor: u64 = 0,
    /// The record kinds the relay declares, at most
    /// [`KINDS_MAX`](crate::KINDS_MAX); a kind is named by its place here
    /// ([`Kind`](crate::Kind)).
    pub kinds: Vec<RecordKind> = Vec::new(),
}
}

impl StoreConfig {
    /// The store-wide ceiling on collection `c` (for
    /// [`Collection::Attempts`], pending attempts; for
    /// [`Collection::Replay`], every attempt record).
    pub fn ceiling(&self, c: Collection) -> u64 {
        match c {
            Collection::Leases => self.leases_max,
            Collection::Listings => self.listings_max,
            Collection::Presence => self.presence_max,
            Collection::Attempts => self.attempts_max,
            Collection::Replay => self.replay_max,
            Collection::Idempotency => self.idempotency_max,
            Collection::Tombstones => self.tombstones_max,
            Collection::Locks => self.locks_max,
            Collection::Streams => self.streams_max,
            Collection::Queues => self.queues_max,
            Collection::Schedules => self.schedules_max,
            Collection::Records => self.kinds.iter().fold(0, |n, k| n.saturating_add(k.max)),
        }
    }

    /// Declares one more record kind, after those declared before.
    #[must_use]
    pub fn declare(mut self, kind: RecordKind) -> Self {
        self.kinds.push(kind);
        self
    }

    /// The name of the field that holds the ceiling on collection `c`.
    fn ceiling_field(c: Collection) -> &'static str {
        match c {
            Collection::Leases => "leases_max",
            Collection::Listings => "listings_max",
            Collection::Presence => "presence_max",
            Collection::Attempts => "attempts_max",
            Collection::Replay => "replay_max",
            Collection::Idempotency => "idempotency_max",
            Collection::Tombstones => "tombstones_max",
            Collection::Locks => "locks_max",
            Collection::Streams => "streams_max",
            Collection::Queues => "queues_max",
            Collection::Schedules => "schedules_max",
            Collection::Records => "kinds.max",
        }
    }

    /// Checks that the limits are consistent. A refusal is
    /// [`Error::InvalidConfig`] naming the first offending field and the
    /// rule it breaks.
    pub fn validate(&self) -> Result<()> {
        let invalid = |field, rule, values: String| {
            Err(Error::InvalidConfig {
                field,
                rule,
                values,
            })
        };
        let zero = |field: &str| format!("{field} = 0");
        if self.ttl_min.is_zero() {
            return invalid("ttl_min", "must be positive", zero("ttl_min"));
        }
        if self.ttl_min > self.ttl_max {
            return invalid(
                "ttl_max",
                "must be at least ttl_min",
                format!("ttl_min = {:?}, ttl_max = {:?}", self.ttl_min, self.ttl_max),
            );
        }
        let fits = |d: Duration| duration_to_millis_ceil(d) < DEADLINE_MAX_MS / 2;
        let clock_range = "must fit the clock range (with replay_grace)";
        for (field, d) in [
            ("ttl_max", self.ttl_max),
            ("tombstone_ttl", self.tombstone_ttl),
            ("idempotency_ttl", self.idempotency_ttl),
        ] {
            if !fits(d.saturating_add(self.replay_grace)) {
                return invalid(
                    field,
                    clock_range,
                    format!("{field} = {d:?}, replay_grace = {:?}", self.replay_grace),
                );
            }
        }
        if self.schedule_interval_min.is_zero() {
            return invalid(
                "schedule_interval_min",
                "must be positive",
                zero("schedule_interval_min"),
            );
        }
        if self.schedule_interval_min > self.schedule_interval_max {
            return invalid(
                "schedule_interval_max",
                "must be at least schedule_interval_min",
                format!(
                    "schedule_interval_min = {:?}, schedule_interval_max = {:?}",
                    self.schedule_interval_min, self.schedule_interval_max
                ),
            );
        }
        if !fits(
            self.schedule_interval_max
                .saturating_mul(SCHEDULE_CATCH_UP_MAX + 1),
        ) {
            return invalid(
                "schedule_interval_max",
                "must fit the clock range",
                format!("schedule_interval_max = {:?}", self.schedule_interval_max),
            );
        }
        if !fits(self.drain_window_max) {
            return invalid(
                "drain_window_max",
                "must fit the clock range",
                format!("drain_window_max = {:?}", self.drain_window_max),
            );
        }
        if self.fence_floor > u64::MAX / 2 {
            return invalid(
                "fence_floor",
                "must be at most u64::MAX / 2",
                format!("fence_floor = {}", self.fence_floor),
            );
        }
        for (field, d) in [
            ("tombstone_ttl", self.tombstone_ttl),
            ("idempotency_ttl", self.idempotency_ttl),
            ("driver_stall_max", self.driver_stall_max),
        ] {
            if d.is_zero() {
                return invalid(field, "must be positive", zero(field));
            }
        }
        if self.tenants_max == 0 {
            return invalid("tenants_max", "must be positive", zero("tenants_max"));
        }
        for (field, limit) in [
            ("listeners_max", self.listeners_max),
            (
                "listeners_per_channel_max",
                self.listeners_per_channel_max as u64,
            ),
            ("channels_per_tenant_max", self.channels_per_tenant_max),
            ("wake_queue_max", self.wake_queue_max as u64),
            ("streams_per_tenant_max", self.streams_per_tenant_max),
            ("stream_entries_max", self.stream_entries_max as u64),
            ("stream_bytes_max", self.stream_bytes_max as u64),
            ("stream_bytes_total_max", self.stream_bytes_total_max),
            ("stream_entries_total_max", self.stream_entries_total_max),
            (
                "stream_payload_bytes_max",
                self.stream_payload_bytes_max as u64,
            ),
            (
                "consumers_per_stream_max",
                self.consumers_per_stream_max as u64,
            ),
            ("queues_per_tenant_max", self.queues_per_tenant_max),
            ("queue_jobs_max", self.queue_jobs_max as u64),
            ("queue_bytes_max", self.queue_bytes_max as u64),
            ("queue_jobs_total_max", self.queue_jobs_total_max),
            ("queue_bytes_total_max", self.queue_bytes_total_max),
            ("job_payload_bytes_max", self.job_payload_bytes_max as u64),
            ("schedules_per_tenant_max", self.schedules_per_tenant_max),
        ] {
            if limit == 0 {
                return invalid(field, "must be positive", zero(field));
            }
        }
        // The records' ceiling is their kinds' together: none declared, none.
        let bounded = |c: &&Collection| **c != Collection::Records;
        if let Some(&c) = Collection::ALL
            .iter()
            .filter(bounded)
            .find(|&&c| self.ceiling(c) == 0)
        {
            let field = Self::ceiling_field(c);
            return invalid(field, "must be positive", zero(field));
        }
        // Leases and attempt records live in slabs, whose ids name a slot.
        for c in [Collection::Leases, Collection::Replay] {
            if self.ceiling(c) > crate::base::ids::SLOTS_MAX {
                let field = Self::ceiling_field(c);
                return invalid(
                    field,
                    "must be at most 2^28 (268,435,456): an id names one of that many slots",
                    format!("{field} = {}", self.ceiling(c)),
                );
            }
        }
        if let Some(&c) = Collection::ALL.iter().find(|&&c| self.tenant.limit(c) == 0) {
            let field = match c {
                Collection::Leases => "tenant.leases_max",
                Collection::Listings => "tenant.listings_max",
                Collection::Presence => "tenant.presence_max",
                Collection::Attempts => "tenant.attempts_max",
                Collection::Replay => "tenant.replay_max",
                Collection::Idempotency => "tenant.idempotency_max",
                Collection::Locks => "tenant.locks_max",
                Collection::Tombstones
                | Collection::Streams
                | Collection::Queues
                | Collection::Schedules
                | Collection::Records => {
                    unreachable!("no tenant quota bounds these collections")
                }
            };
            return invalid(
                field,
                "must be positive (TenantQuota::OFF switches a quota off)",
                zero(field),
            );
        }
        let sizes = [
            ("listings_per_lease_max", self.listings_per_lease_max),
            ("attempts_per_listing_max", self.attempts_per_listing_max),
            ("endpoints_per_lease_max", self.endpoints_per_lease_max),
            ("presence_per_lease_max", self.presence_per_lease_max),
            ("locks_per_lease_max", self.locks_per_lease_max),
            ("streams_per_lease_max", self.streams_per_lease_max),
            ("name_bytes_max", self.name_bytes_max),
            ("page_len_max", self.page_len_max),
            ("subscribers_max", self.subscribers_max),
            ("subscriber_buffer_max", self.subscriber_buffer_max),
        ];
        if let Some((field, _)) = sizes.iter().find(|(_, v)| *v == 0) {
            return invalid(field, "must be positive", zero(field));
        }
        crate::contract::kinds::validate(&self.kinds, self.ttl_min, self.ttl_max)
    }
}

#[cfg(all(test, not(relaystore_loom)))]
mod tests {
    use super::*;
    use crate::base::error::Scope;

    /// Distinct words 1..=len.
    fn distinct(len: usize) -> Vec<u64> {
        (1..=len as u64).collect()
    }

    #[test]
    fn each_limit_word_sits_where_word_of_says() {
        let words = distinct(Limits::LEN);
        let limits = Limits::get(&words);
        for c in Collection::ALL {
            let at = Limits::word_of(Scope::Collection(c)).unwrap();
            assert_eq!(limits.ceiling(c), words[at], "{c:?}");
        }
        let at = Limits::word_of(Scope::Tenants).unwrap();
        assert_eq!(limits.tenants_max, words[at]);
        assert_eq!(Limits::word_of(Scope::Named("other")), None);
        let mut back = vec![0; Limits::LEN];
        limits.put(&mut back);
        assert_eq!(back, words, "the words go back as they came");
    }

    #[test]
    fn each_quota_word_sits_where_word_of_says() {
        let words = distinct(TenantQuota::LEN);
        let quota = TenantQuota::get(&words);
        for c in Collection::ALL {
            match TenantQuota::word_of(c) {
                Some(at) => assert_eq!(quota.limit(c), words[at], "{c:?}"),
                None => assert_eq!(quota.limit(c), TenantQuota::OFF, "{c:?}"),
            }
        }
        let mut back = vec![0; TenantQuota::LEN];
        quota.put(&mut back);
        assert_eq!(back, words, "the words go back as they came");
    }
}
