//! A scenario file (TOML; docs/SCENARIOS.md) as read: [`Source::load`]
//! reads a file and its `include`s, later files overriding earlier ones;
//! [`Source::compile`] hands it to the compiler (`compile.rs`) for one
//! target family. Every error is one line naming the file, the line and the key.

use super::model::{FileModel, KeysModel, PopulateModel, SizeModel, StepModel, TxnModel};
use aggro_core::scenario::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
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

/// An item with the file it came from.
pub(super) struct From<T> {
    pub(super) file: usize,
    pub(super) item: Spanned<T>,
}

/// A scenario as read: its files and their items, includes merged.
pub struct Source {
    pub(super) files: Vec<(PathBuf, String)>,
    pub(super) name: String,
    pub(super) description: String,
    pub(super) vars: BTreeMap<String, From<toml::Value>>,
    pub(super) keys: BTreeMap<String, From<KeysModel>>,
    pub(super) sizes: BTreeMap<String, From<SizeModel>>,
    pub(super) steps: BTreeMap<String, From<StepModel>>,
    pub(super) populate: Option<From<PopulateModel>>,
    pub(super) transactions: Vec<From<TxnModel>>,
    pub(super) invariants: Vec<From<StepModel>>,
    /// Whether each command of a transaction of several is timed apart
    /// (pgbench times statements only with `-r`).
    pub(super) time_steps: bool,
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Source")
            .field("name", &self.name)
            .field("files", &self.files.iter().map(|(p, _)| p).collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// A `[vars]` entry's value: a number or a string (a boolean as 0 or 1); `None` for anything else.
pub fn var_value(v: &toml::Value) -> Option<Value> {
    match v {
        toml::Value::Integer(i) => Some(Value::Int(*i)),
        toml::Value::Float(f) => Some(Value::Float(*f)),
        toml::Value::String(s) => Some(Value::Text(s.clone())),
        toml::Value::Boolean(b) => Some(Value::Int(*b as i64)),
        _ => None,
    }
}

/// The largest scenario file (or include) read: far beyond any scenario, well short of exhausting
/// memory on a file that never ends (`/dev/zero`).
const MAX_FILE_BYTES: u64 = 16 << 20;

/// A scenario file's text, refused past 16 MiB.
pub fn read_capped(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let mut text = String::new();
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read: {e}"))?;
    file.take(MAX_FILE_BYTES + 1).read_to_string(&mut text).map_err(|e| format!("cannot read: {e}"))?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(format!("more than {} MiB: not a scenario file", MAX_FILE_BYTES >> 20));
    }
    Ok(text)
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

    /// The names of its `[vars]`, which `--set` may replace.
    pub fn var_names(&self) -> impl Iterator<Item = &str> {
        self.vars.keys().map(String::as_str)
    }

    /// Its `[vars]` with `overrides` (`--set`) applied, each as its value's text (a var that is not a
    /// number or a string, which compiling refuses, left out).
    pub fn resolved_vars(&self, overrides: &[(String, Value)]) -> BTreeMap<String, String> {
        let mut vars: BTreeMap<String, String> =
            self.vars.iter().filter_map(|(name, from)| Some((name.clone(), var_value(from.item.get_ref())?.to_text()))).collect();
        for (name, v) in overrides.iter().filter(|(name, _)| self.vars.contains_key(name)) {
            vars.insert(name.clone(), v.to_text());
        }
        vars
    }

    fn read(&mut self, path: &Path, text: Option<String>, depth: usize) -> Result<(), ScenarioError> {
        let at = path.display().to_string();
        if depth > 8 {
            return Err(ScenarioError { at, message: "includes nest deeper than 8 (a cycle?)".into() });
        }
        let text = match text {
            Some(t) => t,
            None => read_capped(path).map_err(|message| ScenarioError { at: at.clone(), message })?,
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

    pub(super) fn at<T>(&self, from: &From<T>) -> String {
        self.at_span(from.file, from.item.span())
    }

    pub(super) fn at_span(&self, file: usize, span: std::ops::Range<usize>) -> String {
        let (path, text) = &self.files[file];
        format!("{}:{}", path.display(), line_of(text, span.start))
    }
}

/// A `--set name=value`: integers and floats are numbers, anything else text.
pub fn parse_override(text: &str) -> Result<(String, Value), String> {
    let (name, value) = text.split_once('=').ok_or_else(|| format!("{text:?}: expected NAME=VALUE"))?;
    let name = name.trim();
    let identifier = name.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_') && name.chars().all(|c| c.is_alphanumeric() || c == '_');
    if !identifier {
        return Err(format!("{text:?}: {name:?} is not a variable name (letters, digits and _, not first a digit)"));
    }
    let v =
        value.parse::<i64>().map(Value::Int).or_else(|_| value.parse::<f64>().map(Value::Float)).unwrap_or_else(|_| Value::Text(value.to_string()));
    Ok((name.to_string(), v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;
    use aggro_core::scenario::Family;
    use aggro_core::scenario::{Command, Load};

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
        assert_eq!(populate.load, Load::Table { table: "users".into(), columns: vec!["id".into(), "gold".into()] });
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
    fn a_cql_step_carries_its_consistency_and_a_bad_one_is_named() {
        let step =
            |extra: &str| format!("[[transaction]]\nname = \"t\"\nstep = [{{ cql = \"SELECT 1 FROM t WHERE k = ?\", params = [\"1\"]{extra} }}]\n");
        let sc = compile(&step(", consistency = \"ONE\""), Family::Cql).unwrap();
        assert_eq!(sc.commands.as_ref(), [Command::Cql { text: "SELECT 1 FROM t WHERE k = ?".into(), consistency: Some("one".into()) }]);
        assert_eq!(
            compile(&step(""), Family::Cql).unwrap().commands.as_ref(),
            [Command::Cql { text: "SELECT 1 FROM t WHERE k = ?".into(), consistency: None }]
        );
        let e = compile(&step(", consistency = \"most\""), Family::Cql).unwrap_err().to_string();
        assert!(e.contains(":3:") && e.contains("consistency: unknown \"most\"") && e.contains("local_quorum"), "{e}");
        let sql = "[[transaction]]\nname = \"t\"\nstep = [{ sql = \"SELECT 1\", consistency = \"one\" }]\n";
        assert!(compile(sql, Family::Sql).unwrap_err().to_string().contains("only a `cql` step"));
    }

    #[test]
    fn each_bad_key_is_named_with_its_line() {
        let cases: [(&str, &str); 8] = [
            (
                "[[transaction]]\nname = \"t\"\nstep = [{ kv = [[\"fetch\", \"k\"]] }]\n",
                "t.toml:3: transaction[0] (t).step[0].kv: unknown operation \"fetch\"",
            ),
            (
                "[[transaction]]\nname = \"t\"\nstep = [{ kv = [[\"put\", \"k\"]] }]\n",
                "t.toml:3: transaction[0] (t).step[0].kv: put takes 2 argument(s)",
            ),
            (
                "[sizes.s]\ndistribution = \"uniform\"\nmin = 5\nmax = 2\n[[transaction]]\nname = \"t\"\nstep = [{ kv = [[\"get\", \"k\"]] }]\n",
                "t.toml:1: sizes.s: a uniform size takes `max`",
            ),
            (
                "[keys.k]\ncount = \"0\"\n[[transaction]]\nname = \"t\"\nstep = [{ kv = [[\"get\", \"k\"]] }]\n",
                "t.toml:1: keys.k.count: must be at least 1",
            ),
            (
                "[keys.k]\ncount = 5\norder = \"random\"\n[[transaction]]\nname = \"t\"\nstep = [{ kv = [[\"get\", \"k\"]] }]\n",
                "t.toml:3: keys.k.order: unknown \"random\"",
            ),
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
        std::fs::write(dir.join("top.toml"), "include = [\"base.toml\"]\n[vars]\ny = 3\n[[transaction]]\nname = \"t\"\nstep = [{ use = \"get\" }]\n")
            .unwrap();
        let sc = Source::load(&dir.join("top.toml")).unwrap().compile(Family::Kv, &[("x".into(), Value::Int(9))]).unwrap();
        assert_eq!(sc.name, "top");
        let slot = |name: &str| {
            sc.slots
                .iter()
                .position(|v| {
                    *v == Value::Int(match name {
                        "x" => 9,
                        _ => 3,
                    })
                })
                .is_some()
        };
        assert!(slot("x") && slot("y"), "{:?}", sc.slots);
        std::fs::write(dir.join("loop.toml"), "include = [\"loop.toml\"]\n").unwrap();
        let e = Source::load(&dir.join("loop.toml")).unwrap_err();
        assert!(e.message.contains("deeper than 8"), "{e}");
        std::fs::write(dir.join("endless.toml"), "include = [\"/dev/zero\"]\n").unwrap();
        let e = Source::load(&dir.join("endless.toml")).unwrap_err();
        assert!(e.at == "/dev/zero" && e.message.contains("more than 16 MiB"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
