//! A UDP rendezvous relay on tokio, with the store as its only state:
//! hosts register a lobby (a lease with a listing) and heartbeat it,
//! clients join a lobby with a one-time token, bind the source address the
//! relay observes, and are admitted once; the relay then tells each side
//! the other's address. Removal events are logged as they come, `/metrics`
//! and `/ready` are served on loopback, and ctrl-c starts a drain that the
//! relay waits out before it exits.
//!
//! ```text
//! cargo run --example rendezvous                 # the relay and a bounded loopback client
//! cargo run --example rendezvous -- --serve      # the relay alone, until ctrl-c
//! ```
//!
//! The protocol is one line of text per datagram:
//!
//! | request | answer |
//! | --- | --- |
//! | `REGISTER <lobby>` | `REGISTERED <lease>` |
//! | `HEARTBEAT <lease>` | `ALIVE` |
//! | `JOIN <lobby> <client>` | `TICKET <attempt> <token>` |
//! | `BIND <attempt> <token>` | `PEER <host address>` (and the host gets `PEER <client address>`) |
//! | `LEAVE <lease>` | `BYE` |
//!
//! and `ERR <reason>` for anything refused. Without `--serve`, a loopback
//! client runs 4 hosts and 16 clients (each client also replays its token,
//! which must be refused), 3 hosts leave, the fourth is still registered
//! when the relay drains; the run checks every count and exits non-zero if
//! one is off.

#[path = "support/mod.rs"]
mod support;

use relaystore::events::{Cause, Collection, Received};
use relaystore::{AttemptId, JoinToken, LeaseId, Store, TenantId};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use support::http;
use tokio::net::UdpSocket;

const GAMES: TenantId = TenantId(1);
const LEASE_TTL: Duration = Duration::from_secs(5);
const JOIN_TTL: Duration = Duration::from_secs(10);
const DRAIN_WINDOW: Duration = Duration::from_millis(300);
const HOSTS: usize = 4;
const CLIENTS: usize = 16;

/// One request, answered to its sender (and maybe a note to another
/// address).
fn handle(store: &Store, line: &str, from: SocketAddr) -> Answer {
    match answer(store, line, from) {
        Ok(answered) => answered,
        Err(reason) => (format!("ERR {reason}"), None),
    }
}

type Answer = (String, Option<(SocketAddr, String)>);

fn answer(store: &Store, line: &str, from: SocketAddr) -> Result<Answer, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let text = |e: relaystore::Error| e.to_string();
    match words.as_slice() {
        ["REGISTER", lobby] => {
            let lease = store
                .grant(GAMES, &from.to_string(), LEASE_TTL, None)
                .map_err(text)?;
            store
                .publish(GAMES, lease.id, lobby, from.to_string().as_bytes(), None)
                .map_err(text)?;
            Ok((format!("REGISTERED {}", lease.id), None))
        }
        ["HEARTBEAT", lease] => {
            let lease: LeaseId = lease.parse().map_err(|_| "a malformed lease id")?;
            store.renew(GAMES, lease, LEASE_TTL).map_err(text)?;
            Ok(("ALIVE".into(), None))
        }
        ["JOIN", lobby, client] => {
            let ticket = store
                .begin_join(GAMES, lobby, client, JOIN_TTL, None)
                .map_err(text)?;
            Ok((format!("TICKET {} {}", ticket.attempt, ticket.token), None))
        }
        ["BIND", attempt, token] => {
            let attempt: AttemptId = attempt.parse().map_err(|_| "a malformed attempt id")?;
            let token: JoinToken = token.parse().map_err(|_| "a malformed token")?;
            // The address the relay sees is the one bound: a token stolen
            // and used from elsewhere binds the thief's address, which the
            // host is told, and the real client is refused.
            store
                .bind_endpoint(GAMES, attempt, &token, from)
                .map_err(text)?;
            let admitted = store.consume(GAMES, &token, None).map_err(text)?;
            let listing = store.get_listing(GAMES, &admitted.listing).map_err(text)?;
            let host: SocketAddr = std::str::from_utf8(&listing.attrs)
                .ok()
                .and_then(|a| a.parse().ok())
                .ok_or("a listing without a host address")?;
            Ok((
                format!("PEER {host}"),
                Some((host, format!("PEER {}", admitted.addr))),
            ))
        }
        ["LEAVE", lease] => {
            let lease: LeaseId = lease.parse().map_err(|_| "a malformed lease id")?;
            store.revoke(GAMES, lease).map_err(text)?;
            Ok(("BYE".into(), None))
        }
        _ => Err(format!("unknown request {line:?}")),
    }
}

