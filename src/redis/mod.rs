//! The Redis engine: relay state shared by several relay processes through
//! one Redis server or one Redis Cluster (SPEC §9, ADR 0029).
//!
//! [`RedisEngine`] keeps the in-memory store's rules with the state in
//! Redis. Every transition is one Lua function (of a Redis Functions
//! library the engine loads) that runs atomically on the server: it reads the server's clock (`TIME`) for every deadline and every
//! visibility decision, so a record is never observable after its deadline
//! whatever Redis's lazy expiry does, and the clocks of the relay hosts do
//! not matter. Every key of one tenant carries the tenant's hash tag, so
//! each call touches one Cluster slot.
//!
//! What is served so far: leases (grant with tenant quota and idempotency,
//! renew, renew at a version, get, revoke with its cascade, endpoints
//! observed for them), listings
//! (publish, get, update, unpublish, revoke, pages), presence (heartbeat,
//! get, pages, leave), join attempts (begin with a one-time token, bind
//! once, consume exactly once, cancel), named locks (take, get, renew,
//! release, attached to a lease) and tenant revocation, under the
//! store-wide ceilings (ADR 0031), the tenant quotas and the per-lease
//! caps, with removal events; wake channels (ADR 0032); streams (ADR
//! 0033); and job queues, the outbox and schedules (ADR 0034). It
//! implements the whole contract, [`Engine`](crate::Engine) and the
//! traits below it ([`ScheduleRunner`](crate::ScheduleRunner) leads a
//! tenant's schedules on it), transactions of one tenant's changes
//! included (ADR 0069).
//!
//! ```no_run
//! # async fn demo() -> Result<(), relaystore::Error> {
//! use relaystore::redis::{RedisEngine, RedisOptions};
//! use relaystore::{StoreConfig, TenantId};
//! use std::time::Duration;
//!
//! let options = RedisOptions::standalone("redis://127.0.0.1:6379/");
//! let engine = RedisEngine::connect(options, StoreConfig::default()).await?;
//! let lease = engine.grant(TenantId(1), "host-a", Duration::from_secs(30), None).await?;
//! engine.renew(TenantId(1), lease.id, Duration::from_secs(30)).await?;
//! # Ok(()) }
//! ```

/// Script arguments: each anything that turns into bytes (text, numbers
/// as their decimal text through `to_string`, attribute bytes).
macro_rules! args {
    ($($arg:expr),* $(,)?) => {
        vec![$(Vec::<u8>::from($arg)),*]
    };
}

mod codes;
mod conn;
mod contract;
mod events;
mod groups;
mod joins;
mod leases;
mod lifecycle;
mod listings;
mod locks;
mod own_removals;
mod presence;
mod probe;
mod queues;
mod reconfigure;
mod records;
mod reply;
mod room;
mod schedules;
mod scripts;
mod streams;
mod sweeper;
mod tenant;
mod tx;
mod usage;
mod wakes;

use crate::base::error::{Error, Result};
use crate::base::ids::TenantId;
use crate::contract::config::{QuotaPolicy, StoreConfig, TenantQuota, UniformQuota};
use crate::contract::metrics::EngineLabel;

/// This engine's metrics label.
const REDIS: EngineLabel = EngineLabel::Redis;
use crate::contract::lifecycle::{DegradedReason, Health};
use crate::contract::relay::{Cursor, Page};
use crate::contract::rules::TtlRange;
use crate::mem::events::EventHub;
use conn::Conn;
use reply::Reply;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub use groups::RedisMember;
pub use own_removals::{COPY_WAIT_MIN, OWN_COPIES_MAX};
pub use room::ROOM_SHARES;
pub use streams::RedisFollower;

