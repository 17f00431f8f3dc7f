//! The MMO world in DynamoDB: one table (`aggro_mmo` unless the URL names
//! one), a partition per object graph, binary attributes in
//! [`aggro_core::mmo::codec`]'s encoding.
//!
//! | PK | SK | attributes |
//! |---|---|---|
//! | `A#{id}` | `A` | `username`, `login_count`, `last_login`, `players` |
//! | `U#{name}` | `U` | `account` |
//! | `P#{id}` | `P` | `core`, `lease_owner`, `lease_until` |
//! | `P#{id}` | `R` | `parts` |
//! | `P#{id}` | `I#{item id}` | `v` (the item) |
//! | `P#{id}` | `Q#{n}` | `v` (the quest) |
//! | `G#{id}` | `G` / `R#{rank}` / `M#{player}` | guild; rank; member `name`, `rank` |
//! | `T#{id}` / `D#{id}` | `T` / `D` | templates |
//! | `SEQ` | `SEQ` | `next` |
//!
//! A player is one partition, so LoadPlayer is one `Query` after the lease
//! (`UpdateItem` with a `ConditionExpression` on the lease). A change set is
//! written as `TransactWriteItems` of at most 100 actions, each holding
//! whole players: every player's update carries
//! `ConditionExpression: lease_owner = :me`, so a player is written with
//! all its items and quests or not at all. The API's 100-action limit makes
//! a set of more players several transactions: atomic per player, not per
//! set (stated in docs/MMO.md).

use super::table::{self, BATCH, parse};
use super::{Client, DEFAULT_TABLE, DynamoTarget};
use aggro_core::mmo::codec::*;
use aggro_core::mmo::*;
use aggro_core::{ErrorClass, StoreError};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

/// Actions per `TransactWriteItems` (the API's limit).
const TRANSACTION: usize = 100;

fn key(pk: impl std::fmt::Display, sk: impl std::fmt::Display) -> Value {
    json!({ "PK": { "S": pk.to_string() }, "SK": { "S": sk.to_string() } })
}

fn b(bytes: &[u8]) -> Value {
    json!({ "B": STANDARD.encode(bytes) })
}

fn n(v: impl std::fmt::Display) -> Value {
    json!({ "N": v.to_string() })
}

fn blob(item: &Value, attr: &str) -> Option<Vec<u8>> {
    STANDARD.decode(item[attr]["B"].as_str()?).ok()
}

fn num(item: &Value, attr: &str) -> Option<u64> {
    item[attr]["N"].as_str()?.parse().ok()
}

fn missing(what: String) -> StoreError {
    StoreError::new(ErrorClass::Data, format!("{what} is not in the table (run `aggro mmo populate` first)"))
}

fn corrupt(what: &str) -> StoreError {
    StoreError::new(ErrorClass::Data, format!("dynamodb: {what} does not decode"))
}

fn put(item: Value) -> Value {
    json!({ "PutRequest": { "Item": item } })
}

fn with(mut k: Value, attrs: &[(&str, Value)]) -> Value {
    for (a, v) in attrs {
        k[*a] = v.clone();
    }
    k
}

/// One game server's connection.
pub struct DynamoMmoConn {
    client: Client,
    table: String,
}

impl DynamoTarget {
    fn mmo_table(&self) -> String {
        if self.table == DEFAULT_TABLE { "aggro_mmo".into() } else { self.table.clone() }
    }

    /// The table that holds `workload`'s data (and its world record).
    pub(super) fn table_of(&self, workload: &str) -> String {
        if workload == "mmo" { self.mmo_table() } else { self.table.clone() }
    }
}

impl DynamoMmoConn {
    async fn call(&mut self, op: &str, request: Value) -> Result<Value, StoreError> {
        parse(self.client.call(op, request.to_string().as_bytes()).await?)
    }

    /// Every item of a partition (consistent, page by page).
    async fn partition(&mut self, pk: &str) -> Result<Vec<Value>, StoreError> {
        let mut items = Vec::new();
        let mut start: Option<Value> = None;
        loop {
            let mut q = json!({
                "TableName": self.table, "ConsistentRead": true,
                "KeyConditionExpression": "PK = :pk", "ExpressionAttributeValues": { ":pk": { "S": pk } },
            });
            if let Some(s) = start.take() {
                q["ExclusiveStartKey"] = s;
            }
            let mut v = self.call("Query", q).await?;
            if let Some(page) = v["Items"].as_array_mut() {
                items.append(page);
            }
            match v.get("LastEvaluatedKey") {
                Some(k) if !k.is_null() => start = Some(k.clone()),
                _ => return Ok(items),
            }
        }
    }

