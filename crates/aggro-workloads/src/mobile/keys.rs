//! Which user a request touches, and how its key is stored.

use aggro_core::rng::Rng;
use serde::{Deserialize, Serialize};

/// How user numbers map to stored ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Spread {
    /// Stored id = user number.
    #[default]
    None,
    /// Stored id = the user number with its 32 bits reversed (1 → 2147483648),
    /// so consecutive users land on different nodes of a distributed store.
    BitReverse,
}

impl Spread {
    /// Parses `none` or `bit-reverse`.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "none" => Ok(Spread::None),
            "bit-reverse" => Ok(Spread::BitReverse),
            _ => Err(format!("unknown spread {text:?}: expected none or bit-reverse")),
        }
    }

    /// Its name as `parse` reads it.
    pub fn name(self) -> &'static str {
        match self {
            Spread::None => "none",
            Spread::BitReverse => "bit-reverse",
        }
    }

    /// The stored id of user `n`; the mapping is its own inverse.
    #[inline]
    pub fn apply(self, n: u32) -> u32 {
        match self {
            Spread::None => n,
            Spread::BitReverse => n.reverse_bits(),
        }
    }
}

impl std::fmt::Display for Spread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The population and the skewed choice of users.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeySpace {
    /// Users numbered 1..=users.
    pub users: u32,
    /// Stored-id mapping.
    pub spread: Spread,
}

impl KeySpace {
    /// The user number request `seq` of a run seeded `seed` touches:
    /// uniform(0..=users/2) + uniform(1..=users - users/2), so numbers near
    /// the middle are the most likely (as the DynamoDB/Spanner tool draws them: 0–50,000 + 1–50,000).
    /// Derived from `seq` alone, so the sequence is the same whichever loader
    /// runs which request.
    #[inline]
    pub fn user_for(&self, seed: u64, seq: u64) -> u32 {
        let mut rng = Rng::stream(seed, seq);
        let half = u64::from(self.users / 2);
        let a = rng.range_inclusive(0, half);
        let b = rng.range_inclusive(1, u64::from(self.users) - half);
        (a + b) as u32
    }

    /// The stored id request `seq` touches.
    #[inline]
    pub fn stored_id_for(&self, seed: u64, seq: u64) -> u32 {
        self.spread.apply(self.user_for(seed, seq))
    }

    /// Every stored id, in user order.
    pub fn all_stored_ids(&self) -> Vec<u32> {
        (1..=self.users).map(|n| self.spread.apply(n)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_reverse_matches_the_seed_example() {
        assert_eq!(Spread::BitReverse.apply(1), 2_147_483_648);
        assert_eq!(Spread::BitReverse.apply(2), 1_073_741_824);
        assert_eq!(Spread::BitReverse.apply(Spread::BitReverse.apply(12_345)), 12_345);
    }

    #[test]
    fn users_are_in_range_and_skewed_to_the_middle() {
        let keys = KeySpace { users: 100_000, spread: Spread::None };
        let (mut low, mut middle) = (0, 0);
        for seq in 0..200_000 {
            let n = keys.user_for(9, seq);
            assert!((1..=100_000).contains(&n));
            if n <= 10_000 {
                low += 1;
            }
            if (45_001..=55_000).contains(&n) {
                middle += 1;
            }
        }
        // Triangular distribution: the middle tenth holds ~19%, the first ~2%.
        assert!((36_000..40_000).contains(&middle), "{middle}");
        assert!((3_000..5_000).contains(&low), "{low}");
    }

    #[test]
    fn the_sequence_is_fixed_by_the_seed() {
        let keys = KeySpace { users: 1_000, spread: Spread::BitReverse };
        let a: Vec<u32> = (0..50).map(|s| keys.stored_id_for(3, s)).collect();
        let b: Vec<u32> = (0..50).map(|s| keys.stored_id_for(3, s)).collect();
        let c: Vec<u32> = (0..50).map(|s| keys.stored_id_for(4, s)).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn tiny_populations_work() {
        let keys = KeySpace { users: 1, spread: Spread::None };
        assert!((0..100).all(|s| keys.user_for(1, s) == 1));
    }
}
