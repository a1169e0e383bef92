//! Join attempts, endpoint binding, one-time tokens and replay memory.
//!
//! An attempt goes Pending -> Bound -> Consumed. Each step runs under the
//! attempt's shard write lock, so exactly one bind and exactly one consume
//! win under any concurrency. A consumed attempt stays in the table as the
//! token's replay memory until the token's deadline plus `replay_grace`;
//! its slot was reserved when the attempt began, so consumption can never
//! fail for lack of room.

use crate::base::error::{Error, Result};
use crate::base::ids::{AttemptId, JoinToken, TenantId, TOKEN_SECRET_BYTES};
use crate::store::kinds::idempotency::{IdemParams, Outcome};
use crate::store::protocol::attach::{Child, Parent};
use crate::store::protocol::decide::{self, Phase};
use crate::store::protocol::retire::Stored;
use crate::store::protocol::retire::Why;
use crate::store::protocol::visible::Ancestry;
use crate::store::tenant::Owner;
use crate::store::{Collection, IdKey, Store};

use crate::base::name::Name;
use crate::base::sync::Arc;
use crate::base::time::{duration_to_millis_ceil, MonoTime};
use crate::contract::events::{Cause, RecordId};
use crate::contract::relay::Admission;
use crate::contract::relay::Binding;
use crate::contract::relay::JoinTicket;
use crate::contract::relay::{AttemptInfo, AttemptState};
use crate::mem::quota::Counter;
use crate::mem::table::{Removed, SlabTable};
use std::net::SocketAddr;
use std::time::Duration;

pub(crate) struct Attempt {
    pub(in crate::store) owner: Owner,
    /// The listing's name, inline up to 23 bytes like the listing's own
    /// key (ADR 0046): a join makes no allocation for it.
    pub(in crate::store) listing: Name,
    /// The publication of the listing this attempt joins.
    pub(in crate::store) origin: u64,
    /// Inline up to 23 bytes (no allocation of its own for the usual
    /// client id); longer names are shared out of line.
    client: Name,
    secret: [u8; TOKEN_SECRET_BYTES],
    pub(in crate::store) phase: Phase,
    pub(in crate::store) attached: bool,
}

impl Stored for Attempt {
    type Key = IdKey;
    type Storage = crate::mem::slab::Slab<Self, crate::mem::table::Beside<()>>;

    fn table(store: &Store) -> &SlabTable<Attempt> {
        &store.shared.attempts
    }

    fn retire(
        store: &Store,
        _place: u64,
        removed: Removed<IdKey, Self>,
        why: Why,
        _now: MonoTime,
        detach: bool,
    ) -> usize {
        store.retire_attempt(removed, why, detach);
        0
    }
}

impl Child for Attempt {
    /// A pending attempt, and the replay memory it becomes once consumed.
    const QUOTAS: &'static [Collection] = &[Collection::Attempts, Collection::Replay];

    /// The store-wide ceiling on pending attempts (the table's own ceiling
    /// bounds attempt records, consumed ones included).
    fn shared(store: &Store) -> Option<&Counter> {
        Some(&store.shared.pending)
    }

    fn attached(&self) -> bool {
        self.attached
    }

    fn set_attached(&mut self) {
        self.attached = true;
    }

    fn ancestry(&self) -> Ancestry {
        Ancestry {
            owner_valid: self.owner.valid(),
            lease: None,
            listing: Some((self.listing.clone(), self.origin)),
        }
    }
}

