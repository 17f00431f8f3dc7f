//! One Lua state per swarm thread running every bot's script: each bot is a
//! coroutine of the script's main chunk, each callback (`every`, `ws:on`) a
//! coroutine of its own, so anything may wait. The engine enters a bot's code
//! at the intended time of what wakes it (a timer's due time, an arrival),
//! hands it the transport's events, and takes back what it wrote and measured.

use super::api;
use super::budget::Watch;
use super::check::one_line;
use super::convert::{fill_attachments, to_lua};
use super::held::Held;
use super::state::{BotState, Context, Protocol, Timer, Waiter, Wake};
use crate::Heard;
use crate::websocket::{Request, Requests};
use aggro_core::rng::Rng;
use mlua::thread::ThreadStatus;
use mlua::{Function, IntoLuaMulti, Lua, LuaOptions, MultiValue, StdLib, Table, Thread, Value};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

/// The script's Lua state and every bot's state.
#[derive(Debug)]
pub struct Engine {
    pub(super) lua: Lua,
    chunk: Function,
    pub(super) ctx: Rc<RefCell<Context>>,
    socket_mt: Table,
    /// Coroutines that ran to their end, kept to run the next callbacks (a reset costs less than a new
    /// coroutine and leaves no garbage).
    spare: RefCell<Vec<Thread>>,
    /// The watchdog's view of this state, once [`Engine::budget`] put it under one.
    watch: Option<Arc<Watch>>,
    /// Calls into Lua under way (a callback may resume another coroutine).
    depth: Cell<u32>,
}

impl Drop for Engine {
    fn drop(&mut self) {
        if let Some(w) = &self.watch {
            w.close();
        }
    }
}

/// Finished coroutines kept for reuse at most.
const SPARE: usize = 256;

/// Globals a script may not reach: files, processes, loading code, the FFI (not loaded at all: io, os,
/// package, debug, ffi, jit).
const REMOVED: [&str; 8] = ["dofile", "loadfile", "load", "loadstring", "require", "module", "collectgarbage", "getfenv"];

impl Engine {
    /// Loads `source` (named `name` in errors) into a sandboxed state: a syntax error, an unknown name
    /// or a global assignment is one line with its line number.
    pub fn load(source: &str, name: &str) -> Result<Self, String> {
        let built = (|| -> mlua::Result<(Lua, Rc<RefCell<Context>>)> {
            let lua = Lua::new_with(StdLib::TABLE | StdLib::STRING | StdLib::MATH, LuaOptions::default())?;
            let ctx = Rc::new(RefCell::new(Context {
                bot: 0,
                now_us: 0,
                bots: Vec::new(),
                out: Vec::new(),
                heard: Heard::default(),
                measures: Default::default(),
                stages: Default::default(),
                backoff: None,
                binary_used: false,
                first_index: 0,
                failures: Default::default(),
            }));
            api::register(&lua, &ctx)?;
            super::sockets::register(&lua, &ctx)?;
            super::msgpack::register(&lua)?;
            lua.load(include_str!("prelude.lua")).set_name("=aggro prelude").exec()?;
            let g = lua.globals();
            for name in REMOVED {
                g.raw_set(name, Value::Nil)?;
            }
            lua.load(STRICT).set_name("=aggro prelude").exec()?;
            Ok((lua, ctx))
        })();
        let (lua, ctx) = built.map_err(|e| format!("cannot set up the Lua state: {e}"))?;
        let names = super::check::names_of(&lua.globals()).map_err(|e| format!("cannot list the API's names: {e}"))?;
        let stages = super::check::check(source, name, &names)?;
        ctx.borrow_mut().stages.declare(&stages).map_err(|e| format!("{name}: {e}"))?;
        let chunk = lua.load(source).set_name(format!("={name}")).into_function().map_err(|e| one_line(&e))?;
        let socket_mt = lua.globals().raw_get("__socket_mt").map_err(|e| e.to_string())?;
        Ok(Self { lua, chunk, ctx, socket_mt, spare: RefCell::new(Vec::new()), watch: None, depth: Cell::new(0) })
    }

    /// Stops any call into the script that runs more than `budget` of CPU without waiting (see
    /// `budget`); call on the thread that runs the bots.
    pub fn budget(&mut self, budget: Duration) -> std::io::Result<()> {
        self.watch = Some(super::budget::watch(&self.lua, budget)?);
        Ok(())
    }

