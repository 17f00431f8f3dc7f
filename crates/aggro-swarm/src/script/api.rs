//! The functions a bot script calls, registered in its Lua state: each reads
//! and writes the running bot's [`Context`]. What waits (`sleep`, HTTP,
//! connecting, `ws:call`) notes the waiting coroutine here and yields in the
//! prelude (`prelude.lua`); the engine resumes it when its answer or time comes.

use super::convert::{Bytes, to_json, to_lua};
use super::held::Held;
use super::state::{Context, Timer, Wake};
use crate::websocket::{HttpRequest, Request};
use aggro_arena::clock::now_us;
use mlua::{FromLuaMulti, Function, IntoLuaMulti, Lua, Table, Value, Variadic};
use std::cell::RefCell;
use std::rc::Rc;

pub type Shared = Rc<RefCell<Context>>;

/// Lines a script may `print` in all (past them, prints are dropped: thousands of bots would flood the
/// terminal).
const PRINTS: u64 = 20;

/// Registers global `name` as a Rust function of the running bot's context.
pub fn define<A, R>(lua: &Lua, ctx: &Shared, name: &str, f: impl Fn(&Lua, &Shared, A) -> mlua::Result<R> + 'static) -> mlua::Result<()>
where
    A: FromLuaMulti,
    R: IntoLuaMulti,
{
    let c = Rc::clone(ctx);
    lua.globals().set(name, lua.create_function(move |lua, args: A| f(lua, &c, args))?)
}

/// Registers the API in `lua`'s globals (the sockets' part is [`super::sockets`]).
pub fn register(lua: &Lua, ctx: &Shared) -> mlua::Result<()> {
    define(lua, ctx, "now", |_, c, ()| Ok(c.borrow().now_us as f64))?;
    define(lua, ctx, "__sleep", |lua, c, ms: f64| {
        let mut c = c.borrow_mut();
        let at_us = c.now_us + millis(ms)?;
        c.me().timers.push(Timer { at_us, what: Wake::Resume(Held::new(lua, lua.current_thread())?) });
        Ok(())
    })?;
    define(lua, ctx, "every", |lua, c, (ms, callback): (f64, Function)| {
        let period_us = millis(ms)?.max(1);
        let callback = Held::new(lua, callback)?;
        let mut c = c.borrow_mut();
        let at_us = c.now_us + period_us;
        c.me().timers.push(Timer { at_us, what: Wake::Every { period_us, callback } });
        Ok(())
    })?;
    define(lua, ctx, "count", |_, c, (name, n): (String, Option<u64>)| {
        c.borrow_mut().measures.count(&name, n.unwrap_or(1));
        Ok(())
    })?;
    define(lua, ctx, "__reconnect", |_, c, ()| {
        let mut c = c.borrow_mut();
        let bot = c.bot;
        c.come_back(bot);
        Ok(())
    })?;
    define(lua, ctx, "stage", |_, c, name: String| c.borrow_mut().reach(&name).map_err(mlua::Error::runtime))?;
    define(lua, ctx, "observe", |_, c, (from, seq, t): (Value, u32, f64)| {
        let from = match from {
            Value::Integer(n) => n as u64,
            Value::Number(n) => n as u64,
            Value::String(name) => super::state::sender_of_text(&name.to_str()?),
            other => return Err(mlua::Error::runtime(format!("observe: the sender is a number or a name, not a {}", other.type_name()))),
        };
        c.borrow_mut().observe(from, seq, t as u64);
        Ok(())
    })?;
    define(lua, ctx, "binary", |lua, c, s: mlua::LuaString| {
        c.borrow_mut().binary_used = true;
        lua.create_ser_userdata(Bytes(s.as_bytes().to_vec()))
    })?;
    define(lua, ctx, "__record", |_, c, (name, t0, n, first, second): (String, f64, i64, Value, Value)| {
        let mut c = c.borrow_mut();
        match super::measures::measured_failure(n, &first, &second)? {
            // A call that waited ended when what woke it arrived (its kernel stamp, or a timer's due time);
            // one that never waited, now.
            None => {
                let end = if c.now_us > t0 as u64 { c.now_us } else { now_us() };
                c.measures.record(&name, end.saturating_sub(t0 as u64))
            }
            Some((class, why)) => {
                // A player coming back after losing its server fails while it is away: an attempt of the
                // storm's (counted there), not a failure of the operation.
                if !c.coming_back(c.bot) {
                    c.measures.fail(&name, class);
                }
                c.told(format!("{name} failed: {why}"));
            }
        }
        Ok(())
    })?;
    define(lua, ctx, "rand", |_, c, (a, b): (Option<i64>, Option<i64>)| {
        let mut c = c.borrow_mut();
        let rng = &mut c.me().rng;
        Ok(match (a, b) {
            (None, _) => Value::Number(rng.unit()),
            (Some(n), None) if n >= 1 => Value::Integer(rng.range_inclusive(1, n as u64) as i64),
            (Some(m), Some(n)) if n >= m => Value::Integer(m + rng.range_inclusive(0, (n - m) as u64) as i64),
            _ => return Err(mlua::Error::runtime("rand(m, n) needs m <= n (rand(n): n >= 1)")),
        })
    })?;
    let printed = std::cell::Cell::new(0u64);
    // Its arguments' __tostring may call back into the API: the context is borrowed only for the name.
    define(lua, ctx, "print", move |_, c, args: Variadic<Value>| {
        let n = printed.get();
        printed.set(n + 1);
        if n < PRINTS {
            let words: Vec<String> = args.iter().map(|v| v.to_string().unwrap_or_else(|_| format!("{v:?}"))).collect();
            let name = name_of(c.borrow_mut().me().id);
            eprintln!("{name}: {}{}", words.join("\t"), if n + 1 == PRINTS { " (further prints are dropped)" } else { "" });
        }
        Ok(())
    })?;
    let json = lua.create_table()?;
    json.set("encode", lua.create_function(|_, v: Value| to_json(&v))?)?;
    json.set(
        "decode",
        lua.create_function(|lua, s: mlua::LuaString| {
            let v: serde_json::Value = serde_json::from_slice(&s.as_bytes()).map_err(|e| mlua::Error::runtime(format!("json.decode: {e}")))?;
            to_lua(lua, &v)
        })?,
    )?;
    lua.globals().set("json", json)?;
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
                "index" => Value::Integer((c.first_index + c.bot) as i64),
                "name" => Value::String(lua.create_string(name_of(id))?),
                _ => Value::Nil,
            })
        })?,
    )?;
    bot.set_metatable(Some(meta))?;
    lua.globals().set("bot", bot)
}

