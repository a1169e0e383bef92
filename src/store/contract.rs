//! The in-memory engine's side of the engine contract: [`MemoryEngine`],
//! a [`Store`] handle seen through the contract's async traits. Every
//! operation is the store's synchronous method of the same name, run when
//! the trait method is called, and its result handed back as a future
//! that is already complete. Cancel-safe for free: by the time a caller
//! could drop the future, all of the operation has happened. (A future
//! that ran the operation at its first poll measured 1.17x the direct
//! call on renew, median of 5 runs; this form 1.02x. docs/PERFORMANCE.md
//! has both.)
//!
//! The store itself implements none of the traits, so one name on one
//! type has one calling convention: `store.grant(..)` answers at once,
//! `store.engine().grant(..).await` is the contract's (ADR 0081).
//!
//! The store's operations the contract does not carry, and why:
//! - `read_record`, `read_listing`, `read_presence`: in-place reads (a
//!   closure over borrowed bytes cannot cross to a server);
//! - `stats`, `streams`, `queues`, `listeners`, `sweep_lag`, `sweep`,
//!   `audit`, `digest`: the in-memory store's own counts, its driver's
//!   step and its checks (a remote engine's are the server's; `usage` and
//!   `health` are the contract's);
//! - `new`, `with_policy`, `builder`: a store is built in its process (a
//!   remote engine connects instead);
//! - `config`, `fence_floor`: what this process built the store with;
//! - `now`, `expires_at`: readings of this store's clock (the contract
//!   reports time as time remaining);
//! - `blocking_*` waits: the contract's waits are async;
//! - `begin_tx`, `with_tx`: a transaction that reads its own writes and
//!   spans tenants (the contract commits a `TxBatch` whole, `commit_tx`);
//! - the guards `try_lock` and `try_lead_schedules` return: the contract
//!   hands back their descriptions (`LockInfo`), as a remote engine can;
//! - `engine`: this face itself.

use super::{Follower, LockInfo, Member, Store};
use crate::base::error::Result;
use crate::base::ids::{LeaseId, TenantId};
use crate::contract::engine::{
    Engine, Events, Follow, GroupMember, RelayEngine, StreamEngine, WakeEngine, Wakes,
};
use crate::contract::events::{Received, RecvError};
use crate::contract::forward::{forward, served, Served};
use crate::contract::group::{Claimed, GroupRead};
use crate::contract::outbox::{OutboxMessage, OutboxRun};
use crate::contract::queue::ClaimedJob;
use crate::contract::schedule::{ScheduleInfo, ScheduleRun};
use crate::contract::stream::StreamRead;
use crate::contract::wake::Wake;
use crate::mem::events::Subscription;
use crate::mem::wake::Listener;
use std::future::{ready, Future};
use std::time::Duration;

/// The in-memory engine: a [`Store`] handle that serves the engine
/// contract ([`RelayEngine`], [`Engine`], ...), for code written against
/// it (`E: Engine`) that runs on this store or on Redis alike. Made by
/// [`Store::engine`]; a clone is another handle to the same store.
///
/// ```
/// use relaystore::{Engine, Store, TenantId};
/// use std::time::Duration;
///
/// async fn host<E: Engine>(engine: &E) -> Result<(), relaystore::Error> {
///     let lease = engine.grant(TenantId(1), "host-a", Duration::from_secs(30), None).await?;
///     engine.publish(TenantId(1), lease.id, "lobby", b"", None).await?;
///     Ok(())
/// }
///
/// let store = Store::builder().build()?;
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// host(&store.engine()).await?;
/// # Ok::<(), relaystore::Error>(()) })?;
/// assert!(store.get_listing(TenantId(1), "lobby").is_ok()); // the same store
/// # Ok::<(), relaystore::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct MemoryEngine {
    store: Store,
}

impl Store {
    /// This store as the engine contract's in-memory engine: the same
    /// records, through the contract's async methods.
    pub fn engine(&self) -> MemoryEngine {
        MemoryEngine {
            store: self.clone(),
        }
    }
}

impl MemoryEngine {
    /// The store behind it, for its synchronous methods.
    pub fn store(&self) -> &Store {
        &self.store
    }
}

impl From<Store> for MemoryEngine {
    fn from(store: Store) -> Self {
        MemoryEngine { store }
    }
}

impl Served for MemoryEngine {
    type By = Store;

    fn served_by(&self) -> &Store {
        &self.store
    }
}

impl RelayEngine for MemoryEngine {
    type Events = Subscription;

    served!(relay ready Store);

    // Naming a kind asks nothing of a server: it is read from the
    // configuration.
    fn kind(&self, name: &str) -> Result<crate::base::collection::Kind> {
        Store::kind(&self.store, name)
    }

    // Waiting for the end of a drain is the one wait of this trait.
    forward! { async Store:
        drained() -> ();
    }

    // The in-memory store's counts cannot fail to be read.
    fn usage(
        &self,
        tenant: TenantId,
    ) -> impl Future<Output = Result<crate::contract::usage::TenantUsage>> + Send {
        ready(Ok(Store::usage(&self.store, tenant)))
    }

    // A lock taken here is handed back as its description, not a guard.
    fn try_lock(
        &self,
        tenant: TenantId,
        name: &str,
        owner: &str,
        ttl: Duration,
        lease: Option<LeaseId>,
    ) -> impl Future<Output = Result<Option<LockInfo>>> + Send {
        ready(
            Store::try_lock(&self.store, tenant, name, owner, ttl, lease)
                .map(|taken| taken.map(|guard| guard.taken_by(owner))),
        )
    }
}

