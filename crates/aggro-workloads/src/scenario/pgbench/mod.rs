//! pgbench's custom-script language, run unchanged.
//!
//! A script is SQL commands (ending at `;`, or at `\gset`/`\aset`; `\;`
//! joining statements sent together) and the meta-commands `\set`, `\sleep`
//! and `\if`/`\elif`/`\else`/`\endif` (`lines`); `:name` in SQL is a
//! variable. Each script becomes one transaction of a scenario (its weight
//! from `FILE@W`), each `\set` a `let`, each `\if` branch steps run `when` its
//! condition held (`branches`), each SQL command a prepared statement with
//! `$n` parameters — what `pgbench -M prepared` sends — capturing the
//! columns `\gset` names (`columns`), so the same engine, executor and
//! result file serve both. The
//! population is pgbench's own schema, generated on the server (`pgbench -i
//! -I dtGvp`), and for `tpcb-like` the balance sums are checked afterwards.

mod branches;
mod columns;
mod lines;

use super::Scenario;
use super::expr;
use super::file::{ScenarioError, Source};
use aggro_core::scenario::{Command, Family, SqlProtocol, Value};
use branches::Branches;
use lines::{Line, commands};
use std::collections::BTreeSet;
use std::path::Path;

/// The start shared by pgbench's TPC-B-like scripts: the variables, BEGIN,
/// the account's update and read.
macro_rules! tpcb_variables {
    () => {
        "\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
"
    };
}

/// pgbench's built-in scripts, as in its source.
pub const BUILTINS: [(&str, &str); 3] = [
    (
        "tpcb-like",
        concat!(
            tpcb_variables!(),
            "UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
"
        ),
    ),
    (
        "simple-update",
        concat!(
            tpcb_variables!(),
            "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
"
        ),
    ),
    (
        "select-only",
        "\\set aid random(1, 100000 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
",
    ),
];

/// The query pgbench reads the scale from.
pub const SCALE_QUERY: &str = "SELECT count(*) FROM pgbench_branches";

/// One script to run: its name (a file or a built-in), text and weight.
#[derive(Clone, Debug)]
pub struct Script {
    /// File path or built-in name.
    pub name: String,
    /// The script's text.
    pub text: String,
    /// Its share of the mix.
    pub weight: f64,
    /// Whether it is a built-in (only `tpcb-like` gets the balance invariants).
    pub builtin: bool,
}

/// Splits pgbench's `NAME@WEIGHT`.
fn weighted(arg: &str) -> Result<(&str, f64), String> {
    match arg.rsplit_once('@') {
        Some((name, w)) => {
            let w: f64 = w.parse().map_err(|_| format!("{arg:?}: the weight after @ must be a number"))?;
            if w < 0.0 {
                return Err(format!("{arg:?}: the weight must be ≥ 0"));
            }
            Ok((name, w))
        }
        None => Ok((arg, 1.0)),
    }
}

impl Script {
    /// A script file, `PATH[@WEIGHT]` (pgbench's `-f`).
    pub fn file(arg: &str) -> Result<Self, String> {
        let (path, weight) = weighted(arg)?;
        let text = super::file::read_capped(std::path::Path::new(path)).map_err(|e| format!("{path}: {e}"))?;
        Ok(Self { name: path.to_string(), text, weight, builtin: false })
    }

    /// A built-in, `NAME[@WEIGHT]` (pgbench's `-b`; a unique prefix will do, as in pgbench).
    pub fn builtin(arg: &str) -> Result<Self, String> {
        let (name, weight) = weighted(arg)?;
        let found: Vec<_> = BUILTINS.iter().filter(|(n, _)| n.starts_with(name)).collect();
        match found.as_slice() {
            [(n, text)] => Ok(Self { name: (*n).to_string(), text: (*text).to_string(), weight, builtin: true }),
            [] => Err(format!("no built-in script {name:?}: expected tpcb-like, simple-update or select-only")),
            _ => Err(format!("built-in script {name:?} is ambiguous")),
        }
    }
}

pub(super) fn fail(script: &Script, line: usize, message: String) -> ScenarioError {
    ScenarioError { at: format!("{}:{line}", script.name), message }
}

