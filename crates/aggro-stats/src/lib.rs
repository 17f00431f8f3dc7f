//! aggro-stats
