//! AdmissionReview in, AdmissionReview out. Pure: the HTTPS handlers and the `review` command both
//! call [`review`], so a request replayed offline gets exactly the server's answer.
//!
//! The envelope is read with kube's admission types; `object` and `oldObject` stay raw JSON until
//! we know a rule cares about the request, and then only the fields the rules read are parsed.

use std::borrow::Cow;

use kube::core::admission::{AdmissionRequest, AdmissionResponse, Operation as KubeOperation};
use kube::core::{ObjectMeta, Resource, Status, TypeMeta};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::config::RuleSet;
use crate::rules::{self, Input, Operation, Phase, RuleId, User, Verdict};
use crate::workload::{self, Kind, PodTemplate};

pub const API_VERSION: &str = "admission.k8s.io/v1";

/// An object kept as raw JSON. It implements kube's `Resource` only so that it can sit inside
/// `AdmissionRequest`; its metadata is read by our own views, never through `meta()`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(transparent)]
pub struct RawObject {
    raw: Box<RawValue>,
    #[serde(skip)]
    unread_meta: ObjectMeta,
}

impl RawObject {
    pub fn json(&self) -> &str {
        self.raw.get()
    }
}

impl Resource for RawObject {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("")
    }
    fn group(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("")
    }
    fn version(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("")
    }
    fn plural(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("")
    }
    fn meta(&self) -> &ObjectMeta {
        &self.unread_meta
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.unread_meta
    }
}

/// `AdmissionReview` carries `apiVersion`/`kind` beside `request`; kube's own struct flattens them,
/// which would buffer the raw objects, so the envelope is ours.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope {
    #[serde(default)]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    request: Option<AdmissionRequest<RawObject>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Validate,
    Mutate,
}

/// A request we cannot work with; the server answers HTTP 400 with this text.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct BadRequest(pub String);

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

fn operation(op: &KubeOperation) -> Operation {
    match op {
        KubeOperation::Create => Operation::Create,
        KubeOperation::Update => Operation::Update,
        KubeOperation::Delete => Operation::Delete,
        KubeOperation::Connect => Operation::Connect,
    }
}

fn operation_name(op: Operation) -> &'static str {
    match op {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
        Operation::Connect => "CONNECT",
    }
}

fn parse_envelope(body: &[u8]) -> Result<(TypeMeta, AdmissionRequest<RawObject>), BadRequest> {
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first.is_some_and(|b| *b != b'{')
        && serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok()
    {
        return Err(BadRequest(
            "request body is not an AdmissionReview: expected a JSON object".to_string(),
        ));
    }
    let env: Envelope = serde_json::from_slice(body).map_err(|e| {
        if e.is_syntax() || e.is_eof() {
            BadRequest(format!("request body is not valid JSON: {e}"))
        } else {
            BadRequest(format!("request body is not an AdmissionReview: {e}"))
        }
    })?;
    let kind = env.kind.unwrap_or_default();
    if kind != "AdmissionReview" {
        return Err(BadRequest(format!(
            "request body is not an AdmissionReview: kind is {kind:?}, expected \"AdmissionReview\""
        )));
    }
    let api_version = env.api_version.unwrap_or_default();
    if api_version != API_VERSION {
        return Err(BadRequest(format!(
            "unsupported AdmissionReview apiVersion {api_version:?}; this server speaks {API_VERSION:?} (set admissionReviewVersions: [v1])"
        )));
    }
    let mut req = env
        .request
        .ok_or_else(|| BadRequest("AdmissionReview has no request".to_string()))?;
    let types = TypeMeta { api_version, kind };
    req.types = types.clone();
    Ok((types, req))
}

