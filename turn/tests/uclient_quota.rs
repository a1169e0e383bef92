//! The per-user quota with coturn's client. Each uclient client keeps a
//! "probe" allocation (it asks for 777 s) after its run, so with a quota of
//! 2 the next run gets its probe and then 486 for the allocation it relays
//! through. (Its release by expiry is timed on a manual clock in
//! `protocol.rs`: the client's probes make a wall-clock version of it
//! longer than a test binary may take.)

mod support;

use support::{free_port, peer, relay, uclient, Process, RELAYED_PORTS};

/// A relay and a peer, with a quota of 2 allocations per user and
/// lifetimes capped at `lifetime_secs`; returns their ports.
fn relay_with_quota_2(lifetime_secs: u64) -> (Process, Process, u16, u16) {
    let port = free_port();
    let peer_port = free_port();
    let peer = peer(peer_port);
    let lifetime = lifetime_secs.to_string();
    let relay = relay(
        port,
        RELAYED_PORTS,
        &[
            "--user-quota",
            "2",
            "--lifetime-default",
            &lifetime,
            "--lifetime-max",
            &lifetime,
        ],
    );
    (peer, relay, port, peer_port)
}

#[test]
fn a_second_run_meets_the_quota_while_the_first_runs_allocations_live() {
    let (_peer, _relay, port, peer_port) = relay_with_quota_2(600);
    let first = uclient(&["-c"], 1, 1, port, peer_port);
    assert!(
        first.received == 1 && first.lost == 0,
        "the first run: {first:?}"
    );
    let second = uclient(&["-c"], 1, 1, port, peer_port);
    assert!(
        second.output.contains("error 486") && second.received == 0,
        "the second run should meet the quota: {second:?}"
    );
}
