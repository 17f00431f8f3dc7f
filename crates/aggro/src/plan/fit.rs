//! The planner: a straight line through measured sweep points — server CPU
//! against players, and traffic against players — and what it predicts for
//! a server of a given core count and NIC (one relay process per core, as
//! Photon runs them). Only runs that served their players are fitted, on the
//! players actually seated: a run that hit a limit (a saturated server, an
//! invalid swarm, a broken service, a server gone) is left out — past it the
//! line no longer holds — and the prediction never goes past the smallest
//! player count at which a run failed.

use crate::run::session;
use aggro_arena::verdict::STARVED_WAIT_PCT;
use anyhow::Context;
use serde::Serialize;
use std::path::PathBuf;

/// One measured run.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub ccu: f64,
    pub server_cpu_pct: f64,
    /// The share of the run's wall time the server waited for a core (0 where the sweep did not read it).
    pub server_wait_pct: f64,
    pub bytes_per_s: f64,
    pub source: String,
}

/// A run left out of the fit, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Failed {
    pub ccu: f64,
    pub why: String,
    pub source: String,
}

/// Limits after which a run did not serve its players (or says nothing of the server).
const NOT_SERVED: [&str; 4] = ["swarm_cpu", "server_cpu", "service", "gone"];

/// Points from relay-bench (`extra.relay_bench.rows`), Colyseus-bench (`extra.colyseus_bench.rows`, the same
/// fields) and arena-bench (`extra.arena_bench.rows`) result files.
pub fn read_points(files: &[PathBuf]) -> anyhow::Result<(Vec<Point>, Vec<Failed>)> {
    let mut points = Vec::new();
    let mut failed = Vec::new();
    for path in files {
        if !path.is_file() {
            return Err(crate::exit::BadInput(format!("--from: {} is not a file", path.display())).into());
        }
        let extra = session::read(path).with_context(|| format!("--from {}", path.display()))?.extra;
        let name = path.display().to_string();
        if let Some(rows) = extra["relay_bench"]["rows"].as_array().or_else(|| extra["colyseus_bench"]["rows"].as_array()) {
            for r in rows {
                // The players seated, where the sweep counted them; else those asked for.
                let ccu = r["joined"].as_f64().filter(|j| *j > 0.0).unwrap_or_else(|| r["ccu"].as_f64().unwrap_or(0.0));
                if r["verdict"]["limit"].as_str().is_some_and(|l| NOT_SERVED.contains(&l)) {
                    let why = r["verdict"]["evidence"].as_str().unwrap_or("a limit was reached").to_string();
                    failed.push(Failed { ccu: r["ccu"].as_f64().unwrap_or(ccu), why, source: name.clone() });
                    continue;
                }
                points.push(Point {
                    ccu,
                    server_cpu_pct: r["server_cpu_pct"].as_f64().unwrap_or(0.0),
                    server_wait_pct: r["server_wait_pct"].as_f64().unwrap_or(0.0),
                    bytes_per_s: r["server_bytes_per_s"].as_f64().unwrap_or(0.0),
                    source: name.clone(),
                });
            }
        } else if let Some(rows) = extra["arena_bench"]["rows"].as_array() {
            for r in rows.iter().filter(|r| r["variant"] == "base" && r["swarm_warning"].is_null()) {
                let players = r["players"].as_f64().unwrap_or(0.0);
                points.push(Point {
                    ccu: players,
                    server_cpu_pct: r["server_cpu_pct"].as_f64().unwrap_or(0.0),
                    server_wait_pct: 0.0,
                    bytes_per_s: r["kb_out_per_client_s"].as_f64().unwrap_or(0.0) * 1000.0 * players,
                    source: name.clone(),
                });
            }
        } else {
            return Err(
                crate::exit::BadInput(format!("--from {}: not a sweep (run `aggro arena bench --mode relay` to make one)", path.display())).into()
            );
        }
    }
    points.retain(|p| p.ccu > 0.0);
    Ok((points, failed))
}

