//! The period book: what every zone's periods add up to, printed as the
//! paper prints it — a `T_last` line per period and, every 100 periods, the
//! per-action table (name, count per period, calls, total time, time per
//! call, mean, last, previous) with p50/p99/max from merged histograms.

use super::profile::OPERATIONS;
use super::thread_time::ThreadTime;
use super::zone::ZoneCounts;
use aggro_core::{ErrorClass, Nanos};
use aggro_stats::{OpId, Recorder, Summary};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const OPS: usize = OPERATIONS.len();
/// `T_last` lines closer together than this are folded into the next one.
const LINE_EVERY: Duration = Duration::from_millis(250);

/// Where the book's lines go (the console, or nowhere).
pub type LineSink = Box<dyn Fn(String) + Send + Sync>;

/// What one zone looks like after a period.
#[derive(Clone, Debug, Default)]
pub struct ZoneState {
    /// Players in memory.
    pub players: usize,
    /// Items they hold.
    pub items: usize,
    /// Running counts.
    pub counts: ZoneCounts,
}

/// Sums over a stretch of periods, and the histograms of every call when
/// the table needs them (the whole run's are the executor's).
#[derive(Clone)]
struct Window {
    periods: u64,
    calls: [u64; OPS],
    ns: [u64; OPS],
    hist: Option<Recorder>,
}

impl Window {
    fn new(histograms: bool) -> Self {
        Self { periods: 0, calls: [0; OPS], ns: [0; OPS], hist: histograms.then(|| Recorder::new(OPS)) }
    }

    fn add(&mut self, calls: &[u64; OPS], ns: &[u64; OPS], period_ns: Nanos, steps: &[(OpId, Nanos)]) {
        self.periods += 1;
        for op in 0..OPS {
            self.calls[op] += calls[op];
            self.ns[op] += ns[op];
        }
        if let Some(h) = &mut self.hist {
            h.record_ok(0, period_ns, period_ns);
            for &(op, t) in steps {
                h.record_ok(op, t, t);
            }
        }
    }
}

struct State {
    window: Window,
    whole: Window,
    /// Time per call of each operation in the last and the previous period.
    last: [f64; OPS],
    prev: [f64; OPS],
    zones: BTreeMap<usize, ZoneState>,
    /// Periods and their time, per zone.
    zone_time: BTreeMap<usize, ZoneTime>,
    last_line: Option<Instant>,
    folded: u64,
    /// Of the folded periods, those with a failed action.
    folded_failed: u64,
}

/// One zone's periods and their time.
#[derive(Clone, Copy, Debug, Default)]
struct ZoneTime {
    periods: u64,
    ns: u64,
    /// The periods' time whose thread's time is known, and that thread time.
    timed_ns: u64,
    thread: ThreadTime,
}

impl ZoneTime {
    /// One period of `period_ns`, and its thread's time if known.
    fn period(period_ns: Nanos, thread: Option<ThreadTime>) -> ZoneTime {
        ZoneTime { periods: 1, ns: period_ns, timed_ns: thread.map_or(0, |_| period_ns), thread: thread.unwrap_or_default() }
    }

    fn add(&mut self, other: &ZoneTime) {
        self.periods += other.periods;
        self.ns += other.ns;
        self.timed_ns += other.timed_ns;
        self.thread.add(other.thread);
    }

    /// Where the time went, when the thread's time is known for every period.
    fn split(&self) -> Option<TimeSplit> {
        if self.timed_ns == self.ns { TimeSplit::of(self.timed_ns, self.thread) } else { None }
    }
}

/// Where a zone's period time went (shares, 0–1), when it ran on a thread of its own.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub struct TimeSplit {
    /// On a core: the zone's work and, for a store running on the zone's thread, the store's.
    pub on_core: f64,
    /// Runnable but waiting for a core: the machine's cores are the limit.
    pub waiting_for_core: f64,
    /// Neither: blocked on the store (a sync, a lock another zone holds, a reply).
    pub waiting_on_store: f64,
}

impl TimeSplit {
    /// The split of `timed_ns` of period time of which the thread spent `thread` on or waiting for a core.
    fn of(timed_ns: u64, thread: ThreadTime) -> Option<TimeSplit> {
        if timed_ns == 0 {
            return None;
        }
        let t = timed_ns as f64;
        let on_core = (thread.on_core as f64 / t).min(1.0);
        let waiting_for_core = (thread.waiting_for_core as f64 / t).min(1.0 - on_core);
        Some(TimeSplit { on_core, waiting_for_core, waiting_on_store: 1.0 - on_core - waiting_for_core })
    }