    /// The actions of a set, grouped by player in the set's order; each
    /// group starts with the player's fenced update.
    fn actions_by_player(&self, set: &ChangeSet) -> Vec<Vec<Value>> {
        let t = &self.table;
        let at: std::collections::HashMap<u32, usize> = set.players.iter().enumerate().map(|(i, w)| (w.core.id, i)).collect();
        let mut groups: Vec<Vec<Value>> = set
            .players
            .iter()
            .map(|w| {
                let mut values = json!({ ":me": n(set.owner), ":core": b(&encode_core(&w.core)) });
                let update = if w.release {
                    "SET core = :core REMOVE lease_owner, lease_until"
                } else {
                    values[":until"] = n(set.lease_until_ms);
                    "SET core = :core, lease_until = :until"
                };
                vec![json!({ "Update": {
                    "TableName": t, "Key": key(format!("P#{}", w.core.id), "P"), "UpdateExpression": update,
                    "ConditionExpression": "lease_owner = :me", "ExpressionAttributeValues": values,
                }})]
            })
            .collect();
        // Objects of players outside the set are a caller's bug; they are not written.
        let mut add = |player: u32, action: Value| {
            if let Some(&i) = at.get(&player) {
                groups[i].push(action);
            }
        };
        for i in &set.delete_items {
            add(i.owner, json!({ "Delete": { "TableName": t, "Key": key(format!("P#{}", i.owner), format!("I#{}", i.id)) } }));
        }
        for i in &set.put_items {
            let item = with(key(format!("P#{}", i.owner), format!("I#{}", i.id)), &[("v", b(&encode_item(i)))]);
            add(i.owner, json!({ "Put": { "TableName": t, "Item": item } }));
        }
        for q in &set.new_quests {
            let quest = with(key(format!("P#{}", q.player), format!("Q#{:010}", q.seq)), &[("v", b(&encode_quest(q)))]);
            add(q.player, json!({ "Put": { "TableName": t, "Item": quest } }));
        }
        for m in &set.guild_moves {
            let Some(&i) = at.get(&m.player) else { continue };
            let core = &set.players[i].core;
            let member = with(key(format!("G#{}", m.to), format!("M#{}", m.player)), &[("name", json!({ "S": core.name })), ("rank", n(core.rank))]);
            groups[i].push(json!({ "Delete": { "TableName": t, "Key": key(format!("G#{}", m.from), format!("M#{}", m.player)) } }));
            groups[i].push(json!({ "Put": { "TableName": t, "Item": member } }));
        }
        groups
    }

    async fn transact(&mut self, actions: Vec<Value>) -> Result<(), StoreError> {
        match self.call("TransactWriteItems", json!({ "TransactItems": actions })).await {
            Err(e) if e.class == ErrorClass::Data && e.message.contains("ConditionalCheckFailed") => {
                Err(StoreError::new(ErrorClass::Locked, format!("a player is not leased to this writer any more: {}", e.message)))
            }
            r => r.map(drop),
        }
    }
}

impl MmoTarget for DynamoTarget {
    type Conn = DynamoMmoConn;

    fn describe(&self) -> String {
        format!("dynamodb://{}/{} ({})", self.addr, self.mmo_table(), super::sigv4::Signer::from_env(self.region.clone()).region())
    }

    async fn connect(&self) -> Result<DynamoMmoConn, StoreError> {
        Ok(DynamoMmoConn { client: self.connected_client().await?, table: self.mmo_table() })
    }

    async fn create(&self, world: &WorldSpec) -> Result<(), StoreError> {
        let mut c = self.client();
        let t = self.mmo_table();
        table::recreate(&mut c, &t).await?;
        let mut items = vec![put(with(key("SEQ", "SEQ"), &[("next", n(world.first_free_id()))]))];
        for id in 0..world.quest_templates() {
            items.push(put(with(key(format!("T#{id}"), "T"), &[("data", b(&template(1, id)))])));
        }
        for id in 0..world.item_descriptors {
            items.push(put(with(key(format!("D#{id}"), "D"), &[("data", b(&template(2, id)))])));
        }
        let ranks = guild_ranks(world.ranks_per_guild);
        for g in 0..world.guilds() {
            items.push(put(with(key(format!("G#{g}"), "G"), &[("name", json!({ "S": guild_name(g) })), ("motd", b(&guild_motd(g)))])));
            for r in &ranks {
                items.push(put(with(key(format!("G#{g}"), format!("R#{}", r.rank)), &[("v", b(&encode_rank(r)))])));
            }
        }
        for chunk in items.chunks(BATCH) {
            table::batch_write(&mut c, &t, chunk.to_vec()).await?;
        }
        Ok(())
    }

