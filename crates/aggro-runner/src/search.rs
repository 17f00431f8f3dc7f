//! The capacity search behind `find-max`: the highest rate a backend holds.
//!
//! The DynamoDB/Spanner tool's author found each figure by hand (49,320/s failed, a fifth of
//! it held). This does it as an exponential climb until a trial fails, then a
//! bisection between the last rate that held and the first that did not,
//! until the bracket is narrower than the precision asked for.

use serde::{Deserialize, Serialize};

/// How to search.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SearchPlan {
    /// First rate tried, per second.
    pub start_rate: f64,
    /// Never try above this rate.
    pub max_rate: f64,
    /// Stop bisecting when `(fail - pass) / pass` is below this.
    pub precision: f64,
    /// At most this many trials in all.
    pub max_trials: usize,
}

/// One trial's verdict.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Trial {
    /// Rate tried, per second.
    pub rate: f64,
    /// Whether the backend held it.
    pub passed: bool,
    /// Requests completed per second.
    pub achieved: f64,
    /// p99 latency of the whole request, ns.
    pub p99_ns: u64,
    /// Backlog at the end.
    pub backlog: u64,
    /// Errors (not conflicts).
    pub errors: u64,
    /// Why it failed, if it did.
    pub why: Option<String>,
}

/// What the search found.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SearchResult {
    /// Every trial in the order run.
    pub trials: Vec<Trial>,
    /// The highest rate that held, if any did.
    pub best: Option<f64>,
    /// Whether the search hit `max_rate` without a failure.
    pub reached_max: bool,
}

/// Runs trials chosen by the search; `trial(rate)` runs one and judges it.
/// Returns early (with what it has) when `trial` returns `None` (interrupted).
pub async fn find_max<F>(plan: &SearchPlan, mut trial: F) -> SearchResult
where
    F: AsyncFnMut(f64) -> Option<Trial>,
{
    let mut trials = Vec::new();
    let (mut pass, mut fail): (Option<f64>, Option<f64>) = (None, None);
    let mut rate = plan.start_rate.min(plan.max_rate);
    let mut reached_max = false;
    while trials.len() < plan.max_trials {
        let Some(t) = trial(rate).await else { break };
        let held = t.passed;
        trials.push(t);
        if held {
            pass = Some(rate);
        } else {
            fail = Some(rate);
        }
        rate = match (pass, fail) {
            (Some(p), None) if p >= plan.max_rate => {
                reached_max = true;
                break;
            }
            (Some(p), None) => (p * 2.0).min(plan.max_rate),
            (None, Some(f)) => f / 2.0,
            (Some(p), Some(f)) if (f - p) / p > plan.precision => (p + f) / 2.0,
            _ => break,
        };
        if rate < 1.0 {
            break;
        }
    }
    SearchResult { trials, best: pass, reached_max }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge(capacity: f64) -> impl AsyncFnMut(f64) -> Option<Trial> {
        async move |rate| Some(Trial { rate, passed: rate <= capacity, achieved: rate.min(capacity), p99_ns: 0, backlog: 0, errors: 0, why: None })
    }

    #[tokio::test]
    async fn finds_the_capacity_within_precision() {
        let plan = SearchPlan { start_rate: 100.0, max_rate: 1e9, precision: 0.02, max_trials: 40 };
        let r = find_max(&plan, judge(3_300.0)).await;
        let best = r.best.unwrap();
        assert!((3_300.0 * 0.97..=3_300.0).contains(&best), "{best}");
        assert!(!r.reached_max);
    }

    #[tokio::test]
    async fn searches_down_when_the_first_rate_fails_and_stops_at_the_cap() {
        let plan = SearchPlan { start_rate: 10_000.0, max_rate: 1e9, precision: 0.05, max_trials: 40 };
        let best = find_max(&plan, judge(700.0)).await.best.unwrap();
        assert!((665.0..=700.0).contains(&best), "{best}");
        let capped = SearchPlan { start_rate: 100.0, max_rate: 1_000.0, precision: 0.05, max_trials: 40 };
        let r = find_max(&capped, judge(1e9)).await;
        assert!(r.reached_max);
        assert_eq!(r.best, Some(1_000.0));
    }
}
