//! The conformance suite on the in-memory engine, and on three
//! deliberately broken engines that the suite must catch.

use relaystore::conformance::{self, Harness, InMemory, ENGINE_CHECKS, RELAY_CHECKS};
use relaystore::events::{Collection, Subscription};
use relaystore::queue::{ClaimToken, Failed, JobInfo, JobOptions, QueueConfig, QueueInfo};
use relaystore::schedule::{ScheduleInfo, ScheduleRun};
use relaystore::stream::{
    Claimed, Follower, GroupConfig, GroupInfo, GroupRead, Member, PendingEntry, StreamConfig,
    StreamRead,
};
use relaystore::wake::Listener;
use relaystore::{
    Admission, AttemptId, AttemptInfo, Binding, ClaimedJob, Cursor, DeadLetter, EndpointSeen,
    Engine, Error, Health, JobId, JoinTicket, JoinToken, Kind, LeaseGrant, LeaseId, LeaseInfo,
    ListingInfo, LockInfo, MemoryEngine, OutboxMessage, OutboxRun, Page, PresenceInfo, RecordInfo,
    RelayEngine, Renewal, Result, StoreConfig, StreamEngine, TenantId, TxBatch, TxOutcome,
    WakeEngine,
};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime")
        .block_on(future)
}

#[test]
fn the_in_memory_engine_conforms() {
    let failures = block_on(conformance::run(&InMemory::new()));
    let report: Vec<String> = failures.iter().map(ToString::to_string).collect();
    assert!(report.is_empty(), "{}", report.join("\n"));
    assert!(RELAY_CHECKS.len() >= 20 && ENGINE_CHECKS.len() >= 9);
}

/// How an engine is broken.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Defect {
    /// A consume of an already consumed token answers with the first
    /// admission again instead of `ReplayRejected`.
    SecondConsume,
    /// `update_listing` ignores the expected version.
    UnversionedUpdate,
    /// An ack with a stale claim answers `Ok` (the job stays where it was).
    StaleAck,
    /// `extend_claim` answers `Ok` and extends nothing.
    UnextendedClaim,
    /// `consume` drops its idempotency key: a retried consume is refused
    /// as a replay.
    KeylessConsume,
    /// `enqueue` and `enqueue_batch` drop their idempotency key: a
    /// retried enqueue makes its jobs again.
    KeylessEnqueue,
    /// `append` drops its idempotency key: a retried append appends again.
    KeylessAppend,
    /// `notify_with` drops its payload: listeners receive empty wakes.
    PayloadlessWakes,
    /// `enqueue` and `enqueue_batch` drop the priority: every job is
    /// claimed oldest first.
    FlatPriorities,
    /// `enqueue` drops the unique key: duplicates go in.
    NotUnique,
    /// `create_group` drops the bound on deliveries: an idle entry is
    /// delivered again for ever, never marked dead.
    EndlessDeliveries,
    /// `commit_tx` commits each change on its own: a refusal leaves the
    /// changes staged before it applied.
    PiecemealCommit,
    /// Records of declared kinds do not go with their lease: a record
    /// read after its lease is gone answers as it was last seen.
    OrphanedRecords,
}

/// The in-memory engine with one defect.
#[derive(Clone)]
struct Broken {
    inner: MemoryEngine,
    defect: Defect,
    admitted: Arc<Mutex<HashMap<AttemptId, Admission>>>,
    /// Every record seen, by tenant, kind, lease and name, until removed
    /// (`OrphanedRecords`).
    records: Arc<Mutex<HashMap<RecordKey, RecordInfo>>>,
}

type RecordKey = (TenantId, Kind, LeaseId, String);

struct BrokenHarness {
    inner: InMemory,
    defect: Defect,
}

impl Harness for BrokenHarness {
    type Engine = Broken;

    fn unit(&self) -> Duration {
        self.inner.unit()
    }

    async fn engine(&self, config: StoreConfig) -> Result<Broken> {
        Ok(Broken {
            inner: self.inner.engine(config).await?,
            defect: self.defect,
            admitted: Arc::default(),
            records: Arc::default(),
        })
    }

    async fn advance(&self, elapsed: Duration) {
        self.inner.advance(elapsed).await;
    }
}

