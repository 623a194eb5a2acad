//! `explain`: a cluster snapshot and a pod (or workload) in, every node's verdict out.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::core::cluster::Cluster;
use crate::core::filter::{self, NodeResult};
use crate::k8s::manifest::Object;
use crate::k8s::workload::{self, Kind, PodTemplate};

/// Why the input cannot be explained (exit 2).
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{0}")]
pub struct ExplainError(pub String);

/// Builds a snapshot from a dump of Nodes, Pods and Namespaces (`kubectl get
/// nodes,pods,namespaces -A -o json|yaml`), streamed: pods that are not bound, or have finished,
/// take nothing. Returns notes on what of the dump it left out: pods bound to a node it lacks,
/// objects of other kinds.
pub fn cluster_from(
    input: impl std::io::Read + Send,
) -> Result<(Cluster, Vec<String>), ExplainError> {
    // Lenient: a dump may hold the pods of a node deleted since (the pod garbage collector
    // has not got to them yet); they run nowhere, as the live cluster's are taken.
    let (cluster, counts) = crate::core::snapshot::read_dump(input, true).map_err(ExplainError)?;
    // Every cluster has namespaces: a dump with no object at all is a `kubectl get ... >
    // dump` that failed (or a manifest), not a cluster where no node fits.
    if counts.objects() == 0 {
        return Err(ExplainError(
            "the dump holds no Node, Pod or Namespace: write it with `kubectl get nodes,pods,namespaces -A -o json`".into(),
        ));
    }
    // Nor is one without nodes (a chart's Namespace, `kubectl get all`): every pod would fit
    // nowhere.
    if counts.nodes == 0 {
        return Err(ExplainError(
            "the dump holds no Node: write it with `kubectl get nodes,pods,namespaces -A -o json`"
                .into(),
        ));
    }
    let mut notes = Vec::new();
    if counts.orphan_pods > 0 {
        notes.push(format!(
            "{} pod(s) of the dump are bound to nodes it does not hold (nodes deleted since, or left out of the dump): they are left out",
            counts.orphan_pods
        ));
    }
    if counts.other_objects > 0 {
        notes.push(format!(
            "{} object(s) of the dump are not Nodes, Pods or Namespaces: the filters do not read them",
            counts.other_objects
        ));
    }
    Ok((cluster, notes))
}

fn type_of(v: &Value) -> (&str, &str) {
    (
        v["apiVersion"].as_str().unwrap_or(""),
        v["kind"].as_str().unwrap_or(""),
    )
}

/// The objects of a file that have a pod template.
fn placeable(objects: &[Object]) -> Vec<(&Object, Kind)> {
    objects
        .iter()
        .filter_map(|o| {
            let (api, kind) = type_of(&o.value);
            Kind::from_api_version(api, kind).map(|k| (o, k))
        })
        .collect()
}

/// Whether the object [`pod_from`] places is a Pod read from the API server (it has a
/// `metadata.uid`): admission, the RuntimeClass plugin's additions included, is behind it.
pub fn admitted_pod(objects: &[Object]) -> bool {
    matches!(placeable(objects).as_slice(), [(o, Kind::Pod)] if crate::k8s::manifest::from_api_server(&o.value))
}

/// [`caveats`] of the object [`pod_from`] places, after what its file's reading warned of (a
/// key written twice, whose last value kubectl keeps and the pod is placed with), at its
/// `line:column`.
pub fn file_caveats(objects: &[Object]) -> Vec<String> {
    match placeable(objects).as_slice() {
        [(o, k)] => {
            let read = o.warnings.iter();
            let mut out: Vec<String> = read
                .map(|(at, w)| format!("{}:{}: {w}", at.line, at.column))
                .collect();
            out.extend(caveats(*k, &o.value, true));
            out
        }
        _ => Vec::new(),
    }
}

/// The pod to place: a Pod, or the pod template of a workload, the one such object of the file
/// (a Service or a ConfigMap beside it is passed over; several are refused, each named, rather
/// than one explained in silence), and its namespace as `kubectl apply -n` decides it: the
/// object's own, which `given` (`-n`) may not contradict, else `given`, else `otherwise`.
pub fn pod_from(
    objects: &[Object],
    given: Option<&str>,
    otherwise: &str,
) -> Result<(PodTemplate, String), ExplainError> {
    let (o, k) = match placeable(objects).as_slice() {
        [one] => *one,
        [] => {
            let first = objects
                .first()
                .ok_or_else(|| ExplainError("no object in the pod file".into()))?;
            let (api, kind) = type_of(&first.value);
            let others = if objects.len() > 1 {
                " (nor is anything else in the file)"
            } else {
                ""
            };
            let what = if kind.is_empty() {
                "an object without kind".to_string()
            } else {
                format!("{api}/{kind}")
            };
            return Err(ExplainError(format!(
                "{what} is not a Pod or a workload with a pod template{others}"
            )));
        }
        several => {
            let names: Vec<String> = several
                .iter()
                .map(|(o, k)| {
                    format!(
                        "{}/{}",
                        k.display(),
                        o.value["metadata"]["name"].as_str().unwrap_or("")
                    )
                })
                .collect();
            return Err(ExplainError(format!(
                "{} objects with a pod template ({}); explain places one: give a file with only the one to place",
                several.len(),
                names.join(", ")
            )));
        }
    };
    // Read strictly first: a quantity that is none (`cpu: lots`) would be read as zero and fit.
    workload::typed(k, &o.value).map_err(|e| ExplainError(e.to_string()))?;
    let t = workload::parse_value(k, &o.value).map_err(|e| ExplainError(e.to_string()))?;
    let ns = match (t.meta.namespace.as_deref(), given) {
        (Some(own), Some(given)) if own != given => {
            return Err(ExplainError(format!(
                "the {}'s namespace, {own:?}, does not match -n {given:?}; pass -n {own} or leave -n out (kubectl refuses the same)",
                k.display()
            )))
        }
        (Some(own), _) => own.to_string(),
        (None, given) => given.unwrap_or(otherwise).to_string(),
    };
    Ok((t, ns))
}