impl WakeEngine for MemoryEngine {
    type Listener = Listener;

    served!(wake ready Store);
}

impl StreamEngine for MemoryEngine {
    type Follower = Follower;
    type Member = Member;

    served!(stream ready Store);
}

impl Engine for MemoryEngine {
    served!(queue ready Store);

    forward! { async Store:
        claim_wait(tenant: TenantId, queue: &str, worker: &str, visibility: Option<Duration>, max_jobs: usize) -> Result<Vec<ClaimedJob>>;
    }

    fn outbox_run_once<F, E>(
        &self,
        tenant: TenantId,
        worker: &str,
        max: usize,
        handler: F,
    ) -> impl Future<Output = Result<OutboxRun>> + Send
    where
        F: FnMut(&OutboxMessage) -> std::result::Result<(), E> + Send,
        E: std::fmt::Display,
    {
        ready(Store::outbox_run_once(
            &self.store,
            tenant,
            worker,
            max,
            handler,
        ))
    }

    fn schedules(
        &self,
        tenant: TenantId,
    ) -> impl Future<Output = Result<Vec<ScheduleInfo>>> + Send {
        ready(Ok(Store::schedules(&self.store, tenant)))
    }

    fn try_lead_schedules(
        &self,
        tenant: TenantId,
        runner: &str,
        ttl: Duration,
    ) -> impl Future<Output = Result<Option<LockInfo>>> + Send {
        let taken = Store::try_lead_schedules(&self.store, tenant, runner, ttl);
        ready(taken.map(|guard| guard.map(|g| g.taken_by(runner))))
    }

    fn run_schedules(
        &self,
        tenant: TenantId,
        fence: u64,
    ) -> impl Future<Output = Result<ScheduleRun>> + Send {
        ready(self.store.run_schedules_fenced(tenant, fence))
    }
}

impl Follow for Follower {
    fn position(&self) -> u64 {
        Follower::position(self)
    }

    fn next(&mut self, max: usize) -> impl Future<Output = Result<StreamRead>> + Send {
        Follower::next(self, max)
    }

    fn commit(&self) -> impl Future<Output = Result<()>> + Send {
        ready(Follower::commit(self))
    }

    fn seek(&mut self, offset: u64) {
        Follower::seek(self, offset);
    }

    fn seek_to_first(&mut self) -> impl Future<Output = Result<u64>> + Send {
        ready(Follower::seek_to_first(self))
    }
}

impl GroupMember for Member {
    fn next(&mut self, max: usize) -> impl Future<Output = Result<GroupRead>> + Send {
        Member::next(self, max)
    }

    fn ack(&self, offsets: &[u64]) -> impl Future<Output = Result<usize>> + Send {
        ready(Member::ack(self, offsets))
    }

    fn claim_idle(
        &self,
        min_idle: Duration,
        max: usize,
    ) -> impl Future<Output = Result<Claimed>> + Send {
        ready(Member::claim_idle(self, min_idle, max))
    }
}

impl Wakes for Listener {
    fn try_recv(&self) -> Option<Wake> {
        Listener::try_recv(self)
    }

    fn recv(&self) -> impl Future<Output = std::result::Result<Wake, RecvError>> + Send {
        self.recv()
    }
}

impl Events for Subscription {
    fn try_recv(&self) -> Option<Received> {
        Subscription::try_recv(self)
    }

    fn recv(&self) -> impl Future<Output = std::result::Result<Received, RecvError>> + Send {
        self.recv()
    }
}

#[cfg(all(test, not(relaystore_loom)))]
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    /// The public methods of `Store` written in the files under `dir`.
    fn store_methods(dir: &Path, out: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                store_methods(&path, out);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let mut inside = false;
            for line in text.lines() {
                if line.starts_with("impl Store {") {
                    inside = true;
                } else if line == "}" {
                    inside = false;
                } else if let Some(rest) = inside
                    .then(|| {
                        line.strip_prefix("    pub fn ")
                            .or(line.strip_prefix("    pub async fn "))
                    })
                    .flatten()
                {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    out.insert(name);
                }
            }
        }
    }

    /// Every public method of the store is the contract's operation of
    /// the same name, or this module's documentation names it among the
    /// operations the contract does not carry, with the reason.
    #[test]
    fn every_store_operation_is_the_contracts_or_listed_with_its_reason() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut methods = BTreeSet::new();
        store_methods(&root.join("store"), &mut methods);
        assert!(methods.len() > 80, "{} methods found", methods.len());
        let contract = std::fs::read_to_string(root.join("contract/engine.rs")).unwrap();
        let own = std::fs::read_to_string(root.join("store/contract.rs")).unwrap();
        let listed: String = own.lines().filter(|l| l.starts_with("//!")).collect();
        let missing: Vec<&String> = methods
            .iter()
            .filter(|m| {
                let served = contract.contains(&format!("fn {m}("))
                    || contract.contains(&format!("fn {m}<"));
                let named = listed.contains(&format!("`{m}`"))
                    || (m.starts_with("blocking_") && listed.contains("`blocking_*`"));
                !served && !named
            })
            .collect();
        assert!(
            missing.is_empty(),
            "store operations neither served by the contract nor listed with a reason: {missing:?}"
        );
    }
}
