//! `serve --cluster-aware` against a real kube-apiserver (and kube-scheduler) from
//! ../shared/k8s: the server watches the cluster through the API, is registered as a real
//! validating webhook, and a controller's requests get the warnings and denials through the API.

// Test helpers fail loudly on broken fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use common::kube::{with_apiserver, ApiServer, ADMIN_TOKEN, NOBODY_TOKEN};
use common::{client, fixture, start, temp_dir, Server};

const NS: &str = "queue";
const PODS: &str = "/api/v1/namespaces/queue/pods";

/// The rule file [`cluster_aware`] writes in its directory (a test may rewrite it).
const RULE_FILE: &str = "rules.yaml";

/// `serve --cluster-aware` with `kubeconfig`, a feasibility rule file of `action` in `dir`, and
/// `extra` flags.
fn cluster_aware(
    dir: &std::path::Path,
    action: &str,
    kubeconfig: &std::path::Path,
    extra: &[&str],
) -> Server {
    let rule_file = dir.join(RULE_FILE);
    rules(&rule_file, action);
    let mut args = vec![
        "--rules",
        rule_file.to_str().unwrap(),
        "--cluster-aware",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    start(&args)
}

fn rules(path: &std::path::Path, action: &str) {
    std::fs::write(
        path,
        format!("apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  feasibility:\n    action: {action}\n"),
    )
    .unwrap();
}

fn get(server: &Server, path: &str) -> (u16, String) {
    let url = format!("{}{path}", server.base);
    let ca = server.ca.clone();
    actix_rt::System::new().block_on(async move {
        let mut r = client(&ca).get(url).send().await.unwrap();
        let body = r.body().await.unwrap();
        (
            r.status().as_u16(),
            String::from_utf8_lossy(&body).to_string(),
        )
    })
}

fn post(server: &Server, path: &str, body: Vec<u8>) -> (u16, Value) {
    let url = format!("{}{path}", server.base);
    let ca = server.ca.clone();
    actix_rt::System::new().block_on(async move {
        let mut r = client(&ca)
            .post(url)
            .content_type("application/json")
            .send_body(body)
            .await
            .unwrap();
        let body = r.body().await.unwrap();
        (
            r.status().as_u16(),
            serde_json::from_slice(&body).unwrap_or(Value::Null),
        )
    })
}

fn gated(name: &str, spec: Value) -> Value {
    let mut s = json!({"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
                       "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]});
    for (k, v) in spec.as_object().unwrap() {
        s[k] = v.clone();
    }
    json!({"metadata": {"name": name}, "spec": s})
}

/// Only this tool's feasibility warnings (the apiserver may add its own).
fn feasibility(warnings: &[String]) -> Vec<&str> {
    warnings
        .iter()
        .map(String::as_str)
        .filter(|w| w.starts_with("feasibility: "))
        .collect()
}

fn merge(api: &ApiServer, path: &str, patch: Value) -> (u16, Value, Vec<String>) {
    api.request(
        "PATCH",
        path,
        Some(("application/merge-patch+json", &patch)),
    )
}

fn ungate(api: &ApiServer, name: &str) -> (u16, Value, Vec<String>) {
    api.request(
        "PATCH",
        &format!("{PODS}/{name}"),
        Some((
            "application/json-patch+json",
            &json!([{"op": "remove", "path": "/spec/schedulingGates"}]),
        )),
    )
}

fn until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !f() {
        assert!(Instant::now() < deadline, "{what}: not within 60 s");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn feasibility_through_a_real_apiserver_with_a_watched_cache() {
    let Some(mut api) = with_apiserver("feasibility_through_a_real_apiserver_with_a_watched_cache")
    else {
        return;
    };
    api.namespace(NS);
    api.node("n1", &json!({"topology.kubernetes.io/zone": "a"}), &[]);
    api.node("n2", &json!({"topology.kubernetes.io/zone": "b"}), &[]);
    let dir = temp_dir("cluster-aware");
    let kubeconfig = api.kubeconfig(ADMIN_TOKEN, "default");
    let server = cluster_aware(&dir, "warn", &kubeconfig, &["--reload-interval", "1"]);
    let rule_file = dir.join(RULE_FILE);
    until("/readyz after the cache's first sync", || {
        get(&server, "/readyz").0 == 200
    });
    // What the store holds, as a reader of the log wants it.
    until("the cache's `listed` log line for nodes", || {
        server
            .stderr()
            .contains("cluster cache: listed resource=\"nodes\" objects=2")
    });
    let (_, metrics) = get(&server, "/metrics");
    assert!(
        metrics.contains("placement_guard_cluster_cache_objects{resource=\"nodes\"} 2"),
        "{metrics}"
    );

    for p in ["job-1", "job-2", "job-3"] {
        let (code, body) = api.create(PODS, &gated(p, json!({})));
        assert_eq!(code, 201, "{body}");
    }
    api.register_webhooks(
        &server,
        NS,
        &[
            "pods.validate.placement-guard.io",
            "workloads.validate.placement-guard.io",
        ],
    );
    let to_z9 = json!({"spec": {"nodeSelector": {"topology.kubernetes.io/zone": "z9"}}});
    until("the webhook to warn on a dry run", || {
        let (_, _, w) = merge(&api, &format!("{PODS}/job-1?dryRun=All"), to_z9.clone());
        !feasibility(&w).is_empty()
    });

    // A queue manager tightens a gated pod to a zone with no nodes: warned, stored.
    let (code, body, warnings) = merge(&api, &format!("{PODS}/job-1"), to_z9.clone());
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        feasibility(&warnings),
        ["feasibility: spec.nodeSelector: Forbidden: after this update no node can run the pod: 0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. Most nodes lack topology.kubernetes.io/zone=z9 (2/2 nodes). This update took away the last node(s) that could run it: n1, n2, which lack topology.kubernetes.io/zone=z9."]
    );
    assert_eq!(body["spec"]["nodeSelector"], to_z9["spec"]["nodeSelector"]);

    // With action deny (the rule file is reloaded), the same tightening is refused and the
    // stored pod is unchanged.
    rules(&rule_file, "deny");
    until("the deny rule file to be in force", || {
        merge(&api, &format!("{PODS}/job-2?dryRun=All"), to_z9.clone()).0 == 403
    });
    let (code, body, _) = merge(&api, &format!("{PODS}/job-2"), to_z9.clone());
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "admission webhook \"pods.validate.placement-guard.io\" denied the request: spec.nodeSelector: Forbidden: after this update no node can run the pod: 0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. Most nodes lack topology.kubernetes.io/zone=z9 (2/2 nodes). This update took away the last node(s) that could run it: n1, n2, which lack topology.kubernetes.io/zone=z9."
    );
    let (_, stored) = api.curl("GET", &format!("{PODS}/job-2"), None);
    assert_eq!(stored["spec"]["nodeSelector"], Value::Null);
    // Kueue removes the gate and sets the nodeSelector in one patch: refused the same way.
    let (code, body, _) = api.request(
        "PATCH",
        &format!("{PODS}/job-2"),
        Some((
            "application/json-patch+json",
            &json!([
                {"op": "remove", "path": "/spec/schedulingGates"},
                {"op": "add", "path": "/spec/nodeSelector", "value": {"topology.kubernetes.io/zone": "z9"}},
            ]),
        )),
    );
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "admission webhook \"pods.validate.placement-guard.io\" denied the request: spec.nodeSelector: Forbidden: after this update no node can run the pod: 0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. Most nodes lack topology.kubernetes.io/zone=z9 (2/2 nodes). This update took away the last node(s) that could run it: n1, n2, which lack topology.kubernetes.io/zone=z9."
    );
    let (_, stored) = api.curl("GET", &format!("{PODS}/job-2"), None);
    assert!(stored["spec"]["schedulingGates"].is_array(), "{stored}");

    // A node in that zone appears: the watch picks it up, and the same tightening of another
    // pod passes silently.
    api.node("n3", &json!({"topology.kubernetes.io/zone": "z9"}), &[]);
    until("the new node in the cache", || {
        merge(&api, &format!("{PODS}/job-3?dryRun=All"), to_z9.clone()).0 == 200
    });
    let (code, body, warnings) = merge(&api, &format!("{PODS}/job-3"), to_z9.clone());
    assert_eq!(code, 200, "{body}");
    assert!(feasibility(&warnings).is_empty(), "{warnings:?}");

    // A new gated pod no node can run is warned at create (never denied).
    let nowhere = json!({"nodeSelector": {"topology.kubernetes.io/zone": "nowhere"}});
    let (code, body, warnings) = api.request(
        "POST",
        PODS,
        Some(("application/json", &gated("stuck", nowhere.clone()))),
    );
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        feasibility(&warnings),
        ["feasibility: spec: no node can run this pod now, even tolerating every taint (what removes its scheduling gates may add tolerations): 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. Most nodes lack topology.kubernetes.io/zone=nowhere (3/3 nodes)."]
    );
    let (code, body) = api.create(
        PODS,
        &gated(
            "runs",
            json!({"nodeSelector": {"topology.kubernetes.io/zone": "a"}}),
        ),
    );
    assert_eq!(code, 201, "{body}");

    // Removing the last gate of the pod no node can run: the Pending warning (a warning even
    // under deny); the other pod's ungating says nothing.
    let (code, body, warnings) = ungate(&api, "stuck");
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        feasibility(&warnings),
        ["feasibility: spec.schedulingGates: the pod is ungated but no node can run it now, so it will stay Pending: 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. Most nodes lack topology.kubernetes.io/zone=nowhere (3/3 nodes)."]
    );
    for p in ["runs", "job-3"] {
        let (code, body, warnings) = ungate(&api, p);
        assert_eq!(code, 200, "{body}");
        assert!(feasibility(&warnings).is_empty(), "{p}: {warnings:?}");
    }

    // kube-scheduler agrees: the warned pod stays Pending, the others are bound.
    api.start_scheduler();
    let bound = |p: &str| {
        let (_, v) = api.curl("GET", &format!("{PODS}/{p}"), None);
        v["spec"]["nodeName"].as_str().unwrap_or("").to_string()
    };
    until("the scheduler to bind the pods that fit", || {
        bound("runs") == "n1" && bound("job-3") == "n3"
    });
    let (_, stuck) = api.curl("GET", &format!("{PODS}/stuck"), None);
    assert_eq!(stuck["spec"]["nodeName"], Value::Null);
    api.eventually("the scheduler to mark the pod unschedulable", || {
        let (_, v) = api.curl("GET", &format!("{PODS}/stuck"), None);
        v["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "PodScheduled" && c["reason"] == "Unschedulable")
    });

    // Every node tainted: a Deployment whose template tolerates nothing is warned at create.
    for n in ["n1", "n2", "n3"] {
        let (code, body) = api.patch(
            &format!("/api/v1/nodes/{n}"),
            &json!({"spec": {"taints": [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]}}),
        );
        assert_eq!(code, 200, "{body}");
    }
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}});
    let deployments = "/apis/apps/v1/namespaces/queue/deployments";
    until("the taints in the cache", || {
        let (_, _, w) = api.request(
            "POST",
            &format!("{deployments}?dryRun=All"),
            Some(("application/json", &deploy)),
        );
        !feasibility(&w).is_empty()
    });
    let (code, body, warnings) =
        api.request("POST", deployments, Some(("application/json", &deploy)));
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        feasibility(&warnings),
        ["feasibility: spec.template.spec: no node can run a pod of this template now: 0/3 nodes are available: 3 node(s) had untolerated taint(s). Untolerated: dedicated=batch:NoSchedule on 3 node(s)."]
    );
    // The same template in a Kueue queue: Kueue gates its pods and may add its flavour's
    // tolerations as it admits them, so the taints alone are not warned.
    let mut queued = deploy.clone();
    queued["metadata"] = json!({"name": "queued", "labels": {"kueue.x-k8s.io/queue-name": "team"}});
    let (code, body, warnings) =
        api.request("POST", deployments, Some(("application/json", &queued)));
    assert_eq!(code, 201, "{body}");
    assert!(feasibility(&warnings).is_empty(), "{warnings:?}");
    // A Job created suspended, as Kueue's webhook leaves it: not warned for the taints. Resumed
    // with no toleration added, it is: the release is judged in full.
    let jobs = "/apis/batch/v1/namespaces/queue/jobs";
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "batch", "labels": {"kueue.x-k8s.io/queue-name": "team"}},
        "spec": {"suspend": true, "template": {"spec": {"restartPolicy": "Never",
                 "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}});
    let (code, body, warnings) = api.request("POST", jobs, Some(("application/json", &job)));
    assert_eq!(code, 201, "{body}");
    assert!(feasibility(&warnings).is_empty(), "{warnings:?}");
    let (code, body, warnings) = merge(
        &api,
        &format!("{jobs}/batch"),
        json!({"spec": {"suspend": false}}),
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        feasibility(&warnings),
        ["feasibility: spec.template.spec: no node can run a pod of this template now: 0/3 nodes are available: 3 node(s) had untolerated taint(s). Untolerated: dedicated=batch:NoSchedule on 3 node(s)."]
    );

    // A workload's pods get their RuntimeClass's node selector at admission: a class that sends
    // them where no node is, once the cache holds it, is warned; a template naming a class the
    // cache does not hold is not judged (as the apiserver would refuse its pods).
    let sandboxed = |class: &str| {
        let mut d = deploy.clone();
        d["metadata"]["name"] = json!("sandboxed");
        d["spec"]["template"]["spec"]["tolerations"] = json!([{"operator": "Exists"}]);
        d["spec"]["template"]["spec"]["runtimeClassName"] = json!(class);
        let (code, body, warnings) = api.request(
            "POST",
            &format!("{deployments}?dryRun=All"),
            Some(("application/json", &d)),
        );
        assert_eq!(code, 201, "{body}");
        feasibility(&warnings).join("\n")
    };
    assert_eq!(sandboxed("gvisor"), "");
    let (code, body) = api.create(
        "/apis/node.k8s.io/v1/runtimeclasses",
        &json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "gvisor"},
                "handler": "runsc", "scheduling": {"nodeSelector": {"sandbox": "gvisor"}}}),
    );
    assert_eq!(code, 201, "{body}");
    until("the RuntimeClass in the cache", || {
        !sandboxed("gvisor").is_empty()
    });
    assert_eq!(
        sandboxed("gvisor"),
        "feasibility: spec.template.spec: no node can run a pod of this template now: 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. Most nodes lack sandbox=gvisor (3/3 nodes)."
    );
    assert_eq!(sandboxed("kata"), "");

    // A node-selection policy that selects namespaces by label: the watched Namespace's labels
    // decide, and a label taken away is seen too.
    let (code, body) = api.patch(
        "/api/v1/namespaces/queue",
        &json!({"metadata": {"labels": {"compliance": "pci"}}}),
    );
    assert_eq!(code, 200, "{body}");
    std::fs::write(
        &rule_file,
        format!("{PCI_POLICY}  feasibility:\n    action: deny\n"),
    )
    .unwrap();
    let to_z9_pod = gated("pci", to_z9["spec"].clone());
    let create = |dry: bool| {
        let path = if dry {
            format!("{PODS}?dryRun=All")
        } else {
            PODS.to_string()
        };
        api.request("POST", &path, Some(("application/json", &to_z9_pod)))
    };
    until("the policy and the namespace's label in force", || {
        let (code, body, _) = create(true);
        code == 403
            && body["message"]
                .as_str()
                .unwrap_or("")
                .contains("(policy pci-off-z9)")
    });
    let (code, body, _) = create(false);
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "admission webhook \"pods.validate.placement-guard.io\" denied the request: spec.nodeSelector: Forbidden: pods in namespace \"queue\" may not reach nodes matching \"topology.kubernetes.io/zone In [z9]\" (policy pci-off-z9); this selection admits a node labelled {topology.kubernetes.io/zone: z9}"
    );
    let (code, body) = api.patch(
        "/api/v1/namespaces/queue",
        &json!({"metadata": {"labels": {"compliance": null}}}),
    );
    assert_eq!(code, 200, "{body}");
    until("the label's removal in the cache", || create(true).0 == 201);
    let (code, body, warnings) = create(false);
    assert_eq!(code, 201, "{body}");
    // Judged, and found not to apply: no word of node-selection (as there would be, had the
    // labels not been known).
    assert!(
        !warnings.iter().any(|w| w.starts_with("node-selection")),
        "{warnings:?}"
    );

    let (_, metrics) = get(&server, "/metrics");
    for want in [
        "placement_guard_cluster_cache_objects{resource=\"nodes\"} 3",
        "placement_guard_cluster_cache_objects{resource=\"runtimeclasses\"} 1",
        "placement_guard_cluster_cache_age_seconds{resource=\"pods\"} 0.0",
        "placement_guard_admission_requests_total{endpoint=\"validate\",rule=\"feasibility\",verdict=\"denied\"}",
    ] {
        assert!(metrics.contains(want), "missing {want}\n{metrics}");
    }
    // A synced cache holds every namespace asked about: none was read from the API server.
    assert!(
        !metrics.contains("placement_guard_namespace_lookups_total{"),
        "{metrics}"
    );
    drop(server);
    std::fs::remove_dir_all(dir).ok();
}

