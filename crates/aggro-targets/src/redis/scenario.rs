//! Scenario commands on Redis: each step's commands sent as one pipeline
//! (on a connection loaders may share: [`crate::pipeline`]), its last reply
//! flattened into the step's values. `EVAL script …` is
//! sent as `EVALSHA sha1(script) …`, the script loaded once per connection
//! first (what Redis client libraries do), so a script's body crosses the
//! wire once — on one node; a cluster's nodes each hold their own scripts, so
//! there `EVAL` goes as written. Bulk loads pipeline 1,000 commands at a time.

use super::resp::{Reply as Resp, encode_values};
use super::{Link, RedisTarget};
use crate::pipeline::Pipe;
use aggro_core::scenario::{Command, Family, Load, Reply, Rows, ScenarioConn, ScenarioTarget, Value};
use aggro_core::{ErrorClass, StoreError};
use sha1::{Digest, Sha1};
use std::sync::Arc;

/// Commands per pipeline of a bulk load.
const LOAD_PIPELINE: usize = 1_000;

/// The command an `EVAL` goes out as (made once, not per request).
static EVALSHA: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| Value::Text("EVALSHA".into()));

/// One loader's handle on a Redis connection it may share with other loaders (`Shared`).
pub struct RedisScenarioConn {
    commands: Arc<[Command]>,
    pipe: Pipe<Link>,
    /// The last script seen and its SHA-1, so a steady mix hashes nothing.
    last_script: (Value, Value),
    /// SHA-1s of the scripts this request loads first.
    loading: Vec<String>,
    /// On a cluster, scripts go as written (`EVAL`).
    cluster: bool,
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

/// Sends a step's commands on `pipe` and returns their replies: a script not yet loaded on the connection
/// is loaded first (its SHA-1 noted in `loading`), and `EVAL` goes out as `EVALSHA` (`last_script`: the
/// last script seen and its SHA-1).
async fn send(
    pipe: &mut Pipe<Link>,
    last_script: &mut (Value, Value),
    loading: &mut Vec<String>,
    cluster: bool,
    lengths: &[usize],
    args: &[Value],
) -> Result<Vec<Resp>, StoreError> {
    pipe.request(|batch, loaded| {
        let mut at = 0;
        for &len in lengths {
            let cmd = &args[at..at + len];
            at += len;
            if cluster || !is_eval(cmd) {
                encode_values(batch, len, cmd.iter());
                continue;
            }
            if last_script.0 != cmd[1] {
                *last_script = (cmd[1].clone(), Value::Text(sha1_hex(&cmd[1].to_text())));
            }
            let Value::Text(sha) = &last_script.1 else { unreachable!("a SHA-1 is text") };
            if !loaded.contains(sha) {
                loaded.insert(sha.clone());
                let load = [Value::Text("SCRIPT".into()), Value::Text("LOAD".into()), cmd[1].clone()];
                encode_values(batch, 3, load.iter());
                loading.push(sha.clone());
            }
            encode_values(batch, len, [&*EVALSHA, &last_script.1].into_iter().chain(&cmd[2..]));
        }
        loading.len() + lengths.len()
    })
    .await
}

impl RedisScenarioConn {
    /// Reads a step's replies into `reply`: its last reply's values; the first error fails it.
    fn take(&mut self, replies: Vec<Resp>, commands: usize, reply: &mut Reply) -> Result<(), StoreError> {
        let mut replies = replies.into_iter();
        for sha in self.loading.drain(..) {
            if let Some(Resp::Error(e)) = replies.next() {
                self.pipe.amend(|loaded| {
                    loaded.remove(&sha);
                });
                return Err(StoreError::new(ErrorClass::Server, format!("SCRIPT LOAD: {e}")));
            }
        }
        let mut failed = None;
        for (i, r) in replies.enumerate() {
            match r {
                Resp::Error(e) if failed.is_none() => {
                    let class = if e.starts_with("EXECABORT") { ErrorClass::Conflict } else { ErrorClass::Server };
                    failed = Some(StoreError::new(class, e));
                }
                Resp::Array(None) if i + 1 == commands && failed.is_none() => {
                    failed = Some(StoreError::new(ErrorClass::Conflict, "EXEC aborted (a WATCHed key changed)"));
                }
                r if i + 1 == commands => {
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
        let Self { commands, pipe, last_script, loading, cluster } = self;
        let Command::Redis { lengths } = &commands[command] else {
            return Err(StoreError::new(ErrorClass::Data, "a Redis target runs Redis commands only"));
        };
        let count = lengths.len();
        let replies = send(pipe, last_script, loading, *cluster, lengths, args).await.inspect_err(|_| loading.clear())?;
        self.take(replies, count, reply)
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
        let mut one = self.connect_shared(commands, 1).await?;
        Ok(one.pop().expect("one handle"))
    }

    async fn connect_shared(&self, commands: Arc<[Command]>, loaders: usize) -> Result<Vec<RedisScenarioConn>, StoreError> {
        if commands.iter().any(|c| !matches!(c, Command::Redis { .. })) {
            return Err(StoreError::new(ErrorClass::Data, "a Redis target runs Redis commands only"));
        }
        let pipes = Pipe::handles(Link::open(self).await?, loaders);
        Ok(pipes
            .into_iter()
            .map(|pipe| RedisScenarioConn {
                commands: Arc::clone(&commands),
                pipe,
                last_script: (Value::Null, Value::Null),
                loading: Vec::new(),
                cluster: self.is_cluster(),
            })
            .collect())
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