/// Refuses to fit fewer than two served runs, naming the runs that failed and why.
pub fn enough(points: &[Point], failed: &[Failed]) -> anyhow::Result<()> {
    if points.len() >= 2 {
        return Ok(());
    }
    let why: Vec<String> = failed.iter().map(|f| format!("  {:.0} CCU ({}): {}", f.ccu, f.source, f.why)).collect();
    Err(crate::exit::BadInput(format!(
        "the sweeps hold {} run(s) that served their players; a fit needs two. Left out:\n{}",
        points.len(),
        if why.is_empty() { "  (none)".to_string() } else { why.join("\n") }
    ))
    .into())
}

/// A straight line through the points, % of one core: `fixed_pct + per_ccu_pct × ccu`.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Line {
    pub fixed_pct: f64,
    pub per_ccu_pct: f64,
}

impl Line {
    /// Least squares of `y` against the players seated.
    fn through(points: &[Point], y: impl Fn(&Point) -> f64) -> anyhow::Result<Self> {
        let n = points.len() as f64;
        let (mx, my) = (points.iter().map(|p| p.ccu).sum::<f64>() / n, points.iter().map(&y).sum::<f64>() / n);
        let sxx: f64 = points.iter().map(|p| (p.ccu - mx).powi(2)).sum();
        let sxy: f64 = points.iter().map(|p| (p.ccu - mx) * (y(p) - my)).sum();
        let (slope, fixed) = if points.len() < 2 || sxx == 0.0 { (my / mx, 0.0) } else { (sxy / sxx, my - sxy / sxx * mx) };
        anyhow::ensure!(slope > 0.0, "server CPU does not grow with players in these sweeps; measure more widely spaced counts");
        Ok(Self { fixed_pct: fixed.max(0.0), per_ccu_pct: slope })
    }

    /// % of one core at `ccu` players on one process.
    pub fn at(&self, ccu: f64) -> f64 {
        self.fixed_pct + self.per_ccu_pct * ccu
    }

    /// Players one process holds within `pct` % of a core.
    fn ccu_within(&self, pct: f64) -> f64 {
        ((pct - self.fixed_pct) / self.per_ccu_pct).max(0.0)
    }
}

/// The server's cost per player: its CPU; its CPU and the time it waited for a core (what it asked of
/// the machine); and traffic, bytes/s = `bytes_per_ccu × ccu`.
#[derive(Clone, Debug, Serialize)]
pub struct Model {
    pub cpu: Line,
    pub busy: Line,
    pub bytes_per_ccu: f64,
    /// The most a fitted run's server waited for a core, % of its wall time.
    pub wait_max_pct: f64,
    pub points: Vec<Point>,
}

/// What the model predicts for one server.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    pub cores: u32,
    pub headroom: f64,
    /// CCU the server's core time allows: its CPU alone, or with its wait for a core where it was starved.
    pub ccu_by_cpu: f64,
    /// What its CPU alone allows, on cores of its own (differs when the sweeps' server was starved).
    pub ccu_by_own_cores: f64,
    pub ccu_by_nic: Option<f64>,
    pub ccu: f64,
    /// "cpu", "nic", or "measured" (capped below a run that failed).
    pub binding: &'static str,
    /// The smallest player count, on one process, at which a run failed (the cap), and the largest that held.
    pub failed_at: Option<f64>,
    pub held_at: Option<f64>,
}

impl Model {
    /// Least squares through the points (through the origin for traffic; CPU has a fixed part).
    pub fn fit(points: &[Point]) -> anyhow::Result<Self> {
        anyhow::ensure!(!points.is_empty(), "no usable point in the sweeps (every run hit a limit?)");
        let bytes = points.iter().map(|p| p.bytes_per_s * p.ccu).sum::<f64>() / points.iter().map(|p| p.ccu * p.ccu).sum::<f64>();
        Ok(Self {
            cpu: Line::through(points, |p| p.server_cpu_pct)?,
            busy: Line::through(points, |p| p.server_cpu_pct + p.server_wait_pct)?,
            bytes_per_ccu: bytes,
            wait_max_pct: points.iter().map(|p| p.server_wait_pct).fold(0.0, f64::max),
            points: points.to_vec(),
        })
    }

