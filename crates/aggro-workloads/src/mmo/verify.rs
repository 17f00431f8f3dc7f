//! `aggro mmo verify`: the invariants of the MMO world, checked in the store.
//!
//! - no item is in two inventories (item ids are unique across the world);
//! - no item is owned by a player that does not exist;
//! - every player's recorded item count equals the items it holds (the two
//!   are written in one commit);
//! - with the play runs' result files: every player holds exactly the
//!   population's items plus what the clients committed (created − deleted),
//!   or, for a player whose last push failed in doubt, what that push would
//!   have added besides ([`ItemLedger`]);
//! - no lease is left held (after a clean run every player is released or
//!   its lease has run out).

use super::ledger::ItemLedger;
use aggro_core::mmo::{WorldScan, WorldSpec};
use std::collections::HashMap;

/// Examples kept of each kind of violation.
const EXAMPLES: usize = 5;

/// One kind of violation: how many, and a few examples.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Violations {
    /// How many were found.
    pub count: u64,
    /// The first few, described.
    pub examples: Vec<String>,
}

impl Violations {
    fn add(&mut self, what: impl FnOnce() -> String) {
        if self.examples.len() < EXAMPLES {
            self.examples.push(what());
        }
        self.count += 1;
    }
}

/// What `verify` found.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MmoVerdict {
    /// Players in the store.
    pub players: u64,
    /// Items in the store.
    pub items: u64,
    /// Item ids found more than once.
    pub duplicated_items: Violations,
    /// Items whose owner is not a player.
    pub orphaned_items: Violations,
    /// Players whose recorded item count differs from the items they hold.
    pub item_count_mismatches: Violations,
    /// Players whose items differ from population + committed changes.
    pub ledger_mismatches: Violations,
    /// Leases still running.
    pub leases_held: Violations,
    /// When the last lease still running lapses, ms from the check.
    pub last_lease_lapses_in_ms: Option<u64>,
    /// Whether the leases held are explained (a run that could not release its players, named apart):
    /// then they are told, not failed.
    pub leases_explained: bool,
    /// Whether the ledger of committed changes was checked.
    pub ledger_checked: bool,
    /// Players whose count the ledger allows for pushes in doubt.
    pub players_in_doubt: u64,
}

impl MmoVerdict {
    /// Whether every invariant holds.
    pub fn ok(&self) -> bool {
        let leases = if self.leases_explained { 0 } else { self.leases_held.count };
        leases == 0
            && [&self.duplicated_items, &self.orphaned_items, &self.item_count_mismatches, &self.ledger_mismatches].iter().all(|v| v.count == 0)
    }

    /// Whether the checks that hold whatever the ledger misses pass: no
    /// item twice, none orphaned, every count matching its items. (Leases
    /// and per-player totals can be explained by a run whose file is missing:
    /// a killed game server holds its leases until they expire.)
    pub fn consistent(&self) -> bool {
        [&self.duplicated_items, &self.orphaned_items, &self.item_count_mismatches].iter().all(|v| v.count == 0)
    }

    /// One line per check, for a person.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![format!("{} players, {} items in the store", self.players, self.items)];
        let checks = [
            ("no item in two inventories", &self.duplicated_items),
            ("no item owned by a missing player", &self.orphaned_items),
            ("every player's item count matches its items", &self.item_count_mismatches),
            ("no lease left held", &self.leases_held),
        ];
        let ledger = ("every player holds population + committed items", &self.ledger_mismatches);
        for (name, v) in checks.into_iter().chain(self.ledger_checked.then_some(ledger)) {
            match v.count {
                0 => lines.push(format!("ok    {name}")),
                n if self.leases_explained && std::ptr::eq(v, &self.leases_held) => lines.push(format!(
                    "held  {n} lease(s) a run could not release, the last lapsing in {:.1} s, e.g. {}",
                    self.last_lease_lapses_in_ms.unwrap_or(0) as f64 / 1e3,
                    v.examples.join("; ")
                )),
                n if std::ptr::eq(v, &self.leases_held) => lines.push(format!(
                    "FAIL  {name}: {n} violations (the last lapses in {:.1} s), e.g. {}",
                    self.last_lease_lapses_in_ms.unwrap_or(0) as f64 / 1e3,
                    v.examples.join("; ")
                )),
                n => lines.push(format!("FAIL  {name}: {n} violations, e.g. {}", v.examples.join("; "))),
            }
        }
        if self.ledger_checked && self.players_in_doubt > 0 {
            lines.push(format!("      {} player(s) last pushed in a commit that failed in doubt: either count is theirs", self.players_in_doubt));
        }
        lines
    }
}

