//! Bit-level writing and reading, least significant bit first, for snapshots.

/// Appends bits to a byte vector.
#[derive(Debug, Default)]
pub struct BitWriter {
    bytes: Vec<u8>,
    acc: u64,
    used: u32,
}

impl BitWriter {
    /// Empties the writer, keeping its buffer.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.acc = 0;
        self.used = 0;
    }

    /// Writes the low `n` bits of `v` (n ≤ 32).
    pub fn put(&mut self, v: u32, n: u32) {
        debug_assert!(n <= 32 && (n == 32 || v >> n == 0));
        self.acc |= (v as u64) << self.used;
        self.used += n;
        // Bits leave the accumulator four bytes at a time (used < 32 before, so it never overflows).
        if self.used >= 32 {
            self.bytes.extend_from_slice(&(self.acc as u32).to_le_bytes());
            self.acc >>= 32;
            self.used -= 32;
        }
    }

    /// Writes one bit.
    pub fn bit(&mut self, b: bool) {
        self.put(b as u32, 1);
    }

    /// Bits written so far.
    pub fn bit_len(&self) -> usize {
        self.bytes.len() * 8 + self.used as usize
    }

    /// Writes a piece taken from another writer.
    pub fn put_bits(&mut self, b: &Bits) {
        let mut left = b.len;
        for word in b.words {
            if left == 0 {
                break;
            }
            let n = left.min(64);
            self.put(word as u32, n.min(32));
            if n > 32 {
                self.put((word >> 32) as u32, n - 32);
            }
            left -= n;
        }
    }

    /// What was written as a piece to copy into other writers, and empties the writer; `None` beyond
    /// [`Bits::MAX`] bits.
    pub fn take_bits(&mut self) -> Option<Bits> {
        let len = self.bit_len() as u32;
        let mut words = [0u64; 3];
        if len > Bits::MAX {
            self.clear();
            return None;
        }
        for (i, b) in self.finish().iter().enumerate() {
            words[i / 8] |= (*b as u64) << (i % 8 * 8);
        }
        self.clear();
        Some(Bits { words, len })
    }

    /// The bytes, the last one padded with zeros.
    pub fn finish(&mut self) -> &[u8] {
        while self.used > 0 {
            self.bytes.push(self.acc as u8);
            self.acc >>= 8;
            self.used = self.used.saturating_sub(8);
        }
        &self.bytes
    }
}

/// Up to [`Bits::MAX`] bits taken from a [`BitWriter`], to be copied into others.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bits {
    /// Least significant bit first; the bits past `len` are zero.
    words: [u64; 3],
    len: u32,
}

impl Bits {
    pub const MAX: u32 = 192;

    /// How many bits.
    pub fn len(&self) -> u32 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Reads bits written by [`BitWriter`]; every read is `None` past the end.
#[derive(Debug)]
pub struct BitReader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> BitReader<'a> {
    /// Reads `bytes` from the first bit.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    /// Reads `n` bits (n ≤ 32).
    pub fn get(&mut self, n: u32) -> Option<u32> {
        if self.pos + n as usize > self.bytes.len() * 8 {
            return None;
        }
        let (byte, off) = (self.pos / 8, self.pos % 8);
        // Eight bytes at once when they are there (n + 7 ≤ 39 bits fit in a u64); the tail byte by byte.
        let word = match self.bytes.get(byte..byte + 8) {
            Some(b) => u64::from_le_bytes(b.try_into().expect("8 bytes")),
            None => self.bytes[byte..].iter().rev().fold(0u64, |acc, b| acc << 8 | *b as u64),
        };
        self.pos += n as usize;
        Some(((word >> off) & ((1u64 << n) - 1)) as u32)
    }

    /// Reads one bit.
    pub fn bit(&mut self) -> Option<bool> {
        Some(self.get(1)? == 1)
    }
}

/// Signed value to unsigned: 0, -1, 1, -2, 2 … → 0, 1, 2, 3, 4 …
pub fn zigzag(v: i32) -> u32 {
    ((v << 1) ^ (v >> 31)) as u32
}

/// The inverse of [`zigzag`].
pub fn unzigzag(v: u32) -> i32 {
    (v >> 1) as i32 ^ -((v & 1) as i32)
}

