//! `dynamodb://HOST:PORT[/TABLE][?region=R]` — the DynamoDB JSON API over
//! plain HTTP: ScyllaDB Alternator, moto's server (the tests'), LocalStack.
//!
//! One table with string keys `PK` and `SK`, as in the DynamoDB/Spanner tool: item
//! `User<n>`/`User<n>` holds `Gold`, item `UserItem<n>`/`UserItem<n>` holds
//! `NumTickets`. A transfer is one `TransactWriteItems` of two updates; the
//! consistent-read workload adds gold with a one-item `TransactWriteItems`
//! (2 WCU, as the seed's budget assumed) and reads with
//! `GetItem(ConsistentRead)`. `TransactionConflict` is a conflict,
//! throughput errors are `throttled`. Requests are signed with SigV4
//! (credentials from the standard AWS environment variables).
//!
//! The client is our own (a keep-alive HTTP/1.1 connection per loader):
//! it costs a few microseconds per request and retries nothing behind the
//! measurement's back. TLS endpoints (AWS itself) are not supported yet.

pub mod http;
mod mmo;
mod scenario;
pub mod sigv4;
mod table;

pub use mmo::DynamoMmoConn;
pub use scenario::DynamoScenarioConn;

use crate::reconnect::Reconnecting;
use aggro_core::mobile::{INITIAL_GOLD, MobileConn, MobileTarget, UserRow};
use aggro_core::world::WorldStore;
use aggro_core::{ErrorClass, StoreError};
use serde_json::{Value, json};
use std::fmt::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Default table name.
pub const DEFAULT_TABLE: &str = "aggro_mobile";

/// A DynamoDB-API endpoint and table.
#[derive(Clone, Debug)]
pub struct DynamoTarget {
    addr: String,
    table: String,
    region: Option<String>,
}

impl DynamoTarget {
    /// A target at `addr` using `table`.
    pub fn new(addr: String, table: String, region: Option<String>) -> Self {
        Self { addr, table, region }
    }

    fn client(&self) -> Client {
        Client {
            addr: self.addr.clone(),
            signer: sigv4::Signer::from_env(self.region.clone()),
            live: Reconnecting::idle(),
            date: (Instant::now() - Duration::from_secs(10), String::new()),
            body: Vec::with_capacity(1024),
        }
    }
}

impl DynamoTarget {
    /// A client whose connection is open already, so an unreachable
    /// endpoint fails here rather than at the first request.
    async fn connected_client(&self) -> Result<Client, StoreError> {
        let mut client = self.client();
        client.live = Reconnecting::new(http::Connection::connect(&self.addr).await?);
        Ok(client)
    }
}

/// A signed, re-connecting client.
struct Client {
    addr: String,
    signer: sigv4::Signer,
    live: Reconnecting<http::Connection>,
    /// `X-Amz-Date`, refreshed every second.
    date: (Instant, String),
    /// The last response body (swapped out of the connection's buffer).
    body: Vec<u8>,
}

fn classify(status: u16, body: &[u8]) -> StoreError {
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let kind = v["__type"].as_str().unwrap_or("").rsplit('#').next().unwrap_or("").to_string();
    let message = v["message"].as_str().or_else(|| v["Message"].as_str()).unwrap_or("").to_string();
    let text = format!("{kind} (HTTP {status}): {message}");
    let class = match kind.as_str() {
        "TransactionCanceledException" => {
            let codes: Vec<&str> =
                v["CancellationReasons"].as_array().map(|a| a.iter().filter_map(|r| r["Code"].as_str()).collect()).unwrap_or_default();
            if codes.contains(&"TransactionConflict") {
                ErrorClass::Conflict
            } else if codes.contains(&"ConditionalCheckFailed") {
                // A condition failed: the item is missing (not populated) or,
                // for the MMO workload, leased to another writer.
                return StoreError::new(ErrorClass::Data, format!("ConditionalCheckFailed: {text} (is the table populated?)"));
            } else if codes.iter().any(|c| c.contains("Throughput") || c.contains("Throttl")) {
                ErrorClass::Throttled
            } else {
                ErrorClass::Server
            }
        }
        "TransactionConflictException" => ErrorClass::Conflict,
        "ProvisionedThroughputExceededException" | "ThrottlingException" | "RequestLimitExceeded" => ErrorClass::Throttled,
        "ResourceNotFoundException" => {
            return StoreError::new(ErrorClass::Data, format!("{text} (run `aggro mobile populate` first)"));
        }
        "ConditionalCheckFailedException" | "ValidationException" => ErrorClass::Data,
        _ => ErrorClass::Server,
    };
    StoreError::new(class, text)
}

