//! A TURN relay (RFC 8656 over UDP, with what RFC 5766 clients still
//! use) whose state lives in relaystore: allocations are leases,
//! permissions and channel bindings are records of kinds the relay declares,
//! under them,
//! the per-user allocation quota is the store's per-holder quota, and every
//! datagram's permission is checked against the store. See `README.md`.

mod auth;
mod batch;
pub mod config;
mod proto;
pub mod records;
pub mod server;
pub mod state;

pub use config::{Config, ConfigError};
pub use records::Records;
pub use server::{Counters, Handle, Relay};
