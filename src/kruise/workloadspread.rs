//! OpenKruise WorkloadSpread (`apps.kruise.io`, v1alpha1 and v1beta1): validation of the object
//! as Kruise's webhook does it, and cross-checks against the target workload through the
//! placement core (subsets that can never hold a pod, injection that loosens, overlaps, caps).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{NodeSelectorTerm, PreferredSchedulingTerm, Toleration};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::core::nodeselector::{pod_node_constraint, Term};
use crate::k8s::fieldpath::{FieldError, FieldPath};
use crate::k8s::model::PodSpec;
use crate::k8s::strategic;
use crate::k8s::validation::{validate_term, validate_toleration};

pub const GROUP: &str = crate::k8s::workload::KRUISE_GROUP;

/// Whether a finding stops the object (error) or only warns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Error,
    Warning,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    pub level: Level,
    pub error: FieldError,
}

fn err(e: FieldError) -> Problem {
    Problem {
        level: Level::Error,
        error: e,
    }
}

fn warn(e: FieldError) -> Problem {
    Problem {
        level: Level::Warning,
        error: e,
    }
}

/// Field names that differ between versions, as Kruise's webhook names them in errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Names {
    pub required: &'static str,
    /// v1alpha1's JSON field is `preferredNodeSelectorTerms`; Kruise's errors say
    /// `preferredSchedulingTerms` (its Go field), so ours do too.
    pub preferred: &'static str,
}

/// Where a field an error names is written in the object: v1alpha1's preferred terms are
/// `preferredNodeSelectorTerms` in YAML, `preferredSchedulingTerms` in Kruise's (and our) errors.
/// `None` when the path names the field as written.
pub fn written_path(path: &FieldPath) -> Option<FieldPath> {
    let shown = path.to_string();
    shown.contains(".preferredSchedulingTerms").then(|| {
        FieldPath::parse(&shown.replace(".preferredSchedulingTerms", ".preferredNodeSelectorTerms"))
    })
}

pub fn names(api_version: &str) -> Names {
    if api_version.ends_with("/v1beta1") {
        Names {
            required: "requiredNodeSelector",
            preferred: "preferredNodeSelector",
        }
    } else {
        Names {
            required: "requiredNodeSelectorTerm",
            preferred: "preferredSchedulingTerms",
        }
    }
}

/// The kinds Kruise knows as targets, with the groups each may come from (Kruise switches on the
/// kind, then checks the group).
const TARGETS: [(&str, &[&str]); 5] = [
    ("Deployment", &["apps"]),
    ("ReplicaSet", &["apps"]),
    ("StatefulSet", &["apps", GROUP]),
    ("CloneSet", &[GROUP]),
    ("Job", &["batch"]),
];

/// apimachinery's `schema.ParseGroupVersion`: the group, or `None` for more than one `/`.
pub fn parse_group(api_version: &str) -> Option<&str> {
    match api_version.split_once('/') {
        None => Some(""),
        Some((group, version)) if !version.contains('/') => Some(group),
        Some(_) => None,
    }
}

/// A WorkloadSpread (v1alpha1 or v1beta1), with the fields Kruise reads; each subset's terms
/// are read from the field names of the object's version.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadSpread {
    pub api_version: String,
    pub name: String,
    pub namespace: String,
    /// The field names of this version, for paths in errors.
    pub names: Names,
    pub target_ref: Option<TargetRef>,
    pub target_filter: Option<TargetFilter>,
    pub subsets: Vec<Subset>,
    pub schedule_strategy: ScheduleStrategy,
}

/// Which of the target's pods the WorkloadSpread manages, and where their count is read.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetFilter {
    #[serde(default)]
    pub selector: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
    #[serde(default)]
    pub replicas_path_list: Vec<String>,
}

impl TargetFilter {
    /// Kruise's `IsPodSelected`: no selector selects nothing, an empty one everything, an
    /// invalid one nothing.
    pub fn selects(&self, labels: &std::collections::BTreeMap<String, String>) -> bool {
        self.selector.as_ref().is_some_and(|s| {
            crate::k8s::model::selector_has_no_requirements(s)
                || crate::core::labels::selector_matches(s, labels)
        })
    }

