//! The server side: connect requests, the session table, timeouts.

use crate::connection::{Connection, Opened};
use crate::drops::{DropReason, Drops};
use crate::token::{ConnectToken, Secret, TokenError};
use crate::wire::{self, ACCEPT, DENIED, Header};
use std::collections::HashMap;
use std::hash::Hash;

/// Why the server turned a valid token away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DenyReason {
    /// The server holds `max_clients` sessions.
    Full = 1,
}

impl DenyReason {
    pub(crate) fn from_byte(b: u8) -> Option<Self> {
        (b == 1).then_some(DenyReason::Full)
    }
}

/// How a server behaves.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The secret tokens are signed with.
    pub secret: Secret,
    /// Sessions at most (no built-in cap beyond this number).
    pub max_clients: usize,
    /// A session silent this long is dropped.
    pub timeout_us: u64,
    /// Unacked reliable slices per session before sends are refused.
    pub max_queued_slices: usize,
}

impl ServerConfig {
    /// Defaults: a million sessions, 5 s timeout, 1,024 queued slices per session.
    pub fn new(secret: Secret) -> Self {
        Self { secret, max_clients: 1 << 20, timeout_us: 5_000_000, max_queued_slices: 1024 }
    }
}

/// The server's own counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Datagrams handed to [`Server::process_packet`].
    pub packets_in: u64,
    /// Their bytes.
    pub bytes_in: u64,
    /// Sessions opened.
    pub connects: u64,
    /// Sessions closed (goodbye, timeout or by the server).
    pub disconnects: u64,
    /// Dropped datagrams by reason.
    pub drops: Drops,
}

/// What an accepted datagram meant.
#[derive(Debug)]
pub enum ServerEvent<'p> {
    /// A new session (an accept is waiting in [`Server::drain_handshakes`]).
    Connected { slot: u32, client_id: u64 },
    /// A session's data packet, with its unreliable payload.
    Data { slot: u32, payload: &'p [u8] },
    /// A session said goodbye.
    Disconnected { slot: u32, client_id: u64 },
    /// Handled inside (a repeated connect request was answered again).
    Handled,
}

struct Session<A> {
    addr: A,
    token: ConnectToken,
    conn: Connection,
}

/// The session table of one server.
pub struct Server<A> {
    cfg: ServerConfig,
    sessions: Vec<Option<Session<A>>>,
    free: Vec<u32>,
    /// Tokens in use, each bound to the slot (and so the address) that first presented it, until it expires.
    bound: HashMap<ConnectToken, u32>,
    handshakes: Vec<(A, Vec<u8>)>,
    stats: ServerStats,
}

impl<A> std::fmt::Debug for Server<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("sessions", &(self.sessions.len() - self.free.len())).field("stats", &self.stats).finish()
    }
}

impl<A: Copy + Eq + Hash> Server<A> {
    /// An empty server.
    pub fn new(cfg: ServerConfig) -> Self {
        Self { cfg, sessions: Vec::new(), free: Vec::new(), bound: HashMap::new(), handshakes: Vec::new(), stats: ServerStats::default() }
    }

    /// The counters.
    pub fn stats(&self) -> ServerStats {
        self.stats
    }

    /// Open sessions.
    pub fn sessions(&self) -> usize {
        self.sessions.len() - self.free.len()
    }

    /// A session's address and connection.
    pub fn session(&mut self, slot: u32) -> Option<(A, &mut Connection)> {
        let s = self.sessions.get_mut(slot as usize)?.as_mut()?;
        Some((s.addr, &mut s.conn))
    }

