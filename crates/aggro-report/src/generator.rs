//! Whether a run's figures may describe the generator rather than the
//! backend (Photon's warning), decided from evidence in the interval
//! records, one named signal at a time, each with its figure and limit:
//!
//! - `cpu`: aggro's own CPU reached 90 % of the cores it may use in some
//!   interval of at least 100 ms (or over the whole run, when none is that
//!   long): a run's last interval may be a stub of a few milliseconds in
//!   which the loaders' shutdown alone looks like several cores;
//! - `lateness`: timer lateness p99 above 1 ms over the intervals in which
//!   no request failed. An interval with failures is left out: a backend
//!   going down or restarting shows in its errors, and the wake-ups it
//!   disturbs (reconnects, a restart's CPU on a shared machine) are not the
//!   generator running short;
//! - `backlog`: due requests went untaken while a loader sat idle
//!   (`IntervalRecord::behind`): the loaders were free but not scheduled;
//! - `steal`: the hypervisor took more than 10 % of the machine's time on
//!   average, so every figure, the generator's included, ran on less CPU
//!   than the machine reports.
//!
//! Backlog with every loader busy is *not* a signal: that is the backend
//! being slow, which is what a run measures.

use crate::record::IntervalRecord;
pub use crate::signal::{GeneratorSignal, Signal};
use crate::timeline::merged;
use aggro_core::units::format_nanos;
use aggro_stats::Summary;

/// Share of its cores aggro's CPU must reach for `cpu`.
pub const CPU_SHARE: f64 = 0.9;
/// The shortest interval whose CPU `cpu` judges on its own.
pub const CPU_WINDOW_S: f64 = 0.1;
/// Timer lateness p99 above which `lateness` fires.
pub const LATENESS_P99_NS: u64 = 1_000_000;
/// Mean steal share above which `steal` fires.
pub const STEAL_SHARE: f64 = 0.10;

/// Every signal that fires for `intervals` of a run whose generator may use
/// `cores` cores.
pub fn signals(intervals: &[IntervalRecord], cores: f64) -> Vec<GeneratorSignal> {
    [cpu(intervals, cores), lateness(intervals), backlog(intervals), steal(intervals)].into_iter().flatten().collect()
}

fn cpu(intervals: &[IntervalRecord], cores: f64) -> Option<GeneratorSignal> {
    let length = |i: &IntervalRecord| (i.end_s - i.start_s).max(0.0);
    let peak = intervals.iter().filter(|i| length(i) >= CPU_WINDOW_S).map(|i| i.cpu.generator_cores).reduce(f64::max).unwrap_or_else(|| {
        let wall: f64 = intervals.iter().map(length).sum();
        intervals.iter().map(|i| i.cpu.generator_cores * length(i)).sum::<f64>() / wall.max(f64::MIN_POSITIVE)
    });
    let limit = CPU_SHARE * cores;
    (peak > limit).then(|| GeneratorSignal {
        signal: Signal::Cpu,
        figure: peak,
        limit,
        message: format!("aggro's own CPU reached {peak:.2} of its {cores:.0} core(s) (limit {limit:.2})"),
    })
}

fn lateness(intervals: &[IntervalRecord]) -> Option<GeneratorSignal> {
    let clean: Vec<&IntervalRecord> = intervals.iter().filter(|i| i.ops.first().is_none_or(|o| o.errors == 0)).collect();
    let p99 = if clean.iter().all(|i| !i.lag_hdr.is_empty()) {
        Summary::of(&merged(clean.iter().map(|i| i.lag_hdr.as_str())).ok()?).p99_ns
    } else {
        // Histograms not kept: the worst interval's p99 (an upper bound).
        clean.iter().map(|i| i.lag.p99_ns).max()?
    };
    (p99 > LATENESS_P99_NS).then(|| GeneratorSignal {
        signal: Signal::Lateness,
        figure: p99 as f64,
        limit: LATENESS_P99_NS as f64,
        message: format!(
            "loaders started requests late: timer lateness p99 {} over the {} of {} intervals without failures (limit {})",
            format_nanos(p99),
            clean.len(),
            intervals.len(),
            format_nanos(LATENESS_P99_NS)
        ),
    })
}

fn backlog(intervals: &[IntervalRecord]) -> Option<GeneratorSignal> {
    let worst = intervals.iter().map(|i| i.behind).max().filter(|&b| b > 0)?;
    let times = intervals.iter().filter(|i| i.behind > 0).count();
    Some(GeneratorSignal {
        signal: Signal::Backlog,
        figure: worst as f64,
        limit: 0.0,
        message: format!("{worst} due requests waited while a loader sat idle ({times} interval(s)): the loaders were free but not run"),
    })
}

