//! The sections particular to a command, drawn from the record's `extra`:
//! the MMO period time and action table, the arena server's tick rate,
//! phases and bandwidth, the swarm's and relay's own figures, the
//! capacity curves of `find-max` and the bench sweeps, and a cluster's
//! figures per node.

use super::chart::{Chart, Mark, Series};
use super::page::Html;
use super::run::latency_unit;
use crate::record::RunRecord;
use crate::timeline::{MAX_POINTS, Timeline, ends_in_sliver, points};
use aggro_core::units::format_nanos;
use serde_json::Value;

/// The value at a `/`-separated path (a JSON pointer without its leading `/`).
fn at<'v>(v: &'v Value, path: &str) -> Option<&'v Value> {
    v.pointer(&format!("/{path}"))
}

/// A number at `path` (NaN when absent).
fn num(v: &Value, path: &str) -> f64 {
    at(v, path).and_then(Value::as_f64).unwrap_or(f64::NAN)
}

/// The array at `path` (empty when absent).
fn rows<'v>(v: &'v Value, path: &str) -> &'v [Value] {
    at(v, path).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// At most [`MAX_POINTS`] points: consecutive points averaged (for rates and means only).
fn thin(points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    let per = points.len().div_ceil(MAX_POINTS).max(1);
    if per == 1 {
        return points;
    }
    points.chunks(per).map(|c| (c[c.len() - 1].0, c.iter().map(|p| p.1).sum::<f64>() / c.len() as f64)).collect()
}

/// A series over a profile's intervals: x is `end_s`, y the value at `path`
/// (a last interval shorter than a quarter of the first is left out: its rates are noise).
fn over(intervals: &[Value], name: &str, path: &str, scale: f64) -> Series {
    let sliver = ends_in_sliver(intervals, |i| num(i, "end_s") - num(i, "start_s"));
    let kept = &intervals[..intervals.len() - usize::from(sliver)];
    Series::new(name, thin(kept.iter().map(|i| (num(i, "end_s"), num(i, path) * scale)).collect()))
}

/// Every section the record's command has.
pub(super) fn sections(h: &mut Html, r: &RunRecord) {
    let e = &r.extra;
    if e.get("mmo_play").is_some() {
        mmo_play(h, r);
    }
    if let Some(s) = e.get("arena_server") {
        arena_server(h, r, s);
    }
    if let Some(s) = e.get("arena_swarm") {
        arena_swarm(h, s);
    }
    if let Some(s) = e.get("script") {
        super::script::section(h, s);
    }
    if let Some(f) = e.get("funnel").filter(|f| !f.is_null()) {
        super::script::way_in(h, f);
    }
    if let Some(s) = e.get("relay_server") {
        relay_server(h, s);
    }
    if !rows(e, "trials").is_empty() && r.command.contains("find-max") {
        find_max(h, r);
    }
    if !rows(e, "mmo_login/trials").is_empty() {
        login_trials(h, e);
    }
    if !rows(e, "arena_bench/rows").is_empty() {
        arena_bench(h, r);
    }
    if !rows(e, "relay_bench/rows").is_empty() {
        relay_bench(h, e);
    }
    if !rows(e, "colyseus_bench/rows").is_empty() {
        colyseus_bench(h, e);
    }
    if !rows(e, "nodes").is_empty() {
        nodes(h, rows(e, "nodes"));
    }
}

/// Each cluster node's share of the commands, its errors and its reply times: a hot slot or a slow node.
fn nodes(h: &mut Html, nodes: &[Value]) {
    h.section("nodes", "Cluster nodes");
    let all: f64 = nodes.iter().map(|n| num(n, "commands")).sum();
    let table: Vec<Vec<String>> = nodes
        .iter()
        .map(|n| {
            let errors = num(n, "errors");
            let down = if n["down"] == true { " (down at the end)" } else { "" };
            vec![
                format!("{}{down}", n["node"].as_str().unwrap_or("?")),
                format!("{:.0}", num(n, "commands")),
                format!("{:.1}%", num(n, "commands") / all * 100.0),
                if errors > 0.0 { format!("!{errors:.0}") } else { "0".into() },
                format_nanos(num(n, "reply/p50_ns") as u64),
                format_nanos(num(n, "reply/p99_ns") as u64),
                format_nanos(num(n, "reply/max_ns") as u64),
            ]
        })
        .collect();
    h.para("Time from a request's write to each of its replies from the node (a pipeline's later replies wait behind its earlier ones).");
    h.table("nodes", &["node", "commands", "share", "errors", "reply p50", "reply p99", "reply max"], &table);
}

