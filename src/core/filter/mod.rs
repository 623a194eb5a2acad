//! kube-scheduler's Filter plugins for one incoming pod, one module each. [`PodState::new`] does
//! every plugin's PreFilter work once (compiled selectors, counts per topology domain, matching
//! pods per term); then [`PodState::filter`] checks a node cheaply. Reason strings are the
//! scheduler's own.

mod inter_pod_affinity;
mod node_affinity;
mod node_name;
mod node_ports;
mod node_resources_fit;
mod node_unschedulable;
mod taint_toleration;
mod topology_spread;

pub use node_resources_fit::room;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

use super::cluster::{Cluster, LabelSet, Node};
use crate::k8s::workload::PodTemplate;
use inter_pod_affinity::InterPodAffinity;
use node_affinity::NodeAffinity;
use node_name::NodeName;
use node_ports::NodePorts;
use node_resources_fit::NodeResourcesFit;
use node_unschedulable::NodeUnschedulable;
use taint_toleration::TaintToleration;
use topology_spread::PodTopologySpread;

pub const NODE_NAME: &str = "NodeName";
pub const NODE_UNSCHEDULABLE: &str = "NodeUnschedulable";
pub const NODE_AFFINITY: &str = "NodeAffinity";
pub const TAINT_TOLERATION: &str = "TaintToleration";
pub const NODE_PORTS: &str = "NodePorts";
pub const NODE_RESOURCES_FIT: &str = "NodeResourcesFit";
pub const INTER_POD_AFFINITY: &str = "InterPodAffinity";
pub const POD_TOPOLOGY_SPREAD: &str = "PodTopologySpread";

pub const REASON_NODE_NAME: &str = "node(s) didn't match the requested node name";
pub const REASON_UNSCHEDULABLE: &str = "node(s) were unschedulable";
pub const REASON_NODE_AFFINITY: &str = "node(s) didn't match Pod's node affinity/selector";
pub const REASON_NODE_PORTS: &str = "node(s) didn't have free ports for the requested pod ports";
pub const REASON_SPREAD: &str = "node(s) didn't match pod topology spread constraints";
pub const REASON_SPREAD_MISSING_LABEL: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";
pub const REASON_AFFINITY: &str = "node(s) didn't match pod affinity rules";
pub const REASON_ANTI_AFFINITY: &str = "node(s) didn't match pod anti-affinity rules";
pub const REASON_EXISTING_ANTI_AFFINITY: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";
/// Since v1.35 the taint's key and value are only logged, not reported.
pub const REASON_TAINT: &str = "node(s) had untolerated taint(s)";
/// NodeAffinity's PreFilter: the nodes its `metadata.name` terms name are the only candidates.
pub const REASON_NOT_NAMED: &str = "node(s) didn't satisfy plugin(s) [NodeAffinity]";
/// NodeAffinity's PreFilter: the terms name no node in common.
pub const REASON_NAMES_CONFLICT: &str = "pod affinity terms conflict";
/// The scheduler's message when the snapshot has no node at all.
pub const NO_NODES: &str = "no nodes available to schedule pods";
/// The Kubernetes version whose kube-scheduler wording the reasons and the summary follow.
pub const SCHEDULER_VERSION: &str = "v1.36";

/// One reason a node does not fit, with the plugin that said so.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Reason {
    pub plugin: &'static str,
    /// The scheduler's own reason string, as counted in its summary.
    pub message: String,
    /// What the scheduler only logs (the untolerated taint), for the per-node table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The pod was refused in PreFilter, before any node was looked at.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub prefilter: bool,
}

impl Reason {
    fn new(plugin: &'static str, message: &str) -> Reason {
        Reason {
            plugin,
            message: message.to_string(),
            detail: None,
            prefilter: false,
        }
    }
}

/// A label selector with matchLabelKeys/mismatchLabelKeys merged in from the owner's labels.
fn merged_selector(
    sel: Option<&LabelSelector>,
    match_keys: Option<&[String]>,
    mismatch_keys: Option<&[String]>,
    owner_labels: &BTreeMap<String, String>,
) -> Option<LabelSelector> {
    let mut sel = sel?.clone();
    let mut add = |keys: Option<&[String]>, op: &str| {
        for k in keys.unwrap_or(&[]) {
            if let Some(v) = owner_labels.get(k) {
                sel.match_expressions
                    .get_or_insert_with(Vec::new)
                    .push(LabelSelectorRequirement {
                        key: k.clone(),
                        operator: op.to_string(),
                        values: Some(vec![v.clone()]),
                    });
            }
        }
    };
    add(match_keys, "In");
    add(mismatch_keys, "NotIn");
    Some(sel)
}

