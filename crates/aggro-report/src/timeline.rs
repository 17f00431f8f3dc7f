//! A run's intervals as chart points: consecutive intervals grouped so a
//! chart never holds more points than it has pixels, with each group's
//! percentiles read from the merged histograms of its intervals (never
//! averaged), and its counts turned into rates.

use crate::record::{IntervalRecord, OpRecord, RunRecord};
use aggro_stats::{Histogram, Summary, encode, new_histogram};
use std::ops::Range;

/// Most points a time chart holds (about one per pixel of its width).
pub const MAX_POINTS: usize = 720;

/// Consecutive intervals of a run, grouped.
pub struct Timeline<'a> {
    intervals: &'a [IntervalRecord],
    groups: Vec<Range<usize>>,
}

impl<'a> Timeline<'a> {
    /// The intervals of `record` in groups of at most `max_points`.
    pub fn new(record: &'a RunRecord, max_points: usize) -> Self {
        Self::of(&record.intervals, max_points)
    }

    /// `intervals` in groups of at most `max_points`.
    pub fn of(intervals: &'a [IntervalRecord], max_points: usize) -> Self {
        let n = intervals.len();
        let per = n.div_ceil(max_points.max(1)).max(1);
        let mut groups: Vec<Range<usize>> = (0..n).step_by(per).map(|s| s..(s + per).min(n)).collect();
        // A run's last interval is often a sliver (the run ended just after a
        // boundary): its rates would be noise, so it joins the group before it.
        if groups.len() > 1 && ends_in_sliver(intervals, |i| i.end_s - i.start_s) {
            let last = groups.pop().expect("more than one group");
            groups.last_mut().expect("more than one group").end = last.end;
        }
        Self { intervals, groups }
    }

    /// Intervals per group (1 when every interval is its own point).
    pub fn group_size(&self) -> usize {
        self.groups.first().map_or(1, |g| g.len())
    }

    /// The end of each group, seconds since the start.
    pub fn at_s(&self) -> Vec<f64> {
        self.groups.iter().map(|g| self.intervals[g.end - 1].end_s).collect()
    }

    fn seconds(&self, g: &Range<usize>) -> f64 {
        (self.intervals[g.end - 1].end_s - self.intervals[g.start].start_s).max(1e-9)
    }

    /// Operation `op`'s latency (or service time) summary per group (count 0: no successful request in it).
    pub fn latency(&self, op: usize, service: bool) -> Result<Vec<Summary>, encode::DecodeError> {
        fn pick(o: &OpRecord, service: bool) -> (&Summary, &String) {
            if service { (&o.service, &o.service_hdr) } else { (&o.latency, &o.latency_hdr) }
        }
        let mut summaries = Vec::with_capacity(self.groups.len());
        for g in &self.groups {
            let ops = self.intervals[g.clone()].iter().filter_map(|i| i.ops.get(op));
            summaries.push(if g.len() == 1 {
                ops.map(|o| *pick(o, service).0).next().unwrap_or_default()
            } else {
                Summary::of(&merged(ops.map(|o| pick(o, service).1.as_str()))?)
            });
        }
        Ok(summaries)
    }

    /// [`Timeline::latency`] of each of `ops`, spread over the machine's cores
    /// (decoding an hour of histograms is the report's main cost).
    pub fn latency_of_each(&self, ops: &[usize]) -> Vec<Result<Vec<Summary>, encode::DecodeError>> {
        if ops.is_empty() {
            return Vec::new();
        }
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(ops.len());
        let mut out: Vec<Option<Result<Vec<Summary>, encode::DecodeError>>> = (0..ops.len()).map(|_| None).collect();
        std::thread::scope(|scope| {
            for (slots, chunk) in out.chunks_mut(ops.len().div_ceil(threads)).zip(ops.chunks(ops.len().div_ceil(threads))) {
                scope.spawn(move || {
                    for (slot, &op) in slots.iter_mut().zip(chunk) {
                        *slot = Some(self.latency(op, false));
                    }
                });
            }
        });
        out.into_iter().map(|r| r.expect("every operation was computed")).collect()
    }

    /// Per group: the sum of `count` over its intervals divided by its length (a rate per second).
    pub fn rate(&self, count: impl Fn(&IntervalRecord) -> u64) -> Vec<f64> {
        self.groups.iter().map(|g| self.intervals[g.clone()].iter().map(&count).sum::<u64>() as f64 / self.seconds(g)).collect()
    }

    /// Per group: the largest value of `value` over its intervals.
    pub fn max(&self, value: impl Fn(&IntervalRecord) -> f64) -> Vec<f64> {
        self.groups.iter().map(|g| self.intervals[g.clone()].iter().map(&value).fold(f64::NAN, f64::max)).collect()
    }

