//! `aggro arena`: the bench end to end (server and swarm as processes on loopback), and bad input.

use crate::util::{ok, path, result, run, tempdir};
use std::time::Duration;

#[test]
fn the_arena_bench_runs_server_and_swarm_processes_and_writes_one_table_and_result() {
    let dir = tempdir();
    let out = path(dir.path(), "bench.json");
    let text = ok(&["arena", "bench", "--players", "20", "--tick", "30", "--duration", "2s", "--warmup", "2s", "--compare", "send-flush", "--port", "7870", "--out", &out]);
    assert!(text.contains("| 20 | base |") && text.contains("| 20 | send-flush |"), "{text}");
    let r = result(std::path::Path::new(&out));
    let rows = r["extra"]["arena_bench"]["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2);
    for row in rows {
        assert!(row["tick_hz"].as_f64().unwrap() > 25.0, "{row}");
        assert!(row["frame"]["p99_ns"].as_u64().unwrap() > 0, "{row}");
        assert!(row["gunfire_delay"]["count"].as_u64().unwrap() > 0, "the bots fought: {row}");
    }
    assert_eq!(r["operations"][0], "frame/20/base");
}

#[test]
fn arena_bad_input_is_one_line_and_exit_code_2() {
    for args in [
        &["arena", "serve", "--interleave", "70m", "--duration", "1s"][..],
        &["arena", "serve", "--interest", "far", "--duration", "1s"],
        &["arena", "serve", "--listen", "nowhere", "--duration", "1s"],
        &["arena", "swarm", "--server", "127.0.0.1:9", "--duration", "soon"],
        &["arena", "bench", "--compare", "faster"],
        &["arena", "bench", "--players", "0"],
    ] {
        let out = run(args, Duration::from_secs(30));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}
