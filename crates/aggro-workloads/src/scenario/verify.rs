//! A scenario's invariants: each check's read against its expression over
//! the runs' committed counts. A transaction that failed without an answer
//! may have committed (in doubt): an invariant holds when the store's value
//! is the expression's for some count of those commits — every count tried
//! while there are few, and beyond [`EXACT_UP_TO`] combinations the store's
//! value between the extremes' (exact for the sums and differences of counts
//! that invariants are).

use super::Scenario;
use super::expr::Cx;
use super::loader::{Work, run_exec};
use aggro_core::rng::Rng;
use aggro_core::scenario::{ScenarioTarget, Value};
use aggro_core::{ErrorClass, StoreError};

/// One invariant's outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// The invariant's name.
    pub name: String,
    /// What the store holds.
    pub got: Value,
    /// What it must hold with the commits acknowledged (none of those in doubt).
    pub want: Value,
    /// What it must hold with every commit in doubt counted, when some are.
    pub want_all: Option<Value>,
    /// Whether the store's value is the expression's for some count of the commits in doubt.
    pub held: bool,
}

/// A transaction's commits over the runs: acknowledged, and failed in a way that may have committed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Committed {
    /// Acknowledged as committed.
    pub ok: u64,
    /// May have committed (no answer came).
    pub in_doubt: u64,
}

/// The most combinations of in-doubt counts tried one by one.
pub const EXACT_UP_TO: u64 = 4096;

/// Numbers compare as numbers (exactly when both are integers), anything else as text.
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Null, _) | (_, Value::Null) => false,
        _ => match (a.as_int(), b.as_int(), a.as_float(), b.as_float()) {
            (_, _, Some(x), Some(y)) if x.fract() != 0.0 || y.fract() != 0.0 => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0),
            (Some(x), Some(y), _, _) => x == y,
            _ => a.to_text() == b.to_text(),
        },
    }
}

/// Runs every invariant; `committed[i]` is transaction `i`'s commits over the runs since population.
pub async fn verify<T: ScenarioTarget>(target: &T, sc: &Scenario, committed: &[Committed]) -> Result<Vec<Check>, StoreError> {
    if sc.invariants.is_empty() {
        return Ok(Vec::new());
    }
    let mut conn = target.connect(sc.checks.commands.clone()).await?;
    let mut work = Work::new(sc, 0);
    let mut rng = Rng::seeded(0);
    let mut out = Vec::new();
    for inv in &sc.invariants {
        run_exec(&mut conn, sc, &sc.checks.steps[inv.step], &mut work, &mut rng).await?;
        let got = work.reply.values.first().cloned().unwrap_or_default();
        let mut want_at = |counts: &[u64]| {
            inv.equals
                .eval(&mut Cx { slots: &work.slots, rng: &mut rng, gens: &sc.gens, committed: counts })
                .map_err(|m| StoreError::new(ErrorClass::Data, format!("invariant {}: {m}", inv.name)))
        };
        let want = want_at(&committed.iter().map(|c| c.ok).collect::<Vec<_>>())?;
        let (held, want_all) = match committed.iter().any(|c| c.in_doubt > 0) {
            false => (equal(&got, &want), None),
            true => {
                let all = want_at(&committed.iter().map(|c| c.ok + c.in_doubt).collect::<Vec<_>>())?;
                (held_for_some_count(&got, committed, &mut want_at)?, Some(all))
            }
        };
        out.push(Check { name: inv.name.clone(), held, got, want, want_all });
    }
    Ok(out)
}

/// Whether `got` is the expression's value (`want_at` the counts) for some count of each transaction's
/// commits in doubt: each combination tried while there are at most [`EXACT_UP_TO`], else `got` between
/// the least and the greatest value at the corners (each transaction with none or all of its in doubt).
fn held_for_some_count<E>(got: &Value, committed: &[Committed], want_at: &mut impl FnMut(&[u64]) -> Result<Value, E>) -> Result<bool, E> {
    let combinations = committed.iter().try_fold(1u64, |n, c| n.checked_mul(c.in_doubt.checked_add(1)?));
    let exact = combinations.is_some_and(|n| n <= EXACT_UP_TO);
    let mut counts: Vec<u64> = committed.iter().map(|c| c.ok).collect();
    let (mut least, mut greatest) = (f64::INFINITY, f64::NEG_INFINITY);
    loop {
        let want = want_at(&counts)?;
        if equal(got, &want) {
            return Ok(true);
        }
        if let Some(w) = want.as_float() {
            (least, greatest) = (least.min(w), greatest.max(w));
        }
        // The next combination, as an odometer over each transaction's counts (all of them, or the two ends).
        let mut i = 0;
        loop {
            let Some(c) = committed.get(i) else {
                return Ok(!exact && got.as_float().is_some_and(|g| least <= g && g <= greatest));
            };
            let top = c.ok + c.in_doubt;
            if counts[i] < top {
                counts[i] = if exact { counts[i] + 1 } else { top };
                break;
            }
            counts[i] = c.ok;
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_compare_as_numbers_when_they_are() {
        assert!(equal(&Value::Text("42".into()), &Value::Int(42)));
        assert!(equal(&Value::Text("-0".into()), &Value::Int(0)));
        assert!(!equal(&Value::Text("41".into()), &Value::Int(42)));
        assert!(equal(&Value::Float(0.5), &Value::Text("0.5".into())));
        assert!(equal(&Value::Text("abc".into()), &Value::Text("abc".into())));
        assert!(!equal(&Value::Null, &Value::Int(0)));
    }

    /// `want_at` for the invariant `committed(a) - 2 * committed(b)`.
    fn difference(counts: &[u64]) -> Result<Value, ()> {
        Ok(Value::Int(counts[0] as i64 - 2 * counts[1] as i64))
    }

    #[test]
    fn a_store_holding_some_commits_in_doubt_holds() {
        let committed = [Committed { ok: 10, in_doubt: 3 }, Committed { ok: 2, in_doubt: 1 }];
        // 10..=13 minus 4 or 6: 4..=9.
        for got in 4..=9 {
            assert!(held_for_some_count(&Value::Int(got), &committed, &mut difference).unwrap(), "{got}");
        }
        for got in [3, 10, 7 + 1000] {
            assert!(!held_for_some_count(&Value::Int(got), &committed, &mut difference).unwrap(), "{got}");
        }
    }

    #[test]
    fn many_commits_in_doubt_are_judged_by_the_extremes() {
        let committed = [Committed { ok: 100, in_doubt: 5000 }, Committed { ok: 0, in_doubt: 0 }];
        assert!(held_for_some_count(&Value::Int(2345), &committed, &mut difference).unwrap());
        assert!(!held_for_some_count(&Value::Int(5101), &committed, &mut difference).unwrap());
        assert!(!held_for_some_count(&Value::Int(99), &committed, &mut difference).unwrap());
    }
}
