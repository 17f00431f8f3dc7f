//! Jittered exponential backoff, as real clients reconnect: attempt `k` (from 0) waits a uniformly random
//! time up to `base × 2^k`, never more than `cap` ("full jitter"), so a crowd that lost its server at once
//! comes back spread out instead of all at the same instant.

use aggro_core::units::parse_duration;

/// A backoff's first ceiling and its cap, µs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Backoff {
    pub base_us: u64,
    pub cap_us: u64,
}

impl Backoff {
    /// What `reconnect()` uses when the run gave no `--reconnect`: 500 ms up to 30 s.
    pub const DEFAULT: Backoff = Backoff { base_us: 500_000, cap_us: 30_000_000 };

    /// Parses `BASE..CAP` (`250ms..30s`): two durations, the first above zero and not above the second.
    pub fn parse(text: &str) -> Result<Backoff, String> {
        let bad = |why: &str| format!("bad backoff {text:?}: {why} (example: 250ms..30s, the first wait's ceiling, then the cap)");
        let (base, cap) = text.split_once("..").ok_or_else(|| bad("no '..' between the first wait and the cap"))?;
        let us = |d: &str| parse_duration(d.trim()).map(|d| d.as_micros() as u64).map_err(|e| bad(&e));
        let (base_us, cap_us) = (us(base)?, us(cap)?);
        if base_us == 0 || base_us > cap_us {
            return Err(bad("the first wait is above zero and not above the cap"));
        }
        Ok(Backoff { base_us, cap_us })
    }

    /// The wait before attempt `attempt` (0: the first), `unit` a uniform draw in [0, 1).
    pub fn wait_us(&self, attempt: u32, unit: f64) -> u64 {
        let ceiling = self.base_us.saturating_mul(1u64 << attempt.min(40)).min(self.cap_us);
        (ceiling as f64 * unit) as u64
    }

    /// A player lost its server at `lost_at_us` (`lost` None), or failed an attempt to come back: its next
    /// attempt is the next wait after `now_us` (`unit` a uniform draw in [0, 1)).
    pub fn again(&self, lost: &mut Option<Lost>, lost_at_us: u64, now_us: u64, unit: f64) {
        let lost = lost.get_or_insert(Lost { at_us: lost_at_us, attempts: 0, next_us: now_us });
        lost.next_us = now_us + self.wait_us(lost.attempts, unit);
        lost.attempts += 1;
    }
}

/// A player on its way back: when it lost its server, its attempts so far, and when it next tries.
#[derive(Clone, Copy, Debug)]
pub struct Lost {
    pub at_us: u64,
    pub attempts: u32,
    pub next_us: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_cap_and_bad_text_is_refused() {
        let b = Backoff::parse("250ms..2s").unwrap();
        assert_eq!((b.base_us, b.cap_us), (250_000, 2_000_000));
        let ceilings: Vec<u64> = (0..6).map(|k| b.wait_us(k, 0.999_999)).collect();
        assert_eq!(ceilings, [249_999, 499_999, 999_999, 1_999_998, 1_999_998, 1_999_998]);
        assert_eq!(b.wait_us(3, 0.0), 0);
        assert_eq!(b.wait_us(200, 0.5), 1_000_000, "a long run of failures stays at the cap");
        for bad in ["250ms", "0s..1s", "2s..1s", "fast..1s"] {
            assert!(Backoff::parse(bad).is_err(), "{bad} parsed");
        }
    }

    #[test]
    fn a_lost_player_keeps_when_it_lost_its_server_through_its_attempts() {
        let (b, mut lost) = (Backoff::parse("1s..4s").unwrap(), None);
        b.again(&mut lost, 10_000_000, 10_000_000, 0.5);
        b.again(&mut lost, 0, 12_000_000, 0.5);
        let l = lost.unwrap();
        assert_eq!((l.at_us, l.attempts, l.next_us), (10_000_000, 2, 13_000_000), "the second wait's ceiling is 2 s");
    }
}
