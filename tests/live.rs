//! `explain` and `audit` against a real kube-apiserver (v1.36.2 from ../shared/k8s), and
//! `explain`'s feasible set against the node the real kube-scheduler binds a pod to. One API
//! server per test binary: the scenarios run in order on the same cluster.

// Test helpers fail loudly on broken fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use common::kube::{with_apiserver, ApiServer, ADMIN_TOKEN, NOBODY_TOKEN};
use common::BIN;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn pg(kubeconfig: &Path, args: &[&str]) -> Run {
    let out = Command::new(BIN)
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .env_remove("KUBECONFIG")
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into(),
        stderr: String::from_utf8_lossy(&out.stderr).into(),
    }
}

fn created(api: &ApiServer, path: &str, obj: Value) {
    let (code, body) = api.create(path, &obj);
    assert_eq!(code, 201, "{path}: {body}");
}

/// A namespace with its labels and the default service account pods are admitted with (no
/// controller-manager here creates it).
fn namespace(api: &ApiServer, ns: &str, labels: Value) {
    created(
        api,
        "/api/v1/namespaces",
        json!({"metadata": {"name": ns, "labels": labels}}),
    );
    created(
        api,
        &format!("/api/v1/namespaces/{ns}/serviceaccounts"),
        json!({"metadata": {"name": "default"}}),
    );
}

/// A node with a zone, 2 CPUs, 4 GiB and room for 110 pods.
fn node(api: &ApiServer, name: &str, zone: &str, taint: Option<Value>) {
    let taints: Vec<Value> = taint.into_iter().collect();
    api.node(name, &json!({"topology.kubernetes.io/zone": zone}), &taints);
}

fn pod(name: &str, cpu: &str, extra: Value) -> Value {
    let mut spec = json!({"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                           "resources": {"requests": {"cpu": cpu}}}]});
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            s.insert(k.clone(), v.clone());
        }
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}}, "spec": spec})
}