    /// Whether the sweeps' server was starved: then what it could serve was bounded by the core time it
    /// got, and its wait for a core counts as load, as it did on the machine measured.
    pub fn starved(&self) -> bool {
        self.wait_max_pct >= STARVED_WAIT_PCT
    }

    /// The line the plan is made on.
    pub fn basis(&self) -> &Line {
        if self.starved() { &self.busy } else { &self.cpu }
    }

    /// CCU for `cores` processes each allowed `headroom` of its core, and a NIC of `nic` bytes/s.
    pub fn plan(&self, cores: u32, nic: Option<f64>, headroom: f64, failed: &[Failed]) -> Plan {
        let per_core = self.basis().ccu_within(headroom * 100.0);
        let failed_at = failed.iter().map(|f| f.ccu).reduce(f64::min);
        let held_at = self.points.iter().map(|p| p.ccu).filter(|c| failed_at.is_none_or(|f| *c < f)).reduce(f64::max);
        // Never past a measured failure: one process holds at most what a run below it held.
        let (per_core, capped) = match (failed_at, held_at) {
            (Some(f), Some(h)) if per_core >= f => (h, true),
            _ => (per_core, false),
        };
        let ccu_by_cpu = per_core * cores as f64;
        let ccu_by_own_cores = self.cpu.ccu_within(headroom * 100.0) * cores as f64;
        let ccu_by_nic = nic.map(|b| b / self.bytes_per_ccu);
        let (ccu, binding) = match ccu_by_nic {
            Some(n) if n < ccu_by_cpu => (n, "nic"),
            _ if capped => (ccu_by_cpu, "measured"),
            _ => (ccu_by_cpu, "cpu"),
        };
        Plan { cores, headroom, ccu_by_cpu, ccu_by_own_cores, ccu_by_nic, ccu, binding, failed_at, held_at }
    }
}

