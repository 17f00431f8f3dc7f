//! The socket half of the API: `socketio.connect`, `websocket.connect` and a
//! socket's `on`, `emit`, `send`, `call` and `close`, for the running bot's
//! one socket.

use super::api::{Shared, define, pairs, path_of};
use super::convert::to_json;
use super::held::Held;
use super::packets::{SocketIoPacket, protocol};
use super::state::{Context, Format, Protocol, Socket};
use crate::socketio::{self, Kind};
use crate::websocket::Request;
use mlua::{Function, Lua, MultiValue, Table, Value};

pub fn register(lua: &Lua, ctx: &Shared) -> mlua::Result<()> {
    define(lua, ctx, "__connect", |lua, c, (kind, url, opts): (String, String, Option<Table>)| {
        let protocol = protocol(&kind, opts.as_ref())?;
        let mut path = path_of(&url)?;
        if matches!(protocol, Protocol::SocketIo { .. }) {
            path = socketio::socket_path(if path == "/" { "/socket.io/" } else { &path });
        }
        let headers = pairs(opts.as_ref().map(|o| o.get::<Option<Table>>("headers")).transpose()?.flatten().as_ref())?;
        let mut c = c.borrow_mut();
        let socket = Socket::new(protocol, c.waiter(lua)?);
        c.me().socket = Some(socket);
        c.out.push(Request::Open { path, headers });
        Ok(())
    })?;
    define(lua, ctx, "__on", |lua, c, (sock, name, f): (Table, String, Function)| {
        let f = Held::new(lua, f)?;
        with_socket(c, &sock, |_, s| {
            s.handlers.retain(|(n, _)| *n != name);
            s.handlers.push((name, f));
            Ok(())
        })
    })?;
    define(lua, ctx, "__emit", |lua, c, (sock, name, args): (Table, String, MultiValue)| {
        let binary_used = c.borrow().binary_used;
        sending(c, &sock, |out, s| match &s.protocol {
            Protocol::SocketIo { namespace, .. } => {
                SocketIoPacket { kind: Kind::Event, namespace, id: None, name: Some(&name), binary_used }.write(lua, &args, out)
            }
            Protocol::WebSocket { .. } => Err(mlua::Error::runtime("emit is Socket.IO's: on a plain WebSocket use ws:send(message)")),
        })
    })?;
    define(lua, ctx, "__send", |lua, c, (sock, message): (Table, Value)| {
        let binary_used = c.borrow().binary_used;
        sending(c, &sock, |out, s| {
            out.push(match (&s.protocol, &message) {
                (Protocol::SocketIo { namespace, .. }, _) => {
                    let packet = SocketIoPacket { kind: Kind::Event, namespace, id: None, name: Some("message"), binary_used };
                    return packet.write(lua, &MultiValue::from_iter([message.clone()]), out);
                }
                (Protocol::WebSocket { format: format @ (Format::Json | Format::MsgPack), .. }, _) => structured(*format, &message)?,
                (Protocol::WebSocket { format: Format::Text, .. }, Value::String(t)) => Request::SendText(t.to_str()?.to_string()),
                (Protocol::WebSocket { format: Format::Binary, .. }, Value::String(b)) => Request::Send(b.as_bytes().to_vec()),
                (_, other) => return Err(mlua::Error::runtime(format!("a text or binary socket sends strings, not a {}", other.type_name()))),
            });
            Ok(())
        })
    })?;
    define(lua, ctx, "__call", |lua, c, (sock, args): (Table, MultiValue)| {
        let (waiter, binary_used) = (c.borrow().waiter(lua)?, c.borrow().binary_used);
        sending(c, &sock, |out, s| {
            let id = s.next_id;
            s.next_id += 1;
            match &s.protocol {
                Protocol::SocketIo { namespace, .. } => {
                    let mut args = args.into_iter();
                    let Some(Value::String(name)) = args.next() else {
                        return Err(mlua::Error::runtime("ws:call(name, ...) needs the event's name first"));
                    };
                    let name = name.to_str()?;
                    SocketIoPacket { kind: Kind::Event, namespace, id: Some(id), name: Some(&name), binary_used }.write(lua, &args.collect(), out)?;
                }
                Protocol::WebSocket { format: format @ (Format::Json | Format::MsgPack), reply_field, .. } => {
                    let Some(Value::Table(message)) = args.into_iter().next() else {
                        return Err(mlua::Error::runtime("ws:call(message) needs a table"));
                    };
                    message.raw_set(&**reply_field, id)?;
                    out.push(structured(*format, &Value::Table(message))?);
                }
                Protocol::WebSocket { .. } => {
                    return Err(mlua::Error::runtime("ws:call needs a JSON or MessagePack socket (format = \"json\" or \"msgpack\")"));
                }
            }
            s.calls.push((id, waiter));
            Ok(())
        })
    })?;
    define(lua, ctx, "__close", |_, c, sock: Table| {
        with_socket(c, &sock, |_, _| Ok(()))?;
        let mut c = c.borrow_mut();
        c.me().socket = None;
        c.out.push(Request::Close);
        Ok(())
    })
}

/// Writes a message or event on the running bot's socket with `write`, counted as sent; on a socket that
/// has closed (the server went away) nothing is written, a failed `send` (class `disconnected`) is counted,
/// and the script is told why rather than raised at — a bot whose server went away is not a broken script.
fn sending(c: &Shared, sock: &Table, write: impl FnOnce(&mut Vec<Request>, &mut Socket) -> mlua::Result<()>) -> mlua::Result<Option<String>> {
    let owner: Option<usize> = sock.raw_get("bot")?;
    let closed = {
        let c = c.borrow();
        owner == Some(c.bot) && c.bots[c.bot].socket.is_none()
    };
    if closed {
        c.borrow_mut().measures.fail("send", "disconnected");
        return Ok(Some("the socket was closed".to_string()));
    }
    with_socket(c, sock, write)?;
    c.borrow_mut().heard.counters.events_sent += 1;
    Ok(None)
}

/// A table (or any value) sent as JSON text or as MessagePack in a binary frame.
fn structured(format: Format, message: &Value) -> mlua::Result<Request> {
    Ok(match format {
        Format::MsgPack => Request::Send(super::msgpack::encode(message)?),
        _ => Request::SendText(to_json(message)?),
    })
}

/// Runs `f` on the running bot's socket, which `sock` must be and which must be open.
fn with_socket<R>(c: &Shared, sock: &Table, f: impl FnOnce(&mut Vec<Request>, &mut Socket) -> mlua::Result<R>) -> mlua::Result<R> {
    let mut c = c.borrow_mut();
    let owner: Option<usize> = sock.raw_get("bot")?;
    if owner != Some(c.bot) {
        return Err(mlua::Error::runtime("a bot can use only its own socket"));
    }
    let Context { bots, bot, out, .. } = &mut *c;
    match bots[*bot].socket.as_mut() {
        Some(s) if s.open => f(out, s),
        Some(_) => Err(mlua::Error::runtime("the socket is not open yet")),
        None => Err(mlua::Error::runtime("the socket was closed")),
    }
}