fn feasible(r: &Run) -> Vec<String> {
    let v: Value = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("{e}: {} {}", r.stdout, r.stderr));
    v["feasible"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn explain_and_audit_against_a_live_cluster() {
    let Some(mut api) = with_apiserver("explain_and_audit_against_a_live_cluster") else {
        return;
    };
    let ns = "shop";
    namespace(&api, ns, json!({"team": "a"}));
    node(&api, "node-a", "zone-a", None);
    node(&api, "node-b", "zone-b", None);
    node(
        &api,
        "node-c",
        "zone-c",
        Some(json!({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"})),
    );
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    // Bound directly (no scheduler yet): node-a keeps 500m CPU free.
    created(
        &api,
        &pods,
        pod("hog", "1500m", json!({"nodeName": "node-a"})),
    );
    // More pods than one page of --chunk-size 2, spread over a and b, requesting nothing.
    for i in 0..5 {
        let n = if i % 2 == 0 { "node-a" } else { "node-b" };
        created(
            &api,
            &pods,
            pod(&format!("idle-{i}"), "0", json!({"nodeName": n})),
        );
    }
    created(&api, &pods, pod("wants-one-cpu", "1", json!({})));
    created(&api, &pods, pod("wants-three", "3", json!({})));
    let anti = |key: &str| {
        json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": key, "namespaceSelector": {}}]}})
    };
    let (code, web) = api.create(
        &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
        &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
               "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "3"}}}],
                                              "affinity": anti("topology.kubernetes.io/zone")}}}}),
    );
    assert_eq!(code, 201, "{web}");
    // The Deployment's ReplicaSets, as its controller would leave them mid-rollout (no
    // controller-manager runs here): the current one (its template), an older one still
    // running another template, and one scaled to zero.
    let owned_by = |kind: &str, name: &str, uid: &Value| json!([{"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": uid, "controller": true}]);
    for (name, replicas, key) in [
        ("web-current", 1, "topology.kubernetes.io/zone"),
        ("web-old", 1, "topology.kubernetes.io/region"),
        ("web-older", 0, "kubernetes.io/hostname"),
    ] {
        created(
            &api,
            &format!("/apis/apps/v1/namespaces/{ns}/replicasets"),
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                   "metadata": {"name": name, "ownerReferences": owned_by("Deployment", "web", &web["metadata"]["uid"])},
                   "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                            "template": {"metadata": {"labels": {"app": "web"}},
                                         "spec": {"containers": [{"name": "c", "image": "nginx"}], "affinity": anti(key)}}}}),
        );
    }
    // A pod whose controller is gone: judged itself.
    let mut orphan = pod(
        "orphan",
        "0",
        json!({"nodeName": "node-b", "affinity": anti("topology.kubernetes.io/zone")}),
    );
    orphan["metadata"]["ownerReferences"] = owned_by(
        "ReplicaSet",
        "gone",
        &json!("11111111-2222-3333-4444-555555555555"),
    );
    created(&api, &pods, orphan);
    let admin = api.kubeconfig(ADMIN_TOKEN, ns);

    // A Pending pod, explained by name (the context's namespace), over paginated lists.
    let r = pg(
        &admin,
        &[
            "explain",
            "--pod",
            "wants-one-cpu",
            "--chunk-size",
            "2",
            "-o",
            "json",
        ],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(feasible(&r), vec!["node-b"]);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        v["summary"],
        "1/3 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s)."
    );
    assert!(
        r.stderr.contains("pod shop/wants-one-cpu (Pending)"),
        "{}",
        r.stderr
    );
    // The same with the text output and pod/NAME.
    let r = pg(&admin, &["explain", "--pod", "pod/wants-one-cpu", "-n", ns]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .contains("node-a  no        NodeResourcesFit: Insufficient cpu"),
        "{}",
        r.stdout
    );
    // A bound pod is placed again without itself: node-a has room for it.
    let r = pg(&admin, &["explain", "--pod", "hog", "-o", "json"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(feasible(&r), vec!["node-a", "node-b"]);
    assert!(r.stderr.contains("bound to node-a"), "{}", r.stderr);
    // A pod bound to a node the cluster does not have runs nowhere: said so.
    created(&api, &pods, pod("stray", "0", json!({"nodeName": "ghost"})));
    let r = pg(&admin, &["explain", "--pod", "stray"]);
    assert!(
        r.stderr.contains("placement-guard: note: the pod is bound to node \"ghost\", which the cluster does not have: it runs nowhere"),
        "{}",
        r.stderr
    );
    let (code, body) = api.curl(
        "DELETE",
        &format!("{pods}/stray?gracePeriodSeconds=0"),
        None,
    );
    assert!(code == 200 || code == 202, "{body}");
    // A live pod placed on a dump's nodes: said so, since the two clusters may differ.
    let dump = std::env::temp_dir().join(format!("pg-live-dump-{}.json", std::process::id()));
    std::fs::write(
        &dump,
        json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-z"},
             "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}}]})
        .to_string(),
    )
    .unwrap();
    let r = pg(
        &admin,
        &[
            "explain",
            "--pod",
            "wants-one-cpu",
            "--cluster",
            dump.to_str().unwrap(),
            "-o",
            "json",
        ],
    );
    let _ = std::fs::remove_file(&dump);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(feasible(&r), vec!["node-z"]);
    assert!(
        r.stderr
            .contains("pod shop/wants-one-cpu (Pending) (read from the API server at https://")
            && r.stderr
                .contains("placed on the nodes of the --cluster dump, not that cluster's)"),
        "{}",
        r.stderr
    );
    // A workload's template that no node can run: exit 1, the scheduler's words.
    let r = pg(&admin, &["explain", "--pod", "deploy/web"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stdout.starts_with(
            "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu."
        ),
        "{}",
        r.stdout
    );

    // Errors: one line, exit 2.
    let r = pg(&admin, &["explain", "--pod", "nope"]);
    assert_eq!(
        (r.code, r.stderr.trim()),
        (2, "placement-guard: Pod shop/nope not found")
    );
    // A namespace that does not exist is named, and an audit of it fails: it lists nothing and
    // would pass like a clean one.
    let r = pg(&admin, &["explain", "--pod", "nope", "-n", "nowhere"]);
    assert_eq!(
        (r.code, r.stderr.trim()),
        (
            2,
            "placement-guard: Pod nowhere/nope not found: namespaces \"nowhere\" not found"
        )
    );
    let r = pg(&admin, &["audit", "-n", "nowhere"]);
    assert_eq!(
        (r.code, r.stderr.trim()),
        (2, "placement-guard: namespaces \"nowhere\" not found")
    );
    let nobody = api.kubeconfig(NOBODY_TOKEN, ns);
    let r = pg(&nobody, &["explain", "--pod", "deploy/web"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("cannot get Deployment shop/web") && r.stderr.contains("403 Forbidden"),
        "{}",
        r.stderr
    );
    // audit by a user who may list nothing: no audit, exit 2 (a CI job must not pass).
    let r = pg(&nobody, &["audit"]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("nothing audited: every list was refused")
            && r.stderr.contains("grant list on the audited kinds"),
        "{}",
        r.stderr
    );
    let bad = api.kubeconfig("expired-token", ns);
    let r = pg(&bad, &["explain", "--pod", "hog"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("401 Unauthorized"), "{}", r.stderr);
    let r = pg(
        &admin,
        &["explain", "--pod", "hog", "--context", "elsewhere"],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        format!(
            "placement-guard: kubeconfig {}: context \"elsewhere\" does not exist\n",
            admin.display()
        )
    );
    let missing = admin.with_extension("missing");
    let r = pg(&missing, &["explain", "--pod", "hog"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        format!(
            "placement-guard: kubeconfig {}: cannot read it: No such file or directory (os error 2)\n",
            missing.display()
        )
    );
    // A CA that did not sign the API server's certificate: said as a trust problem, once.
    let wrong_ca = {
        let other =
            placement_guard::server::tls::generate_dev_cert(&admin.with_extension("ca-dir"))
                .unwrap();
        let text = std::fs::read_to_string(&admin).unwrap();
        let p = admin.with_extension("wrong-ca");
        std::fs::write(
            &p,
            text.replace(
                &api.ca.display().to_string(),
                &other.cert.display().to_string(),
            ),
        )
        .unwrap();
        p
    };
    let r = pg(&wrong_ca, &["explain", "--pod", "hog"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        format!("placement-guard: cannot verify the API server at {}/: its TLS certificate is not trusted (self-signed certificate); check the kubeconfig's certificate-authority(-data) for this cluster\n", api.url)
    );
    let closed = {
        let text = std::fs::read_to_string(&admin).unwrap();
        let port = api.url.rsplit(':').next().unwrap();
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let free = l.local_addr().unwrap().port();
        drop(l);
        let p = admin.with_extension("closed");
        std::fs::write(&p, text.replace(&format!(":{port}"), &format!(":{free}"))).unwrap();
        p
    };
    let r = pg(
        &closed,
        &["explain", "--pod", "hog", "--request-timeout", "5"],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("cannot reach the API server"),
        "{}",
        r.stderr
    );
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);

    // A user who may read one namespace only: the 403 on the cluster-wide list names the verb
    // and the resource.
    // (No controller-manager aggregates the built-in `view` role here: a Role of our own.)
    created(
        &api,
        &format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles"),
        json!({"metadata": {"name": "reader"}, "rules": [{"apiGroups": ["", "apps", "batch"], "resources": ["*"], "verbs": ["get", "list"]}]}),
    );
    let (code, body) = api.create(
        &format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings"),
        &json!({"metadata": {"name": "nobody-view"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
                "subjects": [{"kind": "User", "name": "nobody", "apiGroup": "rbac.authorization.k8s.io"}]}),
    );
    assert_eq!(code, 201, "{body}");
    api.eventually("the view binding", || {
        pg(&nobody, &["explain", "--pod", "hog"])
            .stderr
            .contains("cannot list nodes")
    });
    let r = pg(&nobody, &["explain", "--pod", "hog"]);
    assert!(
        r.stderr.contains("grant the user `list` on nodes"),
        "{}",
        r.stderr
    );

    // A pod whose `matchLabelKeys` the apiserver merged into its spread selector when it
    // stored it (as every pod of a Deployment with `pod-template-hash` there).
    let mut spread = pod(
        "spread-1",
        "10m",
        json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway", "matchLabelKeys": ["pod-template-hash"],
            "labelSelector": {"matchLabels": {"app": "spread-1"}}}]}),
    );
    spread["metadata"]["labels"]["pod-template-hash"] = json!("abc");
    let (code, stored) = api.create("/api/v1/namespaces/shop/pods", &spread);
    assert_eq!(code, 201, "{stored}");
    assert_eq!(
        stored["spec"]["topologySpreadConstraints"][0]["labelSelector"]["matchExpressions"],
        json!([{"key": "pod-template-hash", "operator": "In", "values": ["abc"]}]),
        "the apiserver merges the key"
    );

    // audit: the rules as check applies them, and what cannot run; objects named ns/Kind/name.
    let r = pg(&admin, &["audit", "-A", "--chunk-size", "3"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    // Judged as stored: its merged key is not merged again and called a duplicate.
    assert!(!r.stdout.contains("spread-1"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("shop/Deployment/web: error[hard-anti-affinity]")
            && r.stdout.contains(" object(s) in the cluster: "),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("shop/Deployment/web: warning[feasibility] Deployment shop/web: no node can run a new pod of this template now: 0/3 nodes are available"), "{}", r.stdout);
    assert!(r.stdout.contains("shop/Pod/wants-three: warning[feasibility] Pod shop/wants-three: the pod is Pending and no node can run it now: 0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu."), "{}", r.stdout);
    assert!(
        !r.stdout.contains("wants-one-cpu: warning[feasibility]"),
        "{}",
        r.stdout
    );
    // Owned objects: through their owner when they hold its directives, else judged.
    assert!(
        r.stdout
            .contains("shop/ReplicaSet/web-old: error[hard-anti-affinity]")
            && r.stdout
                .contains("shop/Pod/orphan: error[hard-anti-affinity]")
            && !r.stdout.contains("web-current")
            && !r.stdout.contains("web-older"),
        "{}",
        r.stdout
    );
    assert!(
        r.stderr.contains(
            "2 object(s) owned by an audited workload were judged through their owner's template"
        ),
        "{}",
        r.stderr
    );
    let r = pg(
        &admin,
        &["audit", "-o", "json", "--only-rule", "feasibility"],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["diagnostics"].as_array().unwrap().len(), 2, "{v}");
    assert_eq!(v["summary"]["files"], 0, "{v}");
    // Without the right to list nodes, the rules still run and the user is told.
    let r = pg(&nobody, &["audit"]);
    assert!(r.stderr.contains("placement not checked"), "{}", r.stderr);
    // --quiet drops the notes, not what was left unaudited.
    let r = pg(&nobody, &["audit", "-q"]);
    assert!(r.stderr.contains("placement not checked"), "{}", r.stderr);
    assert!(
        r.stdout
            .contains("shop/Deployment/web: error[hard-anti-affinity]"),
        "{}",
        r.stdout
    );

    // The real scheduler agrees: the pod explain fits on node-b only is bound there, and the one
    // explain finds no node for stays Pending.
    let before = feasible(&pg(
        &admin,
        &["explain", "--pod", "wants-one-cpu", "-o", "json"],
    ));
    api.start_scheduler();
    let node_of = |api: &ApiServer, name: &str| {
        let (_, v) = api.curl("GET", &format!("/api/v1/namespaces/{ns}/pods/{name}"), None);
        v["spec"]["nodeName"].as_str().unwrap_or("").to_string()
    };
    api.eventually("wants-one-cpu bound", || {
        !node_of(&api, "wants-one-cpu").is_empty()
    });
    assert!(
        before.contains(&node_of(&api, "wants-one-cpu")),
        "{before:?}"
    );
    api.eventually("wants-three marked unschedulable", || {
        let (_, v) = api.curl(
            "GET",
            &format!("/api/v1/namespaces/{ns}/pods/wants-three"),
            None,
        );
        v["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "PodScheduled" && c["reason"] == "Unschedulable")
    });
    assert_eq!(node_of(&api, "wants-three"), "");
    // The scheduler's own message is the summary explain gives (now that wants-one-cpu took node-b).
    let (_, v) = api.curl(
        "GET",
        &format!("/api/v1/namespaces/{ns}/pods/wants-three"),
        None,
    );
    let message = v["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "PodScheduled")
        .unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
    let r = pg(&admin, &["explain", "--pod", "wants-three", "-o", "json"]);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let ours = v["summary"].as_str().unwrap();
    assert!(
        message.starts_with(ours),
        "scheduler: {message}\nexplain: {ours}"
    );
    // And explain quotes the scheduler's condition beside its own answer.
    assert!(
        r.stderr.contains(&format!(
            "placement-guard: note: kube-scheduler's last word (PodScheduled=False, Unschedulable): {message}"
        )),
        "{}",
        r.stderr
    );
    scheduler_semantics(&api);
    deployment_mid_rollout(&api);
    statefulset_mid_rollout(&api);
    runtime_classes(&api);
    limit_ranges(&api);
    // OpenKruise is not installed here: its kinds are not served, which is not "not found".
    let admin = api.kubeconfig(ADMIN_TOKEN, "shop");
    let r = pg(&admin, &["explain", "--pod", "clone/web"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        "placement-guard: the server doesn't have a resource type \"clonesets\" (apps.kruise.io/v1alpha1: is OpenKruise installed?)\n"
    );
}

/// `explain sts/NAME` places a new pod of the StatefulSet's update revision: with
/// `matchLabelKeys: [controller-revision-hash]` that revision's pods count and the current
/// revision's do not.
fn statefulset_mid_rollout(api: &ApiServer) {
    let ns = "sts-roll";
    namespace(api, ns, json!({}));
    let spec = json!({"containers": [{"name": "c", "image": "postgres:17"}],
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "db"}},
            "matchLabelKeys": ["controller-revision-hash"]}]});
    let path = format!("/apis/apps/v1/namespaces/{ns}/statefulsets");
    let (code, sts) = api.create(
        &path,
        &json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
               "spec": {"replicas": 3, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                        "template": {"metadata": {"labels": {"app": "db"}}, "spec": spec}}}),
    );
    assert_eq!(code, 201, "{sts}");
    // Its status as the controller leaves it mid-rollout (no controller-manager here).
    let (code, body) = api.patch(
        &format!("{path}/db/status"),
        &json!({"status": {"observedGeneration": 1, "replicas": 3, "currentRevision": "db-old", "updateRevision": "db-new"}}),
    );
    assert_eq!(code, 200, "{body}");
    // The update revision's pod on node-b, two of the current revision's on node-a.
    for (i, (revision, node)) in [
        ("db-old", "node-a"),
        ("db-old", "node-a"),
        ("db-new", "node-b"),
    ]
    .into_iter()
    .enumerate()
    {
        created(
            api,
            &format!("/api/v1/namespaces/{ns}/pods"),
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": format!("db-{i}"), "labels": {"app": "db", "controller-revision-hash": revision}},
                   "spec": {"nodeName": node, "containers": spec["containers"], "topologySpreadConstraints": spec["topologySpreadConstraints"]}}),
        );
    }
    // Counted with the update revision's pod only: node-b holds one, so node-a. Counting every
    // pod would leave node-b; counting none (a new revision's pod), both.
    let admin = api.kubeconfig(ADMIN_TOKEN, ns);
    let r = pg(&admin, &["explain", "--pod", "sts/db", "-o", "json"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(feasible(&r), vec!["node-a"], "{}", r.stderr);
    assert!(
        r.stderr.contains("(of its update revision db-new)"),
        "{}",
        r.stderr
    );
}

/// `explain deploy/NAME` places a new pod of the Deployment's current ReplicaSet: with
/// `matchLabelKeys: [pod-template-hash]` its pods count and an older ReplicaSet's do not.
fn deployment_mid_rollout(api: &ApiServer) {
    let ns = "roll";
    namespace(api, ns, json!({}));
    let template = |image: &str, hash: Option<&str>| {
        let mut labels = json!({"app": "roll"});
        if let Some(h) = hash {
            labels["pod-template-hash"] = json!(h);
        }
        json!({"metadata": {"labels": labels},
               "spec": {"containers": [{"name": "c", "image": image}],
                        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                            "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "roll"}},
                            "matchLabelKeys": ["pod-template-hash"]}]}})
    };
    let (code, deployment) = api.create(
        &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
        &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "roll"},
               "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "roll"}},
                        "template": template("nginx:2", None)}}),
    );
    assert_eq!(code, 201, "{deployment}");
    // A ReplicaSet it controlled with its template, relabelled out of its selector: the
    // controller releases it (`ClaimReplicaSets`), so it is not the current one, though it is
    // the oldest match by (creationTimestamp, name).
    let released = template("nginx:2", Some("rel"));
    created(
        api,
        &format!("/apis/apps/v1/namespaces/{ns}/replicasets"),
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
               "metadata": {"name": "roll-a-released", "labels": {"app": "elsewhere"},
                   "ownerReferences": [{"apiVersion": "apps/v1",
                   "kind": "Deployment", "name": "roll", "uid": deployment["metadata"]["uid"], "controller": true}]},
               "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "roll", "pod-template-hash": "rel"}},
                        "template": released}}),
    );
    // Its ReplicaSets as the controller leaves them mid-rollout (no controller-manager here):
    // the current one (the Deployment's template) with a pod on node-b, the old one with two on
    // node-a.
    for (hash, image, nodes) in [
        ("cur", "nginx:2", &["node-b"][..]),
        ("old", "nginx:1", &["node-a", "node-a"][..]),
    ] {
        created(
            api,
            &format!("/apis/apps/v1/namespaces/{ns}/replicasets"),
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                   "metadata": {"name": format!("roll-{hash}"), "labels": template(image, Some(hash))["metadata"]["labels"],
                       "ownerReferences": [{"apiVersion": "apps/v1",
                       "kind": "Deployment", "name": "roll", "uid": deployment["metadata"]["uid"], "controller": true}]},
                   "spec": {"replicas": nodes.len(), "selector": {"matchLabels": {"app": "roll", "pod-template-hash": hash}},
                            "template": template(image, Some(hash))}}),
        );
        for (i, node) in nodes.iter().enumerate() {
            let mut p = json!({"apiVersion": "v1", "kind": "Pod",
                               "metadata": {"name": format!("roll-{hash}-{i}")}});
            p["metadata"]["labels"] = template(image, Some(hash))["metadata"]["labels"].clone();
            p["spec"] = template(image, Some(hash))["spec"].clone();
            p["spec"]["nodeName"] = json!(node);
            created(api, &format!("/api/v1/namespaces/{ns}/pods"), p);
        }
    }
    // Counted with the current ReplicaSet's pod only: node-b holds one, so node-a (node-c is
    // tainted). Counting every pod of the Deployment would leave no node; counting none, two.
    let admin = api.kubeconfig(ADMIN_TOKEN, ns);
    let r = pg(&admin, &["explain", "--pod", "deploy/roll", "-o", "json"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(feasible(&r), vec!["node-a"], "{}", r.stderr);
    assert!(
        r.stderr
            .contains("Deployment roll/roll: a new pod of its template (of its current ReplicaSet, pod-template-hash cur)"),
        "{}",
        r.stderr
    );
}

/// Where kube-scheduler binds pod `name` of the collection `pods`: the node, or the message of
/// its Unschedulable condition.
fn scheduled_or_refused(api: &ApiServer, pods: &str, name: &str) -> Result<String, String> {
    let mut outcome = Err(String::new());
    api.eventually(&format!("{name} scheduled or refused"), || {
        let (_, v) = api.curl("GET", &format!("{pods}/{name}"), None);
        if let Some(n) = v["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
            outcome = Ok(n.to_string());
            return true;
        }
        let refused = v["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "PodScheduled" && c["reason"] == "Unschedulable");
        if let Some(c) = refused {
            outcome = Err(c["message"].as_str().unwrap_or("").to_string());
            return true;
        }
        false
    });
    outcome
}

/// Two semantics a differential run against kube-scheduler v1.36.2 found, checked against the
/// running scheduler: a terminating pod still counts for inter-pod anti-affinity, and a spread
/// constraint with `labelSelector: {}` counts no pods (kubernetes#141339). Each pod is created
/// gated, explained, then ungated: explain's feasible set must be exactly where the scheduler
/// may put it, and the scheduler must bind it there.
fn scheduler_semantics(api: &ApiServer) {
    let ns = "edge";
    namespace(api, ns, json!({}));
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    let admin = api.kubeconfig(ADMIN_TOKEN, ns);
    // A db pod on node-a (zone-a), kept terminating by a finalizer.
    let mut leaving = pod("leaving", "0", json!({"nodeName": "node-a"}));
    leaving["metadata"]["labels"] = json!({"app": "db"});
    leaving["metadata"]["finalizers"] = json!(["placement-guard.test/keep"]);
    created(api, &pods, leaving);
    let (code, body) = api.curl("DELETE", &format!("{pods}/leaving"), None);
    assert!(code == 200 || code == 202, "{body}");
    let gated = |name: &str, extra: Value| {
        let mut p = pod(name, "0", extra);
        p["spec"]["schedulingGates"] = json!([{"name": "placement-guard.test/hold"}]);
        p
    };
    // explain's verdict on the gated pod, then where the scheduler put it once ungated: the
    // node it was bound to, or the message of its Unschedulable condition.
    let place = |name: &str| -> (Run, Result<String, String>) {
        let explained = pg(&admin, &["explain", "--pod", name, "-o", "json"]);
        let (code, body) = api.patch(
            &format!("{pods}/{name}"),
            &json!({"spec": {"schedulingGates": null}}),
        );
        assert_eq!(code, 200, "{body}");
        (explained, scheduled_or_refused(api, &pods, name))
    };
    // Anti-affinity to db over zones, held to zone-a: the terminating db pod there still shuts
    // it, so the pod stays Pending, for the scheduler's reason.
    created(
        api,
        &pods,
        gated(
            "avoids-db",
            json!({"nodeSelector": {"topology.kubernetes.io/zone": "zone-a"},
                   "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "topology.kubernetes.io/zone"}]}}}),
        ),
    );
    let (explained, outcome) = place("avoids-db");
    assert!(feasible(&explained).is_empty(), "{}", explained.stdout);
    assert!(
        explained.stderr.contains("placement-guard: note: the pod has schedulingGates (placement-guard.test/hold): kube-scheduler does not try to place it until they are removed; explained as if they were"),
        "{}",
        explained.stderr
    );
    let ours: Value = serde_json::from_str(&explained.stdout).unwrap();
    let ours = ours["summary"].as_str().unwrap();
    assert_eq!(
        ours,
        "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) didn't match pod anti-affinity rules, 1 node(s) had untolerated taint(s)."
    );
    let message = outcome.expect_err("avoids-db must stay Pending");
    assert!(
        message.starts_with(ours),
        "scheduler: {message}\nexplain: {ours}"
    );
    // Two live pods in zone-a. Counting every live pod of the namespace, zone-a would hold 2
    // and zone-b and zone-c none, and one more in zone-a a skew of 3; kube-scheduler v1.36
    // counts no pod for `{}`, so zone-a is open.
    for i in 0..2 {
        created(
            api,
            &pods,
            pod(&format!("x-{i}"), "0", json!({"nodeName": "node-a"})),
        );
    }
    created(
        api,
        &pods,
        gated(
            "empty-spread",
            json!({"nodeSelector": {"topology.kubernetes.io/zone": "zone-a"},
                   "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                       "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}, "nodeAffinityPolicy": "Ignore"}]}),
        ),
    );
    let (explained, outcome) = place("empty-spread");
    assert_eq!(feasible(&explained), ["node-a"]);
    assert_eq!(outcome, Ok("node-a".to_string()));
}

/// A container that asks for nothing gets the default request of its namespace's LimitRange
/// from the LimitRanger admission plugin: `explain` of the manifest places it with that
/// request, as kube-scheduler then refuses the pod created from it, for the same reason.
fn limit_ranges(api: &ApiServer) {
    let ns = "limited";
    namespace(api, ns, json!({}));
    created(
        api,
        &format!("/api/v1/namespaces/{ns}/limitranges"),
        json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "defaults"},
               "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "3"}}]}}),
    );
    let admin = api.kubeconfig(ADMIN_TOKEN, ns);
    let bare = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bare"},
                      "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}});
    let dir = std::env::temp_dir().join(format!("pg-lr-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bare.json");
    std::fs::write(&file, bare.to_string()).unwrap();
    let explained = pg(
        &admin,
        &["explain", "--pod", file.to_str().unwrap(), "-o", "json"],
    );
    assert!(feasible(&explained).is_empty(), "{}", explained.stdout);
    assert!(
        explained.stderr.contains("placement-guard: note: placed with the default requests LimitRanger gives at admission (LimitRange \"defaults\": cpu 3 for container \"c\")"),
        "{}",
        explained.stderr
    );
    let ours: Value = serde_json::from_str(&explained.stdout).unwrap();
    let ours = ours["summary"].as_str().unwrap().to_string();
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    created(api, &pods, bare);
    let message = scheduled_or_refused(api, &pods, "bare").expect_err("bare must stay Pending");
    assert!(
        message.starts_with(&ours),
        "scheduler: {message}\nexplain: {ours}"
    );
    // The pod as stored carries the request: explained by name, it is not defaulted again.
    let explained = pg(&admin, &["explain", "--pod", "bare", "-o", "json"]);
    assert!(feasible(&explained).is_empty(), "{}", explained.stdout);
    assert!(
        !explained.stderr.contains("LimitRange"),
        "{}",
        explained.stderr
    );
    // audit places a workload's template with the defaults its pods will get.
    created(
        api,
        &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "bare-web"},
               "spec": {"selector": {"matchLabels": {"app": "bare-web"}},
                        "template": {"metadata": {"labels": {"app": "bare-web"}},
                                     "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}}),
    );
    let r = pg(&admin, &["audit", "-n", ns, "--only-rule", "feasibility"]);
    assert!(
        r.stdout.contains("limited/Deployment/bare-web: warning[feasibility] Deployment limited/bare-web: no node can run a new pod of this template now: 0/3 nodes are available"),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    std::fs::remove_dir_all(dir).ok();
}

/// A pod that names a RuntimeClass gets its class's nodeSelector, tolerations and overhead from
/// the RuntimeClass admission plugin before kube-scheduler sees it: `explain` of a manifest and
/// of a Deployment places it so, and kube-scheduler binds the pod created from the same
/// manifest where explain said (a user found explain's answer reversed before).
fn runtime_classes(api: &ApiServer) {
    let ns = "shop";
    let admin = api.kubeconfig(ADMIN_TOKEN, ns);
    let classes = "/apis/node.k8s.io/v1/runtimeclasses";
    created(
        api,
        classes,
        json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "gpu-sandbox"}, "handler": "runsc",
               "scheduling": {"nodeSelector": {"topology.kubernetes.io/zone": "zone-c"},
                              "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]}}),
    );
    created(
        api,
        classes,
        json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "heavy"}, "handler": "kata",
               "overhead": {"podFixed": {"cpu": "1900m"}}}),
    );
    let dir = std::env::temp_dir().join(format!("pg-rc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    // Where the scheduler binds a pod created from `manifest`, or its Unschedulable message.
    let scheduled = |manifest: &Value| -> Result<String, String> {
        created(api, &pods, manifest.clone());
        scheduled_or_refused(api, &pods, manifest["metadata"]["name"].as_str().unwrap())
    };
    // The class's selector and toleration: only the tainted zone-c node.
    let sandboxed = pod("sandboxed", "0", json!({"runtimeClassName": "gpu-sandbox"}));
    let file = dir.join("sandboxed.json");
    std::fs::write(&file, sandboxed.to_string()).unwrap();
    let explained = pg(
        &admin,
        &["explain", "--pod", file.to_str().unwrap(), "-o", "json"],
    );
    assert_eq!(feasible(&explained), ["node-c"], "{}", explained.stderr);
    assert!(
        explained.stderr.contains("placement-guard: note: placed with what RuntimeClass \"gpu-sandbox\" adds at admission (its overhead, nodeSelector and tolerations)"),
        "{}",
        explained.stderr
    );
    assert_eq!(scheduled(&sandboxed), Ok("node-c".to_string()));
    // A Deployment's template is placed the same way.
    created(
        api,
        &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "sandboxed-web"},
               "spec": {"selector": {"matchLabels": {"app": "sandboxed-web"}},
                        "template": {"metadata": {"labels": {"app": "sandboxed-web"}},
                                     "spec": {"runtimeClassName": "gpu-sandbox", "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}}),
    );
    let explained = pg(
        &admin,
        &["explain", "--pod", "deploy/sandboxed-web", "-o", "json"],
    );
    assert_eq!(feasible(&explained), ["node-c"], "{}", explained.stderr);
    // The class's overhead: 1.9 CPUs more than the pod asks does not fit node-a's 500m.
    let heavy = pod(
        "heavy",
        "0",
        json!({"runtimeClassName": "heavy", "nodeSelector": {"topology.kubernetes.io/zone": "zone-a"}}),
    );
    let file = dir.join("heavy.json");
    std::fs::write(&file, heavy.to_string()).unwrap();
    let explained = pg(
        &admin,
        &["explain", "--pod", file.to_str().unwrap(), "-o", "json"],
    );
    assert!(feasible(&explained).is_empty(), "{}", explained.stdout);
    let ours: Value = serde_json::from_str(&explained.stdout).unwrap();
    let ours = ours["summary"].as_str().unwrap().to_string();
    let message = scheduled(&heavy).expect_err("heavy must stay Pending");
    assert!(
        message.starts_with(&ours),
        "scheduler: {message}\nexplain: {ours}"
    );
    // A class that does not exist: the apiserver refuses such a pod, and explain says so.
    let missing = pod("missing", "0", json!({"runtimeClassName": "wasm"}));
    let file = dir.join("missing.json");
    std::fs::write(&file, missing.to_string()).unwrap();
    let explained = pg(&admin, &["explain", "--pod", file.to_str().unwrap()]);
    assert!(
        explained.stderr.contains("placement-guard: note: kube-apiserver refuses the pod (pod rejected: RuntimeClass \"wasm\" not found); placed as written"),
        "{}",
        explained.stderr
    );
    let (code, body) = api.create(&pods, &missing);
    assert_eq!(code, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|m| m.ends_with("pod rejected: RuntimeClass \"wasm\" not found")),
        "{body}"
    );
    std::fs::remove_dir_all(dir).ok();
}
