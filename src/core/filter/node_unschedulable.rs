//! NodeUnschedulable: a cordoned node takes only pods that tolerate its unschedulable taint.

use k8s_openapi::api::core::v1::{Taint, Toleration};

use super::REASON_UNSCHEDULABLE;
use crate::core::cluster::{tolerated, Node};

const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

pub(super) struct NodeUnschedulable {
    tolerates_cordon: bool,
}

impl NodeUnschedulable {
    /// `bound`: the pod names its node, and the kubelet admits it on a cordoned node.
    pub(super) fn new(tolerations: &[Toleration], bound: bool) -> NodeUnschedulable {
        let taint = Taint {
            key: UNSCHEDULABLE_TAINT.into(),
            effect: "NoSchedule".into(),
            value: None,
            time_added: None,
        };
        NodeUnschedulable {
            tolerates_cordon: bound || tolerated(tolerations, &taint),
        }
    }

    pub(super) fn filter(&self, node: &Node) -> Option<&'static str> {
        (node.unschedulable && !self.tolerates_cordon).then_some(REASON_UNSCHEDULABLE)
    }
}
