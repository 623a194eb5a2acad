use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::{json, Value};

use super::*;

fn ws(version: &str, subsets: Value, extra: Value) -> Value {
    let mut v = json!({
        "apiVersion": format!("apps.kruise.io/{version}"),
        "kind": "WorkloadSpread",
        "metadata": {"name": "s"},
        "spec": {"targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs"}, "subsets": subsets}
    });
    if let Value::Object(e) = extra {
        for (k, x) in e {
            v["spec"][k] = x;
        }
    }
    v
}

fn zone(z: &str) -> Value {
    json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": [z]}]})
}

fn typed(v: &Value) -> WorkloadSpread {
    WorkloadSpread::from_value(v).unwrap()
}

fn errors(v: &Value) -> Vec<String> {
    validate(&typed(v))
        .iter()
        .map(|p| format!("{:?} {}", p.level, p.error))
        .collect()
}

#[test]
fn objects_that_cannot_be_read_name_the_field() {
    let mut bad = ws(
        "v1alpha1",
        json!([{"name": "a", "maxReplicas": [1]}]),
        json!({}),
    );
    let e = WorkloadSpread::from_value(&bad).unwrap_err();
    assert_eq!(e.path, "spec.subsets[0].maxReplicas");
    bad["spec"]["subsets"] = json!("a");
    assert_eq!(
        WorkloadSpread::from_value(&bad).unwrap_err().path,
        "spec.subsets"
    );
    assert!(WorkloadSpread::from_value(&json!([1])).is_err());
}

#[test]
fn each_version_reads_its_own_field_names() {
    let term = zone("a");
    let v = ws(
        "v1beta1",
        json!([{"name": "a", "requiredNodeSelectorTerm": term}]),
        json!({}),
    );
    assert_eq!(
        typed(&v).subsets[0].required,
        None,
        "a v1alpha1 name in a v1beta1 object"
    );
    let v = ws(
        "v1beta1",
        json!([{"name": "a", "requiredNodeSelector": term}]),
        json!({}),
    );
    assert!(typed(&v).subsets[0].required.is_some());
}

#[test]
fn valid_spreads_pass() {
    // The documentation's examples: zone-a max 3 then zone-b; 20% / 20% / 60%; v1beta1 names.
    let a = ws(
        "v1alpha1",
        json!([{"name": "subset-a", "requiredNodeSelectorTerm": zone("a"), "maxReplicas": 3}, {"name": "subset-b", "requiredNodeSelectorTerm": zone("b")}]),
        json!({}),
    );
    assert!(errors(&a).is_empty(), "{:?}", errors(&a));
    let pct = ws(
        "v1alpha1",
        json!([
        {"name": "a", "requiredNodeSelectorTerm": zone("a"), "maxReplicas": "20%"},
        {"name": "b", "requiredNodeSelectorTerm": zone("b"), "maxReplicas": "20%"},
        {"name": "c", "requiredNodeSelectorTerm": zone("c"), "maxReplicas": "60%"}]),
        json!({}),
    );
    assert!(errors(&pct).is_empty(), "{:?}", errors(&pct));
    let beta = ws(
        "v1beta1",
        json!([{"name": "a", "requiredNodeSelector": zone("a"), "preferredNodeSelector": [{"weight": 10, "preference": zone("a")}]}]),
        json!({}),
    );
    assert!(errors(&beta).is_empty(), "{:?}", errors(&beta));
}

