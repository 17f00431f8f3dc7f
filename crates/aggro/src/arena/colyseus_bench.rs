//! `aggro arena bench --mode colyseus` (or `--script bot.lua`): a CCU sweep of
//! *your* server. Each run starts the server with `--server-cmd` (PORT in its
//! environment) on a fresh loopback port, waits until it listens, plays a swarm
//! against it as a separate process (Colyseus bots, or the script's), reads the server's CPU from its pid over
//! the measured window, and stops it. One table, a bottleneck verdict per
//! run, and one result file (`extra.colyseus_bench.rows`, the fields `aggro
//! plan --from` fits, as relay sweeps have).

use super::pair::{busiest, child_extra, child_run, cpu, merged, pin, scratch, secs, sum, window};
use super::record::ms;
use super::record::{Whole, op, run_record};
use super::storm::Storm;
use crate::arena::args::ArenaBenchArgs;
use crate::cli::values::spell;
use crate::exit::BadInput;
use crate::run::session;
use aggro_arena::verdict::{Evidence, Limit, Verdict, judge};
use aggro_core::clock::{process_cpu_s, process_wait_s};
use aggro_report::record::now_rfc3339;
use aggro_stats::{Histogram, Summary};
use aggro_swarm::{SwarmCounters, SwarmInterval};
use anyhow::Context;
use serde::Serialize;
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One run's figures.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub ccu: u32,
    /// The most bots in their rooms at an interval's end.
    pub joined: f64,
    pub server_cpu_pct: f64,
    /// The share of the measured window the server's threads waited for a core (/proc schedstat).
    pub server_wait_pct: f64,
    pub swarm_cpu_pct: f64,
    /// Bytes in + out per second (the swarm's, which on loopback are the server's).
    pub server_bytes_per_s: f64,
    pub messages_sent_per_s: f64,
    pub messages_received_per_s: f64,
    pub patches_per_bot_s: f64,
    pub broadcast_delay: Summary,
    pub swarm_lateness: Summary,
    /// Broadcasts never received (gaps in a sender's numbers).
    pub missing: f64,
    /// With `--restart-at`: the players' way back after the restart (the swarm's storm).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storm: Option<Storm>,
    pub verdict: Verdict,
    #[serde(skip)]
    delay_hdr: Histogram,
}

/// What the bench does to the server while the swarm plays, in time order.
enum Moment {
    /// The measured window opens: the server's CPU is read.
    Open,
    /// The server is killed and started again (`--restart-at`).
    Restart,
    /// The window closes.
    Close,
}

/// How long a server may take to listen.
const START_TIMEOUT: Duration = Duration::from_secs(30);

