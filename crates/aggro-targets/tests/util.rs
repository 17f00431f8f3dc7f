//! Helpers for the targets' integration tests: the servers
//! `scripts/services.sh` started, and a runtime to drive a target on.

pub use test_support::service;

/// A current-thread runtime for one test.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}