/// Where the Redis engine keeps its state, and its bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisOptions {
    /// The server or cluster.
    pub target: RedisTarget,
    /// Prefix of every key the engine writes (`{<namespace>:<tenant>}:…`),
    /// so several stores can share one Redis. Non-empty; no `{`, `}` or `:`.
    pub namespace: String,
    /// Longest a call may take, waiting for Redis included; past it the
    /// call fails closed with [`Error::BackendUnavailable`]. Default 500 ms.
    pub call_timeout: Duration,
    /// Longest a connection attempt may take. Default 1 s.
    pub connect_timeout: Duration,
    /// How often the handle holding the sweeper lease looks for records
    /// past their deadline, to remove and announce them; the lease lasts
    /// ten of these. Default 100 ms; from 1 ms to 60 s.
    ///
    /// A record past its deadline reads as gone at once (every function
    /// checks deadlines by the server's clock); this bounds when its
    /// removal event goes out: within one interval and one sweep's length,
    /// while a sweep keeps up (a sweep takes at most 1,024 due tenants,
    /// and at most 256 records of each of a tenant's indexes, then leaves
    /// the rest to the next), and within ten intervals more if the
    /// sweeper's holder died (its lease must lapse first).
    pub sweep_interval: Duration,
    /// PEM certificates of the authorities a `rediss://` server's
    /// certificate must chain to, instead of the system's roots. `None`
    /// (the default): the system's roots. Needs the `redis-tls` feature
    /// and `rediss://` URLs.
    pub tls_root_certificates: Option<Vec<u8>>,
    /// Replicas (a count) that must acknowledge each write an
    /// authorization rests on before it is answered `Ok`: `grant`,
    /// `revoke`, `revoke_tenant`, `try_lock`, `renew_lock`,
    /// `bind_endpoint` and `consume`. The engine sends `WAIT` after the
    /// call, bounded by half the call timeout (the connection carries no
    /// other call's answer meanwhile); fewer acknowledgements fail the
    /// call closed with `BackendUnavailable { may_have_run: true }`. 0 (the
    /// default) waits for none; at most [`WAIT_REPLICAS_MAX`].
    /// `docs/adr/0062-failover.md` says what each setting guarantees.
    pub wait_replicas: u32,
}

/// The most replicas [`RedisOptions::wait_replicas`] may name.
pub const WAIT_REPLICAS_MAX: u32 = 16;

/// One Redis server, or a Redis Cluster's seed nodes. `Debug` prints the
/// URLs with any password replaced by `<redacted>`.
#[derive(Clone, PartialEq, Eq)]
pub enum RedisTarget {
    /// A `redis://host:port/` URL.
    Standalone(String),
    /// `redis://host:port/` URLs of some of the cluster's nodes.
    Cluster(Vec<String>),
}

impl std::fmt::Debug for RedisTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RedisTarget::Standalone(url) => {
                f.debug_tuple("Standalone").field(&redacted(url)).finish()
            }
            RedisTarget::Cluster(seeds) => f
                .debug_tuple("Cluster")
                .field(&seeds.iter().map(|s| redacted(s)).collect::<Vec<_>>())
                .finish(),
        }
    }
}

/// `url` with the password of its user information, if any, replaced by
/// `<redacted>` (`redis://user:secret@host/` → `redis://user:<redacted>@host/`).
fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(user, _)| user);
            if userinfo.contains(':') {
                format!("{scheme}://{user}:<redacted>@{host}{path}")
            } else {
                // A bare userinfo is the password in `redis://secret@host`.
                format!("{scheme}://<redacted>@{host}{path}")
            }
        }
        None => url.to_owned(),
    }
}

impl RedisOptions {
    /// One server at `url`, with the default namespace and bounds.
    pub fn standalone(url: &str) -> Self {
        Self::with_target(RedisTarget::Standalone(url.to_owned()))
    }

    /// A Redis Cluster reached through `seeds`, with the default namespace
    /// and bounds.
    pub fn cluster<S: AsRef<str>>(seeds: &[S]) -> Self {
        Self::with_target(RedisTarget::Cluster(
            seeds.iter().map(|s| s.as_ref().to_owned()).collect(),
        ))
    }

    fn with_target(target: RedisTarget) -> Self {
        RedisOptions {
            target,
            namespace: "relaystore".to_owned(),
            call_timeout: Duration::from_millis(500),
            connect_timeout: Duration::from_secs(1),
            sweep_interval: Duration::from_millis(100),
            tls_root_certificates: None,
            wait_replicas: 0,
        }
    }

    /// The same options under another namespace.
    pub fn namespace(mut self, namespace: &str) -> Self {
        namespace.clone_into(&mut self.namespace);
        self
    }

    /// The same options with another call timeout.
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// The same options with another connect timeout (each connection
    /// attempt, at `connect` and on reconnects).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The same options, waiting for `replicas` replicas to acknowledge
    /// each write an authorization rests on
    /// ([`wait_replicas`](Self::wait_replicas)).
    pub fn wait_for_replicas(mut self, replicas: u32) -> Self {
        self.wait_replicas = replicas;
        self
    }

    /// The same options with another sweep interval.
    pub fn sweep_interval(mut self, interval: Duration) -> Self {
        self.sweep_interval = interval;
        self
    }

    /// The same options trusting only the authorities in `pem` (one or
    /// more PEM certificates) for a `rediss://` server's certificate.
    pub fn tls_root_certificates(mut self, pem: &[u8]) -> Self {
        self.tls_root_certificates = Some(pem.to_vec());
        self
    }