impl Store {
    /// Begins an attempt by `client` to join the listing under `listing`,
    /// valid for `ttl`, and issues its one-time token (128 bits from the OS
    /// CSPRNG).
    ///
    /// Requires the listing and its lease to be visible, room under the
    /// listing's cap on pending attempts, the tenant's attempt and replay
    /// quotas and the store-wide ceilings; all are reserved at once or none.
    pub fn begin_join(
        &self,
        tenant: TenantId,
        listing: &str,
        client: &str,
        ttl: Duration,
        idempotency_key: Option<&str>,
    ) -> Result<JoinTicket> {
        let _in = self.enter();
        self.check_name(listing)?;
        self.check_name(client)?;
        let now = self.shared.clock.now();
        let deadline = self.deadline(now, ttl)?;
        let params = || IdemParams::Join {
            listing: Arc::from(listing),
            client: Arc::from(client),
            ttl_ms: deadline - now.as_millis(),
        };
        self.idempotent(
            tenant,
            idempotency_key,
            params,
            now,
            || self.begin_join_now(tenant, listing, Name::new(client), now, deadline),
            |t| Outcome::Join(t.clone()),
            |o| match o {
                Outcome::Join(t) => Some(t.clone()),
                _ => None,
            },
        )
    }

    fn begin_join_now(
        &self,
        tenant: TenantId,
        listing: &str,
        client: Name,
        now: MonoTime,
        deadline: u64,
    ) -> Result<JoinTicket> {
        self.authorize(now)?;
        // The listing's publication, found when the attempt's slot in it is
        // taken (ADR 0045); the broken twin that takes no slot reads it.
        let origin = std::cell::Cell::new(0);
        if !decide::join_attaches() {
            origin.set(self.listing_origin(&(tenant, listing), now)?);
        }
        // The attempt keeps a copy of the name (ADR 0041); its slot in the
        // listing is found by the caller's.
        let kept = Name::new(listing);
        self.shared.attempts.with_key(|seq| {
            let id = self.attempt_id(seq);
            let mut secret = [0; TOKEN_SECRET_BYTES];
            crate::base::secrets::fill(&mut secret)?;
            let token = JoinToken::with_secret(id, secret);
            let parent = if decide::join_attaches() {
                Parent::Listing {
                    key: (tenant, listing),
                    origin: &origin,
                    child: seq,
                }
            } else {
                Parent::None
            };
            let attempt = |owner, _| Attempt {
                owner,
                listing: kept,
                origin: origin.get(),
                client,
                secret: *token.secret(),
                phase: Phase::Pending,
                attached: false,
            };
            let stamp = self.create(tenant, seq, parent, now, deadline, attempt)?;
            Ok(JoinTicket {
                attempt: id,
                token,
                remaining: stamp.remaining(now),
                expires_at: self.shared.clock.wall_at(now) + stamp.remaining(now),
            })
        })
    }

    /// The visible attempt `seq` of `tenant` (with `token`'s secret, if
    /// given): its listing. A consumed attempt is `ReplayRejected`, reported
    /// before its ancestors are checked, so a replay is always refused as
    /// one; an attempt whose listing or lease is gone authorises nothing and
    /// answers as a missing one.
    fn visible_attempt(
        &self,
        tenant: TenantId,
        seq: IdKey,
        token: Option<&JoinToken>,
        now: MonoTime,
    ) -> Result<Name> {
        let owned = |v: &Attempt| v.owner.is_of(tenant);
        let seen = self.shared.attempts.read_owned(&seq, now, owned, |v, _| {
            let genuine = token.is_none_or(|t| t.matches(&v.secret));
            (v.attached && v.owner.valid() && genuine).then(|| (v.phase, v.ancestry()))
        });
        let (phase, ancestry) = match seen {
            Ok(Some(found)) => found,
            Ok(None) => return Err(Error::NotFound),
            Err(e) => return Err(e),
        };
        if phase.is_consumed() {
            return Err(Error::ReplayRejected);
        }
        if !self.ancestors_visible(tenant, &ancestry, now) {
            return Err(Error::NotFound);
        }
        let (listing, _) = ancestry.listing.expect("an attempt hangs from a listing");
        Ok(listing)
    }

