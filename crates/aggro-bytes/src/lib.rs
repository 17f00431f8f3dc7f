//! Bounds-checked little-endian bytes, read and written: the MMO world's codec (`aggro-core`'s
//! `mmo::codec`) and the arena protocol (`arena-proto`'s `wire`) both read with [`Reader`], so a
//! malformed packet or record is a `None`, never a panic or a read past its end.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

/// Reads little-endian fields from the front of a slice; every read is `None` past the end.
#[derive(Debug, Clone, Copy)]
pub struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    /// Reads from the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self(bytes)
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    /// A byte.
    pub fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    /// A u16.
    pub fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.take(2)?.try_into().ok()?))
    }

    /// A u32.
    pub fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    /// A u64.
    pub fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    /// A byte string behind its u16 length ([`Writer::blob`]).
    pub fn blob(&mut self) -> Option<&'a [u8]> {
        let n = self.u16()? as usize;
        self.take(n)
    }

    /// A list of u32 behind its u16 count ([`Writer::ids`]).
    pub fn ids(&mut self) -> Option<Vec<u32>> {
        let n = self.u16()? as usize;
        (0..n).map(|_| self.u32()).collect()
    }

    /// Everything left.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }

    /// Whether everything was read.
    pub fn done(&self) -> bool {
        self.0.is_empty()
    }
}

/// Appends little-endian fields to a buffer.
#[derive(Debug, Default)]
pub struct Writer(pub Vec<u8>);

impl Writer {
    /// Appends raw bytes.
    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.0.extend_from_slice(b);
        self
    }

    /// Appends a byte.
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.bytes(&[v])
    }

    /// Appends a u16.
    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.bytes(&v.to_le_bytes())
    }

    /// Appends a u32.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.bytes(&v.to_le_bytes())
    }

    /// Appends a u64.
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.bytes(&v.to_le_bytes())
    }

    /// Appends a byte string behind its u16 length (cut at `u16::MAX` bytes).
    pub fn blob(&mut self, b: &[u8]) -> &mut Self {
        let b = &b[..b.len().min(u16::MAX as usize)];
        self.u16(b.len() as u16).bytes(b)
    }

    /// Appends a list of u32 behind its u16 count.
    pub fn ids(&mut self, ids: &[u32]) -> &mut Self {
        self.u16(ids.len() as u16);
        ids.iter().for_each(|&i| {
            self.u32(i);
        });
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_reads_back_and_a_short_input_reads_none() {
        let mut w = Writer::default();
        w.u8(7).u16(513).u32(70_000).u64(1 << 40).blob(b"name").ids(&[3, 4]);
        let mut r = Reader::new(&w.0);
        assert_eq!((r.u8(), r.u16(), r.u32(), r.u64()), (Some(7), Some(513), Some(70_000), Some(1 << 40)));
        assert_eq!((r.blob(), r.ids()), (Some(&b"name"[..]), Some(vec![3, 4])));
        assert!(r.done());
        for cut in 0..w.0.len() {
            let mut r = Reader::new(&w.0[..cut]);
            let whole = (|| Some((r.u8()?, r.u16()?, r.u32()?, r.u64()?, r.blob()?.to_vec(), r.ids()?)))();
            assert_eq!(whole, None, "{cut} bytes read as a whole record");
        }
    }
}