    /// `on a core 61%, waiting for a core 14%, waiting on the store 25%`.
    pub fn describe(&self) -> String {
        format!(
            "on a core {:.0}%, waiting for a core {:.0}%, waiting on the store {:.0}%",
            self.on_core * 100.0,
            self.waiting_for_core * 100.0,
            self.waiting_on_store * 100.0
        )
    }
}

/// One zone's part of the run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ZoneShare {
    /// The zone's number.
    pub zone: usize,
    /// Its periods.
    pub periods: u64,
    /// Its mean period, ms.
    pub mean_period_ms: f64,
    /// Its player-minutes per minute: 60 s ÷ its mean period.
    pub player_minute_ratio: f64,
    /// Its share of the run's player-minutes (0–1).
    pub share: f64,
    /// Where its time went, when it ran on a thread of its own.
    pub time: Option<TimeSplit>,
}

/// Shared by every zone of a play run.
pub struct PeriodBook {
    state: Mutex<State>,
    out: LineSink,
    table_every: u64,
    started: Instant,
}

/// One row of the action table.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TableRow {
    /// Action name (`period` for the whole period).
    pub name: &'static str,
    /// Calls per period.
    pub per_period: f64,
    /// Calls.
    pub calls: u64,
    /// Total time, ms.
    pub total_ms: f64,
    /// Total time ÷ calls, ms.
    pub per_call_ms: f64,
    /// Histogram figures of one call.
    pub latency: Summary,
    /// Time per call in the last period, ms.
    pub last_ms: f64,
    /// Time per call in the period before, ms.
    pub prev_ms: f64,
}

/// The whole run, as the book saw it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PlaySummary {
    /// Periods run, all zones together.
    pub periods: u64,
    /// Mean period time, ms (all zones' periods).
    pub mean_period_ms: f64,
    /// Median period time, ms (from the merged period histogram): a few
    /// stalls move the mean, not this.
    pub median_period_ms: f64,
    /// The longest period, ms.
    pub max_period_ms: f64,
    /// Share of all period time spent in Checkpoint (0–1).
    pub checkpoint_share: f64,
    /// Game-minutes the store served per minute of real time, all zones
    /// together: Σ over zones of 60 s ÷ that zone's mean period time.
    pub player_minute_ratio: f64,
    /// The per-action table over the whole run.
    pub table: Vec<TableRow>,
    /// Zones' counts added up.
    pub counts: ZoneCounts,
    /// Each zone's part.
    pub zones: Vec<ZoneShare>,
    /// Where the zones' time went, all together, when each ran on a thread of its own.
    pub time: Option<TimeSplit>,
    /// Players and items in memory at the end, all zones.
    pub players: usize,
    /// Items held at the end, all zones.
    pub items: usize,
}

impl PeriodBook {
    /// A book printing to `out`, with the table every `table_every` periods
    /// (0: never).
    pub fn new(out: LineSink, table_every: u64) -> Self {
        Self {
            state: Mutex::new(State {
                window: Window::new(table_every > 0),
                whole: Window::new(false),
                last: [0.0; OPS],
                prev: [0.0; OPS],
                zones: BTreeMap::new(),
                zone_time: BTreeMap::new(),
                last_line: None,
                folded: 0,
                folded_failed: 0,
            }),
            out,
            table_every,
            started: Instant::now(),
        }
    }

