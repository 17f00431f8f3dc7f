//! Reading a pgbench script into its commands: SQL commands (ending at `;`, or at a `\gset` or
//! `\aset` that stores their first row; `\;` joins statements pgbench sends together) and the
//! meta-commands aggro runs (`\set`, `\sleep`, `\if`, `\elif`, `\else`, `\endif`).

use super::{Script, fail};
use crate::scenario::expr;
use crate::scenario::file::ScenarioError;

/// One command of a script.
pub(super) enum Line {
    Set {
        name: String,
        expr: String,
    },
    Sleep {
        us: String,
    },
    /// An SQL statement; `capture`: its first row goes to variables (`\gset`/`\aset`, with the prefix);
    /// `joined`: one of a compound command's statements (`\;`).
    Sql {
        text: String,
        capture: Option<String>,
        joined: bool,
    },
    If(String),
    Elif(String),
    Else,
    Endif,
}

/// Splits a script into its commands, each with the line it starts on.
pub(super) fn commands(script: &Script) -> Result<Vec<(usize, Line)>, ScenarioError> {
    let mut out = Vec::new();
    let mut sql = String::new();
    let mut sql_line = 0;
    let mut lines = script.text.lines().enumerate().peekable();
    while let Some((i, raw)) = lines.next() {
        let line_no = i + 1;
        let trimmed = raw.trim();
        if sql.is_empty() && (trimmed.is_empty() || trimmed.starts_with("--")) {
            continue;
        }
        if sql.is_empty() && trimmed.starts_with('\\') {
            let mut meta = trimmed.to_string();
            while meta.ends_with('\\') {
                meta.pop();
                match lines.next() {
                    Some((_, more)) => meta.push_str(more.trim()),
                    None => break,
                }
            }
            out.push((line_no, meta_command(script, line_no, &meta)?));
            continue;
        }
        if sql.is_empty() {
            sql_line = line_no;
        } else {
            sql.push('\n');
        }
        // `\gset [prefix]` or `\aset [prefix]` ends the command in place of a `;`.
        if let Some((before, capture)) = trailing_capture(raw).filter(|(before, _)| outside_quotes(&format!("{sql}{before}"))) {
            sql.push_str(before);
            push_compound(&mut out, sql_line, &std::mem::take(&mut sql), Some(capture));
            continue;
        }
        sql.push_str(raw);
        // A command ends at a ';' outside quotes; what follows starts the next.
        while let Some(end) = statement_end(&sql) {
            let statement = sql[..end].to_string();
            sql = sql[end + 1..].trim().to_string();
            push_compound(&mut out, sql_line, &statement, None);
        }
    }
    push_compound(&mut out, sql_line, &sql, None);
    Ok(out)
}

/// Adds a command's statements (split at `\;`): without a capture, as one command of statements
/// joined by `;`, sent as one query as pgbench sends it (one implicit transaction); with one, each
/// apart — `\gset`'s capture goes to the last, `\aset`'s (`*` before its prefix) to each.
fn push_compound(out: &mut Vec<(usize, Line)>, line: usize, command: &str, capture: Option<(bool, String)>) {
    let parts: Vec<&str> = split_compound(command).into_iter().map(str::trim).filter(|s| !s.is_empty()).collect();
    let (last, joined) = (parts.len().saturating_sub(1), parts.len() > 1);
    if joined && capture.is_none() {
        out.push((line, Line::Sql { text: parts.join(";\n"), capture: None, joined }));
        return;
    }
    for (i, text) in parts.into_iter().enumerate() {
        let capture = match &capture {
            Some((all, prefix)) if *all || i == last => Some(prefix.clone()),
            _ => None,
        };
        out.push((line, Line::Sql { text: text.to_string(), capture, joined }));
    }
}

