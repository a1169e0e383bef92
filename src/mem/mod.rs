//! Layer 2, the in-memory floors: the concurrent parts the in-memory engine
//! is built from (sharded maps, slabs, versioned records, the timing wheel,
//! admission counters, tables, the commit gate), and the event and wake
//! hubs, which the Redis engine reuses for delivery inside one process.

#[cfg(all(any(test, feature = "internals"), not(relaystore_loom)))]
#[cfg(feature = "native")]
pub(crate) mod driver;
pub mod events;
pub(crate) mod gate;
pub(crate) mod latch;
pub(crate) mod name_index;
pub(crate) mod named;
pub(crate) mod named_slab;
#[cfg(feature = "internals")]
pub mod quota;
#[cfg(not(feature = "internals"))]
#[allow(dead_code)] // the parts only benches and experiments call
pub(crate) mod quota;
pub(crate) mod record;
pub(crate) mod shard;
pub(crate) mod slab;
pub(crate) mod table;
#[cfg(any(test, feature = "internals"))]
pub(crate) mod ttl;
pub mod wake;
#[cfg(feature = "internals")]
pub mod wheel;
#[cfg(not(feature = "internals"))]
#[allow(dead_code)] // the parts only benches and experiments call
pub(crate) mod wheel;