    /// Books one period of `zone`: its time, its thread's time if known, every step it timed, and the
    /// class of its first failed action, if one failed (its `T_last` line says so).
    pub fn period_done(
        &self,
        zone: usize,
        period_ns: Nanos,
        thread: Option<ThreadTime>,
        steps: &[(OpId, Nanos)],
        state: ZoneState,
        failed: Option<ErrorClass>,
    ) {
        let mut calls = [0u64; OPS];
        let mut ns = [0u64; OPS];
        calls[0] = 1;
        ns[0] = period_ns;
        for &(op, t) in steps {
            calls[op] += 1;
            ns[op] += t;
        }
        let mut guard = self.state.lock();
        let s = &mut *guard;
        s.window.add(&calls, &ns, period_ns, steps);
        s.whole.add(&calls, &ns, period_ns, steps);
        s.prev = s.last;
        s.last = std::array::from_fn(|op| if calls[op] > 0 { ns[op] as f64 / calls[op] as f64 / 1e6 } else { 0.0 });
        s.zones.insert(zone, state);
        s.zone_time.entry(zone).or_default().add(&ZoneTime::period(period_ns, thread));
        let now = Instant::now();
        if s.last_line.is_none_or(|l| now - l >= LINE_EVERY) {
            let folded = std::mem::take(&mut s.folded);
            let folded_failed = std::mem::take(&mut s.folded_failed);
            let more = match (folded, folded_failed) {
                (0, _) => String::new(),
                (n, 0) => format!("   (+{n} periods since the last line)"),
                (n, f) => format!("   (+{n} periods since the last line, {f} of them FAILED)"),
            };
            let failure = failed.map_or(String::new(), |class| format!("   FAILED ({class})"));
            (self.out)(format!("{} T_last = {:.1}ms{failure}{more}", clock_time(), period_ns as f64 / 1e6));
            s.last_line = Some(now);
        } else {
            s.folded += 1;
            s.folded_failed += u64::from(failed.is_some());
        }
        if self.table_every > 0 && s.whole.periods.is_multiple_of(self.table_every) {
            let lines = self.table_lines(s, &s.window);
            lines.into_iter().for_each(|l| (self.out)(l));
            s.window = Window::new(true);
        }
    }

    /// The table over `w`; call histograms from `hist`.
    fn rows(s: &State, w: &Window, hist: &Recorder) -> Vec<TableRow> {
        (0..OPS)
            .map(|op| TableRow {
                name: OPERATIONS[op],
                per_period: w.calls[op] as f64 / w.periods.max(1) as f64,
                calls: w.calls[op],
                total_ms: w.ns[op] as f64 / 1e6,
                per_call_ms: if w.calls[op] > 0 { w.ns[op] as f64 / w.calls[op] as f64 / 1e6 } else { 0.0 },
                latency: Summary::of(&hist.ops[op].service),
                last_ms: s.last[op],
                prev_ms: s.prev[op],
            })
            .collect()
    }

    fn table_lines(&self, s: &State, w: &Window) -> Vec<String> {
        let mut lines = vec![String::new(), table_header()];
        let Some(hist) = &w.hist else { return Vec::new() };
        let rows = Self::rows(s, w, hist);
        lines.extend(rows[1..].iter().map(table_line));
        let (players, items, counts) = zone_totals(s);
        let elapsed = self.started.elapsed().as_secs_f64();
        lines.push(format!(
            "Tmean {:.2}ms  tn {:.2}ms  tn-1 {:.2}ms  (p50 {:.2}ms, p99 {:.2}ms, max {:.2}ms)",
            rows[0].per_call_ms,
            rows[0].last_ms,
            rows[0].prev_ms,
            ms(rows[0].latency.p50_ns),
            ms(rows[0].latency.p99_ns),
            ms(rows[0].latency.max_ns),
        ));
        lines.push(format!(
            "Periods= {}  Players= {players}  Items= {items}  GuildLoaded= {}  TotalTime= {elapsed:.2}s  avg Tau= {:.1}ms  Logins/sec= {:.2}",
            s.whole.periods,
            counts.guilds_loaded,
            s.whole.ns[0] as f64 / s.whole.periods.max(1) as f64 / 1e6,
            counts.logins as f64 / elapsed.max(1e-9),
        ));
        lines.push(String::new());
        lines
    }

    /// The whole run so far; the calls' histograms are the run's `totals`
    /// (the executor records every step, operation for operation).
    pub fn summary(&self, totals: &Recorder) -> PlaySummary {
        let s = self.state.lock();
        let (players, items, counts) = zone_totals(&s);
        let zones = zone_shares(&s.zone_time);
        let ratio = zones.iter().map(|z| z.player_minute_ratio).sum();
        // All zones' time together, when every zone's is known.
        let time = s
            .zone_time
            .values()
            .fold(ZoneTime::default(), |mut all, z| {
                all.add(z);
                all
            })
            .split();
        let table = Self::rows(&s, &s.whole, totals);
        let checkpoint = table.iter().find(|r| r.name == "Checkpoint").map_or(0.0, |r| r.total_ms);
        PlaySummary {
            periods: s.whole.periods,
            mean_period_ms: s.whole.ns[0] as f64 / s.whole.periods.max(1) as f64 / 1e6,
            median_period_ms: ms(table[0].latency.p50_ns),
            max_period_ms: ms(table[0].latency.max_ns),
            checkpoint_share: checkpoint / table[0].total_ms.max(1e-9),
            player_minute_ratio: ratio,
            table,
            zones,
            time,
            counts,
            players,
            items,
        }
    }
}

