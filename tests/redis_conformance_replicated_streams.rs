//! The conformance suite on the Redis engine: streams, consumer groups, transactions, wake channels and
//! the relay records' lifecycle, on a Redis
//! Cluster whose masters have a replica each, every write an authorization
//! rests on waiting for one replica (`wait_for_replicas(1)`, ADR 0062;
//! `tests/redis/conformance.rs`). A binary of its own: its six servers
//! and the waits share the machine with nothing else of the suite.

mod redis;

use redis::conformance::{checks_on, Suite};

#[test]
fn the_stream_checks_pass_on_a_replicated_cluster() {
    checks_on("replicated", Suite::Streams);
}

#[test]
fn the_transaction_checks_pass_on_a_replicated_cluster() {
    checks_on("replicated", Suite::Tx);
}

#[test]
fn the_wake_checks_pass_on_a_replicated_cluster() {
    checks_on("replicated", Suite::Wakes);
}

#[test]
fn the_lifecycle_checks_pass_on_a_replicated_cluster() {
    checks_on("replicated", Suite::Lifecycle);
}
