//! What `serve --cluster-aware`'s cache costs: `cargo run --release --example cache_cost --
//! [NODES] [PODS]` (default 5,000 / 150,000). Pods are written as the API sends them in a watch
//! (several KB each: containers, probes, status, managedFields), read through the watcher's own
//! slim types and applied to the store as events. Prints resident memory per pod and node
//! (RSS from /proc, after minus before), the time per event, and the time of a rolling update
//! (every pod relabelled, as a Deployment rollout does) and of deleting them all.

// An example fails loudly on bad input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Instant;

use placement_guard::core::store::{Event, Resource, Store};
use placement_guard::live::cache::{WatchedNode, WatchedPod};
use serde_json::json;

#[path = "common/rss.rs"]
mod rss;
use rss::rss_kib;

fn node(i: usize) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": format!("node-{i}"), "resourceVersion": "1",
            "labels": {"kubernetes.io/hostname": format!("node-{i}"), "topology.kubernetes.io/zone": format!("zone-{}", i % 3),
                       "node.kubernetes.io/instance-type": "m6i.2xlarge", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                       "pool": format!("pool-{}", i % 10)},
            "annotations": {"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
        "spec": {"podCIDR": "10.0.0.0/24", "providerID": format!("aws:///zone/i-{i:017}"),
                 "taints": if i % 10 == 9 { json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]) } else { json!(null) }},
        "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"},
                   "allocatable": {"cpu": "7910m", "memory": "31Gi", "pods": "110", "ephemeral-storage": "95Gi"},
                   "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
                                   "lastHeartbeatTime": "2026-11-24T00:00:00Z", "lastTransitionTime": "2026-11-01T00:00:00Z"}],
                   "nodeInfo": {"kubeletVersion": "v1.36.2", "osImage": "Bottlerocket", "containerRuntimeVersion": "containerd://2.0.0"}}
    }))
    .unwrap()
}

fn pod(j: usize, nodes: usize, hash: &str) -> Vec<u8> {
    let app = format!("app-{}", j / 30);
    let mut spec = json!({
        "nodeName": format!("node-{}", j % nodes),
        "serviceAccountName": "default",
        "containers": [
            {"name": "app", "image": "registry.example.com/team/app:1.2.3",
             "ports": [{"containerPort": 8080, "protocol": "TCP"}],
             "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
             "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
             "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 5},
             "volumeMounts": [{"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}]},
            {"name": "sidecar", "image": "registry.example.com/proxy:1.0",
             "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}}
        ],
        "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        ],
        "volumes": [{"name": "kube-api-access", "projected": {"sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}}]}}]
    });
    if (j / 30).is_multiple_of(10) {
        spec["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}]}});
    }
    serde_json::to_vec(&json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("{app}-{hash}-{j}"), "namespace": format!("ns-{}", j / 3000),
            "uid": format!("00000000-0000-0000-0000-{j:012}"), "resourceVersion": "12345",
            "labels": {"app": app, "pod-template-hash": hash},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-01T00:00:00Z"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-{hash}"), "uid": "x", "controller": true}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": "2026-11-01T00:00:00Z",
                               "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:containers": {}}}}]},
        "spec": spec,
        "status": {"phase": "Running", "podIP": "10.0.0.1", "hostIP": "10.1.0.1", "qosClass": "Burstable",
                   "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-01T00:00:00Z"}],
                   "containerStatuses": [{"name": "app", "ready": true, "restartCount": 0, "image": "registry.example.com/team/app:1.2.3",
                                          "imageID": "sha256:abc", "containerID": "containerd://abc", "started": true,
                                          "state": {"running": {"startedAt": "2026-11-01T00:00:00Z"}}}]}
    }))
    .unwrap()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let nodes: usize = args.next().map_or(5000, |a| a.parse().unwrap());
    let pods: usize = args.next().map_or(150_000, |a| a.parse().unwrap());
    let mut store = Store::default();
    let before = rss_kib();
    // Only reading and applying is timed, not writing the test objects.
    let mut listed = std::time::Duration::ZERO;
    let mut bytes = 0usize;
    for i in 0..nodes {
        let b = node(i);
        bytes += b.len();
        let start = Instant::now();
        let n: WatchedNode = serde_json::from_slice(&b).unwrap();
        store.apply(Resource::Nodes, Event::Apply(n.into()));
        listed += start.elapsed();
    }
    let after_nodes = rss_kib();
    for j in 0..pods {
        let b = pod(j, nodes, "5d8f7c");
        bytes += b.len();
        let start = Instant::now();
        let p: WatchedPod = serde_json::from_slice(&b).unwrap();
        store.apply(Resource::Pods, Event::Apply(p.into()));
        listed += start.elapsed();
    }
    let after = rss_kib();
    let c = store.cluster();
    println!(
        "{nodes} nodes, {pods} pods ({:.0} MB as the API sends them, {:.1} KB per pod), {} label sets",
        bytes as f64 / 1e6,
        bytes as f64 / (nodes + pods) as f64 / 1e3,
        c.label_sets.iter().filter(|l| !l.labels.is_empty()).count()
    );
    println!(
        "cache: {:.1} MiB RSS above the baseline ({:.1} MiB nodes = {:.0} B per node, {:.1} MiB pods = {:.0} B per pod)",
        after.saturating_sub(before) as f64 / 1024.0,
        after_nodes.saturating_sub(before) as f64 / 1024.0,
        (after_nodes.saturating_sub(before) * 1024) as f64 / nodes.max(1) as f64,
        after.saturating_sub(after_nodes) as f64 / 1024.0,
        (after.saturating_sub(after_nodes) * 1024) as f64 / pods.max(1) as f64,
    );
    println!(
        "initial list: {:.2} s, {:.1} µs per event (parse + apply)",
        listed.as_secs_f64(),
        listed.as_secs_f64() * 1e6 / (nodes + pods) as f64
    );
    // A rollout: every pod replaced by one with a new pod-template-hash (new name, new labels).
    let mut rolled = std::time::Duration::ZERO;
    for j in 0..pods {
        let (old, new) = (pod(j, nodes, "5d8f7c"), pod(j, nodes, "7b9a41"));
        let start = Instant::now();
        let old: WatchedPod = serde_json::from_slice(&old).unwrap();
        store.apply(Resource::Pods, Event::Delete(old.into()));
        let new: WatchedPod = serde_json::from_slice(&new).unwrap();
        store.apply(Resource::Pods, Event::Apply(new.into()));
        rolled += start.elapsed();
    }
    println!(
        "rollout of every pod (delete + add): {:.2} s, {:.1} µs per event; RSS after {:.1} MiB above the baseline, {} label sets live",
        rolled.as_secs_f64(),
        rolled.as_secs_f64() * 1e6 / (2 * pods) as f64,
        rss_kib().saturating_sub(before) as f64 / 1024.0,
        store.cluster().label_sets.iter().filter(|l| !l.labels.is_empty()).count()
    );
    assert_eq!(store.len(Resource::Pods), pods);
}
