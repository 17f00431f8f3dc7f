//! The scenario file format as TOML reads it: one model per table, every
//! item with its span so errors can name the line (docs/SCENARIOS.md).

use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

/// One file: its header, `include`s, and every table it may hold.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct FileModel {
    pub(super) name: Option<String>,
    pub(super) description: Option<String>,
    #[serde(default)]
    pub(super) include: Vec<String>,
    #[serde(default)]
    pub(super) vars: BTreeMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    pub(super) keys: BTreeMap<String, Spanned<KeysModel>>,
    #[serde(default)]
    pub(super) sizes: BTreeMap<String, Spanned<SizeModel>>,
    #[serde(default)]
    pub(super) steps: BTreeMap<String, Spanned<StepModel>>,
    pub(super) populate: Option<Spanned<PopulateModel>>,
    #[serde(default)]
    pub(super) transaction: Vec<Spanned<TxnModel>>,
    #[serde(default)]
    pub(super) invariant: Vec<Spanned<StepModel>>,
}

/// `[keys.NAME]`: a key space and its distribution.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct KeysModel {
    pub(super) count: Spanned<toml::Value>,
    /// The records a uniform or scrambled-zipfian chooser is made over (YCSB's fixed generators).
    pub(super) space: Option<Spanned<toml::Value>>,
    pub(super) distribution: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) prefix: String,
    pub(super) order: Option<Spanned<String>>,
    pub(super) theta: Option<f64>,
    pub(super) hot_fraction: Option<f64>,
    pub(super) hot_share: Option<f64>,
    pub(super) percentile: Option<f64>,
    pub(super) fraction: Option<f64>,
}

/// `[sizes.NAME]`: a field-length generator.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SizeModel {
    pub(super) distribution: Option<Spanned<String>>,
    pub(super) length: Option<usize>,
    pub(super) min: Option<usize>,
    pub(super) max: Option<usize>,
}

/// A step: `use` of a named step, `let`s, and one command form per family.
#[derive(Deserialize, Clone, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct StepModel {
    pub(super) name: Option<String>,
    #[serde(rename = "use")]
    pub(super) use_: Option<Spanned<String>>,
    #[serde(rename = "let", default)]
    pub(super) lets: Vec<Spanned<String>>,
    pub(super) sql: Option<Spanned<toml::Value>>,
    #[serde(default)]
    pub(super) params: Vec<Spanned<String>>,
    pub(super) redis: Option<Spanned<toml::Value>>,
    pub(super) kv: Option<Spanned<toml::Value>>,
    pub(super) dynamo: Option<Spanned<DynamoModel>>,
    /// A CQL statement (or one per `variant`); its `?` markers take `params`, as an SQL step's `$n`.
    pub(super) cql: Option<Spanned<toml::Value>>,
    /// The CQL statement's consistency level, instead of the URL's.
    pub(super) consistency: Option<Spanned<String>>,
    pub(super) variant: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) capture: Vec<String>,
    pub(super) rows: Option<u64>,
    pub(super) sleep_us: Option<Spanned<String>>,
    /// Runs the step only when this expression is true (pgbench's `\if`).
    pub(super) when: Option<Spanned<String>>,
    /// Only in `[[invariant]]`: what the step's first value must equal.
    pub(super) equals: Option<Spanned<String>>,
}

/// A DynamoDB step: the action and its JSON request template.
#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct DynamoModel {
    pub(super) action: String,
    pub(super) request: String,
    #[serde(default)]
    pub(super) returns: Vec<String>,
}

/// `[[transaction]]`: a weighted, ordered list of steps.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TxnModel {
    pub(super) name: String,
    #[serde(default = "one")]
    pub(super) weight: f64,
    #[serde(default)]
    pub(super) step: Vec<Spanned<StepModel>>,
}

/// A transaction's weight when none is given.
fn one() -> f64 {
    1.0
}

/// `[populate]`: setup, rows and their `let`s, one bulk load per family, finish.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PopulateModel {
    pub(super) rows: Option<Spanned<toml::Value>>,
    #[serde(rename = "let", default)]
    pub(super) lets: Vec<Spanned<String>>,
    #[serde(default)]
    pub(super) setup: Vec<Spanned<StepModel>>,
    #[serde(default)]
    pub(super) finish: Vec<Spanned<StepModel>>,
    pub(super) sql: Option<Spanned<SqlLoadModel>>,
    pub(super) redis: Option<Spanned<toml::Value>>,
    pub(super) kv: Option<Spanned<Vec<String>>>,
    pub(super) dynamo: Option<Spanned<DynamoLoadModel>>,
    pub(super) cql: Option<Spanned<SqlLoadModel>>,
}

/// `populate.sql` and `populate.cql`: the table, its columns and each column's expression.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SqlLoadModel {
    pub(super) table: String,
    pub(super) columns: Vec<String>,
    pub(super) values: Vec<String>,
}

/// `populate.dynamo`: the table and an item template.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DynamoLoadModel {
    pub(super) table: String,
    pub(super) item: String,
}
