//! How bots play *your* room: a small TOML file naming the room, how to join
//! it, the messages each bot sends (type, payload template, period) and the
//! message whose arrival measures the action-to-observer delay.
//!
//! ```toml
//! room = "battle"            # the room name given to server.define()
//! method = "joinOrCreate"    # or "join" / "create"
//! options = { mode = "duo" } # join options (JSON), as client.joinOrCreate(room, options)
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
//! A payload's keys go in name order. A payload string that is exactly `$t` (the send time, µs on the swarm's
//! clock), `$seq` (the bot's count of this message), `$bot` (the bot's id: its number, plus 2³² × its
//! generation when churn replaced it),
//! `$x` or `$y` (a random walk in 0..1000) is replaced when sent; every other
//! value goes as written.

use aggro_core::units::parse_positive_duration;
use std::time::Duration;

/// A bot's play.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Play {
    pub room: String,
    pub method: String,
    /// Join options, as JSON.
    pub options: serde_json::Value,
    pub sends: Vec<Send>,
    /// The message type that carries another bot's `from`/`seq`/`t` back.
    pub observe: Option<String>,
}

/// One message a bot sends on a schedule.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Send {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(serialize_with = "crate::clock::secs")]
    pub every: Duration,
    #[serde(skip)]
    pub payload: Field,
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
            sends: vec![Send {
                kind: "move".into(),
                every,
                payload: Field::Map(vec![var("from", Var::Bot), var("seq", Var::Seq), var("t", Var::T), var("x", Var::X), var("y", Var::Y)]),
            }],
            observe: Some("moved".into()),
        }
    }

    /// Reads a play file's text; errors name the key.
    pub fn parse(text: &str) -> Result<Play, String> {
        let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| e.message().to_string())?;
        for k in doc.keys() {
            if !["room", "method", "options", "send", "observe"].contains(&k.as_str()) {
                return Err(format!("{k}: unknown key (known: room, method, options, send, observe)"));
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
                if !["type", "every", "payload"].contains(&k.as_str()) {
                    return Err(format!("{at}.{k}: unknown key (known: type, every, payload)"));
                }
            }
            let kind = t.get("type").and_then(|v| v.as_str()).ok_or(format!("{at}.type: missing (the message type the room handles)"))?.to_string();
            let every = t.get("every").and_then(|v| v.as_str()).ok_or(format!("{at}.every: missing (a period such as \"100ms\")"))?;
            let every = parse_positive_duration(every).map_err(|e| format!("{at}.every: {e}"))?;
            let payload = t.get("payload").map_or(Ok(Field::Nil), |p| Field::from_toml(p, &format!("{at}.payload")))?;
            sends.push(Send { kind, every, payload });
        }
        let observe = match doc.get("observe") {
            None => None,
            Some(toml::Value::Table(t)) => match t.get("type") {
                Some(toml::Value::String(s)) => Some(s.clone()),
                _ => return Err("observe.type: missing (the message type that carries from, seq and t back)".into()),
            },
            Some(_) => return Err("observe: not a table".into()),
        };
        Ok(Play { room, method, options, sends, observe })
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
        assert_eq!(play.options, serde_json::json!({ "mode": "duo" }));
        assert_eq!(play.tick(), Some(Duration::from_millis(100)));
        let mut out = Vec::new();
        play.sends[0].payload.write(&Values { t: 5_000_000_000, seq: 7, bot: 3, x: 1.0, y: 2.0 }, &mut out);
        let v = rmpv::decode::read_value(&mut out.as_slice()).unwrap();
        assert_eq!(v["t"].as_u64(), Some(5_000_000_000));
        assert_eq!((v["seq"].as_u64(), v["from"].as_u64(), v["y"].as_f64()), (Some(7), Some(3), Some(2.0)));
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
