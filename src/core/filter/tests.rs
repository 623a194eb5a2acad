//! Table tests per plugin, in the style of the scheduler's own: builders, a case name that reads
//! as a sentence, and the wanted feasible nodes.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::Taint;
use serde_json::{json, Value};

use super::*;
use crate::core::cluster::{BoundPod, Cluster, Node};
use crate::k8s::workload::{parse_value, Kind};

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn node(name: &str, l: &[(&str, &str)]) -> Node {
    let mut labels = labels(l);
    labels.insert("kubernetes.io/hostname".into(), name.into());
    Node {
        name: name.into(),
        labels,
        ..Default::default()
    }
}

fn tainted(mut n: Node, key: &str, value: &str, effect: &str) -> Node {
    n.taints.push(Taint {
        key: key.into(),
        value: Some(value.into()),
        effect: effect.into(),
        time_added: None,
    });
    n
}

fn bound(ns: &str, l: &[(&str, &str)]) -> BoundPod {
    BoundPod {
        name: "p".into(),
        namespace: ns.into(),
        labels: labels(l),
        ..Default::default()
    }
}

fn cluster(nodes: Vec<Node>, pods: Vec<(&str, BoundPod)>) -> Cluster {
    let mut ns = HashMap::new();
    ns.insert("default".to_string(), labels(&[("team", "a")]));
    ns.insert("other".to_string(), labels(&[("team", "b")]));
    let mut c = Cluster::new(nodes, ns).unwrap();
    for (n, p) in pods {
        c.add_pod(n, p).unwrap();
    }
    c
}

fn pod(labels: Value, spec: Value) -> PodTemplate {
    parse_value(
        Kind::Pod,
        &json!({"metadata": {"name": "incoming", "labels": labels}, "spec": spec}),
    )
    .unwrap()
}

