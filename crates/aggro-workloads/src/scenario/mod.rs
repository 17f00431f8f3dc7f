//! Scenario files: the user's own workload on any target (docs/SCENARIOS.md).
//!
//! A scenario file (TOML) or a pgbench script is compiled, for one target
//! family, into a [`Scenario`]: key spaces and size generators ([`dist`]),
//! variable slots, the family's [`Command`]s (what the target prepares per
//! connection) and transactions of steps whose arguments are compiled
//! [`expr`]essions and [`template`]s. A [`ScenarioLoader`] runs it under the
//! one executor like every other workload.
//!
//! # Layout
//! - [`expr`]: pgbench's expression language, shared by both inputs.
//! - [`dist`]: YCSB's and pgbench's distributions; key spaces; sizes.
//! - [`template`]: `"user:{expr}"` strings, JSON-escaped for DynamoDB bodies.
//! - [`file`](mod@file): the TOML format, with `include`, checked with one-line errors.
//! - [`pgbench`]: pgbench's custom-script language and its built-in scripts.
//! - `loader`: a connection running the transaction mix.
//! - `populate`: generating the rows of a bulk load.
//! - `verify`: the invariants against the run's committed counts.

mod compile;
pub mod dist;
pub mod expr;
pub mod file;
mod loader;
mod model;
pub mod pgbench;
mod populate;
mod sharing;
pub mod template;
mod verify;
mod writes;
pub mod ycsb;

pub use loader::ScenarioLoader;
pub use populate::populate;
pub use verify::{Check, Committed, verify};

use aggro_core::scenario::{Command, Load, Value};
use aggro_stats::OpId;
use dist::Gen;
use expr::Expr;
use std::sync::Arc;
use template::Template;

/// One argument of a command: an expression (typed) or a template (text).
#[derive(Clone, Debug)]
pub enum Arg {
    /// Keeps the expression's type (SQL parameters).
    Expr(Expr),
    /// Text with `{expr}` parts.
    Template(Template),
}

/// One step of a transaction.
#[derive(Clone, Debug)]
pub enum Step {
    /// Sets variables in order (pgbench's `\set`, a file's `let`); not timed.
    Let(Vec<(usize, Expr)>),
    /// Runs a command.
    Exec(Exec),
    /// Waits (pgbench's `\sleep`): the expression in microseconds.
    Sleep(Expr),
    /// Skips the next `n` steps unless the expression is true (a step's `when`, pgbench's `\if`).
    When(Expr, usize),
}

/// A step that runs a prepared command.
#[derive(Clone, Debug)]
pub struct Exec {
    /// The command's index (the first of its variants).
    pub command: usize,
    /// Picks variant `value mod variants` when the step has several statements.
    pub variant: Option<(Expr, usize)>,
    /// The arguments.
    pub args: Vec<Arg>,
    /// Slots that receive the reply's values, in order.
    pub captures: Vec<usize>,
    /// Whether the reply's values are read (captures, an invariant's check).
    pub reads: bool,
    /// Fails the step (class Data) unless it touched exactly this many rows.
    pub expect_rows: Option<u64>,
    /// Its own timing, when the transaction has more than one command.
    pub op: Option<OpId>,
    /// Where it was written, for error messages.
    pub name: String,
}

/// A weighted transaction of the mix.
#[derive(Clone, Debug)]
pub struct Transaction {
    /// Its name.
    pub name: String,
    /// Its share of the mix (relative to the others).
    pub weight: f64,
    /// Its operation id (0 when it is the only transaction).
    pub op: OpId,
    /// Its steps, in order.
    pub steps: Vec<Step>,
}

/// Commands run once, in order, on a connection of their own (each group is
/// prepared apart: a setup's DDL must run before the mix's statements can
/// be prepared).
#[derive(Clone, Debug, Default)]
pub struct Batch {
    /// The group's commands.
    pub commands: Arc<[Command]>,
    /// The steps running them.
    pub steps: Vec<Exec>,
}

/// How a population is generated.
#[derive(Clone, Debug)]
pub struct Populate {
    /// Run once, before the load (DDL, FLUSHDB, CreateTable).
    pub setup: Batch,
    /// How many rows (evaluated once).
    pub rows: Expr,
    /// Variables set per row (`n` is the row number).
    pub lets: Vec<(usize, Expr)>,
    /// The row's values, in the load's order.
    pub values: Vec<Arg>,
    /// How the target loads them.
    pub load: Load,
    /// Run once after the load (indexes, ANALYZE).
    pub finish: Batch,
}

/// A check after runs: a read whose first value must equal an expression.
#[derive(Clone, Debug)]
pub struct Invariant {
    /// Its name.
    pub name: String,
    /// The step of [`Scenario::checks`] that reads.
    pub step: usize,
    /// What it must equal (may use `committed(transaction)`).
    pub equals: Expr,
}

/// A scenario compiled for one target family.
#[derive(Debug)]
pub struct Scenario {
    /// Its name (used in result file names and reports).
    pub name: String,
    /// What it models.
    pub description: String,
    /// Key spaces and sizes, shared by every loader.
    pub gens: Arc<Gen>,
    /// Initial slot values (constants; the rest Null).
    pub slots: Vec<Value>,
    /// The slot of `client_id` (the loader's number).
    pub client_slot: usize,
    /// The slot of `n` (a population row's number).
    pub row_slot: usize,
    /// Every command of the family, in index order.
    pub commands: Arc<[Command]>,
    /// The mix.
    pub transactions: Vec<Transaction>,
    /// Cumulative weights of the mix, normalised to end at 1.
    pub cumulative: Vec<f64>,
    /// The bulk load, if the scenario has one.
    pub populate: Option<Populate>,
    /// Checks after runs.
    pub invariants: Vec<Invariant>,
    /// The commands the invariants read with.
    pub checks: Batch,
    /// Operation names: 0 the request, then transactions and timed steps.
    pub operations: Vec<String>,
    /// A loader gives up at its first failure that is not a conflict, as pgbench's clients abort
    /// (pgbench scripts); otherwise it counts the failure and goes on.
    pub abort_on_error: bool,
}

impl Scenario {
    /// The transaction of a draw in `[0, 1)`.
    pub fn pick(&self, u: f64) -> usize {
        self.cumulative.iter().position(|c| u < *c).unwrap_or(self.transactions.len() - 1)
    }

    /// The operation names as the recorder takes them.
    pub fn operation_names(&self) -> Vec<&str> {
        self.operations.iter().map(String::as_str).collect()
    }
}
