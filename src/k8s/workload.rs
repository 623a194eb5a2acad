//! The one place that knows where each kind keeps its pod template. Rules, the server and the
//! CLI ask this module for a [`PodTemplate`] and never navigate workload objects themselves.

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Toleration;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde::Deserialize;
use serde_json::Value;

use crate::k8s::fieldpath::{FieldPath, JsonSegment};
use crate::k8s::model::{ObjectMeta, PodSpec};

mod direct;

pub use direct::{pod_metadata, pod_tolerations, Echo, Noted, Part};

/// The kinds whose pod spec the rules look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Pod,
    PodTemplate,
    ReplicationController,
    Deployment,
    StatefulSet,
    DaemonSet,
    ReplicaSet,
    Job,
    CronJob,
    /// OpenKruise's CloneSet (`apps.kruise.io/v1alpha1`).
    CloneSet,
    /// OpenKruise's Advanced StatefulSet (`apps.kruise.io/v1beta1`).
    KruiseStatefulSet,
}

impl Kind {
    pub const ALL: [Kind; 11] = [
        Kind::Pod,
        Kind::PodTemplate,
        Kind::ReplicationController,
        Kind::Deployment,
        Kind::StatefulSet,
        Kind::DaemonSet,
        Kind::ReplicaSet,
        Kind::Job,
        Kind::CronJob,
        Kind::CloneSet,
        Kind::KruiseStatefulSet,
    ];

    pub fn group(self) -> &'static str {
        match self {
            Kind::Pod | Kind::PodTemplate | Kind::ReplicationController => "",
            Kind::Deployment | Kind::StatefulSet | Kind::DaemonSet | Kind::ReplicaSet => "apps",
            Kind::Job | Kind::CronJob => "batch",
            Kind::CloneSet | Kind::KruiseStatefulSet => KRUISE_GROUP,
        }
    }

    /// Whether spread defaults may be added at CREATE only. A Pod's spread constraints and a
    /// Job's template are immutable. OpenKruise's own webhook refuses an `InPlaceOnly` update
    /// of a CloneSet or Advanced StatefulSet that changes more than images, and with
    /// `InPlaceIfPossible` added constraints would turn an in-place image update into a
    /// recreation of every pod.
    pub fn defaults_at_create_only(self) -> bool {
        matches!(
            self,
            Kind::Pod | Kind::Job | Kind::CloneSet | Kind::KruiseStatefulSet
        )
    }

    /// The name in messages: the kind, with its group where another kind has the same name
    /// (`StatefulSet.apps.kruise.io`, as kubectl writes it).
    pub fn display(self) -> &'static str {
        match self {
            Kind::KruiseStatefulSet => "StatefulSet.apps.kruise.io",
            k => k.name(),
        }
    }

    /// The version read from and listed at the API server (Kruise serves its workloads at
    /// these; every built-in kind at v1).
    pub fn version(self) -> &'static str {
        match self {
            Kind::CloneSet => "v1alpha1",
            Kind::KruiseStatefulSet => "v1beta1",
            _ => "v1",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Pod => "Pod",
            Kind::PodTemplate => "PodTemplate",
            Kind::ReplicationController => "ReplicationController",
            Kind::Deployment => "Deployment",
            Kind::StatefulSet => "StatefulSet",
            Kind::DaemonSet => "DaemonSet",
            Kind::ReplicaSet => "ReplicaSet",
            Kind::Job => "Job",
            Kind::CronJob => "CronJob",
            Kind::CloneSet => "CloneSet",
            Kind::KruiseStatefulSet => "StatefulSet",
        }
    }

    /// The plural resource name, as in an AdmissionRequest's `resource.resource`.
    pub fn resource(self) -> &'static str {
        match self {
            Kind::Pod => "pods",
            Kind::PodTemplate => "podtemplates",
            Kind::ReplicationController => "replicationcontrollers",
            Kind::Deployment => "deployments",
            Kind::StatefulSet => "statefulsets",
            Kind::DaemonSet => "daemonsets",
            Kind::ReplicaSet => "replicasets",
            Kind::Job => "jobs",
            Kind::CronJob => "cronjobs",
            Kind::CloneSet => "clonesets",
            Kind::KruiseStatefulSet => "statefulsets",
        }
    }

    /// Looks a kind up by API group and kind name (`apps`, `Deployment`).
    pub fn from_group_kind(group: &str, kind: &str) -> Option<Kind> {
        Kind::ALL
            .into_iter()
            .find(|k| k.group() == group && k.name() == kind)
    }

    /// Looks a kind up by a manifest's `apiVersion` and `kind`.
    pub fn from_api_version(api_version: &str, kind: &str) -> Option<Kind> {
        Kind::from_group_kind(group_of(api_version), kind)
    }

    /// Where the pod spec lives in an object of this kind.
    pub fn pod_spec_path(self) -> FieldPath {
        match self {
            Kind::Pod => FieldPath::fields(&["spec"]),
            Kind::PodTemplate => FieldPath::fields(&["template", "spec"]),
            Kind::CronJob => {
                FieldPath::fields(&["spec", "jobTemplate", "spec", "template", "spec"])
            }
            _ => FieldPath::fields(&["spec", "template", "spec"]),
        }
    }

    /// Where the pod template (its `metadata` and `spec`) lives; empty for a Pod.
    pub fn template_path(self) -> FieldPath {
        match self {
            Kind::Pod => FieldPath::root(),
            Kind::PodTemplate => FieldPath::fields(&["template"]),
            Kind::CronJob => FieldPath::fields(&["spec", "jobTemplate", "spec", "template"]),
            _ => FieldPath::fields(&["spec", "template"]),
        }
    }
}

/// For one of Kubernetes' own workload kinds under an `apiVersion` kube-apiserver does not serve
/// (`extensions/v1beta1` Deployments, `batch/v1beta1` CronJobs, a `v1` Deployment), why
/// `kubectl apply` fails, and the version to write: such an object is not checked, and must not
/// pass in silence. OpenKruise's kinds are taken in every version.
pub fn unserved_version(api_version: &str, kind: &str) -> Option<String> {
    let group = group_of(api_version);
    if !matches!(group, "" | "apps" | "batch" | "extensions") {
        return None;
    }
    let served = Kind::ALL
        .into_iter()
        .find(|k| k.name() == kind && k.group() != KRUISE_GROUP)?;
    let want = match served.group() {
        "" => served.version().to_string(),
        g => format!("{g}/{}", served.version()),
    };
    if api_version == want {
        return None;
    }
    // Only where the kind was served once.
    let removed = match (api_version, kind) {
        ("extensions/v1beta1", "Deployment" | "DaemonSet" | "ReplicaSet")
        | ("apps/v1beta1", "Deployment" | "StatefulSet")
        | ("apps/v1beta2", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet") => {
            " (removed in Kubernetes v1.16)"
        }
        ("batch/v1beta1", "CronJob") => " (removed in Kubernetes v1.25)",
        ("batch/v2alpha1", "CronJob") => " (removed in Kubernetes v1.21)",
        _ => "",
    };
    Some(format!(
        "apiVersion: Unsupported value: {api_version:?}: no matches for kind {kind:?} in version {api_version:?}{removed}, so kubectl apply fails: write apiVersion: {want}"
    ))
}

/// The kinds kube-apiserver v1.36 serves in the versions of the API groups whose names have no
/// dot. No CustomResourceDefinition can add a kind to them (a CRD's group must contain a dot),
/// so any other kind there is a typo that `kubectl apply` refuses.
const DOTLESS_SERVED: &[(&str, &[&str])] = &[
    (
        "v1",
        &[
            "Binding",
            "ComponentStatus",
            "ConfigMap",
            "Endpoints",
            "Event",
            "LimitRange",
            "Namespace",
            "Node",
            "PersistentVolume",
            "PersistentVolumeClaim",
            "Pod",
            "PodTemplate",
            "ReplicationController",
            "ResourceQuota",
            "Secret",
            "Service",
            "ServiceAccount",
        ],
    ),
    (
        "apps/v1",
        &[
            "ControllerRevision",
            "DaemonSet",
            "Deployment",
            "ReplicaSet",
            "StatefulSet",
        ],
    ),
    // v2 first: a HorizontalPodAutoscaler is written for it today (`metrics`).
    ("autoscaling/v2", &["HorizontalPodAutoscaler"]),
    ("autoscaling/v1", &["HorizontalPodAutoscaler", "Scale"]),
    ("batch/v1", &["CronJob", "Job"]),
    ("policy/v1", &["Eviction", "PodDisruptionBudget"]),
];

