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
    pub terminating: bool,
    pub usage: PodUsage,
}

/// What a bound pod takes of its node and holds against others, besides its labels.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodUsage {
    /// Required anti-affinity terms of this pod (they also block incoming pods: symmetry).
    pub anti_affinity: Vec<PodAffinityTerm>,
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

/// Where [`Cluster::place`] put a pod: what [`Cluster::unplace`] needs to take it off again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placed {
    pub node: u32,
    /// The pod's label set.
    pub set: u32,
    /// A terminating pod still counts for inter-pod affinity (kube-scheduler's InterPodAffinity
    /// sees every pod on the node) but no longer for spreading (PodTopologySpread skips it).
    pub terminating: bool,
}

/// The pods of one label set on one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Group {
    pub set: usize,
    /// Not terminating: what topology spread counts.
    pub live: u32,
    pub terminating: u32,
}

impl Group {
    /// Every pod of the group: what inter-pod affinity counts.
    pub fn all(&self) -> u32 {
        self.live + self.terminating
    }
}

/// The compact snapshot: no pod objects, only per-node totals, interned label sets with counts
/// per node, and the few required anti-affinity terms. It can be filled once (a dump, a list)
/// or kept current event by event (a watch): every change is local to one node and one set.
#[derive(Clone, Debug, Default)]
pub struct Cluster {
    pub nodes: Vec<Node>,
    pub usage: Vec<NodeUsage>,
    pub namespaces: HashMap<String, BTreeMap<String, String>>,
    node_index: HashMap<String, usize>,
    /// Interned label sets of bound pods. A set no pod holds any more is emptied and its slot
    /// reused.
    pub label_sets: Vec<LabelSet>,
    label_set_index: HashMap<LabelSet, usize>,
    /// How many holders (pods of the snapshot, or a store's entries) each set has.
    set_refs: Vec<u32>,
    free_sets: Vec<usize>,
    /// Per node: the label sets of its pods, with how many pods of each.
    pub groups_by_node: Vec<Vec<Group>>,
    /// Required anti-affinity terms of bound pods, terminating ones included (they still
    /// repel until they are gone): (node, owner's label set, term).
    pub anti_terms: Vec<(usize, usize, PodAffinityTerm)>,
    /// Node label key → value → the nodes carrying it, so that a selector visits only the
    /// nodes it can match.
    label_index: HashMap<String, HashMap<String, Vec<u32>>>,
    /// What admission adds to the pods that name a RuntimeClass ([`super::runtime_class`]).
    pub runtime_classes: super::runtime_class::RuntimeClasses,
    /// Why a live cluster's RuntimeClasses could not be listed (a user without the right).
    pub runtime_classes_unread: Option<String>,
    /// What LimitRanger defaults a new pod's requests to, per namespace ([`super::limit_range`]).
    pub limit_ranges: super::limit_range::LimitRanges,
    /// Why a live cluster's LimitRanges could not be listed.
    pub limit_ranges_unread: Option<String>,
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
    /// `template` as admission gives it to the new pods of a workload in `namespace`: what its
    /// RuntimeClass adds, then the default requests of the namespace's LimitRanges; the
    /// apiserver's reason when it refuses the pods.
    pub fn admitted<'a>(
        &self,
        template: &'a crate::k8s::workload::PodTemplate,
        namespace: &str,
    ) -> Result<std::borrow::Cow<'a, crate::k8s::workload::PodTemplate>, String> {
        let t = super::runtime_class::admitted(template, &self.runtime_classes)?;
        Ok(
            match super::limit_range::admitted_in(&t, &self.limit_ranges, namespace) {
                Some((defaulted, _)) => std::borrow::Cow::Owned(defaulted),
                None => t,
            },
        )
    }

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
        if self.node_index(&node.name).is_some() {
            return Err(ClusterError::DuplicateNode(node.name));
        }
        Ok(self.upsert_node(node))
    }

    /// Adds a node, or replaces what is known of a node of that name (labels, taints,
    /// cordon, allocatable) and keeps the pods bound to it.
    pub fn upsert_node(&mut self, node: Node) -> usize {
        match self.node_index(&node.name) {
            Some(i) => {
                let old = std::mem::take(&mut self.nodes[i].labels);
                self.index_labels(i, &old, false);
                self.index_labels(i, &node.labels, true);
                self.nodes[i] = node;
                i
            }
            None => {
                let i = self.nodes.len();
                self.node_index.insert(node.name.clone(), i);
                self.index_labels(i, &node.labels, true);
                self.nodes.push(node);
                self.usage.push(NodeUsage::default());
                self.groups_by_node.push(Vec::new());
                i
            }
        }
    }

    /// Removes a node and what its pods took of it; `false` when there is none of that name.
    /// The last node takes its index, so holders of [`Placed`] look their node up again. The
    /// pods that were bound to it are no longer placed.
    pub fn remove_node(&mut self, name: &str) -> bool {
        let Some(i) = self.node_index.remove(name) else {
            return false;
        };
        let last = self.nodes.len() - 1;
        let labels = std::mem::take(&mut self.nodes[i].labels);
        self.index_labels(i, &labels, false);
        for g in std::mem::take(&mut self.groups_by_node[i]) {
            self.release_n(g.set, g.all());
        }
        self.anti_terms.retain(|(n, _, _)| *n != i);
        if last != i {
            let moved = self.nodes[last].labels.clone();
            self.index_labels(last, &moved, false);
            self.index_labels(i, &moved, true);
            for t in &mut self.anti_terms {
                if t.0 == last {
                    t.0 = i;
                }
            }
            if let Some(k) = self.node_index.get_mut(&self.nodes[last].name) {
                *k = i;
            }
        }
        self.nodes.swap_remove(i);
        self.usage.swap_remove(i);
        self.groups_by_node.swap_remove(i);
        true
    }

    fn index_labels(&mut self, i: usize, labels: &BTreeMap<String, String>, add: bool) {
        let i = i as u32;
        for (k, v) in labels {
            if add {
                self.label_index
                    .entry(k.clone())
                    .or_default()
                    .entry(v.clone())
                    .or_default()
                    .push(i);
            } else if let Some(values) = self.label_index.get_mut(k) {
                if let Some(nodes) = values.get_mut(v) {
                    if let Some(p) = nodes.iter().position(|&n| n == i) {
                        nodes.swap_remove(p);
                    }
                    if nodes.is_empty() {
                        values.remove(v);
                    }
                }
                if values.is_empty() {
                    self.label_index.remove(k);
                }
            }
        }
    }

    /// The nodes labelled `key=value`, in no particular order.
    pub fn nodes_with(&self, key: &str, value: &str) -> &[u32] {
        self.label_index
            .get(key)
            .and_then(|v| v.get(value))
            .map_or(&[], Vec::as_slice)
    }

    /// Every value of `key` on some node, with its nodes.
    pub fn label_values(&self, key: &str) -> impl Iterator<Item = (&str, &[u32])> {
        self.label_index
            .get(key)
            .into_iter()
            .flatten()
            .map(|(v, n)| (v.as_str(), n.as_slice()))
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

    /// The label set's id, interning it on first sight; the caller holds one reference until
    /// it calls [`Cluster::release_set`].
    pub fn intern_set(&mut self, namespace: String, labels: BTreeMap<String, String>) -> u32 {
        let key = LabelSet { namespace, labels };
        if let Some(&set) = self.label_set_index.get(&key) {
            self.set_refs[set] += 1;
            return set as u32;
        }
        let set = match self.free_sets.pop() {
            Some(s) => {
                self.label_sets[s] = key.clone();
                self.set_refs[s] = 1;
                s
            }
            None => {
                self.label_sets.push(key.clone());
                self.set_refs.push(1);
                self.label_sets.len() - 1
            }
        };
        self.label_set_index.insert(key, set);
        set as u32
    }

    /// One more reference to an interned set.
    pub fn retain_set(&mut self, set: u32) -> u32 {
        if let Some(r) = self.set_refs.get_mut(set as usize) {
            *r += 1;
        }
        set
    }

    pub fn release_set(&mut self, set: u32) {
        self.release_n(set as usize, 1);
    }

    fn release_n(&mut self, set: usize, n: u32) {
        let Some(r) = self.set_refs.get_mut(set) else {
            return;
        };
        *r = r.saturating_sub(n);
        if *r == 0 {
            let key = std::mem::replace(
                &mut self.label_sets[set],
                LabelSet {
                    namespace: String::new(),
                    labels: BTreeMap::new(),
                },
            );
            self.label_set_index.remove(&key);
            self.free_sets.push(set);
        }
    }

    /// Folds a pod into node `i`'s totals; `set` is a reference the placement now holds.
    pub fn place(&mut self, i: usize, set: u32, terminating: bool, pod: &PodUsage) -> Placed {
        let u = &mut self.usage[i];
        u.pods += 1;
        u.requested.add(&pod.requests);
        u.host_ports.extend(pod.host_ports.iter().cloned());
        let groups = &mut self.groups_by_node[i];
        let s = set as usize;
        let g = match groups.iter().position(|g| g.set == s) {
            Some(k) => &mut groups[k],
            None => {
                groups.push(Group {
                    set: s,
                    live: 0,
                    terminating: 0,
                });
                let last = groups.len() - 1;
                &mut groups[last]
            }
        };
        if terminating {
            g.terminating += 1;
        } else {
            g.live += 1;
        }
        for t in &pod.anti_affinity {
            self.anti_terms.push((i, s, t.clone()));
        }
        Placed {
            node: i as u32,
            set,
            terminating,
        }
    }

    /// Undoes [`Cluster::place`] with the same `pod`, and releases the set's reference.
    pub fn unplace(&mut self, placed: Placed, pod: &PodUsage) {
        let i = placed.node as usize;
        let Some(u) = self.usage.get_mut(i) else {
            return;
        };
        u.pods = u.pods.saturating_sub(1);
        u.requested.sub(&pod.requests);
        for p in &pod.host_ports {
            if let Some(k) = u.host_ports.iter().position(|x| x == p) {
                u.host_ports.swap_remove(k);
            }
        }
        let set = placed.set;
        let s = set as usize;
        let groups = &mut self.groups_by_node[i];
        if let Some(k) = groups.iter().position(|g| g.set == s) {
            let g = &mut groups[k];
            if placed.terminating {
                g.terminating = g.terminating.saturating_sub(1);
            } else {
                g.live = g.live.saturating_sub(1);
            }
            if g.all() == 0 {
                groups.swap_remove(k);
            }
        }
        for t in &pod.anti_affinity {
            if let Some(k) = self
                .anti_terms
                .iter()
                .position(|(n, x, term)| *n == i && *x == s && term == t)
            {
                self.anti_terms.swap_remove(k);
            }
        }
        self.release_set(set);
    }

    /// Binds a pod to a node of the snapshot.
    pub fn add_pod(&mut self, node: &str, pod: BoundPod) -> Result<Placed, ClusterError> {
        let i = self
            .node_index(node)
            .ok_or_else(|| Self::unknown(&pod, node))?;
        let set = self.intern_set(pod.namespace, pod.labels);
        Ok(self.place(i, set, pod.terminating, &pod.usage))
    }

    /// Takes a pod added with [`Cluster::add_pod`] off its node again: a bound pod explained as
    /// if it were scheduled now, without itself. `false`, and nothing changed, when the node
    /// holds no pod of its namespace and labels in its state (terminating or not): the pod is
    /// not there (the snapshot is older or of another cluster), so nothing of it may be taken.
    pub fn remove_pod(&mut self, node: &str, pod: &BoundPod) -> Result<bool, ClusterError> {
        let i = self
            .node_index(node)
            .ok_or_else(|| Self::unknown(pod, node))?;
        let key = LabelSet {
            namespace: pod.namespace.clone(),
            labels: pod.labels.clone(),
        };
        let Some(&set) = self.label_set_index.get(&key) else {
            return Ok(false);
        };
        let held = self.groups_by_node[i].iter().any(|g| {
            g.set == set
                && if pod.terminating {
                    g.terminating > 0
                } else {
                    g.live > 0
                }
        });
        if !held {
            return Ok(false);
        }
        self.unplace(
            Placed {
                node: i as u32,
                set: set as u32,
                terminating: pod.terminating,
            },
            &pod.usage,
        );
        Ok(true)
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
