//! What the engine keeps for each scripted bot between calls into Lua: its
//! timers, its socket and the coroutines waiting on them, its random stream.

use super::held::Held;
use crate::Heard;
use crate::colyseus::failures::Failures;
use crate::peers::{Order, Peers};
use crate::websocket::Request;
use aggro_core::rng::Rng;
use mlua::{Function, Thread};
use std::rc::Rc;
use std::sync::{Arc, Mutex};

/// A coroutine waiting for an answer, and the intended time of the step that asked (round trips
/// count from it).
#[derive(Debug)]
pub struct Waiter {
    pub thread: Held<Thread>,
    pub since_us: u64,
}

/// A bot's timer: a callback every `period_us`, or a sleeping coroutine to wake.
#[derive(Debug)]
pub struct Timer {
    pub at_us: u64,
    pub what: Wake,
}

#[derive(Debug)]
pub enum Wake {
    Every {
        period_us: u64,
        callback: Held<Function>,
    },
    Resume(Held<Thread>),
    /// Its script from the top again: a player who lost its server, coming back.
    Restart,
}

/// How messages on a plain WebSocket are written and read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// JSON text: tables in, tables out.
    Json,
    /// Text messages as Lua strings.
    Text,
    /// Binary messages as Lua strings.
    Binary,
    /// MessagePack in binary messages: tables in, tables out.
    MsgPack,
}

/// The protocol over a bot's WebSocket.
#[derive(Debug)]
pub enum Protocol {
    /// Plain WebSocket: a JSON message's `type_field` names its handler; `ws:call` waits for the message
    /// whose `reply_field` equals the one it sent. Shared, not copied, by each message read.
    WebSocket { format: Format, type_field: Rc<str>, reply_field: Rc<str> },
    /// Socket.IO v4 in `namespace`, connecting with `auth` (JSON, empty for none).
    SocketIo { namespace: String, auth: String },
}

/// A Socket.IO packet waiting for its binary attachments.
#[derive(Debug)]
pub struct Attaching {
    pub event: bool,
    pub id: Option<u64>,
    pub data: String,
    pub wanted: usize,
    pub binaries: Vec<Vec<u8>>,
}

/// A bot's WebSocket.
#[derive(Debug)]
pub struct Socket {
    pub protocol: Protocol,
    /// Open: the WebSocket is, and for Socket.IO the namespace has been joined.
    pub open: bool,
    /// The coroutine waiting for it to open.
    pub opener: Option<Waiter>,
    /// Handlers by event (or message type) name.
    pub handlers: Vec<(String, Held<Function>)>,
    /// Calls waiting for their reply, by ack id (or reply field value).
    pub calls: Vec<(u64, Waiter)>,
    pub next_id: u64,
    pub attaching: Option<Attaching>,
}

impl Socket {
    pub fn new(protocol: Protocol, opener: Waiter) -> Self {
        Self { protocol, open: false, opener: Some(opener), handlers: Vec::new(), calls: Vec::new(), next_id: 1, attaching: None }
    }

    /// The handler of `name`, if there is one.
    pub fn handler(&self, lua: &mlua::Lua, name: &str) -> Option<mlua::Result<Function>> {
        self.handlers.iter().find(|(n, _)| n == name).map(|(_, f)| f.get(lua))
    }
}

/// One scripted bot.
#[derive(Debug)]
pub struct BotState {
    pub id: u64,
    pub rng: Rng,
    pub started: bool,
    /// Its intended start (µs on the swarm's clock): what its stages count from.
    pub born_us: u64,
    /// The stages it reached, as bits of [`super::stages::Stages`]' numbering.
    pub reached: u64,
    /// When it lost its server, while it is coming back ([`super::reconnect`]); and its attempts since.
    pub lost_at_us: Option<u64>,
    pub attempts: u32,
    /// Its script's main chunk, until it has run to its end.
    pub main: Option<Held<Thread>>,
    /// Stopped: its script raised, or its server sent it away with no handler to catch it.
    pub gone: bool,
    /// The swarm was told it is gone (once: it retires and replaces the bot once).
    pub told_gone: bool,
    /// Sent away by the swarm while it played (the run's end): still a player, for the stages it missed.
    pub left: bool,
    pub timers: Vec<Timer>,
    pub socket: Option<Socket>,
    pub http: Option<Waiter>,
    /// The sender and number of each `{from, seq, t}` message heard.
    pub peers: Peers,
}

impl BotState {
    pub fn new(id: u64, rng: Rng) -> Self {
        Self {
            id,
            rng,
            started: false,
            born_us: 0,
            reached: 0,
            lost_at_us: None,
            attempts: 0,
            main: None,
            told_gone: false,
            left: false,
            gone: false,
            timers: Vec::new(),
            socket: None,
            http: None,
            peers: Peers::default(),
        }
    }

    /// Its earliest timer (µs), `u64::MAX` when it has none.
    pub fn next_timer(&self) -> u64 {
        self.timers.iter().map(|t| t.at_us).min().unwrap_or(u64::MAX)
    }

