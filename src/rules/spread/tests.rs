use serde_json::{json, Value};

use super::SpreadDefaults;
use super::*;
use crate::k8s::workload::parse_value;
use crate::rules::RuleSet;
use crate::rules::{evaluate, Input, Operation, Phase, User, Verdict};

fn constraints(v: Value) -> Vec<TopologySpreadConstraint> {
    serde_json::from_value(v).unwrap()
}

/// `merge`: the labels of a Pod as written, merged as the apiserver will merge them.
fn errors(v: Value, merge: Option<&[&str]>) -> Vec<String> {
    let labels: Option<BTreeMap<String, String>> = merge.map(|ls| {
        ls.iter()
            .map(|k| (k.to_string(), "v".to_string()))
            .collect()
    });
    validate_constraints(
        &constraints(v),
        &FieldPath::new("spec.topologySpreadConstraints"),
        labels.as_ref(),
    )
    .iter()
    .map(|e| e.to_string())
    .collect()
}

fn sel() -> Value {
    json!({"matchLabels": {"app": "web"}})
}

const P: &str = "spec.topologySpreadConstraints";

#[test]
fn apiserver_validation_table() {
    let cases: Vec<(&str, Value, Vec<String>)> = vec![
        (
            "a valid constraint",
            json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": sel(), "minDomains": 2, "nodeAffinityPolicy": "Honor", "nodeTaintsPolicy": "Ignore"}]),
            vec![],
        ),
        (
            "maxSkew must be positive",
            json!([{"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": sel()}]),
            vec![format!("{P}[0].maxSkew: Invalid value: 0: must be greater than zero")],
        ),
        (
            "topologyKey must not be empty (or missing)",
            json!([{"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": sel()}]),
            vec![format!("{P}[0].topologyKey: Required value: can not be empty")],
        ),
        (
            "whenUnsatisfiable must be supported",
            json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Never", "labelSelector": sel()}]),
            vec![format!(r#"{P}[0].whenUnsatisfiable: Unsupported value: "Never": supported values: "DoNotSchedule", "ScheduleAnyway""#)],
        ),
        (
            "an empty whenUnsatisfiable is not supported either",
            json!([{"maxSkew": 1, "topologyKey": "zone", "labelSelector": sel()}]),
            vec![format!(r#"{P}[0].whenUnsatisfiable: Unsupported value: "": supported values: "DoNotSchedule", "ScheduleAnyway""#)],
        ),
        (
            "duplicates are reported at the earlier index",
            json!([
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": sel()},
                {"maxSkew": 1, "topologyKey": "host", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": sel()},
                {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": sel()},
                {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": sel()}
            ]),
            vec![format!(r#"{P}[0].{{topologyKey, whenUnsatisfiable}}: Duplicate value: "{{zone, DoNotSchedule}}""#)],
        ),
        (
            "minDomains must be positive and needs DoNotSchedule (both at once)",
            json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": sel(), "minDomains": 0}]),
            vec![
                format!("{P}[0].minDomains: Invalid value: 0: must be greater than zero"),
                format!("{P}[0].minDomains: Invalid value: 0: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway"),
            ],
        ),
        (
            "node inclusion policies must be Honor or Ignore",
            json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": sel(), "nodeAffinityPolicy": "honor", "nodeTaintsPolicy": "Skip"}]),
            vec![
                format!(r#"{P}[0].nodeAffinityPolicy: Unsupported value: "honor": supported values: "Honor", "Ignore""#),
                format!(r#"{P}[0].nodeTaintsPolicy: Unsupported value: "Skip": supported values: "Honor", "Ignore""#),
            ],
        ),
        (
            "matchLabelKeys without labelSelector is forbidden",
            json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "matchLabelKeys": ["pod-template-hash"]}]),
            vec![format!("{P}[0].matchLabelKeys: Forbidden: must not be specified when labelSelector is not set")],
        ),
        (
            "matchLabelKeys must be valid label keys",
            json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": sel(), "matchLabelKeys": ["-bad"]}]),
            vec![format!(r#"{P}[0].matchLabelKeys[0]: Invalid value: "-bad": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#)],
        ),
        (
            "unmerged, a matchLabelKeys key only in matchLabels is not refused",
            json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": sel(), "matchLabelKeys": ["app"]}]),
            vec![],
        ),
        (
            "the label selector is validated",
            json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]}}]),
            vec![format!("{P}[0].labelSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'")],
        ),
        (
            "every error of every constraint is reported",
            json!([
                {"maxSkew": 0, "topologyKey": "", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": sel()},
                {"maxSkew": -1, "topologyKey": "zone", "whenUnsatisfiable": "X", "labelSelector": sel()}
            ]),
            vec![
                format!("{P}[0].maxSkew: Invalid value: 0: must be greater than zero"),
                format!("{P}[0].topologyKey: Required value: can not be empty"),
                format!("{P}[1].maxSkew: Invalid value: -1: must be greater than zero"),
                format!(r#"{P}[1].whenUnsatisfiable: Unsupported value: "X": supported values: "DoNotSchedule", "ScheduleAnyway""#),
            ],
        ),
    ];
    for (name, v, want) in cases {
        assert_eq!(errors(v, None), want, "{name}");
    }
}

/// kube-apiserver v1.36.2's verdicts (measured: pods created, Deployments created with a
/// server-side dry run): a key is refused where a selector expression names it after
/// `matchLabels` or an earlier expression did; a Pod's keys it carries are merged first as
/// `key In [value]` expressions; templates are not merged.
#[test]
fn match_label_keys_as_the_apiserver_merges_and_validates_them() {
    let c = |selector: Value, keys: &[&str]| {
        json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": selector, "matchLabelKeys": keys}])
    };
    let refused = |i: usize, key: &str| {
        vec![format!(
            r#"{P}[0].matchLabelKeys[{i}]: Invalid value: "{key}": exists in both matchLabelKeys and labelSelector"#
        )]
    };
    const PTH: &str = "pod-template-hash";
    let exists = |key: &str| json!({"key": key, "operator": "Exists"});
    // (case, constraints, the labels of a Pod as written to merge, errors)
    type Case<'a> = (&'a str, Value, Option<&'a [&'a str]>, Vec<String>);
    let cases: Vec<Case> = vec![
        // Unmerged: a template, or a Pod as a webhook receives it.
        (
            "only in matchLabels",
            c(json!({"matchLabels": {"app": "d", PTH: "x"}}), &[PTH]),
            None,
            vec![],
        ),
        (
            "in one expression",
            c(
                json!({"matchLabels": {"app": "d"}, "matchExpressions": [exists(PTH)]}),
                &[PTH],
            ),
            None,
            vec![],
        ),
        (
            "the apiserver's merged expression",
            c(
                json!({"matchLabels": {"app": "d"}, "matchExpressions": [{"key": PTH, "operator": "In", "values": ["abc"]}]}),
                &[PTH],
            ),
            None,
            vec![],
        ),
        (
            "in matchLabels and an expression",
            c(
                json!({"matchLabels": {PTH: "x"}, "matchExpressions": [exists(PTH)]}),
                &[PTH],
            ),
            None,
            refused(0, PTH),
        ),
        (
            "in two expressions",
            c(
                json!({"matchExpressions": [exists(PTH), exists(PTH)]}),
                &[PTH],
            ),
            None,
            refused(0, PTH),
        ),
        // A Pod as written, merged as the apiserver will.
        (
            "a key the pod lacks, in matchLabels",
            c(json!({"matchLabels": {"version": "v1"}}), &["version"]),
            Some(&["app", PTH]),
            vec![],
        ),
        (
            "a key the pod lacks, in one expression",
            c(
                json!({"matchExpressions": [exists("version")]}),
                &["version"],
            ),
            Some(&["app"]),
            vec![],
        ),
        (
            "a key the pod carries, in matchLabels",
            c(json!({"matchLabels": {"app": "d"}}), &["app"]),
            Some(&["app"]),
            refused(0, "app"),
        ),
        (
            "a key the pod carries, in an expression",
            c(
                json!({"matchExpressions": [exists("tier")]}),
                &["app", "tier"],
            ),
            Some(&["app", "tier"]),
            refused(1, "tier"),
        ),
        // Upstream's map keeps a repeated key's last index; the second merge is the error.
        (
            "a key named twice",
            c(json!({"matchLabels": {"app": "d"}}), &[PTH, PTH]),
            Some(&[PTH]),
            refused(1, PTH),
        ),
        (
            "a key the pod carries, not in the selector",
            c(json!({"matchLabels": {"app": "d"}}), &[PTH]),
            Some(&[PTH]),
            vec![],
        ),
    ];
    for (name, v, merge, want) in cases {
        assert_eq!(errors(v, merge), want, "{name}");
    }
}

/// A Deployment of pods labelled app=web, with one zone constraint selecting by `selector`
/// (and `match_label_keys`, when there are any).
fn web_deployment(selector: Value, match_label_keys: &[&str]) -> PodTemplate {
    let mut constraint = json!({"maxSkew": 1, "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector});
    if !match_label_keys.is_empty() {
        constraint["matchLabelKeys"] = json!(match_label_keys);
    }
    parse_value(
        Kind::Deployment,
        &json!({"metadata": {"name": "web"}, "spec": {"template": {"metadata": {"labels": {"app": "web"}},
            "spec": {"topologySpreadConstraints": [constraint]}}}}),
    )
    .unwrap()
}

/// [`warnings`] with the labels the rule gives it.
fn warned(t: &PodTemplate) -> Vec<FieldError> {
    warnings(t, &t.carried_labels())
}

/// The apiserver accepts such a template but refuses each of its pods: a warning.
#[test]
fn templates_whose_pods_the_merge_refuses_are_warned_about() {
    let deployment = |selector| web_deployment(selector, &["pod-template-hash", "app"]);
    let path = FieldPath::new("spec.template.spec.topologySpreadConstraints");
    // pod-template-hash is the controller's label, app the template's.
    let t = deployment(json!({"matchLabels": {"pod-template-hash": "x", "app": "web"}}));
    let shown: Vec<String> = pods_refused(&t, &path, &t.carried_labels())
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(
        shown,
        vec![
            r#"spec.template.spec.topologySpreadConstraints[0].matchLabelKeys[0]: Invalid value: "pod-template-hash": exists in both matchLabelKeys and labelSelector: the apiserver accepts the template, but merges the key into each pod's selector and then refuses every pod (remove it from matchLabelKeys or from the selector)"#,
            r#"spec.template.spec.topologySpreadConstraints[0].matchLabelKeys[1]: Invalid value: "app": exists in both matchLabelKeys and labelSelector: the apiserver accepts the template, but merges the key into each pod's selector and then refuses every pod (remove it from matchLabelKeys or from the selector)"#,
        ]
    );
    let clean = deployment(json!({"matchLabels": {"tier": "x"}}));
    assert!(pods_refused(&clean, &path, &clean.carried_labels()).is_empty());
}

fn pod(v: Value) -> crate::k8s::workload::PodTemplate {
    parse_value(Kind::Pod, &v).unwrap()
}

#[test]
fn warnings_for_constraints_that_spread_nothing() {
    let t = pod(
        json!({"metadata": {"labels": {"app": "web"}}, "spec": {"topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
            {"maxSkew": 1, "topologyKey": "host", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "db"}}},
            {"maxSkew": 1, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}},
            // An invalid operator is a validation error only, not also "does not match".
            {"maxSkew": 1, "topologyKey": "row", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Bogus", "values": ["web"]}]}},
            // Empty: counts nothing in kube-scheduler up to v1.36; with matchLabelKeys it counts.
            {"maxSkew": 1, "topologyKey": "pod", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}},
            {"maxSkew": 1, "topologyKey": "dc", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}, "matchLabelKeys": ["app"]},
            // A key the pod does not carry merges nothing in: still empty.
            {"maxSkew": 1, "topologyKey": "hall", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}, "matchLabelKeys": ["tier"]}
        ]}}),
    );
    let got: Vec<String> = warned(&t).iter().map(|e| e.to_string()).collect();
    assert_eq!(
        got,
        vec![
            format!("{P}[0].labelSelector: Required value: without a labelSelector the constraint counts no pods and spreads nothing; select this workload's own pods"),
            format!(r#"{P}[1].labelSelector: Invalid value: {{"matchLabels":{{"app":"db"}}}}: does not match the pod's own labels (app=web), so the pod is not counted by its own constraint and the spread drifts"#),
            format!("{P}[4].labelSelector: Invalid value: {{}}: kube-scheduler v1.27 to v1.36 counts no pods for an empty labelSelector (kubernetes#141339), so the constraint spreads nothing there; select this workload's own pods with matchLabels"),
            format!("{P}[6].labelSelector: Invalid value: {{}}: kube-scheduler v1.27 to v1.36 counts no pods for an empty labelSelector (kubernetes#141339), so the constraint spreads nothing there; select this workload's own pods with matchLabels"),
        ]
    );
}

/// A Job's pods carry the labels the apiserver adds when it generates the selector, so a
/// constraint selecting them is not said to miss the pod; a CronJob's Jobs are named at run
/// time, so only `Exists` can select by name.
#[test]
fn job_labels_the_apiserver_adds_count_as_the_pods_own() {
    let spread = |sel: Value| {
        json!({"template": {"spec": {"topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "host", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": sel}]}}})
    };
    let by_name = json!({"matchLabels": {"batch.kubernetes.io/job-name": "train"}});
    let exists = json!({"matchExpressions": [{"key": "batch.kubernetes.io/controller-uid", "operator": "Exists"}]});
    let job = |sel: &Value, extra: Value| {
        let mut spec = spread(sel.clone());
        if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
            s.extend(e.clone());
        }
        json!({"kind": "Job", "metadata": {"name": "train"}, "spec": spec})
    };
    let cron = |sel: &Value| json!({"kind": "CronJob", "metadata": {"name": "train"}, "spec": {"jobTemplate": {"spec": spread(sel.clone())}}});
    let other = json!({"matchLabels": {"job-name": "other"}});
    let cases: [(Kind, Value, usize); 8] = [
        (Kind::Job, job(&by_name, json!({})), 0),
        (Kind::Job, job(&exists, json!({})), 0),
        (Kind::Job, job(&other, json!({})), 1),
        // A selector written by hand (manualSelector): the apiserver adds no label.
        (
            Kind::Job,
            job(
                &by_name,
                json!({"manualSelector": true, "selector": {"matchLabels": {"a": "b"}}}),
            ),
            1,
        ),
        // Without manualSelector the apiserver completes a selector given and adds the labels.
        (Kind::Job, job(&by_name, json!({"selector": {}})), 0),
        (Kind::CronJob, cron(&exists), 0),
        (Kind::CronJob, cron(&by_name), 1),
        (
            Kind::Deployment,
            json!({"kind": "Deployment", "metadata": {"name": "train"}, "spec": spread(by_name.clone())}),
            1,
        ),
    ];
    for (kind, v, want) in cases {
        let t = parse_value(kind, &v).unwrap();
        let got = warned(&t);
        assert_eq!(got.len(), want, "{v}: {got:?}");
    }
}

