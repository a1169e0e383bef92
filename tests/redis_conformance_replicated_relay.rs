//! The conformance suite on the Redis engine: the relay records (their lifecycle
//! is in the streams binary), on a Redis
//! Cluster whose masters have a replica each, every write an authorization
//! rests on waiting for one replica (`wait_for_replicas(1)`, ADR 0062;
//! `tests/redis/conformance.rs`). A binary of its own: its six servers
//! and the waits share the machine with nothing else of the suite.

mod redis;

use redis::conformance::{checks_on, Suite};

#[test]
fn the_relay_checks_pass_on_a_replicated_cluster() {
    checks_on("replicated", Suite::Relay);
}