/// What kube-apiserver refuses in the scheduling directives of `v` (an object of `kind` as a
/// file holds it), in its words, with the checks behind `check`'s (`ValidatePodSpec`'s
/// nodeSelector, affinity, tolerations and schedulingGates, topology spread constraints, a
/// required anti-affinity term's topologyKey); a Pod from the API server has its selectors
/// merged already. Then what it refuses in every pod of a workload's template it accepts.
fn refused_placement(kind: Kind, v: &Value) -> (Vec<String>, Vec<String>) {
    use crate::k8s::validation::validate_scheduling;
    use crate::rules::{anti_affinity, spread};
    // One that cannot be read is refused by `pod_from`, in the decoder's words.
    let Ok(t) = workload::parse_value(kind, v) else {
        return (Vec::new(), Vec::new());
    };
    let stored = crate::k8s::manifest::from_api_server(v);
    let labels = (kind == Kind::Pod && !stored).then(|| t.carried_labels());
    let mut errors = validate_scheduling(&t.spec, &t.spec_path(), labels.as_ref());
    errors.extend(spread::refused(&t, !stored));
    errors.extend(anti_affinity::refused_keys(&t));
    let lines = |errors: Vec<crate::k8s::fieldpath::FieldError>| {
        errors.iter().map(ToString::to_string).collect()
    };
    (lines(errors), lines(spread::template_pods_refused(&t)))
}

