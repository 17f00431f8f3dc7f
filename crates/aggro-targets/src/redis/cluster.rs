//! A connection to a Redis Cluster that looks like one node's: commands are pushed, flushed and their
//! replies read in order, while each goes to the master serving its key's slot ([`super::slot`]).
//!
//! - The slot map is read with `CLUSTER SLOTS` from any node that answers (the seeds first time), and
//!   read again — at most every [`REFRESH_EVERY`] — after a node's connection breaks or a reply says
//!   `MOVED` (that slot is moved at once). A replica promoted after its master died is found this way.
//! - A command without a key (`SCRIPT LOAD`, `UNWATCH`) goes with the next command that has one, or the
//!   last; `MULTI … EXEC` goes whole to the node of its first key (a cluster runs a transaction within one
//!   slot: keys sharing a hash tag); `FLUSHDB` goes to every master and reads as one reply.
//! - Each node has its own connection, opened when a command first goes there and re-opened at most once
//!   a second after it breaks, so a dead master fails only the requests for its slots.
//! - A request that got `MOVED` fails (counted as an error): nothing it sent was applied, and the next
//!   goes to the new owner. Requests are not re-sent on a `MOVED` or a broken connection, so none is
//!   applied twice.
//! - `ASK slot host:port` (the slot is being migrated and the key is not here) is followed: the command
//!   goes again, after `ASKING`, to the importing node, on a connection of its own (the node's pipeline
//!   may hold other replies), and its answer is the request's; the map is left as it is. Only commands
//!   outside `MULTI … EXEC` are followed (a transaction with an asked key fails whole, as the cluster
//!   refuses to run it across the migration).
//! - Each node's commands, errors and reply times are tallied ([`crate::tally`]) and added to the
//!   target's figures when the connection closes.

use super::resp::{Node, Reply, encode, encode_values};
use super::slot::{Kind, SLOTS, parse, slot};
use crate::reconnect::Reconnecting;
use crate::tally::{NodeTallies, Tally};
use aggro_core::scenario::Value;
use aggro_core::{ErrorClass, StoreError};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The least time between two readings of the slot map.
pub const REFRESH_EVERY: Duration = Duration::from_millis(250);

/// A slot no node serves (as far as the map knows).
const UNSERVED: u16 = u16::MAX;

/// One node and what goes to it.
struct NodeLink {
    addr: String,
    live: Reconnecting<Node>,
    /// Commands routed to it in this flush.
    out: Vec<u8>,
    /// Why this flush could not reach it (its replies read as this error).
    failed: Option<(ErrorClass, String)>,
    /// A second connection, for the commands another node answered with `ASK` (opened on the first).
    asked: Reconnecting<Node>,
    tally: Tally,
}

impl NodeLink {
    fn new(addr: String) -> Self {
        Self { addr, live: Reconnecting::idle(), out: Vec::new(), failed: None, asked: Reconnecting::idle(), tally: Tally::default() }
    }
}

/// A reply still to be read: the node it comes from, whether it is one of a command sent to every
/// master that more replies follow (read, its error kept, and passed over), and where its command is
/// in the last flush's buffer when an `ASK` may be followed.
#[derive(Clone, Copy)]
struct Pending {
    node: u16,
    more: bool,
    command: Option<(usize, usize)>,
}

/// A routed connection to a cluster.
pub struct Cluster {
    seeds: Vec<String>,
    nodes: Vec<NodeLink>,
    /// The node serving each slot.
    slots: Vec<u16>,
    /// Commands pushed since the last flush.
    out: Vec<u8>,
    /// The commands of the last flush (what a `Pending` points into).
    sent: Vec<u8>,
    /// Commands waiting for a keyed one to say their node (kept between flushes: no allocation per request).
    held: Vec<(usize, usize)>,
    /// The replies still to be read, in order.
    order: VecDeque<Pending>,
    /// The node whose second connection an `ASK` is using (out of step if the request is dropped).
    asking: Option<u16>,
    stale: bool,
    refreshed: Instant,
    /// When the last flush wrote.
    sent_at: Instant,
    tallies: NodeTallies,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for n in self.nodes.iter().filter(|n| n.tally.commands > 0) {
            self.tallies.add(&n.addr, &n.tally);
        }
    }
}

fn cluster_error(class: ErrorClass, why: impl Into<String>) -> StoreError {
    StoreError::new(class, why.into())
}

