//! `mutable-directives`: KEP-3838 (Pod Mutable Scheduling Directives) exactly as kube-apiserver's
//! `ValidatePodUpdate` applies it, restricted to the scheduling directives, plus what the
//! apiserver does not say: whether a refused change was really a tightening, and its legal form.

use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelectorRequirement, NodeSelectorTerm, Toleration,
};
use serde_json::{json, Value};

use serde::{Deserialize, Serialize};

use super::{
    Action, Finding, Input, Note, ObjectKind, Operation, Phase, Request, Rule, RuleId, RuleMeta,
    User, Verdict, Voice,
};
use crate::core::nodeselector::{pod_constraint_implies, Operator, Requirement, Source, Term};
use crate::k8s::fieldpath::{ErrorType, FieldError, FieldPath};
use crate::k8s::model::PodSpec;
use crate::k8s::semantic::{map_eq, toleration_eq_but_seconds, SemEq};
use crate::k8s::workload::Kind;

pub const ID: RuleId = RuleId::new("mutable-directives");

/// The rule file's `mutableDirectives` section.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct MutableDirectives {
    pub enabled: bool,
    pub action: Action,
    /// User names, or `group:NAME`; empty means anyone may tighten a gated pod's directives.
    pub allowed_users: Vec<String>,
}

impl Default for MutableDirectives {
    fn default() -> Self {
        MutableDirectives {
            enabled: true,
            action: Action::Deny,
            allowed_users: Vec::new(),
        }
    }
}

/// Warnings carry at most this much text in total; the apiserver drops warnings beyond 4096.
const WARNING_BUDGET: usize = 4000;

pub struct MutableDirectivesRule;

impl Rule for MutableDirectivesRule {
    type Settings = MutableDirectives;
    const META: &'static [RuleMeta] = &[RuleMeta {
        id: ID,
        summary: "Scheduling directives of gated pods may only be tightened (KEP-3838)",
        help: "while a pod has schedulingGates, add nodeSelector keys or append requirements to existing node affinity terms; change nothing else",
        default_action: "deny",
    }];

    /// Pod UPDATE, on both endpoints: `/validate` judges, `/mutate` explains.
    fn applies(s: &MutableDirectives, r: Request) -> bool {
        s.enabled && r.kind == ObjectKind::Template(Kind::Pod) && r.operation == Operation::Update
    }

    /// Existing tolerations must stay (`validateOnlyAddedTolerations`).
    fn reads_tolerations(_: &MutableDirectives, _: Request) -> bool {
        true
    }

    /// Unchanged tolerations lose none.
    fn reads_unchanged_tolerations(_: &MutableDirectives, _: Request) -> bool {
        false
    }

    /// Only to restrict who may tighten: with no `allowedUsers`, anyone may.
    fn reads_user(s: &MutableDirectives, _: Request) -> bool {
        !s.allowed_users.is_empty()
    }

    /// It compares the two pod specs alone.
    fn reads_metadata(_: &MutableDirectives, _: Request, _: Option<&PodSpec>, _: &PodSpec) -> bool {
        false
    }

    fn evaluate(s: &MutableDirectives, input: &Input, verdict: &mut Verdict) {
        let Some((new, Some(old))) = input.templates() else {
            return;
        };
        verdict.rules_run.push(ID);
        let problems = check(&old.spec, &new.spec, &input.user, s);
        match input.phase {
            Phase::Validate => verdict
                .findings
                .extend(problems.into_iter().map(|p| Finding {
                    rule: ID,
                    action: s.action,
                    error: p.error,
                    hint: p.hint,
                })),
            // kube-apiserver rejects a loosening update before any validating webhook runs,
            // but warnings from a mutating webhook still reach the client. Never denies.
            Phase::Mutate => explain(problems, verdict),
        }
    }

    fn check_settings(s: &MutableDirectives, path: &FieldPath) -> Vec<FieldError> {
        s.allowed_users
            .iter()
            .enumerate()
            .filter(|(_, u)| u.trim().is_empty() || *u == "group:")
            .map(|(i, u)| FieldError {
                kind: ErrorType::Invalid,
                path: path.child("allowedUsers").index(i),
                value: Some(u.as_str().into()),
                detail: "must be a user name or group:NAME".to_string(),
            })
            .collect()
    }
}