const PCI_POLICY: &str = "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  nodeSelection:\n    policies:\n    - name: pci-off-z9\n      namespaceSelector: {matchLabels: {compliance: pci}}\n      forbiddenNodes:\n      - matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [z9]}]\n";

/// A Deployment whose pods are to run in zone z9.
fn deployment_to_z9() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                                 "spec": {"nodeSelector": {"topology.kubernetes.io/zone": "z9"},
                                          "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}})
}

/// A namespace the cluster cache does not hold is read from the API server, as
/// kube-apiserver's PodNodeSelector reads one its informer lacks, so that a policy that selects
/// namespaces by label judges the request. Here the server's account may not list or watch
/// namespaces (its cache never syncs), only get two of them: one is read and judged, the other
/// refused to the server, which then answers without it, never denying, and pauses its
/// lookups.
#[test]
fn a_namespace_the_cache_lacks_is_read_from_the_api_server() {
    let Some(api) = with_apiserver("a_namespace_the_cache_lacks_is_read_from_the_api_server")
    else {
        return;
    };
    let (code, body) = api.create(
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        &json!({"metadata": {"name": "no-namespace-watch"}, "rules": [
            {"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"], "resourceNames": ["pci", "ghost"]}]}),
    );
    assert_eq!(code, 201, "{body}");
    let (code, body) = api.create(
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        &json!({"metadata": {"name": "no-namespace-watch"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "no-namespace-watch"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "nobody"}]}),
    );
    assert_eq!(code, 201, "{body}");
    for ns in ["pci", "other"] {
        let (code, body) = api.create(
            "/api/v1/namespaces",
            &json!({"metadata": {"name": ns, "labels": {"compliance": "pci"}}}),
        );
        assert_eq!(code, 201, "{body}");
    }
    let dir = temp_dir("cluster-aware-lookup");
    let rule_file = dir.join(RULE_FILE);
    std::fs::write(&rule_file, PCI_POLICY).unwrap();
    let kubeconfig = api.kubeconfig(NOBODY_TOKEN, "default");
    let server = start(&[
        "--rules",
        rule_file.to_str().unwrap(),
        "--cluster-aware",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--cache-sync-timeout",
        "2",
    ]);
    until("/readyz after the sync timeout", || {
        get(&server, "/readyz").0 == 200
    });
    for ns in ["pci", "other"] {
        api.register_webhooks(&server, ns, &["workloads.validate.placement-guard.io"]);
    }
    let create = |ns: &str, dry: bool| {
        let dry = if dry { "?dryRun=All" } else { "" };
        let path = format!("/apis/apps/v1/namespaces/{ns}/deployments{dry}");
        api.request(
            "POST",
            &path,
            Some(("application/json", &deployment_to_z9())),
        )
    };
    until("the webhook in force in namespace pci", || {
        create("pci", true).0 == 403
    });
    let (code, body, _) = create("pci", false);
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "admission webhook \"workloads.validate.placement-guard.io\" denied the request: spec.template.spec.nodeSelector: Forbidden: pods in namespace \"pci\" may not reach nodes matching \"topology.kubernetes.io/zone In [z9]\" (policy pci-off-z9); this selection admits a node labelled {topology.kubernetes.io/zone: z9}"
    );
    // A namespace the API server does not have (sent straight to the server: the API server
    // would refuse a create in it before any webhook).
    let mut review: Value = serde_json::from_slice(&fixture(
        "deployment-create-zone-anti-affinity.validate.json",
    ))
    .unwrap();
    review["request"]["namespace"] = json!("ghost");
    let (code, answer) = post(&server, "/validate", serde_json::to_vec(&review).unwrap());
    assert_eq!(code, 200);
    assert!(
        answer["response"]["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().ends_with(
                "the labels of namespace \"ghost\"; the API server has no such namespace"
            )),
        "{answer}"
    );
    // Not to be read: admitted, with the reason, and the next request does not wait for
    // another refusal.
    let node_selection = |w: &[String]| {
        w.iter()
            .filter(|w| w.starts_with("node-selection"))
            .cloned()
            .collect::<Vec<_>>()
    };
    until("the webhook in force in namespace other", || {
        !node_selection(&create("other", true).2).is_empty()
    });
    let (code, body, warnings) = create("other", false);
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        node_selection(&warnings),
        ["node-selection: policy \"pci-off-z9\" selects namespaces by label and did not judge this request; the server's cluster cache cannot be trusted now (not_synced), and with it the labels of namespace \"other\"; not read from the API server, where a lookup failed a moment ago"]
    );
    let (_, metrics) = get(&server, "/metrics");
    for want in [
        "placement_guard_namespace_lookups_total{result=\"found\"}",
        "placement_guard_namespace_lookups_total{result=\"not_found\"} 1\n",
        "placement_guard_namespace_lookups_total{result=\"failed\"} 1\n",
        "placement_guard_namespace_lookups_total{result=\"paused\"} 1\n",
        "placement_guard_rule_checks_skipped_total{rule=\"node-selection\",reason=\"not_synced\"} 3\n",
    ] {
        assert!(metrics.contains(want), "missing {want}\n{metrics}");
    }
    assert!(
        server
            .stderr()
            .contains("(403 Forbidden: the server's account needs get on namespaces, as manifests/cluster-aware/rbac.yaml grants)"),
        "{}",
        server.stderr()
    );
    drop(server);
    std::fs::remove_dir_all(dir).ok();
}