/// Whether each label set of the snapshot satisfies a predicate, computed once.
struct SetMatches(Vec<bool>);

impl SetMatches {
    fn new(cluster: &Cluster, f: impl Fn(&LabelSet) -> bool) -> SetMatches {
        SetMatches(cluster.label_sets.iter().map(f).collect())
    }

    fn get(&self, set: usize) -> bool {
        self.0.get(set).copied().unwrap_or(false)
    }
}

/// The filters that read only the pod's own directives and the node (NodeUnschedulable,
/// NodeName, TaintToleration, NodeAffinity): cheap to set up, and enough to say whether a
/// tightened selection still leaves the pod some node.
pub struct NodeSide<'a> {
    unschedulable: NodeUnschedulable,
    node_name: NodeName<'a>,
    taints: TaintToleration<'a>,
    /// [`NodeSide::ignoring_taints`].
    without_taints: bool,
    affinity: NodeAffinity,
    /// The pod names its node (`spec.nodeName`): kube-scheduler never sees it, and the kubelet
    /// admits it by its own checks ([`NodeSide::with_tolerations`]).
    bound: bool,
}

impl<'a> NodeSide<'a> {
    pub fn new(spec: &'a crate::k8s::model::PodSpec) -> NodeSide<'a> {
        Self::with_tolerations(spec, spec.tolerations())
    }

    /// [`NodeSide::new`] with `tolerations` in place of the spec's (the spec's and those the
    /// pod will be given: [`crate::k8s::workload::PodTemplate::added_tolerations`]).
    pub fn with_tolerations(
        spec: &'a crate::k8s::model::PodSpec,
        tolerations: &'a [Toleration],
    ) -> NodeSide<'a> {
        // A pod that names its node goes straight to that node's kubelet, whose admission
        // (`lifecycle.generalFilter`) checks node affinity, ports and resources, and of the
        // taints only NoExecute ones; a cordon does not stop it.
        let bound = spec.node_name.as_deref().is_some_and(|n| !n.is_empty());
        NodeSide {
            unschedulable: NodeUnschedulable::new(tolerations, bound),
            node_name: NodeName::new(spec.node_name.as_deref()),
            taints: TaintToleration::new(tolerations, bound),
            without_taints: false,
            affinity: NodeAffinity::new(spec),
            bound,
        }
    }