/// One-line explanations of every refused change, within the warnings budget.
fn explain(problems: Vec<Problem>, verdict: &mut Verdict) {
    let lines: Vec<(FieldPath, String)> = problems
        .into_iter()
        .flat_map(|p| {
            let path = p.error.path;
            p.explain.into_iter().map(move |l| (path.clone(), l))
        })
        .collect();
    let note = |path: FieldPath, message: String| Note {
        rule: ID,
        voice: Voice::Tool,
        path,
        message,
    };
    let mut used = 0;
    let total = lines.len();
    for (i, (path, line)) in lines.into_iter().enumerate() {
        // As the warning will read: `placement-guard: ` and the line.
        let len = "placement-guard: ".len() + line.len();
        if used + len > WARNING_BUDGET {
            verdict.notes.push(note(
                FieldPath::new("spec"),
                format!("{} more refused change(s) not shown", total - i),
            ));
            break;
        }
        used += len;
        verdict.notes.push(note(path, line));
    }
}

/// The first few of a list, and how many more: a warning stays one readable line however many
/// keys an update touched (the explanations name each one, within their budget).
fn few(items: &[String]) -> String {
    const SHOWN: usize = 3;
    let mut s = items
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > SHOWN {
        s.push_str(&format!(" and {} more", items.len() - SHOWN));
    }
    s
}

/// One refused change: the error in the apiserver's words, a hint, and one-line explanations
/// (under 120 characters where possible) that `/mutate` returns as warnings.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    pub error: FieldError,
    pub hint: Option<String>,
    pub explain: Vec<String>,
}

const REQUIRED: &str = "requiredDuringSchedulingIgnoredDuringExecution";

fn node_affinity(spec: &PodSpec) -> Option<&NodeAffinity> {
    spec.affinity.as_ref()?.node_affinity.as_ref()
}

fn required_terms(na: Option<&NodeAffinity>) -> Option<&[NodeSelectorTerm]> {
    na?.required_during_scheduling_ignored_during_execution
        .as_ref()
        .map(|r| r.node_selector_terms.as_slice())
}

/// Every problem with updating `old` to `new`, in the order the apiserver reports them.
pub fn check(old: &PodSpec, new: &PodSpec, user: &User, cfg: &MutableDirectives) -> Vec<Problem> {
    let spec = FieldPath::root().child("spec");
    let mut out = Vec::new();
    // Paths are built only for a problem found: most updates have none.
    out.extend(check_tolerations(
        old.tolerations(),
        new.tolerations(),
        &spec,
    ));
    out.extend(check_gates(old, new, &spec));
    if old.is_gated() {
        let selector_changed = !map_eq(&old.node_selector, &new.node_selector);
        let old_na = node_affinity(old);
        let new_na = node_affinity(new);
        let affinity_changed = !old_na.sem_eq(&new_na);
        if (selector_changed || affinity_changed) && !user_allowed(user, &cfg.allowed_users) {
            let path = if selector_changed {
                spec.child("nodeSelector")
            } else {
                spec.child("affinity").child("nodeAffinity")
            };
            out.push(Problem {
                error: FieldError::forbidden(
                    path,
                    format!(
                        "user {:?} may not change the scheduling directives of a gated pod; allowed: {}",
                        user.username,
                        cfg.allowed_users.join(", ")
                    ),
                ),
                hint: Some(
                    "ask the controller that owns the scheduling gate to make this change, or add the user to mutableDirectives.allowedUsers"
                        .to_string(),
                ),
                explain: vec![format!(
                    "user {:?} may not change a gated pod's directives (mutableDirectives.allowedUsers)",
                    user.username
                )],
            });
        }
        // Only a refused change's hint asks (it costs more than the checks: with node
        // affinity, about 9k instructions a review).
        let tightening = || {
            let (n, o) = (
                (new.node_selector(), required_terms(new_na)),
                (old.node_selector(), required_terms(old_na)),
            );
            match (pod_constraint_implies(n, o), pod_constraint_implies(o, n)) {
                (true, true) => Narrowing::Same,
                (true, false) => Narrowing::Narrower,
                _ => Narrowing::Other,
            }
        };
        if selector_changed {
            out.extend(check_node_selector(
                old,
                new,
                &tightening,
                &spec.child("nodeSelector"),
            ));
        }
        if affinity_changed {
            let na_path = spec.children(&["affinity", "nodeAffinity"]);
            out.extend(check_node_affinity(old_na, new_na, &tightening, &na_path));
        }
        out.extend(check_rest_of_affinity(old, new, &spec));
    } else {
        out.extend(check_ungated(old, new, &spec));
    }
    out
}

