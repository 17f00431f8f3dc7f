//! What to run, and why a run ended.

use aggro_core::{Nanos, Pacing, RatePlan, Share};
use serde::{Deserialize, Serialize};

/// When backlog ends a run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BacklogRule {
    /// Never: the run drains its backlog, bounded by the drain timeout.
    Off,
    /// When backlog exceeds the planned requests per second (the seed-001 rule).
    PerSecondRate,
    /// When backlog exceeds this many requests.
    Above(u64),
}

impl BacklogRule {
    /// Parses `off`, `rate` or a count.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "off" => Ok(BacklogRule::Off),
            "rate" => Ok(BacklogRule::PerSecondRate),
            n => n
                .parse()
                .map(BacklogRule::Above)
                .map_err(|_| format!("bad --stop-on-backlog {text:?}: expected off, rate or a number of requests")),
        }
    }

    /// The most backlog allowed when the plan asks for `rate` per second
    /// (None: no limit — the rule is off, or a closed loop has no rate).
    pub fn limit(self, rate: Option<f64>) -> Option<u64> {
        match self {
            BacklogRule::Off => None,
            // Backlogs are whole requests: exceeding r is exceeding floor(r).
            BacklogRule::PerSecondRate => rate.map(|r| r.max(1.0) as u64),
            BacklogRule::Above(n) => Some(n),
        }
    }

    /// Whether `backlog` breaks the rule when the plan asks for `rate` per second.
    pub fn is_broken(self, backlog: u64, rate: Option<f64>) -> bool {
        self.limit(rate).is_some_and(|limit| backlog > limit)
    }
}

/// Where each loader runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// As a task on the caller's tokio runtime: for network targets, whose
    /// requests await I/O.
    #[default]
    Tasks,
    /// Each on a thread of its own with a current-thread runtime: for
    /// embedded targets whose calls block, so a long call (a checkpoint)
    /// delays no other loader's timer.
    Threads,
}

/// Everything the executor needs to know about a run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunPlan {
    /// Rate over time, or closed loop.
    pub rate: RatePlan,
    /// Spacing of requests within the rate.
    pub pacing: Pacing,
    /// At most this many requests, if set.
    pub limit: Option<u64>,
    /// Length of a reporting interval.
    pub interval_ns: Nanos,
    /// When backlog ends the run.
    pub backlog_rule: BacklogRule,
    /// How long requests still in flight may take to finish once the
    /// schedule has ended, before they are abandoned.
    pub drain_ns: Nanos,
    /// Seed of every random choice of the schedule.
    pub seed: u64,
    /// Where loaders run.
    #[serde(default)]
    pub placement: Placement,
    /// This generator's share of a run split across workers (the whole run by default).
    #[serde(default)]
    pub share: Share,
}

/// Why a run ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum StopReason {
    /// The schedule ran to its end.
    Completed,
    /// Backlog exceeded the limit.
    Backlog {
        /// Backlog when the run stopped.
        backlog: u64,
        /// The limit it exceeded.
        limit: u64,
    },
    /// Stopped from outside (Ctrl-C).
    Interrupted,
    /// Requests were still in flight after the drain timeout and were abandoned.
    DrainTimeout {
        /// How many.
        abandoned: u64,
    },
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StopReason::Completed => write!(f, "completed"),
            StopReason::Backlog { backlog, limit } => {
                write!(f, "stopped: backlog {backlog} exceeded {limit} (the backend could not keep up)")
            }
            StopReason::Interrupted => write!(f, "interrupted"),
            StopReason::DrainTimeout { abandoned } => {
                write!(f, "stopped: {abandoned} requests still in flight after the drain timeout were abandoned")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backlog_rules() {
        assert_eq!(BacklogRule::parse("off").unwrap(), BacklogRule::Off);
        assert_eq!(BacklogRule::parse("rate").unwrap(), BacklogRule::PerSecondRate);
        assert_eq!(BacklogRule::parse("250").unwrap(), BacklogRule::Above(250));
        assert!(BacklogRule::parse("lots").is_err());
        assert!(BacklogRule::PerSecondRate.is_broken(1216, Some(1215.0)));
        assert!(!BacklogRule::PerSecondRate.is_broken(1215, Some(1215.0)));
        assert!(!BacklogRule::PerSecondRate.is_broken(10_000, None));
        assert!(!BacklogRule::Off.is_broken(u64::MAX, Some(1.0)));
    }
}
