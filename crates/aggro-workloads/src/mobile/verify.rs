//! The invariants of the mobile workload, checked in the store after runs.
//!
//! Every transaction keeps `Gold + 5 × NumTickets` fixed except `add-gold`,
//! which raises it by exactly 5. So for each user
//! `delta = Gold + 5 × NumTickets − 10,000` must be a non-negative multiple
//! of 5, and summed over users, `Σ NumTickets` and `Σ delta / 5` must match
//! what the runs' result files say was committed. A request that failed
//! with a non-conflict error may or may not have committed ("in doubt"), so
//! the totals must fall between the committed count and committed + in doubt.

use super::KeySpace;
use aggro_core::mobile::{GOLD_STEP, INITIAL_GOLD, UserRow};
use serde::Serialize;

/// What runs since population say they did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Ledger {
    /// `write` transactions acknowledged as committed.
    pub transfers: u64,
    /// `write` transactions that failed in a way that may have committed.
    pub transfers_in_doubt: u64,
    /// `add-gold` transactions acknowledged as committed.
    pub gold_adds: u64,
    /// `add-gold` transactions that may have committed.
    pub gold_adds_in_doubt: u64,
}

impl Ledger {
    /// The ledger of files that miss some runs: what those runs committed is
    /// unknown, so only the lower bounds hold (the store may hold more than
    /// the files say, never less), and no user may be judged by "no run
    /// added gold".
    pub fn open_ended(self) -> Self {
        const UNKNOWN: u64 = u64::MAX / 4;
        Self { transfers_in_doubt: UNKNOWN, gold_adds_in_doubt: UNKNOWN, ..self }
    }

    /// Adds another run's figures.
    pub fn add(&mut self, other: &Ledger) {
        self.transfers += other.transfers;
        self.transfers_in_doubt += other.transfers_in_doubt;
        self.gold_adds += other.gold_adds;
        self.gold_adds_in_doubt += other.gold_adds_in_doubt;
    }
}

/// One violated invariant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Problem {
    /// A user of the population is not in the store.
    MissingUser {
        /// Stored id.
        id: u32,
    },
    /// A user's `UserItem` record is missing.
    MissingItem {
        /// Stored id.
        id: u32,
    },
    /// The store holds a user outside the population.
    UnexpectedUser {
        /// Stored id.
        id: u32,
    },
    /// `Gold + 5 × NumTickets` moved in a way no transaction can explain: a
    /// lost or phantom update (half a transaction applied, or a negative count).
    Inconsistent {
        /// Stored id.
        id: u32,
        /// Its gold.
        gold: i64,
        /// Its tickets.
        tickets: i64,
    },
    /// Totals differ from what the runs committed.
    Totals {
        /// Which total.
        what: String,
        /// Found in the store.
        found: i64,
        /// Lowest value the ledger allows.
        expected_min: u64,
        /// Highest value the ledger allows.
        expected_max: u64,
    },
}

/// The result of a verification.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Verdict {
    /// Users checked.
    pub users: u64,
    /// `Σ NumTickets`: committed `write` transactions seen in the store.
    pub tickets: i64,
    /// `Σ delta / 5`: committed `add-gold` transactions seen in the store.
    pub gold_adds: i64,
    /// Everything wrong, at most [`Verdict::MAX_LISTED`] per kind listed.
    pub problems: Vec<Problem>,
    /// Problems found in all (the list may be shorter).
    pub problem_count: u64,
}

impl Verdict {
    /// Problems listed per kind; the rest are only counted.
    pub const MAX_LISTED: usize = 20;

    /// Whether every invariant held.
    pub fn is_ok(&self) -> bool {
        self.problem_count == 0
    }

    fn push(&mut self, p: Problem) {
        self.problem_count += 1;
        let same_kind = self.problems.iter().filter(|q| std::mem::discriminant(*q) == std::mem::discriminant(&p)).count();
        if same_kind < Self::MAX_LISTED {
            self.problems.push(p);
        }
    }
}

