//! How bots play *your* room: a small TOML file naming the room, how to join
//! it, the messages each bot sends (type, payload template, period) and the
//! message whose arrival measures the action-to-observer delay.
//!
//! ```toml
//! room = "battle"            # the room name given to server.define()
//! method = "joinOrCreate"    # or "join" / "create"
//! options = { mode = "duo", name = "bot-$bot" } # join options (JSON), as client.joinOrCreate(room, options)
//! token = "secret-$bot"      # optional: sent as `Authorization: Bearer …` (client.auth.token), for onAuth
//! # credentials = "users.csv"  # optional: a CSV with a header row; bot n takes row n (wrapping),
//!                              # its columns as $name in options and token
//!
//! [[send]]
//! type = "move"              # room.onMessage("move", …)
//! every = "100ms"
//! payload = { x = "$x", y = "$y", from = "$bot", seq = "$seq", t = "$t" }
//!
//! [observe]
//! type = "moved"             # what the room broadcasts: a map with the sender's from, seq and t
//! ```
//!
//! A `[[send]]` may name `reply = "type"`: the message the room answers it with, to the sender,
//! echoing its `t` — each answer times a request→reply round trip.
//!
//! A payload's keys go in name order. A payload string that is exactly `$t` (the send time, µs on the swarm's
//! clock), `$seq` (the bot's count of this message), `$bot` (the bot's id: its number, plus 2³² × its
//! generation when churn replaced it),
//! `$x` or `$y` (a random walk in 0..1000) is replaced when sent; every other
//! value goes as written. In the join options and the token, `$bot` and the credentials' columns are
//! replaced wherever they appear in a string (a string that is exactly `$bot` becomes a number), once
//! per join.

use aggro_core::units::parse_positive_duration;
use std::path::Path;
use std::time::Duration;

/// A bot's play.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Play {
    pub room: String,
    pub method: String,
    /// Join options, as JSON: a template ([`Play::join_options`]).
    pub options: serde_json::Value,
    /// The bearer token sent with each seat reservation: a template ([`Play::token`]).
    pub token: Option<String>,
    /// Values by bot number for the templates.
    #[serde(skip)]
    pub credentials: Credentials,
    pub sends: Vec<Send>,
    /// The message type that carries another bot's `from`/`seq`/`t` back.
    pub observe: Option<String>,
}

/// One message a bot sends on a schedule.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Send {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(serialize_with = "aggro_arena::clock::secs")]
    pub every: Duration,
    #[serde(skip)]
    pub payload: Field,
    /// The message type the room answers it with, to the sender, echoing its `t`: each answer's
    /// arrival times the request→reply round trip.
    pub reply: Option<String>,
}

/// A payload template.
#[derive(Clone, Debug, PartialEq)]
pub enum Field {
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Var(Var),
    Array(Vec<Field>),
    Map(Vec<(String, Field)>),
}

/// A value filled in when the message is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Var {
    T,
    Seq,
    Bot,
    X,
    Y,
}

/// The live values a template is filled with.
#[derive(Clone, Copy, Debug)]
pub struct Values {
    pub t: u64,
    pub seq: u32,
    pub bot: u64,
    pub x: f64,
    pub y: f64,
}

/// A table of values by bot: a header row of names, then a row per bot (bot n takes row n mod rows).
#[derive(Clone, Debug, Default)]
pub struct Credentials {
    columns: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Credentials {
    /// Reads a CSV file: a header row, then rows of as many plain values (no quotes) separated by commas.
    fn read(path: &Path) -> Result<Credentials, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("credentials: cannot read {}: {e}", path.display()))?;
        let mut lines = text.lines().filter(|l| !l.trim().is_empty());
        let split = |l: &str| l.split(',').map(|v| v.trim().to_string()).collect::<Vec<_>>();
        let columns = lines.next().map(split).ok_or(format!("credentials: {} is empty", path.display()))?;
        if let Some(bad) = columns.iter().find(|c| !is_name(c)) {
            return Err(format!("credentials: column {bad:?} of {} is not a name (letters, digits, _)", path.display()));
        }
        let mut rows = Vec::new();
        for (i, line) in lines.enumerate() {
            let row = split(line);
            if row.len() != columns.len() || line.contains('"') {
                return Err(format!(
                    "credentials: row {} of {} has {} values, not {} (plain values, no quotes)",
                    i + 2,
                    path.display(),
                    row.len(),
                    columns.len()
                ));
            }
            rows.push(row);
        }
        if rows.is_empty() {
            return Err(format!("credentials: {} has no row below its header", path.display()));
        }
        Ok(Credentials { columns, rows })
    }

    /// The value of `name` for bot `bot` (its number: the low 32 bits of its id).
    fn value(&self, name: &str, bot: u64) -> Option<&str> {
        let column = self.columns.iter().position(|c| c == name)?;
        Some(&self.rows[(bot as u32 as usize) % self.rows.len()][column])
    }
}

