//! Against a real kube-apiserver (v1.36.2 from ../shared/k8s) with placement-guard registered as
//! a real validating webhook: what a controller sees through the API.

// Test helpers fail loudly on broken fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use serde_json::{json, Value};

use common::kube::with_apiserver;
use common::{start, temp_dir};

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
    api.namespace("team-a");
    // Created before the policy's webhook, gated, with no selection yet.
    let pods = "/api/v1/namespaces/team-a/pods";
    let (code, body) = api.create(
        pods,
        &json!({"metadata": {"name": "job-1"}, "spec": {
            "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}),
    );
    assert_eq!(code, 201, "{body}");
    api.register_webhooks(&server, "team-a", &["pods.validate.placement-guard.io"]);

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
