//! TaintToleration: every NoSchedule and NoExecute taint of the node must be tolerated.

use k8s_openapi::api::core::v1::{Taint, Toleration};

use crate::core::cluster::{tolerated, Node};

pub(super) struct TaintToleration<'a> {
    tolerations: &'a [Toleration],
    /// As the kubelet admits a pod bound by `nodeName`: only NoExecute taints count.
    no_execute_only: bool,
}

impl<'a> TaintToleration<'a> {
    pub(super) fn new(tolerations: &'a [Toleration], no_execute_only: bool) -> TaintToleration<'a> {
        TaintToleration {
            tolerations,
            no_execute_only,
        }
    }

    /// The first taint the pod does not tolerate.
    pub(super) fn filter<'n>(&self, node: &'n Node) -> Option<&'n Taint> {
        node.taints
            .iter()
            .filter(|t| {
                t.effect == "NoExecute" || (t.effect == "NoSchedule" && !self.no_execute_only)
            })
            .find(|t| !tolerated(self.tolerations, t))
    }
}
