//! OpenKruise WorkloadSpread (`apps.kruise.io`, v1alpha1 and v1beta1): validation of the object
//! as Kruise's webhook does it, and cross-checks against the target workload through the
//! placement core (subsets that can never hold a pod, injection that loosens, overlaps, caps).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{NodeSelectorTerm, Toleration};
use serde_json::{json, Value};

use crate::core::nodeselector::{pod_node_constraint, Term};
use crate::k8s::fieldpath::{FieldError, FieldPath};
use crate::k8s::model::PodSpec;
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

/// Field names that differ between versions.
pub struct Names {
    pub required: &'static str,
    pub preferred: &'static str,
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
            preferred: "preferredNodeSelectorTerms",
        }
    }
}

/// (group, kind) of a workload a WorkloadSpread may target.
const TARGETS: [(&str, &str); 6] = [
    ("apps", "Deployment"),
    ("apps", "ReplicaSet"),
    ("apps", "StatefulSet"),
    (GROUP, "CloneSet"),
    (GROUP, "StatefulSet"),
    ("batch", "Job"),
];

fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// The target as (group, kind, name), when complete.
pub fn target(ws: &Value) -> Option<(String, String, String)> {
    let t = &ws["spec"]["targetRef"];
    let (a, k, n) = (
        t["apiVersion"].as_str()?,
        t["kind"].as_str()?,
        t["name"].as_str()?,
    );
    Some((group_of(a).to_string(), k.to_string(), n.to_string()))
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
            Cap::Percent(p) => (p * replicas + 99) / 100,
        }
    }
}

fn parse_cap(v: &Value, path: &FieldPath, out: &mut Vec<Problem>) -> Option<Cap> {
    match v {
        Value::Null => None,
        Value::Number(n) => match n.as_i64() {
            Some(i) if i >= 0 => Some(Cap::Count(i)),
            _ => {
                out.push(err(FieldError::invalid(
                    path.clone(),
                    v.clone(),
                    "must be a non-negative integer",
                )));
                None
            }
        },
        Value::String(s) => {
            let pct = s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok());
            match pct {
                Some(p) if (0..=100).contains(&p) => Some(Cap::Percent(p)),
                _ => {
                    out.push(err(FieldError::invalid(
                        path.clone(),
                        v.clone(),
                        "must be a whole percentage between 0% and 100%, e.g. \"20%\"",
                    )));
                    None
                }
            }
        }
        other => {
            out.push(err(FieldError::invalid(
                path.clone(),
                other.clone(),
                "must be an integer or a percentage",
            )));
            None
        }
    }
}

fn read<T: serde::de::DeserializeOwned + Default>(
    v: &Value,
    path: &FieldPath,
    out: &mut Vec<Problem>,
) -> T {
    if v.is_null() {
        return T::default();
    }
    match serde_json::from_value(v.clone()) {
        Ok(t) => t,
        Err(e) => {
            out.push(err(FieldError::invalid(
                path.clone(),
                v.clone(),
                e.to_string(),
            )));
            T::default()
        }
    }
}