/// Bit widths of the four size classes of [`put_small`].
const CLASSES: [u32; 4] = [0, 5, 12, 24];

/// Writes a signed integer as a 2-bit size class and that many bits (0 costs 2 bits, ±16 costs 7, ±2048 14);
/// values beyond ±2^23 are clamped.
pub fn put_small(w: &mut BitWriter, v: i32) {
    let z = zigzag(v.clamp(-(1 << 23), (1 << 23) - 1));
    let class = CLASSES.iter().position(|bits| *bits == 24 || z < (1 << bits)).expect("the last class holds everything");
    w.put(class as u32 | z << 2, 2 + CLASSES[class]);
}

/// Reads a value written by [`put_small`].
pub fn get_small(r: &mut BitReader) -> Option<i32> {
    let class = r.get(2)? as usize;
    Some(unzigzag(r.get(CLASSES[class])?))
}

/// Writes an unsigned integer in Exp-Golomb order 0 (0 costs 1 bit, 1–2 cost 3, 3–6 cost 5); v < 2^31.
pub fn put_golomb(w: &mut BitWriter, v: u32) {
    let v1 = v + 1;
    let n = 31 - v1.leading_zeros();
    w.put(0, n);
    // The value's n+1 bits, most significant (the marker 1) first: reversed, as the writer starts at the low end.
    w.put(v1.reverse_bits() >> (31 - n), n + 1);
}

/// Reads a value written by [`put_golomb`].
pub fn get_golomb(r: &mut BitReader) -> Option<u32> {
    let mut n = 0;
    while !r.bit()? {
        n += 1;
        if n > 31 {
            return None;
        }
    }
    let mut v1 = 1u32;
    for _ in 0..n {
        v1 = v1 << 1 | r.bit()? as u32;
    }
    Some(v1 - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_reads_back() {
        let mut w = BitWriter::default();
        let values = [0, 1, -1, 7, -8, 8, 511, -512, 600, -70_000, 8_388_607, -8_388_608];
        for v in values {
            put_small(&mut w, v);
            put_golomb(&mut w, v.unsigned_abs() & 0x7fff_ffff);
            w.put(v as u32 & 0x1f_ffff, 21);
        }
        let bytes = w.finish().to_vec();
        let mut r = BitReader::new(&bytes);
        for v in values {
            assert_eq!(get_small(&mut r), Some(v));
            assert_eq!(get_golomb(&mut r), Some(v.unsigned_abs() & 0x7fff_ffff));
            assert_eq!(r.get(21), Some(v as u32 & 0x1f_ffff));
        }
        assert!(r.get(9).is_none(), "past the end");
    }

    #[test]
    fn a_piece_copies_bit_for_bit_at_any_offset() {
        let mut piece = BitWriter::default();
        for v in [5, -300, 70_000, 0, 9] {
            put_small(&mut piece, v);
            put_golomb(&mut piece, v.unsigned_abs());
        }
        let bits = piece.take_bits().expect("fits");
        assert!(bits.len() > 64 && bits.len() <= Bits::MAX);
        for offset in 0..=32 {
            let mut w = BitWriter::default();
            w.put(0b101, 3);
            w.put(0, offset);
            w.put_bits(&bits);
            w.put(1, 1);
            let bytes = w.finish().to_vec();
            let mut r = BitReader::new(&bytes);
            assert_eq!((r.get(3), r.get(offset)), (Some(0b101), Some(0)));
            for v in [5, -300, 70_000, 0, 9] {
                assert_eq!(get_small(&mut r), Some(v));
                assert_eq!(get_golomb(&mut r), Some(v.unsigned_abs()));
            }
            assert_eq!(r.bit(), Some(true), "offset {offset}");
        }
        let mut long = BitWriter::default();
        (0..7).for_each(|_| long.put((1 << 28) - 1, 28));
        assert_eq!(long.take_bits(), None, "196 bits do not fit");
    }

    #[test]
    fn small_values_cost_few_bits() {
        let mut w = BitWriter::default();
        put_small(&mut w, 0);
        assert_eq!(w.bit_len(), 2);
        put_golomb(&mut w, 0);
        assert_eq!(w.bit_len(), 3);
    }
}