/// What the filters did not weigh for an object of `kind` (`v` as the API server or a file
/// holds it), each a line for the user: a pod's scheduling gates, another scheduler, volumes
/// and claims the volume and resource plugins would judge, and, for a live Pending pod,
/// kube-scheduler's own last word; of a file's object (`from_file`), what kube-apiserver would
/// refuse in its directives (a live object passed its validation). Without them a pod the
/// scheduler refuses for one of these reasons would be explained as fitting, in silence.
pub fn caveats(kind: Kind, v: &Value, from_file: bool) -> Vec<String> {
    let mut out = Vec::new();
    if let (Kind::Pod, Some(phase @ ("Succeeded" | "Failed"))) =
        (kind, v["status"]["phase"].as_str())
    {
        out.push(format!(
            "the pod has finished ({phase}): nothing schedules it again; it is placed as a new pod of the same spec"
        ));
    }
    let spec = v
        .pointer(kind.pod_spec_path().json_pointer().as_str())
        .unwrap_or(&Value::Null);
    let gates: Vec<&str> = spec["schedulingGates"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g["name"].as_str())
        .collect();
    if kind == Kind::Pod && !gates.is_empty() {
        out.push(format!(
            "the pod has schedulingGates ({}): kube-scheduler does not try to place it until they are removed; explained as if they were",
            gates.join(", ")
        ));
    }
    if let Some(name) = spec["schedulerName"]
        .as_str()
        .filter(|n| !n.is_empty() && *n != "default-scheduler")
    {
        out.push(format!(
            "{} is {name:?}: these are kube-scheduler's filters, and kube-scheduler does not place this pod",
            kind.pod_spec_path().child("schedulerName")
        ));
    }
    let (refused, pods_refused) = if from_file {
        refused_placement(kind, v)
    } else {
        Default::default()
    };
    if !refused.is_empty() {
        out.push(format!(
            "the API server refuses this {} as written, so no scheduler ever sees it: {}",
            kind.display(),
            refused.join("; ")
        ));
    }
    if !pods_refused.is_empty() {
        out.push(format!(
            "the API server accepts this {} but refuses every pod of its template, so no scheduler ever sees one: {}",
            kind.display(),
            pods_refused.join("; ")
        ));
    }
    let mut unmodelled = Vec::new();
    // A StatefulSet's pods each get a claim of every template.
    let claim_templates = match kind {
        Kind::StatefulSet | Kind::KruiseStatefulSet | Kind::CloneSet => {
            v["spec"]["volumeClaimTemplates"].as_array()
        }
        _ => None,
    };
    for claim in claim_templates.into_iter().flatten() {
        let name = claim["metadata"]["name"].as_str().unwrap_or("");
        unmodelled.push(format!("volumeClaimTemplate {name:?}"));
    }
    for volume in spec["volumes"].as_array().into_iter().flatten() {
        if let Some(claim) = volume["persistentVolumeClaim"]["claimName"].as_str() {
            unmodelled.push(format!("persistentVolumeClaim {claim:?}"));
        } else if volume.get("ephemeral").is_some_and(|e| !e.is_null()) {
            let name = volume["name"].as_str().unwrap_or("");
            unmodelled.push(format!("ephemeral volume {name:?}"));
        }
    }
    for claim in spec["resourceClaims"].as_array().into_iter().flatten() {
        let name = claim["name"].as_str().unwrap_or("");
        unmodelled.push(format!("resource claim {name:?}"));
    }
    if !unmodelled.is_empty() {
        out.push(format!(
            "not evaluated: {} (VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits and DynamicResources are not modelled: a node that fits here may still be refused for them)",
            unmodelled.join(", ")
        ));
    }
    if kind == Kind::Pod && v["spec"]["nodeName"].as_str().is_none_or(str::is_empty) {
        let scheduled = v["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            // kube-apiserver, not the scheduler, marks a gated pod SchedulingGated (said above).
            .find(|c| {
                c["type"] == "PodScheduled"
                    && c["status"] == "False"
                    && c["reason"] != "SchedulingGated"
            });
        if let Some(c) = scheduled {
            let reason = c["reason"].as_str().unwrap_or("");
            let message = c["message"].as_str().unwrap_or("");
            if !reason.is_empty() || !message.is_empty() {
                out.push(format!(
                    "kube-scheduler's last word (PodScheduled=False, {reason}): {message}"
                ));
            }
        }
    }
    out
}

pub fn text(results: &[NodeResult]) -> String {
    let mut out = filter::summary(results);
    out.push_str("\n\n");
    let width = results
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(out, "{:width$}  {:8}  REASONS", "NODE", "FEASIBLE");
    for r in results {
        let reasons: Vec<String> = r
            .reasons
            .iter()
            .map(|x| match &x.detail {
                Some(d) => format!("{}: {} ({d})", x.plugin, x.message),
                None => format!("{}: {}", x.plugin, x.message),
            })
            .collect();
        let _ = writeln!(
            out,
            "{:width$}  {:8}  {}",
            r.name,
            if r.feasible { "yes" } else { "no" },
            reasons.join("; ")
        );
    }
    out
}

pub fn json(results: &[NodeResult]) -> String {
    let feasible: Vec<&str> = results
        .iter()
        .filter(|r| r.feasible)
        .map(|r| r.name.as_str())
        .collect();
    let v = json!({"summary": filter::summary(results), "feasible": feasible, "nodes": results});
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}

/// `explain --workloadspread`: how fresh replicas spread over the subsets, what each subset's
/// pods look like after injection, and (with a snapshot) where they fit.
pub fn workloadspread(
    ws_objs: &[Object],
    workload_objs: &[Object],
    replicas: Option<i64>,
    cluster: Option<&Cluster>,
) -> Result<Value, ExplainError> {
    use crate::kruise::workloadspread as wsp;
    // The file's one WorkloadSpread (a rendered chart may hold more objects).
    let spreads: Vec<&Value> = ws_objs
        .iter()
        .map(|o| &o.value)
        .filter(|v| v["kind"] == "WorkloadSpread")
        .collect();
    let raw = match spreads.as_slice() {
        [one] => *one,
        [] => {
            let first = ws_objs
                .first()
                .ok_or_else(|| ExplainError("no object in the WorkloadSpread file".into()))?;
            return Err(ExplainError(format!(
                "expected a WorkloadSpread, found {}",
                first.value["kind"]
            )));
        }
        several => {
            let names: Vec<&str> = several
                .iter()
                .map(|v| v["metadata"]["name"].as_str().unwrap_or("?"))
                .collect();
            return Err(ExplainError(format!(
                "the file holds {} WorkloadSpreads ({}); give a file with the one to explain",
                names.len(),
                names.join(", ")
            )));
        }
    };
    let ws = &wsp::WorkloadSpread::from_value(raw)
        .map_err(|e| ExplainError(format!("cannot read the WorkloadSpread: {e}")))?;
    // The workload: the file's first, or among several the one the WorkloadSpread targets.
    let is_target = |v: &Value| {
        let api = v["apiVersion"].as_str().unwrap_or("");
        ws.target().is_some_and(|(g, k, n)| {
            wsp::parse_group(api) == Some(g.as_str())
                && v["kind"].as_str() == Some(k.as_str())
                && v["metadata"]["name"].as_str() == Some(n.as_str())
        })
    };
    let has_template = |v: &Value| {
        workload::workload_template_path(
            v["apiVersion"].as_str().unwrap_or(""),
            v["kind"].as_str().unwrap_or(""),
        )
        .is_some()
    };
    // Else the first workload (refused below as not the target), else the first object.
    let w = &workload_objs
        .iter()
        .find(|o| is_target(&o.value))
        .or_else(|| workload_objs.iter().find(|o| has_template(&o.value)))
        .or_else(|| workload_objs.first())
        .ok_or_else(|| ExplainError("no object in the workload file".into()))?
        .value;
    let (api, kind) = (
        w["apiVersion"].as_str().unwrap_or(""),
        w["kind"].as_str().unwrap_or(""),
    );
    if workload::workload_template_path(api, kind).is_none() {
        return Err(ExplainError(format!(
            "{api}/{kind} is not a workload a WorkloadSpread can target"
        )));
    }
    // Kruise injects only into pods of the workload the WorkloadSpread targets (group, kind and
    // name; the version may differ).
    let name = w["metadata"]["name"].as_str().unwrap_or("");
    let this = (
        wsp::parse_group(api).unwrap_or("").to_string(),
        kind.to_string(),
        name.to_string(),
    );
    match ws.target() {
        Some(t) if t == this => {}
        Some((g, k, n)) => {
            return Err(ExplainError(format!(
                "WorkloadSpread {} targets {k}.{g} {n}, not {kind}.{} {name}: Kruise injects nothing into this workload's pods",
                ws.name, this.0
            )))
        }
        None => {
            return Err(ExplainError(format!(
                "WorkloadSpread {} has no complete targetRef",
                ws.name
            )))
        }
    }
    let template = workload::workload_template(w).cloned().unwrap_or_default();
    let replicas = replicas
        .or_else(|| w["spec"]["replicas"].as_i64())
        .or_else(|| w["spec"]["parallelism"].as_i64())
        .unwrap_or(1);
    if replicas < 0 {
        return Err(ExplainError(format!(
            "--replicas must not be negative, got {replicas}"
        )));
    }
    if replicas > i64::from(i32::MAX) {
        return Err(ExplainError(format!(
            "{replicas} replicas: at most {} (replicas are 32-bit in Kubernetes)",
            i32::MAX
        )));
    }
    // targetFilter: Kruise manages only the pods its selector picks, and takes percentage caps
    // of the count at replicasPathList.
    let mut base = replicas;
    if let Some(f) = &ws.target_filter {
        let labels: std::collections::BTreeMap<String, String> =
            serde_json::from_value(template["metadata"]["labels"].clone()).unwrap_or_default();
        if !f.selects(&labels) {
            return Err(ExplainError(format!(
                "the targetFilter of WorkloadSpread {} selects none of {kind} {name}'s pods (a missing or invalid selector selects none): Kruise injects nothing into them",
                ws.name
            )));
        }
        match f.replicas(w) {
            Some(Ok(n)) => base = n,
            Some(Err(e)) => return Err(ExplainError(e)),
            None => {}
        }
    }
    let ordinals = (kind == "StatefulSet").then(|| wsp::Ordinals::of(w));
    let dist = wsp::distribute(ws, ordinals.as_ref(), replicas, base);
    let namespace = w["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default")
        .to_string();
    let terms = wsp::subset_terms(ws);
    let mut subsets = Vec::new();
    let spec_at = crate::k8s::fieldpath::FieldPath::new("spec");
    let refused = |spec: &Value| -> Vec<String> {
        crate::kruise::podspec::validate_pod_spec(spec, &spec_at)
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    // What the apiserver refuses in the template itself, once for every subset's pods.
    let mut template_refused: Option<Vec<String>> = None;
    for (i, share) in dist.subsets.iter().enumerate() {
        let (pod, mut patch_error) = wsp::inject(&template, ws, i);
        // A patch that leaves a pod the apiserver refuses (no container left, a duplicate
        // port): what the template alone does not already have.
        if patch_error.is_none() && ws.subsets[i].patch.is_some() {
            let before = template_refused.get_or_insert_with(|| refused(&template["spec"]));
            let added: Vec<String> = refused(&pod["spec"])
                .into_iter()
                .filter(|e| !before.contains(e))
                .collect();
            if !added.is_empty() {
                patch_error = Some(format!(
                    "kube-apiserver refuses the patched pods: {}",
                    added.join("; ")
                ));
            }
        }
        let term = match terms.get(i).map(|(_, t)| t) {
            Some(Some(Some(t))) => t.to_string(),
            Some(Some(None)) => "(empty term: matches no node)".to_string(),
            _ => String::new(),
        };
        let mut entry = json!({
            "name": share.subset, "cap": share.cap, "pods": share.pods,
            "requiredTerm": term, "patchError": patch_error, "pod": pod,
        });
        if let Some(c) = cluster {
            let t = workload::parse_value(Kind::Pod, &pod)
                .map_err(|e| ExplainError(format!("subset {}: {e}", share.subset)))?;
            // With what its RuntimeClass adds at admission (its overhead counts for the room),
            // where the dump holds the class.
            let mut notes = Vec::new();
            let t = admitted_new_pod(c, &t, &namespace, "the dump", &mut notes).into_owned();
            entry["notes"] = json!(notes);
            let results = filter::evaluate(c, &t, &namespace);
            let feasible: Vec<&str> = results
                .iter()
                .filter(|r| r.feasible)
                .map(|r| r.name.as_str())
                .collect();
            // Room for how many of the subset's pods: what the feasible nodes have left, by
            // resources and pod slots (one a node for a pod with host ports); null when some
            // feasible node's resources are not in the dump. What the pods do to each other
            // (their own spread or anti-affinity) is not counted.
            let room = results
                .iter()
                .enumerate()
                .filter(|(_, r)| r.feasible)
                .try_fold(0u64, |sum, (i, _)| {
                    filter::room(&c.nodes[i], &c.usage[i], &t.spec).map(|n| sum.saturating_add(n))
                });
            entry["feasibleNodes"] = json!(feasible);
            entry["room"] = json!(room);
            entry["summary"] = json!(filter::summary(&results));
        }
        subsets.push(entry);
    }
    let mut out = json!({
        "workloadSpread": ws.name,
        "workload": format!("{kind} {}", w["metadata"]["name"].as_str().unwrap_or("")),
        "replicas": replicas,
        "overflow": dist.overflow,
        "subsets": subsets,
    });
    // What Kruise's webhook refuses: such a WorkloadSpread is never created, and the table is
    // what it would do if it were.
    let refused: Vec<String> = wsp::validate(ws)
        .into_iter()
        .filter(|p| p.level == wsp::Level::Error)
        .map(|p| p.error.to_string())
        .collect();
    if !refused.is_empty() {
        out["refused"] = json!(refused);
    }
    // Adaptive: where the pods end up once Kruise has moved those its subsets have no room for.
    if let (Some(secs), Some(_), None) = (
        ws.schedule_strategy.reschedule_seconds(),
        cluster,
        ordinals.as_ref(),
    ) {
        // A subset whose pods the webhook refuses has none Pending to move.
        let rooms: Vec<Option<u64>> = out["subsets"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| s["room"].as_u64().filter(|_| s["patchError"].is_null()))
            .collect();
        let (pods, overflow) = wsp::rescheduled(&dist, &rooms);
        for (s, n) in out["subsets"]
            .as_array_mut()
            .into_iter()
            .flatten()
            .zip(pods)
        {
            s["podsAfterRescheduling"] = json!(n);
        }
        out["adaptive"] = json!({"rescheduleCriticalSeconds": secs, "overflow": overflow});
    }
    // The pods of each subset that never run: all of them when Kruise's webhook refuses them,
    // else those its feasible nodes have no room for (unknown room: none said).
    let adaptive = out["adaptive"].is_object();
    for s in out["subsets"].as_array_mut().into_iter().flatten() {
        let count = s[if adaptive {
            "podsAfterRescheduling"
        } else {
            "pods"
        }]
        .as_u64()
        .unwrap_or(0);
        let refused = !s["patchError"].is_null();
        let pending = if refused || s["feasibleNodes"].as_array().is_some_and(Vec::is_empty) {
            Some(count)
        } else {
            s["room"].as_u64().map(|room| count.saturating_sub(room))
        };
        if let Some(n) = pending.filter(|_| cluster.is_some() || refused) {
            s["pending"] = json!(n);
        }
    }
    Ok(out)
}

/// `template` with what its RuntimeClass adds at admission (overhead, nodeSelector,
/// tolerations), and a caveat saying so; where the class cannot be applied, the template as
/// it is, and a caveat saying why.
pub fn runtime_class_admitted<'a>(
    cluster: &Cluster,
    template: &'a PodTemplate,
    cluster_name: &str,
    caveats: &mut Vec<String>,
) -> Cow<'a, PodTemplate> {
    let Some(name) = template.spec.runtime_class_name.as_deref() else {
        return Cow::Borrowed(template);
    };
    let unknown = !cluster.runtime_classes.contains_key(name);
    match crate::core::runtime_class::admitted(template, &cluster.runtime_classes) {
        Ok(Cow::Owned(t)) => {
            caveats.push(format!(
                "placed with what RuntimeClass {name:?} adds at admission (its overhead, nodeSelector and tolerations)"
            ));
            Cow::Owned(t)
        }
        Ok(same) => same,
        Err(_) if unknown && cluster_name == "the dump" => {
            caveats.push(format!(
                "the pod names RuntimeClass {name:?}, which the dump does not hold: placed without the overhead, nodeSelector and tolerations it adds (dump them too: kubectl get nodes,pods,namespaces,runtimeclasses -A -o json)"
            ));
            Cow::Borrowed(template)
        }
        Err(_) if unknown && cluster.runtime_classes_unread.is_some() => {
            caveats.push(format!(
                "the pod names RuntimeClass {name:?}, but the RuntimeClasses could not be listed ({}): placed without the overhead, nodeSelector and tolerations it adds",
                cluster.runtime_classes_unread.as_deref().unwrap_or_default()
            ));
            Cow::Borrowed(template)
        }
        Err(refused) => {
            caveats.push(format!(
                "kube-apiserver refuses the pod ({refused}); placed as written"
            ));
            Cow::Borrowed(template)
        }
    }
}

