//! TaintToleration: every NoSchedule and NoExecute taint of the node must be tolerated.

use k8s_openapi::api::core::v1::{Taint, Toleration};

use crate::core::cluster::{tolerated, Node};

pub(super) struct TaintToleration<'a> {
    tolerations: &'a [Toleration],
}

impl<'a> TaintToleration<'a> {
    pub(super) fn new(tolerations: &'a [Toleration]) -> TaintToleration<'a> {
        TaintToleration { tolerations }
    }

    /// The first taint the pod does not tolerate.
    pub(super) fn filter<'n>(&self, node: &'n Node) -> Option<&'n Taint> {
        node.taints
            .iter()
            .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
            .find(|t| !tolerated(self.tolerations, t))
    }
}
