//! A scripted swarm's own figures in its report: what the script counted (`count("bought")`), how many bots
//! its errors stopped and the first errors word for word (`extra.script`). The script's timed names
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
    }
}
