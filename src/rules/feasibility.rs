//! `feasibility`: say at once when an admitted object leaves a pod no node to run on, judged
//! against the live cluster's cached nodes (and pods, on ungating) with the scheduler's own
//! filters. Only `serve --cluster-aware` gives it a cluster; elsewhere it does nothing.
//!
//! - A gated pod's UPDATE that tightens its nodeSelector or required node affinity, or adds
//!   tolerations (KEP-3838): the node-side filters; `action` decides warn or deny.
//! - A pod UPDATE that removes the last scheduling gate: every filter, against the cached pods;
//!   a warning that the pod will stay Pending.
//! - Pod CREATE, and workload CREATE/UPDATE: the node-side filters on the pod (template); a
//!   warning. Taints are left out while the pod is held ([`PodTemplate::held`]: gated, a
//!   suspended Job, in a Kueue queue), since what releases it may add tolerations. A gated
//!   pod's tightening counts them: that update is the releaser's own (Kueue sets its flavour's
//!   selectors and tolerations in one patch).
//!
//! Warn is the default: a cluster autoscaler adds nodes that match pending pods, so a pod no
//! node fits today may well run in a few minutes.

use serde::{Deserialize, Serialize};

use super::{
    Action, ClusterState, Finding, Input, ObjectKind, Operation, Phase, Request, Rule, RuleId,
    RuleMeta, Verdict,
};
use crate::core::cluster::Cluster;
use crate::core::filter::{self, NodeResult, NodeSide, TAINT_TOLERATION};
use crate::k8s::fieldpath::{ErrorType, FieldError, FieldPath};
use crate::k8s::model::MIRROR_ANNOTATION;
use crate::k8s::semantic::{map_eq, SemEq};
use crate::k8s::workload::{Held, Kind, PodTemplate};

pub const ID: RuleId = RuleId::new("feasibility");

/// The rule file's `feasibility` section.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Feasibility {
    pub enabled: bool,
    /// For a gated pod's tightening update; the other cases only ever warn.
    pub action: Action,
}

impl Default for Feasibility {
    fn default() -> Self {
        Feasibility {
            enabled: true,
            action: Action::Warn,
        }
    }
}

pub struct FeasibilityRule;