/// `:name` of a known variable → `$k` (outside quotes; `::type` casts kept); a `:name` of no
/// variable is an error naming it, as pgbench's "undefined variable" (it would reach the server).
fn parameters(sql: &str, known: &BTreeSet<String>) -> Result<(String, Vec<String>), String> {
    let mut out = Vec::with_capacity(sql.len());
    let mut params: Vec<String> = Vec::new();
    let b = sql.as_bytes();
    let (mut i, mut quotes) = (0, lines::Quotes::default());
    while i < b.len() {
        let c = b[i];
        let outside = quotes.outside(c);
        match c {
            b':' if outside && b.get(i + 1) == Some(&b':') => {
                out.extend_from_slice(b"::");
                i += 2;
                continue;
            }
            // aggro's own parameters are `$k`: one written in the script would be taken for one of them.
            b'$' if outside
                && b.get(i + 1).is_some_and(u8::is_ascii_digit)
                && !(i > 0 && (b[i - 1].is_ascii_alphanumeric() || b"_$".contains(&b[i - 1]))) =>
            {
                let digits: String = sql[i + 1..].chars().take_while(char::is_ascii_digit).collect();
                return Err(format!("${digits}: a pgbench script names its values as :variables, and a positional parameter has nothing to bind"));
            }
            b':' if outside && b.get(i + 1).is_some_and(|n| n.is_ascii_alphabetic() || *n == b'_') => {
                let end = sql[i + 1..].find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_')).map_or(b.len(), |n| i + 1 + n);
                let name = &sql[i + 1..end];
                if !known.contains(name) {
                    return Err(format!("undefined variable \"{name}\""));
                }
                let k = params.iter().position(|p| p == name).unwrap_or_else(|| {
                    params.push(name.to_string());
                    params.len() - 1
                });
                out.extend_from_slice(format!("${}", k + 1).as_bytes());
                i = end;
                continue;
            }
            _ => {}
        }
        out.push(c);
        i += 1;
    }
    Ok((String::from_utf8(out).expect("only ASCII was replaced"), params))
}

/// A TOML basic string.
fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\t' => q.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => q.push_str(&format!("\\u{:04X}", c as u32)),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// A step name from a statement: its number and first words.
fn step_name(index: usize, sql: &str) -> String {
    let words: String = sql.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    let short: String = words.chars().take(40).collect();
    format!("{index} {short}")
}

/// pgbench's schema and server-side data generation (`pgbench -i -I dtGvp`).
const INIT: &str = r#"
[populate]
setup = [
  { name = "drop", sql = "DROP TABLE IF EXISTS pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers" },
  { name = "history", sql = "CREATE TABLE pgbench_history (tid int, bid int, aid int, delta int, mtime timestamp, filler char(22))" },
  { name = "tellers", sql = "CREATE TABLE pgbench_tellers (tid int not null, bid int, tbalance int, filler char(84)) WITH (fillfactor=100)" },
  { name = "accounts", sql = "CREATE TABLE pgbench_accounts (aid int not null, bid int, abalance int, filler char(84)) WITH (fillfactor=100)" },
  { name = "branches", sql = "CREATE TABLE pgbench_branches (bid int not null, bbalance int, filler char(88)) WITH (fillfactor=100)" },
  { name = "branch rows", sql = "INSERT INTO pgbench_branches (bid, bbalance) SELECT bid, 0 FROM generate_series(1, $1::int) AS bid", params = ["scale"] },
  { name = "teller rows", sql = "INSERT INTO pgbench_tellers (tid, bid, tbalance) SELECT tid, (tid - 1) / 10 + 1, 0 FROM generate_series(1, $1::int * 10) AS tid", params = ["scale"] },
  { name = "account rows", sql = "INSERT INTO pgbench_accounts (aid, bid, abalance, filler) SELECT aid, (aid - 1) / 100000 + 1, 0, '' FROM generate_series(1, $1::int * 100000) AS aid", params = ["scale"] },
]
finish = [
  { name = "vacuum", sql = "VACUUM ANALYZE pgbench_branches, pgbench_tellers, pgbench_accounts, pgbench_history" },
  { name = "branches key", sql = "ALTER TABLE pgbench_branches ADD PRIMARY KEY (bid)" },
  { name = "tellers key", sql = "ALTER TABLE pgbench_tellers ADD PRIMARY KEY (tid)" },
  { name = "accounts key", sql = "ALTER TABLE pgbench_accounts ADD PRIMARY KEY (aid)" },
]
"#;

