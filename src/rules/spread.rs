//! `topology-spread` (validation, as kube-apiserver's `validateTopologySpreadConstraints`, plus
//! warnings for constraints that silently spread nothing) and `topology-spread-defaults` (the rule
//! file's default constraints added to objects that have none).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::TopologySpreadConstraint;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::{json, Value};

use crate::config::SpreadDefaults;
use crate::core::labels::selector_matches;
use crate::fieldpath::{FieldError, FieldPath};
use crate::validation::{validate_label_name, validate_label_selector};
use crate::workload::{Kind, PodTemplate};

pub const SKIP_ANNOTATION: &str = "placement-guard.io/spread-defaults";
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";
const NOT_POSITIVE: &str = "must be greater than zero";

/// Every apiserver error of `constraints` under `path` (`spec.topologySpreadConstraints`).
/// `merged_pod`: the constraints belong to a Pod the apiserver (1.34+) has already merged
/// matchLabelKeys into, so one `key In [...]` expression per key is expected.
pub fn validate_constraints(
    constraints: &[TopologySpreadConstraint],
    path: &FieldPath,
    merged_pod: bool,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, c) in constraints.iter().enumerate() {
        let p = path.index(i);
        if c.max_skew <= 0 {
            errs.push(FieldError::invalid(
                p.child("maxSkew"),
                json!(c.max_skew),
                NOT_POSITIVE,
            ));
        }
        if c.topology_key.is_empty() {
            errs.push(FieldError::required(
                p.child("topologyKey"),
                "can not be empty",
            ));
        }
        let action = c.when_unsatisfiable.as_str();
        if !matches!(action, "DoNotSchedule" | "ScheduleAnyway") {
            errs.push(FieldError::not_supported(
                p.child("whenUnsatisfiable"),
                json!(action),
                &["DoNotSchedule", "ScheduleAnyway"],
            ));
        }
        if constraints[i + 1..].iter().any(|o| {
            o.topology_key == c.topology_key && o.when_unsatisfiable == c.when_unsatisfiable
        }) {
            errs.push(FieldError::duplicate(
                p.child("{topologyKey, whenUnsatisfiable}"),
                json!(format!("{{{}, {}}}", c.topology_key, action)),
            ));
        }
        if let Some(md) = c.min_domains {
            if md <= 0 {
                errs.push(FieldError::invalid(
                    p.child("minDomains"),
                    json!(md),
                    NOT_POSITIVE,
                ));
            }
            if action != "DoNotSchedule" {
                errs.push(FieldError::invalid(
                    p.child("minDomains"),
                    json!(md),
                    format!(
                        "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"
                    ),
                ));
            }
        }
        for (field, policy) in [
            ("nodeAffinityPolicy", &c.node_affinity_policy),
            ("nodeTaintsPolicy", &c.node_taints_policy),
        ] {
            if let Some(v) = policy {
                if v != "Honor" && v != "Ignore" {
                    errs.push(FieldError::not_supported(
                        p.child(field),
                        json!(v),
                        &["Honor", "Ignore"],
                    ));
                }
            }
        }
        errs.extend(validate_match_label_keys(
            c,
            &p.child("matchLabelKeys"),
            merged_pod,
        ));
        if let Some(sel) = &c.label_selector {
            errs.extend(validate_label_selector(sel, &p.child("labelSelector")));
        }
    }
    errs
}

fn validate_match_label_keys(
    c: &TopologySpreadConstraint,
    path: &FieldPath,
    merged_pod: bool,
) -> Vec<FieldError> {
    let keys = c.match_label_keys.as_deref().unwrap_or(&[]);
    if keys.is_empty() {
        return Vec::new();
    }
    let mut errs = Vec::new();
    let sel = c.label_selector.as_ref();
    if sel.is_none() {
        errs.push(FieldError::forbidden(
            path.clone(),
            "must not be specified when labelSelector is not set",
        ));
    }
    for (i, key) in keys.iter().enumerate() {
        errs.extend(validate_label_name(key, &path.index(i)));
        let Some(sel) = sel else { continue };
        let in_labels = sel
            .match_labels
            .as_ref()
            .is_some_and(|m| m.contains_key(key));
        let in_exprs = sel
            .match_expressions
            .as_deref()
            .unwrap_or(&[])
            .iter()
            .filter(|e| &e.key == key)
            .count();
        let allowed_exprs = usize::from(merged_pod);
        if in_labels || in_exprs > allowed_exprs {
            errs.push(FieldError::invalid(
                path.index(i),
                json!(key),
                "exists in both matchLabelKeys and labelSelector",
            ));
        }
    }
    errs
}

