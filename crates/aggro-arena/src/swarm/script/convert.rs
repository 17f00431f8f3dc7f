//! Lua values to JSON text and back: a table with keys 1..n is an array,
//! any other table an object (an empty one `{}`); JSON null reads as nil.
//! Socket.IO's binary attachments read as Lua strings in their placeholders'
//! places.

use mlua::serde::SerializeOptions;
use mlua::{Lua, LuaSerdeExt, Table, Value};

/// `value` as JSON text.
pub fn to_json(value: &Value) -> mlua::Result<String> {
    serde_json::to_string(value).map_err(mlua::Error::external)
}

/// JSON `value` as a Lua value.
pub fn to_lua(lua: &Lua, value: &serde_json::Value) -> mlua::Result<Value> {
    let options = SerializeOptions::new().serialize_none_to_null(false).serialize_unit_to_null(false).set_array_metatable(false);
    lua.to_value_with(value, options)
}

/// Puts `binaries` in place of the placeholders (`{_placeholder = true, num = k}`) inside `value`.
pub fn fill_attachments(lua: &Lua, value: &Value, binaries: &[Vec<u8>]) -> mlua::Result<Option<Value>> {
    let Value::Table(t) = value else { return Ok(None) };
    if t.raw_get::<Option<bool>>("_placeholder")? == Some(true) {
        let k: usize = t.raw_get::<Option<usize>>("num")?.unwrap_or(usize::MAX);
        return Ok(Some(binaries.get(k).map(|b| lua.create_string(b)).transpose()?.map_or(Value::Nil, Value::String)));
    }
    fill_table(lua, t, binaries)?;
    Ok(None)
}

fn fill_table(lua: &Lua, t: &Table, binaries: &[Vec<u8>]) -> mlua::Result<()> {
    let pairs: Vec<(Value, Value)> = t.pairs::<Value, Value>().collect::<mlua::Result<_>>()?;
    for (k, v) in pairs {
        if let Some(replaced) = fill_attachments(lua, &v, binaries)? {
            t.raw_set(k, replaced)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_go_to_json_and_back() {
        let lua = Lua::new();
        let v: Value = lua.load(r#"return { name = "x", list = {1, 2, 3}, empty = {} }"#).eval().unwrap();
        let json: serde_json::Value = serde_json::from_str(&to_json(&v).unwrap()).unwrap();
        assert_eq!(json, serde_json::json!({"name": "x", "list": [1, 2, 3], "empty": {}}));
        let back = to_lua(&lua, &serde_json::json!({"a": null, "b": [true, 2.5]})).unwrap();
        let t = back.as_table().unwrap();
        assert_eq!(t.get::<Value>("a").unwrap(), Value::Nil);
        assert_eq!(t.get::<Table>("b").unwrap().get::<f64>(2).unwrap(), 2.5);
        let with = to_lua(&lua, &serde_json::json!(["file", {"_placeholder": true, "num": 0}])).unwrap();
        fill_attachments(&lua, &with, &[vec![0, 159, 146]]).unwrap();
        let bytes = with.as_table().unwrap().get::<mlua::LuaString>(2).unwrap();
        assert_eq!(&*bytes.as_bytes(), &[0, 159, 146]);
    }
}
