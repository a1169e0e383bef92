//! Store-wide ceilings on Redis (ADR 0031).
//!
//! A ceiling spans every tenant, so on a cluster every slot, and no one
//! function can count it next to a tenant's records. Its count lives in
//! the meta slot: per collection, a sorted set of reservations (token →
//! horizon). A creation takes a reservation after every narrower check
//! passed (per-parent cap, tenant quota), and the record keeps its token
//! (its `rv` field); the record's removal gives the reservation back
//! (`leave_index` in `lua/prelude.lua`, and burial after
//! `revoke_tenant`). A reservation also lapses by itself at its horizon,
//! which is never earlier than its record can live, so room that a dead
//! instance could not give back returns within a bounded time, and room is
//! never over-committed. A renewal past the horizon moves it out first.
//!
//! On a standalone server a function reaches the sets itself (one call,
//! as before). On a cluster the function answers `ROOM` with what it
//! needs and writes nothing; this module takes (or moves out) the room in
//! the meta slot, and the engine calls the function again with it. Room a
//! call did not use, and room its removals freed, comes back in the
//! call's answer and is given back here.

use super::codes;
use super::reply::Reply;
use super::{scripts, RedisEngine};
use crate::base::error::{Error, Result};
use crate::contract::config::StoreConfig;
use crate::contract::events::Collection;
use crate::contract::usage::Usage;

/// The collections with a store-wide ceiling on this engine, each counted
/// by its reservations (with horizons, ADR 0031).
const CEILINGS: [Collection; 7] = [
    Collection::Leases,
    Collection::Listings,
    Collection::Presence,
    Collection::Attempts,
    Collection::Replay,
    Collection::Idempotency,
    Collection::Locks,
];

/// The budgets (ADR 0033): what has no deadline (streams, queues,
/// schedules) holds one reservation without a horizon, weighing 1 and
/// the capacity it reserved against each of its budget's limits at once.
const BUDGETS: [Collection; 3] = [
    Collection::Streams,
    Collection::Queues,
    Collection::Schedules,
];

/// A counted collection's letter (`codes.rs`), as the library reads it.
fn letter(c: Collection) -> char {
    codes::letter(c).expect("every counted collection has a letter") as char
}

/// Reservations one scan step of [`RedisEngine::reclaim_budgets`] looks at.
const RECLAIM_SCAN: usize = 256;

/// How many sweeps apart the sweeper reclaims budget room on a cluster
/// (a minute at the default `sweep_interval`).
pub(super) const RECLAIM_EVERY: u64 = 600;

/// A budget's limits, as its reservations weigh them: the count first.
fn budget_limits(config: &StoreConfig, c: Collection) -> Vec<u64> {
    let count = config.ceiling(c);
    match c {
        Collection::Streams => vec![
            count,
            config.stream_bytes_total_max,
            config.stream_entries_total_max,
        ],
        Collection::Queues => vec![
            count,
            config.queue_jobs_total_max,
            config.queue_bytes_total_max,
        ],
        _ => vec![count],
    }
}

fn malformed(what: &str) -> Error {
    Error::backend(format!("malformed room reply: {what}"), true)
}

/// What a handle tells every per-tenant function about the ceilings.
pub(super) struct Ceilings {
    /// `""` when no ceiling is below 2^53 (nothing is counted), else
    /// `<letter><limit>` joined by `,` (`-1`: that one is off), the
    /// budgets last as `<letter><count>/<limit>/...`. Replaced whole by a
    /// reconfiguration.
    limits: arc_swap::ArcSwap<String>,
    /// The reservations' key, `{<ns>}:room`.
    key: String,
    /// Whether functions reach it themselves (a standalone server).
    inline: bool,
}

impl Ceilings {
    pub(super) fn new(config: &StoreConfig, namespace: &str, cluster: bool) -> Self {
        Ceilings {
            limits: arc_swap::ArcSwap::from_pointee(Self::text_of(config)),
            key: format!("{{{namespace}}}:room"),
            inline: !cluster,
        }
    }

    /// Passes `config`'s ceilings from now on.
    pub(super) fn relimit(&self, config: &StoreConfig) {
        self.limits
            .store(std::sync::Arc::new(Self::text_of(config)));
    }

    /// `config`'s ceilings as the functions take them.
    fn text_of(config: &StoreConfig) -> String {
        // A ceiling a Lua number cannot hold exactly is no ceiling.
        let text = |limit: u64| {
            if limit >= 1 << 53 {
                "-1".to_owned()
            } else {
                limit.to_string()
            }
        };
        let budgets: Vec<(char, Vec<u64>)> = BUDGETS
            .iter()
            .map(|&c| (letter(c), budget_limits(config, c)))
            .collect();
        let on = CEILINGS
            .iter()
            .map(|&c| config.ceiling(c))
            .chain(budgets.iter().flat_map(|(_, l)| l.iter().copied()))
            .any(|limit| limit < 1 << 53);
        if on {
            CEILINGS
                .iter()
                .map(|&c| format!("{}{}", letter(c), text(config.ceiling(c))))
                .chain(budgets.iter().map(|(letter, l)| {
                    let parts: Vec<String> = l.iter().map(|&x| text(x)).collect();
                    format!("{letter}{}", parts.join("/"))
                }))
                .collect::<Vec<_>>()
                .join(",")
        } else {
            String::new()
        }
    }

    /// The ceilings as a function's argument.
    pub(super) fn limits(&self) -> std::sync::Arc<String> {
        self.limits.load_full()
    }

    /// The keys of a per-tenant call: the tenant's key, then the room key
    /// where the function can reach it and may write.
    pub(super) fn keys<'a>(&'a self, tenant_key: &'a str, writes: bool) -> Vec<&'a str> {
        if self.inline && writes {
            vec![tenant_key, &self.key]
        } else {
            vec![tenant_key]
        }
    }

