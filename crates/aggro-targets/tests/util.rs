//! Helpers for the targets' integration tests: the servers
//! `scripts/services.sh` started, and a runtime to drive a target on.

/// The URL of a test server from the environment. When the test script
/// started the servers (AGGRO_REQUIRE_SERVICES=1, always in CI) a missing
/// one fails the test; a developer running plain `cargo test` gets a skip.
pub fn service(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("AGGRO_REQUIRE_SERVICES").is_ok_and(|v| v == "1") || std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("{var} is not set: the server it names did not start (see scripts/services.sh)")
        }
        _ => {
            eprintln!("skipping: {var} is not set (run the tests through scripts/test.sh)");
            None
        }
    }
}

/// A current-thread runtime for one test.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}
