//! The stages of a bot's way in — `stage("matched")` in a script, `connected`
//! when its socket first opens: each timed from the bot's intended start into
//! operation `stage:NAME` (its count per interval is the stage's rate), once
//! per bot; and, as each interval closes, how many playing bots have not yet
//! reached each stage (the funnel's "short of it").

use crate::STAGE;

/// Stages a script may name in all (a bot's reached stages are the bits of a `u64`).
pub const MAX: usize = 64;

/// The stage aggro marks when a bot's socket first opens (for Socket.IO, its namespace joined).
pub const CONNECTED: &str = "connected";

/// The stages named so far on this thread, in the order first reached.
#[derive(Debug, Default)]
pub struct Stages {
    names: Vec<String>,
}

impl Stages {
    /// Names the stages a script's code names (`check` finds them), before any bot reaches one: a stage
    /// no bot ever reaches is still in the funnel, every bot short of it.
    pub fn declare(&mut self, names: &[String]) -> Result<(), String> {
        names.iter().try_for_each(|name| self.number(name).map(drop))
    }

    /// The stage's operation name if a bot whose stages reached are the bits of `reached` reaches `name`
    /// for the first time (marking it reached), `None` when it had; an error past [`MAX`] stages or for a
    /// name that is not a word.
    pub fn reach(&mut self, reached: &mut u64, name: &str) -> Result<Option<String>, String> {
        let bit = 1u64 << self.number(name)?;
        if *reached & bit != 0 {
            return Ok(None);
        }
        *reached |= bit;
        Ok(Some(format!("{STAGE}{name}")))
    }

    /// Stage `name`'s number, numbering it if new.
    fn number(&mut self, name: &str) -> Result<usize, String> {
        Ok(match self.names.iter().position(|n| n == name) {
            Some(k) => k,
            None if self.names.len() == MAX => return Err(format!("stage({name:?}): a script may name at most {MAX} stages")),
            None if !is_word(name) => return Err(format!("stage({name:?}): a stage's name is letters, digits, '_', '-' or '.'")),
            None => {
                self.names.push(name.to_string());
                self.names.len() - 1
            }
        })
    }

    /// For each stage, how many of the playing bots whose stages reached are `playing` have not reached it.
    pub fn short_of(&self, playing: &[u64]) -> Vec<(String, u64)> {
        self.names.iter().enumerate().map(|(k, name)| (name.clone(), playing.iter().filter(|r| *r & (1 << k) == 0).count() as u64)).collect()
    }
}

/// A stage's name fits in a threshold (`stage:matched:p99<5s`) and a report's column.
fn is_word(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_counts_once_per_bot_and_the_rest_are_short_of_it() {
        let mut stages = Stages::default();
        let mut bots = [0u64; 2];
        assert_eq!(stages.reach(&mut bots[0], "login").unwrap().as_deref(), Some("stage:login"));
        assert_eq!(stages.reach(&mut bots[0], "login").unwrap(), None);
        assert_eq!(stages.reach(&mut bots[1], "login").unwrap().as_deref(), Some("stage:login"));
        assert_eq!(stages.reach(&mut bots[1], "matched").unwrap().as_deref(), Some("stage:matched"));
        assert_eq!(stages.short_of(&bots), vec![("login".to_string(), 0), ("matched".to_string(), 1)]);
    }

    #[test]
    fn names_that_are_not_words_and_the_65th_stage_are_refused() {
        let mut stages = Stages::default();
        let mut b = 0;
        for bad in ["", "in game", "a:b", "p99<5s"] {
            assert!(stages.reach(&mut b, bad).is_err(), "{bad:?} taken");
        }
        for k in 0..MAX {
            stages.reach(&mut b, &format!("s{k}")).unwrap();
        }
        assert!(stages.reach(&mut b, "one-more").unwrap_err().contains("at most 64"));
        assert_eq!(stages.reach(&mut b, "s3").unwrap(), None);
    }
}
