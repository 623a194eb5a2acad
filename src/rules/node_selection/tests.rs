use serde_json::{json, Value};

use crate::admission::{review, Endpoint};
use crate::rules::RuleSet;

const POLICY: &str = r#"
apiVersion: placement-guard.io/v1alpha1
kind: RuleSet
spec:
  nodeSelection:
    enabled: true
    action: deny
    policies:
    - name: tenants-stay-off-gpu
      namespaces: ["team-*", billing]
      forbiddenNodes:
      - matchExpressions: [{key: nvidia.com/gpu.present, operator: Exists}]
      requiredNodes:
      - matchExpressions: [{key: pool, operator: In, values: [tenants]}]
      allowedTolerations:
      - {key: dedicated, operator: Equal, value: tenants, effect: NoSchedule}
"#;

fn rules(text: &str) -> RuleSet {
    RuleSet::from_yaml("rules.yaml", text).unwrap()
}

/// An AdmissionReview as kube-apiserver builds it.
fn admission(kind: &str, op: &str, ns: &str, object: Value, old: Option<Value>) -> Vec<u8> {
    let (group, version, resource) = match kind {
        "Pod" => ("", "v1", "pods"),
        "Deployment" => ("apps", "v1", "deployments"),
        other => panic!("{other}"),
    };
    let mut req = json!({
        "uid": "u1",
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": resource},
        "name": "x", "namespace": ns, "operation": op,
        "userInfo": {"username": "system:serviceaccount:kueue-system:kueue"},
        "object": object,
    });
    if let Some(o) = old {
        req["oldObject"] = o;
    }
    serde_json::to_vec(
        &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}),
    )
    .unwrap()
}

fn pod(spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": spec})
}

/// (allowed, the denial message or "").
fn answer(rules: &RuleSet, body: &[u8]) -> (bool, String) {
    let r = review(body, Endpoint::Validate, rules).unwrap();
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    (
        r.allowed,
        v["response"]["status"]["message"]
            .as_str()
            .unwrap_or("")
            .to_string(),
    )
}

fn inside() -> Value {
    json!({"nodeSelector": {"pool": "tenants"}, "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "DoesNotExist"}]}]}}}})
}

#[test]
fn pod_creation_is_judged_exactly() {
    let r = rules(POLICY);
    let create =
        |ns: &str, spec: Value| answer(&r, &admission("Pod", "CREATE", ns, pod(spec), None));
    let cases: Vec<(&str, &str, Value, bool, &str)> = vec![
        (
            "no selection reaches every node",
            "team-a",
            json!({}),
            false,
            r#"[spec.nodeSelector: Forbidden: pods in namespace "team-a" may not reach nodes matching "nvidia.com/gpu.present Exists" (policy tenants-stay-off-gpu); this selection admits a node labelled {nvidia.com/gpu.present: ""}, spec.nodeSelector: Forbidden: pods in namespace "team-a" must stay on nodes matching "pool In [tenants]" (policy tenants-stay-off-gpu); this selection admits a node labelled {}, outside them]"#,
        ),
        (
            "the right pool still admits gpu nodes",
            "team-a",
            json!({"nodeSelector": {"pool": "tenants"}}),
            false,
            r#"spec.nodeSelector: Forbidden: pods in namespace "team-a" may not reach nodes matching "nvidia.com/gpu.present Exists" (policy tenants-stay-off-gpu); this selection admits a node labelled {nvidia.com/gpu.present: "", pool: tenants}"#,
        ),
        ("inside the pool and off gpu", "billing", inside(), true, ""),
        ("another namespace", "ops", json!({}), true, ""),
        (
            "a node by name may be a gpu node",
            "team-b",
            json!({"nodeName": "n1", "affinity": inside()["affinity"]}),
            false,
            r#"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]: Forbidden: pods in namespace "team-b" must stay on nodes matching "pool In [tenants]" (policy tenants-stay-off-gpu); this selection admits a node labelled {} named n1, outside them"#,
        ),
        (
            "an empty required term reaches no node",
            "team-a",
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}}}}),
            true,
            "",
        ),
    ];
    for (name, ns, spec, allowed, message) in cases {
        assert_eq!(create(ns, spec), (allowed, message.to_string()), "{name}");
    }
}

