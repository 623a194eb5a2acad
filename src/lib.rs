//! placement-guard: admission server and CI checker for pod scheduling directives.
//!
//! Pure layers (no I/O, no async): [`fieldpath`], [`core`], [`model`], [`workload`], [`config`],
//! [`rules`], [`admission`]. Adapters on top: [`tls`], [`server`], [`cli`].

pub mod admission;
pub mod check;
pub mod config;
pub mod core;
pub mod explain;
pub mod fieldpath;
pub mod manifest;
pub mod model;
pub mod report;
pub mod rules;
pub mod testsuite;
pub mod validation;
pub mod workload;
pub mod workloadspread;

pub mod cli;
pub mod inputs;
pub mod metrics;
pub mod server;
pub mod tls;
