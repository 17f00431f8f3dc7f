//! The log record: a 24-byte checksummed header, the key, the value, and
//! zero padding to an 8-byte boundary (`docs/stackdb-format.md`).

use crate::error::{Error, Result};

/// Bytes before the key.
pub const HEADER_LEN: usize = 24;
/// A put's or tombstone's flag: a sweep's copy (format 5 on). A young sweep's walk stops at one: what
/// lies beneath a copy is old.
pub const COPY: u8 = 1;
/// Longest key.
pub const MAX_KEY: usize = u16::MAX as usize;
/// Longest value.
pub const MAX_VALUE: usize = 16 * 1024 * 1024;

/// What a record says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// The key now has this value.
    Put = 1,
    /// The key is deleted (a tombstone).
    Delete = 2,
    /// The records since the previous commit form one atomic batch.
    Commit = 3,
}

impl Kind {
    fn from_byte(b: u8) -> Option<Kind> {
        match b {
            1 => Some(Kind::Put),
            2 => Some(Kind::Delete),
            3 => Some(Kind::Commit),
            _ => None,
        }
    }
}

/// A decoded record header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Stored CRC.
    pub crc: u32,
    /// Record kind.
    pub kind: Kind,
    /// Key length.
    pub key_len: usize,
    /// Value length.
    pub value_len: usize,
    /// Offset of the record beneath this one in its bucket (0 = none).
    pub prev: u64,
    /// For a commit record, what its batch does (0 = user batch, 1 = split,
    /// 2 = rewrite by compaction, 3 = split sharing stacks, 4 = young sweep);
    /// for a put or a tombstone, [`COPY`] or 0.
    pub flags: u8,
}

impl Header {
    /// Whether the record is a sweep's copy.
    pub fn is_copy(&self) -> bool {
        self.kind != Kind::Commit && self.flags == COPY
    }

    /// Bytes the whole record occupies, padding included.
    pub fn padded_len(&self) -> usize {
        padded_len(self.key_len, self.value_len)
    }

    /// Decodes and sanity-checks a header (the CRC is checked with the body).
    pub fn decode(b: &[u8; HEADER_LEN], offset: u64) -> Result<Header> {
        let corrupt = Error::Corrupt { what: "log record header", offset };
        let kind = Kind::from_byte(b[4]).ok_or(corrupt)?;
        let key_len = u16::from_le_bytes([b[6], b[7]]) as usize;
        let value_len = u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize;
        let flags_ok = if kind == Kind::Commit { b[5] <= 4 } else { b[5] <= COPY };
        if !flags_ok || b[12..16] != [0; 4] || value_len > MAX_VALUE {
            return Err(Error::Corrupt { what: "log record header", offset });
        }
        Ok(Header {
            crc: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            kind,
            key_len,
            value_len,
            prev: u64::from_le_bytes(b[16..24].try_into().expect("8 bytes")),
            flags: b[5],
        })
    }
}

/// Bytes a record with these lengths occupies.
pub fn padded_len(key_len: usize, value_len: usize) -> usize {
    (HEADER_LEN + key_len + value_len + 7) & !7
}

/// Appends an encoded record to `out`.
pub fn encode(out: &mut Vec<u8>, kind: Kind, key: &[u8], value: &[u8], prev: u64) -> Result<()> {
    encode_flagged(out, kind, 0, key, value, prev)
}

/// Appends an encoded record with `flags` to `out`.
pub fn encode_flagged(out: &mut Vec<u8>, kind: Kind, flags: u8, key: &[u8], value: &[u8], prev: u64) -> Result<()> {
    check_lengths(key, value)?;
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    out.push(kind as u8);
    out.push(flags);
    out.extend_from_slice(&(key.len() as u16).to_le_bytes());
    out.extend_from_slice(&(value.len() as u32).to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&prev.to_le_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(value);
    let crc = crc32fast::hash(&out[start + 4..]);
    out[start..start + 4].copy_from_slice(&crc.to_le_bytes());
    out.resize(start + padded_len(key.len(), value.len()), 0);
    Ok(())
}

/// Refuses a key or value longer than a record can hold.
pub fn check_lengths(key: &[u8], value: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY {
        return Err(Error::TooLarge { what: "key", len: key.len(), max: MAX_KEY });
    }
    if value.len() > MAX_VALUE {
        return Err(Error::TooLarge { what: "value", len: value.len(), max: MAX_VALUE });
    }
    Ok(())
}

/// Whether the checksum of a whole record (header, key, value) holds.
pub fn checksum_holds(header: &Header, record: &[u8]) -> bool {
    let body_end = HEADER_LEN + header.key_len + header.value_len;
    record.len() >= body_end && crc32fast::hash(&record[4..body_end]) == header.crc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header_of(bytes: &[u8]) -> Header {
        Header::decode(bytes[..HEADER_LEN].try_into().unwrap(), 0).unwrap()
    }

    #[test]
    fn round_trip_with_padding() {
        let mut out = Vec::new();
        encode(&mut out, Kind::Put, b"key", b"value!", 4096).unwrap();
        assert_eq!(out.len(), 40); // 24 + 3 + 6 = 33 → 40
        let h = header_of(&out);
        assert_eq!((h.kind, h.key_len, h.value_len, h.prev), (Kind::Put, 3, 6, 4096));
        assert!(checksum_holds(&h, &out));
        assert_eq!(&out[24..27], b"key");
        assert_eq!(&out[27..33], b"value!");
    }

    #[test]
    fn every_flipped_bit_is_caught() {
        let mut out = Vec::new();
        encode(&mut out, Kind::Delete, b"k", b"", 8).unwrap();
        let body = HEADER_LEN + 1;
        for byte in 0..body {
            for bit in 0..8 {
                let mut bad = out.clone();
                bad[byte] ^= 1 << bit;
                let ok = Header::decode(bad[..HEADER_LEN].try_into().unwrap(), 0).map(|h| checksum_holds(&h, &bad)).unwrap_or(false);
                assert!(!ok, "flip of bit {bit} in byte {byte} went unnoticed");
            }
        }
    }

    #[test]
    fn limits_are_enforced() {
        let mut out = Vec::new();
        assert!(matches!(encode(&mut out, Kind::Put, &vec![0; MAX_KEY + 1], b"", 0), Err(Error::TooLarge { .. })));
        assert!(encode(&mut out, Kind::Put, b"k", &vec![7; 64 * 1024], 0).is_ok());
    }
}
