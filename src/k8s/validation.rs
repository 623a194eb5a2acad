//! apimachinery's name, label and label-selector validation, with its messages.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelectorTerm, PodAffinityTerm, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::json;

use crate::k8s::fieldpath::{FieldError, FieldPath};
use crate::k8s::model::PodSpec;

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
pub(crate) const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";

// The patterns are ASCII: matching bytes is matching characters (a byte of a multi-byte
// character is never ASCII), without decoding.

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

pub fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return false;
    };
    let ok = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    ok(first) && ok(last) && b.iter().all(|c| ok(c) || *c == b'-')
}

/// Whether [`qualified_name_errors`] has nothing to say, without building its messages (a label
/// key checked on every admission).
pub fn is_qualified_name(value: &str) -> bool {
    let b = value.as_bytes();
    // One pass over a DNS-subdomain prefix, up to its `/`: each `.`-separated label starts and
    // ends with a lowercase letter or digit, with `-` only inside. `prev` is the byte before,
    // `.` at the start of a label.
    let mut prev = b'.';
    let mut slash = None;
    for (i, &c) in b.iter().enumerate() {
        let class = CLASS[usize::from(c)];
        let ok = if class & LOWER_ALNUM != 0 {
            true
        } else if c == b'-' {
            prev != b'.'
        } else if c == b'.' {
            CLASS[usize::from(prev)] & LOWER_ALNUM != 0
        } else if c == b'/' {
            slash = Some(i);
            break;
        } else {
            // Not a prefix, but maybe a name without one (`MyName`, `a_b`).
            break;
        };
        if !ok {
            break;
        }
        prev = c;
    }
    let name = match slash {
        Some(i) => {
            let prefix_ok = i > 0 && i <= 253 && CLASS[usize::from(prev)] & LOWER_ALNUM != 0;
            if !prefix_ok {
                return false;
            }
            &b[i + 1..]
        }
        None => b,
    };
    let (Some(&first), Some(&last)) = (name.first(), name.last()) else {
        return false;
    };
    name.len() <= 63
        && CLASS[usize::from(first)] & ALNUM != 0
        && CLASS[usize::from(last)] & ALNUM != 0
        && name.iter().all(|&c| CLASS[usize::from(c)] & NAME != 0)
}

const LOWER_ALNUM: u8 = 1;
const ALNUM: u8 = 2;
const NAME: u8 = 4;
/// Per byte: lowercase letter or digit, letter or digit, name character (also `-_.`).
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        let lower = b.is_ascii_lowercase() || b.is_ascii_digit();
        let alnum = b.is_ascii_alphanumeric();
        t[c] = (if lower { LOWER_ALNUM } else { 0 })
            | (if alnum { ALNUM | NAME } else { 0 })
            | (if matches!(b, b'-' | b'_' | b'.') {
                NAME
            } else {
                0
            });
        c += 1;
    }
    t
};

/// `IsDNS1123Subdomain`'s messages. Lengths are in bytes, as `MaxLenError` says them since 1.3x
/// (measured against kube-apiserver v1.36.2).
pub fn dns1123_subdomain_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push("must be no more than 253 bytes".to_string());
    }
    if !s.split('.').all(is_dns1123_label) {
        errs.push(format!("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '{DNS1123_SUBDOMAIN_FMT}')"));
    }
    errs
}

/// `IsQualifiedName` as `ValidateLabelName` reports it: an optional DNS subdomain prefix and '/',
/// then a name of at most 63 characters; a key of more than two parts is called "a valid label
/// key", as kube-apiserver v1.36.2 calls it (`tests/apiserver.rs`).
pub fn qualified_name_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    dns1123_subdomain_errors(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            return vec![format!("a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{QUALIFIED_NAME_FMT}') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 bytes".to_string());
    }
    // An empty name fails the pattern too: upstream reports both.
    if !is_qualified_name_part(name) {
        errs.push(format!("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{QUALIFIED_NAME_FMT}')"));
    }
    errs
}

