//! Lua values to JSON text and back: a table with keys 1..n is an array,
//! any other table an object (an empty one `{}`); JSON null reads as nil.
//! Socket.IO's binary attachments read as Lua strings in their placeholders'
//! places, and a script's `binary(s)` goes out as one.

use mlua::serde::SerializeOptions;
use mlua::{Lua, LuaSerdeExt, Table, Value};

/// Bytes a script marked with `binary(s)`: a Socket.IO attachment where they are emitted, MessagePack's
/// `bin` where they are packed (JSON has no bytes: an array of numbers).
pub struct Bytes(pub Vec<u8>);

impl mlua::UserData for Bytes {}

impl serde::Serialize for Bytes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

/// Tables nested deeper than this are refused when searched for attachments (a table that holds itself).
const MAX_DEPTH: usize = 64;

/// `value` with every `binary(…)` in it replaced by Socket.IO's placeholder `{_placeholder = true, num =
/// k}` and its bytes appended to `attachments`; None when it holds none. A table holding one is copied:
/// the script's own is left as it was.
pub fn placeholders(lua: &Lua, value: &Value, attachments: &mut Vec<Vec<u8>>) -> mlua::Result<Option<Value>> {
    replace(lua, value, attachments, 0)
}

fn replace(lua: &Lua, value: &Value, attachments: &mut Vec<Vec<u8>>, depth: usize) -> mlua::Result<Option<Value>> {
    match value {
        Value::UserData(ud) if ud.is::<Bytes>() => {
            attachments.push(ud.borrow::<Bytes>()?.0.clone());
            let t = lua.create_table()?;
            t.raw_set("_placeholder", true)?;
            t.raw_set("num", attachments.len() - 1)?;
            Ok(Some(Value::Table(t)))
        }
        Value::Table(t) => {
            if depth >= MAX_DEPTH {
                return Err(mlua::Error::runtime("a table nested more than 64 deep (one that holds itself?)"));
            }
            let mut copy: Option<Table> = None;
            for pair in t.pairs::<Value, Value>() {
                let (k, v) = pair?;
                if let Some(new) = replace(lua, &v, attachments, depth + 1)? {
                    let c = match &copy {
                        Some(c) => c.clone(),
                        None => {
                            let c = lua.create_table()?;
                            for pair in t.pairs::<Value, Value>() {
                                let (k, v) = pair?;
                                c.raw_set(k, v)?;
                            }
                            copy.insert(c).clone()
                        }
                    };
                    c.raw_set(k, new)?;
                }
            }
            Ok(copy.map(Value::Table))
        }
        _ => Ok(None),
    }
}

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

    #[test]
    fn binary_values_become_placeholders_in_a_copy() {
        let lua = Lua::new();
        lua.globals()
            .set("binary", lua.create_function(|lua, s: mlua::LuaString| lua.create_ser_userdata(Bytes(s.as_bytes().to_vec()))).unwrap())
            .unwrap();
        let v: Value = lua.load(r#"return { name = "up", file = { data = binary("\0\1"), kind = "png" }, more = binary("x") }"#).eval().unwrap();
        let mut attachments = Vec::new();
        let sent = placeholders(&lua, &v, &mut attachments).unwrap().expect("it holds binaries");
        let json: serde_json::Value = serde_json::from_str(&to_json(&sent).unwrap()).unwrap();
        let k = |p: &serde_json::Value| p["num"].as_u64().map(|k| attachments[k as usize].clone());
        assert_eq!((k(&json["file"]["data"]), k(&json["more"])), (Some(vec![0, 1]), Some(b"x".to_vec())), "{json}");
        assert_eq!(
            (json["name"].as_str(), json["file"]["kind"].as_str(), json["file"]["data"]["_placeholder"].as_bool()),
            (Some("up"), Some("png"), Some(true))
        );
        assert!(v.as_table().unwrap().get::<Table>("file").unwrap().get::<Value>("data").unwrap().is_userdata(), "the script's table is unchanged");
        assert!(placeholders(&lua, &lua.load("return {1, 2}").eval().unwrap(), &mut attachments).unwrap().is_none());
        let cyclic: Value = lua.load("local t = {} t.me = t return t").eval().unwrap();
        assert!(placeholders(&lua, &cyclic, &mut attachments).is_err());
    }
}