    /// The base of percentage caps: the sum of the integers at `replicasPathList` (dot paths,
    /// numbers index lists), or `None` without a list. A path that is missing or not an integer
    /// is an error, as it makes Kruise refuse the pod.
    pub fn replicas(&self, workload: &Value) -> Option<Result<i64, String>> {
        if self.replicas_path_list.is_empty() {
            return None;
        }
        let mut sum = 0i64;
        for path in &self.replicas_path_list {
            let mut at = workload;
            for seg in path.split('.').filter(|s| !s.is_empty()) {
                let next = match seg.parse::<usize>() {
                    Ok(i) if at.is_array() => at.get(i),
                    _ => at.get(seg),
                };
                match next {
                    Some(v) => at = v,
                    None => {
                        return Some(Err(format!(
                            "replicasPathList: path {path:?} does not exist in the workload"
                        )))
                    }
                }
            }
            match at.as_i64() {
                Some(n) => sum += n,
                None => return Some(Err(format!("replicasPathList: {path:?} is not an integer"))),
            }
        }
        Some(Ok(sum))
    }
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetRef {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Subset {
    pub name: String,
    pub required: Option<NodeSelectorTerm>,
    pub preferred: Vec<PreferredSchedulingTerm>,
    pub tolerations: Vec<Toleration>,
    pub max_replicas: Option<IntOrString>,
    /// A strategic-merge patch of the pod, kept as JSON.
    pub patch: Option<Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleStrategy {
    #[serde(default, rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub adaptive: Option<Adaptive>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Adaptive {
    #[serde(default)]
    pub reschedule_critical_seconds: Option<i64>,
    #[serde(default)]
    pub disable_simulation_schedule: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawSpread {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    metadata: RawMeta,
    #[serde(default)]
    spec: RawSpec,
}

#[derive(Default, Deserialize)]
struct RawMeta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawSpec {
    #[serde(default)]
    target_ref: Option<TargetRef>,
    #[serde(default)]
    target_filter: Option<TargetFilter>,
    #[serde(default)]
    subsets: Option<Vec<RawSubset>>,
    #[serde(default)]
    schedule_strategy: Option<ScheduleStrategy>,
}

/// Both versions' field names; the object's version decides which are read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawSubset {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    required_node_selector_term: Option<NodeSelectorTerm>,
    #[serde(default)]
    required_node_selector: Option<NodeSelectorTerm>,
    #[serde(default)]
    preferred_node_selector_terms: Option<Vec<PreferredSchedulingTerm>>,
    #[serde(default)]
    preferred_node_selector: Option<Vec<PreferredSchedulingTerm>>,
    #[serde(default)]
    tolerations: Option<Vec<Toleration>>,
    #[serde(default)]
    max_replicas: Option<IntOrString>,
    #[serde(default)]
    patch: Option<Value>,
}

/// A WorkloadSpread that cannot be read, with the JSON path where it failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{path}: {message}")]
pub struct ReadError {
    pub path: String,
    pub message: String,
}

impl WorkloadSpread {
    pub fn from_value(v: &Value) -> Result<WorkloadSpread, ReadError> {
        if !v.is_object() {
            return Err(ReadError {
                path: String::new(),
                message: "expected a JSON object".to_string(),
            });
        }
        let raw: RawSpread = serde_path_to_error::deserialize(v).map_err(|e| ReadError {
            path: e.path().to_string(),
            message: e.into_inner().to_string(),
        })?;
        let names = names(&raw.api_version);
        let beta = names.required == "requiredNodeSelector";
        let subsets = raw
            .spec
            .subsets
            .unwrap_or_default()
            .into_iter()
            .map(|s| Subset {
                name: s.name.unwrap_or_default(),
                required: if beta {
                    s.required_node_selector
                } else {
                    s.required_node_selector_term
                },
                preferred: if beta {
                    s.preferred_node_selector
                } else {
                    s.preferred_node_selector_terms
                }
                .unwrap_or_default(),
                tolerations: s.tolerations.unwrap_or_default(),
                max_replicas: s.max_replicas,
                patch: s.patch.filter(|p| !p.is_null()),
            })
            .collect();
        Ok(WorkloadSpread {
            api_version: raw.api_version,
            name: raw.metadata.name.unwrap_or_default(),
            namespace: raw.metadata.namespace.unwrap_or_default(),
            names,
            target_ref: raw.spec.target_ref,
            target_filter: raw.spec.target_filter,
            subsets,
            schedule_strategy: raw.spec.schedule_strategy.unwrap_or_default(),
        })
    }

    /// The target as (group, kind, name), when complete.
    pub fn target(&self) -> Option<(String, String, String)> {
        let t = self.target_ref.as_ref()?;
        Some((
            parse_group(&t.api_version)?.to_string(),
            t.kind.clone(),
            t.name.clone(),
        ))
    }
}

/// A maxReplicas value: an int, or a whole percentage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cap {
    Count(i64),
    Percent(i64),
}

impl Cap {
    /// Pods this cap admits out of `replicas` (percent caps round up, as Kruise does).
    pub fn pods(self, replicas: i64) -> i64 {
        match self {
            Cap::Count(n) => n,
            Cap::Percent(p) => p.saturating_mul(replicas).saturating_add(99) / 100,
        }
    }
}

/// The JSON form of a maxReplicas value, for messages.
fn cap_value(v: &IntOrString) -> Value {
    match v {
        IntOrString::Int(i) => json!(i),
        IntOrString::String(s) => json!(s),
    }
}

fn parse_cap(v: &IntOrString, path: &FieldPath, out: &mut Vec<Problem>) -> Option<Cap> {
    match v {
        IntOrString::Int(i) if *i >= 0 => Some(Cap::Count(i64::from(*i))),
        IntOrString::Int(_) => {
            out.push(err(FieldError::invalid(
                path.clone(),
                cap_value(v),
                "must be a non-negative integer",
            )));
            None
        }
        IntOrString::String(s) => {
            let pct = s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok());
            match pct {
                Some(p) if (0..=100).contains(&p) => Some(Cap::Percent(p)),
                _ => {
                    out.push(err(FieldError::invalid(
                        path.clone(),
                        cap_value(v),
                        "must be a whole percentage between 0% and 100%, e.g. \"20%\"",
                    )));
                    None
                }
            }
        }
    }
}

/// A subset's cap when it is well-formed.
fn cap_of(s: &Subset) -> Option<Cap> {
    s.max_replicas
        .as_ref()
        .and_then(|c| parse_cap(c, &FieldPath::root(), &mut Vec::new()))
}

/// Every problem of one WorkloadSpread on its own (what Kruise's webhook refuses), plus a
/// warning for target kinds Kruise only accepts when whitelisted.
pub fn validate(ws: &WorkloadSpread) -> Vec<Problem> {
    let mut out = Vec::new();
    let n = ws.names;
    let spec = FieldPath::new("spec");
    let tp = spec.child("targetRef");
    match &ws.target_ref {
        None => out.push(err(FieldError::required(
            tp.clone(),
            "the workload to spread: apiVersion, kind and name",
        ))),
        Some(tr) => {
            for (f, v) in [
                ("apiVersion", &tr.api_version),
                ("kind", &tr.kind),
                ("name", &tr.name),
            ] {
                if v.is_empty() {
                    out.push(err(FieldError::required(tp.child(f), "")));
                }
            }
            let value = json!({"apiVersion": tr.api_version, "kind": tr.kind, "name": tr.name});
            let complete = !tr.api_version.is_empty() && !tr.kind.is_empty() && !tr.name.is_empty();
            let group = parse_group(&tr.api_version);
            match TARGETS.iter().find(|(k, _)| *k == tr.kind) {
                // A known kind under another group, or an apiVersion that does not parse.
                Some((kind, groups)) if complete && !group.is_some_and(|g| groups.contains(&g)) => {
                    out.push(err(FieldError::invalid(
                        tp.clone(),
                        value,
                        format!("TargetReference is not valid for {kind}."),
                    )))
                }
                Some(_) => {}
                // Kruise refuses other kinds unless its kruise-configuration ConfigMap
                // whitelists them, which a manifest check cannot see: a warning.
                None if complete => out.push(warn(FieldError::invalid(
                    tp.clone(),
                    value,
                    "TargetReference's GroupKind is not permitted unless Kruise's WorkloadSpread_Watch_Custom_Workload_WhiteList names it; supported: Deployment.apps, ReplicaSet.apps, StatefulSet.apps, StatefulSet.apps.kruise.io, CloneSet.apps.kruise.io, Job.batch",
                ))),
                None => {}
            }
        }
    }
    let target_is_statefulset = ws
        .target_ref
        .as_ref()
        .is_some_and(|t| t.kind == "StatefulSet");

    let sp = spec.child("subsets");
    if ws.subsets.is_empty() {
        out.push(err(FieldError::required(sp.clone(), "at least one subset")));
    }
    let mut seen = BTreeSet::new();
    let mut caps: Vec<Option<Cap>> = Vec::new();
    for (i, sub) in ws.subsets.iter().enumerate() {
        let p = sp.index(i);
        if sub.name.is_empty() {
            out.push(err(FieldError::required(p.child("name"), "")));
        } else if !seen.insert(sub.name.as_str()) {
            out.push(err(FieldError::duplicate(p.child("name"), json!(sub.name))));
        }
        if let Some(t) = &sub.required {
            let path = p.child(n.required);
            // Kruise's webhook validates the term as kube-apiserver validates required node
            // affinity: its values are label values.
            let invalid = validate_term(t, &path, true);
            // A valid term that matches no node on its own (a Gt/Lt bound that is not an
            // integer, `In` and `NotIn` of one value): Kruise accepts it, and the subset's
            // pods can never be scheduled.
            if invalid.is_empty() {
                if let Some(term) = Term::from_api(t).filter(|term| !term.satisfiable()) {
                    out.push(err(FieldError::invalid(
                        path,
                        json!(term.to_string()),
                        format!(
                            "subset {:?} can never hold a pod: \"{term}\" matches no node",
                            sub.name
                        ),
                    )));
                }
            }
            out.extend(invalid.into_iter().map(err));
        }
        for (j, pref) in sub.preferred.iter().enumerate() {
            let pp = p.child(n.preferred).index(j);
            if !(1..=100).contains(&pref.weight) {
                out.push(err(FieldError::invalid(
                    pp.child("weight"),
                    json!(pref.weight),
                    "must be in the range 1-100",
                )));
            }
            out.extend(
                validate_term(&pref.preference, &pp.child("preference"), false)
                    .into_iter()
                    .map(err),
            );
        }
        for (j, t) in sub.tolerations.iter().enumerate() {
            out.extend(
                validate_toleration(t, &p.child("tolerations").index(j))
                    .into_iter()
                    .map(err),
            );
        }
        let cap = sub
            .max_replicas
            .as_ref()
            .and_then(|c| parse_cap(c, &p.child("maxReplicas"), &mut out));
        if let (true, Some(Cap::Percent(_)), Some(v)) =
            (target_is_statefulset, cap, &sub.max_replicas)
        {
            out.push(err(FieldError::invalid(
                p.child("maxReplicas"),
                cap_value(v),
                "a StatefulSet target takes integer maxReplicas only",
            )));
        }
        caps.push(cap);
    }
    // Kruise's order: the first subset whose maxReplicas type differs from the first capped
    // one, and the subset where the percentages first pass 100%, are reported, and stop the
    // check; a capped last subset under 100% is reported on the first subset.
    let max_value = |i: usize| {
        ws.subsets[i]
            .max_replicas
            .as_ref()
            .map_or(Value::Null, cap_value)
    };
    let capped: Vec<(usize, Cap)> = caps
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.map(|c| (i, c)))
        .collect();
    let is_percent = |c: &Cap| matches!(c, Cap::Percent(_));
    let mut sum = 0;
    let mut stopped = false;
    if let Some((_, first)) = capped.first() {
        for (i, c) in &capped {
            if is_percent(c) != is_percent(first) {
                out.push(err(FieldError::invalid(
                    sp.index(*i).child("maxReplicas"),
                    max_value(*i),
                    "maxReplicas of all subsets must be of one type: all integers or all percentages",
                )));
                stopped = true;
                break;
            }
            if let Cap::Percent(p) = c {
                sum += p;
                if sum > 100 {
                    out.push(err(FieldError::invalid(
                        sp.index(*i).child("maxReplicas"),
                        max_value(*i),
                        format!("the percentages of maxReplicas add up to {sum}% by this subset, more than 100%"),
                    )));
                    stopped = true;
                    break;
                }
            }
        }
        let last_capped = caps.last().is_some_and(Option::is_some);
        if !stopped && is_percent(first) && sum < 100 && last_capped {
            out.push(err(FieldError::invalid(
                sp.index(0).child("maxReplicas"),
                max_value(0),
                format!("the percentages of maxReplicas add up to {sum}%; they must add up to 100% unless the last subset has no maxReplicas"),
            )));
        }
    }

