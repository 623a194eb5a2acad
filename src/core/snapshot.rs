//! Filling the compact [`Cluster`] from Nodes, Pods and Namespaces as the API writes them
//! (`kubectl get nodes,pods,namespaces -A -o json|yaml`, or one page of a list). Objects are
//! read straight into slim types that hold only what the filters read; unknown fields are skipped
//! without being built, and each object is folded into the snapshot as soon as it is read, so a
//! dump of any size is read in one pass and in memory proportional to the snapshot.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{BufRead, BufReader, Read};

use k8s_openapi::api::core::v1::{Affinity, Taint};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::cluster::{Allocatable, BoundPod, Cluster, ClusterError, Node, PodUsage};
use super::limit_range::LimitDefaults;
use super::resources::{
    host_ports, pod_requests_held, scaled, ContainerHeld, Held, Resources, PODS,
};
use super::runtime_class::RuntimeClass;
use crate::k8s::model::{Container, PodSpec};

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimMeta {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub deletion_timestamp: Option<IgnoredAny>,
}

/// The spec fields of a Node and of a Pod that the filters read (the two kinds share no name).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimSpec {
    #[serde(default)]
    pub node_name: Option<String>,
    #[serde(default)]
    pub containers: Option<Vec<Container>>,
    #[serde(default)]
    pub init_containers: Option<Vec<Container>>,
    #[serde(default)]
    pub overhead: Option<BTreeMap<String, Quantity>>,
    #[serde(default)]
    pub resources: Option<k8s_openapi::api::core::v1::ResourceRequirements>,
    #[serde(default)]
    pub affinity: Option<Affinity>,
    #[serde(default)]
    pub taints: Option<Vec<Taint>>,
    #[serde(default)]
    pub unschedulable: Option<bool>,
    /// A LimitRange's items.
    #[serde(default)]
    pub limits: Option<Vec<k8s_openapi::api::core::v1::LimitRangeItem>>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimStatus {
    #[serde(default)]
    pub phase: Option<String>,
    #[serde(default)]
    pub allocatable: Option<BTreeMap<String, Quantity>>,
    /// A pod's containers' resources as the kubelet holds them (in-place resize).
    #[serde(default)]
    pub container_statuses: Option<Vec<ContainerHeld>>,
    #[serde(default)]
    pub init_container_statuses: Option<Vec<ContainerHeld>>,
    #[serde(default)]
    pub conditions: Option<Vec<SlimCondition>>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct SlimCondition {
    #[serde(default, rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub reason: Option<String>,
}

impl SlimStatus {
    /// What the pod's containers hold, for [`pod_requests_held`]: both lists of statuses (their
    /// names are unique across a pod's containers), and whether a resize was found infeasible.
    pub fn held(&self) -> (Vec<ContainerHeld>, bool) {
        let containers = self
            .container_statuses
            .iter()
            .chain(&self.init_container_statuses)
            .flatten()
            .filter(|c| c.allocated_resources.is_some() || c.resources.is_some())
            .cloned()
            .collect();
        let infeasible = self
            .conditions
            .iter()
            .flatten()
            .any(|c| c.kind == "PodResizePending" && c.reason.as_deref() == Some("Infeasible"));
        (containers, infeasible)
    }
}

/// A Node, Pod or Namespace, as far as the snapshot reads it. The `spec` and `status` of
/// another kind are skipped unread, so that a custom resource's differently typed
/// `spec.containers` does not fail the dump: at once when its `apiVersion` or `kind` come
/// first (as the API and kubectl write them), else once it says its kind ([`Fields`]).
#[derive(Clone, Debug, Default)]
pub struct SlimObject {
    /// Only to tell the core kinds from a custom resource of the same kind name (Longhorn's
    /// `Node`): `v1` or absent (the items of a typed list do not say).
    pub api_version: Option<String>,
    pub kind: Option<String>,
    pub metadata: SlimMeta,
    pub spec: Option<SlimSpec>,
    pub status: Option<SlimStatus>,
    /// A RuntimeClass's `overhead` and `scheduling` (top-level fields, not a spec).
    pub runtime_class: RuntimeClass,
}

/// How many objects of each kind went into a snapshot.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub nodes: usize,
    pub pods: usize,
    /// Pods not bound to a node, or finished: they take nothing.
    pub unbound_pods: usize,
    pub namespaces: usize,
    /// Pods bound to a node the snapshot lacks (a live list is not atomic, a dump may hold a
    /// node's pods after the node was deleted); only when lenient.
    pub orphan_pods: usize,
    /// Objects of other kinds (a dump of `kubectl get all`), which the filters do not read.
    pub other_objects: usize,
    /// RuntimeClasses (`node.k8s.io`), which admission adds to the pods that name them.
    pub runtime_classes: usize,
    /// LimitRanges, whose defaults admission gives a new pod's containers.
    pub limit_ranges: usize,
}

impl Counts {
    pub fn objects(&self) -> usize {
        self.nodes + self.pods + self.namespaces
    }
}

/// `status.allocatable` in the scheduler's units.
pub fn allocatable(list: &BTreeMap<String, Quantity>) -> Allocatable {
    Allocatable {
        resources: Resources::from_list(list),
        pods: list.get(PODS).and_then(|q| scaled(&q.0, 0)).unwrap_or(0),
    }
}

/// What a bound pod contributes to its node; `status` for what its containers hold.
pub fn bound_pod(
    name: String,
    namespace: String,
    labels: BTreeMap<String, String>,
    terminating: bool,
    spec: &PodSpec,
    status: Option<&SlimStatus>,
) -> BoundPod {
    let (containers, resize_infeasible) = status.map(SlimStatus::held).unwrap_or_default();
    let held = Held {
        containers: &containers,
        resize_infeasible,
    };
    BoundPod {
        name,
        namespace,
        labels,
        terminating,
        usage: pod_usage_held(spec, held),
    }
}

