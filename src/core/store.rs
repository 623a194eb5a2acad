//! The compact snapshot kept current from watch events: every Node, Pod, Namespace and
//! RuntimeClass event changes only what it touches (one node's totals, one label set's count),
//! never rebuilds.
//! Pure: the live adapter feeds it events; admission reads its [`Cluster`].
//!
//! Per pod it keeps a key (`namespace/name`), its interned label set, where it is placed and
//! what it takes of its node, so that an update or a delete can be undone exactly.

use std::collections::{HashMap, HashSet};

use super::cluster::{Cluster, PodUsage};
use super::snapshot::{bound_of, namespace_of, node_of, SlimObject};

/// The kinds a store holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Resource {
    Nodes,
    Pods,
    Namespaces,
    /// What admission adds to a workload's new pods; optional ([`Resource::REQUIRED`]).
    RuntimeClasses,
}

impl Resource {
    pub const ALL: [Resource; 4] = [
        Resource::Nodes,
        Resource::Pods,
        Resource::Namespaces,
        Resource::RuntimeClasses,
    ];

    /// What the checks cannot do without. RuntimeClasses only complete a workload's pods as
    /// admission will make them: while a template's class is not in the store, that template
    /// is not judged (counted as `runtime_class_unknown`), as when the class does not exist.
    pub const REQUIRED: [Resource; 3] = [Resource::Nodes, Resource::Pods, Resource::Namespaces];

    pub fn as_str(self) -> &'static str {
        match self {
            Resource::Nodes => "nodes",
            Resource::Pods => "pods",
            Resource::Namespaces => "namespaces",
            Resource::RuntimeClasses => "runtimeclasses",
        }
    }

    fn slot(self) -> usize {
        self as usize
    }
}

/// A watch event, as the store takes it.
#[derive(Debug)]
pub enum Event {
    /// A list (or re-list) starts: objects not seen again before [`Event::RelistDone`] are gone.
    Relist,
    Apply(SlimObject),
    Delete(SlimObject),
    RelistDone,
}

#[derive(Debug)]
struct PodEntry {
    node: String,
    /// The entry's own reference to its label set.
    set: u32,
    terminating: bool,
    /// Where it is placed; `None` while its node is not in the store (the Node's watch event
    /// may come after its pods').
    placed: Option<super::cluster::Placed>,
    usage: PodUsage,
}

#[derive(Debug, Default)]
pub struct Store {
    cluster: Cluster,
    pods: HashMap<Box<str>, PodEntry>,
    /// Node name → the pods bound to it while it is not in the store.
    waiting: HashMap<String, Vec<Box<str>>>,
    /// Per resource, during a re-list: the names seen so far.
    relisting: [Option<HashSet<Box<str>>>; 4],
}

impl Store {
    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// Objects held per resource.
    pub fn len(&self, r: Resource) -> usize {
        match r {
            Resource::Nodes => self.cluster.nodes.len(),
            Resource::Pods => self.pods.len(),
            Resource::Namespaces => self.cluster.namespaces.len(),
            Resource::RuntimeClasses => self.cluster.runtime_classes.len(),
        }
    }

    /// Pods bound to a node the store does not hold.
    pub fn waiting_pods(&self) -> usize {
        self.waiting.values().map(Vec::len).sum()
    }

    pub fn apply(&mut self, resource: Resource, event: Event) {
        match event {
            Event::Relist => self.relisting[resource.slot()] = Some(HashSet::new()),
            Event::RelistDone => self.finish_relist(resource),
            Event::Apply(obj) => {
                if let Some(seen) = &mut self.relisting[resource.slot()] {
                    seen.insert(key(resource, &obj).into());
                }
                match resource {
                    Resource::Nodes => self.upsert_node(obj),
                    Resource::Pods => self.upsert_pod(obj),
                    Resource::Namespaces => {
                        let (name, labels) = namespace_of(obj);
                        self.cluster.namespaces.insert(name, labels);
                    }
                    Resource::RuntimeClasses => {
                        let name = obj.metadata.name.clone().unwrap_or_default();
                        self.cluster.runtime_classes.insert(name, obj.runtime_class);
                    }
                }
            }
            Event::Delete(obj) => {
                let k = key(resource, &obj);
                match resource {
                    Resource::Nodes => self.delete_node(&k),
                    Resource::Pods => self.delete_pod(&k),
                    Resource::Namespaces => {
                        self.cluster.namespaces.remove(&k);
                    }
                    Resource::RuntimeClasses => {
                        self.cluster.runtime_classes.remove(&k);
                    }
                }
            }
        }
    }

