//! Table-level calls every workload shares: re-creating a table, batch
//! writes with their unprocessed-items retries, and full scans.

use super::Client;
use aggro_core::{ErrorClass, StoreError};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Items per `BatchWriteItem` (the API's limit).
pub const BATCH: usize = 25;

/// Whether `e` is the API's answer for a table that does not exist (never
/// populated), as `classify` words it.
pub(super) fn missing(e: &StoreError) -> bool {
    e.class == ErrorClass::Data && e.message.starts_with("ResourceNotFoundException")
}

pub(super) fn parse(body: &[u8]) -> Result<Value, StoreError> {
    serde_json::from_slice(body).map_err(|e| StoreError::new(ErrorClass::Protocol, e.to_string()))
}

/// Drops `table` if it exists and creates it empty (string keys `PK`, `SK`,
/// on demand), waiting until it is ACTIVE.
pub(super) async fn recreate(c: &mut Client, table: &str) -> Result<(), StoreError> {
    match c.call("DeleteTable", json!({ "TableName": table }).to_string().as_bytes()).await {
        Ok(_) => {}
        Err(e) if e.class == ErrorClass::Data => {}
        Err(e) => return Err(e),
    }
    let create = json!({
        "TableName": table,
        "AttributeDefinitions": [{ "AttributeName": "PK", "AttributeType": "S" }, { "AttributeName": "SK", "AttributeType": "S" }],
        "KeySchema": [{ "AttributeName": "PK", "KeyType": "HASH" }, { "AttributeName": "SK", "KeyType": "RANGE" }],
        "BillingMode": "PAY_PER_REQUEST",
    });
    c.call("CreateTable", create.to_string().as_bytes()).await?;
    wait_active(c, table).await
}

/// Waits until `table` is ACTIVE (a minute at most).
pub(super) async fn wait_active(c: &mut Client, table: &str) -> Result<(), StoreError> {
    let describe = json!({ "TableName": table }).to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let v = parse(c.call("DescribeTable", describe.as_bytes()).await?)?;
        if v["Table"]["TableStatus"] == "ACTIVE" {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(StoreError::new(ErrorClass::Timeout, format!("table {table} did not become ACTIVE within 60 s")));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Writes up to [`BATCH`] requests (`PutRequest`/`DeleteRequest`) with one
/// `BatchWriteItem`, re-sending unprocessed items with backoff.
pub(super) async fn batch_write(c: &mut Client, table: &str, requests: Vec<Value>) -> Result<(), StoreError> {
    let mut request = json!({ "RequestItems": { table: requests } });
    for attempt in 0.. {
        let v = parse(c.call("BatchWriteItem", request.to_string().as_bytes()).await?)?;
        match v["UnprocessedItems"].as_object() {
            Some(left) if !left.is_empty() && attempt < 20 => {
                request = json!({ "RequestItems": left });
                tokio::time::sleep(Duration::from_millis(10 << attempt.min(6))).await;
            }
            Some(left) if !left.is_empty() => {
                return Err(StoreError::new(ErrorClass::Throttled, "batch writes kept coming back unprocessed"));
            }
            _ => break,
        }
    }
    Ok(())
}

/// Calls `each` with every item of `table` (consistent, page by page).
pub(super) async fn scan(c: &mut Client, table: &str, mut each: impl FnMut(&Value) -> Result<(), StoreError>) -> Result<(), StoreError> {
    let mut start: Option<Value> = None;
    loop {
        let mut request = json!({ "TableName": table, "ConsistentRead": true });
        if let Some(s) = start.take() {
            request["ExclusiveStartKey"] = s;
        }
        let v = parse(c.call("Scan", request.to_string().as_bytes()).await?)?;
        for item in v["Items"].as_array().into_iter().flatten() {
            each(item)?;
        }
        match v.get("LastEvaluatedKey") {
            Some(k) if !k.is_null() => start = Some(k.clone()),
            _ => return Ok(()),
        }
    }
}
