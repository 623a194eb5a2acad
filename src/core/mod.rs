//! The placement core: kube-scheduler's filter semantics as a pure library (no I/O, no async).

pub mod cluster;
pub mod filter;
pub mod labels;
pub mod limit_range;
pub mod nodeselector;
pub mod resources;
pub mod runtime_class;
pub mod satisfy;
pub mod snapshot;
pub mod store;
