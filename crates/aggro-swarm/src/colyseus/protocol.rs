//! Colyseus's room protocol as a client sees it (read from `@colyseus/core`
//! 0.18 and `@colyseus/shared-types`): the first byte of every WebSocket frame
//! is a code (low 5 bits; the high 3 are modifiers); a message is
//! `[ROOM_DATA][type][msgpack payload]`, the type a msgpack string or number.
//! State and patches are `@colyseus/schema`'s binary delta format, counted here
//! by frame, not decoded.

pub const JOIN_ROOM: u8 = 10;
pub const ERROR: u8 = 11;
pub const LEAVE_ROOM: u8 = 12;
pub const ROOM_DATA: u8 = 13;
pub const ROOM_STATE: u8 = 14;
pub const ROOM_STATE_PATCH: u8 = 15;
pub const ROOM_DATA_SCHEMA: u8 = 16;
pub const ROOM_DATA_BYTES: u8 = 17;
pub const PING: u8 = 18;
pub const ROOM_RESPONSE: u8 = 22;
/// The code's bits of a frame's first byte.
const CODE_MASK: u8 = 31;

/// What a server frame is.
#[derive(Clone, Debug, PartialEq)]
pub enum Frame<'a> {
    /// The server seated the client; it must answer with [`JOIN_ROOM`] to get the state.
    Joined,
    /// An error, with its code and message.
    Error {
        code: i64,
        message: String,
    },
    /// The server asks the client to leave.
    Leave,
    /// A message: its type (a string, or a number shown as one) and its msgpack payload (empty: none).
    Data {
        kind: MessageType<'a>,
        payload: &'a [u8],
    },
    /// The full state, or a patch to it: counted by length.
    State,
    Patch,
    /// Any other code the protocol knows (schema messages, pings, responses).
    Other(u8),
}

/// A message's type.
#[derive(Clone, Debug, PartialEq)]
pub enum MessageType<'a> {
    Name(&'a str),
    Number(i64),
}

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FrameError {
    #[error("an empty frame")]
    Empty,
    #[error("unknown frame code {0}")]
    UnknownCode(u8),
    #[error("a malformed {0} frame")]
    Malformed(&'static str),
}

/// Reads one server frame.
pub fn read(frame: &[u8]) -> Result<Frame<'_>, FrameError> {
    let (&first, rest) = frame.split_first().ok_or(FrameError::Empty)?;
    Ok(match first & CODE_MASK {
        JOIN_ROOM => Frame::Joined,
        ERROR => {
            let mut r = rest;
            let code = head_number(&mut r).ok_or(FrameError::Malformed("error"))?;
            let message = head_str(&mut r).unwrap_or_default().to_string();
            Frame::Error { code, message }
        }
        LEAVE_ROOM => Frame::Leave,
        ROOM_DATA => {
            let mut r = rest;
            let kind = read_type(&mut r).ok_or(FrameError::Malformed("message"))?;
            Frame::Data { kind, payload: r }
        }
        ROOM_STATE => Frame::State,
        ROOM_STATE_PATCH => Frame::Patch,
        c @ (ROOM_DATA_SCHEMA | ROOM_DATA_BYTES | PING | 19..=ROOM_RESPONSE) => Frame::Other(c),
        c => return Err(FrameError::UnknownCode(c)),
    })
}

/// Writes a client message's head `[ROOM_DATA][type]` into `out`; its msgpack payload (if any) follows.
pub fn write_message_head(kind: &str, out: &mut Vec<u8>) {
    out.push(ROOM_DATA);
    rmp::encode::write_str(out, kind).expect("writing to a Vec");
}

