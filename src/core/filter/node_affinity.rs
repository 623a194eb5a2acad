//! NodeAffinity: the pod's nodeSelector and required node affinity, compiled once.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::NodeSelectorTerm;

use super::REASON_NODE_AFFINITY;
use crate::core::cluster::Node;
use crate::core::nodeselector::Term;
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

    pub(super) fn filter(&self, node: &Node) -> Option<&'static str> {
        (!self.matches(node)).then_some(REASON_NODE_AFFINITY)
    }
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