    async fn scan(&self) -> Result<WorldScan, StoreError> {
        let mut c = self.client();
        let mut scan = WorldScan::default();
        table::scan(&mut c, &self.mmo_table(), |item| {
            let (pk, sk) = (item["PK"]["S"].as_str().unwrap_or(""), item["SK"]["S"].as_str().unwrap_or(""));
            if !pk.starts_with("P#") {
                return Ok(());
            }
            if sk == "P" {
                let core = blob(item, "core").and_then(|b| decode_core(&b)).ok_or_else(|| corrupt("a player"))?;
                let leased = num(item, "lease_owner").is_some();
                let lease_until_ms = num(item, "lease_until").filter(|_| leased);
                scan.players.push(PlayerCheck { id: core.id, item_count: core.item_count, lease_until_ms });
            } else if sk.starts_with("I#") {
                let i = blob(item, "v").and_then(|b| decode_item(&b)).ok_or_else(|| corrupt("an item"))?;
                scan.items.push((i.id, i.owner));
            }
            Ok(())
        })
        .await?;
        Ok(scan)
    }
}

impl MmoConn for DynamoMmoConn {
    async fn insert(&mut self, accounts: &[AccountGraph]) -> Result<(), StoreError> {
        let mut items = Vec::new();
        for g in accounts {
            let a = &g.account;
            let mut ids = Writer::default();
            ids.ids(&a.players);
            items.push(put(with(
                key(format!("A#{}", a.id), "A"),
                &[("username", json!({ "S": a.username })), ("login_count", n(0)), ("last_login", n(0)), ("players", b(&ids.0))],
            )));
            items.push(put(with(key(format!("U#{}", a.username), "U"), &[("account", n(a.id))])));
            for p in &g.players {
                let pk = format!("P#{}", p.core.id);
                items.push(put(with(key(&pk, "P"), &[("core", b(&encode_core(&p.core)))])));
                items.push(put(with(key(&pk, "R"), &[("parts", b(&encode_parts(&p.parts)))])));
                for i in &p.items {
                    items.push(put(with(key(&pk, format!("I#{}", i.id)), &[("v", b(&encode_item(i)))])));
                }
                let member = key(format!("G#{}", p.core.guild), format!("M#{}", p.core.id));
                items.push(put(with(member, &[("name", json!({ "S": p.core.name })), ("rank", n(p.core.rank))])));
            }
        }
        for chunk in items.chunks(BATCH) {
            table::batch_write(&mut self.client, &self.table, chunk.to_vec()).await?;
        }
        Ok(())
    }

    async fn login(&mut self, username: &str, now_ms: u64) -> Result<Account, StoreError> {
        let v = self.call("GetItem", json!({ "TableName": self.table, "Key": key(format!("U#{username}"), "U"), "ConsistentRead": true })).await?;
        let id = num(&v["Item"], "account").ok_or_else(|| missing(format!("user {username:?}")))? as u32;
        let v = self
            .call(
                "UpdateItem",
                json!({
                    "TableName": self.table, "Key": key(format!("A#{id}"), "A"),
                    "UpdateExpression": "ADD login_count :one SET last_login = :now",
                    "ConditionExpression": "attribute_exists(PK)",
                    "ExpressionAttributeValues": { ":one": n(1), ":now": n(now_ms) },
                    "ReturnValues": "ALL_NEW",
                }),
            )
            .await?;
        let a = &v["Attributes"];
        let players = blob(a, "players").and_then(|b| Reader::new(&b).ids()).ok_or_else(|| corrupt("an account's players"))?;
        Ok(Account { id, username: username.to_string(), login_count: num(a, "login_count").unwrap_or(0) as u32, last_login_ms: now_ms, players })
    }

