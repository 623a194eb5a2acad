//! AdmissionReview in, AdmissionReview out. Pure: the HTTPS handlers and the `review` command both
//! call [`review`], so a request replayed offline gets exactly the server's answer.
//!
//! The body is scanned once. kube-apiserver writes `kind`, `subResource` and `operation` before
//! `object` and `oldObject`, so by the time the objects arrive we know whether a rule reads them:
//! those that matter are read straight into the views the rules use, the rest are skipped
//! (still checked to be JSON). A body whose fields come in another order still works: objects
//! met before we can decide are kept as raw JSON and read afterwards. A read that fails is
//! repeated with every object kept raw, so the error names the right field.

use std::fmt;

use kube::core::admission::{AdmissionResponse, Operation as KubeOperation};
use kube::core::{GroupVersionKind, Status, TypeMeta};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::config::RuleSet;
use crate::rules::{self, Input, Operation, Phase, RuleId, User, Verdict};
use crate::workload::{self, Kind, PodTemplate, TemplateSeed};

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

/// What a request's object is to us, decided from the request's kind, operation and subresource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Use {
    /// A rule reads its pod template.
    Template(Kind),
    /// A WorkloadSpread to validate.
    Spread,
    /// No rule reads it.
    Ignore,
}

fn use_of(
    kind: &GroupVersionKind,
    op: Operation,
    sub_resource: Option<&str>,
    old: bool,
    phase: Phase,
    rules: &RuleSet,
) -> Use {
    if sub_resource.is_some_and(|s| !s.is_empty()) {
        return Use::Ignore;
    }
    if kind.group == crate::workloadspread::GROUP && kind.kind == "WorkloadSpread" {
        let wanted = !old && phase == Phase::Validate && rules.spec.workload_spread.enabled;
        return if wanted { Use::Spread } else { Use::Ignore };
    }
    match Kind::from_group_kind(&kind.group, &kind.kind) {
        Some(k) if (!old || op == Operation::Update) && rules::is_relevant(k, op, phase, rules) => {
            Use::Template(k)
        }
        _ => Use::Ignore,
    }
}

/// How the objects are read.
#[derive(Clone, Copy)]
enum Read<'r> {
    /// Into views as soon as we know what they are for.
    Direct { phase: Phase, rules: &'r RuleSet },
    /// Kept raw: the second, explaining read after a direct read failed.
    Deferred,
}

/// One of the request's objects as the single pass left it.
enum Slot<'de> {
    Absent,
    Read(Box<PodTemplate>),
    Raw(&'de RawValue),
    Skipped,
}

struct SlotSeed(Option<Use>);

impl<'de> DeserializeSeed<'de> for SlotSeed {
    type Value = Slot<'de>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Slot<'de>, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for SlotSeed {
    type Value = Slot<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object or null")
    }

    fn visit_none<E: de::Error>(self) -> Result<Slot<'de>, E> {
        Ok(Slot::Absent)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Slot<'de>, E> {
        Ok(Slot::Absent)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Slot<'de>, D::Error> {
        Ok(match self.0 {
            Some(Use::Template(k)) => Slot::Read(Box::new(TemplateSeed(k).deserialize(d)?)),
            Some(Use::Ignore) => {
                IgnoredAny::deserialize(d)?;
                Slot::Skipped
            }
            Some(Use::Spread) | None => Slot::Raw(<&RawValue>::deserialize(d)?),
        })
    }
}

/// `request`: kube's `AdmissionRequest` with the same required fields, reading only what we use
/// (the resource, request kind and options are only checked to be JSON), and the objects go
/// through [`SlotSeed`].
struct Request<'de> {
    uid: String,
    kind: GroupVersionKind,
    sub_resource: Option<String>,
    name: String,
    namespace: Option<String>,
    operation: KubeOperation,
    user_info: UserInfo,
    object: Slot<'de>,
    old_object: Slot<'de>,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum RequestField {
    Uid,
    Kind,
    Resource,
    SubResource,
    RequestKind,
    RequestResource,
    RequestSubResource,
    Name,
    Namespace,
    Operation,
    UserInfo,
    Object,
    OldObject,
    DryRun,
    Options,
    #[serde(other)]
    Other,
}