    // As Kruise (v1beta1 era): a targetFilter whose selector does not compile.
    if let Some(sel) = ws.target_filter.as_ref().and_then(|f| f.selector.as_ref()) {
        let fp = spec.child("targetFilter").child("selector");
        if let Some(e) = crate::k8s::validation::validate_label_selector(sel, &fp).first() {
            out.push(err(FieldError::invalid(
                spec.child("targetFilter"),
                serde_json::to_value(sel).unwrap_or_default(),
                format!("{}: {}", e.path, e.body()),
            )));
        }
    }
    let st = &ws.schedule_strategy;
    let stp = spec.child("scheduleStrategy");
    let kind = st.kind.as_str();
    if !["", "Fixed", "Adaptive"].contains(&kind) {
        out.push(err(FieldError::not_supported(
            stp.child("type"),
            json!(kind),
            &["Adaptive", "Fixed"],
        )));
    }
    // Kruise keys every Adaptive check on the presence of the `adaptive` block.
    if let Some(adaptive) = &st.adaptive {
        if kind != "Adaptive" {
            out.push(err(FieldError::invalid(
                stp.child("type"),
                json!(kind),
                "must be Adaptive when an adaptive block is given",
            )));
        }
        let count = ws.subsets.len();
        // Kruise tests that the last subset has a maxReplicas at all, valid or not.
        // Reported where Kruise reports it, with the block as its value, and naming the field
        // to remove: the value alone would point at the wrong place.
        if let Some(cap) = ws
            .subsets
            .last()
            .filter(|_| count > 1)
            .and_then(|s| s.max_replicas.as_ref())
        {
            let mut block = serde_json::Map::new();
            if let Some(secs) = adaptive.reschedule_critical_seconds {
                block.insert("rescheduleCriticalSeconds".into(), json!(secs));
            }
            if let Some(off) = adaptive.disable_simulation_schedule {
                block.insert("disableSimulationSchedule".into(), json!(off));
            }
            out.push(err(FieldError::invalid(
                stp.child("adaptive"),
                Value::Object(block),
                format!(
                    "with the adaptive strategy the last subset takes the rest and has no maxReplicas: remove {} ({})",
                    spec.child("subsets").index(count - 1).child("maxReplicas"),
                    json!(cap)
                ),
            )));
        }
        let limit = if count > 1 {
            295 / (count as i64 - 1)
        } else {
            i64::from(i32::MAX)
        };
        if let Some(secs) = adaptive.reschedule_critical_seconds {
            if !(0..=limit).contains(&secs) {
                out.push(err(FieldError::invalid(
                    stp.child("adaptive").child("rescheduleCriticalSeconds"),
                    json!(secs),
                    format!("must be between 0 and {limit} with {count} subset(s)"),
                )));
            }
        }
    }
    out
}

