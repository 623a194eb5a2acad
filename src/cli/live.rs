//! The commands that talk to a live cluster: `explain` of a pod or workload by name, and
//! `audit`. Each runs on a single-threaded runtime; all their waiting is on the API server.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::Value;

use crate::ci::check::Checker;
use crate::ci::report::Report;
use crate::core::cluster::Cluster;
use crate::core::filter;
use crate::core::snapshot::bound_pod;
use crate::k8s::workload::{self, Kind, PodTemplate, POD_TEMPLATE_HASH};
use crate::live::{self, Connect, LiveError, Progress};
use crate::rules::config::RuleSet;

/// How to reach the cluster, as kubectl takes it.
#[derive(clap::Args, Debug, Clone)]
pub struct LiveArgs {
    /// Kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then the pod's service
    /// account when running in a cluster).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context (default: the current context).
    #[arg(long)]
    pub context: Option<String>,
    /// Seconds each API request may take.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub request_timeout: u64,
    /// Objects per list request, as kubectl's --chunk-size.
    #[arg(long, value_name = "N", default_value_t = live::PAGE)]
    pub chunk_size: u32,
}

impl LiveArgs {
    fn connect(&self) -> Connect {
        Connect {
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.clone(),
            timeout: self.timeout(),
            page: self.chunk_size.max(1),
        }
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(self.request_timeout.max(1))
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))
}

/// Where `explain --pod` finds its pod: a manifest file, or a live object.
pub enum PodSource<'a> {
    File(&'a Path),
    Live(Kind, &'a str),
}

pub fn pod_source(arg: &str) -> Result<PodSource<'_>, String> {
    let path = Path::new(arg);
    // `-`: the manifest on stdin (`helm template ... | placement-guard explain --pod -`).
    if arg == "-" || path.is_file() {
        return Ok(PodSource::File(path));
    }
    let looks_like_file = [".yaml", ".yml", ".json"].iter().any(|e| arg.ends_with(e));
    match live::parse_ref(arg) {
        // A reference wins over a folder of the same name (`deploy/web/` in a repository).
        Some((kind, name)) if !looks_like_file => Ok(PodSource::Live(kind, name)),
        _ if path.is_dir() => Err(format!(
            "{arg:?} is a directory; --pod takes one manifest file, or a pod or workload reference"
        )),
        _ => Err(format!(
            "no such file {arg:?}, and not a pod or workload reference (pod/NAME, deployment/NAME, ...)"
        )),
    }
}

/// The pod to explain and its namespace, and whether it is bound (it then holds a node's
/// resources in the snapshot, which are given back before it is placed again).
pub struct Target {
    pub template: PodTemplate,
    pub namespace: String,
    /// The node a live Pod is bound to, with what it takes of it.
    pub bound: Option<(String, crate::core::cluster::BoundPod)>,
    pub description: String,
    /// What the filters do not weigh ([`crate::ci::explain::caveats`]).
    pub caveats: Vec<String>,
    /// A Pod read from the API server: admission (its RuntimeClass's additions) is behind it.
    pub admitted: bool,
}

fn live_target(kind: Kind, name: &str, ns: &str, v: &Value) -> Result<Target, String> {
    let mut template = workload::parse_value(kind, v).map_err(|e| e.to_string())?;
    let phase = v["status"]["phase"].as_str().unwrap_or("");
    let bound = if kind == Kind::Pod {
        take_binding(&mut template, name, ns, v)
    } else {
        None
    };
    let description = match (kind, &bound) {
        (Kind::Pod, Some((node, _))) => placed_without_itself(ns, name, node),
        (Kind::Pod, None) => format!(
            "pod {ns}/{name} ({})",
            if phase.is_empty() { "no phase" } else { phase }
        ),
        _ => format!("{} {ns}/{name}: a new pod of its template", kind.display()),
    };
    let caveats = crate::ci::explain::caveats(kind, v, false);
    Ok(Target {
        admitted: kind == Kind::Pod,
        template,
        namespace: ns.to_string(),
        bound,
        description,
        caveats,
    })
}

/// What `explain` says of a bound pod it places as if it were scheduled now.
pub fn placed_without_itself(ns: &str, name: &str, node: &str) -> String {
    format!(
        "pod {ns}/{name} is bound to {node}; explained as if it were scheduled now, without itself"
    )
}

/// The node a running pod is bound to and the pod as the cluster counts it there, with the
/// binding taken off `template`, so the pod is placed as if it were scheduled now, without
/// itself. `None` for a pod that is not bound, or has finished (a cluster counts it nowhere;
/// its binding is taken off all the same).
fn take_binding(
    template: &mut PodTemplate,
    name: &str,
    ns: &str,
    v: &Value,
) -> Option<(String, crate::core::cluster::BoundPod)> {
    let node = template.spec.node_name.take().filter(|n| !n.is_empty())?;
    if matches!(v["status"]["phase"].as_str(), Some("Succeeded" | "Failed")) {
        return None;
    }
    // As the cluster counted it: with what its containers hold (a resize under way).
    let status: Option<crate::core::snapshot::SlimStatus> =
        serde_json::from_value(v["status"].clone()).ok();
    let pod = bound_pod(
        name.to_string(),
        ns.to_string(),
        template.template_meta().labels().clone(),
        !v["metadata"]["deletionTimestamp"].is_null(),
        &template.spec,
        status.as_ref(),
    );
    Some((node, pod))
}

/// The binding of a pod given as a file that was taken from the API (it has a `metadata.uid`:
/// `kubectl get -o json`, a dump): placed as a live pod is, as if it were scheduled now.
pub fn file_binding(
    objs: &[crate::k8s::manifest::Object],
    template: &mut PodTemplate,
    ns: &str,
) -> Option<(String, crate::core::cluster::BoundPod)> {
    if template.kind != Kind::Pod {
        return None;
    }
    let o = objs
        .iter()
        .find(|o| o.value["kind"] == "Pod" && crate::k8s::manifest::from_api_server(&o.value))?;
    let name = o.value["metadata"]["name"].as_str().unwrap_or("");
    take_binding(template, name, ns, &o.value)
}

/// The filters' answer for a pod, without the pod itself where it is `bound` and `cluster`
/// holds it there (as if it were scheduled now). `cluster_name` says whose pods these are in
/// the notes ("the cluster", "the dump").
pub fn evaluate_bound(
    cluster: &Cluster,
    template: &PodTemplate,
    ns: &str,
    bound: Option<&(String, crate::core::cluster::BoundPod)>,
    cluster_name: &str,
    admitted_already: bool,
    caveats: &mut Vec<String>,
) -> Result<Vec<filter::NodeResult>, String> {
    // A pod read from the API server carries what its RuntimeClass added when it was created;
    // the class may have changed since, or gone.
    let admitted = if admitted_already {
        Cow::Borrowed(template)
    } else {
        crate::ci::explain::admitted_new_pod(cluster, template, ns, cluster_name, caveats)
    };
    let template = admitted.as_ref();
    let Some((node, pod)) = bound else {
        return Ok(filter::evaluate(cluster, template, ns));
    };
    if cluster.node_index(node).is_none() {
        caveats.push(format!(
            "the pod is bound to node {node:?}, which {cluster_name} does not have: it runs nowhere, and the pod garbage collector deletes such pods"
        ));
        return Ok(filter::evaluate(cluster, template, ns));
    }
    let mut without = cluster.clone();
    if without.remove_pod(node, pod).map_err(|e| e.to_string())? {
        Ok(filter::evaluate(&without, template, ns))
    } else {
        caveats.push(format!(
            "pod {ns}/{} is not among the pods of {cluster_name} on node {node:?} (a snapshot older than the pod, or another cluster's): it is placed as a new pod, beside what runs there",
            pod.name
        ));
        Ok(filter::evaluate(cluster, template, ns))
    }
}

