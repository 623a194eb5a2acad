//! kube-scheduler's Filter plugins for one incoming pod. [`PodState::new`] does the PreFilter
//! work once (compiled selectors, counts per topology domain, matching pods per term); then
//! [`PodState::filter`] checks a node cheaply. Reason strings are the scheduler's own.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::{PodAffinityTerm, Taint, TopologySpreadConstraint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

use super::cluster::{tolerated, Cluster, LabelSet, Node};
use super::labels::selector_matches;
use super::nodeselector::Term;
use crate::k8s::workload::PodTemplate;

pub const NODE_NAME: &str = "NodeName";
pub const NODE_UNSCHEDULABLE: &str = "NodeUnschedulable";
pub const NODE_AFFINITY: &str = "NodeAffinity";
pub const TAINT_TOLERATION: &str = "TaintToleration";
pub const INTER_POD_AFFINITY: &str = "InterPodAffinity";
pub const POD_TOPOLOGY_SPREAD: &str = "PodTopologySpread";

pub const REASON_NODE_NAME: &str = "node(s) didn't match the requested node name";
pub const REASON_UNSCHEDULABLE: &str = "node(s) were unschedulable";
pub const REASON_NODE_AFFINITY: &str = "node(s) didn't match Pod's node affinity/selector";
pub const REASON_SPREAD: &str = "node(s) didn't match pod topology spread constraints";
pub const REASON_SPREAD_MISSING_LABEL: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";
pub const REASON_AFFINITY: &str = "node(s) didn't match pod affinity rules";
pub const REASON_ANTI_AFFINITY: &str = "node(s) didn't match pod anti-affinity rules";
pub const REASON_EXISTING_ANTI_AFFINITY: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";

const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// One reason a node does not fit, with the plugin that said so.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Reason {
    pub plugin: &'static str,
    pub message: String,
}

/// The pod's node affinity and nodeSelector, compiled: `None` terms means no required affinity.
struct NodeMatcher {
    selector: Term,
    required: Option<Vec<Option<Term>>>,
}

impl NodeMatcher {
    fn new(pod: &PodTemplate) -> NodeMatcher {
        let required = pod
            .spec
            .required_node_selector_terms()
            .map(|terms| terms.iter().map(Term::from_api).collect());
        NodeMatcher {
            selector: Term::from_node_selector(pod.spec.node_selector()),
            required,
        }
    }

    fn matches(&self, node: &Node) -> bool {
        if !self.selector.matches_node(&node.labels, &node.name) {
            return false;
        }
        match &self.required {
            None => true,
            // Terms are ORed; an empty or invalid term matches nothing.
            Some(terms) => terms
                .iter()
                .flatten()
                .any(|t| t.matches_node(&node.labels, &node.name)),
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

/// An inter-pod (anti-)affinity term resolved for its owner: selector merged, namespaces known.
struct AffinityTerm {
    key: String,
    selector: Option<LabelSelector>,
    namespaces: Vec<String>,
    namespace_selector: Option<LabelSelector>,
    owner_namespace: String,
}

impl AffinityTerm {
    fn new(
        t: &PodAffinityTerm,
        owner_ns: &str,
        owner_labels: &BTreeMap<String, String>,
    ) -> AffinityTerm {
        AffinityTerm {
            key: t.topology_key.clone(),
            selector: merged_selector(
                t.label_selector.as_ref(),
                t.match_label_keys.as_deref(),
                t.mismatch_label_keys.as_deref(),
                owner_labels,
            ),
            namespaces: t.namespaces.clone().unwrap_or_default(),
            namespace_selector: t.namespace_selector.clone(),
            owner_namespace: owner_ns.to_string(),
        }
    }

    fn namespace_matches(&self, ns: &str, cluster: &Cluster) -> bool {
        if self.namespaces.iter().any(|n| n == ns) {
            return true;
        }
        match &self.namespace_selector {
            None => self.namespaces.is_empty() && ns == self.owner_namespace,
            Some(sel) => {
                let mut labels = cluster.namespace_labels(ns).clone();
                labels
                    .entry(NAMESPACE_NAME_LABEL.to_string())
                    .or_insert_with(|| ns.to_string());
                selector_matches(sel, &labels)
            }
        }
    }

    /// `PodMatchesTermsNamespaceAndSelector`; a missing selector matches nothing.
    fn matches(&self, ns: &str, labels: &BTreeMap<String, String>, cluster: &Cluster) -> bool {
        self.selector
            .as_ref()
            .is_some_and(|s| selector_matches(s, labels))
            && self.namespace_matches(ns, cluster)
    }
}

/// A DoNotSchedule spread constraint with its counts per domain.
struct Spread<'a> {
    key: &'a str,
    /// Index of this constraint's selector in the per-label-set match caches.
    cache: Option<usize>,
    max_skew: i64,
    selector: Option<LabelSelector>,
    self_match: bool,
    counts: HashMap<&'a str, i64>,
    /// The global minimum, or `None` when no node is eligible.
    min: Option<i64>,
}

/// Everything computed once for the incoming pod.
pub struct PodState<'a> {
    cluster: &'a Cluster,
    pod: &'a PodTemplate,
    node_name: Option<&'a str>,
    node_matcher: NodeMatcher,
    spreads: Vec<Spread<'a>>,
    affinity: Vec<AffinityTerm>,
    affinity_counts: HashMap<(&'a str, &'a str), i64>,
    pod_matches_own_affinity: bool,
    anti_affinity: Vec<AffinityTerm>,
    anti_counts: HashMap<(&'a str, &'a str), i64>,
    existing_anti: HashMap<(&'a str, &'a str), i64>,
}

fn untolerated_taint<'n>(pod: &PodTemplate, node: &'n Node) -> Option<&'n Taint> {
    node.taints
        .iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .find(|t| !tolerated(pod.spec.tolerations(), t))
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

