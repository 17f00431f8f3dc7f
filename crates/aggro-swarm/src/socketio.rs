//! Socket.IO v4 over WebSocket, as its client speaks it: Engine.IO v4
//! packets (one per text frame: `0` open, `2` ping answered by `3` pong, `4`
//! message, `1` close, `6` noop; binary frames are attachments) carrying
//! Socket.IO v5 packets — `<type>[<attachments>-][<namespace>,][<ack id>][JSON]`
//! with types 0 CONNECT, 1 DISCONNECT, 2 EVENT, 3 ACK, 4 CONNECT_ERROR,
//! 5 BINARY_EVENT, 6 BINARY_ACK. Written from the protocol's own spec
//! (socket.io-protocol v5, engine.io-protocol v4) and `socket.io-parser`'s
//! encoder; the WebSocket frames underneath are tungstenite's.

/// The WebSocket path of a Socket.IO server mounted at `path` (`/socket.io/` by default).
pub fn socket_path(path: &str) -> String {
    let path = path.trim_end_matches('/');
    format!("{path}/?EIO=4&transport=websocket")
}

/// An Engine.IO packet, read from a text frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine<'a> {
    /// The handshake (its JSON: sid, pingInterval, …).
    Open(&'a str),
    Close,
    /// The server's heartbeat, answered by a pong with the same payload.
    Ping(&'a str),
    Pong,
    /// A Socket.IO packet.
    Message(&'a str),
    Noop,
}

/// Reads an Engine.IO packet from a text frame.
pub fn engine(frame: &str) -> Result<Engine<'_>, String> {
    let (kind, rest) = frame.split_at_checked(1).ok_or("an empty Engine.IO packet")?;
    Ok(match kind {
        "0" => Engine::Open(rest),
        "1" => Engine::Close,
        "2" => Engine::Ping(rest),
        "3" => Engine::Pong,
        "4" => Engine::Message(rest),
        "6" => Engine::Noop,
        other => return Err(format!("unknown Engine.IO packet type {other:?}")),
    })
}

/// The kind of a Socket.IO packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Connect,
    Disconnect,
    Event,
    Ack,
    ConnectError,
    BinaryEvent,
    BinaryAck,
}

/// A Socket.IO packet: its JSON data as text (binary attachments, if any, follow in binary frames).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet<'a> {
    pub kind: Kind,
    /// Binary frames that follow (binary kinds only).
    pub attachments: usize,
    /// `/` or the namespace named.
    pub namespace: &'a str,
    pub id: Option<u64>,
    /// The JSON payload (empty when none).
    pub data: &'a str,
}

/// Reads a Socket.IO packet (the text after Engine.IO's `4`).
pub fn packet(text: &str) -> Result<Packet<'_>, String> {
    let bad = |why: &str| format!("bad Socket.IO packet ({why}): {:?}", text.chars().take(60).collect::<String>());
    let (kind, mut rest) = text.split_at_checked(1).ok_or_else(|| bad("empty"))?;
    let kind = match kind {
        "0" => Kind::Connect,
        "1" => Kind::Disconnect,
        "2" => Kind::Event,
        "3" => Kind::Ack,
        "4" => Kind::ConnectError,
        "5" => Kind::BinaryEvent,
        "6" => Kind::BinaryAck,
        _ => return Err(bad("unknown type")),
    };
    let mut attachments = 0;
    if matches!(kind, Kind::BinaryEvent | Kind::BinaryAck) {
        let dash = rest.find('-').ok_or_else(|| bad("no attachment count"))?;
        attachments = rest[..dash].parse().map_err(|_| bad("attachment count"))?;
        rest = &rest[dash + 1..];
    }
    let mut namespace = "/";
    if rest.starts_with('/') {
        let end = rest.find(',').unwrap_or(rest.len());
        namespace = &rest[..end];
        rest = rest.get(end + 1..).unwrap_or("");
    }
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let id = (digits > 0).then(|| rest[..digits].parse()).transpose().map_err(|_| bad("ack id"))?;
    Ok(Packet { kind, attachments, namespace, id, data: &rest[digits..] })
}

