//! InterPodAffinity: the incoming pod's required affinity and anti-affinity against the pods of
//! the snapshot, and the existing pods' required anti-affinity against the incoming pod
//! (symmetry). Matching pods are counted per topology pair once; each node is a lookup.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::PodAffinityTerm;

use super::{
    merged_selector, SetMatches, REASON_AFFINITY, REASON_ANTI_AFFINITY,
    REASON_EXISTING_ANTI_AFFINITY,
};
use crate::core::cluster::{Cluster, Node};
use crate::core::labels::Selector;
use crate::k8s::model::PodSpec;

const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// An inter-pod (anti-)affinity term resolved for its owner: selector merged and compiled,
/// namespaces known.
struct AffinityTerm {
    key: String,
    /// `None`: no labelSelector, which matches no pod.
    selector: Selector,
    namespaces: Vec<String>,
    namespace_selector: Option<Selector>,
    owner_namespace: String,
}

impl AffinityTerm {
    fn new(
        t: &PodAffinityTerm,
        owner_ns: &str,
        owner_labels: &BTreeMap<String, String>,
    ) -> AffinityTerm {
        let merged = merged_selector(
            t.label_selector.as_ref(),
            t.match_label_keys.as_deref(),
            t.mismatch_label_keys.as_deref(),
            owner_labels,
        );
        AffinityTerm {
            key: t.topology_key.clone(),
            selector: Selector::compile_optional(merged.as_ref()),
            namespaces: t.namespaces.clone().unwrap_or_default(),
            namespace_selector: t.namespace_selector.as_ref().map(Selector::compile),
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
                let labels = cluster.namespace_labels(ns);
                if labels.contains_key(NAMESPACE_NAME_LABEL) {
                    sel.matches(labels)
                } else {
                    // Every namespace carries its name as a label, even when the snapshot
                    // lacks the object.
                    let mut labels = labels.clone();
                    labels.insert(NAMESPACE_NAME_LABEL.to_string(), ns.to_string());
                    sel.matches(&labels)
                }
            }
        }
    }

    /// `PodMatchesTermsNamespaceAndSelector`.
    fn matches(&self, ns: &str, labels: &BTreeMap<String, String>, cluster: &Cluster) -> bool {
        self.selector.matches(labels) && self.namespace_matches(ns, cluster)
    }

    /// The node's (key, value) pair for this term's topology key.
    fn pair<'n>(&self, node: &'n Node) -> Option<(&'n str, &'n str)> {
        node.labels
            .get_key_value(&self.key)
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

pub(super) struct InterPodAffinity<'a> {
    affinity: Vec<AffinityTerm>,
    affinity_counts: HashMap<(&'a str, &'a str), i64>,
    pod_matches_own_affinity: bool,
    anti_affinity: Vec<AffinityTerm>,
    anti_counts: HashMap<(&'a str, &'a str), i64>,
    existing_anti: HashMap<(&'a str, &'a str), i64>,
}

impl<'a> InterPodAffinity<'a> {
    pub(super) fn new(
        cluster: &'a Cluster,
        spec: &PodSpec,
        labels: &BTreeMap<String, String>,
        namespace: &str,
    ) -> InterPodAffinity<'a> {
        let resolve = |terms: &[PodAffinityTerm]| -> Vec<AffinityTerm> {
            terms
                .iter()
                .map(|t| AffinityTerm::new(t, namespace, labels))
                .collect()
        };
        let affinity = resolve(spec.required_pod_affinity());
        let anti_affinity = resolve(spec.required_pod_anti_affinity());
        let mut affinity_counts = HashMap::new();
        let mut anti_counts = HashMap::new();
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
            for (node, groups) in cluster.nodes.iter().zip(&cluster.groups_by_node) {
                // Terminating pods count: InterPodAffinity sees every pod of the node.
                for g in groups {
                    let (set, n) = (g.set, i64::from(g.all()));
                    if all_affinity.get(set) {
                        for t in &affinity {
                            if let Some(p) = t.pair(node) {
                                *affinity_counts.entry(p).or_insert(0) += n;
                            }
                        }
                    }
                    for (t, m) in anti_affinity.iter().zip(&anti_sets) {
                        if m.get(set) {
                            if let Some(p) = t.pair(node) {
                                *anti_counts.entry(p).or_insert(0) += n;
                            }
                        }
                    }
                }
            }
        }
        let mut existing_anti = HashMap::new();
        for (i, set, raw) in &cluster.anti_terms {
            let owner = &cluster.label_sets[*set];
            let t = AffinityTerm::new(raw, &owner.namespace, &owner.labels);
            if t.matches(namespace, labels, cluster) {
                if let Some(p) = t.pair(&cluster.nodes[*i]) {
                    *existing_anti.entry(p).or_insert(0) += 1;
                }
            }
        }
        let pod_matches_own_affinity = !affinity.is_empty()
            && affinity
                .iter()
                .all(|t| t.matches(namespace, labels, cluster));
        InterPodAffinity {
            affinity,
            affinity_counts,
            pod_matches_own_affinity,
            anti_affinity,
            anti_counts,
            existing_anti,
        }
    }

    pub(super) fn filter(&self, node: &Node) -> Option<&'static str> {
        let count =
            |m: &HashMap<(&str, &str), i64>, p: (&str, &str)| m.get(&p).copied().unwrap_or(0);
        if !self.affinity.is_empty() {
            let satisfied = self.affinity.iter().all(|t| {
                t.pair(node)
                    .is_some_and(|p| count(&self.affinity_counts, p) > 0)
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
        if self.anti_affinity.iter().any(|t| {
            t.pair(node)
                .is_some_and(|p| count(&self.anti_counts, p) > 0)
        }) {
            return Some(REASON_ANTI_AFFINITY);
        }
        if node
            .labels
            .iter()
            .any(|(k, v)| count(&self.existing_anti, (k.as_str(), v.as_str())) > 0)
        {
            return Some(REASON_EXISTING_ANTI_AFFINITY);
        }
        None
    }
}
