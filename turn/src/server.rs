//! The relay's loop: one thread, one readiness poll over the client socket
//! and every relayed socket, draining each socket it is woken for. The
//! datagram path (ChannelData, Send and Data indications) is here; the
//! requests are in `proto.rs`.

use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token, Waker};
use relaystore::events::{Event, Received, RecordId, Subscription};
use relaystore::LeaseId;
use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use stun_types::message::{
    Message, MessageClass, MessageType, MessageWrite, MessageWriteExt, MessageWriteMutSlice,
    TransactionId,
};
use turn_types::attribute::{Data, XorPeerAddress};
use turn_types::channel::ChannelData;
use turn_types::message::{DATA, SEND};

use crate::auth::{Nonces, Users};
use crate::batch::{Receive, Send, BATCH};
use crate::config::Config;
use crate::records::Records;
use crate::state::State;

const LISTEN: Token = Token(0);
const WAKE: Token = Token(1);
/// A relayed socket's token: this plus its port.
const RELAYED: usize = 1 << 16;
/// Failed receives one drain of a socket tries past (each pending ICMP
/// error fails one receive) before it leaves the socket.
const ERRORS_PER_DRAIN: u32 = 8;
/// Room for a Data indication's header and attributes around a payload.
const INDICATION_OVERHEAD: usize = 64;
/// Room for an answer to a request (the longest is an error with REALM,
/// NONCE, SOFTWARE, MESSAGE-INTEGRITY and FINGERPRINT, well under this).
const ANSWER_MAX: usize = 1024;

/// Which sockets a drain reads: the client socket, or one relayed socket
/// (by port), whose datagrams come from peers.
#[derive(Clone, Copy)]
enum Side {
    Clients,
    Peers(u16),
}

/// What the relay counted since it started.
#[derive(Debug, Default)]
pub struct Counters {
    /// Allocations made.
    pub allocations: AtomicU64,
    /// Datagrams relayed to a peer (from ChannelData or a Send indication).
    pub to_peers: AtomicU64,
    /// Datagrams relayed to a client (as ChannelData or a Data indication),
    /// counted when queued for the next batched send.
    pub to_clients: AtomicU64,
    /// Datagrams dropped for want of a permission, a channel or an
    /// allocation.
    pub dropped: AtomicU64,
    /// Relayed sockets closed because their allocation ended.
    pub closed: AtomicU64,
}

/// A running relay's controls, for its owner.
#[derive(Clone)]
pub struct Handle {
    stop: Arc<AtomicBool>,
    waker: Arc<Waker>,
    /// Where it listens.
    pub local_addr: SocketAddr,
    /// Its counters.
    pub counters: Arc<Counters>,
}

impl Handle {
    /// Asks the loop to stop; [`Relay::run`] returns soon after.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        let _ = self.waker.wake();
    }
}

/// A TURN relay over UDP.
pub struct Relay {
    pub(crate) config: Config,
    pub(crate) state: State,
    pub(crate) users: Users,
    pub(crate) nonces: Nonces,
    poll: Poll,
    pub(crate) listen: UdpSocket,
    /// Relayed sockets by port; the poll token of each is its port.
    pub(crate) relayed: HashMap<u16, UdpSocket>,
    /// The port of each allocation's relayed socket, to close it when the
    /// store reports the allocation's end.
    pub(crate) ports: HashMap<LeaseId, u16>,
    /// Sockets held for a reservation token (EVEN-PORT R=1).
    pub(crate) reserved: HashMap<u64, UdpSocket>,
    /// Where the next search for a free port starts.
    pub(crate) next_port: u16,
    removals: Subscription,
    handle: Handle,
    /// Data indications' transaction ids: a random base and a count.
    indication_id: u128,
}

