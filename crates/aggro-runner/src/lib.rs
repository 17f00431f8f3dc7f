//! aggro-runner
