//! The connection to Redis: one multiplexed, reconnecting connection to a
//! server, or the client's cluster connection (slot routing, redirects).
//! Every call is bounded by the call timeout and fails closed.

use super::scripts::{Function, LIBRARY};
use super::{RedisOptions, RedisTarget};
use crate::base::error::{Error, Result};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{
    MultipleNodeRoutingInfo, Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr,
};
use redis::{FromRedisValue, Value};
use std::future::Future;
use std::time::Duration;

pub(super) struct Conn {
    kind: Kind,
    timeout: Duration,
}

enum Kind {
    Server(ConnectionManager),
    Cluster(ClusterConnection),
}

/// A Redis failure as the contract's fail-closed error, saying whether the
/// call may have run.
pub(super) fn unavailable(e: &redis::RedisError) -> Error {
    Error::backend(e.to_string(), may_have_run(e))
}

/// The error codes with which a server refuses a command before running
/// it: out of memory, a cluster redirect or a cluster (or its master)
/// down, a server loading its data or busy with a script, a replica
/// refusing writes, a write refused because persistence is failing, a
/// missing permission or login, a missing function.
const REFUSED_BEFORE_RUNNING: &[&str] = &[
    "OOM",
    "MOVED",
    "ASK",
    "TRYAGAIN",
    "CLUSTERDOWN",
    "MASTERDOWN",
    "CROSSSLOT",
    "LOADING",
    "BUSY",
    "READONLY",
    "MISCONF",
    "NOPERM",
    "NOAUTH",
    "WRONGPASS",
    "NOSCRIPT",
];

/// Whether a call that failed with `e` may have run on the server: not
/// when the connection was refused (nothing was sent) or the server
/// answered with a refusal it makes before running anything; otherwise
/// (a connection lost or timed out after sending, any other error reply,
/// which a function could raise after writing) it may have.
fn may_have_run(e: &redis::RedisError) -> bool {
    if e.is_connection_refusal() {
        return false;
    }
    !e.code()
        .is_some_and(|code| REFUSED_BEFORE_RUNNING.contains(&code))
}

fn bad_url(_: redis::RedisError) -> Error {
    Error::InvalidConfig {
        field: "target",
        rule: "must be redis:// or rediss:// URLs (and the root certificates PEM)",
        values: String::new(),
    }
}

/// What the client checks a `rediss://` server's certificate against.
#[cfg(feature = "redis-tls")]
fn certificates(pem: &[u8]) -> redis::TlsCertificates {
    redis::TlsCertificates {
        client_tls: None,
        root_cert: Some(pem.to_vec()),
    }
}

