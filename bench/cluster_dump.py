#!/usr/bin/env python3
"""Reading a cluster, end to end: generate dumps of N nodes and 30*N bound pods and time
`placement-guard explain --cluster DUMP --pod POD` (read + snapshot + evaluate) with its peak RSS.

Three shapes per size:
- slim: a YAML `kind: List` of Nodes and bound Pods with only labels, node name and some
  anti-affinity terms (the shape of the issue's first measurements);
- terms: the slim YAML with every pod carrying two anti-affinity terms (required on the host,
  preferred across zones), written as block YAML the way `kubectl get -o yaml` writes it: about
  the size of the issue's 72 MB dump;
- kubectl: JSON as `kubectl get nodes,pods -A -o json` writes it: realistic pods of several KB
  (containers with env, probes and resources, status with conditions and container statuses,
  managedFields), nodes with status.

Usage: bench/cluster_dump.py [--nodes 5000] [--scales 1,2,4] [--shapes slim,kubectl] [--bin PATH]
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ZONES = 30


def node(i, kubectl):
    n = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"node-{i}",
            "labels": {
                "kubernetes.io/hostname": f"node-{i}",
                "topology.kubernetes.io/zone": f"zone-{i % ZONES}",
                "node.kubernetes.io/instance-type": "m5.2xlarge",
            },
        },
        "spec": {},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"}},
    }
    if kubectl:
        n["metadata"].update(
            {
                "uid": f"0b6b7c1e-0000-4000-8000-{i:012d}",
                "resourceVersion": str(1000 + i),
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "annotations": {"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
            }
        )
        n["spec"] = {"podCIDR": f"10.{i // 256 % 256}.{i % 256}.0/24", "providerID": f"aws:///zone/i-{i:017x}"}
        n["status"].update(
            {
                "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"},
                "conditions": [
                    {"type": t, "status": "False" if t != "Ready" else "True", "reason": "KubeletReady", "message": "ok",
                     "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"}
                    for t in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")
                ],
                "addresses": [{"type": "InternalIP", "address": f"10.0.{i // 256 % 256}.{i % 256}"}, {"type": "Hostname", "address": f"node-{i}"}],
                "nodeInfo": {"kernelVersion": "6.1.0", "osImage": "Debian GNU/Linux 12", "containerRuntimeVersion": "containerd://1.7.0",
                             "kubeletVersion": "v1.36.2", "architecture": "amd64", "operatingSystem": "linux"},
                "images": [{"names": [f"registry.example.com/app{k}:v1"], "sizeBytes": 12345678} for k in range(5)],
            }
        )
    return n


def pod(j, nodes, kubectl, terms=False):
    app = f"app-{j % 500}"
    ns = f"ns-{j % 50}"
    p = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{app}-{j}", "namespace": ns, "labels": {"app": app, "tier": "web"}},
        "spec": {
            "nodeName": f"node-{j % nodes}",
            "containers": [{"name": "main", "image": f"registry.example.com/{app}:v1",
                            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}],
        },
    }
    if j % 100 == 0 or terms:
        p["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}]}}
    if terms:
        p["spec"]["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "topology.kubernetes.io/zone"}}]
    if not kubectl:
        del p["spec"]["containers"]
        return p
    p["metadata"].update(
        {
            "uid": f"5f0c3a52-0000-4000-8000-{j:012d}",
            "resourceVersion": str(100000 + j),
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "generateName": f"{app}-",
            "labels": {"app": app, "tier": "web", "pod-template-hash": "7d9f8c6b5d"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z", "prometheus.io/scrape": "true"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{app}-7d9f8c6b5d",
                                 "uid": "3c1d0000-0000-4000-8000-000000000000", "controller": True, "blockOwnerDeletion": True}],
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:00Z",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:tier": {}},
                                                                       "f:ownerReferences": {}},
                                                          "f:spec": {"f:containers": {"k:{\"name\":\"main\"}": {".": {}, "f:env": {}, "f:image": {}, "f:ports": {}, "f:resources": {}}}}}},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                 "subresource": "status", "fieldsV1": {"f:status": {"f:conditions": {}, "f:containerStatuses": {}, "f:hostIP": {}, "f:phase": {}, "f:podIP": {}}}},
            ],
        }
    )
    c = p["spec"]["containers"][0]
    c.update(
        {
            "env": [{"name": f"VAR_{k}", "value": f"value-{k}-" + "x" * 20} for k in range(8)]
            + [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
            "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 10, "timeoutSeconds": 1,
                              "successThreshold": 1, "failureThreshold": 3},
            "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 5, "timeoutSeconds": 1,
                               "successThreshold": 1, "failureThreshold": 3},
            "volumeMounts": [{"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": True}],
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "imagePullPolicy": "IfNotPresent",
        }
    )
    p["spec"].update(
        {
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "serviceAccount": "default",
            "securityContext": {},
            "schedulerName": "default-scheduler",
            "priority": 0,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            ],
            "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}],
        }
    )
    p["status"] = {
        "phase": "Running",
        "conditions": [{"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": "2026-01-01T00:00:00Z"}
                       for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")],
        "hostIP": "10.0.0.1",
        "hostIPs": [{"ip": "10.0.0.1"}],
        "podIP": f"10.1.{j // 256 % 256}.{j % 256}",
        "podIPs": [{"ip": f"10.1.{j // 256 % 256}.{j % 256}"}],
        "startTime": "2026-01-01T00:00:00Z",
        "qosClass": "Burstable",
        "containerStatuses": [{"name": "main", "state": {"running": {"startedAt": "2026-01-01T00:00:01Z"}}, "lastState": {},
                               "ready": True, "restartCount": 0, "image": f"registry.example.com/{app}:v1",
                               "imageID": "registry.example.com/app@sha256:" + "0" * 64,
                               "containerID": "containerd://" + "a" * 64, "started": True}],
    }
    return p


def write_dump(path, nodes, pods, shape):
    kubectl = shape == "kubectl"
    with open(path, "w") as f:
        if shape == "terms":
            f.write("apiVersion: v1\nkind: List\nitems:\n")
            for i in range(nodes):
                f.write(block_item(node(i, False)))
            for j in range(pods):
                f.write(block_item(pod(j, nodes, False, terms=True)))
            f.write("metadata:\n  resourceVersion: \"\"\n")
        elif kubectl:
            f.write('{\n    "apiVersion": "v1",\n    "items": [\n')
            first = True
            for i in range(nodes):
                f.write(("" if first else ",\n") + json.dumps(node(i, True), indent=4))
                first = False
            for j in range(pods):
                f.write(",\n" + json.dumps(pod(j, nodes, True), indent=4))
            f.write('\n    ],\n    "kind": "List",\n    "metadata": {"resourceVersion": ""}\n}\n')
        else:
            f.write("apiVersion: v1\nkind: List\nitems:\n")
            for i in range(nodes):
                f.write(yaml_item(node(i, False)))
            for j in range(pods):
                f.write(yaml_item(pod(j, nodes, False)))


def block_item(obj):
    """Block YAML as kubectl writes it (keys sorted, two-space indents, `- ` at the list's column)."""
    def emit(v, indent, out, first_prefix=None):
        pad = " " * indent
        if isinstance(v, dict):
            if not v:
                out[-1] += " {}"
            for k in sorted(v):
                x = v[k]
                if isinstance(x, (dict, list)) and x:
                    out.append(f"{pad}{k}:")
                    emit(x, indent + (2 if isinstance(x, dict) else 0), out)
                else:
                    out.append(f"{pad}{k}: {scalar(x)}")
        else:
            for x in v:
                if isinstance(x, dict):
                    sub = []
                    emit(x, indent + 2, sub)
                    sub[0] = pad + "- " + sub[0].lstrip()
                    out.extend(sub)
                else:
                    out.append(f"{pad}- {scalar(x)}")

    def scalar(x):
        if x == {} or x == []:
            return "{}" if x == {} else "[]"
        if isinstance(x, bool):
            return "true" if x else "false"
        if isinstance(x, int):
            return str(x)
        return f"'{x}'" if x.isdigit() or x in ("true", "false", "null") else x

    out = []
    emit(obj, 2, out)
    out[0] = "- " + out[0].lstrip()
    return "\n".join(out) + "\n"


def yaml_item(obj):
    # Block YAML with flow mappings inside: what a YAML dump looks like, written without PyYAML.
    out = ["- apiVersion: v1", f"  kind: {obj['kind']}", "  metadata:"]
    for k, v in obj["metadata"].items():
        out.append(f"    {k}: {json.dumps(v)}")
    out.append("  spec:")
    if not obj["spec"]:
        out[-1] += " {}"
    for k, v in obj["spec"].items():
        out.append(f"    {k}: {json.dumps(v)}")
    if "status" in obj:
        out.append(f"  status: {json.dumps(obj['status'])}")
    return "\n".join(out) + "\n"


POD = """apiVersion: apps/v1
kind: Deployment
metadata: {name: probe, namespace: ns-1}
spec:
  selector: {matchLabels: {app: app-1}}
  template:
    metadata: {labels: {app: app-1}}
    spec:
      containers: [{name: c, image: x, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: app-1}}}
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: app-1}}}
"""


def measure(binary, dump, pod_file):
    start = time.perf_counter()
    out = subprocess.run(["/usr/bin/time", "-v", binary, "explain", "--cluster", dump, "--pod", pod_file, "-o", "json"],
                         capture_output=True, text=True)
    wall = time.perf_counter() - start
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr).group(1))
    if out.returncode not in (0, 1):
        sys.exit(f"explain failed: {out.stderr[-2000:]}")
    summary = json.loads(out.stdout)["summary"]
    return wall, rss, summary


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--scales", default="1,2,4")
    ap.add_argument("--shapes", default="slim,kubectl")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--bin", default="target/release/placement-guard")
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    work = args.dir or tempfile.mkdtemp(prefix="pg-dumps-")
    pod_file = os.path.join(work, "probe.yaml")
    with open(pod_file, "w") as f:
        f.write(POD)
    print(f"{'shape':8} {'nodes':>6} {'pods':>8} {'file MB':>8} {'median s':>9} {'peak MiB':>9}  summary")
    for shape in args.shapes.split(","):
        for scale in [int(s) for s in args.scales.split(",")]:
            nodes, pods = args.nodes * scale, args.nodes * scale * 30
            ext = "json" if shape == "kubectl" else "yaml"
            dump = os.path.join(work, f"{shape}-{nodes}.{ext}")
            if not os.path.exists(dump):
                write_dump(dump, nodes, pods, shape)
            size = os.path.getsize(dump) / 1e6
            runs = [measure(args.bin, dump, pod_file) for _ in range(args.runs)]
            walls = sorted(r[0] for r in runs)
            rss = max(r[1] for r in runs) / 1024
            print(f"{shape:8} {nodes:>6} {pods:>8} {size:>8.0f} {walls[len(walls) // 2]:>9.2f} {rss:>9.0f}  {runs[0][2][:70]}", flush=True)
            if scale > 1 and not args.dir:
                os.remove(dump)


if __name__ == "__main__":
    main()
