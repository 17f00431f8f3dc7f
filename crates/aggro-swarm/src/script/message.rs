//! A structured message of a plain WebSocket, JSON or MessagePack: the fields aggro reads from it (the
//! type naming its handler, the reply id a `call` waits for, the `from`/`seq`/`t` of delivery checks)
//! and the Lua value its handler gets.

use super::{convert, msgpack};
use mlua::{Lua, Value};

pub enum Message {
    Json(serde_json::Value),
    Pack(rmpv::Value),
}

impl Message {
    /// The message a frame carries in `format`, if it parses.
    pub fn read(bytes: &[u8], pack: bool) -> Option<Message> {
        if pack { msgpack::decode(bytes).ok().map(|(v, _)| Message::Pack(v)) } else { serde_json::from_slice(bytes).ok().map(Message::Json) }
    }

    /// A number field.
    pub fn number(&self, key: &str) -> Option<f64> {
        match self {
            Message::Json(v) => v.get(key)?.as_f64(),
            Message::Pack(v) => field(v, key)?.as_f64().or_else(|| field(v, key)?.as_i64().map(|n| n as f64)),
        }
    }

    /// A sender field: a whole number, or a text (see `state::sender_of_text`).
    pub fn sender(&self, key: &str) -> Option<u64> {
        match self {
            Message::Json(v) => super::state::sender_of_json(v.get(key)?),
            Message::Pack(v) => {
                let f = field(v, key)?;
                f.as_u64().or_else(|| f.as_str().map(super::state::sender_of_text))
            }
        }
    }

    /// A text field.
    pub fn text(&self, key: &str) -> Option<&str> {
        match self {
            Message::Json(v) => v.get(key)?.as_str(),
            Message::Pack(v) => field(v, key)?.as_str(),
        }
    }

    /// A reply id: a whole number, or text that is one.
    pub fn id(&self, key: &str) -> Option<u64> {
        match self {
            Message::Json(v) => v.get(key).and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok())),
            Message::Pack(v) => field(v, key).and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok())),
        }
    }

    /// The message as its handler gets it.
    pub fn to_lua(&self, lua: &Lua) -> mlua::Result<Value> {
        match self {
            Message::Json(v) => convert::to_lua(lua, v),
            Message::Pack(v) => msgpack::to_lua(lua, v),
        }
    }
}

/// A map's value under a text key.
fn field<'v>(map: &'v rmpv::Value, key: &str) -> Option<&'v rmpv::Value> {
    map.as_map()?.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_formats_give_the_same_fields() {
        let json = Message::read(br#"{"type": "moved", "id": "7", "seq": 3, "t": 1.5}"#, false).unwrap();
        let lua = Lua::new();
        let v: Value = lua.load(r#"return {type = "moved", id = 7, seq = 3, t = 1.5}"#).eval().unwrap();
        let pack = Message::read(&msgpack::encode(&v).unwrap(), true).unwrap();
        for m in [&json, &pack] {
            assert_eq!((m.text("type"), m.id("id"), m.number("seq"), m.number("t")), (Some("moved"), Some(7), Some(3.0), Some(1.5)));
            assert_eq!(m.number("absent"), None);
        }
        assert!(Message::read(b"\x92\x01", true).is_none() && Message::read(b"{", false).is_none());
    }
}