impl Rule for FeasibilityRule {
    type Settings = Feasibility;
    const META: &'static [RuleMeta] = &[RuleMeta {
        id: ID,
        summary: "Some node of the live cluster can still run the pod after this change (serve --cluster-aware, audit)",
        help: "check the selection against the nodes' labels (`kubectl get nodes -L KEY`), the taints the pod must tolerate, and `placement-guard explain` for the reasons per node",
        default_action: "warn",
    }];

    fn applies(s: &Feasibility, r: Request) -> bool {
        s.enabled
            && r.cluster_aware
            && r.phase == Phase::Validate
            && r.operation.writes()
            && matches!(r.kind, ObjectKind::Template(k) if k != Kind::PodTemplate)
    }

    /// NodeResourcesFit and NodePorts read the containers.
    fn reads_resources(_: &Feasibility, _: Request) -> bool {
        true
    }

    /// TaintToleration reads them.
    fn reads_tolerations(_: &Feasibility, _: Request) -> bool {
        true
    }

    fn evaluate(s: &Feasibility, input: &Input, verdict: &mut Verdict) {
        let Some((new, old)) = input.templates() else {
            return;
        };
        let case = match (new.kind, input.operation, old) {
            (Kind::Pod, Operation::Update, Some(old)) if old.spec.is_gated() => {
                match (new.spec.is_gated(), tightened(old, new)) {
                    (false, tightened) => Case::Ungated(tightened),
                    (true, Some(path)) => Case::Tightened(path),
                    (true, None) => return,
                }
            }
            (Kind::Pod, Operation::Update, _) => return,
            // The kubelet runs a static pod already and only reports it: its mirror pod has no
            // placement to judge (the kubelet does not even check taints for it).
            (Kind::Pod, _, _) if new.meta.annotation(MIRROR_ANNOTATION).is_some() => return,
            (_, Operation::Create | Operation::Update, _) => Case::Admitted,
            _ => return,
        };
        let cluster = match input.context.cluster {
            ClusterState::Ready(c) => c,
            ClusterState::Unavailable(why) => {
                verdict.unchecked.push((ID, why));
                return;
            }
            ClusterState::Absent => return,
        };
        // A workload's pods get what their RuntimeClass adds at admission (a Pod reaching a
        // webhook has it already); without the class, the check would judge other pods than
        // the scheduler will see, in either direction: skipped, and counted.
        // So do the default requests of their namespace's LimitRanges.
        let admitted;
        let new = if new.kind == Kind::Pod {
            new
        } else {
            match cluster.admitted(new, input.namespace) {
                Ok(t) => {
                    admitted = t;
                    admitted.as_ref()
                }
                Err(_) => {
                    verdict.unchecked.push((ID, "runtime_class_unknown"));
                    return;
                }
            }
        };
        verdict.rules_run.push(ID);
        let finding = match case {
            // Kueue ungates a pod and sets its nodeSelector in one patch: the tightening is
            // judged first, with the rule's action, and the pods only when some node is left.
            Case::Ungated(tightened) => tightened
                .and_then(|changed| tightening(s, cluster, old, new, changed))
                .or_else(|| ungated(cluster, new, input.namespace)),
            Case::Tightened(changed) => tightening(s, cluster, old, new, changed),
            // A held pod (template) is judged as its holder may still complete it: the
            // selection it gets then only narrows (Kueue adds its flavour's nodeLabels), but
            // the tolerations it gets then widen, so taints are left to the release.
            Case::Admitted => {
                let held = new.held();
                node_side(cluster, new, held.is_some()).map(|(summary, _)| {
                    let what = if new.kind == Kind::Pod {
                        "no node can run this pod now"
                    } else {
                        "no node can run a pod of this template now"
                    };
                    let when = held.map_or("", Held::clause);
                    (
                        warning(new.spec_path(), format!("{what}{when}: {summary}")),
                        Action::Warn,
                    )
                })
            }
        };
        if let Some((error, action)) = finding {
            verdict.findings.push(Finding {
                rule: ID,
                action,
                error,
                hint: None,
            });
        }
    }
}

/// A gated pod's update that leaves it no node: Forbidden at what would let it run again. That
/// is the tolerations when some node passes every filter but a taint; else the selection (what
/// the update changed of it, or where it stands when only tolerations changed). The rule's
/// action only when this update's selection took the last node away (the hint then names the
/// nodes it took and what they lack): added tolerations only widen, and a pod that had no node
/// before is not this update's doing (denied, its ungating would never let an autoscaler see
/// it); those are warned.
fn tightening(
    s: &Feasibility,
    cluster: &Cluster,
    old: Option<&PodTemplate>,
    new: &PodTemplate,
    changed: Changed,
) -> Option<(FieldError, Action)> {
    let (mut summary, taints) = node_side(cluster, new, false)?;
    let path = if taints {
        new.spec_path().child("tolerations")
    } else if changed.selection {
        changed.path
    } else {
        selection_path(cluster, new).unwrap_or(changed.path)
    };
    let lost: Vec<usize> = match old {
        Some(o) if changed.selection => fitting(cluster, o),
        _ => Vec::new(),
    };
    if !lost.is_empty() {
        summary.push_str(&lost_nodes(cluster, new, &lost));
    }
    Some((
        FieldError::forbidden(
            path,
            format!("after this update no node can run the pod: {summary}"),
        ),
        if lost.is_empty() {
            Action::Warn
        } else {
            s.action
        },
    ))
}

