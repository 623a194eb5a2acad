use super::*;
use crate::admission::{review, Endpoint, ReviewError};
use crate::rules::{RuleSet, Verdict};
use serde::Serialize;

/// The reference: the response as serde wrote it before the direct writer.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReviewOut<'a> {
    api_version: &'static str,
    kind: &'static str,
    response: ResponseOut<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResponseOut<'a> {
    uid: &'a str,
    allowed: bool,
    status: StatusOut<'a>,
    /// Base64, as the API defines it (Go's `[]byte`); kube-core would write an array of numbers.
    #[serde(skip_serializing_if = "Option::is_none")]
    patch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

/// A `metav1.Status`: empty when allowed.
#[derive(Default, Serialize)]
struct StatusOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<DetailsOut<'a>>,
}

#[derive(Serialize)]
struct DetailsOut<'a> {
    causes: Vec<CauseOut<'a>>,
}

#[derive(Serialize)]
struct CauseOut<'a> {
    reason: &'static str,
    message: String,
    #[serde(serialize_with = "as_text")]
    field: &'a crate::k8s::fieldpath::FieldPath,
}

fn as_text<S: serde::Serializer>(
    v: &&crate::k8s::fieldpath::FieldPath,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// The response as serde serialized it before the direct writer: the reference.
pub(super) fn reference(uid: &str, verdict: Option<&Verdict>) -> Result<Vec<u8>, ReviewError> {
    use base64::Engine;
    let enc =
        |e: serde_json::Error| ReviewError::Internal(format!("cannot encode the response: {e}"));
    let mut response = ResponseOut {
        uid,
        allowed: true,
        status: StatusOut::default(),
        patch: None,
        patch_type: None,
        warnings: Vec::new(),
    };
    if let Some(verdict) = verdict {
        if !verdict.patches.is_empty() {
            // json-patch's own operations, through serde.
            let ops = serde_json::to_vec(&verdict.patch_ops().map_err(enc)?).map_err(enc)?;
            response.patch = Some(base64::engine::general_purpose::STANDARD.encode(ops));
            response.patch_type = Some("JSONPatch");
        }
        if verdict.has_warnings() {
            response.warnings = verdict.warnings();
        }
        if let Some(message) = verdict.denial_message() {
            response.allowed = false;
            response.status = StatusOut {
                status: Some("Failure"),
                code: Some(403),
                message: Some(message),
                reason: Some("Forbidden"),
                details: Some(DetailsOut {
                    causes: verdict
                        .denials()
                        .map(|f| CauseOut {
                            reason: f.error.kind.cause(),
                            message: f.error.body(),
                            field: &f.error.path,
                        })
                        .collect(),
                }),
            };
        }
    }
    serde_json::to_vec(&ReviewOut {
        api_version: API_VERSION,
        kind: "AdmissionReview",
        response,
    })
    .map_err(enc)
}

/// Every recorded review's verdict, with every rule switched on, written directly and through
/// serde as before: the same bytes.
#[test]
fn responses_are_byte_for_byte_what_serde_wrote() {
    let mut all = RuleSet::default();
    all.spec.workload_spread.enabled = true;
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/admission-reviews");
    let (mut denied, mut patched, mut warned) = (0, 0, 0);
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let body = std::fs::read(&path).unwrap();
        for rules in [RuleSet::default(), all.clone()] {
            for endpoint in [Endpoint::Validate, Endpoint::Mutate] {
                let Ok(r) = review(&body, endpoint, &rules) else {
                    continue;
                };
                let v: Option<&Verdict> = r.verdict.as_ref();
                assert_eq!(
                    String::from_utf8(encode(&r.uid, v)).unwrap(),
                    String::from_utf8(reference(&r.uid, v).unwrap()).unwrap(),
                    "{}",
                    path.display()
                );
                denied += usize::from(!r.allowed);
                patched += usize::from(v.is_some_and(|v| !v.patches.is_empty()));
                warned += usize::from(v.is_some_and(Verdict::has_warnings));
            }
        }
    }
    assert!(
        denied > 5 && patched > 5 && warned > 5,
        "{denied} {patched} {warned}"
    );
    // A uid that needs escaping.
    let uid = "a\"b\\c\n\u{1}é";
    assert_eq!(encode(uid, None), reference(uid, None).unwrap());
}

/// Several denials (the message becomes `[a, b]`), with values and details that need escaping
/// and an empty path: written as the reference writes them.
#[test]
fn several_denials_are_one_message_and_a_cause_each() {
    use crate::k8s::fieldpath::{FieldError, FieldPath};
    use crate::rules::{Action, Finding, RuleId};
    let finding = |action, error| Finding {
        rule: RuleId::new("test-rule"),
        action,
        error,
        hint: None,
    };
    let spec = FieldPath::fields(&["spec", "affinity"]);
    let verdict = Verdict {
        findings: vec![
            finding(
                Action::Deny,
                FieldError::forbidden(spec.index(0).key("a\"b"), "no \"quotes\"\n"),
            ),
            finding(
                Action::Warn,
                FieldError::forbidden(spec.clone(), "only a warning"),
            ),
            finding(
                Action::Deny,
                FieldError::invalid(spec.child("x"), serde_json::json!("v\\1"), "tab\there"),
            ),
            finding(Action::Deny, FieldError::forbidden(FieldPath::root(), "é")),
        ],
        ..Verdict::default()
    };
    let written = String::from_utf8(encode("uid", Some(&verdict))).unwrap();
    assert_eq!(
        written,
        String::from_utf8(reference("uid", Some(&verdict)).unwrap()).unwrap()
    );
    assert!(written.contains(r#""message":"[spec.affinity[0][a\"b]: Forbidden: no \"quotes\"\n, "#));
}