const REQUEST_FIELDS: &[&str] = &[
    "uid",
    "kind",
    "resource",
    "subResource",
    "requestKind",
    "requestResource",
    "requestSubResource",
    "name",
    "namespace",
    "operation",
    "userInfo",
    "object",
    "oldObject",
    "dryRun",
    "options",
];

/// Reads a field's value, refusing a second occurrence as serde's derived structs do.
fn once<'de, T: Deserialize<'de>, A: MapAccess<'de>>(
    slot: &mut Option<T>,
    map: &mut A,
    field: &'static str,
) -> Result<(), A::Error> {
    once_seed(slot, map, field, std::marker::PhantomData)
}

fn once_seed<'de, S: DeserializeSeed<'de>, A: MapAccess<'de>>(
    slot: &mut Option<S::Value>,
    map: &mut A,
    field: &'static str,
    seed: S,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(de::Error::duplicate_field(field));
    }
    *slot = Some(map.next_value_seed(seed)?);
    Ok(())
}

/// `userInfo`, without `uid` and `extra`.
#[derive(Deserialize)]
struct UserInfo {
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    groups: Option<Vec<String>>,
}

struct RequestVisitor<'r>(Read<'r>);

impl<'de> Visitor<'de> for RequestVisitor<'_> {
    type Value = Request<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("struct AdmissionRequest")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Request<'de>, A::Error> {
        let mut uid: Option<String> = None;
        let mut kind: Option<GroupVersionKind> = None;
        let mut resource: Option<IgnoredAny> = None;
        let mut sub_resource: Option<Option<String>> = None;
        let mut request_kind: Option<IgnoredAny> = None;
        let mut request_resource: Option<IgnoredAny> = None;
        let mut request_sub_resource: Option<IgnoredAny> = None;
        let mut name: Option<String> = None;
        let mut namespace: Option<Option<String>> = None;
        let mut op: Option<KubeOperation> = None;
        let mut user_info: Option<UserInfo> = None;
        let mut object: Option<Slot<'de>> = None;
        let mut old_object: Option<Slot<'de>> = None;
        let mut dry_run: Option<IgnoredAny> = None;
        let mut options: Option<IgnoredAny> = None;
        while let Some(field) = map.next_key::<RequestField>()? {
            match field {
                RequestField::Uid => once(&mut uid, &mut map, "uid")?,
                RequestField::Kind => once(&mut kind, &mut map, "kind")?,
                RequestField::Resource => once(&mut resource, &mut map, "resource")?,
                RequestField::SubResource => once(&mut sub_resource, &mut map, "subResource")?,
                RequestField::RequestKind => once(&mut request_kind, &mut map, "requestKind")?,
                RequestField::RequestResource => {
                    once(&mut request_resource, &mut map, "requestResource")?
                }
                RequestField::RequestSubResource => {
                    once(&mut request_sub_resource, &mut map, "requestSubResource")?
                }
                RequestField::Name => once(&mut name, &mut map, "name")?,
                RequestField::Namespace => once(&mut namespace, &mut map, "namespace")?,
                RequestField::Operation => once(&mut op, &mut map, "operation")?,
                RequestField::UserInfo => once(&mut user_info, &mut map, "userInfo")?,
                RequestField::Object | RequestField::OldObject => {
                    let old = matches!(field, RequestField::OldObject);
                    let (slot, name) = if old {
                        (&mut old_object, "oldObject")
                    } else {
                        (&mut object, "object")
                    };
                    let decided = match (self.0, &kind, &op) {
                        (Read::Direct { phase, rules }, Some(k), Some(o)) => Some(use_of(
                            k,
                            operation(o),
                            sub_resource.as_ref().and_then(|s| s.as_deref()),
                            old,
                            phase,
                            rules,
                        )),
                        _ => None,
                    };
                    once_seed(slot, &mut map, name, SlotSeed(decided))?;
                }
                RequestField::DryRun => once(&mut dry_run, &mut map, "dryRun")?,
                RequestField::Options => once(&mut options, &mut map, "options")?,
                RequestField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Request {
            uid: uid.ok_or_else(|| de::Error::missing_field("uid"))?,
            kind: kind.ok_or_else(|| de::Error::missing_field("kind"))?,
            sub_resource: match resource {
                Some(_) => sub_resource.flatten(),
                None => return Err(de::Error::missing_field("resource")),
            },
            name: name.unwrap_or_default(),
            namespace: namespace.flatten(),
            operation: op.ok_or_else(|| de::Error::missing_field("operation"))?,
            user_info: user_info.ok_or_else(|| de::Error::missing_field("userInfo"))?,
            object: object.unwrap_or(Slot::Absent),
            old_object: old_object.unwrap_or(Slot::Absent),
        })
    }
}