/// Where a pod's selection stands: its required node affinity, unless it has none or no node
/// meets its nodeSelector either (a nodeSelector some node meets is not what keeps the pod off
/// every node); else its nodeSelector.
fn selection_path(cluster: &Cluster, pod: &PodTemplate) -> Option<FieldPath> {
    let spec = pod.spec_path();
    let selector = pod
        .spec
        .node_selector
        .as_ref()
        .is_some_and(|m| !m.is_empty());
    let affinity = pod.spec.required_node_selector_terms().is_some();
    if affinity && (!selector || NodeSide::new(&pod.spec).node_selector_met(cluster)) {
        Some(required_affinity(&spec))
    } else if selector {
        Some(spec.child("nodeSelector"))
    } else {
        None
    }
}

/// Where a pod spec at `spec` keeps its required node affinity.
fn required_affinity(spec: &FieldPath) -> FieldPath {
    spec.children(&[
        "affinity",
        "nodeAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
    ])
}

/// The nodes whose node-side filters `pod` passes.
fn fitting(cluster: &Cluster, pod: &PodTemplate) -> Vec<usize> {
    let tolerations = pod.scheduled_tolerations();
    let side = NodeSide::with_tolerations(&pod.spec, &tolerations);
    side.evaluate(cluster)
        .iter()
        .enumerate()
        .filter(|(_, r)| r.feasible)
        .map(|(i, _)| i)
        .collect()
}

/// The nodes the pod could run on before the update, and the requirement of its new selection
/// most of them lack: what took the last node away.
fn lost_nodes(cluster: &Cluster, new: &PodTemplate, lost: &[usize]) -> String {
    const SHOWN: usize = 3;
    let mut names: Vec<&str> = lost
        .iter()
        .take(SHOWN)
        .map(|&i| cluster.nodes[i].name.as_str())
        .collect();
    let more = lost.len().saturating_sub(SHOWN);
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    names.sort_unstable();
    let mut text = format!(
        " This update took away the last node(s) that could run it: {}{more}",
        names.join(", ")
    );
    let side = NodeSide::new(&new.spec);
    match side.most_missed_among(cluster, lost) {
        Some((req, 1)) if lost.len() == 1 => text.push_str(&format!(", which lacks {req}.")),
        Some((req, n)) if n == lost.len() => text.push_str(&format!(", which lack {req}.")),
        Some((req, n)) => text.push_str(&format!("; {n} of them lack {req}.")),
        None => text.push('.'),
    }
    text
}

/// What a gated pod's update changed of its node-side directives.
struct Changed {
    /// The path a finding points at.
    path: FieldPath,
    /// The selection (nodeSelector, required node affinity), not only the tolerations.
    selection: bool,
}

enum Case {
    /// The last gate goes: the pod meets the scheduler now; and what the same update changed
    /// of its directives, if anything.
    Ungated(Option<Changed>),
    /// A gated pod's selection or tolerations changed.
    Tightened(Changed),
    /// A new pod, or a workload's template.
    Admitted,
}

/// What changed of a gated pod's node-side directives.
fn tightened(old: &PodTemplate, new: &PodTemplate) -> Option<Changed> {
    let (o, n) = (&old.spec, &new.spec);
    let spec = new.spec_path();
    let selection = |path| {
        Some(Changed {
            path,
            selection: true,
        })
    };
    if !map_eq(&o.node_selector, &n.node_selector) {
        selection(spec.child("nodeSelector"))
    } else if !o
        .required_node_selector_terms()
        .sem_eq(&n.required_node_selector_terms())
    {
        selection(required_affinity(&spec))
    } else if !o.tolerations().sem_eq(n.tolerations()) {
        Some(Changed {
            path: spec.child("tolerations"),
            selection: false,
        })
    } else {
        None
    }
}

/// Advice in the apiserver's warning form (`path: message`): the finding is about what the
/// cluster offers now, not about a value of the object.
fn warning(path: FieldPath, detail: String) -> FieldError {
    FieldError {
        kind: ErrorType::Advice,
        path,
        value: None,
        detail,
    }
}

