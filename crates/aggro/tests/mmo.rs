//! The MMO player-minute benchmark end to end: populate → login → play
//! with two zones at once → verify, on every target.

use super::util::*;

/// A small world, a short play with two game servers, and verify. Only
/// populate is told the world's size; the rest read the store's record.
pub(crate) fn mmo_round_trip(target: &str, accounts: u32, players: u32, periods: u32) {
    let dir = tempdir();
    let accounts = accounts.to_string();
    let text = ok(&["mmo", "populate", "--target", target, "--accounts", &accounts, "--world-seed", "3"]);
    assert!(text.contains("items/s"), "{text}");
    assert!(text.contains("world record: mmo world") && text.contains(&format!("accounts {accounts}, world seed 3")), "{text}");
    let world = ["--target", target];
    let login = path(dir.path(), "login.json");
    let text = ok(&["mmo", "login"].into_iter().chain(world).chain(["--clients", "2", "--logins", "50", "-q", "--out", &login]).collect::<Vec<_>>());
    assert!(text.contains("logins/s with 2 clients"), "{text}");
    let r = result(std::path::Path::new(&login));
    assert_eq!(totals(&r), (100, 0, 0));

    let play = path(dir.path(), "play.json");
    let (players, periods) = (players.to_string(), periods.to_string());
    let args: Vec<&str> = ["mmo", "play"]
        .into_iter()
        .chain(world)
        // `--max-errors` in its valid form: no period fails here, so the figure is given.
        .chain([
            "--clients",
            "2",
            "--players",
            &players,
            "--periods",
            &periods,
            "--table-every",
            "5",
            "--seed",
            "7",
            "--max-errors",
            "2.5%",
            "--out",
            &play,
        ])
        .collect();
    let text = ok(&args);
    assert!(text.contains("T_last = "), "{text}");
    assert!(text.contains("NAME") && text.contains("Checkpoint"), "no action table: {text}");
    assert!(text.contains("player-minutes per minute") && text.contains("extrapolat"), "{text}");
    let r = result(std::path::Path::new(&play));
    assert_books_balance(&r);
    assert_eq!((&r["world"]["accounts"], &r["world"]["world_seed"]), (&serde_json::json!(accounts.parse::<u32>().unwrap()), &serde_json::json!(3)));
    let n: u64 = periods.parse().unwrap();
    assert_eq!(totals(&r), (2 * n, 0, 0));
    let mmo = &r["extra"]["mmo_play"];
    assert!(mmo["player_minute_ratio"].as_f64().unwrap() > 0.0);
    let (median, max, checkpoint) =
        (mmo["median_period_ms"].as_f64().unwrap(), mmo["max_period_ms"].as_f64().unwrap(), mmo["checkpoint_share"].as_f64().unwrap());
    assert!(median > 0.0 && median <= max && checkpoint > 0.0 && checkpoint < 1.0, "{mmo}");
    assert!(text.contains("median period") && text.contains("of the period time"), "{text}");
    assert_eq!(mmo["ledger_complete"], true);
    assert!(mmo["counts"]["objects_pushed"].as_u64().unwrap() > 0);
    assert_zone_shares(mmo, n, &text, target.starts_with("stackdb:") || target.starts_with("sqlite:"));
    // Every action of the profile ran and was timed.
    for op in r["totals"].as_array().unwrap() {
        let name = op["name"].as_str().unwrap();
        assert!(op["ok"].as_u64().unwrap() > 0 || name == "EjectPlayer", "{name} never ran");
    }

    let text = ok(&["mmo", "verify"].into_iter().chain(world).chain(["--result", &play]).collect::<Vec<_>>());
    for check in ["no item in two inventories", "no lease left held", "every player holds population + committed items"] {
        assert!(text.contains(&format!("ok    {check}")), "{text}");
    }
    // A shape flag given must match the store's world.
    let out = run(&["mmo", "verify", "--target", target, "--world-seed", "4"], std::time::Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--world-seed 4") && err.contains("world-seed 3") && err.trim().lines().count() == 1, "{err}");
}

/// Each zone's part adds up to the whole; a zone on a thread of its own (a store running on the zone's
/// thread) says where its time went.
fn assert_zone_shares(mmo: &serde_json::Value, periods: u64, text: &str, own_threads: bool) {
    let zones = mmo["zones"].as_array().unwrap();
    assert_eq!(zones.len(), 2, "{mmo}");
    let sum: f64 = zones.iter().map(|z| z["player_minute_ratio"].as_f64().unwrap()).sum();
    assert!((sum - mmo["player_minute_ratio"].as_f64().unwrap()).abs() < 1e-6 * sum, "{mmo}");
    let shares: f64 = zones.iter().map(|z| z["share"].as_f64().unwrap()).sum();
    assert!((shares - 1.0).abs() < 1e-9, "{mmo}");
    for (i, z) in zones.iter().enumerate() {
        assert_eq!((z["zone"].as_u64(), z["periods"].as_u64()), (Some(i as u64), Some(periods)), "{z}");
        assert!(text.contains(&format!("zone {i}: {periods} periods")), "{text}");
    }
    if own_threads {
        let t = &mmo["time"];
        let parts = [&t["on_core"], &t["waiting_for_core"], &t["waiting_on_store"]].map(|v| v.as_f64().unwrap());
        assert!(parts.iter().all(|p| (0.0..=1.0).contains(p)) && (parts.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{t}");
        // A zone computes and writes: some of its time is on a core.
        assert!(parts[0] > 0.0, "{t}");
        assert!(text.contains("the zones' time: on a core"), "{text}");
    } else {
        assert!(mmo["time"].is_null(), "zones sharing threads have no thread time of their own: {mmo}");
    }
}

#[test]
fn mmo_on_stackdb() {
    let dir = tempdir();
    mmo_round_trip(&format!("stackdb:{}", path(dir.path(), "w")), 200, 100, 12);
}

#[test]
fn mmo_on_sqlite() {
    let dir = tempdir();
    mmo_round_trip(&format!("sqlite:{}", path(dir.path(), "w.db")), 200, 100, 12);
}

#[test]
#[ignore = "needs PostgreSQL: bash scripts/test.sh services runs it"]
fn mmo_on_postgres() {
    if let Some(url) = service("AGGRO_TEST_POSTGRES") {
        mmo_round_trip(&url, 200, 100, 12);
    }
}

#[test]
#[ignore = "needs Redis: bash scripts/test.sh services runs it"]
fn mmo_on_redis() {
    if let Some(url) = service("AGGRO_TEST_REDIS") {
        mmo_round_trip(&format!("{url}/4"), 200, 100, 12);
    }
}

#[test]
#[ignore = "needs a DynamoDB-API server (moto): bash scripts/test.sh services runs it"]
fn mmo_on_dynamodb() {
    if let Some(url) = service("AGGRO_TEST_DYNAMODB") {
        mmo_round_trip(&format!("{url}/aggro_mmo_test"), 40, 50, 6);
    }
}

#[test]
fn mmo_bad_input_is_one_line_and_exit_code_2() {
    let dir = tempdir();
    let world = format!("stackdb:{}", path(dir.path(), "empty"));
    let profile = path(dir.path(), "bad.toml");
    std::fs::write(&profile, "players = 250\n[actions]\nLogin = 1\n").unwrap();
    for args in [
        &["mmo", "play", "--target", "null:"][..],
        &["mmo", "play", "--target", &world, "--profile", &profile],
        &["mmo", "play", "--target", &world, "--lease", "forever"],
        &["mmo", "login", "--target", &world, "--clients", "many"],
        &["mmo", "play", "--target", &world, "--accounts", "10", "--players", "250"],
        &["mmo", "play", "--target", &world, "--accounts", "100", "--players", "10", "--periods", "1"],
    ] {
        let out = run(args, std::time::Duration::from_secs(30));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn realtime_play_paces_one_period_per_game_minute_per_zone() {
    let dir = tempdir();
    let target = format!("stackdb:{}", path(dir.path(), "w"));
    let out = path(dir.path(), "rt.json");
    ok(&["mmo", "populate", "--target", &target, "--accounts", "100"]);
    let text = ok(&[
        "mmo",
        "play",
        "--target",
        &target,
        "--accounts",
        "100",
        "--players",
        "50",
        "--clients",
        "2",
        "--realtime",
        "--game-minute",
        "200ms",
        "--duration",
        "3s",
        "--interval",
        "1s",
        "--out",
        &out,
    ]);
    assert!(text.contains("backlog at end 0"), "{text}");
    let r = result(std::path::Path::new(&out));
    assert_books_balance(&r);
    // Two zones, one period per 200 ms game-minute each, for 3 s.
    assert_eq!(r["due"].as_u64().unwrap(), 30);
    let rate = r["intervals"][0]["planned_rate"].as_f64().unwrap();
    assert!((rate - 10.0).abs() < 1e-9, "{rate}");
}

#[test]
fn play_shards_split_the_zones_and_merge_into_the_whole_run() {
    let dir = tempdir();
    let target = format!("stackdb:{}", path(dir.path(), "w"));
    ok(&["mmo", "populate", "--target", &target, "--accounts", "100"]);
    // stackdb admits one process at a time, so the two shards run one after the other.
    let shards: Vec<String> = (1..=2).map(|i| path(dir.path(), &format!("shard-{i}.json"))).collect();
    for (k, out) in shards.iter().enumerate() {
        let worker = format!("{}/2", k + 1);
        let text = ok(&[
            "mmo",
            "play",
            "--target",
            &target,
            "--accounts",
            "100",
            "--players",
            "20",
            "--clients",
            "3",
            "--periods",
            "10",
            "--seed",
            "5",
            "--worker",
            &worker,
            "-q",
            "--out",
            out,
        ]);
        let zones = if k == 0 { "2 zone(s)" } else { "1 zone(s)" };
        assert!(text.contains(zones), "worker {worker} runs zones {{0, 2}} or {{1}}: {text}");
    }
    let merged = path(dir.path(), "merged.json");
    ok(&["merge", &shards[0], &shards[1], "-o", &merged]);
    let m = result(std::path::Path::new(&merged));
    assert_books_balance(&m);
    assert_eq!(totals(&m).0, 30, "3 zones × 10 periods in all");
    assert_eq!(m["extra"]["shard_extras"].as_array().unwrap().len(), 2);
    let text = ok(&["mmo", "verify", "--target", &target, "--accounts", "100", "--result", &shards[0], "--result", &shards[1]]);
    assert!(text.contains("ok    every player holds population + committed items"), "{text}");
    let no_seed =
        run(&["mmo", "play", "--target", &target, "--accounts", "100", "--clients", "2", "--worker", "1/2"], std::time::Duration::from_secs(30));
    assert_eq!(no_seed.status.code(), Some(2));
}

#[test]
fn a_killed_play_run_is_named_not_blamed_on_the_store() {
    let dir = tempdir();
    let target = format!("stackdb:{}", path(dir.path(), "w"));
    ok(&["mmo", "populate", "--target", &target, "--accounts", "100"]);
    let kept = path(dir.path(), "kept.json");
    ok(&["mmo", "play", "--target", &target, "--players", "20", "--periods", "5", "-q", "--out", &kept]);
    super::killed_run(&["mmo", "play", "--target", &target, "--players", "20", "--periods", "100000", "-q"], std::time::Duration::from_secs(3));
    let out = run(&["mmo", "verify", "--target", &target, "--result", &kept], std::time::Duration::from_secs(60));
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{text}");
    assert!(text.contains("the ledger is incomplete, not the store") && text.contains("mmo play (play)"), "{text}");
    assert!(text.contains("ok    no item in two inventories"), "{text}");
}

/// A small file system (tmpfs with `size=`) for a full-disk test, unmounted when dropped; None, with
/// the reason printed, where this process cannot mount one.
struct SmallFs(std::path::PathBuf);

impl SmallFs {
    fn mount(at: &std::path::Path, mib: u32) -> Option<SmallFs> {
        std::fs::create_dir_all(at).unwrap();
        let out = std::process::Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"]).arg(at).output();
        match out {
            Ok(o) if o.status.success() => Some(SmallFs(at.to_path_buf())),
            Ok(o) => {
                eprintln!("skipping the full-disk test: cannot mount a {mib} MiB tmpfs ({})", String::from_utf8_lossy(&o.stderr).trim());
                None
            }
            Err(e) => {
                eprintln!("skipping the full-disk test: no mount command ({e})");
                None
            }
        }
    }

    /// Fills what is left of the file system; returns the filler's path.
    fn fill(&self) -> std::path::PathBuf {
        let filler = self.0.join("filler");
        let mut f = std::fs::File::create(&filler).unwrap();
        let block = vec![0xA5u8; 1 << 20];
        while std::io::Write::write_all(&mut f, &block).is_ok() {}
        filler
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// The disk fills up in the middle of `mmo play`: the run says it failed (no capacity figure; it stops
/// by itself once every period fails, exit 1), and once space is freed the world's invariants hold — no item a failed push may have written is
/// forgotten by its player; verify with the run's file blames the incomplete ledger, not the store.
#[test]
fn a_full_disk_during_play_gives_no_capacity_figure_and_breaks_no_invariant() {
    let dir = tempdir();
    let Some(fs) = SmallFs::mount(&dir.path().join("fs"), 64) else { return };
    let target = format!("stackdb:{}", fs.0.join("world").display());
    ok(&["mmo", "populate", "--target", &target, "--accounts", "40"]);
    let out = path(dir.path(), "play.json");
    let play = aggro()
        .args([
            "mmo",
            "play",
            "--target",
            &target,
            "--players",
            "50",
            "--clients",
            "2",
            "--periods",
            "100000",
            "--table-every",
            "0",
            "--lease",
            "60s",
            "--out",
            &out,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1_500));
    let filler = fs.fill();
    let done = play.wait_with_output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&done.stdout), String::from_utf8_lossy(&done.stderr));
    // The store refuses every write once a write failed: the run stops by itself, as for a target gone.
    assert_eq!(done.status.code(), Some(1), "{text}");
    assert!(text.contains("no capacity figure") && text.contains("FAILED") && text.contains("every request failed for"), "{text}");
    assert!(!text.contains("players per server"), "{text}");
    std::fs::remove_file(filler).unwrap();
    // Its result file says its ledger is incomplete: verify checks what holds whatever the ledger misses,
    // tells the leases the zones could not release (nothing could be written) with when they lapse, and
    // blames the ledger, not the store (exit 4).
    let checked = run(&["mmo", "verify", "--target", &target, "--result", &out], std::time::Duration::from_secs(60));
    let said = format!("{}{}", String::from_utf8_lossy(&checked.stdout), String::from_utf8_lossy(&checked.stderr));
    assert_eq!(checked.status.code(), Some(4), "{said}");
    assert!(said.contains("the ledger is incomplete, not the store") && said.contains("play.json ended without a clean shutdown"), "{said}");
    assert!(said.contains("ok    no item in two inventories") && !said.contains("FAIL"), "{said}");
    assert!(said.contains("held  ") && said.contains("lapsing in"), "the leases are told with when they lapse: {said}");
    // Without the file the leases are a failure (a clean run releases them all), with when they lapse.
    let bare = run(&["mmo", "verify", "--target", &target], std::time::Duration::from_secs(60));
    let said = String::from_utf8_lossy(&bare.stdout);
    assert_eq!(bare.status.code(), Some(1), "{said}");
    assert!(said.contains("FAIL  no lease left held") && said.contains("the last lapses in"), "{said}");
    assert!(said.contains("ok    every player's item count matches its items"), "{said}");
}