/// A Node as the filters see it. `from_api`: read from the API server (a list or a watch),
/// where a node without `status.allocatable` (its kubelet has not posted it yet) has none, as
/// the scheduler sees it; in a dump, it is a hand-written node, whose resources are not
/// checked.
pub fn node_of(obj: SlimObject, from_api: bool) -> Node {
    let spec = obj.spec.unwrap_or_default();
    Node {
        name: obj.metadata.name.unwrap_or_default(),
        labels: obj.metadata.labels.unwrap_or_default(),
        taints: spec.taints.unwrap_or_default(),
        unschedulable: spec.unschedulable.unwrap_or(false),
        allocatable: match obj.status.and_then(|s| s.allocatable) {
            Some(a) => Some(allocatable(&a)),
            None if from_api => Some(Allocatable::default()),
            None => None,
        },
    }
}

/// What kube-apiserver would never have stored in a Node, and a snapshot must not guess at: no
/// name, or an allocatable quantity that is none (read as zero, it would turn a fit into
/// `Insufficient`).
fn check_node(obj: &SlimObject) -> Result<(), String> {
    let name = obj.metadata.name.as_deref().unwrap_or("");
    if name.is_empty() {
        return Err("a Node without metadata.name".to_string());
    }
    let allocatable = obj.status.as_ref().and_then(|s| s.allocatable.as_ref());
    for (resource, q) in allocatable.into_iter().flatten() {
        if let Some(why) = crate::k8s::validation::quantity_error(&q.0) {
            return Err(format!(
                "node {name:?}: status.allocatable[{resource}]: Invalid value: {:?}: {why}",
                q.0
            ));
        }
    }
    Ok(())
}

/// What kube-apiserver would never have stored in a Pod of a dump that takes room on its node:
/// a quantity that is none in what it requests (read as zero, it would turn `Insufficient`
/// into a fit). The slim object's twin of `workload::bad_quantity`, which reads JSON values.
fn check_pod(obj: &SlimObject) -> Result<(), String> {
    use crate::k8s::validation::quantity_error;
    let Some(spec) = obj.spec.as_ref().filter(|_| takes_room(obj)) else {
        return Ok(());
    };
    let refused = |path: String, q: &Quantity, why: &str| {
        let m = &obj.metadata;
        format!(
            "pod \"{}/{}\": {path}: Invalid value: {:?}: {why}",
            m.namespace.as_deref().unwrap_or("default"),
            m.name.as_deref().unwrap_or(""),
            q.0
        )
    };
    for (field, list) in [
        ("containers", &spec.containers),
        ("initContainers", &spec.init_containers),
    ] {
        for (i, c) in list.iter().flatten().enumerate() {
            if let Some((part, k, q, why)) = invalid_requirement(&c.resources) {
                let path = format!("spec.{field}[{i}].resources.{part}[{k}]");
                return Err(refused(path, q, why));
            }
        }
    }
    if let Some((part, k, q, why)) = invalid_requirement(&spec.resources) {
        return Err(refused(format!("spec.resources.{part}[{k}]"), q, why));
    }
    for (k, q) in spec.overhead.iter().flatten() {
        if let Some(why) = quantity_error(&q.0) {
            return Err(refused(format!("spec.overhead[{k}]"), q, why));
        }
    }
    Ok(())
}

/// The first request or limit that is no quantity: where, which, it, and why.
fn invalid_requirement(
    r: &Option<k8s_openapi::api::core::v1::ResourceRequirements>,
) -> Option<(&'static str, &String, &Quantity, &'static str)> {
    let r = r.as_ref()?;
    [("requests", &r.requests), ("limits", &r.limits)]
        .into_iter()
        .flat_map(|(part, m)| m.iter().flatten().map(move |(k, q)| (part, k, q)))
        .find_map(|(part, k, q)| {
            crate::k8s::validation::quantity_error(&q.0).map(|why| (part, k, q, why))
        })
}

/// A Namespace's name and labels, its name label included: the apiserver always sets it to the
/// name, whatever a manifest or a hand-edited dump says.
pub fn namespace_of(obj: SlimObject) -> (String, BTreeMap<String, String>) {
    let name = obj.metadata.name.unwrap_or_default();
    let mut labels = obj.metadata.labels.unwrap_or_default();
    labels.insert("kubernetes.io/metadata.name".into(), name.clone());
    (name, labels)
}

/// A Pod bound to a node and not finished: the node's name and what the pod takes of it.
/// `None` for a pod that takes nothing (not bound, Succeeded or Failed).
pub fn bound_of(obj: SlimObject) -> Option<(String, BoundPod)> {
    if !takes_room(&obj) {
        return None;
    }
    let SlimObject {
        metadata,
        spec,
        status,
        ..
    } = obj;
    let spec = spec.unwrap_or_default();
    let node = spec.node_name.unwrap_or_default();
    let pod_spec = PodSpec {
        affinity: spec.affinity,
        containers: spec.containers.unwrap_or_default(),
        init_containers: spec.init_containers.unwrap_or_default(),
        overhead: spec.overhead,
        resources: spec.resources,
        ..Default::default()
    };
    let pod = bound_pod(
        metadata.name.unwrap_or_default(),
        metadata.namespace.unwrap_or_else(|| "default".into()),
        metadata.labels.unwrap_or_default(),
        metadata.deletion_timestamp.is_some(),
        &pod_spec,
        status.as_ref(),
    );
    Some((node, pod))
}

/// A pod bound to a node and not finished (Succeeded or Failed).
fn takes_room(obj: &SlimObject) -> bool {
    let bound = obj
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    let finished = matches!(
        obj.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    );
    bound && !finished
}

/// What a pod takes of the node it is bound to, by its spec alone.
pub fn pod_usage(spec: &PodSpec) -> PodUsage {
    pod_usage_held(spec, Held::default())
}

fn pod_usage_held(spec: &PodSpec, held: Held) -> PodUsage {
    PodUsage {
        anti_affinity: spec.required_pod_anti_affinity().to_vec(),
        requests: pod_requests_held(spec, held),
        host_ports: host_ports(spec),
    }
}

/// Builds a snapshot from objects in any order: pods that arrive before their node wait.
#[derive(Default)]
pub struct Builder {
    cluster: Cluster,
    pending: Vec<(String, BoundPod)>,
    /// Whether a pod on an unknown node is an error or only counted (a live list is not atomic;
    /// `explain` and `check` read dumps leniently and note what was left out).
    lenient: bool,
    /// Objects listed from the API server ([`node_of`]).
    from_api: bool,
    pub counts: Counts,
}

