//! Join attempts on Redis: begin (with its one-time token), bind, consume
//! exactly once, cancel.

use super::reply::Reply;
use super::{quota_arg, scripts, Issued, Mode, RedisEngine};
use crate::base::error::{Error, Result};
use crate::base::ids::{AttemptId, JoinToken, TenantId, TOKEN_SECRET_BYTES};
use crate::contract::relay::{Admission, AttemptInfo, AttemptState, Binding, JoinTicket};
use std::net::SocketAddr;
use std::time::{Duration, UNIX_EPOCH};

impl RedisEngine {
    /// Begins an attempt by `client` to join the listing under `listing`,
    /// valid for `ttl`, and issues its one-time token
    /// ([`Store::begin_join`](crate::Store::begin_join)): the listing and
    /// its lease must be visible; refused with `CapacityExceeded` at
    /// `attempts_per_listing_max` or the tenant's attempt or replay quota.
    /// The secret is 128 bits from the same generator as in memory; Redis
    /// keeps only its SHA-1 on the attempt (and the secret itself on an
    /// idempotency record, for `idempotency_ttl`, to answer a repeat).
    pub async fn begin_join(
        &self,
        tenant: TenantId,
        listing: &str,
        client: &str,
        ttl: Duration,
        idempotency_key: Option<&str>,
    ) -> Result<JoinTicket> {
        self.check_name(listing)?;
        self.check_name(client)?;
        if let Some(k) = idempotency_key {
            self.check_name(k)?;
        }
        let ttl_ms = self.ttl_ms(ttl)?;
        let mut secret = [0u8; TOKEN_SECRET_BYTES];
        crate::base::secrets::fill(&mut secret)?;
        let config = self.config();
        let quota = self.quota(tenant);
        let args = scripts::BeginJoinArgs {
            key: listing.into(),
            client: client.into(),
            ttl_ms: ttl_ms.into(),
            secret: hex(&secret).into(),
            per_listing_max: config.attempts_per_listing_max.into(),
            quota: quota_arg(quota.attempts_max).into(),
            replay_quota: quota_arg(quota.replay_max).into(),
            grace_ms: crate::base::time::duration_to_millis_ceil(config.replay_grace).into(),
            keep_ms: self.keep_ms().into(),
            ikey: idempotency_key.unwrap_or("").into(),
            ikey_ttl: self.idempotency_ttl_ms().into(),
            ikey_quota: quota_arg(quota.idempotency_max).into(),
        }
        .encode();
        let reply = self
            .answer(
                scripts::BEGIN_JOIN,
                tenant,
                Mode::Creating,
                Issued::Nothing,
                args,
            )
            .await?;
        let r = scripts::BeginJoinReply::decode(&reply)?;
        let attempt = AttemptId::new(self.incarnation(), r.seq);
        let secret =
            unhex(&r.secret).ok_or_else(|| Error::backend("malformed token secret", true))?;
        let (deadline, now) = (r.deadline, r.now);
        Ok(JoinTicket {
            attempt,
            token: token(attempt, &secret),
            remaining: Duration::from_millis(deadline.saturating_sub(now)),
            expires_at: UNIX_EPOCH + Duration::from_millis(deadline),
        })
    }

    /// Binds the attempt to the address the relay observed for its client,
    /// once ([`Store::bind_endpoint`](crate::Store::bind_endpoint)): the
    /// winning bind repeated with the same address returns the same
    /// binding; another address is `Conflict`. A wrong token reads as a
    /// missing attempt.
    pub async fn bind_endpoint(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        token: &JoinToken,
        addr: SocketAddr,
    ) -> Result<Binding> {
        if token.attempt() != attempt {
            return Err(Error::NotFound);
        }
        let args = scripts::BindArgs {
            seq: attempt.seq().into(),
            secret: hex(token.secret()).into(),
            addr: addr.to_string().into(),
        }
        .encode();
        let reply = self
            .on_attempt(scripts::BIND, tenant, attempt, args)
            .await
            .map_err(Error::for_token)?;
        Ok(Binding {
            attempt,
            addr,
            version: scripts::BindReply::decode(&reply)?.version,
        })
    }