fn steal(intervals: &[IntervalRecord]) -> Option<GeneratorSignal> {
    if intervals.is_empty() {
        return None;
    }
    let mean = intervals.iter().map(|i| i.cpu.machine_steal).sum::<f64>() / intervals.len() as f64;
    (mean > STEAL_SHARE).then(|| GeneratorSignal {
        signal: Signal::Steal,
        figure: mean,
        limit: STEAL_SHARE,
        message: format!(
            "the hypervisor stole {:.0} % of the machine's time on average (limit {:.0} %): every figure ran on less CPU than it seems",
            mean * 100.0,
            STEAL_SHARE * 100.0
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::CpuUse;
    use crate::record::OpRecord;
    use aggro_stats::{Histogram, encode};

    /// An interval whose loaders were `late_ns` late on every waited slot.
    fn interval(late_ns: u64, errors: u64) -> IntervalRecord {
        let mut lag = Histogram::new(3).unwrap();
        lag.auto(true);
        for _ in 0..1_000 {
            lag.record(late_ns).unwrap();
        }
        let mut op = OpRecord::from_stats("write", &aggro_stats::OpStats::default());
        op.ok = 1_000;
        op.errors = errors;
        IntervalRecord {
            start_s: 0.0,
            end_s: 1.0,
            backlog: 0,
            due: 1_000,
            started: 1_000,
            planned_rate: Some(1_000.0),
            ops: vec![op],
            lag: Summary::of(&lag),
            lag_hdr: encode::to_base64(&lag),
            cpu: CpuUse { generator_cores: 0.1, ..CpuUse::default() },
            behind: 0,
            server: None,
        }
    }

    fn fired(intervals: &[IntervalRecord]) -> Vec<Signal> {
        signals(intervals, 2.0).into_iter().map(|s| s.signal).collect()
    }

    #[test]
    fn a_healthy_run_fires_nothing() {
        assert!(fired(&[interval(50_000, 0), interval(80_000, 0)]).is_empty());
    }

    #[test]
    fn saturated_cpu_fires_cpu() {
        let mut busy = interval(50_000, 0);
        busy.cpu.generator_cores = 1.95;
        let s = signals(&[interval(50_000, 0), busy], 2.0);
        assert_eq!(s.iter().map(|s| s.signal).collect::<Vec<_>>(), [Signal::Cpu]);
        assert!(s[0].message.contains("1.95 of its 2 core(s)"), "{}", s[0].message);
    }

    #[test]
    fn a_stub_of_a_last_interval_is_not_judged_alone() {
        // The seen false alarm: a 1.5 ms last interval at "6.73 cores" (the loaders' shutdown).
        let mut stub = interval(50_000, 0);
        (stub.start_s, stub.end_s, stub.cpu.generator_cores) = (1.0, 1.0015, 6.73);
        assert!(fired(&[interval(50_000, 0), stub.clone()]).is_empty());
        // A run of short intervals only is judged over its whole length.
        let short = |cores| {
            let mut i = stub.clone();
            i.cpu.generator_cores = cores;
            i
        };
        assert!(fired(&[short(0.2), short(0.4)]).is_empty());
        assert_eq!(fired(&[short(1.9), short(1.95)]), [Signal::Cpu]);
    }

    #[test]
    fn sustained_lateness_fires_lateness_with_its_figure() {
        let s = signals(&[interval(2_500_000, 0), interval(2_500_000, 0)], 2.0);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].signal, Signal::Lateness);
        assert!(s[0].figure >= 2_400_000.0 && s[0].message.contains("2 of 2 intervals"), "{s:?}");
    }

    #[test]
    fn lateness_during_an_outage_is_the_outages_not_the_generators() {
        // The seen false alarm: a backend restarted in one interval (errors,
        // late wake-ups), the generator idle and on time otherwise.
        let run = [interval(60_000, 0), interval(30_000_000, 533), interval(60_000, 0)];
        assert!(fired(&run).is_empty(), "{:?}", signals(&run, 2.0));
    }

    #[test]
    fn backlog_beside_an_idle_loader_fires_backlog() {
        let mut behind = interval(50_000, 0);
        behind.behind = 240;
        let s = signals(&[behind], 2.0);
        assert_eq!(s.iter().map(|s| s.signal).collect::<Vec<_>>(), [Signal::Backlog]);
        assert!(s[0].message.contains("240 due requests"), "{}", s[0].message);
    }

    #[test]
    fn backlog_with_every_loader_busy_is_the_backends() {
        let mut slow = interval(50_000, 0);
        slow.backlog = 5_000;
        assert!(fired(&[slow]).is_empty());
    }

    #[test]
    fn steal_fires_on_its_mean_not_one_burst() {
        let mut stolen = interval(50_000, 0);
        stolen.cpu.machine_steal = 0.3;
        assert!(fired(&[stolen.clone(), interval(50_000, 0), interval(50_000, 0), interval(50_000, 0)]).is_empty());
        assert_eq!(fired(&[stolen.clone(), stolen]), [Signal::Steal]);
    }
}