    async fn load_player(&mut self, id: u32, lease: Lease) -> Result<PlayerGraph, StoreError> {
        let pk = format!("P#{id}");
        let taken = self
            .call(
                "UpdateItem",
                json!({
                    "TableName": self.table, "Key": key(&pk, "P"),
                    "UpdateExpression": "SET lease_owner = :me, lease_until = :until",
                    "ConditionExpression": "attribute_exists(PK) AND (attribute_not_exists(lease_owner) OR lease_owner = :me OR lease_until < :now)",
                    "ExpressionAttributeValues": { ":me": n(lease.owner), ":until": n(lease.until_ms), ":now": n(lease.now_ms) },
                }),
            )
            .await;
        match taken {
            Ok(_) => {}
            Err(e) if e.class == ErrorClass::Data && e.message.contains("ConditionalCheckFailed") => {
                let v = self.call("GetItem", json!({ "TableName": self.table, "Key": key(&pk, "P"), "ConsistentRead": true })).await?;
                return Err(match num(&v["Item"], "lease_owner") {
                    Some(owner) => StoreError::new(
                        ErrorClass::Locked,
                        format!("player {id} is leased to {owner:#x} until {}", num(&v["Item"], "lease_until").unwrap_or(0)),
                    ),
                    None => missing(format!("player {id}")),
                });
            }
            Err(e) => return Err(e),
        }
        let (mut core, mut parts, mut items, mut quests) = (None, None, Vec::new(), Vec::new());
        for item in self.partition(&pk).await? {
            let sk = item["SK"]["S"].as_str().unwrap_or("");
            match sk {
                "P" => core = blob(&item, "core").and_then(|b| decode_core(&b)),
                "R" => parts = blob(&item, "parts").and_then(|b| decode_parts(&b)),
                _ if sk.starts_with("I#") => items.push(blob(&item, "v").and_then(|b| decode_item(&b)).ok_or_else(|| corrupt("an item"))?),
                _ if sk.starts_with("Q#") => quests.push(blob(&item, "v").and_then(|b| decode_quest(&b)).ok_or_else(|| corrupt("a quest"))?),
                _ => {}
            }
        }
        Ok(PlayerGraph { core: core.ok_or_else(|| corrupt("a player"))?, parts: parts.ok_or_else(|| corrupt("a player's parts"))?, items, quests })
    }

    async fn roster(&mut self, guild: u32) -> Result<Roster, StoreError> {
        let (mut name, mut ranks, mut members) = (None, Vec::new(), Vec::new());
        for item in self.partition(&format!("G#{guild}")).await? {
            let sk = item["SK"]["S"].as_str().unwrap_or("");
            if sk == "G" {
                name = item["name"]["S"].as_str().map(str::to_string);
            } else if sk.starts_with("R#") {
                ranks.push(blob(&item, "v").and_then(|b| decode_rank(&b)).ok_or_else(|| corrupt("a guild rank"))?);
            } else if let Some(p) = sk.strip_prefix("M#").and_then(|p| p.parse().ok()) {
                let name = item["name"]["S"].as_str().unwrap_or_default().to_string();
                members.push(Member { player: p, name, rank: num(&item, "rank").unwrap_or(0) as u8 });
            }
        }
        ranks.sort_by_key(|r| r.rank);
        Ok(Roster { guild, name: name.ok_or_else(|| missing(format!("guild {guild}")))?, ranks, members })
    }

    async fn write(&mut self, set: &ChangeSet) -> Result<(), StoreError> {
        let mut batch: Vec<Value> = Vec::new();
        for actions in self.actions_by_player(set) {
            if !batch.is_empty() && batch.len() + actions.len() > TRANSACTION {
                self.transact(std::mem::take(&mut batch)).await?;
            }
            // A player with more actions than one transaction holds is
            // split; its first part carries the fenced player update.
            for part in actions.chunks(TRANSACTION) {
                if batch.len() + part.len() > TRANSACTION {
                    self.transact(std::mem::take(&mut batch)).await?;
                }
                batch.extend_from_slice(part);
            }
        }
        if !batch.is_empty() {
            self.transact(batch).await?;
        }
        Ok(())
    }

    async fn reserve_ids(&mut self, count: u64) -> Result<u64, StoreError> {
        let v = self
            .call(
                "UpdateItem",
                json!({
                    "TableName": self.table, "Key": key("SEQ", "SEQ"),
                    "UpdateExpression": "ADD #next :n", "ConditionExpression": "attribute_exists(PK)",
                    "ExpressionAttributeNames": { "#next": "next" },
                    "ExpressionAttributeValues": { ":n": n(count) }, "ReturnValues": "UPDATED_NEW",
                }),
            )
            .await
            .map_err(|e| if e.message.contains("ConditionalCheckFailed") { missing("the id sequence".into()) } else { e })?;
        num(&v["Attributes"], "next").map(|next| next - count).ok_or_else(|| corrupt("the id sequence"))
    }
}
