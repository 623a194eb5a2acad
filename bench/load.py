#!/usr/bin/env python3
"""Admission load benchmark (`make bench`): the release server against a no-op baseline built
from the same stack, driven over HTTPS with keep-alive by oha, on recorded ~7 KB AdmissionReviews.

Bodies: the recorded fixtures are stored pretty-printed; kube-apiserver sends compact JSON
(Go's encoding/json), so each case is sent as the apiserver sends it (wire form), and the gated
pod UPDATE also as stored (12 KB), to show what size costs.

On a 2-core machine a load generator sharing the server's cores decides the figures (it doubled
the server's CPU per request), so each server runs with one worker pinned to core 1 and oha is
pinned to core 0 (`taskset`). The figure that says how many requests a core of the server can
answer is its own CPU time per request, read from /proc: the capacity ratio is the baseline's
CPU per request over ours (1.0: as cheap as answering a fixed allow). Closed loop at 64
connections, BENCH_RUNS alternating runs per case (the median is printed), then a fixed offered
rate with latency correction (percentiles without coordinated omission) at 64 and 8
connections in the same pinned setting, also BENCH_RUNS alternating runs per case (one run's
p50 ratio moved by a third from run to run on this shared machine; with the defaults this
phase takes 2 x 4 x 3 x 2 x 8 s, about 6.5 minutes), and the server's RSS sampled throughout.
Each pair of runs starts with the baseline and ours by turns, so neither always runs first.
Every figure is printed with its ratio to the baseline measured in the same run.
Environment: BENCH_SECONDS (closed-loop run length, default 8), BENCH_RUNS (default 3),
BENCH_QUICK=1 (closed loop only),
BENCH_RATE (default 2000),
BENCH_SOAK (seconds of the fixed-rate run on /validate used for the memory figure, default 30;
300 for the 5-minute check),
BENCH_PGO=1 (measure the profile-guided build of both servers, `make build-pgo`, instead of
building the plain release),
BENCH_NO_BUILD=1 (measure the release binaries already in target/release, e.g. built with
`parse_cost` in one `cargo build`, without building them again; the commit they were built
from is not checked).
"""
import json, os, shutil, statistics, subprocess, sys, tempfile, time, threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "testdata", "admission-reviews")
SECONDS = int(os.environ.get("BENCH_SECONDS", "8"))
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
# Only the closed-loop capacity runs (for A/B runs, e.g. with RUST_LOG=warn to leave out the
# decision log lines).
QUICK = os.environ.get("BENCH_QUICK") == "1"
RATE = int(os.environ.get("BENCH_RATE", "2000"))
SOAK = int(os.environ.get("BENCH_SOAK", "30"))
# The profile-guided build of both servers (`make build-pgo`, target/pgo/HOST/release), each built
# and trained alike so that the ratio compares like with like.
PGO = os.environ.get("BENCH_PGO") == "1"
NO_BUILD = os.environ.get("BENCH_NO_BUILD") == "1"
WORKERS = "1"
# Servers on core 1, the load generator on core 0 (no pinning on a single core).
PINNED = (os.cpu_count() or 1) >= 2 and shutil.which("taskset") is not None
SERVER_CPU = ["taskset", "-c", "1"] if PINNED else []
LOAD_CPU = ["taskset", "-c", "0"] if PINNED else []

# (name, path, fixture, wire form?)
CASES = [
    ("validate: gated pod UPDATE tightening nodeSelector", "/validate", "pod-update-add-nodeselector-gated.validate.json", True),
    ("validate: Deployment CREATE with zone anti-affinity", "/validate", "deployment-create-zone-anti-affinity.validate.json", True),
    ("mutate: pod CREATE getting spread defaults", "/mutate", "pod-create-jsonpatch-spread.mutate.json", True),
    ("validate: gated pod UPDATE, pretty-printed as stored", "/validate", "pod-update-add-nodeselector-gated.validate.json", False),
]


def rustc_info():
    out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    return dict(l.split(": ", 1) for l in out.splitlines() if ": " in l)


def host():
    return rustc_info()["host"]