    /// Takes one datagram from `from`. `now_us` is the caller's monotonic clock, `unix_ms` the wall clock tokens expire by.
    pub fn process_packet<'p>(&mut self, now_us: u64, unix_ms: u64, from: A, packet: &'p [u8]) -> Result<ServerEvent<'p>, DropReason> {
        self.stats.packets_in += 1;
        self.stats.bytes_in += packet.len() as u64;
        let r = self.dispatch(now_us, unix_ms, from, packet);
        if let Err(reason) = r {
            self.stats.drops.count(reason);
        }
        r
    }

    fn dispatch<'p>(&mut self, now_us: u64, unix_ms: u64, from: A, packet: &'p [u8]) -> Result<ServerEvent<'p>, DropReason> {
        if packet.len() > crate::MTU {
            return Err(DropReason::Malformed);
        }
        if packet.first() == Some(&wire::REQUEST) {
            return self.connect(now_us, unix_ms, from, packet);
        }
        let h = wire::read_header(packet).ok_or(DropReason::Malformed)?;
        let s = self.sessions.get_mut(h.slot as usize).and_then(Option::as_mut).ok_or(DropReason::UnknownSlot)?;
        if s.addr != from {
            return Err(DropReason::WrongAddress);
        }
        match s.conn.open(now_us, h, packet)? {
            Opened::Data(payload) => Ok(ServerEvent::Data { slot: h.slot, payload }),
            Opened::Disconnect => {
                let client_id = s.token.client_id;
                self.close(h.slot);
                Ok(ServerEvent::Disconnected { slot: h.slot, client_id })
            }
            Opened::Other(..) => Err(DropReason::Unexpected),
        }
    }

    fn connect(&mut self, now_us: u64, unix_ms: u64, from: A, packet: &[u8]) -> Result<ServerEvent<'static>, DropReason> {
        let token_bytes = wire::read_request(packet).ok_or(DropReason::Malformed)?;
        let (token, key) = ConnectToken::open(&self.cfg.secret, token_bytes, unix_ms).map_err(|e| match e {
            TokenError::Expired => DropReason::ExpiredToken,
            _ => DropReason::BadToken,
        })?;
        if !wire::verify(&key, packet) {
            return Err(DropReason::BadTag);
        }
        if let Some(&slot) = self.bound.get(&token) {
            let same = self.sessions[slot as usize].as_ref().is_some_and(|s| s.token == token && s.addr == from);
            if !same {
                return Err(DropReason::TokenReused);
            }
            self.write_accept(now_us, slot);
            return Ok(ServerEvent::Handled);
        }
        if self.sessions() >= self.cfg.max_clients {
            // A refusal is one sealed packet; no connection is made for it. It names the client (as an
            // accept does), so a process whose clients share one socket can hand it to the right one.
            let mut out = Vec::with_capacity(wire::HEADER + 9 + wire::TAG);
            wire::write_header(&mut out, Header { kind: DENIED, slot: u32::MAX, seq: 1 });
            out.push(DenyReason::Full as u8);
            out.extend_from_slice(&token.client_id.to_le_bytes());
            wire::seal(&key, &mut out);
            self.handshakes.push((from, out));
            return Ok(ServerEvent::Handled);
        }
        let slot = self.free.pop().unwrap_or_else(|| {
            self.sessions.push(None);
            self.sessions.len() as u32 - 1
        });
        let conn = Connection::new(key, slot, true, now_us, self.cfg.max_queued_slices);
        self.sessions[slot as usize] = Some(Session { addr: from, token, conn });
        self.bound.insert(token, slot);
        self.stats.connects += 1;
        self.write_accept(now_us, slot);
        if self.bound.len() > 2 * self.sessions() + 1024 {
            self.bound.retain(|t, _| t.expires_at_ms >= unix_ms);
        }
        Ok(ServerEvent::Connected { slot, client_id: token.client_id })
    }

    /// Queues the accept for a session: its slot in the header, its client id in the body.
    fn write_accept(&mut self, now_us: u64, slot: u32) {
        let s = self.sessions[slot as usize].as_mut().expect("live slot");
        let mut out = Vec::with_capacity(32);
        s.conn.write_sealed(now_us, ACCEPT, &s.token.client_id.to_le_bytes(), &mut out);
        self.handshakes.push((s.addr, out));
    }

    /// Handshake replies (accepts, refusals) to send.
    pub fn drain_handshakes(&mut self) -> std::vec::Drain<'_, (A, Vec<u8>)> {
        self.handshakes.drain(..)
    }

    /// Closes sessions silent for longer than the timeout; returns (slot, client id) of each.
    pub fn update(&mut self, now_us: u64) -> Vec<(u32, u64)> {
        let timeout = self.cfg.timeout_us;
        let gone: Vec<(u32, u64)> = self
            .sessions
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|s| (i as u32, s)))
            .filter(|(_, s)| now_us.saturating_sub(s.conn.last_received_us()) > timeout)
            .map(|(i, s)| (i, s.token.client_id))
            .collect();
        for (slot, _) in &gone {
            self.close(*slot);
        }
        gone
    }

    /// Ends a session from the server's side, writing a goodbye into `out`; returns its address.
    pub fn disconnect(&mut self, now_us: u64, slot: u32, out: &mut Vec<u8>) -> Option<A> {
        let (addr, conn) = self.session(slot)?;
        conn.write_disconnect(now_us, out);
        self.close(slot);
        Some(addr)
    }

    fn close(&mut self, slot: u32) {
        if self.sessions[slot as usize].take().is_some() {
            self.free.push(slot);
            self.stats.disconnects += 1;
        }
    }
}
