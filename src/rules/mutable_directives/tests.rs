use serde_json::{json, Value};

use super::MutableDirectives;
use super::*;

fn spec(v: Value) -> PodSpec {
    serde_json::from_value(v).expect("test pod spec")
}

/// A gated pod spec with extra fields merged in.
fn gated(extra: Value) -> Value {
    let mut base = json!({"schedulingGates": [{"name": "example.com/gate"}]});
    merge(&mut base, extra);
    base
}

fn merge(base: &mut Value, extra: Value) {
    if let (Some(b), Value::Object(e)) = (base.as_object_mut(), extra) {
        for (k, v) in e {
            b.insert(k, v);
        }
    }
}

fn required(terms: Value) -> Value {
    json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}})
}

fn expr(key: &str, op: &str, values: &[&str]) -> Value {
    if values.is_empty() {
        json!({"key": key, "operator": op})
    } else {
        json!({"key": key, "operator": op, "values": values})
    }
}

fn run(old: Value, new: Value) -> Vec<String> {
    run_as(old, new, "admin", &[], &MutableDirectives::default())
}

fn run_as(
    old: Value,
    new: Value,
    user: &str,
    groups: &[String],
    cfg: &MutableDirectives,
) -> Vec<String> {
    let user = User {
        username: user,
        groups,
    };
    check(&spec(old), &spec(new), &user, cfg)
        .into_iter()
        .map(|p| p.error.to_string())
        .collect()
}

const NS_ONLY_ADD: &str =
    "only additions to spec.nodeSelector are allowed (no mutations or deletions)";
const TERM_ONLY_ADD: &str = "only additions are allowed (no mutations or deletions)";
const TERMS: &str =
    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";

#[test]
fn node_selector_on_gated_pods() {
    let cases: Vec<(&str, Value, Value, Vec<String>)> = vec![
        (
            "adding a key is allowed",
            gated(json!({"nodeSelector": {"disktype": "ssd"}})),
            gated(json!({"nodeSelector": {"disktype": "ssd", "zone": "a"}})),
            vec![],
        ),
        (
            "setting a selector where there was none is allowed",
            gated(json!({})),
            gated(json!({"nodeSelector": {"zone": "a"}})),
            vec![],
        ),
        (
            "an empty old selector is the same as none",
            gated(json!({"nodeSelector": {}})),
            gated(json!({"nodeSelector": {"zone": "a"}})),
            vec![],
        ),
        (
            "removing a key is denied",
            gated(json!({"nodeSelector": {"disktype": "ssd", "zone": "a"}})),
            gated(json!({"nodeSelector": {"zone": "a"}})),
            vec![format!(
                r#"spec.nodeSelector: Invalid value: {{"zone":"a"}}: {NS_ONLY_ADD}"#
            )],
        ),
        (
            "removing every key is denied (the field is then absent)",
            gated(json!({"nodeSelector": {"disktype": "ssd"}})),
            gated(json!({})),
            vec![format!(
                "spec.nodeSelector: Invalid value: {{}}: {NS_ONLY_ADD}"
            )],
        ),
        (
            "changing a value is denied, reported once",
            gated(json!({"nodeSelector": {"a": "1", "b": "2"}})),
            gated(json!({"nodeSelector": {"a": "x", "b": "y"}})),
            vec![format!(
                r#"spec.nodeSelector: Invalid value: {{"a":"x","b":"y"}}: {NS_ONLY_ADD}"#
            )],
        ),
        (
            "empty new map equals absent old map",
            gated(json!({})),
            gated(json!({"nodeSelector": {}})),
            vec![],
        ),
    ];
    for (name, old, new, want) in cases {
        assert_eq!(run(old, new), want, "{name}");
    }
}

