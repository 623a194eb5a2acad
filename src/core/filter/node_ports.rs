//! NodePorts: a host port the pod wants must be free on the node, by protocol and address.

use super::REASON_NODE_PORTS;
use crate::core::cluster::NodeUsage;
use crate::core::resources::{conflicts, host_ports, HostPort};
use crate::k8s::model::PodSpec;

pub(super) struct NodePorts {
    wanted: Vec<HostPort>,
}

impl NodePorts {
    pub(super) fn new(spec: &PodSpec) -> NodePorts {
        NodePorts {
            wanted: host_ports(spec),
        }
    }

    pub(super) fn filter(&self, usage: &NodeUsage) -> Option<&'static str> {
        self.wanted
            .iter()
            .any(|w| conflicts(&usage.host_ports, w))
            .then_some(REASON_NODE_PORTS)
    }
}