/// Methods the broken engine passes straight through.
macro_rules! delegate {
    ($trait:ident; $($name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
        $(async fn $name(&self, $($arg: $ty),*) -> $out {
            $trait::$name(&self.inner, $($arg),*).await
        })*
    };
}

impl RelayEngine for Broken {
    type Events = Subscription;

    delegate! {
        RelayEngine;
        grant(tenant: TenantId, holder: &str, ttl: Duration, key: Option<&str>) -> Result<LeaseGrant>;
        renew(tenant: TenantId, id: LeaseId, ttl: Duration) -> Result<Renewal>;
        renew_at(tenant: TenantId, id: LeaseId, ttl: Duration, version: u64) -> Result<Renewal>;
        get_lease(tenant: TenantId, id: LeaseId) -> Result<LeaseInfo>;
        list_leases(tenant: TenantId, cursor: Option<&Cursor>, limit: usize) -> Result<Page<LeaseInfo>>;
        revoke(tenant: TenantId, id: LeaseId) -> Result<()>;
        observe_endpoint(tenant: TenantId, lease: LeaseId, addr: SocketAddr) -> Result<()>;
        endpoints(tenant: TenantId, lease: LeaseId) -> Result<Vec<EndpointSeen>>;
        publish(tenant: TenantId, lease: LeaseId, k: &str, attrs: &[u8], key: Option<&str>) -> Result<ListingInfo>;
        get_listing(tenant: TenantId, key: &str) -> Result<ListingInfo>;
        unpublish(tenant: TenantId, key: &str, expected: Option<u64>) -> Result<()>;
        revoke_listing(tenant: TenantId, key: &str) -> Result<()>;
        list_listings(tenant: TenantId, cursor: Option<&Cursor>, limit: usize) -> Result<Page<ListingInfo>>;
        heartbeat(tenant: TenantId, member: &str, ttl: Duration, attrs: Option<&[u8]>, lease: Option<LeaseId>) -> Result<Renewal>;
        get_presence(tenant: TenantId, member: &str) -> Result<PresenceInfo>;
        list_presence(tenant: TenantId, cursor: Option<&Cursor>, limit: usize) -> Result<Page<PresenceInfo>>;
        leave(tenant: TenantId, member: &str) -> Result<()>;
        begin_join(tenant: TenantId, listing: &str, client: &str, ttl: Duration, key: Option<&str>) -> Result<JoinTicket>;
        bind_endpoint(tenant: TenantId, attempt: AttemptId, token: &JoinToken, observed: SocketAddr) -> Result<Binding>;
        get_attempt(tenant: TenantId, attempt: AttemptId) -> Result<AttemptInfo>;
        cancel_join(tenant: TenantId, attempt: AttemptId) -> Result<()>;
        try_lock(tenant: TenantId, name: &str, owner: &str, ttl: Duration, lease: Option<LeaseId>) -> Result<Option<LockInfo>>;
        get_lock(tenant: TenantId, name: &str) -> Result<LockInfo>;
        renew_lock(tenant: TenantId, name: &str, fence: u64, ttl: Duration) -> Result<Renewal>;
        release_lock(tenant: TenantId, name: &str, fence: u64) -> Result<()>;
        revoke_tenant(tenant: TenantId) -> Result<()>;
        reconfigure(config: StoreConfig) -> Result<()>;
        set_quota_policy(policy: Arc<dyn relaystore::QuotaPolicy>) -> ();
        health() -> Health;
        usage(tenant: TenantId) -> Result<relaystore::TenantUsage>;
        begin_drain(window: Duration) -> Result<Duration>;
        drained() -> ();
        subscribe() -> Result<Subscription>;
        subscribe_to(collections: &[Collection]) -> Result<Subscription>;
        put_record(tenant: TenantId, kind: Kind, lease: LeaseId, name: &str, ttl: Duration, attrs: Option<&[u8]>) -> Result<Renewal>;
        renew_record(tenant: TenantId, kind: Kind, lease: LeaseId, name: &str, ttl: Duration) -> Result<Renewal>;
        list_records(tenant: TenantId, kind: Kind, lease: LeaseId) -> Result<Vec<RecordInfo>>;
    }

    fn kind(&self, name: &str) -> Result<Kind> {
        RelayEngine::kind(&self.inner, name)
    }

    async fn get_record(
        &self,
        tenant: TenantId,
        kind: Kind,
        lease: LeaseId,
        name: &str,
    ) -> Result<RecordInfo> {
        let got = RelayEngine::get_record(&self.inner, tenant, kind, lease, name).await;
        let key = (tenant, kind, lease, name.to_owned());
        let mut records = self.records.lock().unwrap();
        match (&got, self.defect) {
            (Ok(record), _) => {
                records.insert(key, record.clone());
            }
            (Err(Error::NotFound), Defect::OrphanedRecords) => {
                if let Some(seen) = records.get(&key) {
                    return Ok(seen.clone());
                }
            }
            _ => {}
        }
        got
    }

    async fn remove_record(
        &self,
        tenant: TenantId,
        kind: Kind,
        lease: LeaseId,
        name: &str,
    ) -> Result<()> {
        let key = (tenant, kind, lease, name.to_owned());
        self.records.lock().unwrap().remove(&key);
        RelayEngine::remove_record(&self.inner, tenant, kind, lease, name).await
    }

    async fn update_listing(
        &self,
        tenant: TenantId,
        key: &str,
        expected: u64,
        attrs: &[u8],
    ) -> Result<u64> {
        let expected = match self.defect {
            Defect::UnversionedUpdate => RelayEngine::get_listing(&self.inner, tenant, key)
                .await
                .map_or(expected, |l| l.version),
            Defect::SecondConsume
            | Defect::StaleAck
            | Defect::UnextendedClaim
            | Defect::KeylessConsume
            | Defect::KeylessEnqueue
            | Defect::KeylessAppend
            | Defect::PayloadlessWakes
            | Defect::FlatPriorities
            | Defect::NotUnique
            | Defect::EndlessDeliveries
            | Defect::PiecemealCommit
            | Defect::OrphanedRecords => expected,
        };
        RelayEngine::update_listing(&self.inner, tenant, key, expected, attrs).await
    }

    async fn consume(
        &self,
        tenant: TenantId,
        token: &JoinToken,
        key: Option<&str>,
    ) -> Result<Admission> {
        let key = key.filter(|_| self.defect != Defect::KeylessConsume);
        let result = RelayEngine::consume(&self.inner, tenant, token, key).await;
        let mut admitted = self.admitted.lock().unwrap();
        match (&result, self.defect) {
            (Ok(a), _) => {
                admitted.insert(token.attempt(), a.clone());
            }
            (Err(Error::ReplayRejected), Defect::SecondConsume) => {
                if let Some(first) = admitted.get(&token.attempt()) {
                    return Ok(first.clone());
                }
            }
            _ => {}
        }
        result
    }
}

impl WakeEngine for Broken {
    type Listener = Listener;

    delegate! {
        WakeEngine;
        notify(tenant: TenantId, channel: &str) -> Result<()>;
        listen(tenant: TenantId, channel: &str) -> Result<Listener>;
    }

    async fn notify_with(&self, tenant: TenantId, channel: &str, payload: &[u8]) -> Result<()> {
        let payload = if self.defect == Defect::PayloadlessWakes {
            &[][..]
        } else {
            payload
        };
        WakeEngine::notify_with(&self.inner, tenant, channel, payload).await
    }
}

impl StreamEngine for Broken {
    type Follower = Follower;
    type Member = Member;

    delegate! {
        StreamEngine;
        create_stream(tenant: TenantId, name: &str, config: StreamConfig) -> Result<()>;
        delete_stream(tenant: TenantId, name: &str) -> Result<()>;
        read_stream(tenant: TenantId, name: &str, from: u64, max: usize) -> Result<StreamRead>;
        trim_stream(tenant: TenantId, name: &str, before: u64) -> Result<u64>;
        commit(tenant: TenantId, name: &str, consumer: &str, offset: u64) -> Result<()>;
        stream_info(tenant: TenantId, name: &str) -> Result<relaystore::stream::StreamInfo>;
        committed(tenant: TenantId, name: &str, consumer: &str) -> Result<Option<u64>>;
        follow(tenant: TenantId, name: &str, consumer: &str) -> Result<Follower>;
        delete_group(tenant: TenantId, name: &str, group: &str) -> Result<()>;
        read_group(tenant: TenantId, name: &str, group: &str, member: &str, max: usize) -> Result<GroupRead>;
        ack_group(tenant: TenantId, name: &str, group: &str, offsets: &[u64]) -> Result<usize>;
        claim_idle(tenant: TenantId, name: &str, group: &str, member: &str, min_idle: Duration, max: usize) -> Result<Claimed>;
        pending(tenant: TenantId, name: &str, group: &str, from: u64, max: usize) -> Result<Vec<PendingEntry>>;
        group_info(tenant: TenantId, name: &str, group: &str) -> Result<GroupInfo>;
        join_group(tenant: TenantId, name: &str, group: &str, member: &str) -> Result<Member>;
    }

    async fn create_group(
        &self,
        tenant: TenantId,
        name: &str,
        group: &str,
        mut config: GroupConfig,
    ) -> Result<()> {
        if self.defect == Defect::EndlessDeliveries {
            config.deliveries_max = u32::MAX;
        }
        StreamEngine::create_group(&self.inner, tenant, name, group, config).await
    }

    async fn append(
        &self,
        tenant: TenantId,
        name: &str,
        payload: &[u8],
        key: Option<&str>,
    ) -> Result<u64> {
        let key = key.filter(|_| self.defect != Defect::KeylessAppend);
        StreamEngine::append(&self.inner, tenant, name, payload, key).await
    }
}

impl Engine for Broken {
    delegate! {
        Engine;
        create_queue(tenant: TenantId, name: &str, config: QueueConfig) -> Result<()>;
        delete_queue(tenant: TenantId, name: &str) -> Result<()>;
        claim(tenant: TenantId, queue: &str, worker: &str, visibility: Option<Duration>, max_jobs: usize) -> Result<Vec<ClaimedJob>>;
        claim_wait(tenant: TenantId, queue: &str, worker: &str, visibility: Option<Duration>, max_jobs: usize) -> Result<Vec<ClaimedJob>>;
        fail(tenant: TenantId, queue: &str, job: JobId, claim: ClaimToken, reason: &str) -> Result<Failed>;
        snooze(tenant: TenantId, queue: &str, job: JobId, claim: ClaimToken, delay: Duration) -> Result<()>;
        ack_batch(tenant: TenantId, queue: &str, acks: &[(JobId, ClaimToken)]) -> Result<Vec<Result<()>>>;
        cancel_job(tenant: TenantId, queue: &str, job: JobId) -> Result<()>;
        job(tenant: TenantId, queue: &str, job: JobId) -> Result<JobInfo>;
        queue_info(tenant: TenantId, queue: &str) -> Result<QueueInfo>;
        dead_letters(tenant: TenantId, queue: &str, after: Option<JobId>, max: usize) -> Result<Vec<DeadLetter>>;
        requeue_dead(tenant: TenantId, queue: &str, job: JobId) -> Result<()>;
        purge_dead(tenant: TenantId, queue: &str) -> Result<usize>;
        outbox_put(tenant: TenantId, topic: &str, payload: &[u8], idempotency_key: Option<&str>) -> Result<JobId>;
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
        Engine::outbox_run_once(&self.inner, tenant, worker, max, handler).await
    }

    async fn commit_tx(&self, batch: TxBatch) -> Result<TxOutcome> {
        if self.defect != Defect::PiecemealCommit {
            return Engine::commit_tx(&self.inner, batch).await;
        }
        // Broken: one commit per change, so a refusal keeps what came
        // before it; the outcome reported is the last change's alone.
        let mut last = Engine::commit_tx(&self.inner, TxBatch::new(batch.tenant())).await?;
        for op in batch.ops() {
            let mut one = TxBatch::new(batch.tenant());
            one.stage(op.clone())?;
            last = Engine::commit_tx(&self.inner, one).await?;
        }
        Ok(last)
    }

    async fn enqueue(
        &self,
        tenant: TenantId,
        queue: &str,
        payload: &[u8],
        options: JobOptions,
    ) -> Result<JobId> {
        let options = self.keyed(options);
        Engine::enqueue(&self.inner, tenant, queue, payload, options).await
    }

    async fn enqueue_batch(
        &self,
        tenant: TenantId,
        queue: &str,
        payloads: &[&[u8]],
        options: JobOptions,
    ) -> Result<Vec<JobId>> {
        let options = self.keyed(options);
        Engine::enqueue_batch(&self.inner, tenant, queue, payloads, options).await
    }

    async fn extend_claim(
        &self,
        tenant: TenantId,
        queue: &str,
        job: JobId,
        claim: ClaimToken,
        visibility: Option<Duration>,
    ) -> Result<Duration> {
        if self.defect == Defect::UnextendedClaim {
            // Broken: the claim is checked, and left as it was.
            Engine::job(&self.inner, tenant, queue, job).await?;
            return Ok(visibility.unwrap_or(Duration::from_secs(30)));
        }
        Engine::extend_claim(&self.inner, tenant, queue, job, claim, visibility).await
    }

    async fn ack(
        &self,
        tenant: TenantId,
        queue: &str,
        job: JobId,
        claim: ClaimToken,
    ) -> Result<()> {
        match Engine::ack(&self.inner, tenant, queue, job, claim).await {
            // Broken: a stale claim's ack is taken as done.
            Err(Error::StaleClaim) if self.defect == Defect::StaleAck => Ok(()),
            other => other,
        }
    }
}

impl Broken {
    /// The options an enqueue passes on: without their key, at priority
    /// 0, or without their unique key, when broken so.
    fn keyed(&self, mut options: JobOptions) -> JobOptions {
        if self.defect == Defect::KeylessEnqueue {
            options.idempotency_key = None;
        }
        if self.defect == Defect::FlatPriorities {
            options.priority = 0;
        }
        if self.defect == Defect::NotUnique {
            options.unique = None;
        }
        options
    }
}

fn failed_checks(defect: Defect) -> Vec<&'static str> {
    let harness = BrokenHarness {
        inner: InMemory::new(),
        defect,
    };
    let failures = block_on(conformance::run(&harness));
    failures.iter().map(|f| f.check).collect()
}