/// The node-side filters: `None` when some node passes, else the scheduler's summary with the
/// selection's most-missed requirement and the untolerated taints, and whether taints rejected
/// more nodes than the selection did. `without_taints` leaves the taints out.
fn node_side(cluster: &Cluster, pod: &PodTemplate, without_taints: bool) -> Option<(String, bool)> {
    // Only the tolerations change on the way to the scheduler: no copy of the template.
    let tolerations = pod.scheduled_tolerations();
    let mut side = NodeSide::with_tolerations(&pod.spec, &tolerations);
    if without_taints {
        side = side.ignoring_taints();
    }
    if side.first_fit(cluster).is_some() {
        return None;
    }
    let results = side.evaluate(cluster);
    // Tolerating a taint is the way out only where the taint is all that refuses a node.
    let taints_only = results
        .iter()
        .any(|r| !r.reasons.is_empty() && r.reasons.iter().all(|x| x.plugin == TAINT_TOLERATION));
    Some((explained(cluster, &side, &results), taints_only))
}

/// How many nodes `plugin` rejected first.
fn first_rejected_by(results: &[NodeResult], plugin: &str) -> usize {
    results
        .iter()
        .filter(|r| r.reasons.first().is_some_and(|x| x.plugin == plugin))
        .count()
}

/// The scheduler's summary of `results`, with the selection's most-missed requirement (when
/// the selection rejected nodes) and the untolerated taints.
fn explained(cluster: &Cluster, side: &NodeSide, results: &[NodeResult]) -> String {
    let mut text = filter::summary(results);
    if first_rejected_by(results, filter::NODE_AFFINITY) > 0 {
        if let Some((req, n)) = side.most_missed(cluster) {
            let all = cluster.nodes.len();
            // "Most" only when it is most; else the count, so a user looks further.
            text.push_str(&if 2 * n > all {
                format!(" Most nodes lack {req} ({n}/{all} nodes).")
            } else {
                format!(" {n}/{all} node(s) lack {req}, the requirement most missed.")
            });
        }
    }
    if let Some(t) = taints(results) {
        text.push_str(&format!(" Untolerated: {t}."));
    }
    text
}

/// The untolerated taints behind the rejections of nodes the pod could otherwise reach, most
/// frequent first (the scheduler only logs them; a user needs them to write the toleration).
fn taints(results: &[NodeResult]) -> Option<String> {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    // Taints of nodes the selection refuses, or that are cordoned, are no way out.
    let reachable = |r: &&NodeResult| {
        !r.reasons
            .iter()
            .any(|x| x.plugin == filter::NODE_AFFINITY || x.plugin == filter::NODE_UNSCHEDULABLE)
    };
    for d in results
        .iter()
        .filter(reachable)
        .flat_map(|r| &r.reasons)
        .filter(|r| r.plugin == TAINT_TOLERATION)
        .filter_map(|r| r.detail.as_deref())
    {
        match counts.iter_mut().find(|(t, _)| *t == d) {
            Some((_, n)) => *n += 1,
            None => counts.push((d, 1)),
        }
    }
    if counts.is_empty() {
        return None;
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let shown: Vec<String> = counts
        .iter()
        .take(3)
        .map(|(t, n)| format!("{t} on {n} node(s)"))
        .collect();
    Some(shown.join(", "))
}

/// The last gate removed: every filter, against the cached pods too.
fn ungated(cluster: &Cluster, pod: &PodTemplate, ns: &str) -> Option<(FieldError, Action)> {
    let results = filter::evaluate(cluster, pod, ns);
    if results.iter().any(|r| r.feasible) {
        return None;
    }
    let tolerations = pod.scheduled_tolerations();
    let text = explained(
        cluster,
        &NodeSide::with_tolerations(&pod.spec, &tolerations),
        &results,
    );
    Some((
        warning(
            pod.spec_path().child("schedulingGates"),
            format!(
                "the pod is ungated but no node can run it now, so it will stay Pending: {text}"
            ),
        ),
        Action::Warn,
    ))
}

#[cfg(test)]
mod tests;