#[test]
fn validation_table() {
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        ("no subsets", ws("v1alpha1", json!([]), json!({})), vec!["Error spec.subsets: Required value: at least one subset"]),
        (
            "names required and unique",
            ws("v1alpha1", json!([{"name": ""}, {"name": "a"}, {"name": "a"}]), json!({})),
            vec!["Error spec.subsets[0].name: Required value", "Error spec.subsets[2].name: Duplicate value: \"a\""],
        ),
        (
            "an invalid required term",
            ws("v1alpha1", json!([{"name": "a", "requiredNodeSelectorTerm": {"matchExpressions": [{"key": "zone", "operator": "In"}]}}]), json!({})),
            vec!["Error spec.subsets[0].requiredNodeSelectorTerm.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"],
        ),
        (
            // validateWorkloadSpreadSubsets calls ValidateNodeSelectorTerm without allowing
            // invalid label values (openkruise/kruise, pkg/webhook/workloadspread/validating).
            "a required term's values are label values",
            ws("v1alpha1", json!([{"name": "a", "requiredNodeSelectorTerm": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a b"]}]}}]), json!({})),
            vec!["Error spec.subsets[0].requiredNodeSelectorTerm.matchExpressions[0].values[0]: Invalid value: \"a b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"],
        ),
        (
            // Kruise (v1alpha1 validation) names the field preferredSchedulingTerms:
            // workloadspread_validation_test.go "preferredSchedulingTerms' weight are not valid".
            "preferred weight 1..100",
            ws("v1alpha1", json!([{"name": "a", "preferredNodeSelectorTerms": [{"weight": 0, "preference": zone("a")}]}]), json!({})),
            vec!["Error spec.subsets[0].preferredSchedulingTerms[0].weight: Invalid value: 0: must be in the range 1-100"],
        ),
        (
            "tolerations are validated",
            ws("v1alpha1", json!([{"name": "a", "tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]}]), json!({})),
            vec!["Error spec.subsets[0].tolerations[0].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'"],
        ),
        (
            // validateWorkloadSpreadSubsets: the later subset whose type differs from the first.
            "mixed cap types",
            ws("v1alpha1", json!([{"name": "a", "maxReplicas": 1}, {"name": "b", "maxReplicas": "50%"}]), json!({})),
            vec!["Error spec.subsets[1].maxReplicas: Invalid value: \"50%\": maxReplicas of all subsets must be of one type: all integers or all percentages"],
        ),
        (
            "percent out of range and not whole",
            ws("v1alpha1", json!([{"name": "a", "maxReplicas": "120%"}, {"name": "b", "maxReplicas": "1.5%"}]), json!({})),
            vec![
                "Error spec.subsets[0].maxReplicas: Invalid value: \"120%\": must be a whole percentage between 0% and 100%, e.g. \"20%\"",
                "Error spec.subsets[1].maxReplicas: Invalid value: \"1.5%\": must be a whole percentage between 0% and 100%, e.g. \"20%\"",
            ],
        ),
        (
            // Kruise: "subset-a's maxReplicas = 40%, subset-b's maxReplicas = 70%" -> subsets[1].
            "percentages over 100, on the subset that passes it",
            ws("v1alpha1", json!([{"name": "a", "maxReplicas": "60%"}, {"name": "b", "maxReplicas": "60%"}]), json!({})),
            vec!["Error spec.subsets[1].maxReplicas: Invalid value: \"60%\": the percentages of maxReplicas add up to 120% by this subset, more than 100%"],
        ),
        (
            // Kruise: "... 40%, ... 20%, ... 20%" -> subsets[0].maxReplicas.
            "percentages under 100 with a capped last subset",
            ws("v1alpha1", json!([{"name": "a", "maxReplicas": "30%"}, {"name": "b", "maxReplicas": "30%"}]), json!({})),
            vec!["Error spec.subsets[0].maxReplicas: Invalid value: \"30%\": the percentages of maxReplicas add up to 60%; they must add up to 100% unless the last subset has no maxReplicas"],
        ),
        ("under 100 is fine when the last subset is uncapped", ws("v1alpha1", json!([{"name": "a", "maxReplicas": "30%"}, {"name": "b"}]), json!({})), vec![]),
        (
            "negative ints",
            ws("v1alpha1", json!([{"name": "a", "maxReplicas": -1}]), json!({})),
            vec!["Error spec.subsets[0].maxReplicas: Invalid value: -1: must be a non-negative integer"],
        ),
        (
            // Kruise: "scheduleStrategy's type is not valid"; an adaptive block with another type
            // is reported on .type ("scheduleStrategy's type is not matched").
            "unknown strategy type; adaptive only with Adaptive",
            ws("v1alpha1", json!([{"name": "a"}]), json!({"scheduleStrategy": {"type": "Sometimes", "adaptive": {}}})),
            vec![
                "Error spec.scheduleStrategy.type: Unsupported value: \"Sometimes\": supported values: \"Adaptive\", \"Fixed\"",
                "Error spec.scheduleStrategy.type: Invalid value: \"Sometimes\": must be Adaptive when an adaptive block is given",
            ],
        ),
        (
            "Fixed with an adaptive block, on .type",
            ws("v1alpha1", json!([{"name": "a"}]), json!({"scheduleStrategy": {"type": "Fixed", "adaptive": {}}})),
            vec!["Error spec.scheduleStrategy.type: Invalid value: \"Fixed\": must be Adaptive when an adaptive block is given"],
        ),
        (
            // Kruise: "the last subset's maxReplicas is not nil when using adaptive" -> .adaptive.
            "Adaptive: last subset uncapped, rescheduleCriticalSeconds bounded by 295/(n-1)",
            ws("v1alpha1", json!([{"name": "a", "maxReplicas": 1}, {"name": "b", "maxReplicas": 1}, {"name": "c", "maxReplicas": 1}]), json!({"scheduleStrategy": {"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 148}}})),
            vec![
                "Error spec.scheduleStrategy.adaptive: Invalid value: {\"rescheduleCriticalSeconds\":148}: with the adaptive strategy the last subset takes the rest and has no maxReplicas: remove spec.subsets[2].maxReplicas (1)",
                "Error spec.scheduleStrategy.adaptive.rescheduleCriticalSeconds: Invalid value: 148: must be between 0 and 147 with 3 subset(s)",
            ],
        ),
        (
            // Kruise tests `MaxReplicas != nil`: an invalid cap on the last subset is still one.
            "Adaptive: an invalid cap on the last subset is still a cap",
            ws("v1alpha1", json!([{"name": "a"}, {"name": "b", "maxReplicas": "101%"}]), json!({"scheduleStrategy": {"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 10}}})),
            vec![
                "Error spec.subsets[1].maxReplicas: Invalid value: \"101%\": must be a whole percentage between 0% and 100%, e.g. \"20%\"",
                "Error spec.scheduleStrategy.adaptive: Invalid value: {\"rescheduleCriticalSeconds\":10}: with the adaptive strategy the last subset takes the rest and has no maxReplicas: remove spec.subsets[1].maxReplicas (\"101%\")",
            ],
        ),
        (
            // Kruise: "rescheduleCriticalSeconds < 0", also with one subset.
            "a negative rescheduleCriticalSeconds with one subset",
            ws("v1alpha1", json!([{"name": "a"}]), json!({"scheduleStrategy": {"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": -1}}})),
            vec!["Error spec.scheduleStrategy.adaptive.rescheduleCriticalSeconds: Invalid value: -1: must be between 0 and 2147483647 with 1 subset(s)"],
        ),
        (
            "type Adaptive without an adaptive block checks nothing more",
            ws("v1alpha1", json!([{"name": "a", "maxReplicas": 1}, {"name": "b", "maxReplicas": 1}]), json!({"scheduleStrategy": {"type": "Adaptive"}})),
            vec![],
        ),
    ];
    for (name, v, want) in cases {
        assert_eq!(errors(&v), want, "{name}");
    }
    let mut sts = ws(
        "v1alpha1",
        json!([{"name": "a", "maxReplicas": "50%"}, {"name": "b"}]),
        json!({}),
    );
    sts["spec"]["targetRef"] =
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"});
    assert_eq!(errors(&sts), vec!["Error spec.subsets[0].maxReplicas: Invalid value: \"50%\": a StatefulSet target takes integer maxReplicas only"]);
    let mut other = ws("v1alpha1", json!([{"name": "a"}]), json!({}));
    other["spec"]["targetRef"] =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "name": "w"});
    assert!(errors(&other)[0].starts_with(
        "Warning spec.targetRef: Invalid value: {\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"name\":\"w\"}: TargetReference's GroupKind is not permitted unless"
    ));
    // Known kinds under the wrong group, or an apiVersion that does not parse: errors at
    // spec.targetRef (Kruise's "statefulset group error", TestIsReferenceEqual's "yahaha").
    let target = |api: &str, kind: &str| {
        let mut v = ws("v1alpha1", json!([{"name": "a"}]), json!({}));
        v["spec"]["targetRef"] = json!({"apiVersion": api, "kind": kind, "name": "t"});
        errors(&v)
    };
    assert_eq!(
        target("apps.kruise.io/v1alpha1", "Deployment"),
        ["Error spec.targetRef: Invalid value: {\"apiVersion\":\"apps.kruise.io/v1alpha1\",\"kind\":\"Deployment\",\"name\":\"t\"}: TargetReference is not valid for Deployment."]
    );
    assert_eq!(target("rollouts.kruise.io/v2", "StatefulSet").len(), 1);
    assert_eq!(
        target("apps.kruise.io/v1alpha1/yahaha", "CloneSet").len(),
        1
    );
    for (api, kind) in [
        ("apps/v1", "StatefulSet"),
        ("apps.kruise.io/v1alpha1", "StatefulSet"),
        ("apps.kruise.io/v1beta1", "StatefulSet"),
        ("apps.kruise.io/v1alpha1", "CloneSet"),
        ("batch/v1", "Job"),
        ("apps/v1", "ReplicaSet"),
    ] {
        assert!(target(api, kind).is_empty(), "{api} {kind}");
    }
    let mut missing = ws("v1alpha1", json!([{"name": "a"}]), json!({}));
    missing["spec"]["targetRef"] = json!({"kind": "CloneSet"});
    assert_eq!(
        errors(&missing),
        vec![
            "Error spec.targetRef.apiVersion: Required value",
            "Error spec.targetRef.name: Required value"
        ]
    );
}

fn cross(v: &Value, spec: Value, replicas: Option<i64>) -> Vec<String> {
    let spec: PodSpec = serde_json::from_value(spec).unwrap();
    cross_check(
        &typed(v),
        &Target {
            spec: &spec,
            replicas,
            template: None,
            claims: &[],
            selector: None,
        },
    )
    .iter()
    .map(|p| format!("{:?} {}", p.level, p.error))
    .collect()
}

#[test]
fn cross_checks_against_the_workload() {
    let two = ws(
        "v1alpha1",
        json!([{"name": "a", "requiredNodeSelectorTerm": zone("a"), "maxReplicas": 3}, {"name": "b", "requiredNodeSelectorTerm": zone("b")}]),
        json!({}),
    );
    assert!(cross(&two, json!({}), Some(5)).is_empty());
    // A subset that contradicts the workload's nodeSelector can never hold a pod.
    assert_eq!(
        cross(&two, json!({"nodeSelector": {"zone": "b"}}), Some(5)),
        vec!["Error spec.subsets[0].requiredNodeSelectorTerm: Invalid value: \"zone In [a]\": subset \"a\" can never hold a pod: \"zone In [a]\" contradicts the workload's own node selection (\"zone In [b]\")"]
    );
    // An empty workload term is loosened by injection.
    let empty_term = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}}}});
    assert!(cross(&two, empty_term, None)[0].contains("loosens the workload's node selection"));
    // An empty subset term on a workload without required affinity makes its pods unschedulable.
    let empty_subset = ws(
        "v1alpha1",
        json!([{"name": "x", "requiredNodeSelectorTerm": {}}]),
        json!({}),
    );
    assert!(cross(&empty_subset, json!({}), None)[0]
        .contains("matches no node, so its pods can never be scheduled"));
    // Overlapping subsets.
    let overlap = ws(
        "v1alpha1",
        json!([{"name": "a", "requiredNodeSelectorTerm": {"matchExpressions": [{"key": "pool", "operator": "Exists"}]}}, {"name": "b", "requiredNodeSelectorTerm": zone("b")}]),
        json!({}),
    );
    assert_eq!(cross(&overlap, json!({}), None), vec!["Warning spec.subsets[1].requiredNodeSelectorTerm: Invalid value: \"zone In [b]\": subsets \"a\" and \"b\" can both hold on one node, so pods of \"b\" may land in \"a\"'s pool"]);
    // A subset the workload's own selection rules out overlaps nothing: only its error.
    assert_eq!(
        cross(&overlap, json!({"nodeSelector": {"zone": "a"}}), None),
        vec!["Error spec.subsets[1].requiredNodeSelectorTerm: Invalid value: \"zone In [b]\": subset \"b\" can never hold a pod: \"zone In [b]\" contradicts the workload's own node selection (\"zone In [a]\")"]
    );
    // Both within the workload's selection: still an overlap.
    let within = cross(&overlap, json!({"nodeSelector": {"zone": "b"}}), None);
    assert!(
        within.len() == 1 && within[0].contains("can both hold on one node"),
        "{within:?}"
    );
    // Caps that admit fewer pods than replicas.
    let capped = ws(
        "v1alpha1",
        json!([{"name": "a", "requiredNodeSelectorTerm": zone("a"), "maxReplicas": 2}, {"name": "b", "requiredNodeSelectorTerm": zone("b"), "maxReplicas": 3}]),
        json!({}),
    );
    assert_eq!(cross(&capped, json!({}), Some(7)), vec!["Warning spec.subsets: Invalid value: 5: the subsets' caps admit 5 of the workload's 7 replicas; the other 2 get no injection at all and can run anywhere"]);
    // Percent caps round up per subset, so 3 × 34% of 7 admits 9.
    let pct = ws(
        "v1alpha1",
        json!([{"name": "a", "maxReplicas": "34%"}, {"name": "b", "maxReplicas": "33%"}, {"name": "c", "maxReplicas": "33%"}]),
        json!({}),
    );
    assert!(cross(&pct, json!({}), Some(7)).is_empty());
}

fn shares(d: &Distribution) -> (Vec<i64>, i64) {
    (d.subsets.iter().map(|s| s.pods).collect(), d.overflow)
}

/// A WorkloadSpread of subsets with these caps (`null`: none).
fn spread(caps: Vec<Value>) -> Value {
    let cap = |c: Value| {
        if c.is_null() {
            json!({"name": "s"})
        } else {
            json!({"name": "s", "maxReplicas": c})
        }
    };
    ws(
        "v1alpha1",
        Value::Array(caps.into_iter().map(cap).collect()),
        json!({}),
    )
}

#[test]
fn distribution_follows_kruise() {
    // name, caps, StatefulSet, replicas, pods per subset, overflow
    type Case = (&'static str, Vec<Value>, bool, i64, Vec<i64>, i64);
    let cases: Vec<Case> = vec![
        (
            "docs: 5 replicas over zone-a (max 3) and zone-b",
            vec![json!(3), Value::Null],
            false,
            5,
            vec![3, 2],
            0,
        ),
        (
            "docs: 2 replicas over the same",
            vec![json!(3), Value::Null],
            false,
            2,
            vec![2, 0],
            0,
        ),
        (
            "docs: 20% / 20% / 60% of 10",
            vec![json!("20%"), json!("20%"), json!("60%")],
            false,
            10,
            vec![2, 2, 6],
            0,
        ),
        (
            "docs: 100 to the normal pool, the rest elastic",
            vec![json!(100), Value::Null],
            false,
            150,
            vec![100, 50],
            0,
        ),
        (
            "a single uncapped subset takes every pod",
            vec![Value::Null],
            false,
            4,
            vec![4],
            0,
        ),
        (
            "percent caps round up per subset",
            vec![json!("34%"), json!("33%"), json!("33%")],
            false,
            7,
            vec![3, 3, 1],
            0,
        ),
        (
            "a cap of 0 never takes a pod",
            vec![json!(0), json!("0%"), Value::Null],
            false,
            3,
            vec![0, 0, 3],
            0,
        ),
        (
            "overflow pods get no injection",
            vec![json!(1), json!(1)],
            false,
            3,
            vec![1, 1],
            1,
        ),
        (
            "order matters: reordered subsets",
            vec![Value::Null, json!(3)],
            false,
            5,
            vec![5, 0],
            0,
        ),
        (
            "StatefulSet ordinals walk a running threshold",
            vec![json!(2), json!(1), Value::Null],
            true,
            5,
            vec![2, 1, 2],
            0,
        ),
        (
            "StatefulSet ordinals past every cap overflow",
            vec![json!(2), json!(1)],
            true,
            5,
            vec![2, 1],
            2,
        ),
    ];
    for (name, caps, sts, replicas, want, overflow) in cases {
        let ordinals = sts.then(Ordinals::default);
        assert_eq!(
            shares(&distribute(
                &typed(&spread(caps)),
                ordinals.as_ref(),
                replicas,
                replicas
            )),
            (want, overflow),
            "{name}"
        );
    }
}

/// Kruise reads a StatefulSet pod's subset off the ordinal in its name, against thresholds
/// counted from 0: ordinals from `spec.ordinals.start`, or past an Advanced StatefulSet's
/// `reserveOrdinals`, land further along the subsets. Counted, not walked: a billion replicas
/// cost what six do.
#[test]
fn statefulset_ordinals_are_the_pods_names() {
    let caps = vec![json!(2), json!(2), Value::Null];
    let cases: [(&str, Value, i64, Vec<i64>, i64); 6] = [
        ("from 0", json!({}), 6, vec![2, 2, 2], 0),
        (
            "from ordinals.start 3",
            json!({"ordinals": {"start": 3}}),
            6,
            vec![0, 1, 5],
            0,
        ),
        (
            "past reserved 0 and 1",
            json!({"reserveOrdinals": [0, 1]}),
            6,
            vec![0, 2, 4],
            0,
        ),
        (
            "past a reserved range",
            json!({"reserveOrdinals": ["0-1", 3]}),
            4,
            vec![0, 1, 3],
            0,
        ),
        (
            "reserved among later ordinals",
            json!({"reserveOrdinals": [1, "9-1000000"]}),
            6,
            vec![1, 2, 3],
            0,
        ),
        (
            "a billion",
            json!({}),
            1_000_000_000,
            vec![2, 2, 999_999_996],
            0,
        ),
    ];
    for (name, spec, replicas, want, overflow) in cases {
        let o = Ordinals::of(&json!({"spec": spec}));
        assert_eq!(
            shares(&distribute(
                &typed(&spread(caps.clone())),
                Some(&o),
                replicas,
                replicas
            )),
            (want, overflow),
            "{name}"
        );
    }
    // Every cap finite: ordinals past the last threshold get no subset.
    let o = Ordinals::of(&json!({"spec": {"ordinals": {"start": 3}}}));
    assert_eq!(
        shares(&distribute(
            &typed(&spread(vec![json!(2), json!(2)])),
            Some(&o),
            4,
            4
        )),
        (vec![0, 1], 3)
    );
    let o = Ordinals::of(&json!({"spec": {}}));
    assert_eq!(
        shares(&distribute(
            &typed(&spread(vec![json!(2)])),
            Some(&o),
            i64::from(i32::MAX),
            1
        )),
        (vec![2], i64::from(i32::MAX) - 2)
    );
}

#[test]
fn injection_ands_the_subset_term_and_applies_the_patch() {
    let spread = ws(
        "v1alpha1",
        json!([{
            "name": "spot",
            "requiredNodeSelectorTerm": zone("a"),
            "preferredNodeSelectorTerms": [{"weight": 5, "preference": {"matchExpressions": [{"key": "spot", "operator": "Exists"}]}}],
            "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
            "patch": {"metadata": {"labels": {"subset": "spot"}}, "spec": {"containers": [{"name": "app", "resources": {"limits": {"cpu": "1"}}}], "$setElementOrder/containers": [{"name": "app"}]}}
        }]),
        json!({}),
    );
    let template = json!({
        "metadata": {"labels": {"app": "web"}},
        "spec": {
            "nodeSelector": {"disk": "ssd"},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "arch", "operator": "In", "values": ["amd64"]}]},
                {"matchExpressions": [{"key": "arch", "operator": "In", "values": ["arm64"]}]}
            ]}}},
            "containers": [{"name": "app", "image": "web"}, {"name": "sidecar", "image": "s"}]
        }
    });
    let (pod, patch_error) = inject(&template, &typed(&spread), 0);
    insta::assert_json_snapshot!(pod);
    assert_eq!(patch_error, None);
    // A subset with no term, preference or toleration leaves the pod's affinity alone (no
    // `nodeAffinity: null` written in).
    let bare = ws("v1alpha1", json!([{"name": "plain"}]), json!({}));
    let (pod, _) = inject(&json!({"spec": {"containers": []}}), &typed(&bare), 0);
    assert_eq!(pod["spec"].get("affinity"), None, "{pod}");
    // A pod without required affinity gets the subset term as its only term.
    let (pod, _) = inject(&json!({"spec": {}}), &typed(&spread), 0);
    assert_eq!(
        pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"],
        json!([zone("a")])
    );
}

/// Kruise's TestWorkloadSpreadMutatingPod "pod priority class name is patched": a patched
/// priorityClassName clears the priority set for the old class.
#[test]
fn a_patched_priority_class_clears_the_priority() {
    let spread = |patch: Value| {
        typed(&ws(
            "v1alpha1",
            json!([{"name": "a", "patch": patch}]),
            json!({}),
        ))
    };
    let template = json!({"spec": {"priority": 10000, "priorityClassName": "high"}});
    let (pod, _) = inject(
        &template,
        &spread(json!({"spec": {"priorityClassName": "low"}})),
        0,
    );
    assert_eq!(pod["spec"]["priorityClassName"], "low");
    assert!(pod["spec"].get("priority").is_none(), "{pod}");
    let (pod, _) = inject(
        &template,
        &spread(json!({"metadata": {"labels": {"a": "b"}}})),
        0,
    );
    assert_eq!(pod["spec"]["priority"], 10000);
}

/// Kruise's IsPodSelected and GetReplicasFromWorkloadWithTargetFilter.
#[test]
fn target_filters_select_pods_and_count_replicas() {
    let filter = |v: Value| serde_json::from_value::<TargetFilter>(v).unwrap();
    let labels: std::collections::BTreeMap<String, String> =
        [("app".to_string(), "web".to_string())].into();
    assert!(
        !filter(json!({})).selects(&labels),
        "no selector selects nothing"
    );
    assert!(filter(json!({"selector": {}})).selects(&labels));
    assert!(filter(json!({"selector": {"matchLabels": {"app": "web"}}})).selects(&labels));
    assert!(!filter(json!({"selector": {"matchLabels": {"app": "db"}}})).selects(&labels));
    assert!(!filter(json!({"selector": {"matchExpressions": [{"key": "app", "operator": "Invalid", "values": ["web"]}]}})).selects(&labels));
    let w =
        json!({"spec": {"replicas": 5, "revisionHistoryLimit": 2, "subsets": [{"replicas": 3}]}});
    assert_eq!(filter(json!({"selector": {}})).replicas(&w), None);
    assert_eq!(
        filter(
            json!({"replicasPathList": ["spec.revisionHistoryLimit", "spec.subsets.0.replicas"]})
        )
        .replicas(&w),
        Some(Ok(5))
    );
    assert!(filter(json!({"replicasPathList": ["spec.nope"]}))
        .replicas(&w)
        .unwrap()
        .is_err());
    // An invalid selector is refused at spec.targetFilter.
    let bad = ws(
        "v1alpha1",
        json!([{"name": "a"}]),
        json!({"targetFilter": {"selector": {"matchExpressions": [{"key": "app", "operator": "Invalid", "values": ["web"]}]}}}),
    );
    assert_eq!(errors(&bad).len(), 1);
    assert!(
        errors(&bad)[0].starts_with("Error spec.targetFilter: Invalid value:"),
        "{:?}",
        errors(&bad)
    );
    // Percent caps of the filter's count: 50% of 4 is 2, of the 10 replicas it would be 5.
    let v = ws(
        "v1alpha1",
        json!([{"name": "a", "maxReplicas": "50%"}, {"name": "b"}]),
        json!({}),
    );
    assert_eq!(
        shares(&distribute(&typed(&v), None, 10, 4)),
        (vec![2, 8], 0)
    );
}

/// Kruise's Test_validateWorkloadSpreadSubsets (pkg/webhook/workloadspread/validating): a
/// CloneSet or StatefulSet whose container mounts its volumeClaimTemplate is fine; with the
/// claim renamed the mount has no volume, and the subset's patch (which only adds an
/// annotation) is refused for the whole patched spec. Beyond Kruise's table: a patch that
/// breaks the template, one that repairs it, and a value of the wrong type.
#[test]
fn patches_are_validated_against_the_patched_template() {
    let template = json!({"metadata": {"labels": {"app": "test"}}, "spec": {"containers": [
        {"name": "main", "image": "img:latest", "volumeMounts": [{"name": "vol-1--0", "mountPath": "/logs", "subPath": "logs"}]}]}});
    let spread = |patch: Value| {
        typed(&ws(
            "v1alpha1",
            json!([{"name": "test", "patch": patch}]),
            json!({}),
        ))
    };
    let annotation = json!({"metadata": {"annotations": {"some-key": "some-value"}}});
    let run = |patch: Value, claims: &[&str]| -> Vec<String> {
        let claims: Vec<String> = claims.iter().map(|c| c.to_string()).collect();
        let spec: PodSpec = serde_json::from_value(template["spec"].clone()).unwrap();
        cross_check(
            &spread(patch),
            &Target {
                spec: &spec,
                replicas: Some(6),
                template: Some(&template),
                claims: &claims,
                selector: None,
            },
        )
        .iter()
        .map(|p| format!("{:?} {}", p.level, p.error))
        .collect()
    };
    let cases: Vec<(&str, Value, &[&str], Vec<&str>)> = vec![
        (
            "good cloneset / good sts",
            annotation.clone(),
            &["vol-1--0"],
            vec![],
        ),
        (
            "bad cloneset / bad sts",
            annotation.clone(),
            &["bad-boy"],
            vec![
                r#"Error spec.subsets[0].patch.containers[0].volumeMounts[0].name: Not found: "vol-1--0""#,
            ],
        ),
        (
            "a patch that adds the missing volume",
            json!({"spec": {"volumes": [{"name": "vol-1--0", "emptyDir": {}}]}}),
            &[],
            vec![],
        ),
        (
            "a patch that breaks a container",
            json!({"spec": {"containers": [{"name": "main", "ports": [{"containerPort": 0}]}]}}),
            &["vol-1--0"],
            vec![
                "Error spec.subsets[0].patch.containers[0].ports[0].containerPort: Required value",
            ],
        ),
        (
            "a patch whose value has the wrong type",
            json!({"spec": {"containers": [{"name": "main", "ports": [{"containerPort": "80"}]}]}}),
            &["vol-1--0"],
            vec![
                r#"Error spec.subsets[0].patch: Invalid value: "{\"spec\":{\"containers\":[{\"name\":\"main\",\"ports\":[{\"containerPort\":\"80\"}]}]}}": failed to unmarshal: spec.containers[0].ports[0].containerPort: invalid type: string "80", expected i32"#,
                "Error spec.subsets[0].patch.containers[0].ports[0].containerPort: Required value",
            ],
        ),
        (
            "a patch that deletes the only container ($patch: delete)",
            json!({"spec": {"containers": [{"name": "main", "$patch": "delete"}]}}),
            &["vol-1--0"],
            vec!["Error spec.subsets[0].patch.containers: Required value"],
        ),
        (
            "a patch whose added port takes the name of the template's (ports merge by containerPort)",
            json!({"spec": {"containers": [{"name": "main", "ports": [{"containerPort": 8080, "name": "http"}]}]}}),
            &["vol-1--0"],
            vec![],
        ),
        (
            "a patch whose mount merges by mountPath into the template's",
            json!({"spec": {"containers": [{"name": "main", "volumeMounts": [{"name": "other", "mountPath": "/logs"}]}]}}),
            &["vol-1--0"],
            vec![
                r#"Error spec.subsets[0].patch.containers[0].volumeMounts[0].name: Not found: "other""#,
            ],
        ),
        (
            "a patch whose quantity does not parse",
            json!({"spec": {"containers": [{"name": "main", "resources": {"requests": {"cpu": "lots"}}}]}}),
            &["vol-1--0"],
            vec![
                r#"Error spec.subsets[0].patch: Invalid value: "{\"spec\":{\"containers\":[{\"name\":\"main\",\"resources\":{\"requests\":{\"cpu\":\"lots\"}}}]}}": failed to unmarshal: spec.containers[0].resources.requests.cpu: Invalid value: "lots": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"#,
            ],
        ),
        (
            "a patch that adds a label the apiserver refuses",
            json!({"metadata": {"labels": {"bad key!": "x", "tier": "a b"}}}),
            &["vol-1--0"],
            vec![
                r#"Error spec.subsets[0].patch.metadata.labels: Invalid value: "bad key!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#,
                r#"Error spec.subsets[0].patch.metadata.labels: Invalid value: "a b": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"#,
            ],
        ),
        (
            "a patch strategic merge refuses",
            json!({"spec": {"containers": [{"image": "x"}]}}),
            &["vol-1--0"],
            vec![
                r#"Error spec.subsets[0].patch: Invalid value: "{\"spec\":{\"containers\":[{\"image\":\"x\"}]}}": failed to merge patch: {"image":"x"} does not contain declared merge key: name"#,
            ],
        ),
    ];
    for (name, patch, claims, want) in cases {
        assert_eq!(run(patch, claims), want, "{name}");
    }
    // Ports merge by containerPort: an added port named as the template's is a duplicate.
    let named = json!({"metadata": {"labels": {"app": "test"}}, "spec": {"containers": [
        {"name": "main", "image": "img", "ports": [{"containerPort": 80, "name": "http"}]}]}});
    let dup = spread(
        json!({"spec": {"containers": [{"name": "main", "ports": [{"containerPort": 8080, "name": "http"}]}]}}),
    );
    let found: Vec<String> = validate_patches(&dup, &named, &[], None)
        .iter()
        .map(|p| p.error.to_string())
        .collect();
    assert_eq!(
        found,
        [r#"spec.subsets[0].patch.containers[0].ports[1].name: Duplicate value: "http""#],
        "the added port comes first, as strategic merge puts it, so the template's is the second"
    );
    // A subset without a patch is not judged, whatever the template.
    let no_patch = typed(&ws("v1alpha1", json!([{"name": "a"}]), json!({})));
    assert!(validate_patches(&no_patch, &template, &[], None).is_empty());
}

/// A subset whose own term matches no node is reported whatever the workload, once.
#[test]
fn subsets_whose_term_matches_no_node() {
    let v = ws(
        "v1alpha1",
        json!([
            {"name": "gt", "requiredNodeSelectorTerm": {"matchExpressions": [{"key": "zone", "operator": "Gt", "values": ["zoneB"]}]}},
            {"name": "both", "requiredNodeSelectorTerm": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}, {"key": "zone", "operator": "NotIn", "values": ["a"]}]}},
            {"name": "fine", "requiredNodeSelectorTerm": zone("a")}
        ]),
        json!({}),
    );
    let dead = errors(&v);
    assert_eq!(
        dead,
        [
            "Error spec.subsets[0].requiredNodeSelectorTerm: Invalid value: \"zone Gt zoneB\": subset \"gt\" can never hold a pod: \"zone Gt zoneB\" matches no node",
            "Error spec.subsets[1].requiredNodeSelectorTerm: Invalid value: \"zone In [a], zone NotIn [a]\": subset \"both\" can never hold a pod: \"zone In [a], zone NotIn [a]\" matches no node",
        ]
    );
    // The cross-checks do not say it again, nor call it an overlap.
    assert!(cross(&v, json!({"nodeSelector": {"zone": "a"}}), None).is_empty());
    // An invalid term gets its validation errors only.
    let invalid = ws(
        "v1alpha1",
        json!([{"name": "none", "requiredNodeSelectorTerm": {"matchExpressions": [{"key": "zone", "operator": "In", "values": []}]}}]),
        json!({}),
    );
    let got = errors(&invalid);
    assert!(
        got.len() == 1 && got[0].contains("values: Required value"),
        "{got:?}"
    );
}

