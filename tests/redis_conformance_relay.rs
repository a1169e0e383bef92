//! The conformance suite on the Redis engine: the relay records (their lifecycle
//! is in the streams binary), on a
//! standalone server and on a Redis Cluster (`tests/redis/conformance.rs`).

mod redis;

use redis::conformance::{checks_on, Suite};

#[test]
fn the_relay_checks_pass_on_a_standalone_server() {
    checks_on("standalone", Suite::Relay);
}

#[test]
fn the_relay_checks_pass_on_a_cluster() {
    checks_on("cluster", Suite::Relay);
}
