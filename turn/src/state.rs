//! The relay's state, all of it in relaystore (one tenant per realm):
//!
//! | TURN | record | key | attributes | lifetime |
//! | --- | --- | --- | --- | --- |
//! | allocation | lease, holder = user | (its id) | | LIFETIME, renewed by Refresh |
//! | five-tuple → allocation | listing on the allocation | `f` client, relay's listen address | relayed address, Allocate's transaction id | the allocation's |
//! | relayed address → client | listing on the allocation | `r` relayed | client address | the allocation's |
//! | permission | declared kind `permission` under the allocation | peer IP | | 300 s, renewed by CreatePermission and ChannelBind |
//! | channel → peer | declared kind `channel` under the allocation | channel | peer address | 600 s, renewed by ChannelBind |
//! | peer → channel | declared kind `peer` under the allocation | peer address | channel | 600 s, renewed by ChannelBind |
//! | reserved port (EVEN-PORT R=1) | presence (of no allocation) | `v` token | port | 30 s, taken once |
//!
//! Every lookup on the packet path (the client's five-tuple, the relayed
//! address, the permission, the channel) is a read of the store, in place
//! (`read_listing`, `read_record`: nothing copied or allocated), and the
//! store never shows a record past its deadline; nothing is cached beside
//! it.
//! Permissions and channels are records of the kinds the relay declares
//! ([`store_config`]), under the allocation's lease: they end with it (the
//! store cascades), each kind has its own limits, and a name needs no
//! prefix. A reservation is held for a token before any allocation takes
//! it, so it is a tenant-wide presence record. The per-user allocation
//! quota is the store's per-holder lease quota, the relay's ceiling its
//! lease ceiling.

use relaystore::{Error, Kind, LeaseGrant, LeaseId, RecordKind, Scope, StoreConfig, TenantQuota};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use crate::config::Config;

use crate::records::Records;
pub use crate::records::TENANT;

/// How often the store's driver sweeps expired records for the relay.
/// Reads never show an expired record, whatever the sweep's pace; the tick
/// bounds only how late an expired allocation gives its quota back and
/// closes its socket. The library's default (10 ms) costs an idle relay
/// about 5 ms of CPU a second on this project's 2-core machine; 100 ms
/// costs a tenth of that.
pub const EXPIRY_TICK: Duration = Duration::from_millis(100);

/// The declared kind of permissions: a peer IP under its allocation.
pub const PERMISSION: &str = "permission";
/// The declared kind of a channel binding by channel: its peer.
pub const CHANNEL: &str = "channel";
/// The declared kind of a channel binding by peer: its channel.
pub const PEER: &str = "peer";

/// The store settings a relay with `config` needs.
pub fn store_config(config: &Config) -> StoreConfig {
    let allocations = config.allocations_max;
    // Per allocation: two listings (`f`, `r`) and its children, each kind
    // up to `children_per_allocation`.
    let children = config.children_per_allocation;
    let kind = |name: &str| {
        let all = allocations.saturating_mul(children as u64);
        RecordKind::new(name)
            .ttl_min(config.ttl_min())
            .ttl_max(config.ttl_max())
            .per_lease_max(children)
            .per_tenant_max(all)
            .max(all)
    };
    // A reservation is held for at most one allocation's request at a time.
    let reservations = allocations;
    StoreConfig::default()
        .ttl_min(config.ttl_min())
        .ttl_max(config.ttl_max())
        .leases_max(allocations)
        .listings_max(allocations.saturating_mul(2))
        .presence_max(reservations)
        .listings_per_lease_max(2)
        .idempotency_max(allocations)
        .declare(kind(PERMISSION))
        .declare(kind(CHANNEL))
        .declare(kind(PEER))
        .tenant(
            TenantQuota::default()
                .leases_max(allocations)
                .listings_max(allocations.saturating_mul(2))
                .presence_max(reservations)
                .idempotency_max(allocations)
                .leases_per_holder_max(config.allocations_per_user),
        )
}

/// The declared kinds, as the records name them.
struct Kinds {
    permission: Kind,
    channel: Kind,
    peer: Kind,
}

/// A store key, written on the stack: a tag letter and fixed-width hex
/// fields. The in-place reads take it borrowed, so a lookup allocates
/// nothing whatever its length; the store copies a key only when it
/// creates a record (inline up to 23 bytes).
struct Key {
    bytes: [u8; KEY_MAX],
    len: usize,
}

/// The longest key: a tag and two IPv6 addresses with their ports.
const KEY_MAX: usize = 1 + 2 * (32 + 4);

impl Key {
    fn new(tag: u8) -> Key {
        let mut bytes = [0u8; KEY_MAX];
        bytes[0] = tag;
        Key { bytes, len: 1 }
    }

