// Test and benchmark helpers fail loudly on broken fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{client, fixture, start};
use serde_json::Value;

#[actix_rt::test]
async fn health_and_readiness() {
    let s = start(&[]);
    let c = client(&s.ca);
    for path in ["/healthz", "/readyz"] {
        let mut r = c.get(format!("{}{path}", s.base)).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        assert_eq!(r.body().await.unwrap(), "ok");
        // HEAD: the same status, the head alone.
        let mut r = c.head(format!("{}{path}", s.base)).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        assert_eq!(r.body().await.unwrap(), "", "{path}");
        // Another method: 405 naming both.
        let r = c.delete(format!("{}{path}", s.base)).send().await.unwrap();
        assert_eq!(r.status(), 405, "{path}");
        assert_eq!(r.headers().get("allow").unwrap(), "GET, HEAD", "{path}");
    }
}

#[actix_rt::test]
async fn validate_answers_recorded_requests() {
    let s = start(&[]);
    let c = client(&s.ca);
    let cases = [
        ("pod-update-add-nodeselector-gated.validate.json", true),
        (
            "pod-update-add-required-nodeaffinity-gated.validate.json",
            true,
        ),
        (
            "pod-update-add-nodeaffinity-expression-gated.validate.json",
            true,
        ),
        ("pod-update-ungate-and-add-nodeselector.validate.json", true),
        ("pod-update-add-toleration-gated.validate.json", true),
        ("pod-create-gated.validate.json", true),
        (
            "pod-update-remove-nodeselector-key-gated.mutate.json",
            false,
        ),
        ("deployment-create-zone-anti-affinity.validate.json", false),
        ("cronjob-create-region-anti-affinity.validate.json", false),
        ("pod-create-denied.validate.json", false),
        ("statefulset-create-zone-anti-affinity.validate.json", true),
        (
            "replicaset-create-hostname-anti-affinity-namespaces.validate.json",
            true,
        ),
        ("pod-create-topology-spread.validate.json", true),
        ("pod-create-jsonpatch-spread.validate.json", true),
    ];
    for (name, allowed) in cases {
        let body = fixture(name);
        let uid = serde_json::from_slice::<Value>(&body).unwrap()["request"]["uid"].clone();
        let mut r = c
            .post(format!("{}/validate", s.base))
            .content_type("application/json")
            .send_body(body)
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{name}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["kind"], "AdmissionReview");
        assert_eq!(v["response"]["uid"], uid, "{name}");
        assert_eq!(v["response"]["allowed"], allowed, "{name}: {v}");
        if !allowed {
            assert_eq!(v["response"]["status"]["code"], 403);
            assert!(v["response"]["status"]["message"]
                .as_str()
                .unwrap()
                .starts_with("spec."));
            assert!(!v["response"]["warnings"].as_array().unwrap().is_empty());
        }
    }
}

#[actix_rt::test]
async fn warn_action_allows_with_warnings() {
    let dir = common::temp_dir("rules");
    let rules = dir.join("rules.yaml");
    std::fs::write(
        &rules,
        "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  mutableDirectives:\n    action: warn\n",
    )
    .unwrap();
    let s = start(&["--rules", rules.to_str().unwrap()]);
    let c = client(&s.ca);
    let mut r = c
        .post(format!("{}/validate", s.base))
        .send_body(fixture(
            "pod-update-remove-nodeselector-key-gated.mutate.json",
        ))
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["response"]["allowed"], true);
    let w: Vec<&str> = v["response"]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert_eq!(w[0], "mutable-directives: spec.nodeSelector: Invalid value: {}: only additions to spec.nodeSelector are allowed (no mutations or deletions)");
    std::fs::remove_dir_all(dir).ok();
}

#[actix_rt::test]
async fn anti_affinity_scopes_follow_the_rule_file() {
    let dir = common::temp_dir("rules");
    let rules = dir.join("rules.yaml");
    std::fs::write(
        &rules,
        "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  hardAntiAffinity:\n    clusterScope: warn\n    namespaceScope: deny\n",
    )
    .unwrap();
    let s = start(&["--rules", rules.to_str().unwrap()]);
    let c = client(&s.ca);
    for (name, allowed) in [
        ("deployment-create-zone-anti-affinity.validate.json", true),
        ("statefulset-create-zone-anti-affinity.validate.json", false),
        (
            "pod-create-zone-anti-affinity-same-namespace.validate.json",
            false,
        ),
    ] {
        let mut r = c
            .post(format!("{}/validate", s.base))
            .send_body(fixture(name))
            .await
            .unwrap();
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["response"]["allowed"], allowed, "{name}: {v}");
        assert!(
            v["response"]["warnings"]
                .as_array()
                .is_some_and(|w| !w.is_empty()),
            "{name}"
        );
    }
    // Subresources and DELETE are allowed without evaluation.
    let mut status: Value =
        serde_json::from_slice(&fixture("pod-create-denied.validate.json")).unwrap();
    status["request"]["subResource"] = "status".into();
    let mut delete: Value =
        serde_json::from_slice(&fixture("pod-create-denied.validate.json")).unwrap();
    delete["request"]["operation"] = "DELETE".into();
    for body in [status, delete] {
        let mut r = c
            .post(format!("{}/validate", s.base))
            .send_json(&body)
            .await
            .unwrap();
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["response"]["allowed"], true);
        assert!(v["response"].get("warnings").is_none());
    }
    std::fs::remove_dir_all(dir).ok();
}

