//! What scripts measure and count by name (`measure("login", fn)`,
//! `count("bought")`, every HTTP request as `http`, a failed one by class), and the errors they raised: histograms of the open
//! interval, taken by the swarm's owner as each interval closes.

use aggro_stats::Histogram;

/// An interval's histograms and counters by name.
pub type Taken = (Vec<(String, Histogram)>, Vec<(String, u64)>);

/// An interval's failures: (name, class, count).
pub type Failed = Vec<(String, String, u64)>;

use crate::profile::ERRORS_KEPT;

/// Types of received messages counted by name; the rest are counted together.
pub const RECEIVED_TYPES: usize = 16;

/// Named measurements and counters of the open interval, and the script's first errors.
#[derive(Debug, Default)]
pub struct Measures {
    /// (name, histogram of µs×1000 = ns) in the order names were first used.
    timed: Vec<(String, Histogram)>,
    counted: Vec<(String, u64)>,
    /// Failures of timed names by class, this interval.
    failed: Failed,
    /// Messages and events received by type (a Socket.IO event's name, a message's type), this interval.
    received: Vec<(String, u64)>,
    /// The first errors' messages with their tracebacks, and how many there were in all.
    pub errors: Vec<String>,
    pub error_count: u64,
    /// Errors of `errors` already taken by [`Measures::take_new_errors`].
    taken: usize,
    /// Bots that started their script, this interval.
    pub started: u64,
    /// Attempts to come back of players who lost their server, this interval.
    pub reconnect_attempts: u64,
}

impl Measures {
    /// Records `us` µs under `name`.
    pub fn record(&mut self, name: &str, us: u64) {
        let h = match self.timed.iter().position(|(n, _)| n == name) {
            Some(k) => &mut self.timed[k].1,
            None => {
                self.timed.push((name.to_string(), aggro_stats::new_histogram()));
                &mut self.timed.last_mut().expect("pushed").1
            }
        };
        // The histogram resizes itself to take the value (`saturating_record` would clamp it to its range).
        let _ = h.record(us.saturating_mul(1000));
    }

    /// Counts a failure of `name`, of `class` (its time is not a success's, so it is not recorded).
    pub fn fail(&mut self, name: &str, class: &str) {
        match self.failed.iter_mut().find(|(n, c, _)| n == name && c == class) {
            Some(f) => f.2 += 1,
            None => self.failed.push((name.to_string(), class.to_string(), 1)),
        }
    }

    /// Counts a message or event of type `kind` received; past [`RECEIVED_TYPES`] types, under `(more types)`.
    pub fn heard(&mut self, kind: &str) {
        if let Some(r) = self.received.iter_mut().find(|(k, _)| k == kind) {
            r.1 += 1;
        } else if self.received.len() < RECEIVED_TYPES {
            self.received.push((kind.to_string(), 1));
        } else {
            self.heard("(more types)");
        }
    }

    /// Takes the interval's counts of messages received by type.
    pub fn take_received(&mut self) -> Vec<(String, u64)> {
        std::mem::take(&mut self.received)
    }

    /// Takes the interval's counts of bots started and of attempts to come back.
    pub fn take_starts(&mut self) -> (u64, u64) {
        (std::mem::take(&mut self.started), std::mem::take(&mut self.reconnect_attempts))
    }

    /// Takes the interval's failures.
    pub fn take_failed(&mut self) -> Failed {
        std::mem::take(&mut self.failed)
    }

    /// Adds `n` to counter `name`.
    pub fn count(&mut self, name: &str, n: u64) {
        match self.counted.iter_mut().find(|(c, _)| c == name) {
            Some(c) => c.1 += n,
            None => self.counted.push((name.to_string(), n)),
        }
    }

    /// Notes a script error; true for the first few, which are kept (and should be shown).
    pub fn error(&mut self, text: String) -> bool {
        self.error_count += 1;
        let keep = self.errors.len() < ERRORS_KEPT;
        if keep {
            self.errors.push(text);
        }
        keep
    }

    /// The errors kept since the last call.
    pub fn take_new_errors(&mut self) -> Vec<String> {
        let new = self.errors[self.taken..].to_vec();
        self.taken = self.errors.len();
        new
    }

    /// Takes the interval's histograms and counters (names keep their order; a name without
    /// measurements this interval gives an empty histogram).
    pub fn take_interval(&mut self) -> Taken {
        let timed = self.timed.iter_mut().map(|(n, h)| (n.clone(), std::mem::replace(h, aggro_stats::new_histogram()))).collect();
        let counted = self.counted.iter_mut().map(|(n, c)| (n.clone(), std::mem::take(c))).collect();
        (timed, counted)
    }
}

/// How an HTTP answer failed, if it did, in the result file's failure classes: no answer (`connect` when
/// no connection was made, `timeout`, else `disconnected`), or a status of 400 and above (`server` for
/// 5xx, `throttled` for 429, `protocol` for the other 4xx).
pub(super) fn failure_class(answer: &Result<(u16, &[u8]), &str>) -> Option<&'static str> {
    match answer {
        Ok((status, _)) if *status >= 500 => Some("server"),
        Ok((429, _)) => Some("throttled"),
        Ok((status, _)) if *status >= 400 => Some("protocol"),
        Ok(_) => None,
        Err(why) if why.starts_with("cannot connect") || why.contains("refused") => Some("connect"),
        Err(why) if why.contains("timed out") => Some("timeout"),
        Err(_) => Some("disconnected"),
    }
}

/// How a call timed by `measure` failed, if it did, and the reason to quote: it returned `false`, or
/// `nil` and a reason (Lua's way of failing, `http.post`'s among them: a transport reason keeps its class —
/// `connect`, `timeout`, `disconnected` — any other is `other`), or an HTTP answer of status 400 and above
/// (classed as an HTTP request's). `n` is how many values it returned: none is a success.
pub(super) fn measured_failure(n: i64, first: &mlua::Value, second: &mlua::Value) -> mlua::Result<Option<(&'static str, String)>> {
    use mlua::Value;
    let reason = |why: &Value| match why {
        Value::String(s) => {
            let why = s.to_string_lossy();
            let class = match failure_class(&Err(&why)) {
                Some(class @ ("connect" | "timeout")) => class,
                _ if ["closed", "reset", "disconnect"].iter().any(|w| why.contains(w)) => "disconnected",
                _ => "other",
            };
            (class, why)
        }
        _ => ("other", "false".to_string()),
    };
    Ok(match first {
        _ if n == 0 => None,
        Value::Boolean(false) => Some(reason(second)),
        Value::Nil if !second.is_nil() => Some(reason(second)),
        Value::Table(t) => {
            let status = match t.raw_get::<Value>("status")? {
                Value::Integer(status) => u16::try_from(status).ok(),
                Value::Number(status) if (0.0..65536.0).contains(&status) => Some(status as u16),
                _ => None,
            };
            status.and_then(|s| Some((failure_class(&Ok((s, &[])))?, format!("HTTP {s}"))))
        }
        _ => None,
    })
}