    /// The target's URLs.
    fn urls(&self) -> Vec<&str> {
        match &self.target {
            RedisTarget::Standalone(url) => vec![url.as_str()],
            RedisTarget::Cluster(seeds) => seeds.iter().map(String::as_str).collect(),
        }
    }

    fn validate(&self) -> Result<()> {
        let urls = self.urls();
        let tls = urls.iter().filter(|u| u.starts_with("rediss://")).count();
        if tls > 0 && tls < urls.len() {
            return Err(Error::InvalidConfig {
                field: "target",
                rule: "every URL is redis://, or every URL is rediss://",
                values: String::new(),
            });
        }
        if tls > 0 && !cfg!(feature = "redis-tls") {
            return Err(Error::InvalidConfig {
                field: "target",
                rule: "rediss:// URLs need the redis-tls feature",
                values: String::new(),
            });
        }
        if tls == 0 && self.tls_root_certificates.is_some() {
            return Err(Error::InvalidConfig {
                field: "tls_root_certificates",
                rule: "apply to rediss:// URLs only",
                values: String::new(),
            });
        }
        let ns = &self.namespace;
        if ns.is_empty() || ns.contains(['{', '}', ':']) {
            return Err(Error::InvalidConfig {
                field: "namespace",
                rule: "must be non-empty, without '{', '}' or ':'",
                values: format!("namespace = {ns:?}"),
            });
        }
        if self.call_timeout.is_zero() {
            return Err(Error::InvalidConfig {
                field: "call_timeout",
                rule: "must be positive",
                values: format!("call_timeout = {:?}", self.call_timeout),
            });
        }
        if self.connect_timeout.is_zero() {
            return Err(Error::InvalidConfig {
                field: "connect_timeout",
                rule: "must be positive",
                values: format!("connect_timeout = {:?}", self.connect_timeout),
            });
        }
        if self.sweep_interval < Duration::from_millis(1)
            || self.sweep_interval > Duration::from_secs(60)
        {
            return Err(Error::InvalidConfig {
                field: "sweep_interval",
                rule: "must be from 1 ms to 60 s",
                values: format!("sweep_interval = {:?}", self.sweep_interval),
            });
        }
        if self.wait_replicas > WAIT_REPLICAS_MAX {
            return Err(Error::InvalidConfig {
                field: "wait_replicas",
                rule: "must be at most WAIT_REPLICAS_MAX (16)",
                values: format!("wait_replicas = {}", self.wait_replicas),
            });
        }
        if let RedisTarget::Cluster(seeds) = &self.target {
            if seeds.is_empty() {
                return Err(Error::InvalidConfig {
                    field: "target",
                    rule: "a cluster needs at least one seed node",
                    values: String::new(),
                });
            }
        }
        Ok(())
    }
}

/// The Redis engine's handle: cheap to clone, shared by every task of one
/// relay process. Several processes (relay instances) each connect their
/// own and share the state. See the [module documentation](self).
#[derive(Clone)]
pub struct RedisEngine {
    inner: Arc<Inner>,
}

struct Inner {
    conn: Conn,
    namespace: String,
    /// The limits in force: the configuration the handle connected with,
    /// as changed by [`RedisEngine::reconfigure`].
    config: arc_swap::ArcSwap<StoreConfig>,
    /// Where each tenant's quotas come from (`config.tenant` for every
    /// tenant unless [`RedisEngine::set_quota_policy`] replaced it).
    policy: arc_swap::ArcSwap<Arc<dyn QuotaPolicy>>,
    /// The run-time limits this handle's listeners and subscribers are
    /// held to (shared with `hub` and `wakes`).
    limits: Arc<crate::base::words::LimitSnapshot<crate::contract::config::Limits>>,
    /// One reconfiguration at a time.
    reconfiguring: std::sync::Mutex<()>,
    ttl: TtlRange,
    /// The store incarnation this handle believes in; refreshed from the
    /// meta key whenever a tenant's keys disagree with it.
    incarnation: AtomicU64,
    /// When that incarnation began (the server's clock, microseconds):
    /// every fence it issued is at least this.
    born: AtomicU64,
    /// This handle's drain.
    drain: lifecycle::Drain,
    /// The store-wide ceilings, as every per-tenant call passes them.
    ceilings: room::Ceilings,
    /// The bounds on each stream (from `config`).
    stream_limits: crate::contract::rules::StreamLimits,
    /// The bounds on each queue and job (from `config`).
    queue_limits: crate::contract::rules::QueueLimits,
    /// Where the removal events go: this handle's subscribers.
    hub: Arc<EventHub>,
    /// This handle's wake listeners.
    wakes: Arc<crate::mem::wake::WakeHub>,
    /// This handle's id in the events it causes (random).
    origin: u64,
    /// Which copy of this handle's own removals came first (reply or
    /// channel), so each is delivered once.
    own: Arc<own_removals::OwnRemovals>,
    /// The channel listener, once something subscribed.
    listener: tokio::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The sweeper loop (it sweeps while this handle holds the lease).
    sweeper: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// For the listener's own connection.
    target: RedisTarget,
    connect_timeout: Duration,
    /// [`RedisOptions::wait_replicas`].
    wait_replicas: u32,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(task) = self.listener.get_mut().take() {
            task.abort();
        }
        let sweeper = self.sweeper.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(task) = sweeper.take() {
            task.abort();
        }
        self.hub.close();
        self.wakes.close();
    }
}

