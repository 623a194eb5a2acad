//! placement-guard: admission server and CI checker for pod scheduling directives.
//!
//! The modules read top-down as the layers do; each uses only those above it, and every layer
//! down to [`ci`] is pure (no I/O, no async; `tests/layers.rs` keeps it so):
//! - [`k8s`]: the Kubernetes vocabulary: API views, workload kinds and where they keep their pod
//!   template, field paths and errors, the apiserver's validators, manifests with positions.
//! - [`core`]: the placement core: kube-scheduler's filters over a cluster snapshot.
//! - [`kruise`]: OpenKruise's WorkloadSpread, as Kruise validates and distributes it.
//! - [`rules`]: the rule file, the rule registry and the one evaluation path.
//! - [`admission`]: the AdmissionReview protocol over that evaluation.
//! - [`ci`]: the offline commands: `check` and its reports, `test`, `explain`.
//!
//! Adapters: [`server`] (HTTPS, TLS, metrics), [`cli`] (commands, file inputs) and [`live`]
//! (the Kubernetes API through `kube`); [`alloc`] is the binaries' global allocator.
// Also in Cargo.toml's [lints], which covers the binary and tests; `alloc` (the global
// allocator, unsafe by definition) is the one module that allows it.
#![deny(unsafe_code)]

pub mod alloc;

pub mod k8s;

pub mod core;

pub mod kruise;

pub mod rules;

pub mod admission;

pub mod ci;

pub mod cli;
pub mod live;
pub mod server;
