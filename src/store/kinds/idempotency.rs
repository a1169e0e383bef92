//! Idempotency keys for creating operations, `consume`, `enqueue` (and
//! so the outbox) and `append`.
//!
//! The first call with a key claims it (an in-flight record), runs the
//! operation and stores its outcome. A repeat with the same parameters gets
//! the stored outcome; with different parameters, `IdempotencyMismatch`;
//! while the first is still running, the retryable `InFlight`. A failed
//! operation releases its claim (also on panic), so a retry runs it again.

use crate::base::error::{Error, Result};
use crate::base::ids::{JoinToken, TenantId};
use crate::base::sync::Arc;
use crate::base::time::MonoTime;
use crate::contract::events::Cause;
use crate::contract::events::RecordId;
use crate::contract::relay::LeaseGrant;
use crate::contract::relay::ListingInfo;
use crate::contract::relay::{Admission, JoinTicket};
use crate::mem::named_slab::{NamedSlab, NamedTable};
use crate::mem::quota::Reservation;
use crate::mem::table::Removed;
use crate::store::protocol::retire::{Stored, Why};
use crate::store::tenant::Owner;
use crate::store::{owned_by, Collection, NameKey, Store};

/// The parameters a stored outcome was produced from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum IdemParams {
    Grant {
        holder: Arc<str>,
        ttl_ms: u64,
    },
    Publish {
        lease: u64,
        key: Arc<str>,
        attrs: Arc<[u8]>,
    },
    Join {
        listing: Arc<str>,
        client: Arc<str>,
        ttl_ms: u64,
    },
    /// The token presented (compared in constant time).
    Consume {
        token: JoinToken,
    },
    /// An enqueue's queue, options, and its payloads by count and digest
    /// ([`payload_digest`]), so the record keeps no payload.
    Enqueue {
        queue: Arc<str>,
        jobs: usize,
        digest: u64,
        delay: std::time::Duration,
        run_at: Option<std::time::SystemTime>,
        attempts_max: Option<u32>,
        priority: u8,
        unique: Option<crate::contract::queue::Unique>,
    },
    /// An append's stream, and its payload by digest.
    Append {
        stream: Arc<str>,
        digest: u64,
    },
}

/// A 64-bit digest of an enqueue's payloads, in order (SipHash, fixed
/// keys): what an idempotency record compares a repeat's payloads by.
pub(in crate::store) fn payload_digest(payloads: &[&[u8]]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    payloads.hash(&mut hasher);
    hasher.finish()
}

#[derive(Clone, Debug)]
pub(crate) enum Outcome {
    Grant(LeaseGrant),
    Publish(ListingInfo),
    Join(JoinTicket),
    Consume(Admission),
    /// The first job's sequence number (a batch's others follow it).
    Enqueue(u64),
    /// The offset appended at.
    Append(u64),
}

pub(crate) struct Idem {
    pub(in crate::store) owner: Owner,
    params: IdemParams,
    outcome: Option<Outcome>,
}

/// Removes an in-flight claim unless disarmed: on failure and on panic.
struct Claim<'a> {
    store: &'a Store,
    key: &'a NameKey,
    now: MonoTime,
    armed: bool,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let removed = self.store.shared.idempotency.remove_with(
            self.key,
            |v, _, _| owned_by(v.outcome.is_none()),
            self.now,
        );
        if let Ok(r) = removed {
            self.store.retire_idem(r, Cause::Released);
        }
    }
}

impl Stored for Idem {
    type Key = NameKey;
    type Storage = NamedSlab<NameKey, Self>;

    fn table(store: &Store) -> &NamedTable<NameKey, Idem> {
        &store.shared.idempotency
    }

    fn retire(
        store: &Store,
        _place: u64,
        removed: Removed<NameKey, Self>,
        why: Why,
        _now: MonoTime,
        _detach: bool,
    ) -> usize {
        store.retire_idem(removed, why.cause());
        0
    }
}

impl Store {
    /// Runs `run` at most once per idempotency key within the window.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::store) fn idempotent<T>(
        &self,
        tenant: TenantId,
        key: Option<&str>,
        params: impl FnOnce() -> IdemParams,
        now: MonoTime,
        run: impl FnOnce() -> Result<T>,
        store: impl FnOnce(&T) -> Outcome,
        load: impl Fn(&Outcome) -> Option<T>,
    ) -> Result<T> {
        // Without a key nothing is remembered, so the parameters are not
        // built: a call without a key pays nothing for them.
        let Some(key) = key else {
            return run();
        };
        let params = params();
        let ikey: NameKey = (tenant, self.key_name(key)?);
        let deadline = now
            .saturating_add(self.shared.config.idempotency_ttl)
            .as_millis();
        // Claim the key, or answer from the record that holds it. A record
        // left by a revoked tenant epoch is cleared once and the claim
        // retried.
        let mut claimed = false;
        for _ in 0..2 {
            // The claim holds its tenant like any record (it is one).
            let hold = self.hold_tenant(tenant, &[Collection::Idempotency])?;
            let t = hold.epoch();
            let quota = t.tenant.limit(Collection::Idempotency);
            let reservation =
                Reservation::acquire_under(&[(t.tenant.quota(Collection::Idempotency), 1, quota)])?;
            let record = Idem {
                owner: Owner::of(t),
                params: params.clone(),
                outcome: None,
            };
            match self
                .shared
                .idempotency
                .insert(ikey.clone(), record, now, deadline)
            {
                Ok((_, replaced)) => {
                    reservation.commit();
                    hold.keep();
                    if let Some(old) = replaced {
                        self.retire_idem(old, Cause::Expired);
                    }
                    claimed = true;
                    break;
                }
                Err(Error::Conflict { .. }) => {}
                Err(e) => return Err(e),
            }
            drop(reservation);
            drop(hold);
            let seen = self.shared.idempotency.read(&ikey, now, |v, _| {
                (v.owner.valid(), v.params == params, v.outcome.clone())
            });
            match seen {
                Ok((true, false, _)) => return Err(Error::IdempotencyMismatch),
                Ok((true, true, None)) => return Err(Error::InFlight),
                Ok((true, true, Some(outcome))) => {
                    return load(&outcome).ok_or(Error::IdempotencyMismatch)
                }
                Ok((false, _, _)) => {
                    if let Ok(r) = self.shared.idempotency.remove_with(
                        &ikey,
                        |v, _, _| owned_by(!v.owner.valid()),
                        now,
                    ) {
                        self.retire_idem(r, Cause::Revoked);
                    }
                }
                // Expired or removed in between: try to claim again.
                Err(_) => {}
            }
        }
        if !claimed {
            return Err(Error::InFlight);
        }
        let mut claim = Claim {
            store: self,
            key: &ikey,
            now,
            armed: true,
        };
        let result = run()?;
        let outcome = store(&result);
        let stored = self.shared.idempotency.update(&ikey, now, None, |v, _| {
            v.outcome = Some(outcome);
            Ok(((), None))
        });
        if stored.is_ok() {
            claim.armed = false;
        }
        Ok(result)
    }
}

impl Store {
    pub(in crate::store) fn retire_idem(&self, r: Removed<NameKey, Idem>, cause: Cause) {
        r.value
            .owner
            .tenant()
            .quota(Collection::Idempotency)
            .release(1);
        self.emit_with(
            Collection::Idempotency,
            r.key.0,
            || RecordId::Key(Arc::from(r.key.1)),
            cause,
        );
        self.release_owner(&r.value.owner);
    }
}
