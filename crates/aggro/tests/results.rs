//! What is done with result files: the HTML report (opened in headless
//! Chromium), thresholds, exports, comparison, the live view, and shards
//! merged into the whole run.

use crate::util::*;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// A short open-loop run on the null target.
fn null_run(dir: &Path, name: &str, rate: &str, extra: &[&str]) -> String {
    let out = path(dir, name);
    let mut args = vec![
        "mobile",
        "run",
        "--target",
        "null:",
        "--rate",
        rate,
        "--duration",
        "2s",
        "--interval",
        "500ms",
        "--loaders",
        "8",
        "--seed",
        "9",
        "-q",
        "--out",
        &out,
    ];
    args.extend_from_slice(extra);
    ok(&args);
    out
}

/// Chromium, installed by scripts/install-deps.sh; a skip only outside the test script.
fn chromium() -> Option<Command> {
    if Command::new("chromium").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success()) {
        let mut c = Command::new("chromium");
        c.args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr", "--v=0"]);
        return Some(c);
    }
    test_support::missing("chromium, for the browser checks,", "scripts/install-deps.sh installs it")
}

/// The page after its scripts ran (`--dump-dom`), and Chromium's log.
fn dump_dom(url: &str, virtual_ms: u64) -> Option<(String, String)> {
    let out = chromium()?.arg(format!("--virtual-time-budget={virtual_ms}")).arg("--dump-dom").arg(url).output().expect("chromium runs");
    assert!(out.status.success(), "chromium failed: {}", String::from_utf8_lossy(&out.stderr));
    Some((String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned()))
}

/// The number in `name="N"` on the page (the report script writes its counts on the body).
fn attribute(dom: &str, name: &str) -> u64 {
    let key = format!("{name}=\"");
    let at = dom.find(&key).unwrap_or_else(|| panic!("no {name} on the page"));
    dom[at + key.len()..].split('"').next().unwrap().parse().unwrap()
}

#[test]
fn the_report_draws_every_chart_in_a_browser() {
    let dir = tempdir();
    let result = null_run(dir.path(), "run.json", "2000", &[]);
    let html = path(dir.path(), "run.html");
    let text = ok(&["report", &result, "-o", &html]);
    assert!(text.contains("report:"), "{text}");
    let page = std::fs::read_to_string(&html).unwrap();
    // Nothing fetched at view time: the only URL is SVG's namespace name.
    assert_eq!(page.matches("http").count(), page.matches("http://www.w3.org/2000/svg").count());
    assert!(!page.contains("<link") && !page.contains(" src="), "the report loads nothing");
    let Some((dom, log)) = dump_dom(&format!("file://{html}"), 1000) else { return };
    assert!(attribute(&dom, "data-charts") >= 6, "charts on the page");
    assert_eq!(attribute(&dom, "data-empty"), 0, "a chart without data");
    assert!(!log.contains("CONSOLE"), "console messages: {log}");
    let png = dir.path().join("run.png");
    let shot = chromium()
        .unwrap()
        .args(["--window-size=1400,3000", &format!("--screenshot={}", png.display()), &format!("file://{html}")])
        .output()
        .unwrap();
    assert!(shot.status.success());
    let size = std::fs::metadata(&png).expect("a screenshot").len();
    assert!(size > 50_000, "the screenshot is {size} bytes: the page is nearly blank");
}