/// Kubernetes' own kinds in groups with a dot, at their GA version (k8s-openapi's v1_36): where
/// to send a kind written under a dotless group (`v1` `Ingress`, `apps/v1` `Role`).
const DOTTED_BUILT_IN: &[(&str, &[&str])] = &[
    (
        "admissionregistration.k8s.io/v1",
        &[
            "MutatingAdmissionPolicy",
            "MutatingAdmissionPolicyBinding",
            "MutatingWebhookConfiguration",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
            "ValidatingWebhookConfiguration",
        ],
    ),
    ("certificates.k8s.io/v1", &["CertificateSigningRequest"]),
    ("coordination.k8s.io/v1", &["Lease"]),
    ("discovery.k8s.io/v1", &["EndpointSlice"]),
    (
        "flowcontrol.apiserver.k8s.io/v1",
        &["FlowSchema", "PriorityLevelConfiguration"],
    ),
    (
        "networking.k8s.io/v1",
        &[
            "IPAddress",
            "Ingress",
            "IngressClass",
            "NetworkPolicy",
            "ServiceCIDR",
        ],
    ),
    ("node.k8s.io/v1", &["RuntimeClass"]),
    (
        "rbac.authorization.k8s.io/v1",
        &["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"],
    ),
    (
        "resource.k8s.io/v1",
        &[
            "DeviceClass",
            "ResourceClaim",
            "ResourceClaimTemplate",
            "ResourceSlice",
        ],
    ),
    ("scheduling.k8s.io/v1", &["PriorityClass"]),
    (
        "storage.k8s.io/v1",
        &[
            "CSIDriver",
            "CSINode",
            "CSIStorageCapacity",
            "StorageClass",
            "VolumeAttachment",
            "VolumeAttributesClass",
        ],
    ),
];

/// What kubectl refuses as no kind the API server serves under a dotless group's version: the
/// field to mend (`kind` for a typo, `apiVersion` for another group's kind) and why.
pub struct UnknownKind {
    pub field: &'static str,
    pub message: String,
}

/// For a kind that a served version of a dotless API group does not have (`apps/v1`
/// `Deploymnet`, `v1` `pod`), why `kubectl apply` fails and what to write: such an object was
/// skipped as some other kind, and a typo hid a workload from every rule. In the core group only
/// a near miss of one of its kinds, or a kind of another group. Unserved versions of the dotless
/// groups are [`unserved_version`]'s, for the kinds this tool checks.
pub fn unknown_kind(api_version: &str, kind: &str) -> Option<UnknownKind> {
    let (_, kinds) = DOTLESS_SERVED.iter().find(|(v, _)| *v == api_version)?;
    if kinds.contains(&kind) {
        return None;
    }
    let lower = kind.to_ascii_lowercase();
    // The nearest of the version's kinds: the same but for case, else one edit away (two for
    // a long name), so that `Pods` is `Pod` and `Role` is not `Node`.
    let limit = if kind.len() >= 8 { 2 } else { 1 };
    let near = kinds
        .iter()
        // No fewer edits than the lengths differ by: a long kind costs no distance table.
        .filter(|k| k.len().abs_diff(kind.len()) <= limit)
        .map(|k| (strsim::osa_distance(&k.to_ascii_lowercase(), &lower), k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| *k);
    let elsewhere = DOTLESS_SERVED
        .iter()
        .chain(DOTTED_BUILT_IN)
        .find_map(|(v, ks)| {
            ks.iter()
                .find(|k| k.eq_ignore_ascii_case(kind))
                .map(|k| (*v, *k))
        });
    let why = format!(
        "no matches for kind {kind:?} in version {api_version:?}, so kubectl apply fails (no CustomResourceDefinition can add a kind to a group without a dot)"
    );
    if let Some(k) = near {
        return Some(UnknownKind {
            field: "kind",
            message: format!("kind: Unsupported value: {kind:?}: {why}: did you mean {k:?}?"),
        });
    }
    if let Some((v, k)) = elsewhere {
        let write = if k == kind {
            format!("write apiVersion: {v}")
        } else {
            format!("write apiVersion: {v} and kind: {k}")
        };
        return Some(UnknownKind {
            field: "apiVersion",
            message: format!("apiVersion: Unsupported value: {api_version:?}: {why}: {write}"),
        });
    }
    // Files that are no API objects say `apiVersion: v1` too (a kubeconfig's `Config`, an old
    // scheduler `Policy`): there only a near miss or another group's kind is taken for a mistake.
    (api_version != "v1").then(|| UnknownKind {
        field: "kind",
        message: format!(
            "kind: Unsupported value: {kind:?}: {why}: {api_version} serves {}",
            kinds.join(", ")
        ),
    })
}

/// OpenKruise's API group.
pub const KRUISE_GROUP: &str = "apps.kruise.io";

/// The API group of an `apiVersion` (`""` for the core group).
pub fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// Where a workload keeps its pod template: every [`Kind`] but Pod.
pub fn workload_template_path(api_version: &str, kind: &str) -> Option<FieldPath> {
    match Kind::from_api_version(api_version, kind) {
        Some(Kind::Pod) | None => None,
        Some(k) => Some(k.template_path()),
    }
}

/// The pod template of any workload [`workload_template_path`] knows, as raw JSON.
pub fn workload_template(value: &Value) -> Option<&Value> {
    let path = workload_template_path(value["apiVersion"].as_str()?, value["kind"].as_str()?)?;
    let mut at = value;
    for seg in path.json_segments() {
        at = match seg {
            JsonSegment::Key(k) => at.get(k)?,
            JsonSegment::Index(i) => at.get(i)?,
        };
    }
    Some(at)
}

/// The selector by which any workload [`workload_template_path`] knows owns its pods (a
/// ReplicationController's map as a selector); `None` for a Pod, a PodTemplate and a workload
/// that names none.
pub fn workload_selector(value: &Value) -> Option<LabelSelector> {
    let kind = Kind::from_api_version(value["apiVersion"].as_str()?, value["kind"].as_str()?)?;
    let spec = match kind {
        Kind::Pod | Kind::PodTemplate => return None,
        Kind::CronJob => &value["spec"]["jobTemplate"]["spec"],
        _ => &value["spec"],
    };
    selector_from(spec.get("selector").cloned())
}

/// The pod spec of any workload [`workload_template_path`] knows.
pub fn workload_pod_spec(value: &Value) -> Option<PodSpec> {
    let (api, kind) = (value["apiVersion"].as_str()?, value["kind"].as_str()?);
    match Kind::from_api_version(api, kind) {
        Some(Kind::Pod) => None,
        Some(k) => parse_value(k, value).ok().map(|t| t.spec),
        None => serde_json::from_value(workload_template(value)?.get("spec")?.clone()).ok(),
    }
}

/// The label that puts a workload in a Kueue LocalQueue.
pub const KUEUE_QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";

/// What holds a pod (template) back from the scheduler, see [`PodTemplate::held`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Held {
    /// `spec.schedulingGates` (KEP-3838).
    Gated,
    /// A Job's `spec.suspend` (a CronJob's Jobs').
    Suspended,
    /// `kueue.x-k8s.io/queue-name` on a workload whose pods Kueue gates, or on a CronJob's
    /// Jobs, which Kueue suspends.
    Queued,
}

impl Held {
    /// Said after "no node can run ...": that taints were left out, and why.
    pub fn clause(self) -> &'static str {
        match self {
            Held::Gated => {
                ", even tolerating every taint (what removes its scheduling gates may add tolerations)"
            }
            Held::Suspended => ", even tolerating every taint (what resumes it may add tolerations)",
            Held::Queued => {
                ", even tolerating every taint (Kueue, kueue.x-k8s.io/queue-name, may add its flavor's tolerations as it admits it)"
            }
        }
    }
}

/// A pod, or the pod template of a workload, with what the rules need to know about its owner.
#[derive(Clone, Debug, PartialEq)]
pub struct PodTemplate {
    pub kind: Kind,
    /// The object's own metadata (for a Pod, the pod's).
    pub meta: ObjectMeta,
    /// The pod template's metadata; `None` for a Pod, whose template is itself (see
    /// [`PodTemplate::template_meta`]).
    template_meta: Option<ObjectMeta>,
    pub spec: PodSpec,
    /// The workload's own `spec.selector` (a map for ReplicationControllers is converted).
    pub selector: Option<LabelSelector>,
    /// A Job's `spec.manualSelector` (a CronJob's Jobs'): kube-apiserver then generates neither
    /// the selector nor the labels that go with it.
    pub manual_selector: bool,
    /// A workload's `spec.suspend` (a Job's; a CronJob's Jobs'): a queue manager resumes it.
    pub suspended: bool,
    /// A CronJob's `spec.jobTemplate.metadata.labels` name a Kueue queue: its Jobs are
    /// suspended as they are created, until Kueue admits them.
    pub queued_jobs: bool,
}

impl PodTemplate {
    /// An object of `kind` with nothing read yet (what [`read_direct`] reads into).
    pub fn empty(kind: Kind) -> PodTemplate {
        PodTemplate {
            kind,
            meta: ObjectMeta::default(),
            template_meta: None,
            spec: PodSpec::default(),
            selector: None,
            manual_selector: false,
            suspended: false,
            queued_jobs: false,
        }
    }

    /// The pod template's metadata (for a Pod, the pod's).
    pub fn template_meta(&self) -> &ObjectMeta {
        self.template_meta.as_ref().unwrap_or(&self.meta)
    }

    pub fn spec_path(&self) -> FieldPath {
        self.kind.pod_spec_path()
    }

