//! One measured run of a server process and a swarm process on loopback
//! (optionally pinned: server and swarm each on CPUs of their own), for the benches. Each
//! child writes its result file; only whole intervals after the warm-up count.

use crate::arena::args::ArenaCommon;
use crate::cli::values::Pins;
use crate::run::session;
use aggro_arena::relay::RelayInterval;
use aggro_arena::server::ServerInterval;
use aggro_arena::verdict::Verdict;
use aggro_stats::{Histogram, encode, new_histogram};
use aggro_swarm::SwarmInterval;
use anyhow::Context;
use serde::de::DeserializeOwned;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// A scratch directory for the children's result files.
pub fn scratch() -> anyhow::Result<tempfile::TempDir> {
    tempfile::Builder::new().prefix("aggro-arena-bench").tempdir().context("cannot make a scratch directory")
}

/// How to run one server + swarm pair.
pub struct Pair<'a> {
    exe: PathBuf,
    dir: &'a Path,
    common: &'a ArenaCommon,
    pin: Option<&'a Pins>,
    port: u16,
    warmup: Duration,
    measure: Duration,
}

/// What the pair's children wrote (the intervals in their records' `extra`, typed: a field one writes
/// under another name fails the read, never reads as 0), and the measured window.
pub struct Measured<S> {
    pub server: Vec<S>,
    pub swarm: Vec<SwarmInterval>,
    from_s: f64,
    to_s: f64,
}

/// A child's run as it wrote it under its key in `extra` (`arena_server`, `relay_server`, `arena_swarm`).
#[derive(serde::Deserialize)]
pub struct ChildRun<I> {
    pub intervals: Vec<I>,
    /// The swarm's own verdict.
    pub verdict: Option<Verdict>,
}

/// The `extra` of the result file a child wrote at `path`.
pub fn child_extra(path: &Path) -> anyhow::Result<serde_json::Value> {
    Ok(session::read(path)?.extra)
}

/// What the child that wrote `path` recorded under `extra[key]` (taken out of `extra`, [`child_extra`]).
pub fn child_run<I: DeserializeOwned>(extra: &mut serde_json::Value, path: &Path, key: &str) -> anyhow::Result<ChildRun<I>> {
    serde_json::from_value(extra[key].take()).with_context(|| format!("{}: extra.{key} is not what this aggro writes", path.display()))
}

/// A server whose intervals a bench reads.
pub trait ServerRecord: DeserializeOwned {
    /// Where the server's result file keeps them.
    const KEY: &'static str;
}

impl ServerRecord for ServerInterval {
    const KEY: &'static str = super::record::GAME_SERVER;
}

impl ServerRecord for RelayInterval {
    const KEY: &'static str = super::record::RELAY_SERVER;
}

/// The server starts this long before the swarm.
const HEAD_START: Duration = Duration::from_millis(300);

impl<'a> Pair<'a> {
    /// A run of a bench on `port` (from [`super::ports::Ports`]).
    pub fn new(
        dir: &'a Path,
        common: &'a ArenaCommon,
        pin: Option<&'a Pins>,
        port: u16,
        warmup: Duration,
        measure: Duration,
    ) -> anyhow::Result<Self> {
        let exe = std::env::current_exe().context("cannot find the aggro executable")?;
        Ok(Self { exe, dir, common, pin, port, warmup, measure })
    }

    /// Runs `aggro arena serve <server_args>` and `aggro arena swarm <swarm_args>` against it; the swarm runs
    /// warm-up + measured time, then the server is stopped (it writes its result on SIGTERM).
    pub fn run<S: ServerRecord>(&self, server_args: &[String], swarm_args: &[String]) -> anyhow::Result<Measured<S>> {
        let listen = format!("127.0.0.1:{}", self.port);
        let (server_out, swarm_out) = (self.dir.join(format!("server-{}.json", self.port)), self.dir.join(format!("swarm-{}.json", self.port)));
        let ms = |d: Duration| format!("{}ms", d.as_millis());
        let seed = self.common.seed.to_string();
        let mut server = Command::new(&self.exe);
        server.args(["arena", "serve", "--listen", &listen, "--interval", "1s", "--quiet", "--seed", &seed]);
        server.args(["--duration", &ms(self.warmup + self.measure + Duration::from_secs(5))]).args(server_args);
        server.arg("--out").arg(&server_out);
        let mut swarm = Command::new(&self.exe);
        swarm.args(["arena", "swarm", "--server", &listen, "--interval", "1s", "--quiet", "--seed", &seed]);
        swarm.args(["--duration", &ms(self.warmup + self.measure)]).args(swarm_args);
        swarm.arg("--out").arg(&swarm_out);
        for (cmd, cpus) in [(&mut server, self.pin.map(|p| &p.server)), (&mut swarm, self.pin.map(|p| &p.swarm))] {
            cmd.stdout(Stdio::null()).env("AGGRO_ARENA_SECRET", &self.common.secret);
            if let Some(cpus) = cpus {
                pin(cmd, cpus);
            }
        }
        let mut server = server.spawn().context("cannot start the arena server")?;
        std::thread::sleep(HEAD_START);
        let swarm_status = swarm.status().context("cannot run the swarm")?;
        // SAFETY: kill sends a signal to our own child by pid.
        unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
        let server_status = server.wait().context("cannot wait for the arena server")?;
        if !swarm_measured(swarm_status) || !server_status.success() {
            anyhow::bail!(
                "a run failed (server {server_status}, swarm {swarm_status}); run `aggro arena serve` and `aggro arena swarm` by hand on port {} to see why",
                self.port
            );
        }
        Ok(Measured {
            server: child_run(&mut child_extra(&server_out)?, &server_out, S::KEY)?.intervals,
            swarm: child_run(&mut child_extra(&swarm_out)?, &swarm_out, super::record::SWARM)?.intervals,
            from_s: self.warmup.as_secs_f64(),
            to_s: (self.warmup + self.measure).as_secs_f64(),
        })
    }
}

