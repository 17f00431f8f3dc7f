//! What each node of a cluster did over a run — commands sent, errors (error replies, sends and reads
//! that failed), and the time from a request's write to each of its replies from that node, in an HDR
//! histogram — so a hot slot or a slow node shows. Each connection (a Redis Cluster loader's, a
//! Cassandra loader's handle) keeps its own and adds it to the target's when it closes; the result
//! file carries them as `extra.nodes`.

use aggro_stats::encode::to_base64;
use aggro_stats::{Histogram, Summary, new_histogram};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One node's figures.
#[derive(Clone)]
pub struct Tally {
    pub commands: u64,
    pub errors: u64,
    /// Nanoseconds from a request's write to a reply of this node.
    pub reply: Histogram,
}

impl Default for Tally {
    fn default() -> Self {
        Self { commands: 0, errors: 0, reply: new_histogram() }
    }
}

impl Tally {
    pub fn record_reply(&mut self, ns: u64) {
        // The histogram grows to hold any value (`new_histogram`): recording cannot fail.
        let _ = self.reply.record(ns);
    }
}

/// Every node's figures, shared by a target's connections.
#[derive(Clone, Default)]
pub struct NodeTallies(Arc<Mutex<BTreeMap<String, Tally>>>);

impl std::fmt::Debug for NodeTallies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeTallies").field("nodes", &self.0.lock().len()).finish()
    }
}

impl NodeTallies {
    /// Adds one connection's figures for node `addr`.
    pub fn add(&self, addr: &str, t: &Tally) {
        let mut all = self.0.lock();
        let into = all.entry(addr.to_string()).or_default();
        into.commands += t.commands;
        into.errors += t.errors;
        let _ = into.reply.add(&t.reply);
    }

    /// `[{node, commands, errors, reply: {count, mean_ns, p50_ns, …}, reply_hdr}]`, or null when no
    /// node was used.
    pub fn to_json(&self) -> serde_json::Value {
        let all = self.0.lock();
        if all.is_empty() {
            return serde_json::Value::Null;
        }
        all.iter()
            .map(|(node, t)| {
                serde_json::json!({ "node": node, "commands": t.commands, "errors": t.errors,
                    "reply": Summary::of(&t.reply), "reply_hdr": to_base64(&t.reply) })
            })
            .collect()
    }
}