/// A new pod of a live Deployment belongs to its current ReplicaSet and carries its
/// pod-template-hash, which a `matchLabelKeys` entry merges into the pod's selector: set it, so
/// the pods of that ReplicaSet count and those of earlier ones do not. Without it (no current
/// ReplicaSet, or none readable) the pod is placed as the first of a new ReplicaSet, and a
/// caveat says so.
async fn with_current_hash(
    conn: &live::Connection,
    ns: &str,
    deployment: &Value,
    timeout: Duration,
    target: &mut Target,
) {
    match current_template_hash(conn, ns, deployment, timeout).await {
        Ok(Some(hash)) => {
            target.template.set_carried_label(POD_TEMPLATE_HASH, &hash);
            target.description.push_str(&format!(
                " (of its current ReplicaSet, {POD_TEMPLATE_HASH} {hash})"
            ));
        }
        Ok(None) => target.caveats.push(format!(
            "the Deployment has no current ReplicaSet (or it carries no {POD_TEMPLATE_HASH}): its pod is placed as the first of a new one, so {POD_TEMPLATE_HASH} in matchLabelKeys counts none of the running pods"
        )),
        Err(e) => target.caveats.push(format!(
            "cannot read the Deployment's ReplicaSets ({}): its pod is placed as the first of a new ReplicaSet, so {POD_TEMPLATE_HASH} in matchLabelKeys counts none of the running pods",
            e.0
        )),
    }
}

/// The pod-template-hash of a live Deployment's current ReplicaSet, as the deployment
/// controller finds it (`FindNewReplicaSet`): the oldest ReplicaSet it controls whose pod
/// template, without that label, equals the Deployment's (`EqualIgnoreHash`; both come
/// defaulted by the same API server, so their JSON compares).
async fn current_template_hash(
    conn: &live::Connection,
    ns: &str,
    deployment: &Value,
    timeout: Duration,
) -> Result<Option<String>, LiveError> {
    // `EqualIgnoreHash` drops the label from both templates.
    let without_hash = |template: &Value| {
        let mut t = template.clone();
        let hash = t
            .pointer_mut("/metadata/labels")
            .and_then(Value::as_object_mut)
            .and_then(|l| l.remove(POD_TEMPLATE_HASH));
        (t, hash.and_then(|h| h.as_str().map(str::to_string)))
    };
    let uid = deployment["metadata"]["uid"].as_str();
    let (want, _) = without_hash(&deployment["spec"]["template"]);
    // The oldest match, by (creationTimestamp, name) as `ReplicaSetsByCreationTimestamp`
    // orders them (RFC 3339 in UTC: text order is time order), with its hash if it has one.
    let mut oldest: Option<((String, String), Option<String>)> = None;
    // The controller keeps only the ReplicaSets its selector matches (`ClaimReplicaSets`
    // releases a controlled one that no longer does), so only those are listed. A selector
    // that does not convert (invalid; apps/v1 refuses those) lists them all. Adopting
    // orphans is not modelled: an orphan is not controlled.
    let selector = serde_json::from_value::<LabelSelector>(deployment["spec"]["selector"].clone())
        .ok()
        .and_then(|s| kube::core::Selector::try_from(s).ok());
    live::list_each(
        conn,
        Kind::ReplicaSet,
        Some(ns),
        selector.as_ref(),
        timeout,
        |rs| {
            let controlled = controllers(&rs).any(|r| r["uid"].as_str() == uid);
            if !controlled {
                return;
            }
            let (template, hash) = without_hash(&rs["spec"]["template"]);
            if template != want {
                return;
            }
            let key = (
                rs["metadata"]["creationTimestamp"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                rs["metadata"]["name"].as_str().unwrap_or("").to_string(),
            );
            if oldest.as_ref().is_none_or(|(k, _)| key < *k) {
                oldest = Some((key, hash));
            }
        },
    )
    .await?;
    Ok(oldest.and_then(|(_, hash)| hash))
}

/// The revision a new pod of a live StatefulSet or CloneSet is created at, as far as the
/// object tells.
#[derive(Debug, PartialEq)]
enum NewPodRevision<'a> {
    /// Not a kind whose revision the object names, or no revision yet: the pod is placed as
    /// the first of a new revision.
    NotNamed,
    /// `status.updateRevision`: the pod is built from `spec.template` and labelled with it.
    Update(&'a str),
    /// The pod may be of another revision than `spec.template`'s; why, for a caveat (it is
    /// placed as the first of a new revision).
    Unsure(String),
}

/// [`NewPodRevision`] of a live object: a new pod (a StatefulSet's next ordinal, a CloneSet's
/// next replica) is of `status.updateRevision` unless the controller has not yet seen the
/// latest spec (the status names an earlier template's revision) or a rolling update's
/// partition keeps it at the current revision: a StatefulSet's pod of ordinal `replicas` (from
/// the start ordinal) when `partition > replicas` (`newVersionedStatefulSetPod`; OpenKruise's
/// ordered update alike), a CloneSet's while fewer than `partition` pods are at the current
/// revision (`scaleUpNumOldRevision`), which the object alone does not tell.
fn new_pod_revision(kind: Kind, v: &Value) -> NewPodRevision<'_> {
    if !matches!(
        kind,
        Kind::StatefulSet | Kind::KruiseStatefulSet | Kind::CloneSet
    ) {
        return NewPodRevision::NotNamed;
    }
    let status = &v["status"];
    let Some(update) = status["updateRevision"].as_str().filter(|r| !r.is_empty()) else {
        return NewPodRevision::NotNamed;
    };
    let (generation, observed) = (
        v["metadata"]["generation"].as_i64().unwrap_or(0),
        status["observedGeneration"].as_i64().unwrap_or(0),
    );
    if observed < generation {
        return NewPodRevision::Unsure(format!(
            "its controller has not yet observed its latest spec (status.observedGeneration {observed}, metadata.generation {generation}), so status.updateRevision {update} may be an earlier template's: its pod is placed as the first of a new revision"
        ));
    }
    let current = status["currentRevision"].as_str().unwrap_or("");
    if current.is_empty() || current == update {
        return NewPodRevision::Update(update);
    }
    let strategy = &v["spec"]["updateStrategy"];
    let held = match kind {
        Kind::CloneSet => {
            let partition = &strategy["partition"];
            let set = partition.as_i64().is_some_and(|p| p > 0)
                || partition
                    .as_str()
                    .is_some_and(|p| !p.trim_end_matches('%').trim_start_matches('0').is_empty());
            set.then(|| format!("its update is held by partition {partition}, which keeps pods at the current revision {current} (built from that revision's template, not spec.template) while fewer are there"))
        }
        _ => {
            let rolling = strategy["type"]
                .as_str()
                .is_none_or(|t| t == "RollingUpdate");
            let partition = strategy["rollingUpdate"]["partition"].as_i64().unwrap_or(0);
            let replicas = v["spec"]["replicas"].as_i64().unwrap_or(1);
            (rolling && partition > replicas).then(|| format!("its rolling update is held by partition {partition}, above its {replicas} replica(s), so a new pod is of the current revision {current}, built from that revision's template, not spec.template"))
        }
    };
    match held {
        Some(why) => NewPodRevision::Unsure(format!(
            "{why}: its pod is placed as the first of a new revision"
        )),
        None => NewPodRevision::Update(update),
    }
}

/// The labels a pod of `revision` carries: its controller-revision-hash is the revision's
/// name (`setPodRevision`), and OpenKruise's CloneSet also writes the name's last segment as
/// pod-template-hash (`WriteRevisionHash`; with Kruise's `CloneSetShortHash` feature gate on,
/// the controller-revision-hash is that short hash too, which this does not know).
fn revision_labels(kind: Kind, revision: &str) -> Vec<(&'static str, &str)> {
    let mut labels = vec![("controller-revision-hash", revision)];
    if kind == Kind::CloneSet {
        let short = revision.rsplit_once('-').map_or(revision, |(_, h)| h);
        labels.push((POD_TEMPLATE_HASH, short));
    }
    labels
}

