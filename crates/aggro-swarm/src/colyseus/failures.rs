//! What the server said when bots did not get in or were sent away: the first few distinct texts,
//! each counted, so a verdict can quote the server's own words (`seat reservation expired`,
//! `provided room name "skirmsh" not defined`) instead of a bare count.

/// Distinct texts kept; later new ones are only counted.
const DISTINCT: usize = 5;

/// Failure texts of a swarm's bots, shared by them. Texts that differ only in their numbers (a bot's
/// name, a room id) are one kind, shown by its first text.
#[derive(Debug, Default)]
pub struct Failures {
    /// Each kind's first text and how often the kind came, in order of first arrival.
    texts: Vec<(String, u64)>,
    /// Failures whose text came after [`DISTINCT`] others.
    unlisted: u64,
}

impl Failures {
    /// Counts one failure told by `text`.
    pub fn note(&mut self, text: String) {
        let kind = kind_of(&text);
        if let Some((_, n)) = self.texts.iter_mut().find(|(t, _)| kind_of(t) == kind) {
            *n += 1;
        } else if self.texts.len() < DISTINCT {
            self.texts.push((text, 1));
        } else {
            self.unlisted += 1;
        }
    }

    /// The text that came most often.
    pub fn commonest(&self) -> Option<&str> {
        self.texts.iter().max_by_key(|(_, n)| *n).map(|(t, _)| t.as_str())
    }

    /// One line per text, the commonest first: `247 × refused: HTTP 520: seat reservation expired`.
    pub fn lines(&self) -> Vec<String> {
        let mut texts: Vec<&(String, u64)> = self.texts.iter().collect();
        texts.sort_by_key(|t| std::cmp::Reverse(t.1));
        let mut lines: Vec<String> = texts.into_iter().map(|(t, n)| format!("{n} × {t}")).collect();
        if self.unlisted > 0 {
            lines.push(format!("{} more, of other kinds", self.unlisted));
        }
        lines
    }
}

/// A text with each run of digits as `#`.
fn kind_of(text: &str) -> String {
    let mut kind = String::with_capacity(text.len());
    for c in text.chars() {
        if !c.is_ascii_digit() {
            kind.push(c);
        } else if !kind.ends_with('#') {
            kind.push('#');
        }
    }
    kind
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_counted_and_the_commonest_named() {
        let mut f = Failures::default();
        for text in ["a", "b", "b", "c", "d", "e", "f", "b"] {
            f.note(text.to_string());
        }
        assert_eq!(f.commonest(), Some("b"));
        assert_eq!(f.lines(), vec!["3 × b", "1 × a", "1 × c", "1 × d", "1 × e", "1 more, of other kinds"]);
        let mut f = Failures::default();
        for bot in [4, 8, 12] {
            f.note(format!("refused on joining: bot-{bot} turned away (code 403)"));
        }
        assert_eq!(f.lines(), vec!["3 × refused on joining: bot-4 turned away (code 403)"]);
    }
}
