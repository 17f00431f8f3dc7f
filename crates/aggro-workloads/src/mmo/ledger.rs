//! What the game servers committed to players' inventories, for `aggro mmo verify`: net items per player
//! in acknowledged pushes, and what pushes that failed in doubt may have added.
//!
//! A push whose commit failed in a way that may still have committed (a timeout, a lost connection, a
//! sync's error: [`ErrorClass::may_have_committed`](aggro_core::outcome::ErrorClass::may_have_committed))
//! leaves its players dirty, and the zone's next acknowledged push of them writes their whole state again:
//! the ledger counts their changes once, there, and the doubt is gone. A player not pushed again — its
//! lease gone, as after a release that committed unacknowledged — keeps its doubt: the store holds the
//! ledger's count or that push's net items more, and verify accepts either.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Net items (created − deleted) per player: acknowledged, and in doubt.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemLedger {
    /// In acknowledged pushes.
    pub committed: HashMap<u32, i64>,
    /// For a player whose push failed in doubt and who was not pushed again: what each such push would
    /// have added beyond `committed` (at most one of them took effect per game server); never empty.
    pub in_doubt: HashMap<u32, Vec<i64>>,
}

impl ItemLedger {
    /// A push of a player carrying `delta` net items was acknowledged: counted, and no doubt is left
    /// about the player (this push wrote its whole state).
    pub fn acknowledged(&mut self, player: u32, delta: i64) {
        if delta != 0 {
            *self.committed.entry(player).or_default() += delta;
        }
        self.in_doubt.remove(&player);
    }

    /// A push of a player carrying `delta` net items failed and may have committed (one with none adds
    /// no other count).
    pub fn doubted(&mut self, player: u32, delta: i64) {
        if delta == 0 {
            return;
        }
        let doubts = self.in_doubt.entry(player).or_default();
        if !doubts.contains(&delta) {
            doubts.push(delta);
        }
    }

    /// Adds another game server's ledger: commits add up; doubts about one player from both combine
    /// (each server's push may have committed or not).
    pub fn add(&mut self, other: &ItemLedger) {
        for (&p, &d) in &other.committed {
            *self.committed.entry(p).or_default() += d;
        }
        for (&p, theirs) in &other.in_doubt {
            let ours = self.in_doubt.remove(&p).unwrap_or_default();
            let mut all: Vec<i64> = ours.iter().chain(theirs).copied().collect();
            all.extend(ours.iter().flat_map(|a| theirs.iter().map(move |b| a + b)));
            all.sort_unstable();
            all.dedup();
            all.retain(|&d| d != 0);
            if !all.is_empty() {
                self.in_doubt.insert(p, all);
            }
        }
    }

    /// Whether player `player` may hold `actual` items, having held `base` before the runs.
    pub fn allows(&self, player: u32, base: i64, actual: i64) -> bool {
        let expected = base + self.committed.get(&player).copied().unwrap_or(0);
        actual == expected || self.in_doubt.get(&player).is_some_and(|d| d.iter().any(|&extra| actual == expected + extra))
    }

    /// What player `player` should hold from `base`: the count, and the other counts pushes in doubt allow.
    pub fn expected(&self, player: u32, base: i64) -> String {
        let expected = base + self.committed.get(&player).copied().unwrap_or(0);
        match self.in_doubt.get(&player) {
            Some(d) => {
                let others: Vec<String> = d.iter().map(|extra| (expected + extra).to_string()).collect();
                format!("{expected} (or {} with pushes in doubt)", others.join(" or "))
            }
            None => expected.to_string(),
        }
    }

    /// Players whose count allows for pushes in doubt.
    pub fn players_in_doubt(&self) -> usize {
        self.in_doubt.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_doubt_lasts_until_the_player_is_pushed_again() {
        let mut l = ItemLedger::default();
        l.acknowledged(1, 2);
        l.doubted(1, 3);
        assert!(l.allows(1, 10, 12) && l.allows(1, 10, 15) && !l.allows(1, 10, 13));
        assert_eq!(l.expected(1, 10), "12 (or 15 with pushes in doubt)");
        // The next acknowledged push wrote the player's whole state (the doubted items among it).
        l.acknowledged(1, 3);
        assert!(l.allows(1, 10, 15) && !l.allows(1, 10, 12));
        assert_eq!(l.players_in_doubt(), 0);
        // A doubted push with no net items changes nothing.
        l.doubted(2, 0);
        assert!(l.allows(2, 4, 4) && !l.allows(2, 4, 5));
    }

    #[test]
    fn doubts_of_two_servers_combine() {
        let mut a = ItemLedger::default();
        a.doubted(7, 2);
        let mut b = ItemLedger::default();
        b.acknowledged(7, 1);
        b.doubted(7, -1);
        a.add(&b);
        // From 10: acknowledged 11; either push in doubt may have committed, or both, or neither.
        for held in [11, 13, 10, 12] {
            assert!(a.allows(7, 10, held), "{held}");
        }
        assert!(!a.allows(7, 10, 14) && !a.allows(7, 10, 9));
    }
}