impl std::fmt::Debug for RedisEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisEngine")
            .field("namespace", &self.inner.namespace)
            .field("incarnation", &self.incarnation())
            .finish_non_exhaustive()
    }
}

/// What the caller passed that an incarnation issued: checked against the
/// store's incarnation before the function runs, and by the function
/// against the birth of the tenant's record (`begin` in
/// `lua/shared/50_begin.lua`), which is younger than it if the tenant's slot lost
/// its keys.
#[derive(Copy, Clone)]
enum Issued {
    /// Nothing.
    Nothing,
    /// An id: the incarnation it carries and its sequence number.
    Id(u64, u64),
    /// A fence: from an earlier incarnation if below this one's start.
    Fence(u64),
}

impl Issued {
    /// The number the tenant's record checks: every id and fence a
    /// record issued is at least its birth.
    fn number(self) -> Option<u64> {
        match self {
            Issued::Nothing => None,
            Issued::Id(_, seq) => Some(seq),
            Issued::Fence(fence) => Some(fence),
        }
    }
}

/// One per-tenant function call as an operation prepares it: run on its
/// own ([`RedisEngine::answer_call`]) or as one step of a transaction
/// (`tx.rs`), with the same arguments either way.
struct Call {
    function: scripts::Function,
    mode: Mode,
    issued: Issued,
    args: Vec<Vec<u8>>,
}

/// Whether a function may create the tenant's keys of this incarnation.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Mode {
    /// Reads and changes of existing records.
    Existing,
    /// Creations (grants, locks): the tenant's keyspace is made if missing.
    Creating,
    /// Refreshes that create the record if it is missing (heartbeats): as
    /// `Creating`, but a draining handle lets the function decide.
    Upserting,
}

impl RedisEngine {
    /// Connects, and refuses to start unless every primary's
    /// `maxmemory-policy` is `noeviction` ([`Error::InvalidConfig`] naming
    /// `maxmemory-policy`): an evicting Redis could drop live leases and
    /// tokens. Also reads (or, for a new store or a server that lost its
    /// data, creates) the store's incarnation.
    ///
    /// `config` gives the limits, as for the in-memory store: TTL range,
    /// name sizes, store-wide ceilings, tenant quotas (`config.tenant`)
    /// and per-lease caps. A ceiling counts every handle's records of the
    /// namespace, so give every handle of one namespace the same config
    /// (ADR 0031); [`reconfigure`](Self::reconfigure) and
    /// [`set_quota_policy`](Self::set_quota_policy) change a handle's
    /// limits later (ADR 0067). Declared record kinds
    /// ([`StoreConfig::kinds`]) are named by their place in the list, so
    /// every handle of one namespace declares the same kinds in the same
    /// order.
    pub async fn connect(options: RedisOptions, config: StoreConfig) -> Result<Self> {
        options.validate()?;
        config.validate()?;
        let ttl = TtlRange::new(config.ttl_min, config.ttl_max)?;
        let conn = Conn::open(&options).await?;
        let sweep_interval = options.sweep_interval;
        let call_timeout = options.call_timeout;
        let mut origin = [0u8; 8];
        crate::base::secrets::random_bytes(&mut origin)?;
        let limits = Arc::new(crate::base::words::LimitSnapshot::new(
            crate::contract::config::Limits::of(&config),
        ));
        let hub = Arc::new(EventHub::new(
            Arc::clone(&limits),
            config.subscriber_buffer_max,
            REDIS,
        ));
        let wakes = Arc::new(crate::mem::wake::WakeHub::new(
            Arc::clone(&limits),
            config.wake_queue_max,
        ));
        let policy: Arc<dyn QuotaPolicy> = Arc::new(UniformQuota(config.tenant.clone()));
        conn.check_noeviction().await?;
        conn.load_library().await?;
        let ceilings = room::Ceilings::new(&config, &options.namespace, conn.is_cluster());
        let stream_limits = crate::contract::rules::StreamLimits::of(&config);
        let queue_limits = crate::contract::rules::QueueLimits::of(&config);
        let engine = RedisEngine {
            inner: Arc::new(Inner {
                conn,
                namespace: options.namespace,
                config: arc_swap::ArcSwap::from_pointee(config),
                policy: arc_swap::ArcSwap::from_pointee(policy),
                limits,
                reconfiguring: std::sync::Mutex::new(()),
                ttl,
                incarnation: AtomicU64::new(0),
                born: AtomicU64::new(0),
                drain: lifecycle::Drain::new(),
                ceilings,
                stream_limits,
                queue_limits,
                hub,
                wakes,
                origin: u64::from_le_bytes(origin),
                own: Arc::new(own_removals::OwnRemovals::new(call_timeout)),
                listener: tokio::sync::Mutex::new(None),
                sweeper: std::sync::Mutex::new(None),
                target: options.target,
                connect_timeout: options.connect_timeout,
                wait_replicas: options.wait_replicas,
            }),
        };
        engine.refresh_incarnation().await?;
        crate::contract::metrics::announce(REDIS);
        sweeper::start(&engine, sweep_interval);
        Ok(engine)
    }

