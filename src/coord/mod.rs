//! Layer 3, the in-memory coordination mechanisms: the hubs of job queues,
//! streams and schedules, each on the floors below.

pub mod group;
pub mod queue;
pub mod schedule;
pub mod stream;
