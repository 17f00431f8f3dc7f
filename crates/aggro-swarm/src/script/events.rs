//! What the transport hands a scripted bot, turned into its script's terms:
//! an HTTP answer resumes the request's coroutine, a socket's opening its
//! `connect`, a reply its `call` (the round trip timed from the intended
//! time of the step that called), a message or event its handler.

use super::engine::Engine;
use super::head;
use super::measures::failure_class;
use super::message::Message;
use super::packets::SocketIoPacket;
use super::state::Context;
use super::state::{Format, Protocol, Waiter};
use crate::socketio::{self, Engine as Eio, Kind};
use crate::websocket::{Request, WsEvent};
use mlua::{MultiValue, Value};
use std::rc::Rc;

impl Engine {
    /// Hands bot `bot` what arrived at `at_us`.
    pub fn event(&self, bot: usize, at_us: u64, event: WsEvent<'_>) {
        self.enter(bot, at_us);
        match event {
            WsEvent::Response { status, body } => self.answered(bot, Ok((status, body))),
            WsEvent::HttpFailed { why } => self.answered(bot, Err(why)),
            WsEvent::Opened => {
                if self.protocol_is_socketio(bot) == Some(false) {
                    self.opened(bot);
                }
            }
            WsEvent::Text(text) => match self.protocol_is_socketio(bot) {
                Some(true) => self.socketio_frame(bot, text),
                Some(false) => self.websocket_message(bot, text.as_bytes(), true),
                None => {}
            },
            WsEvent::Message(bytes) => match self.protocol_is_socketio(bot) {
                Some(true) => self.attachment(bot, bytes),
                Some(false) => self.websocket_message(bot, bytes, false),
                None => {}
            },
            WsEvent::Closed { why } => self.closed(bot, why),
        }
    }

    fn answered(&self, bot: usize, answer: Result<(u16, &[u8]), &str>) {
        let Some(waiter) = self.ctx.borrow_mut().bots[bot].http.take() else { return };
        let now = self.ctx.borrow().now_us;
        {
            let mut c = self.ctx.borrow_mut();
            match failure_class(&answer) {
                None => c.measures.record("http", now.saturating_sub(waiter.since_us)),
                Some(class) => {
                    // A player coming back after losing its server: an attempt of the storm's, not a failed request.
                    if !c.coming_back(bot) {
                        c.measures.fail("http", class);
                        c.heard.counters.server_errors += 1;
                    }
                    c.told(match answer {
                        Ok((status, body)) => format!("HTTP {status}: {}", String::from_utf8_lossy(&body[..body.len().min(120)]).trim()),
                        Err(why) => why.to_string(),
                    });
                }
            }
        }
        let reply = (|| -> mlua::Result<MultiValue> {
            match answer {
                Ok((status, body)) => {
                    let t = self.lua.create_table()?;
                    t.set("status", status)?;
                    t.set("body", self.lua.create_string(body)?)?;
                    if let Ok(json) = serde_json::from_slice::<serde_json::Value>(body) {
                        t.set("json", self.lua_value(&json, &[])?)?;
                    }
                    Ok(MultiValue::from_iter([Value::Table(t)]))
                }
                Err(why) => Ok(MultiValue::from_iter([Value::Nil, Value::String(self.lua.create_string(why)?)])),
            }
        })();
        match reply {
            Ok(values) => self.wake(bot, waiter, values),
            Err(e) => self.failed(bot, &e),
        }
    }

    /// The bot's socket is open (for Socket.IO, its namespace joined): its `connect` returns it.
    fn opened(&self, bot: usize) {
        let opener = {
            let mut c = self.ctx.borrow_mut();
            let Some(s) = c.bots[bot].socket.as_mut() else { return };
            s.open = true;
            let opener = s.opener.take();
            c.heard.counters.connects += 1;
            c.heard.counters.joins += 1;
            c.reach(super::stages::CONNECTED).expect("aggro's own stage is a word");
            c.back(bot);
            opener
        };
        match (opener, self.socket_table(bot)) {
            (Some(w), Ok(t)) => self.wake(bot, w, t),
            (_, Err(e)) => self.failed(bot, &e),
            (None, _) => {}
        }
    }

    /// The socket closed: before it opened its `connect` returns nil and why; after, its "disconnect"
    /// handler runs — without one the bot comes back (`--reconnect`) or leaves play (a player sent away).
    fn closed(&self, bot: usize, why: &str) {
        let Some(socket) = self.ctx.borrow_mut().bots[bot].socket.take() else { return };
        let why_lua = self.lua.create_string(why).map(Value::String).unwrap_or(Value::Nil);
        if !socket.open {
            let mut c = self.ctx.borrow_mut();
            // A player coming back makes attempts (the storm counts them), not joins that failed.
            if !c.coming_back(bot) {
                c.heard.counters.failed_joins += 1;
            }
            c.told(why.to_string());
            drop(c);
            if let Some(w) = socket.opener {
                self.wake(bot, w, (Value::Nil, why_lua));
            }
            return;
        }
        {
            let mut c = self.ctx.borrow_mut();
            c.heard.counters.disconnects += 1;
            c.told(format!("disconnected: {why}"));
        }
        let handler = socket.handler(&self.lua, "disconnect");
        for (_, w) in socket.calls {
            self.wake(bot, w, (Value::Nil, why_lua.clone()));
        }
        let mut c = self.ctx.borrow_mut();
        match handler {
            Some(Ok(f)) => {
                drop(c);
                drop(self.spawn(bot, f, why_lua));
            }
            Some(Err(e)) => {
                drop(c);
                self.failed(bot, &e);
            }
            // A player sent away: it comes back when the run says players do (`--reconnect`), else it leaves.
            None if c.backoff.is_some() => c.come_back(bot),
            None => c.bots[bot].gone = true,
        }
    }