fn feasible(c: &Cluster, p: &PodTemplate) -> Vec<String> {
    evaluate(c, p, "default")
        .into_iter()
        .filter(|r| r.feasible)
        .map(|r| r.name)
        .collect()
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn spread(key: &str, max_skew: i32, extra: Value) -> Value {
    let mut c = json!({"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"foo": "bar"}}});
    if let (Some(c), Value::Object(e)) = (c.as_object_mut(), extra) {
        c.extend(e);
    }
    c
}

const ZONE: &str = "topology.kubernetes.io/zone";
const HOST: &str = "kubernetes.io/hostname";

/// The worked examples of the Kubernetes documentation on topology spread constraints.
#[test]
fn documentation_examples() {
    let foo = || bound("default", &[("foo", "bar")]);
    let four = || {
        cluster(
            vec![
                node("node1", &[(ZONE, "zoneA")]),
                node("node2", &[(ZONE, "zoneA")]),
                node("node3", &[(ZONE, "zoneB")]),
                node("node4", &[(ZONE, "zoneB")]),
            ],
            vec![("node1", foo()), ("node2", foo()), ("node3", foo())],
        )
    };
    let one = pod(
        json!({"foo": "bar"}),
        json!({"topologySpreadConstraints": [spread(ZONE, 1, json!({}))]}),
    );
    assert_eq!(
        feasible(&four(), &one),
        names(&["node3", "node4"]),
        "one zone constraint leaves only zoneB"
    );
    let two = pod(
        json!({"foo": "bar"}),
        json!({"topologySpreadConstraints": [spread(ZONE, 1, json!({})), spread(HOST, 1, json!({}))]}),
    );
    assert_eq!(
        feasible(&four(), &two),
        names(&["node4"]),
        "adding a node constraint leaves only node4"
    );

    let three = cluster(
        vec![
            node("node1", &[(ZONE, "zoneA")]),
            node("node2", &[(ZONE, "zoneA")]),
            node("node3", &[(ZONE, "zoneB")]),
        ],
        vec![
            ("node1", foo()),
            ("node1", foo()),
            ("node2", foo()),
            ("node3", foo()),
            ("node3", foo()),
        ],
    );
    let results = evaluate(&three, &two, "default");
    assert!(
        results.iter().all(|r| !r.feasible),
        "conflicting constraints leave no node"
    );
    assert_eq!(
        summary(&results),
        "0/3 nodes are available: 3 node(s) didn't match pod topology spread constraints."
    );
}

#[test]
fn node_name_and_unschedulable() {
    let mut cordoned = node("n2", &[]);
    cordoned.unschedulable = true;
    let c = cluster(vec![node("n1", &[]), cordoned, node("n3", &[])], vec![]);
    let cases = [
        (
            "a pod asking for n3 fits only n3",
            pod(json!({}), json!({"nodeName": "n3"})),
            vec!["n3"],
        ),
        (
            "a cordoned node takes no pod",
            pod(json!({}), json!({})),
            vec!["n1", "n3"],
        ),
        (
            "unless the pod tolerates the unschedulable taint",
            pod(
                json!({}),
                json!({"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]}),
            ),
            vec!["n1", "n2", "n3"],
        ),
    ];
    for (name, p, want) in cases {
        assert_eq!(feasible(&c, &p), names(&want), "{name}");
    }
}

/// A pod that names its node is never seen by kube-scheduler: the kubelet admits it with
/// `scheduler.AdmissionCheck` (resources, node affinity, node name, ports) and NoExecute taints
/// only (`lifecycle.generalFilter`). A cordon and NoSchedule taints do not stop it, nor do other
/// pods' affinity or spread.
#[test]
fn a_pod_naming_its_node_is_admitted_as_the_kubelet_does() {
    let mut cordoned = tainted(
        node("n1", &[("zone", "a")]),
        "dedicated",
        "gpu",
        "NoSchedule",
    );
    cordoned.unschedulable = true;
    let evicting = tainted(node("n2", &[("zone", "a")]), "broken", "yes", "NoExecute");
    let c = cluster(
        vec![cordoned, evicting, node("n3", &[("zone", "b")])],
        vec![("n3", bound("default", &[("app", "db")]))],
    );
    let cases = [
        (
            "a cordoned node with a NoSchedule taint admits it",
            pod(json!({}), json!({"nodeName": "n1"})),
            vec!["n1"],
        ),
        (
            "an untolerated NoExecute taint refuses it",
            pod(json!({}), json!({"nodeName": "n2"})),
            vec![],
        ),
        (
            "a tolerated one does not",
            pod(
                json!({}),
                json!({"nodeName": "n2", "tolerations": [{"key": "broken", "operator": "Exists"}]}),
            ),
            vec!["n2"],
        ),
        (
            "its node selector still counts",
            pod(
                json!({}),
                json!({"nodeName": "n1", "nodeSelector": {"zone": "b"}}),
            ),
            vec![],
        ),
        (
            "other pods' anti-affinity does not",
            pod(
                json!({"app": "db"}),
                json!({"nodeName": "n3", "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}]}}}),
            ),
            vec!["n3"],
        ),
    ];
    for (name, p, want) in cases {
        assert_eq!(feasible(&c, &p), names(&want), "{name}");
    }
    let r = evaluate(&c, &pod(json!({}), json!({"nodeName": "n2"})), "default");
    assert_eq!(
        summary(&r),
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 node(s) didn't match the requested node name."
    );
}

#[test]
fn node_affinity_and_selector() {
    let c = cluster(
        vec![
            node("n1", &[("zone", "a"), ("cpu", "4"), ("disk", "ssd")]),
            node("n2", &[("zone", "b"), ("cpu", "16")]),
            node("n3", &[("zone", "c"), ("cpu", "8")]),
        ],
        vec![],
    );
    let req = |terms: Value| json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}});
    let e = |k: &str, op: &str, v: &[&str]| json!({"key": k, "operator": op, "values": v});
    let cases = [
        (
            "nodeSelector",
            json!({"nodeSelector": {"disk": "ssd"}}),
            vec!["n1"],
        ),
        (
            "In",
            req(json!([{"matchExpressions": [e("zone", "In", &["a", "b"])]}])),
            vec!["n1", "n2"],
        ),
        (
            "NotIn",
            req(json!([{"matchExpressions": [e("zone", "NotIn", &["a"])]}])),
            vec!["n2", "n3"],
        ),
        (
            "Exists",
            req(json!([{"matchExpressions": [{"key": "disk", "operator": "Exists"}]}])),
            vec!["n1"],
        ),
        (
            "DoesNotExist",
            req(json!([{"matchExpressions": [{"key": "disk", "operator": "DoesNotExist"}]}])),
            vec!["n2", "n3"],
        ),
        (
            "Gt",
            req(json!([{"matchExpressions": [e("cpu", "Gt", &["4"])]}])),
            vec!["n2", "n3"],
        ),
        (
            "Lt",
            req(json!([{"matchExpressions": [e("cpu", "Lt", &["16"])]}])),
            vec!["n1", "n3"],
        ),
        (
            "matchFields on metadata.name",
            req(json!([{"matchFields": [e("metadata.name", "In", &["n3"])]}])),
            vec!["n3"],
        ),
        (
            "terms are ORed",
            req(
                json!([{"matchExpressions": [e("zone", "In", &["a"])]}, {"matchExpressions": [e("zone", "In", &["c"])]}]),
            ),
            vec!["n1", "n3"],
        ),
        (
            "requirements are ANDed",
            req(
                json!([{"matchExpressions": [e("zone", "In", &["a", "b"]), e("cpu", "Gt", &["8"])]}]),
            ),
            vec!["n2"],
        ),
        ("an empty term matches nothing", req(json!([{}])), vec![]),
        (
            "selector and affinity both apply",
            json!({"nodeSelector": {"zone": "b"}, "affinity": req(json!([{"matchExpressions": [e("cpu", "Lt", &["10"])]}]))["affinity"]}),
            vec![],
        ),
    ];
    for (name, spec, want) in cases {
        assert_eq!(feasible(&c, &pod(json!({}), spec)), names(&want), "{name}");
    }
}

#[test]
fn taints_and_tolerations() {
    let c = cluster(
        vec![
            tainted(node("gpu", &[]), "dedicated", "gpu", "NoSchedule"),
            tainted(node("evict", &[]), "maintenance", "", "NoExecute"),
            tainted(node("soft", &[]), "spot", "true", "PreferNoSchedule"),
            node("plain", &[]),
        ],
        vec![],
    );
    let none = pod(json!({}), json!({}));
    assert_eq!(
        feasible(&c, &none),
        names(&["soft", "plain"]),
        "PreferNoSchedule never blocks"
    );
    let results = evaluate(&c, &none, "default");
    // v1.35+: the summary has no taint; our per-node reason keeps it as a detail.
    assert_eq!(
        results[0].reasons[0].message,
        "node(s) had untolerated taint(s)"
    );
    assert_eq!(
        results[0].reasons[0].detail.as_deref(),
        Some("dedicated=gpu:NoSchedule")
    );
    // Without a value, as kubectl writes it.
    assert_eq!(
        results[1].reasons[0].detail.as_deref(),
        Some("maintenance:NoExecute")
    );
    assert_eq!(
        summary(&results),
        "2/4 nodes are available: 2 node(s) had untolerated taint(s)."
    );
    let tolerant = pod(
        json!({}),
        json!({"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}, {"operator": "Exists", "effect": "NoExecute"}]}),
    );
    assert_eq!(
        feasible(&c, &tolerant),
        names(&["gpu", "evict", "soft", "plain"])
    );
}

#[test]
fn inter_pod_affinity_and_anti_affinity() {
    let nodes = || {
        vec![
            node("n1", &[(ZONE, "a")]),
            node("n2", &[(ZONE, "a")]),
            node("n3", &[(ZONE, "b")]),
            node("n4", &[]),
        ]
    };
    let term = |sel: Value, extra: Value| {
        let mut t = json!({"labelSelector": {"matchLabels": sel}, "topologyKey": ZONE});
        if let (Some(t), Value::Object(e)) = (t.as_object_mut(), extra) {
            t.extend(e);
        }
        t
    };
    let affinity = |t: Value| json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [t]}}});
    let anti = |t: Value| json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [t]}}});
    let db_on_n1 = || cluster(nodes(), vec![("n1", bound("default", &[("app", "db")]))]);
    let db_elsewhere = || cluster(nodes(), vec![("n1", bound("other", &[("app", "db")]))]);
    let cases: Vec<(&str, Cluster, PodTemplate, Vec<&str>)> = vec![
        (
            "affinity to db: only db's zone",
            db_on_n1(),
            pod(
                json!({"app": "web"}),
                affinity(term(json!({"app": "db"}), json!({}))),
            ),
            vec!["n1", "n2"],
        ),
        (
            "affinity only counts pods in the term's namespaces",
            db_elsewhere(),
            pod(
                json!({"app": "web"}),
                affinity(term(json!({"app": "db"}), json!({}))),
            ),
            vec![],
        ),
        (
            "a namespaces list reaches other namespaces",
            db_elsewhere(),
            pod(
                json!({"app": "web"}),
                affinity(term(json!({"app": "db"}), json!({"namespaces": ["other"]}))),
            ),
            vec!["n1", "n2"],
        ),
        (
            "a namespaceSelector selects namespaces by label",
            db_elsewhere(),
            pod(
                json!({"app": "web"}),
                affinity(term(
                    json!({"app": "db"}),
                    json!({"namespaceSelector": {"matchLabels": {"team": "b"}}}),
                )),
            ),
            vec!["n1", "n2"],
        ),
        (
            "an empty namespaceSelector spans all namespaces",
            db_elsewhere(),
            pod(
                json!({"app": "web"}),
                affinity(term(json!({"app": "db"}), json!({"namespaceSelector": {}}))),
            ),
            vec!["n1", "n2"],
        ),
        (
            "the first pod of a self-selecting group may go anywhere the key exists",
            cluster(nodes(), vec![]),
            pod(
                json!({"app": "web"}),
                affinity(term(json!({"app": "web"}), json!({}))),
            ),
            vec!["n1", "n2", "n3"],
        ),
        (
            "anti-affinity to db: not db's zone",
            db_on_n1(),
            pod(
                json!({"app": "web"}),
                anti(term(json!({"app": "db"}), json!({}))),
            ),
            vec!["n3", "n4"],
        ),
    ];
    for (name, c, p, want) in cases {
        assert_eq!(feasible(&c, &p), names(&want), "{name}");
    }

    // Symmetry: an existing pod's anti-affinity keeps matching pods out of its zone.
    let mut guard = bound("other", &[("app", "guard")]);
    guard.usage.anti_affinity = vec![serde_json::from_value(term(
        json!({"app": "web"}),
        json!({"namespaceSelector": {}}),
    ))
    .unwrap()];
    let c = cluster(nodes(), vec![("n3", guard)]);
    let web = pod(json!({"app": "web"}), json!({}));
    assert_eq!(feasible(&c, &web), names(&["n1", "n2", "n4"]));
    let results = evaluate(&c, &web, "default");
    assert_eq!(
        results[2].reasons,
        vec![Reason::new(
            INTER_POD_AFFINITY,
            REASON_EXISTING_ANTI_AFFINITY
        )]
    );
    // ... but only for pods its term selects.
    assert_eq!(
        feasible(&c, &pod(json!({"app": "api"}), json!({}))).len(),
        4
    );
    // Terminating pods still count, both ways: kube-scheduler's InterPodAffinity sees every
    // pod of a node (only PodTopologySpread skips them; kubernetes#87621, #111793). Measured
    // against kube-scheduler v1.36.2.
    let mut leaving = bound("default", &[("app", "db")]);
    leaving.terminating = true;
    let c = cluster(nodes(), vec![("n1", leaving.clone())]);
    assert_eq!(
        feasible(
            &c,
            &pod(
                json!({"app": "web"}),
                anti(term(json!({"app": "db"}), json!({})))
            )
        ),
        names(&["n3", "n4"])
    );
    leaving.usage.anti_affinity = vec![serde_json::from_value(
        json!({"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": ZONE}),
    )
    .unwrap()];
    let c = cluster(nodes(), vec![("n1", leaving)]);
    assert_eq!(
        feasible(&c, &pod(json!({"app": "web"}), json!({}))),
        names(&["n3", "n4"])
    );
}

