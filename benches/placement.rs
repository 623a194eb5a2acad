//! The placement core per pod, on kube-scheduler's own plugin benchmark shapes: 1,000 nodes in
//! 10 zones and 10,000 bound pods, plus a large cluster (5,000 nodes, 30 zones, 150,000 pods).
//! Building the snapshot is measured separately. Run with `cargo bench --bench placement`.

// Test and benchmark helpers fail loudly on broken fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, HashMap};

use criterion::{criterion_group, criterion_main, Criterion};
use placement_guard::core::cluster::{BoundPod, Cluster, Node, PodUsage};
use placement_guard::core::filter::evaluate;
use placement_guard::k8s::workload::{parse_value, Kind};
use serde_json::{json, Value};

const ZONE: &str = "topology.kubernetes.io/zone";
const HOST: &str = "kubernetes.io/hostname";

fn build(nodes: usize, zones: usize, pods: usize, odd_bar: bool, anti_every: usize) -> Cluster {
    let ns: Vec<Node> = (0..nodes)
        .map(|i| {
            let mut labels = BTreeMap::new();
            labels.insert(HOST.to_string(), format!("node{i}"));
            labels.insert(ZONE.to_string(), format!("zone{}", i % zones));
            Node {
                name: format!("node{i}"),
                labels,
                ..Default::default()
            }
        })
        .collect();
    let mut c = Cluster::new(ns, HashMap::new()).unwrap();
    for j in 0..pods {
        let n = j % nodes;
        let mut labels = BTreeMap::new();
        labels.insert("foo".to_string(), String::new());
        if odd_bar && n % 2 == 1 {
            labels.insert("bar".to_string(), String::new());
        }
        let anti_affinity = if anti_every > 0 && j % anti_every == 0 {
            vec![serde_json::from_value(
                json!({"labelSelector": {"matchLabels": {"app": "other"}}, "topologyKey": HOST}),
            )
            .unwrap()]
        } else {
            Vec::new()
        };
        c.add_pod(
            &format!("node{n}"),
            BoundPod {
                name: format!("p{j}"),
                namespace: "default".into(),
                labels,
                usage: PodUsage {
                    anti_affinity,
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .unwrap();
    }
    c
}

fn exists(key: &str) -> Value {
    json!({"matchExpressions": [{"key": key, "operator": "Exists"}]})
}

fn spread(key: &str, sel: &str) -> Value {
    json!({"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": exists(sel)})
}

fn pod(spec: Value) -> placement_guard::k8s::workload::PodTemplate {
    parse_value(
        Kind::Pod,
        &json!({"metadata": {"name": "incoming", "labels": {"foo": ""}}, "spec": spec}),
    )
    .unwrap()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("snapshot");
    g.sample_size(10);
    g.bench_function("build 1000 nodes / 10000 pods", |b| {
        b.iter(|| build(1000, 10, 10_000, true, 0))
    });
    g.finish();

    let cluster = build(1000, 10, 10_000, true, 0);
    let shapes = [
        (
            "spread zone",
            pod(json!({"topologySpreadConstraints": [spread(ZONE, "foo")]})),
        ),
        (
            "spread hostname",
            pod(json!({"topologySpreadConstraints": [spread(HOST, "foo")]})),
        ),
        (
            "spread zone + hostname",
            pod(json!({"topologySpreadConstraints": [spread(ZONE, "foo"), spread(HOST, "bar")]})),
        ),
        (
            "affinity zone",
            pod(
                json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": exists("foo"), "topologyKey": ZONE}]}}}),
            ),
        ),
        (
            "anti-affinity hostname",
            pod(
                json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": exists("foo"), "topologyKey": HOST}]}}}),
            ),
        ),
    ];
    let mut g = c.benchmark_group("per pod, 1000 nodes / 10000 pods");
    for (name, p) in &shapes {
        g.bench_function(*name, |b| b.iter(|| evaluate(&cluster, p, "default")));
    }
    g.finish();

    let large = build(5000, 30, 150_000, true, 100);
    let p = pod(json!({
        "topologySpreadConstraints": [spread(ZONE, "foo"), spread(HOST, "foo")],
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": exists("baz"), "topologyKey": HOST}]}}
    }));
    let mut g = c.benchmark_group("per pod, 5000 nodes / 150000 pods");
    g.sample_size(20);
    g.bench_function("2 spread constraints + anti-affinity", |b| {
        b.iter(|| evaluate(&large, &p, "default"))
    });
    g.finish();
    feasibility(c, &large);
}

/// The `feasibility` rule's whole evaluation (what `serve --cluster-aware` adds to a request),
/// next to the same request without a cluster as the baseline.
fn feasibility(c: &mut Criterion, large: &Cluster) {
    use placement_guard::rules::{
        evaluate as judge, ClusterState, Context, Input, Operation, Phase, RuleSet, Subject, User,
    };
    let gates = json!([{"name": "kueue.x-k8s.io/admission"}]);
    let gated = |mut spec: Value| {
        spec["schedulingGates"] = gates.clone();
        pod(spec)
    };
    let old = gated(json!({}));
    let zone = |z: &str| json!({"nodeSelector": {ZONE: z}});
    let one_host = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": ZONE, "operator": "NotIn", "values": ["zone0", "zone1"]}, {"key": HOST, "operator": "In", "values": ["node4999"]}]}]}}}});
    let not_in = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": ZONE, "operator": "NotIn", "values": ["zone0", "zone1"]}]}]}}}});
    let cases = [
        (
            "tightened to a zone (fits)",
            gated(zone("zone7")),
            Some(&old),
        ),
        (
            "tightened to one host by In (fits)",
            gated(one_host),
            Some(&old),
        ),
        (
            "tightened by NotIn only (fits, no index)",
            gated(not_in),
            Some(&old),
        ),
        (
            "tightened to a missing zone (no node: summary)",
            gated(zone("zone-x")),
            Some(&old),
        ),
        ("pod create (fits)", pod(zone("zone3")), None),
        (
            "ungated: full filter set (spread + anti-affinity)",
            pod(json!({
                "nodeSelector": {ZONE: "zone7"},
                "topologySpreadConstraints": [spread(ZONE, "foo"), spread(HOST, "foo")],
                "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": exists("baz"), "topologyKey": HOST}]}}
            })),
            Some(&old),
        ),
    ];
    let rules = RuleSet::default();
    let mut g = c.benchmark_group("feasibility, 5000 nodes / 150000 pods");
    for (name, new, old) in &cases {
        for (state, label) in [
            (ClusterState::Absent, "without cluster"),
            (ClusterState::Ready(large), "cluster-aware"),
        ] {
            let input = Input {
                phase: Phase::Validate,
                operation: if old.is_some() {
                    Operation::Update
                } else {
                    Operation::Create
                },
                namespace: "default",
                user: User::default(),
                object: Subject::Template(new),
                old_object: old.map(Subject::Template),
                context: Context {
                    cluster: state,
                    ..Context::default()
                },
            };
            g.bench_function(format!("{name}, {label}"), |b| {
                b.iter(|| judge(&input, &rules))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
