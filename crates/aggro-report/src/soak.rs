//! Soaks that find leaks: a watched server's memory, open files, threads
//! and CPU read from /proc as each interval closes (`--server-pid`,
//! [`crate::host::ServerSampler`]), and over the run a least-squares line through each resource — and through
//! aggro's own memory — after the bots have all joined. A resource that
//! climbs steadily (the line explains most of its variation) by a clear
//! amount over a long enough stretch is a leak, given as growth per hour
//! with its fit.

#[cfg(test)]
use crate::host::ServerUse;
use crate::record::IntervalRecord;
use serde::{Deserialize, Serialize};

/// A least-squares line through a resource's values over time.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct Trend {
    /// The line's value at the stretch's first sample.
    pub from: f64,
    /// The line's value at its last.
    pub to: f64,
    /// Its slope, per hour.
    pub per_hour: f64,
    /// The share of the values' variation the line explains (0–1; 1 for values that never changed).
    pub r2: f64,
    /// The stretch fitted, seconds.
    pub span_s: f64,
    /// The samples in it.
    pub samples: usize,
}

impl Trend {
    /// The line through `points` (seconds, value); None for fewer than three points or no time between them.
    pub fn fit(points: &[(f64, f64)]) -> Option<Trend> {
        let n = points.len() as f64;
        if points.len() < 3 {
            return None;
        }
        let (mt, mv) = (points.iter().map(|p| p.0).sum::<f64>() / n, points.iter().map(|p| p.1).sum::<f64>() / n);
        let stt: f64 = points.iter().map(|p| (p.0 - mt).powi(2)).sum();
        let svv: f64 = points.iter().map(|p| (p.1 - mv).powi(2)).sum();
        let stv: f64 = points.iter().map(|p| (p.0 - mt) * (p.1 - mv)).sum();
        if stt <= 0.0 {
            return None;
        }
        let slope = stv / stt;
        let (t0, t1) = (points[0].0, points[points.len() - 1].0);
        let at = |t: f64| mv + slope * (t - mt);
        let r2 = if svv > 0.0 { stv * stv / (stt * svv) } else { 1.0 };
        Some(Trend { from: at(t0), to: at(t1), per_hour: slope * 3600.0, r2, span_s: t1 - t0, samples: points.len() })
    }

    /// Grew steadily (the line explains at least [`STEADY_R2`] of the variation) by at least `least` and
    /// [`LEAST_GROWTH`] of where it began.
    fn climbs(&self, least: f64) -> bool {
        let growth = self.to - self.from;
        self.r2 >= STEADY_R2 && growth >= least && growth >= LEAST_GROWTH * self.from.abs()
    }
}

/// A climb this steady (R² of the line) is a trend, not a sawtooth of garbage collections.
pub const STEADY_R2: f64 = 0.8;
/// A climb this large a share of where the resource began is more than noise.
pub const LEAST_GROWTH: f64 = 0.05;

/// A watched resource: its name, whose it is, the least growth that is a leak (and that much more per
/// sample), and how to read it.
struct Resource {
    name: &'static str,
    server: bool,
    least: f64,
    least_per_sample: f64,
    read: fn(&IntervalRecord) -> Option<f64>,
    show: fn(f64) -> String,
}

const MB: f64 = 1e6;

/// What aggro's own memory may grow by per interval without a warning: the record it keeps of each for
/// the result file is a few KB.
pub const AGGRO_KEEPS_PER_INTERVAL: f64 = 64e3;

const RESOURCES: [Resource; 4] = [
    Resource {
        name: "server RSS",
        server: true,
        least: 4.0 * MB,
        least_per_sample: 0.0,
        read: |i| Some(i.server?.rss_bytes as f64),
        show: |v| format!("{:.1} MB", v / MB),
    },
    Resource {
        name: "server open files",
        server: true,
        least: 16.0,
        least_per_sample: 0.0,
        read: |i| Some(i.server?.fds? as f64),
        show: |v| format!("{v:.0}"),
    },
    Resource {
        name: "server threads",
        server: true,
        least: 4.0,
        least_per_sample: 0.0,
        read: |i| Some(i.server?.threads as f64),
        show: |v| format!("{v:.0}"),
    },
    Resource {
        name: "aggro's own RSS",
        server: false,
        least: 4.0 * MB,
        // aggro keeps each interval's record for the result file (a few KB of encoded histograms): a climb
        // beyond 64 KB an interval is something else.
        least_per_sample: AGGRO_KEEPS_PER_INTERVAL,
        read: |i| Some(i.cpu.generator_rss_bytes as f64).filter(|v| *v > 0.0),
        show: |v| format!("{:.1} MB", v / MB),
    },
];

/// One resource's trend over the soak.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Watched {
    /// What was watched (`server RSS`, `aggro's own RSS`).
    pub resource: String,
    /// The server's (else aggro's own).
    pub server: bool,
    /// Its line from the settled time to the end.
    pub trend: Trend,
    /// It climbed steadily over a long enough stretch: a leak.
    pub leak: bool,
    /// The line as a person reads it.
    pub text: String,
}

/// The run's soak: each resource's trend from `settled_s` (the bots all in) to the end. A leak needs a
/// stretch of `window_s` or more.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Soak {
    /// When the bots were all in: the fits begin after it.
    pub from_s: f64,
    /// The shortest stretch a leak is judged over, seconds.
    pub window_s: f64,
    /// Each resource the intervals hold.
    pub watched: Vec<Watched>,
}