fn run(
    phase: Phase,
    op: Operation,
    ns: &str,
    t: &crate::k8s::workload::PodTemplate,
    rules: &RuleSet,
) -> Verdict {
    let input = Input {
        phase,
        operation: op,
        namespace: ns,
        user: User::default(),
        object: crate::rules::Subject::Template(t),
        old_object: None,
        context: Default::default(),
    };
    evaluate(&input, rules)
}

fn defaulted(kind: Kind, v: Value) -> Defaulting {
    defaults(
        &parse_value(kind, &v).unwrap(),
        "demo",
        &SpreadDefaults::default(),
    )
}

/// What defaulting adds, as the default settings' constraints.
fn added(d: Defaulting) -> (FieldPath, Vec<TopologySpreadConstraint>) {
    match d {
        Defaulting::Add {
            path,
            selector,
            match_label_keys,
        } => (
            path,
            default_constraints(
                &SpreadDefaults::default(),
                &selector,
                match_label_keys.as_deref(),
            ),
        ),
        other => panic!("not defaulted: {other:?}"),
    }
}

/// The patch's value is what serde_json writes of the constraints it describes: with the
/// defaults, and with every optional field, match label keys and selector expressions.
#[test]
fn the_patch_value_is_the_constraints_as_serde_json_writes_them() {
    let full = DefaultConstraint {
        max_skew: 2,
        topology_key: "topology.kubernetes.io/zone".into(),
        when_unsatisfiable: "DoNotSchedule".into(),
        min_domains: Some(3),
        node_affinity_policy: Some("Honor".into()),
        node_taints_policy: Some("Ignore".into()),
    };
    let settings = [
        SpreadDefaults::default(),
        SpreadDefaults {
            constraints: vec![full],
            ..SpreadDefaults::default()
        },
    ];
    let selectors: [LabelSelector; 2] = [
        serde_json::from_value(json!({"matchLabels": {"app": "web", "tier": "a\"b"}})).unwrap(),
        serde_json::from_value(json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["x"]}], "matchLabels": {}})).unwrap(),
    ];
    let keys = ["pod-template-hash".to_string()];
    for cfg in &settings {
        for sel in &selectors {
            for k in [None, Some(&keys[..])] {
                let mut out = String::new();
                write_constraints(&mut out, &cfg.constraints, sel, k);
                let want = serde_json::to_string(&default_constraints(cfg, sel, k)).unwrap();
                assert_eq!(out, want);
            }
        }
    }
}