    /// The attempt under `token`, if the token is genuine and the attempt
    /// visible: its listing and whether it is consumed. A consumed token is
    /// reported before the parents are checked, so a replay is always
    /// `ReplayRejected`.
    fn attempt_for(
        &self,
        tenant: TenantId,
        id: AttemptId,
        token: &JoinToken,
        now: MonoTime,
    ) -> Result<(IdKey, Name)> {
        let seq = self.attempt_seq(id).map_err(Error::for_token)?;
        self.authorize(now)?;
        if token.attempt() != id {
            return Err(Error::NotFound);
        }
        let listing = self.visible_attempt(tenant, seq, Some(token), now)?;
        Ok((seq, listing))
    }

    /// Binds the attempt to the public address the relay observed for its
    /// client (Pending -> Bound). Exactly one bind wins; repeating the
    /// winning bind with the same address returns the same binding; another
    /// address is [`Error::Conflict`].
    pub fn bind_endpoint(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        token: &JoinToken,
        observed: SocketAddr,
    ) -> Result<Binding> {
        let _in = self.enter();
        let now = self.shared.clock.now();
        let (key, _) = self.attempt_for(tenant, attempt, token, now)?;
        let owned = |v: &Attempt| v.owner.is_of(tenant);
        let (addr, stamp) =
            self.shared
                .attempts
                .update_owned(&key, now, owned, None, |v, stamp| {
                    if !token.matches(&v.secret) {
                        return Err(Error::NotFound);
                    }
                    match decide::bind(v.phase, observed, stamp.version)? {
                        Some(next) => {
                            v.phase = next;
                            Ok((observed, Some(crate::store::stamp_deadline(&stamp))))
                        }
                        // The winning bind, repeated: the same binding.
                        None => Ok((observed, None)),
                    }
                })?;
        Ok(Binding {
            attempt,
            addr,
            version: stamp.version,
        })
    }

    /// Consumes a bound token (Bound -> Consumed), exactly once under any
    /// concurrency. Every later consume is [`Error::ReplayRejected`] until
    /// the token's deadline plus `replay_grace`. An unbound attempt is
    /// [`Error::Conflict`].
    ///
    /// With an idempotency key, a repeat of the call that consumed the
    /// token (the same token, the same key, within `idempotency_ttl`)
    /// returns the same admission instead of `ReplayRejected`: a caller
    /// whose consume failed with `may_have_run` retries it safely. Another
    /// token under the key is [`Error::IdempotencyMismatch`]; a consume
    /// without the key is refused as a replay, as ever.
    pub fn consume(
        &self,
        tenant: TenantId,
        token: &JoinToken,
        idempotency_key: Option<&str>,
    ) -> Result<Admission> {
        let _in = self.enter();
        let now = self.shared.clock.now();
        self.idempotent(
            tenant,
            idempotency_key,
            || IdemParams::Consume { token: *token },
            now,
            || self.consume_now(tenant, token, now),
            |a| Outcome::Consume(a.clone()),
            |o| match o {
                Outcome::Consume(a) => Some(a.clone()),
                _ => None,
            },
        )
    }

    fn consume_now(&self, tenant: TenantId, token: &JoinToken, now: MonoTime) -> Result<Admission> {
        let (key, listing) = self.attempt_for(tenant, token.attempt(), token, now)?;
        let grace_ms = duration_to_millis_ceil(self.shared.config.replay_grace);
        let owned = |v: &Attempt| v.owner.is_of(tenant);
        let ((addr, client, origin, owner), _) =
            self.shared
                .attempts
                .update_owned(&key, now, owned, None, |v, stamp| {
                    if !token.matches(&v.secret) {
                        return Err(Error::NotFound);
                    }
                    let addr = decide::consume(v.phase, stamp.version)?;
                    v.phase = Phase::Consumed(addr);
                    // Remembered as replay memory past the token's deadline.
                    let remembered = crate::store::stamp_deadline(&stamp) + grace_ms;
                    let found = (addr, v.client.clone(), v.origin, v.owner.clone());
                    Ok((found, Some(remembered)))
                })?;
        // No longer pending: free its place under the listing's cap and in
        // the pending quotas. The replay units stay with the record.
        owner.tenant().quota(Collection::Attempts).release(1);
        self.shared.pending.release(1);
        self.detach_attempt(tenant, &listing, origin, key);
        self.emit(
            Collection::Attempts,
            tenant,
            RecordId::Attempt(token.attempt()),
            Cause::Consumed,
        );
        Ok(Admission {
            attempt: token.attempt(),
            client: Arc::from(client.as_str()),
            listing: Arc::from(listing),
            addr,
        })
    }