def pgo_release():
    """Where `make build-pgo` puts its binaries (built with `--target` the host)."""
    return os.path.join(ROOT, "target", "pgo", host(), "release")


def commit():
    """HEAD, marked when the work tree differs from it."""
    return subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def oha():
    path = shutil.which("oha") or os.path.expanduser("~/.cargo/bin/oha")
    if not os.path.exists(path):
        sys.exit("oha not found: `cargo install oha --locked` (make bench does this)")
    return path


def start(cmd, tmp, name):
    log = open(os.path.join(tmp, name + ".log"), "w")
    # The no-op's PROBE (extra work per request, README "Session 33") never reaches a benchmark.
    env = {k: v for k, v in os.environ.items() if k != "PROBE"}
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
    deadline = time.time() + 60
    while time.time() < deadline:
        line = p.stdout.readline()
        if line.startswith("listening on "):
            return p, line.split()[-1].strip()
        if p.poll() is not None:
            break
    sys.exit(f"{name} did not start; see {log.name}")


def cpu_seconds(pid):
    """User + system CPU time of a process and all its threads."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def body_file(tmp, fixture, wire):
    """The fixture as stored, or compacted the way kube-apiserver sends it."""
    src = os.path.join(FIX, fixture)
    if not wire:
        return src
    dst = os.path.join(tmp, "wire-" + fixture)
    with open(src) as f, open(dst, "w") as out:
        json.dump(json.load(f), out, separators=(",", ":"))
    return dst


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Sampler(threading.Thread):
    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.samples, self.stop = pid, [], False

    def run(self):
        while not self.stop:
            try:
                self.samples.append((time.time(), rss_kib(self.pid)))
            except OSError:
                return
            time.sleep(0.5)


def run_oha(url, body, conns, seconds, rate=None, pid=None):
    cmd = LOAD_CPU + [oha(), "--no-tui", "--output-format", "json", "--insecure", "-z", f"{seconds}s", "-c", str(conns),
           "-m", "POST", "-H", "content-type: application/json", "-D", body]
    if rate:
        cmd += ["-q", str(rate), "--latency-correction"]
    cpu0 = cpu_seconds(pid) if pid else 0
    out = subprocess.run(cmd + [url], capture_output=True, text=True, check=True).stdout
    cpu = cpu_seconds(pid) - cpu0 if pid else 0
    j = json.loads(out)
    s = j["summary"]
    pct = j.get("latencyPercentiles", {})
    codes = j.get("statusCodeDistribution", {})
    n = sum(codes.values()) or 1
    return {"rps": s["requestsPerSec"], "p50": pct.get("p50", 0) * 1000, "p99": pct.get("p99", 0) * 1000,
            "ok": s.get("successRate", 0), "codes": codes, "cpu_us": cpu * 1e6 / n}


def alternating(runs, baseline, ours):
    """`runs` pairs of (baseline, ours) results, the baseline first in even pairs and ours in
    odd ones."""
    theirs_all, ours_all = [], []
    for i in range(runs):
        if i % 2 == 0:
            theirs_all.append(baseline())
            ours_all.append(ours())
        else:
            ours_all.append(ours())
            theirs_all.append(baseline())
    return theirs_all, ours_all


def non_200(results):
    return {k: v for r in results for k, v in r["codes"].items() if k != "200"}


def main():
    if PGO:
        rel = pgo_release()
        if not os.path.exists(os.path.join(rel, "examples", "noop_server")):
            sys.exit("BENCH_PGO=1 measures the profile-guided build: run `make build-pgo` first")
        with open(os.path.join(ROOT, "target", "pgo", "COMMIT")) as f:
            built = f.read().strip()
        if built != commit():
            print(f"warning: the profile-guided build is of {built}, the work tree is at {commit()}: run `make build-pgo`")
    else:
        built = None
        if not NO_BUILD:
            subprocess.run(["cargo", "build", "--release", "--locked", "--bin", "placement-guard", "--example", "noop_server"],
                           cwd=ROOT, check=True)
        rel = os.path.join(ROOT, "target", "release")
    tmp = tempfile.mkdtemp(prefix="pg-bench-")
    server, s_url = start(SERVER_CPU + [os.path.join(rel, "placement-guard"), "serve", "--addr", "127.0.0.1:0", "--workers", WORKERS,
                           "--dev-cert-dir", os.path.join(tmp, "pg")], tmp, "server")
    base, b_url = start(SERVER_CPU + [os.path.join(rel, "examples", "noop_server"), "127.0.0.1:0", WORKERS, os.path.join(tmp, "noop")],
                        tmp, "baseline")
    sampler = Sampler(server.pid)
    sampler.start()
    try:
        where = "servers on core 1, oha on core 0" if PINNED else "not pinned (fewer than 2 cores or no taskset)"
        build = f"profile-guided build of {built}" if PGO else ("release build (not rebuilt)" if NO_BUILD else "release build")
        print(f"{build}; machine: {os.cpu_count()} cores; {WORKERS} worker each; {where}; closed loop {RUNS} x {SECONDS}s per case; fixed rate {RATE}/s")
        bodies = [(name, path, body_file(tmp, fixture, wire)) for name, path, fixture, wire in CASES]
        for name, _, body in bodies:
            print(f"  {os.path.getsize(body):>6} bytes  {name}")
        print("\n## closed loop, 64 connections: server CPU per request (µs) and capacity ratio (baseline CPU / ours); requests/s")
        for name, path, body in bodies:
            theirs, ours = alternating(RUNS, lambda: run_oha(b_url + path, body, 64, SECONDS, pid=base.pid),
                                       lambda: run_oha(s_url + path, body, 64, SECONDS, pid=server.pid))
            med = lambda xs, k: statistics.median(x[k] for x in xs)
            caps = sorted(b["cpu_us"] / r["cpu_us"] for b, r in zip(theirs, ours))
            bad = non_200(ours)
            print(f"{name:<52} cpu {med(ours, 'cpu_us'):5.1f} vs {med(theirs, 'cpu_us'):5.1f}  capacity ratio {statistics.median(caps):.2f}"
                  f" ({caps[0]:.2f}-{caps[-1]:.2f})  req/s {med(ours, 'rps'):7.0f} vs {med(theirs, 'rps'):7.0f}"
                  + (f"  non-200: {bad}" if bad else ""))
        if QUICK:
            return
        for conns in (64, 8):
            print(f"\n## fixed rate {RATE}/s, {conns} connections, latency corrected: median of {RUNS} alternating runs,"
                  f" p50 / p99 in ms (p50 ratio: median of the runs' ratios, with their range)")
            for name, path, body in bodies:
                theirs, ours = alternating(RUNS, lambda: run_oha(b_url + path, body, conns, SECONDS, RATE),
                                           lambda: run_oha(s_url + path, body, conns, SECONDS, RATE))
                med = lambda xs, k: statistics.median(x[k] for x in xs)
                ratios = sorted(r["p50"] / max(b["p50"], 1e-9) for b, r in zip(theirs, ours))
                bad = non_200(ours)
                print(f"{name:<52} p50 {med(ours, 'p50'):.3f} (baseline {med(theirs, 'p50'):.3f},"
                      f" ratio {statistics.median(ratios):.2f}, {ratios[0]:.2f}-{ratios[-1]:.2f})"
                      f"  p99 {med(ours, 'p99'):.3f} (baseline {med(theirs, 'p99'):.3f})"
                      + (f"  non-200: {bad}" if bad else ""))
        print(f"\n## memory: {SOAK}s at {RATE}/s on /validate")
        start_rss = rss_kib(server.pid)
        run_oha(s_url + bodies[0][1], bodies[0][2], 64, SOAK, RATE)
        end_rss = rss_kib(server.pid)
        peak = max(kib for _, kib in sampler.samples)
        print(f"server RSS: start of soak {start_rss / 1024:.1f} MiB, end {end_rss / 1024:.1f} MiB, peak over the whole run {peak / 1024:.1f} MiB")
    finally:
        sampler.stop = True
        for p in (server, base):
            p.terminate()
            p.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