/// The subsets' required terms, compiled (`None`: no term; `Some(None)`: an empty or invalid
/// term, which matches no node).
pub fn subset_terms(ws: &WorkloadSpread) -> Vec<(&str, Option<Option<Term>>)> {
    ws.subsets
        .iter()
        .map(|s| (s.name.as_str(), s.required.as_ref().map(Term::from_api)))
        .collect()
}

/// The target workload as the cross-checks need it.
#[derive(Clone, Copy, Debug)]
pub struct Target<'a> {
    pub spec: &'a PodSpec,
    pub replicas: Option<i64>,
    /// The whole pod template (`metadata` and `spec`) and the names of the workload's
    /// volumeClaimTemplates, for the subsets' patches; `None` when only the spec is known.
    pub template: Option<&'a Value>,
    pub claims: &'a [String],
    /// The selector by which the workload's controller owns its pods.
    pub selector: Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
}

/// Checks the subsets against the workload they inject into.
pub fn cross_check(ws: &WorkloadSpread, target: &Target) -> Vec<Problem> {
    let n = ws.names;
    let sp = FieldPath::new("spec.subsets");
    let terms = subset_terms(ws);
    let raw_required = target.spec.required_node_selector_terms();
    let workload = pod_node_constraint(target.spec.node_selector(), raw_required);
    let has_empty_workload_term =
        raw_required.is_some_and(|ts| ts.iter().any(|t| Term::from_api(t).is_none()));
    let mut out = Vec::new();
    for (i, (name, term)) in terms.iter().enumerate() {
        let p = sp.index(i).child(n.required);
        // With a patch, the pods are what injection and the patch make of the template: the
        // patch may set the nodeSelector the term needs, or drop the term.
        if let (Some(template), Some(patch)) = (target.template, &ws.subsets[i].patch) {
            out.extend(patched_selection(ws, i, template, patch, &sp));
            continue;
        }
        match term {
            None => {}
            Some(None) if raw_required.is_none() => out.push(err(FieldError::invalid(
                p,
                json!({}),
                format!("subset {name:?}: an empty term becomes the pods' only required term and matches no node, so its pods can never be scheduled"),
            ))),
            Some(None) => {}
            // Reported by [`validate`] whatever the workload.
            Some(Some(t)) if !t.satisfiable() => {}
            Some(Some(t)) => {
                if has_empty_workload_term {
                    out.push(err(FieldError::invalid(
                        p.clone(),
                        json!(t.to_string()),
                        format!("subset {name:?}: the workload has an empty required node selector term (it matches no node); injecting \"{t}\" into it loosens the workload's node selection instead of tightening it"),
                    )));
                }
                if let Some(w) = &workload {
                    if !w.iter().any(|wt| wt.and(t).satisfiable()) {
                        let shown: Vec<String> = w.iter().map(|x| format!("\"{x}\"")).collect();
                        out.push(err(FieldError::invalid(
                            p,
                            json!(t.to_string()),
                            format!("subset {name:?} can never hold a pod: \"{t}\" contradicts the workload's own node selection ({})", shown.join(" or ")),
                        )));
                    }
                }
            }
        }
    }
    for (a, (na, ta)) in terms.iter().enumerate() {
        for (b, (nb, tb)) in terms.iter().enumerate().skip(a + 1) {
            if let (Some(Some(x)), Some(Some(y))) = (ta, tb) {
                // On a node the workload itself can use: a subset that can never hold a pod
                // overlaps nothing (it has its own error).
                let both = x.and(y);
                let overlap = match &workload {
                    Some(w) => w.iter().any(|wt| wt.and(&both).satisfiable()),
                    None => both.satisfiable(),
                };
                if overlap {
                    out.push(warn(FieldError::invalid(
                        sp.index(b).child(n.required),
                        json!(y.to_string()),
                        format!("subsets {na:?} and {nb:?} can both hold on one node, so pods of {nb:?} may land in {na:?}'s pool"),
                    )));
                }
            }
        }
    }
    if let Some(t) = target.template {
        out.extend(validate_patches(ws, t, target.claims, target.selector));
    }
    let caps: Vec<Option<Cap>> = ws.subsets.iter().map(cap_of).collect();
    if let Some(replicas) = target.replicas {
        if !caps.is_empty() && caps.iter().all(Option::is_some) {
            let total: i64 = caps.iter().flatten().map(|c| c.pods(replicas)).sum();
            if total < replicas {
                out.push(warn(FieldError::invalid(
                    sp.clone(),
                    json!(total),
                    format!("the subsets' caps admit {total} of the workload's {replicas} replicas; the other {} get no injection at all and can run anywhere", replicas - total),
                )));
            }
        }
    }
    out
}