    /// Bot `index` begins afresh (a newcomer in a departed bot's place drops its coroutines).
    pub fn add_bot(&self, index: usize, id: u64, rng: Rng) {
        let mut c = self.ctx.borrow_mut();
        while c.bots.len() <= index {
            c.bots.push(BotState::new(0, Rng::seeded(0)));
        }
        c.bots[index] = BotState::new(id, rng);
    }

    pub fn active(&self, bot: usize) -> bool {
        self.ctx.borrow().bots[bot].active()
    }

    pub fn gone(&self, bot: usize) -> bool {
        self.ctx.borrow().bots[bot].gone
    }

    pub fn next_tick(&self, bot: usize) -> Option<u64> {
        let c = self.ctx.borrow();
        let b = &c.bots[bot];
        b.started.then(|| b.next_timer())
    }

    /// Runs bot `bot`'s timers due by `now_us` (its script at its first tick, due at `due_us`: the bot's
    /// intended start, which its stages count from).
    pub fn tick(&self, bot: usize, due_us: u64, now_us: u64, out: &mut Requests, heard: &mut Heard) {
        if !self.ctx.borrow().bots[bot].started {
            let mut c = self.ctx.borrow_mut();
            (c.bots[bot].started, c.bots[bot].born_us) = (true, due_us);
            c.measures.started += 1;
            drop(c);
            self.run_script(bot, due_us);
            return self.exit(bot, out, heard);
        }
        loop {
            let timer = self.ctx.borrow_mut().bots[bot].take_due(now_us);
            let Some(Timer { at_us, what }) = timer else { break };
            self.enter(bot, at_us);
            match what {
                Wake::Resume(thread) => self.wake(bot, Waiter { thread, since_us: at_us }, ()),
                Wake::Restart => {
                    self.ctx.borrow_mut().measures.reconnect_attempts += 1;
                    self.run_script(bot, at_us);
                }
                Wake::Every { period_us, callback } => {
                    // Keep the phase; a timer more than a period behind skips ahead.
                    let next = if now_us - at_us > period_us { now_us + period_us } else { at_us + period_us };
                    let f = callback.get(&self.lua);
                    self.ctx.borrow_mut().bots[bot].timers.push(Timer { at_us: next, what: Wake::Every { period_us, callback } });
                    match f {
                        Ok(f) => drop(self.spawn(bot, f, ())),
                        Err(e) => self.failed(bot, &e),
                    }
                }
            }
            if self.ctx.borrow().bots[bot].gone {
                break;
            }
        }
        self.exit(bot, out, heard);
    }

    /// Runs bot `bot`'s script from the top as its main coroutine, at `at_us`.
    fn run_script(&self, bot: usize, at_us: u64) {
        self.enter(bot, at_us);
        let main = self.lua.create_thread(self.chunk.clone()).and_then(|main| Ok((Held::new(&self.lua, main.clone())?, main)));
        match main {
            Ok((held, main)) => {
                self.ctx.borrow_mut().bots[bot].main = Some(held);
                self.resume(bot, &main, ());
            }
            Err(e) => self.failed(bot, &e),
        }
    }

    /// Sets the running bot and the intended time of what it does.
    pub(super) fn enter(&self, bot: usize, now_us: u64) {
        let mut c = self.ctx.borrow_mut();
        c.bot = bot;
        c.now_us = now_us;
    }

    /// Hands what the bot wrote and measured to the swarm; a bot with nothing left to run, or stopped,
    /// leaves play.
    pub(super) fn exit(&self, bot: usize, out: &mut Requests, heard: &mut Heard) {
        let mut c = self.ctx.borrow_mut();
        out.0.append(&mut c.out);
        // Appended, not taken: the buffers keep their room for the next call (this runs per message).
        heard.delays_us.append(&mut c.heard.delays_us);
        heard.round_trips_us.append(&mut c.heard.round_trips_us);
        heard.counters += std::mem::take(&mut c.heard.counters);
        let b = &mut c.bots[bot];
        if b.main.as_ref().is_some_and(|m| m.get(&self.lua).is_ok_and(|m| m.status() != ThreadStatus::Resumable)) {
            b.main = None;
        }
        // A player coming back whose attempt ran to its end without a socket tries again, later.
        match (b.idle(), b.lost_at_us.is_some()) {
            (true, true) => c.come_back(bot),
            (true, false) => b.gone = true,
            _ => {}
        }
        let b = &mut c.bots[bot];
        // Told once: events may still come for a stopped bot (its socket closing) before it is replaced.
        if b.gone && !std::mem::replace(&mut b.told_gone, true) {
            heard.gone = true;
        }
    }

