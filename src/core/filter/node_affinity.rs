//! NodeAffinity: the pod's nodeSelector and required node affinity, compiled once.

use super::REASON_NODE_AFFINITY;
use crate::core::cluster::Node;
use crate::core::nodeselector::Term;
use crate::k8s::model::PodSpec;

pub(super) struct NodeAffinity {
    selector: Term,
    /// The required terms (`None`: no required affinity); an empty or invalid term is `None`.
    required: Option<Vec<Option<Term>>>,
}

impl NodeAffinity {
    pub(super) fn new(spec: &PodSpec) -> NodeAffinity {
        NodeAffinity {
            selector: Term::from_node_selector(spec.node_selector()),
            required: spec
                .required_node_selector_terms()
                .map(|terms| terms.iter().map(Term::from_api).collect()),
        }
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
