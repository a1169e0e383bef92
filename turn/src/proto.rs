//! The requests (RFC 8656 §7–§12, RFC 8489 §9.2): Binding, Allocate,
//! Refresh, CreatePermission and ChannelBind, each answered into the
//! caller's buffer with MESSAGE-INTEGRITY on an authenticated answer and
//! FINGERPRINT on every one.

use mio::net::UdpSocket;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;
use stun_types::attribute::{
    AttributeStaticType, ErrorCode, Fingerprint, MessageIntegrity, MessageIntegritySha256, Nonce,
    Realm, Software, Username, XorMappedAddress,
};
use stun_types::message::{
    IntegrityAlgorithm, IntegrityKey, Message, MessageWrite, MessageWriteExt, MessageWriteMutSlice,
    BINDING,
};
use stun_types::AddressFamily;
use turn_types::attribute::{
    ChannelNumber, EvenPort, Lifetime, RequestedAddressFamily, RequestedTransport,
    ReservationToken, XorPeerAddress, XorRelayedAddress,
};
use turn_types::message::{ALLOCATE, CHANNEL_BIND, CREATE_PERMISSION, REFRESH};

use crate::auth::NonceCheck;
use crate::server::Relay;
use crate::state::{Allocation, Refusal};

/// REQUESTED-TRANSPORT's value for UDP.
const UDP: u8 = 17;
/// The channel numbers a client may bind: RFC 8656 gives 0x4000–0x4FFF;
/// RFC 5766 gave 0x4000–0x7FFF, and clients still pick from all of it.
const CHANNELS: std::ops::RangeInclusive<u16> = 0x4000..=0x7FFF;
const SOFTWARE: &str = concat!("relaystore-turn ", env!("CARGO_PKG_VERSION"));

/// An answer to write: an error code with what goes with it.
struct Failure {
    code: u16,
    /// Add REALM and a fresh NONCE (401, 438).
    challenge: bool,
}

fn fail(code: u16) -> Failure {
    Failure {
        code,
        challenge: false,
    }
}

fn refused(refusal: Refusal, conflict: u16) -> Failure {
    match refusal {
        Refusal::Quota => fail(ErrorCode::ALLOCATION_QUOTA_REACHED),
        Refusal::Capacity => fail(ErrorCode::INSUFFICIENT_CAPACITY),
        Refusal::Conflict => fail(conflict),
        Refusal::Store(_) => fail(ErrorCode::SERVER_ERROR),
    }
}

/// The attributes the relay understands in a request.
const KNOWN: &[stun_types::attribute::AttributeType] = &[
    Username::TYPE,
    Realm::TYPE,
    Nonce::TYPE,
    MessageIntegrity::TYPE,
    MessageIntegritySha256::TYPE,
    Fingerprint::TYPE,
    Software::TYPE,
    Lifetime::TYPE,
    RequestedTransport::TYPE,
    RequestedAddressFamily::TYPE,
    EvenPort::TYPE,
    ReservationToken::TYPE,
    XorPeerAddress::TYPE,
    ChannelNumber::TYPE,
];

