//! OpenKruise's placement objects, as Kruise's webhooks validate and distribute them.

pub mod podspec;
pub mod workloadspread;
