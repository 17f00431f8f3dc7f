//! Pass/fail thresholds on a run's whole-run figures:
//! `p99<50ms,errors<0.1%`, `add-gold:p99.9<=20ms`, `rate>=900`, `stage:matched p99<5s`.
//!
//! Each threshold is `[OPERATION:]METRIC COMPARISON VALUE` (or `OPERATION METRIC …`, for a scripted
//! swarm's stages, whose operations are `stage:NAME`). Latency metrics
//! (`p50`, `p90`, `p95`, `p99`, `p99.9`, `p99.99`, `max`, `mean`) take a
//! duration and are read from the operation's merged whole-run histogram;
//! `errors` and `conflicts` take a count or a percentage of the operation's
//! requests; `rate` is successful requests per second over the run. The
//! operation defaults to the first (the whole request) — except `errors` and
//! `conflicts` of a swarm's run, which default to its `session` operation
//! (joins, and the failed joins, refusals and disconnects that are its
//! failures: what went wrong for the players).

use crate::record::{OpRecord, RunRecord};
use crate::timeline::merged;
use aggro_core::units::{format_nanos, parse_duration};

/// A swarm's operation that counts the players' sessions (aggro's `arena swarm`).
const SESSIONS: &str = "session";

/// What a threshold measures.
#[derive(Clone, Debug, PartialEq)]
enum Metric {
    Quantile(f64),
    Max,
    Mean,
    Errors,
    Conflicts,
    Rate,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Comparison {
    Below,
    AtMost,
    Above,
    AtLeast,
}

#[derive(Clone, Debug, PartialEq)]
enum Bound {
    Nanos(f64),
    Count(f64),
    Percent(f64),
}

/// One parsed threshold.
#[derive(Clone, Debug, PartialEq)]
pub struct Threshold {
    text: String,
    op: Option<String>,
    metric: Metric,
    comparison: Comparison,
    bound: Bound,
}

/// A threshold checked against a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// The threshold as written.
    pub threshold: String,
    /// The run's figure, formatted.
    pub measured: String,
    /// Whether the run met it.
    pub passed: bool,
}

/// Parses a comma-separated list of thresholds.
pub fn parse(text: &str) -> Result<Vec<Threshold>, String> {
    text.split(',').map(str::trim).filter(|t| !t.is_empty()).map(Threshold::parse).collect()
}

impl Threshold {
    fn parse(text: &str) -> Result<Self, String> {
        let bad = |why: &str| format!("bad threshold {text:?}: {why} (examples: p99<50ms, errors<0.1%, add-gold:p99.9<=20ms, rate>=900)");
        let at = text.find(['<', '>']).ok_or_else(|| bad("no comparison (<, <=, >, >=)"))?;
        let (left, right) = text.split_at(at);
        let (comparison, value) = match right.as_bytes() {
            [b'<', b'=', ..] => (Comparison::AtMost, &right[2..]),
            [b'>', b'=', ..] => (Comparison::AtLeast, &right[2..]),
            [b'<', ..] => (Comparison::Below, &right[1..]),
            _ => (Comparison::Above, &right[1..]),
        };
        // `OPERATION:METRIC`, or `OPERATION METRIC` for a name with a colon of its own (`stage:matched p99`).
        let (op, metric) = match left.trim().rsplit_once(char::is_whitespace).or_else(|| left.trim().rsplit_once(':')) {
            Some((op, m)) => (Some(op.trim().to_string()), m.trim()),
            None => (None, left.trim()),
        };
        let metric = match metric {
            "max" => Metric::Max,
            "mean" => Metric::Mean,
            "errors" => Metric::Errors,
            "conflicts" => Metric::Conflicts,
            "rate" => Metric::Rate,
            p => {
                let digits = p.strip_prefix('p').ok_or_else(|| bad("unknown metric"))?;
                let pct: f64 = match digits {
                    "999" => 99.9,
                    "9999" => 99.99,
                    d => d.parse().map_err(|_| bad("unknown metric"))?,
                };
                if !(0.0..=100.0).contains(&pct) {
                    return Err(bad("a percentile lies between p0 and p100"));
                }
                // 99.9 / 100 is 0.9990000000000001 in floating point: round to the quantile meant.
                Metric::Quantile((pct * 1e6).round() / 1e8)
            }
        };
        let value = value.trim();
        let number = |v: &str| v.trim().parse::<f64>().map_err(|_| bad("the value is not a number"));
        let bound = match metric {
            Metric::Quantile(_) | Metric::Max | Metric::Mean => Bound::Nanos(parse_duration(value).map_err(|e| bad(&e))?.as_nanos() as f64),
            Metric::Errors | Metric::Conflicts => match value.strip_suffix('%') {
                Some(p) => Bound::Percent(number(p)?),
                None => Bound::Count(number(value)?),
            },
            Metric::Rate => Bound::Count(number(value.trim_end_matches("/s"))?),
        };
        Ok(Self { text: text.trim().to_string(), op, metric, comparison, bound })
    }