impl Relay {
    /// Binds the client socket and prepares the relay; [`Relay::run`]
    /// serves. The records' limits must be
    /// [`state::store_config`](crate::state::store_config)'s (or larger).
    pub fn bind(config: Config, records: Records) -> io::Result<Relay> {
        config
            .validate()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        let poll = Poll::new()?;
        let mut listen = UdpSocket::bind(config.listen)?;
        let sock = socket2::SockRef::from(&listen);
        sock.set_recv_buffer_size(config.socket_buffer)?;
        sock.set_send_buffer_size(config.socket_buffer)?;
        poll.registry()
            .register(&mut listen, LISTEN, Interest::READABLE)?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKE)?);
        let removals = records
            .subscribe()
            .map_err(|e| io::Error::other(e.to_string()))?;
        let local_addr = listen.local_addr()?;
        let handle = Handle {
            stop: Arc::new(AtomicBool::new(false)),
            waker,
            local_addr,
            counters: Arc::new(Counters::default()),
        };
        let mut seed = [0u8; 16];
        getrandom::fill(&mut seed).map_err(|e| io::Error::other(e.to_string()))?;
        Ok(Relay {
            users: Users::new(&config.users, &config.realm),
            nonces: Nonces::new(config.nonce_lifetime),
            state: State::new(records, &config, local_addr)
                .map_err(|e| io::Error::other(e.to_string()))?,
            next_port: config.min_port,
            config,
            poll,
            listen,
            relayed: HashMap::new(),
            ports: HashMap::new(),
            reserved: HashMap::new(),
            removals,
            handle,
            indication_id: u128::from_be_bytes(seed),
        })
    }

    /// The relay's controls.
    pub fn handle(&self) -> Handle {
        self.handle.clone()
    }

    /// Serves until [`Handle::stop`].
    pub fn run(mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(256);
        let mut rx = Receive::new();
        let mut out = Send::new();
        while !self.handle.stop.load(Ordering::Acquire) {
            match self
                .poll
                .poll(&mut events, Some(Duration::from_millis(100)))
            {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            for event in events.iter() {
                match event.token() {
                    LISTEN => self.drain(Side::Clients, &mut rx, &mut out),
                    WAKE => {}
                    Token(t) => self.drain(Side::Peers((t - RELAYED) as u16), &mut rx, &mut out),
                }
            }
            self.flush(&mut out);
            self.close_ended();
        }
        Ok(())
    }

    /// Reads what a socket has queued, a batch at a time, until a batch
    /// comes back short (the queue is empty), and hands each datagram on.
    fn drain(&mut self, side: Side, rx: &mut Receive, out: &mut Send) {
        let mut errors = 0;
        loop {
            let received = match side {
                Side::Clients => rx.recv(&self.listen),
                Side::Peers(port) => match self.relayed.get(&port) {
                    Some(socket) => rx.recv(socket),
                    None => return,
                },
            };
            let n = match received {
                Ok(n) => n,
                // An ICMP error for an earlier send shows up here, once;
                // the socket stays usable. A socket that keeps failing is
                // left until its next datagram wakes the loop.
                Err(_) if errors < ERRORS_PER_DRAIN => {
                    errors += 1;
                    continue;
                }
                Err(_) => return,
            };
            for i in 0..n {
                if let Some((data, sender)) = rx.get(i) {
                    match side {
                        Side::Clients => self.on_client(data, sender, out),
                        Side::Peers(port) => self.on_peer(port, data, sender, out),
                    }
                }
            }
            if n < BATCH {
                return;
            }
        }
    }

    /// Sends what the turn of the loop gathered for clients; what the
    /// kernel refuses counts as dropped.
    fn flush(&mut self, out: &mut Send) {
        let gathered = out.len();
        let sent = out.flush(&self.listen);
        self.handle
            .counters
            .dropped
            .fetch_add((gathered - sent) as u64, Ordering::Relaxed);
    }

    /// Makes room in `out` for one more datagram.
    fn room(&mut self, out: &mut Send) {
        if out.is_full() {
            self.flush(out);
        }
    }

    fn count(&self, counter: fn(&Counters) -> &AtomicU64) {
        counter(&self.handle.counters).fetch_add(1, Ordering::Relaxed);
    }

    fn on_client(&mut self, data: &[u8], from: SocketAddr, out: &mut Send) {
        match data.first().map(|b| b >> 6) {
            Some(0b01) => self.on_channel_data(data, from),
            Some(0b00) => {
                let Ok(msg) = Message::from_bytes(data) else {
                    return;
                };
                match msg.class() {
                    MessageClass::Request => {
                        self.room(out);
                        let buffer = out.buffer();
                        let start = buffer.len();
                        buffer.resize(start + ANSWER_MAX, 0);
                        let n = self.on_request(&msg, from, &mut buffer[start..]);
                        buffer.truncate(start + n);
                        if n > 0 {
                            out.push(from);
                        }
                    }
                    MessageClass::Indication if msg.has_method(SEND) => self.on_send(&msg, from),
                    _ => {}
                }
            }
            _ => {}
        }
    }

    /// ChannelData from a client: to the peer its channel is bound to, if
    /// a permission for that peer holds.
    fn on_channel_data(&mut self, data: &[u8], from: SocketAddr) {
        let Ok(channel) = ChannelData::parse(data) else {
            return;
        };
        let peer = self.state.allocation(from).and_then(|a| {
            let peer = self.state.channel_peer(a.lease, channel.id())?;
            self.state
                .permitted(a.lease, peer.ip())
                .then_some((a.relayed, peer))
        });
        self.relay_to_peer(peer, channel.data());
    }

    /// A Send indication: to its XOR-PEER-ADDRESS, if a permission holds.
    fn on_send(&mut self, msg: &Message, from: SocketAddr) {
        let (Ok(peer), Ok(data)) = (msg.attribute::<XorPeerAddress>(), msg.attribute::<Data>())
        else {
            return;
        };
        let peer = peer.addr(msg.transaction_id());
        let target = self.state.allocation(from).and_then(|a| {
            self.state
                .permitted(a.lease, peer.ip())
                .then_some((a.relayed, peer))
        });
        self.relay_to_peer(target, data.data());
    }

    fn relay_to_peer(&mut self, target: Option<(SocketAddr, SocketAddr)>, payload: &[u8]) {
        let sent = target.and_then(|(relayed, peer)| {
            let socket = self.relayed.get(&relayed.port())?;
            socket.send_to(payload, peer).ok()
        });
        match sent {
            Some(_) => self.count(|c| &c.to_peers),
            None => self.count(|c| &c.dropped),
        }
    }

    /// A datagram from a peer on a relayed socket: to the client, on its
    /// channel if one is bound, else as a Data indication; dropped without
    /// a permission.
    fn on_peer(&mut self, port: u16, data: &[u8], peer: SocketAddr, out: &mut Send) {
        let relayed = SocketAddr::new(self.config.relay_ip, port);
        let Some((client, lease)) = self.state.client_of(relayed) else {
            self.count(|c| &c.dropped);
            return;
        };
        if !self.state.permitted(lease, peer.ip()) {
            self.count(|c| &c.dropped);
            return;
        }
        self.room(out);
        let channel = self.state.peer_channel(lease, peer);
        let buffer = out.buffer();
        let start = buffer.len();
        match channel {
            Some(channel) => {
                buffer.extend_from_slice(&channel.to_be_bytes());
                buffer.extend_from_slice(&(data.len() as u16).to_be_bytes());
                buffer.extend_from_slice(data);
            }
            None => {
                buffer.resize(start + data.len() + INDICATION_OVERHEAD, 0);
                self.indication_id = self.indication_id.wrapping_add(1);
                match data_indication(self.indication_id, peer, data, &mut buffer[start..]) {
                    Some(n) => buffer.truncate(start + n),
                    None => {
                        buffer.truncate(start);
                        self.count(|c| &c.dropped);
                        return;
                    }
                }
            }
        }
        out.push(client);
        self.count(|c| &c.to_clients);
    }

    /// Closes the relayed sockets of allocations that ended, and drops the
    /// ports held for reservations that expired or were used.
    fn close_ended(&mut self) {
        while let Some(received) = self.removals.try_recv() {
            match received {
                Received::Event(event) => self.on_removal(&event),
                // Removals were missed: look at every socket.
                Received::Lagged { .. } => self.reconcile(),
            }
        }
    }

    fn on_removal(&mut self, event: &Event) {
        match &event.id {
            RecordId::Lease(lease) => {
                if let Some(port) = self.ports.remove(lease) {
                    self.close(port);
                }
            }
            RecordId::Member(member) => {
                if let Some(token) = State::reservation_token(member) {
                    self.reserved.remove(&token);
                }
            }
            _ => {}
        }
    }

    /// After removal events were missed: closes the sockets of the
    /// allocations that ended, and drops the ports whose reservation is
    /// gone.
    fn reconcile(&mut self) {
        let ended: Vec<(LeaseId, u16)> = self
            .ports
            .iter()
            .filter(|(lease, _)| self.state.holder(**lease).is_none())
            .map(|(lease, port)| (*lease, *port))
            .collect();
        for (lease, port) in ended {
            self.ports.remove(&lease);
            self.close(port);
        }
        let state = &self.state;
        self.reserved
            .retain(|token, _| state.reservation_held(*token));
    }

    fn close(&mut self, port: u16) {
        if let Some(mut socket) = self.relayed.remove(&port) {
            let _ = self.poll.registry().deregister(&mut socket);
            self.count(|c| &c.closed);
        }
    }

    /// Starts serving `socket` for the allocation `lease`.
    pub(crate) fn open(
        &mut self,
        port: u16,
        mut socket: UdpSocket,
        lease: LeaseId,
    ) -> io::Result<()> {
        self.poll.registry().register(
            &mut socket,
            Token(RELAYED + usize::from(port)),
            Interest::READABLE,
        )?;
        self.relayed.insert(port, socket);
        self.ports.insert(lease, port);
        self.count(|c| &c.allocations);
        Ok(())
    }
}

/// A Data indication from `peer` carrying `data`, written into `tx`; its
/// transaction id is `id`'s low 96 bits (counted from a random start, not
/// drawn per datagram). Returns its length.
fn data_indication(id: u128, peer: SocketAddr, data: &[u8], tx: &mut [u8]) -> Option<usize> {
    let id = TransactionId::from(id & !(u128::MAX << 96));
    let kind = MessageType::from_class_method(MessageClass::Indication, DATA);
    let mut w = Message::builder(kind, id, MessageWriteMutSlice::new(tx));
    w.add_attribute(&XorPeerAddress::new(peer, id)).ok()?;
    w.add_attribute(&Data::new(data)).ok()?;
    w.add_fingerprint().ok()?;
    Some(w.finish())
}
