//! Redis servers a test starts and owns: `redis-server` children on free
//! loopback ports (persistence off), alone or joined into a cluster, which
//! the test may pause, kill and restart. The binary must be on PATH: its
//! absence fails the test, saying how to install it.

use super::fresh_namespace;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const MS: Duration = Duration::from_millis(1);

/// A redis-server child on a free loopback port, persistence off.
pub struct Server {
    pub port: u16,
    child: Option<Child>,
    extra: Vec<String>,
    env: Vec<(String, String)>,
}

impl Server {
    pub fn start(extra: &[&str]) -> Server {
        Server::start_with_env(extra, Vec::new())
    }

    /// A server whose wall clock is `clock`'s (see [`SteppedClock`]).
    pub fn start_with_clock(extra: &[&str], clock: &SteppedClock) -> Server {
        Server::start_with_env(extra, clock.env())
    }

    fn start_with_env(extra: &[&str], env: Vec<(String, String)>) -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut server = Server {
            port,
            child: None,
            extra: extra.iter().map(|s| (*s).to_owned()).collect(),
            env,
        };
        server.spawn();
        server
    }

    pub fn spawn(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .args(&self.extra)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match child {
            Ok(child) => child,
            Err(e) => {
                panic!("redis-server could not be started ({e}): {}", super::HOW);
            }
        };
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not listen");
            std::thread::sleep(MS * 20);
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().expect("running").id().to_string();
        let status = Command::new("kill").args([signal, &pid]).status().unwrap();
        assert!(status.success(), "kill {signal}");
    }

    /// Kills the server (its data is gone: persistence is off).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// A new server on the same port, empty.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A wall clock a test steps, for the servers it starts with
/// [`Server::start_with_clock`]: `clockshift.c` beside this file, built
/// with the system's C compiler once per test binary and loaded into the
/// server with `LD_PRELOAD`. The server's wall clock (`TIME`, key expiry)
/// is the host's plus the offset last [`set`](Self::set); its monotonic
/// clock is the host's.
pub struct SteppedClock {
    file: std::path::PathBuf,
}

impl SteppedClock {
    /// A clock at offset 0.
    pub fn new() -> SteppedClock {
        let clock = SteppedClock {
            file: std::env::temp_dir().join(fresh_namespace("clock-offset")),
        };
        clock.set(0);
        clock
    }

    /// Steps the clock to the host's plus `offset_ms` (negative: behind).
    /// The file is replaced whole, so the server never reads half of it.
    pub fn set(&self, offset_ms: i64) {
        let next = self.file.with_extension("next");
        std::fs::write(&next, offset_ms.to_string()).expect("the offset written");
        std::fs::rename(&next, &self.file).expect("the offset in place");
    }

    fn env(&self) -> Vec<(String, String)> {
        let file = self.file.to_str().expect("a UTF-8 path").to_owned();
        vec![
            ("LD_PRELOAD".to_owned(), shim().to_owned()),
            ("RELAYSTORE_CLOCK_OFFSET".to_owned(), file),
        ]
    }
}

impl Drop for SteppedClock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

/// The shared object of `clockshift.c`, built once per test binary.
fn shim() -> &'static str {
    static BUILT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        let source = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/redis/clockshift.c");
        let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(fresh_namespace("clockshift"))
            .with_extension("so");
        let built = Command::new("cc")
            .args(["-shared", "-fPIC", "-O2", "-o"])
            .arg(&out)
            .arg(source)
            .status();
        match built {
            Ok(status) if status.success() => {}
            other => panic!(
                "the clock shim did not build ({other:?}): it needs a C compiler \
                 (sudo apt-get install gcc)"
            ),
        }
        out.to_str().expect("a UTF-8 path").to_owned()
    })
}

/// A connection of the default user that waits as long as the server
/// holds it. A connection the server resets while it is being made (seen
/// on a loaded machine, right after a test killed other clients) is made
/// again, up to three times.
pub async fn admin(server: &Server) -> ::redis::aio::MultiplexedConnection {
    let patient = ::redis::AsyncConnectionConfig::new().set_response_timeout(None);
    let client = ::redis::Client::open(server.url()).expect("a client");
    let mut tries = 0;
    loop {
        match client
            .get_multiplexed_async_connection_with_config(&patient)
            .await
        {
            Ok(connection) => return connection,
            Err(e) if tries < 3 && e.kind() == ::redis::ErrorKind::Io => {
                tries += 1;
                tokio::time::sleep(MS * 100).await;
            }
            Err(e) => panic!("an admin connection: {e}"),
        }
    }
}

/// `count` cluster-enabled servers, not yet joined, each keeping its
/// cluster identity in a directory of its own (returned with them), with
/// `extra` arguments.
fn cluster_nodes(count: usize, extra: &[&str]) -> (Vec<Server>, Vec<std::path::PathBuf>) {
    let mut servers = Vec::new();
    let mut dirs = Vec::new();
    for _ in 0..count {
        let dir = std::env::temp_dir().join(fresh_namespace("node"));
        std::fs::create_dir_all(&dir).expect("a directory for the node");
        let dir_arg = dir.to_str().expect("a UTF-8 directory").to_owned();
        let mut args = vec![
            "--dir",
            &dir_arg,
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
        ];
        args.extend_from_slice(extra);
        servers.push(Server::start(&args));
        dirs.push(dir);
    }
    (servers, dirs)
}