/// The text frame of Socket.IO packet `kind` (Event, Ack, Connect, Disconnect) in `namespace`, with ack
/// `id` and JSON `data` (empty for none).
/// A packet with `attachments` binary attachments is sent as its binary kind (an event as BinaryEvent,
/// an ack as BinaryAck), the attachments in binary frames after it.
pub fn encode(kind: Kind, attachments: usize, namespace: &str, id: Option<u64>, data: &str) -> String {
    let kind = match (kind, attachments) {
        (Kind::Event, 1..) => Kind::BinaryEvent,
        (Kind::Ack, 1..) => Kind::BinaryAck,
        (kind, _) => kind,
    };
    let digit = match kind {
        Kind::Connect => '0',
        Kind::Disconnect => '1',
        Kind::Event => '2',
        Kind::Ack => '3',
        Kind::ConnectError => '4',
        Kind::BinaryEvent => '5',
        Kind::BinaryAck => '6',
    };
    let mut s = String::with_capacity(data.len() + 16);
    s.push('4');
    s.push(digit);
    if attachments > 0 {
        s.push_str(&attachments.to_string());
        s.push('-');
    }
    if namespace != "/" {
        s.push_str(namespace);
        s.push(',');
    }
    if let Some(id) = id {
        s.push_str(&id.to_string());
    }
    s.push_str(data);
    s
}

/// The Engine.IO pong answering `ping`'s payload.
pub fn pong(ping_payload: &str) -> String {
    format!("3{ping_payload}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_read_as_the_spec_writes_them() {
        assert_eq!(engine("0{\"sid\":\"x\"}"), Ok(Engine::Open("{\"sid\":\"x\"}")));
        assert_eq!(engine("2"), Ok(Engine::Ping("")));
        assert_eq!(engine("2probe"), Ok(Engine::Ping("probe")));
        assert_eq!(pong("probe"), "3probe");
        assert!(engine("").is_err() && engine("9").is_err());
        let p = |t| packet(t).unwrap();
        assert_eq!(p("0{\"sid\":\"a\"}"), Packet { kind: Kind::Connect, attachments: 0, namespace: "/", id: None, data: "{\"sid\":\"a\"}" });
        assert_eq!(p("2[\"hello\",1]"), Packet { kind: Kind::Event, attachments: 0, namespace: "/", id: None, data: "[\"hello\",1]" });
        assert_eq!(p("2/admin,456[\"project:delete\",123]").namespace, "/admin");
        assert_eq!(p("2/admin,456[\"project:delete\",123]").id, Some(456));
        assert_eq!(p("3/admin,456[]"), Packet { kind: Kind::Ack, attachments: 0, namespace: "/admin", id: Some(456), data: "[]" });
        assert_eq!(p("12"), Packet { kind: Kind::Disconnect, attachments: 0, namespace: "/", id: Some(2), data: "" });
        assert_eq!(p("1/admin,").namespace, "/admin");
        let b = p("51-[\"hello\",{\"_placeholder\":true,\"num\":0}]");
        assert_eq!((b.kind, b.attachments, b.data), (Kind::BinaryEvent, 1, "[\"hello\",{\"_placeholder\":true,\"num\":0}]"));
        assert_eq!(p("4{\"message\":\"Not authorized\"}").kind, Kind::ConnectError);
        assert!(packet("7").is_err() && packet("5x-[]").is_err() && packet("").is_err());
    }

    #[test]
    fn packets_are_written_as_the_reference_encoder_writes_them() {
        assert_eq!(encode(Kind::Connect, 0, "/", None, ""), "40");
        assert_eq!(encode(Kind::Connect, 0, "/", None, "{\"token\":\"t\"}"), "40{\"token\":\"t\"}");
        assert_eq!(encode(Kind::Event, 0, "/", Some(12), "[\"buy\",{\"item\":1}]"), "4212[\"buy\",{\"item\":1}]");
        assert_eq!(encode(Kind::Ack, 0, "/chat", Some(3), "[true]"), "43/chat,3[true]");
        let up = encode(Kind::Event, 1, "/game", None, "[\"up\",{\"_placeholder\":true,\"num\":0}]");
        assert_eq!(up, "451-/game,[\"up\",{\"_placeholder\":true,\"num\":0}]");
        assert_eq!(encode(Kind::Ack, 2, "/", Some(4), "[]"), "462-4[]");
        let p = packet(&up[1..]).unwrap();
        assert_eq!((p.kind, p.attachments, p.namespace), (Kind::BinaryEvent, 1, "/game"));
        assert_eq!(socket_path("/socket.io/"), "/socket.io/?EIO=4&transport=websocket");
    }
}
