//! A cluster snapshot as kube-scheduler's filters see it: nodes with labels and taints, bound
//! pods indexed by node, and namespace labels. Built once; evaluating a pod only reads it.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::{PodAffinityTerm, Taint, Toleration};

use super::resources::{HostPort, Resources};

#[derive(Clone, Debug, Default)]
pub struct Node {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    pub unschedulable: bool,
    /// `status.allocatable`; `None` when the snapshot does not say (a hand-written node), and
    /// then NodeResourcesFit has nothing to check on it.
    pub allocatable: Option<Allocatable>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Allocatable {
    pub resources: Resources,
    /// The `pods` entry: how many pods the node may run.
    pub pods: i64,
}

/// A pod bound to a node, with what the filters read of it. It is folded into its node's
/// totals and label-set counts on [`Cluster::add_pod`] and not kept.
#[derive(Clone, Debug, Default)]
pub struct BoundPod {
    pub name: String,
    pub namespace: String,
    pub labels: BTreeMap<String, String>,
    /// Required anti-affinity terms of this pod (they also block incoming pods: symmetry).
    pub anti_affinity: Vec<PodAffinityTerm>,
    pub terminating: bool,
    /// `resourcehelper.PodRequests`, as NodeResourcesFit adds it to the node's requested.
    pub requests: Resources,
    pub host_ports: Vec<HostPort>,
}

/// A distinct (namespace, labels) pair of bound pods. Pods of one workload share it, so a
/// selector is evaluated once per label set instead of once per pod.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LabelSet {
    pub namespace: String,
    pub labels: BTreeMap<String, String>,
}

/// What the pods bound to a node take of it (the scheduler's `NodeInfo` totals).
#[derive(Clone, Debug, Default)]
pub struct NodeUsage {
    /// Bound pods, terminating ones included (they hold their resources until they are gone).
    pub pods: u32,
    pub requested: Resources,
    pub host_ports: Vec<HostPort>,
}

/// The compact snapshot: no pod objects, only per-node totals, interned label sets with counts
/// per node, and the few required anti-affinity terms.
#[derive(Clone, Debug, Default)]
pub struct Cluster {
    pub nodes: Vec<Node>,
    pub usage: Vec<NodeUsage>,
    pub namespaces: HashMap<String, BTreeMap<String, String>>,
    node_index: HashMap<String, usize>,
    /// Interned label sets of live (not terminating) pods.
    pub label_sets: Vec<LabelSet>,
    label_set_index: HashMap<LabelSet, usize>,
    /// Per node: (label set, number of live pods with it).
    pub groups_by_node: Vec<Vec<(usize, u32)>>,
    /// Required anti-affinity terms of live pods: (node, owner's label set, term).
    pub anti_terms: Vec<(usize, usize, PodAffinityTerm)>,
}

/// Why a snapshot cannot be built.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ClusterError {
    #[error("pod {namespace}/{pod} is bound to node {node:?}, which is not in the snapshot")]
    UnknownNode {
        namespace: String,
        pod: String,
        node: String,
    },
    #[error("node {0:?} appears twice")]
    DuplicateNode(String),
}

impl Cluster {
    pub fn new(
        nodes: Vec<Node>,
        namespaces: HashMap<String, BTreeMap<String, String>>,
    ) -> Result<Cluster, ClusterError> {
        let mut c = Cluster {
            namespaces,
            ..Default::default()
        };
        for n in nodes {
            c.add_node(n)?;
        }
        Ok(c)
    }

    pub fn add_node(&mut self, node: Node) -> Result<usize, ClusterError> {
        let i = self.nodes.len();
        if self.node_index.insert(node.name.clone(), i).is_some() {
            return Err(ClusterError::DuplicateNode(node.name));
        }
        self.nodes.push(node);
        self.usage.push(NodeUsage::default());
        self.groups_by_node.push(Vec::new());
        Ok(i)
    }

    pub fn node_index(&self, name: &str) -> Option<usize> {
        self.node_index.get(name).copied()
    }

    fn unknown(pod: &BoundPod, node: &str) -> ClusterError {
        ClusterError::UnknownNode {
            namespace: pod.namespace.clone(),
            pod: pod.name.clone(),
            node: node.to_string(),
        }
    }

    /// The label set's id, interning it on first sight.
    fn intern(&mut self, namespace: String, labels: BTreeMap<String, String>) -> usize {
        let key = LabelSet { namespace, labels };
        if let Some(&set) = self.label_set_index.get(&key) {
            return set;
        }
        let set = self.label_sets.len();
        self.label_sets.push(key.clone());
        self.label_set_index.insert(key, set);
        set
    }

