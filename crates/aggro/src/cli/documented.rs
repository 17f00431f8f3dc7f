//! Every `aggro …` command line the README and docs/*.md show in a code block parses as this build
//! reads it: a flag renamed, a value its parser refuses, a parser that panics (`--interleave` once did,
//! exit 101) fails here, in the fast stage, instead of in a user's first try. The lines' placeholders
//! (`URL`, `postgres://…`, `$!`, `[--optional flags]`) are filled in first. The services stage runs
//! them too, block by block (`tests/documented.rs`).

use super::Cli;
use clap::Parser;
use std::path::Path;
use test_support::docs;

/// The line's words with its placeholders filled in: optional `[…]` parts kept, a trailing `# comment`
/// dropped, and the names a reader replaces given a value that parses.
fn words(line: &str) -> Vec<String> {
    let line = docs::with_options(line);
    let line = line
        .replace("postgres://…", "postgres://user@127.0.0.1/db")
        .replace("redis://…", "redis://127.0.0.1:6379")
        .replace("--target URL", "--target stackdb:./world")
        .replace("--target …", "--target null:")
        .replace("--result …", "--result aggro-results/run.json")
        .replace("$!", "4242")
        .replace(" PID", " 4242");
    let words = shlex::split(&line).unwrap_or_else(|| panic!("unbalanced quotes: {line}"));
    // A lone `…` stands for the command's other flags (`aggro mobile run … --live ADDR`): its target.
    let rest = match words.iter().any(|w| w == "--target") {
        true => vec![],
        false => vec!["--target".to_string(), "null:".to_string()],
    };
    words.into_iter().flat_map(|w| if w == "…" { rest.clone() } else { vec![w] }).collect()
}

#[test]
fn every_documented_command_line_parses() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut checked = 0;
    let mut failed = Vec::new();
    for block in docs::documents(&root).iter().flat_map(|d| docs::blocks(d)) {
        let doc = &block.doc;
        for line in block.lines.iter().filter(|l| docs::is_aggro(l)) {
            if line.contains("cassandra://") && !cfg!(feature = "cassandra") {
                continue;
            }
            let args = words(line);
            let parsed = std::panic::catch_unwind(|| Cli::try_parse_from(&args).map(drop).map_err(|e| e.to_string()));
            match parsed {
                Ok(Ok(())) => checked += 1,
                Ok(Err(e)) => failed.push(format!("{}: {line}\n  {}", doc.display(), e.lines().next().unwrap_or_default())),
                Err(_) => failed.push(format!("{}: {line}\n  the parser panicked", doc.display())),
            }
        }
    }
    assert!(failed.is_empty(), "documented command lines that do not parse:\n{}", failed.join("\n"));
    assert!(checked >= 50, "only {checked} command lines found: has the docs' layout changed?");
}