/// TPC-B's consistency conditions: every delta lands in one account, teller,
/// branch and history row, so their sums agree.
const TPCB_INVARIANTS: &str = r#"
[[invariant]]
name = "branches = accounts"
sql = "SELECT (SELECT sum(bbalance) FROM pgbench_branches) - (SELECT sum(abalance) FROM pgbench_accounts)"
equals = "0"

[[invariant]]
name = "tellers = accounts"
sql = "SELECT (SELECT sum(tbalance) FROM pgbench_tellers) - (SELECT sum(abalance) FROM pgbench_accounts)"
equals = "0"

[[invariant]]
name = "history = accounts"
sql = "SELECT (SELECT coalesce(sum(delta), 0) FROM pgbench_history) - (SELECT sum(abalance) FROM pgbench_accounts)"
equals = "0"
"#;

/// The scenario file (TOML) equivalent to `scripts`, whose statements go as `protocol` says.
pub fn to_scenario_text(scripts: &[Script], scale: i64, defines: &[(String, Value)], protocol: SqlProtocol) -> Result<String, ScenarioError> {
    let mut toml = String::from("name = \"pgbench\"\ndescription = \"pgbench scripts: ");
    toml.push_str(&scripts.iter().map(|s| s.name.replace(['"', '\\'], "")).collect::<Vec<_>>().join(", "));
    toml.push_str(&format!("\"\n\n[vars]\nscale = {scale}\n"));
    let mut known: BTreeSet<String> = ["scale", "client_id"].iter().map(|s| s.to_string()).collect();
    for (name, _) in defines {
        known.insert(name.clone());
    }
    toml.push_str(INIT);
    let mut names = BTreeSet::new();
    for script in scripts {
        let mut name = std::path::Path::new(&script.name).file_stem().map_or(script.name.clone(), |s| s.to_string_lossy().into_owned());
        while !names.insert(name.clone()) {
            name.push('\'');
        }
        let lines = commands(script)?;
        let vars = script_variables(script, &lines, &known)?;
        toml.push_str(&format!("\n[[transaction]]\nname = {}\nweight = {}\n", quote(&name), script.weight));
        let mut branches = Branches::default();
        let mut index = 0;
        for (line_no, l) in &lines {
            let at = |m: String| fail(script, *line_no, m);
            let lets = match l {
                Line::If(c) => Some(branches.open(c)),
                Line::Elif(c) => Some(branches.elif(c).map_err(at)?),
                Line::Else => Some(branches.otherwise().map_err(at)?),
                Line::Endif => {
                    branches.close().map_err(at)?;
                    continue;
                }
                _ => None,
            };
            if let Some(lets) = lets {
                for l in &lets {
                    check_names(script, *line_no, l.split_once(" = ").map_or(l.as_str(), |(_, e)| e), &vars)?;
                }
                toml.push_str(&format!("[[transaction.step]]\nlet = [{}]\n", lets.iter().map(|l| quote(l)).collect::<Vec<_>>().join(", ")));
                continue;
            }
            toml.push_str("[[transaction.step]]\n");
            if let Some(guard) = branches.guard() {
                toml.push_str(&format!("when = {}\n", quote(guard)));
            }
            match l {
                Line::Set { name, expr: e } => {
                    check_names(script, *line_no, e, &vars)?;
                    toml.push_str(&format!("let = [{}]\n", quote(&format!("{name} = {e}"))));
                }
                Line::Sleep { us } => {
                    check_names(script, *line_no, us, &vars)?;
                    toml.push_str(&format!("sleep_us = {}\n", quote(us)));
                }
                Line::Sql { text: sql, capture, joined } => {
                    if *joined && protocol != SqlProtocol::Simple {
                        return Err(at(format!(
                            "\\; joins statements into one query, which only -M simple sends (-M {}: PostgreSQL cannot prepare several commands as one statement, and pgbench aborts the client)",
                            protocol.name()
                        )));
                    }
                    index += 1;
                    let (text, params) = parameters(sql, &vars).map_err(at)?;
                    let params: Vec<String> = params.iter().map(|p| quote(p)).collect();
                    toml.push_str(&format!("name = {}\nsql = {}\nparams = [{}]\n", quote(&step_name(index, sql)), quote(&text), params.join(", ")));
                    if let Some(prefix) = capture {
                        let names = columns::returned_columns(sql).map_err(|m| at(format!("\\gset: {m}")))?;
                        let names: Vec<String> = names.iter().map(|n| quote(&format!("{prefix}{n}"))).collect();
                        toml.push_str(&format!("capture = [{}]\n", names.join(", ")));
                    }
                }
                Line::If(_) | Line::Elif(_) | Line::Else | Line::Endif => unreachable!("handled above"),
            }
        }
        branches.finish().map_err(|m| fail(script, script.text.lines().count(), m))?;
    }
    if scripts.iter().all(|s| s.builtin && s.name == "tpcb-like") {
        toml.push_str(TPCB_INVARIANTS);
    }
    Ok(toml)
}