/// What `explain` found, what it placed, and what its filters did not weigh.
pub struct Explained {
    pub results: Vec<filter::NodeResult>,
    pub description: String,
    pub caveats: Vec<String>,
}

/// `explain` against the live cluster: the snapshot from the API (or `dump`), the pod from the
/// API or a file.
pub fn explain(
    args: &LiveArgs,
    pod: &str,
    namespace: Option<&str>,
    dump: Option<&Cluster>,
) -> Result<Explained, String> {
    let source = pod_source(pod)?;
    runtime()?.block_on(async {
        let conn = live::connect(&args.connect()).await.map_err(|e| e.0)?;
        let ns = namespace.unwrap_or(&conn.namespace).to_string();
        let source_is_live = matches!(source, PodSource::Live(..));
        let target = match source {
            PodSource::File(path) => {
                let objs = super::read_objects(path)?;
                let (mut template, namespace) =
                    crate::ci::explain::pod_from(&objs, namespace, &conn.namespace)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let bound = file_binding(&objs, &mut template, &namespace);
                let description = match &bound {
                    Some((node, pod)) => format!(
                        "{}: {}",
                        path.display(),
                        placed_without_itself(&namespace, &pod.name, node)
                    ),
                    None => format!("{}", path.display()),
                };
                Target {
                    admitted: crate::ci::explain::admitted_pod(&objs),
                    template,
                    namespace,
                    bound,
                    description,
                    caveats: crate::ci::explain::file_caveats(&objs),
                }
            }
            PodSource::Live(kind, name) => {
                let v = match live::get(&conn, kind, &ns, name, args.timeout()).await {
                    Ok(v) => v,
                    // As kubectl says of a resource type the server does not serve (an
                    // OpenKruise kind without OpenKruise), rather than that the object is missing.
                    // (A 403 too: authorization comes before the resource is looked up.)
                    Err(e)
                        if (e.0.ends_with(" not found") || e.0.contains("403 Forbidden"))
                            && kind.group() == workload::KRUISE_GROUP
                            && live::served(&conn, kind, args.timeout()).await.ok()
                                == Some(false) =>
                    {
                        return Err(format!(
                            "the server doesn't have a resource type \"{}\" ({}/{}: is OpenKruise installed?)",
                            kind.resource(),
                            kind.group(),
                            kind.version()
                        ));
                    }
                    Err(e) if e.0.ends_with(" not found") => {
                        let missing = live::namespace_exists(&conn, &ns, args.timeout())
                            .await
                            .ok()
                            .flatten()
                            == Some(false);
                        return Err(if missing {
                            format!("{}: namespaces {ns:?} not found", e.0)
                        } else {
                            e.0
                        });
                    }
                    Err(e) => return Err(e.0),
                };
                let mut target = live_target(kind, name, &ns, &v)?;
                if kind == Kind::Deployment && target.template.merges_label(POD_TEMPLATE_HASH) {
                    with_current_hash(&conn, &ns, &v, args.timeout(), &mut target).await;
                }
                match new_pod_revision(kind, &v) {
                    NewPodRevision::Update(revision) => {
                        for (key, value) in revision_labels(kind, revision) {
                            target.template.set_carried_label(key, value);
                        }
                        target
                            .description
                            .push_str(&format!(" (of its update revision {revision})"));
                    }
                    NewPodRevision::Unsure(why) => target.caveats.push(why),
                    NewPodRevision::NotNamed => {}
                }
                target
            }
        };
        let listed;
        let cluster = match dump {
            Some(c) => c,
            None => {
                listed = live::snapshot(&conn, args.timeout(), &mut Progress::default())
                    .await
                    .map_err(|e| e.0)?
                    .0;
                &listed
            }
        };
        let mut caveats = target.caveats;
        let results = evaluate_bound(
            cluster,
            &target.template,
            &target.namespace,
            target.bound.as_ref(),
            if dump.is_some() { "the dump" } else { "the cluster" },
            target.admitted,
            &mut caveats,
        )?;
        // With a dump, the cluster the pod came from may not be the one it is placed in: say so.
        let description = match (dump, source_is_live) {
            (Some(_), true) => format!(
                "{} (read from the API server at {}; placed on the nodes of the --cluster dump, not that cluster's)",
                target.description, conn.server
            ),
            _ => target.description,
        };
        Ok(Explained {
            results,
            description,
            caveats,
        })
    })
}

/// Kinds `audit` reads, owners before what they own.
const AUDITED: [Kind; 11] = [
    Kind::CronJob,
    Kind::Job,
    Kind::Deployment,
    Kind::ReplicaSet,
    Kind::StatefulSet,
    Kind::CloneSet,
    Kind::KruiseStatefulSet,
    Kind::DaemonSet,
    Kind::ReplicationController,
    Kind::PodTemplate,
    Kind::Pod,
];

/// The workloads listed so far, by uid, with a digest of the directives rules judge in their
/// pod template. An object they control is judged through them only when its own directives
/// are the same: an orphan, an object whose owner could not be listed, an old ReplicaSet of a
/// Deployment still running or a pod changed since is judged itself. A digest per workload,
/// not the object.
#[derive(Default)]
struct Owners(HashMap<String, Owner>);

/// A listed workload, as its owned objects ask about it.
#[derive(Clone, Copy)]
struct Owner {
    digest: u64,
    /// Whether its template was judged for placement (it creates pods): a suspended CronJob's
    /// was not, so the Job it left running is judged on its own.
    places: bool,
}

/// What rules judge of a pod template, hashed; pods add default tolerations and a nodeName to
/// their template's, so those are left out.
fn directives_digest(kind: Kind, v: &Value) -> u64 {
    let spec = v.pointer(kind.pod_spec_path().json_pointer().as_str());
    let mut h = std::hash::DefaultHasher::new();
    for key in ["affinity", "topologySpreadConstraints", "nodeSelector"] {
        spec.and_then(|s| s.get(key))
            .map(Value::to_string)
            .hash(&mut h);
    }
    h.finish()
}

/// The owner references of `v` that are its controller (one, when the API server admitted it).
fn controllers(v: &Value) -> impl Iterator<Item = &Value> {
    v["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|o| o["controller"] == true)
}

impl Owners {
    /// `v`'s controller, if it is a listed workload whose template judged these directives, or
    /// that keeps `v` scaled to zero (a Deployment's old ReplicaSets: nothing runs them).
    fn judged_through_owner(&self, v: &Value, digest: u64) -> Option<Owner> {
        let idle = v["spec"]["replicas"].as_i64() == Some(0);
        controllers(v).find_map(|o| {
            let audited = Kind::from_api_version(
                o["apiVersion"].as_str().unwrap_or(""),
                o["kind"].as_str().unwrap_or(""),
            )
            .is_some_and(|k| AUDITED.contains(&k));
            let owner = o["uid"].as_str().and_then(|u| self.0.get(u))?;
            (audited && (owner.digest == digest || idle)).then_some(*owner)
        })
    }

    fn listed(&mut self, kind: Kind, v: &Value, owner: Owner) {
        // Pods control nothing audit reads.
        if let (false, Some(uid)) = (kind == Kind::Pod, v["metadata"]["uid"].as_str()) {
            self.0.insert(uid.to_string(), owner);
        }
    }
}

pub struct AuditRun<'a> {
    pub args: &'a LiveArgs,
    pub rules: &'a RuleSet,
    /// `None`: all namespaces.
    pub namespace: Option<String>,
}

pub struct AuditOutcome {
    pub report: Report,
    /// What the user should know besides the findings (stderr).
    pub notes: Vec<String>,
    /// What could not be audited (lists refused, placement not checked): on stderr even with
    /// `--quiet`, since the findings are then not the whole story.
    pub incomplete: Vec<String>,
}