    /// Who still completes this object's scheduling directives before its pods meet the
    /// scheduler, if anyone: the controller that removes a pod's (or the template's)
    /// scheduling gates, the one that resumes a suspended Job, or Kueue. Such a controller may
    /// add the tolerations of the nodes it picks, as Kueue adds its ResourceFlavor's.
    ///
    /// Kueue's own webhooks act before any validating webhook: they gate the pods it manages
    /// and suspend the Jobs, so for a Pod the gate and for a Job `suspend` say it, whatever
    /// the labels (a Job keeps its queue label once admitted and resumed). A workload's label
    /// counts where Kueue gates the pods it creates (Deployment, StatefulSet, ...), and a
    /// CronJob's Jobs' label, as Kueue will suspend them.
    pub fn held(&self) -> Option<Held> {
        let labelled = |m: &ObjectMeta| m.labels().contains_key(KUEUE_QUEUE_LABEL);
        if self.spec.is_gated() {
            return Some(Held::Gated);
        }
        let queued = match self.kind {
            Kind::Pod | Kind::PodTemplate => false,
            Kind::Job | Kind::CronJob if self.suspended => return Some(Held::Suspended),
            Kind::Job => false,
            Kind::CronJob => self.queued_jobs,
            _ => labelled(&self.meta) || labelled(self.template_meta()),
        };
        queued.then_some(Held::Queued)
    }

    /// The labels the pods will carry. Unless a Job sets `manualSelector`, kube-apiserver
    /// generates its selector and adds `batch.kubernetes.io/job-name` and `job-name` (the Job's
    /// name) and the two controller-uid labels to the template; a CronJob's Jobs get them too,
    /// under generated names. A manifest lacks them, a webhook already sees them (kept as they are).
    /// A value not known before the Job exists is [`GENERATED`], which no selector can name.
    pub fn pod_labels(&self) -> Cow<'_, BTreeMap<String, String>> {
        let labels = self.template_meta().labels();
        let job_name = match self.kind {
            Kind::Job => self.meta.name.as_deref().filter(|n| !n.is_empty()),
            Kind::CronJob => None,
            _ => return Cow::Borrowed(labels),
        };
        if self.manual_selector {
            return Cow::Borrowed(labels);
        }
        let mut with = labels.clone();
        for (key, value) in [
            ("batch.kubernetes.io/job-name", job_name),
            ("job-name", job_name),
            ("batch.kubernetes.io/controller-uid", None),
            ("controller-uid", None),
        ] {
            with.entry(key.to_string())
                .or_insert_with(|| value.unwrap_or(GENERATED).to_string());
        }
        Cow::Owned(with)
    }

    /// [`PodTemplate::pod_labels`] and the labels the workload's controller adds to each pod
    /// (a Deployment's pod-template-hash, ...), whose values are not known before the pod exists
    /// ([`GENERATED`]: `Exists` matches them, no value does). A `matchLabelKeys` entry naming
    /// one is merged into the pod's spread selector too.
    pub fn carried_labels(&self) -> BTreeMap<String, String> {
        let mut labels = self.pod_labels().into_owned();
        for key in controller_labels(self.kind) {
            labels
                .entry((*key).to_string())
                .or_insert_with(|| GENERATED.to_string());
        }
        labels
    }

    /// Sets a label the workload's controller adds to its pods, once known (a live Deployment's
    /// current pod-template-hash), in place of [`GENERATED`].
    pub fn set_carried_label(&mut self, key: &str, value: &str) {
        let meta = self.template_meta.as_mut().unwrap_or(&mut self.meta);
        meta.labels
            .get_or_insert_with(BTreeMap::new)
            .insert(key.to_string(), value.to_string());
    }

    /// Whether a spread constraint or a required pod (anti-)affinity term merges label `key`
    /// of the pod into its selector (`matchLabelKeys`, `mismatchLabelKeys`).
    pub fn merges_label(&self, key: &str) -> bool {
        let named = |keys: &Option<Vec<String>>| keys.iter().flatten().any(|k| k == key);
        let affinity = self.spec.affinity.as_ref();
        let terms = affinity
            .and_then(|a| a.pod_affinity.as_ref())
            .and_then(|p| {
                p.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .into_iter()
            .chain(
                affinity
                    .and_then(|a| a.pod_anti_affinity.as_ref())
                    .and_then(|p| {
                        p.required_during_scheduling_ignored_during_execution
                            .as_ref()
                    }),
            )
            .flatten();
        self.spec
            .spread_constraints()
            .iter()
            .any(|c| named(&c.match_label_keys))
            || terms
                .into_iter()
                .any(|t| named(&t.match_label_keys) || named(&t.mismatch_label_keys))
    }
}

/// The tolerations a DaemonSet's controller gives each of its pods
/// (`AddOrUpdateDaemonPodTolerations`): NoExecute ones without a time limit, so node problems
/// never evict them, and the NoSchedule ones of the node-condition taints.
const DAEMON_TOLERATIONS: [(&str, &str); 6] = [
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
];
/// And to those of a host-network DaemonSet (a CNI plugin runs before the node's network does).
const DAEMON_HOST_NETWORK_TOLERATION: (&str, &str) =
    ("node.kubernetes.io/network-unavailable", "NoSchedule");
/// The NoExecute taints the DefaultTolerationSeconds admission plugin makes every new pod
/// tolerate for 300 s, unless it tolerates them already.
const DEFAULT_TOLERATION_SECONDS: [&str; 2] = [
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
];

impl PodTemplate {
    /// A pod a DaemonSet's controller made (its controller owner is a DaemonSet).
    pub fn made_by_daemonset(&self) -> bool {
        self.kind == Kind::Pod
            && self
                .meta
                .owner_references
                .as_deref()
                .unwrap_or(&[])
                .iter()
                .any(|o| o.kind == "DaemonSet" && o.controller == Some(true))
    }

    /// Whether `t` is one of the tolerations a DaemonSet's controller gives each of its pods,
    /// as it gives them (`Exists`, no value, no `tolerationSeconds`; `network-unavailable` only
    /// to a host-network pod), and this is such a pod.
    pub fn given_by_daemonset_controller(&self, t: &Toleration) -> bool {
        let host_network = self.spec.host_network == Some(true);
        self.made_by_daemonset()
            && t.operator.as_deref() == Some("Exists")
            && t.value.as_deref().unwrap_or("").is_empty()
            && t.toleration_seconds.is_none()
            && DAEMON_TOLERATIONS
                .iter()
                .chain(host_network.then_some(&DAEMON_HOST_NETWORK_TOLERATION))
                .any(|&(key, effect)| {
                    t.key.as_deref() == Some(key) && t.effect.as_deref() == Some(effect)
                })
    }

    /// The tolerations a pod of this object is given before kube-scheduler sees it: those a
    /// DaemonSet's controller gives its pods, and those the DefaultTolerationSeconds admission
    /// plugin gives every new pod that lacks them. A pod read from the cluster has them already
    /// (none to add).
    pub fn added_tolerations(&self) -> Vec<Toleration> {
        let mut added: Vec<Toleration> = Vec::new();
        let has = |added: &[Toleration], key: &str, effect: &str| {
            self.spec.tolerations().iter().chain(added).any(|t| {
                t.key.as_deref() == Some(key)
                    && t.operator.as_deref() == Some("Exists")
                    && t.effect.as_deref() == Some(effect)
            })
        };
        if self.kind == Kind::DaemonSet {
            let host_network = self.spec.host_network == Some(true);
            let wanted = DAEMON_TOLERATIONS
                .iter()
                .chain(host_network.then_some(&DAEMON_HOST_NETWORK_TOLERATION));
            for &(key, effect) in wanted {
                if !has(&added, key, effect) {
                    added.push(Toleration {
                        key: Some(key.to_string()),
                        operator: Some("Exists".to_string()),
                        effect: Some(effect.to_string()),
                        ..Toleration::default()
                    });
                }
            }
        }
        for key in DEFAULT_TOLERATION_SECONDS {
            // The plugin's own test: any key-matching or key-less toleration with the NoExecute
            // or no effect.
            let tolerated = self.spec.tolerations().iter().chain(&added).any(|t| {
                t.key.as_deref().is_none_or(|k| k.is_empty() || k == key)
                    && t.effect
                        .as_deref()
                        .is_none_or(|e| e.is_empty() || e == "NoExecute")
            });
            if !tolerated {
                added.push(Toleration {
                    key: Some(key.to_string()),
                    operator: Some("Exists".to_string()),
                    effect: Some("NoExecute".to_string()),
                    toleration_seconds: Some(300),
                    ..Toleration::default()
                });
            }
        }
        added
    }

    /// The pod's tolerations as kube-scheduler receives them, with
    /// [`PodTemplate::added_tolerations`]; borrowed when nothing is added.
    pub fn scheduled_tolerations(&self) -> Cow<'_, [Toleration]> {
        let added = self.added_tolerations();
        if added.is_empty() {
            Cow::Borrowed(self.spec.tolerations())
        } else {
            Cow::Owned([self.spec.tolerations(), &added[..]].concat())
        }
    }

    /// A pod of this object as kube-scheduler receives it, with [`PodTemplate::added_tolerations`].
    pub fn as_scheduled(&self) -> Cow<'_, PodTemplate> {
        let added = self.added_tolerations();
        if added.is_empty() {
            return Cow::Borrowed(self);
        }
        let mut pod = self.clone();
        pod.spec
            .tolerations
            .get_or_insert_with(Vec::new)
            .extend(added);
        Cow::Owned(pod)
    }
}