fn parse_object(
    kind: Kind,
    obj: &Option<RawObject>,
    field: &str,
    op: Operation,
) -> Result<PodTemplate, BadRequest> {
    let raw = obj.as_ref().ok_or_else(|| {
        BadRequest(format!(
            "request.{field} is required for {} of {}",
            operation_name(op),
            kind.resource()
        ))
    })?;
    workload::parse_json(kind, raw.json()).map_err(|e| {
        let at = if e.path.is_empty() || e.path == "." {
            String::new()
        } else {
            format!(".{}", e.path)
        };
        BadRequest(format!(
            "request.{field}{at}: cannot read {}: {}",
            e.kind, e.message
        ))
    })
}

/// Answers one AdmissionReview body.
pub fn review(body: &[u8], endpoint: Endpoint, rules: &RuleSet) -> Result<Reviewed, BadRequest> {
    let (_types, req) = parse_envelope(body)?;
    let op = operation(&req.operation);
    let response = AdmissionResponse::from(&req);
    let mut reviewed = Reviewed {
        body: Vec::new(),
        allowed: true,
        uid: req.uid.clone(),
        namespace: req.namespace.clone().unwrap_or_default(),
        name: req.name.clone(),
        operation: operation_name(op),
        rules: Vec::new(),
        verdict: None,
    };
    let kind = Kind::from_group_kind(&req.kind.group, &req.kind.kind);
    let subresource = req.sub_resource.as_deref().is_some_and(|s| !s.is_empty());
    let phase = match endpoint {
        Endpoint::Validate => Phase::Validate,
        Endpoint::Mutate => Phase::Mutate,
    };
    let is_spread =
        req.kind.group == crate::workloadspread::GROUP && req.kind.kind == "WorkloadSpread";
    if is_spread && !subresource && phase == Phase::Validate && rules.spec.workload_spread.enabled {
        let raw = req.object.as_ref().ok_or_else(|| {
            BadRequest(format!(
                "request.object is required for {} of workloadspreads",
                operation_name(op)
            ))
        })?;
        let value: serde_json::Value = serde_json::from_str(raw.json())
            .map_err(|e| BadRequest(format!("request.object: cannot read WorkloadSpread: {e}")))?;
        let input = Input {
            phase,
            operation: op,
            namespace: &reviewed.namespace,
            user: User::default(),
            object: None,
            old_object: None,
            spread: Some(&value),
        };
        let verdict = rules::evaluate(&input, rules);
        return finish(reviewed, response, verdict);
    }
    let relevant = kind.is_some_and(|k| !subresource && rules::is_relevant(k, op, phase, rules));
    if let (true, Some(kind)) = (relevant, kind) {
        let object = parse_object(kind, &req.object, "object", op)?;
        let old = if op == Operation::Update {
            Some(parse_object(kind, &req.old_object, "oldObject", op)?)
        } else {
            None
        };
        let input = Input {
            phase,
            operation: op,
            namespace: &reviewed.namespace,
            user: User {
                username: req.user_info.username.as_deref().unwrap_or(""),
                groups: req.user_info.groups.as_deref().unwrap_or(&[]),
            },
            object: Some(&object),
            old_object: old.as_ref(),
            spread: None,
        };
        let verdict = rules::evaluate(&input, rules);
        return finish(reviewed, response, verdict);
    }
    reviewed.body = encode(response)?;
    Ok(reviewed)
}

/// Puts a verdict into the response and the decision record.
fn finish(
    mut reviewed: Reviewed,
    response: AdmissionResponse,
    verdict: Verdict,
) -> Result<Reviewed, BadRequest> {
    let response = respond(response, &verdict)?;
    reviewed.allowed = verdict.allowed();
    reviewed.rules = verdict.rules_run.clone();
    reviewed.verdict = Some(verdict);
    reviewed.body = encode(response)?;
    Ok(reviewed)
}

/// Serializes the response review. kube-core writes `patch` as an array of numbers; the API
/// defines it as base64 (Go's `[]byte`), which is what every apiserver and client expects.
fn encode(response: AdmissionResponse) -> Result<Vec<u8>, BadRequest> {
    use base64::Engine;
    let enc = |e: serde_json::Error| BadRequest(format!("cannot encode the response: {e}"));
    let patch = response.patch.clone();
    let review = response.into_review();
    match patch {
        None => serde_json::to_vec(&review).map_err(enc),
        Some(bytes) => {
            let mut v = serde_json::to_value(&review).map_err(enc)?;
            v["response"]["patch"] = base64::engine::general_purpose::STANDARD
                .encode(bytes)
                .into();
            serde_json::to_vec(&v).map_err(enc)
        }
    }
}