impl Conn {
    pub(super) async fn open(options: &RedisOptions) -> Result<Self> {
        let timeout = options.call_timeout;
        let connect = options.connect_timeout;
        let kind = match &options.target {
            RedisTarget::Standalone(url) => {
                let client = match &options.tls_root_certificates {
                    None => redis::Client::open(url.as_str()),
                    #[cfg(feature = "redis-tls")]
                    Some(pem) => redis::Client::build_with_tls(url.as_str(), certificates(pem)),
                    #[cfg(not(feature = "redis-tls"))]
                    Some(_) => unreachable!("validated: root certificates need redis-tls"),
                }
                .map_err(bad_url)?;
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(connect))
                    .set_response_timeout(Some(timeout))
                    .set_number_of_retries(1)
                    .set_max_delay(timeout);
                let manager =
                    bounded(connect, ConnectionManager::new_with_config(client, config)).await?;
                Kind::Server(manager)
            }
            RedisTarget::Cluster(seeds) => {
                let builder = ClusterClient::builder(seeds.iter().map(String::as_str));
                #[cfg(feature = "redis-tls")]
                let builder = match &options.tls_root_certificates {
                    Some(pem) => builder.certs(certificates(pem)),
                    None => builder,
                };
                let client = builder
                    .connection_timeout(connect)
                    .response_timeout(timeout)
                    // The client would send a request again after its
                    // connection dropped, and the server may have run it
                    // already: a call is sent once, and a lost answer is
                    // `BackendUnavailable` (ADR 0029). A MOVED or ASK
                    // redirect then fails the call too, and the client
                    // refreshes its slot map for the calls after it.
                    .retries(0)
                    .build()
                    .map_err(bad_url)?;
                Kind::Cluster(bounded(connect, client.get_async_connection()).await?)
            }
        };
        Ok(Conn { kind, timeout })
    }

    /// Whether this is a cluster (keys of different slots are then out of
    /// one call's reach).
    pub(super) fn is_cluster(&self) -> bool {
        matches!(self.kind, Kind::Cluster(_))
    }

    /// Calls `function` with one key (the tenant's incarnation key, which
    /// routes it to the tenant's slot) and `args`. A server that does not
    /// have the library (a new or restarted one, or a cluster node that
    /// joined) gets it, and the call is made once more.
    pub(super) async fn call<T: FromRedisValue>(
        &self,
        function: Function,
        key: &str,
        args: Vec<Vec<u8>>,
    ) -> Result<T> {
        self.call_keys(function, &[key], args).await
    }

    /// [`call`](Self::call) with several keys (the first routes the call;
    /// on a cluster every key must share its slot).
    pub(super) async fn call_keys<T: FromRedisValue>(
        &self,
        function: Function,
        keys: &[&str],
        args: Vec<Vec<u8>>,
    ) -> Result<T> {
        let mut cmd = redis::cmd("FCALL");
        cmd.arg(function.name()).arg(keys.len()).arg(keys).arg(args);
        match self.query(&cmd).await {
            Err(Missing) => {
                self.load_library().await?;
                self.query(&cmd).await.map_err(|e| e.into_error())
            }
            other => other.map_err(|e| e.into_error()),
        }
    }

    /// Publishes `message` on the Pub/Sub `channel` (a cluster delivers it
    /// to subscribers on every node).
    pub(super) async fn publish(&self, channel: &str, message: Vec<u8>) -> Result<()> {
        let mut cmd = redis::cmd("PUBLISH");
        cmd.arg(channel).arg(message);
        let _: i64 = self.query(&cmd).await.map_err(|e| e.into_error())?;
        Ok(())
    }

    /// Loads the library on every primary (replacing the same version).
    /// A Redis without Functions (before 7.0) is refused with
    /// [`Error::InvalidConfig`].
    pub(super) async fn load_library(&self) -> Result<()> {
        let mut cmd = redis::cmd("FUNCTION");
        cmd.arg("LOAD").arg("REPLACE").arg(&LIBRARY.code);
        match self.on_every_primary(cmd).await {
            Err(Error::BackendUnavailable { detail, .. }) if detail.contains("unknown command") => {
                Err(Error::InvalidConfig {
                    field: "target",
                    rule: "must be Redis 7 or later (the engine is a Redis Functions library)",
                    values: String::new(),
                })
            }
            other => other.map(drop),
        }
    }

    async fn query<T: FromRedisValue>(&self, cmd: &redis::Cmd) -> std::result::Result<T, Failed> {
        let call = async {
            match &self.kind {
                Kind::Server(c) => cmd.query_async(&mut c.clone()).await,
                Kind::Cluster(c) => cmd.query_async(&mut c.clone()).await,
            }
        };
        match tokio::time::timeout(self.timeout, call).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) if e.to_string().contains("Function not found") => Err(Missing),
            Ok(Err(e)) => Err(Failed::Redis(unavailable(&e))),
            Err(_) => Err(Failed::Redis(timed_out(self.timeout))),
        }
    }

    /// Whether every primary the engine needs answers, and takes writes:
    /// on a cluster each primary of the slot map (`CLUSTER SLOTS`), asked
    /// by its address, so a primary the client has no connection to
    /// counts as unreachable. The write probe is a function that writes
    /// nothing but is not flagged `allow-oom`, which a server at
    /// `maxmemory` refuses (`OOM`). With `replicas` above 0, each primary
    /// must also have that many replicas attached (`ROLE`), or the writes
    /// that wait for them fail closed.
    pub(super) async fn reach(&self, replicas: u32) -> Reach {
        let mut probe = redis::cmd("FCALL");
        probe.arg(super::scripts::WRITABLE.name()).arg(0);
        match self.on_each_primary(&probe).await {
            Ok(_) | Err(Failed::Missing) => {}
            Err(Failed::Redis(e)) if e.to_string().contains("OOM") => return Reach::Full,
            Err(Failed::Redis(_)) => return Reach::Unreachable,
        }
        if replicas == 0 {
            return Reach::Ready;
        }
        match self.on_each_primary(&redis::cmd("ROLE")).await {
            Ok(roles) if roles.iter().all(|r| attached(r) >= replicas as usize) => Reach::Ready,
            Ok(_) => Reach::TooFewReplicas,
            Err(_) => Reach::Unreachable,
        }
    }

    /// `WAIT replicas <half the call timeout>` on the connection that
    /// carries calls to `key`'s slot (its primary on a cluster): how many
    /// replicas acknowledged every write made on that connection so far.
    /// The server answers by then, before the client's own bound (the call
    /// timeout) could cut the connection's answer off.
    pub(super) async fn wait_replicas(&self, key: &str, replicas: u32) -> Result<u64> {
        let mut cmd = redis::cmd("WAIT");
        let millis = u64::try_from(self.timeout.as_millis() / 2)
            .unwrap_or(u64::MAX)
            .max(1);
        cmd.arg(replicas).arg(millis);
        let call = async {
            match &self.kind {
                Kind::Server(c) => cmd.query_async(&mut c.clone()).await,
                Kind::Cluster(c) => {
                    let route = Route::with_key(key, SlotAddr::Master);
                    let routing =
                        RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route));
                    let value = c.clone().route_command(cmd, routing).await?;
                    u64::from_redis_value_ref(&value).map_err(redis::RedisError::from)
                }
            }
        };
        bounded(self.timeout, call).await
    }

    /// Refuses a server (or any primary of a cluster's slot map, each
    /// asked by its address) that may evict keys; a primary that does not
    /// answer fails the check with `BackendUnavailable` naming it.
    pub(super) async fn check_noeviction(&self) -> Result<()> {
        let mut cmd = redis::cmd("CONFIG");
        cmd.arg("GET").arg("maxmemory-policy");
        let replies = self
            .on_each_primary(&cmd)
            .await
            .map_err(Failed::into_error)?;
        let mut policies = Vec::new();
        for reply in &replies {
            collect_policies(reply, &mut policies);
        }
        if policies.len() < replies.len() || policies.iter().any(|p| p != "noeviction") {
            return Err(Error::InvalidConfig {
                field: "maxmemory-policy",
                rule: "must be noeviction on every Redis primary (an evicting Redis could drop live state)",
                values: format!("maxmemory-policy = {}", policies.join(", ")),
            });
        }
        Ok(())
    }

    /// `cmd`'s reply from the server, or from each primary of a cluster's
    /// slot map in turn; the first failure, naming its primary.
    async fn on_each_primary(&self, cmd: &redis::Cmd) -> std::result::Result<Vec<Value>, Failed> {
        let cluster = match &self.kind {
            Kind::Server(_) => return Ok(vec![self.query(cmd).await?]),
            Kind::Cluster(c) => c,
        };
        let slots: Value = self
            .query(&redis::cmd("CLUSTER").arg("SLOTS").to_owned())
            .await?;
        let mut replies = Vec::new();
        for (host, port, slot) in primaries(&slots) {
            let routing = RoutingInfo::SingleNode(if host.is_empty() {
                // A node that knows no address of its own (a cluster of
                // one that never met another node) is the only node.
                SingleNodeRoutingInfo::SpecificNode(Route::new(slot, SlotAddr::Master))
            } else {
                SingleNodeRoutingInfo::ByAddress {
                    host: host.clone(),
                    port,
                }
            });
            let mut cluster = cluster.clone();
            let call = cluster.route_command(cmd.clone(), routing);
            match tokio::time::timeout(self.timeout, call).await {
                Ok(Ok(value)) => replies.push(value),
                Ok(Err(e)) if e.to_string().contains("Function not found") => return Err(Missing),
                Ok(Err(e)) => {
                    let failed = unavailable(&e);
                    return Err(Failed::Redis(Error::backend(
                        format!("primary {host}:{port}: {failed}"),
                        failed.may_have_run(),
                    )));
                }
                Err(_) => {
                    return Err(Failed::Redis(Error::backend(
                        format!("primary {host}:{port}: no answer within {:?}", self.timeout),
                        true,
                    )))
                }
            }
        }
        Ok(replies)
    }

    async fn on_every_primary(&self, cmd: redis::Cmd) -> Result<Value> {
        let call = async {
            match &self.kind {
                Kind::Server(c) => cmd.query_async(&mut c.clone()).await,
                Kind::Cluster(c) => {
                    c.clone()
                        .route_command(
                            cmd,
                            RoutingInfo::MultiNode((MultipleNodeRoutingInfo::AllMasters, None)),
                        )
                        .await
                }
            }
        };
        bounded(self.timeout, call).await
    }
}