/// `template` as admission gives it to a new pod in `namespace` ([`runtime_class_admitted`],
/// then [`limit_range_admitted`]), with caveats saying what was added or could not be.
pub fn admitted_new_pod<'a>(
    cluster: &Cluster,
    template: &'a PodTemplate,
    namespace: &str,
    cluster_name: &str,
    caveats: &mut Vec<String>,
) -> Cow<'a, PodTemplate> {
    let t = runtime_class_admitted(cluster, template, cluster_name, caveats);
    match limit_range_admitted(cluster, &t, namespace, caveats) {
        Cow::Owned(defaulted) => Cow::Owned(defaulted),
        Cow::Borrowed(_) => t,
    }
}

/// `template` with the default requests its namespace's LimitRanges give a new pod's
/// containers at admission, and a caveat saying which; where the LimitRanges could not be
/// listed, the template as it is, and a caveat saying so.
pub fn limit_range_admitted<'a>(
    cluster: &Cluster,
    template: &'a PodTemplate,
    namespace: &str,
    caveats: &mut Vec<String>,
) -> Cow<'a, PodTemplate> {
    if let Some(why) = &cluster.limit_ranges_unread {
        caveats.push(format!(
            "the LimitRanges could not be listed ({why}): placed without the default requests they may give its containers"
        ));
        return Cow::Borrowed(template);
    }
    match crate::core::limit_range::admitted_in(template, &cluster.limit_ranges, namespace) {
        Some((t, said)) => {
            caveats.push(format!(
                "placed with the default requests LimitRanger gives at admission ({})",
                said.join("; ")
            ));
            Cow::Owned(t)
        }
        None => Cow::Borrowed(template),
    }
}