#[test]
fn the_live_view_updates_while_the_run_goes() {
    let dir = tempdir();
    let out = path(dir.path(), "live.json");
    let mut child = aggro()
        .args([
            "mobile",
            "run",
            "--target",
            "null:",
            "--rate",
            "500",
            "--duration",
            "8s",
            "--interval",
            "100ms",
            "-q",
            "--live",
            "127.0.0.1:0",
            "--out",
            &out,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("live view: ").map(str::to_string))
        .expect("the run prints its live view's address");
    std::thread::sleep(Duration::from_millis(1500));
    // The record so far has the headline's counts (they stayed 0 due, 0 started).
    let host = url.trim_start_matches("http://").split('/').next().unwrap().to_string();
    let mut conn = std::net::TcpStream::connect(&host).unwrap();
    std::io::Write::write_all(&mut conn, format!("GET /record.json HTTP/1.0\r\nHost: {host}\r\n\r\n").as_bytes()).unwrap();
    let mut answer = String::new();
    std::io::Read::read_to_string(&mut conn, &mut answer).unwrap();
    let so_far: serde_json::Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).expect("a body")).unwrap();
    let count = |k: &str| so_far[k].as_u64().unwrap_or(0);
    assert!(count("due") >= 400 && count("started") >= 400 && count("completed") >= 400, "the record so far: {so_far}");
    if let Some((dom, log)) = dump_dom(&url, 4000) {
        assert!(attribute(&dom, "data-swaps") >= 1, "the page never fetched its body again");
        let (first, last) = (attribute(&dom, "data-first-intervals"), attribute(&dom, "data-intervals"));
        assert!(first >= 5 && last > first, "the page showed {first} intervals when loaded and {last} after updating");
        assert_eq!(attribute(&dom, "data-empty"), 0);
        assert!(!log.contains("CONSOLE"), "console messages: {log}");
    }
    // Closing the page changed nothing: the run completes and writes its result.
    let status = child.wait().unwrap();
    assert!(status.success());
    assert_books_balance(&result(Path::new(&out)));
}

#[test]
fn thresholds_set_the_exit_code_and_exports_are_readable() {
    let dir = tempdir();
    let result_file = null_run(dir.path(), "run.json", "1000", &[]);
    let (html, log, csv) = (path(dir.path(), "r.html"), path(dir.path(), "r.hlog"), path(dir.path(), "r.csv"));
    let text = ok(&["report", &result_file, "-o", &html, "--slo", "p99<60s,errors<1%,rate>=900", "--hdr-log", &log, "--csv", &csv]);
    assert_eq!(text.matches("pass ").count(), 3, "{text}");
    let failing = run(&["report", &result_file, "-o", &html, "--slo", "p99<1ns,errors<1%"], Duration::from_secs(30));
    assert_eq!(failing.status.code(), Some(3), "a failed threshold is exit code 3");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Thresholds: 1 of 2 failed") && page.contains(r#"<td class="fail">FAIL</td>"#));
    for bad in [&["report", &result_file, "--slo", "p99<fast"][..], &["report", &csv], &["report", &result_file, "--slo", "nosuch:p99<1s"]] {
        assert_eq!(run(bad, Duration::from_secs(30)).status.code(), Some(2), "{bad:?} is bad input");
    }
    let record = crate::util::result(Path::new(&result_file));
    let ops = record["operations"].as_array().unwrap().len();
    let intervals = record["intervals"].as_array().unwrap().len();
    let hlog = std::fs::read_to_string(&log).unwrap();
    assert!(hlog.starts_with("#[Logged with aggro") && hlog.contains("#[BaseTime: "));
    assert_eq!(hlog.lines().filter(|l| l.starts_with("Tag=")).count(), 2 * ops * intervals);
    assert_eq!(std::fs::read_to_string(&csv).unwrap().lines().count(), 1 + ops * intervals);
}

#[test]
fn compare_puts_runs_side_by_side_with_ratios() {
    let dir = tempdir();
    let a = null_run(dir.path(), "slow.json", "500", &[]);
    let b = null_run(dir.path(), "fast.json", "1500", &[]);
    let html = path(dir.path(), "ab.html");
    ok(&["compare", &a, &b, "-o", &html]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("fast ÷ slow"), "a ratio column");
    let row = page.split("<tr>").find(|r| r.contains("ok per second")).expect("a throughput row");
    let ratio: f64 = row.rsplit("<td>").next().unwrap().split('×').next().unwrap().parse().unwrap();
    // Fixed rates: their ratio is 3 unless a busy machine held one run back (seen beside the other tests).
    assert!((2.5..3.5).contains(&ratio), "throughput tripled: {row}");
    assert!(page.contains("Settings that differ") && page.contains("plan/rate/stages"), "the rate differs");
    assert_eq!(run(&["compare", &a], Duration::from_secs(30)).status.code(), Some(2), "one file is not a comparison");
}

