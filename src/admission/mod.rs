//! AdmissionReview in, AdmissionReview out. Pure: the HTTPS handlers and the `review` command both
//! call [`review`], so a request replayed offline gets exactly the server's answer. The body is
//! read in one pass by [`reader`]; this module turns the verdict into the response.

mod reader;
mod response;

use crate::k8s::workload::Kind;
use crate::kruise::workloadspread::WorkloadSpread;
use crate::rules::{
    self, ClusterState, Context, Input, LabelsNotFound, Operation, Phase, RuleId, RuleSet, Subject,
    User, Verdict,
};
pub use reader::JsonReader;
use reader::{Slot, Use};

pub const API_VERSION: &str = "admission.k8s.io/v1";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Validate,
    Mutate,
}

impl Endpoint {
    fn phase(self) -> Phase {
        match self {
            Endpoint::Validate => Phase::Validate,
            Endpoint::Mutate => Phase::Mutate,
        }
    }
}

/// Why a body got no AdmissionReview answer.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReviewError {
    /// The request is unusable; the server answers HTTP 400 with this text.
    #[error("{0}")]
    BadRequest(String),
    /// Our own fault; the server answers 500 with a generic body and logs this.
    #[error("internal error: {0}")]
    Internal(String),
}

/// The answer to one AdmissionReview, with what the logs need.
#[derive(Debug)]
pub struct Reviewed {
    /// The response AdmissionReview, serialized.
    pub body: Vec<u8>,
    pub allowed: bool,
    pub uid: String,
    pub namespace: String,
    pub name: String,
    pub operation: &'static str,
    pub rules: Vec<RuleId>,
    pub verdict: Option<Verdict>,
}

/// Answers one AdmissionReview body, without the live cluster.
pub fn review(body: &[u8], endpoint: Endpoint, rules: &RuleSet) -> Result<Reviewed, ReviewError> {
    review_in(body, endpoint, rules, ClusterState::Absent)
}

/// Answers one AdmissionReview body; `cluster` is what `serve --cluster-aware` knows of the
/// live cluster.
pub fn review_in(
    body: &[u8],
    endpoint: Endpoint,
    rules: &RuleSet,
    cluster: ClusterState,
) -> Result<Reviewed, ReviewError> {
    review_either(body, endpoint, rules, cluster, None, None)
}

impl Reviewed {
    /// Some node-selection policy could not tell whether it applies: the labels of the
    /// request's namespace were not in the cluster cache (the server then reads the namespace
    /// from the API server and asks again, [`review_in_namespace`]).
    pub fn namespace_labels_missing(&self) -> bool {
        self.verdict.as_ref().is_some_and(|v| {
            v.unchecked
                .iter()
                .any(|&(rule, _)| rule == rules::node_selection::ID)
        })
    }
}

/// [`review_in`] with what the server found of the request's namespace beyond its cache: its
/// labels, or why not (said in the note of the policies that could not judge).
pub fn review_in_namespace(
    body: &[u8],
    endpoint: Endpoint,
    rules: &RuleSet,
    cluster: ClusterState,
    namespace: &str,
    found: Result<std::collections::BTreeMap<String, String>, LabelsNotFound>,
) -> Result<Reviewed, ReviewError> {
    match found {
        Ok(labels) => {
            let namespaces = NamespaceLabels::from([(namespace.to_string(), labels)]);
            review_either(body, endpoint, rules, cluster, Some(&namespaces), None)
        }
        Err(why) => review_either(body, endpoint, rules, cluster, None, Some(why)),
    }
}

/// A body the on-demand reader cannot answer is answered by the reference, so that every
/// refusal carries serde_json's reason (the on-demand reader may also have passed over a
/// malformed value no rule reads).
fn review_either(
    body: &[u8],
    endpoint: Endpoint,
    rules: &RuleSet,
    cluster: ClusterState,
    namespaces: Option<&NamespaceLabels>,
    not_found: Option<LabelsNotFound>,
) -> Result<Reviewed, ReviewError> {
    let known = Known {
        namespaces,
        not_found,
    };
    review_with(body, JsonReader::OnDemand, endpoint, rules, cluster, known)
        .or_else(|_| review_with(body, JsonReader::Reference, endpoint, rules, cluster, known))
}

/// What the caller knows of namespaces beyond the cluster cache.
#[derive(Clone, Copy, Default)]
struct Known<'a> {
    /// Their labels by name (a namespace missing here is said to be so).
    namespaces: Option<&'a NamespaceLabels>,
    /// Why the request's namespace's labels were not found elsewhere.
    not_found: Option<LabelsNotFound>,
}

/// [`review`] with the labels of the namespaces (`test`: a suite's `namespaces.yaml`), which
/// node-selection policies with a `namespaceSelector` match, as a server's cluster cache would
/// give them.
pub fn review_with_namespaces(
    body: &[u8],
    endpoint: Endpoint,
    rules: &RuleSet,
    namespaces: &NamespaceLabels,
) -> Result<Reviewed, ReviewError> {
    review_either(
        body,
        endpoint,
        rules,
        ClusterState::Absent,
        Some(namespaces),
        None,
    )
}

/// Namespace names and their labels.
pub type NamespaceLabels =
    std::collections::HashMap<String, std::collections::BTreeMap<String, String>>;

/// [`review`] with serde_json reading the whole body: the reference the on-demand reader is
/// held to (tests, fuzzing, benchmarks).
#[doc(hidden)]
pub fn review_reference(
    body: &[u8],
    endpoint: Endpoint,
    rules: &RuleSet,
) -> Result<Reviewed, ReviewError> {
    review_with(
        body,
        JsonReader::Reference,
        endpoint,
        rules,
        ClusterState::Absent,
        Known::default(),
    )
}

/// The byte ranges of the values the on-demand reader skips in a body it reads, `None` when it
/// refuses the body (the differential tests blank them and compare with the reference).
#[doc(hidden)]
pub fn skipped_values(
    body: &[u8],
    endpoint: Endpoint,
    rules: &RuleSet,
) -> Option<Vec<std::ops::Range<usize>>> {
    let text = simdutf8::basic::from_utf8(body).ok()?;
    let mut skips = Vec::new();
    let read = reader::Read::Direct {
        phase: endpoint.phase(),
        rules,
        cluster_aware: false,
    };
    reader::read_review_on_demand(text, read, Some(&mut skips)).ok()?;
    Some(skips)
}

