//! One WebSocket per bot, thousands on one thread: non-blocking TCP sockets in
//! one epoll set waited on to the nanosecond (`readiness`), the WebSocket protocol by [`tungstenite`] (frames,
//! masking, pings, close), and beside each an HTTP/1.1 connection (a game
//! server's login, matchmaking or shop: Colyseus reserves a seat over HTTP
//! before the socket opens), with the cookies the server set. A bot asks for
//! [`Request`]s and is handed [`WsEvent`]s.

mod counted;
mod http;
mod link;
mod readiness;
pub mod tls;

use counted::Counted;
pub use http::HttpRequest;
use http::{Answer, parse_answer};
use link::{Call, Link};
use readiness::{Readiness, Ready};
use tls::{Tls, Wire};

use super::SwarmConfig;
use super::network::Network;
use super::transport::Transport;
use aggro_arena::arrival::Clocks;
use aggro_arena::procstat::ProcessGauges;
use aggro_arena::udp::Traffic;
use mio::net::TcpStream;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::time::Duration;
use tungstenite::handshake::client::ClientHandshake;
use tungstenite::protocol::WebSocketConfig;
use tungstenite::{HandshakeError, Message, WebSocket};

/// What a bot asks of its connection.
#[derive(Debug)]
pub enum Request {
    /// An HTTP request to the server on the bot's HTTP connection (one at a time); its answer comes
    /// back as [`WsEvent::Response`].
    Http(HttpRequest),
    /// Opens a WebSocket to `path` (any open one is dropped), with `headers` on its handshake (and the
    /// cookies the server set); [`WsEvent::Opened`] follows.
    Open { path: String, headers: Vec<(String, String)> },
    /// A binary message on the open WebSocket.
    Send(Vec<u8>),
    /// A text message on the open WebSocket.
    SendText(String),
    /// Closes the WebSocket politely, drops the HTTP connection and forgets the cookies.
    Close,
}

/// The requests a bot wrote in one call.
#[derive(Debug, Default)]
pub struct Requests(pub Vec<Request>);