#[actix_rt::test]
async fn bad_input_gets_400_or_413_with_a_reason() {
    let s = start(&[]);
    let c = client(&s.ca);
    let pod_update_without_old = {
        let mut v: Value =
            serde_json::from_slice(&fixture("pod-update-add-nodeselector-gated.validate.json"))
                .unwrap();
        v["request"].as_object_mut().unwrap().remove("oldObject");
        serde_json::to_vec(&v).unwrap()
    };
    let not_a_pod = {
        let mut v: Value =
            serde_json::from_slice(&fixture("pod-update-add-nodeselector-gated.validate.json"))
                .unwrap();
        v["request"]["object"] = serde_json::json!("just a string");
        serde_json::to_vec(&v).unwrap()
    };
    let cases: Vec<(Vec<u8>, u16, &str)> = vec![
        (b"{not json".to_vec(), 400, "request body is not valid JSON"),
        (
            br#"{"apiVersion":"v1","kind":"Pod"}"#.to_vec(),
            400,
            "request body is not an AdmissionReview",
        ),
        (
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#.to_vec(),
            400,
            "AdmissionReview has no request",
        ),
        (
            pod_update_without_old,
            400,
            "request.oldObject is required for UPDATE of pods",
        ),
        (
            not_a_pod,
            400,
            "request.object: cannot read Pod: expected a JSON object",
        ),
        (vec![b' '; 11 * 1024 * 1024], 413, ""),
    ];
    for (body, status, reason) in cases {
        let mut r = c
            .post(format!("{}/validate", s.base))
            .send_body(body)
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), status, "{reason}");
        let text = String::from_utf8_lossy(&r.body().limit(1 << 20).await.unwrap()).to_string();
        assert!(text.contains(reason), "{text:?} should contain {reason:?}");
    }
    // The server is still healthy afterwards.
    let r = c.get(format!("{}/healthz", s.base)).send().await.unwrap();
    assert_eq!(r.status(), 200);
}

#[actix_rt::test]
async fn plain_http_is_refused() {
    let s = start(&[]);
    let plain = s.base.replace("https://", "http://");
    let r = awc::Client::default()
        .get(format!("{plain}/healthz"))
        .send()
        .await;
    match r {
        Err(_) => {}
        Ok(resp) => assert_ne!(resp.status(), 200),
    }
}

#[actix_rt::test]
async fn mutate_defaults_spread_constraints_over_https() {
    use base64::Engine;
    let s = start(&[]);
    let c = client(&s.ca);
    for name in [
        "pod-create-jsonpatch-spread.mutate.json",
        "deployment-create-zone-anti-affinity.mutate.json",
    ] {
        let body = fixture(name);
        let mut r = c
            .post(format!("{}/mutate", s.base))
            .send_body(body.clone())
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["response"]["allowed"], true, "{name}");
        assert_eq!(v["response"]["patchType"], "JSONPatch", "{name}");
        let raw = base64::engine::general_purpose::STANDARD
            .decode(v["response"]["patch"].as_str().unwrap())
            .unwrap();
        let patch: json_patch::Patch = serde_json::from_slice(&raw).unwrap();
        let mut review: Value = serde_json::from_slice(&body).unwrap();
        json_patch::patch(&mut review["request"]["object"], &patch).unwrap();
        // Reinvocation: the patched object gets no further patch.
        let mut again = c
            .post(format!("{}/mutate", s.base))
            .send_json(&review)
            .await
            .unwrap();
        let v: Value = again.json().await.unwrap();
        assert!(v["response"].get("patch").is_none(), "{name}: {v}");
    }
    // A pod that already has constraints is left alone.
    let mut r = c
        .post(format!("{}/mutate", s.base))
        .send_body(fixture("pod-create-topology-spread.mutate.json"))
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert!(v["response"].get("patch").is_none());
}

#[actix_rt::test]
async fn mutate_explains_refused_pod_updates_without_denying() {
    let s = start(&[]);
    let c = client(&s.ca);
    // Recorded: the apiserver called /mutate, then refused the update itself (422).
    let mut r = c
        .post(format!("{}/mutate", s.base))
        .send_body(fixture(
            "pod-update-remove-nodeselector-key-gated-rejected-later.mutate.json",
        ))
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["response"]["allowed"], true);
    assert!(v["response"].get("patch").is_none());
    assert_eq!(
        v["response"]["warnings"],
        serde_json::json!(["placement-guard: spec.nodeSelector[\"disktype\"] removed on a gated pod; while gated you may only add keys"])
    );
    // A legal tightening gets no warning and no patch.
    let mut r = c
        .post(format!("{}/mutate", s.base))
        .send_body(fixture("pod-update-add-nodeselector-gated-2.mutate.json"))
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["response"]["allowed"], true);
    assert!(v["response"].get("warnings").is_none(), "{v}");
    assert!(v["response"].get("patch").is_none());
}
