//! The store's side of each coordination mechanism, over the hubs of
//! `crate::coord`: job queues and the outbox, streams and their consumer
//! groups, schedules, wake channels, and transactions.

pub(in crate::store) mod groups;
pub(in crate::store) mod outbox;
pub(in crate::store) mod queues;
pub(in crate::store) mod schedules;
pub(in crate::store) mod streams;
pub(in crate::store) mod tx;
pub(in crate::store) mod tx_batch;
pub(in crate::store) mod wakes;