fn mmo_play(h: &mut Html, r: &RunRecord) {
    let m = &r.extra["mmo_play"];
    h.section("mmo", "MMO: period time and actions");
    h.para(&format!(
        "player-minute ratio {:.1} (game-minutes served per real minute), so about {:.0} players per server by extrapolation; mean period {:.2} ms over {} periods.",
        num(m, "player_minute_ratio"),
        num(m, "extrapolated_players_per_server"),
        num(m, "mean_period_ms"),
        num(m, "periods")
    ));
    let t = Timeline::new(r, MAX_POINTS);
    let x = t.at_s();
    if let Ok(periods) = t.latency(0, true) {
        let mean = periods.iter().map(|s| if s.count == 0 { f64::NAN } else { s.mean_ns / 1e6 });
        let max = periods.iter().map(|s| if s.count == 0 { f64::NAN } else { s.max_ns as f64 / 1e6 });
        h.chart(
            &Chart::new("Period time T (per period of a zone)", "elapsed (s)", "ms")
                .with(Series::new("mean", points(&x, mean)))
                .with(Series::new("longest", points(&x, max))),
        );
    }
    let table: Vec<Vec<String>> = rows(m, "table")
        .iter()
        .map(|a| {
            let ms = |k: &str| format!("{:.3}", num(a, k));
            vec![
                a["name"].as_str().unwrap_or("?").to_string(),
                format!("{:.2}", num(a, "per_period")),
                format!("{:.0}", num(a, "calls")),
                ms("total_ms"),
                ms("per_call_ms"),
                format_nanos(num(a, "latency/p99_ns") as u64),
                ms("last_ms"),
                ms("prev_ms"),
            ]
        })
        .collect();
    h.table("actions", &["action", "per period", "calls", "total ms", "ms per call", "p99", "T_last ms", "T_prev ms"], &table);
}

fn arena_server(h: &mut Html, r: &RunRecord, s: &Value) {
    let iv = rows(s, "intervals");
    h.section("arena-server", "Arena server: tick rate, frame phases, bandwidth");
    let mut tick = Chart::new("Achieved tick rate", "elapsed (s)", "Hz").with(over(iv, "tick", "tick_hz", 1.0));
    let target = num(&r.spec, "server/tick_hz");
    if target.is_finite() {
        tick.marks.push(Mark::Y(target, format!("target {target} Hz")));
    }
    h.chart(&tick);
    let mut phases = Chart::new("Frame phases (mean per frame, stacked)", "elapsed (s)", "ms");
    phases.stacked = true;
    for p in ["dispatch", "send_flush", "simulate", "flush"] {
        phases.series.push(over(iv, p, &format!("phases/{p}/mean_ns"), 1e-6));
    }
    if target.is_finite() {
        phases.marks.push(Mark::Y(1000.0 / target, "frame budget".into()));
    }
    h.chart(&phases);
    h.chart(&Chart::new("Bandwidth per client", "elapsed (s)", "kB/s").with(over(iv, "out (to client)", "kb_out_per_client_s", 1.0)).with(over(
        iv,
        "in (from client)",
        "kb_in_per_client_s",
        1.0,
    )));
    h.chart(
        &Chart::new("Clients and server CPU", "elapsed (s)", "clients / % of a core")
            .with(over(iv, "clients", "clients", 1.0))
            .with(over(iv, "CPU %", "cpu_pct", 1.0)),
    );
}