/// Topology spread does not count a terminating pod (kube-scheduler #87621), while inter-pod
/// affinity still does.
#[test]
fn spreading_skips_terminating_pods() {
    let mut leaving = bound("default", &[("app", "web")]);
    leaving.terminating = true;
    let c = cluster(
        vec![node("n1", &[(ZONE, "a")]), node("n2", &[(ZONE, "b")])],
        vec![("n1", leaving.clone()), ("n1", leaving)],
    );
    let spread_pod = pod(
        json!({"app": "web"}),
        json!({"topologySpreadConstraints": [spread(ZONE, 1, json!({"labelSelector": {"matchLabels": {"app": "web"}}}))]}),
    );
    assert_eq!(feasible(&c, &spread_pod), names(&["n1", "n2"]));
}

/// kube-scheduler v1.27 to v1.36 counts no pod for `labelSelector: {}` (kubernetes#141339):
/// the constraint never blocks. With matchLabelKeys the merged selector has requirements and
/// counts as usual. Measured against kube-scheduler v1.36.2.
#[test]
fn an_empty_spread_selector_counts_no_pods_as_in_v1_36() {
    let c = cluster(
        vec![
            node("n1", &[(ZONE, "a")]),
            node("n2", &[(ZONE, "b")]),
            node("n3", &[(ZONE, "c")]),
        ],
        vec![
            ("n1", bound("default", &[("app", "web")])),
            ("n1", bound("default", &[("app", "web")])),
        ],
    );
    let with = |extra: Value| {
        let mut c = spread(ZONE, 1, json!({}));
        if let (Some(c), Value::Object(e)) = (c.as_object_mut(), extra) {
            c.extend(e);
        }
        pod(
            json!({"app": "web"}),
            json!({ "topologySpreadConstraints": [c] }),
        )
    };
    assert_eq!(
        feasible(&c, &with(json!({"labelSelector": {}}))),
        names(&["n1", "n2", "n3"])
    );
    assert_eq!(
        feasible(
            &c,
            &with(json!({"labelSelector": {"matchExpressions": []}, "minDomains": 5}))
        ),
        names(&["n1", "n2", "n3"])
    );
    assert_eq!(
        feasible(
            &c,
            &with(json!({"labelSelector": {}, "matchLabelKeys": ["app"]}))
        ),
        names(&["n2", "n3"])
    );
}