/// Each zone's part: 60 s ÷ its mean period, its share of the sum, where its time went.
fn zone_shares(zone_time: &BTreeMap<usize, ZoneTime>) -> Vec<ZoneShare> {
    let mut zones: Vec<ZoneShare> = zone_time
        .iter()
        .filter(|(_, t)| t.periods > 0)
        .map(|(&zone, t)| {
            let mean_ns = t.ns as f64 / t.periods as f64;
            ZoneShare { zone, periods: t.periods, mean_period_ms: mean_ns / 1e6, player_minute_ratio: 60e9 / mean_ns, share: 0.0, time: t.split() }
        })
        .collect();
    let total: f64 = zones.iter().map(|z| z.player_minute_ratio).sum();
    for z in &mut zones {
        z.share = z.player_minute_ratio / total.max(1e-9);
    }
    zones
}

fn zone_totals(s: &State) -> (usize, usize, ZoneCounts) {
    let mut c = ZoneCounts::default();
    let (mut players, mut items) = (0, 0);
    for z in s.zones.values() {
        players += z.players;
        items += z.items;
        c += &z.counts;
    }
    (players, items, c)
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn clock_time() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    format!("{:02}:{:02}:{:02}", secs / 3600 % 24, secs / 60 % 60, secs % 60)
}

/// The table's column heads.
pub fn table_header() -> String {
    format!(
        "{:<14}{:>8}{:>9}{:>11}{:>10}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}",
        "NAME", "C/per", "CALLS", "T.Time", "TT/calls", "mean", "p50", "p99", "max", "Tn", "Tn-1"
    )
}

/// One action's line (times in ms).
pub fn table_line(r: &TableRow) -> String {
    format!(
        "{:<14}{:>8.1}{:>9}{:>9.0}ms{:>10.3}{:>9.3}{:>9.3}{:>9.3}{:>9.3}{:>9.3}{:>9.3}",
        r.name,
        r.per_period,
        r.calls,
        r.total_ms,
        r.per_call_ms,
        r.latency.mean_ns / 1e6,
        ms(r.latency.p50_ns),
        ms(r.latency.p99_ns),
        ms(r.latency.max_ns),
        r.last_ms,
        r.prev_ms
    )
}

/// The paper's table for every action of the whole run.
pub fn summary_lines(s: &PlaySummary) -> Vec<String> {
    let mut lines = vec![table_header()];
    lines.extend(s.table[1..].iter().map(table_line));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_zone_s_share_is_its_part_of_the_summed_player_minutes() {
        let mut zones = BTreeMap::new();
        // Zone 0: 4 periods of 5 ms; zone 1: 2 periods of 10 ms, its thread's time unknown for one.
        let thread = ThreadTime { on_core: 12_000_000, waiting_for_core: 2_000_000 };
        zones.insert(0, ZoneTime { periods: 4, ns: 20_000_000, timed_ns: 20_000_000, thread });
        zones.insert(1, ZoneTime { periods: 2, ns: 20_000_000, timed_ns: 10_000_000, thread });
        let shares = zone_shares(&zones);
        assert_eq!((shares[0].player_minute_ratio, shares[1].player_minute_ratio), (12_000.0, 6_000.0));
        assert!((shares[0].share - 2.0 / 3.0).abs() < 1e-12 && (shares[1].share - 1.0 / 3.0).abs() < 1e-12);
        let t = shares[0].time.unwrap();
        assert!((t.on_core - 0.6).abs() < 1e-12 && (t.waiting_for_core - 0.1).abs() < 1e-12 && (t.waiting_on_store - 0.3).abs() < 1e-12);
        assert!(shares[1].time.is_none(), "a zone whose every period was not timed has no split");
    }

    #[test]
    fn a_split_never_claims_more_than_the_period_time() {
        // The kernel's figure for a running thread lags by up to a tick: a split is clamped, not negative.
        let t = TimeSplit::of(10, ThreadTime { on_core: 12, waiting_for_core: 3 }).unwrap();
        assert_eq!((t.on_core, t.waiting_for_core, t.waiting_on_store), (1.0, 0.0, 0.0));
        assert!(TimeSplit::of(0, ThreadTime::default()).is_none());
    }
}