/// How many subsets of a [`workloadspread`] result have pods that never run: given more pods
/// than their feasible nodes have room for (where Adaptive rescheduling leaves them), or
/// refused by Kruise's webhook.
pub fn stranded_subsets(v: &Value) -> usize {
    v["subsets"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["pending"].as_u64().is_some_and(|n| n > 0))
        .count()
}

/// Whether Adaptive rescheduling takes pods from this subset (never the last: Kruise's
/// controller does not reschedule it).
fn moved(s: &Value) -> bool {
    match (s["podsAfterRescheduling"].as_i64(), s["pods"].as_i64()) {
        (Some(after), Some(pods)) => after < pods,
        _ => false,
    }
}

pub fn workloadspread_text(v: &Value) -> String {
    let mut out = format!(
        "WorkloadSpread {} over {}: {} replica(s)\n\n",
        v["workloadSpread"].as_str().unwrap_or(""),
        v["workload"].as_str().unwrap_or(""),
        v["replicas"]
    );
    let rows: Vec<[String; 5]> = v["subsets"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            let feasible = match s["feasibleNodes"].as_array() {
                None => "-".to_string(),
                Some(n) if n.is_empty() => format!(
                    "NONE: {}{}",
                    s["summary"].as_str().unwrap_or(""),
                    if moved(s) { " (Adaptive moves its pods)" } else { "" }
                ),
                Some(n) => {
                    let names = n.iter().filter_map(Value::as_str).collect::<Vec<_>>();
                    let pods = s["pods"].as_u64().unwrap_or(0);
                    let after = s["podsAfterRescheduling"].as_u64();
                    match (s["room"].as_u64(), after) {
                        (Some(room), _) if moved(s) && room < pods => format!(
                            "{} (room for {room} of its {pods} pod(s): Adaptive moves the rest)",
                            names.join(", ")
                        ),
                        (Some(room), Some(after)) if room < after && after != pods => format!(
                            "{} (room for {room} of its {after} pod(s) after rescheduling: the rest stay Pending)",
                            names.join(", ")
                        ),
                        (Some(room), _) if room < after.unwrap_or(pods) => format!(
                            "{} (room for {room} of its {} pod(s): the rest stay Pending)",
                            names.join(", "),
                            after.unwrap_or(pods)
                        ),
                        _ => names.join(", "),
                    }
                }
            };
            [
                s["name"].as_str().unwrap_or("").to_string(),
                s["cap"].as_i64().map_or("-".to_string(), |c| c.to_string()),
                s["pods"].to_string(),
                s["requiredTerm"].as_str().unwrap_or("").to_string(),
                feasible,
            ]
        })
        .collect();
    let head = ["SUBSET", "CAP", "PODS", "REQUIRED TERM", "FEASIBLE NODES"];
    let mut widths: Vec<usize> = head.iter().map(|h| h.len()).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r.iter()) {
            *w = (*w).max(c.len());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                l.push_str(c);
            } else {
                l.push_str(&format!("{c:w$}  ", w = widths[i]));
            }
        }
        l.trim_end().to_string() + "\n"
    };
    out.push_str(&line(head.to_vec()));
    for r in &rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    let overflow = v["overflow"].as_i64().unwrap_or(0);
    if overflow > 0 {
        out.push_str(&format!("\n{overflow} pod(s) find no subset with room: admitted without injection, they can run anywhere\n"));
    }
    let subsets = v["subsets"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if let Some(secs) = v["adaptive"]["rescheduleCriticalSeconds"].as_i64() {
        if subsets.iter().any(moved) {
            let ends: Vec<String> = subsets
                .iter()
                .map(|s| {
                    format!(
                        "{} {}",
                        s["name"].as_str().unwrap_or(""),
                        s["podsAfterRescheduling"]
                    )
                })
                .collect();
            out.push_str(&format!(
                "\nAdaptive: pods Pending over {secs}s in a subset other than the last are deleted and the subset skipped, so they end up: {}\n",
                ends.join(", ")
            ));
            let left = v["adaptive"]["overflow"].as_i64().unwrap_or(0);
            if left > 0 {
                out.push_str(&format!("{left} pod(s) then find no subset with room: admitted without injection, they can run anywhere\n"));
            }
        }
    }
    for s in v["subsets"].as_array().into_iter().flatten() {
        for note in s["notes"].as_array().into_iter().flatten() {
            out.push_str(&format!(
                "subset {}: {}\n",
                s["name"].as_str().unwrap_or(""),
                note.as_str().unwrap_or("")
            ));
        }
        if let Some(e) = s["patchError"].as_str() {
            out.push_str(&format!(
                "subset {}: its pods are never created: {e}\n",
                s["name"].as_str().unwrap_or(""),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::manifest;

    const SNAPSHOT: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: node1, labels: {topology.kubernetes.io/zone: zoneA, kubernetes.io/hostname: node1}}
- apiVersion: v1
  kind: Node
  metadata: {name: node2, labels: {topology.kubernetes.io/zone: zoneA, kubernetes.io/hostname: node2}}
- apiVersion: v1
  kind: Node
  metadata: {name: node3, labels: {topology.kubernetes.io/zone: zoneB, kubernetes.io/hostname: node3}}
  spec:
    taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
- apiVersion: v1
  kind: Node
  metadata: {name: node4, labels: {topology.kubernetes.io/zone: zoneB, kubernetes.io/hostname: node4}}
- apiVersion: v1
  kind: Namespace
  metadata: {name: default}
- {apiVersion: v1, kind: Pod, metadata: {name: a, namespace: default, labels: {foo: bar}}, spec: {nodeName: node1}}
- {apiVersion: v1, kind: Pod, metadata: {name: b, namespace: default, labels: {foo: bar}}, spec: {nodeName: node2}}
- {apiVersion: v1, kind: Pod, metadata: {name: done, namespace: default, labels: {foo: bar}}, spec: {nodeName: node4}, status: {phase: Succeeded}}
- {apiVersion: v1, kind: Pod, metadata: {name: pending, namespace: default, labels: {foo: bar}}, spec: {}}
"#;

    const POD: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  selector: {matchLabels: {foo: bar}}
  template:
    metadata: {labels: {foo: bar}}
    spec:
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {foo: bar}}}
"#;

    fn run() -> Vec<NodeResult> {
        let (cluster, _) = cluster_from(SNAPSHOT.as_bytes()).unwrap();
        let (pod, ns) = pod_from(&manifest::parse(POD).unwrap(), None, "default").unwrap();
        filter::evaluate(&cluster, &pod, &ns)
    }

    /// As `kubectl apply -n`: a file's object without a namespace goes to -n, else to the
    /// context's (or `default` beside a dump); one with a namespace keeps it, and -n may not
    /// contradict it.
    /// A key written twice in the placed object is said, where it is: the pod is placed with
    /// the last value, as kubectl would create it.
    #[test]
    fn a_key_written_twice_is_a_caveat() {
        let objects = crate::k8s::manifest::parse(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  nodeSelector: {zone: a}\n  nodeSelector: {zone: b}\n  containers: [{name: c, image: i}]\n",
        )
        .unwrap();
        assert_eq!(
            file_caveats(&objects),
            ["6:3: duplicated key in mapping: \"nodeSelector\": kubectl keeps the last value, and the one before it is lost"]
        );
        let (t, _) = pod_from(&objects, None, "default").unwrap();
        assert_eq!(t.spec.node_selector.unwrap()["zone"], "b");
    }

    #[test]
    fn a_files_namespace_is_decided_as_kubectl_decides_it() {
        let pod = |ns: &str| format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: p{ns}}}\n");
        let cases: [(String, Option<&str>, Result<&str, &str>); 5] = [
            (pod(""), None, Ok("ctx")),
            (pod(""), Some("team"), Ok("team")),
            (pod(", namespace: shop"), None, Ok("shop")),
            (pod(", namespace: shop"), Some("shop"), Ok("shop")),
            (
                pod(", namespace: shop"),
                Some("team"),
                Err("the Pod's namespace, \"shop\", does not match -n \"team\"; pass -n shop or leave -n out (kubectl refuses the same)"),
            ),
        ];
        for (text, given, want) in cases {
            let got = pod_from(&manifest::parse(&text).unwrap(), given, "ctx")
                .map(|(_, ns)| ns)
                .map_err(|e| e.0);
            assert_eq!(
                got.as_deref().map_err(String::as_str),
                want,
                "{text} -n {given:?}"
            );
        }
    }

    #[test]
    fn explains_a_workload_against_a_snapshot() {
        insta::assert_snapshot!(text(&run()));
        insta::assert_snapshot!(json(&run()));
    }

    #[test]
    fn bad_snapshots_are_refused_with_the_reason() {
        let cases = [
            // Nothing a snapshot takes: a manifest, or a `kubectl get` of something else.
            ("apiVersion: v1\nkind: List\nitems:\n- kind: ConfigMap\n  metadata: {name: c}\n", "the dump holds no Node, Pod or Namespace: write it with `kubectl get nodes,pods,namespaces -A -o json`"),
            ("apiVersion: v1\nkind: Node\nmetadata:\n  labels: [1]\n", "expected mapping start at line 4, column 11"),
        ];
        for (text, want) in cases {
            let err = cluster_from(text.as_bytes()).unwrap_err();
            assert_eq!(err.0, want);
        }
        // A chart's Namespace given as the dump: no node to place anything on.
        let err =
            cluster_from("apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n".as_bytes())
                .unwrap_err();
        assert_eq!(
            err.0,
            "the dump holds no Node: write it with `kubectl get nodes,pods,namespaces -A -o json`"
        );
        // A dump of `kubectl get all`, and a pod of a node deleted since: the rest is read,
        // and what was left out is noted.
        let (cluster, notes) = cluster_from(
            "apiVersion: v1\nkind: List\nitems:\n- {kind: Node, metadata: {name: n1}}\n- {kind: Deployment, apiVersion: apps/v1, metadata: {name: web}, spec: {replicas: 2, template: {spec: {containers: [{name: c}]}}}}\n- {kind: Service, apiVersion: v1, metadata: {name: web}, spec: {selector: {app: web}, ports: [{port: 80}]}}\n- {kind: Node, apiVersion: longhorn.io/v1beta2, metadata: {name: n1, namespace: longhorn-system}}\n- {kind: Pod, metadata: {name: p, namespace: d}, spec: {nodeName: ghost}}\n- {kind: Pod, metadata: {name: q, namespace: d}, spec: {nodeName: n1}}\n- {apiVersion: example.com/v1, kind: Pod, metadata: {name: x}, spec: {containers: 3, nodeName: [n1]}, status: {allocatable: full}}\n- {kind: Widget, spec: {taints: yes}, status: {phase: [1]}}\n"
                .as_bytes(),
        )
        .unwrap();
        assert!(cluster.node_index("n1").is_some());
        // The same in JSON, read by the splitter's pieces: custom resources' fields that share
        // a name with the Pod's and Node's are not read.
        let json = r#"{"apiVersion": "v1", "kind": "List", "items": [
            {"kind": "Node", "metadata": {"name": "n1"}},
            {"apiVersion": "example.com/v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {"containers": 3}},
            {"kind": "Widget", "spec": {"taints": true}, "status": {"phase": [1]}}]}"#;
        let (_, json_notes) = cluster_from(json.as_bytes()).unwrap();
        assert_eq!(
            json_notes,
            ["2 object(s) of the dump are not Nodes, Pods or Namespaces: the filters do not read them"]
        );
        assert_eq!(
            notes,
            [
                "1 pod(s) of the dump are bound to nodes it does not hold (nodes deleted since, or left out of the dump): they are left out",
                "5 object(s) of the dump are not Nodes, Pods or Namespaces: the filters do not read them",
            ]
        );
        let err = pod_from(
            &manifest::parse("apiVersion: v1\nkind: Service\n").unwrap(),
            None,
            "default",
        )
        .unwrap_err();
        assert_eq!(
            err.0,
            "v1/Service is not a Pod or a workload with a pod template"
        );
        let err = pod_from(
            &manifest::parse("apiVersion: v1\nmetadata: {name: x}\n").unwrap(),
            None,
            "default",
        )
        .unwrap_err();
        assert_eq!(
            err.0,
            "an object without kind is not a Pod or a workload with a pod template"
        );
        // A Service beside the workload is passed over; two workloads are refused, named.
        let service = "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n---\n";
        let (pod, _) = pod_from(
            &manifest::parse(&format!("{service}{POD}")).unwrap(),
            None,
            "default",
        )
        .unwrap();
        assert_eq!(pod.kind, Kind::Deployment);
        let two = format!("{POD}---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\n");
        let err = pod_from(&manifest::parse(&two).unwrap(), None, "default").unwrap_err();
        assert_eq!(
            err.0,
            "2 objects with a pod template (Deployment/web, Pod/p); explain places one: give a file with only the one to place"
        );
        let err = pod_from(
            &manifest::parse(&format!("{service}apiVersion: v1\nkind: ConfigMap\n")).unwrap(),
            None,
            "default",
        )
        .unwrap_err();
        assert_eq!(
            err.0,
            "v1/Service is not a Pod or a workload with a pod template (nor is anything else in the file)"
        );
    }
}