    /// Consumes a bound token, exactly once under any concurrency and
    /// across every instance ([`Store::consume`](crate::Store::consume));
    /// every later consume is `ReplayRejected` until the attempt's
    /// deadline plus `replay_grace`. With an idempotency key, a repeat of
    /// the call that consumed the token returns its admission again (the
    /// key's record keeps the client, listing and address, and only a
    /// SHA-1 of the token's secret), so a consume that failed with
    /// `may_have_run` is safe to retry.
    pub async fn consume(
        &self,
        tenant: TenantId,
        token: &JoinToken,
        idempotency_key: Option<&str>,
    ) -> Result<Admission> {
        if let Some(k) = idempotency_key {
            self.check_name(k)?;
        }
        let attempt = token.attempt();
        let quota = self.quota(tenant);
        let args = scripts::ConsumeArgs {
            seq: attempt.seq().into(),
            secret: hex(token.secret()).into(),
            ikey: idempotency_key.unwrap_or("").into(),
            ikey_ttl: self.idempotency_ttl_ms().into(),
            ikey_quota: quota_arg(quota.idempotency_max).into(),
        }
        .encode();
        let issued = Issued::Id(attempt.incarnation(), attempt.seq());
        // A key's record is a new record, under the idempotency ceiling;
        // a draining handle still consumes, and remembers the key.
        let mode = if idempotency_key.is_some() {
            Mode::Upserting
        } else {
            Mode::Existing
        };
        let reply = self
            .answer(scripts::CONSUME, tenant, mode, issued, args)
            .await
            .map_err(Error::for_token)?;
        let r = scripts::ConsumeReply::decode(&reply)?;
        let addr = r
            .address
            .parse()
            .map_err(|_| Error::backend("malformed bound address", true))?;
        Ok(Admission {
            attempt,
            client: r.client,
            listing: r.listing,
            addr,
        })
    }

    /// Cancels a pending or bound attempt; a consumed one is
    /// `ReplayRejected`.
    pub async fn cancel_join(&self, tenant: TenantId, attempt: AttemptId) -> Result<()> {
        let args = scripts::CancelJoinArgs {
            seq: attempt.seq().into(),
        }
        .encode();
        self.on_attempt(scripts::CANCEL_JOIN, tenant, attempt, args)
            .await
            .map(drop)
    }

    /// A join attempt's state and time left
    /// ([`Store::get_attempt`](crate::Store::get_attempt)): pending or
    /// bound while it and its listing are visible, consumed while its
    /// token's replay memory lasts. Writes nothing.
    pub async fn get_attempt(&self, tenant: TenantId, attempt: AttemptId) -> Result<AttemptInfo> {
        let args = scripts::GetAttemptArgs {
            seq: attempt.seq().into(),
        }
        .encode();
        let reply = self
            .on_attempt(scripts::GET_ATTEMPT, tenant, attempt, args)
            .await?;
        let r = scripts::GetAttemptReply::decode(&reply)?;
        let addr = || -> Result<SocketAddr> {
            r.address
                .parse()
                .map_err(|_| Error::backend("malformed bound address", true))
        };
        let state = match &*r.state {
            "p" => AttemptState::Pending,
            "b" => AttemptState::Bound(addr()?),
            "c" => AttemptState::Consumed(addr()?),
            other => {
                return Err(Error::backend(
                    format!("an attempt in an unknown state: {other}"),
                    true,
                ))
            }
        };
        Ok(AttemptInfo {
            attempt,
            listing: r.listing.clone(),
            client: r.client.clone(),
            state,
            version: r.version,
            remaining: r.remaining,
        })
    }

    async fn on_attempt(
        &self,
        function: scripts::Function,
        tenant: TenantId,
        attempt: AttemptId,
        args: Vec<Vec<u8>>,
    ) -> Result<Reply> {
        let issued = Issued::Id(attempt.incarnation(), attempt.seq());
        self.answer(function, tenant, Mode::Existing, issued, args)
            .await
    }
}

fn token(attempt: AttemptId, secret: &[u8; TOKEN_SECRET_BYTES]) -> JoinToken {
    let mut bytes = [0u8; 16 + TOKEN_SECRET_BYTES];
    bytes[..16].copy_from_slice(&attempt.to_bytes());
    bytes[16..].copy_from_slice(secret);
    JoinToken::from_bytes(bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<[u8; TOKEN_SECRET_BYTES]> {
    let mut out = [0u8; TOKEN_SECRET_BYTES];
    if text.len() != 2 * TOKEN_SECRET_BYTES {
        return None;
    }
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}
