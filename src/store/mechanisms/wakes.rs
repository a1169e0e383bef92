//! The store's side of wake channels (`src/mem/wake.rs`): names are checked
//! here, and the lifecycle decides whether a channel still takes work.

#[cfg(doc)]
use crate::base::error::Error;
use crate::base::error::Result;
use crate::base::ids::TenantId;
#[cfg(doc)]
use crate::contract::wake::Wake;
use crate::mem::wake::Listener;
use crate::store::Store;

impl Store {
    /// Wakes every listener of `channel` attached before this call, once:
    /// each receives one [`Wake`] with an empty payload, queued behind
    /// the wakes it has not yet received. A channel nobody listens to is
    /// fine (nothing happens).
    ///
    /// Empty name: [`Error::InvalidName`]; longer than `name_bytes_max`:
    /// [`Error::InvalidArgument`]; starting with `__` (reserved for the
    /// store's own channels): [`Error::ReservedName`]; once the store has
    /// stopped: [`Error::ServiceUnavailable`].
    pub fn notify(&self, tenant: TenantId, channel: &str) -> Result<()> {
        self.notify_with(tenant, channel, &[])
    }

    /// [`notify`](Self::notify) with a payload every listener receives in
    /// its [`Wake::payload`] (one copy, shared). A listener whose queue
    /// (`wake_queue_max`) is full drops its oldest wake, payload and all,
    /// and counts it in the next wake's [`Wake::missed`].
    ///
    /// Refused as `notify` is, and with [`Error::InvalidArgument`] for a
    /// payload over `wake_payload_bytes_max` bytes.
    pub fn notify_with(&self, tenant: TenantId, channel: &str, payload: &[u8]) -> Result<()> {
        self.shared.config.check_notify(channel, payload)?;
        let channel = std::sync::Arc::from(channel);
        self.shared.wakes.notify_with(&(tenant, channel), payload)
    }

    /// Attaches a listener to `channel`: every notify that starts after
    /// this returns reaches it, as one [`Wake`] in order; none from
    /// before. Dropping the listener detaches it.
    ///
    /// Names as for [`notify`](Self::notify). Refused with
    /// `CapacityExceeded` past `listeners_max` (scope `Listeners`),
    /// `listeners_per_channel_max` (`ChannelListeners`) or, for a channel
    /// with no listener yet, `channels_per_tenant_max` (`TenantChannels`);
    /// with `ServiceUnavailable` once the store has stopped; with `InFlight`
    /// (retry) if the channel was created and removed under it several
    /// times in a row. Listeners receive `Closed` when the store stops or
    /// its last handle goes.
    pub fn listen(&self, tenant: TenantId, channel: &str) -> Result<Listener> {
        let channel = self.channel_name(channel)?;
        let listening = self.shared.wakes.listen(tenant, channel);
        self.observed(tenant, listening)
    }

    /// Wake listeners attached now.
    pub fn listeners(&self) -> u64 {
        self.shared.wakes.listeners()
    }

    pub(in crate::store) fn channel_name(&self, channel: &str) -> Result<std::sync::Arc<str>> {
        self.check_own_name(channel)?;
        Ok(std::sync::Arc::from(channel))
    }
}
