//! The Kubernetes vocabulary the rest is written in: views of the API objects we read, the
//! workload kinds and where each keeps its pod template, field paths and errors in the
//! apiserver's style, the apiserver's own validators, manifests read with positions, and JSON read on
//! demand (what is skipped is only checked for structure).

pub mod fieldpath;
pub mod json_text;
pub mod manifest;
pub mod model;
pub mod ondemand;
pub mod semantic;
pub mod strategic;
pub mod validation;
pub mod workload;