/// The label a Deployment's controller gives each ReplicaSet's pods (its template's hash).
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";

/// Labels a workload's controller adds to each pod, beyond the template's.
fn controller_labels(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Deployment => &[POD_TEMPLATE_HASH],
        Kind::StatefulSet | Kind::KruiseStatefulSet => &[
            "controller-revision-hash",
            "statefulset.kubernetes.io/pod-name",
            "apps.kubernetes.io/pod-index",
        ],
        // Kruise's `WriteRevisionHash` also writes the revision's short hash as
        // pod-template-hash.
        Kind::CloneSet => &[
            "controller-revision-hash",
            POD_TEMPLATE_HASH,
            "apps.kruise.io/cloneset-instance-id",
        ],
        Kind::DaemonSet => &["controller-revision-hash", "pod-template-generation"],
        _ => &[],
    }
}

/// A label value assigned when the object is created (a Job's uid, a CronJob's Job's name); not
/// a valid label value, so no valid selector requires it.
pub const GENERATED: &str = "<generated>";

/// A failure to read an object, with the JSON path where it happened.
#[derive(Debug, thiserror::Error)]
#[error("{kind}: {path}: {message}")]
pub struct ParseError {
    pub kind: &'static str,
    pub path: String,
    pub message: String,
}

#[derive(Deserialize)]
struct PodObject {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: PodSpec,
}

#[derive(Deserialize, Default)]
struct TemplateView {
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: PodSpec,
}

#[derive(Deserialize)]
struct PodTemplateObject {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default)]
    template: TemplateView,
}

#[derive(Deserialize, Default)]
struct WorkloadSpec {
    #[serde(default)]
    selector: Option<Value>,
    /// A Job's.
    #[serde(default, rename = "manualSelector")]
    manual_selector: Option<bool>,
    /// A Job's.
    #[serde(default)]
    suspend: Option<bool>,
    #[serde(default)]
    template: TemplateView,
}

#[derive(Deserialize)]
struct WorkloadObject {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: WorkloadSpec,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct JobTemplate {
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: WorkloadSpec,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct CronJobSpec {
    #[serde(default)]
    job_template: JobTemplate,
}

#[derive(Deserialize)]
struct CronJobObject {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: CronJobSpec,
}

/// Deserializes one view. Path tracking costs about a third of the parse, so the fast path
/// skips it and callers re-parse with `track` only to explain a failure.
fn read<'de, T: Deserialize<'de>, D: serde::Deserializer<'de>>(
    kind: Kind,
    de: D,
    track: bool,
) -> Result<T, ParseError>
where
    D::Error: std::fmt::Display,
{
    if !track {
        return T::deserialize(de).map_err(|e| ParseError {
            kind: kind.display(),
            path: String::new(),
            message: strip_position(&e.to_string()),
        });
    }
    serde_path_to_error::deserialize(de).map_err(|e| ParseError {
        kind: kind.display(),
        path: e.path().to_string(),
        message: strip_position(&e.inner().to_string()),
    })
}

/// serde_json appends ` at line L column C`, relative to the object alone; the path says more.
/// serde's wording of a value of the wrong type is then said in the apiserver's terms.
pub(crate) fn strip_position(msg: &str) -> String {
    let msg = match msg.rfind(" at line ") {
        Some(i) if msg[i..].contains(" column ") => &msg[..i],
        _ => msg,
    };
    plain_type_error(msg).unwrap_or_else(|| msg.to_string())
}

/// The YAML reader's message (`... at line L, column C`) in the manifests' words: its own
/// options and Rust types left out.
pub(crate) fn plain_yaml_message(rendered: &str) -> String {
    let (msg, at) = match rendered.rfind(" at line ") {
        Some(i) => rendered.split_at(i),
        None => (rendered, ""),
    };
    let plain = if msg.starts_with("cannot deserialize null into string") {
        "Invalid value: null: must be a string".to_string()
    } else if let Some(key) = msg
        .strip_prefix("duplicate mapping key: ")
        .and_then(|k| k.strip_suffix(", set DuplicateKeyPolicy in Options if acceptable"))
    {
        format!("Duplicate value: {key:?}: a key may appear once in a mapping")
    } else if let Some(n) = msg
        .strip_prefix("non-finite float `")
        .and_then(|r| r.strip_suffix("` rejected by the configured policy"))
    {
        format!("Invalid value: {n}: a number too large to be read")
    } else {
        plain_type_error(msg).unwrap_or_else(|| msg.to_string())
    };
    format!("{plain}{at}")
}

/// serde's `invalid type: string "2", expected i32` as `Invalid value: "2": must be a whole
/// number from -2147483648 to 2147483647 (a quoted number is a string: write it without
/// quotes)`: what was written, and what the field takes.
fn plain_type_error(msg: &str) -> Option<String> {
    let rest = msg
        .strip_prefix("invalid type: ")
        .or_else(|| msg.strip_prefix("invalid value: "))?;
    let (found, expected) = rest.rsplit_once(", expected ")?;
    let value = match found.split_once(' ') {
        // `string "2"`, `integer `1``, `floating point `1.5``, `boolean `true``
        Some(("string", v)) => v.to_string(),
        Some((_, v)) if v.starts_with('`') => v.trim_matches('`').to_string(),
        Some(("floating", v)) => v.trim_start_matches("point ").trim_matches('`').to_string(),
        _ => match found {
            "sequence" => "a list".to_string(),
            "map" => "an object".to_string(),
            "null" | "unit value" => "null".to_string(),
            other => other.to_string(),
        },
    };
    let takes = match expected {
        "i32" => "a whole number from -2147483648 to 2147483647",
        "i64" => "a whole number from -9223372036854775808 to 9223372036854775807",
        "a string" | "a borrowed string" => "a string",
        "a boolean" => "true or false",
        "a sequence" => "a list",
        // k8s-openapi's own types expect their name.
        "Quantity" => "a quantity, such as \"500m\", \"1Gi\" or 2",
        "IntOrString" => "a whole number or a string",
        e if e == "a map"
            || e.starts_with("struct ")
            || e.chars().next().is_some_and(|c| c.is_ascii_uppercase()) =>
        {
            "an object"
        }
        other => other,
    };
    let quoted_number = found.starts_with("string ")
        && takes.starts_with("a whole number")
        && value.trim_matches('"').parse::<i64>().is_ok();
    let hint = if quoted_number {
        " (a quoted number is a string: write it without quotes)"
    } else if takes == "a string"
        && (found.starts_with("integer")
            || found.starts_with("floating")
            || found.starts_with("boolean"))
    {
        " (quote it to make it a string)"
    } else {
        ""
    };
    Some(format!("Invalid value: {value}: must be {takes}{hint}"))
}

fn not_an_object(kind: Kind) -> ParseError {
    ParseError {
        kind: kind.display(),
        path: String::new(),
        message: "expected a JSON object".to_string(),
    }
}

fn selector_from(value: Option<Value>) -> Option<LabelSelector> {
    let value = value?;
    let obj = value.as_object()?;
    if obj.contains_key("matchLabels") || obj.contains_key("matchExpressions") || obj.is_empty() {
        serde_json::from_value(value).ok()
    } else {
        // ReplicationController: a plain map of labels.
        let labels: BTreeMap<String, String> = serde_json::from_value(value).ok()?;
        Some(LabelSelector {
            match_labels: Some(labels),
            match_expressions: None,
        })
    }
}

fn from_workload(kind: Kind, meta: ObjectMeta, spec: WorkloadSpec) -> PodTemplate {
    let selector = defaulted_selector(kind, selector_from(spec.selector), &spec.template.metadata);
    PodTemplate {
        kind,
        meta,
        template_meta: Some(spec.template.metadata),
        spec: spec.template.spec,
        selector,
        manual_selector: spec.manual_selector == Some(true),
        suspended: spec.suspend == Some(true),
        queued_jobs: false,
    }
}

/// A workload's selector as the rules see it: kube-apiserver defaults a ReplicationController's
/// empty selector to its template's labels (SetDefaults_ReplicationController), so webhooks
/// never see it empty; manifests can be.
fn defaulted_selector(
    kind: Kind,
    selector: Option<LabelSelector>,
    template_meta: &ObjectMeta,
) -> Option<LabelSelector> {
    let empty = selector
        .as_ref()
        .is_none_or(crate::k8s::model::selector_has_no_requirements);
    if kind != Kind::ReplicationController || !empty {
        return selector;
    }
    template_meta
        .labels
        .clone()
        .filter(|l| !l.is_empty())
        .map(|labels| LabelSelector {
            match_labels: Some(labels),
            match_expressions: None,
        })
}

fn check_kind(kind: Kind, declared: &Option<String>) -> Result<(), ParseError> {
    match declared.as_deref() {
        Some(d) if !d.is_empty() && d != kind.name() => Err(ParseError {
            kind: kind.display(),
            path: "kind".to_string(),
            message: format!("object has kind {d:?}, expected {:?}", kind.name()),
        }),
        _ => Ok(()),
    }
}

fn parse_with<'de, D>(kind: Kind, de: D, track: bool) -> Result<PodTemplate, ParseError>
where
    D: serde::Deserializer<'de>,
    D::Error: std::fmt::Display,
{
    Ok(match kind {
        Kind::Pod => {
            let o: PodObject = read(kind, de, track)?;
            check_kind(kind, &o.kind)?;
            PodTemplate {
                kind,
                template_meta: None,
                meta: o.metadata,
                spec: o.spec,
                selector: None,
                manual_selector: false,
                suspended: false,
                queued_jobs: false,
            }
        }
        Kind::PodTemplate => {
            let o: PodTemplateObject = read(kind, de, track)?;
            check_kind(kind, &o.kind)?;
            PodTemplate {
                kind,
                meta: o.metadata,
                template_meta: Some(o.template.metadata),
                spec: o.template.spec,
                selector: None,
                manual_selector: false,
                suspended: false,
                queued_jobs: false,
            }
        }
        Kind::CronJob => {
            let o: CronJobObject = read(kind, de, track)?;
            check_kind(kind, &o.kind)?;
            let job = o.spec.job_template;
            PodTemplate {
                queued_jobs: job.metadata.labels().contains_key(KUEUE_QUEUE_LABEL),
                ..from_workload(kind, o.metadata, job.spec)
            }
        }
        _ => {
            let o: WorkloadObject = read(kind, de, track)?;
            check_kind(kind, &o.kind)?;
            from_workload(kind, o.metadata, o.spec)
        }
    })
}

/// Reads the pod template of an object of `kind` from raw JSON, touching only the fields the
/// rules need.
pub fn parse_json(kind: Kind, json: &str) -> Result<PodTemplate, ParseError> {
    if !json.trim_start().starts_with('{') {
        return Err(not_an_object(kind));
    }
    let parse = |track| {
        let mut de = serde_json::Deserializer::from_str(json);
        let t = parse_with(kind, &mut de, track)?;
        de.end().map_err(|e| ParseError {
            kind: kind.display(),
            path: String::new(),
            message: e.to_string(),
        })?;
        Ok(t)
    };
    parse(false).or_else(|_| parse(true))
}

/// Reads the pod template of an object of `kind` by hand from the on-demand reader (the
/// admission path, see [`direct`]) into `t`, a [`PodTemplate::empty`] of that kind; an error
/// means serde must read it.
pub fn read_direct<'de>(
    kind: Kind,
    part: Part,
    de: &mut crate::k8s::ondemand::Deserializer<'de>,
    echo: &mut Echo<'_, 'de>,
    t: &mut PodTemplate,
) -> Result<(), serde_json::Error> {
    direct::template_into(kind, part, de, echo, t)
}