/// The numbers under `keys` in a msgpack map payload (None where a key is missing or not a number), read
/// without building the map; Err when the payload is not a well-formed map.
pub fn map_numbers<const N: usize>(payload: &[u8], keys: [&str; N]) -> Result<[Option<f64>; N], FrameError> {
    const BAD: FrameError = FrameError::Malformed("message payload");
    let mut r = payload;
    let len = rmp::decode::read_map_len(&mut r).map_err(|_| BAD)?;
    let mut found = [None; N];
    for _ in 0..len {
        let key = read_str(&mut r).ok_or(BAD)?;
        let slot = keys.iter().position(|k| *k == key);
        let value = read_scalar(&mut r).ok_or(BAD)?;
        if let (Some(i), Some(v)) = (slot, value) {
            found[i] = Some(v);
        }
    }
    if r.is_empty() { Ok(found) } else { Err(BAD) }
}

/// One value: Some(number) for a number, None for anything else (skipped); the outer None when malformed.
fn read_scalar(r: &mut &[u8]) -> Option<Option<f64>> {
    let first = *r.first()?;
    if !matches!(first, 0x00..=0x7f | 0xe0..=0xff | 0xcc..=0xd3 | 0xca | 0xcb) {
        rmpv::decode::read_value_ref(r).ok()?;
        return Some(None);
    }
    Some(Some(match rmpv::decode::read_value_ref(r).ok()? {
        rmpv::ValueRef::Integer(i) => i.as_f64()?,
        rmpv::ValueRef::F32(f) => f as f64,
        rmpv::ValueRef::F64(f) => f,
        _ => return Some(None),
    }))
}

fn read_type<'a>(r: &mut &'a [u8]) -> Option<MessageType<'a>> {
    match r.first()? {
        0xa0..=0xbf | 0xd9..=0xdb => head_str(r).map(MessageType::Name),
        _ => head_number(r).map(MessageType::Number),
    }
}

/// `n` bytes off the front of `r`.
fn take<'a>(r: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    let (bytes, rest) = (r.get(..n)?, r.get(n..)?);
    *r = rest;
    Some(bytes)
}

/// A number of a frame's head (an error's code, a message's numeric type), as `@colyseus/schema`
/// encodes it: msgpack's prefixes with the bytes after them little-endian (msgpack's are big-endian;
/// a payload is msgpack proper). A float is taken whole-number-wise.
fn head_number(r: &mut &[u8]) -> Option<i64> {
    let prefix = *take(r, 1)?.first()?;
    let le = |r: &mut &[u8], n: usize| -> Option<[u8; 8]> {
        let mut word = [0u8; 8];
        word[..n].copy_from_slice(take(r, n)?);
        Some(word)
    };
    let signed = |word: [u8; 8], bits: u32| (i64::from_le_bytes(word) << (64 - bits)) >> (64 - bits);
    Some(match prefix {
        0x00..=0x7f => prefix as i64,
        0xe0..=0xff => prefix as i8 as i64,
        0xcc => le(r, 1).map(i64::from_le_bytes)?,
        0xcd => le(r, 2).map(i64::from_le_bytes)?,
        0xce => le(r, 4).map(i64::from_le_bytes)?,
        0xcf => le(r, 8).map(i64::from_le_bytes)?,
        0xd0 => signed(le(r, 1)?, 8),
        0xd1 => signed(le(r, 2)?, 16),
        0xd2 => signed(le(r, 4)?, 32),
        0xd3 => i64::from_le_bytes(le(r, 8)?),
        0xca => f32::from_le_bytes(take(r, 4)?.try_into().ok()?) as i64,
        0xcb => f64::from_le_bytes(take(r, 8)?.try_into().ok()?) as i64,
        _ => return None,
    })
}

/// A string of a frame's head, as `@colyseus/schema` encodes it (lengths little-endian).
fn head_str<'a>(r: &mut &'a [u8]) -> Option<&'a str> {
    let prefix = *take(r, 1)?.first()?;
    let len = match prefix {
        0xa0..=0xbf => (prefix & 0x1f) as usize,
        0xd9 => *take(r, 1)?.first()? as usize,
        0xda => u16::from_le_bytes(take(r, 2)?.try_into().ok()?) as usize,
        0xdb => u32::from_le_bytes(take(r, 4)?.try_into().ok()?) as usize,
        _ => return None,
    };
    std::str::from_utf8(take(r, len)?).ok()
}