/// A patched subset's node selection, judged on its pods as Kruise's webhook makes them
/// ([`inject`]): none when no node can satisfy it, and a warning when the patch drops what the
/// subset injects (a strategic merge patch replaces tolerations and node selector terms, so a
/// patch that writes them loses the subset's own).
fn patched_selection(
    ws: &WorkloadSpread,
    i: usize,
    template: &Value,
    patch: &Value,
    sp: &FieldPath,
) -> Vec<Problem> {
    let sub = &ws.subsets[i];
    let name = &sub.name;
    let (pod, refused) = inject(template, ws, i);
    let Some(spec) = refused
        .is_none()
        .then(|| serde_json::from_value::<PodSpec>(pod["spec"].clone()).ok())
        .flatten()
    else {
        // The patch is reported by [`validate_patches`].
        return Vec::new();
    };
    let mut out = Vec::new();
    let at = sp.index(i).child("patch");
    if let Some(c) = pod_node_constraint(spec.node_selector(), spec.required_node_selector_terms())
    {
        if !c.iter().any(Term::satisfiable) {
            let shown: Vec<String> = c.iter().map(|x| format!("\"{x}\"")).collect();
            out.push(err(FieldError::invalid(
                at.clone(),
                json!(patch.to_string()),
                format!(
                    "subset {name:?} can never hold a pod: injected and patched, its pods' node selection ({}) matches no node",
                    if shown.is_empty() { "no term".to_string() } else { shown.join(" or ") }
                ),
            )));
        }
    }
    if let Some(t) = sub.required.as_ref().and_then(Term::from_api) {
        let kept = spec.required_node_selector_terms().is_some_and(|ts| {
            !ts.is_empty()
                && ts
                    .iter()
                    .filter_map(Term::from_api)
                    .all(|x| t.requirements.iter().all(|r| x.requirements.contains(r)))
        });
        if !kept {
            out.push(warn(FieldError::invalid(
                at.clone(),
                json!(patch.to_string()),
                format!("subset {name:?}: the patch replaces the required node selector terms the subset injects (\"{t}\" is not in every term of its pods): a strategic merge patch replaces these lists; put the terms in requiredNodeSelectorTerm, not in the patch"),
            )));
        }
    }
    let tolerations = spec.tolerations();
    if sub.tolerations.iter().any(|t| !tolerations.contains(t)) {
        out.push(warn(FieldError::invalid(
            at,
            json!(patch.to_string()),
            format!("subset {name:?}: the patch replaces the tolerations the subset injects (a strategic merge patch replaces the list): put them in the subset's tolerations, not in the patch"),
        )));
    }
    out
}