impl Builder {
    pub fn new(lenient: bool) -> Builder {
        Builder {
            lenient,
            ..Default::default()
        }
    }

    /// For objects listed from the API server rather than read from a dump.
    pub fn from_api(self) -> Builder {
        Builder {
            from_api: true,
            ..self
        }
    }

    /// Adds one object; `kind` is used when the object does not say (items of a typed list).
    pub fn push(&mut self, obj: SlimObject, kind: Option<&str>) -> Result<(), String> {
        match kind_of(&obj, kind)? {
            None => self.counts.other_objects += 1,
            Some("Node") => {
                check_node(&obj)?;
                self.cluster
                    .add_node(node_of(obj, self.from_api))
                    .map_err(|e| e.to_string())?;
                self.counts.nodes += 1;
            }
            Some("Namespace") => {
                let (name, labels) = namespace_of(obj);
                self.cluster.namespaces.insert(name, labels);
                self.counts.namespaces += 1;
            }
            Some("LimitRange") => {
                self.counts.limit_ranges += 1;
                let m = obj.metadata;
                let items = obj.spec.and_then(|s| s.limits).unwrap_or_default();
                let defaults = LimitDefaults::of(m.name.as_deref().unwrap_or_default(), &items);
                let ranges = self
                    .cluster
                    .limit_ranges
                    .entry(m.namespace.unwrap_or_default())
                    .or_default();
                // In name order, as a listing gives them.
                let at = ranges.partition_point(|r| r.name < defaults.name);
                ranges.insert(at, defaults);
            }
            Some("RuntimeClass") => {
                self.counts.runtime_classes += 1;
                let name = obj.metadata.name.unwrap_or_default();
                self.cluster.runtime_classes.insert(name, obj.runtime_class);
            }
            Some("Pod") => {
                if !self.from_api {
                    check_pod(&obj)?;
                }
                self.counts.pods += 1;
                let Some((node, pod)) = bound_of(obj) else {
                    self.counts.unbound_pods += 1;
                    return Ok(());
                };
                if self.cluster.node_index(&node).is_some() {
                    self.cluster
                        .add_pod(&node, pod)
                        .map_err(|e| e.to_string())?;
                } else {
                    self.pending.push((node, pod));
                }
            }
            _ => {}
        }
        Ok(())
    }

    pub fn finish(mut self) -> Result<(Cluster, Counts), ClusterError> {
        for (node, pod) in std::mem::take(&mut self.pending) {
            match self.cluster.add_pod(&node, pod) {
                Ok(_) => {}
                Err(ClusterError::UnknownNode { .. }) if self.lenient => {
                    self.counts.orphan_pods += 1
                }
                Err(e) => return Err(e),
            }
        }
        Ok((self.cluster, self.counts))
    }
}

impl SlimObject {
    /// Reads the value of one top-level field other than `items`.
    fn read_field<'de, A: MapAccess<'de>>(
        &mut self,
        key: Key,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match key {
            Key::ApiVersion => self.api_version = map.next_value()?,
            Key::Kind => self.kind = map.next_value()?,
            Key::Metadata => {
                self.metadata = map.next_value::<Option<SlimMeta>>()?.unwrap_or_default()
            }
            Key::Spec if !self.other_kind() => self.spec = map.next_value()?,
            Key::Status if !self.other_kind() => self.status = map.next_value()?,
            Key::Overhead if !self.other_kind() => {
                self.runtime_class.overhead = map.next_value()?;
            }
            Key::Scheduling if !self.other_kind() => {
                self.runtime_class.scheduling = map.next_value()?;
            }
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }

    /// Already known to be of a kind the snapshot does not take.
    fn other_kind(&self) -> bool {
        !known_group(self) || self.kind.is_some() && matches!(kind_of(self, None), Ok(None))
    }
}

impl<'de> Deserialize<'de> for SlimObject {
    /// Read at once, field by field: an item of a typed list, whose kind the list gives.
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<SlimObject, D::Error> {
        ObjectSeed { says_kind: false }.deserialize(d)
    }
}

/// An object's fields as they come, where it says its own kind (a document, an item of a
/// `kind: List`). A hand-written manifest may give `spec` or `status` before `kind` or
/// `apiVersion`: those are kept as values and read once the object ends, so that a custom
/// resource's fields are never read as a Pod's or a Node's.
#[derive(Default)]
struct Fields {
    obj: SlimObject,
    early: Vec<(Key, serde_json::Value)>,
    /// The object says its kind: `spec` and `status` wait for it (else nothing waits).
    says_kind: bool,
}

impl Fields {
    fn read<'de, A: MapAccess<'de>>(&mut self, key: Key, map: &mut A) -> Result<(), A::Error> {
        match key {
            // Kept until the object has said both, unless it is already known to be of
            // another kind (then skipped at once, below).
            Key::Spec | Key::Status | Key::Overhead | Key::Scheduling
                if self.says_kind
                    && (self.obj.kind.is_none() || self.obj.api_version.is_none())
                    && !self.obj.other_kind() =>
            {
                self.early.push((key, map.next_value()?));
                Ok(())
            }
            _ => self.obj.read_field(key, map),
        }
    }