/// `audit`: every Pod and workload through the same evaluation as `check`, and Pending pods and
/// templates that no node can run.
pub fn audit(run: AuditRun) -> Result<AuditOutcome, String> {
    runtime()?.block_on(async {
        let conn = live::connect(&run.args.connect()).await.map_err(|e| e.0)?;
        // A mistyped namespace lists nothing and would pass like a clean one.
        if let Some(ns) = run.namespace.as_deref() {
            if live::namespace_exists(&conn, ns, run.args.timeout())
                .await
                .map_err(|e| e.0)?
                == Some(false)
            {
                return Err(format!("namespaces {ns:?} not found"));
            }
        }
        let mut notes = Vec::new();
        let mut incomplete = Vec::new();
        let mut progress = Progress::default();
        let snapshot = match live::snapshot(&conn, run.args.timeout(), &mut progress).await {
            Ok((c, _)) => Some(c),
            // Rules still apply without the right to read the whole cluster.
            Err(e @ LiveError(_)) if e.0.contains("403 Forbidden") => {
                incomplete.push(format!("placement not checked: {}", e.0));
                let selecting: Vec<String> = run
                    .rules
                    .spec
                    .node_selection
                    .policies
                    .iter()
                    .filter(|p| p.needs_labels())
                    .map(|p| format!("{:?}", p.name))
                    .collect();
                if !selecting.is_empty() {
                    incomplete.push(format!(
                        "node-selection policies {} not judged: they select namespaces by label, and the namespaces were not listed",
                        selecting.join(", ")
                    ));
                }
                None
            }
            Err(e) => return Err(e.0),
        };
        let mut checker = audit_checker(run.rules, snapshot.as_ref());
        let mut owners = Owners::default();
        let mut tally = Tally::default();
        let (mut any_listed, mut refused) = (false, Vec::new());
        let mut read = 0;
        for kind in AUDITED {
            // OpenKruise's kinds only where it is installed.
            if kind.group() == workload::KRUISE_GROUP
                && !live::served(&conn, kind, run.args.timeout())
                    .await
                    .map_err(|e| e.0)?
            {
                continue;
            }
            let ns = run.namespace.as_deref();
            let listed = live::list_each(&conn, kind, ns, None, run.args.timeout(), |v| {
                read += 1;
                progress.update("workloads", read);
                audit_one(
                    &mut checker,
                    snapshot.as_ref(),
                    kind,
                    v,
                    &mut owners,
                    &mut tally,
                );
            })
            .await;
            match listed {
                Ok(_) => any_listed = true,
                // One kind the user may not list does not hide the others.
                Err(e) if e.0.contains("403 Forbidden") => refused.push(e.0),
                Err(e) => return Err(e.0),
            }
        }
        progress.done();
        // Nothing read is no audit: a CI job whose account may list nothing must not pass.
        if !any_listed {
            return Err(format!(
                "nothing audited: every list was refused ({}); grant list on the audited kinds",
                refused.join("; ")
            ));
        }
        incomplete.extend(refused);
        if let Some(why) = snapshot.as_ref().and_then(|c| c.runtime_classes_unread.as_deref()) {
            if tally.unjudged > 0 {
                incomplete.push(format!(
                    "placement not checked for {} template(s) that name a RuntimeClass: the RuntimeClasses could not be listed ({why})",
                    tally.unjudged
                ));
            }
        }
        if let Some(why) = snapshot.as_ref().and_then(|c| c.limit_ranges_unread.as_deref()) {
            notes.push(format!(
                "workload templates were placed without the default requests of LimitRanges, which could not be listed ({why})"
            ));
        }
        if tally.owned > 0 {
            notes.push(format!(
                "{} object(s) owned by an audited workload were judged through their owner's template",
                tally.owned
            ));
        }
        if tally.finished > 0 {
            notes.push(format!(
                "{} finished pod(s) (Succeeded or Failed) were not judged: they hold no node and never run again",
                tally.finished
            ));
        }
        let mut report = checker.finish();
        // Each object was read on its own, not from a file.
        report.files = 0;
        report.from_cluster = true;
        Ok(AuditOutcome {
            report,
            notes,
            incomplete,
        })
    })
}

fn origin(kind: Kind, v: &Value) -> (String, String) {
    let ns = v["metadata"]["namespace"].as_str().unwrap_or("");
    let name = v["metadata"]["name"].as_str().unwrap_or("<unnamed>");
    (
        format!("{ns}/{}/{name}", kind.display()),
        format!("{} {ns}/{name}", kind.display()),
    )
}

/// The reason a Failed pod's kubelet refused it at admission (`lifecycle.predicateAdmitHandler`:
/// a predicate's name, or `OutOf<resource>`), if that is why it failed.
fn kubelet_refusal(v: &Value) -> Option<&str> {
    let reason = v["status"]["reason"].as_str()?;
    let admission = reason.starts_with("OutOf")
        || matches!(
            reason,
            "NodeAffinity"
                | "NodeName"
                | "NodePorts"
                | "TaintToleration"
                | "UnexpectedAdmissionError"
        );
    (v["status"]["phase"] == "Failed" && admission).then_some(reason)
}

/// What `audit` counts beside its findings, for its notes.
#[derive(Default)]
struct Tally {
    /// Objects judged through their owner's template.
    owned: usize,
    /// Finished pods, not judged.
    finished: usize,
    /// Templates naming a RuntimeClass that could not be listed: placement not checked.
    unjudged: usize,
}

/// `audit`'s checker: node-selection policies match the listed Namespaces' labels.
fn audit_checker(rules: &RuleSet, snapshot: Option<&Cluster>) -> Checker {
    let mut checker = Checker::new(rules);
    let none = crate::admission::NamespaceLabels::new();
    let listed = snapshot.map_or(&none, |c| &c.namespaces);
    checker.know_namespaces(listed, crate::ci::check::LabelsFrom::Cluster);
    checker
}