/// Kruise's check of the subsets' patches (`validateWorkloadSpreadSubsets`): each patch is
/// applied by strategic merge to the target's pod template, to which every volumeClaimTemplate
/// adds a volume of its name (as CloneSet and StatefulSet pods get), and the result must be a
/// valid pod spec. As in Kruise, the whole spec is judged, so a template whose mount has no
/// volume is refused under every patched subset, and errors are reported under
/// `spec.subsets[i].patch` with paths relative to the pod spec.
///
/// Beyond Kruise: with the workload's `selector`, a patch that changes the labels it owns its
/// pods by (where it matched the template's) is an error. Kruise takes it, and the controller
/// would release each pod it creates as not its own and create another in its place, which gets
/// the patch again, without end (a StatefulSet, whose pods have fixed names, stalls).
pub fn validate_patches(
    ws: &WorkloadSpread,
    template: &Value,
    claims: &[String],
    selector: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
) -> Vec<Problem> {
    use std::collections::BTreeMap;
    let labels_of = |pod: &Value| {
        serde_json::from_value::<BTreeMap<String, String>>(pod["metadata"]["labels"].clone())
    };
    let owning = selector.filter(|s| {
        crate::core::labels::selector_matches(s, &labels_of(template).unwrap_or_default())
    });
    let mut base = template.clone();
    if !base.is_object() {
        base = json!({});
    }
    if !base["spec"].is_object() {
        base["spec"] = json!({});
    }
    if !claims.is_empty() {
        let mut volumes = base["spec"]["volumes"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        volumes.extend(
            claims
                .iter()
                .map(|c| json!({"name": c, "persistentVolumeClaim": {"claimName": c}})),
        );
        base["spec"]["volumes"] = Value::Array(volumes);
    }
    let mut out = Vec::new();
    for (i, sub) in ws.subsets.iter().enumerate() {
        let Some(patch) = &sub.patch else { continue };
        let path = FieldPath::new("spec.subsets").index(i).child("patch");
        let pod = match strategic::apply(&base, patch) {
            Ok(pod) => pod,
            Err(e) => {
                out.push(err(FieldError::invalid(
                    path,
                    json!(patch.to_string()),
                    format!("failed to merge patch: {e}"),
                )));
                continue;
            }
        };
        if let Some(e) = unmarshal_error(&pod) {
            out.push(err(FieldError::invalid(
                path.clone(),
                json!(patch.to_string()),
                e,
            )));
        }
        // The pods' labels as the apiserver validates them when Kruise's webhook creates them.
        let labels = labels_of(&pod);
        if let Ok(labels) = &labels {
            out.extend(
                crate::k8s::validation::validate_labels(
                    labels,
                    &path.child("metadata").child("labels"),
                )
                .into_iter()
                .map(err),
            );
        }
        if let Some(selector) = owning {
            let patched = labels.unwrap_or_default();
            if !crate::core::labels::selector_matches(selector, &patched) {
                let kind = ws
                    .target_ref
                    .as_ref()
                    .map_or("workload", |t| t.kind.as_str());
                let owner = if kind == "Deployment" {
                    "its ReplicaSet"
                } else {
                    "the workload"
                };
                let shown = serde_json::to_string(selector).unwrap_or_default();
                out.push(err(FieldError::invalid(
                    path.child("metadata").child("labels"),
                    json!(patched),
                    format!("subset {:?}: the patched pods' labels do not match the {kind}'s selector {shown}, so {owner} would release each pod it creates as not its own and create another in its place, without end; leave the selector's labels out of the patch", sub.name),
                )));
            }
        }
        out.extend(
            crate::kruise::podspec::validate_pod_spec(&pod["spec"], &path)
                .into_iter()
                .map(err),
        );
    }
    out
}

/// Why Go's `json.Unmarshal` of a patched pod (template) into `corev1.Pod`, which Kruise runs
/// after the merge, fails: a value of the wrong type or a quantity that does not parse
/// anywhere in it (unknown fields are
/// dropped; a missing field is its zero value, which the validation judges).
pub fn unmarshal_error(pod: &Value) -> Option<String> {
    use k8s_openapi::api::core::v1::PodTemplateSpec;
    match serde_path_to_error::deserialize::<_, PodTemplateSpec>(pod) {
        // k8s-openapi's Quantity takes any string; Go's parses it.
        Ok(_) => crate::k8s::workload::bad_quantity(pod, "")
            .map(|(path, why)| format!("failed to unmarshal: {path}: {why}")),
        Err(e) if e.inner().to_string().starts_with("missing field") => None,
        Err(e) => Some(format!("failed to unmarshal: {}: {}", e.path(), e.inner())),
    }
}

/// How fresh replicas land on the subsets, as Kruise's webhook assigns them.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Share {
    pub subset: String,
    /// The cap in pods (`None`: unlimited).
    pub cap: Option<i64>,
    pub pods: i64,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Distribution {
    pub replicas: i64,
    pub subsets: Vec<Share>,
    /// Pods for which no subset had room: admitted without any injection.
    pub overflow: i64,
}

/// The ordinals a StatefulSet's pods take, in order: from `spec.ordinals.start`, past an
/// Advanced StatefulSet's `reserveOrdinals` (numbers, or `"a-b"` ranges), kept as ranges so
/// that no count is ever walked one by one.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ordinals {
    start: i64,
    /// Reserved ordinals at or after `start`: sorted, disjoint, inclusive ranges.
    reserved: Vec<(i64, i64)>,
}