/// The relay: answers datagrams until `stop` resolves.
async fn serve(store: Store, socket: Arc<UdpSocket>, stop: impl std::future::Future<Output = ()>) {
    let mut buf = vec![0u8; 1500];
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => return,
            received = socket.recv_from(&mut buf) => {
                let Ok((n, from)) = received else { continue };
                let line = String::from_utf8_lossy(&buf[..n]).into_owned();
                let (reply, note) = handle(&store, &line, from);
                let _ = socket.send_to(reply.as_bytes(), from).await;
                if let Some((to, note)) = note {
                    let _ = socket.send_to(note.as_bytes(), to).await;
                }
            }
        }
    }
}

/// Logs every removal event, counting them by collection and cause, until
/// the store has drained (then what is buffered still).
async fn log_removals(store: Store) -> BTreeMap<(String, String), u64> {
    let events = store.subscribe().expect("a subscription");
    let mut seen = BTreeMap::new();
    let mut log = |received: Received| match received {
        Received::Event(e) => {
            let holder = e.holder.as_deref().map(|h| format!(" held by {h}"));
            let root = e
                .root
                .as_ref()
                .map(|r| format!(" with {:?} ({:?})", r.id, r.cause));
            println!(
                "removed: {:?} {:?} of {}{}: {:?}{}",
                e.collection,
                e.id,
                e.tenant,
                holder.unwrap_or_default(),
                e.cause,
                root.unwrap_or_default()
            );
            let key = (format!("{:?}", e.collection), format!("{:?}", e.cause));
            *seen.entry(key).or_insert(0) += 1;
        }
        Received::Lagged { missed, gaps, .. } => {
            println!("removal events missed: {missed} (of tenants {gaps:?}): read them again")
        }
    };
    let drained = store.drained();
    tokio::pin!(drained);
    loop {
        tokio::select! {
            received = events.recv() => match received {
                Ok(received) => log(received),
                Err(_) => break,
            },
            () = &mut drained => {
                // The drain's removals were announced before it ended.
                while let Some(received) = events.try_recv() {
                    log(received);
                }
                break;
            }
        }
    }
    seen
}

/// A peer's socket and one request/answer over it.
struct Peer(UdpSocket, SocketAddr);

impl Peer {
    async fn new(relay: SocketAddr) -> std::io::Result<Peer> {
        Ok(Peer(UdpSocket::bind("127.0.0.1:0").await?, relay))
    }

    async fn ask(&self, request: &str) -> std::io::Result<String> {
        self.0.send_to(request.as_bytes(), self.1).await?;
        self.hear().await
    }

    async fn hear(&self) -> std::io::Result<String> {
        let mut buf = vec![0u8; 1500];
        let (n, _) = tokio::time::timeout(Duration::from_secs(5), self.0.recv_from(&mut buf))
            .await
            .map_err(|_| std::io::Error::other("no answer within 5 s"))??;
        Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
    }

    fn addr(&self) -> std::io::Result<SocketAddr> {
        self.0.local_addr()
    }
}

/// What the loopback client saw.
#[derive(Debug, Default, PartialEq)]
struct Counts {
    registered: usize,
    heartbeats: usize,
    tickets: usize,
    admitted: usize,
    replays_refused: usize,
    peers_told_to_hosts: usize,
    left: usize,
}

