//! The conformance suite on the Redis engine: job queues, the outbox and schedules, on a
//! standalone server and on a Redis Cluster (`tests/redis/conformance.rs`).

mod redis;

use redis::conformance::{checks_on, Suite};

#[test]
fn the_queue_checks_pass_on_a_standalone_server() {
    checks_on("standalone", Suite::Queues);
}

#[test]
fn the_queue_checks_pass_on_a_cluster() {
    checks_on("cluster", Suite::Queues);
}