/// Adaptive rescheduling moves the pods a subset other than the last has no room for to the
/// next subsets with room (a 0 / b 2 / c 3 where the plain distribution is 2 / 2 / 1), keeps
/// those it runs, never moves the last subset's, and leaves over what no capped subset takes.
#[test]
fn adaptive_rescheduling_moves_pods_to_subsets_with_room() {
    let v = |caps: Vec<Value>| {
        let subsets: Vec<Value> = caps
            .into_iter()
            .enumerate()
            .map(|(i, cap)| {
                let mut s = json!({"name": format!("s{i}"), "requiredNodeSelectorTerm": zone("a")});
                if !cap.is_null() {
                    s["maxReplicas"] = cap;
                }
                s
            })
            .collect();
        typed(&ws("v1alpha1", json!(subsets), json!({})))
    };
    let three = v(vec![json!(2), json!(2), Value::Null]);
    let cases = [
        ([Some(0), Some(5), None], [0, 2, 3]),
        ([Some(1), None, None], [1, 2, 2]),
        ([Some(0), Some(0), None], [0, 0, 5]),
        // The last subset keeps its pods, room or not.
        ([None, None, Some(0)], [2, 2, 1]),
    ];
    for (rooms, pods) in cases {
        let want = (pods.to_vec(), 0);
        let dist = distribute(&three, None, 5, 5);
        assert_eq!(rescheduled(&dist, &rooms), want, "{rooms:?}");
    }
    let capped = v(vec![json!(2), json!(2)]);
    let dist = distribute(&capped, None, 5, 5);
    assert_eq!(dist.overflow, 1);
    assert_eq!(
        rescheduled(&dist, &[Some(0), None]),
        (vec![0, 2], 3),
        "what no subset has room for is admitted without injection"
    );
    // Only the Adaptive type with a positive rescheduleCriticalSeconds reschedules, as Kruise's
    // controller reads them.
    let strategy = |t: &str, adaptive: Value| -> ScheduleStrategy {
        serde_json::from_value(json!({"type": t, "adaptive": adaptive})).unwrap()
    };
    assert_eq!(
        strategy("Adaptive", json!({"rescheduleCriticalSeconds": 30})).reschedule_seconds(),
        Some(30)
    );
    assert_eq!(strategy("Adaptive", json!({})).reschedule_seconds(), None);
    assert_eq!(
        strategy("Adaptive", json!({"rescheduleCriticalSeconds": 0})).reschedule_seconds(),
        None
    );
    assert_eq!(
        strategy("Fixed", json!({"rescheduleCriticalSeconds": 30})).reschedule_seconds(),
        None
    );
}