/// The variables a script may read: `known` (scale, client_id, `-D`), every `\set`, every column a
/// `\gset` or `\aset` stores, and the hidden variables of its `\if` blocks.
fn script_variables(script: &Script, lines: &[(usize, Line)], known: &BTreeSet<String>) -> Result<BTreeSet<String>, ScenarioError> {
    let mut vars = known.clone();
    let mut branches = Branches::default();
    for (line_no, l) in lines {
        match l {
            Line::Set { name, .. } => {
                vars.insert(name.clone());
            }
            Line::Sql { text, capture: Some(prefix), .. } => {
                let names = columns::returned_columns(text).map_err(|m| fail(script, *line_no, format!("\\gset: {m}")))?;
                vars.extend(names.into_iter().map(|n| format!("{prefix}{n}")));
            }
            Line::If(c) => drop(branches.open(c)),
            _ => {}
        }
    }
    vars.extend(branches.variables());
    Ok(vars)
}

/// Every variable an expression names must be set somewhere in the script.
fn check_names(script: &Script, line: usize, text: &str, vars: &BTreeSet<String>) -> Result<(), ScenarioError> {
    fn walk(a: &expr::Ast, vars: &BTreeSet<String>) -> Result<(), String> {
        match a {
            expr::Ast::Name(n) if !vars.contains(n) => Err(format!("undefined variable \"{n}\"")),
            expr::Ast::Unary(_, e) => walk(e, vars),
            expr::Ast::Binary(_, a, b) => walk(a, vars).and_then(|_| walk(b, vars)),
            expr::Ast::Call(_, args) => args.iter().try_for_each(|a| walk(a, vars)),
            _ => Ok(()),
        }
    }
    let ast = expr::parse(text).map_err(|m| fail(script, line, m))?;
    walk(&ast, vars).map_err(|m| fail(script, line, m))
}

