//! Compiling steps: `use` followed, each family's command form (SQL,
//! Redis, key-value, DynamoDB, CQL) checked and collected into the batch.

use super::{Compiler, Fail, Group};
use crate::scenario::model::StepModel;
use crate::scenario::template::Template;
use crate::scenario::{Arg, Exec, Step};
use aggro_core::scenario::{CQL_CONSISTENCIES, Command, Family, KvOp, SqlProtocol};
use toml::Spanned;

impl Compiler<'_> {
    /// Compiles a step (following `use`), adding its command to `group`.
    pub(super) fn step(&self, file: usize, s: &Spanned<StepModel>, key: &str, group: &mut Group) -> Result<Vec<Step>, Fail> {
        let mut out = Vec::new();
        let mut model = s.get_ref().clone();
        let mut file = file;
        let mut span = s.span();
        if let Some(u) = &model.use_ {
            let shared =
                self.src.steps.get(u.get_ref()).ok_or_else(|| self.fail_at(file, u.span(), format!("{key}.use: no [steps.{}]", u.get_ref())))?;
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
        let forms = [model.sql.is_some(), model.redis.is_some(), model.kv.is_some(), model.dynamo.is_some(), model.cql.is_some()];
        if forms.iter().any(|f| *f) {
            // A step written for other families only is skipped here (a
            // transaction without any step of this family is an error, below).
            if self.form_of(&model).is_some() {
                let exec = self.exec(file, span, &model, key, group)?;
                out.push(Step::Exec(exec));
            }
        } else if out.is_empty() {
            return Err(self.fail_at(file, span, format!("{key}: a step needs `let`, `sleep_us`, `use` or a command (sql, redis, kv, dynamo, cql)")));
        }
        if let (Some(when), false) = (&s.get_ref().when, out.is_empty()) {
            let guard = Step::When(self.expr(file, when, &format!("{key}.when"))?, out.len());
            out.insert(0, guard);
        }
        Ok(out)
    }

    /// The family a step is compiled for: the target's, or for `null:` the first form the step has.
    pub(super) fn form_of(&self, m: &StepModel) -> Option<Family> {
        let has = |f: Family| match f {
            Family::Sql => m.sql.is_some(),
            Family::Redis => m.redis.is_some(),
            Family::Kv => m.kv.is_some(),
            Family::Dynamo => m.dynamo.is_some(),
            Family::Cql => m.cql.is_some(),
            Family::Null => false,
        };
        match self.family {
            Family::Null => [Family::Sql, Family::Redis, Family::Kv, Family::Dynamo, Family::Cql].into_iter().find(|f| has(*f)),
            f => has(f).then_some(f),
        }
    }

    pub(super) fn exec(&self, file: usize, span: std::ops::Range<usize>, m: &StepModel, key: &str, group: &mut Group) -> Result<Exec, Fail> {
        let family = self.form_of(m).ok_or_else(|| {
            self.fail_at(
                file,
                span.clone(),
                format!("{key}: no `{}` form, so this scenario cannot run on a {} target", self.family.key(), self.family.key()),
            )
        })?;
        let name = m.name.clone().unwrap_or_else(|| key.rsplit('.').next().unwrap_or(key).to_string());
        let command = group.commands.len();
        let mut variant = None;
        let args = match family {
            Family::Sql | Family::Cql => {
                let (form, texts) = self.statements(file, m, family, key)?;
                match (&m.variant, texts.len()) {
                    (Some(v), n) => variant = Some((self.expr(file, v, &format!("{key}.variant"))?, n)),
                    (None, 1) => {}
                    (None, _) => {
                        return Err(self.fail_at(
                            file,
                            form.span(),
                            format!("{key}.{}: several statements need `variant` to pick one", family.key()),
                        ));
                    }
                }
                let consistency = self.consistency(file, m, key)?;
                group.commands.extend(texts.into_iter().map(|text| match family {
                    Family::Cql => Command::Cql { text, consistency: consistency.clone() },
                    _ => Command::Sql { text, protocol: SqlProtocol::Prepared },
                }));
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
                        other => {
                            return Err(self.fail_at(
                                file,
                                r.span(),
                                format!("{key}.kv: unknown operation {other:?}: expected get, put, add, delete or scan"),
                            ));
                        }
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

    /// A step's `consistency`: a level CQL knows, on a step with a `cql` form.
    fn consistency(&self, file: usize, m: &StepModel, key: &str) -> Result<Option<String>, Fail> {
        let Some(c) = &m.consistency else { return Ok(None) };
        let level = c.get_ref().to_ascii_lowercase();
        if m.cql.is_none() {
            return Err(self.fail_at(file, c.span(), format!("{key}.consistency: only a `cql` step has a consistency level")));
        }
        if !CQL_CONSISTENCIES.contains(&level.as_str()) {
            return Err(self.fail_at(
                file,
                c.span(),
                format!("{key}.consistency: unknown {:?}: expected one of {}", c.get_ref(), CQL_CONSISTENCIES.join(", ")),
            ));
        }
        Ok(Some(level))
    }

    /// An SQL or CQL step's statement, or its statements one per `variant`.
    fn statements<'m>(&self, file: usize, m: &'m StepModel, family: Family, key: &str) -> Result<(&'m Spanned<toml::Value>, Vec<String>), Fail> {
        let form = if family == Family::Cql { &m.cql } else { &m.sql };
        let form = form.as_ref().expect("form checked");
        let texts = match form.get_ref() {
            toml::Value::String(s) => vec![s.clone()],
            toml::Value::Array(a) if !a.is_empty() && a.iter().all(toml::Value::is_str) => {
                a.iter().filter_map(|v| v.as_str().map(String::from)).collect()
            }
            _ => {
                return Err(self.fail_at(
                    file,
                    form.span(),
                    format!("{key}.{}: expected a statement, or an array of statements with `variant`", family.key()),
                ));
            }
        };
        Ok((form, texts))
    }

    pub(super) fn template(&self, file: usize, span: std::ops::Range<usize>, text: &str, key: &str, json: bool) -> Result<Template, Fail> {
        Template::compile(text, &self.names, json).map_err(|e| self.fail_at(file, span, format!("{key}: {e}")))
    }

    /// `["GET", "k"]` (one list) or `[["SET", "k", "v"], ["GET", "k"]]` (several).
    pub(super) fn string_lists(&self, file: usize, v: &Spanned<toml::Value>, key: &str, flat_ok: bool) -> Result<Vec<Vec<String>>, Fail> {
        let bad = || {
            self.fail_at(
                file,
                v.span(),
                format!("{key}: expected {}an array of arrays of strings", if flat_ok { "an array of strings or " } else { "" }),
            )
        };
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

    pub(super) fn batch(&self, file: usize, steps: &[Spanned<StepModel>], key: &str) -> Result<Group, Fail> {
        let mut group = Group::default();
        for (i, s) in steps.iter().enumerate() {
            if let Some(when) = &s.get_ref().when {
                return Err(self.fail_at(file, when.span(), format!("{key}[{i}].when: only a transaction's steps run conditionally")));
            }
            self.step(file, s, &format!("{key}[{i}]"), &mut group)?;
        }
        Ok(group)
    }
}