fn arena_swarm(h: &mut Html, s: &Value) {
    let iv = rows(s, "intervals");
    h.section("arena-swarm", "Bot swarm");
    if let Some(v) = s.get("verdict") {
        h.para(&format!("bottleneck: {} — {}", v["limit"].as_str().unwrap_or("?"), v["evidence"].as_str().unwrap_or("")));
    }
    for w in iv.iter().filter_map(|i| i["warning"].as_str()).take(3) {
        h.raw(&format!(r#"<p class="warn">{}</p>"#, super::chart::escape(w)));
    }
    h.chart(
        &Chart::new("Active bots and swarm CPU", "elapsed (s)", "bots / % of a core")
            .with(over(iv, "active bots", "active_bots", 1.0))
            .with(over(iv, "CPU %", "cpu_pct", 1.0)),
    );
    h.chart(&Chart::new("Per bot", "elapsed (s)", "per second").with(over(iv, "snapshots", "snapshots_per_bot_s", 1.0)).with(over(
        iv,
        "kB in",
        "kb_in_per_bot_s",
        1.0,
    )));
}

fn relay_server(h: &mut Html, s: &Value) {
    let iv = rows(s, "intervals");
    h.section("relay-server", "Relay server");
    h.chart(
        &Chart::new("Connections and rooms", "elapsed (s)", "count")
            .with(over(iv, "connections", "connections", 1.0))
            .with(over(iv, "rooms", "rooms", 1.0)),
    );
    h.chart(&Chart::new("Events", "elapsed (s)", "per second").with(over(iv, "in", "events_in_per_s", 1.0)).with(over(
        iv,
        "out",
        "events_out_per_s",
        1.0,
    )));
    h.chart(&Chart::new("Relay CPU", "elapsed (s)", "% of a core").with(over(iv, "CPU %", "cpu_pct", 1.0)));
}

fn find_max(h: &mut Html, r: &RunRecord) {
    let trials = rows(&r.extra, "trials");
    h.section("capacity", "Capacity search");
    let mut sorted: Vec<&Value> = trials.iter().collect();
    sorted.sort_by(|a, b| num(a, "rate").total_cmp(&num(b, "rate")));
    let p99: Vec<(f64, f64)> = sorted.iter().map(|t| (num(t, "rate"), num(t, "p99_ns") / 1e6)).collect();
    let mut c = Chart::new("p99 by rate tried", "rate (per second)", "ms").with(Series::new("p99", p99));
    c.dots = true;
    let bound = num(&r.spec, "p99_bound_ns");
    if bound.is_finite() {
        c.marks.push(Mark::Y(bound / 1e6, "p99 bound".into()));
    }
    let best = num(&r.extra, "best");
    if best.is_finite() {
        c.marks.push(Mark::X(best, format!("held: {best:.0}/s")));
    }
    h.chart(&c);
    let table: Vec<Vec<String>> = trials
        .iter()
        .map(|t| {
            vec![
                format!("{:.0}", num(t, "rate")),
                format!("{:.1}", num(t, "achieved")),
                format_nanos(num(t, "p99_ns") as u64),
                format!("{:.0}", num(t, "backlog")),
                format!("{:.0}", num(t, "errors")),
                if t["passed"].as_bool() == Some(true) { "+held".into() } else { format!("!{}", t["why"].as_str().unwrap_or("failed")) },
            ]
        })
        .collect();
    h.table("trials", &["rate", "achieved/s", "p99", "backlog", "errors", ""], &table);
}

fn login_trials(h: &mut Html, e: &Value) {
    h.section("capacity", "Logins by clients");
    let pts = rows(e, "mmo_login/trials").iter().map(|t| (num(t, "clients"), num(t, "logins_per_s"))).collect();
    let mut c = Chart::new("Logins per second by clients", "clients", "logins/s").with(Series::new("logins/s", pts));
    c.dots = true;
    h.chart(&c);
}

fn arena_bench(h: &mut Html, r: &RunRecord) {
    let rs = rows(&r.extra, "arena_bench/rows");
    h.section("capacity", "Arena sweep");
    let mut variants: Vec<&str> = rs.iter().filter_map(|x| x["variant"].as_str()).collect();
    variants.dedup();
    variants.sort_unstable();
    variants.dedup();
    let by_variant = |path: &str, scale: f64| -> Vec<Series> {
        variants
            .iter()
            .map(|v| {
                Series::new(*v, rs.iter().filter(|x| x["variant"].as_str() == Some(v)).map(|x| (num(x, "players"), num(x, path) * scale)).collect())
            })
            .collect()
    };
    let mut frame = Chart::new("Frame p99 by players", "players", "ms");
    frame.series = by_variant("frame/p99_ns", 1e-6);
    frame.dots = true;
    let tick = num(&r.spec, "tick_hz");
    if tick.is_finite() {
        frame.marks.push(Mark::Y(1000.0 / tick, format!("{tick} Hz budget")));
    }
    h.chart(&frame);
    let mut delay = Chart::new("Gunfire delay p50 by players", "players", "ms");
    delay.series = by_variant("gunfire_delay/p50_ns", 1e-6);
    delay.dots = true;
    h.chart(&delay);
}

/// What a CCU sweep's section shows: its title, its delay operation, its two charts' titles, the field
/// (and axis label) its points are placed by, and the fields its verdict table shows before the verdict.
struct Sweep<'a> {
    title: &'a str,
    delay: &'a str,
    charts: [&'a str; 2],
    by: (&'a str, &'a str),
    columns: &'a [(&'a str, &'a str)],
}

/// A relay sweep: delay and CPU by the CCU asked, and each point's verdict.
fn relay_bench(h: &mut Html, e: &Value) {
    let charts = ["Relay delay by CCU", "CPU by CCU"];
    let sweep = Sweep { title: "Relay sweep", delay: "relay_delay", charts, by: ("ccu", "CCU"), columns: &[("CCU", "ccu")] };
    sweep_section(h, rows(e, "relay_bench/rows"), &sweep);
}

/// A Colyseus sweep: delay and CPU by the bots actually seated (not the CCU asked), and each point's
/// verdict — players served first.
fn colyseus_bench(h: &mut Html, e: &Value) {
    let columns = [("CCU asked", "ccu"), ("seated (peak)", "joined"), ("server CPU %", "server_cpu_pct")];
    // The same sweep runs scripted bots against any server (`--script`): titled for what it ran.
    let (title, charts) = match e.pointer("/colyseus_bench/mode").and_then(Value::as_str) {
        Some("script") => ("Scripted bots' sweep", ["Message delay by bots seated", "CPU by bots seated"]),
        _ => ("Colyseus sweep", ["Broadcast delay by bots seated", "CPU by bots seated"]),
    };
    let sweep = Sweep { title, delay: "broadcast_delay", charts, by: ("joined", "bots seated (peak)"), columns: &columns };
    sweep_section(h, rows(e, "colyseus_bench/rows"), &sweep);
}

fn sweep_section(h: &mut Html, rs: &[Value], s: &Sweep<'_>) {
    h.section("capacity", s.title);
    let max_ns = rs.iter().map(|x| num(x, &format!("{}/p99_ns", s.delay))).fold(0.0, f64::max) as u64;
    let (div, unit) = latency_unit(max_ns);
    let (by, label) = s.by;
    let pick = |path: &str, scale: f64| rs.iter().map(|x| (num(x, by), num(x, path) * scale)).collect::<Vec<_>>();
    let mut delay = Chart::new(s.charts[0], label, unit)
        .with(Series::new("p50", pick(&format!("{}/p50_ns", s.delay), 1.0 / div)))
        .with(Series::new("p99", pick(&format!("{}/p99_ns", s.delay), 1.0 / div)));
    delay.dots = true;
    h.chart(&delay);
    let mut cpu = Chart::new(s.charts[1], label, "% of a core")
        .with(Series::new("server", pick("server_cpu_pct", 1.0)))
        .with(Series::new("swarm", pick("swarm_cpu_pct", 1.0)));
    cpu.dots = true;
    h.chart(&cpu);
    let table: Vec<Vec<String>> = rs
        .iter()
        .map(|x| {
            let fields = s.columns.iter().map(|(_, key)| format!("{:.0}", num(x, key)));
            let verdict = [x["verdict"]["limit"].as_str().unwrap_or("?"), x["verdict"]["evidence"].as_str().unwrap_or("")];
            fields.chain(verdict.map(str::to_string)).collect()
        })
        .collect();
    let headers: Vec<&str> = s.columns.iter().map(|(header, _)| *header).chain(["limit", "evidence"]).collect();
    h.table("verdicts", &headers, &table);
}
