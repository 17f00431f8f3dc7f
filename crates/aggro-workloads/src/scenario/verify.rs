//! A scenario's invariants: each check's read against its expression over
//! the runs' committed counts.

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
    /// What it must hold.
    pub want: Value,
    /// Whether they are equal.
    pub held: bool,
}

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

/// Runs every invariant; `committed[i]` is transaction `i`'s committed count
/// over the runs since population.
pub async fn verify<T: ScenarioTarget>(target: &T, sc: &Scenario, committed: &[u64]) -> Result<Vec<Check>, StoreError> {
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
        let want = inv
            .equals
            .eval(&mut Cx { slots: &work.slots, rng: &mut rng, gens: &sc.gens, committed })
            .map_err(|m| StoreError::new(ErrorClass::Data, format!("invariant {}: {m}", inv.name)))?;
        out.push(Check { name: inv.name.clone(), held: equal(&got, &want), got, want });
    }
    Ok(out)
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
}