#[test]
fn the_suite_catches_an_engine_that_lets_a_second_consume_through() {
    assert_eq!(
        failed_checks(Defect::SecondConsume),
        vec![
            "joins::bind_then_consume_once",
            "joins::concurrent_consumes",
            "joins::consume_retried_with_a_key"
        ]
    );
}

#[test]
fn the_suite_catches_an_engine_that_drops_a_consumes_key() {
    assert_eq!(
        failed_checks(Defect::KeylessConsume),
        vec![
            "joins::consume_retried_with_a_key",
            "lifecycle::expired_memories"
        ]
    );
}

#[test]
fn the_suite_catches_an_engine_that_drops_an_enqueues_key() {
    assert_eq!(
        failed_checks(Defect::KeylessEnqueue),
        vec!["queues::enqueue_retried_with_a_key", "queues::priorities"]
    );
}

#[test]
fn the_suite_catches_an_engine_that_lets_duplicates_of_a_unique_job_in() {
    assert_eq!(
        failed_checks(Defect::NotUnique),
        vec!["queues::unique_jobs"]
    );
}

#[test]
fn the_suite_catches_an_engine_without_a_bound_on_deliveries() {
    assert_eq!(
        failed_checks(Defect::EndlessDeliveries),
        vec![
            "groups::deliveries_and_acks",
            "groups::idle_claims_and_dead_entries"
        ]
    );
}

