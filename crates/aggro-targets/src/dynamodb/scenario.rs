//! Scenario commands on the DynamoDB API: each step is one action with the
//! JSON body its template rendered; the attributes a step `returns` are
//! read from the returned `Item` (GetItem), `Attributes` (UpdateItem with
//! ReturnValues) or first of `Items` (Query, Scan, whose `Count` is the
//! step's rows). A `DeleteTable` of a table that does not exist succeeds
//! (a setup's "drop if exists"), and `CreateTable` waits until the table is
//! ACTIVE. Bulk loads are `BatchWriteItem`s of 25.

use super::table::{self, BATCH};
use super::{Client, DynamoTarget};
use aggro_core::scenario::{Command, Family, Load, Reply, Rows, ScenarioConn, ScenarioTarget, Value};
use aggro_core::{ErrorClass, StoreError};
use serde_json::{Value as Json, json};
use std::sync::Arc;

/// One loader's connection.
pub struct DynamoScenarioConn {
    client: Client,
    commands: Arc<[Command]>,
}

impl std::fmt::Debug for DynamoScenarioConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamoScenarioConn").field("commands", &self.commands.len()).finish()
    }
}

/// An attribute value as a scenario value.
fn attribute(v: &Json) -> Value {
    if let Some(s) = v["S"].as_str() {
        return Value::Text(s.to_string());
    }
    if let Some(n) = v["N"].as_str() {
        return n.parse().map(Value::Int).or_else(|_| n.parse().map(Value::Float)).unwrap_or_else(|_| Value::Text(n.to_string()));
    }
    if let Some(b) = v["BOOL"].as_bool() {
        return Value::Int(b as i64);
    }
    if v.is_null() || v["NULL"].as_bool() == Some(true) {
        return Value::Null;
    }
    Value::Text(v.to_string())
}

fn read_reply(body: &Json, returns: &[String], reply: &mut Reply) {
    let item = if body["Item"].is_object() {
        reply.rows = 1;
        &body["Item"]
    } else if body["Attributes"].is_object() {
        reply.rows = 1;
        &body["Attributes"]
    } else if let Some(items) = body["Items"].as_array() {
        reply.rows = body["Count"].as_u64().unwrap_or(items.len() as u64);
        items.first().unwrap_or(&Json::Null)
    } else {
        &Json::Null
    };
    reply.values.extend(returns.iter().map(|name| attribute(&item[name])));
}

impl ScenarioConn for DynamoScenarioConn {
    async fn exec(&mut self, command: usize, args: &[Value], reply: &mut Reply) -> Result<(), StoreError> {
        reply.clear();
        let Command::Dynamo { action, returns } = &self.commands[command] else {
            return Err(StoreError::new(ErrorClass::Data, "a DynamoDB target runs DynamoDB actions only"));
        };
        let body = match args.first() {
            Some(Value::Text(t)) => t.as_str(),
            _ => return Err(StoreError::new(ErrorClass::Data, format!("{action}: the request body is not text"))),
        };
        let response = match self.client.call(action, body.as_bytes()).await {
            Err(e) if action == "DeleteTable" && table::missing(&e) => return Ok(()),
            other => other?,
        };
        let parsed = table::parse(response)?;
        read_reply(&parsed, returns, reply);
        if action == "CreateTable" {
            let name = parsed["TableDescription"]["TableName"].as_str().unwrap_or_default().to_string();
            table::wait_active(&mut self.client, &name).await?;
        }
        Ok(())
    }
}

impl ScenarioTarget for DynamoTarget {
    type Conn = DynamoScenarioConn;

    fn describe(&self) -> String {
        aggro_core::mobile::MobileTarget::describe(self)
    }

    fn family(&self) -> Family {
        Family::Dynamo
    }

    async fn connect(&self, commands: Arc<[Command]>) -> Result<DynamoScenarioConn, StoreError> {
        if commands.iter().any(|c| !matches!(c, Command::Dynamo { .. })) {
            return Err(StoreError::new(ErrorClass::Data, "a DynamoDB target runs DynamoDB actions only"));
        }
        Ok(DynamoScenarioConn { client: self.connected_client().await?, commands })
    }

    async fn load(&self, load: &Load, rows: &Rows) -> Result<(), StoreError> {
        let Load::Dynamo { table } = load else {
            return Err(StoreError::new(ErrorClass::Data, "a DynamoDB target loads items only"));
        };
        let mut c = self.connected_client().await?;
        for chunk in rows.chunks(BATCH) {
            let requests = chunk
                .iter()
                .map(|row| {
                    let item: Json = serde_json::from_str(&row[0].to_text())
                        .map_err(|e| StoreError::new(ErrorClass::Data, format!("populate.dynamo.item is not JSON: {e}")))?;
                    Ok(json!({ "PutRequest": { "Item": item } }))
                })
                .collect::<Result<Vec<_>, StoreError>>()?;
            table::batch_write(&mut c, table, requests).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_give_the_returned_attributes() {
        let mut reply = Reply::default();
        let body = json!({ "Item": { "Gold": { "N": "42" }, "Name": { "S": "x" } } });
        read_reply(&body, &["Gold".into(), "Name".into(), "Missing".into()], &mut reply);
        assert_eq!(reply.values, [Value::Int(42), Value::Text("x".into()), Value::Null]);
        assert_eq!(reply.rows, 1);
        let mut reply = Reply::default();
        read_reply(&json!({ "Items": [], "Count": 0 }), &[], &mut reply);
        assert_eq!(reply.rows, 0);
    }
}
