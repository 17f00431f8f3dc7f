//! A UDP game protocol with no I/O in it, after netcode.io and renet.
//!
//! The caller owns the sockets and the clock: it hands every datagram it
//! receives to [`Server::process_packet`] or [`Client::process_packet`], asks
//! for packets to send, and calls `update` with the time. Everything here is
//! therefore testable in memory (see [`conditioner`] for loss, duplication,
//! reordering and latency).
//!
//! What a packet promises:
//! - **Join only with a connect token** ([`token`]) signed by a secret the
//!   server shares with whatever issues tokens (a login service; in aggro, the
//!   swarm). The token names the client and its expiry; the session key is
//!   derived from it, so only the token's holder can speak for that client.
//! - **Every packet after the handshake is authenticated** with the session key
//!   (a 64-bit SipHash-2-4 tag over the whole packet, direction included) and
//!   carries a sequence number checked against a replay window. Forged,
//!   replayed, misaddressed and malformed packets are dropped and counted by
//!   reason ([`DropReason`]), never answered.
//! - An **unreliable** payload per packet (snapshots, movement), never resent,
//!   and a **reliable** channel (RPCs, chat) with acks, resends, in-order
//!   exactly-once delivery, a bounded send queue and fragmentation of messages
//!   larger than a packet.
//!
//! # Layout
//! - [`token`]: connect tokens and session keys.
//! - [`wire`]: packet kinds, headers, tags; the only code that reads bytes.
//! - [`window`]: the received-sequence window (replay checks and acks).
//! - [`reliable`]: the reliable channel's sender and receiver.
//! - [`connection`]: one authenticated peer: sequence, acks, channels, counters.
//! - [`drops`]: why a datagram was dropped, counted.
//! - [`server`] and [`client`]: the handshake and the session table.
//! - [`conditioner`]: a link conditioner for tests and experiments.
//!
//! The format is described in the repository's `docs/arena-protocol.md`.

pub mod client;
pub mod conditioner;
pub mod connection;
pub mod drops;
pub mod reliable;
pub mod server;
pub mod token;
pub mod window;
pub mod wire;

pub use client::{Client, ClientEvent, ClientState};
pub use connection::{ConnStats, Connection, SendError};
pub use drops::{DropReason, Drops};
pub use server::{DenyReason, Server, ServerConfig, ServerEvent, ServerStats};
pub use token::{ConnectToken, Secret, SessionKey, TokenError};

/// The largest datagram either side sends or accepts.
pub const MTU: usize = 1200;
