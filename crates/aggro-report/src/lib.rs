//! aggro-report