impl<'a> PodState<'a> {
    /// PreFilter: `namespace` is the incoming pod's namespace.
    pub fn new(cluster: &'a Cluster, pod: &'a PodTemplate, namespace: &str) -> PodState<'a> {
        let labels = pod.template_meta().labels();
        let node_matcher = NodeMatcher::new(pod);

        // PodTopologySpread.
        let constraints: Vec<&TopologySpreadConstraint> = pod
            .spec
            .spread_constraints()
            .iter()
            .filter(|c| c.when_unsatisfiable == "DoNotSchedule")
            .collect();
        let mut spreads: Vec<Spread> = constraints
            .iter()
            .map(|c| {
                let selector = merged_selector(
                    c.label_selector.as_ref(),
                    c.match_label_keys.as_deref(),
                    None,
                    labels,
                );
                Spread {
                    key: c.topology_key.as_str(),
                    cache: None,
                    max_skew: i64::from(c.max_skew),
                    self_match: selector
                        .as_ref()
                        .is_some_and(|s| selector_matches(s, labels)),
                    selector,
                    counts: HashMap::new(),
                    min: None,
                }
            })
            .collect();
        // One match cache per distinct selector: constraints sharing a selector share it.
        let mut caches: Vec<SetMatches> = Vec::new();
        let mut cached_selectors: Vec<LabelSelector> = Vec::new();
        for s in spreads.iter_mut() {
            if let Some(sel) = &s.selector {
                let idx = match cached_selectors.iter().position(|c| c == sel) {
                    Some(i) => i,
                    None => {
                        cached_selectors.push(sel.clone());
                        caches.push(SetMatches::new(cluster, |set| {
                            set.namespace == namespace && selector_matches(sel, &set.labels)
                        }));
                        caches.len() - 1
                    }
                };
                s.cache = Some(idx);
            }
        }
        if !spreads.is_empty() {
            for (i, node) in cluster.nodes.iter().enumerate() {
                if !spreads.iter().all(|s| node.labels.contains_key(s.key)) {
                    continue;
                }
                let mut affinity_ok = None;
                let mut taints_ok = None;
                for (s, c) in spreads.iter_mut().zip(&constraints) {
                    if c.node_affinity_policy.as_deref().unwrap_or("Honor") == "Honor"
                        && !*affinity_ok.get_or_insert_with(|| node_matcher.matches(node))
                    {
                        continue;
                    }
                    if c.node_taints_policy.as_deref() == Some("Honor")
                        && !*taints_ok.get_or_insert_with(|| untolerated_taint(pod, node).is_none())
                    {
                        continue;
                    }
                    let count = match (&s.selector, s.cache) {
                        (Some(_), Some(c)) => cluster.groups_by_node[i]
                            .iter()
                            .filter(|(set, _)| caches[c].get(*set))
                            .map(|(_, n)| i64::from(*n))
                            .sum(),
                        _ => 0,
                    };
                    let value = node.labels.get(s.key).map(String::as_str).unwrap_or("");
                    *s.counts.entry(value).or_insert(0) += count;
                }
            }
            for (s, c) in spreads.iter_mut().zip(&constraints) {
                let domains = s.counts.len() as i64;
                s.min = s.counts.values().min().copied();
                // Fewer eligible domains than minDomains: the global minimum counts as 0.
                if c.min_domains.is_some_and(|m| domains < i64::from(m)) {
                    s.min = Some(0);
                }
            }
        }

