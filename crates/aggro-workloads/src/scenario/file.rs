//! The scenario file format (TOML; docs/SCENARIOS.md) and its compiler.
//!
//! [`Source::load`] reads a file and its `include`s; [`Source::compile`]
//! checks everything and builds a [`Scenario`] for one target family. Every
//! error is one line naming the file, the line and the key.

use super::dist::{self, Choice, Gen, Order, Size, Space, Zipfian};
use super::expr::{self, Cx, Expr, Scope};
use super::template::Template;
use super::{Arg, Batch, Exec, Invariant, Populate, Scenario, Step, Transaction};
use aggro_core::rng::Rng;
use aggro_core::scenario::{Command, Family, KvOp, Load, Value};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toml::Spanned;

/// A scenario that cannot be used: where and why, on one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {message}")]
pub struct ScenarioError {
    /// `FILE:LINE` (or `FILE`).
    pub at: String,
    /// What is wrong, naming the key.
    pub message: String,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileModel {
    name: Option<String>,
    description: Option<String>,
    #[serde(default)]
    include: Vec<String>,
    #[serde(default)]
    vars: BTreeMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    keys: BTreeMap<String, Spanned<KeysModel>>,
    #[serde(default)]
    sizes: BTreeMap<String, Spanned<SizeModel>>,
    #[serde(default)]
    steps: BTreeMap<String, Spanned<StepModel>>,
    populate: Option<Spanned<PopulateModel>>,
    #[serde(default)]
    transaction: Vec<Spanned<TxnModel>>,
    #[serde(default)]
    invariant: Vec<Spanned<StepModel>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeysModel {
    count: Spanned<toml::Value>,
    distribution: Option<Spanned<String>>,
    #[serde(default)]
    prefix: String,
    order: Option<Spanned<String>>,
    theta: Option<f64>,
    hot_fraction: Option<f64>,
    hot_share: Option<f64>,
    percentile: Option<f64>,
    fraction: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SizeModel {
    distribution: Option<Spanned<String>>,
    length: Option<usize>,
    min: Option<usize>,
    max: Option<usize>,
}

#[derive(Deserialize, Clone, Default)]
#[serde(deny_unknown_fields)]
struct StepModel {
    name: Option<String>,
    #[serde(rename = "use")]
    use_: Option<Spanned<String>>,
    #[serde(rename = "let", default)]
    lets: Vec<Spanned<String>>,
    sql: Option<Spanned<toml::Value>>,
    #[serde(default)]
    params: Vec<Spanned<String>>,
    redis: Option<Spanned<toml::Value>>,
    kv: Option<Spanned<toml::Value>>,
    dynamo: Option<Spanned<DynamoModel>>,
    variant: Option<Spanned<String>>,
    #[serde(default)]
    capture: Vec<String>,
    rows: Option<u64>,
    sleep_us: Option<Spanned<String>>,
    /// Only in `[[invariant]]`: what the step's first value must equal.
    equals: Option<Spanned<String>>,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct DynamoModel {
    action: String,
    request: String,
    #[serde(default)]
    returns: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TxnModel {
    name: String,
    #[serde(default = "one")]
    weight: f64,
    #[serde(default)]
    step: Vec<Spanned<StepModel>>,
}

fn one() -> f64 {
    1.0
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PopulateModel {
    rows: Option<Spanned<toml::Value>>,
    #[serde(rename = "let", default)]
    lets: Vec<Spanned<String>>,
    #[serde(default)]
    setup: Vec<Spanned<StepModel>>,
    #[serde(default)]
    finish: Vec<Spanned<StepModel>>,
    sql: Option<Spanned<SqlLoadModel>>,
    redis: Option<Spanned<toml::Value>>,
    kv: Option<Spanned<Vec<String>>>,
    dynamo: Option<Spanned<DynamoLoadModel>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SqlLoadModel {
    table: String,
    columns: Vec<String>,
    values: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DynamoLoadModel {
    table: String,
    item: String,
}


/// An item with the file it came from.
struct From<T> {
    file: usize,
    item: Spanned<T>,
}

/// A scenario as read: its files and their items, includes merged.
pub struct Source {
    files: Vec<(PathBuf, String)>,
    name: String,
    description: String,
    vars: BTreeMap<String, From<toml::Value>>,
    keys: BTreeMap<String, From<KeysModel>>,
    sizes: BTreeMap<String, From<SizeModel>>,
    steps: BTreeMap<String, From<StepModel>>,
    populate: Option<From<PopulateModel>>,
    transactions: Vec<From<TxnModel>>,
    invariants: Vec<From<StepModel>>,
    /// Whether each command of a transaction of several is timed apart
    /// (pgbench times statements only with `-r`).
    time_steps: bool,
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Source").field("name", &self.name).field("files", &self.files.iter().map(|(p, _)| p).collect::<Vec<_>>()).finish_non_exhaustive()
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|b| *b == b'\n').count() + 1
}

impl Source {
    /// Reads `path` and, first, the files it includes (relative to it).
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        let mut source = Source::empty(path);
        source.read(path, None, 0)?;
        source.finish(path)
    }

    /// A scenario from `text`, named after `path` (includes are relative to it).
    pub fn from_text(path: &Path, text: String) -> Result<Self, ScenarioError> {
        let mut source = Source::empty(path);
        source.read(path, Some(text), 0)?;
        source.finish(path)
    }

    fn empty(path: &Path) -> Self {
        Source {
            files: Vec::new(),
            name: path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "scenario".into()),
            description: String::new(),
            vars: BTreeMap::new(),
            keys: BTreeMap::new(),
            sizes: BTreeMap::new(),
            steps: BTreeMap::new(),
            populate: None,
            transactions: Vec::new(),
            invariants: Vec::new(),
            time_steps: true,
        }
    }

    /// Times transactions whole only, not each command (pgbench without `-r`).
    pub fn without_step_timings(mut self) -> Self {
        self.time_steps = false;
        self
    }

    fn finish(self, path: &Path) -> Result<Self, ScenarioError> {
        if self.transactions.is_empty() {
            return Err(ScenarioError { at: path.display().to_string(), message: "no [[transaction]]: a scenario needs at least one".into() });
        }
        Ok(self)
    }

    /// The scenario's name (its `name`, or the file's stem).
    pub fn name(&self) -> &str {
        &self.name
    }

    fn read(&mut self, path: &Path, text: Option<String>, depth: usize) -> Result<(), ScenarioError> {
        let at = path.display().to_string();
        if depth > 8 {
            return Err(ScenarioError { at, message: "includes nest deeper than 8 (a cycle?)".into() });
        }
        let text = match text {
            Some(t) => t,
            None => std::fs::read_to_string(path).map_err(|e| ScenarioError { at: at.clone(), message: format!("cannot read: {e}") })?,
        };
        let model: FileModel = toml::from_str(&text).map_err(|e| {
            let line = e.span().map(|s| format!(":{}", line_of(&text, s.start))).unwrap_or_default();
            ScenarioError { at: format!("{at}{line}"), message: e.message().trim().replace('\n', " ") }
        })?;
        for inc in &model.include {
            let inc_path = path.parent().unwrap_or(Path::new(".")).join(inc);
            self.read(&inc_path, None, depth + 1)?;
        }
        let file = self.files.len();
        self.files.push((path.to_path_buf(), text));
        if let Some(n) = model.name {
            self.name = n;
        }
        if let Some(d) = model.description {
            self.description = d;
        }
        let wrap = |item| From { file, item };
        self.vars.extend(model.vars.into_iter().map(|(k, v)| (k, wrap(v))));
        self.keys.extend(model.keys.into_iter().map(|(k, v)| (k, From { file, item: v })));
        self.sizes.extend(model.sizes.into_iter().map(|(k, v)| (k, From { file, item: v })));
        self.steps.extend(model.steps.into_iter().map(|(k, v)| (k, From { file, item: v })));
        if let Some(p) = model.populate {
            self.populate = Some(From { file, item: p });
        }
        if !model.transaction.is_empty() {
            self.transactions = model.transaction.into_iter().map(|t| From { file, item: t }).collect();
        }
        self.invariants.extend(model.invariant.into_iter().map(|i| From { file, item: i }));
        Ok(())
    }

    fn at<T>(&self, from: &From<T>) -> String {
        self.at_span(from.file, from.item.span())
    }

    fn at_span(&self, file: usize, span: std::ops::Range<usize>) -> String {
        let (path, text) = &self.files[file];
        format!("{}:{}", path.display(), line_of(text, span.start))
    }

    /// Compiles the scenario for `family`; `overrides` replace `[vars]`
    /// (`--set name=value`); `seed` seeds the key spaces' constants.
    pub fn compile(&self, family: Family, overrides: &[(String, Value)]) -> Result<Scenario, ScenarioError> {
        Compiler::new(self, family, overrides)?.scenario()
    }
}

/// A `--set name=value`: integers and floats are numbers, anything else text.
pub fn parse_override(text: &str) -> Result<(String, Value), String> {
    let (name, value) = text.split_once('=').ok_or_else(|| format!("--set {text:?}: expected NAME=VALUE"))?;
    let v = value.parse::<i64>().map(Value::Int).or_else(|_| value.parse::<f64>().map(Value::Float)).unwrap_or_else(|_| Value::Text(value.to_string()));
    Ok((name.trim().to_string(), v))
}

/// Names and their slots, key spaces and sizes while compiling.
#[derive(Default)]
pub(crate) struct Names {
    pub(crate) slots: HashMap<String, usize>,
    pub(crate) spaces: Vec<String>,
    pub(crate) sizes: Vec<String>,
    pub(crate) transactions: Vec<String>,
    /// The values of the variables no step sets (`[vars]`, `--set`), by slot.
    pub(crate) constants: Vec<Option<Value>>,
}

impl Names {
    /// The slot of `name`, made if new.
    pub(crate) fn slot(&mut self, name: &str) -> usize {
        let n = self.slots.len();
        *self.slots.entry(name.to_string()).or_insert(n)
    }
}

impl Scope for Names {
    fn var(&self, name: &str) -> Option<usize> {
        self.slots.get(name).copied()
    }
    fn space(&self, name: &str) -> Option<usize> {
        self.spaces.iter().position(|s| s == name)
    }
    fn size(&self, name: &str) -> Option<usize> {
        self.sizes.iter().position(|s| s == name)
    }
    fn transaction(&self, name: &str) -> Option<usize> {
        self.transactions.iter().position(|s| s == name)
    }
    fn constant(&self, slot: usize) -> Option<Value> {
        self.constants.get(slot).cloned().flatten()
    }
}

/// A family's commands as they are being collected.
#[derive(Default)]
struct Group {
    commands: Vec<Command>,
    steps: Vec<Exec>,
}

impl Group {
    fn batch(self) -> Batch {
        Batch { commands: self.commands.into(), steps: self.steps }
    }
}

struct Compiler<'a> {
    src: &'a Source,
    family: Family,
    names: Names,
    slots: Vec<Value>,
    gens: Gen,
}

type Fail = ScenarioError;

impl<'a> Compiler<'a> {
    fn new(src: &'a Source, family: Family, overrides: &[(String, Value)]) -> Result<Self, Fail> {
        let mut c = Compiler { src, family, names: Names::default(), slots: Vec::new(), gens: Gen::default() };
        for (name, from) in &src.vars {
            let v = match from.item.get_ref() {
                toml::Value::Integer(i) => Value::Int(*i),
                toml::Value::Float(f) => Value::Float(*f),
                toml::Value::String(s) => Value::Text(s.clone()),
                toml::Value::Boolean(b) => Value::Int(*b as i64),
                _ => return Err(c.fail(from, &format!("vars.{name}: a var is a number or a string"))),
            };
            c.set(name, v);
        }
        for (name, v) in overrides {
            c.set(name, v.clone());
        }
        c.names.slot("client_id");
        c.names.slot("n");
        // Every name a let or capture sets anywhere gets its slot up front, so
        // an expression may read a variable an earlier step set.
        fn let_name(l: &Spanned<String>) -> Option<String> {
            l.get_ref().split_once('=').map(|(n, _)| n.trim().trim_start_matches(':').to_string())
        }
        let mut setters: Vec<String> = Vec::new();
        let mut steps: Vec<&StepModel> = Vec::new();
        for t in &src.transactions {
            steps.extend(t.item.get_ref().step.iter().map(Spanned::get_ref));
        }
        steps.extend(src.steps.values().map(|s| s.item.get_ref()));
        if let Some(p) = &src.populate {
            let p = p.item.get_ref();
            setters.extend(p.lets.iter().filter_map(let_name));
            steps.extend(p.setup.iter().chain(&p.finish).map(Spanned::get_ref));
        }
        for s in steps {
            setters.extend(s.lets.iter().filter_map(let_name));
            setters.extend(s.capture.iter().cloned());
        }
        let constants: Vec<usize> = c.names.slots.values().copied().collect();
        for n in &setters {
            c.names.slot(n);
        }
        c.slots.resize(c.names.slots.len(), Value::Null);
        c.names.constants = vec![None; c.names.slots.len()];
        for slot in constants {
            let set_by_a_step = setters.iter().any(|n| c.names.slots.get(n) == Some(&slot));
            let builtin = ["client_id", "n"].iter().any(|n| c.names.slots.get(*n) == Some(&slot));
            if !set_by_a_step && !builtin {
                c.names.constants[slot] = Some(c.slots[slot].clone());
            }
        }
        c.names.transactions = src.transactions.iter().map(|t| t.item.get_ref().name.clone()).collect();
        Ok(c)
    }

    fn set(&mut self, name: &str, v: Value) {
        let slot = self.names.slot(name);
        if self.slots.len() <= slot {
            self.slots.resize(slot + 1, Value::Null);
        }
        self.slots[slot] = v;
    }

    fn fail<T>(&self, from: &From<T>, message: &str) -> Fail {
        Fail { at: self.src.at(from), message: message.to_string() }
    }

    fn fail_at(&self, file: usize, span: std::ops::Range<usize>, message: String) -> Fail {
        Fail { at: self.src.at_span(file, span), message }
    }

    fn expr(&self, file: usize, text: &Spanned<String>, key: &str) -> Result<Expr, Fail> {
        expr::parse(text.get_ref())
            .and_then(|a| expr::compile(&a, &self.names))
            .map_err(|e| self.fail_at(file, text.span(), format!("{key}: {e}")))
    }

    /// A constant expression (a count, a row total), evaluated now.
    fn constant(&self, file: usize, v: &Spanned<toml::Value>, key: &str) -> Result<i64, Fail> {
        let text = match v.get_ref() {
            toml::Value::Integer(i) => return Ok(*i),
            toml::Value::String(s) => s.clone(),
            _ => return Err(self.fail_at(file, v.span(), format!("{key}: expected a number or an expression"))),
        };
        let e = self.expr(file, &Spanned::new(v.span(), text), key)?;
        let mut rng = Rng::seeded(0);
        e.eval_int(&mut Cx { slots: &self.slots, rng: &mut rng, gens: &self.gens, committed: &[] }, key)
            .map_err(|m| self.fail_at(file, v.span(), format!("{key}: {m}")))
    }

    fn scenario(mut self) -> Result<Scenario, Fail> {
        self.key_spaces()?;
        self.size_gens()?;
        let mut operations = vec![self.src.name.clone()];
        let mut mix = Group::default();
        let mut transactions = Vec::new();
        let several = self.src.transactions.len() > 1;
        for (ti, from) in self.src.transactions.iter().enumerate() {
            let t = from.item.get_ref();
            if !(t.weight >= 0.0 && t.weight.is_finite()) {
                return Err(self.fail(from, &format!("transaction[{ti}].weight: must be a number ≥ 0")));
            }
            let op = if several {
                operations.push(t.name.clone());
                operations.len() - 1
            } else {
                0
            };
            let mut steps = Vec::new();
            for (si, s) in t.step.iter().enumerate() {
                let key = format!("transaction[{ti}] ({}).step[{si}]", t.name);
                steps.extend(self.step(from.file, s, &key, &mut mix)?);
            }
            let execs: Vec<usize> = steps.iter().enumerate().filter(|(_, s)| matches!(s, Step::Exec(_))).map(|(i, _)| i).collect();
            if execs.is_empty() {
                return Err(self.fail(from, &format!(
                    "transaction[{ti}] ({}): no step has a `{}` form, so this scenario cannot run on a {} target",
                    t.name,
                    self.family.key(),
                    self.family.key()
                )));
            }
            if execs.len() > 1 && self.src.time_steps {
                for i in execs {
                    if let Step::Exec(e) = &mut steps[i] {
                        operations.push(format!("{}.{}", t.name, e.name));
                        e.op = Some(operations.len() - 1);
                    }
                }
            }
            transactions.push(Transaction { name: t.name.clone(), weight: t.weight, op, steps });
        }
        let total: f64 = transactions.iter().map(|t| t.weight).sum();
        if total <= 0.0 {
            let first = &self.src.transactions[0];
            return Err(self.fail(first, "the transactions' weights add up to 0"));
        }
        let mut acc = 0.0;
        let cumulative = transactions.iter().map(|t| { acc += t.weight / total; acc }).collect();
        let populate = self.populate()?;
        let (invariants, checks) = self.invariants()?;
        Ok(Scenario {
            name: self.src.name.clone(),
            description: self.src.description.clone(),
            client_slot: self.names.slots["client_id"],
            row_slot: self.names.slots["n"],
            slots: self.slots,
            gens: Arc::new(self.gens),
            commands: mix.commands.into(),
            transactions,
            cumulative,
            populate,
            invariants,
            checks: checks.batch(),
            operations,
        })
    }

    fn key_spaces(&mut self) -> Result<(), Fail> {
        for (name, from) in &self.src.keys {
            self.names.spaces.push(name.clone());
            let k = from.item.get_ref();
            let key = format!("keys.{name}");
            let count = self.constant(from.file, &k.count, &format!("{key}.count"))?;
            if count < 1 {
                return Err(self.fail(from, &format!("{key}.count: must be at least 1, not {count}")));
            }
            let count = count as u64;
            let theta = k.theta.unwrap_or(dist::ZIPFIAN_CONSTANT);
            if !(0.0..1.0).contains(&theta) || theta == 0.0 {
                return Err(self.fail(from, &format!("{key}.theta: must be in (0, 1), not {theta}")));
            }
            let d = k.distribution.as_ref().map(|d| (d.get_ref().as_str(), d.span())).unwrap_or(("uniform", from.item.span()));
            let choice = match d.0 {
                "uniform" => Choice::Uniform,
                "zipfian" => Choice::Zipfian(Zipfian::new(count, theta)),
                "scrambled-zipfian" => Choice::ScrambledZipfian(dist::scrambled_zipfian()),
                "latest" => Choice::Latest(Zipfian::new(count, theta)),
                "sequential" => Choice::Sequential,
                "hotspot" => {
                    let (hot_fraction, hot_share) = (k.hot_fraction.unwrap_or(0.2), k.hot_share.unwrap_or(0.8));
                    if !(0.0..=1.0).contains(&hot_fraction) || !(0.0..=1.0).contains(&hot_share) {
                        return Err(self.fail(from, &format!("{key}: hot_fraction and hot_share must be in [0, 1]")));
                    }
                    Choice::Hotspot { hot_fraction, hot_share }
                }
                "exponential" => {
                    let (p, f) = (k.percentile.unwrap_or(95.0), k.fraction.unwrap_or(0.857_142_857_1));
                    if !(0.0..100.0).contains(&p) || f <= 0.0 {
                        return Err(self.fail(from, &format!("{key}: percentile must be in [0, 100) and fraction > 0")));
                    }
                    Choice::Exponential { gamma: dist::exponential_gamma(count, p, f) }
                }
                other => {
                    return Err(self.fail_at(from.file, d.1, format!(
                        "{key}.distribution: unknown {other:?}: expected uniform, zipfian, scrambled-zipfian, hotspot, latest, exponential or sequential"
                    )));
                }
            };
            let order = match k.order.as_ref().map(|o| o.get_ref().as_str()) {
                None | Some("plain") => Order::Plain,
                Some("hashed") => Order::Hashed,
                Some("bit-reversed") => Order::BitReversed,
                Some(other) => {
                    let span = k.order.as_ref().map(|o| o.span()).unwrap_or(from.item.span());
                    return Err(self.fail_at(from.file, span, format!("{key}.order: unknown {other:?}: expected plain, hashed or bit-reversed")));
                }
            };
            self.gens.spaces.push(Space::new(k.prefix.clone(), order, choice, count));
        }
        Ok(())
    }

    fn size_gens(&mut self) -> Result<(), Fail> {
        for (name, from) in &self.src.sizes {
            self.names.sizes.push(name.clone());
            let s = from.item.get_ref();
            let key = format!("sizes.{name}");
            let d = s.distribution.as_ref().map(|d| d.get_ref().as_str()).unwrap_or("constant");
            let size = match (d, s.length, s.min, s.max) {
                ("constant", Some(n), None, None) => Size::Constant(n),
                ("uniform", None, min, Some(max)) if min.unwrap_or(1) <= max => Size::Uniform { min: min.unwrap_or(1), max },
                ("zipfian", None, min, Some(max)) if min.unwrap_or(1) <= max => {
                    let min = min.unwrap_or(1);
                    Size::Zipfian { min, zipf: Zipfian::new((max - min + 1) as u64, dist::ZIPFIAN_CONSTANT) }
                }
                ("constant", ..) => return Err(self.fail(from, &format!("{key}: a constant size takes `length` alone"))),
                ("uniform" | "zipfian", ..) => return Err(self.fail(from, &format!("{key}: a {d} size takes `max` (and `min`, default 1, ≤ max)"))),
                (other, ..) => return Err(self.fail(from, &format!("{key}.distribution: unknown {other:?}: expected constant, uniform or zipfian"))),
            };
            self.gens.sizes.push(size);
        }
        Ok(())
    }

    fn lets(&self, file: usize, lets: &[Spanned<String>], key: &str) -> Result<Vec<(usize, Expr)>, Fail> {
        lets.iter()
            .enumerate()
            .map(|(i, l)| {
                let (name, text) = l.get_ref().split_once('=').ok_or_else(|| self.fail_at(file, l.span(), format!("{key}.let[{i}]: expected \"name = expression\"")))?;
                let name = name.trim().trim_start_matches(':');
                let e = self.expr(file, &Spanned::new(l.span(), text.trim().to_string()), &format!("{key}.let[{i}]"))?;
                Ok((self.names.slots[name], e))
            })
            .collect()
    }

    /// Compiles a step (following `use`), adding its command to `group`.
    fn step(&self, file: usize, s: &Spanned<StepModel>, key: &str, group: &mut Group) -> Result<Vec<Step>, Fail> {
        let mut out = Vec::new();
        let mut model = s.get_ref().clone();
        let mut file = file;
        let mut span = s.span();
        if let Some(u) = &model.use_ {
            let shared = self.src.steps.get(u.get_ref()).ok_or_else(|| self.fail_at(file, u.span(), format!("{key}.use: no [steps.{}]", u.get_ref())))?;
            let name = model.name.clone().or_else(|| Some(u.get_ref().clone()));
            let lets = std::mem::take(&mut model.lets);
            model = shared.item.get_ref().clone();
            model.name = model.name.or(name);
            if !lets.is_empty() {
                out.push(Step::Let(self.lets(file, &lets, key)?));
            }
            file = shared.file;
            span = shared.item.span();
        }
        if let Some(e) = &model.equals {
            return Err(self.fail_at(file, e.span(), format!("{key}.equals: only an [[invariant]] has `equals`")));
        }
        if !model.lets.is_empty() {
            out.push(Step::Let(self.lets(file, &model.lets, key)?));
        }
        if let Some(sleep) = &model.sleep_us {
            out.push(Step::Sleep(self.expr(file, sleep, &format!("{key}.sleep_us"))?));
        }
        let forms = [model.sql.is_some(), model.redis.is_some(), model.kv.is_some(), model.dynamo.is_some()];
        if forms.iter().any(|f| *f) {
            // A step written for other families only is skipped here (a
            // transaction without any step of this family is an error, below).
            if self.form_of(&model).is_some() {
                let exec = self.exec(file, span, &model, key, group)?;
                out.push(Step::Exec(exec));
            }
        } else if out.is_empty() {
            return Err(self.fail_at(file, span, format!("{key}: a step needs `let`, `sleep_us`, `use` or a command (sql, redis, kv, dynamo)")));
        }
        Ok(out)
    }

    /// The family a step is compiled for: the target's, or for `null:` the first form the step has.
    fn form_of(&self, m: &StepModel) -> Option<Family> {
        let has = |f: Family| match f {
            Family::Sql => m.sql.is_some(),
            Family::Redis => m.redis.is_some(),
            Family::Kv => m.kv.is_some(),
            Family::Dynamo => m.dynamo.is_some(),
            Family::Null => false,
        };
        match self.family {
            Family::Null => [Family::Sql, Family::Redis, Family::Kv, Family::Dynamo].into_iter().find(|f| has(*f)),
            f => has(f).then_some(f),
        }
    }

    fn exec(&self, file: usize, span: std::ops::Range<usize>, m: &StepModel, key: &str, group: &mut Group) -> Result<Exec, Fail> {
        let family = self.form_of(m).ok_or_else(|| {
            self.fail_at(file, span.clone(), format!("{key}: no `{}` form, so this scenario cannot run on a {} target", self.family.key(), self.family.key()))
        })?;
        let name = m.name.clone().unwrap_or_else(|| key.rsplit('.').next().unwrap_or(key).to_string());
        let command = group.commands.len();
        let mut variant = None;
        let args = match family {
            Family::Sql => {
                let sql = m.sql.as_ref().expect("form checked");
                let texts: Vec<String> = match sql.get_ref() {
                    toml::Value::String(s) => vec![s.clone()],
                    toml::Value::Array(a) if !a.is_empty() && a.iter().all(toml::Value::is_str) => {
                        a.iter().filter_map(|v| v.as_str().map(String::from)).collect()
                    }
                    _ => return Err(self.fail_at(file, sql.span(), format!("{key}.sql: expected a statement, or an array of statements with `variant`"))),
                };
                match (&m.variant, texts.len()) {
                    (Some(v), n) => variant = Some((self.expr(file, v, &format!("{key}.variant"))?, n)),
                    (None, 1) => {}
                    (None, _) => return Err(self.fail_at(file, sql.span(), format!("{key}.sql: several statements need `variant` to pick one"))),
                }
                group.commands.extend(texts.into_iter().map(|text| Command::Sql { text }));
                m.params
                    .iter()
                    .enumerate()
                    .map(|(i, p)| self.expr(file, p, &format!("{key}.params[{i}]")).map(Arg::Expr))
                    .collect::<Result<Vec<_>, _>>()?
            }
            Family::Redis => {
                let r = m.redis.as_ref().expect("form checked");
                let commands = self.string_lists(file, r, &format!("{key}.redis"), true)?;
                let mut args = Vec::new();
                let mut lengths = Vec::new();
                for c in &commands {
                    lengths.push(c.len());
                    for a in c {
                        args.push(Arg::Template(self.template(file, r.span(), a, &format!("{key}.redis"), false)?));
                    }
                }
                group.commands.push(Command::Redis { lengths });
                args
            }
            Family::Kv => {
                let r = m.kv.as_ref().expect("form checked");
                let ops = self.string_lists(file, r, &format!("{key}.kv"), false)?;
                let mut args = Vec::new();
                let mut kinds = Vec::new();
                for op in &ops {
                    let kind = match op[0].as_str() {
                        "get" => KvOp::Get,
                        "put" => KvOp::Put,
                        "delete" => KvOp::Delete,
                        "add" => KvOp::Add,
                        "scan" => KvOp::Scan,
                        other => return Err(self.fail_at(file, r.span(), format!("{key}.kv: unknown operation {other:?}: expected get, put, add, delete or scan"))),
                    };
                    if op.len() != kind.arity() + 1 {
                        return Err(self.fail_at(file, r.span(), format!("{key}.kv: {} takes {} argument(s)", op[0], kind.arity())));
                    }
                    kinds.push(kind);
                    for a in &op[1..] {
                        args.push(Arg::Template(self.template(file, r.span(), a, &format!("{key}.kv"), false)?));
                    }
                }
                group.commands.push(Command::Kv { ops: kinds });
                args
            }
            Family::Dynamo | Family::Null => {
                let d = m.dynamo.as_ref().expect("form checked");
                let dm = d.get_ref();
                group.commands.push(Command::Dynamo { action: dm.action.clone(), returns: dm.returns.clone() });
                vec![Arg::Template(self.template(file, d.span(), &dm.request, &format!("{key}.dynamo.request"), true)?)]
            }
        };
        let captures: Vec<usize> = m.capture.iter().map(|n| self.names.slots[n]).collect();
        let exec = Exec { command, variant, args, reads: !captures.is_empty(), captures, expect_rows: m.rows, op: None, name };
        group.steps.push(exec.clone());
        Ok(exec)
    }

    fn template(&self, file: usize, span: std::ops::Range<usize>, text: &str, key: &str, json: bool) -> Result<Template, Fail> {
        Template::compile(text, &self.names, json).map_err(|e| self.fail_at(file, span, format!("{key}: {e}")))
    }

    /// `["GET", "k"]` (one list) or `[["SET", "k", "v"], ["GET", "k"]]` (several).
    fn string_lists(&self, file: usize, v: &Spanned<toml::Value>, key: &str, flat_ok: bool) -> Result<Vec<Vec<String>>, Fail> {
        let bad = || self.fail_at(file, v.span(), format!("{key}: expected {}an array of arrays of strings", if flat_ok { "an array of strings or " } else { "" }));
        let toml::Value::Array(items) = v.get_ref() else { return Err(bad()) };
        if items.is_empty() {
            return Err(bad());
        }
        let strings = |a: &Vec<toml::Value>| -> Option<Vec<String>> {
            (!a.is_empty()).then(|| a.iter().map(|x| x.as_str().map(String::from)).collect::<Option<Vec<_>>>()).flatten()
        };
        if items.iter().all(toml::Value::is_str) {
            return if flat_ok { strings(items).map(|s| vec![s]).ok_or_else(bad) } else { Err(bad()) };
        }
        items.iter().map(|i| i.as_array().and_then(strings).ok_or_else(bad)).collect()
    }

    fn batch(&self, file: usize, steps: &[Spanned<StepModel>], key: &str) -> Result<Group, Fail> {
        let mut group = Group::default();
        for (i, s) in steps.iter().enumerate() {
            self.step(file, s, &format!("{key}[{i}]"), &mut group)?;
        }
        Ok(group)
    }

    fn populate(&self) -> Result<Option<Populate>, Fail> {
        let Some(from) = &self.src.populate else { return Ok(None) };
        let (file, p) = (from.file, from.item.get_ref());
        let rows = match &p.rows {
            None => Expr::Lit(Value::Int(0)),
            Some(r) => {
                let text = match r.get_ref() {
                    toml::Value::Integer(i) => i.to_string(),
                    toml::Value::String(s) => s.clone(),
                    _ => return Err(self.fail_at(file, r.span(), "populate.rows: expected a number or an expression".into())),
                };
                self.expr(file, &Spanned::new(r.span(), text), "populate.rows")?
            }
        };
        let lets = self.lets(file, &p.lets, "populate")?;
        let setup = self.batch(file, &p.setup, "populate.setup")?.batch();
        let finish = self.batch(file, &p.finish, "populate.finish")?.batch();
        if p.rows.is_none() {
            return Ok(Some(Populate { setup, rows, lets, values: Vec::new(), load: Load::Kv, finish }));
        }
        let pick = match self.family {
            Family::Null => [p.sql.is_some(), p.redis.is_some(), p.kv.is_some(), p.dynamo.is_some()]
                .iter()
                .position(|x| *x)
                .map(|i| [Family::Sql, Family::Redis, Family::Kv, Family::Dynamo][i]),
            f => Some(f),
        };
        let missing = || self.fail(from, &format!("populate: no `{}` load, so this scenario cannot be populated on a {} target", self.family.key(), self.family.key()));
        let (load, values) = match pick {
            Some(Family::Sql) => {
                let s = p.sql.as_ref().ok_or_else(missing)?;
                let m = s.get_ref();
                if m.columns.len() != m.values.len() {
                    return Err(self.fail_at(file, s.span(), format!("populate.sql: {} columns but {} values", m.columns.len(), m.values.len())));
                }
                let values = m.values.iter().enumerate().map(|(i, v)| {
                    self.expr(file, &Spanned::new(s.span(), v.clone()), &format!("populate.sql.values[{i}]")).map(Arg::Expr)
                });
                (Load::Sql { table: m.table.clone(), columns: m.columns.clone() }, values.collect::<Result<Vec<_>, _>>()?)
            }
            Some(Family::Redis) => {
                let r = p.redis.as_ref().ok_or_else(missing)?;
                let commands = self.string_lists(file, r, "populate.redis", true)?;
                let lengths = commands.iter().map(Vec::len).collect();
                let values = commands.iter().flatten().map(|a| self.template(file, r.span(), a, "populate.redis", false).map(Arg::Template));
                (Load::Redis { lengths }, values.collect::<Result<Vec<_>, _>>()?)
            }
            Some(Family::Kv) => {
                let r = p.kv.as_ref().ok_or_else(missing)?;
                if r.get_ref().len() != 2 {
                    return Err(self.fail_at(file, r.span(), "populate.kv: expected [key, value]".into()));
                }
                let values = r.get_ref().iter().map(|a| self.template(file, r.span(), a, "populate.kv", false).map(Arg::Template));
                (Load::Kv, values.collect::<Result<Vec<_>, _>>()?)
            }
            Some(Family::Dynamo) => {
                let d = p.dynamo.as_ref().ok_or_else(missing)?;
                let item = self.template(file, d.span(), &d.get_ref().item, "populate.dynamo.item", true)?;
                (Load::Dynamo { table: d.get_ref().table.clone() }, vec![Arg::Template(item)])
            }
            _ => return Err(missing()),
        };
        Ok(Some(Populate { setup, rows, lets, values, load, finish }))
    }

    fn invariants(&self) -> Result<(Vec<Invariant>, Group), Fail> {
        let mut group = Group::default();
        let mut out = Vec::new();
        for (i, from) in self.src.invariants.iter().enumerate() {
            let step = from.item.get_ref();
            let name = step.name.clone().unwrap_or_else(|| format!("invariant {i}"));
            let key = format!("invariant[{i}] ({name})");
            let equals = step.equals.as_ref().ok_or_else(|| self.fail(from, &format!("{key}: an invariant needs `equals`")))?;
            if step.use_.is_some() || !step.lets.is_empty() || step.sleep_us.is_some() || !step.capture.is_empty() {
                return Err(self.fail(from, &format!("{key}: an invariant is one command and `equals` (no use, let, sleep_us or capture)")));
            }
            if self.form_of(step).is_none() {
                // A check this family cannot express (DynamoDB has no sums): skipped, and `verify` says so.
                continue;
            }
            self.exec(from.file, from.item.span(), step, &key, &mut group)?;
            if let Some(check) = group.steps.last_mut() {
                check.reads = true;
            }
            let equals = self.expr(from.file, equals, &format!("{key}.equals"))?;
            out.push(Invariant { name, step: group.steps.len() - 1, equals });
        }
        Ok((out, group))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compile(text: &str, family: Family) -> Result<Scenario, ScenarioError> {
        Source::from_text(Path::new("t.toml"), text.to_string())?.compile(family, &[])
    }

    /// The annotated example of docs/SCENARIOS.md compiles as written.
    #[test]
    fn the_documented_example_compiles() {
        let doc = include_str!("../../../../docs/SCENARIOS.md");
        let start = doc.find("```toml\nname = \"shop\"").expect("the example") + "```toml\n".len();
        // Its include names a file of the reader's own: left out here.
        let text = doc[start..start + doc[start..].find("```").expect("its end")].replace("include = [\"common.toml\"]", "");
        let text = text.as_str();
        let sc = compile(text, Family::Sql).unwrap();
        assert_eq!(sc.name, "shop");
        assert_eq!(sc.transactions.len(), 2);
        assert_eq!(sc.operations, ["shop", "purchase", "purchase.begin", "purchase.buy", "purchase.balance", "purchase.commit", "look"]);
        assert!((sc.cumulative[0] - 0.75).abs() < 1e-9);
        assert_eq!(sc.invariants.len(), 1);
        let populate = sc.populate.as_ref().unwrap();
        assert_eq!(populate.setup.steps.len(), 2);
        assert_eq!(populate.load, Load::Sql { table: "users".into(), columns: vec!["id".into(), "gold".into()] });
        // On Redis nothing of it runs: the error names the transaction.
        let e = compile(text, Family::Redis).unwrap_err();
        assert!(e.message.contains("transaction[0] (purchase): no step has a `redis` form"), "{e}");
    }

    #[test]
    fn steps_of_other_families_are_skipped_and_variants_prepared() {
        let text = r#"
            [vars]
            n_fields = 2
            [keys.k]
            count = 10
            [[transaction]]
            name = "t"
            step = [
              { let = ["f = random(0, 1)"] },
              { sql = "BEGIN" },
              { name = "set", variant = "f", sql = ["UPDATE t SET a = $1", "UPDATE t SET b = $1"], params = ["1"], redis = ["SET", "${key(k)}", "1"] },
              { sql = "COMMIT" },
            ]
        "#;
        let sql = compile(text, Family::Sql).unwrap();
        assert_eq!(sql.commands.len(), 4, "BEGIN, two variants, COMMIT");
        let redis = compile(text, Family::Redis).unwrap();
        assert_eq!(redis.commands.as_ref(), [Command::Redis { lengths: vec![3] }]);
        assert_eq!(redis.operations, ["t"], "one command: the transaction is its only timing");
        let null = compile(text, Family::Null).unwrap();
        assert_eq!(null.commands.len(), 4, "null: takes each step's first form");
    }

    #[test]
    fn each_bad_key_is_named_with_its_line() {
        let cases: [(&str, &str); 8] = [
            ("[[transaction]]\nname = \"t\"\nstep = [{ kv = [[\"fetch\", \"k\"]] }]\n", "t.toml:3: transaction[0] (t).step[0].kv: unknown operation \"fetch\""),
            ("[[transaction]]\nname = \"t\"\nstep = [{ kv = [[\"put\", \"k\"]] }]\n", "t.toml:3: transaction[0] (t).step[0].kv: put takes 2 argument(s)"),
            ("[sizes.s]\ndistribution = \"uniform\"\nmin = 5\nmax = 2\n[[transaction]]\nname = \"t\"\nstep = [{ kv = [[\"get\", \"k\"]] }]\n", "t.toml:1: sizes.s: a uniform size takes `max`"),
            ("[keys.k]\ncount = \"0\"\n[[transaction]]\nname = \"t\"\nstep = [{ kv = [[\"get\", \"k\"]] }]\n", "t.toml:1: keys.k.count: must be at least 1"),
            ("[keys.k]\ncount = 5\norder = \"random\"\n[[transaction]]\nname = \"t\"\nstep = [{ kv = [[\"get\", \"k\"]] }]\n", "t.toml:3: keys.k.order: unknown \"random\""),
            ("[[transaction]]\nname = \"t\"\nweight = -1\nstep = [{ kv = [[\"get\", \"k\"]] }]\n", "transaction[0].weight: must be a number ≥ 0"),
            ("[[transaction]]\nname = \"t\"\nstep = [{ use = \"nope\" }]\n", "t.toml:3: transaction[0] (t).step[0].use: no [steps.nope]"),
            ("[[transaction]]\nname = \"t\"\nstep = [{ kv = [[\"get\", \"k\"]], sleep = 5 }]\n", "unknown field `sleep`"),
        ];
        for (text, want) in cases {
            let e = compile(text, Family::Kv).unwrap_err().to_string();
            assert!(e.contains(want), "{e}\n  does not contain\n{want}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
        assert!(Source::from_text(Path::new("t.toml"), "name = \"x\"\n".into()).unwrap_err().to_string().contains("no [[transaction]]"));
    }

    #[test]
    fn includes_are_read_first_and_overridden() {
        let dir = std::env::temp_dir().join(format!("aggro-scenario-include-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("base.toml"), "[vars]\nx = 1\ny = 2\n[steps.get]\nkv = [[\"get\", \"k${x}\"]]\n").unwrap();
        std::fs::write(dir.join("top.toml"), "include = [\"base.toml\"]\n[vars]\ny = 3\n[[transaction]]\nname = \"t\"\nstep = [{ use = \"get\" }]\n").unwrap();
        let sc = Source::load(&dir.join("top.toml")).unwrap().compile(Family::Kv, &[("x".into(), Value::Int(9))]).unwrap();
        assert_eq!(sc.name, "top");
        let slot = |name: &str| sc.slots.iter().position(|v| *v == Value::Int(match name { "x" => 9, _ => 3 })).is_some();
        assert!(slot("x") && slot("y"), "{:?}", sc.slots);
        std::fs::write(dir.join("loop.toml"), "include = [\"loop.toml\"]\n").unwrap();
        let e = Source::load(&dir.join("loop.toml")).unwrap_err();
        assert!(e.message.contains("deeper than 8"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
