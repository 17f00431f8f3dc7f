//! The client side: present the token until accepted, then one [`Connection`].

use crate::connection::{Connection, Opened};
use crate::drops::{DropReason, Drops};
use crate::server::DenyReason;
use crate::token::{SessionKey, TOKEN_BYTES};
use crate::wire::{self, ACCEPT, DENIED, Reader};

/// How often a connecting client repeats its request.
pub const REQUEST_EVERY_US: u64 = 100_000;

/// Where a client is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientState {
    /// Sending connect requests.
    Connecting,
    /// Accepted into a slot.
    Connected,
    /// Turned away.
    Denied(DenyReason),
    /// The server said goodbye or went silent.
    Disconnected,
}

/// What an accepted datagram meant.
#[derive(Debug)]
pub enum ClientEvent<'p> {
    /// The server accepted us.
    Connected { slot: u32 },
    /// A data packet's unreliable payload.
    Data(&'p [u8]),
    /// The server refused us.
    Denied(DenyReason),
    /// The server ended the session.
    Disconnected,
}

/// One client.
#[derive(Debug)]
pub struct Client {
    token: [u8; TOKEN_BYTES],
    client_id: u64,
    key: SessionKey,
    state: ClientState,
    conn: Connection,
    last_request_us: Option<u64>,
    timeout_us: u64,
    drops: Drops,
}

impl Client {
    /// A client that will present `token` (from the issuer, with its `key`).
    pub fn new(token: [u8; TOKEN_BYTES], key: SessionKey, now_us: u64) -> Self {
        let client_id = u64::from_le_bytes(token[..8].try_into().expect("8 bytes"));
        Self {
            token,
            client_id,
            key,
            state: ClientState::Connecting,
            conn: Connection::new(key, u32::MAX, false, now_us, 1024),
            last_request_us: None,
            timeout_us: 5_000_000,
            drops: Drops::default(),
        }
    }

    /// The id the token names.
    pub fn client_id(&self) -> u64 {
        self.client_id
    }

    /// Where the client is.
    pub fn state(&self) -> ClientState {
        self.state
    }

    /// Dropped datagrams by reason.
    pub fn drops(&self) -> Drops {
        self.drops
    }

    /// The connection, once connected.
    pub fn connection(&mut self) -> Option<&mut Connection> {
        (self.state == ClientState::Connected).then_some(&mut self.conn)
    }

    /// While connecting, writes a connect request into `out` when one is due.
    pub fn write_request(&mut self, now_us: u64, out: &mut Vec<u8>) -> bool {
        let due = self.state == ClientState::Connecting && self.last_request_us.is_none_or(|t| now_us.saturating_sub(t) >= REQUEST_EVERY_US);
        if due {
            wire::write_request(out, &self.token, &self.key);
            self.last_request_us = Some(now_us);
        }
        due
    }

    /// Takes one datagram from the server.
    pub fn process_packet<'p>(&mut self, now_us: u64, packet: &'p [u8]) -> Result<ClientEvent<'p>, DropReason> {
        let r = self.dispatch(now_us, packet);
        if let Err(reason) = r {
            self.drops.count(reason);
        }
        r
    }

    fn dispatch<'p>(&mut self, now_us: u64, packet: &'p [u8]) -> Result<ClientEvent<'p>, DropReason> {
        if packet.len() > crate::MTU {
            return Err(DropReason::Malformed);
        }
        let h = wire::read_header(packet).ok_or(DropReason::Malformed)?;
        let connected = self.state == ClientState::Connected;
        if connected && h.slot != self.conn.slot() {
            return Err(DropReason::UnknownSlot);
        }
        if !matches!(self.state, ClientState::Connecting | ClientState::Connected) {
            return Err(DropReason::Unexpected);
        }
        match self.conn.open(now_us, h, packet)? {
            Opened::Data(payload) if connected => Ok(ClientEvent::Data(payload)),
            Opened::Disconnect if connected => {
                self.state = ClientState::Disconnected;
                Ok(ClientEvent::Disconnected)
            }
            Opened::Other(ACCEPT, body) if !connected => {
                if Reader::new(body).u64() != Some(self.client_id) {
                    return Err(DropReason::Malformed);
                }
                self.conn.set_slot(h.slot);
                self.state = ClientState::Connected;
                Ok(ClientEvent::Connected { slot: h.slot })
            }
            Opened::Other(DENIED, body) if !connected => {
                let reason = body.first().copied().and_then(DenyReason::from_byte).ok_or(DropReason::Malformed)?;
                self.state = ClientState::Denied(reason);
                Ok(ClientEvent::Denied(reason))
            }
            _ => Err(DropReason::Unexpected),
        }
    }

    /// Marks the client disconnected when the server has been silent for 5 s; true if it just happened.
    pub fn update(&mut self, now_us: u64) -> bool {
        let silent = now_us.saturating_sub(self.conn.last_received_us()) > self.timeout_us;
        if self.state == ClientState::Connected && silent {
            self.state = ClientState::Disconnected;
            return true;
        }
        false
    }
}

/// The (slot, client id) an accept packet claims, unauthenticated: lets a process that shares one
/// socket among many clients find which client to hand the packet to.
pub fn peek_accept(packet: &[u8]) -> Option<(u32, u64)> {
    let h = wire::read_header(packet)?;
    (h.kind == ACCEPT).then_some(())?;
    Some((h.slot, Reader::new(wire::body(packet)).u64()?))
}

/// The client id a denied packet names (after its reason byte), unauthenticated: as [`peek_accept`],
/// for a process whose clients share one socket. `None` for another kind, or a server's refusal that
/// names no client (before 2026-11-29).
pub fn peek_denied(packet: &[u8]) -> Option<u64> {
    let h = wire::read_header(packet)?;
    (h.kind == DENIED).then_some(())?;
    let mut r = Reader::new(wire::body(packet));
    r.u8()?;
    r.u64()
}
