//! Against a real kube-apiserver (v1.36.2 from ../shared/k8s) with placement-guard registered as
//! a real validating webhook: what a controller sees through the API.

// Test helpers fail loudly on broken fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use base64::Engine;
use serde_json::{json, Value};

use common::kube::{with_apiserver, ApiServer};
use common::{start, temp_dir, Server};

/// The manifests' own pod webhook (its rules and CEL matchConditions), pointed at `server` by
/// URL and limited to `namespace`.
fn register_pod_webhook(api: &ApiServer, server: &Server, namespace: &str) {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/manifests/webhooks.yaml"
    ))
    .unwrap();
    let cfg = placement_guard::k8s::manifest::parse(&text)
        .unwrap()
        .into_iter()
        .map(|o| o.value)
        .find(|v| v["kind"] == "ValidatingWebhookConfiguration")
        .unwrap();
    let mut hook = cfg["webhooks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == "pods.validate.placement-guard.io")
        .unwrap()
        .clone();
    let ca = std::fs::read(&server.ca).unwrap();
    hook["clientConfig"] = json!({
        "url": format!("{}/validate", server.base),
        "caBundle": base64::engine::general_purpose::STANDARD.encode(ca),
    });
    hook["namespaceSelector"] = json!({"matchLabels": {"kubernetes.io/metadata.name": namespace}});
    let (code, body) = api.create(
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        &json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": "placement-guard-test"}, "webhooks": [hook]}),
    );
    assert_eq!(code, 201, "{body}");
}

fn namespace(api: &ApiServer, name: &str) {
    let (code, body) = api.create("/api/v1/namespaces", &json!({"metadata": {"name": name}}));
    assert_eq!(code, 201, "{body}");
    // No controller-manager: a namespace gets no default ServiceAccount by itself.
    let (code, body) = api.create(
        &format!("/api/v1/namespaces/{name}/serviceaccounts"),
        &json!({"metadata": {"name": "default"}}),
    );
    assert_eq!(code, 201, "{body}");
}

/// KEP-3838's risk, closed: a queue manager's update that steers a gated pod into a forbidden
/// pool is refused through the API, and the stored pod is unchanged; a tightening inside the
/// pool goes through.
#[test]
fn node_selection_refuses_tightening_into_a_forbidden_pool() {
    let Some(api) = with_apiserver("node_selection_refuses_tightening_into_a_forbidden_pool")
    else {
        return;
    };
    let dir = temp_dir("ns-e2e");
    let rules = dir.join("rules.yaml");
    std::fs::write(
        &rules,
        "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  nodeSelection:\n    policies:\n    - name: no-gpu\n      namespaces: [team-a]\n      forbiddenNodes: [{matchExpressions: [{key: pool, operator: In, values: [gpu]}]}]\n",
    )
    .unwrap();
    let server = start(&["--rules", rules.to_str().unwrap()]);
    namespace(&api, "team-a");
    // Created before the policy's webhook, gated, with no selection yet.
    let pods = "/api/v1/namespaces/team-a/pods";
    let (code, body) = api.create(
        pods,
        &json!({"metadata": {"name": "job-1"}, "spec": {
            "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}),
    );
    assert_eq!(code, 201, "{body}");
    register_pod_webhook(&api, &server, "team-a");

    let pod = format!("{pods}/job-1");
    let into_gpu = json!({"spec": {"nodeSelector": {"pool": "gpu"}}});
    // The apiserver's informer picks the registration up asynchronously: probe with dry runs.
    api.eventually("the webhook to refuse a dry run", || {
        api.patch(&format!("{pod}?dryRun=All"), &into_gpu).0 == 403
    });
    let (code, body) = api.patch(&pod, &into_gpu);
    assert_eq!(code, 403, "{body}");
    let message = body["message"].as_str().unwrap();
    assert_eq!(
        message,
        r#"admission webhook "pods.validate.placement-guard.io" denied the request: spec.nodeSelector: Forbidden: pods in namespace "team-a" may not reach nodes matching "pool In [gpu]" (policy no-gpu); this selection admits a node labelled {pool: gpu}"#
    );
    let (code, stored) = api.curl("GET", &pod, None);
    assert_eq!(code, 200);
    assert_eq!(
        stored["spec"]["nodeSelector"],
        Value::Null,
        "stored pod unchanged"
    );

    let (code, body) = api.patch(
        &pod,
        &json!({"spec": {"nodeSelector": {"pool": "tenants"}}}),
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["spec"]["nodeSelector"], json!({"pool": "tenants"}));
    std::fs::remove_dir_all(dir).ok();
}