/// Compiles pgbench scripts into a scenario for a SQL target; with
/// `per_command` (pgbench's `-r`) each statement is also timed apart.
/// The scenario running `scripts`, their statements sent as `protocol` says (pgbench's `-M`).
pub fn compile(
    scripts: &[Script],
    scale: i64,
    defines: &[(String, Value)],
    per_command: bool,
    protocol: SqlProtocol,
) -> Result<Scenario, ScenarioError> {
    let text = to_scenario_text(scripts, scale, defines, protocol)?;
    let source = Source::from_text(Path::new("pgbench"), text)?;
    let source = if per_command { source } else { source.without_step_timings() };
    let sc = source.compile(Family::Sql, defines)?;
    let commands = sc
        .commands
        .iter()
        .map(|c| match c {
            Command::Sql { text, .. } => Command::Sql { text: text.clone(), protocol },
            other => other.clone(),
        })
        .collect();
    // As pgbench's clients: an error other than a conflict aborts the client.
    Ok(Scenario { abort_on_error: true, commands, ..sc })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Step;

    fn script(text: &str) -> Script {
        Script { name: "my.sql".into(), text: text.into(), weight: 1.0, builtin: false }
    }

    #[test]
    fn tpcb_like_compiles_to_prepared_statements() {
        let sc = compile(&[Script::builtin("tpcb").unwrap()], 10, &[], true, SqlProtocol::Prepared).unwrap();
        assert_eq!(sc.transactions.len(), 1);
        assert_eq!(sc.invariants.len(), 3);
        let sql: Vec<&str> = sc
            .commands
            .iter()
            .map(|c| match c {
                Command::Sql { text, .. } => text.as_str(),
                _ => panic!("not SQL"),
            })
            .collect();
        assert_eq!(sql[0], "BEGIN");
        assert_eq!(sql[1], "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2");
        assert_eq!(sql[5], "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)");
        assert_eq!(sql[6], "END");
        // The four \set lines, then seven statements, each timed apart.
        let steps = &sc.transactions[0].steps;
        assert_eq!(steps.iter().filter(|s| matches!(s, Step::Let(_))).count(), 4);
        assert_eq!(sc.operations.len(), 1 + 7);
        assert_eq!(sc.operations[2], "tpcb-like.2 UPDATE pgbench_accounts SET");
        let simple = compile(&[Script::builtin("simple-update").unwrap()], 10, &[], false, SqlProtocol::Prepared).unwrap();
        assert_eq!(simple.operations, ["pgbench"], "without -r only the transaction is timed");
        assert_eq!(simple.commands.len(), 5, "BEGIN, the account's update and read, the history row, END");
        assert!(simple.invariants.is_empty(), "its tellers and branches do not move");
    }

    #[test]
    fn every_supported_meta_command_and_weights() {
        let text = "-- a comment\n\\set n random_zipfian(1, 1000, 1.07) \\\n  + 0\n\\set g random_gaussian(1, 10, 2.5)\n\\set e random_exponential(1, 10, 3.0)\n\\sleep 1 ms\n\\sleep :n us\nSELECT :n::bigint, ':n' AS literal,\n  :g + :e;\n";
        let mut s = script(text);
        s.weight = 3.0;
        let sc = compile(&[s, Script::builtin("select-only@1").unwrap()], 1, &[], true, SqlProtocol::Prepared).unwrap();
        assert_eq!(sc.transactions.len(), 2);
        assert!((sc.cumulative[0] - 0.75).abs() < 1e-9);
        let Command::Sql { text, .. } = &sc.commands[0] else { panic!() };
        assert_eq!(text, "SELECT $1::bigint, ':n' AS literal,\n  $2 + $3");
        assert_eq!(sc.transactions[0].steps.iter().filter(|s| matches!(s, Step::Sleep(_))).count(), 2);
    }

    #[test]
    fn unsupported_and_bad_lines_are_named() {
        let e = compile(&[script("SELECT 1;\n\\shell echo hi\n")], 1, &[], true, SqlProtocol::Prepared).unwrap_err();
        assert_eq!(e.at, "my.sql:2");
        assert!(e.message.contains("unsupported meta-command \\shell"), "{e}");
        let e = compile(&[script("\\set x random(1,\nSELECT 1;")], 1, &[], true, SqlProtocol::Prepared).unwrap_err();
        assert_eq!(e.at, "my.sql:1");
        let e = compile(&[script("\\set x :nope + 1\nSELECT :x;")], 1, &[], true, SqlProtocol::Prepared).unwrap_err();
        assert!(e.message.contains("undefined variable \"nope\""), "{e}");
        let e = compile(&[script("SELECT $1 + :scale;")], 1, &[], true, SqlProtocol::Prepared).unwrap_err();
        assert!(e.to_string().contains("$1: a pgbench script names its values as :variables"), "{e}");
        compile(&[script("SELECT a$1, '$1', $$x$$ FROM t;")], 1, &[], true, SqlProtocol::Simple).unwrap();
        let e = compile(&[script("SELECT :nope;")], 1, &[], true, SqlProtocol::Prepared).unwrap_err();
        assert!(e.message.contains("undefined variable \"nope\"") && e.at == "my.sql:1", "{e}");
        // A script of meta-commands only is a transaction, as pgbench runs it.
        let sc = compile(&[script("\\set x 1\n\\sleep 1 us\n")], 1, &[], true, SqlProtocol::Prepared).unwrap();
        assert!(sc.commands.is_empty() && sc.transactions[0].steps.len() == 2);
        for (text, says) in [
            ("\\if 1\nSELECT 1;\n", "not closed by \\endif"),
            ("\\endif\n", "\\endif without \\if"),
            ("\\if 1\n\\else\n\\elif 1\n\\endif\n", "\\elif after \\else"),
            ("SELECT $1 + 1 \\gset\n", "write `$1 + 1 AS name`"),
            ("\\gset\n", "must end an SQL command"),
        ] {
            let e = compile(&[script(text)], 1, &[], true, SqlProtocol::Prepared).unwrap_err();
            assert!(e.message.contains(says), "{text:?}: {e}");
        }
        assert!(Script::builtin("nosuch").is_err());
        assert!(Script::builtin("s").is_err(), "simple-update and select-only share the prefix");
    }

    #[test]
    fn conditionals_captures_and_compound_statements() {
        let text = "\\set a random(1, 3)\n\\if :a = 1\nSELECT 1 AS one \\gset p_\n\\elif :a = 2\n  \\if :a > 0\n  SELECT :a \\; SELECT 2 AS two, abalance FROM pgbench_accounts \\gset\n  \\endif\n\\else\n\\set b 3\n\\endif\nSELECT :p_one, :two, :abalance;\nSELECT 'a \\; b' AS s, 2 AS c \\; SELECT 3 AS d \\aset\n";
        let toml = to_scenario_text(&[script(text)], 1, &[], SqlProtocol::Simple).unwrap();
        for step in [
            "let = [\"__if1 = (:a = 1) and 1\", \"__taken1 = __if1\"]",
            "when = \"__if1\"\nname = \"1 SELECT 1 AS\"\nsql = \"SELECT 1 AS one\"\nparams = []\ncapture = [\"p_one\"]",
            "let = [\"__if1 = ((not __taken1) and (:a = 2)) and 1\", \"__taken1 = __taken1 or __if1\"]",
            "let = [\"__if2 = __if1 and (:a > 0)\", \"__taken2 = __if2\"]",
            "when = \"__if2\"\nname = \"2 SELECT :a\"\nsql = \"SELECT $1\"\nparams = [\"a\"]\n[[transaction.step]]",
            "sql = \"SELECT 2 AS two, abalance FROM pgbench_accounts\"\nparams = []\ncapture = [\"two\", \"abalance\"]",
            "let = [\"__if1 = (not __taken1) and 1\"]",
            "when = \"__if1\"\nlet = [\"b = 3\"]",
            "sql = \"SELECT $1, $2, $3\"\nparams = [\"p_one\", \"two\", \"abalance\"]",
            "sql = \"SELECT 'a \\\\; b' AS s, 2 AS c\"\nparams = []\ncapture = [\"s\", \"c\"]",
            "sql = \"SELECT 3 AS d\"\nparams = []\ncapture = [\"d\"]",
        ] {
            assert!(toml.contains(step), "{step}\nnot in\n{toml}");
        }
        let sc = compile(&[script(text)], 1, &[], true, SqlProtocol::Simple).unwrap();
        assert!(sc.transactions[0].steps.iter().any(|s| matches!(s, Step::When(_, 1))));
        assert!(sc.commands.iter().all(|c| matches!(c, Command::Sql { protocol: SqlProtocol::Simple, .. })), "-M reaches every statement");
        for protocol in [SqlProtocol::Extended, SqlProtocol::Prepared] {
            let e = compile(&[script(text)], 1, &[], true, protocol).unwrap_err();
            assert!(
                e.to_string().contains(&format!("my.sql:6: \\; joins statements into one query, which only -M simple sends (-M {}", protocol.name())),
                "{e}"
            );
        }
    }

    #[test]
    fn defines_are_variables() {
        let sc = compile(&[script("SELECT :limit;")], 1, &[("limit".into(), Value::Int(5))], true, SqlProtocol::Prepared).unwrap();
        let Command::Sql { text, .. } = &sc.commands[0] else { panic!() };
        assert_eq!(text, "SELECT $1");
    }
}
