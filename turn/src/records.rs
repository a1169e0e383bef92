//! Where the relay's records live: the in-memory store of this process,
//! or the Redis engine, shared by every relay process of a fleet (so the
//! per-user quota holds across the fleet). The operations are the few the
//! relay needs, in one tenant, each answered alike by both.
//!
//! On the in-memory store the datagram path's lookups are in-place reads
//! that allocate nothing; on Redis each lookup is a round trip, made from
//! the relay's thread on a one-worker runtime (the engine's sweeper and
//! event listener run on that worker meanwhile).

use relaystore::events::{Collection, Subscription};
use relaystore::redis::{RedisEngine, RedisOptions};
use relaystore::{Error, Kind, LeaseGrant, LeaseId, Store, StoreConfig, TenantId};
use std::time::{Duration, Instant};

/// The tenant every record of the relay belongs to.
pub const TENANT: TenantId = TenantId(1);

/// The collections whose removals the relay acts on.
const WATCHED: [Collection; 2] = [Collection::Leases, Collection::Presence];

/// The relay's records.
pub enum Records {
    /// This process's store.
    Memory(Store),
    /// The Redis engine, driven from the relay's thread.
    Redis {
        /// The engine.
        engine: RedisEngine,
        /// Its runtime: one worker for the engine's own tasks.
        runtime: tokio::runtime::Runtime,
        /// The origin of [`Records::now_ms`].
        started: Instant,
    },
}

