//! aggro-workloads