pub fn main(a: ArenaBenchArgs) -> anyhow::Result<()> {
    let cmd = a.server_cmd.as_deref().ok_or_else(|| {
        BadInput(
            "--server-cmd: give the command that starts your server, such as \"node examples/colyseus/server.mjs\" (PORT is set in its environment)"
                .into(),
        )
    })?;
    if let Some(script) = &a.script {
        std::fs::metadata(script).map_err(|e| BadInput(format!("--script {}: {e}", script.display())))?;
    }
    if a.restart_at.is_some_and(|at| at >= a.warmup + a.duration) {
        return Err(BadInput("--restart-at: the restart falls within the run (before --warmup + --duration)".into()).into());
    }
    let (measure, warmup) = (a.duration, a.warmup);
    if a.players.is_empty() || a.players.contains(&0) {
        return Err(BadInput("--players: give one or more CCU counts above zero, such as 200,400,800".into()).into());
    }
    let dir = scratch()?;
    let started_at = now_rfc3339();
    let mut rows = Vec::new();
    let mut ports = super::ports::Ports::from(a.port);
    for (k, &ccu) in a.players.iter().enumerate() {
        let port = ports.take()?;
        eprintln!("[{}/{}] {ccu} CCU against `{cmd}` on port {port}: {warmup:?} warm-up + {measure:?} measured", k + 1, a.players.len());
        rows.push(run_one(&a, cmd, port, ccu, warmup, measure, dir.path())?);
    }
    print_table(&rows);
    let c = &a.colyseus;
    let spec = serde_json::json!({ "mode": if a.script.is_some() { "script" } else { "colyseus" }, "script": a.script, "ccu": a.players, "server_cmd": cmd, "room": c.room, "play": c.play, "send_every": spell(a.relay.send_every),
        "warmup_s": warmup.as_secs_f64(), "measured_s": measure.as_secs_f64(), "pinned": a.pin, "seed": a.common.seed,
        "restart_at_s": a.restart_at.map(|d| d.as_secs_f64()) });
    let name = |r: &Row| format!("broadcast_delay/{}", r.ccu);
    let w = Whole {
        command: "arena bench",
        spec,
        started_at,
        operations: rows.iter().map(name).collect(),
        totals: rows.iter().map(|r| op(&name(r), &r.delay_hdr)).collect(),
        lag: Summary::default(),
        count: rows.len() as u64,
        elapsed_s: (warmup + measure).as_secs_f64() * rows.len() as f64,
        stop_kind: "completed",
        stop_message: "every run finished".into(),
        generator_bound: rows.iter().any(|r| r.verdict.limit == Limit::SwarmCpu),
        extra: serde_json::json!({ "colyseus_bench": { "rows": rows, "mode": if a.script.is_some() { "script" } else { "colyseus" } } }),
    };
    let out = session::result_path(a.common.out.clone(), "colyseus-bench")?;
    session::write(&run_record(w, Vec::new()), &out, &session::Exports::default())?;
    println!("result: {}", out.display());
    Ok(())
}

/// The user's server, stopped (with its process group) when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        // SAFETY: signals our own child's process group (it was made its leader at spawn).
        unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

