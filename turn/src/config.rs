//! The relay's settings: where it listens, where it relays from, who may
//! use it, how much each may hold and for how long. Every limit is named
//! here with its unit; [`Config::from_args`] reads them from the command
//! line and refuses a bad one with [`ConfigError`].

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

/// The relay's settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// The UDP address clients send to (`--listen`, default `0.0.0.0:3478`).
    pub listen: SocketAddr,
    /// The address relayed sockets bind to and that XOR-RELAYED-ADDRESS
    /// reports (`--relay-ip`, default `127.0.0.1`).
    pub relay_ip: IpAddr,
    /// The lowest relayed port, inclusive (`--min-port`, default 49152).
    pub min_port: u16,
    /// The highest relayed port, inclusive (`--max-port`, default 65535).
    pub max_port: u16,
    /// The realm of the long-term credentials (`--realm`).
    pub realm: String,
    /// The users and their passwords (`--user name:password`, repeatable).
    pub users: Vec<(String, String)>,
    /// Allocations one user may hold at once, across every client
    /// (`--user-quota`, default 10); one more is refused with 486.
    pub allocations_per_user: u64,
    /// Allocations the relay holds at once (`--allocations-max`, default
    /// 10,000); one more is refused with 508.
    pub allocations_max: u64,
    /// Permissions and channel bindings one allocation holds at once
    /// (`--children-max`, default 64: a channel binding counts twice, once
    /// per direction); one more is refused with 508.
    pub children_per_allocation: usize,
    /// An allocation's lifetime when the client asks for less or nothing
    /// (`--lifetime-default`, seconds, default 600).
    pub lifetime_default: Duration,
    /// The longest lifetime granted (`--lifetime-max`, seconds, default 3600).
    pub lifetime_max: Duration,
    /// A permission's lifetime (RFC 8656: 300 s).
    pub permission_lifetime: Duration,
    /// A channel binding's lifetime (RFC 8656: 600 s).
    pub channel_lifetime: Duration,
    /// How long a nonce is accepted (`--nonce-lifetime`, seconds, default
    /// 600); after that a request gets 438 and a fresh nonce.
    pub nonce_lifetime: Duration,
    /// How long a port reserved by EVEN-PORT (R=1) is held for its token
    /// (RFC 8656: about 30 s).
    pub reservation_lifetime: Duration,
    /// The client socket's receive and send buffers, in bytes
    /// (`--socket-buffer`, default 4 MiB): the burst it absorbs while the
    /// relay's thread is not running. The kernel caps it at
    /// `net.core.rmem_max` and `net.core.wmem_max`.
    pub socket_buffer: usize,
    /// Redis URLs (`--redis URL`, repeatable): empty keeps the records in
    /// this process; one is a standalone server, several are a Cluster's
    /// seeds. Relays sharing a server and namespace share the per-user
    /// quota.
    pub redis: Vec<String>,
    /// The key prefix on Redis (`--redis-namespace`, default
    /// `relaystore-turn`).
    pub redis_namespace: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: SocketAddr::from((Ipv4Addr::UNSPECIFIED, 3478)),
            relay_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            min_port: 49152,
            max_port: 65535,
            realm: "relaystore".to_string(),
            users: Vec::new(),
            allocations_per_user: 10,
            allocations_max: 10_000,
            children_per_allocation: 64,
            lifetime_default: Duration::from_secs(600),
            lifetime_max: Duration::from_secs(3600),
            permission_lifetime: Duration::from_secs(300),
            channel_lifetime: Duration::from_secs(600),
            nonce_lifetime: Duration::from_secs(600),
            reservation_lifetime: Duration::from_secs(30),
            socket_buffer: 4 << 20,
            redis: Vec::new(),
            redis_namespace: "relaystore-turn".to_string(),
        }
    }
}

/// A setting the relay refuses, with the flag it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The flag or setting.
    pub setting: String,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.setting, self.reason)
    }
}

impl std::error::Error for ConfigError {}

fn refuse(setting: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError {
        setting: setting.to_string(),
        reason: reason.into(),
    }
}

