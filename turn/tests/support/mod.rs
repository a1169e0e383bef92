//! Runs coturn's TURN client (`turnutils_uclient`) and peer
//! (`turnutils_peer`) against the relay's binary on loopback. Both tools
//! come with Debian's `coturn` package (`scripts/test` installs it); a
//! missing tool fails the test, never skips it.

#![allow(dead_code)] // each test binary uses part of it

use std::net::UdpSocket;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const HOW: &str = "install Debian's coturn package for turnutils_uclient and \
                   turnutils_peer (scripts/test does: apt-get install coturn)";

/// The relayed ports of the relays these tests start (below Linux's
/// ephemeral ports, where the listen ports come from).
pub const RELAYED_PORTS: (u16, u16) = (20_000, 29_999);

/// A child process killed when dropped.
pub struct Process(pub Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A UDP port free a moment ago on loopback.
pub fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn tool(name: &str) -> Command {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(found, "{name} is not installed: {HOW}");
    Command::new(name)
}

/// `turnutils_peer` echoing on `port`.
pub fn peer(port: u16) -> Process {
    let child = tool("turnutils_peer")
        .args(["-L", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Process(child)
}

/// The relay's binary on `port`, with `extra` options; returns once it
/// answers.
pub fn relay(port: u16, relay_ports: (u16, u16), extra: &[&str]) -> Process {
    let child = Command::new(env!("CARGO_BIN_EXE_relaystore-turn"))
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--relay-ip", "127.0.0.1"])
        .args(["--min-port", &relay_ports.0.to_string()])
        .args(["--max-port", &relay_ports.1.to_string()])
        .args(["--realm", "relay.test", "--user", "alice:secret"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let process = Process(child);
    // A Binding request answered means it listens.
    let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
    probe
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let binding = [
        0, 1, 0, 0, 0x21, 0x12, 0xA4, 0x42, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
    ];
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        probe.send_to(&binding, ("127.0.0.1", port)).unwrap();
        let mut buf = [0u8; 256];
        if probe.recv_from(&mut buf).is_ok() {
            return process;
        }
        assert!(Instant::now() < deadline, "the relay did not start");
    }
}

/// What one uclient run reported.
#[derive(Debug)]
pub struct Run {
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    pub output: String,
}

/// Runs `turnutils_uclient` with `flags`, `clients` clients and `messages`
/// messages each, against the relay on `port` and the peer on `peer_port`.
pub fn uclient(flags: &[&str], clients: u32, messages: u32, port: u16, peer_port: u16) -> Run {
    let Output { stdout, stderr, .. } = tool("timeout")
        .arg("60")
        .arg("turnutils_uclient")
        .args(flags)
        .args(["-u", "alice", "-w", "secret"])
        .args(["-e", "127.0.0.1", "-r", &peer_port.to_string()])
        .args(["-n", &messages.to_string(), "-m", &clients.to_string()])
        .args(["-p", &port.to_string(), "127.0.0.1"])
        .output()
        .unwrap();
    let output = String::from_utf8_lossy(&stdout).into_owned() + &String::from_utf8_lossy(&stderr);
    // uclient exits 0 even when everything was lost: its summary lines are
    // the result.
    let number_after = |key: &str| -> Option<u64> {
        output.lines().rev().find_map(|line| {
            let at = line.find(key)? + key.len();
            let digits: String = line[at..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            // Only the final totals line ends with the count.
            (key != "tot_recv_msgs=" || line.trim_end().ends_with(&digits))
                .then(|| digits.parse().ok())
                .flatten()
        })
    };
    Run {
        sent: number_after("tot_send_msgs=").unwrap_or(0),
        received: number_after("tot_recv_msgs=").unwrap_or(0),
        lost: number_after("Total lost packets ").unwrap_or(u64::MAX),
        output,
    }
}

/// Runs the loads with 1, 10 and 50 clients at once, each against its own
/// relay and peer, and checks that every message came back.
pub fn every_message_returns(flags: &'static [&'static str]) {
    let runs: Vec<_> = [1u32, 10, 50]
        .into_iter()
        .map(|clients| {
            std::thread::spawn(move || {
                let port = free_port();
                let peer_port = free_port();
                let _peer = peer(peer_port);
                // Relays may share a port range: a port in use is skipped.
                let _relay = relay(port, RELAYED_PORTS, &["--user-quota", "1000"]);
                (clients, uclient(flags, clients, 10, port, peer_port))
            })
        })
        .collect();
    for run in runs {
        let (clients, run) = run.join().unwrap();
        let expected = u64::from(clients) * 10;
        assert!(
            run.sent >= expected && run.received == run.sent && run.lost == 0,
            "{flags:?} with {clients} clients: sent {}, received {}, lost {} (expected {expected})\n{}",
            run.sent,
            run.received,
            run.lost,
            run.output
        );
    }
}
