//! Scenario commands on Redis: each step's commands sent as one pipeline,
//! its last reply flattened into the step's values. `EVAL script …` is
//! sent as `EVALSHA sha1(script) …`, the script loaded once per connection
//! first (what Redis client libraries do), so a script's body crosses the
//! wire once. Bulk loads pipeline 1,000 commands at a time.

use super::resp::Reply as Resp;
use super::{Link, RedisTarget};
use aggro_core::scenario::{Command, Family, Load, Reply, Rows, ScenarioConn, ScenarioTarget, Value};
use aggro_core::{ErrorClass, StoreError};
use sha1::{Digest, Sha1};
use std::collections::HashSet;
use std::sync::Arc;

/// Commands per pipeline of a bulk load.
const LOAD_PIPELINE: usize = 1_000;

/// One loader's Redis connection.
pub struct RedisScenarioConn {
    commands: Arc<[Command]>,
    session: Session,
}

/// The connection and what it knows of the scripts loaded on it.
struct Session {
    link: Link,
    /// SHA-1s (hex) of the scripts loaded on the current connection.
    loaded: HashSet<String>,
    /// The last script seen and its SHA-1, so a steady mix hashes nothing.
    last_script: (Value, Value),
}

impl std::fmt::Debug for RedisScenarioConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisScenarioConn").field("commands", &self.commands.len()).finish()
    }
}

fn sha1_hex(script: &str) -> String {
    Sha1::digest(script.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

fn flatten(r: Resp, out: &mut Vec<Value>) {
    match r {
        Resp::Status(s) => out.push(Value::Text(s)),
        Resp::Int(i) => out.push(Value::Int(i)),
        Resp::Bulk(Some(b)) => out.push(Value::Text(String::from_utf8_lossy(&b).into_owned())),
        Resp::Bulk(None) | Resp::Array(None) => out.push(Value::Null),
        Resp::Array(Some(items)) => items.into_iter().for_each(|i| flatten(i, out)),
        Resp::Error(e) => out.push(Value::Text(e)),
    }
}

fn is_eval(args: &[Value]) -> bool {
    matches!(args.first(), Some(Value::Text(c)) if c.eq_ignore_ascii_case("EVAL")) && args.len() >= 2
}

impl Session {
    async fn pipeline(&mut self, lengths: &[usize], args: &[Value], reply: &mut Reply) -> Result<(), StoreError> {
        // Scripts first: load any this connection has not seen.
        let mut at = 0;
        for &len in lengths {
            let cmd = &args[at..at + len];
            at += len;
            if is_eval(cmd) {
                if self.last_script.0 != cmd[1] {
                    self.last_script = (cmd[1].clone(), Value::Text(sha1_hex(&cmd[1].to_text())));
                }
                if let Value::Text(sha) = &self.last_script.1
                    && !self.loaded.contains(sha.as_str())
                {
                    let sha = sha.clone();
                    let c = self.link.conn().await?;
                    c.push_values(3, [Value::Text("SCRIPT".into()), Value::Text("LOAD".into()), cmd[1].clone()].iter());
                    c.flush().await?;
                    if let Resp::Error(e) = c.read().await? {
                        return Err(StoreError::new(ErrorClass::Server, format!("SCRIPT LOAD: {e}")));
                    }
                    self.loaded.insert(sha);
                }
            }
        }
        let c = self.link.conn().await?;
        let mut at = 0;
        for &len in lengths {
            let cmd = &args[at..at + len];
            at += len;
            if is_eval(cmd) {
                let evalsha = Value::Text("EVALSHA".into());
                c.push_values(len, std::iter::once(&evalsha).chain(std::iter::once(&self.last_script.1)).chain(&cmd[2..]));
            } else {
                c.push_values(len, cmd.iter());
            }
        }
        c.flush().await?;
        let mut failed = None;
        for i in 0..lengths.len() {
            let r = c.read().await?;
            match r {
                Resp::Error(e) if failed.is_none() => {
                    let class = if e.starts_with("EXECABORT") { ErrorClass::Conflict } else { ErrorClass::Server };
                    failed = Some(StoreError::new(class, e));
                }
                Resp::Array(None) if i + 1 == lengths.len() && failed.is_none() => {
                    failed = Some(StoreError::new(ErrorClass::Conflict, "EXEC aborted (a WATCHed key changed)"));
                }
                r if i + 1 == lengths.len() => {
                    reply.rows = match &r {
                        Resp::Array(Some(items)) => items.len() as u64,
                        Resp::Bulk(None) => 0,
                        _ => 1,
                    };
                    if reply.want_values {
                        flatten(r, &mut reply.values);
                    }
                }
                _ => {}
            }
        }
        failed.map_or(Ok(()), Err)
    }
}

impl ScenarioConn for RedisScenarioConn {
    async fn exec(&mut self, command: usize, args: &[Value], reply: &mut Reply) -> Result<(), StoreError> {
        reply.clear();
        let Command::Redis { lengths } = &self.commands[command] else {
            return Err(StoreError::new(ErrorClass::Data, "a Redis target runs Redis commands only"));
        };
        let session = &mut self.session;
        let result = session.pipeline(lengths, args, reply).await;
        if result.as_ref().is_err_and(|e| matches!(e.class, ErrorClass::Disconnected | ErrorClass::Protocol)) {
            session.loaded.clear();
        }
        session.link.keep_if_healthy(result)
    }
}

impl ScenarioTarget for RedisTarget {
    type Conn = RedisScenarioConn;

    fn describe(&self) -> String {
        aggro_core::mobile::MobileTarget::describe(self)
    }

    fn family(&self) -> Family {
        Family::Redis
    }

    async fn connect(&self, commands: Arc<[Command]>) -> Result<RedisScenarioConn, StoreError> {
        if commands.iter().any(|c| !matches!(c, Command::Redis { .. })) {
            return Err(StoreError::new(ErrorClass::Data, "a Redis target runs Redis commands only"));
        }
        let session = Session { link: Link::open(self).await?, loaded: HashSet::new(), last_script: (Value::Null, Value::Null) };
        Ok(RedisScenarioConn { commands, session })
    }

    async fn load(&self, load: &Load, rows: &Rows) -> Result<(), StoreError> {
        let Load::Redis { lengths } = load else {
            return Err(StoreError::new(ErrorClass::Data, "a Redis target loads Redis commands only"));
        };
        let mut c = self.open().await?;
        for chunk in rows.chunks(LOAD_PIPELINE.div_ceil(lengths.len().max(1))) {
            for row in chunk {
                let mut at = 0;
                for &len in lengths {
                    c.push_values(len, row[at..at + len].iter());
                    at += len;
                }
            }
            c.flush().await?;
            let mut failed = None;
            for _ in 0..chunk.len() * lengths.len() {
                if let Resp::Error(e) = c.read().await? {
                    failed.get_or_insert(StoreError::new(ErrorClass::Server, e));
                }
            }
            if let Some(e) = failed {
                return Err(e);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_are_named_by_their_sha1() {
        assert_eq!(sha1_hex("return 1"), "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
    }
}