impl Client {
    /// Calls `operation` with `body`; returns the response body of a 200.
    async fn call(&mut self, operation: &str, body: &[u8]) -> Result<&[u8], StoreError> {
        let addr = &self.addr;
        let conn = self.live.get(|| http::Connection::connect(addr)).await?;
        if self.date.0.elapsed() >= Duration::from_secs(1) {
            self.date = (Instant::now(), sigv4::amz_date_now());
        }
        let target = format!("DynamoDB_20120810.{operation}");
        let signed = self.signer.sign(&self.addr, &target, body, &self.date.1);
        let mut headers = vec![
            ("content-type", "application/x-amz-json-1.0"),
            ("x-amz-target", target.as_str()),
            ("x-amz-date", signed.amz_date.as_str()),
            ("authorization", signed.authorization.as_str()),
        ];
        if let Some(token) = &signed.session_token {
            headers.push(("x-amz-security-token", token.as_str()));
        }
        let status = match conn.post(&self.addr, &headers, body).await {
            Ok(s) => s,
            Err(e) => {
                self.live.forget();
                return Err(e);
            }
        };
        std::mem::swap(&mut self.body, &mut conn.body);
        if conn.closing {
            self.live.closed_by_server();
        }
        if status != 200 {
            return Err(classify(status, &self.body));
        }
        Ok(&self.body)
    }
}

fn key(prefix: &str, id: u32) -> Value {
    let k = format!("{prefix}{id}");
    json!({ "PK": { "S": k }, "SK": { "S": k } })
}

/// One loader's connection, with its request buffer.
pub struct DynamoConn {
    client: Client,
    table: String,
    request: String,
}

impl std::fmt::Debug for DynamoConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamoConn").field("table", &self.table).finish_non_exhaustive()
    }
}

impl DynamoConn {
    /// One `TransactWriteItems` applying `SET attr = attr + delta` to each item.
    async fn transact(&mut self, id: u32, updates: &[(&str, &str, i64)]) -> Result<(), StoreError> {
        // Written by hand into a reused buffer: keys are digits and the table
        // name is checked at parse time, so nothing here needs escaping.
        let r = &mut self.request;
        r.clear();
        r.push_str("{\"TransactItems\":[");
        for (i, (prefix, attr, delta)) in updates.iter().enumerate() {
            if i > 0 {
                r.push(',');
            }
            let (op, amount) = if *delta < 0 { ('-', -delta) } else { ('+', *delta) };
            let _ = write!(
                r,
                "{{\"Update\":{{\"TableName\":\"{t}\",\"Key\":{{\"PK\":{{\"S\":\"{prefix}{id}\"}},\"SK\":{{\"S\":\"{prefix}{id}\"}}}},\
                 \"UpdateExpression\":\"SET {attr} = {attr} {op} :d\",\"ConditionExpression\":\"attribute_exists(PK)\",\
                 \"ExpressionAttributeValues\":{{\":d\":{{\"N\":\"{amount}\"}}}}}}}}",
                t = self.table
            );
        }
        r.push_str("]}");
        let body = std::mem::take(&mut self.request);
        let result = self.client.call("TransactWriteItems", body.as_bytes()).await.map(drop);
        self.request = body;
        result
    }
}

