use std::collections::{BTreeMap, HashMap};

use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::core::cluster::LabelSet;
use crate::core::snapshot::Builder;

fn slim(v: Value) -> SlimObject {
    serde_json::from_value(v).unwrap()
}

fn node(name: &str, zone: &str) -> SlimObject {
    slim(json!({"metadata": {"name": name, "labels": {"zone": zone}},
                "status": {"allocatable": {"cpu": "4", "pods": "110"}}}))
}

fn pod(name: &str, node: &str, app: &str, cpu: &str) -> SlimObject {
    slim(
        json!({"metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
                "spec": {"nodeName": node, "containers": [{"resources": {"requests": {"cpu": cpu}}}]}}),
    )
}

/// Everything the filters read, by name rather than by index, so that two clusters built in
/// different orders compare equal.
/// Per node: labels, pod count, requested CPU, live label sets with their counts.
type NodeCanon = (
    BTreeMap<String, String>,
    u32,
    i64,
    Vec<(LabelSet, u32, u32)>,
);

#[derive(Debug, PartialEq)]
struct Canon {
    nodes: BTreeMap<String, NodeCanon>,
    anti: Vec<(String, LabelSet, String)>,
    namespaces: BTreeMap<String, BTreeMap<String, String>>,
}

fn canon(c: &Cluster) -> Canon {
    let mut nodes = BTreeMap::new();
    for (i, n) in c.nodes.iter().enumerate() {
        let mut groups: Vec<(LabelSet, u32, u32)> = c.groups_by_node[i]
            .iter()
            .map(|g| (c.label_sets[g.set].clone(), g.live, g.terminating))
            .collect();
        groups.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
        nodes.insert(
            n.name.clone(),
            (
                n.labels.clone(),
                c.usage[i].pods,
                c.usage[i].requested.milli_cpu,
                groups,
            ),
        );
        // The label index agrees with the nodes' labels.
        for (k, v) in &n.labels {
            assert!(
                c.nodes_with(k, v).contains(&(i as u32)),
                "{k}={v} on {}",
                n.name
            );
        }
    }
    for (i, n) in c.nodes.iter().enumerate() {
        for (v, ns) in c.label_values("zone") {
            assert_eq!(
                ns.contains(&(i as u32)),
                n.labels.get("zone").map(String::as_str) == Some(v),
                "index of {}",
                n.name
            );
        }
    }
    let mut anti: Vec<_> = c
        .anti_terms
        .iter()
        .map(|(n, s, t)| {
            (
                c.nodes[*n].name.clone(),
                c.label_sets[*s].clone(),
                format!("{t:?}"),
            )
        })
        .collect();
    anti.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    Canon {
        nodes,
        anti,
        namespaces: c
            .namespaces
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    }
}

/// The same objects read once, as a dump is.
fn fresh(nodes: &[SlimObject], pods: &[SlimObject], namespaces: &[SlimObject]) -> Cluster {
    let mut b = Builder::new(true);
    for (kind, objs) in [("Node", nodes), ("Pod", pods), ("Namespace", namespaces)] {
        for o in objs {
            b.push(o.clone(), Some(kind)).unwrap();
        }
    }
    b.finish().unwrap().0
}

