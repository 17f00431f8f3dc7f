//! MessagePack for scripts: `msgpack.encode(v)` and `msgpack.decode(s [, pos])` for protocols of their
//! own (a frame that is a code byte and then packed values), and the messages of a `format = "msgpack"`
//! WebSocket. Lua strings that are not UTF-8 pack as `bin`; `bin` unpacks as a Lua string.

use mlua::serde::SerializeOptions;
use mlua::{Lua, LuaSerdeExt, Value};

/// Nesting deeper than this is refused when decoding (a server's message, not a script's choice).
const MAX_DEPTH: usize = 64;

/// `value` packed.
pub fn encode(value: &Value) -> mlua::Result<Vec<u8>> {
    let packed = rmpv::ext::to_value(value).map_err(|e| mlua::Error::runtime(format!("msgpack: {e}")))?;
    let mut out = Vec::new();
    rmpv::encode::write_value(&mut out, &packed).map_err(|e| mlua::Error::runtime(format!("msgpack: {e}")))?;
    Ok(out)
}

/// The value `bytes` begins with, and how many bytes it took.
pub fn decode(bytes: &[u8]) -> Result<(rmpv::Value, usize), String> {
    let mut rest = bytes;
    let value = rmpv::decode::read_value_with_max_depth(&mut rest, MAX_DEPTH).map_err(|e| e.to_string())?;
    Ok((value, bytes.len() - rest.len()))
}

/// A packed value as a Lua value (nil for MessagePack's nil, inside tables too).
pub fn to_lua(lua: &Lua, value: &rmpv::Value) -> mlua::Result<Value> {
    let options = SerializeOptions::new().serialize_none_to_null(false).serialize_unit_to_null(false).set_array_metatable(false);
    lua.to_value_with(value, options)
}

/// Registers the `msgpack` table.
pub fn register(lua: &Lua) -> mlua::Result<()> {
    let t = lua.create_table()?;
    t.set("encode", lua.create_function(|lua, v: Value| lua.create_string(encode(&v)?))?)?;
    t.set(
        "decode",
        lua.create_function(|lua, (s, pos): (mlua::LuaString, Option<usize>)| {
            let bytes = s.as_bytes();
            let start = pos.unwrap_or(1).max(1) - 1;
            let rest = bytes
                .get(start..)
                .filter(|r| !r.is_empty())
                .ok_or_else(|| mlua::Error::runtime(format!("msgpack.decode: nothing at byte {}", start + 1)))?;
            let (value, used) = decode(rest).map_err(|e| mlua::Error::runtime(format!("msgpack.decode at byte {}: {e}", start + 1)))?;
            Ok((to_lua(lua, &value)?, start + used + 1))
        })?,
    )?;
    lua.globals().set("msgpack", t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_pack_and_unpack_with_positions() {
        let lua = Lua::new();
        register(&lua).unwrap();
        let (a, b, next, bin): (String, i64, usize, bool) = lua
            .load(
                r#"
                local frame = string.char(13) .. msgpack.encode("move") .. msgpack.encode({x = 3, name = "ü", raw = "\255\0"})
                local kind, at = msgpack.decode(frame, 2)
                local body, next = msgpack.decode(frame, at)
                return kind, body.x, next, body.raw == "\255\0" and body.name == "ü"
            "#,
            )
            .eval()
            .unwrap();
        assert_eq!((a.as_str(), b, bin), ("move", 3, true));
        let len: usize =
            lua.load(r#"return #(string.char(13) .. msgpack.encode("move") .. msgpack.encode({x = 3, name = "ü", raw = "\255\0"}))"#).eval().unwrap();
        assert_eq!(next, len + 1, "the position after the last value");
        let err = lua.load(r#"return msgpack.decode("\129")"#).exec().unwrap_err().to_string();
        assert!(err.contains("msgpack.decode at byte 1"), "{err}");
    }

    #[test]
    fn lua_strings_that_are_not_text_pack_as_bin() {
        let lua = Lua::new();
        let v: Value = lua.load(r#"return {"\255\254", "text", {1, 2}}"#).eval().unwrap();
        let (packed, used) = decode(&encode(&v).unwrap()).unwrap();
        assert!(used > 0);
        let items = packed.as_array().unwrap();
        assert!(items[0].is_bin() && items[1].is_str() && items[2].is_array(), "{packed:?}");
        let marked = lua.create_ser_userdata(super::super::convert::Bytes(b"text".to_vec())).unwrap();
        let (packed, _) = decode(&encode(&Value::UserData(marked)).unwrap()).unwrap();
        assert_eq!(packed.as_slice(), Some(&b"text"[..]), "binary(s) packs as bin even when it is text");
    }
}