/// Every problem of one WorkloadSpread on its own (what Kruise's webhook refuses), plus a
/// warning for target kinds Kruise only accepts when whitelisted.
pub fn validate(ws: &Value) -> Vec<Problem> {
    let mut out = Vec::new();
    let api = ws["apiVersion"].as_str().unwrap_or("");
    let n = names(api);
    let spec = FieldPath::new("spec");
    let s = &ws["spec"];

    let tr = &s["targetRef"];
    let tp = spec.child("targetRef");
    if !tr.is_object() {
        out.push(err(FieldError::required(
            tp.clone(),
            "the workload to spread: apiVersion, kind and name",
        )));
    } else {
        for f in ["apiVersion", "kind", "name"] {
            if tr[f].as_str().unwrap_or("").is_empty() {
                out.push(err(FieldError::required(tp.child(f), "")));
            }
        }
        if let (Some(a), Some(k)) = (tr["apiVersion"].as_str(), tr["kind"].as_str()) {
            if !a.is_empty() && !k.is_empty() && !TARGETS.contains(&(group_of(a), k)) {
                out.push(warn(FieldError::not_supported(
                    tp.child("kind"),
                    json!(format!("{k}.{}", group_of(a))),
                    &[
                        "Deployment.apps",
                        "ReplicaSet.apps",
                        "StatefulSet.apps",
                        "CloneSet.apps.kruise.io",
                        "StatefulSet.apps.kruise.io",
                        "Job.batch",
                    ],
                )));
            }
        }
    }
    let target_is_statefulset = tr["kind"].as_str() == Some("StatefulSet");

    let empty = Vec::new();
    let subsets = s["subsets"].as_array().unwrap_or(&empty);
    let sp = spec.child("subsets");
    if subsets.is_empty() {
        out.push(err(FieldError::required(sp.clone(), "at least one subset")));
    }
    let mut seen = BTreeSet::new();
    let mut caps: Vec<Option<Cap>> = Vec::new();
    for (i, sub) in subsets.iter().enumerate() {
        let p = sp.index(i);
        let name = sub["name"].as_str().unwrap_or("");
        if name.is_empty() {
            out.push(err(FieldError::required(p.child("name"), "")));
        } else if !seen.insert(name.to_string()) {
            out.push(err(FieldError::duplicate(p.child("name"), json!(name))));
        }
        let term: Option<NodeSelectorTerm> = read(&sub[n.required], &p.child(n.required), &mut out);
        if let Some(t) = &term {
            out.extend(validate_term(t, &p.child(n.required)).into_iter().map(err));
        }
        let preferred: Vec<Value> = sub[n.preferred].as_array().cloned().unwrap_or_default();
        for (j, pref) in preferred.iter().enumerate() {
            let pp = p.child(n.preferred).index(j);
            let w = pref["weight"].as_i64().unwrap_or(0);
            if !(1..=100).contains(&w) {
                out.push(err(FieldError::invalid(
                    pp.child("weight"),
                    pref["weight"].clone(),
                    "must be in the range 1-100",
                )));
            }
            let t: NodeSelectorTerm = read(&pref["preference"], &pp.child("preference"), &mut out);
            out.extend(
                validate_term(&t, &pp.child("preference"))
                    .into_iter()
                    .map(err),
            );
        }
        let tolerations: Vec<Toleration> =
            read(&sub["tolerations"], &p.child("tolerations"), &mut out);
        for (j, t) in tolerations.iter().enumerate() {
            out.extend(
                validate_toleration(t, &p.child("tolerations").index(j))
                    .into_iter()
                    .map(err),
            );
        }
        let cap = parse_cap(&sub["maxReplicas"], &p.child("maxReplicas"), &mut out);
        if target_is_statefulset && matches!(cap, Some(Cap::Percent(_))) {
            out.push(err(FieldError::invalid(
                p.child("maxReplicas"),
                sub["maxReplicas"].clone(),
                "a StatefulSet target takes integer maxReplicas only",
            )));
        }
        caps.push(cap);
    }
    let set: Vec<(usize, Cap)> = caps
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.map(|c| (i, c)))
        .collect();
    let percents: Vec<i64> = set
        .iter()
        .filter_map(|(_, c)| {
            if let Cap::Percent(p) = c {
                Some(*p)
            } else {
                None
            }
        })
        .collect();
    if !percents.is_empty() && percents.len() != set.len() {
        if let Some((i, _)) = set.iter().find(|(_, c)| matches!(c, Cap::Count(_))) {
            out.push(err(FieldError::invalid(
                sp.index(*i).child("maxReplicas"),
                subsets[*i]["maxReplicas"].clone(),
                "maxReplicas of all subsets must be of one type: all integers or all percentages",
            )));
        }
    } else if !percents.is_empty() {
        let sum: i64 = percents.iter().sum();
        let last_uncapped = caps.last().is_some_and(Option::is_none);
        if sum > 100 {
            out.push(err(FieldError::invalid(
                sp.clone(),
                json!(format!("{sum}%")),
                "the percentages of maxReplicas add up to more than 100%",
            )));
        } else if sum != 100 && !last_uncapped {
            out.push(err(FieldError::invalid(sp.clone(), json!(format!("{sum}%")), "the percentages of maxReplicas must add up to 100% unless the last subset has no maxReplicas")));
        }
    }

    let st = &s["scheduleStrategy"];
    let stp = spec.child("scheduleStrategy");
    let kind = st["type"].as_str().unwrap_or("");
    if !["", "Fixed", "Adaptive"].contains(&kind) {
        out.push(err(FieldError::not_supported(
            stp.child("type"),
            json!(kind),
            &["Adaptive", "Fixed"],
        )));
    }
    if !st["adaptive"].is_null() && kind != "Adaptive" {
        out.push(err(FieldError::forbidden(
            stp.child("adaptive"),
            "only allowed when type is Adaptive",
        )));
    }
    if kind == "Adaptive" && subsets.len() > 1 {
        if caps.last().is_some_and(Option::is_some) {
            out.push(err(FieldError::invalid(
                sp.index(subsets.len() - 1).child("maxReplicas"),
                subsets[subsets.len() - 1]["maxReplicas"].clone(),
                "with the Adaptive strategy the last subset takes the rest and has no maxReplicas",
            )));
        }
        let limit = 295 / (subsets.len() as i64 - 1);
        if let Some(secs) = st["adaptive"]["rescheduleCriticalSeconds"].as_i64() {
            if !(0..=limit).contains(&secs) {
                out.push(err(FieldError::invalid(
                    stp.child("adaptive").child("rescheduleCriticalSeconds"),
                    json!(secs),
                    format!(
                        "must be between 0 and {limit} with {} subsets",
                        subsets.len()
                    ),
                )));
            }
        }
    }
    out
}

