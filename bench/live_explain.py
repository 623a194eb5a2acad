#!/usr/bin/env python3
"""`explain --pod NAME` against a real kube-apiserver holding N nodes and 20*N pods.

Starts etcd and kube-apiserver (from target/k8s-bin, installed by ../shared/k8s/install.sh) on
free loopback ports, creates the objects through the API (several keep-alive connections in
parallel), then times `placement-guard explain --pod NAME` a few times and reports the median.

Usage: bench/live_explain.py [--nodes 1000] [--runs 5] [--bin target/release/placement-guard]
"""

import argparse
import http.client
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

TOKEN = "bench-admin-token"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start(bindir, work):
    client, peer, secure = free_port(), free_port(), free_port()
    procs = [subprocess.Popen(
        ["etcd", "--data-dir", f"{work}/etcd", "--name", "b",
         "--listen-client-urls", f"http://127.0.0.1:{client}", "--advertise-client-urls", f"http://127.0.0.1:{client}",
         "--listen-peer-urls", f"http://127.0.0.1:{peer}", "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
         "--initial-cluster", f"b=http://127.0.0.1:{peer}", "--quota-backend-bytes", str(8 << 30)],
        stdout=subprocess.DEVNULL, stderr=open(f"{work}/etcd.err", "w"))]
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", f"{work}/key.pem", "-out", f"{work}/cert.pem"],
                   check=True, capture_output=True)
    subprocess.run(["openssl", "genrsa", "-out", f"{work}/sa.key", "2048"], check=True, capture_output=True)
    subprocess.run(["openssl", "rsa", "-in", f"{work}/sa.key", "-pubout", "-out", f"{work}/sa.pub"], check=True, capture_output=True)
    with open(f"{work}/tokens.csv", "w") as f:
        f.write(f'{TOKEN},admin,1,"system:masters"\n')
    procs.append(subprocess.Popen(
        [f"{bindir}/kube-apiserver", "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={secure}",
         f"--etcd-servers=http://127.0.0.1:{client}", f"--tls-cert-file={work}/cert.pem", f"--tls-private-key-file={work}/key.pem",
         f"--token-auth-file={work}/tokens.csv", "--authorization-mode=RBAC",
         "--service-account-issuer=https://kubernetes.default.svc.cluster.local", f"--service-account-key-file={work}/sa.pub",
         f"--service-account-signing-key-file={work}/sa.key", "--service-cluster-ip-range=10.0.0.0/24",
         "--endpoint-reconciler-type=none", f"--cert-dir={work}/apiserver", "--profiling=false",
         "--max-requests-inflight=2000", "--max-mutating-requests-inflight=1000", "--enable-admission-plugins=",
         "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition"],
        stdout=subprocess.DEVNULL, stderr=open(f"{work}/apiserver.err", "w")))
    return procs, secure


class Api:
    def __init__(self, port, ca):
        self.port = port
        self.ctx = ssl.create_default_context(cafile=ca)
        self.local = threading.local()

    def conn(self):
        c = getattr(self.local, "c", None)
        if c is None:
            c = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=60)
            self.local.c = c
        return c

    def req(self, method, path, body=None, ctype="application/json"):
        for attempt in range(5):
            try:
                c = self.conn()
                c.request(method, path, body=json.dumps(body) if body is not None else None,
                          headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": ctype})
                r = c.getresponse()
                data = r.read()
                if r.status == 429:
                    time.sleep(0.2)
                    continue
                return r.status, data
            except (ConnectionError, http.client.HTTPException, OSError):
                self.local.c = None
                time.sleep(0.5)
        raise RuntimeError(f"{method} {path} failed")


def parallel(n, f, threads=16):
    def worker(k):
        for i in range(k, n, threads):
            f(i)
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pods-per-node", type=int, default=20)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--bin", default="target/release/placement-guard")
    ap.add_argument("--k8s-bin", default="target/k8s-bin")
    args = ap.parse_args()
    if not os.path.exists(f"{args.k8s_bin}/kube-apiserver") or not shutil.which("etcd"):
        sys.exit(f"no kube-apiserver in {args.k8s_bin}: run ../shared/k8s/install.sh {args.k8s_bin}")
    work = tempfile.mkdtemp(prefix="pg-live-bench-")
    procs, port = start(args.k8s_bin, work)
    try:
        api = Api(port, f"{work}/cert.pem")
        deadline = time.time() + 90
        while True:
            try:
                if api.req("GET", "/readyz")[0] == 200:
                    break
            except RuntimeError:
                pass
            if time.time() > deadline:
                sys.exit("kube-apiserver not ready")
            time.sleep(0.5)
        t0 = time.time()
        for ns in range(20):
            api.req("POST", "/api/v1/namespaces", {"metadata": {"name": f"ns-{ns}"}})

        def mk_node(i):
            s, body = api.req("POST", "/api/v1/nodes", {"metadata": {"name": f"node-{i}", "labels": {
                "kubernetes.io/hostname": f"node-{i}", "topology.kubernetes.io/zone": f"zone-{i % 10}"}}})
            assert s == 201, body
            r = {"cpu": "8", "memory": "32Gi", "pods": "110"}
            api.req("PATCH", f"/api/v1/nodes/node-{i}/status", {"status": {"capacity": r, "allocatable": r}},
                    "application/merge-patch+json")

        def mk_pod(j):
            app = f"app-{j % 200}"
            s, body = api.req("POST", f"/api/v1/namespaces/ns-{j % 20}/pods", {
                "metadata": {"name": f"{app}-{j}", "labels": {"app": app}},
                "spec": {"nodeName": f"node-{j % args.nodes}", "containers": [
                    {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}})
            assert s == 201, body

        parallel(args.nodes, mk_node)
        pods = args.nodes * args.pods_per_node
        parallel(pods, mk_pod)
        api.req("POST", "/api/v1/namespaces/ns-0/pods", {"metadata": {"name": "pending", "labels": {"app": "app-0"}},
                                                           "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
                                                                    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                                                                                   "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "app-0"}}}]}})
        print(f"created {args.nodes} nodes and {pods} pods in {time.time() - t0:.0f} s", flush=True)
        kc = f"{work}/kubeconfig"
        with open(kc, "w") as f:
            f.write(f"apiVersion: v1\nkind: Config\nclusters:\n- name: b\n  cluster: {{server: 'https://127.0.0.1:{port}', certificate-authority: {work}/cert.pem}}\n"
                    f"users:\n- name: u\n  user: {{token: {TOKEN}}}\ncontexts:\n- name: b\n  context: {{cluster: b, user: u, namespace: ns-0}}\ncurrent-context: b\n")
        times = []
        for _ in range(args.runs):
            t = time.perf_counter()
            out = subprocess.run(["/usr/bin/time", "-f", "%M", args.bin, "explain", "--pod", "pending", "--kubeconfig", kc, "-o", "json"],
                                 capture_output=True, text=True)
            times.append(time.perf_counter() - t)
            if out.returncode not in (0, 1):
                sys.exit(out.stderr)
        rss = int(out.stderr.strip().splitlines()[-1])
        times.sort()
        print(f"explain --pod pending: median {times[len(times) // 2]:.2f} s over {args.runs} runs "
              f"(min {times[0]:.2f}, max {times[-1]:.2f}), peak RSS {rss / 1024:.0f} MiB; {json.loads(out.stdout)['summary'][:80]}")
    finally:
        for p in reversed(procs):
            p.kill()
            p.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