/// The command line's usage text.
pub const USAGE: &str = "\
usage: relaystore-turn [options]
  --listen ADDR            UDP address for clients (default 0.0.0.0:3478)
  --relay-ip IP            address of the relayed sockets (default 127.0.0.1)
  --min-port N             lowest relayed port (default 49152)
  --max-port N             highest relayed port (default 65535)
  --realm NAME             realm of the long-term credentials (default relaystore)
  --user NAME:PASSWORD     a user (repeatable; at least one)
  --user-quota N           allocations per user (with --redis: across the relays; default 10; 486 past it)
  --allocations-max N      allocations the relay holds (default 10000; 508 past it)
  --children-max N         permissions + 2 x channels per allocation (default 64)
  --lifetime-default SECS  allocation lifetime when none or less is asked (default 600)
  --lifetime-max SECS      longest allocation lifetime (default 3600)
  --nonce-lifetime SECS    how long a nonce is accepted (default 600)
  --socket-buffer BYTES    client socket's receive and send buffers (default 4194304)
  --redis URL              keep the records on Redis, shared with other relays
                           (repeat for a Cluster's seeds; default: in this process)
  --redis-namespace NAME   key prefix on Redis (default relaystore-turn)";

impl Config {
    /// Reads the settings from command-line arguments (without the program
    /// name), over the defaults.
    pub fn from_args<I: IntoIterator<Item = String>>(args: I) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            let mut value = || args.next().ok_or_else(|| refuse(&flag, "needs a value"));
            match flag.as_str() {
                "--listen" => config.listen = parse(&flag, &value()?)?,
                "--relay-ip" => config.relay_ip = parse(&flag, &value()?)?,
                "--min-port" => config.min_port = parse(&flag, &value()?)?,
                "--max-port" => config.max_port = parse(&flag, &value()?)?,
                "--realm" => config.realm = value()?,
                "--user" => {
                    let pair = value()?;
                    let (name, password) = pair
                        .split_once(':')
                        .ok_or_else(|| refuse(&flag, "expected NAME:PASSWORD"))?;
                    config.users.push((name.to_string(), password.to_string()));
                }
                "--user-quota" => config.allocations_per_user = parse(&flag, &value()?)?,
                "--allocations-max" => config.allocations_max = parse(&flag, &value()?)?,
                "--children-max" => config.children_per_allocation = parse(&flag, &value()?)?,
                "--lifetime-default" => config.lifetime_default = seconds(&flag, &value()?)?,
                "--lifetime-max" => config.lifetime_max = seconds(&flag, &value()?)?,
                "--nonce-lifetime" => config.nonce_lifetime = seconds(&flag, &value()?)?,
                "--socket-buffer" => config.socket_buffer = parse(&flag, &value()?)?,
                "--redis" => config.redis.push(value()?),
                "--redis-namespace" => config.redis_namespace = value()?,
                _ => return Err(refuse(&flag, "unknown option (see --help)")),
            }
        }
        config.validate()?;
        Ok(config)
    }

    /// Checks the settings against each other.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.users.is_empty() {
            return Err(refuse("--user", "at least one user is needed"));
        }
        for (name, _) in &self.users {
            if name.is_empty() || name.len() > 128 {
                return Err(refuse("--user", format!("{name:?}: 1 to 128 bytes")));
            }
        }
        if self.realm.is_empty() || self.realm.len() > 128 {
            return Err(refuse("--realm", "1 to 128 bytes"));
        }
        if self.min_port == 0 || self.min_port > self.max_port {
            return Err(refuse(
                "--min-port",
                format!(
                    "must be positive and at most --max-port (min-port = {}, max-port = {})",
                    self.min_port, self.max_port
                ),
            ));
        }
        if self.listen.is_ipv4() != self.relay_ip.is_ipv4() {
            return Err(refuse(
                "--relay-ip",
                "must be of the listen address's family (one family per relay)",
            ));
        }
        for (setting, n) in [
            ("--user-quota", self.allocations_per_user),
            ("--allocations-max", self.allocations_max),
            ("--children-max", self.children_per_allocation as u64),
        ] {
            if n == 0 {
                return Err(refuse(setting, "must be positive"));
            }
        }
        if self.lifetime_default.is_zero() || self.lifetime_default > self.lifetime_max {
            return Err(refuse(
                "--lifetime-default",
                format!(
                    "must be positive and at most --lifetime-max ({}s, {}s)",
                    self.lifetime_default.as_secs(),
                    self.lifetime_max.as_secs()
                ),
            ));
        }
        if self.nonce_lifetime.is_zero() {
            return Err(refuse("--nonce-lifetime", "must be positive"));
        }
        Ok(())
    }

    /// The shortest lifetime any record of the relay gets (the store's
    /// `ttl_min`).
    pub(crate) fn ttl_min(&self) -> Duration {
        [
            self.lifetime_default,
            self.permission_lifetime,
            self.channel_lifetime,
            self.reservation_lifetime,
        ]
        .into_iter()
        .min()
        .unwrap_or(self.lifetime_default)
    }

    /// The longest (the store's `ttl_max`).
    pub(crate) fn ttl_max(&self) -> Duration {
        [
            self.lifetime_max,
            self.permission_lifetime,
            self.channel_lifetime,
            self.reservation_lifetime,
        ]
        .into_iter()
        .max()
        .unwrap_or(self.lifetime_max)
    }
}

fn parse<T: std::str::FromStr>(flag: &str, text: &str) -> Result<T, ConfigError>
where
    T::Err: fmt::Display,
{
    text.parse()
        .map_err(|e| refuse(flag, format!("{text:?}: {e}")))
}

fn seconds(flag: &str, text: &str) -> Result<Duration, ConfigError> {
    parse::<u64>(flag, text).map(Duration::from_secs)
}