/// A cache that cannot sync (the API server is unreachable) keeps /readyz at 503 for
/// `--cache-sync-timeout` only, and the check is skipped and counted: even under
/// `action: deny`, nothing is denied. Then the server is ready without it (with
/// `failurePolicy: Fail`, replicas kept unready would refuse every write of the cluster).
#[test]
fn an_unsynced_cache_never_denies() {
    let dir = temp_dir("cluster-aware-down");
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: \"https://127.0.0.1:{port}\", insecure-skip-tls-verify: true}}\nusers:\n- name: u\n  user: {{token: t}}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\n"),
    )
    .unwrap();
    let server = cluster_aware(&dir, "deny", &kubeconfig, &["--cache-sync-timeout", "10"]);
    let (code, body) = get(&server, "/readyz");
    assert_eq!(
        (code, body.as_str()),
        (503, "not ready: the cluster cache has not synced yet")
    );
    until("/readyz after the sync timeout", || {
        get(&server, "/readyz").0 == 200
    });
    let (code, review) = post(
        &server,
        "/validate",
        fixture("pod-update-add-nodeselector-gated.validate.json"),
    );
    assert_eq!(code, 200);
    assert_eq!(review["response"]["allowed"], true, "{review}");
    let (_, metrics) = get(&server, "/metrics");
    assert!(
        metrics.contains(
            "placement_guard_rule_checks_skipped_total{rule=\"feasibility\",reason=\"not_synced\"} 1"
        ),
        "{metrics}"
    );
    drop(server);
    std::fs::remove_dir_all(dir).ok();
}