impl Records {
    /// Connects to Redis at `url` (a cluster when `cluster` seeds are
    /// given), with `config`'s limits, under `namespace`.
    pub fn redis(urls: &[String], namespace: &str, config: StoreConfig) -> Result<Records, Error> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("relaystore-turn-redis")
            .enable_all()
            .build()
            .map_err(|_| Error::InvalidConfig {
                field: "engine",
                rule: "a runtime for the Redis engine could not start",
                values: String::new(),
            })?;
        let options = match urls {
            [one] => RedisOptions::standalone(one),
            seeds => RedisOptions::cluster(seeds),
        }
        .namespace(namespace);
        let engine = runtime.block_on(RedisEngine::connect(options, config))?;
        Ok(Records::Redis {
            engine,
            runtime,
            started: Instant::now(),
        })
    }

    /// Milliseconds on the records' clock: the store's on the in-memory
    /// engine (so a manual clock drives the nonces too), this process's
    /// monotonic clock on Redis.
    pub fn now_ms(&self) -> u64 {
        match self {
            Records::Memory(store) => store.now().as_millis(),
            Records::Redis { started, .. } => {
                u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
            }
        }
    }

    /// Removal events of leases and presence records.
    pub fn subscribe(&self) -> Result<Subscription, Error> {
        match self {
            Records::Memory(store) => store.subscribe_to(&WATCHED),
            Records::Redis {
                engine, runtime, ..
            } => runtime.block_on(engine.subscribe_to(&WATCHED)),
        }
    }

    /// `read` of the visible listing under `key`: its lease and attributes.
    pub fn read_listing<R>(
        &self,
        key: &str,
        mut read: impl FnMut(LeaseId, &[u8]) -> R,
    ) -> Result<R, Error> {
        match self {
            Records::Memory(store) => store.read_listing(TENANT, key, read),
            Records::Redis {
                engine, runtime, ..
            } => runtime
                .block_on(engine.get_listing(TENANT, key))
                .map(|l| read(l.lease, &l.attrs)),
        }
    }

    /// `read` of the visible presence record under `key`: its attributes.
    pub fn read_presence<R>(&self, key: &str, read: impl FnOnce(&[u8]) -> R) -> Result<R, Error> {
        match self {
            Records::Memory(store) => store.read_presence(TENANT, key, read),
            Records::Redis {
                engine, runtime, ..
            } => runtime
                .block_on(engine.get_presence(TENANT, key))
                .map(|p| read(&p.attrs)),
        }
    }

    /// The kind the records' configuration declared under `name`.
    pub fn kind(&self, name: &str) -> Result<Kind, Error> {
        match self {
            Records::Memory(store) => store.kind(name),
            Records::Redis { engine, .. } => engine.kind(name),
        }
    }

    /// `read` of the visible record `name` of `kind` under `lease`: its
    /// attributes.
    pub fn read_record<R>(
        &self,
        kind: Kind,
        lease: LeaseId,
        name: &str,
        read: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, Error> {
        match self {
            Records::Memory(store) => store.read_record(TENANT, kind, lease, name, read),
            Records::Redis {
                engine, runtime, ..
            } => runtime
                .block_on(engine.get_record(TENANT, kind, lease, name))
                .map(|r| read(&r.attrs)),
        }
    }

    /// Creates or renews the record `name` of `kind` under `lease` for
    /// `ttl`; `attrs`, if given, replace its attributes.
    pub fn put_record(
        &self,
        kind: Kind,
        lease: LeaseId,
        name: &str,
        ttl: Duration,
        attrs: Option<&[u8]>,
    ) -> Result<(), Error> {
        match self {
            Records::Memory(store) => store
                .put_record(TENANT, kind, lease, name, ttl, attrs)
                .map(|_| ()),
            Records::Redis {
                engine, runtime, ..
            } => runtime
                .block_on(engine.put_record(TENANT, kind, lease, name, ttl, attrs))
                .map(|_| ()),
        }
    }

    /// Removes the record `name` of `kind` under `lease`.
    pub fn remove_record(&self, kind: Kind, lease: LeaseId, name: &str) -> Result<(), Error> {
        match self {
            Records::Memory(store) => store.remove_record(TENANT, kind, lease, name),
            Records::Redis {
                engine, runtime, ..
            } => runtime.block_on(engine.remove_record(TENANT, kind, lease, name)),
        }
    }

    /// The holder of `lease` and its time left, if it is live.
    pub fn lease(&self, lease: LeaseId) -> Option<(String, Duration)> {
        let info = match self {
            Records::Memory(store) => store.get_lease(TENANT, lease),
            Records::Redis {
                engine, runtime, ..
            } => runtime.block_on(engine.get_lease(TENANT, lease)),
        };
        info.ok()
            .map(|l| (l.holder.as_str().to_string(), l.remaining))
    }

    /// A lease for `holder`, for `ttl`.
    pub fn grant(&self, holder: &str, ttl: Duration) -> Result<LeaseGrant, Error> {
        match self {
            Records::Memory(store) => store.grant(TENANT, holder, ttl, None),
            Records::Redis {
                engine, runtime, ..
            } => runtime.block_on(engine.grant(TENANT, holder, ttl, None)),
        }
    }

    /// Renews `lease` for `ttl`.
    pub fn renew(&self, lease: LeaseId, ttl: Duration) -> Result<(), Error> {
        match self {
            Records::Memory(store) => store.renew(TENANT, lease, ttl).map(|_| ()),
            Records::Redis {
                engine, runtime, ..
            } => runtime
                .block_on(engine.renew(TENANT, lease, ttl))
                .map(|_| ()),
        }
    }

    /// Revokes `lease` and what is attached to it.
    pub fn revoke(&self, lease: LeaseId) -> Result<(), Error> {
        match self {
            Records::Memory(store) => store.revoke(TENANT, lease),
            Records::Redis {
                engine, runtime, ..
            } => runtime.block_on(engine.revoke(TENANT, lease)),
        }
    }

    /// Publishes `attrs` under `key` on `lease`.
    pub fn publish(&self, lease: LeaseId, key: &str, attrs: &[u8]) -> Result<(), Error> {
        match self {
            Records::Memory(store) => store.publish(TENANT, lease, key, attrs, None).map(|_| ()),
            Records::Redis {
                engine, runtime, ..
            } => runtime
                .block_on(engine.publish(TENANT, lease, key, attrs, None))
                .map(|_| ()),
        }
    }

    /// Creates or refreshes the presence record `key` for `ttl`, of no
    /// lease.
    pub fn heartbeat(&self, key: &str, ttl: Duration, attrs: Option<&[u8]>) -> Result<(), Error> {
        match self {
            Records::Memory(store) => store.heartbeat(TENANT, key, ttl, attrs, None).map(|_| ()),
            Records::Redis {
                engine, runtime, ..
            } => runtime
                .block_on(engine.heartbeat(TENANT, key, ttl, attrs, None))
                .map(|_| ()),
        }
    }

    /// Removes the presence record `key`; only one caller succeeds.
    pub fn leave(&self, key: &str) -> Result<(), Error> {
        match self {
            Records::Memory(store) => store.leave(TENANT, key),
            Records::Redis {
                engine, runtime, ..
            } => runtime.block_on(engine.leave(TENANT, key)),
        }
    }
}