    /// Leaves the taints out, for a pod whose controller may still add tolerations before it
    /// meets the scheduler ([`crate::k8s::workload::PodTemplate::held`]). A cordon still counts.
    pub fn ignoring_taints(mut self) -> NodeSide<'a> {
        self.without_taints = true;
        self
    }

    /// Adds the node-side reasons for `node`, in the scheduler's plugin order; `false` when
    /// NodeAffinity's PreFilter already rules it out (no other plugin sees such a node).
    fn filter(&self, node: &Node, out: &mut Vec<Reason>) -> bool {
        match self.affinity.candidates() {
            Some(names) if names.is_empty() => {
                out.push(Reason {
                    prefilter: true,
                    ..Reason::new(NODE_AFFINITY, REASON_NAMES_CONFLICT)
                });
                return false;
            }
            Some(names) if !names.contains(&node.name) => {
                out.push(Reason::new(NODE_AFFINITY, REASON_NOT_NAMED));
                return false;
            }
            _ => {}
        }
        if let Some(r) = self.unschedulable.filter(node) {
            out.push(Reason::new(NODE_UNSCHEDULABLE, r));
        }
        if let Some(r) = self.node_name.filter(node) {
            out.push(Reason::new(NODE_NAME, r));
        }
        if let Some(t) = self.untolerated(node) {
            // As kubectl writes a taint: `key=value:Effect`, or `key:Effect` without a value.
            let detail = match t.value.as_deref().filter(|v| !v.is_empty()) {
                Some(value) => format!("{}={value}:{}", t.key, t.effect),
                None => format!("{}:{}", t.key, t.effect),
            };
            out.push(Reason {
                detail: Some(detail),
                ..Reason::new(TAINT_TOLERATION, REASON_TAINT)
            });
        }
        if let Some(r) = self.affinity.filter(node) {
            out.push(Reason::new(NODE_AFFINITY, r));
        }
        true
    }

    fn untolerated<'n>(&self, node: &'n Node) -> Option<&'n Taint> {
        if self.without_taints {
            return None;
        }
        self.taints.filter(node)
    }

    fn fits(&self, node: &Node) -> bool {
        if let Some(names) = self.affinity.candidates() {
            if !names.contains(&node.name) {
                return false;
            }
        }
        self.unschedulable.filter(node).is_none()
            && self.node_name.filter(node).is_none()
            && self.untolerated(node).is_none()
            && self.affinity.matches(node)
    }

    /// The first node that passes, visiting only the nodes the label index says the
    /// selection can match.
    pub fn first_fit(&self, cluster: &Cluster) -> Option<usize> {
        let fits = |i: usize| self.fits(&cluster.nodes[i]);
        if let Some(names) = self.affinity.candidates() {
            return names
                .iter()
                .filter_map(|n| cluster.node_index(n))
                .find(|&i| fits(i));
        }
        if let Some(name) = self.node_name.name() {
            return cluster.node_index(name).filter(|&i| fits(i));
        }
        match self.affinity.indexed_candidates(cluster) {
            Some(c) => c.into_iter().map(|i| i as usize).find(|&i| fits(i)),
            None => (0..cluster.nodes.len()).find(|&i| fits(i)),
        }
    }

    /// Every node's node-side outcome.
    pub fn evaluate(&self, cluster: &Cluster) -> Vec<NodeResult> {
        cluster
            .nodes
            .iter()
            .map(|node| {
                let mut reasons = Vec::new();
                self.filter(node, &mut reasons);
                NodeResult {
                    name: node.name.clone(),
                    feasible: reasons.is_empty(),
                    reasons,
                }
            })
            .collect()
    }

    /// Whether some node meets the pod's nodeSelector alone, its required node affinity aside:
    /// when one does, what no node meets is the affinity (or both together).
    pub fn node_selector_met(&self, cluster: &Cluster) -> bool {
        self.affinity.selector_met(cluster)
    }

    /// The selection's requirement that excludes the most nodes, with how many it excludes:
    /// usually a misspelt or unserved label value.
    pub fn most_missed(&self, cluster: &Cluster) -> Option<(String, usize)> {
        self.affinity.most_missed(cluster)
    }

    /// The requirement most of the nodes `among` (indexes into `cluster.nodes`) miss.
    pub fn most_missed_among(&self, cluster: &Cluster, among: &[usize]) -> Option<(String, usize)> {
        self.affinity.most_missed_among(cluster, among)
    }
}

/// Every plugin's state for the incoming pod.
pub struct PodState<'a> {
    cluster: &'a Cluster,
    node_side: NodeSide<'a>,
    ports: NodePorts,
    fit: NodeResourcesFit,
    spread: PodTopologySpread<'a>,
    inter_pod: InterPodAffinity<'a>,
}