#[test]
fn three_shards_merge_into_the_whole_run() {
    let dir = tempdir();
    let whole = null_run(dir.path(), "whole.json", "3000", &[]);
    let start = humantime::format_rfc3339_seconds(SystemTime::now() + Duration::from_secs(3)).to_string();
    let began = Instant::now();
    let shards: Vec<String> = (1..=3).map(|i| path(dir.path(), &format!("shard-{i}.json"))).collect();
    let children: Vec<_> = shards
        .iter()
        .enumerate()
        .map(|(k, out)| {
            let worker = format!("{}/3", k + 1);
            aggro()
                .args([
                    "mobile",
                    "run",
                    "--target",
                    "null:",
                    "--rate",
                    "3000",
                    "--duration",
                    "2s",
                    "--interval",
                    "500ms",
                    "--loaders",
                    "8",
                    "--seed",
                    "9",
                    "-q",
                ])
                .args(["--worker", &worker, "--start-at", &start, "--out", out])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    assert!(began.elapsed() > Duration::from_secs(2), "the shards waited for --start-at");
    let merged = path(dir.path(), "merged.json");
    let mut args = vec!["merge"];
    args.extend(shards.iter().map(String::as_str));
    args.extend(["-o", &merged]);
    ok(&args);
    let (w, m) = (result(Path::new(&whole)), result(Path::new(&merged)));
    for key in ["due", "started", "completed"] {
        assert_eq!(m[key], w[key], "{key}: the merged shards made the whole run's requests");
    }
    assert_eq!(totals(&m), totals(&w));
    assert_books_balance(&m);
    // The shards' intervals line up (a last sliver of an interval may or may not be cut, whole or sharded).
    let intervals = |r: &serde_json::Value| r["intervals"].as_array().unwrap().len() as i64;
    assert!((intervals(&m) - intervals(&w)).abs() <= 1, "{} merged intervals, {} whole", intervals(&m), intervals(&w));
    // The merged percentiles are those of the union of the shards' histograms.
    let mut union = aggro_stats::new_histogram();
    for s in &shards {
        let shard = result(Path::new(s));
        assert_eq!(shard["spec"]["plan"]["share"]["of"], 3);
        union.add(aggro_stats::encode::from_base64(shard["totals"][0]["latency_hdr"].as_str().unwrap()).unwrap()).unwrap();
    }
    let summary: aggro_stats::Summary = serde_json::from_value(m["totals"][0]["latency"].clone()).unwrap();
    let expected = aggro_stats::Summary::of(&union);
    assert!((summary.mean_ns - expected.mean_ns).abs() < 1e-6 * expected.mean_ns, "mean {} vs {}", summary.mean_ns, expected.mean_ns);
    assert_eq!(aggro_stats::Summary { mean_ns: 0.0, ..summary }, aggro_stats::Summary { mean_ns: 0.0, ..expected });
    assert_eq!(m["extra"]["merge"]["shards"].as_array().unwrap().len(), 3);
    for bad in
        [&["--worker", "4/3", "--seed", "1"][..], &["--worker", "0/3", "--seed", "1"], &["--worker", "1/3"], &["--start-at", "noon", "--seed", "1"]]
    {
        let out = run(&[&["mobile", "run", "--target", "null:"][..], bad].concat(), Duration::from_secs(30));
        assert_eq!(out.status.code(), Some(2), "{bad:?} is bad input: {}", String::from_utf8_lossy(&out.stderr));
    }
}

/// Runs that start within one second, without `--out`, each keep their own result file: the second
/// used to replace the first's (`aggro-results/<second>-<name>.json` for both).
#[test]
fn runs_of_one_second_keep_a_result_file_each() {
    let dir = tempdir();
    for _ in 0..3 {
        let mut command = aggro();
        command.args(["mobile", "run", "--target", "null:", "--requests", "5", "-q"]).current_dir(dir.path());
        let out = run_command(command, Duration::from_secs(30));
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let files = std::fs::read_dir(dir.path().join("aggro-results")).unwrap().count();
    assert_eq!(files, 3, "one result file per run");
}