        // InterPodAffinity.
        let resolve = |terms: &[PodAffinityTerm]| -> Vec<AffinityTerm> {
            terms
                .iter()
                .map(|t| AffinityTerm::new(t, namespace, labels))
                .collect()
        };
        let affinity = resolve(pod.spec.required_pod_affinity());
        let anti_affinity = resolve(pod.spec.required_pod_anti_affinity());
        let mut affinity_counts = HashMap::new();
        let mut anti_counts = HashMap::new();
        let mut existing_anti = HashMap::new();
        if !affinity.is_empty() || !anti_affinity.is_empty() {
            let all_affinity = SetMatches::new(cluster, |set| {
                !affinity.is_empty()
                    && affinity
                        .iter()
                        .all(|t| t.matches(&set.namespace, &set.labels, cluster))
            });
            let anti_sets: Vec<SetMatches> = anti_affinity
                .iter()
                .map(|t| {
                    SetMatches::new(cluster, |set| {
                        t.matches(&set.namespace, &set.labels, cluster)
                    })
                })
                .collect();
            for (i, groups) in cluster.groups_by_node.iter().enumerate() {
                let node = &cluster.nodes[i];
                for &(set, n) in groups {
                    let n = i64::from(n);
                    if all_affinity.get(set) {
                        for t in &affinity {
                            if let Some((k, v)) = node.labels.get_key_value(&t.key) {
                                *affinity_counts.entry((k.as_str(), v.as_str())).or_insert(0) += n;
                            }
                        }
                    }
                    for (t, m) in anti_affinity.iter().zip(&anti_sets) {
                        if m.get(set) {
                            if let Some((k, v)) = node.labels.get_key_value(&t.key) {
                                *anti_counts.entry((k.as_str(), v.as_str())).or_insert(0) += n;
                            }
                        }
                    }
                }
            }
        }
        for (i, set, raw) in &cluster.anti_terms {
            let owner = &cluster.label_sets[*set];
            let t = AffinityTerm::new(raw, &owner.namespace, &owner.labels);
            if t.matches(namespace, labels, cluster) {
                if let Some((k, v)) = cluster.nodes[*i].labels.get_key_value(&t.key) {
                    *existing_anti.entry((k.as_str(), v.as_str())).or_insert(0) += 1;
                }
            }
        }
        let pod_matches_own_affinity = !affinity.is_empty()
            && affinity
                .iter()
                .all(|t| t.matches(namespace, labels, cluster));

