//! The Redis engine under the engine contract: [`RelayEngine`],
//! [`WakeEngine`], [`StreamEngine`] and [`Engine`] are served by the
//! inherent methods of the same names, which document what this engine
//! adds (server clock, fences from server counters, timeouts).

use super::{RedisEngine, RedisFollower};
use crate::base::error::Result;
use crate::base::ids::{AttemptId, JobId, JoinToken, LeaseId, TenantId};
use crate::contract::engine::{Engine, RelayEngine, StreamEngine, WakeEngine};
use crate::contract::events::Collection;
use crate::contract::forward::forward;
use crate::contract::lifecycle::Health;
use crate::contract::outbox::{OutboxMessage, OutboxRun};
use crate::contract::queue::DeadLetter;
use crate::contract::queue::{
    ClaimToken, ClaimedJob, Failed, JobInfo, JobOptions, QueueConfig, QueueInfo,
};
use crate::contract::relay::{
    Admission, Binding, Cursor, EndpointSeen, JoinTicket, LeaseGrant, LeaseInfo, ListingInfo,
    LockInfo, Page, PresenceInfo, Renewal,
};
use crate::contract::schedule::{ScheduleInfo, ScheduleRun};
use crate::contract::stream::{StreamConfig, StreamInfo, StreamRead};
use crate::mem::events::Subscription;
use crate::mem::wake::Listener;
use std::net::SocketAddr;
use std::time::Duration;

impl RelayEngine for RedisEngine {
    type Events = Subscription;

    forward! { async RedisEngine:
        grant(tenant: TenantId, holder: &str, ttl: Duration, key: Option<&str>) -> Result<LeaseGrant>;
        renew(tenant: TenantId, id: LeaseId, ttl: Duration) -> Result<Renewal>;
        renew_at(tenant: TenantId, id: LeaseId, ttl: Duration, version: u64) -> Result<Renewal>;
        get_lease(tenant: TenantId, id: LeaseId) -> Result<LeaseInfo>;
        revoke(tenant: TenantId, id: LeaseId) -> Result<()>;
        observe_endpoint(tenant: TenantId, lease: LeaseId, addr: SocketAddr) -> Result<()>;
        endpoints(tenant: TenantId, lease: LeaseId) -> Result<Vec<EndpointSeen>>;
        publish(tenant: TenantId, lease: LeaseId, k: &str, attrs: &[u8], key: Option<&str>) -> Result<ListingInfo>;
        get_listing(tenant: TenantId, key: &str) -> Result<ListingInfo>;
        update_listing(tenant: TenantId, key: &str, expected: u64, attrs: &[u8]) -> Result<u64>;
        unpublish(tenant: TenantId, key: &str, expected: Option<u64>) -> Result<()>;
        revoke_listing(tenant: TenantId, key: &str) -> Result<()>;
        list_listings(tenant: TenantId, cursor: Option<&Cursor>, limit: usize) -> Result<Page<ListingInfo>>;
        heartbeat(tenant: TenantId, member: &str, ttl: Duration, attrs: Option<&[u8]>, lease: Option<LeaseId>) -> Result<Renewal>;
        get_presence(tenant: TenantId, member: &str) -> Result<PresenceInfo>;
        list_presence(tenant: TenantId, cursor: Option<&Cursor>, limit: usize) -> Result<Page<PresenceInfo>>;
        leave(tenant: TenantId, member: &str) -> Result<()>;
        begin_join(tenant: TenantId, listing: &str, client: &str, ttl: Duration, key: Option<&str>) -> Result<JoinTicket>;
        bind_endpoint(tenant: TenantId, attempt: AttemptId, token: &JoinToken, observed: SocketAddr) -> Result<Binding>;
        consume(tenant: TenantId, token: &JoinToken) -> Result<Admission>;
        cancel_join(tenant: TenantId, attempt: AttemptId) -> Result<()>;
        try_lock(tenant: TenantId, name: &str, owner: &str, ttl: Duration, lease: Option<LeaseId>) -> Result<Option<LockInfo>>;
        get_lock(tenant: TenantId, name: &str) -> Result<LockInfo>;
        renew_lock(tenant: TenantId, name: &str, fence: u64, ttl: Duration) -> Result<Renewal>;
        release_lock(tenant: TenantId, name: &str, fence: u64) -> Result<()>;
        revoke_tenant(tenant: TenantId) -> Result<()>;
        health() -> Health;
        begin_drain(window: Duration) -> Result<Duration>;
        subscribe() -> Result<Subscription>;
        subscribe_to(collections: &[Collection]) -> Result<Subscription>;
    }
}

impl WakeEngine for RedisEngine {
    type Listener = Listener;

    forward! { async RedisEngine:
        notify(tenant: TenantId, channel: &str) -> Result<()>;
        listen(tenant: TenantId, channel: &str) -> Result<Listener>;
    }
}

impl StreamEngine for RedisEngine {
    type Follower = RedisFollower;

    forward! { async RedisEngine:
        create_stream(tenant: TenantId, name: &str, config: StreamConfig) -> Result<()>;
        delete_stream(tenant: TenantId, name: &str) -> Result<()>;
        append(tenant: TenantId, name: &str, payload: &[u8]) -> Result<u64>;
        read_stream(tenant: TenantId, name: &str, from: u64, max: usize) -> Result<StreamRead>;
        trim_stream(tenant: TenantId, name: &str, before: u64) -> Result<u64>;
        commit(tenant: TenantId, name: &str, consumer: &str, offset: u64) -> Result<()>;
        stream_info(tenant: TenantId, name: &str) -> Result<StreamInfo>;
        committed(tenant: TenantId, name: &str, consumer: &str) -> Result<Option<u64>>;
        follow(tenant: TenantId, name: &str, consumer: &str) -> Result<RedisFollower>;
    }
}

impl Engine for RedisEngine {
    forward! { async RedisEngine:
        create_queue(tenant: TenantId, name: &str, config: QueueConfig) -> Result<()>;
        delete_queue(tenant: TenantId, name: &str) -> Result<()>;
        enqueue(tenant: TenantId, queue: &str, payload: &[u8], options: JobOptions) -> Result<JobId>;
        claim(tenant: TenantId, queue: &str, worker: &str, visibility: Option<Duration>, max_jobs: usize) -> Result<Vec<ClaimedJob>>;
        claim_wait(tenant: TenantId, queue: &str, worker: &str, visibility: Option<Duration>, max_jobs: usize) -> Result<Vec<ClaimedJob>>;
        ack(tenant: TenantId, queue: &str, job: JobId, claim: ClaimToken) -> Result<()>;
        fail(tenant: TenantId, queue: &str, job: JobId, claim: ClaimToken, reason: &str) -> Result<Failed>;
        job(tenant: TenantId, queue: &str, job: JobId) -> Result<JobInfo>;
        queue_info(tenant: TenantId, queue: &str) -> Result<QueueInfo>;
        dead_letters(tenant: TenantId, queue: &str, after: Option<JobId>, max: usize) -> Result<Vec<DeadLetter>>;
        requeue_dead(tenant: TenantId, queue: &str, job: JobId) -> Result<()>;
        purge_dead(tenant: TenantId, queue: &str) -> Result<usize>;
        outbox_put(tenant: TenantId, topic: &str, payload: &[u8]) -> Result<JobId>;
        schedule(tenant: TenantId, name: &str, spec: &str, queue: &str, payload: &[u8]) -> Result<()>;
        unschedule(tenant: TenantId, name: &str) -> Result<()>;
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