/// Checks `scan` against the world's invariants; `ledger` is the net item
/// change per player that the play runs committed since population, and what
/// pushes in doubt may have added (`None`: not checked); leases ending after
/// `now_ms` count as held.
pub fn verify(scan: &WorldScan, world: &WorldSpec, ledger: Option<&ItemLedger>, now_ms: u64) -> MmoVerdict {
    let mut v = MmoVerdict { players: scan.players.len() as u64, items: scan.items.len() as u64, ..Default::default() };
    let mut held: HashMap<u32, u32> = HashMap::with_capacity(scan.players.len());
    for p in &scan.players {
        held.insert(p.id, 0);
    }
    let mut ids: Vec<u64> = Vec::with_capacity(scan.items.len());
    for &(id, owner) in &scan.items {
        ids.push(id);
        match held.get_mut(&owner) {
            Some(n) => *n += 1,
            None => v.orphaned_items.add(|| format!("item {id} owned by missing player {owner}")),
        }
    }
    ids.sort_unstable();
    for pair in ids.windows(2).filter(|w| w[0] == w[1]) {
        v.duplicated_items.add(|| format!("item {}", pair[0]));
    }
    for p in &scan.players {
        let actual = held[&p.id];
        if actual != p.item_count {
            v.item_count_mismatches.add(|| format!("player {} records {} items and holds {actual}", p.id, p.item_count));
        }
        if let Some(ledger) = ledger {
            let base = world.items_per_player as i64;
            if !ledger.allows(p.id, base, actual as i64) {
                v.ledger_mismatches.add(|| format!("player {} holds {actual} items, the clients committed {}", p.id, ledger.expected(p.id, base)));
            }
        }
        if let Some(until) = p.lease_until_ms.filter(|&u| u > now_ms) {
            v.leases_held.add(|| format!("player {} leased for {} ms more", p.id, until - now_ms));
            v.last_lease_lapses_in_ms = v.last_lease_lapses_in_ms.max(Some(until - now_ms));
        }
    }
    v.ledger_checked = ledger.is_some();
    v.players_in_doubt = ledger.map_or(0, |l| l.players_in_doubt() as u64);
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use aggro_core::mmo::PlayerCheck;

    fn world() -> WorldSpec {
        WorldSpec { items_per_player: 2, ..WorldSpec::paper(1, 1) }
    }

    fn player(id: u32, item_count: u32) -> PlayerCheck {
        PlayerCheck { id, item_count, lease_until_ms: None }
    }

    #[test]
    fn a_consistent_world_passes() {
        let scan = WorldScan { players: vec![player(0, 2), player(1, 3)], items: vec![(1, 0), (2, 0), (3, 1), (4, 1), (5, 1)] };
        let ledger = ItemLedger { committed: HashMap::from([(1, 1)]), ..Default::default() };
        let v = verify(&scan, &world(), Some(&ledger), 0);
        assert!(v.ok(), "{:?}", v.lines());
        assert_eq!(v.lines().len(), 6);
    }

    #[test]
    fn a_push_in_doubt_allows_either_count_and_no_other() {
        // Player 1 was pushed with one item more, unacknowledged, and then not again.
        let mut ledger = ItemLedger::default();
        ledger.doubted(1, 1);
        let world_with = |held: u32| WorldScan {
            players: vec![player(0, 2), player(1, held)],
            items: (0..2).map(|i| (i, 0)).chain((0..u64::from(held)).map(|i| (10 + i, 1))).collect(),
        };
        for held in [2, 3] {
            let v = verify(&world_with(held), &world(), Some(&ledger), 0);
            assert!(v.ok(), "{held}: {:?}", v.lines());
            assert!(v.lines().iter().any(|l| l.contains("1 player(s) last pushed in a commit that failed in doubt")));
        }
        let v = verify(&world_with(4), &world(), Some(&ledger), 0);
        assert_eq!(v.ledger_mismatches.count, 1);
        assert!(v.ledger_mismatches.examples[0].contains("the clients committed 2 (or 3 with pushes in doubt)"), "{:?}", v.ledger_mismatches);
    }

    #[test]
    fn each_violation_is_found() {
        let scan = WorldScan {
            players: vec![player(0, 2), PlayerCheck { id: 1, item_count: 1, lease_until_ms: Some(500) }],
            items: vec![(1, 0), (1, 1), (3, 9)],
        };
        let v = verify(&scan, &world(), Some(&ItemLedger::default()), 100);
        assert_eq!(v.duplicated_items.count, 1);
        assert_eq!(v.orphaned_items.count, 1);
        assert_eq!(v.item_count_mismatches.count, 1);
        assert_eq!(v.ledger_mismatches.count, 2);
        assert_eq!(v.leases_held.count, 1);
        assert!(!v.ok());
        assert_eq!(v.last_lease_lapses_in_ms, Some(400));
        // A lease that ran out is not held.
        assert_eq!(verify(&scan, &world(), None, 600).leases_held.count, 0);
        // Leases a run could not release, named apart, are told, not failed.
        let leased = WorldScan { players: vec![PlayerCheck { id: 0, item_count: 0, lease_until_ms: Some(500) }], items: vec![] };
        let mut explained = verify(&leased, &world(), None, 0);
        assert!(!explained.ok());
        explained.leases_explained = true;
        assert!(explained.ok() && explained.lines().iter().any(|l| l.starts_with("held  1 lease(s)") && l.contains("lapsing in 0.5 s")));
    }
}
