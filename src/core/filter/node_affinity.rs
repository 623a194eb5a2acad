//! NodeAffinity: the pod's nodeSelector and required node affinity, compiled once.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::NodeSelectorTerm;

use super::REASON_NODE_AFFINITY;
use crate::core::cluster::{Cluster, Node};
use crate::core::nodeselector::{Operator, Requirement, Source, Term};
use crate::k8s::model::PodSpec;

pub(super) struct NodeAffinity {
    selector: Term,
    /// The required terms (`None`: no required affinity); an empty or invalid term is `None`.
    required: Option<Vec<Option<Term>>>,
    /// PreFilter: when every required term names nodes (`metadata.name In [...]`, as DaemonSet
    /// pods do), only those nodes are candidates.
    candidates: Option<BTreeSet<String>>,
}

impl NodeAffinity {
    pub(super) fn new(spec: &PodSpec) -> NodeAffinity {
        let terms = spec.required_node_selector_terms();
        NodeAffinity {
            selector: Term::from_node_selector(spec.node_selector()),
            required: terms.map(|terms| terms.iter().map(Term::from_api).collect()),
            candidates: terms.and_then(named_nodes),
        }
    }

    pub(super) fn candidates(&self) -> Option<&BTreeSet<String>> {
        self.candidates.as_ref()
    }

    pub(super) fn matches(&self, node: &Node) -> bool {
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

    /// Whether some node of `cluster` meets the nodeSelector alone (true when it is empty).
    pub(super) fn selector_met(&self, cluster: &Cluster) -> bool {
        cluster
            .nodes
            .iter()
            .any(|n| self.selector.matches_node(&n.labels, &n.name))
    }

    pub(super) fn filter(&self, node: &Node) -> Option<&'static str> {
        (!self.matches(node)).then_some(REASON_NODE_AFFINITY)
    }

    /// A superset of the nodes that can match, from the label index; `None` when some part of
    /// the selection cannot be looked up (NotIn, Exists, Gt, ... alone), so every node is one.
    pub(super) fn indexed_candidates(&self, cluster: &Cluster) -> Option<Vec<u32>> {
        // Every nodeSelector entry must hold: the smallest posting list covers them all.
        if let Some(smallest) = self
            .selector
            .requirements
            .iter()
            .map(|r| postings(cluster, r))
            .min_by_key(|p| p.as_ref().map_or(usize::MAX, Vec::len))
        {
            return smallest;
        }
        let terms = self.required.as_ref()?;
        let mut out = Vec::new();
        for t in terms.iter().flatten() {
            // The smallest posting list among a term's lookups covers the term.
            let best = t
                .requirements
                .iter()
                .filter_map(|r| postings(cluster, r))
                .min_by_key(Vec::len)?;
            out.extend(best);
        }
        out.sort_unstable();
        out.dedup();
        Some(out)
    }

    /// The requirement (nodeSelector entry or required term's) that the most nodes fail.
    pub(super) fn most_missed(&self, cluster: &Cluster) -> Option<(String, usize)> {
        let all: Vec<usize> = (0..cluster.nodes.len()).collect();
        self.most_missed_among(cluster, &all)
    }

    /// [`Self::most_missed`] counted over the nodes `among` only.
    pub(super) fn most_missed_among(
        &self,
        cluster: &Cluster,
        among: &[usize],
    ) -> Option<(String, usize)> {
        let reqs = self.selector.requirements.iter().chain(
            self.required
                .iter()
                .flatten()
                .flatten()
                .flat_map(|t| t.requirements.iter()),
        );
        let mut best: Option<(String, usize)> = None;
        for r in reqs {
            let single = Term {
                requirements: vec![r.clone()],
            };
            let missed = among
                .iter()
                .filter_map(|&i| cluster.nodes.get(i))
                .filter(|n| !single.matches_node(&n.labels, &n.name))
                .count();
            if missed > best.as_ref().map_or(0, |b| b.1) {
                let text = match (r.op, r.values.as_slice()) {
                    (Operator::In, [v]) if r.source == Source::Label => format!("{}={v}", r.key),
                    _ => r.to_string(),
                };
                best = Some((text, missed));
            }
        }
        best
    }
}

/// The nodes an `In` requirement on a label can match, from the index.
fn postings(cluster: &Cluster, r: &Requirement) -> Option<Vec<u32>> {
    if r.source != Source::Label || r.op != Operator::In {
        return None;
    }
    let mut out: Vec<u32> = r
        .values
        .iter()
        .flat_map(|v| cluster.nodes_with(&r.key, v).iter().copied())
        .collect();
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// The union over the terms of the nodes each names through `metadata.name In` fields (their
/// intersection within a term); `None` when some term names no node, so every node is a
/// candidate. `Some` of an empty set: the terms name no node in common.
fn named_nodes(terms: &[NodeSelectorTerm]) -> Option<BTreeSet<String>> {
    let mut all: Option<BTreeSet<String>> = None;
    for t in terms {
        let mut named: Option<BTreeSet<String>> = None;
        for r in t.match_fields.as_deref().unwrap_or(&[]) {
            if r.key == "metadata.name" && r.operator == "In" {
                let values: BTreeSet<String> = r.values.iter().flatten().cloned().collect();
                named = Some(match named {
                    None => values,
                    Some(n) => n.intersection(&values).cloned().collect(),
                });
            }
        }
        all.get_or_insert_with(BTreeSet::new).extend(named?);
    }
    all
}