#[cfg(test)]
mod caveat_tests {
    use super::*;

    #[test]
    fn what_the_filters_do_not_weigh_is_said() {
        let cases: Vec<(&str, Kind, Value, Vec<&str>)> = vec![
            (
                "a plain pending pod",
                Kind::Pod,
                json!({"spec": {"containers": []}, "status": {"phase": "Pending"}}),
                vec![],
            ),
            (
                "a gated pod",
                Kind::Pod,
                json!({"spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}, {"name": "b"}]}}),
                vec!["the pod has schedulingGates (kueue.x-k8s.io/admission, b): kube-scheduler does not try to place it until they are removed; explained as if they were"],
            ),
            (
                "another scheduler",
                Kind::Pod,
                json!({"spec": {"schedulerName": "my-scheduler"}}),
                vec!["spec.schedulerName is \"my-scheduler\": these are kube-scheduler's filters, and kube-scheduler does not place this pod"],
            ),
            (
                "the default scheduler named",
                Kind::Pod,
                json!({"spec": {"schedulerName": "default-scheduler"}}),
                vec![],
            ),
            (
                "volumes and claims in a Deployment's template",
                Kind::Deployment,
                json!({"spec": {"template": {"spec": {"volumes": [
                    {"name": "data", "persistentVolumeClaim": {"claimName": "nope"}},
                    {"name": "tmp", "emptyDir": {}},
                    {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}
                ], "resourceClaims": [{"name": "gpu", "resourceClaimName": "g"}]}}}}),
                vec!["not evaluated: persistentVolumeClaim \"nope\", ephemeral volume \"scratch\", resource claim \"gpu\" (VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits and DynamicResources are not modelled: a node that fits here may still be refused for them)"],
            ),
            (
                "a pending pod the scheduler refused",
                Kind::Pod,
                json!({"spec": {}, "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/6 nodes are available: persistentvolumeclaim \"nope\" not found."}]}}),
                vec!["kube-scheduler's last word (PodScheduled=False, Unschedulable): 0/6 nodes are available: persistentvolumeclaim \"nope\" not found."],
            ),
            (
                "a bound pod's old condition is not repeated",
                Kind::Pod,
                json!({"spec": {"nodeName": "n1"}, "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "old"}]}}),
                vec![],
            ),
            (
                "a StatefulSet's claim templates, and its scheduler at its path",
                Kind::StatefulSet,
                json!({"spec": {"volumeClaimTemplates": [{"metadata": {"name": "data"}}], "template": {"spec": {"schedulerName": "volcano"}}}}),
                vec![
                    "spec.template.spec.schedulerName is \"volcano\": these are kube-scheduler's filters, and kube-scheduler does not place this pod",
                    "not evaluated: volumeClaimTemplate \"data\" (VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits and DynamicResources are not modelled: a node that fits here may still be refused for them)",
                ],
            ),
            (
                "a gated pod's SchedulingGated condition is kube-apiserver's, not repeated",
                Kind::Pod,
                json!({"spec": {"schedulingGates": [{"name": "g"}]}, "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated", "message": "Scheduling is blocked due to non-empty scheduling gates"}]}}),
                vec!["the pod has schedulingGates (g): kube-scheduler does not try to place it until they are removed; explained as if they were"],
            ),
            (
                "a workload's gates are its pods' business at creation",
                Kind::Deployment,
                json!({"spec": {"template": {"spec": {"schedulingGates": [{"name": "g"}]}}}}),
                vec![],
            ),
            (
                "node affinity and tolerations the apiserver refuses, at their paths",
                Kind::Deployment,
                json!({"spec": {"template": {"spec": {
                    "affinity": {"nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]}]}]},
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 1, "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists", "values": ["a"]}]}}]}},
                    "tolerations": [{"key": "gpu", "operator": "Exists", "value": "yes"}]}}}}),
                vec!["the API server refuses this Deployment as written, so no scheduler ever sees it: spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].values: Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector; spec.template.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'; spec.template.spec.tolerations[0].operator: Invalid value: \"yes\": value must be empty when `operator` is 'Exists'"],
            ),
            (
                "a Pod as written: its nodeSelector, gates, pod affinity, spread constraints and anti-affinity key, as check reports them",
                Kind::Pod,
                json!({"metadata": {"labels": {"app": "web"}}, "spec": {
                    "nodeSelector": {"zone": "a b"},
                    "schedulingGates": [{"name": "g"}, {"name": "g"}],
                    "affinity": {
                        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": ""}]},
                        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone/"}]}},
                    "topologySpreadConstraints": [
                        {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                         "labelSelector": {"matchLabels": {"app": "web"}}},
                        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                         "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]},
                         "matchLabelKeys": ["app"]}]}}),
                vec![
                    "the pod has schedulingGates (g, g): kube-scheduler does not try to place it until they are removed; explained as if they were",
                    "the API server refuses this Pod as written, so no scheduler ever sees it: spec.nodeSelector: Invalid value: \"a b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?'); \
                     spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty; \
                     spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: \"\": name part must be non-empty; \
                     spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'); \
                     spec.schedulingGates[1]: Duplicate value: \"g\"; \
                     spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero; \
                     spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value: \"{zone, DoNotSchedule}\"; \
                     spec.topologySpreadConstraints[1].matchLabelKeys[0]: Invalid value: \"app\": exists in both matchLabelKeys and labelSelector; \
                     spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: \"zone/\": name part must be non-empty; \
                     spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: \"zone/\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                ],
            ),
            (
                "a template the apiserver accepts and whose every pod it refuses",
                Kind::Deployment,
                json!({"spec": {"template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                    "topologySpreadConstraints": [
                        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                         "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]},
                         "matchLabelKeys": ["app"]}]}}}}),
                vec!["the API server accepts this Deployment but refuses every pod of its template, so no scheduler ever sees one: spec.template.spec.topologySpreadConstraints[0].matchLabelKeys[0]: Invalid value: \"app\": exists in both matchLabelKeys and labelSelector: the apiserver accepts the template, but merges the key into each pod's selector and then refuses every pod (remove it from matchLabelKeys or from the selector)"],
            ),
            (
                "a Pod read from the API server was merged when it was stored",
                Kind::Pod,
                json!({"metadata": {"uid": "u", "labels": {"app": "web"}}, "spec": {
                    "topologySpreadConstraints": [
                        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                         "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]},
                         "matchLabelKeys": ["app"]}]}}),
                vec![],
            ),
        ];
        for (name, kind, v, want) in cases {
            assert_eq!(caveats(kind, &v, true), want, "{name}");
            // A live object passed kube-apiserver's validation: only a file's is judged.
            let refused = |c: &String| c.starts_with("the API server");
            assert!(!caveats(kind, &v, false).iter().any(refused), "{name}");
        }
    }

    /// Under Adaptive rescheduling the last subset is never rescheduled: pods beyond its room
    /// stay Pending there and say so, and they make the result a failure.
    #[test]
    fn adaptive_rows_say_which_pods_move_and_which_stay_pending() {
        let v = json!({"workloadSpread": "w", "workload": "CloneSet c", "replicas": 9,
            "overflow": 0, "adaptive": {"rescheduleCriticalSeconds": 30, "overflow": 0},
            "subsets": [
                {"name": "a", "cap": 4, "pods": 4, "podsAfterRescheduling": 2, "room": 2,
                    "feasibleNodes": ["n1"], "requiredTerm": "", "pending": 0},
                {"name": "d", "cap": null, "pods": 5, "podsAfterRescheduling": 7, "room": 4,
                    "feasibleNodes": ["n2"], "requiredTerm": "", "pending": 3}]});
        let text = workloadspread_text(&v);
        assert!(
            text.contains("n1 (room for 2 of its 4 pod(s): Adaptive moves the rest)"),
            "{text}"
        );
        assert!(
            text.contains(
                "n2 (room for 4 of its 7 pod(s) after rescheduling: the rest stay Pending)"
            ),
            "{text}"
        );
        assert!(text.contains("they end up: a 2, d 7"), "{text}");
        assert_eq!(stranded_subsets(&v), 1);
    }
}
