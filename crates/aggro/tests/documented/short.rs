//! A documented `aggro` line made short enough for the test suite, its flags otherwise as written:
//! seconds instead of minutes, tens of bots instead of thousands, a thousand users instead of
//! millions. Every change is to a flag's value, or a length added to a run that gives none (its
//! default is half a minute or more); the command and its other flags stay the reader's.

use super::value;
use std::time::{Duration, SystemTime};

/// The line's arguments (without `aggro`) shortened; `port` is a free port for a bench's own server.
pub fn shorten(args: &mut Vec<String>, port: u16) {
    // The planner only computes: its figures are the reader's.
    if args[0] == "plan" {
        return;
    }
    let command = format!("{} {}", args[0], args.get(1).map_or("", String::as_str));
    for (flag, most) in [("--users", 1000), ("--accounts", 500), ("--logins", 200), ("--periods", 20), ("--ccu", 20), ("--loaders", 8)] {
        cap(args, flag, most);
    }
    if args[0] == "pgbench" {
        cap(args, "-s", 1);
        set(args, "-T", "2");
    }
    if !matches!(value(args, "--rate"), Some("max") | None) {
        // The DynamoDB-API stand-in (moto) is one Python process, the Cassandra cluster three JVMs, on
        // the two cores the other tests share.
        let slow = value(args, "--target").is_some_and(|t| t.starts_with("dynamodb://") || t.starts_with("cassandra://"));
        cap(args, "--rate", if slow { 100 } else { 1000 });
    }
    for (flag, short) in [
        ("--stages", "1s:200,1s:500"),
        ("--duration", "2s"),
        ("--interval", "1s"),
        ("--step", "1s"),
        ("--game-minute", "1s"),
        ("--warmup", "1s"),
        ("--players", "20,80"),
    ] {
        if flag != "--players" || command == "arena bench" {
            set(args, flag, short);
        }
    }
    for set in args.iter_mut().filter(|a| a.starts_with("records=") || a.starts_with("users=")) {
        *set = format!("{}=1000", set.split('=').next().unwrap());
    }
    let start = humantime::format_rfc3339_seconds(SystemTime::now() + Duration::from_secs(2)).to_string();
    set(args, "--start-at", &start);
    match command.as_str() {
        "mobile find-max" | "scenario find-max" => {
            add(args, "--step", "1s");
            add(args, "--max-trials", "3");
        }
        "arena bench" => {
            add(args, "--duration", "2s");
            add(args, "--warmup", "1s");
            add(args, "--players", "20,80");
            add(args, "--port", &port.to_string());
        }
        "mobile run" | "scenario run" | "arena swarm" if !has(args, "--stages") => add(args, "--duration", "2s"),
        "mmo play" if has(args, "--realtime") => add(args, "--duration", "2s"),
        _ if args[0] == "pgbench" && !has(args, "-i") && !has(args, "-T") => add(args, "--duration", "2s"),
        _ => {}
    }
}

fn has(args: &[String], flag: &str) -> bool {
    args.iter().any(|a| a == flag)
}

/// `flag`'s value, where the line gives it, replaced by `to`.
fn set(args: &mut [String], flag: &str, to: &str) {
    if let Some(i) = args.iter().position(|a| a == flag)
        && let Some(v) = args.get_mut(i + 1)
    {
        *v = to.to_string();
    }
}

/// `flag`'s numeric value, where the line gives it, made at most `most`.
fn cap(args: &mut [String], flag: &str, most: u64) {
    if let Some(n) = value(args, flag).and_then(|v| v.parse::<u64>().ok())
        && n > most
    {
        set(args, flag, &most.to_string());
    }
}

/// `flag value` added where the line does not give the flag.
fn add(args: &mut Vec<String>, flag: &str, to: &str) {
    if !has(args, flag) {
        args.extend([flag.to_string(), to.to_string()]);
    }
}