/// `IsValidLabelValue`
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push("must be no more than 63 bytes".to_string());
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        errs.push(format!("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '{LABEL_VALUE_FMT}')"));
    }
    errs
}

/// `ValidateLabelName`
pub fn validate_label_name(name: &str, path: &FieldPath) -> Vec<FieldError> {
    if is_qualified_name(name) {
        return Vec::new();
    }
    qualified_name_errors(name)
        .into_iter()
        .map(|m| FieldError::invalid(path.clone(), json!(name), m))
        .collect()
}

/// `ValidateLabels`
pub fn validate_labels(labels: &BTreeMap<String, String>, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (k, v) in labels {
        errs.extend(validate_label_name(k, path));
        errs.extend(
            label_value_errors(v)
                .into_iter()
                .map(|m| FieldError::invalid(path.clone(), json!(v), m)),
        );
    }
    errs
}

/// `ValidateLabelSelector` (invalid label values not allowed).
pub fn validate_label_selector(sel: &LabelSelector, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, r) in sel
        .match_expressions
        .as_deref()
        .unwrap_or(&[])
        .iter()
        .enumerate()
    {
        let p = path.child("matchExpressions").index(i);
        let values = r.values.as_deref().unwrap_or(&[]);
        match r.operator.as_str() {
            "In" | "NotIn" => {
                if values.is_empty() {
                    errs.push(FieldError::required(
                        p.child("values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    errs.push(FieldError::forbidden(
                        p.child("values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            other => errs.push(FieldError::invalid(
                p.child("operator"),
                json!(other),
                "not a valid selector operator",
            )),
        }
        errs.extend(validate_label_name(&r.key, &p.child("key")));
        for (j, v) in values.iter().enumerate() {
            errs.extend(
                label_value_errors(v)
                    .into_iter()
                    .map(|m| FieldError::invalid(p.child("values").index(j), json!(v), m)),
            );
        }
    }
    if let Some(labels) = &sel.match_labels {
        errs.extend(validate_labels(labels, &path.child("matchLabels")));
    }
    errs
}

/// `ValidateNodeSelectorTerm`, with Kubernetes' messages (as kube-apiserver v1.36.2 words
/// them: an unknown operator is an Invalid value). `label_values`: whether expression values
/// must be label values, as v1.36.2 (and OpenKruise's webhook, which calls it) requires of
/// required node affinity, not of preferred terms.
pub fn validate_term(
    term: &NodeSelectorTerm,
    path: &FieldPath,
    label_values: bool,
) -> Vec<FieldError> {
    let mut out = Vec::new();
    for (j, r) in term
        .match_expressions
        .as_deref()
        .unwrap_or(&[])
        .iter()
        .enumerate()
    {
        let p = path.child("matchExpressions").index(j);
        let values = r.values.as_deref().unwrap_or(&[]);
        match r.operator.as_str() {
            "In" | "NotIn" if values.is_empty() => out.push(FieldError::required(
                p.child("values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => out.push(FieldError::forbidden(
                p.child("values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            // Only the count: the value is read as an integer when matching (a value that is
            // not one matches no node), not when validating.
            "Gt" | "Lt" if values.len() != 1 => out.push(FieldError::required(
                p.child("values"),
                "must be specified single value when `operator` is 'Lt' or 'Gt'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
            other => out.push(FieldError::invalid(
                p.child("operator"),
                json!(other),
                "not a valid selector operator",
            )),
        }
        out.extend(validate_label_name(&r.key, &p.child("key")));
        for (k, v) in values.iter().enumerate().filter(|_| label_values) {
            out.extend(
                label_value_errors(v)
                    .into_iter()
                    .map(|m| FieldError::invalid(p.child("values").index(k), json!(v), m)),
            );
        }
    }
    for (j, r) in term
        .match_fields
        .as_deref()
        .unwrap_or(&[])
        .iter()
        .enumerate()
    {
        // `ValidateNodeFieldSelectorRequirement`: the operator, then the key and its values.
        let p = path.child("matchFields").index(j);
        let values = r.values.as_deref().unwrap_or(&[]);
        match r.operator.as_str() {
            "In" | "NotIn" if values.len() != 1 => out.push(FieldError::required(
                p.child("values"),
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
            )),
            "In" | "NotIn" => {}
            other => out.push(FieldError::invalid(
                p.child("operator"),
                json!(other),
                "not a valid selector operator",
            )),
        }
        if r.key == "metadata.name" {
            for (k, v) in values.iter().enumerate() {
                out.extend(
                    dns1123_subdomain_errors(v)
                        .into_iter()
                        .map(|m| FieldError::invalid(p.child("values").index(k), json!(v), m)),
                );
            }
        } else {
            out.push(FieldError::invalid(
                p.child("key"),
                json!(r.key),
                "not a valid field selector key",
            ));
        }
    }
    out
}

/// `IsDNS1123Label` as `ValidateNamespaceName` reports it.
pub fn dns1123_label_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push("must be no more than 63 bytes".to_string());
    }
    if !is_dns1123_label(s) {
        errs.push(format!("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '{DNS1123_LABEL_FMT}')"));
    }
    errs
}

/// kube-apiserver's own validation of a pod spec's scheduling directives (`ValidatePodSpec`'s
/// nodeSelector, affinity, tolerations and schedulingGates), with its messages. `merge`: the
/// pod's labels, when the apiserver merges a pod affinity term's `matchLabelKeys` and
/// `mismatchLabelKeys` into its selector before validating it (a Pod created as written).
/// What rules report is left to them: topology spread constraints, and a required
/// anti-affinity term's topologyKey (the hard-anti-affinity rule).
pub fn validate_scheduling(
    spec: &PodSpec,
    path: &FieldPath,
    merge: Option<&BTreeMap<String, String>>,
) -> Vec<FieldError> {
    let mut out = Vec::new();
    if let Some(sel) = &spec.node_selector {
        out.extend(validate_labels(sel, &path.child("nodeSelector")));
    }
    if let Some(a) = &spec.affinity {
        let ap = path.child("affinity");
        if let Some(na) = &a.node_affinity {
            let np = ap.child("nodeAffinity");
            if let Some(req) = &na.required_during_scheduling_ignored_during_execution {
                let tp = np
                    .child("requiredDuringSchedulingIgnoredDuringExecution")
                    .child("nodeSelectorTerms");
                if req.node_selector_terms.is_empty() {
                    out.push(FieldError::required(
                        tp,
                        "must have at least one node selector term",
                    ));
                } else {
                    for (i, t) in req.node_selector_terms.iter().enumerate() {
                        out.extend(validate_term(t, &tp.index(i), true));
                    }
                }
            }
            let pp = np.child("preferredDuringSchedulingIgnoredDuringExecution");
            for (i, t) in na
                .preferred_during_scheduling_ignored_during_execution
                .iter()
                .flatten()
                .enumerate()
            {
                weight(t.weight, &pp.index(i), &mut out);
                out.extend(validate_term(
                    &t.preference,
                    &pp.index(i).child("preference"),
                    false,
                ));
            }
        }
        let pod_terms = [
            (
                "podAffinity",
                a.pod_affinity.as_ref().map(|p| {
                    (
                        &p.required_during_scheduling_ignored_during_execution,
                        &p.preferred_during_scheduling_ignored_during_execution,
                    )
                }),
            ),
            (
                "podAntiAffinity",
                a.pod_anti_affinity.as_ref().map(|p| {
                    (
                        &p.required_during_scheduling_ignored_during_execution,
                        &p.preferred_during_scheduling_ignored_during_execution,
                    )
                }),
            ),
        ];
        for (name, terms) in pod_terms {
            let Some((required, preferred)) = terms else {
                continue;
            };
            let p = ap.child(name);
            let rp = p.child("requiredDuringSchedulingIgnoredDuringExecution");
            // A required anti-affinity term's topologyKey is the hard-anti-affinity rule's.
            let key = name == "podAffinity";
            for (i, t) in required.iter().flatten().enumerate() {
                pod_affinity_term(t, &rp.index(i), key, merge, &mut out);
            }
            let pp = p.child("preferredDuringSchedulingIgnoredDuringExecution");
            for (i, t) in preferred.iter().flatten().enumerate() {
                weight(t.weight, &pp.index(i), &mut out);
                let at = pp.index(i).child("podAffinityTerm");
                pod_affinity_term(&t.pod_affinity_term, &at, true, merge, &mut out);
            }
        }
    }
    for (i, t) in spec.tolerations.iter().flatten().enumerate() {
        out.extend(validate_toleration(t, &path.child("tolerations").index(i)));
    }
    let gp = path.child("schedulingGates");
    let gates = spec.scheduling_gates.as_deref().unwrap_or(&[]);
    for (i, g) in gates.iter().enumerate() {
        out.extend(validate_label_name(&g.name, &gp.index(i)));
        if gates[..i].iter().any(|o| o.name == g.name) {
            out.push(FieldError::duplicate(gp.index(i), json!(g.name)));
        }
    }
    out
}

/// A preferred term's weight, 1 to 100.
fn weight(w: i32, path: &FieldPath, out: &mut Vec<FieldError>) {
    if !(1..=100).contains(&w) {
        out.push(FieldError::invalid(
            path.child("weight"),
            json!(w),
            "must be in the range 1-100",
        ));
    }
}

/// A `matchLabelKeys` key the selector names after `matchLabels` or an earlier expression,
/// once `merged` (the expressions the apiserver appends for the pod's keys) follow what is
/// written: `exists in both matchLabelKeys and labelSelector`. Upstream reports it at the
/// term's or constraint's `[i][j]`; here at `path[j]`, the `matchLabelKeys` entry to remove
/// (the last index of a repeated key, as in upstream's map).
pub fn keys_in_selector<'a>(
    keys: &[String],
    sel: &'a LabelSelector,
    merged: impl Iterator<Item = &'a str>,
    path: &FieldPath,
) -> Vec<FieldError> {
    let index_of = |key: &str| keys.iter().rposition(|k| k == key);
    let mut seen: Vec<&str> = sel
        .match_labels
        .iter()
        .flatten()
        .map(|(k, _)| k.as_str())
        .collect();
    let written = sel
        .match_expressions
        .iter()
        .flatten()
        .map(|e| e.key.as_str());
    let mut out = Vec::new();
    for key in written.chain(merged) {
        if let (Some(i), true) = (index_of(key), seen.contains(&key)) {
            out.push(FieldError::invalid(
                path.index(i),
                json!(key),
                "exists in both matchLabelKeys and labelSelector",
            ));
        }
        seen.push(key);
    }
    out
}

/// `validatePodAffinityTerm`; `topology_key`: whether its topologyKey is checked here.
fn pod_affinity_term(
    term: &PodAffinityTerm,
    path: &FieldPath,
    topology_key: bool,
    merge: Option<&BTreeMap<String, String>>,
    out: &mut Vec<FieldError>,
) {
    let sel = term.label_selector.as_ref();
    if let Some(s) = sel {
        out.extend(validate_label_selector(s, &path.child("labelSelector")));
    }
    if let Some(s) = &term.namespace_selector {
        out.extend(validate_label_selector(s, &path.child("namespaceSelector")));
    }
    // Reported at `namespace`, without the index, as upstream reports it.
    for n in term.namespaces.iter().flatten() {
        out.extend(
            dns1123_label_errors(n)
                .into_iter()
                .map(|m| FieldError::invalid(path.child("namespace"), json!(n), m)),
        );
    }
    let matching = term.match_label_keys.as_deref().unwrap_or(&[]);
    let mismatching = term.mismatch_label_keys.as_deref().unwrap_or(&[]);
    for (field, keys) in [
        ("matchLabelKeys", matching),
        ("mismatchLabelKeys", mismatching),
    ] {
        if keys.is_empty() {
            continue;
        }
        if sel.is_none() {
            out.push(FieldError::forbidden(
                path.child(field),
                "must not be specified when labelSelector is not set",
            ));
            continue;
        }
        for (i, k) in keys.iter().enumerate() {
            out.extend(validate_label_name(k, &path.child(field).index(i)));
        }
    }
    if let Some(sel) = sel {
        // The pod's keys are appended `key In [value]`, then `key NotIn [value]`.
        let merged = merge.into_iter().flat_map(|labels| {
            matching
                .iter()
                .chain(mismatching)
                .map(String::as_str)
                .filter(|k| labels.contains_key(*k))
        });
        out.extend(keys_in_selector(
            matching,
            sel,
            merged,
            &path.child("matchLabelKeys"),
        ));
    }
    for (i, k) in matching.iter().enumerate() {
        if mismatching.contains(k) {
            out.push(FieldError::invalid(
                path.child("matchLabelKeys").index(i),
                json!(k),
                "exists in both matchLabelKeys and mismatchLabelKeys",
            ));
        }
    }
    if topology_key {
        let tk = &term.topology_key;
        if tk.is_empty() {
            out.push(FieldError::required(
                path.child("topologyKey"),
                "can not be empty",
            ));
        }
        out.extend(validate_label_name(tk, &path.child("topologyKey")));
    }
}

/// A list of namespace names compared exactly (`exemptNamespaces`): an entry that is no
/// namespace name (a glob such as `team-*`, upper case) matches none, and would exempt nothing.
pub fn validate_namespace_names(names: &[String], path: &FieldPath) -> Vec<FieldError> {
    names
        .iter()
        .enumerate()
        .filter(|(_, n)| !is_dns1123_label(n))
        .map(|(i, n)| {
            FieldError::invalid(
                path.index(i),
                json!(n),
                "matches no namespace: this list takes namespace names, compared exactly (lowercase letters, digits and '-', at most 63), not patterns",
            )
        })
        .collect()
}

/// `ValidateTolerations`, as kube-apiserver v1.36.2 words it.
pub fn validate_toleration(t: &Toleration, path: &FieldPath) -> Vec<FieldError> {
    let mut out = Vec::new();
    let key = t.key.as_deref().unwrap_or("");
    let op = t.operator.as_deref().unwrap_or("");
    let value = t.value.as_deref().unwrap_or("");
    if !key.is_empty() {
        out.extend(validate_label_name(key, &path.child("key")));
    } else if op != "Exists" {
        out.push(FieldError::invalid(path.child("operator"), json!(op), "operator must be Exists when `key` is empty, which means \"match all values and all keys\""));
    }
    let effect = t.effect.as_deref().unwrap_or("");
    if t.toleration_seconds.is_some() && effect != "NoExecute" {
        out.push(FieldError::invalid(
            path.child("effect"),
            json!(effect),
            "effect must be 'NoExecute' when `tolerationSeconds` is set",
        ));
    }
    match op {
        // The value of an Equal toleration is a label value, reported at `operator`, its
        // messages joined by `;`.
        "Equal" | "" => {
            let errs = label_value_errors(value);
            if !errs.is_empty() {
                out.push(FieldError::invalid(
                    path.child("operator"),
                    json!(value),
                    errs.join(";"),
                ));
            }
        }
        "Exists" => {
            if !value.is_empty() {
                out.push(FieldError::invalid(
                    path.child("operator"),
                    json!(value),
                    "value must be empty when `operator` is 'Exists'",
                ));
            }
        }
        // The comparison operators are named among the supported ones, behind their feature
        // gate (off in v1.36.2), when one is written.
        "Lt" | "Gt" => out.push(FieldError::not_supported(
            path.child("operator"),
            json!(op),
            &["Equal", "Exists", "Lt", "Gt"],
        )),
        other => out.push(FieldError::not_supported(
            path.child("operator"),
            json!(other),
            &["Equal", "Exists"],
        )),
    }
    if !effect.is_empty() && !["NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&effect) {
        out.push(FieldError::not_supported(
            path.child("effect"),
            json!(effect),
            &["NoSchedule", "PreferNoSchedule", "NoExecute"],
        ));
    }
    out
}

/// Why `resource.ParseQuantity` refuses `s` (kube-apiserver's decoder then refuses the
/// object), in its words; `None` when it parses.
pub fn quantity_error(s: &str) -> Option<&'static str> {
    const FORMAT: &str = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
    const SUFFIX: &str = "unable to parse quantity's suffix";
    if s.is_empty() {
        return Some(FORMAT);
    }
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b[0], b'+' | b'-'));
    let digits = |i: &mut usize| {
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
    };
    digits(&mut i);
    if b.get(i) == Some(&b'.') {
        i += 1;
        digits(&mut i);
    }
    let suffix_start = i;
    while b.get(i).is_some_and(|c| b"eEinumkKMGTP".contains(c)) {
        i += 1;
    }
    let letters_end = i;
    if i < b.len() {
        if matches!(b[i], b'+' | b'-') {
            i += 1;
        }
        digits(&mut i);
        if i < b.len() {
            return Some(FORMAT);
        }
    }
    let suffix = &s[suffix_start..];
    let known = matches!(
        suffix,
        "" | "n"
            | "u"
            | "m"
            | "k"
            | "M"
            | "G"
            | "T"
            | "P"
            | "E"
            | "Ki"
            | "Mi"
            | "Gi"
            | "Ti"
            | "Pi"
            | "Ei"
    );
    // A decimal exponent: `e` or `E` and a 64-bit integer.
    let exponent = letters_end == suffix_start + 1
        && matches!(b[suffix_start], b'e' | b'E')
        && suffix.len() > 1
        && suffix[1..].parse::<i64>().is_ok();
    (!known && !exponent).then_some(SUFFIX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    /// The quick test agrees with the messages on every shape.
    #[test]
    fn is_qualified_name_agrees_with_the_messages() {
        let long = "a".repeat(64);
        let long_prefix = format!("{}/a", "b".repeat(254));
        for v in [
            "",
            "a",
            "A",
            "app",
            "app.kubernetes.io/name",
            "/a",
            "a/",
            "a/b/c",
            "-a",
            "a-",
            "a_b.c-d",
            "Example.com/x",
            "example.com/X1",
            "é",
            "zoné",
            "exämple.com/a",
            "a b",
            " a",
            "a.",
            ".a",
            "a..b/c",
            "a/.b",
            long.as_str(),
            long_prefix.as_str(),
            "kubernetes.io/hostname",
            "topology.kubernetes.io/zone",
            "1/2",
            "a/b_",
            "a-b.c/x",
            "a.-b/x",
            "a-.b/x",
            "-a.b/x",
            "a.b-/x",
            "ab--c.d/x",
            "A.b/x",
            "a_b.c/x",
            "./x",
            "a./x",
            "9.9/x",
            "a.b.c.d.e/y.z",
        ] {
            assert_eq!(
                is_qualified_name(v),
                qualified_name_errors(v).is_empty(),
                "{v:?}"
            );
        }
    }

    #[test]
    fn qualified_names() {
        for ok in [
            "app",
            "app.kubernetes.io/name",
            "pod-template-hash",
            "a_b.c-d",
            "example.com/X1",
        ] {
            assert!(qualified_name_errors(ok).is_empty(), "{ok}");
        }
        let cases = [
            ("", "name part must be non-empty"),
            ("-app", "name part must consist of"),
            ("/app", "prefix part must be non-empty"),
            (
                "Example.com/app",
                "prefix part a lowercase RFC 1123 subdomain",
            ),
            ("a/b/c", "a valid label key must consist of"),
            (&"x".repeat(64), "name part must be no more than 63 bytes"),
        ];
        for (bad, want) in cases {
            let errs = qualified_name_errors(bad);
            assert!(errs.iter().any(|e| e.starts_with(want)), "{bad}: {errs:?}");
        }
        // An empty name fails the pattern too, as kube-apiserver v1.36 reports it.
        let empty = qualified_name_errors("");
        assert_eq!(empty.len(), 2, "{empty:?}");
        assert!(
            empty[1].starts_with("name part must consist of"),
            "{empty:?}"
        );
    }

    /// `ValidateNodeSelectorRequirement`: Gt and Lt need exactly one value, whatever it is.
    #[test]
    fn node_selector_requirements() {
        use k8s_openapi::api::core::v1::NodeSelectorRequirement;
        let cases: [(&str, &[&str], &[&str]); 8] = [
            ("In", &[], &["spec.t.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"]),
            ("In", &["a"], &[]),
            ("Exists", &["a"], &["spec.t.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"]),
            ("Gt", &["5"], &[]),
            ("Gt", &["x"], &[]),
            // Values are label values to kube-apiserver v1.36.2, a comparison's too.
            ("Lt", &[" 5"], &["spec.t.matchExpressions[0].values[0]: Invalid value: \" 5\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"]),
            ("Lt", &["1", "2"], &["spec.t.matchExpressions[0].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"]),
            ("Near", &[], &["spec.t.matchExpressions[0].operator: Invalid value: \"Near\": not a valid selector operator"]),
        ];
        for (op, values, want) in cases {
            let term = NodeSelectorTerm {
                match_expressions: Some(vec![NodeSelectorRequirement {
                    key: "cpu".into(),
                    operator: op.into(),
                    values: Some(values.iter().map(|v| v.to_string()).collect()),
                }]),
                match_fields: None,
            };
            let got: Vec<String> = validate_term(&term, &FieldPath::new("spec.t"), true)
                .iter()
                .map(|e| e.to_string())
                .collect();
            assert_eq!(got, want, "{op} {values:?}");
        }
    }

    #[test]
    fn label_values() {
        assert!(label_value_errors("").is_empty());
        assert!(label_value_errors("v1.2_x").is_empty());
        assert!(!label_value_errors("bad value").is_empty());
        assert!(!label_value_errors(&"a".repeat(64)).is_empty());
    }

    #[test]
    fn selectors() {
        let sel = LabelSelector {
            match_labels: Some([("app".to_string(), "bad value".to_string())].into()),
            match_expressions: Some(vec![
                LabelSelectorRequirement {
                    key: "a".into(),
                    operator: "In".into(),
                    values: None,
                },
                LabelSelectorRequirement {
                    key: "b".into(),
                    operator: "Exists".into(),
                    values: Some(vec!["x".into()]),
                },
                LabelSelectorRequirement {
                    key: "c".into(),
                    operator: "Gt".into(),
                    values: None,
                },
            ]),
        };
        let errs: Vec<String> =
            validate_label_selector(&sel, &FieldPath::new("spec.labelSelector"))
                .iter()
                .map(|e| e.to_string())
                .collect();
        assert_eq!(errs[0], "spec.labelSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'");
        assert_eq!(errs[1], "spec.labelSelector.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
        assert_eq!(errs[2], "spec.labelSelector.matchExpressions[2].operator: Invalid value: \"Gt\": not a valid selector operator");
        assert!(errs[3].starts_with(
            "spec.labelSelector.matchLabels: Invalid value: \"bad value\": a valid label must be"
        ));
        assert_eq!(errs.len(), 4);
    }
}
