//! The store interface of scenario files: the user's own commands.
//!
//! A scenario (`aggro-workloads`' `scenario` module) is compiled, per target
//! family, into a list of [`Command`]s — the static part of each step: an SQL
//! statement, the shape of a Redis pipeline, a stackdb batch, a DynamoDB
//! action. A target prepares them once per connection
//! ([`ScenarioTarget::connect`]); each request then executes one by index with
//! the arguments the scenario computed ([`ScenarioConn::exec`]) and hands back
//! what it read ([`Reply`]), so a later step can use it.

use crate::outcome::StoreError;
use std::future::Future;
use std::sync::Arc;

/// A value computed by a scenario or read from the store.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Value {
    /// SQL NULL, a missing key, a nil reply.
    #[default]
    Null,
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// Text (keys, field values, replies).
    Text(String),
}

impl Value {
    /// The value as an integer: numbers directly, text when it parses as one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Float(f) => Some(*f as i64),
            Value::Text(t) => t.trim().parse().ok().or_else(|| t.trim().parse::<f64>().ok().map(|f| f as i64)),
            Value::Null => None,
        }
    }

    /// The value as a float: numbers directly, text when it parses as one.
    pub fn as_float(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            Value::Text(t) => t.trim().parse().ok(),
            Value::Null => None,
        }
    }

    /// Appends the value's text form (what is sent to a text protocol) to `out`.
    pub fn write_text(&self, out: &mut String) {
        use std::fmt::Write;
        match self {
            Value::Null => {}
            Value::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Value::Float(f) => {
                let _ = write!(out, "{f}");
            }
            Value::Text(t) => out.push_str(t),
        }
    }

    /// The value's text form.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        self.write_text(&mut s);
        s
    }
}

/// Which kind of commands a target runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// SQL statements with `$n` parameters (PostgreSQL, SQLite and the wire-compatible engines).
    Sql,
    /// Redis commands, pipelined (MULTI/EXEC and EVALSHA are commands like any other).
    Redis,
    /// Batches of get/put/delete/scan on a key-value engine (stackdb).
    Kv,
    /// DynamoDB API actions with a JSON body.
    Dynamo,
    /// CQL statements with `?` markers (Apache Cassandra, ScyllaDB).
    Cql,
    /// The null target: every command succeeds and reads nothing.
    Null,
}

impl Family {
    /// The key a scenario file's step uses for this family.
    pub fn key(self) -> &'static str {
        match self {
            Family::Sql => "sql",
            Family::Redis => "redis",
            Family::Kv => "kv",
            Family::Dynamo => "dynamo",
            Family::Cql => "cql",
            Family::Null => "null",
        }
    }
}

/// One operation of a key-value batch; each takes its arguments in order
/// from the request's argument list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvOp {
    /// Reads a key (1 argument); its value (or Null) goes into the reply.
    Get,
    /// Writes a key (2 arguments: key, value).
    Put,
    /// Deletes a key (1 argument).
    Delete,
    /// Adds to the integer a key holds as text (2 arguments: key, delta; a
    /// missing key holds 0); the new value goes into the reply.
    Add,
    /// Reads up to `count` records from a key on (2 arguments: start key,
    /// count); the number read goes into the reply.
    Scan,
}

impl KvOp {
    /// How many arguments the operation takes.
    pub fn arity(self) -> usize {
        match self {
            KvOp::Get | KvOp::Delete => 1,
            KvOp::Put | KvOp::Add | KvOp::Scan => 2,
        }
    }
}

/// How an SQL statement reaches a server that has a choice (pgbench's `-M`; SQLite always prepares).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SqlProtocol {
    /// Prepared once per connection, each request a Bind and Execute (`-M prepared`).
    #[default]
    Prepared,
    /// Parsed with every request as an unnamed statement, its parameters bound apart (`-M extended`).
    Extended,
    /// Each request's values written into the text, sent as one simple query (`-M simple`, pgbench's
    /// default: `SELECT :a + :b` is then `SELECT 1 + 2`, types read from the literals).
    Simple,
}

impl SqlProtocol {
    /// pgbench's name for it.
    pub fn name(self) -> &'static str {
        match self {
            SqlProtocol::Prepared => "prepared",
            SqlProtocol::Extended => "extended",
            SqlProtocol::Simple => "simple",
        }
    }
}