#[test]
fn defaulting_decisions() {
    let deployment = json!({"spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {}}}});
    let (path, constraints) = added(defaulted(Kind::Deployment, deployment));
    assert_eq!(
        path.to_string(),
        "spec.template.spec.topologySpreadConstraints"
    );
    assert_eq!(constraints.len(), 2);
    assert_eq!(
        constraints[0].match_label_keys.as_deref(),
        Some(&["pod-template-hash".to_string()][..])
    );
    assert_eq!(
        constraints[0]
            .label_selector
            .as_ref()
            .unwrap()
            .match_labels
            .as_ref()
            .unwrap()["app"],
        "web"
    );

    // An OpenKruise CloneSet's pods carry their revision's pod-template-hash too.
    let cloneset = json!({"spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {}}}});
    let (_, constraints) = added(defaulted(Kind::CloneSet, cloneset));
    assert_eq!(
        constraints[0].match_label_keys.as_deref(),
        Some(&["pod-template-hash".to_string()][..])
    );

    // A StatefulSet's pods (apps/v1's or OpenKruise's) have a revision label, but a StatefulSet replaces its
    // pods one by one in place of their ordinals: spreading within a revision would not help.
    let sts = json!({"spec": {"selector": {"matchLabels": {"app": "db"}}, "template": {"metadata": {"labels": {"app": "db"}}, "spec": {}}}});
    for kind in [Kind::StatefulSet, Kind::KruiseStatefulSet] {
        let (_, constraints) = added(defaulted(kind, sts.clone()));
        assert_eq!(constraints[0].match_label_keys, None, "{kind:?}");
    }

    let bare = json!({"metadata": {"labels": {"app": "web", "tier": "x", "pod-template-hash": "abc"}}, "spec": {}});
    let (path, constraints) = added(defaulted(Kind::Pod, bare));
    assert_eq!(path.to_string(), "spec.topologySpreadConstraints");
    let ml = constraints[0]
        .label_selector
        .as_ref()
        .unwrap()
        .match_labels
        .clone()
        .unwrap();
    assert_eq!(ml.len(), 1, "only selectorLabelKeys are used: {ml:?}");
    assert_eq!(
        constraints[0].match_label_keys.as_deref(),
        Some(&["pod-template-hash".to_string()][..])
    );

    let job_without_selector = json!({"spec": {"template": {"metadata": {"labels": {"app.kubernetes.io/name": "batch"}}, "spec": {}}}});
    assert!(matches!(
        defaulted(Kind::Job, job_without_selector),
        Defaulting::Add { .. }
    ));

    let cases: Vec<(&str, Kind, Value)> = vec![
        (
            "a DaemonSet",
            Kind::DaemonSet,
            json!({"spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}}}}}),
        ),
        (
            "a pod of a DaemonSet",
            Kind::Pod,
            json!({"metadata": {"labels": {"app": "d"}, "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d", "uid": "1", "controller": true}]}}),
        ),
        (
            "a Deployment's ReplicaSet",
            Kind::ReplicaSet,
            json!({"metadata": {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "1", "controller": true}]}, "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}}}}),
        ),
        (
            "an Argo Rollout's ReplicaSet",
            Kind::ReplicaSet,
            json!({"metadata": {"ownerReferences": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "name": "web", "uid": "1", "controller": true}]}, "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}}}}),
        ),
        (
            "a CronJob's Job",
            Kind::Job,
            json!({"metadata": {"ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly", "uid": "1", "controller": true}]}, "spec": {"template": {"metadata": {"labels": {"app": "batch"}}}}}),
        ),
        (
            "a pod with a constraint",
            Kind::Pod,
            json!({"metadata": {"labels": {"app": "w"}}, "spec": {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {}}]}}),
        ),
        (
            "an opted-out object",
            Kind::Deployment,
            json!({"metadata": {"annotations": {"placement-guard.io/spread-defaults": "skip"}}, "spec": {"selector": {"matchLabels": {"app": "w"}}}}),
        ),
        (
            "an opted-out template",
            Kind::Deployment,
            json!({"spec": {"selector": {"matchLabels": {"app": "w"}}, "template": {"metadata": {"annotations": {"placement-guard.io/spread-defaults": "skip"}}}}}),
        ),
    ];
    for (name, kind, v) in cases {
        assert_eq!(defaulted(kind, v), Defaulting::NotApplicable, "{name}");
    }
    // Owned, but not made from another template: a ReplicaSet an owner only garbage-collects
    // (not its controller), and a ReplicaSet's pods.
    let kept: Vec<(&str, Kind, Value)> = vec![
        (
            "a ReplicaSet owned but not controlled",
            Kind::ReplicaSet,
            json!({"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "1"}]}, "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}}}}),
        ),
        (
            "a pod of a ReplicaSet",
            Kind::Pod,
            json!({"metadata": {"labels": {"app": "web"}, "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "1", "controller": true}]}}),
        ),
    ];
    for (name, kind, v) in kept {
        assert!(
            matches!(defaulted(kind, v), Defaulting::Add { .. }),
            "{name}"
        );
    }
    let t = pod(json!({"metadata": {"labels": {"app": "w"}}}));
    assert_eq!(
        defaults(&t, "kube-system", &SpreadDefaults::default()),
        Defaulting::NotApplicable
    );

    let Defaulting::Skipped(why) =
        defaulted(Kind::Pod, json!({"metadata": {"labels": {"tier": "x"}}}))
    else {
        panic!()
    };
    assert_eq!(why, "topology spread constraints were not defaulted: the pod has none of the labels \"app.kubernetes.io/name\", \"app.kubernetes.io/instance\", \"app\" to select its peers by; add one, or set topologySpreadConstraints");
}

/// Applies the mutation's patch and returns the patched object.
fn mutate(kind: Kind, object: Value, rules: &RuleSet) -> (Value, Verdict) {
    let t = parse_value(kind, &object).unwrap();
    let v = run(Phase::Mutate, Operation::Create, "demo", &t, rules);
    let mut patched = object;
    json_patch::patch(&mut patched, &v.patch_ops().unwrap()).unwrap();
    (patched, v)
}

#[test]
fn patched_objects_are_idempotent_and_valid() {
    let rules = RuleSet::default();
    let objects = [
        (
            Kind::Deployment,
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
        ),
        (
            Kind::Pod,
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"app.kubernetes.io/name": "p", "pod-template-hash": "abc"}}, "spec": {"containers": [{"name": "c", "image": "i"}], "topologySpreadConstraints": []}}),
        ),
        (
            Kind::CronJob,
            json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "n"}, "spec": {"jobTemplate": {"spec": {"template": {"metadata": {"labels": {"app": "n"}}, "spec": {}}}}}}),
        ),
    ];
    let mut snapshot = String::new();
    for (kind, object) in objects {
        let (patched, v) = mutate(kind, object, &rules);
        assert_eq!(v.patch_ops().unwrap().len(), 1);
        // A second pass (reinvocation) adds nothing.
        let (again, v2) = mutate(kind, patched.clone(), &rules);
        assert!(v2.patches.is_empty(), "{kind:?} reinvocation patched again");
        assert_eq!(again, patched);
        // The defaulted object passes this issue's validation, warnings included.
        let t = parse_value(kind, &patched).unwrap();
        let checked = run(Phase::Validate, Operation::Create, "demo", &t, &rules);
        assert!(
            checked.findings.is_empty(),
            "{kind:?}: {:?}",
            checked.findings
        );
        snapshot.push_str(&format!(
            "# {kind:?}\n{}\n",
            serde_json::to_string_pretty(&patched).unwrap()
        ));
    }
    insta::assert_snapshot!(snapshot);
}