/// A patched subset's node selection is judged on its pods as injected and patched: a patch
/// that sets the nodeSelector its term needs is fine, one that sets a contradicting one can
/// never hold a pod, and a patch that replaces the terms or tolerations the subset injects is
/// a warning (strategic merge replaces those lists). From a user trial.
#[test]
fn patched_subsets_are_judged_on_their_patched_pods() {
    let template = json!({"metadata": {"labels": {"app": "w"}}, "spec": {
        "nodeSelector": {"pool": "general"},
        "containers": [{"name": "main", "image": "img"}]}});
    let spec: PodSpec = serde_json::from_value(template["spec"].clone()).unwrap();
    let run = |subset: Value| -> Vec<String> {
        let v = typed(&ws(
            "v1alpha1",
            json!([subset, {"name": "rest"}]),
            json!({}),
        ));
        cross_check(
            &v,
            &Target {
                spec: &spec,
                replicas: None,
                template: Some(&template),
                claims: &[],
                selector: None,
            },
        )
        .iter()
        .filter(|p| p.error.path.to_string().starts_with("spec.subsets[0]"))
        .map(|p| format!("{:?} {}", p.level, p.error))
        .collect()
    };
    let pool =
        |v: &str| json!({"matchExpressions": [{"key": "pool", "operator": "In", "values": [v]}]});
    let cases = [
        (
            "the patch sets the nodeSelector the term needs",
            json!({"name": "gpu", "requiredNodeSelectorTerm": pool("gpu"),
                "patch": {"spec": {"nodeSelector": {"pool": "gpu"}}}}),
            vec![],
        ),
        (
            "the patch removes the nodeSelector",
            json!({"name": "gpu", "requiredNodeSelectorTerm": pool("gpu"),
                "patch": {"spec": {"nodeSelector": {"pool": null}}}}),
            vec![],
        ),
        (
            "the patch sets a nodeSelector the term contradicts",
            json!({"name": "gen", "requiredNodeSelectorTerm": pool("general"),
                "patch": {"spec": {"nodeSelector": {"pool": "gpu"}}}}),
            vec![
                r#"Error spec.subsets[0].patch: Invalid value: "{\"spec\":{\"nodeSelector\":{\"pool\":\"gpu\"}}}": subset "gen" can never hold a pod: injected and patched, its pods' node selection ("pool In [general], pool In [gpu]") matches no node"#,
            ],
        ),
        (
            "the patch replaces the terms and tolerations the subset injects",
            json!({"name": "gen", "requiredNodeSelectorTerm": pool("general"),
                "tolerations": [{"key": "spot", "operator": "Exists"}],
                "patch": {"spec": {"tolerations": [{"key": "x", "operator": "Exists"}],
                    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                        {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]}}}}}}),
            vec![
                r#"Warning spec.subsets[0].patch: Invalid value: "{\"spec\":{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"Exists\"}]}]}}},\"tolerations\":[{\"key\":\"x\",\"operator\":\"Exists\"}]}}": subset "gen": the patch replaces the required node selector terms the subset injects ("pool In [general]" is not in every term of its pods): a strategic merge patch replaces these lists; put the terms in requiredNodeSelectorTerm, not in the patch"#,
                r#"Warning spec.subsets[0].patch: Invalid value: "{\"spec\":{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"Exists\"}]}]}}},\"tolerations\":[{\"key\":\"x\",\"operator\":\"Exists\"}]}}": subset "gen": the patch replaces the tolerations the subset injects (a strategic merge patch replaces the list): put them in the subset's tolerations, not in the patch"#,
            ],
        ),
    ];
    for (what, subset, want) in cases {
        assert_eq!(run(subset), want, "{what}");
    }
}