    /// A record's name within its lease and kind: no tag.
    fn name() -> Key {
        Key {
            bytes: [0u8; KEY_MAX],
            len: 0,
        }
    }

    /// Appends the low `digits` hex digits of `value`.
    fn hex(mut self, value: u128, digits: usize) -> Key {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        for i in 0..digits {
            let shift = 4 * (digits - 1 - i);
            self.bytes[self.len + i] = HEX[((value >> shift) & 0xf) as usize];
        }
        self.len += digits;
        self
    }

    fn ip(self, ip: IpAddr) -> Key {
        match ip {
            IpAddr::V4(v4) => self.hex(u128::from(u32::from(v4)), 8),
            IpAddr::V6(v6) => self.hex(u128::from(v6), 32),
        }
    }

    fn port(self, port: u16) -> Key {
        self.hex(u128::from(port), 4)
    }

    fn addr(self, addr: SocketAddr) -> Key {
        self.ip(addr.ip()).port(addr.port())
    }

    fn token(self, value: u64) -> Key {
        self.hex(u128::from(value), 16)
    }

    fn as_str(&self) -> &str {
        // Only an ASCII tag and hex digits are written.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

/// An address as attribute bytes: family (4 or 6), address, port.
fn encode(addr: SocketAddr, out: &mut Vec<u8>) {
    match addr.ip() {
        IpAddr::V4(v4) => {
            out.push(4);
            out.extend_from_slice(&v4.octets());
        }
        IpAddr::V6(v6) => {
            out.push(6);
            out.extend_from_slice(&v6.octets());
        }
    }
    out.extend_from_slice(&addr.port().to_be_bytes());
}

/// The address [`encode`] wrote at the start of `bytes`, and its length.
fn decode(bytes: &[u8]) -> Option<(SocketAddr, usize)> {
    match bytes.first()? {
        4 if bytes.len() >= 7 => {
            let ip: [u8; 4] = bytes[1..5].try_into().ok()?;
            let port = u16::from_be_bytes([bytes[5], bytes[6]]);
            Some((SocketAddr::from((ip, port)), 7))
        }
        6 if bytes.len() >= 19 => {
            let ip: [u8; 16] = bytes[1..17].try_into().ok()?;
            let port = u16::from_be_bytes([bytes[17], bytes[18]]);
            Some((SocketAddr::from((ip, port)), 19))
        }
        _ => None,
    }
}

/// A client's allocation, as its five-tuple record holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allocation {
    /// Its lease.
    pub lease: LeaseId,
    /// Its relayed address.
    pub relayed: SocketAddr,
    /// The transaction id of the Allocate that made it (a retransmission
    /// of that request gets the same answer).
    pub transaction: u128,
}

/// Why the store refused to create something, in TURN's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The user holds as many allocations as the quota allows (486).
    Quota,
    /// A limit of the relay or of the allocation is full (508).
    Capacity,
    /// Something is already there (437 for an allocation, 400 for a
    /// channel).
    Conflict,
    /// Anything else the store said.
    Store(Error),
}

impl From<Error> for Refusal {
    fn from(e: Error) -> Self {
        match e {
            Error::CapacityExceeded {
                scope: Scope::Holder(_),
                ..
            } => Refusal::Quota,
            Error::CapacityExceeded { .. } => Refusal::Capacity,
            Error::Conflict { .. } => Refusal::Conflict,
            other => Refusal::Store(other),
        }
    }
}

/// The relay's view of its records.
pub struct State {
    records: Records,
    kinds: Kinds,
    /// The relay's own address: the server's half of every five-tuple.
    listen: SocketAddr,
    permission_lifetime: Duration,
    channel_lifetime: Duration,
    reservation_lifetime: Duration,
}

impl State {
    /// The state of a relay with `config` listening on `listen`, in
    /// `records`, whose configuration declares the relay's kinds
    /// ([`store_config`]); `NotFound` if it does not.
    pub fn new(records: Records, config: &Config, listen: SocketAddr) -> Result<State, Error> {
        let kinds = Kinds {
            permission: records.kind(PERMISSION)?,
            channel: records.kind(CHANNEL)?,
            peer: records.kind(PEER)?,
        };
        Ok(State {
            records,
            kinds,
            listen,
            permission_lifetime: config.permission_lifetime,
            channel_lifetime: config.channel_lifetime,
            reservation_lifetime: config.reservation_lifetime,
        })
    }

    /// The records.
    pub fn records(&self) -> &Records {
        &self.records
    }

    /// Milliseconds on the records' clock (for the nonces).
    pub fn now_ms(&self) -> u64 {
        self.records.now_ms()
    }

    /// The five-tuple key of the client at `client`.
    fn five_tuple(&self, client: SocketAddr) -> Key {
        Key::new(b'f').addr(client).addr(self.listen)
    }