/// A workload's new pod carries the labels its controller adds: with `matchLabelKeys:
/// [pod-template-hash]` (what `/mutate` defaults), the pods of earlier ReplicaSets are not
/// counted, as kube-scheduler merges the new pod's own hash into the selector.
#[test]
fn a_deployment_template_spreads_only_over_its_own_replicaset() {
    let web = |hash: &str| bound("default", &[("app", "web"), ("pod-template-hash", hash)]);
    let c = cluster(
        vec![node("n1", &[]), node("n2", &[])],
        vec![("n1", web("old")), ("n1", web("old"))],
    );
    let deployment = |keys: Value| {
        parse_value(
            Kind::Deployment,
            &json!({"metadata": {"name": "web", "namespace": "default"},
                    "spec": {"selector": {"matchLabels": {"app": "web"}},
                             "template": {"metadata": {"labels": {"app": "web"}},
                                          "spec": {"topologySpreadConstraints": [spread(HOST, 1, json!({
                                              "labelSelector": {"matchLabels": {"app": "web"}}, "matchLabelKeys": keys}))]}}}}),
        )
        .unwrap()
    };
    assert_eq!(
        feasible(&c, &deployment(json!(["pod-template-hash"]))),
        names(&["n1", "n2"])
    );
    // Without matchLabelKeys every pod of the Deployment counts, whatever its ReplicaSet.
    assert_eq!(feasible(&c, &deployment(json!([]))), names(&["n2"]));
    // A pod of the Deployment, created by its ReplicaSet, counts with its own ReplicaSet's pods.
    let mine = pod(
        json!({"app": "web", "pod-template-hash": "old"}),
        json!({"topologySpreadConstraints": [spread(HOST, 1, json!({
            "labelSelector": {"matchLabels": {"app": "web"}}, "matchLabelKeys": ["pod-template-hash"]}))]}),
    );
    assert_eq!(feasible(&c, &mine), names(&["n2"]));
}

#[test]
fn topology_spread_details() {
    let foo = |ns: &str| bound(ns, &[("foo", "bar")]);
    let nodes = || {
        vec![
            node("a1", &[(ZONE, "a"), ("pool", "x")]),
            node("a2", &[(ZONE, "a"), ("pool", "x")]),
            node("b1", &[(ZONE, "b"), ("pool", "y")]),
            node("nozone", &[("pool", "x")]),
        ]
    };
    let c = cluster(
        nodes(),
        vec![
            ("a1", foo("default")),
            ("a2", foo("default")),
            ("b1", foo("other")),
            ("nozone", foo("default")),
        ],
    );
    let me = json!({"foo": "bar"});
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        (
            "pods of other namespaces are not counted; nodes without the key are not eligible",
            json!({"topologySpreadConstraints": [spread(ZONE, 1, json!({}))]}),
            vec!["b1"],
        ),
        (
            "ScheduleAnyway never blocks",
            json!({"topologySpreadConstraints": [spread(ZONE, 1, json!({"whenUnsatisfiable": "ScheduleAnyway"}))]}),
            vec!["a1", "a2", "b1", "nozone"],
        ),
        (
            "a larger maxSkew admits more",
            json!({"topologySpreadConstraints": [spread(ZONE, 3, json!({}))]}),
            vec!["a1", "a2", "b1"],
        ),
        (
            "minDomains above the domain count makes the global minimum 0",
            json!({"topologySpreadConstraints": [spread(ZONE, 2, json!({"minDomains": 3}))]}),
            vec!["b1"],
        ),
        (
            "nodeAffinityPolicy Honor (default): only nodes the pod may use count as domains",
            json!({"nodeSelector": {"pool": "x"}, "topologySpreadConstraints": [spread(ZONE, 1, json!({}))]}),
            vec!["a1", "a2"],
        ),
        (
            "nodeAffinityPolicy Ignore counts every node: empty zone b holds the minimum at 0",
            json!({"nodeSelector": {"pool": "x"}, "topologySpreadConstraints": [spread(ZONE, 1, json!({"nodeAffinityPolicy": "Ignore"}))]}),
            vec![],
        ),
        (
            "matchLabelKeys narrows the selector to the pod's own value",
            json!({"topologySpreadConstraints": [spread(ZONE, 1, json!({"matchLabelKeys": ["rev"]}))]}),
            vec!["a1", "a2", "b1"],
        ),
    ];
    for (name, spec, want) in cases {
        let mut labels = me.clone();
        if name.starts_with("matchLabelKeys") {
            labels["rev"] = json!("2");
        }
        assert_eq!(feasible(&c, &pod(labels, spec)), names(&want), "{name}");
    }
    let results = evaluate(
        &c,
        &pod(
            me.clone(),
            json!({"topologySpreadConstraints": [spread(ZONE, 1, json!({}))]}),
        ),
        "default",
    );
    assert_eq!(results[3].reasons[0].message, REASON_SPREAD_MISSING_LABEL);
    // With fewer domains than minDomains the counts alone do not explain the skew: said so.
    let results = evaluate(
        &c,
        &pod(
            me.clone(),
            json!({"topologySpreadConstraints": [spread(ZONE, 2, json!({"minDomains": 3}))]}),
        ),
        "default",
    );
    assert_eq!(
        results[0].reasons[0].detail.as_deref(),
        Some("topology.kubernetes.io/zone: a: 2, b: 0; 2 eligible domain(s), fewer than minDomains 3, so the minimum counts as 0; skew 3 here, maxSkew 2")
    );

    // nodeTaintsPolicy Honor: a tainted zone is not a domain, so it cannot hold the minimum down.
    let c = cluster(
        vec![
            node("a1", &[(ZONE, "a")]),
            tainted(node("b1", &[(ZONE, "b")]), "t", "v", "NoSchedule"),
            node("c1", &[(ZONE, "c")]),
        ],
        vec![("a1", foo("default")), ("c1", foo("default"))],
    );
    let ignore = pod(
        me.clone(),
        json!({"tolerations": [{"key": "t", "operator": "Exists"}], "topologySpreadConstraints": [spread(ZONE, 1, json!({}))]}),
    );
    assert_eq!(feasible(&c, &ignore), names(&["b1"]));
    let honor = pod(
        me,
        json!({"topologySpreadConstraints": [spread(ZONE, 1, json!({"nodeTaintsPolicy": "Honor"}))]}),
    );
    assert_eq!(feasible(&c, &honor), names(&["a1", "c1"]));
    // With the taints left out (a held pod), every plugin leaves them out: b1 is a domain and
    // a node, as for the pod that tolerates the taint.
    let held: Vec<String> = evaluate_with(&c, &honor, "default", true)
        .into_iter()
        .filter(|r| r.feasible)
        .map(|r| r.name)
        .collect();
    assert_eq!(held, names(&["b1"]));
}

