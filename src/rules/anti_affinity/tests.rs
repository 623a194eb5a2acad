use serde_json::{json, Value};

use super::{HardAntiAffinity, ScopeAction};
use crate::k8s::workload::{parse_value, Kind, PodTemplate};
use crate::rules::{evaluate, Input, Operation, Phase, User};
use crate::rules::{Action, RuleSet};

const ZONE: &str = "topology.kubernetes.io/zone";
const TERM0: &str =
    "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]";

fn term(key: &str, extra: Value) -> Value {
    let mut t = json!({"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": key});
    if let (Some(t), Value::Object(e)) = (t.as_object_mut(), extra) {
        t.extend(e);
    }
    t
}

fn pod_spec(terms: Vec<Value>) -> Value {
    json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}}})
}

/// An object of `kind` whose pod template has `terms`.
fn object(kind: Kind, terms: Vec<Value>) -> PodTemplate {
    let spec = pod_spec(terms);
    let template = json!({"metadata": {"labels": {"app": "web"}}, "spec": spec});
    let v = match kind {
        Kind::Pod => json!({"metadata": {"name": "p", "labels": {"app": "web"}}, "spec": spec}),
        Kind::PodTemplate => json!({"template": template}),
        Kind::CronJob => json!({"spec": {"jobTemplate": {"spec": {"template": template}}}}),
        _ => json!({"spec": {"template": template}}),
    };
    parse_value(kind, &v).unwrap()
}

fn rules(cfg: HardAntiAffinity) -> RuleSet {
    let mut r = RuleSet::default();
    r.spec.hard_anti_affinity = cfg;
    r
}

fn run(
    rules: &RuleSet,
    op: Operation,
    ns: &str,
    obj: &PodTemplate,
    old: Option<&PodTemplate>,
) -> Vec<(Action, String)> {
    let input = Input {
        phase: Phase::Validate,
        operation: op,
        namespace: ns,
        user: User::default(),
        object: crate::rules::Subject::Template(obj),
        old_object: old.map(crate::rules::Subject::Template),
        context: Default::default(),
    };
    evaluate(&input, rules)
        .findings
        .into_iter()
        .filter(|f| f.rule == super::ID)
        .map(|f| (f.action, f.error.to_string()))
        .collect()
}

fn cluster_msg(prefix: &str, i: usize, key: &str, domain: &str) -> String {
    format!("{prefix}.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[{i}].topologyKey: Forbidden: hard anti-affinity on {key:?} across all namespaces lets this pod block every matching pod in the cluster from a whole {domain}; allowed keys: kubernetes.io/hostname")
}

#[test]
fn every_kind_is_checked_at_its_template_path() {
    let r = RuleSet::default();
    for kind in Kind::ALL {
        let obj = object(kind, vec![term(ZONE, json!({"namespaceSelector": {}}))]);
        let got = run(&r, Operation::Create, "demo", &obj, None);
        let prefix = kind.pod_spec_path().to_string();
        assert_eq!(
            got,
            vec![(Action::Deny, cluster_msg(&prefix, 0, ZONE, "zone"))],
            "{kind:?}"
        );
    }
}