    /// Takes its earliest timer due by `now_us`.
    pub fn take_due(&mut self, now_us: u64) -> Option<Timer> {
        let k = (0..self.timers.len()).filter(|&k| self.timers[k].at_us <= now_us).min_by_key(|&k| self.timers[k].at_us)?;
        Some(self.timers.swap_remove(k))
    }

    /// Playing: its socket is open.
    pub fn active(&self) -> bool {
        !self.gone && self.socket.as_ref().is_some_and(|s| s.open)
    }

    /// Nothing left to run: no timer, no socket, no coroutine waiting, its script done.
    pub fn idle(&self) -> bool {
        self.started && self.main.is_none() && self.timers.is_empty() && self.socket.is_none() && self.http.is_none()
    }
}

/// What the API functions see of the swarm while a bot's code runs.
#[derive(Debug)]
pub struct Context {
    /// The bot whose code runs.
    pub bot: usize,
    /// The intended time of the step that runs (a timer's due time, an arrival's): what `now()` says
    /// and what measurements count from.
    pub now_us: u64,
    pub bots: Vec<BotState>,
    /// Requests the running bot wrote.
    pub out: Vec<Request>,
    /// What the running bot measured and counted.
    pub heard: Heard,
    pub measures: super::measures::Measures,
    /// The stages named on this thread.
    pub stages: super::stages::Stages,
    /// How a bot that lost its server comes back (`--reconnect`); None: it leaves play unless its
    /// script calls `reconnect()`.
    pub backoff: Option<crate::backoff::Backoff>,
    /// A script called `binary(…)`: events are searched for attachments (not before, at no cost).
    pub binary_used: bool,
    /// The process's number of this state's first bot (`bot.index` counts across a swarm's threads).
    pub first_index: usize,
    /// What the server said when bots did not get in or a request failed, shared by the swarm's threads.
    pub failures: Arc<Mutex<Failures>>,
}

impl Context {
    /// The running bot heard message `seq` of sender `from` (see [`sender_of_text`]), sent at `t_us` on the
    /// swarm's clock: its delay is measured and its order checked against the last one heard from `from`.
    pub fn observe(&mut self, from: u64, seq: u32, t_us: u64) {
        self.heard.counters.events_received += 1;
        self.heard.delays_us.push(self.now_us.saturating_sub(t_us));
        let bot = self.bot;
        match self.bots[bot].peers.heard(from, seq) {
            Order::First | Order::Next => {}
            Order::Late => self.heard.counters.reliable_disorder += 1,
            Order::Gap(n) => self.heard.counters.reliable_missing += n as u64,
        }
    }

    /// The running bot reached stage `name` now: timed from its intended start, the first time only.
    pub fn reach(&mut self, name: &str) -> Result<(), String> {
        let bot = self.bot;
        if let Some(op) = self.stages.reach(&mut self.bots[bot].reached, name)? {
            let born_us = self.bots[bot].born_us;
            self.measures.record(&op, aggro_arena::clock::now_us().saturating_sub(born_us));
        }
        Ok(())
    }

    /// For each stage, the bots playing (started, and not gone but for the swarm sending them away at the
    /// end) that have not reached it.
    pub fn short_of(&self) -> Vec<(String, u64)> {
        let playing: Vec<u64> = self.playing().map(|b| b.reached).collect();
        self.stages.short_of(&playing)
    }

    /// Bots that lost their server and were not back in play at the close.
    pub fn out_of_play(&self) -> u64 {
        self.playing().filter(|b| b.lost_at_us.is_some()).count() as u64
    }

    /// Bots started and not gone, but for the swarm sending them away at the end.
    fn playing(&self) -> impl Iterator<Item = &BotState> {
        self.bots.iter().filter(|b| b.started && (!b.gone || b.left))
    }

    /// The calling coroutine as a waiter, its round trip counted from the running step's intended time.
    pub fn waiter(&self, lua: &mlua::Lua) -> mlua::Result<Waiter> {
        Ok(Waiter { thread: Held::new(lua, lua.current_thread())?, since_us: self.now_us })
    }

    /// Notes what the server (or the network) said of a failure, for the verdict to quote.
    pub fn told(&self, text: String) {
        self.failures.lock().unwrap_or_else(std::sync::PoisonError::into_inner).note(text);
    }

    pub fn me(&mut self) -> &mut BotState {
        &mut self.bots[self.bot]
    }
}

/// A sender named by text (a player's name, as most games send it) as the delivery check keys it: the
/// text's hash — the same on every thread, so any text names one sender. A whole number names itself.
pub fn sender_of_text(name: &str) -> u64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut h = DefaultHasher::new();
    name.hash(&mut h);
    h.finish()
}

/// A JSON `from` as a sender: a whole number, or a text.
pub fn sender_of_json(from: &serde_json::Value) -> Option<u64> {
    from.as_u64().or_else(|| from.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)).or_else(|| from.as_str().map(sender_of_text))
}