    fn finish<E: de::Error>(mut self) -> Result<SlimObject, E> {
        // Without a kind the object is refused as such, whatever its spec.
        if self.obj.kind.is_none() || self.obj.other_kind() {
            return Ok(self.obj);
        }
        for (key, value) in self.early {
            let bad = |field| move |e| E::custom(format_args!("{field}: {e}"));
            match key {
                Key::Spec => self.obj.spec = serde_json::from_value(value).map_err(bad("spec"))?,
                Key::Overhead => {
                    self.obj.runtime_class.overhead =
                        serde_json::from_value(value).map_err(bad("overhead"))?
                }
                Key::Scheduling => {
                    self.obj.runtime_class.scheduling =
                        serde_json::from_value(value).map_err(bad("scheduling"))?
                }
                _ => self.obj.status = serde_json::from_value(value).map_err(bad("status"))?,
            }
        }
        Ok(self.obj)
    }
}

/// One object, read as [`Fields`]; `says_kind` for an item of a `kind: List` or a document.
struct ObjectSeed {
    says_kind: bool,
}

impl<'de> DeserializeSeed<'de> for ObjectSeed {
    type Value = SlimObject;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<SlimObject, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ObjectSeed {
    type Value = SlimObject;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Node, Pod or Namespace")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SlimObject, A::Error> {
        let mut fields = Fields {
            says_kind: self.says_kind,
            ..Fields::default()
        };
        while let Some(key) = map.next_key::<Key>()? {
            fields.read(key, &mut map)?;
        }
        fields.finish()
    }
}

/// Of the core API group's `v1` (or not saying, as the items of a typed list).
fn is_core(obj: &SlimObject) -> bool {
    obj.api_version.as_deref().is_none_or(|v| v == "v1")
}

/// Of `node.k8s.io`, the RuntimeClasses' group (or not saying).
fn is_node_group(obj: &SlimObject) -> bool {
    obj.api_version
        .as_deref()
        .is_none_or(|v| v.starts_with("node.k8s.io/"))
}

/// Of a group whose objects the snapshot may take.
fn known_group(obj: &SlimObject) -> bool {
    is_core(obj) || is_node_group(obj)
}

/// The kind of an object the snapshot takes (`kind` when the object does not say); `None`
/// for another kind, which is only counted.
fn kind_of<'a>(obj: &'a SlimObject, kind: Option<&'a str>) -> Result<Option<&'a str>, String> {
    match obj.kind.as_deref().or(kind).unwrap_or("") {
        k @ ("Node" | "Namespace" | "Pod" | "LimitRange") if is_core(obj) => Ok(Some(k)),
        k @ "RuntimeClass" if is_node_group(obj) => Ok(Some(k)),
        "" => Err("an object without kind".into()),
        _ => Ok(None),
    }
}

/// Where objects go as they are read: the builder itself, or a batch read on a parser thread
/// (checked as the builder would, so that errors keep their place in the text).
trait Sink {
    fn take(&mut self, obj: SlimObject, kind: Option<&str>) -> Result<(), String>;
}

impl Sink for Builder {
    fn take(&mut self, obj: SlimObject, kind: Option<&str>) -> Result<(), String> {
        self.push(obj, kind)
    }
}

impl Sink for Vec<SlimObject> {
    fn take(&mut self, mut obj: SlimObject, kind: Option<&str>) -> Result<(), String> {
        if obj.kind.is_none() {
            obj.kind = Some(kind.unwrap_or_default().to_string());
        }
        kind_of(&obj, None)?;
        self.push(obj);
        Ok(())
    }
}

/// A top-level key, matched without allocating.
#[derive(Clone, Copy)]
enum Key {
    Items,
    ApiVersion,
    Kind,
    Metadata,
    Spec,
    Status,
    Overhead,
    Scheduling,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E>(self, v: &str) -> Result<Key, E> {
                Ok(match v {
                    "items" => Key::Items,
                    "apiVersion" => Key::ApiVersion,
                    "kind" => Key::Kind,
                    "metadata" => Key::Metadata,
                    "spec" => Key::Spec,
                    "status" => Key::Status,
                    "overhead" => Key::Overhead,
                    "scheduling" => Key::Scheduling,
                    _ => Key::Other,
                })
            }
        }
        d.deserialize_identifier(V)
    }
}

/// One document: an object, or a `*List` whose items are pushed one by one as they are read.
struct DocSeed<'b, S>(&'b mut S);

impl<'de, S: Sink> DeserializeSeed<'de> for DocSeed<'_, S> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, S: Sink> Visitor<'de> for DocSeed<'_, S> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Node, Pod, Namespace or a List of them")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut fields = Fields {
            says_kind: true,
            ..Fields::default()
        };
        let mut is_list = false;
        while let Some(key) = map.next_key::<Key>()? {
            if let Key::Items = key {
                map.next_value_seed(Items {
                    kind: None,
                    builder: &mut *self.0,
                })?;
                is_list = true;
            } else {
                fields.read(key, &mut map)?;
            }
        }
        if is_list {
            return Ok(());
        }
        let obj = fields.finish()?;
        self.0.take(obj, None).map_err(de::Error::custom)
    }
}

/// The items of a list, each pushed as it is read; `kind` is the kind of a typed list's items
/// (they do not say), `None` for a `kind: List` of objects that do.
struct Items<'a, 'b, S> {
    kind: Option<&'a str>,
    builder: &'b mut S,
}

impl<'de, S: Sink> DeserializeSeed<'de> for Items<'_, '_, S> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        // `any`, so that an empty `items:` (YAML null) is an empty list in every format.
        d.deserialize_any(self)
    }
}

impl<'de, S: Sink> Visitor<'de> for Items<'_, '_, S> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self.kind {
            Some(k) => write!(f, "a list of {k}s"),
            None => f.write_str("a list of Nodes, Pods and Namespaces"),
        }
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        // A typed list's items do not say their kind: read at once, as that kind.
        let seed = || ObjectSeed {
            says_kind: self.kind.is_none(),
        };
        while let Some(obj) = seq.next_element_seed(seed())? {
            self.builder
                .take(obj, self.kind)
                .map_err(de::Error::custom)?;
        }
        Ok(())
    }
}

/// The objects of one document, in order (a List's items, or the object itself). Readers that
/// only hand out owned documents cannot take a seed; no thread-local is involved, so the parser
/// threads register no destructors.
struct Doc(Vec<SlimObject>);

impl<'de> Deserialize<'de> for Doc {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Doc, D::Error> {
        let mut objs = Vec::new();
        DocSeed(&mut objs).deserialize(d)?;
        Ok(Doc(objs))
    }
}

/// The documents' objects, in order.
fn objects_of(docs: Vec<Doc>) -> Vec<SlimObject> {
    docs.into_iter().flat_map(|d| d.0).collect()
}