    /// The store incarnation this handle issues ids in.
    pub fn incarnation(&self) -> u64 {
        self.inner.incarnation.load(Ordering::Acquire)
    }

    /// `Draining` or `Stopped` once [`begin_drain`](Self::begin_drain)
    /// was called; otherwise `Ready` while every primary the store needs
    /// answers within the call timeout and takes writes (on a cluster,
    /// every primary of the slot map, each asked by its address: one round
    /// trip each), `Degraded` with [`DegradedReason::BackendUnreachable`]
    /// while one does not answer, and with [`DegradedReason::BackendFull`]
    /// while one is at `maxmemory` (it refuses creations; reads and
    /// removals still run there), and with
    /// [`DegradedReason::TooFewReplicas`] while, with
    /// [`wait_replicas`](RedisOptions::wait_replicas) set, one has fewer
    /// replicas attached than that (the writes that wait fail closed).
    pub async fn health(&self) -> Health {
        let health = self.probe_health().await;
        crate::contract::metrics::health(REDIS, crate::contract::metrics::health_state(&health));
        health
    }

    async fn probe_health(&self) -> Health {
        if let Some(health) = self.lifecycle_health() {
            return health;
        }
        let reason = match self.inner.conn.reach(self.inner.wait_replicas).await {
            conn::Reach::Ready => return Health::Ready,
            conn::Reach::Unreachable => DegradedReason::BackendUnreachable,
            conn::Reach::Full => DegradedReason::BackendFull,
            conn::Reach::TooFewReplicas => DegradedReason::TooFewReplicas,
        };
        Health::Degraded { reason }
    }

    /// The limits in force now.
    fn config(&self) -> Arc<StoreConfig> {
        self.inner.config.load_full()
    }

    /// `tenant`'s quotas, from the quota policy (asked on every call that
    /// needs them).
    fn quota(&self, tenant: TenantId) -> TenantQuota {
        self.inner.policy.load().quota(tenant)
    }

    /// `ttl` validated against the configured range, in whole milliseconds
    /// (rounded up, as the in-memory store does).
    fn ttl_ms(&self, ttl: Duration) -> Result<u64> {
        self.inner
            .ttl
            .deadline(crate::base::time::MonoTime::ZERO, ttl)
    }

    /// The name rules both engines apply.
    fn check_name(&self, name: &str) -> Result<()> {
        self.config().check_name(name)
    }

    /// How long a record's Redis key outlives its logical deadline: the
    /// memory backstop (PEXPIREAT) is never earlier than the deadline, so
    /// only the functions' clock checks decide visibility.
    fn keep_ms(&self) -> u64 {
        crate::base::time::duration_to_millis_ceil(self.config().tombstone_ttl).max(1_000)
    }

    /// `idempotency_ttl` in whole milliseconds.
    fn idempotency_ttl_ms(&self) -> u64 {
        crate::base::time::duration_to_millis_ceil(self.config().idempotency_ttl)
    }

