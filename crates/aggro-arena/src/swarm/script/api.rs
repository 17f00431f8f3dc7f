//! The functions a bot script calls, registered in its Lua state: each reads
//! and writes the running bot's [`Context`]. What waits (`sleep`, HTTP,
//! connecting, `ws:call`) notes the waiting coroutine here and yields in the
//! prelude (`prelude.lua`); the engine resumes it when its answer or time comes.

use super::convert::{Bytes, placeholders, to_json, to_lua};
use super::state::{Context, Format, Protocol, Socket, Timer, Waiter, Wake};
use crate::clock::now_us;
use crate::swarm::socketio;
use crate::swarm::websocket::{HttpRequest, Request};
use mlua::{Function, Lua, MultiValue, Table, Value, Variadic};
use std::cell::RefCell;
use std::rc::Rc;

type Shared = Rc<RefCell<Context>>;

/// Lines a script may `print` in all (past them, prints are dropped: thousands of bots would flood the
/// terminal).
const PRINTS: u64 = 20;

/// Registers the API in `lua`'s globals (the sockets' part is [`super::sockets`]).
pub fn register(lua: &Lua, ctx: &Shared) -> mlua::Result<()> {
    let g = lua.globals();
    let c = Rc::clone(ctx);
    g.set("now", lua.create_function(move |_, ()| Ok(c.borrow().now_us as f64))?)?;
    let c = Rc::clone(ctx);
    g.set(
        "__sleep",
        lua.create_function(move |lua, ms: f64| {
            let thread = lua.current_thread();
            let mut c = c.borrow_mut();
            let at_us = c.now_us + millis(ms)?;
            c.me().timers.push(Timer { at_us, what: Wake::Resume(thread) });
            Ok(())
        })?,
    )?;
    let c = Rc::clone(ctx);
    g.set(
        "every",
        lua.create_function(move |_, (ms, callback): (f64, Function)| {
            let period_us = millis(ms)?.max(1);
            let mut c = c.borrow_mut();
            let at_us = c.now_us + period_us;
            c.me().timers.push(Timer { at_us, what: Wake::Every { period_us, callback } });
            Ok(())
        })?,
    )?;
    let c = Rc::clone(ctx);
    g.set(
        "count",
        lua.create_function(move |_, (name, n): (String, Option<u64>)| {
            c.borrow_mut().measures.count(&name, n.unwrap_or(1));
            Ok(())
        })?,
    )?;
    let c = Rc::clone(ctx);
    g.set(
        "binary",
        lua.create_function(move |lua, s: mlua::LuaString| {
            c.borrow_mut().binary_used = true;
            lua.create_ser_userdata(Bytes(s.as_bytes().to_vec()))
        })?,
    )?;
    let c = Rc::clone(ctx);
    g.set(
        "observe",
        lua.create_function(move |_, (from, seq, t): (u64, u32, f64)| {
            c.borrow_mut().observe(from, seq, t as u64);
            Ok(())
        })?,
    )?;
    let c = Rc::clone(ctx);
    g.set(
        "__record",
        lua.create_function(move |_, (name, t0): (String, f64)| {
            c.borrow_mut().measures.record(&name, now_us().saturating_sub(t0 as u64));
            Ok(())
        })?,
    )?;
    let c = Rc::clone(ctx);
    g.set(
        "rand",
        lua.create_function(move |_, (a, b): (Option<i64>, Option<i64>)| {
            let mut c = c.borrow_mut();
            let rng = &mut c.me().rng;
            Ok(match (a, b) {
                (None, _) => Value::Number(rng.unit()),
                (Some(n), None) if n >= 1 => Value::Integer(rng.range_inclusive(1, n as u64) as i64),
                (Some(m), Some(n)) if n >= m => Value::Integer(m + rng.range_inclusive(0, (n - m) as u64) as i64),
                _ => return Err(mlua::Error::runtime("rand(m, n) needs m <= n (rand(n): n >= 1)")),
            })
        })?,
    )?;
    let printed = std::cell::Cell::new(0u64);
    let c = Rc::clone(ctx);
    g.set(
        "print",
        lua.create_function(move |_, args: Variadic<Value>| {
            let n = printed.get();
            printed.set(n + 1);
            if n < PRINTS {
                let words: Vec<String> = args.iter().map(|v| v.to_string().unwrap_or_else(|_| format!("{v:?}"))).collect();
                let id = c.borrow_mut().me().id;
                eprintln!("bot {id}: {}{}", words.join("\t"), if n + 1 == PRINTS { " (further prints are dropped)" } else { "" });
            }
            Ok(())
        })?,
    )?;
    let json = lua.create_table()?;
    json.set("encode", lua.create_function(|_, v: Value| to_json(&v))?)?;
    json.set(
        "decode",
        lua.create_function(|lua, s: mlua::LuaString| {
            let v: serde_json::Value = serde_json::from_slice(&s.as_bytes()).map_err(|e| mlua::Error::runtime(format!("json.decode: {e}")))?;
            to_lua(lua, &v)
        })?,
    )?;
    g.set("json", json)?;
    register_bot(lua, ctx)?;
    register_http(lua, ctx)
}

