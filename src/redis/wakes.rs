//! Wake channels on Redis (SPEC §10).
//!
//! A wake is not stored: `notify` wakes this handle's own listeners at
//! once, through the same hub the in-memory store uses
//! (`src/mem/wake.rs`, one bounded queue per listener), and publishes the
//! wake with its payload on the store's wake
//! channel (`relaystore:<ns>:wakes`, classic Pub/Sub, which a cluster
//! delivers from any node to subscribers on every node). Every handle with
//! listeners has its channel listener (`events.rs`, one Pub/Sub connection
//! for removal events and wakes) subscribed, and wakes its own listeners
//! for other handles' messages. `listen` returns once that subscription
//! is in place, so a notify that starts after it reaches the listener on
//! whichever instance it runs.
//!
//! Pub/Sub delivers at most once. A listener connection that drops loses
//! what was published meanwhile, uncounted, so when it is back every
//! listener of the handle receives one wake with `Missed::Unknown` and no
//! payload: a sign to look at the state again, where silence could leave
//! a worker waiting for work that is there. The listener caps (`listeners_max`,
//! `listeners_per_channel_max`, `channels_per_tenant_max`) count this
//! handle's listeners.

use super::{Mode, RedisEngine};
#[cfg(doc)]
use crate::base::error::Error;
use crate::base::error::Result;
use crate::base::ids::TenantId;
#[cfg(doc)]
use crate::contract::wake::Wake;
use crate::mem::wake::Listener;
use std::sync::Arc;

impl RedisEngine {
    /// Wakes every listener of `channel` attached before this call, on
    /// every instance, once: each receives one [`Wake`] with an empty
    /// payload, queued behind the wakes it has not yet received. A channel
    /// nobody listens to is fine (nothing happens).
    ///
    /// Empty name: [`Error::InvalidName`]; longer than `name_bytes_max`:
    /// [`Error::InvalidArgument`]; starting with `__` (reserved):
    /// [`Error::ReservedName`]; once this handle has stopped:
    /// [`Error::ServiceUnavailable`]. The local listeners are woken even
    /// when publishing to the others fails (`BackendUnavailable`).
    pub async fn notify(&self, tenant: TenantId, channel: &str) -> Result<()> {
        self.notify_with(tenant, channel, &[]).await
    }

    /// [`notify`](Self::notify) with a payload every listener, on every
    /// instance, receives in its [`Wake::payload`]. Refused as `notify`
    /// is, and with [`Error::InvalidArgument`] for a payload over
    /// `wake_payload_bytes_max` bytes.
    pub async fn notify_with(&self, tenant: TenantId, channel: &str, payload: &[u8]) -> Result<()> {
        self.admit(Mode::Existing)?;
        self.config().check_notify(channel, payload)?;
        let channel: Arc<str> = Arc::from(channel);
        self.inner
            .wakes
            .notify_with(&(tenant, Arc::clone(&channel)), payload)?;
        let message = self.wake_message(tenant, &channel, payload);
        self.inner
            .conn
            .publish(
                &super::events::wakes_channel(&self.inner.namespace),
                message,
            )
            .await
    }

    /// The message that wakes `channel`'s listeners on the other
    /// instances with `payload` (the channel listener skips this handle's
    /// own).
    pub(super) fn wake_message(&self, tenant: TenantId, channel: &str, payload: &[u8]) -> Vec<u8> {
        super::events::netstring_message(&[
            format!("{:x}", self.inner.origin).as_bytes(),
            tenant.0.to_string().as_bytes(),
            channel.as_bytes(),
            payload,
        ])
    }

    /// Attaches a listener to `channel`: every notify that starts after
    /// this returns, on any instance, reaches it, as one [`Wake`]; none
    /// from before. Dropping the listener
    /// detaches it. The handle's first listener (or subscription) starts
    /// its channel listener.
    ///
    /// Names as for [`notify`](Self::notify). Refused with
    /// `CapacityExceeded` past this handle's `listeners_max` (scope
    /// `Listeners`), `listeners_per_channel_max` (`ChannelListeners`) or,
    /// for a channel with no listener yet, `channels_per_tenant_max`
    /// (`TenantChannels`); with `ServiceUnavailable` once this handle has
    /// stopped; with `BackendUnavailable` if the channel cannot be
    /// listened to. Listeners receive `Closed` when the handle stops (its
    /// drain window ends) or its last clone goes.
    pub async fn listen(&self, tenant: TenantId, channel: &str) -> Result<Listener> {
        self.admit(Mode::Existing)?;
        let channel = self.channel_name(channel)?;
        self.start_listener().await?;
        self.inner.wakes.listen(tenant, channel)
    }

    fn channel_name(&self, channel: &str) -> Result<Arc<str>> {
        self.config().check_own_name(channel)?;
        Ok(Arc::from(channel))
    }
}