    /// Reads the store's incarnation from the meta key, creating it if the
    /// store is new or Redis lost its data.
    async fn refresh_incarnation(&self) -> Result<u64> {
        Ok(self.refresh_with(None).await?.0)
    }

    /// [`refresh_incarnation`](Self::refresh_incarnation), also asking
    /// whether `tenant`'s record was made in the incarnation (and, with
    /// `register`, registering it: its record is about to be made; a new
    /// tenant is refused when `tenants_max` tenants are registered, with
    /// nothing written).
    async fn refresh_with(&self, tenant: Option<(TenantId, bool)>) -> Result<(u64, bool)> {
        let mut bytes = [0u8; 8];
        crate::base::secrets::random_bytes(&mut bytes)?;
        let fresh = u64::from_le_bytes(bytes);
        let key = format!("{{{}}}:meta", self.inner.namespace);
        // A tenants ceiling a Lua number cannot hold exactly is none.
        let limit = self.config().tenants_max;
        let argv = scripts::MetaArgs {
            incarnation: format!("{fresh:016x}").into(),
            tenant: tenant
                .map_or_else(String::new, |(t, _)| t.0.to_string())
                .into(),
            register: tenant.is_some_and(|(_, register)| register).into(),
            tenants_max: if limit >= 1 << 53 {
                "-1".to_owned()
            } else {
                limit.to_string()
            }
            .into(),
        }
        .encode();
        let (seen, born, known, used): (String, String, i64, u64) =
            self.inner.conn.call(scripts::META, &key, argv).await?;

        let malformed = || {
            Error::backend(
                Arc::from(format!(
                    "the meta key holds a malformed incarnation: {seen} {born}"
                )),
                true,
            )
        };
        let incarnation = u64::from_str_radix(&seen, 16).map_err(|_| malformed())?;
        let born = born.parse::<u64>().map_err(|_| malformed())?;
        // Both stores before any call of the new incarnation can run on
        // this handle's behalf; a reader of the pair may see the new born
        // with the old incarnation only briefly, and then refreshes again.
        self.inner.born.store(born, Ordering::Release);
        self.inner.incarnation.store(incarnation, Ordering::Release);
        if known < 0 {
            return Err(Error::CapacityExceeded {
                scope: crate::base::error::Scope::Tenants,
                limit: self.config().tenants_max,
                used,
            });
        }
        Ok((incarnation, known == 1))
    }

    /// The tenant's incarnation key; every key of the tenant shares its
    /// hash tag.
    fn tenant_key(&self, tenant: TenantId) -> String {
        format!("{{{}:{}}}:inc", self.inner.namespace, tenant.0)
    }

    /// [`run`](Self::run) for a call whose answer must come from the
    /// function: `NotFound` when the tenant has nothing in this
    /// incarnation, the error a refusal code stands for, else the reply.
    async fn answer_call(&self, tenant: TenantId, call: Call) -> Result<Reply> {
        self.answer(call.function, tenant, call.mode, call.issued, call.args)
            .await
    }

    async fn answer(
        &self,
        function: scripts::Function,
        tenant: TenantId,
        mode: Mode,
        issued: Issued,
        args: Vec<Vec<u8>>,
    ) -> Result<Reply> {
        let answered = self
            .run(function, tenant, mode, issued, args)
            .await
            .and_then(|reply| reply.ok_or(Error::NotFound))
            .and_then(|reply| reply.refusal().map(|()| reply));
        if let Err(Error::CapacityExceeded { scope, .. }) = &answered {
            crate::contract::metrics::refusal(REDIS, *scope);
        }
        answered
    }