/// The request's object with a mutation's patch applied: what the apiserver will store.
pub fn patched_object(body: &[u8], reviewed: &Reviewed) -> Result<serde_json::Value, BadRequest> {
    let review: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| BadRequest(format!("request body is not valid JSON: {e}")))?;
    let mut object = review["request"]["object"].clone();
    if let Some(v) = &reviewed.verdict {
        json_patch::patch(&mut object, &v.patch)
            .map_err(|e| BadRequest(format!("the patch does not apply to request.object: {e}")))?;
    }
    Ok(object)
}

/// Turns a verdict into the AdmissionResponse fields: a denial lists every error in the message
/// and one `details.causes` entry each; hints and warn-action findings become warnings.
fn respond(
    mut response: AdmissionResponse,
    verdict: &Verdict,
) -> Result<AdmissionResponse, BadRequest> {
    if !verdict.patch.is_empty() {
        response = response
            .with_patch(json_patch::Patch(verdict.patch.clone()))
            .map_err(|e| BadRequest(format!("cannot encode the patch: {e}")))?;
    }
    let warnings = verdict.warnings();
    if !warnings.is_empty() {
        response.warnings = Some(warnings);
    }
    if let Some(message) = verdict.denial_message() {
        let causes = verdict
            .denials()
            .map(|f| kube::core::response::StatusCause {
                reason: f.error.kind.cause().to_string(),
                message: f.error.body(),
                field: f.error.path.to_string(),
            })
            .collect();
        response = response.deny(&message);
        response.result = Status::failure(&message, "Forbidden")
            .with_code(403)
            .with_details(kube::core::response::StatusDetails {
                name: String::new(),
                group: String::new(),
                kind: String::new(),
                uid: String::new(),
                causes,
                retry_after_seconds: 0,
            });
    }
    Ok(response)
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
            "spec.subsets: Invalid value: \"120%\": the percentages of maxReplicas add up to more than 100%"
        );
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
        let cases: [(&[u8], &str); 7] = [
            (b"not json", "request body is not valid JSON: expected ident at line 1 column 2"),
            (b"{\"kind\": \"AdmissionReview\"", "request body is not valid JSON: EOF while parsing an object at line 1 column 26"),
            (b"[1,2]", "request body is not an AdmissionReview: expected a JSON object"),
            (b"{\"kind\":\"Pod\",\"apiVersion\":\"v1\"}", "request body is not an AdmissionReview: kind is \"Pod\", expected \"AdmissionReview\""),
            (b"{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1beta1\"}", "unsupported AdmissionReview apiVersion \"admission.k8s.io/v1beta1\"; this server speaks \"admission.k8s.io/v1\" (set admissionReviewVersions: [v1])"),
            (b"{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\"}", "AdmissionReview has no request"),
            (b"{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\",\"request\":{\"uid\":\"1\"}}", "request body is not an AdmissionReview: missing field `kind` at line 1 column 82"),
        ];
        for (body, want) in cases {
            let err = review(body, Endpoint::Validate, &rules).unwrap_err();
            assert_eq!(err.0, want, "{}", String::from_utf8_lossy(body));
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
                "request.object.spec.nodeSelector: cannot read Pod: invalid type: string \"x\", expected a map",
            ),
            (
                pod_update(r#","object":[1]"#, r#","oldObject":{"spec":{}}"#),
                "request.object: cannot read Pod: expected a JSON object",
            ),
        ];
        for (body, want) in cases {
            let err = review(&body, Endpoint::Validate, &rules).unwrap_err();
            assert_eq!(err.0, want);
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
}
