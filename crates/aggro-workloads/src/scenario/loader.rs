//! One loader of a scenario: a connection running the transaction mix.

use super::expr::Cx;
use super::{Arg, Exec, Scenario, Step};
use crate::retry::ConflictRetries;
use aggro_core::clock::TimerFdWaiter;
use aggro_core::rng::Rng;
use aggro_core::scenario::{Reply, ScenarioConn, Value};
use aggro_core::{Clock, ErrorClass, ErrorSamples, MonotonicClock, StoreError, Waiter};
use aggro_runner::{Loader, Steps};
use std::sync::Arc;

/// Drives one [`ScenarioConn`] with the requests the executor hands it.
pub struct ScenarioLoader<C> {
    conn: C,
    scenario: Arc<Scenario>,
    work: Work,
    seed: u64,
    samples: Arc<ErrorSamples>,
    /// It gave up ([`Scenario::abort_on_error`]).
    aborted: bool,
}

/// A loader's reusable buffers: variables, arguments, the last reply, its sleeps' timer.
pub(crate) struct Work {
    pub(crate) slots: Vec<Value>,
    pub(crate) args: Vec<Value>,
    pub(crate) reply: Reply,
    sleeper: Option<(MonotonicClock, TimerFdWaiter)>,
}

impl Work {
    /// Sleeps `ns` on a timerfd of the monotonic clock, made at the first sleep (tokio's timer rounds
    /// up to the millisecond: pgbench's `\sleep 1000 us` took ~2.4 ms on it); on tokio's when no timer
    /// can be made.
    async fn sleep(&mut self, ns: u64) {
        if self.sleeper.is_none() {
            let clock = MonotonicClock::start();
            self.sleeper = clock.waiter().ok().map(|w| (clock, w));
        }
        match &mut self.sleeper {
            Some((clock, waiter)) => waiter.wait_until(clock.now() + ns).await,
            None => tokio::time::sleep(std::time::Duration::from_nanos(ns)).await,
        }
    }

    pub(crate) fn new(scenario: &Scenario, client: u64) -> Self {
        let mut slots = scenario.slots.clone();
        slots[scenario.client_slot] = Value::Int(client as i64);
        Self { slots, args: Vec::with_capacity(16), reply: Reply::default(), sleeper: None }
    }
}

impl<C: ScenarioConn> ScenarioLoader<C> {
    /// Loader number `client` over `conn`; failures' first messages go to `samples`.
    pub fn new(conn: C, scenario: Arc<Scenario>, client: u64, seed: u64, samples: Arc<ErrorSamples>) -> Self {
        let work = Work::new(&scenario, client);
        Self { conn, scenario, work, seed, samples, aborted: false }
    }
}

/// A failure of a step: its class and message.
fn data(message: String) -> StoreError {
    StoreError::new(ErrorClass::Data, message)
}

/// Runs `exec`'s command with its arguments rendered, capturing the reply.
pub(crate) async fn run_exec<C: ScenarioConn>(conn: &mut C, sc: &Scenario, exec: &Exec, w: &mut Work, rng: &mut Rng) -> Result<(), StoreError> {
    w.args.clear();
    let mut cx = Cx { slots: &w.slots, rng, gens: &sc.gens, committed: &[] };
    for a in &exec.args {
        let v = match a {
            Arg::Expr(e) => e.eval(&mut cx),
            Arg::Template(t) => t.render(&mut cx),
        };
        w.args.push(v.map_err(|m| data(format!("{}: {m}", exec.name)))?);
    }
    let command = match &exec.variant {
        Some((e, n)) => {
            let v = e.eval_int(&mut cx, "variant").map_err(|m| data(format!("{}: {m}", exec.name)))?;
            exec.command + v.rem_euclid(*n as i64) as usize
        }
        None => exec.command,
    };
    w.reply.want_values = exec.reads;
    conn.exec(command, &w.args, &mut w.reply).await?;
    if let Some(rows) = exec.expect_rows
        && w.reply.rows != rows
    {
        return Err(data(format!("{}: touched {} rows, expected {rows}", exec.name, w.reply.rows)));
    }
    for (i, slot) in exec.captures.iter().enumerate() {
        w.slots[*slot] = w.reply.values.get(i).cloned().unwrap_or_default();
    }
    Ok(())
}

/// Runs the steps of one transaction once.
async fn attempt<C: ScenarioConn>(conn: &mut C, sc: &Scenario, t: usize, w: &mut Work, rng: &mut Rng, steps: &mut Steps) -> Result<(), StoreError> {
    let mut skip = 0;
    for step in &sc.transactions[t].steps {
        if skip > 0 {
            skip -= 1;
            continue;
        }
        match step {
            Step::When(e, n) => {
                let v = e.eval(&mut Cx { slots: &w.slots, rng, gens: &sc.gens, committed: &[] }).map_err(data)?;
                if !super::expr::truth(&v) {
                    skip = *n;
                }
            }
            Step::Let(lets) => {
                for (slot, e) in lets {
                    let v = e.eval(&mut Cx { slots: &w.slots, rng, gens: &sc.gens, committed: &[] }).map_err(data)?;
                    w.slots[*slot] = v;
                }
            }
            Step::Sleep(e) => {
                let us = e.eval_int(&mut Cx { slots: &w.slots, rng, gens: &sc.gens, committed: &[] }, "sleep").map_err(data)?;
                w.sleep(us.max(0) as u64 * 1000).await;
            }
            Step::Exec(exec) => {
                let start = exec.op.map(|_| steps.now());
                let result = run_exec(conn, sc, exec, w, rng).await;
                if let (Some(op), Some(start)) = (exec.op, start) {
                    match &result {
                        Ok(()) => steps.record_since(op, start),
                        Err(e) => steps.count_failure(op, e.class),
                    }
                }
                result?;
            }
        }
    }
    Ok(())
}

impl<C: ScenarioConn> Loader for ScenarioLoader<C> {
    fn aborted(&self) -> bool {
        self.aborted
    }

    async fn run(&mut self, seq: u64, steps: &mut Steps) -> Result<(), ErrorClass> {
        let mut rng = Rng::stream(self.seed, seq);
        let sc = &*self.scenario;
        let t = if sc.transactions.len() > 1 { sc.pick(rng.unit()) } else { 0 };
        let op = sc.transactions[t].op;
        let start = steps.now();
        let mut retries = ConflictRetries::default();
        let done = loop {
            match attempt(&mut self.conn, sc, t, &mut self.work, &mut rng, steps).await {
                Err(e) if retries.again(op, steps, &e) => {}
                done => break done,
            }
        };
        match done {
            Ok(()) => {
                if op != 0 {
                    steps.record_since(op, start);
                }
                Ok(())
            }
            Err(e) => {
                self.samples.note(&e);
                if op != 0 {
                    steps.count_failure(op, e.class);
                }
                self.aborted = sc.abort_on_error && !e.class.is_conflict();
                Err(e.class)
            }
        }
    }
}