impl Relay {
    /// Answers a request from `from` into `tx`; returns the answer's length.
    pub(crate) fn on_request(&mut self, msg: &Message, from: SocketAddr, tx: &mut [u8]) -> usize {
        if msg.has_method(BINDING) {
            let mut w = Message::builder_success(msg, MessageWriteMutSlice::new(tx));
            let _ = w.add_attribute(&XorMappedAddress::new(from, msg.transaction_id()));
            let _ = w.add_fingerprint();
            return w.finish();
        }
        let known = [ALLOCATE, REFRESH, CREATE_PERMISSION, CHANNEL_BIND];
        if !known.iter().any(|m| msg.has_method(*m)) {
            return self.answer_failure(msg, fail(ErrorCode::BAD_REQUEST), None, tx);
        }
        let (user, key) = match self.authenticate(msg) {
            Ok(found) => found,
            Err(failure) => return self.answer_failure(msg, failure, None, tx),
        };
        if let Some(w) =
            Message::check_attribute_types(msg, KNOWN, &[], MessageWriteMutSlice::new(&mut *tx))
        {
            return finish_with(w, Some(&key));
        }
        let outcome = if msg.has_method(ALLOCATE) {
            self.allocate(msg, from, &user)
        } else {
            let Some(allocation) = self.state.allocation(from) else {
                return self.answer_failure(
                    msg,
                    fail(ErrorCode::ALLOCATION_MISMATCH),
                    Some(&key),
                    tx,
                );
            };
            if self.state.holder(allocation.lease).as_deref() != Some(user.as_str()) {
                return self.answer_failure(
                    msg,
                    fail(ErrorCode::WRONG_CREDENTIALS),
                    Some(&key),
                    tx,
                );
            }
            if msg.has_method(REFRESH) {
                self.refresh(msg, &allocation)
            } else if msg.has_method(CREATE_PERMISSION) {
                self.create_permission(msg, &allocation)
            } else {
                self.channel_bind(msg, &allocation)
            }
        };
        match outcome {
            Ok(success) => {
                let mut w = Message::builder_success(msg, MessageWriteMutSlice::new(tx));
                let id = msg.transaction_id();
                if let Some(relayed) = success.relayed {
                    let _ = w.add_attribute(&XorRelayedAddress::new(relayed, id));
                    let _ = w.add_attribute(&XorMappedAddress::new(from, id));
                }
                if let Some(lifetime) = success.lifetime {
                    let secs = u32::try_from(lifetime.as_secs()).unwrap_or(u32::MAX);
                    let _ = w.add_attribute(&Lifetime::new(secs));
                }
                if let Some(token) = success.token {
                    let _ = w.add_attribute(&ReservationToken::new(token));
                }
                finish_with(w, Some(&key))
            }
            Err(failure) => self.answer_failure(msg, failure, Some(&key), tx),
        }
    }

    /// The user and key of a request with valid long-term credentials.
    fn authenticate(&self, msg: &Message) -> Result<(String, IntegrityKey), Failure> {
        let challenge = |code| Failure {
            code,
            challenge: true,
        };
        if !msg.has_attribute(MessageIntegrity::TYPE) {
            return Err(challenge(ErrorCode::UNAUTHORIZED));
        }
        let (Ok(user), Ok(realm), Ok(nonce)) = (
            msg.attribute::<Username>(),
            msg.attribute::<Realm>(),
            msg.attribute::<Nonce>(),
        ) else {
            return Err(fail(ErrorCode::BAD_REQUEST));
        };
        if realm.realm() != self.config.realm {
            return Err(challenge(ErrorCode::UNAUTHORIZED));
        }
        let now = self.now_ms();
        if self.nonces.check(nonce.nonce(), now) == NonceCheck::Stale {
            return Err(challenge(ErrorCode::STALE_NONCE));
        }
        let Some(key) = self.users.key(user.username()) else {
            return Err(challenge(ErrorCode::UNAUTHORIZED));
        };
        if msg.validate_integrity_with_key(key).is_err() {
            return Err(challenge(ErrorCode::UNAUTHORIZED));
        }
        Ok((user.username().to_string(), key.clone()))
    }

    fn now_ms(&self) -> u64 {
        self.state.now_ms()
    }

    fn answer_failure(
        &self,
        msg: &Message,
        failure: Failure,
        key: Option<&IntegrityKey>,
        tx: &mut [u8],
    ) -> usize {
        let mut w = Message::builder_error(msg, MessageWriteMutSlice::new(tx));
        if let Ok(code) = ErrorCode::builder(failure.code).build() {
            let _ = w.add_attribute(&code);
        }
        if failure.challenge {
            let nonce = self.nonces.issue(self.now_ms());
            if let (Ok(realm), Ok(nonce)) = (
                Realm::new(&self.config.realm),
                Nonce::new(std::str::from_utf8(&nonce).unwrap_or_default()),
            ) {
                let _ = w.add_attribute(&realm);
                let _ = w.add_attribute(&nonce);
            }
        }
        finish_with(w, key)
    }

    fn lifetime(&self, msg: &Message) -> Duration {
        let asked = msg
            .attribute::<Lifetime>()
            .map(|l| Duration::from_secs(u64::from(l.seconds())))
            .unwrap_or(self.config.lifetime_default);
        asked.clamp(self.config.lifetime_default, self.config.lifetime_max)
    }