/// A two-master cluster of private servers (slots split in halves), each
/// keeping its cluster identity in its own directory, so a killed master
/// restarted on the same port comes back as the same node, with its
/// slots, and empty.
pub async fn two_master_cluster() -> (Vec<Server>, Vec<std::path::PathBuf>) {
    two_master_cluster_with(&[]).await
}

/// [`two_master_cluster`], each server started with `extra` arguments.
pub async fn two_master_cluster_with(extra: &[&str]) -> (Vec<Server>, Vec<std::path::PathBuf>) {
    let (servers, dirs) = cluster_nodes(2, extra);
    let mut first = admin(&servers[0]).await;
    let _: () = ::redis::cmd("CLUSTER")
        .arg("MEET")
        .arg("127.0.0.1")
        .arg(servers[1].port)
        .query_async(&mut first)
        .await
        .expect("CLUSTER MEET");
    for (server, (low, high)) in servers.iter().zip([("0", "8191"), ("8192", "16383")]) {
        let _: () = ::redis::cmd("CLUSTER")
            .arg(&["ADDSLOTSRANGE", low, high][..])
            .query_async(&mut admin(server).await)
            .await
            .expect("CLUSTER ADDSLOTSRANGE");
    }
    for server in &servers {
        wait_cluster_ok(server).await;
    }
    (servers, dirs)
}

/// Waits until `server` says the cluster is ok.
pub async fn wait_cluster_ok(server: &Server) {
    let mut admin = admin(server).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let info: String = ::redis::cmd("CLUSTER")
            .arg("INFO")
            .query_async(&mut admin)
            .await
            .expect("CLUSTER INFO");
        if info.contains("cluster_state:ok") {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the cluster never came up: {info}"
        );
        tokio::time::sleep(MS * 50).await;
    }
}

/// The slot of `key`, as the cluster computes it.
pub async fn slot_of(server: &Server, key: &str) -> u16 {
    ::redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query_async(&mut admin(server).await)
        .await
        .expect("CLUSTER KEYSLOT")
}

/// A cluster of three masters with one replica each (six private
/// servers), whose nodes call a peer failed after 500 ms without an answer,
/// so a replica takes over a killed master within a few seconds. Returns
/// the servers; the cluster is ok and every replica in sync.
pub async fn replicated_cluster() -> (Vec<Server>, Vec<std::path::PathBuf>) {
    let (servers, dirs) = cluster_nodes(
        6,
        &[
            "--cluster-node-timeout",
            "500",
            "--cluster-replica-validity-factor",
            "0",
        ],
    );
    let nodes: Vec<String> = servers
        .iter()
        .map(|s| format!("127.0.0.1:{}", s.port))
        .collect();
    let created = Command::new("redis-cli")
        .args(["--cluster", "create"])
        .args(&nodes)
        .args(["--cluster-replicas", "1", "--cluster-yes"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("redis-cli could not be started ({e}): {}", super::HOW));
    assert!(created.success(), "redis-cli --cluster create");
    for server in &servers {
        wait_cluster_ok(server).await;
    }
    // Every replica attached to its master and in sync, as both sides see
    // it: three of the six nodes are replicas with their link up (a node
    // still waiting to be made a replica reads as a master), and the
    // masters list three replicas online (what `ROLE` and `WAIT` count).
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (mut linked, mut online) = (0, 0);
        for server in &servers {
            let info: String = ::redis::cmd("INFO")
                .arg("replication")
                .query_async(&mut admin(server).await)
                .await
                .expect("INFO replication");
            if info.contains("role:slave") && info.contains("master_link_status:up") {
                linked += 1;
            }
            online += info.matches("state=online").count();
        }
        if linked == 3 && online == 3 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{linked} of 3 replicas linked, {online} online"
        );
        tokio::time::sleep(MS * 50).await;
    }
    (servers, dirs)
}

/// The port of the master serving `key` now, as `server` sees the cluster.
pub async fn master_of(server: &Server, key: &str) -> u16 {
    serving(server, key).await[0]
}

/// The ports of the nodes serving `key` now, as `server` sees the
/// cluster: its master first, then its replicas.
pub async fn serving(server: &Server, key: &str) -> Vec<u16> {
    let slot = slot_of(server, key).await;
    let slots: ::redis::Value = ::redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query_async(&mut admin(server).await)
        .await
        .expect("CLUSTER SLOTS");
    let ::redis::Value::Array(ranges) = slots else {
        panic!("CLUSTER SLOTS: {slots:?}")
    };
    for range in ranges {
        let ::redis::Value::Array(parts) = range else {
            continue;
        };
        let (Some(::redis::Value::Int(start)), Some(::redis::Value::Int(end))) =
            (parts.first(), parts.get(1))
        else {
            continue;
        };
        if (*start..=*end).contains(&i64::from(slot)) {
            return parts[2..]
                .iter()
                .filter_map(|node| match node {
                    ::redis::Value::Array(node) => match node.get(1) {
                        Some(::redis::Value::Int(port)) => u16::try_from(*port).ok(),
                        _ => None,
                    },
                    _ => None,
                })
                .collect();
        }
    }
    panic!("no master serves slot {slot}")
}