    /// Per group: the time-weighted mean of `value` over its intervals.
    pub fn mean(&self, value: impl Fn(&IntervalRecord) -> f64) -> Vec<f64> {
        self.groups
            .iter()
            .map(|g| {
                let span = self.seconds(g);
                self.intervals[g.clone()].iter().map(|i| value(i) * (i.end_s - i.start_s)).sum::<f64>() / span
            })
            .collect()
    }
}

/// Whether the last of several intervals (of any form, measured by `span`) is shorter than a quarter of the first.
pub fn ends_in_sliver<T>(intervals: &[T], span: impl Fn(&T) -> f64) -> bool {
    match (intervals.first(), intervals.last()) {
        (Some(first), Some(last)) if intervals.len() > 1 => span(last) < 0.25 * span(first),
        _ => false,
    }
}

/// The union of encoded histograms.
pub fn merged<'s>(encoded: impl IntoIterator<Item = &'s str>) -> Result<Histogram, encode::DecodeError> {
    let mut parts = encoded.into_iter();
    let Some(first) = parts.next() else { return Ok(new_histogram()) };
    let mut h = encode::from_base64(first)?;
    for text in parts {
        h.add(encode::from_base64(text)?).expect("an auto-resizing histogram takes any values");
    }
    Ok(h)
}

/// Pairs x values with y values as chart points.
pub fn points(xs: &[f64], ys: impl IntoIterator<Item = f64>) -> Vec<(f64, f64)> {
    xs.iter().copied().zip(ys).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::CpuUse;
    use crate::record::OpRecord;

    fn op(values: &[u64]) -> OpRecord {
        let mut h = new_histogram();
        for &v in values {
            h.record(v).unwrap();
        }
        let s = aggro_stats::OpStats { latency: h.clone(), service: h, ok: values.len() as u64, ..Default::default() };
        OpRecord::from_stats("op", &s)
    }

    fn interval(k: usize, values: &[u64]) -> IntervalRecord {
        IntervalRecord {
            start_s: k as f64,
            end_s: k as f64 + 1.0,
            backlog: k as u64,
            due: 0,
            started: 0,
            planned_rate: Some(10.0),
            ops: vec![op(values)],
            lag: Summary::default(),
            lag_hdr: String::new(),
            cpu: CpuUse::default(),
            behind: 0,
            server: None,
        }
    }

    #[test]
    fn groups_merge_histograms_rather_than_average_percentiles() {
        // Interval 0: one slow request among many fast ones; interval 1: all fast.
        let mut fast = vec![1_000u64; 99];
        fast.push(1_000_000);
        let intervals = vec![interval(0, &fast), interval(1, &[1_000; 100]), interval(2, &[2_000; 10])];
        let t = Timeline::of(&intervals, 2);
        assert_eq!(t.group_size(), 2);
        assert_eq!(t.at_s(), vec![2.0, 3.0]);
        let l = t.latency(0, false).unwrap();
        let first = l[0];
        assert_eq!(first.count, 200);
        assert_eq!(first.max_ns, 1_000_447); // the slow request, at the histogram's resolution
        assert!(first.p99_ns < 1_100, "p99 of the union is fast: {}", first.p99_ns);
        assert_eq!(l[1], intervals[2].ops[0].latency);
        assert_eq!(t.rate(|i| i.ops[0].ok), vec![100.0, 10.0]);
        assert_eq!(t.max(|i| i.backlog as f64), vec![1.0, 2.0]);
        assert_eq!(t.mean(|i| i.backlog as f64), vec![0.5, 2.0]);
    }

    #[test]
    fn one_interval_per_point_uses_the_recorded_summaries() {
        let mut intervals = vec![interval(0, &[5_000]), interval(1, &[7_000])];
        let t = Timeline::of(&intervals, MAX_POINTS);
        assert_eq!(t.group_size(), 1);
        let l = t.latency(0, false).unwrap();
        assert_eq!(l[1].max_ns, intervals[1].ops[0].latency.max_ns);
        assert!(Timeline::of(&[], 10).latency(0, false).unwrap().is_empty());
        assert!(t.latency_of_each(&[]).is_empty());
        assert_eq!(t.latency_of_each(&[0, 0, 0])[2].as_ref().unwrap(), &l);
        // A sliver at the end joins the point before it.
        intervals.push(IntervalRecord { start_s: 2.0, end_s: 2.01, ..interval(2, &[9_000]) });
        let t = Timeline::of(&intervals, MAX_POINTS);
        assert_eq!(t.at_s(), vec![1.0, 2.01]);
        assert_eq!(t.latency(0, false).unwrap()[1].count, 2);
    }
}