    /// A join attempt as an operator's page shows it. A pending or bound
    /// attempt is reported while it and its listing are visible
    /// ([`Error::Expired`] past its deadline, [`Error::NotFound`] once its
    /// listing or lease is gone); a consumed one while its token's replay
    /// memory lasts. Writes nothing.
    pub fn get_attempt(&self, tenant: TenantId, attempt: AttemptId) -> Result<AttemptInfo> {
        let key = self.attempt_seq(attempt)?;
        let now = self.shared.clock.now();
        let owned = |v: &Attempt| v.owner.is_of(tenant);
        let seen = self
            .shared
            .attempts
            .read_owned(&key, now, owned, |v, stamp| {
                (v.attached && v.owner.valid()).then(|| {
                    let state = match v.phase {
                        Phase::Pending => AttemptState::Pending,
                        Phase::Bound(addr) => AttemptState::Bound(addr),
                        Phase::Consumed(addr) => AttemptState::Consumed(addr),
                    };
                    let info = AttemptInfo {
                        attempt,
                        listing: Arc::from(v.listing.as_str()),
                        client: Arc::from(v.client.as_str()),
                        state,
                        version: stamp.version,
                        remaining: stamp.remaining(now),
                    };
                    (info, v.ancestry())
                })
            })?;
        let Some((info, ancestry)) = seen else {
            return Err(Error::NotFound);
        };
        // A consumed token's replay memory outlives its listing.
        let consumed = matches!(info.state, AttemptState::Consumed(_));
        if !consumed && !self.ancestors_visible(tenant, &ancestry, now) {
            return Err(Error::NotFound);
        }
        Ok(info)
    }

    /// Cancels a pending or bound attempt. A consumed one is
    /// [`Error::ReplayRejected`].
    pub fn cancel_join(&self, tenant: TenantId, attempt: AttemptId) -> Result<()> {
        let _in = self.enter();
        let key = self.attempt_seq(attempt)?;
        let now = self.shared.clock.now();
        self.visible_attempt(tenant, key, None, now)?;
        let removed = self.shared.attempts.remove_with(
            &key,
            |v, _, live| {
                if !v.owner.is_of(tenant) || !v.attached || !v.owner.valid() {
                    return Err(Error::NotFound);
                }
                if v.phase.is_consumed() {
                    return Err(Error::ReplayRejected);
                }
                if !live {
                    return Err(Error::Expired);
                }
                Ok(())
            },
            now,
        )?;
        self.retire_attempt(removed, Cause::Released, true);
        Ok(())
    }
}

impl Store {
    pub(in crate::store) fn retire_attempt(
        &self,
        r: Removed<IdKey, Attempt>,
        why: impl Into<Why>,
        detach: bool,
    ) {
        let why = why.into();
        let seq = r.key;
        let attempt = r.value;
        let tenant = attempt.owner.id();
        let consumed = attempt.phase.is_consumed();
        if detach && !consumed {
            self.detach_attempt(tenant, &attempt.listing, attempt.origin, seq);
        }
        if attempt.attached {
            let owner = attempt.owner.tenant();
            owner.quota(Collection::Replay).release(1);
            if !consumed {
                owner.quota(Collection::Attempts).release(1);
                self.shared.pending.release(1);
            }
            let collection = if consumed {
                Collection::Replay
            } else {
                Collection::Attempts
            };
            self.announce(
                collection,
                tenant,
                || RecordId::Attempt(self.attempt_id(seq)),
                &why,
                || None,
            );
            self.release_owner(&attempt.owner);
        }
    }
}