struct RequestSeed<'r>(Read<'r>);

impl<'de> DeserializeSeed<'de> for RequestSeed<'_> {
    type Value = Option<Request<'de>>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for RequestSeed<'_> {
    type Value = Option<Request<'de>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("struct AdmissionRequest")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_struct("AdmissionRequest", REQUEST_FIELDS, RequestVisitor(self.0))
            .map(Some)
    }
}

/// The AdmissionReview around the request.
struct Review<'de> {
    api_version: Option<String>,
    kind: Option<String>,
    request: Option<Request<'de>>,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum ReviewField {
    ApiVersion,
    Kind,
    Request,
    #[serde(other)]
    Other,
}

struct ReviewVisitor<'r>(Read<'r>);

impl<'de> Visitor<'de> for ReviewVisitor<'_> {
    type Value = Review<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("struct AdmissionReview")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Review<'de>, A::Error> {
        let mut api_version: Option<Option<String>> = None;
        let mut kind: Option<Option<String>> = None;
        let mut request: Option<Option<Request<'de>>> = None;
        while let Some(field) = map.next_key::<ReviewField>()? {
            match field {
                ReviewField::ApiVersion => once(&mut api_version, &mut map, "apiVersion")?,
                ReviewField::Kind => once(&mut kind, &mut map, "kind")?,
                ReviewField::Request => {
                    once_seed(&mut request, &mut map, "request", RequestSeed(self.0))?
                }
                ReviewField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Review {
            api_version: api_version.flatten(),
            kind: kind.flatten(),
            request: request.flatten(),
        })
    }
}

fn read_review<'de>(body: &'de [u8], read: Read<'_>) -> Result<Review<'de>, serde_json::Error> {
    fn run<'de, R: serde_json::de::Read<'de>>(
        mut de: serde_json::Deserializer<R>,
        read: Read<'_>,
    ) -> Result<Review<'de>, serde_json::Error> {
        let review = de::Deserializer::deserialize_map(&mut de, ReviewVisitor(read))?;
        de.end()?;
        Ok(review)
    }
    // One UTF-8 check of the whole body is cheaper than serde_json's check of every string it
    // reads from bytes; a body that fails it is read from bytes for serde_json's exact error.
    match std::str::from_utf8(body) {
        Ok(text) => run(serde_json::Deserializer::from_str(text), read),
        Err(_) => run(serde_json::Deserializer::from_slice(body), read),
    }
}