impl Ordinals {
    /// A StatefulSet's (either group's) ordinals; entries Kruise would refuse are passed over.
    pub fn of(workload: &Value) -> Ordinals {
        let spec = &workload["spec"];
        let start = spec["ordinals"]["start"].as_i64().unwrap_or(0).max(0);
        let mut ranges: Vec<(i64, i64)> = spec["reserveOrdinals"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| match r {
                Value::Number(n) => n.as_i64().map(|n| (n, n)),
                Value::String(t) => match t.split_once('-') {
                    Some((a, b)) => Some((a.trim().parse().ok()?, b.trim().parse().ok()?)),
                    None => t.trim().parse().ok().map(|n| (n, n)),
                },
                _ => None,
            })
            .filter(|&(a, b)| a <= b && b >= start)
            .map(|(a, b)| (a.max(start), b))
            .collect();
        ranges.sort_unstable();
        let mut reserved: Vec<(i64, i64)> = Vec::with_capacity(ranges.len());
        for (a, b) in ranges {
            match reserved.last_mut() {
                Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
                _ => reserved.push((a, b)),
            }
        }
        Ordinals { start, reserved }
    }

    /// The ordinal of the last of `n` pods (`start - 1` for none).
    fn last(&self, n: i64) -> i64 {
        let mut last = self.start.saturating_add(n).saturating_sub(1);
        for &(a, b) in &self.reserved {
            if a > last {
                break;
            }
            last = last.saturating_add(b - a + 1);
        }
        last
    }

    /// How many of the first `n` pods' ordinals lie in `[lo, hi)`.
    fn count_in(&self, n: i64, lo: i64, hi: i64) -> i64 {
        let (from, to) = (lo.max(self.start), hi.saturating_sub(1).min(self.last(n)));
        if from > to {
            return 0;
        }
        let reserved: i64 = self
            .reserved
            .iter()
            .map(|&(a, b)| (b.min(to) - a.max(from) + 1).max(0))
            .sum();
        to - from + 1 - reserved
    }
}

/// Distributes `replicas` fresh pods. A StatefulSet's (`ordinals`) go by ordinal through a
/// running threshold, as Kruise reads each pod's ordinal from its name: the pods below the
/// first subset's cap to it, and so on, an uncapped subset taking the rest; other kinds fill
/// the first subset with room, in order. Percent caps are `ceil(p × base / 100)` per subset; a
/// cap of 0 never takes a pod. `base` is what percentage caps are taken of (the replicas, or
/// targetFilter's count). Counted per subset, never per pod.
pub fn distribute(
    ws: &WorkloadSpread,
    ordinals: Option<&Ordinals>,
    replicas: i64,
    base: i64,
) -> Distribution {
    let subsets = &ws.subsets;
    let caps: Vec<Option<i64>> = subsets
        .iter()
        .map(|s| cap_of(s).map(|c| c.pods(base).max(0)))
        .collect();
    let mut pods = Vec::with_capacity(caps.len());
    let overflow = match ordinals {
        Some(o) => {
            let mut threshold = Some(0i64);
            for cap in &caps {
                let lo = threshold;
                threshold = match (threshold, cap) {
                    (Some(t), Some(c)) => Some(t.saturating_add(*c)),
                    _ => None,
                };
                pods.push(match lo {
                    Some(lo) => o.count_in(replicas, lo, threshold.unwrap_or(i64::MAX)),
                    None => 0,
                });
            }
            match threshold {
                Some(t) => o.count_in(replicas, t, i64::MAX),
                None => 0,
            }
        }
        None => {
            let (filled, left) = fill(&caps, replicas);
            pods = filled;
            left
        }
    };
    Distribution {
        replicas,
        subsets: subsets
            .iter()
            .zip(caps)
            .zip(pods)
            .map(|((s, cap), pods)| Share {
                subset: s.name.clone(),
                cap,
                pods,
            })
            .collect(),
        overflow,
    }
}

/// `replicas` pods given to the subsets in order, each up to its cap (none: the rest); and
/// those left over.
fn fill(caps: &[Option<i64>], replicas: i64) -> (Vec<i64>, i64) {
    let mut left = replicas;
    let pods = caps
        .iter()
        .map(|cap| {
            let take = cap.map_or(left, |c| c.min(left));
            left -= take;
            take
        })
        .collect();
    (pods, left)
}