impl Soak {
    /// Fits each resource the intervals hold over those that end after `settled_s`.
    pub fn of(intervals: &[IntervalRecord], settled_s: f64, window_s: f64) -> Soak {
        let watched = RESOURCES
            .iter()
            .filter_map(|r| {
                let points: Vec<(f64, f64)> =
                    intervals.iter().filter(|i| i.end_s > settled_s).filter_map(|i| Some((i.end_s, (r.read)(i)?))).collect();
                let trend = Trend::fit(&points)?;
                let leak = trend.span_s >= window_s && trend.climbs(r.least + r.least_per_sample * trend.samples as f64);
                let change = trend.to - trend.from;
                let text = format!(
                    "{}: {} → {} over {:.0} s ({}{}/h, R² {:.2}){}",
                    r.name,
                    (r.show)(trend.from),
                    (r.show)(trend.to),
                    trend.span_s,
                    if change >= 0.0 { "+" } else { "−" },
                    (r.show)(trend.per_hour.abs()),
                    trend.r2,
                    if leak { " — climbing steadily: a leak" } else { "" }
                );
                Some(Watched { resource: r.name.to_string(), server: r.server, trend, leak, text })
            })
            .collect();
        Soak { from_s: settled_s, window_s, watched }
    }

    /// The server's leaks found, as the verdict says them (aggro's own climbing is not the server's).
    pub fn leaks(&self) -> Vec<&str> {
        self.watched.iter().filter(|w| w.leak && w.server).map(|w| w.text.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intervals(values: impl Fn(f64) -> (u64, u64)) -> Vec<IntervalRecord> {
        (0..120)
            .map(|k| {
                let t = k as f64 + 1.0;
                let (rss, aggro) = values(t);
                let mut i: IntervalRecord = serde_json::from_value(serde_json::json!({
                    "start_s": t - 1.0, "end_s": t, "backlog": 0, "due": 0, "started": 0, "ops": [],
                    "lag": aggro_stats::Summary::default(), "cpu": { "generator_cores": 0.1, "machine_busy": 0.2, "machine_steal": 0.0, "generator_rss_bytes": aggro }
                }))
                .unwrap();
                i.server = Some(ServerUse { rss_bytes: rss, fds: Some(40), threads: 11, cpu_cores: 0.2 });
                i
            })
            .collect()
    }

    #[test]
    fn a_line_through_points_gives_its_slope_and_fit() {
        let t = Trend::fit(&[(0.0, 10.0), (1.0, 12.0), (2.0, 14.0), (3.0, 16.0)]).unwrap();
        assert!((t.per_hour - 7200.0).abs() < 1e-6 && (t.r2 - 1.0).abs() < 1e-9 && (t.from - 10.0).abs() < 1e-9, "{t:?}");
        assert_eq!(Trend::fit(&[(0.0, 1.0), (1.0, 2.0)]), None);
        assert_eq!(Trend::fit(&[(5.0, 1.0), (5.0, 2.0), (5.0, 3.0)]), None, "no time between them");
        let flat = Trend::fit(&[(0.0, 7.0), (1.0, 7.0), (2.0, 7.0)]).unwrap();
        assert_eq!((flat.per_hour, flat.r2), (0.0, 1.0));
    }

    #[test]
    fn a_steady_climb_over_the_window_is_a_leak_and_a_sawtooth_or_a_short_run_is_not() {
        // 60 MB and climbing 0.5 MB a second (1.8 GB an hour) after the joins end at 20 s.
        let leaking = intervals(|t| ((60.0 * MB + 0.5 * MB * t) as u64, 30_000_000));
        let soak = Soak::of(&leaking, 20.0, 60.0);
        let leaks = soak.leaks();
        assert_eq!(leaks.len(), 1, "{soak:?}");
        assert!(leaks[0].starts_with("server RSS: 70.5 MB → 120.0 MB over 99 s (+1800.0 MB/h, R² 1.00)"), "{}", leaks[0]);
        assert!(soak.watched.iter().any(|w| w.resource == "aggro's own RSS" && !w.leak && w.trend.per_hour == 0.0), "{soak:?}");
        assert!(Soak::of(&leaking, 20.0, 600.0).leaks().is_empty(), "a stretch shorter than the window judges nothing");
        // A garbage collector's sawtooth: up 20 MB and back every 10 s.
        let sawtooth = intervals(|t| ((60.0 * MB + 2.0 * MB * (t % 10.0)) as u64, 30_000_000));
        assert!(Soak::of(&sawtooth, 20.0, 60.0).leaks().is_empty());
        // Steady but small: 1 MB over the run is not 4 MB.
        let slight = intervals(|t| ((60.0 * MB + 0.01 * MB * t) as u64, 30_000_000));
        assert!(Soak::of(&slight, 20.0, 60.0).leaks().is_empty());
        // aggro's own memory: 40 KB an interval is the records it keeps; 1 MB an interval is a leak of its
        // own, warned of, and never the server's.
        let keeping = Soak::of(&intervals(|t| (60_000_000, (30.0 * MB + 0.04 * MB * t) as u64)), 20.0, 60.0);
        assert!(keeping.watched.iter().all(|w| !w.leak), "{keeping:?}");
        let own = Soak::of(&intervals(|t| (60_000_000, (30.0 * MB + 1.0 * MB * t) as u64)), 20.0, 60.0);
        assert!(own.watched.iter().any(|w| w.leak && !w.server) && own.leaks().is_empty(), "{own:?}");
    }
}
