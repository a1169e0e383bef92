//! What a wake channel delivers, the same on every engine.

use crate::base::ids::TenantId;
use std::sync::Arc;

/// What a listener receives: its channel was notified (once or more) since
/// it last received.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Wake {
    /// The tenant the channel belongs to.
    pub tenant: TenantId,
    /// The channel.
    pub channel: Arc<str>,
}