#[test]
fn validation_action_and_update_ratchet() {
    let bad = json!({"metadata": {"labels": {"app": "w"}}, "spec": {"topologySpreadConstraints": [{"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "w"}}}]}});
    let t = pod(bad);
    let mut rules = RuleSet::default();
    assert!(!run(Phase::Validate, Operation::Create, "demo", &t, &rules).allowed());
    rules.spec.topology_spread.validate.action = crate::rules::Action::Warn;
    let v = run(Phase::Validate, Operation::Create, "demo", &t, &rules);
    assert!(v.allowed());
    assert_eq!(v.warnings().len(), 1);
    assert!(v.has_warnings());
    let clean = run(Phase::Mutate, Operation::Create, "demo", &t, &rules);
    assert_eq!(clean.has_warnings(), !clean.warnings().is_empty());
    // An UPDATE that leaves the constraints as they were is not judged again.
    let rules = RuleSet::default();
    let input = Input {
        phase: Phase::Validate,
        operation: Operation::Update,
        namespace: "demo",
        user: User::default(),
        object: crate::rules::Subject::Template(&t),
        old_object: Some(crate::rules::Subject::Template(&t)),
        context: Default::default(),
    };
    assert!(evaluate(&input, &rules).allowed());
}

/// A Deployment's pods carry its controller's pod-template-hash: `Exists` matches it, a value
/// cannot (it is not known before the ReplicaSet exists).
#[test]
fn spread_warnings_count_the_labels_a_controller_adds() {
    let deployment = |selector| web_deployment(selector, &[]);
    let exists = json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "pod-template-hash", "operator": "Exists"}]});
    assert!(warned(&deployment(exists)).is_empty());
    let shown: Vec<String> = warned(&deployment(
        json!({"matchLabels": {"pod-template-hash": "x"}}),
    ))
    .iter()
    .map(|e| e.to_string())
    .collect();
    assert_eq!(
        shown,
        vec![
            r#"spec.template.spec.topologySpreadConstraints[0].labelSelector: Invalid value: {"matchLabels":{"pod-template-hash":"x"}}: does not match the pod's own labels (app=web; and the pod-template-hash label(s) its controller adds), so the pod is not counted by its own constraint and the spread drifts"#,
        ]
    );
}

/// Constraints that select alike are described with one selector; others each with its own.
#[test]
fn added_constraints_are_described_once_per_selector() {
    let c = |key: &str, skew: i32, when: &str| -> TopologySpreadConstraint {
        serde_json::from_value(json!({"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"app": "web"}}, "matchLabelKeys": ["pod-template-hash"]}))
        .unwrap()
    };
    assert_eq!(
        describe_constraints(&[c("h", 3, "ScheduleAnyway"), c("z", 5, "ScheduleAnyway")]),
        "maxSkew 3 on h, maxSkew 5 on z (ScheduleAnyway, selecting app=web + matchLabelKeys [pod-template-hash])"
    );
    assert_eq!(
        describe_constraints(&[c("h", 1, "DoNotSchedule"), c("z", 5, "ScheduleAnyway")]),
        "maxSkew 1 on h (DoNotSchedule, selecting app=web + matchLabelKeys [pod-template-hash]); maxSkew 5 on z (ScheduleAnyway, selecting app=web + matchLabelKeys [pod-template-hash])"
    );
}