/// A patch that changes the labels the workload's selector picks its pods by is an error (the
/// controller would release each pod and create another, without end); one that adds labels,
/// or changes others, is fine, and so is any patch when the selector did not match the
/// template to begin with.
#[test]
fn a_patch_may_not_take_the_pods_out_of_the_workloads_selector() {
    let template = json!({"metadata": {"labels": {"app": "w", "tier": "web"}},
        "spec": {"containers": [{"name": "main", "image": "img"}]}});
    let spec: PodSpec = serde_json::from_value(template["spec"].clone()).unwrap();
    let selector: LabelSelector =
        serde_json::from_value(json!({"matchLabels": {"app": "w"}})).unwrap();
    let run = |patch: Value, selector: &LabelSelector| -> Vec<String> {
        let v = typed(&ws(
            "v1alpha1",
            json!([{"name": "a", "patch": patch}, {"name": "rest"}]),
            json!({}),
        ));
        cross_check(
            &v,
            &Target {
                spec: &spec,
                replicas: None,
                template: Some(&template),
                claims: &[],
                selector: Some(selector),
            },
        )
        .iter()
        .map(|p| format!("{:?} {}", p.level, p.error))
        .collect()
    };
    assert_eq!(
        run(json!({"metadata": {"labels": {"app": "other"}}}), &selector),
        [
            r#"Error spec.subsets[0].patch.metadata.labels: Invalid value: {"app":"other","tier":"web"}: subset "a": the patched pods' labels do not match the CloneSet's selector {"matchLabels":{"app":"w"}}, so the workload would release each pod it creates as not its own and create another in its place, without end; leave the selector's labels out of the patch"#
        ]
    );
    assert_eq!(
        run(json!({"metadata": {"labels": {"app": null}}}), &selector).len(),
        1
    );
    for fine in [
        json!({"metadata": {"labels": {"zone": "a"}}}),
        json!({"metadata": {"labels": {"tier": "batch"}}}),
        json!({"metadata": {"annotations": {"x": "y"}}}),
    ] {
        assert_eq!(run(fine.clone(), &selector), Vec::<String>::new(), "{fine}");
    }
    let elsewhere: LabelSelector =
        serde_json::from_value(json!({"matchLabels": {"app": "x"}})).unwrap();
    assert_eq!(
        run(
            json!({"metadata": {"labels": {"app": "other"}}}),
            &elsewhere
        ),
        Vec::<String>::new()
    );
}
