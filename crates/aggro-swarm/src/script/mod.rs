//! The `script` behaviour: bots whose behaviour is a Lua script, over the
//! WebSocket transport (plain WebSocket with JSON, MessagePack, text or binary messages;
//! Socket.IO v4; HTTP/1.1 beside them). Each bot runs the script top to
//! bottom as a coroutine of the swarm thread's one Lua state (LuaJIT,
//! sandboxed: no files, processes or sockets but the bot's own); what it
//! waits for (an answer, a time) parks the coroutine until the swarm's loop
//! hands it over. docs/BOTS.md is the script's API.
//!
//! # Layout
//! - [`engine`]: the Lua state, bots' coroutines, timers, script errors; [`budget`]: the watchdog that
//!   stops a callback running too long without waiting.
//! - [`events`]: the transport's events in the script's terms (answers, replies, handlers); [`head`]:
//!   a Socket.IO event's name and delivery fields, read without building its values.
//! - [`api`] and [`sockets`]: the functions scripts call; `prelude.lua`, the ones that wait.
//! - [`packets`]: what a socket writes (its protocol, Socket.IO packets with their attachments).
//! - [`state`]: what is kept per bot between calls; [`held`]: its functions and coroutines, in the
//!   registry.
//! - [`convert`]: Lua values to JSON and back; [`msgpack`]: to MessagePack and back, and the `msgpack`
//!   table; [`message`]: a JSON or MessagePack message's fields.
//! - [`measures`]: `measure` and `count` by name, per interval; [`stages`]: a bot's way in, timed from
//!   its intended start; [`reconnect`]: a player who lost its server coming back.
//! - [`check`]: the names a script uses, checked before it runs.

pub mod api;
pub mod budget;
pub mod check;
pub mod convert;
pub mod engine;
pub mod events;
pub mod head;
pub mod held;
pub mod measures;
pub mod message;
pub mod msgpack;
pub mod packets;
pub mod reconnect;
pub mod sockets;
pub mod stages;
pub mod state;

use super::websocket::{Requests, WebSockets, WsEvent};
use super::{Behaviour, Heard, Player, SwarmConfig};
use aggro_core::rng::Rng;
use engine::Engine;
use std::rc::Rc;

/// Bots running a script.
#[derive(Clone, Debug)]
pub struct ScriptBots {
    engine: Rc<Engine>,
}

impl ScriptBots {
    /// Bots running `source` (called `name` in errors); a syntax error or an unknown name is one line with
    /// its line number.
    pub fn load(source: &str, name: &str) -> Result<Self, String> {
        Ok(Self { engine: Rc::new(Engine::load(source, name)?) })
    }

    /// The same bots, each call into their script stopped past `budget` of CPU without waiting; call on
    /// the thread that runs them.
    pub fn budget(mut self, budget: std::time::Duration) -> std::io::Result<Self> {
        Rc::get_mut(&mut self.engine).ok_or_else(|| std::io::Error::other("the script's engine is shared already"))?.budget(budget)?;
        Ok(self)
    }

    /// The same bots, noting what the server said of failures into `failures` (one for the swarm's threads).
    pub fn reporting_to(self, failures: std::sync::Arc<std::sync::Mutex<crate::colyseus::failures::Failures>>) -> Self {
        self.engine.ctx.borrow_mut().failures = failures;
        self
    }

    /// The same bots, each coming back after `backoff` when it loses its server (else it leaves play,
    /// unless its script calls `reconnect()`).
    pub fn reconnecting(self, backoff: Option<crate::backoff::Backoff>) -> Self {
        self.engine.ctx.borrow_mut().backoff = backoff;
        self
    }

    /// The same bots, numbered (`bot.index`) from `first`: a swarm thread's block of the process's bots.
    pub fn numbered_from(self, first: usize) -> Self {
        self.engine.ctx.borrow_mut().first_index = first;
        self
    }

    /// What the scripts measured and counted by name since the last call, and their errors so far.
    fn measures(&self) -> std::cell::RefMut<'_, measures::Measures> {
        std::cell::RefMut::map(self.engine.ctx.borrow_mut(), |c| &mut c.measures)
    }
}

impl Behaviour for ScriptBots {
    type Transport = WebSockets;
    type Bot = ScriptBot;
    const DELAY: &'static str = "message_delay";
    const REFUSALS_FAIL: bool = true;

    fn bot(&mut self, _: &SwarmConfig, index: usize, client_id: u64, _: u64, rng: Rng) -> ScriptBot {
        self.engine.add_bot(index, client_id, rng);
        ScriptBot { engine: Rc::clone(&self.engine), index }
    }

    fn named(&mut self) -> super::NamedMeasures {
        let (short_of, out_of_play) = {
            let c = self.engine.ctx.borrow();
            (c.short_of(), c.out_of_play())
        };
        let mut m = self.measures();
        let (timed, counted) = m.take_interval();
        let (failed, received, errors) = (m.take_failed(), m.take_received(), m.take_new_errors());
        let (started, reconnect_attempts) = m.take_starts();
        super::NamedMeasures { timed, failed, counted, received, errors, short_of, started, reconnect_attempts, out_of_play }
    }
}

/// One scripted bot: its state lives in the engine.
#[derive(Debug)]
pub struct ScriptBot {
    engine: Rc<Engine>,
    index: usize,
}

impl Player<WebSockets> for ScriptBot {
    fn active(&self) -> bool {
        self.engine.active(self.index)
    }

    fn gone(&self) -> bool {
        self.engine.gone(self.index)
    }

    fn tick(&mut self, due_us: u64, now_us: u64, out: &mut Requests, heard: &mut Heard) -> bool {
        self.engine.tick(self.index, due_us, now_us, out, heard);
        !out.0.is_empty()
    }

    fn receive(&mut self, now_us: u64, event: WsEvent<'_>, out: &mut Requests, heard: &mut Heard) -> bool {
        self.engine.event(self.index, now_us, event);
        self.engine.exit(self.index, out, heard);
        !out.0.is_empty()
    }

    fn leave(&mut self, _: u64, out: &mut Requests) -> bool {
        self.engine.leave(self.index, out)
    }

    fn next_tick(&self) -> Option<u64> {
        self.engine.next_tick(self.index)
    }
}
