#!/usr/bin/env python3
"""Profile-guided release build (`make build-pgo`): the server and the bench's no-op baseline
built instrumented, run on every recorded AdmissionReview (and the CLI on testdata), and
rebuilt with the merged profile into target/pgo/HOST/release (`--target` the host, so that
build scripts and proc macros are not instrumented).

Why: an admission review's code does not fit the L1 instruction cache (README, "Admission
cost"); with a profile LLVM lays hot code out together and moves cold paths away, and treats
code the profile never ran as cold (optimized for size). Training runs what a user runs:
every recorded review through both endpoints' routes, `check` on the test manifests and
`explain` on the test cluster, so those paths are not left cold.

Needs `llvm-profdata` of the LLVM that rustc is built on (`rustc -vV`): on Debian,
`apt-get install llvm-NN` for that major version NN. Two release builds and the training,
about 13 minutes on 2 cores. Environment: PGO_ROUNDS (passes over the reviews, default 400).
"""
import http.client, json, os, shutil, signal, ssl, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import load  # noqa: E402

ROUNDS = int(os.environ.get("PGO_ROUNDS", "400"))
GEN = os.path.join(ROOT, "target", "pgo-gen")
OUT = os.path.join(ROOT, "target", "pgo")


def llvm_profdata():
    """The llvm-profdata whose major version is rustc's LLVM's (profiles of another are
    refused or misread)."""
    major = load.rustc_info()["LLVM version"].split(".")[0]
    sysroot = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True, text=True, check=True).stdout.strip()
    candidates = [shutil.which(f"llvm-profdata-{major}"), f"/usr/lib/llvm-{major}/bin/llvm-profdata",
                  os.path.join(sysroot, "lib", "rustlib", load.host(), "bin", "llvm-profdata")]
    for c in candidates:
        if c and os.path.exists(c):
            return c
    sys.stderr.write(f"build-pgo: needs llvm-profdata of LLVM {major} (rustc's): `apt-get install llvm-{major}`"
                     f" or `rustup component add llvm-tools`\n")
    sys.exit(2)


def cargo_build(target_dir, flag):
    env = dict(os.environ, CARGO_TARGET_DIR=target_dir,
               RUSTFLAGS=(os.environ.get("RUSTFLAGS", "") + " " + flag).strip())
    subprocess.run(["cargo", "build", "--release", "--locked", "--target", load.host(), "--bin", "placement-guard",
                    "--example", "noop_server"], cwd=ROOT, env=env, check=True)


def reviews():
    """Every recorded review, compact as the apiserver sends it, with its endpoint."""
    out = []
    for f in sorted(os.listdir(load.FIX)):
        if f.endswith(".json"):
            with open(os.path.join(load.FIX, f)) as fh:
                body = json.dumps(json.load(fh), separators=(",", ":")).encode()
            out.append(("/mutate" if f.endswith(".mutate.json") else "/validate", body))
    return out


def profiles(raw):
    """The raw profiles and their sizes and times: a run adds a file or, merging into its
    binary's file (`%m`), changes one."""
    if not os.path.isdir(raw):
        return {}
    return {f: (st.st_size, st.st_mtime_ns) for f in os.listdir(raw) for st in [os.stat(os.path.join(raw, f))]}


def drive(cmd, tmp, name, bodies, rounds, raw):
    """Starts a server, sends it every body `rounds` times on one keep-alive connection, and
    stops it with SIGINT (a graceful stop: the profile is written as the process exits). A
    server that answers anything but 200, or leaves no profile, fails the build: a profile
    without its admission path would mark that path cold."""
    before = profiles(raw)
    p, url = load.start(cmd, tmp, name)
    codes = {}
    try:
        conn = http.client.HTTPSConnection(url.split("//")[1], timeout=30,
                                           context=ssl._create_unverified_context())
        for _ in range(rounds):
            for path, body in bodies:
                conn.request("POST", path, body, {"content-type": "application/json"})
                r = conn.getresponse()
                r.read()
                codes[r.status] = codes.get(r.status, 0) + 1
        conn.close()
        p.send_signal(signal.SIGINT)
        code = p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    if set(codes) != {200} or code != 0 or profiles(raw) == before:
        wrote = "a profile" if profiles(raw) != before else "no profile"
        sys.exit(f"build-pgo: {name} answered {codes}, exited {code}, wrote {wrote}; see {tmp}/{name}.log")
    print(f"trained {name}: {sum(codes.values())} reviews")


def main():
    profdata = llvm_profdata()
    raw = os.path.join(GEN, "profiles")
    shutil.rmtree(raw, ignore_errors=True)
    cargo_build(GEN, f"-Cprofile-generate={raw}")
    tmp = tempfile.mkdtemp(prefix="pg-pgo-")
    try:
        rel = os.path.join(GEN, load.host(), "release")
        bodies = reviews()
        drive([os.path.join(rel, "placement-guard"), "serve", "--addr", "127.0.0.1:0", "--workers", "1",
               "--dev-cert-dir", os.path.join(tmp, "pg")], tmp, "server", bodies, ROUNDS, raw)
        drive([os.path.join(rel, "examples", "noop_server"), "127.0.0.1:0", "1", os.path.join(tmp, "noop")],
              tmp, "noop", bodies, ROUNDS, raw)
        # The CLI's paths, so that the profile does not leave them cold; findings exit 1.
        pg = os.path.join(rel, "placement-guard")
        data = os.path.join(ROOT, "testdata")
        for args in (["check", os.path.join(data, "manifests")],
                     ["explain", "--cluster", os.path.join(data, "explain", "cluster.yaml"),
                      "--pod", os.path.join(data, "explain", "deployment.yaml")]):
            for _ in range(20):
                r = subprocess.run([pg] + args, capture_output=True, text=True)
                if r.returncode not in (0, 1):
                    sys.exit(f"build-pgo: {' '.join(args)} exited {r.returncode}: {r.stderr}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    merged = os.path.join(GEN, "merged.profdata")
    subprocess.run([profdata, "merge", "-o", merged, raw], check=True)
    cargo_build(OUT, f"-Cprofile-use={merged}")
    # What the build is of, so that `BENCH_PGO=1` can tell a stale one.
    with open(os.path.join(OUT, "COMMIT"), "w") as f:
        f.write(load.commit() + "\n")
    print(f"built {load.pgo_release()}/placement-guard (and examples/noop_server) with the profile")


if __name__ == "__main__":
    main()
