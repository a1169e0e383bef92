//! Store-wide ceilings on Redis (ADR 0031, ADR 0070).
//!
//! A ceiling spans every tenant, so on a cluster every slot, and no one
//! function can count it next to a tenant's records. Its count lives in
//! sorted sets of reservations (token → horizon), per collection. A
//! creation takes a reservation after every narrower check passed
//! (per-parent cap, tenant quota), and the record keeps its token (its
//! `rv` field); the record's removal gives the reservation back
//! (`leave_index` in `lua/shared/40_events.lua`, and burial after
//! `revoke_tenant`). A reservation also lapses by itself at its horizon,
//! which is never earlier than its record can live, so room that a dead
//! instance could not give back returns within a bounded time, and room is
//! never over-committed. A renewal past the horizon moves it out first.
//!
//! On a standalone server there is one set per collection, and a function
//! reaches it itself (one call). On a cluster each counted collection's
//! ceiling is split into [`ROOM_SHARES`] shares, each a set in a slot of
//! its own admitting only under its part (ADR 0070); the budgets
//! (streams, queues, schedules) stay in the meta slot. The function
//! answers `ROOM` with what it needs and writes nothing; this module takes
//! (or moves out) the room, from the tenant's share or the next one with
//! room, and the engine calls the function again with it. Room a call did
//! not use, and room its removals freed, comes back in the call's answer
//! and is given back here, each token to its share.

use super::codes;
use super::reply::Reply;
use super::{scripts, RedisEngine};
use crate::base::error::{Error, Result, Scope};
use crate::base::ids::TenantId;
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
    codes::letter(c) as char
}

/// What `config` counts by reservations with horizons, by letter: the
/// counted collections, then each declared kind (whose records count
/// under its own ceiling), with the scope a refusal names and the limit.
fn counted(config: &StoreConfig) -> Vec<(char, Scope, u64)> {
    CEILINGS
        .iter()
        .map(|&c| (letter(c), Scope::Collection(c), config.ceiling(c)))
        .chain(config.kinds.iter().enumerate().filter_map(|(i, k)| {
            let kind = crate::base::collection::Kind::at(i)?;
            Some((
                char::from(codes::kind_letter(kind)),
                Scope::KindCeiling(kind),
                k.max,
            ))
        }))
        .collect()
}

/// `room_take`'s arguments: (letter, limit, span or weights) triples.
fn take(wanted: Vec<String>) -> Vec<Vec<u8>> {
    scripts::RoomTakeArgs {
        wanted: wanted.into_iter().map(scripts::Arg::from).collect(),
    }
    .encode()
}

/// `room_give`'s arguments.
fn give(tokens: Vec<scripts::Arg>) -> Vec<Vec<u8>> {
    scripts::RoomGiveArgs { tokens }.encode()
}