fn audit_one(
    checker: &mut Checker,
    snapshot: Option<&Cluster>,
    kind: Kind,
    v: Value,
    owners: &mut Owners,
    tally: &mut Tally,
) {
    // A finished pod holds no node and never runs again: its rules are not judged. One its
    // node's kubelet refused at admission is a placement that failed: said so.
    if kind == Kind::Pod && matches!(v["status"]["phase"].as_str(), Some("Succeeded" | "Failed")) {
        tally.finished += 1;
        if let Some(reason) = kubelet_refusal(&v) {
            let (at, object) = origin(kind, &v);
            let node = v["spec"]["nodeName"].as_str().unwrap_or("");
            let message = v["status"]["message"].as_str().unwrap_or("");
            checker.infeasible(
                &at,
                &object,
                format!("the kubelet of node {node:?} refused the pod ({reason}): {message}"),
            );
        }
        return;
    }
    let (at, object) = origin(kind, &v);
    let digest = directives_digest(kind, &v);
    let owner = owners.judged_through_owner(&v, digest);
    let through_owner = owner.is_some();
    // A Deployment's ReplicaSets are where it acts: its current one has its template (judged
    // through it), the old ones are only scaled down.
    let by_deployment = kind == Kind::ReplicaSet
        && controllers(&v).any(|o| {
            o["kind"] == "Deployment" && o["uid"].as_str().is_some_and(|u| owners.0.contains_key(u))
        });
    let running_workload = creates_pods(kind, &v) && !by_deployment;
    owners.listed(
        kind,
        &v,
        Owner {
            digest,
            places: running_workload || owner.is_some_and(|o| o.places),
        },
    );
    let ns = v["metadata"]["namespace"]
        .as_str()
        .unwrap_or("")
        .to_string();
    if let Some(cluster) = snapshot {
        let pending_pod = kind == Kind::Pod
            && v["status"]["phase"] == "Pending"
            && v["spec"]["nodeName"].as_str().unwrap_or("").is_empty();
        if pending_pod || running_workload && !owner.is_some_and(|o| o.places) {
            let parsed = workload::parse_value(kind, &v).ok();
            // A workload's pods get what their RuntimeClass adds at admission (a live pod has
            // it already): a template the apiserver would refuse pods of is said to be so, and
            // one whose class could not be listed is not judged, and counted.
            let admitted = parsed.as_ref().and_then(|t| {
                if kind == Kind::Pod {
                    return Some(Cow::Borrowed(t));
                }
                let named = t.spec.runtime_class_name.as_deref().unwrap_or_default();
                // And the default requests of the namespace's LimitRanges.
                match cluster.admitted(t, &ns) {
                    Ok(t) => Some(t),
                    Err(_)
                        if cluster.runtime_classes_unread.is_some()
                            && !cluster.runtime_classes.contains_key(named) =>
                    {
                        tally.unjudged += 1;
                        None
                    }
                    Err(refused) => {
                        checker.infeasible(
                            &at,
                            &object,
                            format!("kube-apiserver refuses the pods of this template: {refused}"),
                        );
                        None
                    }
                }
            });
            if let Some(t) = admitted {
                // What releases a held pod may add tolerations (as the admission rule judges).
                let held = t.held();
                let results = filter::evaluate_with(cluster, &t, &ns, held.is_some());
                if !results.iter().any(|r| r.feasible) {
                    let summary = filter::summary(&results);
                    let when = held.map_or("", workload::Held::clause);
                    let message = if pending_pod && t.spec.is_gated() {
                        format!(
                            "the pod is gated, and once ungated it stays Pending{when}: {summary}"
                        )
                    } else if pending_pod {
                        format!("the pod is Pending and no node can run it now: {summary}")
                    } else {
                        format!("no node can run a new pod of this template now{when}: {summary}")
                    };
                    checker.infeasible(&at, &object, message);
                }
            }
        }
    }
    // Where a pod already runs, judged against the policies of its namespace.
    let placed = match (kind, snapshot, v["spec"]["nodeName"].as_str()) {
        (Kind::Pod, Some(cluster), Some(node)) if !node.is_empty() => cluster
            .node_index(node)
            .map(|i| {
                crate::rules::node_selection::placed_outside(
                    &checker.rules().spec.node_selection,
                    &ns,
                    cluster.namespaces.get(&ns),
                    node,
                    &cluster.nodes[i].labels,
                )
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    if through_owner {
        tally.owned += 1;
        if placed.is_empty() {
            return;
        }
    }
    // The scheduler set the nodeName of a pod bound to a node the snapshot holds: that node is
    // judged as it is (`placed`), so the selection rules judge what the pod asked for, not a
    // node of that name with labels they can only guess.
    let mut v = v;
    // A static pod's mirror: its node's kubelet runs it from a manifest, whatever a selection
    // says, so only where it runs is judged (`placed`).
    let mirror = kind == Kind::Pod
        && !v["metadata"]["annotations"][crate::k8s::model::MIRROR_ANNOTATION].is_null();
    if kind == Kind::Pod
        && snapshot.is_some_and(|c| {
            v["spec"]["nodeName"]
                .as_str()
                .is_some_and(|n| c.node_index(n).is_some())
        })
    {
        if let Some(spec) = v["spec"].as_object_mut() {
            spec.remove("nodeName");
        }
    }
    checker.check_value(&at, v, !through_owner && !mirror, placed);
}

/// Whether a workload will create pods from its template: one scaled to zero, a suspended
/// CronJob or Job, and a Job that has finished (its `Complete` or `Failed` condition is true)
/// will not. A bare PodTemplate creates none itself.
fn creates_pods(kind: Kind, v: &Value) -> bool {
    let spec = &v["spec"];
    match kind {
        Kind::Pod | Kind::PodTemplate => false,
        // Its Jobs are created as its jobTemplate says, suspended or without parallelism too.
        Kind::CronJob => {
            let job = &spec["jobTemplate"]["spec"];
            spec["suspend"] != true
                && job["suspend"] != true
                && job["parallelism"].as_i64() != Some(0)
        }
        Kind::Job => {
            // The controller creates no more pods once it has set one of these (since 1.31
            // `FailureTarget` and `SuccessCriteriaMet` come first).
            let finished = v["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| {
                    matches!(
                        c["type"].as_str(),
                        Some("Complete" | "Failed" | "FailureTarget" | "SuccessCriteriaMet")
                    ) && c["status"] == "True"
                });
            spec["suspend"] != true && spec["parallelism"].as_i64() != Some(0) && !finished
        }
        _ => spec["replicas"].as_i64() != Some(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `audit` keeps across the objects it is fed, for tests that feed them one by one.
    struct Audited {
        checker: Checker,
        owners: Owners,
        tally: Tally,
    }

    impl Audited {
        fn new(rules: &RuleSet, cluster: Option<&Cluster>) -> Audited {
            Audited {
                checker: audit_checker(rules, cluster),
                owners: Owners::default(),
                tally: Tally::default(),
            }
        }

        fn one(&mut self, cluster: Option<&Cluster>, kind: Kind, v: serde_json::Value) {
            audit_one(
                &mut self.checker,
                cluster,
                kind,
                v,
                &mut self.owners,
                &mut self.tally,
            );
        }
    }

    /// The `feasibility` findings of an audit: (origin, message).
    fn feasibility_findings(checker: Checker) -> Vec<(String, String)> {
        checker
            .finish()
            .diagnostics
            .iter()
            .filter(|d| d.rule == "feasibility")
            .map(|d| (d.file.clone(), d.message.clone()))
            .collect()
    }

    #[test]
    fn which_workloads_create_pods() {
        use serde_json::json;
        // A Job whose status has one condition.
        let cond = |t: &str, status: &str| json!({"status": {"conditions": [{"type": t, "status": status}]}});
        let cases = [
            (Kind::CronJob, json!({"spec": {"schedule": "@daily"}}), true),
            (Kind::CronJob, json!({"spec": {"suspend": true}}), false),
            (
                Kind::CronJob,
                json!({"spec": {"jobTemplate": {"spec": {"suspend": true}}}}),
                false,
            ),
            (
                Kind::CronJob,
                json!({"spec": {"jobTemplate": {"spec": {"parallelism": 0}}}}),
                false,
            ),
            (Kind::Job, cond("SuccessCriteriaMet", "True"), false),
            (Kind::Job, cond("FailureTarget", "True"), false),
            (
                Kind::Job,
                json!({"spec": {}, "status": {"active": 1}}),
                true,
            ),
            (Kind::Job, json!({"spec": {"suspend": true}}), false),
            (Kind::Job, json!({"spec": {"parallelism": 0}}), false),
            (Kind::Job, cond("Complete", "True"), false),
            (Kind::Job, cond("Failed", "True"), false),
            (Kind::Job, cond("Suspended", "False"), true),
            (Kind::Deployment, json!({"spec": {"replicas": 0}}), false),
            (Kind::Deployment, json!({"spec": {}}), true),
            (Kind::DaemonSet, json!({"spec": {}}), true),
            (Kind::PodTemplate, json!({}), false),
        ];
        for (kind, v, want) in cases {
            assert_eq!(creates_pods(kind, &v), want, "{kind:?} {v}");
        }
    }

    /// A running pod is placed without its binding and counted apart; a finished one is placed
    /// as a new pod of its spec, and a note says nothing schedules it again.
    #[test]
    fn live_pods_are_placed_as_if_scheduled_now() {
        let pod = |phase: &str| {
            serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "shop"},
                "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]}, "status": {"phase": phase}})
        };
        let running = live_target(Kind::Pod, "p", "shop", &pod("Running")).unwrap();
        assert_eq!(running.bound.as_ref().map(|(n, _)| n.as_str()), Some("n1"));
        assert_eq!(running.template.spec.node_name, None);
        assert!(running.caveats.is_empty(), "{:?}", running.caveats);
        let done = live_target(Kind::Pod, "p", "shop", &pod("Succeeded")).unwrap();
        assert!(done.bound.is_none());
        assert_eq!(done.template.spec.node_name, None);
        assert_eq!(
            done.caveats,
            ["the pod has finished (Succeeded): nothing schedules it again; it is placed as a new pod of the same spec"]
        );
    }

    /// A new pod of a live StatefulSet (apps/v1's or OpenKruise's) or CloneSet is of its
    /// update revision, and carries that revision's labels; unless the controller has not seen
    /// the latest spec, or a partition keeps new pods at the current revision.
    #[test]
    fn a_new_pod_of_a_live_workload_is_of_its_update_revision() {
        use serde_json::json;
        use NewPodRevision::{NotNamed, Unsure, Update};
        let mid_rollout = |spec: Value| {
            json!({"metadata": {"generation": 2}, "spec": spec,
                   "status": {"observedGeneration": 2, "currentRevision": "web-5d8f7c", "updateRevision": "web-7b9c6d"}})
        };
        let rolling = |partition: i64| {
            mid_rollout(
                json!({"replicas": 3, "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": partition}}}),
            )
        };
        let unsure = |v: &NewPodRevision| matches!(v, Unsure(_));
        for kind in [Kind::StatefulSet, Kind::KruiseStatefulSet] {
            // A pod added by scaling up has ordinal `replicas`: the partition holds it only
            // when above that.
            assert_eq!(new_pod_revision(kind, &rolling(0)), Update("web-7b9c6d"));
            assert_eq!(new_pod_revision(kind, &rolling(3)), Update("web-7b9c6d"));
            let held = rolling(999);
            let held = new_pod_revision(kind, &held);
            assert!(unsure(&held), "{kind:?}: {held:?}");
            let on_delete =
                mid_rollout(json!({"replicas": 3, "updateStrategy": {"type": "OnDelete"}}));
            assert_eq!(new_pod_revision(kind, &on_delete), Update("web-7b9c6d"));
        }
        let cloneset = |partition: Value| {
            mid_rollout(json!({"replicas": 3, "updateStrategy": {"partition": partition}}))
        };
        for p in [json!(0), json!("0%"), Value::Null] {
            assert_eq!(
                new_pod_revision(Kind::CloneSet, &cloneset(p.clone())),
                Update("web-7b9c6d"),
                "{p}"
            );
        }
        for p in [json!(1), json!("50%")] {
            assert!(
                unsure(&new_pod_revision(Kind::CloneSet, &cloneset(p.clone()))),
                "{p}"
            );
        }
        // Once the rollout is done a partition holds nothing back.
        let mut done = rolling(999);
        done["status"]["currentRevision"] = json!("web-7b9c6d");
        assert_eq!(
            new_pod_revision(Kind::StatefulSet, &done),
            Update("web-7b9c6d")
        );
        // The status of an earlier spec may name an earlier template's revision.
        let mut stale = rolling(0);
        stale["metadata"]["generation"] = json!(3);
        match new_pod_revision(Kind::StatefulSet, &stale) {
            Unsure(why) => assert!(
                why.contains("observedGeneration 2, metadata.generation 3"),
                "{why}"
            ),
            other => panic!("{other:?}"),
        }
        // Before the controller's first sync there is none; a Deployment's revision is its
        // ReplicaSet's, and a DaemonSet's is not in its status.
        let fresh = json!({"status": {"updateRevision": ""}});
        assert_eq!(new_pod_revision(Kind::StatefulSet, &fresh), NotNamed);
        assert_eq!(new_pod_revision(Kind::CloneSet, &json!({})), NotNamed);
        assert_eq!(new_pod_revision(Kind::Deployment, &rolling(0)), NotNamed);
        assert_eq!(new_pod_revision(Kind::DaemonSet, &rolling(0)), NotNamed);

        assert_eq!(
            revision_labels(Kind::CloneSet, "web-7b9c6d"),
            [
                ("controller-revision-hash", "web-7b9c6d"),
                ("pod-template-hash", "7b9c6d")
            ]
        );
        for kind in [Kind::StatefulSet, Kind::KruiseStatefulSet] {
            assert_eq!(
                revision_labels(kind, "web-7b9c6d"),
                [("controller-revision-hash", "web-7b9c6d")]
            );
        }
    }

    /// A pod that already runs on a node its namespace's policy fences off is reported at
    /// `spec.nodeName`, besides what its selection could reach; one on an allowed node is not.
    #[test]
    fn audit_reports_pods_running_where_their_policy_forbids() {
        let rules = RuleSet::from_yaml(
            "rules.yaml",
            "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  nodeSelection:\n    policies:\n    - name: off-gpu\n      namespaceSelector: {matchLabels: {tenancy: shared}}\n      forbiddenNodes:\n      - matchExpressions: [{key: gpu, operator: Exists}]\n      requiredNodes:\n      - matchExpressions: [{key: pool, operator: In, values: [tenants]}]\n",
        )
        .unwrap();
        let node = |name: &str, labels: serde_json::Value| {
            crate::core::snapshot::node_of(
                serde_json::from_value(
                    serde_json::json!({"metadata": {"name": name, "labels": labels}}),
                )
                .unwrap(),
                false,
            )
        };
        let cluster = Cluster::new(
            vec![
                node(
                    "gpu-1",
                    serde_json::json!({"gpu": "a100", "pool": "tenants"}),
                ),
                node("t-1", serde_json::json!({"pool": "tenants"})),
            ],
            // The policy selects team-a by its label, as the listing gives it.
            [
                (
                    "team-a",
                    std::collections::BTreeMap::from([("tenancy".into(), "shared".into())]),
                ),
                ("team-b", std::collections::BTreeMap::new()),
                ("team-c", std::collections::BTreeMap::new()),
            ]
            .into_iter()
            .map(|(n, l)| (n.to_string(), l))
            .collect(),
        )
        .unwrap();
        let mut audited = Audited::new(&rules, Some(&cluster));
        let inside = serde_json::json!({"pool": "tenants"});
        // team-d is not in the listing: where its pod runs is not judged by the policy, which
        // selects by label, and the audit says so.
        for (name, node, ns) in [
            ("on-gpu", "gpu-1", "team-a"),
            ("fine", "t-1", "team-a"),
            ("unlisted", "gpu-1", "team-d"),
        ] {
            let v = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"nodeName": node, "nodeSelector": inside, "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}]}}}},
                "status": {"phase": "Running"}});
            audited.one(Some(&cluster), Kind::Pod, v);
        }
        // ReplicaSets whose template no node can run: a listed Deployment's (old, being scaled
        // down: the Deployment is where to act) is not warned; one of its own, or one whose
        // Deployment could not be listed, is.
        audited.owners.listed(
            Kind::Deployment,
            &serde_json::json!({"metadata": {"uid": "d-1"}}),
            Owner {
                digest: 0,
                places: true,
            },
        );
        for (name, refs) in [
            (
                "unlisted-owner",
                serde_json::json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "gone", "uid": "d-2", "controller": true}]),
            ),
            (
                "old",
                serde_json::json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d-1", "controller": true}]),
            ),
            ("alone", serde_json::json!([])),
        ] {
            let rs = serde_json::json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": name, "namespace": "team-b", "ownerReferences": refs},
                "spec": {"replicas": 2, "template": {"spec": {"nodeSelector": {"pool": "nowhere"}}}}});
            audited.one(Some(&cluster), Kind::ReplicaSet, rs);
        }
        // CronJobs' Jobs: an active CronJob's template is judged, its Job through it; a
        // suspended one's is not, so the Job it left running is judged on its own.
        for (name, suspend) in [("nightly", true), ("hourly", false)] {
            let template = serde_json::json!({"metadata": {"labels": {"app": name}},
                "spec": {"nodeSelector": {"pool": "nowhere"}, "restartPolicy": "Never"}});
            let cron = serde_json::json!({"apiVersion": "batch/v1", "kind": "CronJob",
                "metadata": {"name": name, "namespace": "team-c", "uid": name},
                "spec": {"schedule": "@daily", "suspend": suspend, "jobTemplate": {"spec": {"template": template}}}});
            let job = serde_json::json!({"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": format!("{name}-1"), "namespace": "team-c", "uid": format!("{name}-1"),
                    "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": name, "uid": name, "controller": true}]},
                "spec": {"template": template}});
            for (kind, v) in [(Kind::CronJob, cron), (Kind::Job, job)] {
                audited.one(Some(&cluster), kind, v);
            }
        }
        // A pod without a selection, which the scheduler bound to an allowed node: its
        // selection is judged as it asked (anything), not as a node named t-1 of unknown labels.
        let bare = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "bare", "namespace": "team-a"},
            "spec": {"nodeName": "t-1"}, "status": {"phase": "Running"}});
        // Static pods' mirrors: their kubelets run them whatever a selection says, so only
        // where they run is judged.
        let mirror = |node: &str| {
            serde_json::json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("static-{node}"), "namespace": "team-a", "annotations": {"kubernetes.io/config.mirror": "abc"}},
            "spec": {"nodeName": node}, "status": {"phase": "Running"}})
        };
        for pod in [bare, mirror("t-1"), mirror("gpu-1")] {
            audited.one(Some(&cluster), Kind::Pod, pod);
        }
        let found: Vec<String> = audited
            .checker
            .finish()
            .diagnostics
            .iter()
            .map(|d| format!("{} {:?} {}: {}", d.file, d.severity, d.path, d.message))
            .collect();
        assert_eq!(
            found,
            [
                "team-a/Pod/bare Error spec.nodeSelector: Forbidden: pods in namespace \"team-a\" may not reach nodes matching \"gpu Exists\" (policy off-gpu); this selection admits a node labelled {gpu: \"\"}",
                "team-a/Pod/bare Error spec.nodeSelector: Forbidden: pods in namespace \"team-a\" must stay on nodes matching \"pool In [tenants]\" (policy off-gpu); this selection admits a node labelled {}, outside them",
                "team-a/Pod/on-gpu Error spec.nodeName: Forbidden: the pod runs on node \"gpu-1\", which matches \"gpu Exists\" that pods in namespace \"team-a\" may not reach (policy off-gpu)",
                "team-a/Pod/static-gpu-1 Error spec.nodeName: Forbidden: the pod runs on node \"gpu-1\", which matches \"gpu Exists\" that pods in namespace \"team-a\" may not reach (policy off-gpu)",
                "team-b/ReplicaSet/alone Warning : no node can run a new pod of this template now: 0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.",
                "team-b/ReplicaSet/alone Warning spec.template.spec: topology spread constraints were not defaulted: the pod template has none of the labels \"app.kubernetes.io/name\", \"app.kubernetes.io/instance\", \"app\" to select its peers by; add one, or set topologySpreadConstraints",
                "team-b/ReplicaSet/unlisted-owner Warning : no node can run a new pod of this template now: 0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.",
                "team-c/CronJob/hourly Warning : no node can run a new pod of this template now: 0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.",
                "team-c/CronJob/hourly Warning spec.jobTemplate.spec.template.spec.topologySpreadConstraints: no topology spread constraints; the webhook would add: maxSkew 3 on kubernetes.io/hostname, maxSkew 5 on topology.kubernetes.io/zone (ScheduleAnyway, selecting app=hourly)",
                "team-c/CronJob/nightly Warning spec.jobTemplate.spec.template.spec.topologySpreadConstraints: no topology spread constraints; the webhook would add: maxSkew 3 on kubernetes.io/hostname, maxSkew 5 on topology.kubernetes.io/zone (ScheduleAnyway, selecting app=nightly)",
                "team-c/Job/nightly-1 Warning : no node can run a new pod of this template now: 0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.",
                "team-d/Pod/unlisted Warning metadata.namespace: policy \"off-gpu\" selects namespaces by label and did not judge this object: the labels of namespace \"team-d\" are not known here",
            ]
        );
    }

    /// What releases a held pod (its gates' remover, Kueue for a queued workload) may add the
    /// tolerations it needs: taints are left out for those, as the admission rule leaves them.
    #[test]
    fn audit_leaves_taints_to_what_releases_a_held_pod() {
        let rules = RuleSet::default();
        let node = |name: &str, spec: serde_json::Value| {
            crate::core::snapshot::node_of(
                serde_json::from_value(serde_json::json!({"metadata": {"name": name, "labels": {"pool": name}}, "spec": spec}))
                    .unwrap(),
                false,
            )
        };
        let cluster = Cluster::new(
            vec![
                node(
                    "gpu",
                    serde_json::json!({"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}),
                ),
                node("old", serde_json::json!({"unschedulable": true})),
            ],
            HashMap::new(),
        )
        .unwrap();
        let gates = serde_json::json!([{"name": "kueue.x-k8s.io/admission"}]);
        let pod = |name: &str, pool: &str, gated: bool| {
            let mut spec = serde_json::json!({"nodeSelector": {"pool": pool}, "containers": []});
            if gated {
                spec["schedulingGates"] = gates.clone();
            }
            (
                Kind::Pod,
                serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "q"},
                    "spec": spec, "status": {"phase": "Pending"}}),
            )
        };
        let deployment = |name: &str, labels: serde_json::Value| {
            (
                Kind::Deployment,
                serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "q", "labels": labels},
                    "spec": {"template": {"spec": {"nodeSelector": {"pool": "gpu"}, "containers": []}}}}),
            )
        };
        let mut audited = Audited::new(&rules, None);
        for (kind, v) in [
            pod("gated-gpu", "gpu", true),
            pod("gated-cordoned", "old", true),
            pod("pending-gpu", "gpu", false),
            deployment(
                "queued",
                serde_json::json!({"kueue.x-k8s.io/queue-name": "team"}),
            ),
            deployment("unqueued", serde_json::json!({})),
        ] {
            audited.one(Some(&cluster), kind, v);
        }
        let found = feasibility_findings(audited.checker);
        let want = [
            ("q/Deployment/unqueued", "no node can run a new pod of this template now: 0/2 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable."),
            ("q/Pod/gated-cordoned", "the pod is gated, and once ungated it stays Pending, even tolerating every taint (what removes its scheduling gates may add tolerations): 0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) were unschedulable."),
            ("q/Pod/pending-gpu", "the pod is Pending and no node can run it now: 0/2 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable."),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()));
        assert_eq!(found, want);
    }

    /// A workload's template that names a RuntimeClass is placed with what the class adds; one
    /// the apiserver would refuse pods of is said to be so; one whose class could not be listed
    /// is not judged, and counted; a live pod has its class's additions already.
    #[test]
    fn audit_places_templates_with_their_runtime_class() {
        let rules = RuleSet::default();
        let node = |name: &str, spec: serde_json::Value| {
            crate::core::snapshot::node_of(
                serde_json::from_value(
                    serde_json::json!({"metadata": {"name": name}, "spec": spec}),
                )
                .unwrap(),
                false,
            )
        };
        let mut cluster = Cluster::new(
            vec![node(
                "gpu",
                serde_json::json!({"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}),
            )],
            HashMap::new(),
        )
        .unwrap();
        cluster.runtime_classes.insert(
            "gpu".into(),
            serde_json::from_value(serde_json::json!({"scheduling": {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}})).unwrap(),
        );
        let deployment = |name: &str, class: &str| {
            serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "q"},
                "spec": {"template": {"spec": {"runtimeClassName": class, "containers": []}}}})
        };
        let found = |cluster: &Cluster| {
            let mut audited = Audited::new(&rules, Some(cluster));
            for (name, class) in [("tolerated", "gpu"), ("unknown", "wasm")] {
                audited.one(Some(cluster), Kind::Deployment, deployment(name, class));
            }
            let pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "q"},
                "spec": {"runtimeClassName": "wasm", "containers": []}, "status": {"phase": "Pending"}});
            audited.one(Some(cluster), Kind::Pod, pod);
            let unjudged = audited.tally.unjudged;
            (feasibility_findings(audited.checker), unjudged)
        };
        let (messages, unjudged) = found(&cluster);
        assert_eq!(
            messages,
            [
                ("q/Deployment/unknown".to_string(), "kube-apiserver refuses the pods of this template: pod rejected: RuntimeClass \"wasm\" not found".to_string()),
                ("q/Pod/p".to_string(), "the pod is Pending and no node can run it now: 0/1 nodes are available: 1 node(s) had untolerated taint(s).".to_string()),
            ]
        );
        assert_eq!(unjudged, 0);
        cluster.runtime_classes_unread = Some("403 Forbidden".into());
        let (messages, unjudged) = found(&cluster);
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert_eq!(unjudged, 1);
    }

    /// The rules each object gets from `audit`: a finished pod none (counted), a live pod no
    /// spread defaults (what the mutating webhook would add can no longer be added to it), its
    /// workload both.
    #[test]
    fn audit_judges_what_can_still_be_acted_on() {
        let rules = RuleSet::default();
        let mut audited = Audited::new(&rules, None);
        let zone_anti_affinity = serde_json::json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "topology.kubernetes.io/zone", "namespaceSelector": {}}]}});
        let objects = [
            (
                Kind::Pod,
                serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "done", "namespace": "shop", "labels": {"app": "web"}},
                    "spec": {"affinity": zone_anti_affinity}, "status": {"phase": "Succeeded"}}),
            ),
            (
                Kind::Pod,
                serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bare", "namespace": "shop", "labels": {"app": "web"}},
                    "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}),
            ),
            (
                Kind::Pod,
                serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "refused", "namespace": "shop"},
                    "spec": {"nodeName": "n1"}, "status": {"phase": "Failed", "reason": "OutOfcpu",
                    "message": "Pod was rejected: Node didn't have enough resource: cpu, requested: 4000, used: 1000, capacity: 2000"}}),
            ),
            (
                Kind::Deployment,
                serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop", "uid": "d1"},
                    "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {}}}}),
            ),
        ];
        for (kind, v) in objects {
            audited.one(None, kind, v);
        }
        assert_eq!(audited.tally.finished, 2);
        let found: Vec<(String, String, String)> = audited
            .checker
            .finish()
            .diagnostics
            .iter()
            .map(|d| (d.file.clone(), d.rule.to_string(), d.message.clone()))
            .collect();
        assert_eq!(
            found,
            [
                (
                    "shop/Deployment/web".to_string(),
                    "topology-spread-defaults".to_string(),
                    "no topology spread constraints; the webhook would add: maxSkew 3 on kubernetes.io/hostname, maxSkew 5 on topology.kubernetes.io/zone (ScheduleAnyway, selecting app=web + matchLabelKeys [pod-template-hash])".to_string()
                ),
                (
                    "shop/Pod/refused".to_string(),
                    "feasibility".to_string(),
                    "the kubelet of node \"n1\" refused the pod (OutOfcpu): Pod was rejected: Node didn't have enough resource: cpu, requested: 4000, used: 1000, capacity: 2000".to_string()
                ),
            ]
        );
    }

    #[test]
    fn pod_arguments_are_files_or_references() {
        let dir = std::env::temp_dir().join(format!("pg-live-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("pod.yaml");
        std::fs::write(&file, "kind: Pod\n").unwrap();
        let f = file.to_str().unwrap();
        assert!(matches!(pod_source(f), Ok(PodSource::File(_))));
        assert!(matches!(
            pod_source("web-1"),
            Ok(PodSource::Live(Kind::Pod, "web-1"))
        ));
        assert!(matches!(
            pod_source("deploy/web"),
            Ok(PodSource::Live(Kind::Deployment, "web"))
        ));
        let err = |s| pod_source(s).err().unwrap();
        assert_eq!(err("missing.yaml"), "no such file \"missing.yaml\", and not a pod or workload reference (pod/NAME, deployment/NAME, ...)");
        assert_eq!(err("./dir/x"), "no such file \"./dir/x\", and not a pod or workload reference (pod/NAME, deployment/NAME, ...)");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// An owned object is passed over only when its controller was listed with the same
    /// directives: not an orphan, not under an owner of another kind, not by a mere owner
    /// reference, not when its template differs from its owner's (an old ReplicaSet).
    #[test]
    fn owned_objects_are_judged_through_their_owner_only_when_it_judged_them() {
        let anti = serde_json::json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "topology.kubernetes.io/zone"}]}});
        let rs = |uid: &str, affinity: &Value| {
            serde_json::json!({"metadata": {"uid": uid},
            "spec": {"template": {"spec": {"affinity": affinity}}}})
        };
        let pod = |api: &str, kind: &str, uid: &str, controller: bool| {
            serde_json::json!({
            "metadata": {"ownerReferences": [{"apiVersion": api, "kind": kind, "name": "x", "uid": uid, "controller": controller}]},
            "spec": {"affinity": anti, "nodeName": "n1", "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}]}})
        };
        let mut owners = Owners::default();
        for (uid, affinity) in [("same", &anti), ("old", &Value::Null)] {
            let v = rs(uid, affinity);
            owners.listed(
                Kind::ReplicaSet,
                &v,
                owner(directives_digest(Kind::ReplicaSet, &v)),
            );
        }
        let clone = rs("clone", &anti);
        owners.listed(
            Kind::CloneSet,
            &clone,
            owner(directives_digest(Kind::CloneSet, &clone)),
        );
        let through = |v: &Value| {
            owners
                .judged_through_owner(v, directives_digest(Kind::Pod, v))
                .is_some()
        };
        // Same directives as its listed owner (nodeName and tolerations aside): through it.
        assert!(through(&pod("apps/v1", "ReplicaSet", "same", true)));
        assert!(through(&pod(
            "apps.kruise.io/v1alpha1",
            "CloneSet",
            "clone",
            true
        )));
        // Owner never listed (gone, or not listable), other directives, not the controller,
        // or an owner kind audit does not read: judged itself.
        assert!(!through(&pod("apps/v1", "ReplicaSet", "gone", true)));
        assert!(!through(&pod("apps/v1", "ReplicaSet", "old", true)));
        assert!(!through(&pod("apps/v1", "ReplicaSet", "same", false)));
        assert!(!through(&pod(
            "apps.kruise.io/v1alpha1",
            "UnitedDeployment",
            "same",
            true
        )));
        // An old ReplicaSet scaled to zero runs nothing: through its owner whatever it holds.
        let mut idle = rs("x", &Value::Null);
        idle["metadata"]["ownerReferences"] =
            pod("apps/v1", "Deployment", "same", true)["metadata"]["ownerReferences"].clone();
        idle["spec"]["replicas"] = 0.into();
        let digest = directives_digest(Kind::ReplicaSet, &idle);
        owners.listed(
            Kind::Deployment,
            &rs("same", &anti),
            owner(directives_digest(Kind::ReplicaSet, &rs("same", &anti))),
        );
        assert!(owners.judged_through_owner(&idle, digest).is_some());
        idle["spec"]["replicas"] = 1.into();
        assert!(owners.judged_through_owner(&idle, digest).is_none());
    }

    fn owner(digest: u64) -> Owner {
        Owner {
            digest,
            places: true,
        }
    }
}
