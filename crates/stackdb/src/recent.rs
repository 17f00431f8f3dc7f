//! The buckets whose head entries were set lately, in the order they were set. A write transaction
//! looks its keys up without the writer; once it holds the writer, it asks which buckets were set
//! since, so as to look again only at keys in those buckets — not read every key's entry a second time
//! (two MMO zones sharing a store: ~1,000 keys confirmed per commit, ~1 of them moved).

/// The buckets set since some mark, a bounded number of them.
#[derive(Debug, Default)]
pub struct RecentSets {
    buckets: Vec<u64>,
    /// The mark of `buckets[0]`: how many were set, since open, before it.
    from: u64,
}

impl RecentSets {
    /// Buckets kept at most (2 MiB); past it the oldest are forgotten all at once.
    const KEPT: usize = 1 << 18;

    /// Notes that `bucket`'s entry was set.
    pub fn note(&mut self, bucket: u64) {
        if self.buckets.len() == Self::KEPT {
            self.from += self.buckets.len() as u64;
            self.buckets.clear();
        }
        self.buckets.push(bucket);
    }

    /// Where the sets stand now, for [`since`](Self::since).
    pub fn mark(&self) -> u64 {
        self.from + self.buckets.len() as u64
    }

    /// Every bucket set since `mark` (repeats included), if they are all still kept.
    pub fn since(&self, mark: u64) -> Option<&[u64]> {
        let at = mark.checked_sub(self.from)?;
        self.buckets.get(usize::try_from(at).ok()?..)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_buckets_set_since_a_mark_are_told_while_kept() {
        let mut r = RecentSets::default();
        r.note(7);
        let mark = r.mark();
        assert_eq!(r.since(mark), Some(&[][..]));
        r.note(3);
        r.note(7);
        assert_eq!(r.since(mark), Some(&[3, 7][..]));
        assert_eq!(r.since(0), Some(&[7, 3, 7][..]));
        for b in 0..RecentSets::KEPT as u64 {
            r.note(b);
        }
        assert_eq!(r.since(mark), None, "forgotten: the caller must read every entry again");
        let late = r.mark();
        r.note(9);
        assert_eq!(r.since(late), Some(&[9][..]));
    }
}
