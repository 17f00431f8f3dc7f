//! The scenario compiler: checks a [`Source`] and builds a [`Scenario`]
//! for one target family — names and slots, key spaces and sizes here, the
//! steps in [`steps`](self::steps), populate and invariants in
//! [`populate`](self::populate).

mod populate;
mod steps;

use super::dist::{self, Choice, Gen, Order, Size, Space, Zipfian};
use super::expr::{self, Cx, Expr, Scope};
use super::file::{From, ScenarioError, Source};
use super::model::StepModel;
use super::{Batch, Exec, Scenario, Step, Transaction};
use aggro_core::rng::Rng;
use aggro_core::scenario::{Command, Family, Value};
use std::collections::HashMap;
use std::sync::Arc;
use toml::Spanned;

impl Source {
    /// Compiles the scenario for `family`; `overrides` replace `[vars]`
    /// (`--set name=value`); `seed` seeds the key spaces' constants.
    pub fn compile(&self, family: Family, overrides: &[(String, Value)]) -> Result<Scenario, ScenarioError> {
        Compiler::new(self, family, overrides)?.scenario()
    }
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

pub(super) struct Compiler<'a> {
    src: &'a Source,
    family: Family,
    names: Names,
    slots: Vec<Value>,
    gens: Gen,
}

type Fail = ScenarioError;

impl<'a> Compiler<'a> {
    pub(super) fn new(src: &'a Source, family: Family, overrides: &[(String, Value)]) -> Result<Self, Fail> {
        let mut c = Compiler { src, family, names: Names::default(), slots: Vec::new(), gens: Gen::default() };
        for (name, from) in &src.vars {
            let Some(v) = super::file::var_value(from.item.get_ref()) else {
                return Err(c.fail(from, &format!("vars.{name}: a var is a number or a string")));
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
        expr::parse(text.get_ref()).and_then(|a| expr::compile(&a, &self.names)).map_err(|e| self.fail_at(file, text.span(), format!("{key}: {e}")))
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

    pub(super) fn scenario(mut self) -> Result<Scenario, Fail> {
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
            // A transaction of only lets and sleeps is one (a pgbench script of meta-commands); one whose
            // commands are all of other families cannot run here.
            let commands = |m: &StepModel| m.sql.is_some() || m.redis.is_some() || m.kv.is_some() || m.dynamo.is_some();
            let has_commands = t.step.iter().map(Spanned::get_ref).any(|m| {
                commands(m) || m.use_.as_ref().and_then(|u| self.src.steps.get(u.get_ref())).is_some_and(|shared| commands(shared.item.get_ref()))
            });
            if execs.is_empty() && has_commands {
                return Err(self.fail(
                    from,
                    &format!(
                        "transaction[{ti}] ({}): no step has a `{}` form, so this scenario cannot run on a {} target",
                        t.name,
                        self.family.key(),
                        self.family.key()
                    ),
                ));
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
        let cumulative = transactions
            .iter()
            .map(|t| {
                acc += t.weight / total;
                acc
            })
            .collect();
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
            abort_on_error: false,
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
            let space = match &k.space {
                None => None,
                Some(_) if !matches!(choice, Choice::Uniform | Choice::ScrambledZipfian(_)) => {
                    return Err(self.fail(from, &format!("{key}.space: only a uniform or scrambled-zipfian chooser is made over a fixed space")));
                }
                Some(v) => match self.constant(from.file, v, &format!("{key}.space"))? {
                    n if n >= 1 => Some(n as u64),
                    n => return Err(self.fail(from, &format!("{key}.space: must be at least 1, not {n}"))),
                },
            };
            self.gens.spaces.push(Space::new(k.prefix.clone(), order, choice, count).over(space));
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
                let (name, text) = l
                    .get_ref()
                    .split_once('=')
                    .ok_or_else(|| self.fail_at(file, l.span(), format!("{key}.let[{i}]: expected \"name = expression\"")))?;
                let name = name.trim().trim_start_matches(':');
                let e = self.expr(file, &Spanned::new(l.span(), text.trim().to_string()), &format!("{key}.let[{i}]"))?;
                Ok((self.names.slots[name], e))
            })
            .collect()
    }
}