#[test]
fn the_suite_catches_an_engine_that_drops_a_jobs_priority() {
    assert_eq!(
        failed_checks(Defect::FlatPriorities),
        vec!["queues::priorities"]
    );
}

#[test]
fn the_suite_catches_an_engine_that_drops_an_appends_key() {
    assert_eq!(
        failed_checks(Defect::KeylessAppend),
        vec!["streams::append_retried_with_a_key"]
    );
}

#[test]
fn the_suite_catches_an_engine_that_drops_a_notifys_payload() {
    assert_eq!(
        failed_checks(Defect::PayloadlessWakes),
        vec![
            "wakes::notify_and_listen",
            "wakes::channel_names",
            "wakes::a_full_queue_drops_the_oldest",
            "wakes::drained_closes_listeners"
        ]
    );
}

#[test]
fn the_suite_catches_an_engine_that_takes_a_stale_claims_ack() {
    assert_eq!(
        failed_checks(Defect::StaleAck),
        vec!["queues::claims_and_acks", "queues::lapses_and_delays"]
    );
}

#[test]
fn the_suite_catches_an_engine_that_does_not_extend_a_claim() {
    assert_eq!(
        failed_checks(Defect::UnextendedClaim),
        vec!["queues::claims_extend"]
    );
}

#[test]
fn the_suite_catches_an_engine_that_ignores_the_expected_version() {
    assert_eq!(
        failed_checks(Defect::UnversionedUpdate),
        vec!["listings::publish_update_unpublish"]
    );
}

#[test]
fn the_suite_catches_an_engine_that_commits_a_transaction_piecemeal() {
    assert_eq!(
        failed_checks(Defect::PiecemealCommit),
        vec![
            "tx::all_or_nothing",
            "tx::refusals_are_the_operations",
            "tx::claims_settle_together"
        ]
    );
}

#[test]
fn the_suite_catches_an_engine_whose_records_outlive_their_lease() {
    assert_eq!(
        failed_checks(Defect::OrphanedRecords),
        vec!["records::lifecycle"]
    );
}