/// What the transport hands a bot.
#[derive(Clone, Copy, Debug)]
pub enum WsEvent<'a> {
    /// The answer to a [`Request::Http`]: its status and body.
    Response { status: u16, body: &'a [u8] },
    /// The WebSocket is open.
    Opened,
    /// A binary message on the WebSocket.
    Message(&'a [u8]),
    /// A text message on the WebSocket.
    Text(&'a str),
    /// The WebSocket ended: closed by the server, or failed (`why` says how).
    Closed { why: &'a str },
    /// The HTTP request failed before a whole answer came (`why` says how).
    HttpFailed { why: &'a str },
}

/// When an arrival reached its bot: the kernel's receive stamp (CLOCK_REALTIME ns, 0 unknown), or, once a
/// network held it, when it let it go (the shared clock, µs).
#[derive(Clone, Copy, Debug)]
enum When {
    Stamp(u64),
    Shared(u64),
}

/// The random stream of a run's network (a bot's own stream is numbered by its client id, which never
/// comes this far).
const NETWORK_DRAWS: u64 = u64::MAX - 1;

#[derive(Clone, Copy, Debug)]
enum Kind {
    Response(u16),
    Opened,
    Message,
    Text,
    Closed,
    HttpFailed,
}

/// Every bot's WebSocket (or HTTP call), on one epoll set.
#[derive(Debug)]
pub struct WebSockets {
    server: SocketAddr,
    /// The server's name in requests (its TLS name, else its address).
    host: String,
    /// TLS under every connection (`wss://`, `https://`).
    tls: Option<Tls>,
    readiness: Readiness,
    /// Each bot's WebSocket, its HTTP connection and the cookies its server set (`name=value; …`).
    links: Vec<Link>,
    calls: Vec<Call>,
    cookies: Vec<String>,
    /// Sockets that reported readiness (their token: bot × 2, + 1 for the HTTP connection), to drive on
    /// the next receive.
    pending: Vec<Ready>,
    /// (bot, kind, start and end in the inbox, when it arrived).
    ready: Vec<(u32, Kind, u32, u32, When)>,
    /// How many of `ready` the last receive handed over (those after came since).
    handed: usize,
    /// `--net`: the requests and arrivals of the bots behind it, held.
    network: Option<Network<Request, (Kind, Vec<u8>)>>,
    /// Turns the kernel's receive stamps into the shared clock; read at each receive.
    clocks: Clocks,
    inbox: Vec<u8>,
    /// Traffic of links already dropped; messages counted as they pass.
    retired: Traffic,
    messages_in: u64,
    messages_out: u64,
    errors: u64,
    /// Connections that retransmitted before the server's first answer (HTTP answer, handshake).
    retried_opens: u64,
    config: WebSocketConfig,
}

impl WebSockets {
    fn push(&mut self, bot: usize, kind: Kind, bytes: &[u8]) {
        self.push_stamped(bot, kind, bytes, 0);
    }

    /// [`push`](Self::push), with when the kernel received it (CLOCK_REALTIME ns; 0 if unknown).
    fn push_stamped(&mut self, bot: usize, kind: Kind, bytes: &[u8], arrived_ns: u64) {
        let start = self.inbox.len() as u32;
        self.inbox.extend_from_slice(bytes);
        self.ready.push((bot as u32, kind, start, self.inbox.len() as u32, When::Stamp(arrived_ns)));
    }

    /// Drops the events the last [`receive`](Transport::receive) handed over, keeping those pushed since
    /// (a request that failed as it was made: the next receive hands them over).
    fn forget_handed(&mut self) {
        let handed = std::mem::take(&mut self.handed);
        if handed >= self.ready.len() {
            self.ready.clear();
            self.inbox.clear();
            return;
        }
        let later = self.ready.split_off(handed);
        self.ready.clear();
        let base = later.first().map_or(self.inbox.len(), |e| e.2 as usize);
        self.inbox.drain(..base);
        let base = base as u32;
        self.ready.extend(later.into_iter().map(|(bot, kind, start, end, when)| (bot, kind, start - base, end - base, when)));
    }

    /// Hands the network what just arrived for the bots behind it, and takes from it what is due.
    fn pass_network(&mut self) {
        let Some(mut net) = self.network.take() else { return };
        let now = aggro_arena::clock::now_us();
        let mut kept = 0;
        for k in 0..self.ready.len() {
            let (bot, kind, start, end, when) = self.ready[k];
            if net.spec.covers(bot as usize) {
                let arrived = match when {
                    When::Stamp(ns) => self.clocks.shared_us(ns).unwrap_or(now),
                    When::Shared(us) => us,
                };
                net.hold_in(bot as usize, arrived, (kind, self.inbox[start as usize..end as usize].to_vec()));
            } else {
                self.ready[kept] = self.ready[k];
                kept += 1;
            }
        }
        self.ready.truncate(kept);
        while let Some((bot, at, (kind, bytes))) = net.inbound.pop_due(now) {
            let start = self.inbox.len() as u32;
            self.inbox.extend_from_slice(&bytes);
            self.ready.push((bot as u32, kind, start, self.inbox.len() as u32, When::Shared(at)));
        }
        self.network = Some(net);
    }

    /// Replaces bot `bot`'s link, keeping the old one's byte counts.
    fn replace(&mut self, bot: usize, link: Link) {
        if let Some(old) = std::mem::replace(&mut self.links[bot], link).stream() {
            self.retire(old);
        }
    }

    /// Keeps the byte counts of a stream about to close.
    fn retire(&mut self, stream: &Counted) {
        self.retired.bytes_in += stream.read;
        self.retired.bytes_out += stream.written;
    }

    /// A new connection to the server, known to the epoll set as `token`.
    fn connect(&mut self, token: usize) -> io::Result<Counted> {
        let stream = TcpStream::connect(self.server)?;
        stream.set_nodelay(true)?;
        self.readiness.register(stream.as_raw_fd(), token)?;
        Ok(Counted::new(stream))
    }

    /// `stream` as the transport speaks on it: with TLS over it, or plain.
    fn wire(&self, stream: Counted) -> io::Result<Wire> {
        match &self.tls {
            Some(tls) => tls.wrap(stream),
            None => Ok(Wire::Plain(stream)),
        }
    }

    /// Ends bot `bot`'s link and tells it why.
    fn fail(&mut self, bot: usize, why: &str) {
        self.replace(bot, Link::Idle);
        self.push(bot, Kind::Closed, why.as_bytes());
    }

    /// Moves bot `bot`'s link on as far as its socket allows, handing what arrives to the ready list.
    fn drive(&mut self, bot: usize) {
        match std::mem::take(&mut self.links[bot]) {
            Link::Idle => {}
            Link::Connecting { stream, path, headers } => match stream.stream.take_error() {
                Ok(None) if stream.stream.peer_addr().is_ok() => self.handshake(bot, stream, &path, headers),
                Ok(None) => self.links[bot] = Link::Connecting { stream, path, headers },
                Ok(Some(e)) | Err(e) => self.fail(bot, &format!("cannot connect to {}: {e}", self.server)),
            },
            Link::Handshake(mid) => self.finish_handshake(bot, mid.handshake()),
            Link::Open(ws) => self.drive_open(bot, ws),
        }
    }

    fn handshake(&mut self, bot: usize, stream: Counted, path: &str, headers: Vec<(String, String)>) {
        use tungstenite::client::IntoClientRequest;
        let url = format!("{}://{}{path}", if self.tls.is_some() { "wss" } else { "ws" }, self.host);
        let mut request = match url.as_str().into_client_request() {
            Ok(r) => r,
            Err(e) => return self.fail(bot, &format!("WebSocket path {path:?}: {e}")),
        };
        let cookies = (!self.cookies[bot].is_empty()).then(|| ("Cookie".to_string(), self.cookies[bot].clone()));
        for (name, value) in headers.into_iter().chain(cookies) {
            match (tungstenite::http::HeaderName::try_from(name.as_str()), tungstenite::http::HeaderValue::try_from(value.as_str())) {
                (Ok(n), Ok(v)) => drop(request.headers_mut().append(n, v)),
                _ => return self.fail(bot, &format!("WebSocket handshake: header {name:?} cannot be sent")),
            }
        }
        let wire = match self.wire(stream) {
            Ok(w) => w,
            Err(e) => return self.fail(bot, &format!("TLS: {e}")),
        };
        let result = tungstenite::client::client_with_config(request, wire, Some(self.config));
        self.finish_handshake(bot, result);
    }

    fn finish_handshake<R>(&mut self, bot: usize, result: Result<(WebSocket<Wire>, R), HandshakeError<ClientHandshake<Wire>>>) {
        match result {
            Ok((ws, _)) => {
                self.retried_opens += ws.get_ref().counted().retransmitted() as u64;
                let answered_ns = ws.get_ref().counted().arrived_ns;
                // Open: read with the others from now on.
                if self.readiness.settle(ws.get_ref().counted().stream.as_raw_fd(), bot * 2).is_err() {
                    self.errors += 1;
                }
                self.links[bot] = Link::Open(ws);
                self.push_stamped(bot, Kind::Opened, &[], answered_ns);
                // Bytes may have come with the handshake's answer.
                self.links[bot].rearm(false);
                self.drive(bot);
            }
            Err(HandshakeError::Interrupted(mid)) => self.links[bot] = Link::Handshake(mid),
            Err(HandshakeError::Failure(e)) => self.fail(bot, &format!("WebSocket handshake: {e}")),
        }
    }

    fn drive_open(&mut self, bot: usize, mut ws: WebSocket<Wire>) {
        loop {
            match ws.read() {
                Ok(Message::Binary(b)) => {
                    self.messages_in += 1;
                    self.push_stamped(bot, Kind::Message, &b, ws.get_ref().counted().arrived_ns);
                }
                Ok(Message::Text(t)) => {
                    self.messages_in += 1;
                    self.push_stamped(bot, Kind::Text, t.as_bytes(), ws.get_ref().counted().arrived_ns);
                }
                // Pings are answered by tungstenite (flushed below); pongs and raw frames say nothing.
                Ok(_) => {}
                Err(tungstenite::Error::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    self.retire(ws.get_ref().counted());
                    let why = match e {
                        tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed => "closed by the server".to_string(),
                        e => format!("WebSocket: {e}"),
                    };
                    self.push(bot, Kind::Closed, why.as_bytes());
                    return;
                }
            }
        }
        let _ = ws.flush();
        self.links[bot] = Link::Open(ws);
    }

    /// Moves bot `bot`'s HTTP request on: sends what is left of it, reads what has come of its answer.
    fn drive_call(&mut self, bot: usize) {
        let mut call = std::mem::take(&mut self.calls[bot]);
        let Some(stream) = &mut call.stream else { return };
        while call.busy && call.sent < call.request.len() {
            match stream.write(&call.request[call.sent..]) {
                Ok(n) => call.sent += n,
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::NotConnected) => break,
                Err(_) if call.reused && call.answer.is_empty() => return self.resend(bot, call),
                Err(e) => return self.call_failed(bot, call, &format!("HTTP request to {}: {e}", self.server)),
            }
        }
        let mut buf = [0u8; 4096];
        let ended = loop {
            match stream.read(&mut buf) {
                Ok(0) => break true,
                Ok(n) => call.answer.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break false,
                Err(_) if call.reused && call.answer.is_empty() => return self.resend(bot, call),
                Err(e) => return self.call_failed(bot, call, &format!("HTTP answer from {}: {e}", self.server)),
            }
        };
        if !call.busy {
            // An idle connection the server closed (or that sent what was never asked): dropped.
            if ended || !call.answer.is_empty() {
                self.drop_call(&mut call);
            }
            self.calls[bot] = call;
            return;
        }
        if ended && call.answer.is_empty() && call.reused {
            return self.resend(bot, call);
        }
        match parse_answer(&call.answer, ended) {
            Ok(Answer::Partial) => self.calls[bot] = call,
            Ok(Answer::Complete { status, body, cookies, close }) => {
                self.retried_opens += call.stream.as_ref().is_some_and(|s| !call.reused && s.counted().retransmitted()) as u64;
                self.keep_cookies(bot, cookies);
                let answered_ns = call.stream.as_ref().map_or(0, |s| s.counted().arrived_ns);
                self.push_stamped(bot, Kind::Response(status), &body, answered_ns);
                call.busy = false;
                call.answer.clear();
                if close || ended {
                    self.drop_call(&mut call);
                }
                self.calls[bot] = call;
            }
            Err(why) => self.call_failed(bot, call, &why),
        }
    }

    /// Keeps the cookies an answer set, replacing those of the same name.
    fn keep_cookies(&mut self, bot: usize, set: Vec<String>) {
        for cookie in set {
            let name = cookie.split('=').next().unwrap_or_default().to_string();
            let jar = &mut self.cookies[bot];
            let mut kept: Vec<&str> = jar.split("; ").filter(|c| !c.is_empty() && c.split('=').next() != Some(&name)).collect();
            kept.push(&cookie);
            *jar = kept.join("; ");
        }
    }

    fn drop_call(&mut self, call: &mut Call) {
        if let Some(stream) = call.stream.take() {
            self.retire(stream.counted());
        }
    }

    /// A new HTTP connection for bot `bot` (TLS over it when the server's is).
    fn call_stream(&mut self, bot: usize) -> io::Result<Wire> {
        let stream = self.connect(bot * 2 + 1)?;
        self.wire(stream)
    }

    fn call_failed(&mut self, bot: usize, mut call: Call, why: &str) {
        self.drop_call(&mut call);
        self.calls[bot] = Call::default();
        self.push(bot, Kind::HttpFailed, why.as_bytes());
    }

    /// The kept connection was closed before the request's answer began: the request goes again on a
    /// new connection.
    fn resend(&mut self, bot: usize, mut call: Call) {
        self.drop_call(&mut call);
        match self.call_stream(bot) {
            Ok(stream) => {
                self.calls[bot] = Call { stream: Some(stream), request: call.request, sent: 0, answer: Vec::new(), busy: true, reused: false };
                self.pending.push(Ready::all(bot * 2 + 1));
            }
            Err(e) => self.call_failed(bot, Call::default(), &format!("cannot connect to {}: {e}", self.server)),
        }
    }

    fn start(&mut self, bot: usize, request: Request) {
        match request {
            Request::Http(request) => self.call(bot, request),
            Request::Open { path, headers } => match self.connect(bot * 2) {
                Ok(stream) => {
                    self.replace(bot, Link::Connecting { stream, path, headers });
                    self.pending.push(Ready::all(bot * 2));
                }
                Err(e) => self.fail(bot, &format!("cannot connect to {}: {e}", self.server)),
            },
            Request::Send(bytes) => self.write(bot, Message::Binary(bytes.into())),
            Request::SendText(text) => self.write(bot, Message::Text(text.into())),
            Request::Close => {
                match &mut self.links[bot] {
                    // A close frame, written and flushed; the link ends when the server answers it.
                    Link::Open(ws) => drop(ws.close(None)),
                    Link::Idle => {}
                    _ => self.replace(bot, Link::Idle),
                }
                let mut call = std::mem::take(&mut self.calls[bot]);
                self.drop_call(&mut call);
                self.cookies[bot].clear();
            }
        }
    }

    /// Starts an HTTP request on bot `bot`'s kept connection, or a new one.
    fn call(&mut self, bot: usize, request: HttpRequest) {
        if self.calls[bot].busy {
            return self.push(bot, Kind::HttpFailed, b"an HTTP request was made before the last one's answer came");
        }
        let bytes = request.to_bytes(&self.host, &self.cookies[bot]);
        let call = &mut self.calls[bot];
        let reused = call.stream.is_some() && request.keep_alive;
        if reused {
            (call.request, call.sent, call.busy, call.reused) = (bytes, 0, true, true);
            call.answer.clear();
            self.drive_call(bot);
            return;
        }
        let mut old = std::mem::take(call);
        self.drop_call(&mut old);
        match self.call_stream(bot) {
            Ok(stream) => {
                self.calls[bot] = Call { stream: Some(stream), request: bytes, sent: 0, answer: Vec::new(), busy: true, reused: false };
                self.pending.push(Ready::all(bot * 2 + 1));
            }
            Err(e) => self.push(bot, Kind::HttpFailed, format!("cannot connect to {}: {e}", self.server).as_bytes()),
        }
    }

    /// A wait the kernel refused (other than for a signal) is a socket error.
    fn wait_failed(&mut self, e: &io::Error) {
        if e.kind() != io::ErrorKind::Interrupted {
            self.errors += 1;
        }
    }

    /// A message on bot `bot`'s open WebSocket.
    fn write(&mut self, bot: usize, message: Message) {
        match &mut self.links[bot] {
            Link::Open(ws) => match ws.write(message) {
                Ok(()) => self.messages_out += 1,
                // Kept in the WebSocket's buffer: out with the socket's next edge.
                Err(tungstenite::Error::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => self.messages_out += 1,
                Err(_) => self.errors += 1,
            },
            _ => self.errors += 1,
        }
    }
}

impl Transport for WebSockets {
    type Out = Requests;
    type In<'a> = WsEvent<'a>;

    /// An empty set for `cfg.bots` bots against `cfg.server`.
    fn open(cfg: &SwarmConfig) -> io::Result<Self> {
        let mut links = Vec::new();
        links.resize_with(cfg.bots, Link::default);
        let mut calls = Vec::new();
        calls.resize_with(cfg.bots, Call::default);
        // Small buffers: a bot's messages are small, and thousands of connections share the RAM. No write
        // buffer: each message goes to its socket as it is written (what a socket would not take is sent
        // when its next edge drives the link).
        let config = WebSocketConfig::default().read_buffer_size(4096).write_buffer_size(0).max_message_size(Some(16 << 20));
        let tls = cfg.tls.as_ref().map(Tls::new).transpose()?;
        Ok(Self {
            server: cfg.server,
            host: cfg.tls.as_ref().map_or_else(|| cfg.server.to_string(), |t| format!("{}:{}", t.host, cfg.server.port())),
            tls,
            readiness: Readiness::new(1024)?,
            links,
            calls,
            cookies: vec![String::new(); cfg.bots],
            pending: Vec::new(),
            ready: Vec::new(),
            handed: 0,
            network: cfg.net.map(|spec| Network::new(spec, cfg.bots, aggro_core::rng::Rng::stream(cfg.seed ^ cfg.first_client_id, NETWORK_DRAWS))),
            clocks: Clocks::default(),
            inbox: Vec::new(),
            retired: Traffic::default(),
            messages_in: 0,
            messages_out: 0,
            errors: 0,
            retried_opens: 0,
            config,
        })
    }

    fn receive(&mut self) -> (usize, bool) {
        self.forget_handed();
        self.clocks = Clocks::now();
        // What is pending came from the last wait (every loop ends in one) and from links just started.
        let mut pending = std::mem::take(&mut self.pending);
        pending.sort_unstable();
        for (k, &Ready { token, closed, readable }) in pending.iter().enumerate() {
            let bot = token / 2;
            // An edge for writing only leaves a drained socket drained: no read is tried.
            if readable {
                if token % 2 == 1 {
                    if let Some(stream) = &mut self.calls[bot].stream {
                        let counted = stream.counted_mut();
                        counted.drained = false;
                        counted.closing |= closed;
                    }
                } else {
                    self.links[bot].rearm(closed);
                }
            }
            // A socket with several events is driven once, after its last.
            if pending.get(k + 1).is_none_or(|next| next.token != token) {
                match token % 2 {
                    1 => self.drive_call(bot),
                    _ => self.drive(bot),
                }
            }
        }
        pending.clear();
        // Driving starts no links, so nothing was added; the vector keeps its capacity.
        self.pending = pending;
        self.pass_network();
        self.handed = self.ready.len();
        (self.handed, false)
    }

    fn arrival(&self, k: usize) -> Option<(usize, WsEvent<'_>)> {
        let &(bot, kind, start, end, _) = self.ready.get(k)?;
        let bytes = &self.inbox[start as usize..end as usize];
        let event = match kind {
            Kind::Response(status) => WsEvent::Response { status, body: bytes },
            Kind::Opened => WsEvent::Opened,
            Kind::Message => WsEvent::Message(bytes),
            Kind::Text => WsEvent::Text(std::str::from_utf8(bytes).unwrap_or_default()),
            Kind::Closed => WsEvent::Closed { why: std::str::from_utf8(bytes).unwrap_or("closed") },
            Kind::HttpFailed => WsEvent::HttpFailed { why: std::str::from_utf8(bytes).unwrap_or("failed") },
        };
        Some((bot as usize, event))
    }

    /// A message's time is the kernel's receive timestamp of the last bytes read with it: never earlier
    /// than the message arrived, nor later than the latest arrival its read took (a read takes what came
    /// since the last look, so messages read together are timed at the latest one's arrival).
    /// Behind a network (`--net`), when the network let it through.
    fn arrived_us(&self, k: usize) -> Option<u64> {
        match self.ready.get(k)?.4 {
            When::Stamp(ns) => self.clocks.shared_us(ns),
            When::Shared(us) => Some(us),
        }
    }

    /// A bot behind a network has its requests held by it first.
    fn send(&mut self, bot: usize, out: &mut Requests) {
        if let Some(net) = self.network.as_mut().filter(|n| n.spec.covers(bot)) {
            let now = aggro_arena::clock::now_us();
            for r in out.0.drain(..) {
                net.hold_out(bot, now, r);
            }
            return;
        }
        for r in out.0.drain(..) {
            self.start(bot, r);
        }
    }

    /// Messages went out as they were written; those a network held go when due.
    fn flush(&mut self) {
        if self.network.is_none() {
            return;
        }
        let now = aggro_arena::clock::now_us();
        while let Some((bot, _, r)) = self.network.as_mut().and_then(|n| n.out.pop_due(now)) {
            self.start(bot, r);
        }
    }

    fn held_until(&self) -> Option<u64> {
        self.network.as_ref()?.next_at()
    }

    /// Open WebSockets, and connections on their way in with them; returns whether an open one was ready.
    fn wait(&mut self, deadline_us: u64) -> bool {
        let left = Duration::from_micros(deadline_us.saturating_sub(aggro_arena::clock::now_us()));
        self.readiness.wait(left, &mut self.pending).unwrap_or_else(|e| {
            self.wait_failed(&e);
            false
        })
    }

    /// Connections on their way in (connecting, the handshake, HTTP calls) are hurried: driven as soon as
    /// they are ready, however seldom the open WebSockets are read.
    fn wait_hurried(&mut self, until_us: u64) -> bool {
        let left = Duration::from_micros(until_us.saturating_sub(aggro_arena::clock::now_us()));
        if let Err(e) = self.readiness.wait_hurried(left, &mut self.pending) {
            self.wait_failed(&e);
        }
        !self.pending.is_empty()
    }

    fn traffic(&self) -> Traffic {
        let mut t = self.retired;
        for l in &self.links {
            let (r, w) = l.counts();
            t.bytes_in += r;
            t.bytes_out += w;
        }
        for s in self.calls.iter().filter_map(|c| c.stream.as_ref()) {
            t.bytes_in += s.counted().read;
            t.bytes_out += s.counted().written;
        }
        t.packets_in = self.messages_in;
        t.packets_out = self.messages_out;
        t
    }

    fn gauges(&self) -> ProcessGauges {
        ProcessGauges::read([])
    }

    fn count_into(&mut self, counters: &mut crate::SwarmCounters) {
        counters.socket_errors += std::mem::take(&mut self.errors);
        counters.retried_opens += std::mem::take(&mut self.retried_opens);
        if let Some(net) = &mut self.network {
            let n = net.take_counts();
            counters.net_held += n.held;
            counters.net_retransmitted += n.retransmitted;
            counters.net_added_us += n.added_us;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get() -> Request {
        Request::Http(HttpRequest { method: "GET".into(), path: "/".into(), headers: Vec::new(), body: Vec::new(), keep_alive: true })
    }

    #[test]
    fn a_request_refused_as_it_is_made_is_handed_over_by_the_next_receive() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut cfg = SwarmConfig::new(listener.local_addr().unwrap(), arena_proto::Secret::from_passphrase("t"));
        cfg.bots = 1;
        let mut sockets = WebSockets::open(&cfg).unwrap();
        // The second request comes while the first waits for its answer: refused at once, in `send`.
        sockets.send(0, &mut Requests(vec![get(), get()]));
        let (n, _) = sockets.receive();
        let failed = (0..n).filter_map(|k| sockets.arrival(k)).find(|(bot, e)| *bot == 0 && matches!(e, WsEvent::HttpFailed { .. }));
        assert!(failed.is_some(), "the refusal was dropped with the step that made it");
        let (n, _) = sockets.receive();
        assert!((0..n).filter_map(|k| sockets.arrival(k)).all(|(_, e)| !matches!(e, WsEvent::HttpFailed { .. })), "handed over once");
    }
}