impl Cluster {
    /// Reads the slot map from the first of `seeds` that answers; the nodes' figures go to `tallies`.
    pub async fn discover(seeds: &[String], tallies: NodeTallies) -> Result<Self, StoreError> {
        let mut c = Self {
            seeds: seeds.to_vec(),
            nodes: Vec::new(),
            slots: vec![UNSERVED; SLOTS],
            out: Vec::with_capacity(512),
            sent: Vec::with_capacity(512),
            held: Vec::new(),
            order: VecDeque::new(),
            asking: None,
            stale: true,
            refreshed: Instant::now(),
            sent_at: Instant::now(),
            tallies,
        };
        c.refresh().await?;
        Ok(c)
    }

    pub fn push(&mut self, args: &[&[u8]]) {
        encode(&mut self.out, args);
    }

    pub fn push_values<'a>(&mut self, count: usize, args: impl Iterator<Item = &'a Value>) {
        encode_values(&mut self.out, count, args);
    }

    pub fn push_encoded(&mut self, encoded: &mut Vec<u8>) {
        self.out.append(encoded);
    }

    /// Routes what was pushed and sends each node its part.
    pub async fn flush(&mut self) -> Result<(), StoreError> {
        self.abandon_unread();
        if self.stale && self.refreshed.elapsed() >= REFRESH_EVERY {
            // An unreadable map keeps the old one: the requests it misroutes fail and say why.
            let _ = self.refresh().await;
        }
        // The pushed commands become the flush's own (an ASK may need one again); the old buffer is reused.
        std::mem::swap(&mut self.out, &mut self.sent);
        self.out.clear();
        let sent = std::mem::take(&mut self.sent);
        let routed = self.route(&sent);
        self.sent = sent;
        routed?;
        self.sent_at = Instant::now();
        for n in &mut self.nodes {
            if n.out.is_empty() {
                continue;
            }
            let addr = &n.addr;
            let sent = async {
                let c = n.live.get(|| Node::connect(addr)).await?;
                c.push_encoded(&mut n.out);
                c.flush().await
            }
            .await;
            if let Err(e) = sent {
                n.tally.errors += 1;
                n.out.clear();
                n.live.forget();
                n.failed = Some((e.class, format!("cluster node {addr}: {}", e.message)));
                self.stale = true;
            }
        }
        Ok(())
    }

    /// The next reply, from the node its command went to (of a command sent to every master: the first
    /// error, else the last reply).
    pub async fn read(&mut self) -> Result<Reply, StoreError> {
        let mut first_error = None;
        loop {
            let next = self.order.pop_front().ok_or_else(|| cluster_error(ErrorClass::Protocol, "a reply was read that no command asked for"))?;
            let reply = self.read_from(next).await?;
            if !next.more {
                return Ok(first_error.unwrap_or(reply));
            }
            if matches!(reply, Reply::Error(_)) {
                first_error.get_or_insert(reply);
            }
        }
    }

    /// The reply `next` waits for (just taken from the head of the order).
    async fn read_from(&mut self, next: Pending) -> Result<Reply, StoreError> {
        let n = &mut self.nodes[usize::from(next.node)];
        if let Some((class, why)) = &n.failed {
            return Err(cluster_error(*class, why.clone()));
        }
        let Some(c) = n.live.current() else {
            return Err(cluster_error(ErrorClass::Disconnected, format!("cluster node {}: connection lost", n.addr)));
        };
        let reply = c.read().await;
        n.tally.record_reply(self.sent_at.elapsed().as_nanos() as u64);
        if reply.as_ref().ok().is_none_or(|r| matches!(r, Reply::Error(_))) {
            n.tally.errors += 1;
        }
        match reply {
            Ok(Reply::Error(e)) if e.starts_with("MOVED ") => {
                self.moved(&e);
                Ok(Reply::Error(e))
            }
            Ok(Reply::Error(e)) if e.starts_with("ASK ") && next.command.is_some() => {
                let (s, end) = next.command.expect("checked");
                let command = self.sent[s..end].to_vec();
                self.ask(&e, command).await
            }
            Ok(r) => Ok(r),
            Err(e) => {
                n.live.forget();
                self.stale = true;
                Err(cluster_error(e.class, format!("cluster node {}: {}", n.addr, e.message)))
            }
        }
    }

    /// Every master's connection (for a scan, a count, or a clean-up over the whole cluster).
    pub async fn masters(&mut self) -> Result<Vec<&mut Node>, StoreError> {
        self.abandon_unread();
        if self.stale {
            self.refresh().await?;
        }
        let masters = self.masters_by_index();
        for &i in &masters {
            let n = &mut self.nodes[usize::from(i)];
            let addr = &n.addr;
            n.live.get(|| Node::connect(addr)).await?;
        }
        Ok(self
            .nodes
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| masters.binary_search(&(*i as u16)).is_ok())
            .filter_map(|(_, n)| n.live.current())
            .collect())
    }

    /// The nodes serving a slot, by index, in order.
    fn masters_by_index(&self) -> Vec<u16> {
        let mut masters: Vec<u16> = self.slots.iter().copied().filter(|&s| s != UNSERVED).collect();
        masters.sort_unstable();
        masters.dedup();
        masters
    }

    /// Forgets the replies an abandoned request left unread (their connections are out of step).
    pub fn abandon_unread(&mut self) {
        for p in self.order.drain(..) {
            self.nodes[usize::from(p.node)].live.forget();
        }
        if let Some(i) = self.asking.take() {
            self.nodes[usize::from(i)].asked.forget();
        }
        for n in &mut self.nodes {
            n.failed = None;
            n.out.clear();
        }
    }

    /// Gives each command of `out` to its node's buffer and notes the order of the replies.
    fn route(&mut self, out: &[u8]) -> Result<(), StoreError> {
        let mut at = 0;
        let mut held = std::mem::take(&mut self.held);
        held.clear();
        let mut last = None;
        // Inside MULTI: None until its first key says which node; then that node.
        let mut multi: Option<Option<u16>> = None;
        while at < out.len() {
            let c = parse(out, at).ok_or_else(|| cluster_error(ErrorClass::Protocol, "a command could not be routed: its encoding is broken"))?;
            let span = (at, c.end);
            at = c.end;
            let node = match (c.kind, multi) {
                (Kind::Everywhere, None) => {
                    self.everywhere(out, &mut held, span);
                    continue;
                }
                (Kind::Multi, _) => {
                    multi = Some(None);
                    None
                }
                (Kind::EndMulti, Some(m)) => {
                    multi = None;
                    m.or(last)
                }
                (_, Some(Some(m))) => Some(m),
                (Kind::Keyed(Some((s, e))), Some(None)) => {
                    let n = self.owner(&out[s..e])?;
                    multi = Some(Some(n));
                    Some(n)
                }
                (Kind::Keyed(Some((s, e))), None) => Some(self.owner(&out[s..e])?),
                _ => None,
            };
            held.push(span);
            if let Some(n) = node {
                // A command of a transaction is not followed on an ASK (nor is the MULTI's EXEC).
                let alone = multi.is_none() && c.kind != Kind::EndMulti;
                self.give(n, out, &mut held, alone);
                last = Some(n);
            }
        }
        if !held.is_empty() {
            let n = last.or_else(|| self.slots.iter().copied().find(|&s| s != UNSERVED)).ok_or_else(|| self.unserved(0))?;
            self.give(n, out, &mut held, false);
        }
        self.held = held;
        Ok(())
    }

    /// Gives the commands at `spans` to `node`; `alone` when an ASK of theirs may be followed.
    fn give(&mut self, node: u16, out: &[u8], spans: &mut Vec<(usize, usize)>, alone: bool) {
        let n = &mut self.nodes[usize::from(node)];
        for (s, e) in spans.drain(..) {
            n.out.extend_from_slice(&out[s..e]);
            n.tally.commands += 1;
            self.order.push_back(Pending { node, more: false, command: alone.then_some((s, e)) });
        }
    }

    /// Sends the command at `span` to every master (the commands held before it go to the first).
    fn everywhere(&mut self, out: &[u8], held: &mut Vec<(usize, usize)>, span: (usize, usize)) {
        let masters = self.masters_by_index();
        if let Some(&first) = masters.first() {
            self.give(first, out, held, false);
        }
        for (k, &m) in masters.iter().enumerate() {
            let n = &mut self.nodes[usize::from(m)];
            n.out.extend_from_slice(&out[span.0..span.1]);
            n.tally.commands += 1;
            self.order.push_back(Pending { node: m, more: k + 1 < masters.len(), command: None });
        }
    }

    /// The node serving `key`'s slot.
    fn owner(&self, key: &[u8]) -> Result<u16, StoreError> {
        let s = slot(key);
        match self.slots[usize::from(s)] {
            UNSERVED => Err(self.unserved(s)),
            n => Ok(n),
        }
    }

    fn unserved(&self, slot: u16) -> StoreError {
        cluster_error(ErrorClass::Connect, format!("no node of the cluster serves slot {slot} (is the cluster down? seeds {})", self.seeds.join(",")))
    }

    fn node_index(&mut self, addr: &str) -> u16 {
        match self.nodes.iter().position(|n| n.addr == addr) {
            Some(i) => i as u16,
            None => {
                self.nodes.push(NodeLink::new(addr.to_string()));
                (self.nodes.len() - 1) as u16
            }
        }
    }

    /// `MOVED slot host:port`: that slot is served there from now on.
    fn moved(&mut self, error: &str) {
        let mut words = error.split_whitespace().skip(1);
        if let (Some(s), Some(addr)) = (words.next().and_then(|s| s.parse::<usize>().ok()), words.next())
            && s < SLOTS
        {
            self.slots[s] = self.node_index(addr);
        }
        self.stale = true;
    }

    /// `ASK slot host:port`: `command` goes again to that node, after `ASKING`, on the node's second
    /// connection; its reply is the request's.
    async fn ask(&mut self, error: &str, mut command: Vec<u8>) -> Result<Reply, StoreError> {
        let Some(addr) = error.split_whitespace().nth(2) else {
            return Ok(Reply::Error(error.to_string()));
        };
        let at = Instant::now();
        let i = self.node_index(addr);
        self.asking = Some(i);
        let n = &mut self.nodes[usize::from(i)];
        n.tally.commands += 1;
        let address = &n.addr;
        let reply = async {
            let c = n.asked.get(|| Node::connect(address)).await?;
            c.push(&[b"ASKING"]);
            c.push_encoded(&mut command);
            c.flush().await?;
            match c.read().await? {
                Reply::Status(_) => c.read().await,
                other => Err(StoreError::new(ErrorClass::Protocol, format!("ASKING answered {other:?}"))),
            }
        }
        .await;
        self.asking = None;
        let n = &mut self.nodes[usize::from(i)];
        n.tally.record_reply(at.elapsed().as_nanos() as u64);
        match reply {
            Ok(r) => {
                if matches!(r, Reply::Error(_)) {
                    n.tally.errors += 1;
                }
                Ok(r)
            }
            Err(e) => {
                n.tally.errors += 1;
                n.asked.forget();
                Err(cluster_error(e.class, format!("cluster node {} (asked): {}", n.addr, e.message)))
            }
        }
    }

    /// Reads the slot map from the first node that answers (known masters, then the seeds).
    async fn refresh(&mut self) -> Result<(), StoreError> {
        self.refreshed = Instant::now();
        let mut asked: Vec<String> = self.nodes.iter().map(|n| n.addr.clone()).collect();
        asked.extend(self.seeds.iter().filter(|s| !asked.contains(s)).cloned().collect::<Vec<_>>());
        let mut why = Vec::new();
        for addr in asked {
            let reply = match Node::connect(&addr).await {
                Ok(mut c) => c.call(&[b"CLUSTER", b"SLOTS"]).await,
                Err(e) => Err(e),
            };
            match reply {
                Ok(map) => return self.apply(map, &addr),
                Err(e) if e.message.contains("cluster support disabled") => {
                    return Err(cluster_error(
                        ErrorClass::Data,
                        format!("redis at {addr} is not a cluster node (drop ?cluster, or give one address)"),
                    ));
                }
                Err(e) => why.push(e.message),
            }
        }
        Err(cluster_error(ErrorClass::Connect, format!("no cluster node answered CLUSTER SLOTS: {}", why.join("; "))))
    }

    /// Takes the slot map `CLUSTER SLOTS` answered `from`.
    fn apply(&mut self, map: Reply, from: &str) -> Result<(), StoreError> {
        let bad = || cluster_error(ErrorClass::Protocol, format!("unexpected CLUSTER SLOTS reply from {from}"));
        let Reply::Array(Some(ranges)) = map else { return Err(bad()) };
        let mut slots = vec![UNSERVED; SLOTS];
        for range in ranges {
            let Reply::Array(Some(parts)) = range else { return Err(bad()) };
            let (Some(Reply::Int(first)), Some(Reply::Int(last)), Some(Reply::Array(Some(master)))) = (parts.first(), parts.get(1), parts.get(2))
            else {
                return Err(bad());
            };
            let (Some(Reply::Bulk(Some(host))), Some(Reply::Int(port))) = (master.first(), master.get(1)) else { return Err(bad()) };
            let host = String::from_utf8_lossy(host);
            let host =
                if host.is_empty() || host == "?" { from.rsplit_once(':').map_or("127.0.0.1", |(h, _)| h).to_string() } else { host.into_owned() };
            let addr = if host.contains(':') && !host.starts_with('[') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
            let node = self.node_index(&addr);
            let (first, last) = (usize::try_from(*first).map_err(|_| bad())?, usize::try_from(*last).map_err(|_| bad())?);
            if first > last || last >= SLOTS {
                return Err(bad());
            }
            slots[first..=last].fill(node);
        }
        if slots.iter().all(|&s| s == UNSERVED) {
            return Err(cluster_error(ErrorClass::Connect, format!("the cluster at {from} serves no slot yet (is it created?)")));
        }
        self.slots = slots;
        self.stale = false;
        Ok(())
    }
}