/// Reads the pod template of an object of the given kind straight from a deserializer that is
/// part-way through a larger document (the AdmissionReview), so the object is scanned once.
/// Only a JSON object is accepted: serde's derived structs would also take an array.
pub struct TemplateSeed(pub Kind);

impl<'de> serde::de::DeserializeSeed<'de> for TemplateSeed {
    type Value = PodTemplate;

    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<PodTemplate, D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for TemplateSeed {
    type Value = PodTemplate;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "a {} object", self.0.display())
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<PodTemplate, A::Error> {
        parse_with(
            self.0,
            serde::de::value::MapAccessDeserializer::new(map),
            false,
        )
        .map_err(serde::de::Error::custom)
    }
}

/// Whether the object has the types kube-apiserver decodes it into: kubectl sends YAML's
/// booleans and numbers as such (`sidecar.istio.io/inject: false` in annotations,
/// `args: [--x, on]`, an env `value: 8080`, `replicas: "3"`), and the apiserver refuses a
/// request with one where a string is taken, or a string where a number is. The views the
/// rules read see only their own fields; this reads the whole object with k8s-openapi's types
/// (which, as the apiserver, take a number for a quantity and either for an int-or-string).
/// `Ok` holds the fields those types do not have, each as a path
/// (`spec.topologySpreadConstraints[0].minDomain`, a top-level `sepc`): kube-apiserver's
/// strict field validation, kubectl's default, refuses them, and without it drops them.
/// Of an OpenKruise workload only the metadata is read ([`typed_part`]).
pub fn typed(kind: Kind, value: &Value) -> Result<Vec<String>, ParseError> {
    struct Check<'a> {
        kind: Kind,
        value: &'a Value,
        at: FieldPath,
    }
    impl ReadAs for Check<'_> {
        type Out = Result<Vec<String>, ParseError>;
        fn read<T: serde::de::DeserializeOwned>(self) -> Self::Out {
            let Check { kind, value, at } = self;
            read_strictly::<T>(kind.display(), value, &at)
        }
    }
    let (part, v, at) = typed_part(kind, value);
    read_as(
        kind,
        part,
        Check {
            kind,
            value: &v,
            at,
        },
    )
}

/// Reads `value` as kube-apiserver's strict decoder would read a `T` at `at`: the fields it
/// would pass over (their paths), or why it refuses the value. `kind`: for the error.
fn read_strictly<T: serde::de::DeserializeOwned>(
    kind: &'static str,
    value: &Value,
    at: &FieldPath,
) -> Result<Vec<String>, ParseError> {
    let mut unknown = Vec::new();
    if value.is_null() {
        return Ok(unknown);
    }
    // The apiserver's decoder reads a null as the field's zero value
    // (`args: [--a, ~]`), where serde refuses it: nulls in lists are left out
    // ([`zero_nulls`] took the others).
    let stripped;
    let value = if has_list_null(value) {
        let mut copy = value.clone();
        strip_nulls(&mut copy, true);
        stripped = copy;
        &stripped
    } else {
        value
    };
    let mut passed_over = |p: serde_ignored::Path| unknown.push(ignored_path(at, &p));
    let read = serde_path_to_error::deserialize::<_, T>(serde_ignored::Deserializer::new(
        value,
        &mut passed_over,
    ));
    match read {
        Ok(_) => match bad_quantity(value, &prefix(at)) {
            None => Ok(unknown),
            Some((path, message)) => Err(ParseError {
                kind,
                path,
                message,
            }),
        },
        Err(e) => {
            let mut path = prefix(at);
            for seg in e.path().iter() {
                use serde_path_to_error::Segment;
                match seg {
                    Segment::Seq { index } => path.push_str(&format!("[{index}]")),
                    Segment::Map { key } => push_key(&mut path, key),
                    Segment::Enum { .. } | Segment::Unknown => {}
                }
            }
            Err(ParseError {
                kind,
                path,
                message: strip_position(&e.inner().to_string()),
            })
        }
    }
}

/// [`typed`] for a v1 Namespace (`check` reads their labels).
pub fn typed_namespace(value: &Value) -> Result<Vec<String>, ParseError> {
    read_strictly::<k8s_openapi::api::core::v1::Namespace>("Namespace", value, &FieldPath::root())
}

use k8s_openapi::api;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta as Meta;

/// The k8s-openapi type a part of an object is read with.
#[derive(Clone, Copy)]
enum Typed {
    Meta,
    /// The whole object, as the type of its kind.
    Object,
}

/// The part [`typed`] reads: a built-in kind's whole object, an OpenKruise workload's metadata
/// (its CRDs keep unknown fields in the pod template, and its other fields have no type here).
/// A part not written is `null`.
fn typed_part(kind: Kind, value: &Value) -> (Typed, Cow<'_, Value>, FieldPath) {
    if kind.group() == KRUISE_GROUP {
        return (
            Typed::Meta,
            Cow::Borrowed(&value["metadata"]),
            FieldPath::fields(&["metadata"]),
        );
    }
    // A claim template's apiVersion and kind are passed over by the apiserver (it decodes the
    // claim's TypeMeta inline and ignores it), where k8s-openapi requires v1
    // PersistentVolumeClaim.
    let typed_claims = value["spec"]["volumeClaimTemplates"]
        .as_array()
        .is_some_and(|a| {
            a.iter()
                .any(|c| c.get("apiVersion").is_some() || c.get("kind").is_some())
        });
    if kind == Kind::StatefulSet && typed_claims {
        let mut copy = value.clone();
        for c in copy["spec"]["volumeClaimTemplates"]
            .as_array_mut()
            .into_iter()
            .flatten()
        {
            if let Some(m) = c.as_object_mut() {
                m.remove("apiVersion");
                m.remove("kind");
            }
        }
        return (Typed::Object, Cow::Owned(copy), FieldPath::root());
    }
    (Typed::Object, Cow::Borrowed(value), FieldPath::root())
}

/// Something done with a part of an object read as a k8s-openapi type, see [`read_as`].
trait ReadAs {
    type Out;
    fn read<T: serde::de::DeserializeOwned>(self) -> Self::Out;
}