    /// Runs a per-tenant function. When the tenant's keys are of another
    /// incarnation than this handle's, or missing, the incarnation is read
    /// again from the meta key; `issued` (an id or fence the caller
    /// passed) is then checked against it: [`Error::Restarted`] if an
    /// earlier incarnation issued it. On a cluster, a function that needs
    /// room under a store-wide ceiling answers `ROOM` having written
    /// nothing; the room is taken (`room.rs`) and the function called
    /// again with it. Room a call freed or did not use is given back
    /// before this returns. `None` for a tenant with no keys in this
    /// incarnation and a function that creates nothing.
    async fn run(
        &self,
        function: scripts::Function,
        tenant: TenantId,
        mode: Mode,
        issued: Issued,
        args: Vec<Vec<u8>>,
    ) -> Result<Option<Reply>> {
        self.admit(mode)?;
        let key = self.tenant_key(tenant);
        let keys = self.inner.ceilings.keys(&key, !function.reads_only());
        // Set once the tenant's record must be made: 'c', or 'l' if this
        // incarnation had made it before (its slot lost it).
        let mut create = None;
        // Room taken in the meta slot for this call (a cluster's creations).
        let mut grants = String::new();
        for _ in 0..ROUNDS {
            let incarnation = self.incarnation();
            let earlier = match issued {
                Issued::Nothing => false,
                Issued::Id(i, _) => i != incarnation,
                Issued::Fence(f) => f < self.inner.born.load(Ordering::Acquire),
            };
            if earlier {
                if self.refresh_incarnation().await? != incarnation {
                    continue;
                }
                return Err(Error::Restarted);
            }
            let mut argv = Vec::with_capacity(args.len() + 2);
            argv.push(format!("{incarnation:016x}").into_bytes());
            let kind = create.unwrap_or('r');
            let mut head = format!("{kind}{:x}", self.inner.origin);
            if let Some(number) = issued.number() {
                head = format!("{head}/{number}");
            }
            if mode != Mode::Existing || !grants.is_empty() {
                // What a creation needs (and only it: a read or renewal
                // stays as short as before).
                head = format!("{head};{};{grants}", self.inner.ceilings.limits());
            }
            argv.push(head.into_bytes());
            argv.extend(args.iter().cloned());
            let (reply, needs) = self
                .call_settled(function, &keys, argv, tenant, incarnation)
                .await?;
            let reply = Reply::new(reply)?;
            match reply.code()? {
                // Room under a store-wide ceiling to take first (a
                // cluster): nothing was written; take it, and call again.
                reply::ROOM => grants = self.make_room(tenant, &needs).await?,
                reply::STALE | reply::UNKNOWN => {
                    // The tenant's keys are of another incarnation, or
                    // missing: believe the meta key, then try again.
                    let register = mode != Mode::Existing;
                    let (now, known) = self.refresh_with(Some((tenant, register))).await?;
                    if now != incarnation {
                        continue;
                    }
                    if known && issued.number().is_some() {
                        // The incarnation made the tenant's record, and
                        // it is gone: its slot lost it, and what it
                        // issued with it.
                        return Err(Error::Restarted);
                    }
                    if mode == Mode::Existing {
                        return Ok(None);
                    }
                    // The tenant's keys are older than the store's
                    // incarnation, or missing: start them afresh.
                    create = Some(if known { 'l' } else { 'c' });
                }
                reply::OK if function.replicated() => {
                    self.await_replicas(&key).await?;
                    return Ok(Some(reply));
                }
                _ => return Ok(Some(reply)),
            }
        }
        Err(Error::backend(
            Arc::from("the store's incarnation, or its room, kept changing"),
            false,
        ))
    }
}

/// Armed while a call that may write is in flight: dropped with the call's
/// future before the answer was settled, it puts the tenant first in the
/// due index (in a task of its own), so the sweeper finds what the call
/// may have written.
struct DueGuard {
    /// `None` once the answer was settled.
    engine: Option<RedisEngine>,
    tenant: TenantId,
}

impl Drop for DueGuard {
    fn drop(&mut self) {
        let Some(engine) = self.engine.take() else {
            return;
        };
        let tenant = self.tenant;
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { engine.lower_due(tenant, 0).await });
        }
    }
}

impl RedisEngine {
    /// One call of a per-tenant function and what follows from its
    /// answer on this handle: its removals delivered to this handle's
    /// subscribers, the due index lowered for the sweeper, freed room given
    /// back. Returns the reply's values and the room the call needs.
    ///
    /// A caller may drop the future mid-flight (a timeout, `select!`)
    /// after the server ran the call, and then its answer is lost, as it is
    /// when the call itself times out. For a call that may write, a guard
    /// then puts the tenant first in the due index, so the sweeper visits it and finds its next deadline itself:
    /// otherwise a dropped grant that ran would leave its lease out of the
    /// due index, never swept or announced until the tenant's next write
    /// (ADR 0068).
    async fn call_settled(
        &self,
        function: scripts::Function,
        keys: &[&str],
        argv: Vec<Vec<u8>>,
        tenant: TenantId,
        incarnation: u64,
    ) -> Result<(Vec<redis::Value>, Vec<String>)> {
        let guard = (!function.reads_only()).then(|| DueGuard {
            engine: Some(self.clone()),
            tenant,
        });
        let answer = self.inner.conn.call_keys(function, keys, argv).await;
        // A call that failed but may have run (a timeout) lost its answer
        // as a dropped one does: the guard stays armed for it.
        let lost = answer.as_ref().is_err_and(Error::may_have_run);
        let settled = async {
            let (reply, after) = events::split(answer?)?;
            self.deliver(tenant, incarnation, &after);
            if let Some(deadline) = after.due {
                self.lower_due(tenant, deadline).await;
            }
            self.give_back(&after.freed).await;
            Ok((reply, after.needs))
        }
        .await;
        // Disarmed once settled; a lost answer drops it armed here.
        if let Some(mut guard) = guard.filter(|_| !lost) {
            guard.engine = None;
        }
        settled
    }

