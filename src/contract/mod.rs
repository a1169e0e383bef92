//! Layer 1, the contract: what every engine promises, and nothing of how
//! one keeps it. The engine traits, configuration and limits and the schedule
//! runner that works on any engine.
//!
//! It imports only the base; it knows nothing of dashmap, slabs, the timing
//! wheel, locks or Redis.

pub(crate) mod config;
pub(crate) mod engine;
pub(crate) mod events;
pub(crate) mod forward;
pub(crate) mod group;
pub(crate) mod kinds;
pub(crate) mod lifecycle;
pub(crate) mod metrics;
pub(crate) mod names;
pub(crate) mod outbox;
pub(crate) mod queue;
pub(crate) mod relay;
pub(crate) mod rules;
pub(crate) mod runner;
pub(crate) mod schedule;
pub(crate) mod settings;
pub(crate) mod stream;
pub(crate) mod tx;
pub(crate) mod usage;
pub(crate) mod wake;