impl<S: Timed> Measured<S> {
    /// The server's whole intervals inside the measured window (its clock started earlier).
    pub fn server_intervals(&self) -> Vec<&S> {
        let head = HEAD_START.as_secs_f64();
        window(&self.server, self.from_s + head, self.to_s + head + 0.05)
    }

    /// The swarm's whole intervals inside the measured window.
    pub fn swarm_intervals(&self) -> Vec<&SwarmInterval> {
        window(&self.swarm, self.from_s, self.to_s + 0.05)
    }
}

/// An interval of a child's run: when, and the CPU it used.
pub trait Timed {
    /// Seconds since the child's start.
    fn start_s(&self) -> f64;
    fn end_s(&self) -> f64;
    /// % of one core.
    fn cpu_pct(&self) -> f64;
}

macro_rules! timed {
    ($($t:ty),*) => {$(
        impl Timed for $t {
            fn start_s(&self) -> f64 { self.start_s }
            fn end_s(&self) -> f64 { self.end_s }
            fn cpu_pct(&self) -> f64 { self.cpu_pct }
        }
    )*};
}
timed!(ServerInterval, RelayInterval, SwarmInterval);

/// The whole intervals between `from` and `to` seconds.
pub fn window<I: Timed>(intervals: &[I], from: f64, to: f64) -> Vec<&I> {
    intervals.iter().filter(|iv| iv.start_s() >= from && iv.end_s() <= to).collect()
}

/// Pins the command's process to the CPUs `cpus`.
pub fn pin(cmd: &mut Command, cpus: &[usize]) {
    let cpus = cpus.to_vec();
    // SAFETY: between fork and exec we only call sched_setaffinity on ourselves, which is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for &cpu in &cpus {
                libc::CPU_SET(cpu, &mut set);
            }
            libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set);
            Ok(())
        });
    }
}

/// A figure summed over intervals, such as `sum(&sv, |iv| iv.counters.frames)`.
pub fn sum<I>(ivs: &[&I], figure: impl Fn(&I) -> u64) -> f64 {
    ivs.iter().map(|iv| figure(iv)).sum::<u64>() as f64
}

/// Seconds the intervals cover.
pub fn secs<I: Timed>(ivs: &[&I]) -> f64 {
    ivs.iter().map(|iv| iv.end_s() - iv.start_s()).sum()
}

/// CPU over the intervals, % of one core (weighted by their lengths).
pub fn cpu<I: Timed>(ivs: &[&I]) -> f64 {
    ivs.iter().map(|iv| iv.cpu_pct() * (iv.end_s() - iv.start_s())).sum::<f64>() / secs(ivs).max(1e-9)
}

/// The busiest swarm thread's CPU over the intervals, % of one core (weighted by their lengths): what
/// says whether the swarm, not the server, was the limit.
pub fn busiest(ivs: &[&SwarmInterval]) -> f64 {
    ivs.iter().map(|iv| iv.busiest_thread_pct * (iv.end_s - iv.start_s)).sum::<f64>() / secs(ivs).max(1e-9)
}

/// The union of base64 HDR histograms.
pub fn merged<'v>(hdrs: impl Iterator<Item = &'v str>) -> Histogram {
    let mut h = new_histogram();
    for text in hdrs {
        if let Ok(one) = encode::from_base64(text) {
            h.add(&one).expect("auto-resizing histograms add");
        }
    }
    h
}

/// Whether a swarm child of a bench measured its point: it succeeded, or it ran and found the service
/// broke its thresholds (exit 3) — a measurement the sweep keeps, with the point's verdict.
pub fn swarm_measured(status: std::process::ExitStatus) -> bool {
    status.success() || status.code() == Some(3)
}