/// What a refused change does to the nodes the pod may use, for its hint.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Narrowing {
    /// A strict subset of them: a tightening in a form Kubernetes refuses.
    Narrower,
    /// The same nodes (the rest of the selection already decided them).
    Same,
    /// Others, or more.
    Other,
}

fn user_allowed(user: &User, allowed: &[String]) -> bool {
    allowed.is_empty()
        || allowed.iter().any(|a| match a.strip_prefix("group:") {
            Some(g) => user.groups.iter().any(|ug| ug == g),
            None => a == user.username,
        })
}

/// A toleration as written: an omitted operator is not printed as `Equal`, since
/// `validateOnlyAddedTolerations` compares the two as different.
fn describe_toleration(t: &Toleration) -> String {
    let mut parts = Vec::new();
    let written = |v: &Option<String>| v.as_deref().filter(|v| !v.is_empty()).map(str::to_owned);
    for (name, value) in [
        ("key", written(&t.key)),
        ("operator", written(&t.operator)),
        ("value", written(&t.value)),
        ("effect", written(&t.effect)),
    ] {
        if let Some(v) = value {
            parts.push(format!("{name}={v}"));
        }
    }
    format!("{{{}}}", parts.join(" "))
}

/// `validateOnlyAddedTolerations`: every old toleration must stay (tolerationSeconds may change).
fn check_tolerations(old: &[Toleration], new: &[Toleration], spec: &FieldPath) -> Option<Problem> {
    const SHOWN: usize = 3;
    let missing: Vec<&Toleration> = old
        .iter()
        .filter(|o| !new.iter().any(|n| toleration_eq_but_seconds(o, n)))
        .collect();
    let first = *missing.first()?;
    let mut lost = missing
        .iter()
        .take(SHOWN)
        .map(|t| describe_toleration(t))
        .collect::<Vec<_>>()
        .join(", ");
    if missing.len() > SHOWN {
        lost.push_str(&format!(" and {} more", missing.len() - SHOWN));
    }
    // Written again with the operator spelt out (or left out): the same to the scheduler, a
    // change to the apiserver, and invisible in a message that prints both alike.
    let equal = |t: &Toleration| {
        let op = t.operator.as_deref().filter(|o| !o.is_empty());
        let mut t = t.clone();
        t.operator = Some(op.unwrap_or("Equal").to_owned());
        t
    };
    let respelt = new
        .iter()
        .find(|n| toleration_eq_but_seconds(&equal(first), &equal(n)))
        .map(describe_toleration);
    let (was, are) = if missing.len() == 1 {
        ("toleration", "was")
    } else {
        ("tolerations", "were")
    };
    let (hint, explain) = match respelt {
        Some(n) => (
            format!(
                "toleration {} is written {n} now, and the apiserver compares tolerations as written (an omitted operator is not \"Equal\"): keep it as it was and add new ones",
                describe_toleration(first)
            ),
            format!(
                "spec.tolerations: \"{}\" rewritten as \"{n}\"; tolerations compare as written: keep it as it was",
                describe_toleration(first)
            ),
        ),
        None => (
            format!("{was} {lost} {are} removed or changed; keep every existing toleration as it is (only tolerationSeconds may change) and add new ones"),
            format!("spec.tolerations: \"{lost}\" removed or changed; only tolerationSeconds may change"),
        ),
    };
    Some(Problem {
        error: FieldError::forbidden(
            spec.child("tolerations"),
            "existing toleration can not be modified except its tolerationSeconds",
        ),
        hint: Some(hint),
        explain: vec![explain],
    })
}

/// `validateOnlyDeletedSchedulingGates`: gates may only be removed.
fn check_gates(old: &PodSpec, new: &PodSpec, spec: &FieldPath) -> Vec<Problem> {
    new.scheduling_gates()
        .iter()
        .enumerate()
        .filter(|(_, g)| !old.scheduling_gates().iter().any(|o| o.name == g.name))
        .map(|(i, g)| Problem {
            error: FieldError::forbidden(
                spec.child("schedulingGates").index(i).child("name"),
                format!("only deletion is allowed, but found new scheduling gate '{}'", g.name),
            ),
            hint: Some(
                "scheduling gates can only be set when the pod is created; remove the new gate from the update"
                    .to_string(),
            ),
            explain: vec![format!(
                "spec.schedulingGates: gate {:?} added; gates can only be removed after creation",
                g.name
            )],
        })
        .collect()
}

