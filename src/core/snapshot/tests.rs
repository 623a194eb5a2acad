use super::*;
use crate::core::cluster::Group;

const JSON_DUMP: &str = r#"{"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": [
  {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "early", "namespace": "web", "labels": {"app": "web"},
    "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}]},
   "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}},
     "ports": [{"containerPort": 80, "hostPort": 8080}]}]},
   "status": {"phase": "Running", "containerStatuses": [{"name": "c", "ready": true}]}},
  {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"zone": "a"}},
   "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
   "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110", "nvidia.com/gpu": "1"}, "capacity": {"cpu": "2"}}},
  {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}, "spec": {"unschedulable": true}},
  {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-2", "namespace": "web", "labels": {"app": "web"}},
   "spec": {"nodeName": "n1", "containers": [{"resources": {"limits": {"cpu": "1"}}}],
     "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}}}]}}}},
  {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gone", "namespace": "web", "labels": {"app": "web"}, "deletionTimestamp": "2026-01-01T00:00:00Z"},
   "spec": {"nodeName": "n1", "containers": [{"resources": {"requests": {"cpu": "100m"}}}]}},
  {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "done", "namespace": "web"}, "spec": {"nodeName": "n1", "containers": [{"resources": {"requests": {"cpu": "9"}}}]}, "status": {"phase": "Succeeded"}},
  {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pending", "namespace": "web"}, "spec": {"containers": [{}]}},
  {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web", "labels": {"team": "a"}}}
]}"#;

/// The same cluster as YAML: a List split over two documents, plus a lone object.
const YAML_DUMP: &str = r#"
apiVersion: v1
kind: List
items:
- kind: Pod
  metadata: {name: early, namespace: web, labels: {app: web}}
  spec:
    nodeName: n1
    containers:
    - resources: {requests: {cpu: 250m, memory: 64Mi}}
      ports: [{containerPort: 80, hostPort: 8080}]
- kind: Node
  metadata: {name: n1, labels: {zone: a}}
  spec:
    taints: [{key: k, value: v, effect: NoSchedule}]
  status:
    allocatable: {cpu: "2", memory: 4Gi, pods: "110", nvidia.com/gpu: "1"}
- kind: Node
  metadata: {name: n2}
  spec: {unschedulable: true}
---
kind: Pod
metadata: {name: web-2, namespace: web, labels: {app: web}}
spec:
  nodeName: n1
  containers: [{resources: {limits: {cpu: "1"}}}]
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {topologyKey: zone, labelSelector: {matchLabels: {app: web}}}
---
apiVersion: v1
kind: List
items:
- kind: Pod
  metadata: {name: gone, namespace: web, labels: {app: web}, deletionTimestamp: "2026-01-01T00:00:00Z"}
  spec: {nodeName: n1, containers: [{resources: {requests: {cpu: 100m}}}]}
- kind: Pod
  metadata: {name: done, namespace: web}
  spec: {nodeName: n1, containers: [{resources: {requests: {cpu: "9"}}}]}
  status: {phase: Succeeded}
- kind: Pod
  metadata: {name: pending, namespace: web}
  spec: {containers: [{}]}
- kind: Namespace
  metadata: {name: web, labels: {team: a}}
"#;

fn check(c: &Cluster, counts: &Counts) {
    assert_eq!(
        *counts,
        Counts {
            nodes: 2,
            pods: 5,
            unbound_pods: 2,
            namespaces: 1,
            orphan_pods: 0,
            other_objects: 0,
            runtime_classes: 0,
            limit_ranges: 0
        }
    );
    let n1 = c.node_index("n1").unwrap();
    let node = &c.nodes[n1];
    assert_eq!(node.taints.len(), 1);
    let alloc = node.allocatable.as_ref().unwrap();
    assert_eq!(alloc.pods, 110);
    assert_eq!(alloc.resources.milli_cpu, 2000);
    assert_eq!(alloc.resources.memory, 4 << 30);
    assert_eq!(alloc.resources.scalar["nvidia.com/gpu"], 1);
    assert!(c.nodes[c.node_index("n2").unwrap()].unschedulable);
    assert!(c.nodes[c.node_index("n2").unwrap()].allocatable.is_none());
    // Three bound pods take n1's resources, the terminating one included; the finished and the
    // pending pod take nothing. A limit without a request counts as the request.
    let u = &c.usage[n1];
    assert_eq!(u.pods, 3);
    assert_eq!(u.requested.milli_cpu, 250 + 1000 + 100);
    assert_eq!(u.requested.memory, 64 << 20);
    assert_eq!(u.host_ports.len(), 1);
    assert_eq!(u.host_ports[0].port, 8080);
    // The two live pods of web and the terminating one share one label set; spreading counts
    // the live ones, inter-pod affinity all three.
    assert_eq!(c.label_sets.len(), 1);
    assert_eq!(
        c.groups_by_node[n1],
        vec![Group {
            set: 0,
            live: 2,
            terminating: 1
        }]
    );
    assert_eq!(c.anti_terms.len(), 1);
    assert_eq!(
        c.namespace_labels("web")["kubernetes.io/metadata.name"],
        "web"
    );
}

#[test]
fn json_and_yaml_dumps_give_the_same_snapshot() {
    let (c, counts) = read_dump(JSON_DUMP.as_bytes(), false).unwrap();
    check(&c, &counts);
    let (c, counts) = read_dump(YAML_DUMP.as_bytes(), false).unwrap();
    check(&c, &counts);
    // Concatenated JSON values are documents too.
    let two = format!(
        "{JSON_DUMP}\n{}",
        r#"{"kind": "Node", "metadata": {"name": "n3"}}"#
    );
    let (c, _) = read_dump(two.as_bytes(), false).unwrap();
    assert_eq!(c.nodes.len(), 3);
    // Empty input is an empty cluster.
    let (c, counts) = read_dump(&b"  \n"[..], false).unwrap();
    assert!(c.nodes.is_empty() && counts == Counts::default());
}

#[test]
fn a_pod_can_be_taken_off_its_node_again() {
    let (mut c, _) = read_dump(JSON_DUMP.as_bytes(), false).unwrap();
    let n1 = c.node_index("n1").unwrap();
    let spec = PodSpec {
        containers: vec![Container {
            resources: Some(k8s_openapi::api::core::v1::ResourceRequirements {
                limits: Some([("cpu".to_string(), Quantity("1".into()))].into_iter().collect()),
                ..Default::default()
            }),
            ..Default::default()
        }],
        affinity: serde_json::from_value(serde_json::json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}}}]}})).unwrap(),
        ..Default::default()
    };
    let labels: BTreeMap<String, String> = [("app".to_string(), "web".to_string())].into();
    let pod = bound_pod("web-2".into(), "web".into(), labels, false, &spec, None);
    // Not on n2 (its pods have other labels): nothing is taken there.
    let n2 = c.node_index("n2").unwrap();
    let before = (c.usage[n2].pods, c.groups_by_node[n2].clone());
    assert!(!c.remove_pod("n2", &pod).unwrap());
    assert_eq!((c.usage[n2].pods, c.groups_by_node[n2].clone()), before);
    assert!(c.remove_pod("n1", &pod).unwrap());
    assert_eq!(c.usage[n1].pods, 2);
    assert_eq!(c.usage[n1].requested.milli_cpu, 350);
    assert_eq!(
        c.groups_by_node[n1],
        vec![Group {
            set: 0,
            live: 1,
            terminating: 1
        }]
    );
    assert!(c.anti_terms.is_empty());
}