/// `bot`: the running bot's `id`, `index` and `name`.
fn register_bot(lua: &Lua, ctx: &Shared) -> mlua::Result<()> {
    let bot = lua.create_table()?;
    let meta = lua.create_table()?;
    let c = Rc::clone(ctx);
    meta.set(
        "__index",
        lua.create_function(move |lua, (_, key): (Table, String)| {
            let c = c.borrow();
            let id = c.bots[c.bot].id;
            Ok(match key.as_str() {
                "id" => Value::Integer(id as i64),
                "index" => Value::Integer(c.bot as i64),
                "name" => Value::String(lua.create_string(format!("bot{id}"))?),
                _ => Value::Nil,
            })
        })?,
    )?;
    bot.set_metatable(Some(meta))?;
    lua.globals().set("bot", bot)
}

/// `__http(method, path, body, headers)`: a table body goes as JSON.
fn register_http(lua: &Lua, ctx: &Shared) -> mlua::Result<()> {
    let c = Rc::clone(ctx);
    let f = lua.create_function(move |lua, (method, path, body, headers): (String, String, Value, Option<Table>)| {
        let mut request = HttpRequest { method, path: path_of(&path)?, keep_alive: true, ..Default::default() };
        match &body {
            Value::Nil => {}
            Value::String(s) => request.body = s.as_bytes().to_vec(),
            Value::Table(_) => {
                request.body = to_json(&body)?.into_bytes();
                request.headers.push(("Content-Type".into(), "application/json".into()));
            }
            other => return Err(mlua::Error::runtime(format!("an HTTP body is a table (sent as JSON) or a string, not a {}", other.type_name()))),
        }
        for pair in headers.iter().flat_map(|h| h.pairs::<String, String>()) {
            request.headers.push(pair?);
        }
        let mut c = c.borrow_mut();
        if c.me().http.is_some() {
            return Err(mlua::Error::runtime("an HTTP request was made before the bot's last one was answered"));
        }
        let since_us = c.now_us;
        c.me().http = Some(Waiter { thread: lua.current_thread(), since_us });
        c.out.push(Request::Http(request));
        Ok(())
    })?;
    lua.globals().set("__http", f)
}

/// The path of `url`: itself when it starts with `/`; a `ws://`, `wss://`, `http://` or `https://`
/// URL's path (its host is the swarm's `--server`, whose scheme says whether TLS is under it).
pub fn path_of(url: &str) -> mlua::Result<String> {
    if url.starts_with('/') {
        return Ok(url.to_string());
    }
    for scheme in ["ws://", "wss://", "http://", "https://"] {
        if let Some(rest) = url.strip_prefix(scheme) {
            return Ok(rest.find('/').map_or("/".to_string(), |k| rest[k..].to_string()));
        }
    }
    Err(mlua::Error::runtime(format!("{url:?} is not a path (/…) or a ws(s):// or http(s):// URL")))
}

