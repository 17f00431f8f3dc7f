//! Backends aggro can load, one module and one Cargo feature each.
//!
//! A target is named by a URL: `null:`, `stackdb:DIR`, `sqlite:PATH`, `postgres://…`,
//! `redis://HOST:PORT[/DB]` (a cluster's `redis://H:P,H:P…`), `dynamodb://…`, `cassandra://…`.
//! [`TargetUrl::parse`] reads it once; [`open_mobile`] builds the concrete
//! target it names and hands it to a [`MobileVisitor`], so the whole run is compiled for that one
//! backend (no dynamic dispatch on the hot path).
//!
//! # Layout
//! - [`url`]: parsing target URLs into [`TargetUrl`], with clear errors.
//! - `net`: connecting to network targets — one timeout, Nagle off, one wording of connection errors.
//! - `sql_schema`: the SQL SQLite and PostgreSQL share: the world records' tables and the MMO schema.
//! - `reconnect`: re-opening a broken connection at most once a second
//!   (PostgreSQL, Redis, DynamoDB).
//! - `tally`: what each node of a cluster did over a run (Redis Cluster, Cassandra).
//! - `pipeline`: a connection several loaders share, their requests sent in
//!   batches and answered in order (Redis, PostgreSQL).
//! - [`null`]: does nothing, to measure the harness itself.
//! - `stackdb` (feature `stackdb`): aggro's own embedded engine.
//! - `sqlite` (feature `sqlite`): rusqlite, WAL, `BEGIN IMMEDIATE` transactions.
//! - `postgres` (feature `postgres`): tokio-postgres, and a small client of
//!   our own (`postgres::wire`) for the mobile loaders' hot path; also the path for
//!   wire-compatible CockroachDB/YugabyteDB/Spanner-PG (40001 is a conflict).
//! - `redis` (feature `redis`): a small RESP client of our own, MULTI/EXEC.
//! - `dynamodb` (feature `dynamodb`): the DynamoDB JSON API with SigV4 over
//!   HTTP/1.1 (Alternator, moto), `TransactWriteItems` + `GetItem`.
//! - `cassandra` (feature `cassandra`, off by default): the `scylla` driver, prepared statements,
//!   lightweight transactions, per-node figures.
#![deny(missing_docs)]

#[cfg(feature = "cassandra")]
pub mod cassandra;
#[cfg(feature = "dynamodb")]
pub mod dynamodb;
#[cfg(any(feature = "postgres", feature = "redis", feature = "dynamodb"))]
pub mod net;
pub mod null;
#[cfg(any(feature = "postgres", feature = "redis"))]
mod pipeline;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(any(feature = "postgres", feature = "redis", feature = "dynamodb"))]
mod reconnect;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub mod sql_schema;
#[cfg(feature = "sqlite")]
pub mod sqlite;
#[cfg(feature = "stackdb")]
pub mod stackdb;
#[cfg(any(feature = "redis", feature = "cassandra"))]
mod tally;
pub mod url;

use aggro_core::mmo::MmoTarget;
use aggro_core::mobile::MobileTarget;
use aggro_core::scenario::ScenarioTarget;
use std::future::Future;
pub use url::{TargetUrl, UrlError};

/// Something to do with a concrete mobile target, whatever its type.
pub trait MobileVisitor {
    /// What the visit produces.
    type Output;
    /// Called once with the target the URL named.
    fn visit<T: MobileTarget>(self, target: T) -> impl Future<Output = Self::Output>;
}

/// Something to do with a concrete scenario target, whatever its type.
pub trait ScenarioVisitor {
    /// What the visit produces.
    type Output;
    /// Called once with the target the URL named.
    fn visit<T: ScenarioTarget>(self, target: T) -> impl Future<Output = Self::Output>;
}

/// Something to do with a concrete MMO target, whatever its type.
pub trait MmoVisitor {
    /// What the visit produces.
    type Output;
    /// Called once with the target the URL named.
    fn visit<T: MmoTarget>(self, target: T) -> impl Future<Output = Self::Output>;
}

/// Builds the target a parsed URL names and calls `$visit` with it; `$null`
/// handles `null:` (its trace file bound to `$trace`).
macro_rules! dispatch {
    ($url:expr, $visitor:ident, |$trace:ident| $null:expr) => {
        match $url.clone() {
            TargetUrl::Null { trace: $trace } => $null,
            #[cfg(feature = "cassandra")]
            TargetUrl::Cassandra { nodes, keyspace, consistency } => {
                let level = cassandra::consistency(&consistency).ok_or_else(|| UrlError::Bad {
                    url: format!("cassandra://…?consistency={consistency}"),
                    why: format!("unknown consistency {consistency}"),
                })?;
                Ok($visitor.visit(cassandra::CassandraTarget::new(nodes, keyspace, level)).await)
            }
            #[cfg(feature = "stackdb")]
            TargetUrl::StackDb { path, immediate } => Ok($visitor.visit(stackdb::StackDbTarget::new(path, immediate)).await),
            #[cfg(feature = "sqlite")]
            TargetUrl::Sqlite { path, sync } => Ok($visitor.visit(sqlite::SqliteTarget::new(path, sync)).await),
            #[cfg(feature = "postgres")]
            TargetUrl::Postgres { url } => Ok($visitor.visit(postgres::PostgresTarget::new(url)).await),
            #[cfg(feature = "redis")]
            TargetUrl::Redis { addr, db } => Ok($visitor.visit(redis::RedisTarget::new(addr, db)).await),
            #[cfg(feature = "redis")]
            TargetUrl::RedisCluster { seeds } => Ok($visitor.visit(redis::RedisTarget::cluster(seeds)).await),
            #[cfg(feature = "dynamodb")]
            TargetUrl::DynamoDb { addr, table, region } => Ok($visitor.visit(dynamodb::DynamoTarget::new(addr, table, region)).await),
            #[allow(unreachable_patterns)]
            other => Err(UrlError::NotBuilt(other.scheme())),
        }
    };
}

/// Builds the target `url` names and passes it to `visitor`.
pub async fn open_mobile<V: MobileVisitor>(url: &TargetUrl, visitor: V) -> Result<V::Output, UrlError> {
    dispatch!(url, visitor, |trace| match trace {
        None => Ok(visitor.visit(null::NullTarget::default()).await),
        Some(_) => Err(UrlError::Bad { url: "null:?trace=…".into(), why: "null:?trace= traces scenario commands only".into() }),
    })
}

/// Builds the target `url` names and passes it to `visitor` (the null
/// target holds no world, so it is refused).
#[cfg_attr(
    not(any(feature = "stackdb", feature = "sqlite", feature = "postgres", feature = "redis", feature = "dynamodb", feature = "cassandra")),
    allow(unused_variables)
)]
pub async fn open_mmo<V: MmoVisitor>(url: &TargetUrl, visitor: V) -> Result<V::Output, UrlError> {
    dispatch!(url, visitor, |_trace| Err(UrlError::Bad { url: "null:".into(), why: "null: holds no MMO world".into() }))
}

/// Builds the target `url` names and passes it to `visitor`.
pub async fn open_scenario<V: ScenarioVisitor>(url: &TargetUrl, visitor: V) -> Result<V::Output, UrlError> {
    dispatch!(url, visitor, |trace| Ok(visitor.visit(null::NullTarget::tracing(trace)).await))
}