/// The summary line in kube-scheduler's words (FitError.Error, v1.36): every reason string as
/// upstream spells it, the histogram sorted as whole strings, and the special cases.
#[test]
fn summary_wording_follows_the_scheduler() {
    assert_eq!(SCHEDULER_VERSION, "v1.36");
    let pinned = [
        (
            REASON_NODE_NAME,
            "node(s) didn't match the requested node name",
        ),
        (REASON_UNSCHEDULABLE, "node(s) were unschedulable"),
        (REASON_TAINT, "node(s) had untolerated taint(s)"),
        (
            REASON_NODE_AFFINITY,
            "node(s) didn't match Pod's node affinity/selector",
        ),
        (
            REASON_NOT_NAMED,
            "node(s) didn't satisfy plugin(s) [NodeAffinity]",
        ),
        (REASON_NAMES_CONFLICT, "pod affinity terms conflict"),
        (
            REASON_SPREAD,
            "node(s) didn't match pod topology spread constraints",
        ),
        (
            REASON_SPREAD_MISSING_LABEL,
            "node(s) didn't match pod topology spread constraints (missing required label)",
        ),
        (REASON_AFFINITY, "node(s) didn't match pod affinity rules"),
        (
            REASON_ANTI_AFFINITY,
            "node(s) didn't match pod anti-affinity rules",
        ),
        (
            REASON_EXISTING_ANTI_AFFINITY,
            "node(s) didn't satisfy existing pods anti-affinity rules",
        ),
        (NO_NODES, "no nodes available to schedule pods"),
    ];
    for (ours, upstream) in pinned {
        assert_eq!(ours, upstream);
    }
    let empty = cluster(vec![], vec![]);
    let p = pod(json!({}), json!({}));
    assert_eq!(summary(&evaluate(&empty, &p, "default")), NO_NODES);

    // sort.Strings over "<count> <reason>": "10 ..." sorts before "2 ...".
    let mut nodes: Vec<Node> = (0..10)
        .map(|i| tainted(node(&format!("t{i}"), &[]), "k", "v", "NoSchedule"))
        .collect();
    nodes.push(Node {
        unschedulable: true,
        ..node("cordoned-1", &[])
    });
    nodes.push(Node {
        unschedulable: true,
        ..node("cordoned-2", &[])
    });
    let c = cluster(nodes, vec![]);
    assert_eq!(
        summary(&evaluate(&c, &p, "default")),
        "0/12 nodes are available: 10 node(s) had untolerated taint(s), 2 node(s) were unschedulable."
    );
}

/// NodeAffinity's PreFilter: terms that name nodes (as DaemonSet pods do) make the other nodes
/// "didn't satisfy plugin(s) [NodeAffinity]", whatever else is wrong with them.
#[test]
fn terms_naming_nodes_prefilter_the_candidates() {
    let named = |names: &[&[&str]]| {
        let terms: Vec<Value> = names
            .iter()
            .map(|n| json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": n}]}))
            .collect();
        pod(
            json!({}),
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}}),
        )
    };
    let c = cluster(
        vec![
            node("n1", &[]),
            tainted(node("n2", &[]), "k", "v", "NoSchedule"),
            node("n3", &[]),
        ],
        vec![],
    );
    let ds = named(&[&["n1"]]);
    assert_eq!(feasible(&c, &ds), names(&["n1"]));
    assert_eq!(
        summary(&evaluate(&c, &named(&[&["n2"]]), "default")),
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    );
    assert_eq!(
        summary(&evaluate(&c, &named(&[&["n1", "n2"], &["n3"]]), "default")),
        "2/3 nodes are available: 1 node(s) had untolerated taint(s)."
    );
    // Within a term the named sets intersect; empty everywhere is a PreFilter rejection.
    let conflict = pod(
        json!({}),
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["n1"]},
                {"key": "metadata.name", "operator": "In", "values": ["n2"]}
            ]}
        ]}}}}),
    );
    assert_eq!(
        summary(&evaluate(&c, &conflict, "default")),
        "0/3 nodes are available: pod affinity terms conflict."
    );
    // A term that names no node leaves every node a candidate.
    let mixed = pod(
        json!({}),
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
            {"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}
        ]}}}}),
    );
    assert_eq!(feasible(&c, &mixed), names(&["n1", "n3"]));
}

/// Constraints are checked in order: a skew failure of the first wins over a missing key of a
/// later one.
#[test]
fn spread_constraints_are_checked_in_order() {
    let web = json!({"labelSelector": {"matchLabels": {"app": "web"}}});
    let c = cluster(
        vec![
            node("a1", &[(ZONE, "a"), ("rack", "r1")]),
            node("a2", &[(ZONE, "a")]),
            node("b1", &[(ZONE, "b"), ("rack", "r2")]),
        ],
        vec![
            ("a1", bound("default", &[("app", "web")])),
            ("a1", bound("default", &[("app", "web")])),
        ],
    );
    let both = pod(
        json!({"app": "web"}),
        json!({"topologySpreadConstraints": [spread(ZONE, 1, web.clone()), spread("rack", 1, web.clone())]}),
    );
    let results = evaluate(&c, &both, "default");
    assert_eq!(
        results[1].reasons[0].message, REASON_SPREAD,
        "a2: zone skew first"
    );
    let swapped = pod(
        json!({"app": "web"}),
        json!({"topologySpreadConstraints": [spread("rack", 1, web.clone()), spread(ZONE, 1, web)]}),
    );
    let results = evaluate(&c, &swapped, "default");
    assert_eq!(
        results[1].reasons[0].message, REASON_SPREAD_MISSING_LABEL,
        "a2: no rack first"
    );
}

/// A Job's pod counts itself in a constraint selecting the job-name label the apiserver adds
/// (the manifest does not carry it): a node that already has one of the Job's pods is one
/// too many at maxSkew 1.
#[test]
fn a_jobs_pod_carries_the_labels_the_apiserver_adds() {
    let c = cluster(
        vec![node("a", &[]), node("b", &[])],
        vec![(
            "a",
            bound("default", &[("batch.kubernetes.io/job-name", "train")]),
        )],
    );
    let by_name =
        json!({"labelSelector": {"matchLabels": {"batch.kubernetes.io/job-name": "train"}}});
    let job = |manual: bool| {
        parse_value(
            Kind::Job,
            &json!({"metadata": {"name": "train"}, "spec": {"manualSelector": manual, "template": {"spec": {
                "topologySpreadConstraints": [spread(HOST, 1, by_name.clone())]}}}}),
        )
        .unwrap()
    };
    assert_eq!(feasible(&c, &job(false)), names(&["b"]));
    // With manualSelector the pods carry only the labels written: no self-match, both fit.
    assert_eq!(feasible(&c, &job(true)), names(&["a", "b"]));
}

