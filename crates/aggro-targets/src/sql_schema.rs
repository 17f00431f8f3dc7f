//! SQL shared by SQLite and PostgreSQL (SQLite reads `$1` as a parameter
//! too): the world records' tables and statements, and the
//! MMO world's schema — one table per kind of object, foreign keys from every
//! object to its owner, and the indexes the game's queries need (players by
//! account and guild, items and quests by owner, accounts by user name).

/// The world records' table, one row per workload, and the run log, one
/// row per run (`docs/WORLD-RECORD.md`).
pub const WORLD_TABLES: [&str; 2] = [
    "CREATE TABLE IF NOT EXISTS aggro_world (workload TEXT PRIMARY KEY, record TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS aggro_runs (workload TEXT NOT NULL, id TEXT NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (workload, id))",
];

/// `workload` ($1) → its world record.
pub const READ_WORLD: &str = "SELECT record FROM aggro_world WHERE workload = $1";
/// Stores `workload` ($1)'s record ($2), replacing any.
pub const WRITE_WORLD: &str = "INSERT INTO aggro_world VALUES ($1, $2) ON CONFLICT (workload) DO UPDATE SET record = excluded.record";
/// Adds run `id` ($2) with `entry` ($3) to `workload` ($1)'s run log.
pub const LOG_RUN: &str = "INSERT INTO aggro_runs VALUES ($1, $2, $3)";
/// `workload` ($1) → every entry of its run log.
pub const RUN_LOG: &str = "SELECT entry FROM aggro_runs WHERE workload = $1";
/// Empties `workload` ($1)'s run log.
pub const FORGET_RUNS: &str = "DELETE FROM aggro_runs WHERE workload = $1";

/// Statements a population runs first: `workload`'s world record and run
/// log go before any of its data does.
pub fn forget_world(workload: &str) -> String {
    format!(
        "{}; {}; DELETE FROM aggro_world WHERE workload = '{workload}'; DELETE FROM aggro_runs WHERE workload = '{workload}';",
        WORLD_TABLES[0], WORLD_TABLES[1]
    )
}

/// The tables, dropped first (the `mmo` world record before them); `blob` is the binary type's name
/// (`BLOB` or `BYTEA`).
pub fn mmo_schema(blob: &str) -> String {
    forget_world("mmo")
        + &format!(
            "DROP TABLE IF EXISTS quests; DROP TABLE IF EXISTS items; DROP TABLE IF EXISTS players;
         DROP TABLE IF EXISTS accounts; DROP TABLE IF EXISTS guild_ranks; DROP TABLE IF EXISTS guilds;
         DROP TABLE IF EXISTS quest_templates; DROP TABLE IF EXISTS item_descriptors; DROP TABLE IF EXISTS id_sequence;
         CREATE TABLE quest_templates (id INTEGER PRIMARY KEY, data {blob} NOT NULL);
         CREATE TABLE item_descriptors (id INTEGER PRIMARY KEY, data {blob} NOT NULL);
         CREATE TABLE guilds (id INTEGER PRIMARY KEY, name TEXT NOT NULL, motd {blob} NOT NULL);
         CREATE TABLE guild_ranks (guild INTEGER NOT NULL REFERENCES guilds, rank INTEGER NOT NULL,
             name TEXT NOT NULL, permissions BIGINT NOT NULL, PRIMARY KEY (guild, rank));
         CREATE TABLE accounts (id INTEGER PRIMARY KEY, username TEXT NOT NULL UNIQUE,
             login_count INTEGER NOT NULL, last_login BIGINT NOT NULL);
         CREATE TABLE players (id INTEGER PRIMARY KEY, account INTEGER NOT NULL REFERENCES accounts,
             name TEXT NOT NULL, money BIGINT NOT NULL, exp BIGINT NOT NULL,
             x REAL NOT NULL, y REAL NOT NULL, z REAL NOT NULL,
             guild INTEGER NOT NULL REFERENCES guilds, rank INTEGER NOT NULL,
             item_count INTEGER NOT NULL, slot_end INTEGER NOT NULL, quest_count INTEGER NOT NULL,
             friends {blob} NOT NULL, ignores {blob} NOT NULL,
             lease_owner BIGINT, lease_until BIGINT,
             taxi {blob} NOT NULL, zones {blob} NOT NULL, bulk {blob} NOT NULL, high_freq {blob} NOT NULL,
             mailbox {blob} NOT NULL, bank {blob} NOT NULL, pet {blob} NOT NULL);
         CREATE INDEX players_account ON players (account);
         CREATE INDEX players_guild ON players (guild);
         CREATE TABLE items (id BIGINT PRIMARY KEY, owner INTEGER NOT NULL REFERENCES players,
             slot INTEGER NOT NULL, descriptor INTEGER NOT NULL REFERENCES item_descriptors,
             count INTEGER NOT NULL, durability INTEGER NOT NULL, data {blob} NOT NULL);
         CREATE INDEX items_owner ON items (owner);
         CREATE TABLE quests (id BIGINT PRIMARY KEY, player INTEGER NOT NULL REFERENCES players,
             seq INTEGER NOT NULL, template INTEGER NOT NULL REFERENCES quest_templates, completed BIGINT NOT NULL);
         CREATE INDEX quests_player ON quests (player);
         CREATE TABLE id_sequence (next BIGINT NOT NULL);"
        )
}

/// The player columns a load reads, in [`aggro_core::mmo::PlayerCore`] order, then the parts.
pub const PLAYER_COLUMNS: &str = "id, account, name, money, exp, x, y, z, guild, rank, item_count, slot_end, quest_count, \
     friends, ignores, taxi, zones, bulk, high_freq, mailbox, bank, pet";

/// The item columns, in [`aggro_core::mmo::Item`] order.
pub const ITEM_COLUMNS: &str = "id, owner, slot, descriptor, count, durability, data";

/// The quest columns, in [`aggro_core::mmo::Quest`] order.
pub const QUEST_COLUMNS: &str = "id, player, seq, template, completed";

/// A list of player ids as stored in a binary column (u32 little-endian each).
pub fn ids_to_blob(ids: &[u32]) -> Vec<u8> {
    ids.iter().flat_map(|i| i.to_le_bytes()).collect()
}

/// The ids of a binary column; `None` if its length is not a multiple of 4.
pub fn blob_to_ids(b: &[u8]) -> Option<Vec<u32>> {
    b.len().is_multiple_of(4).then(|| b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}
