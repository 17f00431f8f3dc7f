//! aggro-targets