    /// The server ended the session over a WebSocket still open (Socket.IO's DISCONNECT, Engine.IO's
    /// close): the WebSocket is closed too, then the bot hears it as any close.
    fn sent_away(&self, bot: usize, why: &str) {
        self.ctx.borrow_mut().out.push(Request::Close);
        self.closed(bot, why);
    }

    /// A message on a plain WebSocket: a reply to a `call`, or handed to the handler its type names
    /// (else "message"). A JSON socket reads text frames, a MessagePack one binary frames; any other
    /// frame reaches the "message" handler as a Lua string.
    fn websocket_message(&self, bot: usize, bytes: &[u8], text: bool) {
        let (format, type_field, reply_field) = {
            let c = self.ctx.borrow();
            let Some(Protocol::WebSocket { format, type_field, reply_field }) = c.bots[bot].socket.as_ref().map(|s| &s.protocol) else { return };
            (*format, Rc::clone(type_field), Rc::clone(reply_field))
        };
        let pack = match (format, text) {
            (Format::Json, true) => false,
            (Format::MsgPack, false) => true,
            _ => return self.dispatch(bot, "message", None, || Ok(MultiValue::from_iter([Value::String(self.lua.create_string(bytes)?)]))),
        };
        let Some(message) = Message::read(bytes, pack) else {
            self.ctx.borrow_mut().heard.counters.decode_errors += 1;
            return;
        };
        self.observe(message.sender("from"), message.number("seq"), message.number("t"));
        if let Some(waiter) = message.id(&reply_field).and_then(|id| self.take_call(bot, id)) {
            return self.replied(bot, waiter, message.to_lua(&self.lua).map(|v| MultiValue::from_iter([v])));
        }
        let name = message.text(&type_field).unwrap_or("message");
        self.dispatch(bot, name, None, || Ok(MultiValue::from_iter([message.to_lua(&self.lua)?])));
    }