/// The static part of one step, prepared once per connection.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// An SQL statement; the request's arguments are its `$1…$n`.
    Sql {
        /// The statement text.
        text: String,
        /// How it is sent.
        protocol: SqlProtocol,
    },
    /// A pipeline of Redis commands sent at once; `lengths[i]` arguments of the
    /// request make command `i`. The reply is the last command's, flattened
    /// (for a MULTI … EXEC block, EXEC's array; a nil EXEC is a conflict).
    Redis {
        /// Each command's argument count.
        lengths: Vec<usize>,
    },
    /// One atomic batch of key-value operations.
    Kv {
        /// The operations, in order.
        ops: Vec<KvOp>,
    },
    /// A DynamoDB action; the request's one argument is the JSON body, and
    /// the reply holds the attributes `returns` names of the returned `Item`
    /// (or, for a Query or Scan, the count of items).
    Dynamo {
        /// `GetItem`, `PutItem`, `UpdateItem`, `Query`, `TransactWriteItems`, …
        action: String,
        /// Attribute names read from a returned item, in order.
        returns: Vec<String>,
    },
    /// A CQL statement, prepared once per connection; the request's arguments are its `?` markers,
    /// converted to the types the server gives them. The reply is the first row (a lightweight
    /// transaction's first value is `[applied]`, 1 or 0).
    Cql {
        /// The statement text.
        text: String,
        /// The step's consistency level (one of [`CQL_CONSISTENCIES`]), else the URL's.
        consistency: Option<String>,
    },
}

/// The consistency levels a `cql` step may name.
pub const CQL_CONSISTENCIES: &[&str] = &["any", "one", "two", "three", "quorum", "all", "local_quorum", "each_quorum", "local_one"];

/// What a command read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reply {
    /// The first row's columns (SQL), the reply flattened (Redis), the gets'
    /// values (key-value), the named attributes (DynamoDB).
    pub values: Vec<Value>,
    /// Rows returned or touched, keys found, items returned.
    pub rows: u64,
    /// Whether the caller reads `values` (set by the caller before a command;
    /// when false a target may leave them out and spare their allocation).
    pub want_values: bool,
}

impl Reply {
    /// Empties the reply for reuse (keeping `want_values`).
    pub fn clear(&mut self) {
        self.values.clear();
        self.rows = 0;
    }
}

/// Rows for a bulk load: each row's values, in the load's column order.
pub type Rows = [Vec<Value>];

/// How a scenario's population is loaded in bulk, per family.
#[derive(Clone, Debug, PartialEq)]
pub enum Load {
    /// Rows into a table (PostgreSQL: COPY; SQLite: prepared INSERTs in large transactions;
    /// Cassandra: a prepared INSERT per row, many in flight).
    Table {
        /// The table.
        table: String,
        /// Its columns, in the rows' order.
        columns: Vec<String>,
    },
    /// Redis commands per row, pipelined: the row's values split into
    /// commands of `lengths[i]` arguments.
    Redis {
        /// Each command's argument count.
        lengths: Vec<usize>,
    },
    /// One put per row (key, value), in large batches.
    Kv,
    /// One item per row (the row's one value is the item's JSON), by BatchWriteItem.
    Dynamo {
        /// The table the items go into.
        table: String,
    },
}

/// A backend that runs scenario commands.
pub trait ScenarioTarget: crate::world::WorldStore + 'static {
    /// One loader's connection.
    type Conn: ScenarioConn;

    /// A short description for reports, without credentials.
    fn describe(&self) -> String;

    /// The family of commands it runs.
    fn family(&self) -> Family;

    /// Whether its calls block the calling thread (an embedded database).
    fn blocking(&self) -> bool {
        false
    }

    /// Opens a connection and prepares `commands` on it.
    fn connect(&self, commands: Arc<[Command]>) -> impl Future<Output = Result<Self::Conn, StoreError>> + Send;

    /// Opens one connection that `loaders` loaders share, each with a request in flight: a handle per
    /// loader. Only a protocol that answers pipelined requests in order can (Redis, PostgreSQL); the
    /// others open a connection per loader.
    fn connect_shared(&self, commands: Arc<[Command]>, loaders: usize) -> impl Future<Output = Result<Vec<Self::Conn>, StoreError>> + Send {
        async move {
            if loaders != 1 {
                return Err(StoreError::new(
                    crate::ErrorClass::Data,
                    format!(
                        "{} answers one request at a time per connection: loaders cannot share connections there (Redis and PostgreSQL pipeline them)",
                        self.describe()
                    ),
                ));
            }
            Ok(vec![self.connect(commands).await?])
        }
    }

    /// Drops everything the target holds that no command can drop, before a
    /// population of `rows` rows (stackdb's files, its new table sized for
    /// them; SQL, Redis and DynamoDB scenarios drop their data with their own
    /// setup commands).
    fn reset(&self, _rows: u64) -> impl Future<Output = Result<(), StoreError>> + Send {
        async { Ok(()) }
    }

    /// Loads `rows` in bulk as `load` says (called batch after batch).
    fn load(&self, load: &Load, rows: &Rows) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// One loader's connection: at most one command in flight.
pub trait ScenarioConn: Send + 'static {
    /// Executes prepared command `command` with `args`, filling `reply`
    /// (cleared first). A failure inside an open SQL transaction rolls it back.
    fn exec(&mut self, command: usize, args: &[Value], reply: &mut Reply) -> impl Future<Output = Result<(), StoreError>> + Send;
}