fn read_str<'a>(r: &mut &'a [u8]) -> Option<&'a str> {
    let bytes: &'a [u8] = r;
    let (s, rest) = rmp::decode::read_str_from_slice(bytes).ok()?;
    *r = rest;
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmpv::Value;

    #[test]
    fn a_message_written_is_read_back_with_its_type_and_payload() {
        let payload = Value::Map(vec![
            (Value::from("t"), Value::from(123_456_789_012u64)),
            (Value::from("name"), Value::from("x")),
            (Value::from("x"), Value::F64(1.5)),
        ]);
        let mut out = Vec::new();
        write_message_head("move", &mut out);
        rmpv::encode::write_value(&mut out, &payload).unwrap();
        assert_eq!(out[0], ROOM_DATA);
        let Ok(Frame::Data { kind: MessageType::Name("move"), payload: bytes }) = read(&out) else { panic!("{:?}", read(&out)) };
        assert_eq!(map_numbers(bytes, ["x", "t", "name", "y"]), Ok([Some(1.5), Some(123_456_789_012.0), None, None]));
        assert_eq!(map_numbers(&bytes[..bytes.len() - 1], ["x"]), Err(FrameError::Malformed("message payload")));
        assert_eq!(map_numbers(&[0x93, 1, 2, 3], ["x"]), Err(FrameError::Malformed("message payload")), "an array is not a map");
        // A numeric type and no payload, as `room.send(3)` writes it.
        assert_eq!(read(&[ROOM_DATA, 3]), Ok(Frame::Data { kind: MessageType::Number(3), payload: &[] }));
    }

    #[test]
    fn an_error_frame_gives_its_code_and_text_as_the_server_encoded_them() {
        // `ServerError(403, "bot-4 turned away")` as @colyseus/core writes it: the code's bytes little-endian.
        let mut frame = vec![ERROR, 0xcd, 0x93, 0x01, 0xb1];
        frame.extend_from_slice(b"bot-4 turned away");
        assert_eq!(read(&frame), Ok(Frame::Error { code: 403, message: "bot-4 turned away".into() }));
        assert_eq!(read(&[ERROR, 0xd1, 0x0c, 0xfe, 0xa0]), Ok(Frame::Error { code: -500, message: String::new() }));
        let long = "x".repeat(300);
        let mut frame = vec![ERROR, 4, 0xda, 0x2c, 0x01];
        frame.extend_from_slice(long.as_bytes());
        assert_eq!(read(&frame), Ok(Frame::Error { code: 4, message: long }));
    }

    #[test]
    fn frames_are_told_apart_by_their_code_and_garbage_is_an_error_not_a_panic() {
        assert_eq!(read(&[JOIN_ROOM, 3, b'a', b'b', b'c']), Ok(Frame::Joined));
        assert_eq!(read(&[ROOM_STATE_PATCH, 0xff, 1]), Ok(Frame::Patch));
        // A modifier bit set (timed patches) keeps the code.
        assert_eq!(read(&[ROOM_STATE_PATCH | 0x20, 0, 0, 0, 0]), Ok(Frame::Patch));
        assert_eq!(read(&[ERROR, 0xcd, 0x74, 0x10, 0xa3, b'b', b'a', b'd']), Ok(Frame::Error { code: 4212, message: "bad".into() }));
        assert_eq!(read(&[]), Err(FrameError::Empty));
        assert_eq!(read(&[3, 1, 2]), Err(FrameError::UnknownCode(3)));
        assert_eq!(read(&[ROOM_DATA]), Err(FrameError::Malformed("message")));
        assert_eq!(read(&[ROOM_DATA, 0xa4, b'm', b'o']), Err(FrameError::Malformed("message")));
        assert!(map_numbers(&[0x92, 0x01], ["t"]).is_err());
        for seed in 0..2000u64 {
            let mut rng = aggro_core::rng::Rng::seeded(seed);
            let len = rng.range_inclusive(0, 40) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            if let Ok(Frame::Data { payload, .. }) = read(&bytes) {
                let _ = map_numbers(payload, ["t"]);
            }
        }
    }
}
