//! NodeResourcesFit: the pod's requests must fit into what the node has left (allocatable minus
//! the requests of its pods), and the node must have room for one more pod. Every shortage is
//! reported, the pod count first.

use crate::core::cluster::{Node, NodeUsage};
use crate::core::resources::{pod_requests, Resources};
use crate::k8s::model::PodSpec;

pub(super) const TOO_MANY_PODS: &str = "Too many pods";

pub(super) struct NodeResourcesFit {
    request: Resources,
    /// The kubelet admitting a pod bound by `nodeName` first drops its requests for extended
    /// resources the node does not advertise (`removeMissingExtendedResources`).
    kubelet: bool,
}

/// `IsExtendedResourceName`: a domain-prefixed name outside `kubernetes.io/`, not a quota
/// `requests.` name.
fn is_extended(name: &str) -> bool {
    name.contains('/') && !name.starts_with("kubernetes.io/") && !name.starts_with("requests.")
}

impl NodeResourcesFit {
    pub(super) fn new(spec: &PodSpec, kubelet: bool) -> NodeResourcesFit {
        NodeResourcesFit {
            request: pod_requests(spec),
            kubelet,
        }
    }

    /// The scheduler's `fitsRequest`: "Too many pods", then "Insufficient <resource>" for each
    /// resource that does not fit. A node without allocatable in the snapshot is not checked.
    pub(super) fn filter(&self, node: &Node, usage: &NodeUsage) -> Vec<String> {
        let Some(alloc) = &node.allocatable else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if i64::from(usage.pods) + 1 > alloc.pods {
            out.push(TOO_MANY_PODS.to_string());
        }
        let req = &self.request;
        if req.is_zero() {
            return out;
        }
        let (a, used) = (&alloc.resources, &usage.requested);
        let short = |want: i64, have: i64, used: i64| want > 0 && want > have.saturating_sub(used);
        if short(req.milli_cpu, a.milli_cpu, used.milli_cpu) {
            out.push("Insufficient cpu".into());
        }
        if short(req.memory, a.memory, used.memory) {
            out.push("Insufficient memory".into());
        }
        if short(
            req.ephemeral_storage,
            a.ephemeral_storage,
            used.ephemeral_storage,
        ) {
            out.push("Insufficient ephemeral-storage".into());
        }
        for (name, want) in &req.scalar {
            if self.kubelet && is_extended(name) && !a.scalar.contains_key(name) {
                continue;
            }
            let have = a.scalar.get(name).copied().unwrap_or(0);
            let taken = used.scalar.get(name).copied().unwrap_or(0);
            if short(*want, have, taken) {
                out.push(format!("Insufficient {name}"));
            }
        }
        out
    }
}

/// How many pods of `spec` a node still has room for by NodeResourcesFit's accounting (pod
/// slots and every requested resource) and, when the pod binds host ports, one; `None` for a
/// node whose resources the snapshot does not give (a hand-written node).
pub fn room(node: &Node, usage: &NodeUsage, spec: &PodSpec) -> Option<u64> {
    let alloc = node.allocatable.as_ref()?;
    let free = |have: i64, used: i64| have.saturating_sub(used).max(0);
    let mut n = u64::try_from(free(alloc.pods, i64::from(usage.pods))).unwrap_or(0);
    let req = pod_requests(spec);
    let (a, used) = (&alloc.resources, &usage.requested);
    let mut fit = |want: i64, have: i64, taken: i64| {
        if want > 0 {
            n = n.min(u64::try_from(free(have, taken) / want).unwrap_or(0));
        }
    };
    fit(req.milli_cpu, a.milli_cpu, used.milli_cpu);
    fit(req.memory, a.memory, used.memory);
    fit(
        req.ephemeral_storage,
        a.ephemeral_storage,
        used.ephemeral_storage,
    );
    for (name, want) in &req.scalar {
        let have = a.scalar.get(name).copied().unwrap_or(0);
        fit(*want, have, used.scalar.get(name).copied().unwrap_or(0));
    }
    if !crate::core::resources::host_ports(spec).is_empty() {
        n = n.min(1);
    }
    Some(n)
}