/// Bot `id`'s name: `bot17` for the 17th first bot of the run, `bot17.1`, `bot17.2`, … for the newcomers in
/// its place (an id's low 32 bits are its slot, the high ones its generation).
pub fn name_of(id: u64) -> String {
    match id >> 32 {
        0 => format!("bot{id}"),
        generation => format!("bot{}.{generation}", id & 0xffff_ffff),
    }
}

/// `__http(method, path, body, headers)`: a table body goes as JSON.
fn register_http(lua: &Lua, ctx: &Shared) -> mlua::Result<()> {
    define(lua, ctx, "__http", |lua, c, (method, path, body, headers): (String, String, Value, Option<Table>)| {
        let mut request = HttpRequest { method, path: path_of(&path)?, keep_alive: true, headers: pairs(headers.as_ref())?, ..Default::default() };
        match &body {
            Value::Nil => {}
            Value::String(s) => request.body = s.as_bytes().to_vec(),
            Value::Table(_) => {
                request.body = to_json(&body)?.into_bytes();
                request.headers.push(("Content-Type".into(), "application/json".into()));
            }
            other => return Err(mlua::Error::runtime(format!("an HTTP body is a table (sent as JSON) or a string, not a {}", other.type_name()))),
        }
        let mut c = c.borrow_mut();
        if c.me().http.is_some() {
            return Err(mlua::Error::runtime("an HTTP request was made before the bot's last one was answered"));
        }
        let waiter = c.waiter(lua)?;
        c.me().http = Some(waiter);
        c.out.push(Request::Http(request));
        Ok(())
    })
}

/// A table of headers (name = value) as pairs; none for nil.
pub fn pairs(headers: Option<&Table>) -> mlua::Result<Vec<(String, String)>> {
    headers.iter().flat_map(|h| h.pairs::<String, String>()).collect()
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

#[cfg(test)]
mod tests {
    #[test]
    fn a_newcomer_is_named_after_the_slot_it_takes() {
        assert_eq!(super::name_of(17), "bot17");
        assert_eq!(super::name_of((1 << 32) | 17), "bot17.1");
        assert_eq!(super::name_of((2 << 32) | 4_000_000), "bot4000000.2");
    }
}