    /// The threshold as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Checks the threshold against `record`'s whole-run figures.
    pub fn check(&self, record: &RunRecord) -> Result<Check, String> {
        let op = match &self.op {
            Some(name) => record
                .total(name)
                .ok_or_else(|| format!("{}: the run has no operation {name:?} (it has {})", self.text, record.operations.join(", ")))?,
            None => match self.metric {
                Metric::Errors | Metric::Conflicts if record.command == "arena swarm" => record.total(SESSIONS),
                _ => None,
            }
            .or(record.totals.first())
            .ok_or_else(|| format!("{}: the run recorded no operation", self.text))?,
        };
        let (value, measured) = self.measure(op, record.elapsed_s)?;
        let limit = match self.bound {
            Bound::Nanos(v) | Bound::Count(v) | Bound::Percent(v) => v,
        };
        let passed = match self.comparison {
            Comparison::Below => value < limit,
            Comparison::AtMost => value <= limit,
            Comparison::Above => value > limit,
            Comparison::AtLeast => value >= limit,
        };
        Ok(Check { threshold: self.text.clone(), measured, passed })
    }

    fn measure(&self, op: &OpRecord, elapsed_s: f64) -> Result<(f64, String), String> {
        let failures = |n: u64| match self.bound {
            Bound::Percent(_) => {
                let pct = op.percent_of_requests(n);
                (pct, format!("{pct:.3}% ({n} of {})", op.ok + op.errors))
            }
            _ => (n as f64, n.to_string()),
        };
        let nanos = |ns: u64| Ok((ns as f64, format_nanos(ns)));
        match self.metric {
            Metric::Errors => Ok(failures(op.errors)),
            Metric::Conflicts => Ok(failures(op.conflicts)),
            Metric::Rate => {
                let rate = op.per_second(elapsed_s);
                Ok((rate, format!("{rate:.1}/s")))
            }
            Metric::Mean => Ok((op.latency.mean_ns, format_nanos(op.latency.mean_ns as u64))),
            Metric::Max => nanos(op.latency.max_ns),
            Metric::Quantile(_) if op.latency.count == 0 => Err(format!("{}: {} has no successful request to measure", self.text, op.name)),
            Metric::Quantile(q) => {
                let h = merged([op.latency_hdr.as_str()]).map_err(|e| format!("{}: {e}", self.text))?;
                nanos(h.value_at_quantile(q))
            }
        }
    }
}

/// Checks every threshold; an unknown operation is an error, not a failure.
pub fn check_all(thresholds: &[Threshold], record: &RunRecord) -> Result<Vec<Check>, String> {
    thresholds.iter().map(|t| t.check(record)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_parse_with_operations_units_and_comparisons() {
        let t = parse(
            "p99<50ms, errors<0.1%,add-gold:p99.9<=20ms,rate>=900/s,conflicts>3,frame/100/base:max<4ms,stage:matched p99<5s,stage:matched:rate>=30/s",
        )
        .unwrap();
        assert_eq!(t.len(), 8);
        assert_eq!((t[6].op.as_deref(), &t[6].metric), (Some("stage:matched"), &Metric::Quantile(0.99)));
        assert_eq!((t[7].op.as_deref(), &t[7].metric, &t[7].bound), (Some("stage:matched"), &Metric::Rate, &Bound::Count(30.0)));
        assert_eq!(t[0].metric, Metric::Quantile(0.99));
        assert_eq!(t[0].bound, Bound::Nanos(50e6));
        assert_eq!(t[1].bound, Bound::Percent(0.1));
        assert_eq!(t[2].op.as_deref(), Some("add-gold"));
        assert_eq!(t[2].comparison, Comparison::AtMost);
        assert_eq!(t[2].metric, Metric::Quantile(0.999));
        assert_eq!(t[3].bound, Bound::Count(900.0));
        assert_eq!(t[4].comparison, Comparison::Above);
        assert_eq!(t[5].op.as_deref(), Some("frame/100/base"));
        for bad in ["p99", "p99<fast", "p200<1ms", "latency<1ms", "errors<lots", "q99<1ms"] {
            assert!(parse(bad).is_err(), "{bad} parsed");
        }
    }
}
