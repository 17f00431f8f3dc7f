//! Packet layout: every byte this crate reads or writes goes through here.
//!
//! ```text
//! connect request  [0x01]["AGR1"][token: 40][tag: 8]
//! sealed packet    [kind: 1][slot: u32][seq: u32][body ...][tag: 8]
//! ```
//! Integers are little-endian. The kind's top bit is the direction (set:
//! server to client), so a packet reflected back at its sender fails its tag.
//! The tag is SipHash-2-4 under the session key over every byte before it.

use crate::token::{SessionKey, TOKEN_BYTES};
/// The bounds-checked reader every packet is read with (shared with the MMO world's codec).
pub use aggro_bytes::Reader;
use std::hash::Hasher;

/// Bytes of the authentication tag at the end of every packet but none.
pub const TAG: usize = 8;
/// Bytes of a sealed packet's header.
pub const HEADER: usize = 9;
/// Identifies aggro's protocol, version 1, in a connect request.
pub const MAGIC: [u8; 4] = *b"AGR1";
/// Bytes of a connect request.
pub const REQUEST_BYTES: usize = 1 + 4 + TOKEN_BYTES + TAG;

/// Set in a kind sent by the server.
pub const FROM_SERVER: u8 = 0x80;
/// A client asks to join (not sealed: it carries the token and a tag under the derived key).
pub const REQUEST: u8 = 0x01;
/// The server's welcome: the body is the client id.
pub const ACCEPT: u8 = 0x02 | FROM_SERVER;
/// The server's refusal: the body is a [`DenyReason`](crate::server::DenyReason) byte.
pub const DENIED: u8 = 0x03 | FROM_SERVER;
/// Acks, reliable slices and an unreliable payload.
pub const DATA: u8 = 0x04;
/// The sender is leaving.
pub const DISCONNECT: u8 = 0x05;

/// A sealed packet's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The kind byte, direction included.
    pub kind: u8,
    /// The session slot the packet belongs to.
    pub slot: u32,
    /// The sender's sequence number.
    pub seq: u32,
}

/// The tag of `bytes` under `key`.
pub fn tag(key: &SessionKey, bytes: &[u8]) -> u64 {
    let mut h = siphasher::sip::SipHasher24::new_with_keys(key.k0, key.k1);
    h.write(bytes);
    h.finish()
}

/// Whether the packet's last [`TAG`] bytes are the tag of the rest.
pub fn verify(key: &SessionKey, packet: &[u8]) -> bool {
    if packet.len() < TAG {
        return false;
    }
    let (body, t) = packet.split_at(packet.len() - TAG);
    tag(key, body) == u64::from_le_bytes(t.try_into().expect("8 bytes"))
}

/// Appends the tag of everything in `buf`.
pub fn seal(key: &SessionKey, buf: &mut Vec<u8>) {
    let t = tag(key, buf);
    buf.extend_from_slice(&t.to_le_bytes());
}

/// Starts a sealed packet in `buf` (cleared first).
pub fn write_header(buf: &mut Vec<u8>, h: Header) {
    buf.clear();
    buf.push(h.kind);
    buf.extend_from_slice(&h.slot.to_le_bytes());
    buf.extend_from_slice(&h.seq.to_le_bytes());
}

/// The header of a sealed packet, if it is long enough to be one.
pub fn read_header(packet: &[u8]) -> Option<Header> {
    if packet.len() < HEADER + TAG || packet[0] == REQUEST {
        return None;
    }
    let mut r = Reader::new(&packet[1..HEADER]);
    Some(Header { kind: packet[0], slot: r.u32()?, seq: r.u32()? })
}

/// The body of a sealed packet: between header and tag.
pub fn body(packet: &[u8]) -> &[u8] {
    &packet[HEADER..packet.len() - TAG]
}

/// Writes a connect request for `token` into `buf`.
pub fn write_request(buf: &mut Vec<u8>, token: &[u8; TOKEN_BYTES], key: &SessionKey) {
    buf.clear();
    buf.push(REQUEST);
    buf.extend_from_slice(&MAGIC);
    buf.extend_from_slice(token);
    seal(key, buf);
}

/// The token inside a connect request of the right length and magic.
pub fn read_request(packet: &[u8]) -> Option<&[u8]> {
    (packet.len() == REQUEST_BYTES && packet[0] == REQUEST && packet[1..5] == MAGIC).then(|| &packet[5..5 + TOKEN_BYTES])
}
