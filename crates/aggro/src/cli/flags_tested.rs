//! Every flag of every command has a test of its valid form: an integration test (`crates/aggro/tests`)
//! gives it to the binary, or a documented `aggro` line does (the services stage runs those,
//! `tests/documented.rs`). `--interleave` once panicked in the parser while only its bad form was
//! tested; a flag added without a test of its own fails here, in the fast stage.

use super::Cli;
use clap::CommandFactory;
use std::path::Path;
use test_support::docs;

/// Each flag as `(command, --long, -short)`, every subcommand's.
fn flags(command: &clap::Command, path: &str, found: &mut Vec<(String, String, Option<char>)>) {
    for arg in command.get_arguments() {
        if let Some(long) = arg.get_long().filter(|l| !matches!(*l, "help" | "version")) {
            found.push((path.to_string(), format!("--{long}"), arg.get_short()));
        }
    }
    for sub in command.get_subcommands() {
        flags(sub, &format!("{path} {}", sub.get_name()), found);
    }
}

/// The text of every `.rs` file under `dir`.
fn sources(dir: &Path, text: &mut String) {
    for entry in std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()) {
        if entry.is_dir() {
            sources(&entry, text);
        } else if entry.extension().is_some_and(|x| x == "rs") {
            text.push_str(&std::fs::read_to_string(&entry).unwrap());
        }
    }
}

#[test]
fn every_flag_has_a_test_of_its_valid_form() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut tests = String::new();
    sources(&root.join("crates/aggro/tests"), &mut tests);
    let documented: std::collections::HashSet<String> = docs::documents(&root)
        .iter()
        .flat_map(|d| docs::blocks(d))
        .flat_map(|b| b.lines)
        .filter(|l| docs::is_aggro(l))
        .flat_map(|l| docs::with_options(&l).split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .collect();
    let given = |flag: &str| tests.contains(&format!("\"{flag}\"")) || documented.contains(flag);
    let mut all = Vec::new();
    flags(&Cli::command(), "aggro", &mut all);
    let untested: Vec<_> = all
        .iter()
        .filter(|(_, long, short)| !given(long) && short.is_none_or(|s| !given(&format!("-{s}"))))
        .map(|(command, long, _)| format!("{command} {long}"))
        .collect();
    assert!(untested.is_empty(), "flags no test gives in a valid form (add one to crates/aggro/tests):\n{}", untested.join("\n"));
    assert!(all.len() > 200, "only {} flags found: has the command tree changed?", all.len());
}