impl<'a> PodState<'a> {
    /// PreFilter: `namespace` is the incoming pod's namespace.
    /// `without_taints`: taints left out ([`NodeSide::ignoring_taints`]), by every plugin.
    pub fn new(
        cluster: &'a Cluster,
        pod: &'a PodTemplate,
        namespace: &str,
        without_taints: bool,
    ) -> PodState<'a> {
        // The labels its pods will carry: a Job's include those the apiserver adds, and a
        // workload's those its controller adds (a Deployment's pod-template-hash), so that
        // `matchLabelKeys: [pod-template-hash]` counts only the new pod's ReplicaSet, as
        // kube-scheduler does, and not the pods of the ReplicaSets before it.
        let labels = pod.carried_labels();
        let labels = &labels;
        let spec = &pod.spec;
        let mut node_side = NodeSide::new(spec);
        node_side.without_taints = without_taints;
        let bound = node_side.bound;
        let spread = PodTopologySpread::new(
            cluster,
            spec.spread_constraints(),
            labels,
            namespace,
            &node_side.affinity,
            (!without_taints).then_some(&node_side.taints),
        );
        PodState {
            cluster,
            node_side,
            ports: NodePorts::new(spec),
            fit: NodeResourcesFit::new(spec, bound),
            spread,
            inter_pod: InterPodAffinity::new(cluster, spec, labels, namespace),
        }
    }

    /// Filter: every plugin's reasons for node `i`, in the scheduler's plugin order. Empty means
    /// the pod fits. (The scheduler itself stops at the first failing plugin; the summary does too.)
    pub fn filter(&self, i: usize) -> Vec<Reason> {
        let node = &self.cluster.nodes[i];
        let mut out = Vec::new();
        if !self.node_side.filter(node, &mut out) {
            return out;
        }
        let usage = &self.cluster.usage[i];
        if let Some(r) = self.ports.filter(usage) {
            out.push(Reason::new(NODE_PORTS, r));
        }
        for r in self.fit.filter(node, usage) {
            out.push(Reason::new(NODE_RESOURCES_FIT, &r));
        }
        // The kubelet does not weigh the pods of other nodes.
        if self.node_side.bound {
            return out;
        }
        if let Some((r, detail)) = self.spread.filter(node) {
            out.push(Reason {
                detail,
                ..Reason::new(POD_TOPOLOGY_SPREAD, r)
            });
        }
        if let Some(r) = self.inter_pod.filter(node) {
            out.push(Reason::new(INTER_POD_AFFINITY, r));
        }
        out
    }
}

/// The outcome for every node.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct NodeResult {
    pub name: String,
    pub feasible: bool,
    pub reasons: Vec<Reason>,
}

/// Every node's outcome for a pod of `pod`'s object, as the scheduler will receive it
/// ([`PodTemplate::as_scheduled`]: with the tolerations a DaemonSet's controller and admission
/// add).
pub fn evaluate(cluster: &Cluster, pod: &PodTemplate, namespace: &str) -> Vec<NodeResult> {
    evaluate_with(cluster, pod, namespace, false)
}

/// [`evaluate`], with the taints left out when `without_taints` ([`NodeSide::ignoring_taints`]).
pub fn evaluate_with(
    cluster: &Cluster,
    pod: &PodTemplate,
    namespace: &str,
    without_taints: bool,
) -> Vec<NodeResult> {
    let pod = pod.as_scheduled();
    let state = PodState::new(cluster, &pod, namespace, without_taints);
    (0..cluster.nodes.len())
        .map(|i| {
            let reasons = state.filter(i);
            NodeResult {
                name: cluster.nodes[i].name.clone(),
                feasible: reasons.is_empty(),
                reasons,
            }
        })
        .collect()
}

/// The scheduler's FitError text when no node fits: `0/5 nodes are available: 2 node(s) had
/// ..., 3 node(s) ....` Each node counts every reason of the first plugin that rejected it, and
/// the entries are sorted as whole strings, as kube-scheduler does; its preemption suffix is left
/// out. kube-scheduler writes nothing when a node fits; then the first number says how many do.
pub fn summary(results: &[NodeResult]) -> String {
    if results.is_empty() {
        return NO_NODES.to_string();
    }
    let feasible = results.iter().filter(|r| r.feasible).count();
    let total = results.len();
    let rejected = || results.iter().filter(|r| !r.feasible);
    if let Some(r) = rejected().flat_map(|r| &r.reasons).find(|r| r.prefilter) {
        return format!("{feasible}/{total} nodes are available: {}.", r.message);
    }
    let mut hist: BTreeMap<&str, usize> = BTreeMap::new();
    for r in rejected() {
        let first = r.reasons.first().map(|x| x.plugin);
        for reason in r.reasons.iter().take_while(|x| Some(x.plugin) == first) {
            *hist.entry(reason.message.as_str()).or_insert(0) += 1;
        }
    }
    let mut parts: Vec<String> = hist.iter().map(|(m, n)| format!("{n} {m}")).collect();
    parts.sort();
    if parts.is_empty() {
        format!("{feasible}/{total} nodes are available.")
    } else {
        format!(
            "{feasible}/{total} nodes are available: {}.",
            parts.join(", ")
        )
    }
}

#[cfg(test)]
mod tests;