/// A pod is placed with the tolerations it will have when the scheduler sees it: a DaemonSet's
/// pods those its controller adds (cordoned and pressured nodes, network-unavailable only with
/// hostNetwork), every new pod DefaultTolerationSeconds' (not-ready and unreachable NoExecute).
#[test]
fn pods_carry_the_tolerations_their_controller_and_admission_add() {
    let c = cluster(
        vec![
            Node {
                unschedulable: true,
                ..node("cordoned", &[])
            },
            tainted(
                node("disk", &[]),
                "node.kubernetes.io/disk-pressure",
                "",
                "NoSchedule",
            ),
            tainted(
                node("net", &[]),
                "node.kubernetes.io/network-unavailable",
                "",
                "NoSchedule",
            ),
            tainted(
                node("unreachable", &[]),
                "node.kubernetes.io/unreachable",
                "",
                "NoExecute",
            ),
            tainted(
                node("not-ready", &[]),
                "node.kubernetes.io/not-ready",
                "",
                "NoSchedule",
            ),
            tainted(node("gpu", &[]), "dedicated", "gpu", "NoSchedule"),
            node("plain", &[]),
        ],
        vec![],
    );
    let daemon = |spec: Value| {
        parse_value(
            Kind::DaemonSet,
            &json!({"metadata": {"name": "agent"}, "spec": {"template": {"spec": spec}}}),
        )
        .unwrap()
    };
    let deployment = parse_value(
        Kind::Deployment,
        &json!({"metadata": {"name": "web"}, "spec": {"template": {"spec": {}}}}),
    )
    .unwrap();
    let cases: Vec<(&str, PodTemplate, &[&str])> = vec![
        (
            "a DaemonSet's pods tolerate cordoning, node conditions and node problems",
            daemon(json!({})),
            &["cordoned", "disk", "unreachable", "plain"],
        ),
        (
            "and with hostNetwork a network not ready yet",
            daemon(json!({"hostNetwork": true})),
            &["cordoned", "disk", "net", "unreachable", "plain"],
        ),
        (
            "its own tolerations still count",
            daemon(json!({"tolerations": [{"key": "dedicated", "operator": "Exists"}]})),
            &["cordoned", "disk", "unreachable", "gpu", "plain"],
        ),
        (
            "any other pod tolerates only not-ready and unreachable NoExecute, for 300 s",
            deployment,
            &["unreachable", "plain"],
        ),
        (
            "a pod that tolerates not-ready NoExecute keeps its own",
            pod(
                json!({}),
                json!({"tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}]}),
            ),
            &["unreachable", "plain"],
        ),
    ];
    for (what, p, want) in cases {
        assert_eq!(feasible(&c, &p), names(want), "{what}");
    }
    // What was added, and that a pod already carrying it is placed as it is.
    let admitted = pod(json!({}), json!({}));
    let scheduled = admitted.as_scheduled();
    let added: Vec<(Option<&str>, Option<i64>)> = scheduled
        .spec
        .tolerations()
        .iter()
        .map(|t| (t.key.as_deref(), t.toleration_seconds))
        .collect();
    assert_eq!(
        added,
        [
            (Some("node.kubernetes.io/not-ready"), Some(300)),
            (Some("node.kubernetes.io/unreachable"), Some(300))
        ]
    );
    assert!(matches!(
        scheduled.as_scheduled(),
        std::borrow::Cow::Borrowed(_)
    ));
}

/// A node as fit_test.go builds it: cpu=10m, memory=20, pods=32, example.com/aaa=5,
/// ephemeral-storage=20, hugepages-2Mi=5; `existing` is the spec of one pod already on it.
fn fit_cluster(pods: i64, existing: Option<Value>) -> Cluster {
    let alloc = crate::core::snapshot::allocatable(
        &json!({"cpu": "10m", "memory": "20", "pods": pods.to_string(), "example.com/aaa": "5",
                "ephemeral-storage": "20", "hugepages-2Mi": "5"})
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                k8s_openapi::apimachinery::pkg::api::resource::Quantity(v.as_str().unwrap().into()),
            )
        })
        .collect(),
    );
    let n = Node {
        allocatable: Some(alloc),
        ..node("n", &[])
    };
    let pods = existing
        .map(|spec| {
            let t = pod(json!({}), spec);
            let b = crate::core::snapshot::bound_pod(
                "old".into(),
                "default".into(),
                BTreeMap::new(),
                false,
                &t.spec,
                None,
            );
            vec![("n", b)]
        })
        .unwrap_or_default();
    cluster(vec![n], pods)
}

fn containers(reqs: &[Value]) -> Value {
    Value::Array(
        reqs.iter()
            .map(|r| json!({"resources": {"requests": r}}))
            .collect(),
    )
}

fn reasons_on(c: &Cluster, p: &PodTemplate) -> Vec<String> {
    let mut r: Vec<String> = evaluate(c, p, "default")[0]
        .reasons
        .iter()
        .map(|r| r.message.clone())
        .collect();
    r.sort();
    r
}

