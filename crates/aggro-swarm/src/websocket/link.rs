//! One bot's connections as the transport holds them: its WebSocket at the
//! stage it is at (connecting, the handshake, open), and its HTTP connection.

use super::counted::Counted;
use super::tls::Wire;
use tungstenite::WebSocket;
use tungstenite::handshake::MidHandshake;
use tungstenite::handshake::client::ClientHandshake;

/// A bot's HTTP/1.1 connection: one request at a time, the connection kept for the next when the
/// server allows.
#[derive(Debug, Default)]
pub(super) struct Call {
    pub(super) stream: Option<Wire>,
    /// The request going out, and how much of it went.
    pub(super) request: Vec<u8>,
    pub(super) sent: usize,
    /// The answer so far.
    pub(super) answer: Vec<u8>,
    /// A request waits for its answer.
    pub(super) busy: bool,
    /// The request went on a connection kept from an earlier one: if that turns out closed before any
    /// answer came, the request goes again on a new connection.
    pub(super) reused: bool,
}

/// One bot's connection.
#[derive(Debug, Default)]
pub(super) enum Link {
    #[default]
    Idle,
    /// TCP connecting; the WebSocket handshake for `path` (with `headers`) starts once it is writable.
    Connecting {
        stream: Counted,
        path: String,
        headers: Vec<(String, String)>,
    },
    Handshake(MidHandshake<ClientHandshake<Wire>>),
    Open(WebSocket<Wire>),
}

impl Link {
    pub(super) fn stream(&self) -> Option<&Counted> {
        match self {
            Link::Idle => None,
            Link::Connecting { stream, .. } => Some(stream),
            Link::Handshake(m) => Some(m.get_ref().get_ref().counted()),
            Link::Open(ws) => Some(ws.get_ref().counted()),
        }
    }

    /// Bytes (read, written) on its stream.
    pub(super) fn counts(&self) -> (u64, u64) {
        self.stream().map_or((0, 0), |c| (c.read, c.written))
    }

    /// The socket reported readiness (`closing`: its peer closed, or it failed): the next read asks the kernel.
    pub(super) fn rearm(&mut self, closing: bool) {
        let stream = match self {
            Link::Idle => return,
            Link::Connecting { stream, .. } => stream,
            Link::Handshake(m) => m.get_mut().get_mut().counted_mut(),
            Link::Open(ws) => ws.get_mut().counted_mut(),
        };
        stream.drained = false;
        stream.closing |= closing;
    }
}
