//! The Redis engine under the engine contract: [`RelayEngine`],
//! [`WakeEngine`], [`StreamEngine`] and [`Engine`] are served by the
//! inherent methods of the same names, which document what this engine
//! adds (server clock, fences from server counters, timeouts).

use super::{RedisEngine, RedisFollower, RedisMember};
use crate::base::error::Result;
use crate::base::ids::{LeaseId, TenantId};
use crate::contract::engine::{Engine, RelayEngine, StreamEngine, WakeEngine};
use crate::contract::forward::{forward, served, Served};
use crate::contract::outbox::{OutboxMessage, OutboxRun};
use crate::contract::queue::ClaimedJob;
use crate::contract::relay::LockInfo;
use crate::contract::schedule::{ScheduleInfo, ScheduleRun};
use crate::mem::events::Subscription;
use crate::mem::wake::Listener;
use std::time::Duration;

/// The Redis engine's methods are its own.
impl Served for RedisEngine {
    type By = RedisEngine;

    fn served_by(&self) -> &RedisEngine {
        self
    }
}

impl RelayEngine for RedisEngine {
    type Events = Subscription;

    served!(relay async RedisEngine);

    // Naming a kind asks nothing of a server: it is read from the
    // configuration.
    fn kind(&self, name: &str) -> Result<crate::base::collection::Kind> {
        RedisEngine::kind(self, name)
    }

    forward! { async RedisEngine:
        try_lock(tenant: TenantId, name: &str, owner: &str, ttl: Duration, lease: Option<LeaseId>) -> Result<Option<LockInfo>>;
        drained() -> ();
        usage(tenant: TenantId) -> Result<crate::contract::usage::TenantUsage>;
    }
}

impl WakeEngine for RedisEngine {
    type Listener = Listener;

    served!(wake async RedisEngine);
}

impl StreamEngine for RedisEngine {
    type Follower = RedisFollower;
    type Member = RedisMember;

    served!(stream async RedisEngine);
}

impl Engine for RedisEngine {
    served!(queue async RedisEngine);

    forward! { async RedisEngine:
        claim_wait(tenant: TenantId, queue: &str, worker: &str, visibility: Option<Duration>, max_jobs: usize) -> Result<Vec<ClaimedJob>>;
        schedules(tenant: TenantId) -> Result<Vec<ScheduleInfo>>;
        try_lead_schedules(tenant: TenantId, runner: &str, ttl: Duration) -> Result<Option<LockInfo>>;
        run_schedules(tenant: TenantId, fence: u64) -> Result<ScheduleRun>;
    }

    async fn outbox_run_once<F, E>(
        &self,
        tenant: TenantId,
        worker: &str,
        max: usize,
        handler: F,
    ) -> Result<OutboxRun>
    where
        F: FnMut(&OutboxMessage) -> std::result::Result<(), E> + Send,
        E: std::fmt::Display,
    {
        RedisEngine::outbox_run_once(self, tenant, worker, max, handler).await
    }
}