/// `body` with each of the `skipped` byte ranges blanked: an object becomes `{}`, an array `[]`,
/// anything else `null` (the differential tests: the reference must answer it as the on-demand
/// reader answered `body`). Empty containers rather than `null`, because some skipped values
/// sit where a view requires an object (an UPDATE's old metadata).
#[doc(hidden)]
pub fn blank_skipped(body: &[u8], skipped: &[std::ops::Range<usize>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut at = 0;
    for r in skipped {
        out.extend_from_slice(body.get(at..r.start).unwrap_or_default());
        out.extend_from_slice(match body.get(r.start) {
            Some(b'{') => b"{}",
            Some(b'[') => b"[]",
            _ => b"null",
        });
        at = r.end;
    }
    out.extend_from_slice(body.get(at..).unwrap_or_default());
    out
}

fn review_with(
    body: &[u8],
    json: JsonReader,
    endpoint: Endpoint,
    rules: &RuleSet,
    cluster: ClusterState,
    known: Known,
) -> Result<Reviewed, ReviewError> {
    let phase = endpoint.phase();
    let cluster_aware = !matches!(cluster, ClusterState::Absent);
    let req = reader::parse_review(body, json, phase, rules, cluster_aware)?;
    let op = reader::operation(&req.operation);
    let reviewed = Reviewed {
        body: Vec::new(),
        allowed: true,
        uid: req.uid,
        namespace: req.namespace.unwrap_or_default(),
        name: req.name,
        operation: op.as_str(),
        rules: Vec::new(),
        verdict: None,
    };
    let user = User {
        username: req.user_info.username.as_deref().unwrap_or(""),
        groups: req.user_info.groups.as_deref().unwrap_or(&[]),
    };
    let used = reader::use_of(
        &req.kind,
        op,
        req.sub_resource.as_deref(),
        false,
        phase,
        rules,
        cluster_aware,
    );
    let input = |object, old_object| Input {
        phase,
        operation: op,
        namespace: &reviewed.namespace,
        user,
        object,
        old_object,
        context: Context {
            cluster,
            namespace_labels: known.namespaces.and_then(|n| n.get(&reviewed.namespace)),
            // Given none (`review` without --namespaces, a suite without namespaces.yaml), the
            // note says how to give them instead.
            labels_not_found: match known.namespaces {
                Some(n) if !n.is_empty() && !n.contains_key(&reviewed.namespace) => {
                    Some(LabelsNotFound::NotGiven)
                }
                _ => known.not_found,
            },
            ..Context::default()
        },
    };
    let verdict = match used {
        Use::Spread => {
            let object = spread_of(req.object, "object", op)?;
            let old = match op {
                Operation::Update => Some(spread_of(req.old_object, "oldObject", op)?),
                _ => None,
            };
            rules::evaluate(
                &input(
                    Subject::WorkloadSpread(&object),
                    old.as_ref().map(Subject::WorkloadSpread),
                ),
                rules,
            )
        }
        Use::Template(kind, _) => {
            let object = reader::template_of(req.object, kind, "object", op)?;
            let old = match op {
                Operation::Update => {
                    Some(reader::template_of(req.old_object, kind, "oldObject", op)?)
                }
                _ => None,
            };
            rules::evaluate(
                &input(
                    Subject::Template(&object),
                    old.as_deref().map(Subject::Template),
                ),
                rules,
            )
        }
        Use::Compared(kind) => {
            let changed = match (&req.object, &req.old_object) {
                (Slot::Raw(new), Slot::Raw(old)) => template_changed(kind, new.get(), old.get()),
                _ => None,
            };
            let object = reader::template_of(req.object, kind, "object", op)?;
            let old = reader::template_of(req.old_object, kind, "oldObject", op)?;
            let mut input = input(Subject::Template(&object), Some(Subject::Template(&old)));
            input.context.template_changed = changed;
            rules::evaluate(&input, rules)
        }
        Use::Ignore => {
            let mut reviewed = reviewed;
            reviewed.body = response::encode(&reviewed.uid, None);
            return Ok(reviewed);
        }
    };
    finish(reviewed, verdict)
}

/// Whether an UPDATE changes the pod template, the two objects' templates compared as JSON
/// values; `None` when either object is not JSON (reading it as a template then says why).
fn template_changed(kind: Kind, new: &str, old: &str) -> Option<bool> {
    let pointer = kind.template_path().json_pointer();
    let new: serde_json::Value = serde_json::from_str(new).ok()?;
    let old: serde_json::Value = serde_json::from_str(old).ok()?;
    Some(new.pointer(pointer.as_str()) != old.pointer(pointer.as_str()))
}

/// A WorkloadSpread the single pass kept raw.
fn spread_of(slot: Slot, field: &str, op: Operation) -> Result<WorkloadSpread, ReviewError> {
    match slot {
        Slot::Raw(raw) => {
            let bad = |at: &str, e: &dyn std::fmt::Display| {
                let at = if at.is_empty() || at == "." {
                    String::new()
                } else {
                    format!(".{at}")
                };
                ReviewError::BadRequest(format!(
                    "request.{field}{at}: cannot read WorkloadSpread: {e}"
                ))
            };
            let value: serde_json::Value =
                serde_json::from_str(raw.get()).map_err(|e| bad("", &e))?;
            WorkloadSpread::from_value(&value).map_err(|e| bad(&e.path, &e.message))
        }
        Slot::Absent => Err(ReviewError::BadRequest(format!(
            "request.{field} is required for {} of workloadspreads",
            op.as_str()
        ))),
        Slot::Read(_) | Slot::Skipped => Err(ReviewError::Internal(format!(
            "request.{field} of a WorkloadSpread was not kept raw"
        ))),
    }
}

/// Puts a verdict into the response and the decision record.
fn finish(mut reviewed: Reviewed, verdict: Verdict) -> Result<Reviewed, ReviewError> {
    reviewed.body = response::encode(&reviewed.uid, Some(&verdict));
    reviewed.allowed = verdict.allowed();
    reviewed.rules = verdict.rules_run.clone();
    reviewed.verdict = Some(verdict);
    Ok(reviewed)
}

/// Serializes the response review.
/// The request's object with a mutation's patch applied: what the apiserver will store.
pub fn patched_object(body: &[u8], reviewed: &Reviewed) -> Result<serde_json::Value, ReviewError> {
    let review: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| ReviewError::BadRequest(format!("request body is not valid JSON: {e}")))?;
    let mut object = review["request"]["object"].clone();
    if let Some(v) = &reviewed.verdict {
        let ops = v
            .patch_ops()
            .map_err(|e| ReviewError::Internal(format!("the patch is not valid JSON: {e}")))?;
        json_patch::patch(&mut object, &ops).map_err(|e| {
            ReviewError::Internal(format!("the patch does not apply to request.object: {e}"))
        })?;
    }
    Ok(object)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        let path = format!(
            "{}/testdata/admission-reviews/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn answer(name: &str) -> serde_json::Value {
        let r = review(&fixture(name), Endpoint::Validate, &RuleSet::default()).unwrap();
        serde_json::from_slice(&r.body).unwrap()
    }

    #[test]
    fn recorded_requests_get_the_expected_verdicts() {
        let cases = [
            ("pod-update-add-nodeselector-gated.validate.json", true),
            ("pod-update-add-nodeselector-gated-2.validate.json", true),
            (
                "pod-update-add-required-nodeaffinity-gated.validate.json",
                true,
            ),
            (
                "pod-update-add-nodeaffinity-expression-gated.validate.json",
                true,
            ),
            ("pod-update-add-toleration-gated.validate.json", true),
            ("pod-update-ungate-and-add-nodeselector.validate.json", true),
            ("pod-update-ungate-only.validate.json", true),
            ("pod-update-labels-only-ungated.validate.json", true),
            ("pod-update-denied.validate.json", true),
            ("pod-create-gated.validate.json", true),
            (
                "deployment-update-template-add-nodeselector.validate.json",
                true,
            ),
            // The apiserver refused this one before any validating webhook; we refuse it too.
            (
                "pod-update-remove-nodeselector-key-gated.mutate.json",
                false,
            ),
        ];
        for (name, allowed) in cases {
            let a = answer(name);
            assert_eq!(a["response"]["allowed"], allowed, "{name}: {a}");
            assert_eq!(a["apiVersion"], "admission.k8s.io/v1");
            assert_eq!(a["kind"], "AdmissionReview");
            let uid = serde_json::from_slice::<serde_json::Value>(&fixture(name)).unwrap()
                ["request"]["uid"]
                .clone();
            assert_eq!(a["response"]["uid"], uid, "{name}");
        }
    }

    #[test]
    fn warnings_for_namespace_scoped_anti_affinity() {
        let a = answer("statefulset-create-zone-anti-affinity.validate.json");
        assert_eq!(
            a["response"]["warnings"][0],
            "hard-anti-affinity: spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Forbidden: hard anti-affinity on \"topology.kubernetes.io/zone\" in namespace \"demo\" lets this pod block every matching pod there from a whole zone; allowed keys: kubernetes.io/hostname"
        );
        let a = answer("replicaset-create-hostname-anti-affinity-namespaces.validate.json");
        assert!(a["response"].get("warnings").is_none());
    }

    #[test]
    fn mutate_answers_with_a_base64_json_patch() {
        use base64::Engine;
        let body = fixture("pod-create-jsonpatch-spread.mutate.json");
        let r = review(&body, Endpoint::Mutate, &RuleSet::default()).unwrap();
        let a: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(a["response"]["allowed"], true);
        assert_eq!(a["response"]["patchType"], "JSONPatch");
        let raw = base64::engine::general_purpose::STANDARD
            .decode(a["response"]["patch"].as_str().unwrap())
            .unwrap();
        let patch: json_patch::Patch = serde_json::from_slice(&raw).unwrap();
        let mut object = serde_json::from_slice::<serde_json::Value>(&body).unwrap()["request"]
            ["object"]
            .clone();
        json_patch::patch(&mut object, &patch).unwrap();
        assert_eq!(object, patched_object(&body, &r).unwrap());
        assert_eq!(
            object["spec"]["topologySpreadConstraints"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        // Validation of the same request (as the apiserver sends it after mutation) then passes.
        let v = review(
            &fixture("pod-create-jsonpatch-spread.validate.json"),
            Endpoint::Validate,
            &RuleSet::default(),
        )
        .unwrap();
        assert!(v.allowed);
        // Objects that already have constraints are left alone.
        let r = review(
            &fixture("pod-create-topology-spread.mutate.json"),
            Endpoint::Mutate,
            &RuleSet::default(),
        )
        .unwrap();
        let a: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert!(a["response"].get("patch").is_none());
    }

    #[test]
    fn workloadspreads_are_validated_only_when_enabled() {
        let body = br#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"w1","kind":{"group":"apps.kruise.io","version":"v1alpha1","kind":"WorkloadSpread"},"resource":{"group":"apps.kruise.io","version":"v1alpha1","resource":"workloadspreads"},"name":"s","namespace":"demo","operation":"CREATE","userInfo":{"username":"admin"},"object":{"apiVersion":"apps.kruise.io/v1alpha1","kind":"WorkloadSpread","metadata":{"name":"s"},"spec":{"targetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},"subsets":[{"name":"a","maxReplicas":"60%"},{"name":"b","maxReplicas":"60%"}]}}}}"#;
        let off = review(body, Endpoint::Validate, &RuleSet::default()).unwrap();
        assert!(off.allowed && off.rules.is_empty());
        let mut rules = RuleSet::default();
        rules.spec.workload_spread.enabled = true;
        let on = review(body, Endpoint::Validate, &rules).unwrap();
        assert!(!on.allowed);
        let v: serde_json::Value = serde_json::from_slice(&on.body).unwrap();
        assert_eq!(
            v["response"]["status"]["message"],
            "spec.subsets[1].maxReplicas: Invalid value: \"60%\": the percentages of maxReplicas add up to 120% by this subset, more than 100%"
        );
    }

    /// Kruise's TestValidateWorkloadSpreadTargetRefUpdate: group, kind and name are fixed on
    /// UPDATE; the version may change.
    #[test]
    fn workloadspread_target_is_immutable_on_update() {
        let spread = |api: &str, kind: &str, name: &str| {
            serde_json::json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread", "metadata": {"name": "s"},
                "spec": {"targetRef": {"apiVersion": api, "kind": kind, "name": name}, "subsets": [{"name": "a"}]}})
        };
        let update = |new: serde_json::Value| {
            let body = serde_json::json!({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": {
                "uid": "u", "kind": {"group": "apps.kruise.io", "version": "v1alpha1", "kind": "WorkloadSpread"},
                "resource": {"group": "apps.kruise.io", "version": "v1alpha1", "resource": "workloadspreads"},
                "name": "s", "namespace": "demo", "operation": "UPDATE", "userInfo": {"username": "admin"},
                "object": new, "oldObject": spread("apps.kruise.io/v1alpha1", "CloneSet", "cs")}});
            let mut rules = RuleSet::default();
            rules.spec.workload_spread.enabled = true;
            let r = review(
                &serde_json::to_vec(&body).unwrap(),
                Endpoint::Validate,
                &rules,
            )
            .unwrap();
            let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
            (
                r.allowed,
                v["response"]["status"]["message"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            )
        };
        assert!(
            update(spread("apps.kruise.io/v1beta1", "CloneSet", "cs")).0,
            "the version may change"
        );
        for (api, kind, name) in [
            ("apps/v1", "CloneSet", "cs"),
            ("apps.kruise.io/v1alpha1", "StatefulSet", "cs"),
            ("apps.kruise.io/v1alpha1", "CloneSet", "other"),
        ] {
            let (allowed, message) = update(spread(api, kind, name));
            assert!(!allowed, "{api} {kind} {name}");
            assert!(
                message.contains("spec.targetRef: Invalid value:")
                    && message.contains("change TargetReference is not permitted for WorkloadSpread: it targets CloneSet.apps.kruise.io cs"),
                "{message}"
            );
        }
    }

    #[test]
    fn cronjob_denial_snapshot() {
        insta::assert_json_snapshot!(answer("cronjob-create-region-anti-affinity.validate.json"));
    }

    #[test]
    fn denial_response_snapshot() {
        insta::assert_json_snapshot!(answer(
            "pod-update-remove-nodeselector-key-gated.mutate.json"
        ));
    }

    #[test]
    fn bad_bodies_are_bad_requests() {
        let rules = RuleSet::default();
        let cases: [(&[u8], &str); 8] = [
            (b"not json", "request body is not valid JSON: expected ident at line 1 column 2"),
            (b"{\"kind\": \"AdmissionReview\"", "request body is not valid JSON: EOF while parsing an object at line 1 column 26"),
            (b"[1,2]", "request body is not an AdmissionReview: expected a JSON object"),
            (b"{\"kind\":\"Pod\",\"apiVersion\":\"v1\"}", "request body is not an AdmissionReview: kind is \"Pod\", expected \"AdmissionReview\""),
            (b"{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1beta1\"}", "unsupported AdmissionReview apiVersion \"admission.k8s.io/v1beta1\"; this server speaks \"admission.k8s.io/v1\" (set admissionReviewVersions: [v1])"),
            (b"{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\"}", "AdmissionReview has no request"),
            (b"{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\",\"request\":{\"uid\":\"1\"}}", "request body is not an AdmissionReview: missing field `kind` at line 1 column 82"),
            (b"{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\",\"request\":{\"uid\":\"1\",\"kind\":5}}", "request body is not an AdmissionReview: invalid type: integer `5`, expected struct GroupVersionKind at line 1 column 90"),
        ];
        for (body, want) in cases {
            let err = review(body, Endpoint::Validate, &rules).unwrap_err();
            assert_eq!(
                err,
                ReviewError::BadRequest(want.to_string()),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    fn pod_update(object: &str, old: &str) -> Vec<u8> {
        format!(
            r#"{{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{{"uid":"u1","kind":{{"group":"","version":"v1","kind":"Pod"}},"resource":{{"group":"","version":"v1","resource":"pods"}},"name":"p","namespace":"demo","operation":"UPDATE","userInfo":{{"username":"admin"}}{object}{old}}}}}"#
        )
        .into_bytes()
    }

    #[test]
    fn objects_that_cannot_be_read_are_bad_requests() {
        let rules = RuleSet::default();
        let cases = [
            (pod_update(r#","object":{"spec":{}}"#, ""), "request.oldObject is required for UPDATE of pods"),
            (pod_update("", r#","oldObject":{"spec":{}}"#), "request.object is required for UPDATE of pods"),
            (
                pod_update(r#","object":{"kind":"Deployment","spec":{}}"#, r#","oldObject":{"spec":{}}"#),
                r#"request.object.kind: cannot read Pod: object has kind "Deployment", expected "Pod""#,
            ),
            (
                pod_update(r#","object":{"spec":{"nodeSelector":"x"}}"#, r#","oldObject":{"spec":{}}"#),
                "request.object.spec.nodeSelector: cannot read Pod: Invalid value: \"x\": must be an object",
            ),
            (
                pod_update(r#","object":[1]"#, r#","oldObject":{"spec":{}}"#),
                "request.object: cannot read Pod: expected a JSON object",
            ),
            // serde's derived structs would read an empty array as an empty object.
            (
                pod_update(r#","object":{"spec":{}}"#, r#","oldObject":[]"#),
                "request.oldObject: cannot read Pod: expected a JSON object",
            ),
            (
                pod_update(r#","object":{"spec":{}}"#, r#","oldObject":{"spec":{}},"object":{}"#),
                "request body is not an AdmissionReview: duplicate field `object` at line 1 column 324",
            ),
        ];
        for (body, want) in cases {
            let err = review(&body, Endpoint::Validate, &rules).unwrap_err();
            assert_eq!(err, ReviewError::BadRequest(want.to_string()));
        }
    }

    #[test]
    fn requests_no_rule_cares_about_are_allowed_without_reading_objects() {
        let rules = RuleSet::default();
        // Broken objects prove they were not read.
        let status = String::from_utf8(pod_update(r#","object":7"#, r#","oldObject":7"#))
            .unwrap()
            .replace(
                r#""namespace":"demo""#,
                r#""namespace":"demo","subResource":"status""#,
            );
        let delete = String::from_utf8(pod_update(r#","object":7"#, r#","oldObject":7"#))
            .unwrap()
            .replace("UPDATE", "DELETE");
        let other = String::from_utf8(pod_update(r#","object":7"#, r#","oldObject":7"#))
            .unwrap()
            .replace(r#""kind":"Pod""#, r#""kind":"ConfigMap""#);
        for body in [status, delete, other] {
            let r = review(body.as_bytes(), Endpoint::Validate, &rules).unwrap();
            assert!(r.allowed);
            assert!(r.rules.is_empty());
        }
    }

    fn slots(body: &[u8], phase: Phase) -> (String, String) {
        let name = |s: &Slot| {
            match s {
                Slot::Absent => "absent",
                Slot::Read(_) => "read",
                Slot::Raw(_) => "raw",
                Slot::Skipped => "skipped",
            }
            .to_string()
        };
        let rules = RuleSet::default();
        let r = reader::read_review(
            body,
            reader::Read::Direct {
                phase,
                rules: &rules,
                cluster_aware: false,
            },
        )
        .unwrap();
        let req = r.request.unwrap();
        (name(&req.object), name(&req.old_object))
    }

    #[test]
    fn objects_are_read_in_the_same_pass_when_the_apiserver_order_allows() {
        let s = |a: &str, b: &str| (a.to_string(), b.to_string());
        let gated = fixture("pod-update-add-nodeselector-gated.validate.json");
        assert_eq!(slots(&gated, Phase::Validate), s("read", "read"));
        let create = fixture("pod-create-jsonpatch-spread.mutate.json");
        assert_eq!(slots(&create, Phase::Mutate), s("read", "absent"));
        // Nothing reads a ConfigMap or a status update: skipped, not kept.
        let other = String::from_utf8(pod_update(r#","object":{}"#, r#","oldObject":{}"#))
            .unwrap()
            .replace(r#""kind":"Pod""#, r#""kind":"ConfigMap""#);
        assert_eq!(
            slots(other.as_bytes(), Phase::Validate),
            s("skipped", "skipped")
        );
        let status = String::from_utf8(pod_update(r#","object":{}"#, r#","oldObject":{}"#))
            .unwrap()
            .replace(
                r#""namespace":"demo""#,
                r#""namespace":"demo","subResource":"status""#,
            );
        assert_eq!(
            slots(status.as_bytes(), Phase::Validate),
            s("skipped", "skipped")
        );
        // Objects before `operation` (keys sorted): kept raw, read afterwards.
        let sorted =
            serde_json::to_vec(&serde_json::from_slice::<serde_json::Value>(&gated).unwrap())
                .unwrap();
        assert_eq!(slots(&sorted, Phase::Validate), s("raw", "raw"));
    }

    /// The recorded Deployment UPDATE's request with `object` and `oldObject` as given, in the
    /// apiserver's field order.
    fn deployment_update(object: &serde_json::Value, old: &serde_json::Value) -> Vec<u8> {
        format!(
            r#"{{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{{"uid":"u1","kind":{{"group":"apps","version":"v1","kind":"Deployment"}},"resource":{{"group":"apps","version":"v1","resource":"deployments"}},"name":"web","namespace":"demo","operation":"UPDATE","userInfo":{{"username":"admin"}},"object":{object},"oldObject":{old}}}}}"#
        )
        .into_bytes()
    }

    /// A workload's UPDATE gets spread defaults only when it changes the pod template: added
    /// to the unchanged template of a Deployment created before the rule, they would roll out
    /// all its pods on a `kubectl annotate`. Both readers answer alike.
    #[test]
    fn workload_updates_are_defaulted_only_when_the_template_changes() {
        let recorded: serde_json::Value = serde_json::from_slice(&fixture(
            "deployment-update-template-add-nodeselector.validate.json",
        ))
        .unwrap();
        let new = &recorded["request"]["object"];
        let old = &recorded["request"]["oldObject"];
        assert_ne!(new["spec"]["template"], old["spec"]["template"]);
        let mut annotated = old.clone();
        annotated["metadata"]["annotations"] = serde_json::json!({"owner": "me"});
        let mut scaled = old.clone();
        scaled["spec"]["replicas"] = serde_json::json!(7);
        let mut with_constraints = old.clone();
        with_constraints["spec"]["template"]["spec"]["topologySpreadConstraints"] = serde_json::json!([{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "web"}}}]);
        let cases = [
            ("the template changes", new, old, true),
            ("an annotation is added", &annotated, old, false),
            ("replicas change", &scaled, old, false),
            ("nothing changes", old, old, false),
            // Server-side apply drops fields the applier's manager owns and no longer sends,
            // the defaults added at CREATE among them: they are added again.
            (
                "the update drops the constraints",
                old,
                &with_constraints,
                true,
            ),
        ];
        let rules = RuleSet::default();
        for (name, object, old_object, want_patch) in cases {
            let body = deployment_update(object, old_object);
            assert_eq!(
                slots(&body, Phase::Mutate),
                ("raw".to_string(), "raw".to_string()),
                "{name}"
            );
            let r = review(&body, Endpoint::Mutate, &rules).unwrap();
            let reference = review_reference(&body, Endpoint::Mutate, &rules).unwrap();
            assert_eq!(r.body, reference.body, "{name}");
            assert!(r.allowed, "{name}");
            assert!(
                r.rules
                    .iter()
                    .any(|id| id.as_str() == "topology-spread-defaults"),
                "{name}: {:?}",
                r.rules
            );
            let a: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
            assert_eq!(
                a["response"].get("patch").is_some(),
                want_patch,
                "{name}: {a}"
            );
            if want_patch {
                let patched = patched_object(&body, &r).unwrap();
                assert_eq!(
                    patched["spec"]["template"]["spec"]["topologySpreadConstraints"]
                        .as_array()
                        .map(Vec::len),
                    Some(2),
                    "{name}"
                );
            }
        }
        // A Job's template is immutable but for the scheduling directives of a suspended Job
        // (Kueue sets them as it unsuspends the Job): constraints added then would make
        // kube-apiserver refuse the update, so a Job is defaulted at CREATE only.
        let job = |node_selector: serde_json::Value, suspend: bool| {
            serde_json::json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": "demo", "labels": {"app": "train"}},
                "spec": {"suspend": suspend, "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}},
                    "template": {"metadata": {"labels": {"app": "train", "batch.kubernetes.io/controller-uid": "u"}},
                        "spec": {"nodeSelector": node_selector, "restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}})
        };
        let body = String::from_utf8(deployment_update(
            &job(serde_json::json!({"flavor": "a100"}), false),
            &job(serde_json::json!({}), true),
        ))
        .unwrap()
        .replace(
            r#"{"group":"apps","version":"v1","kind":"Deployment"}"#,
            r#"{"group":"batch","version":"v1","kind":"Job"}"#,
        )
        .replace(
            r#"{"group":"apps","version":"v1","resource":"deployments"}"#,
            r#"{"group":"batch","version":"v1","resource":"jobs"}"#,
        );
        let r = review(body.as_bytes(), Endpoint::Mutate, &rules).unwrap();
        assert!(r.rules.is_empty(), "{:?}", r.rules);
        let a: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert!(a["response"].get("patch").is_none(), "{a}");
        // The validating endpoint reads the same UPDATE in one pass, as before.
        let body = deployment_update(new, old);
        assert_eq!(
            slots(&body, Phase::Validate),
            ("read".to_string(), "read".to_string())
        );
    }

    #[test]
    fn the_answer_does_not_depend_on_field_order() {
        let dir = format!("{}/testdata/admission-reviews", env!("CARGO_MANIFEST_DIR"));
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".json"))
            .collect();
        names.sort();
        assert!(names.len() > 30);
        let mut rules = RuleSet::default();
        rules.spec.workload_spread.enabled = true;
        for name in names {
            let body = fixture(&name);
            // serde_json's map sorts keys: `object` then comes before `operation`.
            let sorted =
                serde_json::to_vec(&serde_json::from_slice::<serde_json::Value>(&body).unwrap())
                    .unwrap();
            for endpoint in [Endpoint::Validate, Endpoint::Mutate] {
                let a = review(&body, endpoint, &rules).unwrap();
                let b = review(&sorted, endpoint, &rules).unwrap();
                assert_eq!(
                    String::from_utf8(a.body).unwrap(),
                    String::from_utf8(b.body).unwrap(),
                    "{name} {endpoint:?}"
                );
                assert_eq!(a.rules, b.rules, "{name}");
            }
        }
    }
}

#[cfg(test)]
mod warning_lengths {
    use super::*;

    /// A warning's length without its quoted values (user data, of any length).
    pub(super) fn unquoted_len(w: &str) -> usize {
        let mut n = 0;
        let mut quoted = false;
        let mut escaped = false;
        for c in w.chars() {
            match (quoted, escaped, c) {
                (true, false, '\\') => escaped = true,
                (true, true, _) => escaped = false,
                (_, false, '"') => quoted = !quoted,
                (false, _, _) => n += 1,
                _ => {}
            }
        }
        n
    }

    /// The limits the README states: explanations of refused updates are one line under 120
    /// characters apart from quoted values; every other warning (a finding in the apiserver's
    /// format, or advice) is one line of at most 200 apart from quoted values and its field path.
    #[test]
    fn every_warning_on_every_recorded_request_keeps_the_stated_length() {
        let dir = format!("{}/testdata/admission-reviews", env!("CARGO_MANIFEST_DIR"));
        let mut rules = RuleSet::default();
        rules.spec.workload_spread.enabled = true;
        let mut seen = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_none_or(|x| x != "json") {
                continue;
            }
            let body = std::fs::read(&p).unwrap();
            for ep in [Endpoint::Validate, Endpoint::Mutate] {
                let Some(v) = review(&body, ep, &rules).unwrap().verdict else {
                    continue;
                };
                let mut lines: Vec<(String, usize)> = Vec::new();
                for f in &v.findings {
                    let path = f.error.path.to_string().len() + 2;
                    if f.action == crate::rules::Action::Warn {
                        lines.push((format!("{}: {}", f.rule, f.error), path));
                    }
                    if let Some(h) = &f.hint {
                        lines.push((format!("{}: {h}", f.rule), 0));
                    }
                }
                for n in &v.notes {
                    let limit = if n.voice == crate::rules::Voice::Tool {
                        120
                    } else {
                        200
                    };
                    assert!(unquoted_len(&n.warning()) <= limit, "{}", n.warning());
                    seen += 1;
                }
                for (line, path) in lines {
                    assert!(!line.contains('\n'), "{line}");
                    assert!(
                        unquoted_len(&line) - path <= 200,
                        "{} chars: {line}",
                        unquoted_len(&line) - path
                    );
                    seen += 1;
                }
            }
        }
        assert!(seen > 10, "only {seen} warnings");
    }
}

/// The on-demand reader held to serde_json reading the whole body (the `review` fuzz target
/// checks the same on arbitrary bodies).
#[cfg(test)]
mod readers_agree {
    use super::*;

    fn fixtures() -> Vec<(String, Vec<u8>)> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/admission-reviews");
        let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
            .collect();
        out.sort();
        out
    }

    /// The recorded gated pod UPDATE, as stored.
    fn gated_update() -> Vec<u8> {
        fixtures()
            .into_iter()
            .find(|(n, _)| n.ends_with("/pod-update-add-nodeselector-gated.validate.json"))
            .map(|(_, body)| body)
            .unwrap()
    }

    /// The built-in rules, every rule on, and who may tighten a gated pod restricted (the
    /// user is read only then).
    fn rule_sets() -> [RuleSet; 3] {
        let mut all = RuleSet::default();
        all.spec.workload_spread.enabled = true;
        let mut restricted = RuleSet::default();
        restricted.spec.mutable_directives.allowed_users = vec!["group:queue-controllers".into()];
        [RuleSet::default(), all, restricted]
    }

    /// Cases of [`agree`] per body: each rule set on both endpoints.
    const CASES: usize = 6;

    /// The fuzz target's property on one body; which of its cases held.
    fn agree(body: &[u8]) -> [usize; 3] {
        let mut seen = [0; 3];
        for rules in rule_sets() {
            for endpoint in [Endpoint::Validate, Endpoint::Mutate] {
                let fast = review(body, endpoint, &rules);
                let reference = review_reference(body, endpoint, &rules);
                let shown = String::from_utf8_lossy(body);
                match (fast, reference) {
                    (Ok(f), Ok(r)) => {
                        assert_eq!(f.body, r.body, "{shown}");
                        seen[0] += 1;
                    }
                    (Err(f), Err(r)) => {
                        assert_eq!(f, r, "{shown}");
                        seen[1] += 1;
                    }
                    (Err(f), Ok(_)) => {
                        panic!("on-demand refused what serde_json reads: {f}\n{shown}")
                    }
                    (Ok(f), Err(_)) => {
                        let skipped = skipped_values(body, endpoint, &rules).unwrap();
                        let r = review_reference(&blank_skipped(body, &skipped), endpoint, &rules)
                            .unwrap_or_else(|e| panic!("{e}: blanked\n{shown}"));
                        assert_eq!(f.body, r.body, "{shown}");
                        seen[2] += 1;
                    }
                }
            }
        }
        seen
    }

    #[test]
    fn recorded_reviews_get_the_same_answer_from_both_readers() {
        let mut n = 0;
        for (name, body) in fixtures() {
            let seen = agree(&body);
            assert_eq!(seen[0], CASES, "{name}: {seen:?}");
            // Compact, as the apiserver sends them.
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(agree(&serde_json::to_vec(&v).unwrap())[0], CASES, "{name}");
            n += 1;
        }
        assert!(n > 20, "only {n} fixtures");
    }

    /// OpenKruise's CloneSet and Advanced StatefulSet are judged as a Deployment is, by both
    /// readers, at any version Kruise serves.
    #[test]
    fn kruise_workloads_are_judged_like_deployments() {
        let name = "deployment-create-zone-anti-affinity.validate.json";
        let (_, body) = fixtures()
            .into_iter()
            .find(|(n, _)| n.ends_with(name))
            .unwrap();
        let deployment: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let denied: serde_json::Value = serde_json::from_slice(
            &review(&body, Endpoint::Validate, &RuleSet::default())
                .unwrap()
                .body,
        )
        .unwrap();
        for (version, kind, resource) in [
            ("v1alpha1", "CloneSet", "clonesets"),
            ("v1beta1", "StatefulSet", "statefulsets"),
            ("v1alpha1", "StatefulSet", "statefulsets"),
        ] {
            let mut v = deployment.clone();
            let r = &mut v["request"];
            r["kind"] =
                serde_json::json!({"group": "apps.kruise.io", "version": version, "kind": kind});
            r["resource"] = serde_json::json!({"group": "apps.kruise.io", "version": version, "resource": resource});
            r["object"]["apiVersion"] = format!("apps.kruise.io/{version}").into();
            r["object"]["kind"] = kind.into();
            let body = serde_json::to_vec(&v).unwrap();
            assert_eq!(agree(&body)[0], CASES, "{kind} {version}");
            let got: serde_json::Value = serde_json::from_slice(
                &review(&body, Endpoint::Validate, &RuleSet::default())
                    .unwrap()
                    .body,
            )
            .unwrap();
            assert_eq!(got["response"]["allowed"], false, "{kind} {version}");
            assert_eq!(
                got["response"]["status"], denied["response"]["status"],
                "{kind} {version}"
            );
            // Defaults at CREATE, never on an UPDATE: Kruise refuses an InPlaceOnly update that
            // changes more than images.
            let mutated = |v: &serde_json::Value| -> serde_json::Value {
                let body = serde_json::to_vec(v).unwrap();
                assert_eq!(agree(&body)[0], CASES, "{kind} {version}");
                let r = review(&body, Endpoint::Mutate, &RuleSet::default()).unwrap();
                serde_json::from_slice(&r.body).unwrap()
            };
            assert!(
                mutated(&v)["response"]["patch"].is_string(),
                "{kind} {version}"
            );
            let mut update = v.clone();
            update["request"]["operation"] = "UPDATE".into();
            update["request"]["oldObject"] = update["request"]["object"].clone();
            update["request"]["object"]["spec"]["template"]["spec"]["containers"][0]["image"] =
                "nginx:2".into();
            assert!(
                mutated(&update)["response"]["patch"].is_null(),
                "{kind} {version}"
            );
        }
    }

    /// The envelope's names are borrowed from the body when plain; escaped, they are read as
    /// serde reads them, to the same answer.
    #[test]
    fn escaped_envelope_names_read_as_plain_ones() {
        let (_, body) = fixtures()
            .into_iter()
            .find(|(n, _)| n.ends_with("/deployment-create-zone-anti-affinity.validate.json"))
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let plain = serde_json::to_string(&v).unwrap();
        let edits = [
            (
                r#""kind":"AdmissionReview""#,
                r#""kind":"AdmissionRevie\u0077""#,
            ),
            (r#""admission.k8s.io/v1""#, r#""admission.k8s.io\/v1""#),
            (r#"{"group":"apps""#, r#"{"group":"app\u0073""#),
            (r#""operation":"CREATE""#, r#""operation":"CRE\u0041TE""#),
        ];
        let want = review(plain.as_bytes(), Endpoint::Validate, &RuleSet::default()).unwrap();
        assert!(!want.allowed, "the fixture is a denial");
        for (from, to) in edits {
            assert!(plain.contains(from), "{from}");
            let edited = plain.replacen(from, to, 1);
            assert_eq!(agree(edited.as_bytes())[0], CASES, "{to}");
            let got = review(edited.as_bytes(), Endpoint::Validate, &RuleSet::default()).unwrap();
            assert_eq!(got.body, want.body, "{to}");
        }
        let wrong = plain.replacen(
            r#""kind":"AdmissionReview""#,
            r#""kind":"Admissi\u006fn""#,
            1,
        );
        assert_eq!(
            review(wrong.as_bytes(), Endpoint::Validate, &RuleSet::default()).unwrap_err(),
            ReviewError::BadRequest(
                "request body is not an AdmissionReview: kind is \"Admission\", expected \"AdmissionReview\"".into()
            )
        );
    }

    /// What no rule reads of an UPDATE's old object (its metadata, containers, resources) and
    /// of the new object without the cluster (containers, resources) is checked for structure
    /// only: damaged there, a review is still answered as the reference answers it with those
    /// values blanked.
    #[test]
    fn unread_fields_damaged_are_answered_as_if_blank() {
        let body = gated_update();
        // Edited as text: the apiserver's field order decides what the single pass reads.
        let text = String::from_utf8(body).unwrap();
        let (new, old) = text.split_once("\"oldObject\"").unwrap();
        let cases = [
            // The old object's metadata: an invalid number.
            (
                new.to_string(),
                old.replacen("\"generation\": 1", "\"generation\": -", 1),
            ),
            // The old object's containers: an invalid array.
            (
                new.to_string(),
                old.replacen("\"resources\": {}", "\"resources\": [1,]", 1),
            ),
            // The new object's containers (no rule reads them without the cluster).
            (
                new.replacen("\"resources\": {}", "\"resources\": tru", 1),
                old.to_string(),
            ),
            // An unknown field of a toleration, the same in both objects: the old object's
            // tolerations are taken from the new one's reading, and the field is skipped in both.
            (
                new.replacen("\"tolerations\": [", "\"tolerations\": [{\"x\": tru},", 1),
                old.replacen("\"tolerations\": [", "\"tolerations\": [{\"x\": tru},", 1),
            ),
        ];
        for (new, old) in cases {
            let damaged = format!("{new}\"oldObject\"{old}");
            assert_ne!(damaged, text);
            let r = review_reference(damaged.as_bytes(), Endpoint::Validate, &RuleSet::default());
            assert!(r.is_err(), "{damaged}");
            // Both endpoints, both rule sets: answered, as the reference answers it blanked.
            assert_eq!(agree(damaged.as_bytes())[2], CASES, "{damaged}");
        }
        // userInfo, damaged: passed over unless a rule restricts who may tighten; then both
        // readers refuse it.
        let damaged = text.replacen("\"system:masters\"", "1", 1);
        assert_ne!(damaged, text);
        assert_eq!(agree(damaged.as_bytes()), [0, 2, 4], "{damaged}");
        // An old metadata that is not an object is not skipped: both readers refuse it alike.
        let old = old.replacen("\"metadata\": {", "\"metadata\": 5, \"x\": {", 1);
        let damaged = format!("{new}\"oldObject\"{old}");
        assert_eq!(agree(damaged.as_bytes()), [0, CASES, 0], "{damaged}");
        let refused = review(damaged.as_bytes(), Endpoint::Validate, &RuleSet::default());
        assert!(
            matches!(&refused, Err(ReviewError::BadRequest(m)) if m.contains("oldObject")),
            "{refused:?}"
        );
    }

    /// A pod UPDATE's new metadata is read only when a rule that applies reads it: not for
    /// the gated-pod rule's comparison nor for constraints the update left as they were, but
    /// for spread constraints it changed (whose selectors are checked against the pod's labels)
    /// and (the registry's test holds) wherever a rule that keeps `Rule::reads_metadata`'s
    /// default applies, the cluster-aware feasibility check; not for a node-selection policy.
    #[test]
    fn a_pod_updates_metadata_is_read_only_when_a_rule_reads_it() {
        let text = String::from_utf8(gated_update()).unwrap();
        let (new, old) = text.split_once("\"oldObject\"").unwrap();
        let join = |new: &str| format!("{new}\"oldObject\"{old}");
        let damage = |new: &str| new.replacen("\"labels\": {", "\"labels\": 5, \"x\": {", 1);
        // Passed over: damaged, it is answered as the reference answers it blanked.
        let damaged = join(&damage(new));
        assert_ne!(damaged, text);
        assert_eq!(agree(damaged.as_bytes()), [0, 0, CASES], "{damaged}");
        let skipped =
            skipped_values(damaged.as_bytes(), Endpoint::Validate, &RuleSet::default()).unwrap();
        let metadata = damaged.find("\"metadata\": {").unwrap() + "\"metadata\": ".len();
        assert!(skipped.iter().any(|r| r.start == metadata), "{skipped:?}");
        // A spread constraint the update adds, whose selector misses the pod's own labels: on
        // /validate the labels are read (the reference's warning, and its refusal of damaged
        // labels), on /mutate no rule that applies reads them.
        let spread = new.replacen(
            "\"tolerations\": [",
            r#""topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "other"}}}], "tolerations": ["#,
            1,
        );
        assert_ne!(spread, new);
        let changed = join(&spread);
        assert_eq!(agree(changed.as_bytes())[0], CASES, "{changed}");
        let warned = review(changed.as_bytes(), Endpoint::Validate, &RuleSet::default()).unwrap();
        let warnings = String::from_utf8(warned.body).unwrap();
        assert!(warnings.contains("app=gated"), "{warnings}");
        let skipped =
            skipped_values(changed.as_bytes(), Endpoint::Validate, &RuleSet::default()).unwrap();
        assert!(!skipped.iter().any(|r| r.start == metadata), "{skipped:?}");
        let damaged = join(&damage(&spread));
        assert_eq!(agree(damaged.as_bytes()), [0, 3, 3], "{damaged}");
        // A node-selection policy judges the selection and added tolerations, not the
        // metadata: passed over as well, while the policy still judges the update.
        let rules = RuleSet::from_yaml(
            "rules.yaml",
            "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  nodeSelection:\n    policies:\n    - {name: all, namespaces: ['*'], allowedTolerations: [], forbiddenNodes: [{matchExpressions: [{key: disktype, operator: In, values: [ssd]}]}]}\n",
        )
        .unwrap();
        let damaged = join(&damage(new));
        assert!(review_reference(damaged.as_bytes(), Endpoint::Validate, &rules).is_err());
        let r = review(damaged.as_bytes(), Endpoint::Validate, &rules).unwrap();
        let body = String::from_utf8(r.body).unwrap();
        assert!(!r.allowed, "{body}");
        assert!(body.contains("(policy all)"), "{body}");
        let skipped = skipped_values(damaged.as_bytes(), Endpoint::Validate, &rules).unwrap();
        assert!(skipped.iter().any(|r| r.start == metadata), "{skipped:?}");
        let blanked = blank_skipped(damaged.as_bytes(), &skipped);
        let reference = review_reference(&blanked, Endpoint::Validate, &rules).unwrap();
        assert_eq!(String::from_utf8(reference.body).unwrap(), body);
    }

    /// A Pod UPDATE's tolerations, which the gated-pod rule only compares, are passed over in
    /// both pods where their text is the same (damaged alike, they are answered as the reference
    /// answers them blanked) and read in both where the update changed them: a removed
    /// toleration is refused, and damaged ones are refused by both readers alike. A
    /// node-selection policy, which judges only the tolerations an update adds, passes over
    /// unchanged ones too.
    #[test]
    fn a_pod_updates_tolerations_are_read_only_where_they_changed() {
        let text = String::from_utf8(gated_update()).unwrap();
        let (new, old) = text.split_once("\"oldObject\"").unwrap();
        let join = |new: &str, old: &str| format!("{new}\"oldObject\"{old}");
        let starts = |body: &str| -> Vec<usize> {
            body.match_indices("\"tolerations\": ")
                .map(|(i, k)| i + k.len())
                .collect()
        };
        let skipped = |body: &str| {
            skipped_values(body.as_bytes(), Endpoint::Validate, &RuleSet::default()).unwrap()
        };
        let passed_over = |body: &str| -> Vec<bool> {
            let skipped = skipped(body);
            starts(body)
                .into_iter()
                .map(|at| skipped.iter().any(|r| r.start == at))
                .collect()
        };
        assert_eq!(passed_over(&text), [true, true], "{text}");
        assert_eq!(agree(text.as_bytes())[0], CASES);
        let damage = |pod: &str| pod.replacen("\"tolerations\": [", "\"tolerations\": [5, ", 1);
        let damaged = join(&damage(new), &damage(old));
        assert_ne!(damaged, text);
        assert_eq!(agree(damaged.as_bytes()), [0, 0, CASES], "{damaged}");
        // The old pod had one more toleration: read in both, and refused.
        let extra = r#""tolerations": [{"key": "gpu", "operator": "Exists"}, "#;
        let removed = join(new, &old.replacen("\"tolerations\": [", extra, 1));
        assert_eq!(passed_over(&removed), [false, false], "{removed}");
        assert_eq!(agree(removed.as_bytes())[0], CASES, "{removed}");
        let r = review(removed.as_bytes(), Endpoint::Validate, &RuleSet::default()).unwrap();
        let body = String::from_utf8(r.body).unwrap();
        assert!(!r.allowed, "{body}");
        assert!(body.contains("spec.tolerations"), "{body}");
        // Added in the new pod: read in both, and allowed.
        let added = join(&new.replacen("\"tolerations\": [", extra, 1), old);
        assert_eq!(passed_over(&added), [false, false], "{added}");
        assert_eq!(agree(added.as_bytes())[0], CASES, "{added}");
        assert!(
            review(added.as_bytes(), Endpoint::Validate, &RuleSet::default())
                .unwrap()
                .allowed
        );
        // Changed and damaged in the new pod: read again after the old one, and refused alike.
        let damaged = join(&damage(new), old);
        assert_eq!(agree(damaged.as_bytes()), [0, CASES, 0], "{damaged}");
        // Absent from the new pod: the old pod's are read, and their removal refused.
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let spec = v["request"]["object"]["spec"].as_object_mut().unwrap();
        assert!(spec.remove("tolerations").is_some());
        let dropped = serde_json::to_string_pretty(&v).unwrap();
        assert_eq!(passed_over(&dropped), [false], "{dropped}");
        assert_eq!(agree(dropped.as_bytes())[0], CASES, "{dropped}");
        assert!(
            !review(dropped.as_bytes(), Endpoint::Validate, &RuleSet::default())
                .unwrap()
                .allowed
        );
        // A node-selection policy judges only the tolerations an update adds: unchanged ones
        // are passed over too, an added one is read and refused.
        let rules = RuleSet::from_yaml(
            "rules.yaml",
            "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  nodeSelection:\n    policies:\n    - {name: all, namespaces: ['*'], allowedTolerations: []}\n",
        )
        .unwrap();
        let damaged = join(&damage(new), &damage(old));
        assert!(review(damaged.as_bytes(), Endpoint::Validate, &rules).is_ok());
        assert!(review_reference(damaged.as_bytes(), Endpoint::Validate, &rules).is_err());
        let r = review(added.as_bytes(), Endpoint::Validate, &rules).unwrap();
        let body = String::from_utf8(r.body).unwrap();
        assert!(!r.allowed, "{body}");
        assert!(
            body.contains("may not carry the toleration {key: gpu, operator: Exists}"),
            "{body}"
        );
    }

    /// What the rules ask of a request is worked out once its kind and operation are read, and
    /// again when one of them or the subresource arrives late: with `userInfo` (which asks it)
    /// before them, the objects are still read directly, the new pod's unchanged tolerations
    /// passed over, and a status update's objects passed over unread.
    #[test]
    fn the_rules_are_asked_again_when_the_kind_or_operation_comes_late() {
        let v: serde_json::Value = serde_json::from_slice(&gated_update()).unwrap();
        let request = &v["request"];
        for order in [
            ["uid", "userInfo", "kind", "operation"],
            ["uid", "kind", "userInfo", "operation"],
            ["uid", "operation", "userInfo", "kind"],
        ] {
            let fields: Vec<String> = order
                .iter()
                .chain(&["resource", "namespace", "name", "object", "oldObject"])
                .map(|k| format!("{k:?}:{}", request[*k]))
                .collect();
            let body = format!(
                r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{{}}}}}"#,
                fields.join(",")
            );
            let r = review(body.as_bytes(), Endpoint::Validate, &RuleSet::default()).unwrap();
            assert!(r.allowed, "{order:?}");
            let at = body.find("\"tolerations\":").unwrap() + "\"tolerations\":".len();
            let skipped =
                skipped_values(body.as_bytes(), Endpoint::Validate, &RuleSet::default()).unwrap();
            assert!(
                skipped.iter().any(|r| r.start == at),
                "{order:?}: {skipped:?}"
            );
        }
        // A subresource read after userInfo: no rule reads the status subresource, so objects
        // that no view could read are passed over, not refused.
        let body = format!(
            r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"u","kind":{},"operation":"UPDATE","userInfo":{},"subResource":"status","resource":{},"object":7,"oldObject":7}}}}"#,
            request["kind"], request["userInfo"], request["resource"]
        );
        let sevens: Vec<_> = body
            .match_indices(":7")
            .map(|(i, _)| i + 1..i + 2)
            .collect();
        let skipped = skipped_values(body.as_bytes(), Endpoint::Validate, &RuleSet::default());
        assert!(
            skipped.is_some_and(|s| sevens.iter().all(|r| s.contains(r))),
            "{body}"
        );
    }

    /// A field the views skip but type (a pod's containers, tolerations, overhead, resources,
    /// hostNetwork, runtimeClassName) written as an object or array of another shape is
    /// refused as the reference refuses it: blanked, it would still be of the wrong type.
    /// Found by the `review` fuzz target (containers written `{...]` in a pod CREATE).
    #[test]
    fn skipped_fields_of_another_shape_are_refused_alike() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testdata/admission-reviews/pod-create-jsonpatch-spread.mutate.json"
        ))
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        // Compact, the request's fields in the apiserver's order (the kind and operation
        // before the objects, so that the objects are read directly).
        let with = |field: &str, value: &str| {
            let mut request = v["request"].clone();
            request["object"]["spec"][field] = "PLACEHOLDER".into();
            let fields: Vec<String> =
                ["uid", "kind", "resource", "operation", "userInfo", "object"]
                    .iter()
                    .map(|k| format!("{k:?}:{}", request[*k]))
                    .collect();
            format!(
                r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{{}}}}}"#,
                fields.join(",")
            )
            .replacen("\"PLACEHOLDER\"", value, 1)
        };
        for (field, value) in [
            ("containers", "{}"),
            ("containers", r#"{"x": 1]"#),
            ("initContainers", r#"{"name": "a"}"#),
            ("tolerations", "{}"),
            ("overhead", "[]"),
            ("resources", r#"[{"limits": {}}]"#),
            ("hostNetwork", "[true]"),
            ("runtimeClassName", "{}"),
        ] {
            let body = with(field, value);
            assert_eq!(agree(body.as_bytes()), [0, CASES, 0], "{field}: {value}");
        }
        // Of the right shape, or a scalar (which blanks to null), they are still passed over.
        for (field, value) in [
            ("containers", "[5]"),
            ("overhead", r#"{"cpu": []}"#),
            ("hostNetwork", "5"),
        ] {
            let body = with(field, value);
            assert_eq!(agree(body.as_bytes()), [0, 0, CASES], "{field}: {value}");
        }
    }

    /// A pod's tolerations are read only when a rule that applies compares or places them:
    /// damaged in a pod CREATE, the defaults answer as the reference answers them blanked, and
    /// with a node-selection policy (which judges tolerations) both readers refuse them alike.
    #[test]
    fn tolerations_are_read_only_for_rules_that_read_them() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testdata/admission-reviews/pod-create-jsonpatch-spread.mutate.json"
        ))
        .unwrap();
        let damaged = text.replacen(
            "\"tolerations\": [",
            "\"tolerations\": [{\"tolerationSeconds\": \"300\"},",
            1,
        );
        assert_ne!(damaged, text);
        assert_eq!(agree(damaged.as_bytes()), [0, 0, CASES], "{damaged}");
        let rules = RuleSet::from_yaml(
            "rules.yaml",
            "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  nodeSelection:\n    policies:\n    - {name: all, namespaces: ['*'], allowedTolerations: []}\n",
        )
        .unwrap();
        let fast = review(damaged.as_bytes(), Endpoint::Validate, &rules).unwrap_err();
        let reference =
            review_reference(damaged.as_bytes(), Endpoint::Validate, &rules).unwrap_err();
        assert!(
            matches!(&fast, ReviewError::BadRequest(m) if m.contains("tolerationSeconds")),
            "{fast:?}"
        );
        assert_eq!(fast, reference);
        // Undamaged, the policy reads them: the two DefaultTolerationSeconds adds pass, one
        // more is refused.
        let r = review(text.as_bytes(), Endpoint::Validate, &rules).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["response"]["allowed"], true, "{v}");
        let more = text.replacen(
            "\"tolerations\": [",
            "\"tolerations\": [{\"key\": \"gpu\", \"operator\": \"Exists\"},",
            1,
        );
        let r = review(more.as_bytes(), Endpoint::Validate, &rules).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["response"]["allowed"], false, "{v}");
        assert!(
            v["response"]["status"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("{key: gpu, operator: Exists}")),
            "{v}"
        );
    }

    /// Who sent a request is read when a rule restricts who may tighten a gated pod: the
    /// recorded tightening by `admin` (in system:masters) is refused for want of the group.
    #[test]
    fn the_user_is_read_when_a_rule_restricts_who_may_tighten() {
        let body = gated_update();
        let [open, _, restricted] = rule_sets();
        assert!(review(&body, Endpoint::Validate, &open).unwrap().allowed);
        let r = review(&body, Endpoint::Validate, &restricted).unwrap();
        assert!(!r.allowed);
        let text = String::from_utf8(r.body).unwrap();
        assert!(text.contains(r#"user \"admin\" may not change"#), "{text}");
        let mut masters = restricted.clone();
        masters.spec.mutable_directives.allowed_users = vec!["group:system:masters".into()];
        assert!(review(&body, Endpoint::Validate, &masters).unwrap().allowed);
    }

    /// Recorded reviews with bytes replaced (a fixed pseudo-random sequence): every case of the
    /// property is met, the lenient one included.
    #[test]
    fn damaged_reviews_get_the_same_answer_or_differ_only_in_skipped_values() {
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut seen = [0; 3];
        for (_, body) in fixtures() {
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
            let wire = serde_json::to_vec(&v).unwrap();
            for _ in 0..40 {
                let mut b = wire.clone();
                for _ in 0..1 + next() % 3 {
                    let at = (next() % b.len() as u64) as usize;
                    b[at] = b"{}[]\",:\\0an -"[(next() % 13) as usize];
                }
                for (k, s) in agree(&b).iter().enumerate() {
                    seen[k] += s;
                }
            }
        }
        assert!(seen.iter().all(|&s| s > 20), "{seen:?}");
    }
}
