//! The store's side of wake channels (`src/mem/wake.rs`): names are checked
//! here, and the lifecycle decides whether a channel still takes work.

use super::Store;
#[cfg(doc)]
use crate::base::error::Error;
use crate::base::error::Result;
use crate::base::ids::TenantId;
use crate::mem::wake::Listener;

impl Store {
    /// Wakes every listener of `channel` attached before this call; wakes
    /// not yet received coalesce into one. A channel nobody listens to is
    /// fine (nothing happens).
    ///
    /// Empty name: [`Error::InvalidName`]; longer than `name_bytes_max`:
    /// [`Error::InvalidArgument`]; starting with `__` (reserved for the
    /// store's own channels): [`Error::ReservedName`]; once the store has
    /// stopped: [`Error::ServiceUnavailable`].
    pub fn notify(&self, tenant: TenantId, channel: &str) -> Result<()> {
        let channel = self.channel_name(channel)?;
        self.shared.wakes.notify(&(tenant, channel))
    }

    /// Attaches a listener to `channel`: every notify that starts after
    /// this returns reaches it. Dropping the listener detaches it.
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

    pub(super) fn channel_name(&self, channel: &str) -> Result<std::sync::Arc<str>> {
        self.check_own_name(channel)?;
        Ok(std::sync::Arc::from(channel))
    }
}