/// Calls `with` with the type `part` of a `kind` is read as.
fn read_as<R: ReadAs>(kind: Kind, part: Typed, with: R) -> R::Out {
    use api::{apps::v1 as apps, batch::v1 as batch, core::v1 as core};
    match (part, kind) {
        (Typed::Meta, _) | (Typed::Object, Kind::CloneSet | Kind::KruiseStatefulSet) => {
            with.read::<Meta>()
        }
        (Typed::Object, Kind::Pod) => with.read::<core::Pod>(),
        (Typed::Object, Kind::PodTemplate) => with.read::<core::PodTemplate>(),
        (Typed::Object, Kind::ReplicationController) => with.read::<core::ReplicationController>(),
        (Typed::Object, Kind::Deployment) => with.read::<apps::Deployment>(),
        (Typed::Object, Kind::StatefulSet) => with.read::<apps::StatefulSet>(),
        (Typed::Object, Kind::DaemonSet) => with.read::<apps::DaemonSet>(),
        (Typed::Object, Kind::ReplicaSet) => with.read::<apps::ReplicaSet>(),
        (Typed::Object, Kind::Job) => with.read::<batch::Job>(),
        (Typed::Object, Kind::CronJob) => with.read::<batch::CronJob>(),
    }
}

/// The fields [`typed`] would call unknown whose value is `null` (a misspelt key with an unset
/// Helm value): read before [`zero_nulls`] leaves them out, since kube-apiserver's strict
/// field validation refuses an unknown field whatever its value. Reads the part only when it
/// holds a null in a mapping; a type error there ends the reading (typed reports it).
pub fn null_fields_unknown(kind: Kind, value: &Value) -> Vec<String> {
    struct Nulls(Value, FieldPath);
    impl ReadAs for Nulls {
        type Out = Vec<String>;
        fn read<T: serde::de::DeserializeOwned>(self) -> Vec<String> {
            nulls_passed_over::<T>(self.0, &self.1)
        }
    }
    let (part, v, at) = typed_part(kind, value);
    if !has_map_null(&v) {
        return Vec::new();
    }
    // Nulls in lists are zero values to the apiserver; in a known field, a null serde
    // refuses (`nodeSelector: {disk: }`) is left out and the part read again, as
    // [`zero_nulls`] leaves it out before [`typed`] reads it.
    let mut copy = v.into_owned();
    strip_list_nulls(&mut copy);
    read_as(kind, part, Nulls(copy, at))
}

/// [`null_fields_unknown`] of one part, read as `T`.
fn nulls_passed_over<T: serde::de::DeserializeOwned>(mut v: Value, at: &FieldPath) -> Vec<String> {
    // Each round leaves out one null; a part has few.
    for _ in 0..64 {
        let mut found = Vec::new();
        let mut note = |p: serde_ignored::Path| {
            if resolve(&v, &p).is_some_and(Value::is_null) {
                found.push(ignored_path(at, &p));
            }
        };
        let read = serde_path_to_error::deserialize::<_, T>(serde_ignored::Deserializer::new(
            &v, &mut note,
        ));
        let Err(e) = read else {
            return found;
        };
        let at_null: Vec<&serde_path_to_error::Segment> = e.path().iter().collect();
        if !remove_null(&mut v, &at_null) {
            return found;
        }
    }
    Vec::new()
}

/// Leaves out the null at `path` in a mapping; false when there is none.
fn remove_null(v: &mut Value, path: &[&serde_path_to_error::Segment]) -> bool {
    use serde_path_to_error::Segment;
    match (path, v) {
        ([Segment::Map { key }], Value::Object(m)) if m.get(key.as_str()) == Some(&Value::Null) => {
            m.remove(key.as_str()).is_some()
        }
        ([Segment::Map { key }, rest @ ..], Value::Object(m)) => m
            .get_mut(key.as_str())
            .is_some_and(|child| remove_null(child, rest)),
        ([Segment::Seq { index }, rest @ ..], Value::Array(a)) => a
            .get_mut(*index)
            .is_some_and(|child| remove_null(child, rest)),
        ([Segment::Enum { .. } | Segment::Unknown, rest @ ..], v) => remove_null(v, rest),
        _ => false,
    }
}

/// The value at a path serde passed over.
fn resolve<'v>(root: &'v Value, p: &serde_ignored::Path) -> Option<&'v Value> {
    use serde_ignored::Path;
    match p {
        Path::Root => Some(root),
        Path::Seq { parent, index } => resolve(root, parent)?.get(*index),
        Path::Map { parent, key } => resolve(root, parent)?.get(key.as_str()),
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => resolve(root, parent),
    }
}

/// Leaves out, in place, every null in a list (those in mappings stay).
fn strip_list_nulls(value: &mut Value) {
    match value {
        Value::Object(m) => m.values_mut().for_each(strip_list_nulls),
        Value::Array(a) => {
            a.retain(|v| !v.is_null());
            a.iter_mut().for_each(strip_list_nulls);
        }
        _ => {}
    }
}

fn has_map_null(value: &Value) -> bool {
    match value {
        Value::Object(m) => m.values().any(|v| v.is_null() || has_map_null(v)),
        Value::Array(a) => a.iter().any(has_map_null),
        _ => false,
    }
}

/// A field name after `path`, or a map key as the apiserver writes it (`annotations[a.b/c]`).
fn push_key(path: &mut String, key: &str) {
    if key.bytes().all(|b| b.is_ascii_alphanumeric()) {
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(key);
    } else {
        path.push_str(&format!("[{key}]"));
    }
}

/// The first quantity in `v` that kube-apiserver's decoder refuses (`resource.ParseQuantity`:
/// `10GB`, `10gi`, `100 m`, `lots`; k8s-openapi's `Quantity` takes any string), with its path
/// and the apiserver's words. Quantities are the values of resource lists (a `limits` or
/// `requests` of `resources`, `overhead`, `capacity`, `allocatable`, `allocatedResources`) and
/// the `sizeLimit` and `divisor` fields.
pub(crate) fn bad_quantity(v: &Value, at: &str) -> Option<(String, String)> {
    fn walk(v: &Value, path: &mut String, parent: &str, out: &mut Option<(String, String)>) {
        let Value::Object(m) = v else {
            if let Value::Array(a) = v {
                for (i, x) in a.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    walk(x, path, "", out);
                    path.truncate(len);
                }
            }
            return;
        };
        for (k, x) in m {
            if out.is_some() {
                return;
            }
            let len = path.len();
            push_key(path, k);
            let list = matches!(
                k.as_str(),
                "overhead" | "capacity" | "allocatable" | "allocatedResources"
            ) || (parent == "resources" && matches!(k.as_str(), "limits" | "requests"));
            if list {
                for (name, q) in x.as_object().into_iter().flatten() {
                    let len = path.len();
                    push_key(path, name);
                    check(q, path, out);
                    path.truncate(len);
                }
            } else if matches!(k.as_str(), "sizeLimit" | "divisor") {
                check(x, path, out);
            } else {
                walk(x, path, k, out);
            }
            path.truncate(len);
        }
    }
    fn check(q: &Value, path: &str, out: &mut Option<(String, String)>) {
        let text = match q {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => return,
        };
        if out.is_none() {
            if let Some(why) = crate::k8s::validation::quantity_error(&text) {
                *out = Some((path.to_string(), format!("Invalid value: {q}: {why}")));
            }
        }
    }
    let mut out = None;
    walk(v, &mut at.to_string(), "", &mut out);
    out
}

/// `at` as the start of a path: nothing at the object's root.
fn prefix(at: &FieldPath) -> String {
    if *at == FieldPath::root() {
        String::new()
    } else {
        at.to_string()
    }
}

/// Where a field serde passed over is, under `at`.
fn ignored_path(at: &FieldPath, p: &serde_ignored::Path) -> String {
    use serde_ignored::Path;
    fn walk(p: &Path, out: &mut String) {
        match p {
            Path::Root => {}
            Path::Seq { parent, index } => {
                walk(parent, out);
                out.push_str(&format!("[{index}]"));
            }
            Path::Map { parent, key } => {
                walk(parent, out);
                push_key(out, key);
            }
            Path::Some { parent }
            | Path::NewtypeStruct { parent }
            | Path::NewtypeVariant { parent } => walk(parent, out),
        }
    }
    let mut out = prefix(at);
    walk(p, &mut out);
    out
}

/// An object of `kind` with its nulls read as the apiserver's decoder reads them, as the
/// field's zero value: in a map of strings the rules read (labels, annotations, a nodeSelector,
/// of the object and of its pod template) the empty string the apiserver stores (`app: `, an
/// unset Helm value: the label is there, with no value); elsewhere in an object as if the field
/// were not written (for the rules, as for the scheduler, a zero request and none are the
/// same). Nulls in lists stay, so that the index of what follows is the one written.
pub fn zero_nulls(kind: Kind, value: &mut Value) {
    let template = kind.template_path().to_string();
    let spec = kind.pod_spec_path().to_string();
    let mut maps = vec![
        "metadata.labels".to_string(),
        "metadata.annotations".to_string(),
        format!("{spec}.nodeSelector"),
    ];
    if kind != Kind::Pod {
        maps.push(format!("{template}.metadata.labels"));
        maps.push(format!("{template}.metadata.annotations"));
    }
    for path in maps {
        let found = path
            .split('.')
            .try_fold(&mut *value, |v, seg| v.get_mut(seg));
        if let Some(Value::Object(m)) = found {
            for x in m.values_mut().filter(|x| x.is_null()) {
                *x = Value::String(String::new());
            }
        }
    }
    strip_nulls(value, false);
}