fn meta_command(script: &Script, line_no: usize, meta: &str) -> Result<Line, ScenarioError> {
    let mut words = meta[1..].splitn(2, char::is_whitespace);
    let cmd = words.next().unwrap_or("").to_ascii_lowercase();
    let rest = words.next().unwrap_or("").trim();
    let condition = |what: &str| -> Result<String, ScenarioError> {
        expr::parse(rest).map_err(|m| fail(script, line_no, format!("\\{what}: {m}")))?;
        Ok(rest.to_string())
    };
    Ok(match cmd.as_str() {
        "set" => {
            let (name, e) =
                rest.split_once(char::is_whitespace).ok_or_else(|| fail(script, line_no, "\\set needs a variable and an expression".into()))?;
            expr::parse(e).map_err(|m| fail(script, line_no, format!("\\set {name}: {m}")))?;
            Line::Set { name: name.trim_start_matches(':').to_string(), expr: e.trim().to_string() }
        }
        "sleep" => {
            let mut w = rest.split_whitespace();
            let n = w.next().ok_or_else(|| fail(script, line_no, "\\sleep needs a duration".into()))?;
            let factor = match w.next().map(str::to_ascii_lowercase).as_deref() {
                None | Some("s") => 1_000_000,
                Some("ms") => 1_000,
                Some("us") => 1,
                Some(u) => return Err(fail(script, line_no, format!("\\sleep: unknown unit {u:?}: expected us, ms or s"))),
            };
            Line::Sleep { us: format!("({n}) * {factor}") }
        }
        "if" => Line::If(condition("if")?),
        "elif" => Line::Elif(condition("elif")?),
        "else" => Line::Else,
        "endif" => Line::Endif,
        "gset" | "aset" => return Err(fail(script, line_no, format!("\\{cmd} must end an SQL command (on its last line)"))),
        other => {
            return Err(fail(
                script,
                line_no,
                format!(
                    "unsupported meta-command \\{other} (aggro runs \\set, \\sleep, \\if/\\elif/\\else/\\endif, \\gset and \\aset; write the rest as SQL or a scenario file)"
                ),
            ));
        }
    })
}

/// A line's trailing `\gset [prefix]` or `\aset [prefix]`: the text before it and (all statements?,
/// the prefix).
fn trailing_capture(raw: &str) -> Option<(&str, (bool, String))> {
    let t = raw.trim_end();
    let at = t.rfind('\\')?;
    let mut words = t[at + 1..].split_whitespace();
    let all = match words.next()? {
        "gset" => false,
        "aset" => true,
        _ => return None,
    };
    let prefix = words.next().unwrap_or("").to_string();
    let valid = words.next().is_none() && prefix.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then_some((&t[..at], (all, prefix)))
}

/// Which quotes are open at a point of SQL text, fed byte by byte.
#[derive(Default)]
pub(super) struct Quotes {
    single: bool,
    double: bool,
}

impl Quotes {
    /// Takes the next byte; whether it stands outside quotes (a quote mark itself does not).
    pub(super) fn outside(&mut self, c: u8) -> bool {
        match c {
            b'\'' if !self.double => self.single = !self.single,
            b'"' if !self.single => self.double = !self.double,
            _ => return !self.single && !self.double,
        }
        false
    }

    /// Whether no quote is open.
    fn closed(&self) -> bool {
        !self.single && !self.double
    }
}

/// The byte offset of the first `;` outside quotes and comments.
pub(super) fn statement_end(sql: &str) -> Option<usize> {
    let mut quotes = Quotes::default();
    let b = sql.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if quotes.outside(b[i]) {
            match b[i] {
                b'-' if b.get(i + 1) == Some(&b'-') => {
                    i = sql[i..].find('\n').map_or(b.len(), |n| i + n);
                    continue;
                }
                b'\\' if b.get(i + 1) == Some(&b';') => i += 1,
                b';' => return Some(i),
                _ => {}
            }
        }
        i += 1;
    }
    None
}

/// Whether `text` ends outside a quoted string.
fn outside_quotes(text: &str) -> bool {
    let mut quotes = Quotes::default();
    for c in text.bytes() {
        quotes.outside(c);
    }
    quotes.closed()
}

/// A command split at its `\;` (outside quotes): the statements pgbench sends together.
fn split_compound(command: &str) -> Vec<&str> {
    let (mut parts, mut start) = (Vec::new(), 0);
    let mut quotes = Quotes::default();
    let b = command.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if quotes.outside(b[i]) && b[i] == b'\\' && b.get(i + 1) == Some(&b';') {
            parts.push(&command[start..i]);
            start = i + 2;
            i += 1;
        }
        i += 1;
    }
    parts.push(&command[start..]);
    parts
}