/// The subsets' required terms, compiled (`None`: no term; `Some(None)`: an empty or invalid
/// term, which matches no node).
pub fn subset_terms(ws: &Value) -> Vec<(String, Option<Option<Term>>)> {
    let n = names(ws["apiVersion"].as_str().unwrap_or(""));
    ws["spec"]["subsets"]
        .as_array()
        .map(|subs| {
            subs.iter()
                .map(|s| {
                    let name = s["name"].as_str().unwrap_or("").to_string();
                    let term = (!s[n.required].is_null()).then(|| {
                        serde_json::from_value::<NodeSelectorTerm>(s[n.required].clone())
                            .ok()
                            .and_then(|t| Term::from_api(&t))
                    });
                    (name, term)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The target workload as the cross-checks need it.
#[derive(Clone, Copy, Debug)]
pub struct Target<'a> {
    pub spec: &'a PodSpec,
    pub replicas: Option<i64>,
}

/// Checks the subsets against the workload they inject into.
pub fn cross_check(ws: &Value, target: &Target) -> Vec<Problem> {
    let n = names(ws["apiVersion"].as_str().unwrap_or(""));
    let sp = FieldPath::new("spec.subsets");
    let terms = subset_terms(ws);
    let raw_required = target.spec.required_node_selector_terms();
    let workload = pod_node_constraint(target.spec.node_selector(), raw_required);
    let has_empty_workload_term =
        raw_required.is_some_and(|ts| ts.iter().any(|t| Term::from_api(t).is_none()));
    let mut out = Vec::new();
    for (i, (name, term)) in terms.iter().enumerate() {
        let p = sp.index(i).child(n.required);
        match term {
            None => {}
            Some(None) if raw_required.is_none() => out.push(err(FieldError::invalid(
                p,
                json!({}),
                format!("subset {name:?}: an empty term becomes the pods' only required term and matches no node, so its pods can never be scheduled"),
            ))),
            Some(None) => {}
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
                if x.and(y).satisfiable() {
                    out.push(warn(FieldError::invalid(
                        sp.index(b).child(n.required),
                        json!(y.to_string()),
                        format!("subsets {na:?} and {nb:?} can both hold on one node, so pods of {nb:?} may land in {na:?}'s pool"),
                    )));
                }
            }
        }
    }
    let mut caps = Vec::new();
    let subsets = ws["spec"]["subsets"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for (i, s) in subsets.iter().enumerate() {
        caps.push(parse_cap(
            &s["maxReplicas"],
            &sp.index(i).child("maxReplicas"),
            &mut Vec::new(),
        ));
    }
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

/// Distributes `replicas` fresh pods. StatefulSets map by ordinal through a running threshold;
/// other kinds fill the first subset with room, in order. Percent caps are
/// `ceil(p × replicas / 100)` per subset; a cap of 0 never takes a pod.
pub fn distribute(ws: &Value, statefulset: bool, replicas: i64) -> Distribution {
    let subsets = ws["spec"]["subsets"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let caps: Vec<Option<i64>> = subsets
        .iter()
        .map(|s| {
            parse_cap(&s["maxReplicas"], &FieldPath::root(), &mut Vec::new())
                .map(|c| c.pods(replicas))
        })
        .collect();
    let mut pods = vec![0i64; subsets.len()];
    let mut overflow = 0;
    for k in 0..replicas {
        let slot = if statefulset {
            let mut threshold: Option<i64> = Some(0);
            caps.iter().position(|c| {
                threshold = match (threshold, c) {
                    (Some(t), Some(c)) => Some(t + c),
                    _ => None,
                };
                threshold.is_none_or(|t| k < t)
            })
        } else {
            (0..subsets.len()).find(|&i| caps[i].is_none_or(|c| pods[i] < c))
        };
        match slot {
            Some(i) => pods[i] += 1,
            None => overflow += 1,
        }
    }
    Distribution {
        replicas,
        subsets: subsets
            .iter()
            .zip(caps)
            .zip(pods)
            .map(|((s, cap), pods)| Share {
                subset: s["name"].as_str().unwrap_or("").to_string(),
                cap,
                pods,
            })
            .collect(),
        overflow,
    }
}

/// A strategic merge of `patch` into `target`, for what real subset patches use: maps merge
/// (null deletes), and `containers`, `initContainers`, `volumes` and `env` merge by `name`;
/// any other list replaces. Parts it cannot apply exactly (`$patch`, `$setElementOrder`, ...)
/// are returned instead of guessed.
pub fn strategic_merge(
    target: &mut Value,
    patch: &Value,
    path: &str,
    unsupported: &mut Vec<String>,
) {
    const BY_NAME: [&str; 4] = ["containers", "initContainers", "volumes", "env"];
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Default::default());
    }
    for (k, v) in p {
        let here = if path.is_empty() {
            k.clone()
        } else {
            format!("{path}.{k}")
        };
        if k.starts_with('$') {
            unsupported.push(here);
            continue;
        }
        let Some(t) = target.as_object_mut() else {
            return;
        };
        match v {
            Value::Null => {
                t.remove(k);
            }
            Value::Object(_) => strategic_merge(
                t.entry(k.clone()).or_insert(Value::Null),
                v,
                &here,
                unsupported,
            ),
            Value::Array(items) if BY_NAME.contains(&k.as_str()) => {
                let list = t
                    .entry(k.clone())
                    .or_insert_with(|| Value::Array(Vec::new()));
                if !list.is_array() {
                    *list = Value::Array(Vec::new());
                }
                for item in items {
                    let Some(name) = item["name"].as_str() else {
                        unsupported.push(format!("{here}[] (an entry without name)"));
                        continue;
                    };
                    let arr = list.as_array_mut().map(std::mem::take).unwrap_or_default();
                    let mut arr = arr;
                    match arr.iter_mut().find(|e| e["name"] == name) {
                        Some(existing) => {
                            strategic_merge(existing, item, &format!("{here}[{name}]"), unsupported)
                        }
                        None => arr.push(item.clone()),
                    }
                    *list = Value::Array(arr);
                }
            }
            other => {
                t.insert(k.clone(), other.clone());
            }
        }
    }
}

/// The pod template after Kruise's injection of one subset: tolerations appended, preferred
/// terms appended, the required term ANDed into every existing required term (or set as the
/// only term), nodeSelector untouched, then the subset's patch applied.
pub fn inject(template: &Value, ws: &Value, subset: usize) -> (Value, Vec<String>) {
    let n = names(ws["apiVersion"].as_str().unwrap_or(""));
    let sub = &ws["spec"]["subsets"][subset];
    let mut pod = template.clone();
    if !pod["spec"].is_object() {
        pod["spec"] = json!({});
    }
    let spec = &mut pod["spec"];
    if let Some(tols) = sub["tolerations"].as_array().filter(|t| !t.is_empty()) {
        let list = spec["tolerations"].as_array().cloned().unwrap_or_default();
        spec["tolerations"] = Value::Array(list.into_iter().chain(tols.iter().cloned()).collect());
    }
    let na = &mut spec["affinity"]["nodeAffinity"];
    if let Some(pref) = sub[n.preferred].as_array().filter(|p| !p.is_empty()) {
        let key = "preferredDuringSchedulingIgnoredDuringExecution";
        let list = na[key].as_array().cloned().unwrap_or_default();
        na[key] = Value::Array(list.into_iter().chain(pref.iter().cloned()).collect());
    }
    let req = &sub[n.required];
    if req.is_object() {
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
    if spec["affinity"]["nodeAffinity"]
        .as_object()
        .is_some_and(|m| m.is_empty())
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
    let mut unsupported = Vec::new();
    if !sub["patch"].is_null() {
        strategic_merge(&mut pod, &sub["patch"], "", &mut unsupported);
    }
    (pod, unsupported)
}

#[cfg(test)]
mod tests;