    /// A text frame of a Socket.IO socket: Engine.IO's handshake and heartbeat, then Socket.IO packets.
    fn socketio_frame(&self, bot: usize, frame: &str) {
        let packet = match socketio::engine(frame) {
            Ok(Eio::Open(_)) => return self.socketio_join(bot),
            Ok(Eio::Ping(payload)) => return self.ctx.borrow_mut().out.push(Request::SendText(socketio::pong(payload))),
            Ok(Eio::Close) => return self.sent_away(bot, "closed by the server (Engine.IO close)"),
            Ok(Eio::Pong | Eio::Noop) => return,
            Ok(Eio::Message(text)) => socketio::packet(text),
            Err(e) => Err(e),
        };
        let p = match packet {
            Ok(p) => p,
            Err(_) => return self.ctx.borrow_mut().heard.counters.decode_errors += 1,
        };
        match p.kind {
            Kind::Connect => self.opened(bot),
            Kind::ConnectError => {
                let why = serde_json::from_str::<serde_json::Value>(p.data)
                    .ok()
                    .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(str::to_string))
                    .unwrap_or_else(|| p.data.to_string());
                let socket = self.ctx.borrow_mut().bots[bot].socket.take();
                let mut c = self.ctx.borrow_mut();
                c.heard.counters.refused += 1;
                c.told(format!("refused: {why}"));
                c.out.push(Request::Close);
                drop(c);
                if let Some(w) = socket.and_then(|s| s.opener) {
                    let why = self.lua.create_string(format!("refused: {why}")).map(Value::String).unwrap_or(Value::Nil);
                    self.wake(bot, w, (Value::Nil, why));
                }
            }
            Kind::Disconnect => self.sent_away(bot, "disconnected by the server"),
            Kind::Event | Kind::Ack if p.attachments == 0 => self.socketio_packet(bot, p.kind == Kind::Event, p.id, p.data, &[]),
            Kind::Event | Kind::Ack | Kind::BinaryEvent | Kind::BinaryAck => {
                let event = matches!(p.kind, Kind::Event | Kind::BinaryEvent);
                let attaching = super::state::Attaching { event, id: p.id, data: p.data.to_string(), wanted: p.attachments, binaries: Vec::new() };
                if let Some(s) = self.ctx.borrow_mut().bots[bot].socket.as_mut() {
                    s.attaching = Some(attaching);
                }
            }
        }
    }

    /// Engine.IO opened: the bot asks to join its namespace (with its auth).
    fn socketio_join(&self, bot: usize) {
        let mut c = self.ctx.borrow_mut();
        let Some(Protocol::SocketIo { namespace, auth }) = c.bots[bot].socket.as_ref().map(|s| &s.protocol) else { return };
        let frame = socketio::encode(Kind::Connect, 0, namespace, None, auth);
        c.out.push(Request::SendText(frame));
    }

    /// A binary frame: the next attachment of the packet waiting for them.
    fn attachment(&self, bot: usize, bytes: &[u8]) {
        let done = {
            let mut c = self.ctx.borrow_mut();
            let Some(a) = c.bots[bot].socket.as_mut().and_then(|s| s.attaching.as_mut()) else {
                c.heard.counters.decode_errors += 1;
                return;
            };
            a.binaries.push(bytes.to_vec());
            if a.binaries.len() < a.wanted {
                return;
            }
            c.bots[bot].socket.as_mut().and_then(|s| s.attaching.take())
        };
        if let Some(a) = done {
            self.socketio_packet(bot, a.event, a.id, &a.data, &a.binaries);
        }
    }

    /// A Socket.IO event (handed to its handler, whose results answer an ack the server asked for) or
    /// ack (the reply to a `call`). An event's head (its name, its first argument's from/seq/t) is read
    /// first: its values are made only for a handler.
    fn socketio_packet(&self, bot: usize, event: bool, id: Option<u64>, data: &str, binaries: &[Vec<u8>]) {
        let items = || match serde_json::from_str::<serde_json::Value>(data) {
            Ok(serde_json::Value::Array(items)) => Ok(items),
            _ => Err(mlua::Error::runtime("a Socket.IO packet whose data is not an array")),
        };
        if !event {
            let Ok(items) = items() else { return self.ctx.borrow_mut().heard.counters.decode_errors += 1 };
            let Some(waiter) = id.and_then(|id| self.take_call(bot, id)) else { return };
            return self.replied(bot, waiter, items.iter().map(|v| self.lua_value(v, binaries)).collect());
        }
        let Some(head) = head::read(data) else {
            return self.ctx.borrow_mut().heard.counters.decode_errors += 1;
        };
        self.observe(head.from, head.seq, head.t);
        self.dispatch(bot, &head.name, id, || items()?.iter().skip(1).map(|v| self.lua_value(v, binaries)).collect());
    }

    /// Runs the handler of `name` with the arguments `args` makes (only when there is a handler: a
    /// message nobody handles is not turned into Lua values); when the server asked for an ack (`id`),
    /// the handler's results answer it.
    fn dispatch(&self, bot: usize, name: &str, id: Option<u64>, args: impl FnOnce() -> mlua::Result<MultiValue>) {
        self.ctx.borrow_mut().measures.heard(name);
        let handler = self.ctx.borrow().bots[bot].socket.as_ref().and_then(|s| s.handler(&self.lua, name));
        let f = match handler {
            Some(Ok(f)) => f,
            Some(Err(e)) => return self.failed(bot, &e),
            None => {
                self.ctx.borrow_mut().heard.counters.other_messages += 1;
                return;
            }
        };
        let args = match args() {
            Ok(args) => args,
            Err(e) => return self.failed(bot, &e),
        };
        let results = self.spawn(bot, f, args);
        if let (Some(id), Some(results)) = (id, results) {
            let mut c = self.ctx.borrow_mut();
            let Context { bots, out, binary_used, .. } = &mut *c;
            let Some(Protocol::SocketIo { namespace, .. }) = bots[bot].socket.as_ref().map(|s| &s.protocol) else { return };
            let ack = SocketIoPacket { kind: Kind::Ack, namespace, id: Some(id), name: None, binary_used: *binary_used };
            if let Err(e) = ack.write(&self.lua, &results, out) {
                drop(c);
                self.failed(bot, &e);
            }
        }
    }

    fn take_call(&self, bot: usize, id: u64) -> Option<Waiter> {
        let mut c = self.ctx.borrow_mut();
        let s = c.bots[bot].socket.as_mut()?;
        let k = s.calls.iter().position(|(i, _)| *i == id)?;
        Some(s.calls.swap_remove(k).1)
    }

    /// A call's reply: its round trip timed, its coroutine resumed with the reply's values (a Socket.IO
    /// ack's; a WebSocket message).
    fn replied(&self, bot: usize, waiter: Waiter, values: mlua::Result<MultiValue>) {
        let now = self.ctx.borrow().now_us;
        self.ctx.borrow_mut().heard.round_trips_us.push(now.saturating_sub(waiter.since_us));
        match values {
            Ok(v) => self.wake(bot, waiter, v),
            Err(e) => self.failed(bot, &e),
        }
    }

    /// A message that carries its sender (a number or a name), number and send time (`from`, `seq`, `t`
    /// on the swarm's clock, as `now()` gives it) is delivery-checked and its delay measured.
    fn observe(&self, from: Option<u64>, seq: Option<f64>, t: Option<f64>) {
        let (Some(from), Some(seq), Some(t)) = (from, seq, t) else { return };
        self.ctx.borrow_mut().observe(from, seq as u32, t as u64);
    }
}
