#!/usr/bin/env python3
"""Soak: the release server at a fixed rate for SOAK_SECONDS (default 600) with a mix of every
recorded AdmissionReview on both endpoints and some malformed bodies, while its certificate and
rule file change every minute. Reports unexpected answers (anything but 200, and 400 for the
malformed bodies) and the server's RSS over time. Loopback only; bounded in time; stops itself.

    python3 bench/soak.py            # after `cargo build --release`
"""
import glob
import http.client
import json
import os
import random
import shutil
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from load import rss_kib  # noqa: E402  (the load benchmark's RSS reader)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target/release/placement-guard")
SECONDS = int(os.environ.get("SOAK_SECONDS", "600"))
RATE = int(os.environ.get("SOAK_RATE", "200"))
ROTATE = int(os.environ.get("SOAK_ROTATE_SECONDS", "60"))
RULES = [
    "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\n",
    "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  hardAntiAffinity:\n    namespaceScope: deny\n",
]
MALFORMED = [b"not json", b"[1,2]", b'{"kind":"AdmissionReview"', b"{}", b"\xff\xfe"]


def self_signed(dir):
    key, crt = os.path.join(dir, "tls.key"), os.path.join(dir, "tls.crt")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-days", "1", "-subj", "/CN=localhost", "-addext",
         "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", key, "-out", crt],
        check=True, capture_output=True)
    return crt, key


def main():
    work = tempfile.mkdtemp(prefix="pg-soak-")
    pairs = []
    for i in range(2):
        d = os.path.join(work, f"pair{i}")
        os.makedirs(d)
        pairs.append(self_signed(d))
    live_crt, live_key = os.path.join(work, "tls.crt"), os.path.join(work, "tls.key")
    shutil.copy(pairs[0][0], live_crt)
    shutil.copy(pairs[0][1], live_key)
    rules = os.path.join(work, "rules.yaml")
    with open(rules, "w") as f:
        f.write(RULES[0])
    server = subprocess.Popen(
        [BIN, "serve", "--addr", "127.0.0.1:0", "--tls-cert", live_crt, "--tls-key", live_key,
         "--rules", rules, "--reload-interval", "1", "--workers", "1"],
        stdout=subprocess.PIPE, stderr=open(os.path.join(work, "server.log"), "w"), text=True)
    port = None
    for line in server.stdout:
        if line.startswith("listening on"):
            port = int(line.strip().rsplit(":", 1)[1])
            break
    ctx = ssl.create_default_context()
    for crt, _ in pairs:
        ctx.load_verify_locations(crt)
    bodies = []
    for p in sorted(glob.glob(os.path.join(ROOT, "testdata/admission-reviews/*.json"))):
        compact = json.dumps(json.load(open(p)), separators=(",", ":")).encode()
        for endpoint in ("/validate", "/mutate"):
            bodies.append((endpoint, compact, 200))
    conn = None
    counts = {"sent": 0, "ok": 0, "malformed_400": 0, "unexpected": 0, "reconnects": 0}
    unexpected = []
    samples = [(0, rss_kib(server.pid))]
    start = time.monotonic()
    next_rotation, next_sample, rotation = ROTATE, 10, 0
    random.seed(7)
    i = 0
    while time.monotonic() - start < SECONDS:
        now = time.monotonic() - start
        if now >= next_rotation:
            rotation += 1
            crt, key = pairs[rotation % 2]
            shutil.copy(key, live_key)
            shutil.copy(crt, live_crt)
            with open(rules, "w") as f:
                f.write(RULES[rotation % 2])
            next_rotation += ROTATE
        if now >= next_sample:
            samples.append((int(now), rss_kib(server.pid)))
            next_sample += 10
        if random.random() < 0.05:
            endpoint, body, want = "/validate", random.choice(MALFORMED), 400
        else:
            endpoint, body, want = bodies[i % len(bodies)]
            i += 1
        for attempt in range(2):
            try:
                if conn is None:
                    conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
                    counts["reconnects"] += 1
                conn.request("POST", endpoint, body, {"Content-Type": "application/json"})
                r = conn.getresponse()
                r.read()
                status = r.status
                if r.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = None
                break
            except (OSError, http.client.HTTPException) as e:
                conn = None
                status = f"error: {e}"
                if attempt == 1:
                    break
        counts["sent"] += 1
        if status == want:
            counts["ok" if want == 200 else "malformed_400"] += 1
        else:
            counts["unexpected"] += 1
            unexpected.append((endpoint, want, status))
        # Fixed rate: wait for the next slot.
        delay = start + counts["sent"] / RATE - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    samples.append((int(time.monotonic() - start), rss_kib(server.pid)))
    server.terminate()
    server.wait(timeout=60)
    log = open(os.path.join(work, "server.log")).read()
    print(json.dumps({
        "seconds": SECONDS, "rate": RATE, "rotations": rotation, **counts,
        "unexpected_first": unexpected[:5],
        "rss_kib": {"start": samples[0][1], "after_60s": next((r for t, r in samples if t >= 60), None),
                    "end": samples[-1][1], "max": max(r for _, r in samples)},
        "tls_reloads_logged": log.count("reloaded the TLS certificate"),
        "rule_reloads_logged": log.count("reloaded the rule file"),
        "server_exit": server.returncode,
    }, indent=2))
    shutil.rmtree(work, ignore_errors=True)
    return 1 if counts["unexpected"] else 0


if __name__ == "__main__":
    sys.exit(main())
