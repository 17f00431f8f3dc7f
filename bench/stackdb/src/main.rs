//! stackdb-bench: one engine, one size, one durability per process, so
//! each engine's RAM is its own. Prints one JSON line of figures.
//!
//! ```text
//! stackdb-bench --engine stackdb --records 5000000 --no-sync [--ops 200000] [--dir DIR]
//! ```
//! Phases: insert in exploration order (commit every 1,000); the recency mix
//! (90 % of operations on the newest 10 % of keys, 50 % reads and 50 %
//! overwrites, commit every 100); recent reads; missing-key reads; then a
//! reopen, timed. Before each phase after the insert, an untimed `syncfs`
//! lets the kernel finish writing back what the last one left unsynced.
//! Before the files are measured, each engine finishes the background work
//! its writes left (stackdb: space the checkpoint thread has yet to give
//! back); the space amplification is their size over the live keys' and
//! values' bytes.

mod engines;
mod world;

use engines::Engine;
use std::hint::black_box;
use std::time::Instant;

struct Args {
    engine: String,
    records: u64,
    ops: u64,
    durable: bool,
    dir: std::path::PathBuf,
}

fn parse() -> Result<Args, String> {
    let mut args = Args { engine: String::new(), records: 1_000_000, ops: 200_000, durable: true, dir: std::env::temp_dir() };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--engine" => args.engine = value()?,
            "--records" => args.records = value()?.parse().map_err(|e| format!("--records: {e}"))?,
            "--ops" => args.ops = value()?.parse().map_err(|e| format!("--ops: {e}"))?,
            "--dir" => args.dir = value()?.into(),
            "--durable" => args.durable = true,
            "--no-sync" => args.durable = false,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if args.engine.is_empty() {
        return Err(format!("--engine is required: one of {}", engines::NAMES.join(", ")));
    }
    Ok(args)
}

/// Anonymous resident memory of this process, in bytes.
fn rss_anon() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Bytes the files under `dir` occupy on disk.
fn disk_bytes(dir: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::read_dir(dir).map(|entries| entries.flatten().filter_map(|e| e.metadata().ok()).map(|m| m.blocks() * 512).sum()).unwrap_or(0)
}

/// Waits, untimed, for the file system holding `dir` to write back everything written so far
/// (`syncfs`), so that a timed phase does not share the disk and the CPU with the kernel's writeback
/// of an earlier phase's unsynced writes (gigabytes after a no-sync insert at 20 M). Returns how long
/// that took, in ms.
fn settle(dir: &std::path::Path) -> f64 {
    use std::os::fd::AsRawFd;
    let start = Instant::now();
    let d = std::fs::File::open(dir).expect("the scratch directory");
    // SAFETY: syncfs on a descriptor we own; no memory is passed.
    assert_eq!(unsafe { libc::syncfs(d.as_raw_fd()) }, 0, "syncfs: {}", std::io::Error::last_os_error());
    start.elapsed().as_secs_f64() * 1e3
}

/// Runs `ops` operations, committing every `every`, and returns ops/s.
fn timed(engine: &mut dyn Engine, ops: u64, every: u64, mut op: impl FnMut(&mut dyn Engine, u64)) -> f64 {
    let start = Instant::now();
    for r in 0..ops {
        op(engine, r);
        if (r + 1) % every == 0 {
            engine.commit();
        }
    }
    engine.commit();
    ops as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let args = parse().unwrap_or_else(|e| {
        eprintln!("stackdb-bench: {e}");
        std::process::exit(2)
    });
    let dir = tempfile::Builder::new().prefix("stackdb-bench-").tempdir_in(&args.dir).expect("a scratch directory");
    let (n, ops) = (args.records, args.ops);
    let anon_before = rss_anon();
    let mut engine = engines::open(&args.engine, dir.path(), args.durable).unwrap_or_else(|e| {
        eprintln!("stackdb-bench: {e}");
        std::process::exit(2)
    });
    let mut value = Vec::with_capacity(64);

    let insert = timed(engine.as_mut(), n, 1000, |e, i| {
        world::value(i, 0, &mut value);
        e.put(&world::key(i), &value);
    });
    eprintln!("{} {n}: inserted at {insert:.0}/s", args.engine);
    let mut settle_ms = vec![settle(dir.path())];
    let mixed = timed(engine.as_mut(), ops, 100, |e, r| match world::mix_op(r, n) {
        (i, None) => assert!(black_box(e.get(&world::key(i))).is_some(), "record {i} is missing"),
        (i, Some(version)) => {
            world::value(i, version, &mut value);
            e.put(&world::key(i), &value);
        }
    });
    eprintln!("{} {n}: mixed at {mixed:.0}/s", args.engine);
    settle_ms.push(settle(dir.path()));
    let recent = timed(engine.as_mut(), ops, 100, |e, r| {
        let i = n - 1 - world::mix(r ^ 0xEC) % (n / 10).max(1);
        assert!(black_box(e.get(&world::key(i))).is_some(), "record {i} is missing");
    });
    eprintln!("{} {n}: recent reads at {recent:.0}/s", args.engine);
    settle_ms.push(settle(dir.path()));
    let missing = timed(engine.as_mut(), ops, 100, |e, r| {
        assert!(black_box(e.get(&world::missing_key(r, n))).is_none(), "a missing key was found");
    });
    let anon = rss_anon().saturating_sub(anon_before);
    engine.catch_up();
    let disk = disk_bytes(dir.path());
    let space_amplification = disk as f64 / world::live_bytes(n, ops) as f64;
    drop(engine);
    let start = Instant::now();
    let mut reopened = engines::open(&args.engine, dir.path(), args.durable).expect("reopen");
    assert!(reopened.get(&world::key(n - 1)).is_some(), "the last record after reopening");
    let open_ms = start.elapsed().as_secs_f64() * 1e3;
    drop(reopened);

    let line = serde_json::json!({
        "engine": args.engine,
        "records": n,
        "durable": args.durable,
        "ops": ops,
        "insert_per_s": insert.round(),
        "mixed_per_s": mixed.round(),
        "recent_read_per_s": recent.round(),
        "missing_read_per_s": missing.round(),
        "anon_ram_bytes": anon,
        "disk_bytes": disk,
        "space_amplification": (space_amplification * 100.0).round() / 100.0,
        "reopen_ms": (open_ms * 100.0).round() / 100.0,
        "settle_ms": settle_ms.iter().map(|ms| ms.round()).collect::<Vec<_>>(),
    });
    println!("{line}");
}
