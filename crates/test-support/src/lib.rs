//! What the workspace's integration tests share (a dev-dependency only): whether the test script
//! started every server, the URL of one of them, and the shell lines the docs show ([`docs`]). Under
//! `scripts/test.sh` (which sets `AGGRO_REQUIRE_SERVICES=1`) and in CI, something a test needs and
//! cannot find fails the test; a developer running a plain `cargo test` gets a skip, said on stderr.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod docs;

/// Whether the test script asked for every server: a missing one then fails the test.
pub fn required() -> bool {
    std::env::var("AGGRO_REQUIRE_SERVICES").is_ok_and(|v| v == "1") || std::env::var("CI").is_ok_and(|v| v == "true")
}

/// `what` cannot be found: a failure when every server is required (`how` says how to get it),
/// else `None`, a skip.
pub fn missing<T>(what: &str, how: &str) -> Option<T> {
    assert!(!required(), "{what} is missing: {how}");
    eprintln!("skipping: {what} is missing ({how}, or run the tests through scripts/test.sh)");
    None
}

/// The URL of the test server the environment variable `var` names (`scripts/services.sh` writes
/// them), or a skip.
pub fn service(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => missing(&format!("{var}, the server it names,"), "scripts/services.sh starts it"),
    }
}
