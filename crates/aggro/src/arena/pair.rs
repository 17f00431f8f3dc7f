//! One measured run of a server process and a swarm process on loopback
//! (optionally pinned: server on CPU 0, swarm on CPU 1), for the benches. Each
//! child writes its result file; only whole intervals after the warm-up count.

use crate::cli::ArenaCommon;
use crate::session;
use aggro_stats::{Histogram, encode, new_histogram};
use anyhow::Context;
use serde_json::Value;
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
    pin: bool,
    port: u16,
    warmup: Duration,
    measure: Duration,
}

/// What the pair's children wrote (their records' `extra`), and the measured window.
pub struct Measured {
    pub server: Value,
    pub swarm: Value,
    from_s: f64,
    to_s: f64,
}

/// The server starts this long before the swarm.
const HEAD_START: Duration = Duration::from_millis(300);

impl<'a> Pair<'a> {
    /// The `k`th run of a bench, on port `first_port + k`.
    pub fn new(
        dir: &'a Path,
        common: &'a ArenaCommon,
        pin: bool,
        first_port: u16,
        k: usize,
        warmup: Duration,
        measure: Duration,
    ) -> anyhow::Result<Self> {
        let port = u16::try_from(k)
            .ok()
            .and_then(|k| first_port.checked_add(k))
            .ok_or_else(|| crate::BadInput("--port: too high for this many runs".into()))?;
        let exe = std::env::current_exe().context("cannot find the aggro executable")?;
        Ok(Self { exe, dir, common, pin, port, warmup, measure })
    }

    /// Runs `aggro arena serve <server_args>` and `aggro arena swarm <swarm_args>` against it; the swarm runs
    /// warm-up + measured time, then the server is stopped (it writes its result on SIGTERM).
    pub fn run(&self, server_args: &[String], swarm_args: &[String]) -> anyhow::Result<Measured> {
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
        for (cmd, cpu) in [(&mut server, 0), (&mut swarm, 1)] {
            cmd.stdout(Stdio::null()).env("AGGRO_ARENA_SECRET", &self.common.secret);
            if self.pin {
                pin(cmd, cpu);
            }
        }
        let mut server = server.spawn().context("cannot start the arena server")?;
        std::thread::sleep(HEAD_START);
        let swarm_status = swarm.status().context("cannot run the swarm")?;
        // SAFETY: kill sends a signal to our own child by pid.
        unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
        let server_status = server.wait().context("cannot wait for the arena server")?;
        if !super::swarm_measured(swarm_status) || !server_status.success() {
            anyhow::bail!(
                "a run failed (server {server_status}, swarm {swarm_status}); run `aggro arena serve` and `aggro arena swarm` by hand on port {} to see why",
                self.port
            );
        }
        Ok(Measured {
            server: session::read(&server_out)?.extra,
            swarm: session::read(&swarm_out)?.extra,
            from_s: self.warmup.as_secs_f64(),
            to_s: (self.warmup + self.measure).as_secs_f64(),
        })
    }
}

impl Measured {
    /// The server's whole intervals (under `extra[key]`) inside the measured window (its clock started earlier).
    pub fn server_intervals(&self, key: &str) -> Vec<&Value> {
        let head = HEAD_START.as_secs_f64();
        window(&self.server[key], self.from_s + head, self.to_s + head + 0.05)
    }

    /// The swarm's whole intervals inside the measured window.
    pub fn swarm_intervals(&self) -> Vec<&Value> {
        window(&self.swarm["arena_swarm"], self.from_s, self.to_s + 0.05)
    }
}

/// The whole intervals of a run (`{intervals: […]}`) between `from` and `to` seconds.
pub fn window(run: &Value, from: f64, to: f64) -> Vec<&Value> {
    run["intervals"].as_array().map(|a| a.iter().filter(|iv| f(iv, "start_s") >= from && f(iv, "end_s") <= to).collect()).unwrap_or_default()
}

/// Pins the command's process to CPU `cpu`.
pub fn pin(cmd: &mut Command, cpu: usize) {
    // SAFETY: between fork and exec we only call sched_setaffinity on ourselves, which is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set);
            Ok(())
        });
    }
}

/// A number field of an interval (0 when missing).
pub fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or(0.0)
}

/// A counter summed over intervals.
pub fn sum(ivs: &[&Value], k: &str) -> f64 {
    ivs.iter().map(|iv| iv["counters"][k].as_u64().unwrap_or(0)).sum::<u64>() as f64
}

/// Seconds the intervals cover.
pub fn secs(ivs: &[&Value]) -> f64 {
    ivs.iter().map(|iv| f(iv, "end_s") - f(iv, "start_s")).sum()
}

/// CPU over the intervals, % of one core (weighted by their lengths).
pub fn cpu(ivs: &[&Value]) -> f64 {
    ivs.iter().map(|iv| f(iv, "cpu_pct") * (f(iv, "end_s") - f(iv, "start_s"))).sum::<f64>() / secs(ivs).max(1e-9)
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