/// `ms` milliseconds in µs, refused when not a finite number ≥ 0.
fn millis(ms: f64) -> mlua::Result<u64> {
    if ms.is_finite() && ms >= 0.0 { Ok((ms * 1000.0) as u64) } else { Err(mlua::Error::runtime(format!("{ms} is not a number of milliseconds"))) }
}

/// A socket's protocol from `socketio.connect`'s or `websocket.connect`'s options.
pub fn protocol(kind: &str, opts: Option<&Table>) -> mlua::Result<Protocol> {
    let text = |k: &str| -> mlua::Result<Option<String>> { opts.map_or(Ok(None), |t| t.get::<Option<String>>(k)) };
    Ok(match kind {
        "socketio" => {
            let auth = match opts.map(|t| t.get::<Value>("auth")).transpose()? {
                None | Some(Value::Nil) => String::new(),
                Some(v) => to_json(&v)?,
            };
            Protocol::SocketIo { namespace: text("namespace")?.unwrap_or_else(|| "/".into()), auth }
        }
        _ => {
            let format = match text("format")?.as_deref() {
                None | Some("json") => Format::Json,
                Some("text") => Format::Text,
                Some("binary") => Format::Binary,
                Some("msgpack") => Format::MsgPack,
                Some(other) => return Err(mlua::Error::runtime(format!("format {other:?}: json, msgpack, text or binary"))),
            };
            Protocol::WebSocket {
                format,
                type_field: text("type")?.unwrap_or_else(|| "type".into()),
                reply_field: text("reply")?.unwrap_or_else(|| "id".into()),
            }
        }
    })
}

/// A new socket for the running bot, its opener the calling coroutine.
pub fn new_socket(lua: &Lua, c: &mut Context, protocol: Protocol) -> Socket {
    let since_us = c.now_us;
    Socket::new(protocol, Waiter { thread: lua.current_thread(), since_us })
}

/// The values of a Lua call as a JSON array's items, after `first` (the event's name).
pub fn json_array(first: Option<&str>, values: &MultiValue) -> mlua::Result<String> {
    let mut s = String::from("[");
    if let Some(name) = first {
        s.push_str(&serde_json::to_string(name).map_err(mlua::Error::external)?);
    }
    for (k, v) in values.iter().enumerate() {
        if k > 0 || first.is_some() {
            s.push(',');
        }
        s.push_str(&to_json(v)?);
    }
    s.push(']');
    Ok(s)
}

/// Socket.IO packet `kind` in `namespace` (an event named `name`, or an ack) with `args` and ack `id`:
/// its text frame, then — when the script marked bytes with `binary(…)` (`binary_used`) among the args —
/// each as an attachment in a binary frame.
pub struct SocketIoPacket<'a> {
    pub kind: socketio::Kind,
    pub namespace: &'a str,
    pub id: Option<u64>,
    pub name: Option<&'a str>,
    pub binary_used: bool,
}

impl SocketIoPacket<'_> {
    pub fn write(&self, lua: &Lua, args: &MultiValue, out: &mut Vec<Request>) -> mlua::Result<()> {
        let mut attachments = Vec::new();
        let data = if self.binary_used {
            let args: MultiValue =
                args.iter().map(|v| Ok(placeholders(lua, v, &mut attachments)?.unwrap_or_else(|| v.clone()))).collect::<mlua::Result<_>>()?;
            json_array(self.name, &args)?
        } else {
            json_array(self.name, args)?
        };
        out.push(Request::SendText(socketio::encode(self.kind, attachments.len(), self.namespace, self.id, &data)));
        out.extend(attachments.into_iter().map(Request::Send));
        Ok(())
    }
}
