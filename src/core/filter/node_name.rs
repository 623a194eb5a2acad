//! NodeName: a pod that names its node fits only there.

use super::REASON_NODE_NAME;
use crate::core::cluster::Node;

pub(super) struct NodeName<'a>(Option<&'a str>);

impl<'a> NodeName<'a> {
    pub(super) fn new(node_name: Option<&'a str>) -> NodeName<'a> {
        NodeName(node_name.filter(|n| !n.is_empty()))
    }

    pub(super) fn name(&self) -> Option<&'a str> {
        self.0
    }

    pub(super) fn filter(&self, node: &Node) -> Option<&'static str> {
        self.0
            .is_some_and(|n| n != node.name)
            .then_some(REASON_NODE_NAME)
    }
}