/// What [`Conn::reach`] found.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Reach {
    /// Every primary answered and takes writes.
    Ready,
    /// A primary did not answer (or the client has no connection to it).
    Unreachable,
    /// A primary is at `maxmemory`: it refuses writes.
    Full,
    /// A primary has fewer replicas attached than the writes wait for.
    TooFewReplicas,
}

/// The replicas a primary's `ROLE` reply lists (`["master", offset,
/// [[host, port, offset], ...]]`); 0 for anything else.
fn attached(role: &Value) -> usize {
    match role {
        Value::Array(parts) => match parts.get(2) {
            Some(Value::Array(replicas)) => replicas.len(),
            _ => 0,
        },
        _ => 0,
    }
}

/// The distinct primaries (host, port, and the first slot it serves) of
/// a `CLUSTER SLOTS` reply: each range is `[start, end, [host, port, id,
/// ...], replicas...]`. The host is empty where the node knows no address
/// of its own.
fn primaries(slots: &Value) -> Vec<(String, u16, u16)> {
    let mut found: Vec<(String, u16, u16)> = Vec::new();
    let Value::Array(ranges) = slots else {
        return found;
    };
    for range in ranges {
        let Value::Array(parts) = range else { continue };
        let start = parts
            .first()
            .and_then(|s| u16::from_redis_value_ref(s).ok());
        let Some(Value::Array(node)) = parts.get(2) else {
            continue;
        };
        let host = node
            .first()
            .and_then(|h| String::from_redis_value_ref(h).ok());
        let port = node.get(1).and_then(|p| u16::from_redis_value_ref(p).ok());
        if let (Some(host), Some(port), Some(start)) = (host, port, start) {
            if !found.iter().any(|(h, p, _)| *h == host && *p == port) {
                found.push((host, port, start));
            }
        }
    }
    found
}