/// kube-scheduler's TestEnoughRequests, TestNotEnoughRequests and TestStorageRequests.
#[test]
fn node_resources_fit() {
    let cm = |cpu: &str, mem: &str| json!({"cpu": cpu, "memory": mem});
    let cases: Vec<(&str, Value, Option<Value>, Vec<&str>)> = vec![
        (
            "no resources requested always fits",
            json!({}),
            Some(json!({"containers": containers(&[cm("10m", "20")])})),
            vec![],
        ),
        (
            "too many resources fails",
            json!({"containers": containers(&[cm("1m", "1")])}),
            Some(json!({"containers": containers(&[cm("10m", "20")])})),
            vec!["Insufficient cpu", "Insufficient memory"],
        ),
        (
            "too many resources fails due to init container cpu",
            json!({"containers": containers(&[cm("1m", "1")]), "initContainers": containers(&[cm("3m", "1")])}),
            Some(json!({"containers": containers(&[cm("8m", "19")])})),
            vec!["Insufficient cpu"],
        ),
        (
            "init containers are the max, not the sum",
            json!({"containers": containers(&[cm("1m", "1")]), "initContainers": containers(&[cm("1m", "1"), cm("1m", "1")])}),
            Some(json!({"containers": containers(&[cm("9m", "19")])})),
            vec![],
        ),
        (
            "both resources fit on the edge",
            json!({"containers": containers(&[cm("5m", "1")])}),
            Some(json!({"containers": containers(&[cm("5m", "19")])})),
            vec![],
        ),
        (
            "extended resource capacity enforced",
            json!({"containers": containers(&[json!({"cpu": "1m", "memory": "1", "example.com/aaa": "10"})])}),
            None,
            vec!["Insufficient example.com/aaa"],
        ),
        (
            "extended resource allocatable enforced for multiple containers",
            json!({"containers": containers(&[json!({"example.com/aaa": "3"}), json!({"example.com/aaa": "3"})])}),
            Some(json!({"containers": containers(&[json!({"example.com/aaa": "2"})])})),
            vec!["Insufficient example.com/aaa"],
        ),
        (
            "extended resource allocatable admits multiple init containers",
            json!({"initContainers": containers(&[json!({"example.com/aaa": "3"}), json!({"example.com/aaa": "3"})])}),
            Some(json!({"containers": containers(&[json!({"example.com/aaa": "2"})])})),
            vec![],
        ),
        (
            "unknown extended resource has no capacity",
            json!({"containers": containers(&[json!({"example.com/bbb": "1"})])}),
            None,
            vec!["Insufficient example.com/bbb"],
        ),
        (
            "hugepages capacity enforced",
            json!({"containers": containers(&[json!({"hugepages-2Mi": "10"})])}),
            None,
            vec!["Insufficient hugepages-2Mi"],
        ),
        (
            "resources and overhead fail on memory",
            json!({"containers": containers(&[cm("1m", "1")]), "overhead": cm("1m", "15")}),
            Some(json!({"containers": containers(&[cm("5m", "5")])})),
            vec!["Insufficient memory"],
        ),
        (
            "resources and overhead fit",
            json!({"containers": containers(&[cm("1m", "1")]), "overhead": cm("3m", "13")}),
            Some(json!({"containers": containers(&[cm("5m", "5")])})),
            vec![],
        ),
        (
            "pod-level requests replace the containers'",
            json!({"containers": containers(&[cm("1m", "1")]), "resources": {"requests": cm("7m", "2")}}),
            Some(json!({"containers": containers(&[cm("5m", "5")])})),
            vec!["Insufficient cpu"],
        ),
        (
            "an explicit zero of an overcommitted extended resource fits",
            json!({"containers": containers(&[json!({"example.com/aaa": "0"})])}),
            Some(json!({"containers": containers(&[json!({"example.com/aaa": "6"})])})),
            vec![],
        ),
        (
            "ephemeral storage is enforced",
            json!({"containers": containers(&[json!({"ephemeral-storage": "25"})])}),
            Some(json!({"containers": containers(&[cm("2m", "2")])})),
            vec!["Insufficient ephemeral-storage"],
        ),
        (
            "a sidecar adds to the regular containers",
            json!({"containers": containers(&[cm("5m", "1")]), "initContainers": [{"restartPolicy": "Always", "resources": {"requests": {"cpu": "6m"}}}]}),
            None,
            vec!["Insufficient cpu"],
        ),
    ];
    for (name, spec, existing, want) in cases {
        let c = fit_cluster(32, existing);
        assert_eq!(reasons_on(&c, &pod(json!({}), spec)), want, "{name}");
    }
    // A pod that names its node: the kubelet drops requests for extended resources the node
    // does not advertise (`removeMissingExtendedResources`), and still enforces the others.
    let c = fit_cluster(32, None);
    let named = |requests: Value| {
        pod(
            json!({}),
            json!({"nodeName": "n", "containers": containers(&[requests])}),
        )
    };
    assert!(reasons_on(&c, &named(json!({"example.com/bbb": "1"}))).is_empty());
    assert_eq!(
        reasons_on(&c, &named(json!({"example.com/aaa": "10"}))),
        vec!["Insufficient example.com/aaa"]
    );
    assert_eq!(
        reasons_on(&c, &named(json!({"hugepages-2Mi": "10"}))),
        vec!["Insufficient hugepages-2Mi"]
    );
    // TestNotEnoughRequests: the pod count is checked before anything else, even for a pod that
    // requests nothing.
    let c = fit_cluster(1, Some(json!({})));
    assert_eq!(
        reasons_on(&c, &pod(json!({}), json!({}))),
        vec!["Too many pods"]
    );
    assert_eq!(
        reasons_on(
            &c,
            &pod(
                json!({}),
                json!({"containers": containers(&[cm("11m", "1")])})
            )
        ),
        vec!["Insufficient cpu", "Too many pods"]
    );
    // The summary counts each shortage, as the scheduler's histogram does.
    assert_eq!(
        summary(&evaluate(
            &c,
            &pod(
                json!({}),
                json!({"containers": containers(&[cm("11m", "1")])})
            ),
            "default"
        )),
        "0/1 nodes are available: 1 Insufficient cpu, 1 Too many pods."
    );
    // A node without allocatable in the snapshot is not checked.
    let bare = cluster(vec![node("bare", &[])], vec![]);
    assert!(reasons_on(
        &bare,
        &pod(
            json!({}),
            json!({"containers": containers(&[cm("100", "1Ti")])})
        )
    )
    .is_empty());
}