/// Reads a dump: JSON (one or more values) or YAML (any number of documents). The input is
/// streamed; only the snapshot is kept.
pub fn read_dump<R: Read + Send>(input: R, lenient: bool) -> Result<(Cluster, Counts), String> {
    let mut r = BufReader::with_capacity(1 << 16, input);
    let first = loop {
        let buf = r.fill_buf().map_err(|e| e.to_string())?;
        match buf.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(i) => break buf.get(i).copied(),
            None if buf.is_empty() => break None,
            None => {
                let n = buf.len();
                r.consume(n);
            }
        }
    };
    let mut b = Builder::new(lenient);
    match first {
        None => {}
        Some(b'{') => read_json(r, &mut b)?,
        Some(b'[') => {
            return Err(
                "a JSON dump is an object (a List, or a Node, Pod or Namespace), not an array"
                    .into(),
            )
        }
        Some(_) => read_yaml(r, &mut b)?,
    }
    b.finish().map_err(|e| e.to_string())
}

/// A YAML stream. serde-saphyr parses about 10 MB/s on one core, so the text is cut into
/// pieces that parse on their own ([`YamlSplitter`]) and parsed on two threads; the objects are
/// folded into the snapshot in the order of the text, so the result and the first error are
/// those of a parse of the whole stream.
fn read_yaml<R: BufRead + Send>(r: R, b: &mut Builder) -> Result<(), String> {
    read_yaml_in(r, b, YAML_PIECE)
}

/// The objects of a YAML stream read in one parse of the whole text, in order: the reference
/// the piecewise reader is tested and fuzzed against.
#[doc(hidden)]
pub fn yaml_objects_whole(text: &str) -> Result<Vec<SlimObject>, String> {
    serde_saphyr::from_multiple_with_options::<Doc>(text, yaml_options())
        .map(objects_of)
        .map_err(|e| e.to_string())
}

/// The same through the piecewise reader, with items cut into pieces of at least `piece` bytes.
#[doc(hidden)]
pub fn yaml_objects_pieces(bytes: &[u8], piece: usize) -> Result<Vec<SlimObject>, String> {
    let mut objs = Vec::new();
    read_yaml_in(bytes, &mut objs, piece)?;
    Ok(objs)
}

/// [`read_yaml`] with items cut into pieces of at least `piece` bytes.
fn read_yaml_in<R: BufRead>(r: R, b: &mut impl Sink, piece: usize) -> Result<(), String> {
    let (done_tx, done_rx) = std::sync::mpsc::channel::<(usize, Parsed)>();
    let mut fold = Fold::default();
    let mut sent = 0;
    let mut failed = None;
    // The calling thread cuts the text and folds what the parsers have finished in between.
    let split = split_yaml(r, piece, &mut |p| {
        parse_on_pool(Job {
            seq: sent,
            piece: p,
            done: done_tx.clone(),
        });
        sent += 1;
        while let Ok((seq, parsed)) = done_rx.try_recv() {
            if let Err(e) = fold.add(seq, parsed, b) {
                failed = Some(e);
                return false;
            }
        }
        true
    });
    if let Some(e) = failed {
        return Err(e);
    }
    drop(done_tx);
    while fold.next < sent {
        let Ok((seq, parsed)) = done_rx.recv() else {
            return Err("a YAML parser thread failed".into());
        };
        fold.add(seq, parsed, b)?;
    }
    split
}

/// A piece for the parser threads, and where its objects go.
struct Job {
    seq: usize,
    piece: YamlPiece,
    done: std::sync::mpsc::Sender<(usize, Parsed)>,
}

/// Parses on one of two threads kept for the life of the process (parsers keep thread-local
/// state, and threads started per dump would leave its destructors racing their exit), or on
/// the calling thread if they cannot be started.
fn parse_on_pool(job: Job) {
    static POOL: std::sync::OnceLock<Option<std::sync::Mutex<std::sync::mpsc::SyncSender<Job>>>> =
        std::sync::OnceLock::new();
    let pool = POOL.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Job>(8);
        let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
        let mut started = 0;
        for i in 0..2 {
            let rx = std::sync::Arc::clone(&rx);
            let spawned = std::thread::Builder::new()
                .name(format!("yaml-parser-{i}"))
                .spawn(move || loop {
                    let next = match rx.lock() {
                        Ok(q) => q.recv(),
                        Err(_) => return,
                    };
                    let Ok(job) = next else { return };
                    // The reader may have stopped at an error; its results are not needed.
                    let _ = job.done.send((job.seq, job.piece.parse()));
                });
            started += usize::from(spawned.is_ok());
        }
        (started > 0).then(|| std::sync::Mutex::new(tx))
    });
    let job = match pool.as_ref().map(|tx| tx.lock()) {
        Some(Ok(tx)) => match tx.send(job) {
            Ok(()) => return,
            Err(e) => e.0,
        },
        _ => job,
    };
    let _ = job.done.send((job.seq, job.piece.parse()));
}

/// Objects parsed from one piece, each with the line its item starts on.
type Parsed = Result<Vec<(SlimObject, usize)>, String>;

/// Pushes the pieces' objects in the order of the text, holding those that finish early.
#[derive(Default)]
struct Fold {
    early: BTreeMap<usize, Parsed>,
    next: usize,
}

impl Fold {
    fn add(&mut self, seq: usize, parsed: Parsed, b: &mut impl Sink) -> Result<(), String> {
        self.early.insert(seq, parsed);
        while let Some(parsed) = self.early.remove(&self.next) {
            self.next += 1;
            for (obj, line) in parsed? {
                b.take(obj, None)
                    .map_err(|e| format!("{e} at line {line}"))?;
            }
        }
        Ok(())
    }
}

fn yaml_options() -> serde_saphyr::Options {
    // A dump is as large as the cluster; alias expansion stays bounded by the defaults.
    let mut budget = serde_saphyr::Budget::default();
    budget.max_reader_input_bytes = None;
    budget.max_events = usize::MAX;
    budget.max_nodes = usize::MAX;
    budget.max_total_scalar_bytes = usize::MAX;
    budget.max_documents = usize::MAX;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options
}