#[test]
fn pages_of_typed_lists() {
    let page = br#"{"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "12", "continue": "abc"},
        "items": [{"metadata": {"name": "p", "namespace": "d"}, "spec": {"nodeName": "n"}}]}"#;
    let mut b = Builder::new(true);
    assert_eq!(
        read_page(page, "Pod", &mut b).unwrap().as_deref(),
        Some("abc")
    );
    let nodes = br#"{"kind": "NodeList", "metadata": {"continue": ""}, "items": [{"metadata": {"name": "n"}}]}"#;
    assert_eq!(read_page(nodes, "Node", &mut b).unwrap(), None);
    let orphan = br#"{"items": [{"metadata": {"name": "q", "namespace": "d"}, "spec": {"nodeName": "gone"}}]}"#;
    read_page(orphan, "Pod", &mut b).unwrap();
    let (c, counts) = b.finish().unwrap();
    assert_eq!(c.usage[0].pods, 1);
    assert_eq!((counts.pods, counts.orphan_pods), (2, 1));
    let err = read_page(b"{\"items\": [1]}", "Pod", &mut Builder::new(true)).unwrap_err();
    assert!(err.contains("line 1 column"), "{err}");
}

/// A node without `status.allocatable`: from the API server (its kubelet has not posted it) it
/// has nothing to give, as kube-scheduler sees it ("Too many pods", then the requests that do
/// not fit); in a dump it is hand-written, and its resources are not checked.
#[test]
fn a_listed_node_without_allocatable_has_none() {
    use crate::core::filter;
    use crate::k8s::workload::{parse_value, Kind};
    let nodes = br#"{"kind": "NodeList", "metadata": {"continue": ""}, "items": [{"metadata": {"name": "n"}}]}"#;
    let pod = parse_value(
        Kind::Pod,
        &serde_json::json!({"metadata": {"name": "p", "namespace": "d"}, "spec": {"containers": [
            {"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}}),
    )
    .unwrap();
    for (builder, want) in [
        (
            Builder::new(true).from_api(),
            vec![
                "NodeResourcesFit: Too many pods",
                "NodeResourcesFit: Insufficient cpu",
            ],
        ),
        (Builder::new(true), vec![]),
    ] {
        let mut b = builder;
        read_page(nodes, "Node", &mut b).unwrap();
        let (c, _) = b.finish().unwrap();
        let reasons: Vec<String> = filter::evaluate(&c, &pod, "d")[0]
            .reasons
            .iter()
            .map(|r| format!("{}: {}", r.plugin, r.message))
            .collect();
        assert_eq!(reasons, want);
    }
    // The watch cache reads its nodes as listed.
    assert_eq!(
        node_of(
            serde_json::from_str(r#"{"metadata": {"name": "n"}}"#).unwrap(),
            true
        )
        .allocatable,
        Some(crate::core::cluster::Allocatable::default())
    );
}

#[test]
fn bad_dumps_are_refused_with_the_reason_and_place() {
    let cases = [
        (
            "{\"kind\": \"List\", \"items\": [\n{\"metadata\": {\"name\": \"c\"}}]}",
            "an object without kind at line 2",
        ),
        (
            "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"p\", \"namespace\": \"d\"}, \"spec\": {\"nodeName\": \"ghost\"}}",
            "pod d/p is bound to node \"ghost\", which is not in the snapshot",
        ),
        (
            "{\"kind\": \"Node\", \"metadata\": {\"name\": \"n\", \"labels\": [1]}}",
            "Invalid value: a list: must be an object at line 1",
        ),
        ("{\"kind\": \"Node\", ", "line 1: the JSON ends inside a value"),
        ("[{\"kind\": \"Node\"}]", "a JSON dump is an object"),
        ("{\"kind\": \"List\", \"items\": [\n{\"kind\": \"Node\", \"metadata\": {\"name\": \"a\"}},\n 7]}", "line 3: expected an object as an item of `items`"),
        ("{\"kind\": \"List\", \"items\": [\n{\"kind\": \"Node\", \"metadata\": {\"name\": \"a\"}},\n\n{\"kind\": \"Node\",\n \"metadata\": {\"labels\": 5}}]}", "Invalid value: 5: must be an object at line 5"),
        // What the apiserver never stores: read as zero or as a node named "", it would
        // change verdicts.
        ("{\"kind\": \"List\", \"items\": [\n{\"kind\": \"Node\", \"status\": {}}]}", "a Node without metadata.name at line 2"),
        ("{\"kind\": \"Node\", \"metadata\": {\"name\": \"n\"}, \"status\": {\"allocatable\": {\"cpu\": \"lots\"}}}", "node \"n\": status.allocatable[cpu]: Invalid value: \"lots\": quantities must match the regular expression"),
        ("{\"kind\": \"Node\", \"metadata\": {\"name\": \"n\"}}}", "line 1: unexpected `}`"),
        ("{\"kind\": \"Pod\", \"metadata\": {\"name\": \"x1\", \"namespace\": \"d\"}, \"spec\": {\"nodeName\": \"n\", \"containers\": [{\"name\": \"a\"}, {\"name\": \"b\", \"resources\": {\"limits\": {\"cpu\": \"1\"}, \"requests\": {\"cpu\": \"1500q\"}}}]}}", "pod \"d/x1\": spec.containers[1].resources.requests[cpu]: Invalid value: \"1500q\": quantities must match"),
        ("{\"kind\": \"Pod\", \"metadata\": {\"name\": \"x1\"}, \"spec\": {\"nodeName\": \"n\", \"initContainers\": [{\"resources\": {\"limits\": {\"memory\": \"lots\"}}}]}}", "pod \"default/x1\": spec.initContainers[0].resources.limits[memory]: Invalid value: \"lots\": quantities must match"),
        ("{\"kind\": \"Pod\", \"metadata\": {\"name\": \"x1\"}, \"spec\": {\"nodeName\": \"n\", \"overhead\": {\"cpu\": \"1x\"}}}", "pod \"default/x1\": spec.overhead[cpu]: Invalid value: \"1x\""),
        ("{\"kind\": \"Pod\", \"metadata\": {\"name\": \"x1\"}, \"spec\": {\"nodeName\": \"n\", \"resources\": {\"requests\": {\"cpu\": \"\"}}}}", "pod \"default/x1\": spec.resources.requests[cpu]: Invalid value: \"\""),
    ];
    for (text, want) in cases {
        let err = read_dump(text.as_bytes(), false).unwrap_err();
        assert!(err.contains(want), "{text}: {err}");
    }
    // A pod that takes no room (finished, or not bound) is not read for its quantities.
    let finished = "{\"kind\": \"List\", \"items\": [{\"kind\": \"Node\", \"metadata\": {\"name\": \"n\"}},\n{\"kind\": \"Pod\", \"metadata\": {\"name\": \"done\"}, \"spec\": {\"nodeName\": \"n\", \"containers\": [{\"resources\": {\"requests\": {\"cpu\": \"lots\"}}}]}, \"status\": {\"phase\": \"Succeeded\"}},\n{\"kind\": \"Pod\", \"metadata\": {\"name\": \"pending\"}, \"spec\": {\"containers\": [{\"resources\": {\"requests\": {\"cpu\": \"lots\"}}}]}}]}";
    let (_, counts) = read_dump(finished.as_bytes(), false).unwrap();
    assert_eq!((counts.nodes, counts.pods), (1, 2));
    // The YAML reader's words, as the manifests say them.
    for (text, want) in [
        (
            "kind: Node\nmetadata: {name: n, labels: {a: }}\n",
            "Invalid value: null: must be a string at line 2",
        ),
        (
            "kind: Node\nmetadata: {name: n, name: m}\n",
            "Duplicate value: \"name\": a key may appear once in a mapping at line 2",
        ),
        (
            "kind: Node\nmetadata: {name: n}\nstatus: {allocatable: {memory: 1e400}}\n",
            "Invalid value: 1e400: a number too large to be read at line 3",
        ),
    ] {
        let err = read_dump(text.as_bytes(), false).unwrap_err();
        assert!(err.starts_with(want), "{text}: {err}");
    }
    let err = read_dump(&b"kind: Node\nmetadata:\n  labels: [1]\n"[..], false).unwrap_err();
    assert!(err.contains("line 3") || err.contains("3:"), "{err}");
    // Lenient reading counts the pod and goes on.
    let (_, counts) = read_dump(cases[1].0.as_bytes(), true).unwrap();
    assert_eq!(counts.orphan_pods, 1);
}

/// The JSON splitter cuts items at any chunk boundary, and brackets inside strings (escaped
/// quotes included) are not structure.
#[test]
fn json_items_are_cut_out_whatever_the_chunking() {
    let text = r#"{"kind": "List", "metadata": {"note": "items: [ { \" } ]"},
      "items": [
        {"kind": "Node", "metadata": {"name": "a\"}{[", "labels": {"k": "{v}"}}, "status": {"allocatable": {"pods": "3"}}},
        {"kind": "Pod", "metadata": {"name": "p", "namespace": "d", "annotations": {"x": "]}\\"}},
         "spec": {"nodeName": "a\"}{[", "containers": [{"resources": {"requests": {"cpu": "1"}}}]}}
      ]}
    {"kind": "Namespace", "metadata": {"name": "d", "labels": {"items": "[]"}}}"#;
    for cap in [1, 2, 3, 7, 64, 1 << 16] {
        let mut b = Builder::new(false);
        read_json(BufReader::with_capacity(cap, text.as_bytes()), &mut b).unwrap();
        let (c, counts) = b.finish().unwrap();
        assert_eq!(
            (counts.nodes, counts.pods, counts.namespaces),
            (1, 1, 1),
            "capacity {cap}"
        );
        assert_eq!(c.nodes[0].name, "a\"}{[");
        assert_eq!(c.nodes[0].labels["k"], "{v}");
        assert_eq!(c.usage[0].requested.milli_cpu, 1000);
        assert_eq!(c.namespace_labels("d")["items"], "[]");
    }
}

/// The splitter against serde_json reading the same text from a reader (the reference): the
/// same objects for any strings (brackets, quotes, escapes, non-ASCII) and any chunking.
mod splitter_agrees_with_serde {
    use super::*;
    use proptest::prelude::*;

    fn reference(text: &str) -> Result<(Cluster, Counts), String> {
        let objs = serde_json::Deserializer::from_str(text)
            .into_iter::<Doc>()
            .collect::<Result<Vec<Doc>, _>>()
            .map(objects_of)
            .map_err(|e| e.to_string())?;
        let mut b = Builder::new(false);
        for o in objs {
            b.push(o, None)?;
        }
        b.finish().map_err(|e| e.to_string())
    }

    pub(super) fn summary(c: &Cluster, n: &Counts) -> String {
        let nodes: Vec<String> = c
            .nodes
            .iter()
            .map(|n| format!("{}{:?}", n.name, n.labels))
            .collect();
        let mut ns: Vec<String> = c
            .namespaces
            .iter()
            .map(|(k, v)| format!("{k}{v:?}"))
            .collect();
        ns.sort();
        format!(
            "{n:?} {nodes:?} {ns:?} {:?} {:?}",
            c.label_sets, c.groups_by_node
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn same_snapshot(
            names in proptest::collection::vec("[a-z{}\\[\\]\"\\\\é ,:]{1,8}", 1..5),
            values in proptest::collection::vec("[a-z{}\\[\\]\"\\\\é ,:\n\t]{0,8}", 1..5),
            cap in 1usize..40,
            wrap_list in any::<bool>(),
        ) {
            let mut items = Vec::new();
            for (i, n) in names.iter().enumerate() {
                let labels: serde_json::Map<String, serde_json::Value> = values
                    .iter()
                    .enumerate()
                    .map(|(k, v)| (format!("k{k}{v}"), serde_json::Value::String(v.clone())))
                    .collect();
                items.push(serde_json::json!({"kind": "Node", "metadata": {"name": format!("{n}{i}"), "labels": labels}}));
                items.push(serde_json::json!({"kind": "Pod", "metadata": {"name": "p", "namespace": n, "labels": labels},
                    "spec": {"nodeName": format!("{n}{i}")}, "status": {"message": values}}));
                items.push(serde_json::json!({"kind": "Namespace", "metadata": {"name": format!("{n}{i}"), "labels": labels}}));
            }
            let text = if wrap_list {
                serde_json::to_string_pretty(&serde_json::json!({"kind": "List", "metadata": {"x": names}, "items": items})).unwrap()
            } else {
                items.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("\n")
            };
            let mut b = Builder::new(false);
            let ours = read_json(BufReader::with_capacity(cap, text.as_bytes()), &mut b).and_then(|()| b.finish().map_err(|e| e.to_string()));
            let theirs = reference(&text);
            match (ours, theirs) {
                (Ok((c1, n1)), Ok((c2, n2))) => prop_assert_eq!(summary(&c1, &n1), summary(&c2, &n2)),
                (Err(_), Err(_)) => {}
                (a, b) => prop_assert!(false, "splitter {:?} vs serde {:?}", a.map(|x| x.1), b.map(|x| x.1)),
            }
        }
    }
}

/// The YAML splitter against serde-saphyr reading the whole text at once (the reference): the
/// same snapshot, or an error in both, for lists whose items hold block scalars with entry-like
/// lines, comments at column 0, multi-line flow collections, anchors and aliases, entries at
/// column 0 or 2, flow collections and quoted scalars continued at column 0, several documents
/// and end markers, cut at every entry.
mod yaml_pieces_agree_with_one_parse {
    use super::splitter_agrees_with_serde::summary;
    use super::*;
    use proptest::prelude::*;

    fn reference(text: &str) -> Result<(Cluster, Counts), String> {
        let mut b = Builder::new(false);
        for o in yaml_objects_whole(text)? {
            b.push(o, None)?;
        }
        b.finish().map_err(|e| e.to_string())
    }

    fn ours(text: &str, piece: usize) -> Result<(Cluster, Counts), String> {
        let mut b = Builder::new(false);
        read_yaml_in(BufReader::with_capacity(7, text.as_bytes()), &mut b, piece)?;
        b.finish().map_err(|e| e.to_string())
    }

    /// One item at column `p` (its entry's indentation), named `n`.
    fn item(shape: u8, p: &str, n: usize, v: &str) -> String {
        match shape % 10 {
            0 => format!("{p}- kind: Node\n{p}  metadata:\n{p}    name: n{n}\n{p}    labels: {{zone: \"{v}\"}}\n"),
            1 => format!(
                "{p}- kind: Pod\n{p}  metadata:\n{p}    name: p{n}\n{p}    namespace: ns\n{p}    annotations:\n{p}      note: |\n{p}        - not an item\n{p}        items:\n\n{p}        # nor a comment\n{p}    labels: {{app: \"{v}\"}}\n{p}  spec: {{nodeName: n0}}\n"
            ),
            2 => format!("# a comment between items\n\n{p}- {{kind: Namespace, metadata: {{name: s{n}, labels: {{a: \"{v}\"}}}}}}\n"),
            3 => format!("{p}- {{kind: Namespace,\n{p}   metadata: {{name: m{n},\n{p}     labels: {{b: \"{v}\"}}}}}}\n"),
            4 => format!("{p}- kind: Node\n{p}  metadata:\n{p}    name: a{n}\n{p}    labels: &l{n} {{zone: \"{v}\"}}\n"),
            5 => format!("{p}- kind: Node\n{p}  metadata: {{name: b{n}, labels: *l{}}}\n", n.saturating_sub(1)),
            6 => format!("{p}-\n{p}  kind: Node\n{p}  metadata:\n{p}    name: c{n}\n{p}    labels:\n{p}      k: >-\n{p}        folded\n{p}        - text {v}\n"),
            8 => format!("{p}- {{kind: Namespace, metadata: {{name: f{n},\nlabels: {{c: \"{v}\"}}}}}}\n"),
            9 => format!("{p}- kind: Node\n{p}  metadata: {{name: \"d{n}\n- {v}\"}}\n"),
            _ => format!("{p}- kind: Pod\n{p}  metadata: {{name: q{n}, namespace: ns, labels: {{v: \"{v}\"}}}}\n{p}  spec:\n{p}    nodeName: n0\n{p}    containers:\n{p}    - resources: {{requests: {{cpu: 100m}}}}\n"),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn same_snapshot(
            docs in proptest::collection::vec((proptest::collection::vec(any::<u8>(), 0..8), any::<bool>(), 0u8..4), 1..4),
            values in proptest::collection::vec("[a-z0-9 :#&*-]{0,6}", 1..4),
            piece in prop_oneof![Just(1usize), Just(64), Just(1 << 20)],
        ) {
            let mut text = String::from("kind: Node\nmetadata: {name: n0}\n");
            let mut n = 0;
            for (shapes, indented, tail) in &docs {
                text.push_str(match tail % 2 { 0 => "---\n", _ => "...\n---\n" });
                text.push_str("apiVersion: v1\nkind: List\nitems:\n");
                let p = if *indented { "  " } else { "" };
                for s in shapes {
                    n += 1;
                    text.push_str(&item(*s, p, n, &values[n % values.len()]));
                }
                if tail / 2 == 1 {
                    text.push_str("metadata:\n  resourceVersion: \"\"\n");
                }
            }
            // The objects themselves, in order, then the snapshots.
            prop_assert_eq!(
                format!("{:?}", yaml_objects_pieces(text.as_bytes(), piece).ok()),
                format!("{:?}", yaml_objects_whole(&text).ok())
            );
            let theirs = reference(&text);
            let ours = ours(&text, piece);
            match (&ours, &theirs) {
                (Ok((c1, n1)), Ok((c2, n2))) => prop_assert_eq!(summary(c1, n1), summary(c2, n2)),
                (Err(_), Err(_)) => {}
                _ => prop_assert!(false, "{text}\npieces {:?}\nwhole {:?}", ours.map(|x| x.1), theirs.map(|x| x.1)),
            }
        }
    }

    /// Errors name the line of the whole text, whichever piece they are found in.
    #[test]
    fn errors_keep_their_line() {
        let mut text = String::from("apiVersion: v1\nkind: List\nitems:\n");
        for i in 0..200 {
            text.push_str(&format!("- kind: Node\n  metadata: {{name: n{i}}}\n"));
        }
        let good = text.clone();
        let bad = text.lines().count() + 3;
        text.push_str("- kind: Node\n  metadata:\n    labels: [1]\n");
        for piece in [1, 64, 1 << 20] {
            let err = ours(&text, piece).unwrap_err();
            assert!(
                err.contains(&format!("at line {bad}, column")),
                "{piece}: {err}"
            );
        }
        let kind = text.replace(
            "- kind: Node\n  metadata:\n    labels: [1]\n",
            "- metadata: {name: c}\n",
        );
        let line = kind.lines().count();
        let err = ours(&kind, 1).unwrap_err();
        assert!(
            err.contains("an object without kind") && err.contains(&format!("line {line}")),
            "{err}"
        );
        let mut bytes = good.into_bytes();
        bytes.extend_from_slice(b"- kind: Node\n  metadata: {name: \xff}\n");
        let mut b = Builder::new(false);
        let err = read_yaml_in(&bytes[..], &mut b, 1).unwrap_err();
        assert_eq!(
            err,
            format!("line {}: the YAML is not valid UTF-8", bad - 1)
        );
    }
}

/// A hand-written dump may give `spec` and `status` before `kind` or `apiVersion`: a custom resource's are
/// never read as a Pod's or a Node's, a Node's and a Pod's are read once the kind is known,
/// in a `kind: List` and as documents of their own, in JSON and YAML.
#[test]
fn spec_before_kind_is_read_by_the_kind() {
    let yaml = "apiVersion: v1\nkind: List\nitems:\n\
        - {spec: {taints: [{key: k, effect: NoSchedule}]}, status: {allocatable: {cpu: '1'}}, metadata: {name: n1}, kind: Node}\n\
        - {apiVersion: example.com/v1, spec: {containers: 3, nodeName: [n1]}, kind: Pod, metadata: {name: x}}\n\
        - {kind: Pod, spec: {containers: 3}, apiVersion: example.com/v1, metadata: {name: y}}\n\
        - {spec: {taints: yes}, status: {phase: [1]}, kind: Widget}\n\
        - {metadata: {name: p, namespace: d}, spec: {nodeName: n1, containers: [{resources: {requests: {cpu: 250m}}}]}, kind: Pod}\n\
        ---\n\
        spec: {unschedulable: true}\nmetadata: {name: n2}\nkind: Node\n";
    let json = r#"{"apiVersion": "v1", "kind": "List", "items": [
        {"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}, "status": {"allocatable": {"cpu": "1"}}, "metadata": {"name": "n1"}, "kind": "Node"},
        {"apiVersion": "example.com/v1", "spec": {"containers": 3, "nodeName": ["n1"]}, "kind": "Pod", "metadata": {"name": "x"}},
        {"kind": "Pod", "spec": {"containers": 3}, "apiVersion": "example.com/v1", "metadata": {"name": "y"}},
        {"spec": {"taints": true}, "status": {"phase": [1]}, "kind": "Widget"},
        {"metadata": {"name": "p", "namespace": "d"}, "spec": {"nodeName": "n1", "containers": [{"resources": {"requests": {"cpu": "250m"}}}]}, "kind": "Pod"}]}
        {"spec": {"unschedulable": true}, "metadata": {"name": "n2"}, "kind": "Node"}"#;
    for text in [yaml, json] {
        let (c, counts) = read_dump(text.as_bytes(), false).unwrap();
        assert_eq!((counts.nodes, counts.pods), (2, 1), "{text}");
        let n1 = &c.nodes[c.node_index("n1").unwrap()];
        assert_eq!(n1.taints.len(), 1, "{text}");
        assert!(n1.allocatable.is_some(), "{text}");
        assert!(c.nodes[c.node_index("n2").unwrap()].unschedulable, "{text}");
        assert_eq!(c.usage[0].pods, 1, "{text}");
    }
    // A Pod's spec that is not one is still refused, by the field.
    let err = read_dump(
        &b"{\"spec\": {\"containers\": 3}, \"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}}"[..],
        false,
    )
    .unwrap_err();
    assert!(err.contains("spec: invalid type: integer `3`"), "{err}");
}

/// A pod being resized down in place holds its old size on its node until the kubelet has
/// shrunk it (kube-scheduler counts `status.containerStatuses[].allocatedResources` and
/// `resources`), and a resize found infeasible counts only what is held. Found by a user whose
/// `explain` said a node fits that kube-scheduler called `Insufficient cpu`.
#[test]
fn a_pod_resized_in_place_counts_what_it_holds() {
    let dump = |status: &str| {
        format!(
            r#"{{"kind": "List", "items": [
  {{"kind": "Node", "metadata": {{"name": "n1"}}, "status": {{"allocatable": {{"cpu": "2", "pods": "10"}}}}}},
  {{"kind": "Pod", "metadata": {{"name": "e1", "namespace": "d"}}, "spec": {{"nodeName": "n1",
    "containers": [{{"name": "app", "resources": {{"requests": {{"cpu": "1"}}}}}}, {{"name": "log", "resources": {{"requests": {{"cpu": "100m"}}}}}}]}},
   "status": {status}}}
]}}"#
        )
    };
    let cases = [
        (r#"{"phase": "Running"}"#, 1100),
        (
            r#"{"containerStatuses": [{"name": "app", "allocatedResources": {"cpu": "1800m"}, "resources": {"requests": {"cpu": "1800m"}}}]}"#,
            1900,
        ),
        (
            r#"{"conditions": [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}], "containerStatuses": [{"name": "app", "allocatedResources": {"cpu": "500m"}}, {"name": "log", "allocatedResources": {"cpu": "100m"}}]}"#,
            600,
        ),
    ];
    for (status, want) in cases {
        let (c, _) = read_dump(dump(status).as_bytes(), false).unwrap();
        assert_eq!(c.usage[0].requested.milli_cpu, want, "{status}");
    }
}

/// RuntimeClasses of a dump (`kubectl get ...,runtimeclasses -o json|yaml`) or of a list page
/// are kept by name with their overhead and scheduling, whichever order an object's fields
/// come in; another group's RuntimeClass kind is not one.
#[test]
fn runtime_classes_are_read_from_dumps_and_pages() {
    let yaml = r#"
apiVersion: v1
kind: List
items:
- {apiVersion: node.k8s.io/v1, kind: RuntimeClass, metadata: {name: kata}, handler: kata, overhead: {podFixed: {cpu: 250m}}}
- {scheduling: {nodeSelector: {sandbox: "yes"}, tolerations: [{key: s, operator: Exists}]}, handler: runsc, metadata: {name: gvisor}, kind: RuntimeClass, apiVersion: node.k8s.io/v1}
- {apiVersion: example.com/v1, kind: RuntimeClass, metadata: {name: other}, scheduling: {nodeSelector: 7}}
- {apiVersion: v1, kind: Node, metadata: {name: n1}}
"#;
    let (c, counts) = read_dump(yaml.as_bytes(), false).unwrap();
    assert_eq!((counts.runtime_classes, counts.other_objects), (2, 1));
    let mut names: Vec<&String> = c.runtime_classes.keys().collect();
    names.sort();
    assert_eq!(names, ["gvisor", "kata"]);
    let kata = &c.runtime_classes["kata"];
    assert_eq!(
        kata.overhead
            .as_ref()
            .and_then(|o| o.pod_fixed.as_ref())
            .map(|m| m["cpu"].0.as_str()),
        Some("250m")
    );
    let gvisor = c.runtime_classes["gvisor"].scheduling.as_ref().unwrap();
    assert_eq!(gvisor.node_selector.as_ref().unwrap()["sandbox"], "yes");
    assert_eq!(gvisor.tolerations.as_ref().unwrap().len(), 1);
    // A typed list page, whose items say neither apiVersion nor kind.
    let mut b = Builder::new(false).from_api();
    let page = br#"{"kind": "RuntimeClassList", "apiVersion": "node.k8s.io/v1", "metadata": {}, "items": [{"metadata": {"name": "kata"}, "handler": "kata", "overhead": {"podFixed": {"memory": "1Gi"}}}]}"#;
    assert_eq!(read_page(page, "RuntimeClass", &mut b), Ok(None));
    let (c, _) = b.finish().unwrap();
    assert!(c.runtime_classes["kata"].overhead.is_some());
}

/// LimitRanges of a dump (`kubectl get ...,limitranges -A -o yaml`) or of a list page are kept
/// per namespace in name order, with the default requests their `Container` items give.
#[test]
fn limit_ranges_are_read_from_dumps_and_pages() {
    let yaml = r#"
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: LimitRange, metadata: {name: zz, namespace: q}, spec: {limits: [{type: Container, default: {memory: 1Gi}}]}}
- {apiVersion: v1, kind: LimitRange, metadata: {name: aa, namespace: q}, spec: {limits: [{type: Container, defaultRequest: {cpu: 100m}}]}}
- {apiVersion: v1, kind: LimitRange, metadata: {name: pods-only, namespace: r}, spec: {limits: [{type: Pod, max: {cpu: "2"}}]}}
- {apiVersion: v1, kind: Node, metadata: {name: n1}}
"#;
    let (c, counts) = read_dump(yaml.as_bytes(), false).unwrap();
    assert_eq!((counts.limit_ranges, counts.other_objects), (3, 0));
    let q: Vec<(&str, Vec<(&str, &str)>)> = c.limit_ranges["q"]
        .iter()
        .map(|d| {
            let r = d.requests.iter().map(|(k, v)| (k.as_str(), v.0.as_str()));
            (d.name.as_str(), r.collect())
        })
        .collect();
    assert_eq!(
        q,
        [
            ("aa", vec![("cpu", "100m")]),
            ("zz", vec![("memory", "1Gi")])
        ]
    );
    assert!(c.limit_ranges["r"][0].requests.is_empty());
    let mut b = Builder::new(false).from_api();
    let page = br#"{"kind": "LimitRangeList", "apiVersion": "v1", "metadata": {}, "items": [{"metadata": {"name": "d", "namespace": "q"}, "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "1"}}]}}]}"#;
    assert_eq!(read_page(page, "LimitRange", &mut b), Ok(None));
    let (c, _) = b.finish().unwrap();
    assert_eq!(c.limit_ranges["q"][0].requests["cpu"].0, "1");
}
