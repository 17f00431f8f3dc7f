//! A scripted swarm's own figures in its report: what the script counted (`count("bought")`), its funnel
//! (`stage("matched")`), how many bots its errors stopped and the first errors word for word
//! (`extra.script`); and built-in bots' way in (`extra.funnel`). The script's timed names
//! (`measure`, `http`) are operations, drawn with every other operation.

use super::page::Html;
use serde_json::Value;

/// The section, when the run was a scripted swarm.
pub(super) fn section(h: &mut Html, script: &Value) {
    h.section("script", "Script: counts and errors");
    let counts: Vec<Vec<String>> = script["counts"]
        .as_array()
        .map(|c| c.iter().map(|pair| vec![pair[0].as_str().unwrap_or("?").to_string(), pair[1].as_u64().unwrap_or(0).to_string()]).collect())
        .unwrap_or_default();
    if counts.is_empty() {
        h.para("The script counted nothing (`count(name)`).");
    } else {
        h.table("counts", &["counted", "times"], &counts);
    }
    funnel(h, &script["funnel"]);
    let stopped = script["error_count"].as_u64().unwrap_or(0);
    if stopped == 0 {
        h.para("No script error stopped a bot.");
        return;
    }
    h.para(&format!("{stopped} bots stopped by a script error; the first ones:"));
    for error in script["errors"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        h.details(error.lines().next().unwrap_or(error), error);
    }
}

/// The section of built-in bots' way in (`extra.funnel`: a Colyseus bot's seat, connection, join and
/// first state; a relay bot's connection, join and full room).
pub(super) fn way_in(h: &mut Html, f: &Value) {
    h.section("way-in", "The bots' way in");
    funnel(h, f);
}

/// The way in (`stage("matched")`, or a built-in bot's stages), when there are stages: each stage's bots, its time from a
/// bot's intended start, its peak rate, and the bots short of it at the end.
fn funnel(h: &mut Html, funnel: &Value) {
    let Some(stages) = funnel["stages"].as_array() else { return };
    let started = funnel["started"].as_u64().unwrap_or(0);
    h.para(&format!("The way in, timed from each bot's intended start ({started} bots started):"));
    let share = |n: u64| if started > 0 { format!("{:.1} %", 100.0 * n as f64 / started as f64) } else { "—".into() };
    let rows: Vec<Vec<String>> = stages
        .iter()
        .map(|s| {
            let reached = s["reached"].as_u64().unwrap_or(0);
            let ms = |k: &str| if reached > 0 { format!("{:.1}", s[k].as_f64().unwrap_or(0.0)) } else { "—".into() };
            vec![
                s["name"].as_str().unwrap_or("?").to_string(),
                reached.to_string(),
                share(reached),
                ms("p50_ms"),
                ms("p99_ms"),
                format!("{:.1}", s["peak_per_s"].as_f64().unwrap_or(0.0)),
                s["short_at_end"].as_u64().unwrap_or(0).to_string(),
            ]
        })
        .collect();
    h.table("funnel", &["stage", "bots", "of those started", "p50 ms", "p99 ms", "peak per s", "short of it at the end"], &rows);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_errors_are_shown() {
        let mut h = Html::default();
        let script = serde_json::json!({ "counts": [["bought", 840]], "errors": ["bot3: bot.lua:2: boom\nstack traceback"], "error_count": 7 });
        section(&mut h, &script);
        let page = h.finish();
        for part in ["Script: counts and errors", "bought", "840", "7 bots stopped by a script error", "bot3: bot.lua:2: boom"] {
            assert!(page.contains(part), "{part} in {page}");
        }
        let mut h = Html::default();
        let stages =
            serde_json::json!([{ "name": "matched", "reached": 30, "p50_ms": 1200.0, "p99_ms": 4100.0, "peak_per_s": 12.5, "short_at_end": 10 }]);
        section(&mut h, &serde_json::json!({ "counts": [], "errors": [], "error_count": 0, "funnel": { "started": 40, "stages": stages } }));
        let page = h.finish();
        for part in ["The way in", "40 bots started", "matched", "75.0 %", "4100.0", "12.5", "short of it at the end"] {
            assert!(page.contains(part), "{part} in {page}");
        }
    }
}