    /// The allocation of the client at `client`, if it has one.
    pub fn allocation(&self, client: SocketAddr) -> Option<Allocation> {
        let key = self.five_tuple(client);
        self.records
            .read_listing(key.as_str(), |lease, attrs| {
                let (relayed, used) = decode(attrs)?;
                let transaction = attrs
                    .get(used..used + 16)
                    .and_then(|b| b.try_into().ok())
                    .map(u128::from_be_bytes)?;
                Some(Allocation {
                    lease,
                    relayed,
                    transaction,
                })
            })
            .ok()
            .flatten()
    }

    /// The client whose allocation relays from `relayed`, and the
    /// allocation's lease.
    pub fn client_of(&self, relayed: SocketAddr) -> Option<(SocketAddr, LeaseId)> {
        let key = Key::new(b'r').addr(relayed);
        self.records
            .read_listing(key.as_str(), |lease, attrs| {
                decode(attrs).map(|(addr, _)| (addr, lease))
            })
            .ok()
            .flatten()
    }

    /// Whether the allocation `lease` has a permission for `peer`.
    pub fn permitted(&self, lease: LeaseId, peer: IpAddr) -> bool {
        let name = Key::name().ip(peer);
        self.records
            .read_record(self.kinds.permission, lease, name.as_str(), |_| ())
            .is_ok()
    }

    /// The peer bound to `channel` on the allocation `lease`.
    pub fn channel_peer(&self, lease: LeaseId, channel: u16) -> Option<SocketAddr> {
        let name = Key::name().port(channel);
        self.records
            .read_record(self.kinds.channel, lease, name.as_str(), decode)
            .ok()
            .flatten()
            .map(|(addr, _)| addr)
    }

    /// The channel bound to `peer` on the allocation `lease`.
    pub fn peer_channel(&self, lease: LeaseId, peer: SocketAddr) -> Option<u16> {
        let name = Key::name().addr(peer);
        self.records
            .read_record(self.kinds.peer, lease, name.as_str(), |attrs| {
                let bytes: [u8; 2] = attrs.get(..2)?.try_into().ok()?;
                Some(u16::from_be_bytes(bytes))
            })
            .ok()
            .flatten()
    }

    /// The user holding `lease`, if it is live.
    pub fn holder(&self, lease: LeaseId) -> Option<String> {
        self.records.lease(lease).map(|(holder, _)| holder)
    }

    /// The time left to `lease`, if it is live.
    pub fn remaining(&self, lease: LeaseId) -> Option<Duration> {
        self.records.lease(lease).map(|(_, left)| left)
    }

    /// A new allocation's lease for `user`, for `lifetime`.
    pub fn grant(&self, user: &str, lifetime: Duration) -> Result<LeaseGrant, Refusal> {
        Ok(self.records.grant(user, lifetime)?)
    }

    /// Records the allocation `lease` of `client`, relaying from `relayed`,
    /// made by the Allocate with id `transaction`. A client that has an
    /// allocation already is [`Refusal::Conflict`].
    pub fn attach(
        &self,
        lease: LeaseId,
        client: SocketAddr,
        relayed: SocketAddr,
        transaction: u128,
    ) -> Result<(), Refusal> {
        let mut attrs = Vec::with_capacity(40);
        encode(relayed, &mut attrs);
        attrs.extend_from_slice(&transaction.to_be_bytes());
        let five_tuple = self.five_tuple(client);
        self.records.publish(lease, five_tuple.as_str(), &attrs)?;
        attrs.clear();
        encode(client, &mut attrs);
        let relayed_key = Key::new(b'r').addr(relayed);
        self.records.publish(lease, relayed_key.as_str(), &attrs)?;
        Ok(())
    }

    /// Renews the allocation `lease` for `lifetime`.
    pub fn refresh(&self, lease: LeaseId, lifetime: Duration) -> Result<(), Refusal> {
        self.records.renew(lease, lifetime)?;
        Ok(())
    }

    /// Ends the allocation `lease` and, with it, everything attached.
    pub fn delete(&self, lease: LeaseId) {
        // Already gone is fine: the client asked for its end.
        let _ = self.records.revoke(lease);
    }

    /// Installs or refreshes the permission for `peer` on the allocation
    /// `lease`.
    pub fn permit(&self, lease: LeaseId, peer: IpAddr) -> Result<(), Refusal> {
        let name = Key::name().ip(peer);
        self.records.put_record(
            self.kinds.permission,
            lease,
            name.as_str(),
            self.permission_lifetime,
            None,
        )?;
        Ok(())
    }