/// World records live in the workload's own table (re-created by its
/// population, which so forgets them first), as item
/// `aggro#world`/`<workload>` with the text in `Record`; the run log as
/// items `aggro#runs#<workload>`/`<run id>`.
impl WorldStore for DynamoTarget {
    async fn read_world(&self, workload: &str) -> Result<Option<String>, StoreError> {
        let request = json!({ "TableName": self.table_of(workload), "Key": world_key(workload), "ConsistentRead": true });
        let mut c = self.client();
        match c.call("GetItem", request.to_string().as_bytes()).await {
            Ok(body) => Ok(table::parse(body)?["Item"]["Record"]["S"].as_str().map(str::to_string)),
            // No table: never populated.
            Err(e) if table::missing(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn write_world(&self, workload: &str, record: &str) -> Result<(), StoreError> {
        let mut item = world_key(workload);
        item["Record"] = json!({ "S": record });
        let request = json!({ "TableName": self.table_of(workload), "Item": item });
        self.client().call("PutItem", request.to_string().as_bytes()).await.map(drop)
    }

    async fn log_run(&self, workload: &str, id: &str, entry: &str) -> Result<(), StoreError> {
        let item = json!({ "PK": { "S": runs_pk(workload) }, "SK": { "S": id }, "Record": { "S": entry } });
        let request = json!({ "TableName": self.table_of(workload), "Item": item });
        self.client().call("PutItem", request.to_string().as_bytes()).await.map(drop)
    }

    async fn run_log(&self, workload: &str) -> Result<Vec<String>, StoreError> {
        let mut entries = Vec::new();
        self.each_run(workload, |item| entries.extend(item["Record"]["S"].as_str().map(str::to_string))).await?;
        Ok(entries)
    }

    async fn forget_runs(&self, workload: &str) -> Result<(), StoreError> {
        let mut keys = Vec::new();
        self.each_run(workload, |item| keys.push(json!({ "PK": item["PK"], "SK": item["SK"] }))).await?;
        let mut c = self.client();
        for key in keys {
            c.call("DeleteItem", json!({ "TableName": self.table_of(workload), "Key": key }).to_string().as_bytes()).await?;
        }
        Ok(())
    }
}

impl DynamoTarget {
    /// Calls `each` with every item of `workload`'s run log (its partition, page by page; no table: none).
    async fn each_run(&self, workload: &str, mut each: impl FnMut(&Value)) -> Result<(), StoreError> {
        let mut c = self.client();
        let mut request = json!({
            "TableName": self.table_of(workload),
            "KeyConditionExpression": "PK = :pk",
            "ExpressionAttributeValues": { ":pk": { "S": runs_pk(workload) } },
            "ConsistentRead": true,
        });
        loop {
            let page = match c.call("Query", request.to_string().as_bytes()).await {
                Ok(body) => table::parse(body)?,
                Err(e) if table::missing(&e) => return Ok(()),
                Err(e) => return Err(e),
            };
            page["Items"].as_array().into_iter().flatten().for_each(&mut each);
            match page.get("LastEvaluatedKey") {
                Some(next) if !next.is_null() => request["ExclusiveStartKey"] = next.clone(),
                _ => return Ok(()),
            }
        }
    }
}

fn runs_pk(workload: &str) -> String {
    format!("aggro#runs#{workload}")
}

fn world_key(workload: &str) -> Value {
    json!({ "PK": { "S": "aggro#world" }, "SK": { "S": workload } })
}

impl MobileTarget for DynamoTarget {
    type Conn = DynamoConn;

    fn describe(&self) -> String {
        format!("dynamodb://{}/{} ({})", self.addr, self.table, sigv4::Signer::from_env(self.region.clone()).region())
    }

    async fn connect(&self) -> Result<DynamoConn, StoreError> {
        Ok(DynamoConn { client: self.connected_client().await?, table: self.table.clone(), request: String::with_capacity(1024) })
    }

    async fn populate(&self, ids: &[u32], progress: &(dyn Fn(u64) + Sync)) -> Result<(), StoreError> {
        let mut c = self.client();
        table::recreate(&mut c, &self.table).await?;
        // Four writers at once: batch writes are round-trip bound.
        let done = Arc::new(AtomicU64::new(0));
        let mut writers = tokio::task::JoinSet::new();
        let share = ids.len().div_ceil(4).max(1);
        for part in ids.chunks(share) {
            let (part, mut client, table, done) = (part.to_vec(), self.client(), self.table.clone(), Arc::clone(&done));
            writers.spawn(async move {
                for batch in part.chunks(12) {
                    let mut items = Vec::with_capacity(batch.len() * 2);
                    for &id in batch {
                        let mut user = key("User", id);
                        user["Gold"] = json!({ "N": INITIAL_GOLD.to_string() });
                        let mut item = key("UserItem", id);
                        item["NumTickets"] = json!({ "N": "0" });
                        items.push(json!({ "PutRequest": { "Item": user } }));
                        items.push(json!({ "PutRequest": { "Item": item } }));
                    }
                    table::batch_write(&mut client, &table, items).await?;
                    done.fetch_add(batch.len() as u64, Ordering::Relaxed);
                }
                Ok::<(), StoreError>(())
            });
        }
        loop {
            tokio::select! {
                joined = writers.join_next() => match joined {
                    None => break,
                    Some(Ok(Ok(()))) => {}
                    Some(Ok(Err(e))) => return Err(e),
                    Some(Err(e)) => return Err(StoreError::new(ErrorClass::Other, e.to_string())),
                },
                _ = tokio::time::sleep(Duration::from_millis(200)) => progress(done.load(Ordering::Relaxed)),
            }
        }
        progress(ids.len() as u64);
        Ok(())
    }

    async fn scan(&self) -> Result<Vec<UserRow>, StoreError> {
        let mut c = self.client();
        let mut gold = std::collections::HashMap::new();
        let mut tickets = std::collections::HashMap::new();
        table::scan(&mut c, &self.table, |item| {
            let pk = item["PK"]["S"].as_str().unwrap_or("");
            let number = |attr: &str| item[attr]["N"].as_str().and_then(|n| n.parse::<i64>().ok());
            if let Some(id) = pk.strip_prefix("UserItem").and_then(|n| n.parse::<u32>().ok()) {
                tickets.insert(id, number("NumTickets"));
            } else if let Some(id) = pk.strip_prefix("User").and_then(|n| n.parse::<u32>().ok()) {
                gold.insert(id, number("Gold"));
            }
            Ok(())
        })
        .await?;
        aggro_core::mobile::join_rows(gold, &tickets)
    }
}

impl MobileConn for DynamoConn {
    async fn transfer(&mut self, id: u32) -> Result<(), StoreError> {
        self.transact(id, &[("User", "Gold", -5), ("UserItem", "NumTickets", 1)]).await
    }

    async fn add_gold(&mut self, id: u32) -> Result<(), StoreError> {
        self.transact(id, &[("User", "Gold", 5)]).await
    }

    async fn read_gold(&mut self, id: u32) -> Result<i64, StoreError> {
        let r = &mut self.request;
        r.clear();
        let _ = write!(
            r,
            "{{\"TableName\":\"{t}\",\"Key\":{{\"PK\":{{\"S\":\"User{id}\"}},\"SK\":{{\"S\":\"User{id}\"}}}},\"ConsistentRead\":true,\"ProjectionExpression\":\"Gold\"}}",
            t = self.table
        );
        let body = std::mem::take(&mut self.request);
        let result = self.client.call("GetItem", body.as_bytes()).await.and_then(|b| {
            let v: Value = serde_json::from_slice(b).map_err(|e| StoreError::new(ErrorClass::Protocol, e.to_string()))?;
            v["Item"]["Gold"]["N"]
                .as_str()
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| StoreError::new(ErrorClass::Data, format!("User{id} is not in the table (run `aggro mobile populate` first)")))
        });
        self.request = body;
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_classified_by_their_type_and_reasons() {
        let conflict = br#"{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","message":"x","CancellationReasons":[{"Code":"None"},{"Code":"TransactionConflict"}]}"#;
        assert_eq!(classify(400, conflict).class, ErrorClass::Conflict);
        let missing = br#"{"__type":"x#TransactionCanceledException","CancellationReasons":[{"Code":"ConditionalCheckFailed"}]}"#;
        assert_eq!(classify(400, missing).class, ErrorClass::Data);
        let throttled = br#"{"__type":"x#ProvisionedThroughputExceededException","message":"slow down"}"#;
        assert_eq!(classify(400, throttled).class, ErrorClass::Throttled);
        assert_eq!(classify(500, b"not json").class, ErrorClass::Server);
        let no_table = br#"{"__type":"x#ResourceNotFoundException","message":"Cannot do operations on a non-existent table"}"#;
        let e = classify(400, no_table);
        assert_eq!(e.class, ErrorClass::Data);
        assert!(e.message.contains("populate"));
        assert!(table::missing(&e) && !table::missing(&classify(400, missing)));
    }
}
