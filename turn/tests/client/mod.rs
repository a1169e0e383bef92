//! A small TURN client for the tests: requests with long-term
//! credentials (answering a 401 or 438 challenge by itself), and helpers
//! to read answers.

#![allow(dead_code)] // each test binary uses part of it

use relaystore_turn::{Counters, Handle, Relay};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use stun_types::attribute::{ErrorCode, Nonce, Realm, Username};
use stun_types::message::{
    IntegrityAlgorithm, LongTermKeyCredentials, Message, MessageClass, MessageType, MessageWrite,
    MessageWriteExt, MessageWriteVec, Method, TransactionId,
};
use turn_types::attribute::{
    ChannelNumber, Data, RequestedTransport, XorPeerAddress, XorRelayedAddress,
};
use turn_types::message::{ALLOCATE, CHANNEL_BIND, CREATE_PERMISSION, SEND};

pub const REALM: &str = "relay.test";

/// A relay serving on its own thread, stopped when dropped.
pub struct RelayThread {
    pub handle: Handle,
    thread: Option<JoinHandle<()>>,
}

impl RelayThread {
    /// Runs `relay` on a new thread; `first` runs there before it serves.
    pub fn spawn(relay: Relay, first: fn()) -> RelayThread {
        let handle = relay.handle();
        let thread = std::thread::spawn(move || {
            first();
            relay.run().unwrap();
        });
        RelayThread {
            handle,
            thread: Some(thread),
        }
    }

    /// Waits until `counter` reaches `at_least` (the relay runs on its own
    /// thread); fails after 5 s.
    pub fn wait_for(&self, counter: fn(&Counters) -> &AtomicU64, at_least: u64) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while counter(&self.handle.counters).load(Ordering::Relaxed) < at_least {
            assert!(Instant::now() < deadline, "the relay did not get there");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Drop for RelayThread {
    fn drop(&mut self) {
        self.handle.stop();
        if let Some(thread) = self.thread.take() {
            let joined = thread.join();
            // A relay that panicked fails the test, unless it is failing
            // already (a second panic would abort).
            if !std::thread::panicking() {
                joined.expect("the relay's thread panicked");
            }
        }
    }
}

/// A TURN client over one UDP socket.
pub struct Client {
    pub socket: UdpSocket,
    pub server: SocketAddr,
    pub user: String,
    pub password: String,
    pub nonce: Option<String>,
}

pub type Attrs<'a> = &'a dyn Fn(&mut MessageWriteVec, TransactionId);

impl Client {
    pub fn new(server: SocketAddr, user: &str, password: &str) -> Client {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        Client {
            socket,
            server,
            user: user.to_string(),
            password: password.to_string(),
            nonce: None,
        }
    }

    pub fn local(&self) -> SocketAddr {
        self.socket.local_addr().unwrap()
    }

    pub fn receive(&self) -> Vec<u8> {
        let mut buf = vec![0u8; 2048];
        let (n, _) = self.socket.recv_from(&mut buf).expect("an answer");
        buf.truncate(n);
        buf
    }

    /// Sends a request (with credentials once a nonce is known) and
    /// returns the answer's bytes; `id` fixes the transaction id.
    pub fn send(&mut self, method: Method, id: TransactionId, attrs: Attrs) -> Vec<u8> {
        let kind = MessageType::from_class_method(MessageClass::Request, method);
        let mut w = Message::builder(kind, id, MessageWriteVec::new());
        attrs(&mut w, id);
        if let Some(nonce) = &self.nonce {
            w.add_attribute(&Username::new(&self.user).unwrap())
                .unwrap();
            w.add_attribute(&Realm::new(REALM).unwrap()).unwrap();
            w.add_attribute(&Nonce::new(nonce).unwrap()).unwrap();
            let creds = LongTermKeyCredentials::new(
                self.user.clone(),
                self.password.clone(),
                REALM.to_string(),
            );
            w.add_message_integrity(&creds.into(), IntegrityAlgorithm::Sha1)
                .unwrap();
        }
        w.add_fingerprint().unwrap();
        self.socket.send_to(&w.finish(), self.server).unwrap();
        self.receive()
    }

    /// A request, answered after any 401 or 438 challenge; returns the
    /// final answer.
    pub fn request(&mut self, method: Method, attrs: Attrs) -> Vec<u8> {
        for _ in 0..3 {
            let answer = self.send(method, TransactionId::generate(), attrs);
            let msg = Message::from_bytes(&answer).unwrap();
            let code = error_code(&answer);
            if code == Some(401) && self.nonce.is_none() || code == Some(438) {
                self.nonce = Some(msg.attribute::<Nonce>().unwrap().nonce().to_string());
                continue;
            }
            return answer;
        }
        panic!("challenged three times");
    }

    pub fn allocate(&mut self) -> Vec<u8> {
        self.request(ALLOCATE, &|w, _| {
            w.add_attribute(&RequestedTransport::new(17)).unwrap();
        })
    }

    pub fn relayed(answer: &[u8]) -> SocketAddr {
        let msg = Message::from_bytes(answer).unwrap();
        assert_eq!(
            msg.class(),
            MessageClass::Success,
            "{:?}",
            error_code(answer)
        );
        msg.attribute::<XorRelayedAddress>()
            .unwrap()
            .addr(msg.transaction_id())
    }

    pub fn permit(&mut self, peer: SocketAddr) -> Vec<u8> {
        self.request(CREATE_PERMISSION, &move |w, id| {
            w.add_attribute(&XorPeerAddress::new(peer, id)).unwrap();
        })
    }

    pub fn bind(&mut self, channel: u16, peer: SocketAddr) -> Vec<u8> {
        self.request(CHANNEL_BIND, &move |w, id| {
            w.add_attribute(&ChannelNumber::new(channel)).unwrap();
            w.add_attribute(&XorPeerAddress::new(peer, id)).unwrap();
        })
    }
}

/// A Send indication carrying `data` to `peer`.
pub fn send_indication(peer: SocketAddr, data: &[u8]) -> Vec<u8> {
    let kind = MessageType::from_class_method(MessageClass::Indication, SEND);
    let id = TransactionId::generate();
    let mut w = Message::builder(kind, id, MessageWriteVec::new());
    w.add_attribute(&XorPeerAddress::new(peer, id)).unwrap();
    w.add_attribute(&Data::new(data)).unwrap();
    w.finish()
}

pub fn error_code(answer: &[u8]) -> Option<u16> {
    let msg = Message::from_bytes(answer).unwrap();
    msg.attribute::<ErrorCode>().ok().map(|e| e.code())
}

pub fn success(answer: &[u8]) -> bool {
    Message::from_bytes(answer).unwrap().class() == MessageClass::Success
}

pub fn peer_socket() -> UdpSocket {
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    peer.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    peer
}
