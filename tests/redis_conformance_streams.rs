//! The conformance suite on the Redis engine: streams, consumer groups, transactions, wake channels and
//! the relay records' lifecycle, on a
//! standalone server and on a Redis Cluster (`tests/redis/conformance.rs`).

mod redis;

use redis::conformance::{checks_on, Suite};

#[test]
fn the_stream_checks_pass_on_a_standalone_server() {
    checks_on("standalone", Suite::Streams);
}

#[test]
fn the_stream_checks_pass_on_a_cluster() {
    checks_on("cluster", Suite::Streams);
}

#[test]
fn the_transaction_checks_pass_on_a_standalone_server() {
    checks_on("standalone", Suite::Tx);
}

#[test]
fn the_transaction_checks_pass_on_a_cluster() {
    checks_on("cluster", Suite::Tx);
}

#[test]
fn the_wake_checks_pass_on_a_standalone_server() {
    checks_on("standalone", Suite::Wakes);
}

#[test]
fn the_wake_checks_pass_on_a_cluster() {
    checks_on("cluster", Suite::Wakes);
}

#[test]
fn the_lifecycle_checks_pass_on_a_standalone_server() {
    checks_on("standalone", Suite::Lifecycle);
}

#[test]
fn the_lifecycle_checks_pass_on_a_cluster() {
    checks_on("cluster", Suite::Lifecycle);
}
