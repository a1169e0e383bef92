//! The connection to Redis: one multiplexed, reconnecting connection to a
//! server, or the client's cluster connection (slot routing, redirects).
//! Every call is bounded by the call timeout and fails closed.

use super::{RedisOptions, RedisTarget};
use crate::error::{Error, Result};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{MultipleNodeRoutingInfo, RoutingInfo};
use redis::{FromRedisValue, Script, Value};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

pub(super) struct Conn {
    kind: Kind,
    timeout: Duration,
}

enum Kind {
    Server(ConnectionManager),
    Cluster(ClusterConnection),
}

/// A Redis failure as the contract's fail-closed error.
pub(super) fn unavailable(e: &redis::RedisError) -> Error {
    Error::BackendUnavailable {
        detail: Arc::from(e.to_string()),
    }
}

fn bad_url(_: redis::RedisError) -> Error {
    Error::InvalidConfig {
        field: "target",
        rule: "must be redis:// URLs",
    }
}

impl Conn {
    pub(super) async fn open(options: &RedisOptions) -> Result<Self> {
        let timeout = options.call_timeout;
        let connect = options.connect_timeout;
        let kind = match &options.target {
            RedisTarget::Standalone(url) => {
                let client = redis::Client::open(url.as_str()).map_err(bad_url)?;
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
                let client = ClusterClient::builder(seeds.iter().map(String::as_str))
                    .connection_timeout(connect)
                    .response_timeout(timeout)
                    .retries(1)
                    .build()
                    .map_err(bad_url)?;
                Kind::Cluster(bounded(connect, client.get_async_connection()).await?)
            }
        };
        Ok(Conn { kind, timeout })
    }

    /// Runs `script` with one key (the tenant's incarnation key, which
    /// routes it to the tenant's slot) and `args`.
    pub(super) async fn eval<T: FromRedisValue>(
        &self,
        script: &Script,
        key: &str,
        args: Vec<Vec<u8>>,
    ) -> Result<T> {
        let mut invocation = script.prepare_invoke();
        invocation.key(key);
        for arg in args {
            invocation.arg(arg);
        }
        let call = async {
            match &self.kind {
                Kind::Server(c) => invocation.invoke_async(&mut c.clone()).await,
                Kind::Cluster(c) => invocation.invoke_async(&mut c.clone()).await,
            }
        };
        bounded(self.timeout, call).await
    }

    /// One round trip to every primary.
    pub(super) async fn ping(&self) -> Result<()> {
        let _: Value = self.on_every_primary(redis::cmd("PING")).await?;
        Ok(())
    }

    /// Refuses a server (or any cluster primary) that may evict keys.
    pub(super) async fn check_noeviction(&self, _timeout: Duration) -> Result<()> {
        let mut cmd = redis::cmd("CONFIG");
        cmd.arg("GET").arg("maxmemory-policy");
        let reply = self.on_every_primary(cmd).await?;
        let mut policies = Vec::new();
        collect_policies(&reply, &mut policies);
        if policies.is_empty() || policies.iter().any(|p| p != "noeviction") {
            return Err(Error::InvalidConfig {
                field: "maxmemory-policy",
                rule: "must be noeviction on every Redis primary (an evicting Redis could drop live state)",
            });
        }
        Ok(())
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

/// `call` bounded by `limit`; a Redis error or the bound passing is
/// [`Error::BackendUnavailable`].
async fn bounded<T>(
    limit: Duration,
    call: impl Future<Output = redis::RedisResult<T>>,
) -> Result<T> {
    match tokio::time::timeout(limit, call).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(unavailable(&e)),
        Err(_) => Err(Error::BackendUnavailable {
            detail: Arc::from(format!("no answer within {limit:?}")),
        }),
    }
}
