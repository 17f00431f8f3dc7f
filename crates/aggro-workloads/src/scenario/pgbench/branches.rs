//! pgbench's `\if` / `\elif` / `\else` / `\endif` as a scenario's conditional steps: each branch's
//! condition is evaluated once, where pgbench evaluates it, into a hidden variable (`__if<N>`), and
//! every step inside the branch runs `when` that variable is true. A branch's variable holds the
//! enclosing branch's too, so nested blocks need only the innermost; `__taken<N>` remembers whether
//! an earlier branch of the block ran.

/// One open `\if` block.
struct Block {
    /// This branch's variable, and the block's "a branch ran" variable.
    branch: String,
    taken: String,
    /// The enclosing branch's variable (None: the script's top level).
    outer: Option<String>,
    /// `\else` was seen: no `\elif` or `\else` may follow.
    in_else: bool,
}

/// The `\if` blocks open at a point of a script.
#[derive(Default)]
pub(super) struct Branches {
    open: Vec<Block>,
    made: usize,
}

impl Branches {
    /// The variable the steps here run `when` (None: every step runs).
    pub(super) fn guard(&self) -> Option<&str> {
        self.open.last().map(|b| b.branch.as_str())
    }

    /// `\if cond`: the `let`s to run (unconditionally) at this point.
    pub(super) fn open(&mut self, cond: &str) -> Vec<String> {
        self.made += 1;
        let block = Block {
            branch: format!("__if{}", self.made),
            taken: format!("__taken{}", self.made),
            outer: self.guard().map(str::to_string),
            in_else: false,
        };
        let lets = vec![format!("{} = {}", block.branch, within(&block.outer, cond)), format!("{} = {}", block.taken, block.branch)];
        self.open.push(block);
        lets
    }

    /// `\elif cond`.
    pub(super) fn elif(&mut self, cond: &str) -> Result<Vec<String>, String> {
        let b = self.open.last_mut().ok_or("\\elif without \\if")?;
        if b.in_else {
            return Err("\\elif after \\else".into());
        }
        let cond = format!("(not {}) and ({cond})", b.taken);
        Ok(vec![format!("{} = {}", b.branch, within(&b.outer, &cond)), format!("{} = {} or {}", b.taken, b.taken, b.branch)])
    }

    /// `\else`.
    pub(super) fn otherwise(&mut self) -> Result<Vec<String>, String> {
        let b = self.open.last_mut().ok_or("\\else without \\if")?;
        if std::mem::replace(&mut b.in_else, true) {
            return Err("a second \\else".into());
        }
        Ok(vec![format!("{} = {}", b.branch, within(&b.outer, &format!("not {}", b.taken)))])
    }

    /// `\endif`.
    pub(super) fn close(&mut self) -> Result<(), String> {
        self.open.pop().map(drop).ok_or_else(|| "\\endif without \\if".to_string())
    }

    /// At the script's end: every block closed.
    pub(super) fn finish(&self) -> Result<(), String> {
        match self.open.len() {
            0 => Ok(()),
            n => Err(format!("{n} \\if block(s) not closed by \\endif")),
        }
    }

    /// The hidden variables made so far.
    pub(super) fn variables(&self) -> impl Iterator<Item = String> {
        (1..=self.made).flat_map(|n| [format!("__if{n}"), format!("__taken{n}")])
    }
}

/// `cond` as a truth value (0 or 1), and only where `outer` holds (the enclosing branch's variable;
/// `and` does not evaluate its right side when its left is false, as pgbench skips a branch not taken).
fn within(outer: &Option<String>, cond: &str) -> String {
    match outer {
        Some(o) => format!("{o} and ({cond})"),
        None => format!("({cond}) and 1"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branches_become_variables_evaluated_once() {
        let mut b = Branches::default();
        assert_eq!(b.open(":a > 1"), ["__if1 = (:a > 1) and 1", "__taken1 = __if1"]);
        assert_eq!(b.guard(), Some("__if1"));
        assert_eq!(b.open(":b"), ["__if2 = __if1 and (:b)", "__taken2 = __if2"]);
        b.close().unwrap();
        assert_eq!(b.elif(":a = 0").unwrap(), ["__if1 = ((not __taken1) and (:a = 0)) and 1", "__taken1 = __taken1 or __if1"]);
        assert_eq!(b.otherwise().unwrap(), ["__if1 = (not __taken1) and 1"]);
        assert!(b.elif("1").unwrap_err().contains("after \\else"));
        assert!(b.otherwise().unwrap_err().contains("second"));
        b.close().unwrap();
        assert_eq!(b.guard(), None);
        assert!(b.close().unwrap_err().contains("without \\if"));
        b.open("1");
        assert!(b.finish().unwrap_err().contains("not closed"));
        assert_eq!(b.variables().count(), 6);
    }
}