#[test]
fn tolerations_must_be_covered_by_an_allowed_one() {
    let r = rules(POLICY);
    let with = |tols: Value| {
        let mut spec = inside();
        spec["tolerations"] = tols;
        answer(&r, &admission("Pod", "CREATE", "team-a", pod(spec), None))
    };
    let ok = |t: Value| assert!(with(json!([t])).0, "{t} should be allowed");
    let refused = |t: Value| assert!(!with(json!([t])).0, "{t} should be refused");
    ok(
        json!({"key": "dedicated", "operator": "Equal", "value": "tenants", "effect": "NoSchedule"}),
    );
    ok(
        json!({"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}),
    );
    ok(
        json!({"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}),
    );
    refused(json!({"key": "node.kubernetes.io/not-ready", "operator": "Exists"}));
    refused(
        json!({"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}),
    );
    refused(json!({"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}));
    refused(json!({"key": "dedicated", "operator": "Equal", "value": "tenants"}));
    refused(json!({"operator": "Exists"}));
    assert_eq!(
        with(json!([{"key": "dedicated", "operator": "Exists"}])).1,
        r#"spec.tolerations[0]: Forbidden: pods in namespace "team-a" may not carry the toleration {key: dedicated, operator: Exists} (policy tenants-stay-off-gpu); allowed: {key: dedicated, operator: Equal, value: tenants, effect: NoSchedule}"#
    );
}

/// A DaemonSet's controller gives each of its pods tolerations of node conditions (and a
/// host-network one `network-unavailable`): not the pod author's choice, so not judged; a
/// policy refusing them would admit the DaemonSet and refuse every pod of it. The same
/// tolerations on any other pod are judged.
#[test]
fn what_a_daemonsets_controller_adds_is_not_judged() {
    let r = rules(POLICY);
    let given = json!([
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/network-unavailable", "operator": "Exists", "effect": "NoSchedule"}
    ]);
    let daemon = json!([{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "1", "controller": true}]);
    let create = |tolerations: Value, owners: Option<&Value>| {
        let mut spec = inside();
        spec["tolerations"] = tolerations;
        spec["hostNetwork"] = json!(true);
        let mut p = pod(spec);
        if let Some(o) = owners {
            p["metadata"]["ownerReferences"] = o.clone();
        }
        answer(&r, &admission("Pod", "CREATE", "team-a", p, None))
    };
    assert_eq!(create(given.clone(), Some(&daemon)), (true, String::new()));
    // `network-unavailable` only to a host-network pod.
    let mut pod_network = inside();
    pod_network["tolerations"] = json!([{"key": "node.kubernetes.io/network-unavailable", "operator": "Exists", "effect": "NoSchedule"}]);
    let mut p = pod(pod_network);
    p["metadata"]["ownerReferences"] = daemon.clone();
    assert!(!answer(&r, &admission("Pod", "CREATE", "team-a", p.clone(), None)).0);
    // Added by an update, they are the author's: the controller gives them at CREATE only.
    let mut added = p.clone();
    added["spec"]["tolerations"] = json!([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]);
    let mut before = p;
    before["spec"]["tolerations"] = json!([]);
    assert!(
        !answer(
            &r,
            &admission("Pod", "UPDATE", "team-a", added, Some(before))
        )
        .0
    );
    let (allowed, message) = create(given.clone(), None);
    assert!(!allowed);
    assert!(
        message.starts_with(r#"[spec.tolerations[0]: Forbidden: pods in namespace "team-a" may not carry the toleration {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute}"#),
        "{message}"
    );
    // Only as the controller writes them: without an effect, another taint, or on a pod the
    // DaemonSet does not control, they are the author's.
    let owned_by_not_controller =
        json!([{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "1"}]);
    for (tolerations, owners) in [
        (
            json!([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]),
            &daemon,
        ),
        (
            json!([{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]),
            &daemon,
        ),
        (
            json!([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]),
            &owned_by_not_controller,
        ),
    ] {
        assert!(
            !create(tolerations.clone(), Some(owners)).0,
            "{tolerations}"
        );
    }
}

#[test]
fn covering_is_taint_set_inclusion() {
    let t = |v: Value| serde_json::from_value::<k8s_openapi::api::core::v1::Toleration>(v).unwrap();
    let all = t(json!({"operator": "Exists"}));
    let key = t(json!({"key": "k", "operator": "Exists"}));
    let key_ns = t(json!({"key": "k", "operator": "Exists", "effect": "NoSchedule"}));
    let val = t(json!({"key": "k", "operator": "Equal", "value": "v"}));
    let val_ns = t(json!({"key": "k", "value": "v", "effect": "NoSchedule"}));
    // tolerationSeconds in an allowed toleration is the longest a pod's may last.
    let maint_60 = t(
        json!({"key": "maint", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}),
    );
    let maint_30 = t(
        json!({"key": "maint", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}),
    );
    let maint_long = t(
        json!({"key": "maint", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 99999999}),
    );
    let maint_ever = t(json!({"key": "maint", "operator": "Exists", "effect": "NoExecute"}));
    let cases = [
        (&maint_60, &maint_30, true),
        (&maint_60, &maint_60, true),
        (&maint_60, &maint_long, false),
        (&maint_60, &maint_ever, false),
        (&maint_ever, &maint_long, true),
        (&all, &all, true),
        (&all, &val_ns, true),
        (&key, &all, false),
        (&key, &val, true),
        (&key, &key_ns, true),
        (&key_ns, &key, false),
        (&val, &key, false),
        (&val, &val_ns, true),
        (&val_ns, &val, false),
    ];
    for (allowed, tol, want) in cases {
        assert_eq!(
            super::covers(allowed, tol),
            want,
            "{allowed:?} covers {tol:?}"
        );
    }
}

/// KEP-3838's risk: a gated pod created before the policy is steered by an update.
#[test]
fn updates_are_judged_when_the_selection_or_tolerations_change() {
    let r = rules(
        r#"
apiVersion: placement-guard.io/v1alpha1
kind: RuleSet
spec:
  nodeSelection:
    policies:
    - name: no-gpu
      namespaces: [team-a]
      forbiddenNodes: [{matchExpressions: [{key: pool, operator: In, values: [gpu]}]}]
      allowedTolerations: []
"#,
    );
    let gated = |extra: Value| {
        let mut spec = json!({"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}], "containers": [{"name": "c", "image": "i"}]});
        if let (Some(s), Value::Object(e)) = (spec.as_object_mut(), extra) {
            s.extend(e);
        }
        pod(spec)
    };
    let update =
        |old: Value, new: Value| answer(&r, &admission("Pod", "UPDATE", "team-a", new, Some(old)));
    // Tightened into the forbidden pool: denied.
    let (allowed, message) = update(
        gated(json!({})),
        gated(json!({"nodeSelector": {"pool": "gpu"}})),
    );
    assert!(!allowed);
    assert_eq!(
        message,
        r#"spec.nodeSelector: Forbidden: pods in namespace "team-a" may not reach nodes matching "pool In [gpu]" (policy no-gpu); this selection admits a node labelled {pool: gpu}"#
    );
    // Tightened inside its pool: allowed.
    assert!(
        update(
            gated(json!({})),
            gated(json!({"nodeSelector": {"pool": "tenants"}}))
        )
        .0
    );
    // A label change leaves selection and tolerations alone: not judged again.
    let mut relabelled = gated(json!({}));
    relabelled["metadata"]["labels"] = json!({"a": "b"});
    assert!(update(gated(json!({})), relabelled).0);
    // A toleration added to a running pod: denied unless allowed; old ones are not judged again.
    let running = |tols: Value| {
        pod(
            json!({"nodeName": "n1", "tolerations": tols, "containers": [{"name": "c", "image": "i"}]}),
        )
    };
    let spot = json!({"key": "spot", "operator": "Exists", "effect": "NoSchedule"});
    let (allowed, message) = update(running(json!([])), running(json!([spot])));
    assert!(!allowed);
    assert!(
        message.starts_with("spec.tolerations[0]: Forbidden"),
        "{message}"
    );
    let default = json!({"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300});
    assert!(update(running(json!([])), running(json!([default]))).0);
    assert!(update(running(json!([spot])), running(json!([spot]))).0);
}

#[test]
fn workload_templates_are_judged_at_create_and_update() {
    let r = rules(POLICY);
    let deployment = |spec: Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "team-a"},
               "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}, "spec": spec}}})
    };
    let gpu = json!({"nodeSelector": {"pool": "tenants", "nvidia.com/gpu.present": "true"}});
    let (allowed, message) = answer(
        &r,
        &admission(
            "Deployment",
            "CREATE",
            "team-a",
            deployment(gpu.clone()),
            None,
        ),
    );
    assert!(!allowed);
    assert!(message.starts_with(r#"spec.template.spec.nodeSelector: Forbidden: pods in namespace "team-a" may not reach nodes matching "nvidia.com/gpu.present Exists""#), "{message}");
    assert!(
        answer(
            &r,
            &admission("Deployment", "CREATE", "team-a", deployment(inside()), None)
        )
        .0
    );
    let (allowed, _) = answer(
        &r,
        &admission(
            "Deployment",
            "UPDATE",
            "team-a",
            deployment(gpu),
            Some(deployment(inside())),
        ),
    );
    assert!(!allowed, "aimed at the forbidden pool by an update");
}

#[test]
fn rule_file_errors_name_the_field() {
    let head = "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  nodeSelection:\n    policies:\n";
    let cases = [
        (
            "    - {name: a, forbiddenNodes: [{matchExpressions: [{key: k, operator: Exists}]}]}\n",
            "r.yaml:6:7: spec.nodeSelection.policies[0].namespaces: Required value: the namespaces this policy applies to: names or globs such as \"team-*\", or namespace labels in namespaceSelector",
        ),
        (
            "    - {name: a, namespaceSelector: {matchExpressions: [{key: tenant, operator: Equals, values: [a]}]}, allowedTolerations: []}\n",
            "r.yaml:6:70: spec.nodeSelection.policies[0].namespaceSelector.matchExpressions[0].operator: Invalid value: \"Equals\": not a valid selector operator",
        ),
        (
            "    - {name: a, namespaceSelector: {matchLabels: {tenant: \"a b\"}}, allowedTolerations: []}\n",
            "r.yaml:6:37: spec.nodeSelection.policies[0].namespaceSelector.matchLabels: Invalid value: \"a b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ),
        (
            "    - {name: a, namespaces: [x]}\n",
            "r.yaml:6:7: spec.nodeSelection.policies[0]: Required value: at least one of forbiddenNodes, requiredNodes, allowedTolerations",
        ),
        (
            "    - {name: a, namespaces: [x], requiredNodes: [{matchExpressions: [{key: k, operator: In}]}]}\n",
            "r.yaml:6:70: spec.nodeSelection.policies[0].requiredNodes[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
        ),
        (
            "    - {name: a, namespaces: [x], forbiddenNodes: [{matchExpressions: [{key: gpus, operator: Gt, values: [4x]}]}]}\n",
            "r.yaml:6:106: spec.nodeSelection.policies[0].forbiddenNodes[0].matchExpressions[0].values[0]: Invalid value: \"4x\": must be an integer: Gt and Lt compare a node label's value as one, and a value that is not matches no node",
        ),
        (
            "    - {name: a, namespaces: [x], allowedTolerations: []}\n    - {name: a, namespaces: [y], allowedTolerations: []}\n",
            "r.yaml:7:8: spec.nodeSelection.policies[1].name: Duplicate value: \"a\"",
        ),
        // A misspelt field inside a term or a toleration is refused, not passed over: an
        // empty term left behind would match no node, and the policy forbid nothing.
        (
            "    - {name: a, namespaces: [x], forbiddenNodes: [{matchExpression: [{key: gpu, operator: Exists}]}]}\n",
            "r.yaml:6:52: spec.nodeSelection.policies[0].forbiddenNodes[0].matchExpression: unknown field `matchExpression`, expected one of matchExpressions, matchFields",
        ),
        (
            "    - {name: a, namespaces: [x], requiredNodes: [{matchExpressions: [{key: pool, operatr: Exists}]}]}\n",
            "r.yaml:6:82: spec.nodeSelection.policies[0].requiredNodes[0].matchExpressions[0].operatr: unknown field `operatr`, expected one of key, operator, values",
        ),
        (
            "    - {name: a, namespaces: [x], allowedTolerations: [{key: dedicated, operatr: Exists}]}\n",
            "r.yaml:6:72: spec.nodeSelection.policies[0].allowedTolerations[0].operatr: unknown field `operatr`, expected one of key, operator, value, effect, tolerationSeconds",
        ),
        (
            "    - {name: a, namespaces: [x], forbiddenNodes: [{}]}\n",
            "r.yaml:6:51: spec.nodeSelection.policies[0].forbiddenNodes[0]: Invalid value: {}: a term without matchExpressions or matchFields matches no node (as in Kubernetes), so it would forbid nothing in forbiddenNodes and allow nothing in requiredNodes; give it requirements",
        ),
        (
            "    - {name: a, namespaces: [x], allowedTolerations: [{key: maint, operator: Exists, effect: NoSchedule, tolerationSeconds: 60}]}\n",
            "r.yaml:6:86: spec.nodeSelection.policies[0].allowedTolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
        ),
    ];
    for (policy, want) in cases {
        let err = RuleSet::from_yaml("r.yaml", &format!("{head}{policy}")).unwrap_err();
        assert_eq!(err.to_string(), want);
    }
}

/// A `namespaceSelector` matches the namespace's labels as the cluster cache has them, ANDed
/// with `namespaces`; where the labels are not known the policy says so and never denies.
#[test]
fn namespace_labels_select_policies() {
    use crate::admission::review_in;
    use crate::core::cluster::Cluster;
    use crate::rules::ClusterState;
    use std::collections::{BTreeMap, HashMap};
    let r = rules(
        r#"
apiVersion: placement-guard.io/v1alpha1
kind: RuleSet
spec:
  nodeSelection:
    policies:
    - name: tenants-off-gpu
      namespaceSelector: {matchLabels: {tenant: "true"}}
      forbiddenNodes:
      - matchExpressions: [{key: gpu, operator: Exists}]
    - name: restricted-teams
      namespaces: ["team-*"]
      namespaceSelector:
        matchExpressions: [{key: tier, operator: In, values: [restricted]}]
      requiredNodes:
      - matchExpressions: [{key: pool, operator: In, values: [tenants]}]
    - name: new-is-reserved
      namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: new}}
      requiredNodes:
      - matchExpressions: [{key: pool, operator: In, values: [reserved]}]
"#,
    );
    // As the cache holds them: every namespace carries its name as a label.
    let labelled = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let namespaces: HashMap<String, BTreeMap<String, String>> = [
        ("shop", labelled(&[("tenant", "true")])),
        ("ops", labelled(&[])),
        ("team-a", labelled(&[("tier", "restricted")])),
        ("other", labelled(&[("tier", "restricted")])),
    ]
    .into_iter()
    .map(|(n, mut l)| {
        l.insert("kubernetes.io/metadata.name".into(), n.to_string());
        (n.to_string(), l)
    })
    .collect();
    let node: crate::core::snapshot::SlimObject = serde_json::from_value(
        json!({"metadata": {"name": "n1", "labels": {"pool": "tenants"}}, "spec": {}}),
    )
    .unwrap();
    let nodes = vec![crate::core::snapshot::node_of(node, false)];
    let cluster = Cluster::new(nodes, namespaces).unwrap();
    let ready = ClusterState::Ready(&cluster);
    // (namespace, cluster, allowed, denial or warning, unchecked reason)
    let cases: Vec<(&str, ClusterState, bool, &str, Option<&str>)> = vec![
        (
            "shop",
            ready,
            false,
            r#"spec.nodeSelector: Forbidden: pods in namespace "shop" may not reach nodes matching "gpu Exists" (policy tenants-off-gpu); this selection admits a node labelled {gpu: ""}"#,
            None,
        ),
        ("ops", ready, true, "", None),
        (
            "team-a",
            ready,
            false,
            r#"spec.nodeSelector: Forbidden: pods in namespace "team-a" must stay on nodes matching "pool In [tenants]" (policy restricted-teams); this selection admits a node labelled {}, outside them"#,
            None,
        ),
        // Its labels match restricted-teams' selector, its name not the policy's globs.
        ("other", ready, true, "", None),
        (
            "fresh",
            ready,
            true,
            r#"node-selection: policy "tenants-off-gpu" selects namespaces by label and did not judge this request; namespace "fresh" is not in the server's cluster cache yet (created a moment ago, or the watch lags)"#,
            Some("namespace_not_cached"),
        ),
        // A policy on the name alone still judges where another's labels are not known.
        (
            "new",
            ready,
            false,
            r#"spec.nodeSelector: Forbidden: pods in namespace "new" must stay on nodes matching "pool In [reserved]" (policy new-is-reserved); this selection admits a node labelled {}, outside them"#,
            Some("namespace_not_cached"),
        ),
        (
            "team-b",
            ClusterState::Unavailable("not_synced"),
            true,
            r#"node-selection: policies "tenants-off-gpu", "restricted-teams" select namespaces by label and did not judge this request; the server's cluster cache cannot be trusted now (not_synced), and with it the labels of namespace "team-b""#,
            Some("not_synced"),
        ),
        (
            "shop",
            ClusterState::Absent,
            true,
            r#"node-selection: policy "tenants-off-gpu" selects namespaces by label and did not judge this request; the labels of namespace "shop" are not known here (a server reads them from its cluster cache with `serve --cluster-aware`, `test` from its suite's namespaces.yaml, `review` from --namespaces)"#,
            Some("namespace_labels_unknown"),
        ),
    ];
    for (ns, cluster, allowed, said, why) in cases {
        let body = admission("Pod", "CREATE", ns, pod(json!({})), None);
        let got = review_in(&body, Endpoint::Validate, &r, cluster).unwrap();
        let v: Value = serde_json::from_slice(&got.body).unwrap();
        let shown = if allowed {
            v["response"]["warnings"][0].as_str().unwrap_or("")
        } else {
            v["response"]["status"]["message"].as_str().unwrap_or("")
        };
        assert_eq!((got.allowed, shown), (allowed, said), "{ns}");
        let unchecked: Vec<&str> = got
            .verdict
            .iter()
            .flat_map(|v| &v.unchecked)
            .filter(|u| u.0 == crate::rules::node_selection::ID)
            .map(|u| u.1)
            .collect();
        assert_eq!(unchecked, why.into_iter().collect::<Vec<_>>(), "{ns}");
        // What the server reads from the API server then, and only then.
        assert_eq!(got.namespace_labels_missing(), why.is_some(), "{ns}");
    }
    // A namespace the cache does not hold, judged with the labels the server read for it.
    let body = admission("Pod", "CREATE", "fresh", pod(json!({})), None);
    let read = labelled(&[("tenant", "true"), ("kubernetes.io/metadata.name", "fresh")]);
    let got = crate::admission::review_in_namespace(
        &body,
        Endpoint::Validate,
        &r,
        ready,
        "fresh",
        Ok(read.clone()),
    )
    .unwrap();
    assert!(!got.allowed);
    assert!(!got.namespace_labels_missing());
    // Not found there either: admitted, and the note says why.
    use crate::rules::LabelsNotFound as Not;
    let tail = |not: Not| {
        let got = crate::admission::review_in_namespace(
            &body,
            Endpoint::Validate,
            &r,
            ready,
            "fresh",
            Err(not),
        )
        .unwrap();
        assert!(got.allowed && got.namespace_labels_missing());
        let v: Value = serde_json::from_slice(&got.body).unwrap();
        let w = v["response"]["warnings"][0].as_str().unwrap().to_string();
        let lag = "(created a moment ago, or the watch lags)";
        w[w.find(lag).unwrap() + lag.len()..].to_string()
    };
    assert_eq!(
        tail(Not::NoSuchNamespace),
        "; the API server has no such namespace"
    );
    assert_eq!(
        tail(Not::LookupFailed),
        "; reading it from the API server failed (the server's log says why)"
    );
    assert_eq!(
        tail(Not::LookupPaused),
        "; not read from the API server, where a lookup failed a moment ago"
    );
    // Given namespaces that do not hold it (`review --namespaces`, a suite's file).
    let given = crate::admission::NamespaceLabels::from([("shop".to_string(), read.clone())]);
    let got =
        crate::admission::review_with_namespaces(&body, Endpoint::Validate, &r, &given).unwrap();
    let v: Value = serde_json::from_slice(&got.body).unwrap();
    assert_eq!(
        v["response"]["warnings"][0],
        "node-selection: policy \"tenants-off-gpu\" selects namespaces by label and did not judge this request; namespace \"fresh\" is not among the namespaces given (`review --namespaces`, a suite's namespaces.yaml)"
    );
    // Given none: how to give them.
    let none = crate::admission::NamespaceLabels::new();
    let got =
        crate::admission::review_with_namespaces(&body, Endpoint::Validate, &r, &none).unwrap();
    let v: Value = serde_json::from_slice(&got.body).unwrap();
    assert!(
        v["response"]["warnings"][0]
            .as_str()
            .unwrap()
            .ends_with("the labels of namespace \"fresh\" are not known here (a server reads them from its cluster cache with `serve --cluster-aware`, `test` from its suite's namespaces.yaml, `review` from --namespaces)"),
        "{v}"
    );
}

/// Without the namespace's labels a selector is still decided where its name alone decides it:
/// `{}`, and requirements on `kubernetes.io/metadata.name`.
#[test]
fn a_selector_on_the_name_alone_needs_no_labels() {
    use super::Policy;
    let policy = |namespaces: &str, selector: &str| -> Policy {
        serde_saphyr::from_str(&format!(
            "{{name: p, namespaces: {namespaces}, namespaceSelector: {selector}, allowedTolerations: []}}"
        ))
        .unwrap()
    };
    // (namespaces, selector, namespace, labels unknown, labels {tenant: a} and its name)
    type Case<'a> = (&'a str, &'a str, &'a str, Option<bool>, Option<bool>);
    let cases: &[Case] = &[
        ("[]", "{}", "z", Some(true), Some(true)),
        (
            "[]",
            "{matchLabels: {kubernetes.io/metadata.name: z}}",
            "z",
            Some(true),
            Some(true),
        ),
        (
            "[]",
            "{matchLabels: {kubernetes.io/metadata.name: z}}",
            "y",
            Some(false),
            Some(false),
        ),
        (
            "[]",
            "{matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, values: [z]}, {key: tenant, operator: Exists}]}",
            "z",
            Some(false),
            Some(false),
        ),
        (
            "[]",
            "{matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, values: [z]}, {key: tenant, operator: Exists}]}",
            "y",
            None,
            Some(true),
        ),
        ("[]", "{matchLabels: {tenant: a}}", "y", None, Some(true)),
        ("[team-*]", "{matchLabels: {tenant: a}}", "y", Some(false), Some(false)),
        ("[team-*]", "{matchLabels: {tenant: a}}", "team-y", None, Some(true)),
        // An object that names no namespace (`check` without -n): no policy, said once.
        ("[\"*\"]", "{}", "", Some(false), Some(false)),
    ];
    for &(names, selector, ns, unknown, known) in cases {
        let p = policy(names, selector);
        let labels = std::collections::BTreeMap::from([
            ("tenant".to_string(), "a".to_string()),
            ("kubernetes.io/metadata.name".to_string(), ns.to_string()),
        ]);
        assert_eq!(p.applies_to(ns, None), unknown, "{names} {selector} {ns}");
        assert_eq!(
            p.applies_to(ns, Some(&labels)),
            known,
            "{names} {selector} {ns} with labels"
        );
    }
}

/// `serve` without `--cluster-aware` knows no namespace labels: a policy that needs them is
/// refused at start and at reload; one on the name alone is not.
#[test]
fn a_server_without_the_cluster_refuses_policies_that_need_labels() {
    let head = "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  nodeSelection:\n    policies:\n    - {name: a, allowedTolerations: [], namespaceSelector: ";
    for (selector, refused) in [
        ("{matchLabels: {tenant: x}}}\n", true),
        (
            "{matchExpressions: [{key: tier, operator: Exists}]}}\n",
            true,
        ),
        ("{}}\n", false),
        ("{matchLabels: {kubernetes.io/metadata.name: x}}}\n", false),
    ] {
        let text = format!("{head}{selector}");
        assert!(RuleSet::from_yaml_to_serve("r.yaml", &text, true).is_ok());
        let got = RuleSet::from_yaml_to_serve("r.yaml", &text, false).map_err(|e| e.to_string());
        match refused {
            true => assert_eq!(
                got.unwrap_err(),
                "r.yaml:6:41: spec.nodeSelection.policies[0].namespaceSelector: Forbidden: selects namespaces by labels, which a server only knows with --cluster-aware (its cache of the cluster): serve with --cluster-aware, or select namespaces by name (namespaces, or the kubernetes.io/metadata.name label)",
                "{selector}"
            ),
            false => assert!(got.is_ok(), "{selector}: {got:?}"),
        }
    }
    // Every such policy is named at once.
    let two = format!("{head}{{matchLabels: {{a: b}}}}}}\n    - {{name: b, allowedTolerations: [], namespaceSelector: {{}}}}\n    - {{name: c, allowedTolerations: [], namespaceSelector: {{matchLabels: {{c: d}}}}}}\n");
    let got = RuleSet::from_yaml_to_serve("r.yaml", &two, false)
        .unwrap_err()
        .to_string();
    assert!(
        got.ends_with("(so does spec.nodeSelection.policies[2].namespaceSelector)"),
        "{got}"
    );
}

/// The hint for a selection that reaches forbidden nodes: the requirement that keeps it off
/// them, unless every node it selects is forbidden, where that requirement would leave none.
#[test]
fn the_hint_never_leaves_the_pod_no_node() {
    let r = rules(POLICY);
    let hints = |spec: Value| {
        let body = admission("Pod", "CREATE", "team-a", pod(spec), None);
        let rv = review(&body, Endpoint::Validate, &r).unwrap();
        let v: Value = serde_json::from_slice(&rv.body).unwrap();
        v["response"]["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|w| w.contains("those nodes") || w.contains("every node"))
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        hints(json!({"nodeSelector": {"pool": "tenants"}})),
        ["node-selection: to stay off those nodes, require \"nvidia.com/gpu.present DoesNotExist\": add it as required node affinity"]
    );
    assert_eq!(
        hints(json!({"nodeSelector": {"pool": "tenants", "nvidia.com/gpu.present": "true"}})),
        ["node-selection: every node this selection admits matches \"nvidia.com/gpu.present Exists\": select nodes the policy allows here (requiring the opposite beside it would leave the pod no node)"]
    );
}
