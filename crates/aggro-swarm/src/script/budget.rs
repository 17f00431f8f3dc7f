//! No script holds its thread: a callback (a bot's main chunk, an `every`, a handler) that runs longer
//! than its CPU budget without waiting is stopped with an error where it stands, so the swarm's loop —
//! its other bots, its intervals, `--duration`, SIGINT and SIGTERM — goes on.
//!
//! The swarm thread marks each entry into Lua and each return in one word (two relaxed stores per
//! call, nothing else on its path). A watchdog thread, one for the process, looks every
//! `LOOK_EVERY` at each watched thread: one still inside the same call whose CPU time has grown by the
//! budget since it was first seen there is condemned — the watchdog sets a count hook of 1 on its Lua
//! state, as LuaJIT's own Ctrl-C handler does from a signal handler, and the hook raises the error at
//! the script's next instruction (unless that call has ended meanwhile). LuaJIT's compiled code never
//! looks at hooks (unless LuaJIT is built with LUAJIT_ENABLE_CHECKHOOK), so the state runs with the JIT
//! compiler off: a bot script is glue between the network and aggro's Rust, and the interpreter is
//! plenty for it.

use mlua::Lua;
use mlua::ffi::{self, lua_Debug, lua_State};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::Duration;

/// How often the watchdog looks: a runaway callback is stopped after its budget and at most this much more.
const LOOK_EVERY: Duration = Duration::from_millis(10);

/// The CPU a callback may run without waiting, by default.
pub const DEFAULT_BUDGET: Duration = Duration::from_millis(50);

unsafe extern "C" {
    /// LuaJIT's mode switch (luajit.h): `luaJIT_setmode(L, 0, LUAJIT_MODE_ENGINE | LUAJIT_MODE_OFF)`
    /// turns the JIT compiler off for the whole state.
    fn luaJIT_setmode(state: *mut lua_State, idx: std::ffi::c_int, mode: std::ffi::c_int) -> std::ffi::c_int;
}

/// One swarm thread's Lua state, as the watchdog sees it.
#[derive(Debug)]
pub(super) struct Watch {
    /// Calls into Lua so far, twice, plus one while inside one.
    word: AtomicU64,
    /// The word of the call the watchdog condemned.
    condemned: AtomicU64,
    /// The state's main thread while it lives (the engine clears it before the state is closed), for the hook.
    state: Mutex<Option<usize>>,
    /// The swarm thread's CPU clock.
    clock: libc::clockid_t,
    budget_ns: u64,
}

impl Watch {
    /// A call into Lua begins (the word turns odd) or returns (even again): each call has a word of its own.
    pub fn step(&self) {
        self.word.store(self.word.load(Relaxed) + 1, Relaxed);
    }

    /// The state is about to be closed: the watchdog must not touch it again.
    pub fn close(&self) {
        *lock(&self.state) = None;
    }
}

thread_local! {
    /// The watch of this thread's Lua state, for the hook (which runs on this thread).
    static MINE: RefCell<Option<Arc<Watch>>> = const { RefCell::new(None) };
}

/// Turns `lua`'s JIT compiler off and puts it under the watchdog with `budget` of CPU per call; call on
/// the thread that runs it.
pub(super) fn watch(lua: &Lua, budget: Duration) -> std::io::Result<Arc<Watch>> {
    let mut state = 0usize;
    // SAFETY: the closure only reads the pointer to the state's thread and switches the JIT off, which
    // LuaJIT allows at any time outside compiled code.
    unsafe {
        lua.exec_raw::<()>((), |l| {
            luaJIT_setmode(l, 0, 0);
            state = l as usize;
        })
    }
    .map_err(|e| std::io::Error::other(e.to_string()))?;
    let mut clock: libc::clockid_t = 0;
    // SAFETY: pthread_self is this thread; clock is written by the call.
    if unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) } != 0 {
        return Err(std::io::Error::other("cannot read this thread's CPU clock"));
    }
    let watch = Arc::new(Watch {
        word: AtomicU64::new(0),
        condemned: AtomicU64::new(u64::MAX),
        state: Mutex::new(Some(state)),
        clock,
        budget_ns: budget.as_nanos().min(u64::MAX as u128) as u64,
    });
    MINE.with(|m| *m.borrow_mut() = Some(Arc::clone(&watch)));
    lock(watchdog()).push(Watched { watch: Arc::downgrade(&watch), seen: None });
    Ok(watch)
}

/// A watched state and the call it was last seen inside: (its word, the thread's CPU then).
struct Watched {
    watch: Weak<Watch>,
    seen: Option<(u64, u64)>,
}

/// The watched states, and the watchdog thread started with the first.
fn watchdog() -> &'static Mutex<Vec<Watched>> {
    static WATCHED: OnceLock<&'static Mutex<Vec<Watched>>> = OnceLock::new();
    WATCHED.get_or_init(|| {
        let watched: &'static Mutex<Vec<Watched>> = Box::leak(Box::new(Mutex::new(Vec::new())));
        std::thread::Builder::new()
            .name("aggro-script-watchdog".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(LOOK_EVERY);
                    lock(watched).retain_mut(look);
                }
            })
            .expect("cannot start the script watchdog thread");
        watched
    })
}

/// Looks at one watched state; false once it is gone.
fn look(w: &mut Watched) -> bool {
    let Some(watch) = w.watch.upgrade() else { return false };
    let word = watch.word.load(Relaxed);
    if word & 1 == 0 {
        w.seen = None;
        return true;
    }
    let cpu = thread_cpu_ns(watch.clock);
    match w.seen {
        Some((seen, since)) if seen == word => {
            if cpu.saturating_sub(since) >= watch.budget_ns && watch.condemned.load(Relaxed) != word {
                let state = lock(&watch.state);
                if let Some(state) = *state {
                    watch.condemned.store(word, Relaxed);
                    // SAFETY: the state lives while `state` is Some (the lock is held); LuaJIT documents
                    // setting a count hook of 1 from another thread to interrupt a running script.
                    unsafe { ffi::lua_sethook(state as *mut lua_State, Some(stop_here), ffi::LUA_MASKCOUNT, 1) };
                }
            }
        }
        _ => w.seen = Some((word, cpu)),
    }
    true
}

/// A lock of the watchdog's (whose holders do not panic).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The thread's CPU time on `clock`, in nanoseconds.
fn thread_cpu_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is written by the call.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The hook the watchdog sets: removes itself and, if the call it was set for is still running, raises
/// the budget's error there.
unsafe extern "C-unwind" fn stop_here(state: *mut lua_State, _: *mut lua_Debug) {
    // SAFETY: a hook runs on the state's own thread, between two instructions.
    unsafe { ffi::lua_sethook(state, None, 0, 0) };
    let budget = MINE.with(|m| m.borrow().as_ref().filter(|w| w.condemned.load(Relaxed) == w.word.load(Relaxed)).map(|w| w.budget_ns));
    let Some(budget_ns) = budget else { return };
    let text = format!("ran {} ms of CPU without waiting (--script-budget): stopped", budget_ns / 1_000_000);
    // SAFETY: as above; lua_error does not return (the error unwinds to the coroutine's resume).
    unsafe {
        ffi::luaL_where(state, 0);
        ffi::lua_pushlstring(state, text.as_ptr().cast(), text.len());
        ffi::lua_concat(state, 2);
        drop(text);
        ffi::lua_error(state);
    }
}