    fn finish_relist(&mut self, resource: Resource) {
        let Some(seen) = self.relisting[resource.slot()].take() else {
            return;
        };
        match resource {
            Resource::Nodes => {
                let gone: Vec<String> = self
                    .cluster
                    .nodes
                    .iter()
                    .filter(|n| !seen.contains(n.name.as_str()))
                    .map(|n| n.name.clone())
                    .collect();
                self.delete_nodes(&gone);
            }
            Resource::Pods => {
                let gone: Vec<Box<str>> = self
                    .pods
                    .keys()
                    .filter(|k| !seen.contains(*k))
                    .cloned()
                    .collect();
                for k in gone {
                    self.delete_pod(&k);
                }
            }
            Resource::Namespaces => self
                .cluster
                .namespaces
                .retain(|n, _| seen.contains(n.as_str())),
            Resource::RuntimeClasses => self
                .cluster
                .runtime_classes
                .retain(|n, _| seen.contains(n.as_str())),
        }
    }

    fn upsert_node(&mut self, obj: SlimObject) {
        let node = node_of(obj, true);
        let name = node.name.clone();
        let known = self.cluster.node_index(&name).is_some();
        let i = self.cluster.upsert_node(node);
        if known {
            return;
        }
        for k in self.waiting.remove(&name).unwrap_or_default() {
            if let Some(e) = self.pods.get_mut(&k) {
                let set = self.cluster.retain_set(e.set);
                e.placed = Some(self.cluster.place(i, set, e.terminating, &e.usage));
            }
        }
    }

    fn delete_node(&mut self, name: &str) {
        self.delete_nodes(&[name.to_string()]);
    }

    /// Removes nodes, then re-resolves every placement by its node's name in one pass (node
    /// deletions are rare; a re-list may bring many at once): pods on a removed node wait for
    /// it, the others follow their node to its new index.
    fn delete_nodes(&mut self, names: &[String]) {
        let mut removed = false;
        for n in names {
            removed |= self.cluster.remove_node(n);
        }
        if !removed {
            return;
        }
        for (k, e) in &mut self.pods {
            let Some(p) = &mut e.placed else { continue };
            match self.cluster.node_index(&e.node) {
                Some(i) => p.node = i as u32,
                None => {
                    e.placed = None;
                    self.waiting
                        .entry(e.node.clone())
                        .or_default()
                        .push(k.clone());
                }
            }
        }
    }

    fn upsert_pod(&mut self, obj: SlimObject) {
        let k: Box<str> = key(Resource::Pods, &obj).into();
        let Some((node, pod)) = bound_of(obj) else {
            // Not bound, or finished: it takes nothing.
            self.delete_pod(&k);
            return;
        };
        let set = self.cluster.intern_set(pod.namespace, pod.labels);
        if let Some(e) = self.pods.get(&k) {
            if e.node == node
                && e.set == set
                && e.terminating == pod.terminating
                && e.usage == pod.usage
            {
                // A status update: nothing the filters read has changed.
                self.cluster.release_set(set);
                return;
            }
        }
        self.delete_pod(&k);
        let placed = self.cluster.node_index(&node).map(|i| {
            let held = self.cluster.retain_set(set);
            self.cluster.place(i, held, pod.terminating, &pod.usage)
        });
        if placed.is_none() {
            self.waiting
                .entry(node.clone())
                .or_default()
                .push(k.clone());
        }
        self.pods.insert(
            k,
            PodEntry {
                node,
                set,
                terminating: pod.terminating,
                placed,
                usage: pod.usage,
            },
        );
    }

    fn delete_pod(&mut self, k: &str) {
        let Some(e) = self.pods.remove(k) else {
            return;
        };
        match e.placed {
            Some(p) => self.cluster.unplace(p, &e.usage),
            None => {
                if let Some(w) = self.waiting.get_mut(&e.node) {
                    w.retain(|x| &**x != k);
                    if w.is_empty() {
                        self.waiting.remove(&e.node);
                    }
                }
            }
        }
        self.cluster.release_set(e.set);
    }
}

/// `namespace/name` for pods, the name for cluster-scoped objects.
fn key(resource: Resource, obj: &SlimObject) -> String {
    let name = obj.metadata.name.as_deref().unwrap_or("");
    match resource {
        Resource::Pods => format!(
            "{}/{name}",
            obj.metadata.namespace.as_deref().unwrap_or("default")
        ),
        _ => name.to_string(),
    }
}

#[cfg(test)]
mod tests;