/// A part of a YAML stream that parses on its own: a document without the items cut out of it,
/// or consecutive items of a document's top-level `items` (as `items:` and the items' lines).
struct YamlPiece {
    text: Vec<u8>,
    /// The line of the text (in the whole stream) that the piece's first line stands for.
    first_line: usize,
    /// The lines the cut-out items start on; empty for a document.
    starts: Vec<usize>,
}

impl YamlPiece {
    fn parse(self) -> Parsed {
        // An items piece begins with the `items:` line it was given.
        let offset = self.first_line.saturating_sub(1);
        let text = String::from_utf8(self.text).map_err(|e| {
            let upto = e.utf8_error().valid_up_to();
            let line = e.as_bytes()[..upto].iter().filter(|&&c| c == b'\n').count();
            format!("line {}: the YAML is not valid UTF-8", offset + line + 1)
        })?;
        let objs = serde_saphyr::from_multiple_with_options::<Doc>(&text, yaml_options())
            .map(objects_of)
            .map_err(|e| {
                // One line, as the other readers' errors: the message and its place in the file.
                let mut o = serde_saphyr::RenderOptions::default();
                o.line_offset = offset as u64;
                o.snippets = serde_saphyr::SnippetMode::Off;
                crate::k8s::workload::plain_yaml_message(&e.render_with_options(o))
            })?;
        let doc_line = self.first_line.max(1);
        Ok(objs
            .into_iter()
            .enumerate()
            .map(|(i, o)| (o, self.starts.get(i).copied().unwrap_or(doc_line)))
            .collect())
    }
}

/// Text handed to a parser thread at once: big enough to amortize the hand-over, small enough
/// that the two threads stay busy and little is held.
const YAML_PIECE: usize = 32 << 10;

/// Where the splitter is inside a document.
#[derive(Clone, Copy, PartialEq)]
enum YamlState {
    Top,
    /// After `items:` at column 0, before its first entry.
    Head,
    /// Inside the top-level `items`, whose entries (`- `) stand at this column.
    Items(usize),
}

/// Cuts a YAML stream into pieces at documents (as `manifest::Cutter` does) and between the
/// entries of a document's top-level block sequence `items`. An entry ends where a line at the
/// entries' column starts the next one: nothing inside an entry (block scalars, multi-line
/// flow or quoted scalars) may stand at that column. Blank and comment lines stay with the
/// entry before them. A document with a directive or an anchor before its items, and items from
/// the first anchor on, are not cut (an alias may refer to it); they parse as one piece.
struct YamlSplitter {
    cutter: crate::k8s::manifest::Cutter,
    /// Items are cut once this many bytes of them are held.
    piece: usize,
    line: usize,
    state: YamlState,
    splittable: bool,
    doc: Vec<u8>,
    doc_line: usize,
    items: Vec<u8>,
    items_line: usize,
    starts: Vec<usize>,
    /// Whether the current item has a flow collection or quoted scalar still open: its next
    /// lines may stand at any column (serde-saphyr accepts that), so they continue the item.
    flow: Flow,
}

/// Open flow brackets and quotes of the lines read so far, outside comments.
#[derive(Default)]
struct Flow {
    depth: usize,
    quote: Option<u8>,
}

impl Flow {
    fn open(&self) -> bool {
        self.depth > 0 || self.quote.is_some()
    }

    fn track(&mut self, line: &[u8]) {
        let mut prev = b' ';
        let mut i = 0;
        while let Some(&c) = line.get(i) {
            match self.quote {
                Some(b'"') if c == b'\\' => i += 1,
                Some(b'\'') if c == b'\'' && line.get(i + 1) == Some(&b'\'') => i += 1,
                Some(q) if c == q => self.quote = None,
                Some(_) => {}
                None => {
                    let starts_token = prev.is_ascii_whitespace() || b"{[,:-".contains(&prev);
                    match c {
                        b'"' | b'\'' if starts_token => self.quote = Some(c),
                        b'#' if prev.is_ascii_whitespace() => return,
                        b'{' | b'[' => self.depth += 1,
                        b'}' | b']' => self.depth = self.depth.saturating_sub(1),
                        _ => {}
                    }
                }
            }
            prev = c;
            i += 1;
        }
    }
}

fn split_yaml<R: BufRead>(
    mut r: R,
    piece: usize,
    sink: &mut impl FnMut(YamlPiece) -> bool,
) -> Result<(), String> {
    let mut sp = YamlSplitter {
        cutter: Default::default(),
        piece,
        line: 0,
        state: YamlState::Top,
        splittable: true,
        doc: Vec::new(),
        doc_line: 1,
        items: Vec::new(),
        items_line: 0,
        starts: Vec::new(),
        flow: Flow::default(),
    };
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = r
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("line {}: {e}", sp.line + 1))?;
        if n == 0 {
            break;
        }
        if !sp.feed(&line, sink) {
            return Ok(());
        }
    }
    if sp.flush_items(sink) {
        sp.flush_doc(sink);
    }
    Ok(())
}

/// Spaces before the line's content, and whether it is only blank or a comment.
fn indent_of(line: &[u8]) -> (usize, bool) {
    let k = line.iter().take_while(|&&c| c == b' ').count();
    let blank = matches!(line.get(k), None | Some(b'\n' | b'\r' | b'#'));
    (k, blank)
}

/// `- ...` or a lone `-`: a block sequence entry.
fn is_entry(rest: &[u8]) -> bool {
    rest.first() == Some(&b'-') && matches!(rest.get(1), None | Some(b' ' | b'\t' | b'\n' | b'\r'))
}

