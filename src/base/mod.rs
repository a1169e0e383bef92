//! Layer 0, the base: what every other layer stands on and which knows
//! nothing of records, engines or the contract. The one std/loom switch
//! (`sync`), time as an input (`time`, and `coarse_clock`'s clock read
//! from a word a thread keeps current), the error type, ids and tokens, the
//! token secrets, names as reads return them, word snapshots, the slab
//! slot's word (`slot_word`) and the fault switches of the loom models'
//! broken twins.

pub(crate) mod attrs;
#[cfg(feature = "native")]
pub(crate) mod coarse_clock;
pub(crate) mod collection;
pub(crate) mod error;
#[cfg(relaystore_loom)]
pub mod faults;
#[cfg(not(relaystore_loom))]
pub(crate) mod faults;
pub(crate) mod ids;
pub(crate) mod inline;
pub(crate) mod name;
pub(crate) mod secrets;
pub(crate) mod slot_word;
pub(crate) mod sync;
pub mod time;
pub(crate) mod words;
