//! The store interface of the mobile-game transaction workload (after the DynamoDB/Spanner tool).
//!
//! Each user `n` has two records: `User<n>` holding `Gold` (10,000 at
//! population) and `UserItem<n>` holding `NumTickets` (0). Ids passed here
//! are the *stored* ids, after any key spreading. A target implements
//! [`MobileTarget`] (schema, population, scans) and hands each loader its own
//! [`MobileConn`] (one connection, one request in flight).

use crate::outcome::StoreError;
use std::future::Future;

/// Gold every user starts with.
pub const INITIAL_GOLD: i64 = 10_000;
/// Gold moved by one transaction.
pub const GOLD_STEP: i64 = 5;

/// One user's two records as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserRow {
    /// Stored id (after spreading).
    pub id: u32,
    /// `User<id>.Gold`.
    pub gold: i64,
    /// `UserItem<id>.NumTickets`; `None` when the record is missing.
    pub tickets: Option<i64>,
}

/// Joins the two records of each user, read apart by a key-value scan:
/// `gold` and `tickets` map stored ids to the parsed number (None when the
/// record holds no number). A user without a numeric Gold is an error.
pub fn join_rows(
    gold: std::collections::HashMap<u32, Option<i64>>,
    tickets: &std::collections::HashMap<u32, Option<i64>>,
) -> Result<Vec<UserRow>, StoreError> {
    gold.into_iter()
        .map(|(id, g)| {
            let gold = g.ok_or_else(|| StoreError::new(crate::ErrorClass::Data, format!("User{id} does not hold a number")))?;
            Ok(UserRow { id, gold, tickets: tickets.get(&id).copied().flatten() })
        })
        .collect()
}

/// A backend that can hold the mobile workload's data (and its world record).
pub trait MobileTarget: crate::world::WorldStore + 'static {
    /// One loader's connection.
    type Conn: MobileConn;

    /// A short description for reports, without credentials.
    fn describe(&self) -> String;

    /// Whether its calls block the calling thread (an embedded database)
    /// rather than await I/O; such targets get a thread per loader.
    fn blocking(&self) -> bool {
        false
    }

    /// Opens a connection.
    fn connect(&self) -> impl Future<Output = Result<Self::Conn, StoreError>> + Send;

    /// Drops any previous data (the `mobile` world record first), creates the schema and inserts every id in
    /// `ids` with the initial values. Calls `progress` with the number of
    /// users inserted so far, now and then.
    fn populate(&self, ids: &[u32], progress: &(dyn Fn(u64) + Sync)) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Every user, for verification, in any order.
    fn scan(&self) -> impl Future<Output = Result<Vec<UserRow>, StoreError>> + Send;
}

/// One loader's connection: at most one request in flight.
pub trait MobileConn: Send + 'static {
    /// Atomically: `Gold -= 5` and `NumTickets += 1` for one user.
    fn transfer(&mut self, id: u32) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// A transaction adding `GOLD_STEP` gold to one user.
    fn add_gold(&mut self, id: u32) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// A strongly consistent read of one user's gold.
    fn read_gold(&mut self, id: u32) -> impl Future<Output = Result<i64, StoreError>> + Send;
}