impl ScheduleStrategy {
    /// The seconds after which Kruise's controller reschedules a subset's Pending pods: only
    /// with the Adaptive type and a positive `rescheduleCriticalSeconds`, as its controller
    /// reads them.
    pub fn reschedule_seconds(&self) -> Option<i64> {
        let secs = self.adaptive.as_ref()?.reschedule_critical_seconds?;
        (self.kind == "Adaptive" && secs > 0).then_some(secs)
    }
}

/// Kruise's Adaptive rescheduling (the controller's `rescheduleSubset`): a subset other than
/// the last whose pods stay Pending past `rescheduleCriticalSeconds` is marked unschedulable
/// and those pods deleted, so the webhook injects their replacements into the next subsets
/// with room; the pods it runs stay. `rooms`: how many of its pods each subset's nodes have
/// room for (`None`: not known, taken as enough). The pods each subset ends with, and those
/// no subset takes (admitted without injection). StatefulSet ordinals are not modelled.
pub fn rescheduled(dist: &Distribution, rooms: &[Option<u64>]) -> (Vec<i64>, i64) {
    let mut caps: Vec<Option<i64>> = dist.subsets.iter().map(|s| s.cap).collect();
    let last = caps.len().saturating_sub(1);
    // Each round lowers a cap to its room for good: at most one round a subset.
    loop {
        let (pods, overflow) = fill(&caps, dist.replicas);
        let mut changed = false;
        for i in 0..last {
            if let Some(room) = rooms.get(i).copied().flatten() {
                let room = i64::try_from(room).unwrap_or(i64::MAX);
                if pods[i] > room {
                    caps[i] = Some(room);
                    changed = true;
                }
            }
        }
        if !changed {
            return (pods, overflow);
        }
    }
}

/// API values as JSON; they always serialize (string-keyed maps only).
fn as_json<T: serde::Serialize>(v: &[T]) -> impl Iterator<Item = Value> + '_ {
    v.iter()
        .map(|x| serde_json::to_value(x).unwrap_or_default())
}

/// The pod template after Kruise's injection of one subset: tolerations appended, preferred
/// terms appended, the required term ANDed into every existing required term (or set as the
/// only term), nodeSelector untouched, then the subset's patch applied by strategic merge. With
/// a patch that cannot be applied, the pod without it and why, or that leaves a value of the
/// wrong type, the pod with it and why: Kruise's webhook then refuses the subset's pods.
pub fn inject(template: &Value, ws: &WorkloadSpread, subset: usize) -> (Value, Option<String>) {
    let mut pod = template.clone();
    let Some(sub) = ws.subsets.get(subset) else {
        return (pod, None);
    };
    if !pod["spec"].is_object() {
        pod["spec"] = json!({});
    }
    let spec = &mut pod["spec"];
    if !sub.tolerations.is_empty() {
        let list = spec["tolerations"].as_array().cloned().unwrap_or_default();
        spec["tolerations"] =
            Value::Array(list.into_iter().chain(as_json(&sub.tolerations)).collect());
    }
    let na = &mut spec["affinity"]["nodeAffinity"];
    if !sub.preferred.is_empty() {
        let key = "preferredDuringSchedulingIgnoredDuringExecution";
        let list = na[key].as_array().cloned().unwrap_or_default();
        na[key] = Value::Array(list.into_iter().chain(as_json(&sub.preferred)).collect());
    }
    if let Some(req) = &sub.required {
        let req = serde_json::to_value(req).unwrap_or_default();
        let terms = &mut na["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
        match terms.as_array_mut().filter(|t| !t.is_empty()) {
            Some(list) => {
                for t in list.iter_mut() {
                    for field in ["matchExpressions", "matchFields"] {
                        if let Some(add) = req[field].as_array().filter(|a| !a.is_empty()) {
                            let mut cur = t[field].as_array().cloned().unwrap_or_default();
                            cur.extend(add.iter().cloned());
                            t[field] = Value::Array(cur);
                        }
                    }
                }
            }
            None => *terms = json!([req.clone()]),
        }
    }
    // Nothing added leaves the null the indexing above wrote.
    if spec["affinity"]["nodeAffinity"]
        .as_object()
        .is_none_or(|m| m.is_empty())
    {
        if let Some(a) = spec["affinity"].as_object_mut() {
            a.remove("nodeAffinity");
        }
    }
    if spec["affinity"].as_object().is_some_and(|m| m.is_empty()) {
        if let Some(s) = spec.as_object_mut() {
            s.remove("affinity");
        }
    }
    if let Some(patch) = &sub.patch {
        let class = pod["spec"]["priorityClassName"].clone();
        match strategic::apply(&pod, patch) {
            Ok(patched) => pod = patched,
            Err(e) => return (pod, Some(format!("failed to merge patch: {e}"))),
        }
        if let Some(e) = unmarshal_error(&pod) {
            return (pod, Some(e));
        }
        // As Kruise: a patched priorityClassName clears the priority the admission plugin set
        // for the old class, so the apiserver sets the new one.
        if pod["spec"]["priorityClassName"] != class {
            if let Some(spec) = pod["spec"].as_object_mut() {
                spec.remove("priority");
            }
        }
    }
    (pod, None)
}

#[cfg(test)]
mod tests;