    /// The limit on the collection of `letter`, as the functions write it.
    fn limit(&self, letter: char) -> Result<String> {
        self.limits
            .load()
            .split(',')
            .find_map(|entry| entry.strip_prefix(letter))
            .map(str::to_owned)
            .ok_or_else(|| malformed(&format!("room for an unknown collection {letter}")))
    }
}

impl RedisEngine {
    /// Takes the room a function answered `ROOM` for (`needs`: entries
    /// `<letter><span ms>` for new reservations, `+<span ms> <token>...`
    /// to move reservations out), in the meta slot. Returns the grants to
    /// call the function with again; a full ceiling is its refusal
    /// ([`Error::CapacityExceeded`] with a collection scope), and then
    /// nothing was taken.
    pub(super) async fn make_room(&self, needs: &[String]) -> Result<String> {
        let ceilings = &self.inner.ceilings;
        let mut take = vec![b"take".to_vec()];
        let mut grants = Vec::new();
        for need in needs {
            if let Some(moved) = need.strip_prefix('+') {
                let mut args = vec![b"extend".to_vec()];
                args.extend(
                    moved
                        .split(' ')
                        .filter(|s| !s.is_empty())
                        .map(|s| s.as_bytes().to_vec()),
                );
                let reply = self.room(args).await?;
                grants.push(format!("+@{}", reply.uint(1)?));
            } else {
                let mut chars = need.chars();
                let letter = chars.next().ok_or_else(|| malformed("an empty need"))?;
                take.push(letter.to_string().into_bytes());
                take.push(ceilings.limit(letter)?.into_bytes());
                take.push(chars.as_str().as_bytes().to_vec());
            }
        }
        if take.len() > 1 {
            let reply = self.room(take).await?;
            let mut at = 1;
            while at + 1 < reply.len() {
                grants.push(format!("{}@{}", reply.text(at)?, reply.uint(at + 1)?));
                at += 2;
            }
        }
        if grants.is_empty() {
            return Err(malformed("a call asked for room without saying for what"));
        }
        Ok(grants.join(","))
    }

    /// The use of the store-wide ceiling on `c`, counted in Redis over
    /// every handle of the namespace (a reservation counts until given
    /// back or until its horizon passes, ADR 0031; streams, queues and
    /// schedules count until given back, ADR 0033); `None` for a
    /// collection this engine has no ceiling on (tombstones). The limit is this handle's. For dashboards and
    /// capacity checks: exact at one instant, moving with every creation.
    pub async fn ceiling_usage(&self, c: Collection) -> Result<Option<Usage>> {
        if !CEILINGS.contains(&c) && !BUDGETS.contains(&c) {
            return Ok(None);
        }
        let args = vec![b"count".to_vec(), letter(c).to_string().into_bytes()];
        let reply = self.room(args).await?;
        Ok(Some(Usage {
            used: reply.uint(1)?,
            limit: self.config().ceiling(c),
        }))
    }

    /// Gives back budget room (streams, queues, schedules) that no record
    /// holds: reservations taken at least a minute ago (by the meta
    /// slot's clock) whose record does not carry their token. On a
    /// cluster, room is taken by one call and the record written by the
    /// next, so a handle that dies in between leaves such room; a grant
    /// is good for ten seconds only (ADR 0033), so a reservation this old
    /// that no record holds never will be. Returns how many were given
    /// back. The sweeper holder runs it on a cluster every 600 sweeps (a
    /// minute at the default `sweep_interval`); it is safe at any time,
    /// on any handle.
    pub async fn reclaim_budgets(&self) -> Result<usize> {
        let mut reclaimed = 0;
        for c in BUDGETS {
            let letter = letter(c);
            let mut cursor = String::from("0");
            loop {
                let args = args![
                    "stale",
                    letter.to_string(),
                    cursor.clone(),
                    RECLAIM_SCAN.to_string()
                ];
                let reply = self.room(args).await?;
                cursor = reply.text(1)?.to_string();
                let mut at = 2;
                while at + 1 < reply.len() {
                    let (token, key) = (reply.text(at)?, reply.text(at + 1)?);
                    let held: i64 = self
                        .inner
                        .conn
                        .call(scripts::HOLDS, &key, args![token.as_bytes()])
                        .await?;
                    if held == 0 {
                        self.room(args!["give", token.as_bytes()]).await?;
                        tracing::info!(%token, %key, "relaystore redis: budget room no record held was given back");
                        reclaimed += 1;
                    }
                    at += 2;
                }
                if cursor == "0" {
                    break;
                }
            }
        }
        Ok(reclaimed)
    }

    /// One call of the meta slot's `room` function (`lua/room.lua`): its
    /// reply, or the error its refusal stands for.
    async fn room(&self, args: Vec<Vec<u8>>) -> Result<Reply> {
        let key = &self.inner.ceilings.key;
        let reply = Reply::new(self.inner.conn.call(scripts::ROOM, key, args).await?)?;
        reply.refusal()?;
        Ok(reply)
    }

    /// Gives back room a call freed or did not use. A failure is logged,
    /// not returned: the call itself succeeded, and the reservations
    /// lapse at their horizons.
    pub(super) async fn give_back(&self, tokens: &[Vec<u8>]) {
        if tokens.is_empty() {
            return;
        }
        let mut args = vec![b"give".to_vec()];
        args.extend(tokens.iter().cloned());
        if let Err(e) = self.room(args).await {
            tracing::warn!(error = %e, "relaystore redis: room was not given back (it lapses at its horizon)");
        }
    }
}