    fn allocate(
        &mut self,
        msg: &Message,
        from: SocketAddr,
        user: &str,
    ) -> Result<Success, Failure> {
        if let Some(existing) = self.state.allocation(from) {
            // A retransmission gets the first answer; anything else 437.
            if existing.transaction == u128::from(msg.transaction_id()) {
                let left = self.state.remaining(existing.lease).unwrap_or_default();
                return Ok(Success::allocated(existing.relayed, left, None));
            }
            return Err(fail(ErrorCode::ALLOCATION_MISMATCH));
        }
        let transport = msg
            .attribute::<RequestedTransport>()
            .map_err(|_| fail(ErrorCode::BAD_REQUEST))?;
        if transport.protocol() != UDP {
            return Err(fail(ErrorCode::UNSUPPORTED_TRANSPORT_PROTOCOL));
        }
        let token = msg.attribute::<ReservationToken>().ok().map(|t| t.token());
        let even = msg.attribute::<EvenPort>().ok();
        let family = msg.attribute::<RequestedAddressFamily>().ok();
        if token.is_some() && (even.is_some() || family.is_some()) {
            return Err(fail(ErrorCode::BAD_REQUEST));
        }
        let ours = if self.config.relay_ip.is_ipv4() {
            AddressFamily::IPV4
        } else {
            AddressFamily::IPV6
        };
        if family.is_some_and(|f| f.family() != ours) {
            return Err(fail(ErrorCode::ADDRESS_FAMILY_NOT_SUPPORTED));
        }
        let lifetime = self.lifetime(msg);
        let grant = self
            .state
            .grant(user, lifetime)
            .map_err(|r| refused(r, ErrorCode::ALLOCATION_MISMATCH))?;
        let opened = match token {
            Some(token) => self
                .take_reserved(token)
                .ok_or(fail(ErrorCode::INSUFFICIENT_CAPACITY)),
            None => self
                .open_port(even.is_some())
                .ok_or(fail(ErrorCode::INSUFFICIENT_CAPACITY)),
        };
        let (port, socket, spare) = match opened {
            Ok(found) => found,
            Err(failure) => {
                self.state.delete(grant.id);
                return Err(failure);
            }
        };
        let relayed = SocketAddr::new(self.config.relay_ip, port);
        let attached = self
            .state
            .attach(grant.id, from, relayed, u128::from(msg.transaction_id()));
        if let Err(refusal) = attached {
            self.state.delete(grant.id);
            return Err(refused(refusal, ErrorCode::ALLOCATION_MISMATCH));
        }
        let mut reservation = None;
        if let (Some(spare), Some(even)) = (spare, even) {
            if even.requested() {
                let token = random_token();
                if self.state.reserve(token, spare.0).is_ok() {
                    self.reserved.insert(token, spare.1);
                    reservation = Some(token);
                }
            }
        }
        if self.open(port, socket, grant.id).is_err() {
            self.state.delete(grant.id);
            return Err(fail(ErrorCode::SERVER_ERROR));
        }
        Ok(Success::allocated(relayed, grant.remaining, reservation))
    }

    /// A free relayed port and its socket. With `even`, an even port whose
    /// successor is free too; that successor's socket comes back as well.
    fn open_port(&mut self, even: bool) -> Option<Opened> {
        let (min, max) = (self.config.min_port, self.config.max_port);
        let span = u32::from(max - min) + 1;
        for _ in 0..span {
            let port = self.next_port;
            self.next_port = if port >= max { min } else { port + 1 };
            if self.relayed.contains_key(&port) {
                continue;
            }
            if even && (!port.is_multiple_of(2) || port == max) {
                continue;
            }
            let Ok(socket) = UdpSocket::bind(SocketAddr::new(self.config.relay_ip, port)) else {
                continue;
            };
            if !even {
                return Some((port, socket, None));
            }
            let Ok(next) = UdpSocket::bind(SocketAddr::new(self.config.relay_ip, port + 1)) else {
                continue;
            };
            return Some((port, socket, Some((port + 1, next))));
        }
        None
    }

    fn take_reserved(&mut self, token: u64) -> Option<Opened> {
        let port = self.state.take_reservation(token)?;
        let socket = self.reserved.remove(&token)?;
        Some((port, socket, None))
    }

