//! What to run, and why a run ended.

use aggro_core::{Nanos, Pacing, RatePlan, Share};
use serde::{Deserialize, Serialize};

/// When backlog ends a run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BacklogRule {
    /// Never: the run drains its backlog, bounded by the drain timeout.
    Off,
    /// When backlog exceeds the planned requests per second (the DynamoDB/Spanner tool's rule).
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
            n => n.parse().map(BacklogRule::Above).map_err(|_| format!("bad --stop-on-backlog {text:?}: expected off, rate or a number of requests")),
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

/// How a loader waits for a slot further ahead than a yield.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum TimerMode {
    /// Sleep on the timer to the slot's time: no CPU while waiting, but a
    /// wake-up comes tens of microseconds late on a VM.
    Cheap,
    /// Sleep to just before the slot's time and spin the rest: lateness of a
    /// few microseconds, for the CPU of the spin.
    Precise,
    /// Precise for a loader on a thread of its own (an embedded target,
    /// whose engine runs in that thread) while its requests take less than
    /// 100 µs, where a late wake-up would be a large part of the latency;
    /// cheap otherwise, and always for loaders sharing the runtime (network
    /// targets), whose spin would take CPU from the other loaders and from a
    /// server on the same machine.
    #[default]
    Auto,
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
    /// How loaders wait for their slots.
    #[serde(default)]
    pub timer: TimerMode,
    /// Keep each loader's figures apart (the per-loader view); otherwise loaders share a couple of
    /// recorders per core.
    #[serde(default)]
    pub per_loader: bool,
    /// At most this many requests per loader (pgbench's `-t`: each client runs exactly that many), if set.
    #[serde(default)]
    pub each_loader_limit: Option<u64>,
    /// Each loader runs its own stripe only: a request belongs to its loader (an MMO zone plays its
    /// own periods). Otherwise loaders are interchangeable, and one with nothing due takes a due slot
    /// of a loader busy on a slow request, as a pool would.
    #[serde(default)]
    pub keep_stripes: bool,
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
    /// Every request that ended failed, interval after interval, for this long: the target is gone or
    /// refuses everything, and nothing more would be measured.
    Failing {
        /// Seconds of nothing but failures.
        seconds: u64,
    },
    /// Loaders gave up on an error, as pgbench's clients abort ([`Loader::aborted`](crate::Loader::aborted)).
    Aborted {
        /// How many.
        loaders: u64,
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
            StopReason::Failing { seconds } => {
                write!(f, "stopped: every request failed for {seconds}s in a row (the target is gone or refuses everything)")
            }
            StopReason::Aborted { loaders } => write!(f, "{loaders} client(s) aborted on an error (as pgbench's clients do)"),
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