    /// Runs `f(args)` as a new coroutine of bot `bot`; its results if it returned at once.
    pub(super) fn spawn(&self, bot: usize, f: Function, args: impl IntoLuaMulti) -> Option<MultiValue> {
        let spare = self.spare.borrow_mut().pop();
        let thread = match spare {
            Some(t) => t.reset(f).map(|()| t),
            None => self.lua.create_thread(f),
        };
        match thread {
            Ok(thread) => {
                let results = self.resume(bot, &thread, args);
                if thread.status() == ThreadStatus::Finished && self.spare.borrow().len() < SPARE {
                    self.spare.borrow_mut().push(thread);
                }
                results
            }
            Err(e) => {
                self.failed(bot, &e);
                None
            }
        }
    }

    /// Resumes `thread` of bot `bot`; its results if it returned. An error stops the bot.
    pub(super) fn resume(&self, bot: usize, thread: &Thread, args: impl IntoLuaMulti) -> Option<MultiValue> {
        let outermost = self.depth.replace(self.depth.get() + 1) == 0;
        let watch = self.watch.as_ref().filter(|_| outermost);
        watch.inspect(|w| w.step());
        let resumed = thread.resume::<MultiValue>(args);
        watch.inspect(|w| w.step());
        self.depth.set(self.depth.get() - 1);
        match resumed {
            Ok(values) => (thread.status() == ThreadStatus::Finished).then_some(values),
            Err(e) => {
                self.failed(bot, &e);
                None
            }
        }
    }

    /// Resumes a waiting coroutine with `args`.
    pub(super) fn wake(&self, bot: usize, waiter: Waiter, args: impl IntoLuaMulti) {
        match waiter.thread.get(&self.lua) {
            Ok(thread) => drop(self.resume(bot, &thread, args)),
            Err(e) => self.failed(bot, &e),
        }
    }

    /// A script error: counted, the first ones printed with their traceback, the bot stopped.
    pub(super) fn failed(&self, bot: usize, e: &mlua::Error) {
        let mut c = self.ctx.borrow_mut();
        if c.coming_back(bot) && !c.bots[bot].socket.as_ref().is_some_and(|s| s.open) {
            // An attempt to come back that failed (the script raised on a refused connect, quoted where it
            // was refused): the player tries again later.
            c.come_back(bot);
            return;
        }
        let name = api::name_of(c.bots[bot].id);
        c.heard.counters.script_errors += 1;
        let text = e.to_string();
        if c.measures.error(format!("{name}: {text}")) {
            eprintln!("aggro: {name} stopped by a script error: {text}");
        }
        let b = &mut c.bots[bot];
        b.gone = true;
        b.timers.clear();
    }

    /// The socket table a script holds for bot `bot`'s socket.
    pub(super) fn socket_table(&self, bot: usize) -> mlua::Result<Table> {
        let t = self.lua.create_table()?;
        t.raw_set("bot", bot)?;
        t.set_metatable(Some(self.socket_mt.clone()))?;
        Ok(t)
    }

    /// `value` (JSON) as Lua, with binary attachments in their placeholders' places.
    pub(super) fn lua_value(&self, value: &serde_json::Value, binaries: &[Vec<u8>]) -> mlua::Result<Value> {
        let v = to_lua(&self.lua, value)?;
        if binaries.is_empty() {
            return Ok(v);
        }
        Ok(fill_attachments(&self.lua, &v, binaries)?.unwrap_or(v))
    }

    /// Writes a goodbye for bot `bot` (its socket closed, its timers dropped); true if there is one.
    pub fn leave(&self, bot: usize, out: &mut Requests) -> bool {
        let mut c = self.ctx.borrow_mut();
        let b = &mut c.bots[bot];
        b.left = !b.gone;
        (b.gone, b.told_gone) = (true, true);
        b.timers.clear();
        b.http = None;
        match b.socket.take() {
            Some(_) => {
                out.0.push(Request::Close);
                true
            }
            None => false,
        }
    }

    /// Whether bot `bot`'s socket speaks Socket.IO.
    pub(super) fn protocol_is_socketio(&self, bot: usize) -> Option<bool> {
        let c = self.ctx.borrow();
        c.bots[bot].socket.as_ref().map(|s| matches!(s.protocol, Protocol::SocketIo { .. }))
    }
}