fn describe_labels(labels: &BTreeMap<String, String>) -> String {
    if labels.is_empty() {
        return "none".to_string();
    }
    labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Mistakes the apiserver accepts but that make a constraint spread nothing.
pub fn warnings(t: &PodTemplate) -> Vec<FieldError> {
    let path = t.spec_path().child("topologySpreadConstraints");
    let labels = t.template_meta().labels();
    let mut out = Vec::new();
    for (i, c) in t.spec.spread_constraints().iter().enumerate() {
        let p = path.index(i).child("labelSelector");
        match &c.label_selector {
            None => out.push(FieldError::required(
                p,
                "without a labelSelector the constraint counts no pods and spreads nothing; select this workload's own pods",
            )),
            Some(sel) if !selector_matches(sel, labels) => out.push(FieldError::invalid(
                p,
                serde_json::to_value(sel).unwrap_or(Value::Null),
                format!(
                    "does not match the pod's own labels ({}), so the pod is not counted by its own constraint and the spread drifts",
                    describe_labels(labels)
                ),
            )),
            Some(_) => {}
        }
    }
    out
}

/// What defaulting decided for one object.
#[derive(Clone, Debug, PartialEq)]
pub enum Defaulting {
    /// Nothing to do (already has constraints, exempt, opted out, DaemonSet, disabled).
    NotApplicable,
    /// Left alone, with the reason the user should hear.
    Skipped(String),
    /// Constraints to set at `path`.
    Add {
        path: FieldPath,
        constraints: Vec<TopologySpreadConstraint>,
    },
}

fn opted_out(t: &PodTemplate) -> bool {
    [&t.meta, t.template_meta()]
        .iter()
        .any(|m| m.annotation(SKIP_ANNOTATION) == Some("skip"))
}

fn owned_by_daemonset(t: &PodTemplate) -> bool {
    t.meta
        .owner_references
        .as_deref()
        .unwrap_or(&[])
        .iter()
        .any(|o| o.kind == "DaemonSet")
}

/// The default constraints for `t`, if it should get any.
pub fn defaults(t: &PodTemplate, namespace: &str, cfg: &SpreadDefaults) -> Defaulting {
    if !cfg.enabled
        || cfg.constraints.is_empty()
        || t.kind == Kind::DaemonSet
        || owned_by_daemonset(t)
        || !t.spec.spread_constraints().is_empty()
        || cfg.exempt_namespaces.iter().any(|n| n == namespace)
        || opted_out(t)
    {
        return Defaulting::NotApplicable;
    }
    let labels = t.template_meta().labels();
    let (selector, mut keys) = match (&t.selector, t.kind) {
        (Some(sel), Kind::Deployment) => (sel.clone(), vec![POD_TEMPLATE_HASH.to_string()]),
        (Some(sel), k) if k != Kind::Pod => (sel.clone(), Vec::new()),
        _ => {
            let picked: BTreeMap<String, String> = labels
                .iter()
                .filter(|(k, _)| cfg.selector_label_keys.contains(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if picked.is_empty() {
                return Defaulting::Skipped(format!(
                    "topology spread constraints were not defaulted: the {} has none of the labels {} to select its peers by; add one, or set topologySpreadConstraints",
                    if t.kind == Kind::Pod { "pod" } else { "pod template" },
                    cfg.selector_label_keys.join(", ")
                ));
            }
            let keys = if labels.contains_key(POD_TEMPLATE_HASH) {
                vec![POD_TEMPLATE_HASH.to_string()]
            } else {
                Vec::new()
            };
            (
                LabelSelector {
                    match_labels: Some(picked),
                    match_expressions: None,
                },
                keys,
            )
        }
    };
    // A key the selector already names would be a validation error.
    keys.retain(|k| {
        !selector
            .match_labels
            .as_ref()
            .is_some_and(|m| m.contains_key(k))
            && !selector
                .match_expressions
                .as_deref()
                .unwrap_or(&[])
                .iter()
                .any(|e| &e.key == k)
    });
    let keys = (!keys.is_empty()).then_some(keys);
    Defaulting::Add {
        path: t.spec_path().child("topologySpreadConstraints"),
        constraints: cfg
            .constraints
            .iter()
            .map(|c| c.to_constraint(Some(selector.clone()), keys.clone()))
            .collect(),
    }
}

#[cfg(test)]
mod tests;
