//! The offline commands over the one evaluation path: `check` (manifests in, diagnostics out,
//! rendered by [`report`]), `test` (rule-file suites) and `explain` (the placement core's answer
//! for one pod).

pub mod check;
pub mod explain;
pub mod report;
pub mod testsuite;