/// 4 hosts, 16 clients spread over their lobbies; 3 hosts leave.
async fn client(relay: SocketAddr) -> Result<Counts, Box<dyn std::error::Error>> {
    let mut counts = Counts::default();
    let mut hosts = Vec::new();
    for h in 0..HOSTS {
        let host = Peer::new(relay).await?;
        let answer = host.ask(&format!("REGISTER lobby-{h}")).await?;
        let lease = answer
            .strip_prefix("REGISTERED ")
            .ok_or(answer.clone())?
            .to_owned();
        counts.registered += 1;
        if host.ask(&format!("HEARTBEAT {lease}")).await? == "ALIVE" {
            counts.heartbeats += 1;
        }
        hosts.push((host, lease));
    }
    for c in 0..CLIENTS {
        let (host, _) = &hosts[c % HOSTS];
        let peer = Peer::new(relay).await?;
        let answer = peer
            .ask(&format!("JOIN lobby-{} client-{c}", c % HOSTS))
            .await?;
        let ticket = answer
            .strip_prefix("TICKET ")
            .ok_or(answer.clone())?
            .to_owned();
        counts.tickets += 1;
        let answer = peer.ask(&format!("BIND {ticket}")).await?;
        if answer == format!("PEER {}", host.addr()?) {
            counts.admitted += 1;
        }
        if host.hear().await? == format!("PEER {}", peer.addr()?) {
            counts.peers_told_to_hosts += 1;
        }
        // The token is spent: a second use is refused.
        if peer
            .ask(&format!("BIND {ticket}"))
            .await?
            .starts_with("ERR ")
        {
            counts.replays_refused += 1;
        }
    }
    for (host, lease) in &hosts[1..] {
        if host.ask(&format!("LEAVE {lease}")).await? == "BYE" {
            counts.left += 1;
        }
    }
    Ok(counts)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let serve_only = std::env::args().any(|a| a == "--serve");
    let metrics = http::install_recorder();
    let store = Store::builder().build()?;
    let probe = http::serve(store.clone(), metrics, 0)?;
    let socket = Arc::new(UdpSocket::bind("127.0.0.1:0").await?);
    let relay = socket.local_addr()?;
    println!("relay on udp://{relay}; http://{probe}/metrics and http://{probe}/ready");
    let removals = tokio::spawn(log_removals(store.clone()));

    // The relay serves until ctrl-c, or (without --serve) until the
    // loopback client is done.
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let stop = async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => println!("ctrl-c"),
            _ = done_rx => {}
        }
    };
    let relay_task = tokio::spawn(serve(store.clone(), Arc::clone(&socket), stop));
    let counts = if serve_only {
        None
    } else {
        let counts = client(relay).await?;
        let _ = done_tx.send(());
        Some(counts)
    };
    relay_task.await?;

    let (status, _) = http::get(probe, "/ready")?;
    println!("draining for {DRAIN_WINDOW:?} (/ready was {status})");
    store.begin_drain(DRAIN_WINDOW)?;
    store.drained().await;
    let (status, body) = http::get(probe, "/metrics")?;
    let stats = store.stats();
    println!(
        "drained: {stats:?}; /ready {}",
        http::get(probe, "/ready")?.0
    );
    let seen = removals.await?;
    println!("removal events: {seen:?}");
    let Some(counts) = counts else {
        return Ok(());
    };
    println!("client: {counts:?}");
    let grants = http::sample(
        &body,
        "relaystore_admissions_total",
        &["collection=\"leases\""],
    );
    let expected = Counts {
        registered: HOSTS,
        heartbeats: HOSTS,
        tickets: CLIENTS,
        admitted: CLIENTS,
        replays_refused: CLIENTS,
        peers_told_to_hosts: CLIENTS,
        left: HOSTS - 1,
    };
    let count = |collection: Collection, cause: Cause| {
        seen.get(&(format!("{collection:?}"), format!("{cause:?}")))
            .copied()
            .unwrap_or(0)
    };
    let ok = counts == expected
        && status == 200
        && stats.leases == 0
        && count(Collection::Leases, Cause::Revoked) == (HOSTS - 1) as u64
        && count(Collection::Leases, Cause::Drained) == 1
        && count(Collection::Listings, Cause::Cascaded) == HOSTS as u64
        && grants == HOSTS as f64;
    if !ok {
        eprintln!("expected {expected:?}, 3 leases revoked, 1 drained, 4 listings cascaded, {HOSTS} grants in /metrics (saw {grants})");
        std::process::exit(1);
    }
    println!("every count as expected");
    Ok(())
}