#[test]
fn required_node_affinity_on_gated_pods() {
    let zone_ab = json!([{"matchExpressions": [expr("zone", "In", &["a", "b"])]}]);
    let cases: Vec<(&str, Value, Value, Vec<String>)> = vec![
        (
            "setting required affinity on a pod without affinity is allowed",
            gated(json!({})),
            gated(json!({"affinity": required(zone_ab.clone())})),
            vec![],
        ),
        (
            "setting it when only preferred existed is allowed",
            gated(json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {"matchExpressions": [expr("a", "Exists", &[])]}}]}}})),
            gated(json!({"affinity": required(zone_ab.clone())})),
            vec![],
        ),
        (
            "appending an expression is allowed",
            gated(json!({"affinity": required(zone_ab.clone())})),
            gated(json!({"affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["a", "b"]), expr("disk", "Exists", &[])]}]))})),
            vec![],
        ),
        (
            "appending a matchFields entry is allowed",
            gated(json!({"affinity": required(zone_ab.clone())})),
            gated(json!({"affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["a", "b"])], "matchFields": [expr("metadata.name", "In", &["n1"])]}]))})),
            vec![],
        ),
        (
            "narrowing the values of an expression is denied",
            gated(json!({"affinity": required(zone_ab.clone())})),
            gated(json!({"affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["a"])]}]))})),
            vec![format!(r#"{TERMS}[0]: Invalid value: {{"matchExpressions":[{{"key":"zone","operator":"In","values":["a"]}}]}}: {TERM_ONLY_ADD}"#)],
        ),
        (
            "reordering values is denied (order matters)",
            gated(json!({"affinity": required(zone_ab.clone())})),
            gated(json!({"affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["b", "a"])]}]))})),
            vec![format!(r#"{TERMS}[0]: Invalid value: {{"matchExpressions":[{{"key":"zone","operator":"In","values":["b","a"]}}]}}: {TERM_ONLY_ADD}"#)],
        ),
        (
            "prepending an expression is denied",
            gated(json!({"affinity": required(zone_ab.clone())})),
            gated(json!({"affinity": required(json!([{"matchExpressions": [expr("disk", "Exists", &[]), expr("zone", "In", &["a", "b"])]}]))})),
            vec![format!(r#"{TERMS}[0]: Invalid value: {{"matchExpressions":[{{"key":"disk","operator":"Exists"}},{{"key":"zone","operator":"In","values":["a","b"]}}]}}: {TERM_ONLY_ADD}"#)],
        ),
        (
            "adding a term is denied",
            gated(json!({"affinity": required(zone_ab.clone())})),
            gated(json!({"affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["a", "b"])]}, {"matchExpressions": [expr("zone", "In", &["c"])]}]))})),
            vec![format!(r#"{TERMS}: Invalid value: [{{"matchExpressions":[{{"key":"zone","operator":"In","values":["a","b"]}}]}},{{"matchExpressions":[{{"key":"zone","operator":"In","values":["c"]}}]}}]: no additions/deletions to non-empty NodeSelectorTerms list are allowed"#)],
        ),
        (
            "removing a term is denied",
            gated(json!({"affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["a"])]}, {"matchExpressions": [expr("zone", "In", &["b"])]}]))})),
            gated(json!({"affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["a"])]}]))})),
            vec![format!(r#"{TERMS}: Invalid value: [{{"matchExpressions":[{{"key":"zone","operator":"In","values":["a"]}}]}}]: no additions/deletions to non-empty NodeSelectorTerms list are allowed"#)],
        ),
        (
            "removing the required block is denied",
            gated(json!({"affinity": required(zone_ab.clone())})),
            gated(json!({"affinity": {"nodeAffinity": {}}})),
            vec![format!("{TERMS}: Invalid value: null: no additions/deletions to non-empty NodeSelectorTerms list are allowed")],
        ),
        (
            "removing the whole affinity is denied",
            gated(json!({"affinity": required(zone_ab.clone())})),
            gated(json!({})),
            vec![format!("{TERMS}: Invalid value: null: no additions/deletions to non-empty NodeSelectorTerms list are allowed")],
        ),
        (
            "an old empty terms list allows anything",
            gated(json!({"affinity": required(json!([]))})),
            gated(json!({"affinity": required(zone_ab.clone())})),
            vec![],
        ),
        (
            "an old completely empty term may not change",
            gated(json!({"affinity": required(json!([{}]))})),
            gated(json!({"affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["a"])]}]))})),
            vec![format!(r#"{TERMS}[0]: Invalid value: {{"matchExpressions":[{{"key":"zone","operator":"In","values":["a"]}}]}}: {TERM_ONLY_ADD}"#)],
        ),
        (
            "every bad term is reported",
            gated(json!({"affinity": required(json!([{"matchExpressions": [expr("a", "In", &["1"])]}, {"matchExpressions": [expr("b", "In", &["1"])]}]))})),
            gated(json!({"affinity": required(json!([{"matchExpressions": [expr("a", "In", &["2"])]}, {"matchExpressions": [expr("b", "In", &["2"])]}]))})),
            vec![
                format!(r#"{TERMS}[0]: Invalid value: {{"matchExpressions":[{{"key":"a","operator":"In","values":["2"]}}]}}: {TERM_ONLY_ADD}"#),
                format!(r#"{TERMS}[1]: Invalid value: {{"matchExpressions":[{{"key":"b","operator":"In","values":["2"]}}]}}: {TERM_ONLY_ADD}"#),
            ],
        ),
        (
            "empty matchFields equals none",
            gated(json!({"affinity": required(json!([{"matchExpressions": [expr("a", "Exists", &[])]}]))})),
            gated(json!({"affinity": required(json!([{"matchExpressions": [expr("a", "Exists", &[])], "matchFields": []}]))})),
            vec![],
        ),
        (
            "preferred node affinity is free while gated",
            gated(json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {"matchExpressions": [expr("a", "Exists", &[])]}}]}}})),
            gated(json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50, "preference": {"matchExpressions": [expr("b", "Exists", &[])]}}]}}})),
            vec![],
        ),
        (
            "removing preferred node affinity is free while gated",
            gated(json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {"matchExpressions": [expr("a", "Exists", &[])]}}]}}})),
            gated(json!({})),
            vec![],
        ),
    ];
    for (name, old, new, want) in cases {
        assert_eq!(run(old, new), want, "{name}");
    }
}

#[test]
fn affinity_objects_compare_as_pointers() {
    let cases: Vec<(&str, Value, Value, Vec<&str>)> = vec![
        (
            "affinity: {} alone on a gated pod without affinity is forbidden",
            gated(json!({})),
            gated(json!({"affinity": {}})),
            vec!["spec.affinity: Forbidden: may not be added without node affinity; only spec.affinity.nodeAffinity may change while gated"],
        ),
        (
            "affinity: {nodeAffinity: {}} is an allowed node-affinity addition",
            gated(json!({})),
            gated(json!({"affinity": {"nodeAffinity": {}}})),
            vec![],
        ),
        (
            "removing an empty affinity is forbidden",
            gated(json!({"affinity": {}})),
            gated(json!({})),
            vec!["spec.affinity: Forbidden: may not be removed without node affinity; only spec.affinity.nodeAffinity may change while gated"],
        ),
        (
            "pod affinity stays immutable while gated",
            gated(json!({})),
            gated(json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "db"}}}]}}})),
            vec!["spec.affinity.podAffinity: Forbidden: may not be changed, even while the pod has scheduling gates (only nodeSelector and node affinity are mutable)"],
        ),
        (
            "pod anti-affinity stays immutable while gated, also next to a legal node change",
            gated(json!({"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": {"topologyKey": "zone"}}]}}})),
            gated(json!({"affinity": {"nodeAffinity": {}, "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 2, "podAffinityTerm": {"topologyKey": "zone"}}]}}})),
            vec!["spec.affinity.podAntiAffinity: Forbidden: may not be changed, even while the pod has scheduling gates (only nodeSelector and node affinity are mutable)"],
        ),
        (
            "node affinity added next to existing pod affinity is allowed",
            gated(json!({"affinity": {"podAffinity": {}}})),
            gated(json!({"affinity": {"podAffinity": {}, "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [expr("a", "Exists", &[])]}]}}}})),
            vec![],
        ),
    ];
    for (name, old, new, want) in cases {
        assert_eq!(run(old, new), want, "{name}");
    }
}

/// The copy-free check agrees with the apiserver's munging (kept in the problem path) on every
/// pair of affinities built from absent, empty and set parts.
#[test]
fn rest_of_affinity_fast_path_agrees_with_munging() {
    let node = [
        None,
        Some(json!({})),
        Some(
            required(json!([{"matchExpressions": [expr("a", "Exists", &[])]}]))["nodeAffinity"]
                .clone(),
        ),
    ];
    let pod = [
        None,
        Some(json!({})),
        Some(json!({"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone"}]})),
    ];
    let mut affinities = vec![None];
    for n in &node {
        for p in &pod {
            for a in &pod {
                let mut v = json!({});
                for (k, part) in [
                    ("nodeAffinity", n),
                    ("podAffinity", p),
                    ("podAntiAffinity", a),
                ] {
                    if let Some(part) = part {
                        v[k] = part.clone();
                    }
                }
                affinities.push(Some(v));
            }
        }
    }
    let with = |a: &Option<Value>| {
        spec(match a {
            Some(a) => gated(json!({ "affinity": a })),
            None => gated(json!({})),
        })
    };
    let path = FieldPath::root().child("spec");
    let mut refused = 0;
    for o in &affinities {
        for n in &affinities {
            let (old, new) = (with(o), with(n));
            let kept = rest_of_affinity_kept(&old, &new);
            assert_eq!(
                kept,
                rest_of_affinity_problems(&old, &new, &path).is_empty(),
                "old {o:?}, new {n:?}"
            );
            refused += usize::from(!kept);
        }
    }
    // Both outcomes are exercised.
    assert!(refused > 0 && refused < affinities.len() * affinities.len());
}

#[test]
fn ungated_pods_may_not_change_directives() {
    let detail = "Forbidden: pod updates may not change nodeSelector or affinity unless the pod has scheduling gates (the old pod has none)";
    let cases: Vec<(&str, Value, Value, Vec<String>)> = vec![
        (
            "no change is fine",
            json!({"nodeSelector": {"a": "1"}}),
            json!({"nodeSelector": {"a": "1"}}),
            vec![],
        ),
        (
            "adding a key is denied",
            json!({"nodeSelector": {"a": "1"}}),
            json!({"nodeSelector": {"a": "1", "b": "2"}}),
            vec![format!("spec.nodeSelector: {detail}")],
        ),
        (
            "adding required node affinity is denied",
            json!({}),
            json!({"affinity": required(json!([{"matchExpressions": [expr("a", "Exists", &[])]}]))}),
            vec![format!("spec.affinity: {detail}")],
        ),
        (
            "changing preferred node affinity is denied",
            json!({"affinity": {"nodeAffinity": {}}}),
            json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}}),
            vec![],
        ),
        (
            "changing pod anti-affinity is denied at its path",
            json!({"affinity": {"podAntiAffinity": {}}}),
            json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone"}]}}}),
            vec![format!("spec.affinity.podAntiAffinity: {detail}")],
        ),
        (
            "a pod whose update removes its last gate is judged by the old pod (gated)",
            gated(json!({"nodeSelector": {"a": "1"}})),
            json!({"nodeSelector": {"a": "1", "rack": "r1"}}),
            vec![],
        ),
    ];
    for (name, old, new, want) in cases {
        assert_eq!(run(old, new), want, "{name}");
    }
}

#[test]
fn gates_and_tolerations() {
    let t_ready = json!({"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300});
    let cases: Vec<(&str, Value, Value, Vec<&str>)> = vec![
        ("removing the gate is allowed", gated(json!({})), json!({}), vec![]),
        (
            "reordering gates is allowed",
            json!({"schedulingGates": [{"name": "a"}, {"name": "b"}]}),
            json!({"schedulingGates": [{"name": "b"}, {"name": "a"}]}),
            vec![],
        ),
        (
            "a new gate is forbidden",
            gated(json!({})),
            json!({"schedulingGates": [{"name": "example.com/gate"}, {"name": "example.com/second"}]}),
            vec!["spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate 'example.com/second'"],
        ),
        (
            "a new gate on a pod that had none is forbidden",
            json!({}),
            json!({"schedulingGates": [{"name": "x"}]}),
            vec!["spec.schedulingGates[0].name: Forbidden: only deletion is allowed, but found new scheduling gate 'x'"],
        ),
        (
            "adding a toleration is allowed",
            json!({"tolerations": [t_ready.clone()]}),
            json!({"tolerations": [t_ready.clone(), {"key": "gpu", "operator": "Exists"}]}),
            vec![],
        ),
        (
            "changing tolerationSeconds is allowed",
            json!({"tolerations": [t_ready.clone()]}),
            json!({"tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}]}),
            vec![],
        ),
        (
            "removing a toleration is forbidden",
            json!({"tolerations": [t_ready.clone()]}),
            json!({}),
            vec!["spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"],
        ),
        (
            "changing a toleration's effect is forbidden",
            json!({"tolerations": [t_ready.clone()]}),
            json!({"tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}]}),
            vec!["spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"],
        ),
    ];
    for (name, old, new, want) in cases {
        assert_eq!(run(old, new), want, "{name}");
    }
}

#[test]
fn allowed_users_restrict_who_may_tighten() {
    let cfg = MutableDirectives {
        allowed_users: vec![
            "system:serviceaccount:kueue-system:kueue-controller-manager".into(),
            "group:system:masters".into(),
        ],
        ..Default::default()
    };
    let old = gated(json!({}));
    let new = gated(json!({"nodeSelector": {"zone": "a"}}));
    let masters = vec!["system:masters".to_string()];
    assert!(run_as(old.clone(), new.clone(), "admin", &masters, &cfg).is_empty());
    assert!(run_as(
        old.clone(),
        new.clone(),
        "system:serviceaccount:kueue-system:kueue-controller-manager",
        &[],
        &cfg
    )
    .is_empty());
    assert_eq!(
        run_as(old.clone(), new.clone(), "bob", &["devs".to_string()], &cfg),
        vec![
            r#"spec.nodeSelector: Forbidden: user "bob" may not change the scheduling directives of a gated pod; allowed: system:serviceaccount:kueue-system:kueue-controller-manager, group:system:masters"#
        ]
    );
    // Removing the gate alone is not a directive change.
    assert!(run_as(old.clone(), json!({}), "bob", &[], &cfg).is_empty());
    // Node affinity changes are directives too.
    let na = gated(
        json!({"affinity": required(json!([{"matchExpressions": [expr("a", "Exists", &[])]}]))}),
    );
    assert_eq!(
        run_as(old, na, "bob", &[], &cfg)[0],
        r#"spec.affinity.nodeAffinity: Forbidden: user "bob" may not change the scheduling directives of a gated pod; allowed: system:serviceaccount:kueue-system:kueue-controller-manager, group:system:masters"#
    );
}

/// Denials with their hints, as a controller author reads them.
#[test]
fn refused_updates_explain_the_legal_form() {
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "zone In [a,b] narrowed to zone In [a]",
            gated(
                json!({"affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["a", "b"])]}]))}),
            ),
            gated(
                json!({"affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["a"])]}]))}),
            ),
        ),
        (
            "term rewritten to something wider",
            gated(
                json!({"affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["a"])]}]))}),
            ),
            gated(
                json!({"affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["a", "b"])]}]))}),
            ),
        ),
        (
            "two terms collapsed into one narrower term",
            gated(
                json!({"affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["a"])]}, {"matchExpressions": [expr("zone", "In", &["b"])]}]))}),
            ),
            gated(
                json!({"affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["a"]), expr("disk", "In", &["ssd"])]}]))}),
            ),
        ),
        (
            "a term added",
            gated(
                json!({"affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["a"])]}]))}),
            ),
            gated(
                json!({"affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["a"])]}, {"matchExpressions": [expr("zone", "In", &["b"])]}]))}),
            ),
        ),
        (
            "nodeSelector key moved into node affinity",
            gated(json!({"nodeSelector": {"disktype": "ssd"}})),
            gated(
                json!({"affinity": required(json!([{"matchExpressions": [expr("disktype", "In", &["ssd"]), expr("zone", "In", &["a"])]}]))}),
            ),
        ),
        (
            "a matchFields NotIn widened in place: the legal form names only the added node, one value a requirement",
            gated(json!({"affinity": required(json!([{"matchFields": [expr("metadata.name", "NotIn", &["n9"])]}]))})),
            gated(json!({"affinity": required(json!([{"matchFields": [expr("metadata.name", "NotIn", &["n9", "n8", "n7"])]}]))})),
        ),
        (
            "nodeSelector value changed",
            gated(json!({"nodeSelector": {"disktype": "ssd"}})),
            gated(json!({"nodeSelector": {"disktype": "hdd"}})),
        ),
        (
            "toleration removed",
            json!({"tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]}),
            json!({}),
        ),
        (
            "toleration's omitted operator written out",
            json!({"tolerations": [{"key": "k1", "value": "v1", "effect": "NoSchedule"}]}),
            json!({"tolerations": [{"key": "k1", "operator": "Equal", "value": "v1", "effect": "NoSchedule"}]}),
        ),
        (
            "tolerations replaced by one",
            json!({"tolerations": [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}, {"key": "c", "operator": "Exists"}, {"key": "d", "operator": "Exists"}]}),
            json!({"tolerations": [{"key": "e", "operator": "Exists"}]}),
        ),
        (
            "required node affinity dropped where the nodeSelector already decides the nodes",
            gated(
                json!({"nodeSelector": {"zone": "a"}, "affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["a", "b"])]}]))}),
            ),
            gated(json!({"nodeSelector": {"zone": "a"}, "affinity": {"nodeAffinity": {}}})),
        ),
        (
            "a term ORed in where the nodeSelector already decides the nodes",
            gated(
                json!({"nodeSelector": {"zone": "a"}, "affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["a", "b"])]}]))}),
            ),
            gated(
                json!({"nodeSelector": {"zone": "a"}, "affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["a", "b"])]}, {"matchExpressions": [expr("zone", "In", &["c"])]}]))}),
            ),
        ),
        (
            "term rewritten with an unknown operator",
            gated(
                json!({"affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["a", "b"])]}]))}),
            ),
            gated(
                json!({"affinity": required(json!([{"matchExpressions": [expr("zone", "Within", &["a"])]}]))}),
            ),
        ),
    ];
    let mut out = String::new();
    for (name, old, new) in cases {
        out.push_str(&format!("## {name}\n"));
        for p in check(
            &spec(old),
            &spec(new),
            &User::default(),
            &MutableDirectives::default(),
        ) {
            out.push_str(&format!(
                "error: {}\nhint:  {}\n",
                p.error,
                p.hint.unwrap_or_default()
            ));
        }
        out.push('\n');
    }
    insta::assert_snapshot!(out);
}

/// `/mutate` on Pod UPDATE: one line per refused change, allowed, no patch.
#[test]
fn mutate_explains_each_refused_change_in_one_line() {
    use crate::k8s::workload::{parse_value, Kind};
    use crate::rules::config::RuleSet;
    use crate::rules::{evaluate, Input, Operation, Phase};

    let zone = |vals: &[&str]| json!([{"matchExpressions": [expr("zone", "In", vals)]}]);
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "nodeSelector key removed",
            gated(json!({"nodeSelector": {"disktype": "ssd"}})),
            gated(json!({})),
        ),
        (
            "nodeSelector value changed",
            gated(json!({"nodeSelector": {"disktype": "ssd"}})),
            gated(json!({"nodeSelector": {"disktype": "hdd"}})),
        ),
        (
            "nodeSelector key moved into affinity (a tightening)",
            gated(json!({"nodeSelector": {"disktype": "ssd"}})),
            gated(
                json!({"affinity": required(json!([{"matchExpressions": [expr("disktype", "In", &["ssd"])]}]))}),
            ),
        ),
        (
            "term added",
            gated(json!({"affinity": required(zone(&["a"]))})),
            gated(
                json!({"affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["a"])]}, {"matchExpressions": [expr("zone", "In", &["b"])]}]))}),
            ),
        ),
        (
            "term removed",
            gated(
                json!({"affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["a"])]}, {"matchExpressions": [expr("zone", "In", &["b"])]}]))}),
            ),
            gated(
                json!({"affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["b"])]}]))}),
            ),
        ),
        (
            "expression narrowed",
            gated(json!({"affinity": required(zone(&["a", "b"]))})),
            gated(json!({"affinity": required(zone(&["a"]))})),
        ),
        (
            "expression widened",
            gated(json!({"affinity": required(zone(&["a"]))})),
            gated(json!({"affinity": required(zone(&["a", "b"]))})),
        ),
        (
            "expressions reordered",
            gated(
                json!({"affinity": required(json!([{"matchExpressions": [expr("a", "Exists", &[]), expr("b", "Exists", &[])]}]))}),
            ),
            gated(
                json!({"affinity": required(json!([{"matchExpressions": [expr("b", "Exists", &[]), expr("a", "Exists", &[])]}]))}),
            ),
        ),
        (
            "gate added",
            gated(json!({})),
            json!({"schedulingGates": [{"name": "example.com/gate"}, {"name": "example.com/second"}]}),
        ),
        (
            "podAffinity changed",
            gated(json!({})),
            gated(
                json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone", "labelSelector": {}}]}}}),
            ),
        ),
        (
            "nodeSelector changed on an ungated pod",
            json!({"nodeSelector": {"a": "1"}}),
            json!({"nodeSelector": {"a": "2"}}),
        ),
        (
            "node affinity set on an ungated pod",
            json!({}),
            json!({"affinity": required(zone(&["a"]))}),
        ),
        (
            "toleration removed",
            json!({"tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]}),
            json!({}),
        ),
        (
            "toleration's omitted operator written out",
            json!({"tolerations": [{"key": "k1", "value": "v1", "effect": "NoSchedule"}]}),
            json!({"tolerations": [{"key": "k1", "operator": "Equal", "value": "v1", "effect": "NoSchedule"}]}),
        ),
        (
            "tolerations replaced by one",
            json!({"tolerations": [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}, {"key": "c", "operator": "Exists"}, {"key": "d", "operator": "Exists"}]}),
            json!({"tolerations": [{"key": "e", "operator": "Exists"}]}),
        ),
        (
            "a legal tightening explains nothing",
            gated(json!({})),
            gated(json!({"nodeSelector": {"zone": "a"}})),
        ),
    ];
    let rules = RuleSet::default();
    let mut out = String::new();
    for (name, old, new) in cases {
        let old = parse_value(Kind::Pod, &json!({"spec": old})).unwrap();
        let new = parse_value(Kind::Pod, &json!({"spec": new})).unwrap();
        let input = Input {
            phase: Phase::Mutate,
            operation: Operation::Update,
            namespace: "demo",
            user: User::default(),
            object: crate::rules::Subject::Template(&new),
            old_object: Some(crate::rules::Subject::Template(&old)),
            context: Default::default(),
        };
        let v = evaluate(&input, &rules);
        assert!(v.allowed() && v.patches.is_empty(), "{name}");
        out.push_str(&format!("## {name}\n"));
        for w in v.warnings() {
            // Our own wording stays under 120 characters; quoted user content comes on top.
            let own: String = w.split('"').step_by(2).collect();
            assert!(
                own.len() <= 110,
                "{name}: {} chars of our own: {w}",
                own.len()
            );
            out.push_str(&w);
            out.push('\n');
        }
    }
    insta::assert_snapshot!(out);
}

mod property {
    use super::*;
    use crate::core::nodeselector::pod_node_constraint;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    const KEYS: [&str; 3] = ["a", "b", "c"];
    const VALUES: [&str; 3] = ["1", "2", "3"];

    fn requirement() -> impl Strategy<Value = Value> {
        (0..KEYS.len(), 0..6usize, 0..VALUES.len(), 0..VALUES.len()).prop_map(|(k, op, v1, v2)| {
            let op = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"][op];
            match op {
                "Exists" | "DoesNotExist" => json!({"key": KEYS[k], "operator": op}),
                "Gt" | "Lt" => json!({"key": KEYS[k], "operator": op, "values": [VALUES[v1]]}),
                _ => json!({"key": KEYS[k], "operator": op, "values": [VALUES[v1], VALUES[v2]]}),
            }
        })
    }

    fn term() -> impl Strategy<Value = Value> {
        proptest::collection::vec(requirement(), 0..3)
            .prop_map(|reqs| json!({"matchExpressions": reqs}))
    }

    fn node_selector() -> impl Strategy<Value = BTreeMap<String, String>> {
        proptest::collection::btree_map(
            (0..KEYS.len()).prop_map(|k| KEYS[k].to_string()),
            (0..VALUES.len()).prop_map(|v| VALUES[v].to_string()),
            0..3,
        )
    }

    /// A gated pod: a nodeSelector and, maybe, required node affinity.
    fn gated_pod() -> impl Strategy<Value = Value> {
        (
            node_selector(),
            proptest::option::of(proptest::collection::vec(term(), 1..3)),
        )
            .prop_map(|(sel, terms)| {
                let mut spec = json!({"schedulingGates": [{"name": "g"}], "nodeSelector": sel});
                if let Some(t) = terms {
                    spec["affinity"] = required(json!(t));
                }
                spec
            })
    }

    /// Every label set over the alphabet.
    fn nodes() -> Vec<BTreeMap<String, String>> {
        let mut out = vec![BTreeMap::new()];
        for k in KEYS {
            out = out
                .into_iter()
                .flat_map(|n| {
                    let mut with: Vec<BTreeMap<String, String>> = ["1", "2", "3", "4"]
                        .iter()
                        .map(|v| {
                            let mut m = n.clone();
                            m.insert(k.to_string(), v.to_string());
                            m
                        })
                        .collect();
                    with.push(n);
                    with
                })
                .collect();
        }
        out
    }

    /// Whether the placement core lets `spec` run on a node with `labels`.
    fn may_run(spec: &PodSpec, labels: &BTreeMap<String, String>) -> bool {
        match pod_node_constraint(spec.node_selector(), spec.required_node_selector_terms()) {
            None => true,
            Some(terms) => terms.iter().any(|t| t.matches_node(labels, "n")),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        /// Whatever update the rule allows on a gated pod never widens where it may run. The
        /// updates are edits of the old pod (keys added, changed or removed, requirements
        /// appended, dropped or replaced, terms added or removed) or another pod altogether.
        #[test]
        fn allowed_updates_never_widen_the_nodes(
            old in gated_pod(),
            other in gated_pod(),
            edits in proptest::collection::vec((0..7usize, 0..KEYS.len(), 0..VALUES.len(), requirement()), 0..4),
        ) {
            let mut new = old.clone();
            for (what, k, v, req) in edits {
                let key = KEYS[k];
                let terms = &mut new["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
                match what {
                    0 => new["nodeSelector"][key] = json!(VALUES[v]),
                    1 => {
                        if let Some(m) = new["nodeSelector"].as_object_mut() {
                            m.remove(key);
                        }
                    }
                    2 | 3 => {
                        if let Some(t) = terms.as_array_mut().and_then(|t| t.get_mut(k % 2)) {
                            let mut exprs = t["matchExpressions"].as_array().cloned().unwrap_or_default();
                            if what == 2 {
                                exprs.push(req);
                            } else if !exprs.is_empty() {
                                exprs.remove(v % exprs.len());
                            }
                            t["matchExpressions"] = json!(exprs);
                        }
                    }
                    4 => {
                        if let Some(t) = terms.as_array_mut() {
                            t.push(json!({"matchExpressions": [req]}));
                        }
                    }
                    5 => {
                        if let Some(t) = terms.as_array_mut() {
                            t.pop();
                        }
                    }
                    _ => new = other.clone(),
                }
            }
            let (old, new) = (spec(old), spec(new));
            let problems = check(&old, &new, &User::default(), &MutableDirectives::default());
            if problems.is_empty() {
                for n in nodes() {
                    prop_assert!(!may_run(&new, &n) || may_run(&old, &n), "{n:?}");
                }
            }
        }

        /// Adding nodeSelector keys, and appending requirements to existing terms, is always
        /// allowed on a gated pod. (Not to an empty term: it matches no node, so requirements
        /// would widen it, and the apiserver refuses that.)
        #[test]
        fn additions_are_always_allowed(
            old in gated_pod(),
            extra_key in (0..KEYS.len()),
            extra_value in (0..VALUES.len()),
            appended in proptest::collection::vec(requirement(), 0..3),
        ) {
            let mut new = old.clone();
            let key = KEYS[extra_key];
            if new["nodeSelector"].get(key).is_none() {
                new["nodeSelector"][key] = json!(VALUES[extra_value]);
            }
            let terms = &mut new["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
            if let Some(terms) = terms.as_array_mut() {
                for t in terms {
                    let mut exprs = t["matchExpressions"].as_array().cloned().unwrap_or_default();
                    if exprs.is_empty() {
                        continue;
                    }
                    exprs.extend(appended.iter().cloned());
                    t["matchExpressions"] = json!(exprs);
                }
            }
            let problems = check(&spec(old), &spec(new), &User::default(), &MutableDirectives::default());
            prop_assert!(problems.is_empty(), "{:?}", problems.iter().map(|p| p.error.to_string()).collect::<Vec<_>>());
        }
    }
}

/// However many keys an update removes, the /validate warning names three and counts the rest.
#[test]
fn hints_name_the_first_few_keys_and_count_the_rest() {
    let strings = |n: usize| (0..n).map(|i| format!("k{i}")).collect::<Vec<_>>();
    assert_eq!(few(&strings(0)), "");
    assert_eq!(few(&strings(3)), "k0, k1, k2");
    assert_eq!(few(&strings(200)), "k0, k1, k2 and 197 more");
}
