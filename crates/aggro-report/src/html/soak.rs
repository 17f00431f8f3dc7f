//! The watched server over the run (`--server-pid`): its memory beside aggro's own, its threads and open
//! files, its CPU — each interval's reading, charted — and the soak's lines (`extra.soak`): each
//! resource's trend per hour with its fit, a leak marked.

use super::chart::{Chart, Series};
use super::page::Html;
use crate::record::RunRecord;
use crate::timeline::{MAX_POINTS, Timeline, points};

/// The section, when some interval read a server.
pub(super) fn section(h: &mut Html, r: &RunRecord) {
    if !r.intervals.iter().any(|i| i.server.is_some()) {
        return;
    }
    h.section("server", "The watched server's resources");
    let t = Timeline::new(r, MAX_POINTS);
    let x = t.at_s();
    let server = |read: fn(&crate::host::ServerUse) -> f64| t.mean(move |i| i.server.as_ref().map_or(f64::NAN, read));
    h.chart(
        &Chart::new("Memory (resident)", "elapsed (s)", "MB")
            .with(Series::new("server", points(&x, server(|s| s.rss_bytes as f64 / 1e6))))
            .with(Series::new("aggro", points(&x, t.mean(|i| i.cpu.generator_rss_bytes as f64 / 1e6)))),
    );
    h.chart(
        &Chart::new("Threads and open files", "elapsed (s)", "count")
            .with(Series::new("threads", points(&x, server(|s| s.threads as f64))))
            .with(Series::new("open files", points(&x, server(|s| s.fds.map_or(f64::NAN, |f| f as f64))))),
    );
    h.chart(&Chart::new("Server CPU", "elapsed (s)", "cores").with(Series::new("server", points(&x, server(|s| s.cpu_cores)))));
    let watched = r.extra["soak"]["watched"].as_array().cloned().unwrap_or_default();
    if watched.is_empty() {
        return;
    }
    let from = r.extra["soak"]["from_s"].as_f64().unwrap_or(0.0);
    h.para(&format!("Trends from {from:.0} s (every bot in) to the end of play, least-squares lines:"));
    for w in watched {
        h.para(w["text"].as_str().unwrap_or("?"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watched_servers_readings_are_charted_and_its_trends_listed() {
        let json = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/mobile-run.json")).unwrap();
        let mut r: RunRecord = serde_json::from_str(&json).unwrap();
        let mut h = Html::default();
        section(&mut h, &r);
        assert!(!h.finish().contains("watched server"), "no server watched, no section");
        for (k, i) in r.intervals.iter_mut().enumerate() {
            i.server = Some(crate::host::ServerUse { rss_bytes: 60_000_000 + k as u64 * 1_000_000, fds: Some(30), threads: 11, cpu_cores: 0.2 });
        }
        r.extra["soak"] = serde_json::json!({ "from_s": 2.0, "watched": [{ "text": "server RSS: 60.0 MB → 64.0 MB over 4 s (+3600.0 MB/h, R² 1.00) — climbing steadily: a leak" }] });
        let mut h = Html::default();
        section(&mut h, &r);
        let page = h.finish();
        for part in ["The watched server", "Memory (resident)", "Threads and open files", "Server CPU", "climbing steadily: a leak"] {
            assert!(page.contains(part), "{part} in {page}");
        }
    }
}