    /// Binds a pod to a node of the snapshot.
    pub fn add_pod(&mut self, node: &str, pod: BoundPod) -> Result<(), ClusterError> {
        let i = self
            .node_index(node)
            .ok_or_else(|| Self::unknown(&pod, node))?;
        let u = &mut self.usage[i];
        u.pods += 1;
        u.requested.add(&pod.requests);
        u.host_ports.extend(pod.host_ports);
        if !pod.terminating {
            let set = self.intern(pod.namespace, pod.labels);
            let groups = &mut self.groups_by_node[i];
            match groups.iter_mut().find(|(s, _)| *s == set) {
                Some((_, n)) => *n += 1,
                None => groups.push((set, 1)),
            }
            for t in pod.anti_affinity {
                self.anti_terms.push((i, set, t));
            }
        }
        Ok(())
    }

    /// Takes a pod added with [`Cluster::add_pod`] off its node again: a bound pod explained as
    /// if it were scheduled now, without itself.
    pub fn remove_pod(&mut self, node: &str, pod: &BoundPod) -> Result<(), ClusterError> {
        let i = self
            .node_index(node)
            .ok_or_else(|| Self::unknown(pod, node))?;
        let u = &mut self.usage[i];
        u.pods = u.pods.saturating_sub(1);
        u.requested.sub(&pod.requests);
        for p in &pod.host_ports {
            if let Some(k) = u.host_ports.iter().position(|x| x == p) {
                u.host_ports.swap_remove(k);
            }
        }
        if pod.terminating {
            return Ok(());
        }
        let key = LabelSet {
            namespace: pod.namespace.clone(),
            labels: pod.labels.clone(),
        };
        let Some(&set) = self.label_set_index.get(&key) else {
            return Ok(());
        };
        let groups = &mut self.groups_by_node[i];
        if let Some(k) = groups.iter().position(|(s, _)| *s == set) {
            groups[k].1 -= 1;
            if groups[k].1 == 0 {
                groups.swap_remove(k);
            }
        }
        for t in &pod.anti_affinity {
            if let Some(k) = self
                .anti_terms
                .iter()
                .position(|(n, s, x)| *n == i && *s == set && x == t)
            {
                self.anti_terms.swap_remove(k);
            }
        }
        Ok(())
    }

    pub fn namespace_labels(&self, ns: &str) -> &BTreeMap<String, String> {
        static EMPTY: BTreeMap<String, String> = BTreeMap::new();
        // Every namespace carries its name as a label, even when the snapshot lacks the object.
        self.namespaces.get(ns).unwrap_or(&EMPTY)
    }
}

/// `v1helper.TolerationsTolerateTaint`: does one toleration tolerate the taint.
pub fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    let effect = t.effect.as_deref().unwrap_or("");
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = t.key.as_deref().unwrap_or("");
    let op = t.operator.as_deref().unwrap_or("Equal");
    if key.is_empty() {
        // An empty key with Exists matches every taint.
        return op == "Exists";
    }
    if key != taint.key {
        return false;
    }
    match op {
        "Exists" => true,
        "Equal" | "" => t.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
        _ => false,
    }
}

pub fn tolerated(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| tolerates(t, taint))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, value: &str, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            value: Some(value.into()),
            effect: effect.into(),
            time_added: None,
        }
    }

    fn tol(key: Option<&str>, op: &str, value: Option<&str>, effect: Option<&str>) -> Toleration {
        Toleration {
            key: key.map(Into::into),
            operator: Some(op.into()),
            value: value.map(Into::into),
            effect: effect.map(Into::into),
            toleration_seconds: None,
        }
    }

    #[test]
    fn toleration_matching() {
        let t = taint("dedicated", "gpu", "NoSchedule");
        let cases = [
            (
                tol(Some("dedicated"), "Equal", Some("gpu"), Some("NoSchedule")),
                true,
            ),
            (tol(Some("dedicated"), "Equal", Some("gpu"), None), true),
            (tol(Some("dedicated"), "Equal", Some("cpu"), None), false),
            (tol(Some("dedicated"), "Exists", None, None), true),
            (
                tol(Some("dedicated"), "Exists", None, Some("NoExecute")),
                false,
            ),
            (tol(None, "Exists", None, None), true),
            (tol(None, "Equal", None, None), false),
            (tol(Some("other"), "Exists", None, None), false),
        ];
        for (t2, want) in cases {
            assert_eq!(tolerates(&t2, &t), want, "{t2:?}");
        }
    }

    #[test]
    fn pods_must_be_bound_to_known_nodes() {
        let mut c = Cluster::new(
            vec![Node {
                name: "n1".into(),
                ..Default::default()
            }],
            HashMap::new(),
        )
        .unwrap();
        assert!(c.add_pod("n1", BoundPod::default()).is_ok());
        let err = c
            .add_pod(
                "n9",
                BoundPod {
                    name: "p".into(),
                    namespace: "d".into(),
                    ..Default::default()
                },
            )
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "pod d/p is bound to node \"n9\", which is not in the snapshot"
        );
        assert!(Cluster::new(
            vec![
                Node {
                    name: "a".into(),
                    ..Default::default()
                },
                Node {
                    name: "a".into(),
                    ..Default::default()
                }
            ],
            HashMap::new()
        )
        .is_err());
    }
}