        PodState {
            cluster,
            pod,
            node_name: pod.spec.node_name.as_deref().filter(|n| !n.is_empty()),
            node_matcher,
            spreads,
            affinity,
            affinity_counts,
            pod_matches_own_affinity,
            anti_affinity,
            anti_counts,
            existing_anti,
        }
    }

    /// Filter: every plugin's reasons for node `i`, in the scheduler's plugin order. Empty means
    /// the pod fits. (The scheduler itself stops at the first failing plugin; the summary does too.)
    pub fn filter(&self, i: usize) -> Vec<Reason> {
        let node = &self.cluster.nodes[i];
        let mut out = Vec::new();
        let mut say = |plugin, message: String| out.push(Reason { plugin, message });
        if node.unschedulable {
            let taint = Taint {
                key: UNSCHEDULABLE_TAINT.into(),
                effect: "NoSchedule".into(),
                value: None,
                time_added: None,
            };
            if !tolerated(self.pod.spec.tolerations(), &taint) {
                say(NODE_UNSCHEDULABLE, REASON_UNSCHEDULABLE.to_string());
            }
        }
        if self.node_name.is_some_and(|n| n != node.name) {
            say(NODE_NAME, REASON_NODE_NAME.to_string());
        }
        if let Some(t) = untolerated_taint(self.pod, node) {
            say(
                TAINT_TOLERATION,
                format!(
                    "node(s) had untolerated taint {{{}: {}}}",
                    t.key,
                    t.value.as_deref().unwrap_or("")
                ),
            );
        }
        if !self.node_matcher.matches(node) {
            say(NODE_AFFINITY, REASON_NODE_AFFINITY.to_string());
        }
        if let Some(r) = self.spread_reason(node) {
            say(POD_TOPOLOGY_SPREAD, r.to_string());
        }
        if let Some(r) = self.inter_pod_reason(node) {
            say(INTER_POD_AFFINITY, r.to_string());
        }
        out
    }

    fn spread_reason(&self, node: &Node) -> Option<&'static str> {
        if self
            .spreads
            .iter()
            .any(|s| !node.labels.contains_key(s.key))
        {
            return Some(REASON_SPREAD_MISSING_LABEL);
        }
        for s in &self.spreads {
            let Some(min) = s.min else { continue };
            let value = node.labels.get(s.key).map(String::as_str).unwrap_or("");
            let matched = s.counts.get(value).copied().unwrap_or(0);
            let skew = matched + i64::from(s.self_match) - min;
            if skew > s.max_skew {
                return Some(REASON_SPREAD);
            }
        }
        None
    }

    fn inter_pod_reason(&self, node: &Node) -> Option<&'static str> {
        if !self.affinity.is_empty() {
            let pair = |t: &AffinityTerm| {
                node.labels
                    .get_key_value(&t.key)
                    .map(|(k, v)| (k.as_str(), v.as_str()))
            };
            let satisfied = self.affinity.iter().all(|t| {
                pair(t).is_some_and(|p| self.affinity_counts.get(&p).copied().unwrap_or(0) > 0)
            });
            // The first pod of a group that selects itself may go anywhere the keys exist.
            let first_of_its_kind = self.affinity_counts.is_empty()
                && self.pod_matches_own_affinity
                && self
                    .affinity
                    .iter()
                    .all(|t| node.labels.contains_key(&t.key));
            if !satisfied && !first_of_its_kind {
                return Some(REASON_AFFINITY);
            }
        }
        for t in &self.anti_affinity {
            if let Some((k, v)) = node.labels.get_key_value(&t.key) {
                if self
                    .anti_counts
                    .get(&(k.as_str(), v.as_str()))
                    .copied()
                    .unwrap_or(0)
                    > 0
                {
                    return Some(REASON_ANTI_AFFINITY);
                }
            }
        }
        for (k, v) in &node.labels {
            if self
                .existing_anti
                .get(&(k.as_str(), v.as_str()))
                .copied()
                .unwrap_or(0)
                > 0
            {
                return Some(REASON_EXISTING_ANTI_AFFINITY);
            }
        }
        None
    }
}

/// The outcome for every node.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct NodeResult {
    pub name: String,
    pub feasible: bool,
    pub reasons: Vec<Reason>,
}

pub fn evaluate(cluster: &Cluster, pod: &PodTemplate, namespace: &str) -> Vec<NodeResult> {
    let state = PodState::new(cluster, pod, namespace);
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

/// The scheduler's FitError text: `0/5 nodes are available: 2 node(s) had ..., 3 node(s) ....`
/// Each node counts under the first plugin that rejected it, as in kube-scheduler.
pub fn summary(results: &[NodeResult]) -> String {
    let feasible = results.iter().filter(|r| r.feasible).count();
    let mut hist: BTreeMap<&str, usize> = BTreeMap::new();
    for r in results.iter().filter(|r| !r.feasible) {
        if let Some(first) = r.reasons.first() {
            *hist.entry(first.message.as_str()).or_insert(0) += 1;
        }
    }
    let mut parts: Vec<String> = hist.iter().map(|(m, n)| format!("{n} {m}")).collect();
    parts.sort();
    if parts.is_empty() {
        format!("{feasible}/{} nodes are available.", results.len())
    } else {
        format!(
            "{feasible}/{} nodes are available: {}.",
            results.len(),
            parts.join(", ")
        )
    }
}

#[cfg(test)]
mod tests;
