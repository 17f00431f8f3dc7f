//! What a bot's socket writes: its protocol, read from `socketio.connect`'s or `websocket.connect`'s
//! options, and Socket.IO packets — a call's values as a JSON array, the bytes a script marked with
//! `binary(…)` as attachments after the packet.

use super::convert::{placeholders, to_json};
use super::state::{Format, Protocol};
use crate::socketio;
use crate::websocket::Request;
use mlua::{Lua, MultiValue, Table, Value};

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
                type_field: text("type")?.unwrap_or_else(|| "type".into()).into(),
                reply_field: text("reply")?.unwrap_or_else(|| "id".into()).into(),
            }
        }
    })
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
