//! Compiling `[populate]` (setup, rows, the bulk load per family, finish)
//! and the `[[invariant]]` checks.

use super::{Compiler, Fail, Group};
use crate::scenario::expr::Expr;
use crate::scenario::{Arg, Invariant, Populate};
use aggro_core::scenario::{Family, Load, Value};
use toml::Spanned;

impl Compiler<'_> {
    pub(super) fn populate(&self) -> Result<Option<Populate>, Fail> {
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
            Family::Null => [p.sql.is_some(), p.redis.is_some(), p.kv.is_some(), p.dynamo.is_some(), p.cql.is_some()]
                .iter()
                .position(|x| *x)
                .map(|i| [Family::Sql, Family::Redis, Family::Kv, Family::Dynamo, Family::Cql][i]),
            f => Some(f),
        };
        let missing = || {
            self.fail(
                from,
                &format!("populate: no `{}` load, so this scenario cannot be populated on a {} target", self.family.key(), self.family.key()),
            )
        };
        let (load, values) = match pick {
            Some(family @ (Family::Sql | Family::Cql)) => {
                let s = if family == Family::Cql { &p.cql } else { &p.sql };
                let s = s.as_ref().ok_or_else(missing)?;
                let (m, form) = (s.get_ref(), family.key());
                if m.columns.len() != m.values.len() {
                    return Err(self.fail_at(file, s.span(), format!("populate.{form}: {} columns but {} values", m.columns.len(), m.values.len())));
                }
                let values = m
                    .values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| self.expr(file, &Spanned::new(s.span(), v.clone()), &format!("populate.{form}.values[{i}]")).map(Arg::Expr));
                (Load::Table { table: m.table.clone(), columns: m.columns.clone() }, values.collect::<Result<Vec<_>, _>>()?)
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

    pub(super) fn invariants(&self) -> Result<(Vec<Invariant>, Group), Fail> {
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