/// Leaves out, in place, every null in an object, and in a list too with `lists`.
pub fn strip_nulls(value: &mut Value, lists: bool) {
    match value {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            m.values_mut().for_each(|v| strip_nulls(v, lists));
        }
        Value::Array(a) => {
            if lists {
                a.retain(|v| !v.is_null());
            }
            a.iter_mut().for_each(|v| strip_nulls(v, lists));
        }
        _ => {}
    }
}

fn has_list_null(value: &Value) -> bool {
    match value {
        Value::Object(m) => m.values().any(has_list_null),
        Value::Array(a) => a.iter().any(|v| v.is_null() || has_list_null(v)),
        _ => false,
    }
}

/// Reads the pod template of an already parsed object (manifests read by `check`).
pub fn parse_value(kind: Kind, value: &Value) -> Result<PodTemplate, ParseError> {
    if !value.is_object() {
        return Err(not_an_object(kind));
    }
    parse_with(kind, value, false).or_else(|_| parse_with(kind, value, true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The hand-written kind tables are k8s-openapi's types, no more and no fewer: a typo or a
    /// kind moved between groups fails here, and a type a newer k8s-openapi drops fails to build.
    #[test]
    fn kind_tables_are_k8s_openapis() {
        use k8s_openapi::api::{
            admissionregistration::v1 as adm, apps::v1 as apps, autoscaling::v1 as as1,
            autoscaling::v2 as as2, batch::v1 as batch, certificates::v1 as cert,
            coordination::v1 as coord, core::v1 as core, discovery::v1 as disc,
            flowcontrol::v1 as flow, networking::v1 as net, node::v1 as node, policy::v1 as policy,
            rbac::v1 as rbac, resource::v1 as res, scheduling::v1 as sched, storage::v1 as storage,
        };
        use k8s_openapi::Resource;
        fn of<T: Resource>() -> (&'static str, &'static str) {
            (T::API_VERSION, T::KIND)
        }
        let dotless = [
            of::<core::Binding>(),
            of::<core::ComponentStatus>(),
            of::<core::ConfigMap>(),
            of::<core::Endpoints>(),
            of::<core::Event>(),
            of::<core::LimitRange>(),
            of::<core::Namespace>(),
            of::<core::Node>(),
            of::<core::PersistentVolume>(),
            of::<core::PersistentVolumeClaim>(),
            of::<core::Pod>(),
            of::<core::PodTemplate>(),
            of::<core::ReplicationController>(),
            of::<core::ResourceQuota>(),
            of::<core::Secret>(),
            of::<core::Service>(),
            of::<core::ServiceAccount>(),
            of::<apps::ControllerRevision>(),
            of::<apps::DaemonSet>(),
            of::<apps::Deployment>(),
            of::<apps::ReplicaSet>(),
            of::<apps::StatefulSet>(),
            of::<as2::HorizontalPodAutoscaler>(),
            of::<as1::HorizontalPodAutoscaler>(),
            of::<as1::Scale>(),
            of::<batch::CronJob>(),
            of::<batch::Job>(),
            of::<policy::Eviction>(),
            of::<policy::PodDisruptionBudget>(),
        ];
        let dotted = [
            of::<adm::MutatingAdmissionPolicy>(),
            of::<adm::MutatingAdmissionPolicyBinding>(),
            of::<adm::MutatingWebhookConfiguration>(),
            of::<adm::ValidatingAdmissionPolicy>(),
            of::<adm::ValidatingAdmissionPolicyBinding>(),
            of::<adm::ValidatingWebhookConfiguration>(),
            of::<cert::CertificateSigningRequest>(),
            of::<coord::Lease>(),
            of::<disc::EndpointSlice>(),
            of::<flow::FlowSchema>(),
            of::<flow::PriorityLevelConfiguration>(),
            of::<net::IPAddress>(),
            of::<net::Ingress>(),
            of::<net::IngressClass>(),
            of::<net::NetworkPolicy>(),
            of::<net::ServiceCIDR>(),
            of::<node::RuntimeClass>(),
            of::<rbac::ClusterRole>(),
            of::<rbac::ClusterRoleBinding>(),
            of::<rbac::Role>(),
            of::<rbac::RoleBinding>(),
            of::<res::DeviceClass>(),
            of::<res::ResourceClaim>(),
            of::<res::ResourceClaimTemplate>(),
            of::<res::ResourceSlice>(),
            of::<sched::PriorityClass>(),
            of::<storage::CSIDriver>(),
            of::<storage::CSINode>(),
            of::<storage::CSIStorageCapacity>(),
            of::<storage::StorageClass>(),
            of::<storage::VolumeAttachment>(),
            of::<storage::VolumeAttributesClass>(),
        ];
        let flat = |t: &[(&'static str, &'static [&'static str])]| -> Vec<(&str, &str)> {
            t.iter()
                .flat_map(|(v, ks)| ks.iter().map(move |k| (*v, *k)))
                .collect()
        };
        assert_eq!(flat(DOTLESS_SERVED), dotless);
        assert_eq!(flat(DOTTED_BUILT_IN), dotted);
    }

    /// A value of the wrong type is said with the value written and what the field takes, not
    /// in serde's (Rust's) words.
    #[test]
    fn type_errors_say_what_was_written_and_what_is_taken() {
        let pod = |spec: Value| {
            let e = parse_value(Kind::Pod, &json!({"spec": spec})).unwrap_err();
            format!("{}: {}", e.path, e.message)
        };
        let tsc = |c: Value| pod(json!({"topologySpreadConstraints": [c]}));
        let cases = [
            (
                tsc(json!({"maxSkew": "2"})),
                "topologySpreadConstraints[0].maxSkew: Invalid value: \"2\": must be a whole number from -2147483648 to 2147483647 (a quoted number is a string: write it without quotes)",
            ),
            (
                tsc(json!({"maxSkew": 1.5})),
                "topologySpreadConstraints[0].maxSkew: Invalid value: 1.5: must be a whole number from -2147483648 to 2147483647",
            ),
            (
                tsc(json!({"maxSkew": 99_999_999_999_i64})),
                "topologySpreadConstraints[0].maxSkew: Invalid value: 99999999999: must be a whole number from -2147483648 to 2147483647",
            ),
            (
                tsc(json!({"minDomains": [1]})),
                "topologySpreadConstraints[0].minDomains: Invalid value: a list: must be a whole number from -2147483648 to 2147483647",
            ),
            (
                pod(json!({"nodeSelector": {"a": 1}})),
                "nodeSelector.a: Invalid value: 1: must be a string (quote it to make it a string)",
            ),
            (
                pod(json!({"nodeSelector": {"a": true}})),
                "nodeSelector.a: Invalid value: true: must be a string (quote it to make it a string)",
            ),
            (
                pod(json!({"tolerations": {"key": "k"}})),
                "tolerations: Invalid value: an object: must be a list",
            ),
            (
                pod(json!({"affinity": "none"})),
                "affinity: Invalid value: \"none\": must be an object",
            ),
            (
                pod(json!({"containers": [{"resources": {"requests": {"cpu": true}}}]})),
                "containers[0].resources.requests.cpu: Invalid value: true: must be a quantity, such as \"500m\", \"1Gi\" or 2",
            ),
        ];
        for (got, want) in cases {
            assert_eq!(got, format!("spec.{want}"));
        }
    }

    /// Quantities as `resource.ParseQuantity` reads them: kube-apiserver's decoder refuses the
    /// object at the first it cannot parse, wherever it is (`storage: 10GB` in a claim
    /// template is a common typo).
    #[test]
    fn quantities_are_parsed_as_the_apiserver_parses_them() {
        use crate::k8s::validation::quantity_error;
        let pattern = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
        let format = Some(pattern);
        let suffix = Some("unable to parse quantity's suffix");
        for (q, want) in [
            ("100m", None),
            ("1.5Gi", None),
            ("2e3", None),
            ("1E+3", None),
            (".5", None),
            ("1.", None),
            ("-1", None),
            ("0", None),
            ("129M", None),
            ("10GB", format),
            ("10gi", format),
            ("10 Gi", format),
            ("lots", format),
            ("", format),
            ("0x1F", format),
            ("1.5.5", format),
            ("1Gii", suffix),
            ("1e", suffix),
            ("1ei", suffix),
            ("1m3", suffix),
        ] {
            assert_eq!(quantity_error(q), want, "{q:?}");
        }
        let sts = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
            "spec": {"selector": {}, "template": {"spec": {"containers": [
                {"name": "c", "resources": {"requests": {"cpu": 0.5, "nvidia.com/gpu": 1}}}]}},
                "volumeClaimTemplates": [{"metadata": {"name": "d"},
                    "spec": {"resources": {"requests": {"storage": "10GB"}}}}]}});
        let e = typed(Kind::StatefulSet, &sts).unwrap_err();
        assert_eq!(
            format!("{}: {}", e.path, e.message),
            format!("spec.volumeClaimTemplates[0].spec.resources.requests.storage: Invalid value: \"10GB\": {pattern}")
        );
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "lots"}}}],
                "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "1Gi"}}]}});
        assert_eq!(
            typed(Kind::Pod, &pod).unwrap_err().path,
            "spec.containers[0].resources.limits.cpu"
        );
    }

    /// A built-in kind is read whole, as the apiserver decodes it: a type error outside the
    /// pod template is found at its path; OpenKruise's workloads are read for their metadata only.
    #[test]
    fn typed_reads_a_built_in_object_whole() {
        let deployment = |spec: Value| {
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                "spec": spec})
        };
        let err = |kind, v: &Value| {
            let e = typed(kind, v).unwrap_err();
            format!("{}: {}", e.path, e.message)
        };
        assert_eq!(
            err(Kind::Deployment, &deployment(json!({"replicas": "3"}))),
            "spec.replicas: Invalid value: \"3\": must be a whole number from -2147483648 to 2147483647 (a quoted number is a string: write it without quotes)"
        );
        assert_eq!(
            err(
                Kind::Deployment,
                &deployment(json!({"selector": {"matchLabels": {"app": 1}}}))
            ),
            "spec.selector.matchLabels.app: Invalid value: 1: must be a string (quote it to make it a string)"
        );
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {"backoffLimit": 1, "template": {"spec": {"containers": []}}},
            "status": {"active": "one"}});
        assert!(err(Kind::Job, &job).starts_with("status.active: Invalid value: \"one\""));
        // The Kubernetes version the apiserver serves (v1.36), not a later one: a Job's
        // `scheduling` is v1.37's.
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {"scheduling": {}, "template": {"spec": {"containers": []}}}});
        assert_eq!(typed(Kind::Job, &job).unwrap(), ["spec.scheduling"]);
        // A claim template's apiVersion and kind are ignored by the apiserver, whatever they say.
        for (api, kind) in [("v1", "PersistentVolumeClaim"), ("apps/v1", "Pod")] {
            let sts = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
                "spec": {"selector": {}, "template": {}, "volumeClaimTemplates": [
                    {"apiVersion": api, "kind": kind, "metadata": {"name": "data"}, "spec": {"bogus": null}}]}});
            let mut written = sts.clone();
            written["spec"]["volumeClaimTemplates"][0]["spec"] = json!({});
            assert_eq!(
                typed(Kind::StatefulSet, &written).unwrap(),
                Vec::<String>::new(),
                "{kind}"
            );
            assert_eq!(
                null_fields_unknown(Kind::StatefulSet, &sts),
                ["spec.volumeClaimTemplates[0].spec.bogus"],
                "{kind}"
            );
        }
        let cloneset = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "c", "lables": {}}, "spec": {"replicas": "3", "x": 1}});
        assert_eq!(
            typed(Kind::CloneSet, &cloneset).unwrap(),
            ["metadata.lables"]
        );
    }

    #[test]
    fn every_kind_finds_its_template() {
        let template = json!({
            "metadata": {"labels": {"app": "web"}},
            "spec": {"nodeSelector": {"disktype": "ssd"}}
        });
        let cases = [
            (
                Kind::Pod,
                json!({"metadata": {"labels": {"app": "web"}}, "spec": {"nodeSelector": {"disktype": "ssd"}}}),
                "spec",
            ),
            (
                Kind::PodTemplate,
                json!({"metadata": {"name": "t"}, "template": template}),
                "template.spec",
            ),
            (
                Kind::ReplicationController,
                json!({"spec": {"selector": {"app": "web"}, "template": template}}),
                "spec.template.spec",
            ),
            (
                Kind::Deployment,
                json!({"spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template}}),
                "spec.template.spec",
            ),
            (
                Kind::StatefulSet,
                json!({"spec": {"template": template}}),
                "spec.template.spec",
            ),
            (
                Kind::DaemonSet,
                json!({"spec": {"template": template}}),
                "spec.template.spec",
            ),
            (
                Kind::ReplicaSet,
                json!({"spec": {"template": template}}),
                "spec.template.spec",
            ),
            (
                Kind::Job,
                json!({"spec": {"template": template}}),
                "spec.template.spec",
            ),
            (
                Kind::CronJob,
                json!({"spec": {"jobTemplate": {"spec": {"template": template}}}}),
                "spec.jobTemplate.spec.template.spec",
            ),
        ];
        for (kind, obj, path) in cases {
            let t = parse_value(kind, &obj).unwrap();
            assert_eq!(
                t.spec.node_selector().get("disktype").map(String::as_str),
                Some("ssd"),
                "{kind:?}"
            );
            assert_eq!(
                t.template_meta().labels().get("app").map(String::as_str),
                Some("web"),
                "{kind:?}"
            );
            assert_eq!(t.spec_path().to_string(), path);
            let from_raw = parse_json(kind, &obj.to_string()).unwrap();
            assert_eq!(from_raw, t);
        }
    }

    #[test]
    fn workloads_a_workloadspread_may_target_find_their_template() {
        let template = json!({"spec": {"nodeSelector": {"disktype": "ssd"}}});
        let cases = [
            (
                "apps/v1",
                "Deployment",
                json!({"spec": {"template": template}}),
                true,
            ),
            (
                "batch/v1",
                "CronJob",
                json!({"spec": {"jobTemplate": {"spec": {"template": template}}}}),
                true,
            ),
            (
                "apps.kruise.io/v1alpha1",
                "CloneSet",
                json!({"spec": {"template": template}}),
                true,
            ),
            (
                "apps.kruise.io/v1beta1",
                "StatefulSet",
                json!({"spec": {"template": template}}),
                true,
            ),
            ("v1", "Pod", template.clone(), false),
            (
                "apps.kruise.io/v1alpha1",
                "SidecarSet",
                json!({"spec": {"template": template}}),
                false,
            ),
        ];
        for (api, kind, mut obj, found) in cases {
            obj["apiVersion"] = json!(api);
            obj["kind"] = json!(kind);
            let spec = workload_pod_spec(&obj);
            assert_eq!(spec.is_some(), found, "{api} {kind}");
            if let Some(spec) = spec {
                assert_eq!(spec.node_selector().len(), 1, "{api} {kind}");
                assert_eq!(workload_template(&obj), Some(&template), "{api} {kind}");
            }
        }
    }

    #[test]
    fn replication_controller_selector_is_a_map() {
        let obj = json!({"spec": {"selector": {"app": "web"}}});
        let t = parse_value(Kind::ReplicationController, &obj).unwrap();
        let sel = t.selector.unwrap();
        assert_eq!(sel.match_labels.unwrap().get("app").unwrap(), "web");
        // Without a selector, the apiserver's default: the template's labels.
        for selector in [json!(null), json!({})] {
            let obj = json!({"spec": {"selector": selector, "template": {"metadata": {"labels": {"app": "db"}}}}});
            let t = parse_value(Kind::ReplicationController, &obj).unwrap();
            let sel = t.selector.unwrap();
            assert_eq!(sel.match_labels.unwrap().get("app").unwrap(), "db");
        }
        // Other kinds get no such default.
        let obj = json!({"spec": {"template": {"metadata": {"labels": {"app": "db"}}}}});
        assert_eq!(parse_value(Kind::Deployment, &obj).unwrap().selector, None);
    }

    #[test]
    fn kinds_by_group_and_api_version() {
        assert_eq!(
            Kind::from_api_version("apps/v1", "Deployment"),
            Some(Kind::Deployment)
        );
        assert_eq!(Kind::from_api_version("v1", "Pod"), Some(Kind::Pod));
        assert_eq!(
            Kind::from_api_version("batch/v1", "CronJob"),
            Some(Kind::CronJob)
        );
        assert_eq!(Kind::from_api_version("v1", "Deployment"), None);
        assert_eq!(
            Kind::from_api_version("apps.kruise.io/v1alpha1", "CloneSet"),
            Some(Kind::CloneSet)
        );
        // Kruise's Advanced StatefulSet is its own kind, beside apps/v1's.
        assert_eq!(
            Kind::from_api_version("apps.kruise.io/v1beta1", "StatefulSet"),
            Some(Kind::KruiseStatefulSet)
        );
        assert_eq!(
            Kind::from_api_version("apps/v1", "StatefulSet"),
            Some(Kind::StatefulSet)
        );
        assert_eq!(Kind::from_group_kind("apps.kruise.io", "Advanced"), None);
    }

    #[test]
    fn bad_field_types_name_the_path() {
        let obj = json!({"spec": {"template": {"spec": {"nodeSelector": ["x"]}}}});
        let err = parse_value(Kind::Deployment, &obj).unwrap_err();
        assert_eq!(err.path, "spec.template.spec.nodeSelector");
        let err = parse_value(Kind::Pod, &json!({"kind": "Deployment"})).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"Pod: kind: object has kind "Deployment", expected "Pod""#
        );
        assert!(parse_value(Kind::Pod, &json!("a string")).is_err());
    }
}