fn parse_review<'de>(
    body: &'de [u8],
    phase: Phase,
    rules: &RuleSet,
) -> Result<(TypeMeta, Request<'de>), BadRequest> {
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first.is_some_and(|b| *b != b'{')
        && serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok()
    {
        return Err(BadRequest(
            "request body is not an AdmissionReview: expected a JSON object".to_string(),
        ));
    }
    let env = read_review(body, Read::Direct { phase, rules })
        .or_else(|_| read_review(body, Read::Deferred))
        .map_err(|e| {
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
    let req = env
        .request
        .ok_or_else(|| BadRequest("AdmissionReview has no request".to_string()))?;
    Ok((TypeMeta { api_version, kind }, req))
}

/// The pod template of an object a rule reads, whichever way the single pass left it.
fn template_of(
    slot: Slot,
    kind: Kind,
    field: &str,
    op: Operation,
) -> Result<PodTemplate, BadRequest> {
    match slot {
        Slot::Read(t) => Ok(*t),
        Slot::Raw(raw) => workload::parse_json(kind, raw.get()).map_err(|e| {
            let at = if e.path.is_empty() || e.path == "." {
                String::new()
            } else {
                format!(".{}", e.path)
            };
            BadRequest(format!(
                "request.{field}{at}: cannot read {}: {}",
                e.kind, e.message
            ))
        }),
        Slot::Absent => Err(BadRequest(format!(
            "request.{field} is required for {} of {}",
            operation_name(op),
            kind.resource()
        ))),
        // `use_of` only grows stricter as later fields arrive, so a skipped object stays unused.
        Slot::Skipped => Err(BadRequest(format!(
            "internal error: request.{field} was skipped but is needed"
        ))),
    }
}

/// An allowing response to the request with this uid; the verdict fills in the rest.
fn allowing(types: TypeMeta, uid: &str) -> AdmissionResponse {
    let mut r = AdmissionResponse::invalid("");
    r.types = types;
    r.uid = uid.to_string();
    r.allowed = true;
    r.result = Status::default();
    r
}

/// Answers one AdmissionReview body.
pub fn review(body: &[u8], endpoint: Endpoint, rules: &RuleSet) -> Result<Reviewed, BadRequest> {
    let phase = endpoint.phase();
    let (types, req) = parse_review(body, phase, rules)?;
    let op = operation(&req.operation);
    let response = allowing(types, &req.uid);
    let reviewed = Reviewed {
        body: Vec::new(),
        allowed: true,
        uid: req.uid,
        namespace: req.namespace.unwrap_or_default(),
        name: req.name,
        operation: operation_name(op),
        rules: Vec::new(),
        verdict: None,
    };
    let user = User {
        username: req.user_info.username.as_deref().unwrap_or(""),
        groups: req.user_info.groups.as_deref().unwrap_or(&[]),
    };
    match use_of(
        &req.kind,
        op,
        req.sub_resource.as_deref(),
        false,
        phase,
        rules,
    ) {
        Use::Spread => {
            let raw = match req.object {
                Slot::Raw(raw) => raw,
                _ => {
                    return Err(BadRequest(format!(
                        "request.object is required for {} of workloadspreads",
                        operation_name(op)
                    )))
                }
            };
            let value: serde_json::Value = serde_json::from_str(raw.get()).map_err(|e| {
                BadRequest(format!("request.object: cannot read WorkloadSpread: {e}"))
            })?;
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
            finish(reviewed, response, verdict)
        }
        Use::Template(kind) => {
            let object = template_of(req.object, kind, "object", op)?;
            let old = if op == Operation::Update {
                Some(template_of(req.old_object, kind, "oldObject", op)?)
            } else {
                None
            };
            let input = Input {
                phase,
                operation: op,
                namespace: &reviewed.namespace,
                user,
                object: Some(&object),
                old_object: old.as_ref(),
                spread: None,
            };
            let verdict = rules::evaluate(&input, rules);
            finish(reviewed, response, verdict)
        }
        Use::Ignore => {
            let mut reviewed = reviewed;
            reviewed.body = encode(response)?;
            Ok(reviewed)
        }
    }
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
        let r = read_review(
            body,
            Read::Direct {
                phase,
                rules: &rules,
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
