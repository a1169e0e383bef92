//! A tenant's usage on Redis: what it holds against its quotas, counted on
//! the server as its creations count it.

use super::{codes, scripts, Issued, Mode, RedisEngine};
use crate::base::collection::{Collection, Kind, KINDS_MAX};
use crate::base::error::Result;
use crate::base::ids::TenantId;
use crate::contract::config::TenantQuota;
use crate::contract::usage::{TenantUsage, Usage};

/// The collections the library counts, in the order of its reply: every
/// one but tombstones, which no tenant quota bounds, and the declared
/// kinds' records, counted per kind after them.
fn counted() -> impl Iterator<Item = Collection> {
    Collection::ALL
        .into_iter()
        .filter(|&c| !matches!(c, Collection::Tombstones | Collection::Records))
}

impl RedisEngine {
    /// What `tenant` holds against this handle's limits: its quotas (the
    /// configuration's `tenant`) and its caps on streams, queues and
    /// schedules, each figure counted on the server in one call (live
    /// records, as a creation counts them at its quota). `None` where the
    /// in-memory store has none: a quota switched off
    /// ([`TenantQuota::OFF`]), and tombstones. A tenant with nothing
    /// stored uses nothing. `BackendUnavailable` if Redis does not answer.
    pub async fn usage(&self, tenant: TenantId) -> Result<TenantUsage> {
        let config = self.config();
        let declared: Vec<Kind> = (0..config.kinds.len()).filter_map(Kind::at).collect();
        let args = scripts::UsageArgs {
            kinds: declared
                .iter()
                .map(|&k| char::from(codes::kind_letter(k)).to_string().into())
                .collect(),
        }
        .encode();
        let reply = self
            .run(
                scripts::USAGE,
                tenant,
                Mode::Existing,
                Issued::Nothing,
                args,
            )
            .await?;
        let mut used = [0u64; Collection::ALL.len()];
        let mut by_kind = [0u64; KINDS_MAX];
        if let Some(reply) = reply {
            reply.refusal()?;
            let mut at = 1;
            for c in counted() {
                used[c as usize] = reply.uint(at)?;
                at += 1;
            }
            for kind in &declared {
                by_kind[kind.index()] = reply.uint(at)?;
                at += 1;
            }
            super::reply::exactly(&reply, at)?;
        }
        let quota = self.quota(tenant);
        let per = Collection::ALL.map(|c| {
            let limit = match c {
                Collection::Tombstones => return None,
                Collection::Streams => config.streams_per_tenant_max,
                Collection::Queues => config.queues_per_tenant_max,
                Collection::Schedules => config.schedules_per_tenant_max,
                _ => quota.limit(c),
            };
            (limit != TenantQuota::OFF).then_some(Usage {
                used: used[c as usize],
                limit,
            })
        });
        let kinds = std::array::from_fn(|i| {
            Some(Usage {
                used: by_kind[i],
                limit: config.kinds.get(i)?.per_tenant_max,
            })
        });
        Ok(TenantUsage { per, kinds })
    }
}
