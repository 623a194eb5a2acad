//! A cluster snapshot as kube-scheduler's filters see it: nodes with labels and taints, bound
//! pods indexed by node, and namespace labels. Built once; evaluating a pod only reads it.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::{PodAffinityTerm, Taint, Toleration};

#[derive(Clone, Debug, Default)]
pub struct Node {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    pub unschedulable: bool,
}

/// A pod bound to a node, with what the filters read of it.
#[derive(Clone, Debug, Default)]
pub struct BoundPod {
    pub name: String,
    pub namespace: String,
    pub labels: BTreeMap<String, String>,
    /// Required anti-affinity terms of this pod (they also block incoming pods: symmetry).
    pub anti_affinity: Vec<PodAffinityTerm>,
    pub terminating: bool,
}

/// A distinct (namespace, labels) pair of bound pods. Pods of one workload share it, so a
/// selector is evaluated once per label set instead of once per pod.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LabelSet {
    pub namespace: String,
    pub labels: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Default)]
pub struct Cluster {
    pub nodes: Vec<Node>,
    /// Bound pods, by node index.
    pub pods_by_node: Vec<Vec<BoundPod>>,
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
        let mut node_index = HashMap::with_capacity(nodes.len());
        for (i, n) in nodes.iter().enumerate() {
            if node_index.insert(n.name.clone(), i).is_some() {
                return Err(ClusterError::DuplicateNode(n.name.clone()));
            }
        }
        let pods_by_node = vec![Vec::new(); nodes.len()];
        let groups_by_node = vec![Vec::new(); nodes.len()];
        Ok(Cluster {
            nodes,
            pods_by_node,
            namespaces,
            node_index,
            label_sets: Vec::new(),
            label_set_index: HashMap::new(),
            groups_by_node,
            anti_terms: Vec::new(),
        })
    }

    pub fn node_index(&self, name: &str) -> Option<usize> {
        self.node_index.get(name).copied()
    }

    /// Binds a pod to a node of the snapshot.
    pub fn add_pod(&mut self, node: &str, pod: BoundPod) -> Result<(), ClusterError> {
        let i = self
            .node_index(node)
            .ok_or_else(|| ClusterError::UnknownNode {
                namespace: pod.namespace.clone(),
                pod: pod.name.clone(),
                node: node.to_string(),
            })?;
        if !pod.terminating {
            let key = LabelSet {
                namespace: pod.namespace.clone(),
                labels: pod.labels.clone(),
            };
            let next = self.label_sets.len();
            let set = *self.label_set_index.entry(key.clone()).or_insert(next);
            if set == next {
                self.label_sets.push(key);
            }
            let groups = &mut self.groups_by_node[i];
            match groups.iter_mut().find(|(s, _)| *s == set) {
                Some((_, n)) => *n += 1,
                None => groups.push((set, 1)),
            }
            for t in &pod.anti_affinity {
                self.anti_terms.push((i, set, t.clone()));
            }
        }
        self.pods_by_node[i].push(pod);
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