    /// Binds `channel` to `peer` on the allocation `lease`, or refreshes
    /// that binding. A channel bound to another peer, or a peer bound to
    /// another channel, is [`Refusal::Conflict`] (400).
    pub fn bind_channel(
        &self,
        lease: LeaseId,
        channel: u16,
        peer: SocketAddr,
    ) -> Result<(), Refusal> {
        let bound_peer = self.channel_peer(lease, channel);
        let bound_channel = self.peer_channel(lease, peer);
        match (bound_peer, bound_channel) {
            (Some(p), _) if p != peer => return Err(Refusal::Conflict),
            (_, Some(c)) if c != channel => return Err(Refusal::Conflict),
            _ => {}
        }
        let mut attrs = Vec::with_capacity(20);
        encode(peer, &mut attrs);
        let by_channel = Key::name().port(channel);
        self.records.put_record(
            self.kinds.channel,
            lease,
            by_channel.as_str(),
            self.channel_lifetime,
            Some(&attrs),
        )?;
        let by_peer = Key::name().addr(peer);
        let created = bound_peer.is_none();
        if let Err(e) = self.records.put_record(
            self.kinds.peer,
            lease,
            by_peer.as_str(),
            self.channel_lifetime,
            Some(&channel.to_be_bytes()),
        ) {
            if created {
                // All or nothing: the half just made goes again.
                let _ = self
                    .records
                    .remove_record(self.kinds.channel, lease, by_channel.as_str());
            }
            return Err(e.into());
        }
        // The binding installs or refreshes the peer's permission too.
        self.permit(lease, peer.ip())
    }

    /// Holds `port` for the reservation `token` (EVEN-PORT R=1).
    pub fn reserve(&self, token: u64, port: u16) -> Result<(), Refusal> {
        let key = Key::new(b'v').token(token);
        self.records.heartbeat(
            key.as_str(),
            self.reservation_lifetime,
            Some(&port.to_be_bytes()),
        )?;
        Ok(())
    }

    /// Takes the port held for `token`, once: a second take, or one after
    /// the reservation expired, finds nothing.
    pub fn take_reservation(&self, token: u64) -> Option<u16> {
        let key = Key::new(b'v').token(token);
        let port = self
            .records
            .read_presence(key.as_str(), |attrs| {
                Some(u16::from_be_bytes(attrs.get(..2)?.try_into().ok()?))
            })
            .ok()??;
        // `leave` succeeds for one caller only: the token is used up.
        self.records.leave(key.as_str()).ok()?;
        Some(port)
    }

    /// Whether the reservation `token` is still held (not expired, not
    /// taken).
    pub fn reservation_held(&self, token: u64) -> bool {
        let key = Key::new(b'v').token(token);
        self.records.read_presence(key.as_str(), |_| ()).is_ok()
    }

    /// Whether `member` names a reservation, and its token.
    pub fn reservation_token(member: &str) -> Option<u64> {
        let rest = member.strip_prefix('v')?;
        (rest.len() == 16).then_some(())?;
        u64::from_str_radix(rest, 16).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_round_trip_through_attributes() {
        for addr in ["192.0.2.7:3478", "[2001:db8::1]:65535"] {
            let addr: SocketAddr = addr.parse().unwrap();
            let mut bytes = Vec::new();
            encode(addr, &mut bytes);
            bytes.push(0xAA);
            let (back, used) = decode(&bytes).unwrap();
            assert_eq!(back, addr);
            assert_eq!(bytes[used], 0xAA);
        }
        assert_eq!(decode(&[4, 1, 2]), None);
        assert_eq!(decode(&[9; 20]), None);
    }

    #[test]
    fn keys_have_fixed_widths() {
        let relayed: SocketAddr = "255.255.255.255:65535".parse().unwrap();
        let peer: SocketAddr = "1.2.3.4:5".parse().unwrap();
        // A tag, 8 hex digits an IPv4 address, 4 a port.
        let relayed_key = Key::new(b'r').addr(relayed);
        assert_eq!(relayed_key.as_str(), "rffffffffffff");
        // A record's name has no tag: its kind says what it is.
        let permission = Key::name().ip(peer.ip());
        assert_eq!(permission.as_str(), "01020304");
        let by_peer = Key::name().addr(peer);
        assert_eq!(by_peer.as_str(), "010203040005");
        let channel = Key::name().port(0x4001);
        assert_eq!(channel.as_str(), "4001");
    }

    #[test]
    fn a_reservation_key_names_its_token() {
        let key = Key::new(b'v').token(0x1234);
        assert_eq!(State::reservation_token(key.as_str()), Some(0x1234));
        assert_eq!(State::reservation_token("p0000"), None);
        let v6: SocketAddr = "[ffff::ffff]:65535".parse().unwrap();
        assert_eq!(Key::new(b'b').addr(v6).addr(v6).as_str().len(), 73);
    }
}