/// The values of `CONFIG GET maxmemory-policy` replies: from one server
/// (`[name, value]`, or a map in RESP3) or from every cluster primary (a
/// map of node address to that reply).
fn collect_policies(reply: &Value, into: &mut Vec<String>) {
    match reply {
        Value::Array(items) if items.len() == 2 && !matches!(items[1], Value::Array(_)) => {
            if let Ok(v) = String::from_redis_value_ref(&items[1]) {
                into.push(v);
            }
        }
        Value::Map(pairs) => {
            for (k, v) in pairs {
                match v {
                    Value::Array(_) | Value::Map(_) => collect_policies(v, into),
                    _ if String::from_redis_value_ref(k).is_ok_and(|k| k == "maxmemory-policy") => {
                        if let Ok(v) = String::from_redis_value_ref(v) {
                            into.push(v);
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// Why a function call failed: the server lacks the library, or anything
/// else (already the contract's error).
enum Failed {
    Missing,
    Redis(Error),
}
use Failed::Missing;

impl Failed {
    fn into_error(self) -> Error {
        match self {
            Missing => Error::backend("the function library could not be loaded", false),
            Failed::Redis(e) => e,
        }
    }
}

fn timed_out(limit: Duration) -> Error {
    // The request may have reached the server before the time ran out.
    Error::backend(format!("no answer within {limit:?}"), true)
}

/// `call` bounded by `limit`; a Redis error or the bound passing is
/// [`Error::BackendUnavailable`].
async fn bounded<T>(
    limit: Duration,
    call: impl Future<Output = redis::RedisResult<T>>,
) -> Result<T> {
    match tokio::time::timeout(limit, call).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(unavailable(&e)),
        Err(_) => Err(timed_out(limit)),
    }
}