fn is_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `text` with each `$name` filled by `value` (`None`: unknown, an error naming it).
fn fill<'a>(text: &str, value: impl Fn(&str) -> Option<std::borrow::Cow<'a, str>>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let len = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len());
        if len == 0 {
            out.push('$');
        } else {
            out.push_str(&value(&after[..len]).ok_or_else(|| format!("unknown variable ${}", &after[..len]))?);
        }
        rest = &after[len..];
    }
    out.push_str(rest);
    Ok(out)
}

impl Field {
    /// Writes the template as msgpack, its variables filled from `v`.
    pub fn write(&self, v: &Values, out: &mut Vec<u8>) {
        use rmp::encode as e;
        // Writing to a Vec cannot fail: the results are let go.
        match self {
            Field::Nil => out.push(0xc0),
            Field::Bool(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
            Field::Int(i) => drop(e::write_sint(out, *i)),
            Field::Float(f) => drop(e::write_f64(out, *f)),
            Field::Str(s) => drop(e::write_str(out, s)),
            Field::Var(Var::T) => drop(e::write_uint(out, v.t)),
            Field::Var(Var::Seq) => drop(e::write_uint(out, v.seq as u64)),
            Field::Var(Var::Bot) => drop(e::write_uint(out, v.bot)),
            Field::Var(Var::X) => drop(e::write_f64(out, v.x)),
            Field::Var(Var::Y) => drop(e::write_f64(out, v.y)),
            Field::Array(items) => {
                drop(e::write_array_len(out, items.len() as u32));
                items.iter().for_each(|f| f.write(v, out));
            }
            Field::Map(entries) => {
                drop(e::write_map_len(out, entries.len() as u32));
                for (k, f) in entries {
                    drop(e::write_str(out, k));
                    f.write(v, out);
                }
            }
        }
    }

    fn from_toml(v: &toml::Value, at: &str) -> Result<Field, String> {
        Ok(match v {
            toml::Value::String(s) => match s.as_str() {
                "$t" => Field::Var(Var::T),
                "$seq" => Field::Var(Var::Seq),
                "$bot" => Field::Var(Var::Bot),
                "$x" => Field::Var(Var::X),
                "$y" => Field::Var(Var::Y),
                s if s.starts_with('$') && s[1..].chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && s.len() > 1 => {
                    return Err(format!("{at}: unknown variable {s} (known: $t, $seq, $bot, $x, $y)"));
                }
                s => Field::Str(s.to_string()),
            },
            toml::Value::Integer(i) => Field::Int(*i),
            toml::Value::Float(f) => Field::Float(*f),
            toml::Value::Boolean(b) => Field::Bool(*b),
            toml::Value::Datetime(d) => Field::Str(d.to_string()),
            toml::Value::Array(a) => {
                Field::Array(a.iter().enumerate().map(|(i, x)| Field::from_toml(x, &format!("{at}[{i}]"))).collect::<Result<_, _>>()?)
            }
            toml::Value::Table(t) => {
                Field::Map(t.iter().map(|(k, x)| Ok((k.clone(), Field::from_toml(x, &format!("{at}.{k}"))?))).collect::<Result<_, String>>()?)
            }
        })
    }
}

impl Play {
    /// The reference room's play (examples/colyseus): join `room`, send a move every `every`, observe `moved`.
    pub fn reference(room: &str, every: Duration) -> Play {
        let var = |name: &str, v| (name.to_string(), Field::Var(v));
        Play {
            room: room.to_string(),
            method: "joinOrCreate".into(),
            options: serde_json::json!({}),
            token: None,
            credentials: Credentials::default(),
            sends: vec![Send {
                kind: "move".into(),
                every,
                payload: Field::Map(vec![var("from", Var::Bot), var("seq", Var::Seq), var("t", Var::T), var("x", Var::X), var("y", Var::Y)]),
                reply: None,
            }],
            observe: Some("moved".into()),
        }
    }

    /// Reads a play file (its credentials relative to it); errors name the key.
    pub fn load(path: &Path) -> Result<Play, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
        Play::parse_in(&text, path.parent().unwrap_or(Path::new(".")))
    }

    /// Reads a play file's text (credentials relative to the working directory); errors name the key.
    pub fn parse(text: &str) -> Result<Play, String> {
        Play::parse_in(text, Path::new("."))
    }