/// Checks `rows` (a full scan) against the population and, if given, the ledger.
pub fn verify(rows: &[UserRow], keys: &KeySpace, ledger: Option<&Ledger>) -> Verdict {
    let mut verdict = Verdict::default();
    let mut seen = vec![false; keys.users as usize + 1];
    // When no run added gold, every user's gold + 5 × tickets must be exactly
    // the initial 10,000: a half-applied transfer cannot pass as an add.
    let no_gold_added = ledger.is_some_and(|l| l.gold_adds + l.gold_adds_in_doubt == 0);
    for row in rows {
        let n = keys.spread.apply(row.id);
        if n == 0 || n > keys.users || std::mem::replace(&mut seen[n as usize], true) {
            verdict.push(Problem::UnexpectedUser { id: row.id });
            continue;
        }
        verdict.users += 1;
        let Some(tickets) = row.tickets else {
            verdict.push(Problem::MissingItem { id: row.id });
            continue;
        };
        let delta = row.gold + GOLD_STEP * tickets - INITIAL_GOLD;
        if tickets < 0 || delta < 0 || delta % GOLD_STEP != 0 || (no_gold_added && delta != 0) {
            verdict.push(Problem::Inconsistent { id: row.id, gold: row.gold, tickets });
        }
        verdict.tickets += tickets;
        verdict.gold_adds += delta / GOLD_STEP;
    }
    for n in 1..=keys.users {
        if !seen[n as usize] {
            verdict.push(Problem::MissingUser { id: keys.spread.apply(n) });
        }
    }
    if let Some(l) = ledger {
        let checks = [
            ("committed write transactions (Σ NumTickets)", verdict.tickets, l.transfers, l.transfers_in_doubt),
            ("committed add-gold transactions (Σ extra Gold / 5)", verdict.gold_adds, l.gold_adds, l.gold_adds_in_doubt),
        ];
        for (what, found, committed, doubt) in checks {
            if found < committed as i64 || found > (committed + doubt) as i64 {
                verdict.push(Problem::Totals { what: what.into(), found, expected_min: committed, expected_max: committed + doubt });
            }
        }
    }
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mobile::Spread;

    fn population(keys: &KeySpace) -> Vec<UserRow> {
        keys.all_stored_ids().into_iter().map(|id| UserRow { id, gold: INITIAL_GOLD, tickets: Some(0) }).collect()
    }

    #[test]
    fn a_fresh_population_verifies() {
        let keys = KeySpace { users: 100, spread: Spread::BitReverse };
        let v = verify(&population(&keys), &keys, Some(&Ledger::default()));
        assert!(v.is_ok(), "{:?}", v.problems);
        assert_eq!(v.users, 100);
    }

    #[test]
    fn committed_transactions_must_all_be_there() {
        let keys = KeySpace { users: 10, spread: Spread::None };
        let mut rows = population(&keys);
        rows[3].gold -= 10;
        rows[3].tickets = Some(2);
        rows[4].gold += 5;
        let ledger = Ledger { transfers: 2, gold_adds: 1, ..Ledger::default() };
        assert!(verify(&rows, &keys, Some(&ledger)).is_ok());
        // A lost write: the run says 3 committed, the store has 2.
        let lost = Ledger { transfers: 3, ..ledger };
        let v = verify(&rows, &keys, Some(&lost));
        assert!(matches!(v.problems[0], Problem::Totals { found: 2, expected_min: 3, .. }), "{:?}", v.problems);
        // One in doubt makes 2 or 3 acceptable.
        let doubt = Ledger { transfers: 2, transfers_in_doubt: 1, gold_adds: 1, ..Ledger::default() };
        assert!(verify(&rows, &keys, Some(&doubt)).is_ok());
    }

    #[test]
    fn half_a_transaction_is_caught_with_its_id() {
        let keys = KeySpace { users: 10, spread: Spread::None };
        let mut rows = population(&keys);
        rows[6].tickets = Some(1); // ticket added, gold not taken
        let ledger = Ledger { transfers: 1, ..Ledger::default() };
        let v = verify(&rows, &keys, Some(&ledger));
        assert_eq!(v.problems[0], Problem::Inconsistent { id: 7, gold: INITIAL_GOLD, tickets: 1 });
        // The totals disagree too: gold went up by 5 with no add-gold committed.
        assert!(matches!(v.problems[1], Problem::Totals { found: 1, expected_max: 0, .. }));
    }

    #[test]
    fn missing_extra_and_duplicate_users_are_caught() {
        let keys = KeySpace { users: 5, spread: Spread::None };
        let mut rows = population(&keys);
        rows.remove(0);
        rows.push(UserRow { id: 99, gold: INITIAL_GOLD, tickets: Some(0) });
        rows.push(rows[1]);
        rows[2].tickets = None;
        let v = verify(&rows, &keys, None);
        assert_eq!(v.problem_count, 4, "{:?}", v.problems);
        assert!(v.problems.contains(&Problem::MissingUser { id: 1 }));
        assert!(v.problems.contains(&Problem::UnexpectedUser { id: 99 }));
        assert!(v.problems.contains(&Problem::MissingItem { id: 4 }));
    }
}
