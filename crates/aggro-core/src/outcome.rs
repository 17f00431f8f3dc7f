//! What can go wrong with one request, as a small closed set of classes.
//!
//! A failed request is a measurement: it is counted by class, per operation
//! and interval, never by its message text (which would make every distinct
//! message its own counter and allocate on the hot path).

use serde::{Deserialize, Serialize};

/// The class of a failed (or retried) request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ErrorClass {
    /// Two transactions touched the same data; the store refused one
    /// (SQLSTATE 40001, DynamoDB TransactionConflict, SQLITE_BUSY, WATCH abort).
    Conflict,
    /// The store broke a deadlock by aborting this transaction (SQLSTATE 40P01).
    Deadlock,
    /// A held lease or lock kept the request from proceeding.
    Locked,
    /// The store refused the request for lack of capacity (DynamoDB
    /// throughput exceeded, a rate limiter): capacity, not correctness.
    Throttled,
    /// The request did not complete within its deadline.
    Timeout,
    /// A connection could not be made.
    Connect,
    /// The connection broke while the request was under way.
    Disconnected,
    /// The store answered with an error of its own.
    Server,
    /// The store's answer could not be understood.
    Protocol,
    /// The data was not as the workload expects (a missing row, a wrong schema).
    Data,
    /// The request was written but what makes it durable failed (a sync's I/O error): whether the
    /// store keeps it is unknown.
    InDoubt,
    /// Anything else.
    Other,
}

impl ErrorClass {
    /// Every class, in the order used for counters and reports.
    pub const ALL: [ErrorClass; 12] = [
        ErrorClass::Conflict,
        ErrorClass::Deadlock,
        ErrorClass::Locked,
        ErrorClass::Throttled,
        ErrorClass::Timeout,
        ErrorClass::Connect,
        ErrorClass::Disconnected,
        ErrorClass::Server,
        ErrorClass::Protocol,
        ErrorClass::Data,
        ErrorClass::InDoubt,
        ErrorClass::Other,
    ];

    /// Position in [`ErrorClass::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Conflicts are reported apart from errors: they are the store working
    /// as designed under contention, not a failure.
    pub fn is_conflict(self) -> bool {
        matches!(self, ErrorClass::Conflict | ErrorClass::Deadlock | ErrorClass::Locked)
    }

    /// Whether a request that failed so may still have committed: its answer never came or could not
    /// be read (a timeout, a broken connection, a reply not understood, a sync that failed), as against
    /// a store that refused it. A verify counts these commits as in doubt.
    pub fn may_have_committed(self) -> bool {
        matches!(self, ErrorClass::Timeout | ErrorClass::Disconnected | ErrorClass::Protocol | ErrorClass::InDoubt | ErrorClass::Other)
    }

    /// The name used in reports and result files.
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Conflict => "conflict",
            ErrorClass::Deadlock => "deadlock",
            ErrorClass::Locked => "locked",
            ErrorClass::Throttled => "throttled",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Connect => "connect",
            ErrorClass::Disconnected => "disconnected",
            ErrorClass::Server => "server",
            ErrorClass::Protocol => "protocol",
            ErrorClass::Data => "data",
            ErrorClass::InDoubt => "in-doubt",
            ErrorClass::Other => "other",
        }
    }
}

impl std::fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// An error from a store, carrying its class and a human-readable cause.
///
/// The message is kept for the first occurrence shown to a user; counting
/// uses only the class.
#[derive(Debug, thiserror::Error)]
#[error("{class}: {message}")]
pub struct StoreError {
    /// The class it is counted under.
    pub class: ErrorClass,
    /// What happened, for a person.
    pub message: String,
}

impl StoreError {
    /// A new error of `class`.
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        Self { class, message: message.into() }
    }
}

/// The first message seen for each error class, so a run can tell a person
/// *why* requests failed without keeping every message. Only touched when a
/// request fails.
#[derive(Debug, Default)]
pub struct ErrorSamples {
    first: std::sync::Mutex<Vec<(ErrorClass, String)>>,
}

impl ErrorSamples {
    /// Keeps `error`'s message if it is the first of its class.
    pub fn note(&self, error: &StoreError) {
        let mut first = self.first.lock().unwrap_or_else(|e| e.into_inner());
        if !first.iter().any(|(c, _)| *c == error.class) {
            first.push((error.class, error.message.clone()));
        }
    }

    /// The samples kept, in the order first seen.
    pub fn snapshot(&self) -> Vec<(ErrorClass, String)> {
        self.first.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_keep_the_first_message_per_class() {
        let s = ErrorSamples::default();
        s.note(&StoreError::new(ErrorClass::Timeout, "a"));
        s.note(&StoreError::new(ErrorClass::Timeout, "b"));
        s.note(&StoreError::new(ErrorClass::Server, "c"));
        assert_eq!(s.snapshot(), vec![(ErrorClass::Timeout, "a".into()), (ErrorClass::Server, "c".into())]);
    }

    #[test]
    fn indices_match_the_table() {
        for (i, class) in ErrorClass::ALL.iter().enumerate() {
            assert_eq!(class.index(), i);
        }
    }
}