    fn parse_in(text: &str, dir: &Path) -> Result<Play, String> {
        let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| e.message().to_string())?;
        const KEYS: [&str; 7] = ["room", "method", "options", "token", "credentials", "send", "observe"];
        for k in doc.keys() {
            if !KEYS.contains(&k.as_str()) {
                return Err(format!("{k}: unknown key (known: {})", KEYS.join(", ")));
            }
        }
        let room = match doc.get("room") {
            Some(toml::Value::String(s)) if !s.is_empty() => s.clone(),
            Some(_) => return Err("room: not a room name".into()),
            None => return Err("room: missing (the name given to server.define())".into()),
        };
        let method = match doc.get("method") {
            None => "joinOrCreate".to_string(),
            Some(toml::Value::String(m)) if ["joinOrCreate", "join", "create"].contains(&m.as_str()) => m.clone(),
            Some(m) => return Err(format!("method: {m:?} is not joinOrCreate, join or create")),
        };
        let options = match doc.get("options") {
            None => serde_json::json!({}),
            Some(toml::Value::Table(t)) => serde_json::to_value(t).map_err(|e| format!("options: {e}"))?,
            Some(_) => return Err("options: not a table".into()),
        };
        let mut sends = Vec::new();
        let empty = Vec::new();
        let list = match doc.get("send") {
            None => &empty,
            Some(toml::Value::Array(a)) => a,
            Some(_) => return Err("send: not an array of tables ([[send]])".into()),
        };
        for (i, s) in list.iter().enumerate() {
            let at = format!("send[{i}]");
            let t = s.as_table().ok_or(format!("{at}: not a table"))?;
            for k in t.keys() {
                if !["type", "every", "payload", "reply"].contains(&k.as_str()) {
                    return Err(format!("{at}.{k}: unknown key (known: type, every, payload, reply)"));
                }
            }
            let kind = t.get("type").and_then(|v| v.as_str()).ok_or(format!("{at}.type: missing (the message type the room handles)"))?.to_string();
            let every = t.get("every").and_then(|v| v.as_str()).ok_or(format!("{at}.every: missing (a period such as \"100ms\")"))?;
            let every = parse_positive_duration(every).map_err(|e| format!("{at}.every: {e}"))?;
            let payload = t.get("payload").map_or(Ok(Field::Nil), |p| Field::from_toml(p, &format!("{at}.payload")))?;
            let reply = match t.get("reply") {
                None => None,
                Some(toml::Value::String(r)) if !r.is_empty() => Some(r.clone()),
                Some(_) => return Err(format!("{at}.reply: not a message type")),
            };
            sends.push(Send { kind, every, payload, reply });
        }
        let observe = match doc.get("observe") {
            None => None,
            Some(toml::Value::Table(t)) => match t.get("type") {
                Some(toml::Value::String(s)) => Some(s.clone()),
                _ => return Err("observe.type: missing (the message type that carries from, seq and t back)".into()),
            },
            Some(_) => return Err("observe: not a table".into()),
        };
        let credentials = match doc.get("credentials") {
            None => Credentials::default(),
            Some(toml::Value::String(file)) => Credentials::read(&dir.join(file))?,
            Some(_) => return Err("credentials: not a file name".into()),
        };
        let token = match doc.get("token") {
            None => None,
            Some(toml::Value::String(t)) => Some(t.clone()),
            Some(_) => return Err("token: not a string".into()),
        };
        let play = Play { room, method, options, token, credentials, sends, observe };
        // Every variable of the templates is known: try them on bot 0.
        let known = |e: String| format!("{e} (known: $bot{})", play.credentials.columns.iter().map(|c| format!(", ${c}")).collect::<String>());
        play.join_options(0).map_err(|e| format!("options: {}", known(e)))?;
        play.token(0).map_err(|e| format!("token: {}", known(e)))?;
        Ok(play)
    }

    /// The join options for bot `bot` (its id), the templates filled.
    pub fn join_options(&self, bot: u64) -> Result<serde_json::Value, String> {
        self.fill_json(&self.options, bot)
    }

    /// The bearer token for bot `bot`, if the play sends one.
    pub fn token(&self, bot: u64) -> Result<Option<String>, String> {
        let token = self.token.as_deref().map(|t| self.fill_text(t, bot)).transpose()?;
        match token {
            Some(t) if t.chars().any(char::is_control) => Err(format!("bot {bot}'s token has a control character")),
            token => Ok(token),
        }
    }

    fn fill_text(&self, text: &str, bot: u64) -> Result<String, String> {
        fill(text, |name| match name {
            "bot" => Some(bot.to_string().into()),
            column => self.credentials.value(column, bot).map(|v| v.to_string().into()),
        })
    }

    fn fill_json(&self, v: &serde_json::Value, bot: u64) -> Result<serde_json::Value, String> {
        use serde_json::Value as J;
        Ok(match v {
            J::String(s) if s == "$bot" => J::from(bot),
            J::String(s) if s.contains('$') => J::String(self.fill_text(s, bot)?),
            J::Array(items) => J::Array(items.iter().map(|i| self.fill_json(i, bot)).collect::<Result<_, _>>()?),
            J::Object(map) => J::Object(map.iter().map(|(k, i)| Ok((k.clone(), self.fill_json(i, bot)?))).collect::<Result<_, String>>()?),
            other => other.clone(),
        })
    }

    /// Whether `kind` answers one of the play's messages (a `reply`).
    pub fn is_reply(&self, kind: &str) -> bool {
        self.sends.iter().any(|s| s.reply.as_deref() == Some(kind))
    }

    /// The shortest send period: the bots' tick.
    pub fn tick(&self) -> Option<Duration> {
        self.sends.iter().map(|s| s.every).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_file_reads_as_the_reference_play() {
        let doc = include_str!("play.rs")
            .lines()
            .filter_map(|l| l.strip_prefix("//! "))
            .skip_while(|l| !l.starts_with("```toml"))
            .skip(1)
            .take_while(|l| !l.starts_with("```"))
            .collect::<Vec<_>>()
            .join("\n");
        let play = Play::parse(&doc).unwrap();
        let reference = Play::reference("battle", Duration::from_millis(100));
        assert_eq!(play.sends[0].payload, reference.sends[0].payload);
        assert_eq!((play.room.as_str(), play.method.as_str(), play.observe.as_deref()), ("battle", "joinOrCreate", Some("moved")));
        assert_eq!(play.join_options(7).unwrap(), serde_json::json!({ "mode": "duo", "name": "bot-7" }));
        assert_eq!(play.token(7).unwrap().as_deref(), Some("secret-7"));
        assert_eq!(play.tick(), Some(Duration::from_millis(100)));
        let mut out = Vec::new();
        play.sends[0].payload.write(&Values { t: 5_000_000_000, seq: 7, bot: 3, x: 1.0, y: 2.0 }, &mut out);
        let v = rmpv::decode::read_value(&mut out.as_slice()).unwrap();
        assert_eq!(v["t"].as_u64(), Some(5_000_000_000));
        assert_eq!((v["seq"].as_u64(), v["from"].as_u64(), v["y"].as_f64()), (Some(7), Some(3), Some(2.0)));
    }

    #[test]
    fn join_options_and_the_token_are_filled_per_bot_from_credentials() {
        let dir = std::env::temp_dir().join(format!("aggro-play-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("users.csv"), "user,pass\nann,a1\nbob,b2\n").unwrap();
        let file = dir.join("play.toml");
        std::fs::write(
            &file,
            "room = \"r\"\ncredentials = \"users.csv\"\ntoken = \"$pass\"\noptions = { id = \"$bot\", who = [\"$user@$bot\"], n = 3 }\n",
        )
        .unwrap();
        let play = Play::load(&file).unwrap();
        assert_eq!(play.join_options(0).unwrap(), serde_json::json!({ "id": 0, "who": ["ann@0"], "n": 3 }));
        // Bot 3 wraps to row 1; a churned bot (generation 1) keeps its number's row.
        assert_eq!(play.join_options(3).unwrap()["who"][0], "bob@3");
        assert_eq!(play.token((1 << 32) + 2).unwrap().as_deref(), Some("a1"));
        std::fs::write(&file, "room = \"r\"\ncredentials = \"users.csv\"\ntoken = \"$password\"\n").unwrap();
        assert_eq!(Play::load(&file).unwrap_err(), "token: unknown variable $password (known: $bot, $user, $pass)");
        std::fs::write(dir.join("users.csv"), "user,pass\nann\n").unwrap();
        assert!(Play::load(&file).unwrap_err().contains("row 2 of"));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn bad_files_name_the_key() {
        let bad = |text: &str, want: &str| {
            let e = Play::parse(text).unwrap_err();
            assert!(e.contains(want), "{text:?} gave {e:?}, wanted {want:?}");
        };
        bad("method = \"join\"", "room: missing");
        bad("room = \"r\"\nmethod = \"find\"", "method:");
        bad("room = \"r\"\ncolour = 1", "colour: unknown key");
        bad("room = \"r\"\n[[send]]\nevery = \"1s\"", "send[0].type: missing");
        bad("room = \"r\"\n[[send]]\ntype = \"m\"\nevery = \"soon\"", "send[0].every:");
        bad("room = \"r\"\n[[send]]\ntype = \"m\"\nevery = \"1s\"\npayload = { a = \"$when\" }", "send[0].payload.a: unknown variable $when");
        bad("room = \"r\"\n[observe]\nkind = \"x\"", "observe.type: missing");
        bad("room = ", "");
        // A string starting with $ that is not a variable name goes as written.
        assert_eq!(
            Play::parse("room = \"r\"\n[[send]]\ntype = \"m\"\nevery = \"1s\"\npayload = \"$ 5\"").unwrap().sends[0].payload,
            Field::Str("$ 5".into())
        );
    }
}