    fn refresh(&mut self, msg: &Message, allocation: &Allocation) -> Result<Success, Failure> {
        let asked = msg.attribute::<Lifetime>().map(|l| l.seconds()).ok();
        if asked == Some(0) {
            self.state.delete(allocation.lease);
            return Ok(Success::lifetime(Duration::ZERO));
        }
        let lifetime = self.lifetime(msg);
        self.state
            .refresh(allocation.lease, lifetime)
            .map_err(|r| refused(r, ErrorCode::ALLOCATION_MISMATCH))?;
        Ok(Success::lifetime(lifetime))
    }

    fn peer(
        &self,
        msg: &Message,
        allocation: &Allocation,
        n: usize,
    ) -> Result<Option<SocketAddr>, Failure> {
        let Ok(peer) = msg.nth_attribute::<XorPeerAddress>(n) else {
            return Ok(None);
        };
        let peer = peer.addr(msg.transaction_id());
        if peer.is_ipv4() != allocation.relayed.is_ipv4() {
            return Err(fail(ErrorCode::PEER_ADDRESS_FAMILY_MISMATCH));
        }
        Ok(Some(peer))
    }

    fn create_permission(
        &mut self,
        msg: &Message,
        allocation: &Allocation,
    ) -> Result<Success, Failure> {
        // Every peer is checked before any permission is installed.
        let mut peers: Vec<IpAddr> = Vec::new();
        while let Some(peer) = self.peer(msg, allocation, peers.len())? {
            peers.push(peer.ip());
        }
        if peers.is_empty() {
            return Err(fail(ErrorCode::BAD_REQUEST));
        }
        for ip in peers {
            self.state
                .permit(allocation.lease, ip)
                .map_err(|r| refused(r, ErrorCode::BAD_REQUEST))?;
        }
        Ok(Success::empty())
    }

    fn channel_bind(&mut self, msg: &Message, allocation: &Allocation) -> Result<Success, Failure> {
        let channel = msg
            .attribute::<ChannelNumber>()
            .map_err(|_| fail(ErrorCode::BAD_REQUEST))?
            .channel();
        let peer = self
            .peer(msg, allocation, 0)?
            .ok_or(fail(ErrorCode::BAD_REQUEST))?;
        if !CHANNELS.contains(&channel) {
            return Err(fail(ErrorCode::BAD_REQUEST));
        }
        self.state
            .bind_channel(allocation.lease, channel, peer)
            .map_err(|r| refused(r, ErrorCode::BAD_REQUEST))?;
        Ok(Success::empty())
    }
}

/// A relayed port and its socket, with the next port's when it was
/// opened for EVEN-PORT.
type Opened = (u16, UdpSocket, Option<(u16, UdpSocket)>);

/// What a success answer carries.
struct Success {
    relayed: Option<SocketAddr>,
    lifetime: Option<Duration>,
    token: Option<u64>,
}

impl Success {
    fn empty() -> Success {
        Success {
            relayed: None,
            lifetime: None,
            token: None,
        }
    }

    fn lifetime(lifetime: Duration) -> Success {
        Success {
            lifetime: Some(lifetime),
            ..Success::empty()
        }
    }

    fn allocated(relayed: SocketAddr, lifetime: Duration, token: Option<u64>) -> Success {
        Success {
            relayed: Some(relayed),
            lifetime: Some(lifetime),
            token,
        }
    }
}

/// SOFTWARE, MESSAGE-INTEGRITY with `key` if there is one, FINGERPRINT.
fn finish_with(mut w: MessageWriteMutSlice<'_>, key: Option<&IntegrityKey>) -> usize {
    if let Ok(software) = Software::new(SOFTWARE) {
        let _ = w.add_attribute(&software);
    }
    if let Some(key) = key {
        let _ = w.add_message_integrity_with_key(key, IntegrityAlgorithm::Sha1);
    }
    let _ = w.add_fingerprint();
    w.finish()
}

fn random_token() -> u64 {
    let mut bytes = [0u8; 8];
    // A failing random source leaves a zero token, refused at use like any
    // unknown one.
    let _ = getrandom::fill(&mut bytes);
    u64::from_be_bytes(bytes)
}