/// An API server that stops answering without closing its connections (stopped here; a load
/// balancer that drops a flow does the same) is noticed within `--cache-max-silence`: the watch
/// is taken for lost, and once it has failed for `--cache-max-stale` the check is skipped (never
/// denying) until the server answers again.
#[test]
fn a_silent_api_server_makes_the_cache_stale() {
    let Some(api) = with_apiserver("a_silent_api_server_makes_the_cache_stale") else {
        return;
    };
    api.node("n1", &json!({"topology.kubernetes.io/zone": "a"}), &[]);
    let dir = temp_dir("cluster-aware-silent");
    let kubeconfig = api.kubeconfig(ADMIN_TOKEN, "default");
    let server = cluster_aware(
        &dir,
        "deny",
        &kubeconfig,
        &["--cache-max-silence", "5", "--cache-max-stale", "2"],
    );
    // Beside it, a server whose account may list nothing: its lists are refused with 403 and
    // retried with backoff while the rest of this test runs.
    let refused_dir = temp_dir("cluster-aware-refused");
    let refused = cluster_aware(
        &refused_dir,
        "deny",
        &api.kubeconfig(NOBODY_TOKEN, "default"),
        &["--cache-sync-timeout", "3"],
    );
    until("/readyz after the first sync", || {
        get(&server, "/readyz").0 == 200
    });
    let stale = "placement_guard_rule_checks_skipped_total{rule=\"feasibility\",reason=\"stale\"}";
    let review = || {
        post(
            &server,
            "/validate",
            fixture("pod-update-add-nodeselector-gated.validate.json"),
        )
    };
    let judged = |r: &Value| {
        r["response"]["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|w| w.as_str().unwrap_or("").starts_with("feasibility: "))
    };
    // Quiet watches are renewed before the silence limit, without a re-list or a skip: the
    // cache still judges (no node has disktype=ssd: a feasibility warning).
    std::thread::sleep(Duration::from_secs(7));
    let (code, r) = review();
    assert_eq!(code, 200);
    assert!(judged(&r), "{r}");
    let (_, metrics) = get(&server, "/metrics");
    assert!(!metrics.contains(stale), "{metrics}");
    assert!(
        metrics
            .contains("placement_guard_cluster_cache_watch_restarts_total{resource=\"nodes\"} 0"),
        "{metrics}"
    );
    // The refused server said so once per resource, with the reason, and the permissions it
    // needs once; kube's own watcher adds no line per retry (it logs each 403 at warn).
    let log = refused.stderr();
    for r in ["nodes", "pods", "namespaces"] {
        let failed = format!("cluster cache: watch failed; retrying with backoff resource=\"{r}\"");
        let lines: Vec<&str> = log.lines().filter(|l| l.contains(&failed)).collect();
        assert_eq!(lines.len(), 1, "{r}:\n{log}");
        assert!(lines[0].contains(&format!("error=cannot list: {r} is forbidden: User \"nobody\" cannot list resource \"{r}\" in API group \"\" at the cluster scope (403 Forbidden: the server's account needs list and watch on nodes, pods, namespaces and runtimeclasses.node.k8s.io, and get on namespaces, as manifests/cluster-aware/rbac.yaml grants)")), "{log}");
    }
    assert_eq!(log.matches("cluster cache: not synced").count(), 1, "{log}");
    assert!(!log.contains("error with 403"), "{log}");
    drop(refused);
    std::fs::remove_dir_all(refused_dir).ok();
    api.signal_apiserver("STOP");
    until("the silent server's cache to be skipped as stale", || {
        assert_eq!(review().0, 200);
        get(&server, "/metrics").1.contains(stale)
    });
    let (code, r) = review();
    assert_eq!(code, 200);
    assert!(!judged(&r), "{r}");
    api.signal_apiserver("CONT");
    // Back without a single change in the cluster: each resource is listed again, which says
    // the cache is current, and the check runs again (a resumed watch alone said nothing, and
    // the cache stayed stale until some node, pod and namespace changed).
    until("the cache to judge again with nothing changed", || {
        judged(&review().1)
    });
    let log = server.stderr();
    for r in ["nodes", "pods", "namespaces"] {
        let recovered = format!("cluster cache: watch recovered resource=\"{r}\"");
        assert!(log.contains(&recovered), "{r}:\n{log}");
    }
    // kube's client logs every failed request of the outage at error: off by default.
    assert!(!log.contains("kube_client"), "{log}");
    drop(server);
    std::fs::remove_dir_all(dir).ok();
}