#[test]
fn scopes_and_defaults() {
    let r = RuleSet::default();
    let ns_msg = |i: usize, key: &str, where_: &str, domain: &str| {
        format!("spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[{i}].topologyKey: Forbidden: hard anti-affinity on {key:?} {where_} lets this pod block every matching pod there from a whole {domain}; allowed keys: kubernetes.io/hostname")
    };
    type Case = (&'static str, Vec<Value>, Vec<(Action, String)>);
    let cases: Vec<Case> = vec![
        (
            "hostname is allowed",
            vec![term(
                "kubernetes.io/hostname",
                json!({"namespaceSelector": {}}),
            )],
            vec![],
        ),
        (
            "a null labelSelector matches no pod: nothing blocked, however wide",
            vec![json!({"topologyKey": ZONE, "namespaceSelector": {}})],
            vec![],
        ),
        (
            "a null labelSelector with an empty topologyKey: still refused by the apiserver",
            vec![json!({"topologyKey": "", "namespaceSelector": {}})],
            vec![
                (Action::Deny, format!("{TERM0}.topologyKey: Required value: can not be empty")),
                (Action::Deny, format!("{TERM0}.topologyKey: Invalid value: \"\": name part must be non-empty")),
                (Action::Deny, format!("{TERM0}.topologyKey: Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")),
            ],
        ),
        (
            "an empty labelSelector matches every pod: denied",
            vec![json!({"labelSelector": {}, "topologyKey": ZONE, "namespaceSelector": {}})],
            vec![(Action::Deny, cluster_msg("spec", 0, ZONE, "zone"))],
        ),
        (
            "an empty topologyKey: the apiserver's errors, not a wide topology",
            vec![term("", json!({}))],
            vec![
                (Action::Deny, format!("{TERM0}.topologyKey: Required value: can not be empty")),
                (Action::Deny, format!("{TERM0}.topologyKey: Invalid value: \"\": name part must be non-empty")),
                (Action::Deny, format!("{TERM0}.topologyKey: Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")),
            ],
        ),
        (
            "a topologyKey with a space: Invalid value",
            vec![term(" kubernetes.io/hostname", json!({"namespaceSelector": {}}))],
            vec![
                (Action::Deny, format!("{TERM0}.topologyKey: Invalid value: \" kubernetes.io/hostname\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")),
            ],
        ),
        (
            "empty namespaceSelector spans all namespaces: denied",
            vec![term(ZONE, json!({"namespaceSelector": {}}))],
            vec![(Action::Deny, cluster_msg("spec", 0, ZONE, "zone"))],
        ),
        (
            "Exists on the namespace name label spans all namespaces: denied",
            vec![term(
                ZONE,
                json!({"namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "Exists"}]}}),
            )],
            vec![(Action::Deny, cluster_msg("spec", 0, ZONE, "zone"))],
        ),
        (
            "every namespace but a few (NotIn on the name) spans all namespaces: denied",
            vec![term(
                ZONE,
                json!({"namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "a-namespace-created-later"]}]}}),
            )],
            vec![(Action::Deny, cluster_msg("spec", 0, ZONE, "zone"))],
        ),
        (
            "DoesNotExist on a label new namespaces lack spans all namespaces: denied",
            vec![term(
                ZONE,
                json!({"namespaceSelector": {"matchExpressions": [{"key": "no-such-label", "operator": "DoesNotExist"}]}}),
            )],
            vec![(Action::Deny, cluster_msg("spec", 0, ZONE, "zone"))],
        ),
        (
            "NotIn on a label plus a label an administrator sets: warned",
            vec![term(
                ZONE,
                json!({"namespaceSelector": {"matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]},
                    {"key": "team", "operator": "Exists"}
                ]}}),
            )],
            vec![(
                Action::Warn,
                ns_msg(
                    0,
                    ZONE,
                    "in the namespaces its namespaceSelector selects",
                    "zone",
                ),
            )],
        ),
        (
            "namespaces named by the selector: warned",
            vec![term(
                ZONE,
                json!({"namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["a", "b"]}]}}),
            )],
            vec![(
                Action::Warn,
                ns_msg(
                    0,
                    ZONE,
                    "in the namespaces its namespaceSelector selects",
                    "zone",
                ),
            )],
        ),
        (
            "region across all namespaces says region",
            vec![term(
                "topology.kubernetes.io/region",
                json!({"namespaceSelector": {}}),
            )],
            vec![(
                Action::Deny,
                cluster_msg("spec", 0, "topology.kubernetes.io/region", "region"),
            )],
        ),
        (
            "own namespace: warned",
            vec![term(ZONE, json!({}))],
            vec![(
                Action::Warn,
                ns_msg(0, ZONE, "in namespace \"demo\"", "zone"),
            )],
        ),
        (
            "namespaces: [] without selector is the own namespace",
            vec![term(ZONE, json!({"namespaces": []}))],
            vec![(
                Action::Warn,
                ns_msg(0, ZONE, "in namespace \"demo\"", "zone"),
            )],
        ),
        (
            "a namespaces list: warned",
            vec![term(ZONE, json!({"namespaces": ["a", "b"]}))],
            vec![(Action::Warn, ns_msg(0, ZONE, "in namespaces a, b", "zone"))],
        ),
        (
            "a narrower namespaceSelector: warned",
            vec![term(
                ZONE,
                json!({"namespaceSelector": {"matchLabels": {"team": "x"}}}),
            )],
            vec![(
                Action::Warn,
                ns_msg(
                    0,
                    ZONE,
                    "in the namespaces its namespaceSelector selects",
                    "zone",
                ),
            )],
        ),
        (
            "a custom key is a topology domain",
            vec![term("example.com/rack", json!({}))],
            vec![(
                Action::Warn,
                ns_msg(
                    0,
                    "example.com/rack",
                    "in namespace \"demo\"",
                    "topology domain",
                ),
            )],
        ),
        (
            "exact comparison: another case is not the hostname key",
            vec![term("kubernetes.io/Hostname", json!({}))],
            vec![(
                Action::Warn,
                ns_msg(
                    0,
                    "kubernetes.io/Hostname",
                    "in namespace \"demo\"",
                    "topology domain",
                ),
            )],
        ),
        (
            "every flagged term is reported with its index",
            vec![
                term("kubernetes.io/hostname", json!({})),
                term(ZONE, json!({"namespaceSelector": {}})),
                term(ZONE, json!({})),
            ],
            vec![
                (Action::Deny, cluster_msg("spec", 1, ZONE, "zone")),
                (
                    Action::Warn,
                    ns_msg(2, ZONE, "in namespace \"demo\"", "zone"),
                ),
            ],
        ),
    ];
    for (name, terms, want) in cases {
        let obj = object(Kind::Pod, terms);
        assert_eq!(
            run(&r, Operation::Create, "demo", &obj, None),
            want,
            "{name}"
        );
    }
}

#[test]
fn every_action_of_both_scopes() {
    let wide_all = object(
        Kind::Deployment,
        vec![term(ZONE, json!({"namespaceSelector": {}}))],
    );
    let wide_own = object(Kind::Deployment, vec![term(ZONE, json!({}))]);
    for (cluster, namespace) in [
        (ScopeAction::Deny, ScopeAction::Deny),
        (ScopeAction::Warn, ScopeAction::Allow),
        (ScopeAction::Allow, ScopeAction::Warn),
        (ScopeAction::Allow, ScopeAction::Allow),
    ] {
        let r = rules(HardAntiAffinity {
            cluster_scope: cluster,
            namespace_scope: namespace,
            ..Default::default()
        });
        let got: Vec<Action> = run(&r, Operation::Create, "demo", &wide_all, None)
            .into_iter()
            .map(|f| f.0)
            .collect();
        assert_eq!(
            got,
            cluster.action().into_iter().collect::<Vec<_>>(),
            "cluster {cluster:?}"
        );
        let got: Vec<Action> = run(&r, Operation::Create, "demo", &wide_own, None)
            .into_iter()
            .map(|f| f.0)
            .collect();
        assert_eq!(
            got,
            namespace.action().into_iter().collect::<Vec<_>>(),
            "namespace {namespace:?}"
        );
    }
}

#[test]
fn allowed_keys_exemptions_and_operations() {
    let obj = object(
        Kind::Pod,
        vec![term(ZONE, json!({"namespaceSelector": {}}))],
    );
    // Zone allowed explicitly.
    let r = rules(HardAntiAffinity {
        allowed_topology_keys: vec!["kubernetes.io/hostname".into(), ZONE.into()],
        ..Default::default()
    });
    assert!(run(&r, Operation::Create, "demo", &obj, None).is_empty());
    // Exempt namespace: spared the policy, not the apiserver's refusal of an invalid key.
    let r = RuleSet::default();
    assert!(run(&r, Operation::Create, "kube-system", &obj, None).is_empty());
    let invalid = object(
        Kind::Pod,
        vec![term("a/b/c", json!({"namespaceSelector": {}}))],
    );
    let found = run(&r, Operation::Create, "kube-system", &invalid, None);
    assert_eq!(found.len(), 1, "{found:?}");
    // Disabled.
    let r = rules(HardAntiAffinity {
        enabled: false,
        ..Default::default()
    });
    assert!(run(&r, Operation::Create, "demo", &obj, None).is_empty());
    // DELETE is never checked.
    assert!(run(&RuleSet::default(), Operation::Delete, "demo", &obj, None).is_empty());
}

#[test]
fn updates_flag_only_new_terms() {
    let r = RuleSet::default();
    let old = object(
        Kind::Deployment,
        vec![term(ZONE, json!({"namespaceSelector": {}}))],
    );
    let same = object(
        Kind::Deployment,
        vec![term(ZONE, json!({"namespaceSelector": {}}))],
    );
    assert!(run(&r, Operation::Update, "demo", &same, Some(&old)).is_empty());
    let added = object(
        Kind::Deployment,
        vec![
            term(ZONE, json!({"namespaceSelector": {}})),
            term(
                "topology.kubernetes.io/region",
                json!({"namespaceSelector": {}}),
            ),
        ],
    );
    let got = run(&r, Operation::Update, "demo", &added, Some(&old));
    assert_eq!(
        got,
        vec![(
            Action::Deny,
            cluster_msg(
                "spec.template.spec",
                1,
                "topology.kubernetes.io/region",
                "region"
            )
        )]
    );
    let fresh = object(Kind::Deployment, vec![]);
    assert_eq!(
        run(&r, Operation::Update, "demo", &old, Some(&fresh)).len(),
        1
    );
    // onUpdate: allTerms judges every term on every update, as LimitPodHardAntiAffinityTopology.
    let all = rules(HardAntiAffinity {
        on_update: super::OnUpdate::AllTerms,
        ..HardAntiAffinity::default()
    });
    assert_eq!(
        run(&all, Operation::Update, "demo", &same, Some(&old)).len(),
        1
    );
    assert_eq!(
        run(&all, Operation::Update, "demo", &added, Some(&old)).len(),
        2
    );
    let loaded = RuleSet::from_yaml(
        "r.yaml",
        "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  hardAntiAffinity:\n    onUpdate: allTerms\n",
    )
    .unwrap();
    assert_eq!(
        loaded.spec.hard_anti_affinity.on_update,
        super::OnUpdate::AllTerms
    );
    let err = RuleSet::from_yaml(
        "r.yaml",
        "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  hardAntiAffinity:\n    onUpdate: always\n",
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("expected one of newTermsOnly, allTerms"),
        "{err}"
    );
}

#[test]
fn preferred_anti_affinity_and_pod_affinity_are_never_flagged() {
    let v = json!({"spec": {"affinity": {
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": term(ZONE, json!({"namespaceSelector": {}}))}]},
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(ZONE, json!({"namespaceSelector": {}}))]}
    }}});
    let obj = parse_value(Kind::Pod, &v).unwrap();
    assert!(run(&RuleSet::default(), Operation::Create, "demo", &obj, None).is_empty());
}

#[test]
fn denial_messages_with_hints() {
    let obj = object(
        Kind::Deployment,
        vec![
            term("kubernetes.io/hostname", json!({})),
            term(ZONE, json!({"namespaceSelector": {}})),
            term(
                "topology.kubernetes.io/region",
                json!({"namespaces": ["demo", "other"]}),
            ),
        ],
    );
    let input = Input {
        phase: Phase::Validate,
        operation: Operation::Create,
        namespace: "demo",
        user: User::default(),
        object: crate::rules::Subject::Template(&obj),
        old_object: None,
        context: Default::default(),
    };
    let v = evaluate(&input, &RuleSet::default());
    let out = format!(
        "message: {}\nwarnings:\n{}\n",
        v.denial_message().unwrap_or_default(),
        v.warnings().join("\n")
    );
    insta::assert_snapshot!(out);
}

#[test]
fn keys_are_quoted_as_debug_quotes_them() {
    for s in [
        "",
        "topology.kubernetes.io/zone",
        "a b",
        "say \"hi\"",
        "back\\slash",
        "tab\there",
        "new\nline",
        "zoné",
        "\u{7f}",
        "\u{200b}",
        "'",
    ] {
        let mut out = String::new();
        super::push_debug(&mut out, s);
        assert_eq!(out, format!("{s:?}"), "{s}");
    }
}