/// kube-scheduler's TestNodePorts.
#[test]
fn node_ports() {
    let ports = |v: &[(&str, &str, i32)]| json!({"containers": [{"ports": v.iter().map(|(proto, ip, port)| json!({"containerPort": 1, "protocol": proto, "hostIP": ip, "hostPort": port})).collect::<Vec<_>>()}]});
    let cases: Vec<(&str, Value, Value, bool)> = vec![
        (
            "no host ports",
            json!({}),
            ports(&[("TCP", "", 8080)]),
            true,
        ),
        (
            "other port",
            ports(&[("UDP", "127.0.0.1", 8080)]),
            ports(&[("UDP", "127.0.0.1", 9090)]),
            true,
        ),
        (
            "same udp port",
            ports(&[("UDP", "127.0.0.1", 8080)]),
            ports(&[("UDP", "127.0.0.1", 8080)]),
            false,
        ),
        (
            "same tcp port, other address",
            ports(&[("TCP", "127.0.0.1", 8080)]),
            ports(&[("TCP", "127.0.0.2", 8080)]),
            true,
        ),
        (
            "same port, other protocol",
            ports(&[("UDP", "127.0.0.1", 8080)]),
            ports(&[("TCP", "127.0.0.1", 8080)]),
            true,
        ),
        (
            "second port conflicts",
            ports(&[("TCP", "127.0.0.1", 8001), ("UDP", "127.0.0.1", 8080)]),
            ports(&[("TCP", "127.0.0.1", 8001), ("UDP", "127.0.0.1", 8081)]),
            false,
        ),
        (
            "wanted on every address",
            ports(&[("TCP", "0.0.0.0", 8001)]),
            ports(&[("TCP", "127.0.0.1", 8001)]),
            false,
        ),
        (
            "used on every address",
            ports(&[("TCP", "127.0.0.1", 8001)]),
            ports(&[("TCP", "0.0.0.0", 8001)]),
            false,
        ),
        (
            "used on every address, other protocol",
            ports(&[("UDP", "127.0.0.1", 8001)]),
            ports(&[("TCP", "0.0.0.0", 8001)]),
            true,
        ),
        (
            "both protocols used on every address",
            ports(&[("UDP", "127.0.0.1", 8001)]),
            ports(&[("TCP", "0.0.0.0", 8001), ("UDP", "0.0.0.0", 8001)]),
            false,
        ),
        (
            "defaults: no address and no protocol are 0.0.0.0/TCP",
            ports(&[("", "", 80)]),
            ports(&[("TCP", "10.0.0.1", 80)]),
            false,
        ),
        (
            "plain init containers bind no host port",
            json!({"initContainers": [{"ports": [{"containerPort": 1, "hostPort": 80}]}]}),
            ports(&[("TCP", "", 80)]),
            true,
        ),
        (
            "sidecars bind host ports",
            json!({"initContainers": [{"restartPolicy": "Always", "ports": [{"containerPort": 1, "hostPort": 80}]}]}),
            ports(&[("TCP", "", 80)]),
            false,
        ),
    ];
    for (name, incoming, existing, fits) in cases {
        let t = pod(json!({}), existing);
        let b = crate::core::snapshot::bound_pod(
            "old".into(),
            "default".into(),
            BTreeMap::new(),
            false,
            &t.spec,
            None,
        );
        let c = cluster(vec![node("n", &[])], vec![("n", b)]);
        let r = reasons_on(&c, &pod(json!({}), incoming));
        let want: Vec<String> = if fits {
            vec![]
        } else {
            vec![REASON_NODE_PORTS.to_string()]
        };
        assert_eq!(r, want, "{name}");
    }
}

mod node_side {
    use proptest::prelude::*;

    use super::*;

    fn req() -> impl Strategy<Value = Value> {
        let op = prop_oneof![
            Just("In"),
            Just("NotIn"),
            Just("Exists"),
            Just("DoesNotExist")
        ];
        (0..3u8, op, proptest::collection::vec(0..3u8, 1..3)).prop_map(|(k, op, vs)| {
            let values: Vec<String> = vs.iter().map(|v| format!("v{v}")).collect();
            match op {
                "Exists" | "DoesNotExist" => json!({"key": format!("k{k}"), "operator": op}),
                _ => json!({"key": format!("k{k}"), "operator": op, "values": values}),
            }
        })
    }

    fn spec() -> impl Strategy<Value = Value> {
        (
            proptest::collection::btree_map(0..3u8, 0..3u8, 0..2),
            proptest::option::of(proptest::collection::vec(
                proptest::collection::vec(req(), 0..3),
                0..3,
            )),
            any::<bool>(),
        )
            .prop_map(|(sel, terms, tolerate)| {
                let mut spec = json!({});
                if !sel.is_empty() {
                    let m: BTreeMap<String, String> = sel
                        .iter()
                        .map(|(k, v)| (format!("k{k}"), format!("v{v}")))
                        .collect();
                    spec["nodeSelector"] = json!(m);
                }
                if let Some(terms) = terms {
                    let terms: Vec<Value> = terms
                        .into_iter()
                        .map(|t| json!({"matchExpressions": t}))
                        .collect();
                    spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}});
                }
                if tolerate {
                    spec["tolerations"] = json!([{"key": "t", "operator": "Exists"}]);
                }
                spec
            })
    }

    fn nodes() -> impl Strategy<Value = Vec<(BTreeMap<u8, u8>, bool, bool)>> {
        proptest::collection::vec(
            (
                proptest::collection::btree_map(0..3u8, 0..3u8, 0..3),
                any::<bool>(),
                any::<bool>(),
            ),
            0..8,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// The label index only narrows which nodes are visited: some node fits through it
        /// exactly when some node fits by visiting every node.
        #[test]
        fn the_index_finds_a_fit_exactly_when_one_exists(ns in nodes(), spec in spec()) {
            let list: Vec<Node> = ns
                .iter()
                .enumerate()
                .map(|(i, (l, taint, cordon))| {
                    let l: Vec<(String, String)> =
                        l.iter().map(|(k, v)| (format!("k{k}"), format!("v{v}"))).collect();
                    let l: Vec<(&str, &str)> = l.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                    let mut n = node(&format!("n{i}"), &l);
                    if *taint {
                        n = tainted(n, "t", "x", "NoSchedule");
                    }
                    n.unschedulable = *cordon;
                    n
                })
                .collect();
            let c = Cluster::new(list, HashMap::new()).unwrap();
            let p = pod(json!({}), spec);
            let side = NodeSide::new(&p.spec);
            let all = side.evaluate(&c);
            let want = all.iter().any(|r| r.feasible);
            let got = side.first_fit(&c);
            prop_assert_eq!(got.is_some(), want);
            if let Some(i) = got {
                prop_assert!(all[i].feasible);
            }
            // The node-side verdicts are the full filter set's, minus what bound pods decide.
            let full = evaluate(&c, &p, "default");
            for (a, b) in all.iter().zip(&full) {
                prop_assert_eq!(a.feasible, b.feasible);
            }
        }
    }
}
