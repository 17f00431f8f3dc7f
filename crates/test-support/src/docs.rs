//! The shell lines the README and docs/*.md show in their code blocks, as a reader copies them: the
//! fast stage parses every `aggro …` line of them, the services stage runs them.

use std::path::{Path, PathBuf};

/// One fenced code block of a document: its shell lines in order (a line continued with `\` joined,
/// the `$ ` prompt and blank and comment-only lines dropped, a trailing `# comment` kept).
#[derive(Debug, Clone)]
pub struct Block {
    /// The document it is in.
    pub doc: PathBuf,
    /// Its lines.
    pub lines: Vec<String>,
}

/// The documents whose code blocks are read: README.md, then docs/*.md by name.
pub fn documents(root: &Path) -> Vec<PathBuf> {
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ is readable")
        .map(|e| e.expect("a docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    docs.insert(0, root.join("README.md"));
    docs
}

/// The shell blocks (fenced as `sh` or `bash`; a block with no language is output or a diagram) of the
/// document at `doc`.
pub fn blocks(doc: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(doc).unwrap_or_else(|e| panic!("{}: {e}", doc.display()));
    let mut found = Vec::new();
    for (k, block) in text.split("```").enumerate() {
        // Odd pieces are inside a fence; their first line is the fence's language.
        if k % 2 == 0 {
            continue;
        }
        let (language, body) = block.split_once('\n').unwrap_or((block, ""));
        if !matches!(language.trim(), "sh" | "bash") {
            continue;
        }
        let lines: Vec<String> = body
            .replace("\\\n", " ")
            .lines()
            .map(|l| l.trim().trim_start_matches("$ ").to_string())
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect();
        found.push(Block { doc: doc.to_path_buf(), lines });
    }
    found
}

/// `line` without its trailing `# comment`.
pub fn without_comment(line: &str) -> &str {
    line.split(" # ").next().unwrap_or(line).trim_end()
}

/// `line` without its comment, its optional `[…]` parts kept as if given.
pub fn with_options(line: &str) -> String {
    without_comment(line).replace(['[', ']'], " ")
}

/// Whether `line` is an `aggro …` command (not a diagram's label that starts with the word).
pub fn is_aggro(line: &str) -> bool {
    let line = without_comment(line);
    line.starts_with("aggro ") && !line.contains('→')
}