fn check_node_selector(
    old: &PodSpec,
    new: &PodSpec,
    tightening: &dyn Fn() -> Narrowing,
    path: &FieldPath,
) -> Option<Problem> {
    let new_sel = new.node_selector();
    if old
        .node_selector()
        .iter()
        .all(|(k, v)| new_sel.get(k) == Some(v))
    {
        return None;
    }
    let tightening = tightening();
    let mut lost = Vec::new();
    let mut explain = Vec::new();
    let advice = match tightening {
        Narrowing::Narrower => "narrower, but keep the key: add keys or affinity",
        Narrowing::Same => "the same nodes, but keep the key",
        Narrowing::Other => "while gated you may only add keys",
    };
    for (k, v) in old.node_selector() {
        match new_sel.get(k) {
            None => {
                lost.push(format!("key {k:?} (={v:?}) removed"));
                explain.push(format!(
                    "spec.nodeSelector[{k:?}] removed on a gated pod; {advice}"
                ));
            }
            Some(nv) if nv != v => {
                lost.push(format!("key {k:?} changed from {v:?} to {nv:?}"));
                explain.push(format!(
                    "spec.nodeSelector[{k:?}] changed {v:?} -> {nv:?} on a gated pod; {advice}"
                ));
            }
            Some(_) => {}
        }
    }
    if lost.is_empty() {
        return None;
    }
    let keep: Vec<String> = old
        .node_selector()
        .iter()
        .map(|(k, v)| format!("{:?}", format!("{k}={v}")))
        .collect();
    let (lost, keep) = (few(&lost), few(&keep));
    let hint = if tightening == Narrowing::Narrower {
        format!(
            "{}: the new directives select a subset of the old nodes (a tightening), but in a form Kubernetes refuses; keep {} in spec.nodeSelector and narrow by adding keys or appending node affinity requirements",
            lost, keep
        )
    } else if tightening == Narrowing::Same {
        format!(
            "{}: the new directives select the same nodes as the old, but in a form Kubernetes refuses; keep {} in spec.nodeSelector",
            lost, keep
        )
    } else {
        format!(
            "{}: while the pod is gated, nodeSelector keys may only be added; keep {} (to select other nodes, recreate the pod)",
            lost, keep
        )
    };
    Some(Problem {
        error: FieldError::invalid(
            path.clone(),
            // `{}` when the field is absent: the apiserver serializes an emptied map as absent
            // (omitempty), and an emptied map is what a patch that removes keys leaves; it
            // prints `null` only for an update that drops the field itself.
            json!(new_sel),
            "only additions to spec.nodeSelector are allowed (no mutations or deletions)",
        ),
        hint: Some(hint),
        explain,
    })
}

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// The API requirements of a term, labels then fields, for display.
fn quote_reqs(reqs: &[Requirement]) -> String {
    reqs.iter()
        .map(|r| {
            let prefix = if r.source == Source::Field {
                "field "
            } else {
                ""
            };
            format!("\"{prefix}{r}\"")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `validateNodeSelectorTermHasOnlyAdditions`: old requirements must be a prefix of the new ones.
fn term_only_adds(new: &NodeSelectorTerm, old: &NodeSelectorTerm) -> bool {
    let old_e = old.match_expressions.as_deref().unwrap_or(&[]);
    let old_f = old.match_fields.as_deref().unwrap_or(&[]);
    let new_e = new.match_expressions.as_deref().unwrap_or(&[]);
    let new_f = new.match_fields.as_deref().unwrap_or(&[]);
    if old_e.is_empty() && old_f.is_empty() && (!new_e.is_empty() || !new_f.is_empty()) {
        return false;
    }
    let prefix = |n: &[NodeSelectorRequirement], o: &[NodeSelectorRequirement]| {
        n.len() >= o.len() && n[..o.len()].sem_eq(o)
    };
    prefix(new_e, old_e) && prefix(new_f, old_f)
}

fn check_node_affinity(
    old: Option<&NodeAffinity>,
    new: Option<&NodeAffinity>,
    tightening: &dyn Fn() -> Narrowing,
    path: &FieldPath,
) -> Vec<Problem> {
    let Some(old_terms) = required_terms(old) else {
        return Vec::new();
    };
    let new_terms = required_terms(new).unwrap_or(&[]);
    let terms_path = path.child(REQUIRED).child("nodeSelectorTerms");
    if !old_terms.is_empty() && old_terms.len() != new_terms.len() {
        let (hint, explain) = terms_count_hint(old_terms, new_terms, tightening());
        return vec![Problem {
            error: FieldError::invalid(
                terms_path,
                // The apiserver's nil slice when the required block is gone.
                required_terms(new).map_or(Value::Null, |t| to_value(&t)),
                "no additions/deletions to non-empty NodeSelectorTerms list are allowed",
            ),
            hint: Some(hint),
            explain: vec![explain],
        }];
    }
    let mut out = Vec::new();
    for (i, (o, n)) in old_terms.iter().zip(new_terms).enumerate() {
        if term_only_adds(n, o) {
            continue;
        }
        let (hint, explain) = term_hint(i, o, n);
        out.push(Problem {
            error: FieldError::invalid(
                terms_path.index(i),
                to_value(n),
                "only additions are allowed (no mutations or deletions)",
            ),
            hint: Some(hint),
            explain: vec![explain],
        });
    }
    out
}

/// The hint and the one-line explanation for a changed number of terms.
fn terms_count_hint(
    old: &[NodeSelectorTerm],
    new: &[NodeSelectorTerm],
    tightening: Narrowing,
) -> (String, String) {
    let (o, n) = (old.len(), new.len());
    if tightening == Narrowing::Same {
        return (
            format!("this selects the same nodes as before (the rest of the pod's node selection already decides them), but the number of terms of a gated pod is fixed at {o}; keep the {o} term(s) as they were"),
            format!("nodeSelectorTerms: {o} terms became {n}, selecting the same nodes; the count is fixed while gated, keep the terms as they were"),
        );
    }
    if tightening == Narrowing::Narrower {
        if let Some(only) = <&[_; 1]>::try_from(new)
            .ok()
            .and_then(|[t]| Term::from_api(t))
        {
            let reqs = quote_reqs(&only.requirements);
            return (
                format!("this narrows the {o} term(s) to {n} (a tightening), but the number of terms of a gated pod is fixed; append {reqs} to each of the {o} existing term(s) instead, which selects the same nodes"),
                format!("nodeSelectorTerms narrowed from {o} terms to {n}; append {reqs} to each existing term instead"),
            );
        }
        return (
            format!("this selects a subset of the old nodes (a tightening), but the number of terms of a gated pod is fixed at {o}; keep the {o} term(s) and append requirements to them instead"),
            format!("nodeSelectorTerms: {o} terms became {n}; the count is fixed while gated, append to the existing terms"),
        );
    }
    if n > o {
        (
            format!("adding a term widens the OR of terms (more nodes qualify); keep the {o} term(s) and append requirements to them to narrow the choice"),
            format!("nodeSelectorTerms: {} term(s) added on a gated pod; terms may only gain requirements", n - o),
        )
    } else {
        (
            format!("removing a term is refused while gated; keep the {o} term(s) and append requirements to them to narrow the choice"),
            format!("nodeSelectorTerms: {} term(s) removed on a gated pod; terms may only gain requirements", o - n),
        )
    }
}

/// The hint and the one-line explanation for a rewritten term.
fn term_hint(i: usize, old: &NodeSelectorTerm, new: &NodeSelectorTerm) -> (String, String) {
    // The apiserver never stores an invalid operator, so an old term that matches no node is
    // an empty one.
    let Some(old_term) = Term::from_api(old) else {
        return (
            format!("nodeSelectorTerms[{i}] was empty (it matches no node) and can never be changed while gated"),
            format!("nodeSelectorTerms[{i}] was empty (matches no node) and cannot change while gated"),
        );
    };
    let Some(new_term) = Term::from_api(new) else {
        return (
            format!("nodeSelectorTerms[{i}] becomes a term that matches no node (empty, or with an unknown operator); keep \"{old_term}\" as its first requirements and append new ones"),
            format!("nodeSelectorTerms[{i}] becomes a term that matches no node; keep \"{old_term}\" and append to it"),
        );
    };
    let (old_reqs, new_reqs) = (&old_term.requirements, &new_term.requirements);
    let rewritten = format!("nodeSelectorTerms[{i}] rewrites \"{old_term}\" as \"{new_term}\"");
    let narrower = new_term.implies(&old_term);
    if narrower && old_term.implies(&new_term) {
        return (
            format!("{rewritten}, which selects the same nodes; keep \"{old_term}\" unchanged, in its order"),
            format!("nodeSelectorTerms[{i}] reorders or restates \"{old_term}\"; keep it unchanged, in its order"),
        );
    }
    if narrower {
        let extra = appended(old_reqs, new_reqs);
        let extra = quote_reqs(if extra.is_empty() { new_reqs } else { &extra });
        (
            format!("{rewritten}, a tightening; append the requirement(s) {extra} to the term instead, keeping the existing ones first and unchanged"),
            format!("{rewritten}; append the requirement {extra} to the term instead"),
        )
    } else {
        (
            format!("{rewritten}, which is not a tightening; a gated pod's term may only grow: keep \"{old_term}\" as its first requirements and append new ones"),
            format!("{rewritten}; while gated a term may only gain requirements"),
        )
    }
}

/// What to append to a term, old requirements `old`, to select what `new` selects: the new
/// requirements, a `NotIn` that widens an old one on the same key cut to the values it adds,
/// and a field requirement's values one per requirement (the apiserver takes exactly one value
/// for `In` and `NotIn` on `matchFields`).
fn appended(old: &[Requirement], new: &[Requirement]) -> Vec<Requirement> {
    let mut out = Vec::new();
    for r in new.iter().filter(|r| !old.contains(r)) {
        let mut r = r.clone();
        if r.op == Operator::NotIn {
            r.values.retain(|v| {
                !old.iter().any(|o| {
                    o.op == Operator::NotIn
                        && o.source == r.source
                        && o.key == r.key
                        && o.values.contains(v)
                })
            });
        }
        if r.source == Source::Field && r.op == Operator::NotIn && r.values.len() > 1 {
            out.extend(r.values.iter().map(|v| Requirement {
                values: vec![v.clone()],
                ..r.clone()
            }));
        } else if !r.values.is_empty() || !matches!(r.op, Operator::In | Operator::NotIn) {
            out.push(r);
        }
    }
    out
}

/// The residual comparison of `ValidatePodUpdate` after munging node affinity: pod (anti-)affinity
/// stay immutable, and so does the presence of `affinity` itself (the new affinity with the old
/// node affinity put back must equal the old affinity).
fn check_rest_of_affinity(old: &PodSpec, new: &PodSpec, spec: &FieldPath) -> Vec<Problem> {
    if rest_of_affinity_kept(old, new) {
        Vec::new()
    } else {
        rest_of_affinity_problems(old, new, spec)
    }
}

/// [`check_rest_of_affinity`]'s verdict without building the munged affinity: every gated update
/// asks it, and copies of affinities cost more than the comparisons.
fn rest_of_affinity_kept(old: &PodSpec, new: &PodSpec) -> bool {
    if node_affinity(old).sem_eq(&node_affinity(new)) {
        return old.affinity.sem_eq(&new.affinity);
    }
    // The node affinity changed, so at least one side has an affinity.
    match (&old.affinity, &new.affinity) {
        // Munged: the old node affinity alone.
        (Some(o), None) => o.pod_affinity.is_none() && o.pod_anti_affinity.is_none(),
        // Munged: none at all, when nothing but node affinity was set.
        (None, Some(n)) => n.pod_affinity.is_none() && n.pod_anti_affinity.is_none(),
        (Some(o), Some(n)) => {
            o.pod_affinity.sem_eq(&n.pod_affinity)
                && o.pod_anti_affinity.sem_eq(&n.pod_anti_affinity)
        }
        (None, None) => true,
    }
}

/// The problems of an affinity [`rest_of_affinity_kept`] refused, as the apiserver munges it.
#[cold]
#[inline(never)]
fn rest_of_affinity_problems(old: &PodSpec, new: &PodSpec, spec: &FieldPath) -> Vec<Problem> {
    let old_na = node_affinity(old).cloned();
    let new_na = node_affinity(new).cloned();
    let mut munged: Option<Affinity> = new.affinity.clone();
    if !old_na.sem_eq(&new_na) {
        match &mut munged {
            None if old_na.is_none() => {}
            None => {
                munged = Some(Affinity {
                    node_affinity: old_na.clone(),
                    ..Default::default()
                })
            }
            Some(m)
                if old.affinity.is_none()
                    && m.pod_affinity.is_none()
                    && m.pod_anti_affinity.is_none() =>
            {
                munged = None;
            }
            Some(m) => m.node_affinity = old_na.clone(),
        }
    }
    if munged.sem_eq(&old.affinity) {
        return Vec::new();
    }
    let immutable = "may not be changed, even while the pod has scheduling gates (only nodeSelector and node affinity are mutable)";
    let mut out = Vec::new();
    let part = |a: &Option<Affinity>| a.clone().unwrap_or_default();
    let (m, o) = (part(&munged), part(&old.affinity));
    if !m.pod_affinity.sem_eq(&o.pod_affinity) {
        out.push(Problem {
            error: FieldError::forbidden(spec.children(&["affinity", "podAffinity"]), immutable),
            hint: Some(
                "pod affinity is fixed at creation; recreate the pod to change it".to_string(),
            ),
            explain: vec![
                "spec.affinity.podAffinity changed; pod affinity cannot change, even while gated"
                    .to_string(),
            ],
        });
    }
    if !m.pod_anti_affinity.sem_eq(&o.pod_anti_affinity) {
        out.push(Problem {
            error: FieldError::forbidden(
                spec.children(&["affinity", "podAntiAffinity"]),
                immutable,
            ),
            hint: Some(
                "pod anti-affinity is fixed at creation; recreate the pod to change it".to_string(),
            ),
            explain: vec![
                "spec.affinity.podAntiAffinity changed; it cannot change, even while gated"
                    .to_string(),
            ],
        });
    }
    if out.is_empty() {
        let what = if old.affinity.is_none() {
            "added"
        } else {
            "removed"
        };
        out.push(Problem {
            error: FieldError::forbidden(
                spec.child("affinity"),
                format!("may not be {what} without node affinity; only spec.affinity.nodeAffinity may change while gated"),
            ),
            hint: Some(format!(
                "an empty affinity object was {what}; set spec.affinity.nodeAffinity instead, or leave spec.affinity as it was"
            )),
            explain: vec![format!(
                "spec.affinity {what} on its own; only spec.affinity.nodeAffinity may change while gated"
            )],
        });
    }
    out
}

fn check_ungated(old: &PodSpec, new: &PodSpec, spec: &FieldPath) -> Vec<Problem> {
    let detail = "pod updates may not change nodeSelector or affinity unless the pod has scheduling gates (the old pod has none)";
    let hint = "scheduling directives can only be changed while the pod is gated; create the pod with a scheduling gate, or recreate it";
    let mut out = Vec::new();
    if !map_eq(&old.node_selector, &new.node_selector) {
        out.push(Problem {
            error: FieldError::forbidden(spec.child("nodeSelector"), detail),
            hint: Some(hint.to_string()),
            explain: vec![
                "spec.nodeSelector changed on a pod without scheduling gates; it is fixed once ungated"
                    .to_string(),
            ],
        });
    }
    if !old.affinity.sem_eq(&new.affinity) {
        let (o, n) = (old.affinity.clone(), new.affinity.clone());
        let path = match (&o, &n) {
            (Some(o), Some(n)) => {
                let mut parts = Vec::new();
                if !o.node_affinity.sem_eq(&n.node_affinity) {
                    parts.push("nodeAffinity");
                }
                if !o.pod_affinity.sem_eq(&n.pod_affinity) {
                    parts.push("podAffinity");
                }
                if !o.pod_anti_affinity.sem_eq(&n.pod_anti_affinity) {
                    parts.push("podAntiAffinity");
                }
                match parts.as_slice() {
                    [one] => spec.child("affinity").child(one),
                    _ => spec.child("affinity"),
                }
            }
            _ => spec.child("affinity"),
        };
        out.push(Problem {
            explain: vec![format!(
                "{path} changed on a pod without scheduling gates; it is fixed once ungated"
            )],
            error: FieldError::forbidden(path, detail),
            hint: Some(hint.to_string()),
        });
    }
    out
}

#[cfg(test)]
mod tests;