/// `room_count`'s arguments.
fn count(letter: char) -> Vec<Vec<u8>> {
    scripts::RoomCountArgs {
        letter: letter.to_string().into(),
    }
    .encode()
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

/// How many shares each store-wide ceiling on a counted collection is
/// split into on a cluster (ADR 0070): each share a reservation set in a
/// slot of its own, holding `limit / ROOM_SHARES` of the ceiling (the
/// first `limit % ROOM_SHARES` shares one more). A standalone server keeps
/// one set. Every handle of a namespace uses the same split.
pub const ROOM_SHARES: usize = 16;

/// How long a share that did not answer is asked last, in milliseconds.
const SHARE_DOWN_MS: u64 = 1_000;

/// What a handle tells every per-tenant function about the ceilings.
pub(super) struct Ceilings {
    /// `""` when no ceiling is below 2^53 (nothing is counted), else
    /// `<letter><limit>` joined by `,` (`-1`: that one is off), the
    /// budgets last as `<letter><count>/<limit>/...`. Replaced whole by a
    /// reconfiguration.
    limits: arc_swap::ArcSwap<String>,
    /// The reservations' keys, one per share: `{<ns>}:room` (the meta
    /// slot, which also keeps the budgets), then `{<ns>:r<i>}:room`.
    keys: Vec<String>,
    /// Whether functions reach the one share themselves (a standalone
    /// server).
    inline: bool,
    /// Per share, until when (milliseconds after `since`) it is asked
    /// last: it failed to answer.
    down: Vec<std::sync::atomic::AtomicU64>,
    since: std::time::Instant,
    /// What is counted, by letter, and the scope its refusals name
    /// (`counted`; the kinds are fixed for a handle's life).
    counted: Vec<(char, Scope)>,
    /// Per entry of `counted`, whether its next creation first counts
    /// every share: set at connect and whenever the ceilings change,
    /// cleared once no share holds more than its part.
    checking: Vec<std::sync::atomic::AtomicBool>,
}

impl Ceilings {
    pub(super) fn new(config: &StoreConfig, namespace: &str, cluster: bool) -> Self {
        let shares = if cluster { ROOM_SHARES } else { 1 };
        let keys = (0..shares)
            .map(|i| match i {
                0 => format!("{{{namespace}}}:room"),
                i => format!("{{{namespace}:r{i}}}:room"),
            })
            .collect();
        Ceilings {
            limits: arc_swap::ArcSwap::from_pointee(Self::text_of(config)),
            keys,
            inline: !cluster,
            down: (0..shares).map(|_| Default::default()).collect(),
            since: std::time::Instant::now(),
            counted: counted(config)
                .into_iter()
                .map(|(letter, scope, _)| (letter, scope))
                .collect(),
            checking: counted(config)
                .iter()
                .map(|_| std::sync::atomic::AtomicBool::new(cluster))
                .collect(),
        }
    }

    /// Passes `config`'s ceilings from now on.
    pub(super) fn relimit(&self, config: &StoreConfig) {
        self.limits
            .store(std::sync::Arc::new(Self::text_of(config)));
        if !self.inline {
            for check in &self.checking {
                check.store(true, std::sync::atomic::Ordering::Release);
            }
        }
    }

    /// The flag of the counted collection of `letter`.
    fn check_of(&self, letter: char) -> Option<&std::sync::atomic::AtomicBool> {
        let at = self.counted.iter().position(|&(l, _)| l == letter)?;
        Some(&self.checking[at])
    }

    /// Whether creations of `letter` count every share first.
    fn checks(&self, letter: char) -> bool {
        self.check_of(letter)
            .is_some_and(|c| c.load(std::sync::atomic::Ordering::Acquire))
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
        let counted = counted(config);
        let on = counted
            .iter()
            .map(|&(_, _, limit)| limit)
            .chain(budgets.iter().flat_map(|(_, l)| l.iter().copied()))
            .any(|limit| limit < 1 << 53);
        if on {
            counted
                .iter()
                .map(|&(letter, _, limit)| format!("{letter}{}", text(limit)))
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
            vec![tenant_key, &self.keys[0]]
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

    /// How many shares a counted collection's ceiling is split into.
    fn shares(&self) -> usize {
        self.keys.len()
    }

    /// The ceiling on the collection of `letter`, `None` when it is off.
    fn ceiling(&self, letter: char) -> Result<Option<u64>> {
        let text = self.limit(letter)?;
        if text == "-1" {
            return Ok(None);
        }
        text.parse()
            .map(Some)
            .map_err(|_| malformed(&format!("the limit {text} of {letter}")))
    }

    /// Share `share`'s part of `ceiling` (`None`: no ceiling).
    fn share_of(&self, ceiling: Option<u64>, share: usize) -> Option<u64> {
        let n = self.shares() as u64;
        ceiling.map(|c| c / n + u64::from((share as u64) < c % n))
    }

    /// The shares in the order a creation of `tenant` asks them: its own
    /// share first, then the next ones round, shares that did not answer
    /// lately last.
    fn order(&self, tenant: TenantId) -> Vec<usize> {
        let n = self.shares();
        // The tenant's share: its id mixed, so neighbouring ids spread.
        let home = (tenant.0.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize % n;
        let (mut up, down): (Vec<usize>, Vec<usize>) = (0..n)
            .map(|i| (home + i) % n)
            .partition(|&s| !self.is_down(s));
        up.extend(down);
        up
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.since.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn is_down(&self, share: usize) -> bool {
        self.down[share].load(std::sync::atomic::Ordering::Relaxed) > self.now_ms()
    }

    fn mark_down(&self, share: usize) {
        let until = self.now_ms() + SHARE_DOWN_MS;
        self.down[share].store(until, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A reservation's token as its record keeps it: the share's own token,
/// with `/<share>` after it for every share but the first.
fn routed(token: &str, share: usize) -> String {
    if share == 0 {
        token.to_owned()
    } else {
        format!("{token}/{share}")
    }
}

/// A record's token split into its share and the share's own token.
fn split_token(token: &str) -> Result<(usize, &str)> {
    match token.rsplit_once('/') {
        None => Ok((0, token)),
        Some((own, share)) => share
            .parse::<usize>()
            .ok()
            .filter(|&s| s > 0 && s < ROOM_SHARES)
            .map(|s| (s, own))
            .ok_or_else(|| malformed(&format!("a token of an unknown share: {token}"))),
    }
}

/// Whether `e` says a share could not be asked (rather than answering).
fn unreachable(e: &Error) -> bool {
    matches!(e, Error::BackendUnavailable { .. })
}

impl RedisEngine {
    /// Takes the room a function of `tenant` answered `ROOM` for
    /// (`needs`: entries `<letter><span ms>` for new reservations,
    /// `+<span ms> <token>...` to move reservations out). Returns the
    /// grants to call the function with again; a full ceiling is its
    /// refusal ([`Error::CapacityExceeded`] with a collection scope), and
    /// then nothing was taken. A reservation is taken from the tenant's
    /// share, or, when that is full or does not answer, from the next
    /// share that has room (ADR 0070).
    pub(super) async fn make_room(&self, tenant: TenantId, needs: &[String]) -> Result<String> {
        let mut takes = Vec::new();
        let mut moves = Vec::new();
        for need in needs {
            if let Some(moved) = need.strip_prefix('+') {
                let mut parts = moved.split(' ').filter(|s| !s.is_empty());
                let span = parts
                    .next()
                    .ok_or_else(|| malformed("an extension without a span"))?;
                moves.push((span, parts.collect::<Vec<_>>()));
            } else {
                let mut chars = need.chars();
                let letter = chars.next().ok_or_else(|| malformed("an empty need"))?;
                takes.push((letter, chars.as_str()));
            }
        }
        // Every reservation taken so far, given back if a later need fails.
        let mut taken = Vec::new();
        let made = async {
            let mut grants = Vec::new();
            for (span, tokens) in moves {
                grants.extend(self.extend_room(tenant, span, &tokens, &mut taken).await?);
            }
            if !takes.is_empty() {
                grants.extend(self.take_room(tenant, &takes, &mut taken).await?);
            }
            if grants.is_empty() {
                return Err(malformed("a call asked for room without saying for what"));
            }
            Ok(grants.join(","))
        }
        .await;
        if made.is_err() {
            self.give_back(&taken).await;
        }
        made
    }

    /// New reservations, one per `takes` entry (a letter, and a span in
    /// ms or a budget's weights and record): grants `<token>@<horizon>` in
    /// order. A budget's is taken in the first share (budgets are not
    /// split); the counted collections' all in the tenant's share in one
    /// call if it has room for all of them, else each on its own walk.
    async fn take_room(
        &self,
        tenant: TenantId,
        takes: &[(char, &str)],
        taken: &mut Vec<Vec<u8>>,
    ) -> Result<Vec<String>> {
        let ceilings = &self.inner.ceilings;
        let budget = |letter: char| BUDGETS.iter().any(|&c| self::letter(c) == letter);
        let mut grants: Vec<Option<String>> = vec![None; takes.len()];
        let fill = |share: usize,
                    which: &[usize],
                    reply: &Reply,
                    grants: &mut Vec<Option<String>>,
                    taken: &mut Vec<Vec<u8>>|
         -> Result<()> {
            let granted = scripts::RoomTakeReply::decode(reply)?.each;
            if granted.len() != which.len() {
                return Err(malformed("a grant short"));
            }
            for (grant, &i) in granted.iter().zip(which) {
                let token = routed(&grant.token, share);
                taken.push(token.clone().into_bytes());
                grants[i] = Some(format!("{token}@{}", grant.horizon));
            }
            Ok(())
        };
        let (budgets, counted): (Vec<usize>, Vec<usize>) =
            (0..takes.len()).partition(|&i| budget(takes[i].0));
        if !budgets.is_empty() {
            let mut wanted = Vec::new();
            for &i in &budgets {
                let (letter, asked) = takes[i];
                wanted.extend([
                    letter.to_string(),
                    ceilings.limit(letter)?,
                    asked.to_owned(),
                ]);
            }
            let reply = self.room_at(0, scripts::ROOM_TAKE, take(wanted)).await?;
            fill(0, &budgets, &reply, &mut grants, taken)?;
        }
        if !counted.is_empty() {
            let home = ceilings.order(tenant)[0];
            let mut wanted = Vec::new();
            let mut fits = !ceilings.is_down(home);
            for &i in &counted {
                let (letter, span) = takes[i];
                fits &= !ceilings.checks(letter);
                let part = ceilings.share_of(ceilings.ceiling(letter)?, home);
                fits &= part != Some(0);
                let part = part.map_or_else(|| "-1".to_owned(), |p| p.to_string());
                wanted.extend([letter.to_string(), part, span.to_owned()]);
            }
            let first = if fits {
                match self.room_at(home, scripts::ROOM_TAKE, take(wanted)).await {
                    Ok(reply) => Some(reply),
                    Err(e) if unreachable(&e) => {
                        ceilings.mark_down(home);
                        None
                    }
                    Err(Error::CapacityExceeded { .. }) => None,
                    Err(e) => return Err(e),
                }
            } else {
                None
            };
            match first {
                Some(reply) => fill(home, &counted, &reply, &mut grants, taken)?,
                None => {
                    for &i in &counted {
                        let (letter, span) = takes[i];
                        let (token, horizon) = self.take_one(tenant, letter, span).await?;
                        taken.push(token.clone().into_bytes());
                        grants[i] = Some(format!("{token}@{horizon}"));
                    }
                }
            }
        }
        grants
            .into_iter()
            .map(|g| g.ok_or_else(|| malformed("a take without its grant")))
            .collect()
    }

    /// One reservation of the collection of `letter` for `span` ms, from
    /// the first share in `tenant`'s order that has room: its token (as
    /// the record keeps it) and horizon. When every share is full, the
    /// refusal counts what the shares answered, and a share that did not
    /// answer as full; when none answered, the last failure.
    async fn take_one(&self, tenant: TenantId, letter: char, span: &str) -> Result<(String, u64)> {
        let ceilings = &self.inner.ceilings;
        let ceiling = ceilings.ceiling(letter)?;
        if ceilings.checks(letter) {
            self.check_shares(letter, ceiling).await?;
        }
        let mut used = 0;
        let mut refused = None;
        let mut failed = None;
        for share in ceilings.order(tenant) {
            let part = ceilings.share_of(ceiling, share);
            if part == Some(0) {
                continue;
            }
            let text = part.map_or_else(|| "-1".to_owned(), |p| p.to_string());
            let args = take(vec![letter.to_string(), text, span.to_owned()]);
            match self.room_at(share, scripts::ROOM_TAKE, args).await {
                Ok(reply) => {
                    let granted = scripts::RoomTakeReply::decode(&reply)?.each;
                    let grant = granted.first().ok_or_else(|| malformed("no grant"))?;
                    return Ok((routed(&grant.token, share), grant.horizon));
                }
                Err(Error::CapacityExceeded { scope, used: u, .. }) => {
                    used += u;
                    refused = Some(scope);
                }
                Err(e) if unreachable(&e) => {
                    ceilings.mark_down(share);
                    used += part.unwrap_or(0);
                    failed = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
        match (refused, failed, ceiling) {
            (Some(scope), _, Some(limit)) => Err(Error::CapacityExceeded { scope, limit, used }),
            (_, Some(e), _) => Err(e),
            _ => Err(malformed(&format!("no share took room for {letter}"))),
        }
    }

    /// Counts every share's reservations of `letter`. When no share holds
    /// more than its part, creations go back to asking shares alone (a
    /// share admits only under its part, so the shares never hold more
    /// than the ceiling). Otherwise (the ceiling was lowered below what a
    /// share holds, or a share did not answer and is counted at its part)
    /// a creation is refused while the shares hold the ceiling or more.
    async fn check_shares(&self, letter: char, ceiling: Option<u64>) -> Result<()> {
        let ceilings = &self.inner.ceilings;
        let (Some(limit), Some(check)) = (ceiling, ceilings.check_of(letter)) else {
            return Ok(());
        };
        let (mut total, mut over) = (0, false);
        for (share, counted) in self.count_shares(letter).await?.into_iter().enumerate() {
            let part = ceilings.share_of(ceiling, share).unwrap_or(0);
            over |= counted.is_none_or(|used| used > part);
            total += counted.unwrap_or(part);
        }
        if !over {
            check.store(false, std::sync::atomic::Ordering::Release);
            return Ok(());
        }
        let scope = ceilings
            .counted
            .iter()
            .find(|&&(l, _)| l == letter)
            .map(|&(_, scope)| scope);
        match scope {
            Some(scope) if total >= limit => Err(Error::CapacityExceeded {
                scope,
                limit,
                used: total,
            }),
            _ => Ok(()),
        }
    }

    /// Every share's count of `letter`'s reservations (whose horizon is
    /// ahead), asked at once; `None` for a share that did not answer (it
    /// is asked last for a second).
    async fn count_shares(&self, letter: char) -> Result<Vec<Option<u64>>> {
        let ceilings = &self.inner.ceilings;
        let counts = (0..ceilings.shares()).map(|share| async move {
            if ceilings.is_down(share) {
                return Ok(None);
            }
            match self
                .room_at(share, scripts::ROOM_COUNT, count(letter))
                .await
            {
                Ok(reply) => Ok(Some(scripts::RoomCountReply::decode(&reply)?.count)),
                Err(e) if unreachable(&e) => {
                    ceilings.mark_down(share);
                    Ok(None)
                }
                Err(e) => Err(e),
            }
        });
        futures_util::future::join_all(counts)
            .await
            .into_iter()
            .collect()
    }

    /// Moves the reservations `tokens` out to `span` ms from now, each in
    /// its share. A share that does not answer has its reservations
    /// replaced by new ones elsewhere (grants `><old> <new>@<horizon>`,
    /// the record keeps the new token). Returns the grants, the earliest
    /// horizon first as `+@<horizon>`.
    async fn extend_room(
        &self,
        tenant: TenantId,
        span: &str,
        tokens: &[&str],
        taken: &mut Vec<Vec<u8>>,
    ) -> Result<Vec<String>> {
        let ceilings = &self.inner.ceilings;
        let mut by_share: Vec<Vec<&str>> = vec![Vec::new(); ceilings.shares()];
        for token in tokens {
            let (share, _) = split_token(token)?;
            by_share[share].push(token);
        }
        let mut horizon = u64::MAX;
        let mut swaps = Vec::new();
        for (share, tokens) in by_share.iter().enumerate() {
            if tokens.is_empty() {
                continue;
            }
            let mut own = Vec::new();
            for token in tokens {
                own.push(split_token(token)?.1.into());
            }
            let args = scripts::RoomExtendArgs {
                span: span.into(),
                tokens: own,
            }
            .encode();
            match self.room_at(share, scripts::ROOM_EXTEND, args).await {
                Ok(reply) => {
                    horizon = horizon.min(scripts::RoomExtendReply::decode(&reply)?.horizon)
                }
                Err(e) if unreachable(&e) => {
                    ceilings.mark_down(share);
                    for old in tokens {
                        let letter = old
                            .chars()
                            .next()
                            .ok_or_else(|| malformed("an empty token"))?;
                        let (new, at) = self.take_one(tenant, letter, span).await?;
                        taken.push(new.clone().into_bytes());
                        horizon = horizon.min(at);
                        swaps.push(format!(">{old} {new}@{at}"));
                    }
                }
                Err(e) => return Err(e),
            }
        }
        let mut grants = vec![format!("+@{horizon}")];
        grants.extend(swaps);
        Ok(grants)
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
        let used = if BUDGETS.contains(&c) {
            let reply = self.room(scripts::ROOM_COUNT, count(letter(c))).await?;
            scripts::RoomCountReply::decode(&reply)?.count
        } else {
            let mut used = 0;
            for counted in self.count_shares(letter(c)).await? {
                used += counted.ok_or_else(|| {
                    Error::backend("a share of the ceiling did not answer", false)
                })?;
            }
            used
        };
        Ok(Some(Usage {
            used,
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
                let args = scripts::RoomStaleArgs {
                    letter: letter.to_string().into(),
                    cursor: cursor.as_str().into(),
                    count: RECLAIM_SCAN.into(),
                }
                .encode();
                let reply = self.room(scripts::ROOM_STALE, args).await?;
                let stale = scripts::RoomStaleReply::decode(&reply)?;
                cursor = stale.cursor.to_string();
                for found in stale.each {
                    let (token, key) = (found.token, found.key);
                    let held: i64 = self
                        .inner
                        .conn
                        .call(
                            scripts::HOLDS,
                            &key,
                            scripts::HoldsArgs {
                                token: token.as_bytes().into(),
                            }
                            .encode(),
                        )
                        .await?;
                    if held == 0 {
                        self.room(scripts::ROOM_GIVE, give(vec![token.as_bytes().into()]))
                            .await?;
                        tracing::info!(%token, %key, "relaystore redis: budget room no record held was given back");
                        reclaimed += 1;
                    }
                }
                if cursor == "0" {
                    break;
                }
            }
        }
        Ok(reclaimed)
    }

    /// One call of a `room_*` function (`lua/room_*.lua`) on the meta
    /// slot: its reply, or the error its refusal stands for.
    async fn room(&self, function: scripts::Function, args: Vec<Vec<u8>>) -> Result<Reply> {
        self.room_at(0, function, args).await
    }

    /// One call of a `room_*` function on share `share`.
    async fn room_at(
        &self,
        share: usize,
        function: scripts::Function,
        args: Vec<Vec<u8>>,
    ) -> Result<Reply> {
        let key = &self.inner.ceilings.keys[share];
        let reply = Reply::new(self.inner.conn.call(function, key, args).await?)?;
        reply.refusal()?;
        Ok(reply)
    }

    /// Gives back room a call freed or did not use, each token to its
    /// share. A failure is logged, not returned: the call itself
    /// succeeded, and the reservations lapse at their horizons. A share
    /// that did not answer lately is not asked.
    pub(super) async fn give_back(&self, tokens: &[Vec<u8>]) {
        if tokens.is_empty() {
            return;
        }
        let ceilings = &self.inner.ceilings;
        let mut by_share: Vec<Vec<scripts::Arg>> =
            (0..ceilings.shares()).map(|_| Vec::new()).collect();
        for token in tokens {
            let text = String::from_utf8_lossy(token);
            match split_token(&text) {
                Ok((share, own)) => by_share[share].push(own.into()),
                Err(e) => tracing::warn!(error = %e, "relaystore redis: room was not given back"),
            }
        }
        for (share, own) in by_share.into_iter().enumerate() {
            if own.is_empty() || ceilings.is_down(share) {
                continue;
            }
            if let Err(e) = self.room_at(share, scripts::ROOM_GIVE, give(own)).await {
                ceilings.mark_down(share);
                tracing::warn!(error = %e, share, "relaystore redis: room was not given back (it lapses at its horizon)");
            }
        }
    }
}