#[test]
fn pods_wait_for_their_node_and_updates_are_undone_exactly() {
    let mut s = Store::default();
    s.apply(Resource::Pods, Event::Apply(pod("a", "n1", "web", "1")));
    assert_eq!(s.waiting_pods(), 1);
    assert_eq!(s.len(Resource::Pods), 1);
    s.apply(Resource::Nodes, Event::Apply(node("n1", "z1")));
    s.apply(Resource::Nodes, Event::Apply(node("n2", "z2")));
    assert_eq!(s.waiting_pods(), 0);
    assert_eq!(s.cluster().usage[0].requested.milli_cpu, 1000);
    // A status-only update changes nothing; a relabel moves the pod to another set.
    s.apply(Resource::Pods, Event::Apply(pod("a", "n1", "web", "1")));
    s.apply(Resource::Pods, Event::Apply(pod("a", "n1", "api", "2")));
    assert_eq!(s.cluster().usage[0].pods, 1);
    assert_eq!(s.cluster().usage[0].requested.milli_cpu, 2000);
    let live: Vec<_> = s.cluster().groups_by_node[0]
        .iter()
        .map(|g| (s.cluster().label_sets[g.set].labels["app"].clone(), g.live))
        .collect();
    assert_eq!(live, vec![("api".to_string(), 1)]);
    // The freed set's slot is reused rather than grown.
    s.apply(Resource::Pods, Event::Apply(pod("b", "n2", "db", "1")));
    assert_eq!(s.cluster().label_sets.len(), 2);
    // Deleting a node un-places its pods until it comes back; the other node is renumbered.
    s.apply(Resource::Nodes, Event::Delete(node("n1", "z1")));
    assert_eq!(s.waiting_pods(), 1);
    assert_eq!(s.cluster().nodes.len(), 1);
    assert_eq!(s.cluster().nodes_with("zone", "z2"), &[0]);
    assert!(s.cluster().nodes_with("zone", "z1").is_empty());
    s.apply(Resource::Nodes, Event::Apply(node("n1", "z9")));
    assert_eq!(s.waiting_pods(), 0);
    assert_eq!(
        canon(s.cluster()),
        canon(&fresh(
            &[node("n2", "z2"), node("n1", "z9")],
            &[pod("a", "n1", "api", "2"), pod("b", "n2", "db", "1")],
            &[]
        ))
    );
}

#[test]
fn a_relist_drops_what_it_did_not_see() {
    let mut s = Store::default();
    for n in ["n1", "n2"] {
        s.apply(Resource::Nodes, Event::Apply(node(n, "z")));
    }
    s.apply(Resource::Pods, Event::Apply(pod("a", "n1", "web", "1")));
    s.apply(Resource::Pods, Event::Apply(pod("b", "n2", "web", "1")));
    s.apply(
        Resource::Namespaces,
        Event::Apply(slim(json!({"metadata": {"name": "old"}}))),
    );
    s.apply(Resource::Pods, Event::Relist);
    s.apply(Resource::Pods, Event::Apply(pod("b", "n2", "web", "1")));
    s.apply(Resource::Pods, Event::RelistDone);
    s.apply(Resource::Namespaces, Event::Relist);
    s.apply(Resource::Namespaces, Event::RelistDone);
    s.apply(Resource::Nodes, Event::Relist);
    s.apply(Resource::Nodes, Event::Apply(node("n2", "z")));
    s.apply(Resource::Nodes, Event::RelistDone);
    assert_eq!(
        (
            s.len(Resource::Nodes),
            s.len(Resource::Pods),
            s.len(Resource::Namespaces)
        ),
        (1, 1, 0)
    );
    assert_eq!(
        canon(s.cluster()),
        canon(&fresh(
            &[node("n2", "z")],
            &[pod("b", "n2", "web", "1")],
            &[]
        ))
    );
}

#[derive(Clone, Debug)]
enum Op {
    Node(u8, u8),
    DeleteNode(u8),
    Pod(u8, u8, u8, bool, bool),
    DeletePod(u8),
    Finish(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..4u8, 0..3u8).prop_map(|(n, z)| Op::Node(n, z)),
        (0..4u8).prop_map(Op::DeleteNode),
        (0..8u8, 0..4u8, 0..3u8, any::<bool>(), any::<bool>())
            .prop_map(|(p, n, a, t, anti)| Op::Pod(p, n, a, t, anti)),
        (0..8u8).prop_map(Op::DeletePod),
        (0..8u8).prop_map(Op::Finish),
    ]
}

