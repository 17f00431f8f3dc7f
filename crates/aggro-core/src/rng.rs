//! A small seeded random generator (xoshiro256++ seeded by splitmix64).
//!
//! aggro promises that `--seed` reproduces a run's choices; a generator from a
//! crate may change its stream between versions, this one never will.

/// xoshiro256++: fast, small, statistically sound for load generation.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// A generator whose whole stream is fixed by `seed`.
    pub fn seeded(seed: u64) -> Self {
        let mut sm = seed;
        Self { s: [splitmix64(&mut sm), splitmix64(&mut sm), splitmix64(&mut sm), splitmix64(&mut sm)] }
    }

    /// An independent stream for party `index` (a loader, a client) of a run seeded `seed`.
    pub fn stream(seed: u64, index: u64) -> Self {
        let mut sm = seed ^ index.wrapping_mul(0xD1B5_4A32_D192_ED03);
        Self::seeded(splitmix64(&mut sm))
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in `low..=high` (Lemire's multiply-shift; bias below 2^-32 for game-sized ranges).
    #[inline]
    pub fn range_inclusive(&mut self, low: u64, high: u64) -> u64 {
        debug_assert!(low <= high);
        let span = high - low + 1;
        low + ((u128::from(self.next_u64()) * u128::from(span)) >> 64) as u64
    }

    /// Uniform in `[0, 1)` with 53 bits of precision.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Exponentially distributed with mean 1.
    #[inline]
    pub fn exp1(&mut self) -> f64 {
        -(1.0 - self.unit()).ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_streams_differ() {
        let a: Vec<u64> = (0..5)
            .map({
                let mut r = Rng::seeded(7);
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..5)
            .map({
                let mut r = Rng::seeded(7);
                move |_| r.next_u64()
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(Rng::stream(7, 0).next_u64(), Rng::stream(7, 1).next_u64());
    }

    #[test]
    fn range_stays_in_bounds_and_covers_them() {
        let mut r = Rng::seeded(1);
        let mut seen = [false; 5];
        for _ in 0..10_000 {
            let v = r.range_inclusive(3, 7);
            assert!((3..=7).contains(&v));
            seen[(v - 3) as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
    }

    #[test]
    fn exp1_has_mean_one() {
        let mut r = Rng::seeded(3);
        let mean = (0..200_000).map(|_| r.exp1()).sum::<f64>() / 200_000.0;
        assert!((mean - 1.0).abs() < 0.01, "{mean}");
    }
}