fn start_server(a: &ArenaBenchArgs, cmd: &str, port: u16) -> anyhow::Result<Server> {
    let mut c = Command::new("sh");
    c.arg("-c").arg(shell_exec(&cmd.replace("{port}", &port.to_string()))).env("PORT", port.to_string()).stdout(Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut c, 0);
    crate::huge_pages::released_for(&mut c);
    if let Some(pins) = &a.pin {
        pin(&mut c, &pins.server);
    }
    let mut server = Server(c.spawn().with_context(|| format!("--server-cmd: cannot run `{cmd}`"))?);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let started = Instant::now();
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        if let Some(status) = server.0.try_wait()? {
            return Err(BadInput(format!("--server-cmd: `{cmd}` exited ({status}) before it listened on {addr}")).into());
        }
        if started.elapsed() > START_TIMEOUT {
            return Err(BadInput(format!(
                "--server-cmd: `{cmd}` did not listen on {addr} within {START_TIMEOUT:?} (does it read PORT, or take {{port}}?)"
            ))
            .into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(server)
}

fn run_one(a: &ArenaBenchArgs, cmd: &str, port: u16, ccu: u32, warmup: Duration, measure: Duration, dir: &Path) -> anyhow::Result<Row> {
    let mut server = start_server(a, cmd, port)?;
    let pid = server.0.id();
    let out = dir.join(format!("swarm-{port}.json"));
    let exe = std::env::current_exe().context("cannot find the aggro executable")?;
    let c = &a.colyseus;
    let millis = |d: Duration| format!("{}ms", d.as_millis());
    let mut swarm = Command::new(exe);
    swarm.args(["arena", "swarm", "--server", &format!("ws://127.0.0.1:{port}"), "--ccu", &ccu.to_string()]);
    match &a.script {
        Some(script) => drop(swarm.arg("--script").arg(script)),
        None => drop(swarm.args(["--mode", "colyseus", "--room", &c.room, "--send-every", &spell(a.relay.send_every), "--drain", "0s"])),
    }
    swarm.args(["--interval", "1s", "--quiet", "--seed", &a.common.seed.to_string()]);
    swarm.args(["--duration", &millis(warmup + measure)]).args(a.swarm_polling()).arg("--out").arg(&out).stdout(Stdio::null());
    match a.restart_at {
        // The server the bench started: its CPU and its wait for a core explain the swarm's verdict, and pace its joins.
        None => drop(swarm.args(["--server-pid", &pid.to_string()])),
        // Its pid changes with the restart, and the restart disconnects every player on purpose.
        Some(_) => drop(swarm.args(["--reconnect", "250ms..30s", "--slo", "disconnects<=100%"])),
    }
    if let (Some(play), None) = (&c.play, &a.script) {
        swarm.arg("--play").arg(play);
    }
    if let Some(pins) = &a.pin {
        pin(&mut swarm, &pins.swarm);
    }
    let mut swarm = swarm.spawn().context("cannot start the swarm")?;
    // The server's CPU over the measured window, read from its pid (after a restart within it, from the
    // restart on: the new server's).
    let began = Instant::now();
    let read = |pid: u32| (process_cpu_s(Some(pid)), process_wait_s(pid), Instant::now());
    let mut events = vec![(warmup, Moment::Open), (warmup + measure, Moment::Close)];
    events.extend(a.restart_at.map(|at| (at, Moment::Restart)));
    events.sort_by_key(|(at, _)| *at);
    let (mut opened, mut closed, mut pid) = (None, None, pid);
    for (at, moment) in events {
        std::thread::sleep((began + at).saturating_duration_since(Instant::now()));
        match moment {
            Moment::Open => opened = Some(read(pid)),
            Moment::Restart => {
                drop(server);
                server = start_server(a, cmd, port)?;
                pid = server.0.id();
                opened = opened.map(|_| read(pid));
            }
            Moment::Close => closed = Some(read(pid)),
        }
    }
    let ((cpu0, wait0, t0), (cpu1, wait1, t1)) = (opened.expect("the window opened"), closed.expect("the window closed"));
    let status = swarm.wait().context("cannot wait for the swarm")?;
    drop(server);
    if !super::pair::swarm_measured(status) {
        anyhow::bail!("the swarm failed ({status}) at {ccu} CCU; run `aggro arena swarm` by hand against `{cmd}` to see why");
    }
    let (Some(cpu0), Some(cpu1)) = (cpu0, cpu1) else {
        anyhow::bail!("the server (`{cmd}`, pid {pid}) exited during the run at {ccu} CCU");
    };
    let mut extra = child_extra(&out)?;
    let run = child_run::<SwarmInterval>(&mut extra, &out, super::record::SWARM)?;
    // A script's storm is in its figures; Colyseus bots' beside their funnel.
    let storm_at = if a.script.is_some() { &mut extra["script"]["storm"] } else { &mut extra["storm"] };
    let storm = a.restart_at.and_then(|_| serde_json::from_value(storm_at.take()).ok());
    let sw = window(&run.intervals, warmup.as_secs_f64(), (warmup + measure).as_secs_f64() + 0.05);
    if sw.is_empty() {
        anyhow::bail!("the run at {ccu} CCU left no measured interval; use a longer --duration");
    }
    let s = secs(&sw);
    let swarm = |k: fn(&SwarmCounters) -> u64| sum(&sw, |iv| k(&iv.counters));
    let per_s = |k: fn(&SwarmCounters) -> u64| swarm(k) / s;
    let delay = merged(sw.iter().map(|iv| iv.delay_hdr.as_str()));
    let lateness = Summary::of(&merged(sw.iter().map(|iv| iv.timer_lateness_hdr.as_str())));
    let share = |a: f64, b: f64| (b - a) / (t1 - t0).as_secs_f64() * 100.0;
    let server_cpu_pct = share(cpu0, cpu1);
    let server_wait_pct = wait0.zip(wait1).map(|(a, b)| share(a, b));
    let evidence = Evidence {
        server_cpu_pct: Some(server_cpu_pct),
        server_wait_pct,
        swarm_cpu_pct: busiest(&sw),
        swarm_lateness_p99_ms: ms(lateness.p99_ns),
        bytes_per_s: per_s(|c| c.bytes_in) + per_s(|c| c.bytes_out),
        ..Evidence::default()
    };
    let joined = sw.iter().map(|iv| iv.active_bots).max().unwrap_or(0) as f64;
    let patches = swarm(|c| c.snapshots) / s / joined.max(1.0);
    Ok(Row {
        ccu,
        joined,
        server_cpu_pct,
        server_wait_pct: server_wait_pct.unwrap_or(0.0),
        swarm_cpu_pct: cpu(&sw),
        server_bytes_per_s: evidence.bytes_per_s,
        messages_sent_per_s: per_s(|c| c.packets_out),
        messages_received_per_s: per_s(|c| c.packets_in),
        patches_per_bot_s: patches,
        broadcast_delay: Summary::of(&delay),
        swarm_lateness: lateness,
        missing: swarm(|c| c.reliable_missing),
        storm,
        verdict: run.verdict.filter(|v| matches!(v.limit, Limit::Service | Limit::Gone)).unwrap_or_else(|| judge(&evidence)),
        delay_hdr: delay,
    })
}

fn print_table(rows: &[Row]) {
    println!(
        "| CCU | joined | server CPU + wait for a core | swarm CPU | messages out / in /s | patches /s per bot | MB/s in+out | broadcast delay p50 / p99 ms | swarm lateness p99 ms | missing | verdict |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        // No message carried from/seq/t: neither the delay nor the losses were checked, and 0 would read as perfect.
        let (delay, missing) = match r.broadcast_delay.count {
            0 => ("not checked".to_string(), "not checked".to_string()),
            _ => (format!("{:.2} / {:.2}", ms(r.broadcast_delay.p50_ns), ms(r.broadcast_delay.p99_ns)), format!("{:.0}", r.missing)),
        };
        println!(
            "| {} | {:.0} | {:.0}% + {:.0}% | {:.0}% | {:.0} / {:.0} | {:.1} | {:.2} | {delay} | {:.2} | {missing} | {:?} |",
            r.ccu,
            r.joined,
            r.server_cpu_pct,
            r.server_wait_pct,
            r.swarm_cpu_pct,
            r.messages_sent_per_s,
            r.messages_received_per_s,
            r.patches_per_bot_s,
            r.server_bytes_per_s / 1e6,
            ms(r.swarm_lateness.p99_ns),
            r.verdict.limit,
        );
    }
    for r in rows {
        println!("{} CCU: {}", r.ccu, r.verdict.evidence);
    }
    for (r, storm) in rows.iter().filter_map(|r| Some((r, r.storm.as_ref()?))) {
        println!("{} CCU, the server restarted: {}", r.ccu, storm.lines().join("; "));
    }
}

/// `cmd` for `sh -c`, run as the shell's own process (`exec`, so the server's pid is the one started and
/// killed), with the user's shell semantics for leading assignments: `VAR=1 node server.mjs` becomes
/// `VAR=1 exec node server.mjs` (`exec VAR=1 …` would look for a program named `VAR=1`).
fn shell_exec(cmd: &str) -> String {
    let is_assignment = |word: &str| {
        word.split_once('=').is_some_and(|(name, value)| {
            name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !value.contains(['"', '\'', '\\'])
        })
    };
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let n = words.iter().take_while(|w| is_assignment(w)).count();
    if n == 0 {
        return format!("exec {cmd}");
    }
    format!("{} exec {}", words[..n].join(" "), words[n..].join(" "))
}

#[cfg(test)]
mod tests {
    use super::shell_exec;

    #[test]
    fn leading_assignments_go_before_exec() {
        assert_eq!(shell_exec("node server.mjs"), "exec node server.mjs");
        assert_eq!(shell_exec("VAR=1 DEBUG=colyseus:* node server.mjs"), "VAR=1 DEBUG=colyseus:* exec node server.mjs");
        assert_eq!(shell_exec("node a=b.mjs"), "exec node a=b.mjs");
    }
}