/// Undeclared globals are an error, read or written: every bot of the thread shares them, and a
/// misspelt API name is caught where it is used.
const STRICT: &str = r#"
setmetatable(_G, {
  __newindex = function(_, name)
    error("assignment to undeclared global '" .. tostring(name) .. "': the bots of a thread share globals; use local", 2)
  end,
  __index = function(_, name)
    error("unknown name '" .. tostring(name) .. "' (not aggro's API nor a local)", 2)
  end,
})
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn first_error(source: &str) -> String {
        let engine = Engine::load(source, "bot.lua").unwrap();
        engine.add_bot(0, 1, Rng::seeded(1));
        engine.tick(0, 1_000, 1_000, &mut Requests::default(), &mut Heard::default());
        assert!(engine.gone(0), "the bot stopped");
        engine.ctx.borrow().measures.errors.first().cloned().unwrap_or_default()
    }

    #[test]
    fn a_script_cannot_reach_files_processes_or_code_loaders() {
        let refused = |source: &str| Engine::load(source, "bot.lua").unwrap_err();
        assert_eq!(refused("local f = io.open('/etc/passwd')"), "bot.lua:1: unknown name 'io' (not aggro's API nor a local)");
        assert_eq!(refused("\nos.execute('true')"), "bot.lua:2: unknown name 'os' (not aggro's API nor a local)");
        assert!(refused("require('socket')").contains("unknown name 'require'"));
        assert!(refused("loadstring('return 1')()").contains("unknown name 'loadstring'"));
        assert!(refused("x = 1").starts_with("bot.lua:1: assignment to undeclared global 'x'"));
        assert_eq!(refused("local a\nevery(10, function()\n  sleeep(10)\nend)"), "bot.lua:3: unknown name 'sleeep' (not aggro's API nor a local)");
        assert_eq!(refused("local r = http.pst('/login', {})"), "bot.lua:1: unknown name 'http.pst' (not aggro's API)");
        assert!(Engine::load("local s = string.format('%d', rand(3)) local t = { http.post, json.encode, math.floor, bot.name }", "bot.lua").is_ok());
        // The stages a script names with a string are known before any bot reaches one, in the code's order.
        let staged = Engine::load("stage('login')\nlocal function f() stage('matched') end\nstage('login')\nstage(bot.name)", "bot.lua").unwrap();
        assert_eq!(staged.ctx.borrow().stages.short_of(&[0]), [("login".to_string(), 1), ("matched".to_string(), 1)]);
        let bad = Engine::load("stage('in game')", "bot.lua").unwrap_err();
        assert!(bad.contains("bot.lua: stage(\"in game\")"), "{bad}");
        // A name built at run time passes the check and is refused where it is read.
        assert!(first_error("local lib = 'i' .. 'o'\nlocal f = _G[lib]").contains("bot.lua:2: unknown name 'io'"));
    }

    #[test]
    fn a_syntax_error_is_one_line_with_its_line_number() {
        let e = Engine::load("local a = 1\nlocal b = = 2", "bot.lua").unwrap_err();
        assert_eq!(e, "bot.lua:2: unexpected symbol near '='");
    }

    /// Each bot keeps a function (its `every` callback) and, while it waits, a coroutine: LuaJIT's
    /// 8,000-value stack for mlua's handles stopped the 7,992nd bot. The registry holds any number.
    #[test]
    fn twenty_thousand_bots_keep_their_callbacks_and_coroutines() {
        let engine = Engine::load("every(1000, function() count('tick') end)\nsleep(2500)\ncount('woke')", "bot.lua").unwrap();
        let (mut out, mut heard) = (Requests::default(), Heard::default());
        const BOTS: usize = 20_000;
        for bot in 0..BOTS {
            engine.add_bot(bot, bot as u64 + 1, Rng::seeded(bot as u64));
            engine.tick(bot, 0, 0, &mut out, &mut heard);
        }
        for now_us in [1_000_000, 2_000_000, 2_500_000] {
            for bot in 0..BOTS {
                engine.tick(bot, now_us, now_us, &mut out, &mut heard);
            }
        }
        assert_eq!(heard.counters.script_errors, 0, "{:?}", engine.ctx.borrow().measures.errors.first());
        let (_, counted) = engine.ctx.borrow_mut().measures.take_interval();
        assert_eq!(counted, vec![("tick".to_string(), 2 * BOTS as u64), ("woke".to_string(), BOTS as u64)]);
        assert!((0..BOTS).all(|bot| !engine.gone(bot) && engine.next_tick(bot) == Some(3_000_000)));
    }

    /// A callback that never waits is stopped by its budget where it stands; the bot is counted
    /// stopped with the error's line, and the other bots of the thread go on.
    #[test]
    fn a_callback_that_never_waits_is_stopped_by_its_budget() {
        let source = "if bot.index == 0 then\n  every(10, function()\n    while true do end\n  end)\nend\nevery(10, function() count('tick') end)";
        let mut engine = Engine::load(source, "bot.lua").unwrap();
        engine.budget(Duration::from_millis(30)).unwrap();
        let (mut out, mut heard) = (Requests::default(), Heard::default());
        for bot in 0..2 {
            engine.add_bot(bot, bot as u64 + 1, Rng::seeded(1));
            engine.tick(bot, 0, 0, &mut out, &mut heard);
        }
        let began = std::time::Instant::now();
        for bot in 0..2 {
            engine.tick(bot, 10_000, 10_000, &mut out, &mut heard);
        }
        assert!(began.elapsed() < Duration::from_secs(2), "stopped after {:?}", began.elapsed());
        assert_eq!(heard.counters.script_errors, 1);
        let error = engine.ctx.borrow().measures.errors.first().cloned().unwrap_or_default();
        assert!(error.contains("bot.lua:3: ran 30 ms of CPU without waiting (--script-budget)"), "{error}");
        assert!(engine.gone(0) && !engine.gone(1));
        engine.tick(1, 20_000, 20_000, &mut out, &mut heard);
        let (_, counted) = engine.ctx.borrow_mut().measures.take_interval();
        assert_eq!(counted, vec![("tick".to_string(), 2)]);
    }

    /// A bot whose server went away sends into a closed socket: `send` returns nil and why, counted as a
    /// failed send, and the script goes on — not a script error per timer.
    #[test]
    fn a_send_on_a_closed_socket_is_a_failed_send_not_a_script_error() {
        let source = "local ws = websocket.connect('/')\nws:on('disconnect', function() end)\nevery(10, function()\n  local ok, why = ws:send('hi')\n  if not ok then count(why) end\nend)";
        let engine = Engine::load(source, "bot.lua").unwrap();
        engine.add_bot(0, 1, Rng::seeded(1));
        let (mut out, mut heard) = (Requests::default(), Heard::default());
        engine.tick(0, 0, 0, &mut out, &mut heard);
        engine.event(0, 1_000, crate::websocket::WsEvent::Opened);
        engine.event(0, 2_000, crate::websocket::WsEvent::Closed { why: "the server went away" });
        // Its timer began when the socket opened (1 ms): due at 11 and 21 ms.
        engine.tick(0, 15_000, 15_000, &mut out, &mut heard);
        engine.tick(0, 25_000, 25_000, &mut out, &mut heard);
        assert_eq!(heard.counters.script_errors, 0, "{:?}", engine.ctx.borrow().measures.errors);
        let mut c = engine.ctx.borrow_mut();
        let (_, counted) = c.measures.take_interval();
        assert_eq!(counted, vec![("the socket was closed".to_string(), 2)]);
        assert_eq!(c.measures.take_failed(), vec![("send".to_string(), "disconnected".to_string(), 2)]);
    }

    #[test]
    fn timers_wake_sleepers_and_repeat_callbacks_at_their_intended_times() {
        let engine = Engine::load("sleep(5)\ncount('woke')\nevery(10, function() count('tick') end)", "bot.lua").unwrap();
        engine.add_bot(0, 1, Rng::seeded(1));
        let (mut out, mut heard) = (Requests::default(), Heard::default());
        engine.tick(0, 1_000, 1_000, &mut out, &mut heard);
        assert_eq!(engine.next_tick(0), Some(6_000), "asleep until 5 ms after its start");
        engine.tick(0, 6_000, 6_000, &mut out, &mut heard);
        assert_eq!(engine.next_tick(0), Some(16_000));
        // Two periods late: one callback, and the next keeps to the period from now.
        engine.tick(0, 36_500, 36_500, &mut out, &mut heard);
        let (_, counted) = engine.ctx.borrow_mut().measures.take_interval();
        assert_eq!(counted, vec![("woke".to_string(), 1), ("tick".to_string(), 1)]);
        assert_eq!(engine.next_tick(0), Some(46_500));
        assert!(!engine.gone(0));
    }
}