fn pod_obj(p: u8, n: u8, app: u8, terminating: bool, anti: bool, phase: &str) -> SlimObject {
    let mut v = json!({"metadata": {"name": format!("p{p}"), "namespace": "default",
                                    "labels": {"app": format!("a{app}")}},
                       "spec": {"nodeName": format!("n{n}"),
                                "containers": [{"resources": {"requests": {"cpu": format!("{}m", 100 + p as u32)}}}]},
                       "status": {"phase": phase}});
    if terminating {
        v["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    }
    if anti {
        v["spec"]["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": format!("a{app}")}}, "topologyKey": "zone"}]}});
    }
    slim(v)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Whatever the order of events, the store equals a snapshot read once from the objects
    /// that exist at the end.
    #[test]
    fn events_agree_with_a_fresh_read(ops in proptest::collection::vec(op(), 0..60)) {
        let mut s = Store::default();
        let mut nodes: HashMap<u8, SlimObject> = HashMap::new();
        let mut pods: HashMap<u8, SlimObject> = HashMap::new();
        for o in ops {
            match o {
                Op::Node(n, z) => {
                    let obj = node(&format!("n{n}"), &format!("z{z}"));
                    nodes.insert(n, obj.clone());
                    s.apply(Resource::Nodes, Event::Apply(obj));
                }
                Op::DeleteNode(n) => {
                    nodes.remove(&n);
                    s.apply(Resource::Nodes, Event::Delete(node(&format!("n{n}"), "")));
                }
                Op::Pod(p, n, a, t, anti) => {
                    let obj = pod_obj(p, n, a, t, anti, "Running");
                    pods.insert(p, obj.clone());
                    s.apply(Resource::Pods, Event::Apply(obj));
                }
                Op::DeletePod(p) => {
                    pods.remove(&p);
                    s.apply(Resource::Pods, Event::Delete(pod_obj(p, 0, 0, false, false, "")));
                }
                Op::Finish(p) => {
                    let obj = pod_obj(p, 0, 0, false, false, "Succeeded");
                    pods.insert(p, obj.clone());
                    s.apply(Resource::Pods, Event::Apply(obj));
                }
            }
        }
        let nodes: Vec<_> = nodes.into_values().collect();
        let pods: Vec<_> = pods.into_values().collect();
        prop_assert_eq!(canon(s.cluster()), canon(&fresh(&nodes, &pods, &[])));
        // Every label set still referenced is live; the rest were freed.
        let live = s.cluster().label_sets.iter().filter(|l| !l.labels.is_empty()).count();
        prop_assert!(live <= s.len(Resource::Pods));
    }
}

/// RuntimeClasses follow their events (an update replaces, a delete removes, a re-list drops
/// what it did not see) and end as a dump of the same objects reads them.
#[test]
fn runtime_classes_follow_their_events() {
    let rc = |name: &str, zone: &str| {
        slim(
            json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name},
                    "handler": "runsc", "scheduling": {"nodeSelector": {"zone": zone}}}),
        )
    };
    let mut s = Store::default();
    for e in [
        Event::Apply(rc("gvisor", "a")),
        Event::Apply(rc("kata", "b")),
        Event::Apply(rc("gvisor", "c")),
        Event::Apply(rc("wasm", "d")),
        Event::Delete(rc("kata", "b")),
    ] {
        s.apply(Resource::RuntimeClasses, e);
    }
    let mut b = Builder::new(true);
    for o in [rc("gvisor", "c"), rc("wasm", "d")] {
        b.push(o, Some("RuntimeClass")).unwrap();
    }
    assert_eq!(
        s.cluster().runtime_classes,
        b.finish().unwrap().0.runtime_classes
    );
    let selector = s.cluster().runtime_classes["gvisor"]
        .scheduling
        .as_ref()
        .and_then(|s| s.node_selector.clone());
    assert_eq!(
        selector,
        Some(BTreeMap::from([("zone".into(), "c".into())]))
    );
    assert_eq!(s.len(Resource::RuntimeClasses), 2);

    s.apply(Resource::RuntimeClasses, Event::Relist);
    s.apply(Resource::RuntimeClasses, Event::Apply(rc("wasm", "d")));
    s.apply(Resource::RuntimeClasses, Event::RelistDone);
    let names: Vec<&String> = s.cluster().runtime_classes.keys().collect();
    assert_eq!(names, ["wasm"]);
}