pub fn print(m: &Model, p: &Plan, at: Option<f64>) {
    let (cpu, busy) = (m.cpu, m.busy);
    println!(
        "fitted on {} runs: server CPU = {:.2}% + {:.4}% per player of one core; with its wait for a core {:.2}% + {:.4}%; traffic {:.0} B/s per player",
        m.points.len(),
        cpu.fixed_pct,
        cpu.per_ccu_pct,
        busy.fixed_pct,
        busy.per_ccu_pct,
        m.bytes_per_ccu
    );
    let basis = m.basis();
    for pt in &m.points {
        let measured = if m.starved() { pt.server_cpu_pct + pt.server_wait_pct } else { pt.server_cpu_pct };
        println!(
            "  {:>6.0} CCU seated: CPU {:5.1}% + wait {:5.1}%; model {:5.1}%, residual {:+5.1}   ({})",
            pt.ccu,
            pt.server_cpu_pct,
            pt.server_wait_pct,
            basis.at(pt.ccu),
            measured - basis.at(pt.ccu),
            pt.source
        );
    }
    if m.starved() {
        println!(
            "the server waited for a core up to {:.0}% of the time: the machine gave it less than a core, so its wait counts as load \
             (its CPU alone, on cores of its own, would allow {:.0} CCU)",
            m.wait_max_pct, p.ccu_by_own_cores
        );
    }
    if let (Some(f), Some(h)) = (p.failed_at, p.held_at) {
        println!("largest CCU that held on one process: {h:.0}; a run failed at {f:.0}");
    }
    let nic = p.ccu_by_nic.map_or("no NIC given".to_string(), |n| format!("the NIC carries {n:.0}"));
    let by = if m.starved() { "CPU + its wait for a core" } else { "CPU" };
    println!("{} core(s) at ≤ {:.0}% each: {by} allows {:.0} CCU; {nic}", p.cores, p.headroom * 100.0, p.ccu_by_cpu);
    let bound = match p.binding {
        "cpu" if m.starved() => "the core time it got",
        "cpu" => "CPU",
        "nic" => "the NIC",
        _ => "what was measured (the fit alone would go past a run that failed)",
    };
    println!("prediction: {:.0} CCU per server, bound by {bound}", p.ccu);
    // A server never seen past one core may be single-threaded (Node, one Colyseus process): its cores
    // then serve players only as that many processes.
    if p.cores > 1 && m.points.iter().all(|pt| pt.server_cpu_pct <= 100.0) {
        println!(
            "  as {} server processes of {:.0} CCU each: the sweeps never saw the server use more than one core, so a \
             single-threaded server (Node, a Colyseus process) needs one process per core to reach it (docs/COLYSEUS.md)",
            p.cores,
            p.ccu / p.cores as f64
        );
    }
    if let Some(n) = at {
        println!("at {n:.0} CCU on one process: {:.1}% of a core, {:.2} MB/s", basis.at(n), m.bytes_per_ccu * n / 1e6);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(ccu: f64, cpu: f64) -> Point {
        Point { ccu, server_cpu_pct: cpu, server_wait_pct: 0.0, bytes_per_s: ccu * 3000.0, source: "test".into() }
    }

    #[test]
    fn a_line_is_fitted_and_the_binding_resource_named() {
        let m = Model::fit(&[pt(500.0, 12.0), pt(1000.0, 22.0), pt(1500.0, 32.0)]).unwrap();
        assert!((m.cpu.fixed_pct - 2.0).abs() < 1e-9 && (m.cpu.per_ccu_pct - 0.02).abs() < 1e-12);
        assert!((m.bytes_per_ccu - 3000.0).abs() < 1e-9);
        let p = m.plan(4, Some(125e6), 0.8, &[]);
        assert!((p.ccu_by_cpu - 4.0 * 3900.0).abs() < 1e-6, "{p:?}");
        assert_eq!(p.binding, "cpu");
        let slow_nic = m.plan(4, Some(12.5e6), 0.8, &[]);
        assert_eq!((slow_nic.binding, slow_nic.ccu.round()), ("nic", 4167.0));
        assert!(Model::fit(&[]).is_err());
        assert!(Model::fit(&[pt(500.0, 30.0), pt(1000.0, 20.0)]).is_err(), "CPU falling with load is refused");
    }

    #[test]
    fn the_prediction_never_goes_past_a_run_that_failed() {
        let m = Model::fit(&[pt(50.0, 10.0), pt(150.0, 20.0)]).unwrap();
        let failed = [Failed { ccu: 300.0, why: "service: 69% of joins failed".into(), source: "test".into() }];
        let p = m.plan(1, None, 0.8, &failed);
        assert_eq!((p.binding, p.ccu), ("measured", 150.0), "{p:?}");
        assert!(enough(&m.points[..1], &failed).unwrap_err().to_string().contains("69% of joins failed"));
        assert!(enough(&m.points, &failed).is_ok());
    }

    #[test]
    fn a_starved_server_is_planned_on_the_core_time_it_asked_for() {
        // CPU 10 + 0.2/player, and a wait for a core growing as fast: the machine gave it half.
        let starved = |ccu: f64| Point { server_wait_pct: 0.2 * ccu, ..pt(ccu, 10.0 + 0.2 * ccu) };
        let m = Model::fit(&[starved(50.0), starved(150.0)]).unwrap();
        assert!(m.starved());
        let p = m.plan(1, None, 0.8, &[]);
        assert_eq!((p.ccu.round(), p.ccu_by_own_cores.round(), p.binding), (175.0, 350.0, "cpu"), "{p:?}");
        let calm = Model::fit(&[Point { server_wait_pct: 3.0, ..pt(50.0, 20.0) }, pt(150.0, 40.0)]).unwrap();
        assert!(!calm.starved() && calm.plan(1, None, 0.8, &[]).ccu.round() == 350.0, "a little wait is not starvation");
    }
}
