//! One bot's connection as the transport holds it: a TCP stream that counts
//! its bytes, and the stage it is at (an HTTP call, connecting, the WebSocket
//! handshake, open).

use mio::net::TcpStream;
use std::io::{self, Read, Write};
use tungstenite::WebSocket;
use tungstenite::handshake::MidHandshake;
use tungstenite::handshake::client::ClientHandshake;

/// A TCP stream that counts its bytes, and knows when it was drained.
#[derive(Debug)]
pub(super) struct Counted {
    pub(super) stream: TcpStream,
    pub(super) read: u64,
    pub(super) written: u64,
    /// The last read came back short: the socket held no more, so the next read would only say
    /// "would block" — it says so without the system call (half of all reads otherwise). Data that
    /// arrives later raises a new edge on the epoll set, and the socket is read again.
    pub(super) drained: bool,
    /// The peer has closed its side (or the socket failed): reads go on to the end, no shortcut, since
    /// no further edge would come.
    pub(super) closing: bool,
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if std::mem::take(&mut self.drained) {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = self.stream.read(buf)?;
        self.read += n as u64;
        self.drained = !self.closing && n > 0 && n < buf.len();
        Ok(n)
    }
}

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.stream.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}

impl Counted {
    /// A fresh stream.
    pub(super) fn new(stream: TcpStream) -> Self {
        Self { stream, read: 0, written: 0, drained: false, closing: false }
    }
}

/// An HTTP/1.0 call: the request goes out, the answer is read to the end of the stream.
#[derive(Debug)]
pub(super) struct HttpCall {
    pub(super) stream: Counted,
    pub(super) request: Vec<u8>,
    pub(super) sent: usize,
    pub(super) answer: Vec<u8>,
}

/// One bot's connection.
#[derive(Debug, Default)]
pub(super) enum Link {
    #[default]
    Idle,
    Http(HttpCall),
    /// TCP connecting; the WebSocket handshake for `path` starts once it is writable.
    Connecting { stream: Counted, path: String },
    Handshake(MidHandshake<ClientHandshake<Counted>>),
    Open(WebSocket<Counted>),
}

impl Link {
    pub(super) fn stream(&self) -> Option<&Counted> {
        match self {
            Link::Idle => None,
            Link::Http(h) => Some(&h.stream),
            Link::Connecting { stream, .. } => Some(stream),
            Link::Handshake(m) => Some(m.get_ref().get_ref()),
            Link::Open(ws) => Some(ws.get_ref()),
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
            Link::Http(h) => &mut h.stream,
            Link::Connecting { stream, .. } => stream,
            Link::Handshake(m) => m.get_mut().get_mut(),
            Link::Open(ws) => ws.get_mut(),
        };
        stream.drained = false;
        stream.closing |= closing;
    }
}