impl YamlSplitter {
    /// Takes one line (with its newline); `false` when the sink refused a piece.
    fn feed(&mut self, line: &[u8], sink: &mut impl FnMut(YamlPiece) -> bool) -> bool {
        self.line += 1;
        // Only ASCII markers are looked for; a line that is not UTF-8 is no marker, and its
        // piece reports it.
        if self
            .cutter
            .cut_before(std::str::from_utf8(line).unwrap_or(""))
        {
            if !(self.flush_items(sink) && self.flush_doc(sink)) {
                return false;
            }
            self.state = YamlState::Top;
            self.splittable = true;
        }
        let (k, blank) = indent_of(line);
        if let YamlState::Items(col) = self.state {
            if self.flow.open() || blank || k > col || line.get(k) == Some(&b'\t') {
                self.splittable &= !line.contains(&b'&');
                self.flow.track(line);
                self.items.extend_from_slice(line);
                return true;
            }
            if k == col && is_entry(&line[k..]) {
                if self.splittable && self.items.len() >= self.piece && !self.flush_items(sink) {
                    return false;
                }
                self.add_item(line);
                return true;
            }
            if !self.flush_items(sink) {
                return false;
            }
            self.state = YamlState::Top;
        }
        if self.state == YamlState::Head && !blank {
            if self.splittable && is_entry(&line[k..]) {
                self.state = YamlState::Items(k);
                self.add_item(line);
                return true;
            }
            self.state = YamlState::Top;
        }
        if self.state == YamlState::Top && self.splittable {
            if let Some(rest) = line.strip_prefix(b"items:") {
                let (_, bare) = indent_of(rest.trim_ascii_start());
                if bare {
                    self.state = YamlState::Head;
                }
            }
            self.splittable &= !line.contains(&b'&') && line.first() != Some(&b'%');
        }
        if self.doc.is_empty() {
            self.doc_line = self.line;
        }
        self.doc.extend_from_slice(line);
        true
    }

    fn add_item(&mut self, line: &[u8]) {
        if self.items.is_empty() {
            self.items.extend_from_slice(b"items:\n");
            // The `items:` line stands for the line before the first item.
            self.items_line = self.line - 1;
        }
        self.starts.push(self.line);
        self.splittable &= !line.contains(&b'&');
        self.flow = Flow::default();
        self.flow.track(line);
        self.items.extend_from_slice(line);
    }

    fn flush_items(&mut self, sink: &mut impl FnMut(YamlPiece) -> bool) -> bool {
        if self.items.is_empty() {
            return true;
        }
        sink(YamlPiece {
            text: std::mem::take(&mut self.items),
            first_line: self.items_line,
            starts: std::mem::take(&mut self.starts),
        })
    }

    fn flush_doc(&mut self, sink: &mut impl FnMut(YamlPiece) -> bool) -> bool {
        if self.doc.is_empty() {
            return true;
        }
        sink(YamlPiece {
            text: std::mem::take(&mut self.doc),
            first_line: self.doc_line,
            starts: Vec::new(),
        })
    }
}

/// A JSON dump, split at the top level: each item of a document's `items` is cut out by
/// matching brackets and strings (the structure is checked, nothing else is built) and
/// deserialized from its own bytes, which skips unknown fields far faster than a parse from a
/// reader; the rest of the document (`kind`, `metadata`) is read on its own. Only one item is
/// held at a time.
fn read_json<R: BufRead + Send>(mut r: R, b: &mut Builder) -> Result<(), String> {
    // Cutting items out and deserializing them take about the same time: one thread each, with
    // a bounded queue between them.
    let (tx, rx) = std::sync::mpsc::sync_channel::<Piece>(256);
    std::thread::scope(|scope| {
        let splitter = scope.spawn(move || -> Result<(), String> {
            let mut sp = Splitter::default();
            loop {
                let chunk = r.fill_buf().map_err(|e| e.to_string())?;
                if chunk.is_empty() {
                    break;
                }
                let n = chunk.len();
                // A closed queue means the reader failed; its error is the one reported.
                if sp.feed(chunk, &mut |p| tx.send(p).is_ok())? {
                    return Ok(());
                }
                r.consume(n);
            }
            if sp.depth != 0 || sp.in_str {
                return Err(format!("line {}: the JSON ends inside a value", sp.line));
            }
            Ok(())
        });
        let read = rx.into_iter().try_for_each(|p| p.read(b));
        let split = splitter
            .join()
            .unwrap_or_else(|_| Err("the JSON splitter failed".into()));
        read.and(split)
    })
}

/// An object that says its kind, as [`Fields`] reads it, from JSON.
fn object_from_slice(bytes: &[u8]) -> Result<SlimObject, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let obj = ObjectSeed { says_kind: true }.deserialize(&mut de)?;
    de.end()?;
    Ok(obj)
}

/// What the splitter cuts out: an item of `items`, or a document without its items.
enum Piece {
    Item { bytes: Vec<u8>, line: usize },
    Doc { bytes: Vec<u8>, had_items: bool },
}

impl Piece {
    fn read(self, b: &mut Builder) -> Result<(), String> {
        match self {
            Piece::Item { bytes, line } => {
                let obj = object_from_slice(&bytes).map_err(|e| {
                    format!(
                        "{} at line {}",
                        strip_position(&e),
                        line + e.line().saturating_sub(1)
                    )
                })?;
                b.push(obj, None).map_err(|e| format!("{e} at line {line}"))
            }
            Piece::Doc { bytes, had_items } => {
                let obj = object_from_slice(&bytes)
                    .map_err(|e| format!("{} at line {}", strip_position(&e), e.line()))?;
                if had_items {
                    return Ok(());
                }
                b.push(obj, None)
            }
        }
    }
}

/// Bytes the splitter acts on outside strings; the rest (whitespace, scalars, `:`) is skipped.
/// A scalar is noticed by its first byte where only an object may stand.
static STRUCTURAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = !matches!(b, b' ' | b'\t' | b'\r' | b'\n' | b':');
        c += 1;
    }
    t
};

#[derive(Default)]
struct Splitter {
    depth: usize,
    in_str: bool,
    esc: bool,
    line: usize,
    /// The document outside its items (`{"kind": "List", "items": [], ...}`).
    doc: Vec<u8>,
    /// The item being cut out, and the line it starts on.
    item: Vec<u8>,
    item_line: usize,
    in_item: bool,
    /// Inside the top-level `items` array.
    in_items: bool,
    had_items: bool,
    /// The last string at depth 1, and whether it was `items` (a key, once `[` follows).
    key: Vec<u8>,
    key_is_items: bool,
}

