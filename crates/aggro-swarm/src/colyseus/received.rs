//! Messages received, counted by type — every type the room sends, not only the observed one —
//! shared by a swarm's bots without a lock: a fixed table of type names filled as types first
//! arrive, each with its counter. A message of a type past the table's size is counted apart.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Types counted by name; later new ones are counted together.
const TYPES: usize = 16;

/// Received messages by type.
#[derive(Debug, Default)]
pub struct Received {
    names: [OnceLock<String>; TYPES],
    counts: [AtomicU64; TYPES],
    /// Messages of types that found the table full.
    others: AtomicU64,
}

impl Received {
    /// Counts one message of type `kind`.
    pub fn count(&self, kind: &str) {
        for (name, count) in self.names.iter().zip(&self.counts) {
            // An empty slot takes this type, unless another bot's type took it first.
            if name.get_or_init(|| kind.to_string()) == kind {
                count.fetch_add(1, Relaxed);
                return;
            }
        }
        self.others.fetch_add(1, Relaxed);
    }

    /// Each type seen and its count, in order of first arrival; a last `(more types)` entry for the rest.
    pub fn by_type(&self) -> Vec<(String, u64)> {
        let mut out: Vec<(String, u64)> =
            self.names.iter().zip(&self.counts).filter_map(|(n, c)| n.get().map(|n| (n.clone(), c.load(Relaxed)))).collect();
        match self.others.load(Relaxed) {
            0 => {}
            n => out.push(("(more types)".into(), n)),
        }
        out
    }

    /// How many messages of type `kind` arrived.
    pub fn of(&self, kind: &str) -> u64 {
        self.by_type().into_iter().find(|(n, _)| n == kind).map_or(0, |(_, c)| c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_counted_apart_and_overflow_together() {
        let r = Received::default();
        for kind in ["moved", "chat", "moved"] {
            r.count(kind);
        }
        assert_eq!(r.by_type(), vec![("moved".into(), 2), ("chat".into(), 1)]);
        for i in 0..20 {
            r.count(&format!("t{i}"));
        }
        assert_eq!(r.by_type().last(), Some(&("(more types)".into(), 6)));
        assert_eq!(r.of("chat"), 1);
    }
}