    /// With [`RedisOptions::wait_replicas`] set: waits until that many
    /// replicas of the tenant's primary acknowledged every write of the
    /// connection that carried the call, or refuses.
    async fn await_replicas(&self, key: &str) -> Result<()> {
        let wanted = self.inner.wait_replicas;
        if wanted == 0 {
            return Ok(());
        }
        let acknowledged = self.inner.conn.wait_replicas(key, wanted).await?;
        if acknowledged < u64::from(wanted) {
            return Err(Error::backend(
                format!("the write reached {acknowledged} of the {wanted} replicas it waits for"),
                true,
            ));
        }
        Ok(())
    }

    /// One page of a key-ordered index through a page function
    /// (`page` in `lua/shared/60_records.lua`): `limit` (in `1..=page_len_max`) keys
    /// scanned after `cursor`; `decode` reads its typed reply (`more`: 1
    /// if the scan filled `limit`; `last`: the last key scanned) and turns
    /// each visible key's row into an item. `function` comes with the
    /// encoding of its arguments from `after` and `limit`.
    async fn page<T>(
        &self,
        (function, args): (
            scripts::Function,
            impl FnOnce(scripts::Arg, scripts::Arg) -> Vec<Vec<u8>>,
        ),
        tenant: TenantId,
        cursor: Option<&Cursor>,
        limit: usize,
        decode: impl FnOnce(&Reply) -> Result<PageReply<T>>,
    ) -> Result<Page<T>> {
        self.config().check_page_limit(limit)?;
        let after = cursor.map_or("", Cursor::as_str);
        // The function's own arguments, `after` and `limit`.
        let args = args(after.into(), limit.into());
        let Some(reply) = self
            .run(function, tenant, Mode::Existing, Issued::Nothing, args)
            .await?
        else {
            return Ok(Page {
                items: Vec::new(),
                next: None,
            });
        };
        reply.refusal()?;
        let page = decode(&reply)?;
        Ok(Page {
            next: (page.more == 1).then(|| Cursor::from(&*page.last)),
            items: page.items,
        })
    }
}

/// A page function's reply, its rows made items.
struct PageReply<T> {
    more: u64,
    last: Arc<str>,
    items: Vec<T>,
}

/// Calls one per-tenant operation may take: a new incarnation read twice,
/// and room taken twice (the second time only if the first came too late).
const ROUNDS: usize = 5;

/// A tenant quota as a function argument: `-1` when switched off.
fn quota_arg(limit: u64) -> String {
    if limit == crate::contract::config::TenantQuota::OFF {
        "-1".to_owned()
    } else {
        limit.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_prints_a_password() {
        for (url, shown) in [
            ("redis://127.0.0.1:6390/", "redis://127.0.0.1:6390/"),
            (
                "redis://relay:s3cret@10.0.0.1:6379/0",
                "redis://relay:<redacted>@10.0.0.1:6379/0",
            ),
            ("rediss://:s3cret@host", "rediss://:<redacted>@host"),
            ("redis://s3cret@host:1/", "redis://<redacted>@host:1/"),
            ("redis://u:p@ss:w@host/", "redis://u:<redacted>@host/"),
        ] {
            assert_eq!(redacted(url), shown, "{url}");
            let options = format!("{:?}", RedisOptions::standalone(url));
            assert!(
                !options.contains("s3cret") && !options.contains("p@ss"),
                "{options}"
            );
            let cluster = format!("{:?}", RedisOptions::cluster(&[url, url]));
            assert!(
                !cluster.contains("s3cret") && !cluster.contains("p@ss"),
                "{cluster}"
            );
        }
    }

    #[test]
    fn each_timeout_is_named_when_it_is_refused() {
        let zero = Duration::ZERO;
        let named = |options: RedisOptions| match options.validate() {
            Err(Error::InvalidConfig { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        let base = RedisOptions::standalone("redis://127.0.0.1:1/");
        assert_eq!(named(base.clone().call_timeout(zero)), "call_timeout");
        assert_eq!(named(base.connect_timeout(zero)), "connect_timeout");
    }
}