impl Splitter {
    /// Hands each piece to `sink`; `Ok(true)` when the sink refused one (stop reading).
    fn feed(&mut self, chunk: &[u8], sink: &mut impl FnMut(Piece) -> bool) -> Result<bool, String> {
        if self.line == 0 {
            self.line = 1;
        }
        // Where the bytes being captured (into `doc` or `item`) start in this chunk, and up to
        // where its lines are counted (lazily: only item starts and errors need them).
        let mut cap = 0;
        let mut counted = 0;
        let mut i = 0;
        while i < chunk.len() {
            if self.in_str {
                if self.esc {
                    self.esc = false;
                    i += 1;
                    continue;
                }
                match memchr::memchr2(b'"', b'\\', &chunk[i..]) {
                    None => {
                        if self.depth == 1 {
                            self.key.extend_from_slice(&chunk[i..]);
                        }
                        i = chunk.len();
                    }
                    Some(k) => {
                        if self.depth == 1 {
                            self.key.extend_from_slice(&chunk[i..i + k]);
                        }
                        i += k;
                        if chunk[i] == b'\\' {
                            self.esc = true;
                        } else {
                            self.in_str = false;
                            if self.depth == 1 {
                                self.key_is_items = self.key == b"items";
                            }
                        }
                        i += 1;
                    }
                }
                continue;
            }
            // Whitespace, scalars and colons need no look: skip to the next byte that does.
            while i < chunk.len() && !STRUCTURAL[chunk[i] as usize] {
                i += 1;
            }
            let Some(&c) = chunk.get(i) else {
                break;
            };
            match c {
                b'"' => {
                    self.in_str = true;
                    if self.depth == 1 {
                        self.key.clear();
                    }
                }
                b'{' | b'[' => {
                    self.depth += 1;
                    if self.depth == 1 {
                        if c != b'{' {
                            self.line += memchr::memchr_iter(b'\n', &chunk[counted..i]).count();
                            return Err(format!("line {}: expected an object", self.line));
                        }
                        self.doc.clear();
                        self.had_items = false;
                        cap = i;
                    } else if self.depth == 2 && c == b'[' && self.key_is_items {
                        // Keep `[` in the document; its items are cut out one by one.
                        self.doc.extend_from_slice(&chunk[cap..=i]);
                        self.in_items = true;
                        self.had_items = true;
                    } else if self.depth == 3 && self.in_items {
                        if c != b'{' {
                            self.line += memchr::memchr_iter(b'\n', &chunk[counted..i]).count();
                            return Err(format!(
                                "line {}: an item of `items` is not an object",
                                self.line
                            ));
                        }
                        self.in_item = true;
                        self.item.clear();
                        self.line += memchr::memchr_iter(b'\n', &chunk[counted..i]).count();
                        counted = i;
                        self.item_line = self.line;
                        cap = i;
                    }
                }
                b'}' | b']' => {
                    if self.depth == 0 {
                        self.line += memchr::memchr_iter(b'\n', &chunk[counted..i]).count();
                        return Err(format!("line {}: unexpected `{}`", self.line, c as char));
                    }
                    self.depth -= 1;
                    if self.depth == 2 && self.in_item {
                        self.item.extend_from_slice(&chunk[cap..=i]);
                        self.in_item = false;
                        let bytes = std::mem::take(&mut self.item);
                        if !sink(Piece::Item {
                            bytes,
                            line: self.item_line,
                        }) {
                            return Ok(true);
                        }
                    } else if self.depth == 1 && self.in_items {
                        self.in_items = false;
                        cap = i;
                    } else if self.depth == 0 {
                        self.doc.extend_from_slice(&chunk[cap..=i]);
                        let bytes = std::mem::take(&mut self.doc);
                        if !sink(Piece::Doc {
                            bytes,
                            had_items: self.had_items,
                        }) {
                            return Ok(true);
                        }
                    }
                }
                b',' => {
                    if self.depth == 1 {
                        self.key_is_items = false;
                    }
                }
                _ => {
                    // A scalar where only objects may stand.
                    if self.depth == 0 || self.depth == 2 && self.in_items {
                        self.line += memchr::memchr_iter(b'\n', &chunk[counted..i]).count();
                        return Err(format!(
                            "line {}: expected an object{}",
                            self.line,
                            if self.depth == 2 {
                                " as an item of `items`"
                            } else {
                                ""
                            }
                        ));
                    }
                }
            }
            i += 1;
        }
        self.line += memchr::memchr_iter(b'\n', &chunk[counted..]).count();
        // Carry what is being captured over to the next chunk.
        if self.in_item {
            self.item.extend_from_slice(&chunk[cap..]);
        } else if self.depth >= 1 && !self.in_items {
            self.doc.extend_from_slice(&chunk[cap..]);
        }
        Ok(false)
    }
}

/// A serde_json message without its own `at line L column C` (relative to an item), a wrong
/// type said as the manifests say it.
fn strip_position(e: &serde_json::Error) -> String {
    crate::k8s::workload::strip_position(&e.to_string())
}

/// Reads one page of a typed list (`PodList`, `NodeList`, ...) into `builder`; returns the
/// list's `metadata.continue` token.
pub fn read_page(
    bytes: &[u8],
    kind: &str,
    builder: &mut Builder,
) -> Result<Option<String>, String> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let token = PageSeed { kind, builder }
        .deserialize(&mut de)
        .map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(token)
}

struct PageSeed<'a, 'b> {
    kind: &'a str,
    builder: &'b mut Builder,
}

impl<'de> DeserializeSeed<'de> for PageSeed<'_, '_> {
    type Value = Option<String>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        d.deserialize_map(self)
    }
}

#[derive(Deserialize, Default)]
struct ListMeta {
    #[serde(default, rename = "continue")]
    cont: Option<String>,
}

impl<'de> Visitor<'de> for PageSeed<'_, '_> {
    type Value = Option<String>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a {}List", self.kind)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
        let mut token = None;
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Items => map.next_value_seed(Items {
                    kind: Some(self.kind),
                    builder: &mut *self.builder,
                })?,
                Key::Metadata => {
                    token = map
                        .next_value::<Option<ListMeta>>()?
                        .and_then(|m| m.cont)
                        .filter(|c| !c.is_empty())
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(token)
    }
}

#[cfg(test)]
mod tests;
