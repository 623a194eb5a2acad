# The two set-up commands of the README: `make run` and `make test`.
CARGO ?= cargo

.PHONY: run test lint unit build build-pgo bench bench-pgo bench-micro bench-cluster fuzz soak

## Start the admission server with the built-in rules and a generated dev certificate.
run:
	$(CARGO) run --release -- serve

## Everything CI checks: formatting, clippy, and the whole test suite.
test: lint unit

# The fuzz targets are a workspace of their own that clippy does not see: checked here, so that
# a change to the library's API cannot leave them unbuilt until the next fuzz run.
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets --locked -- -D warnings
	$(CARGO) check --manifest-path fuzz/Cargo.toml --locked --bins

unit:
	$(CARGO) test --all-targets --locked

build:
	$(CARGO) build --release --locked

## Admission load benchmark against a no-op baseline (not part of the tests). Installs oha.
bench:
	command -v oha >/dev/null 2>&1 || $(CARGO) install oha --locked
	python3 bench/load.py

## The release server built with a profile of its own admission reviews (and the bench's no-op
## baseline alike) into target/pgo/HOST/release: about 8% less CPU a gated pod update, 3% a denial. Needs llvm-profdata of
## rustc's LLVM version (Debian: llvm-NN); two release builds.
build-pgo:
	python3 bench/pgo.py

## `make bench` on the profile-guided build of both servers.
bench-pgo: build-pgo
	command -v oha >/dev/null 2>&1 || $(CARGO) install oha --locked
	BENCH_PGO=1 python3 bench/load.py

## Soak: SOAK_SECONDS (default 600) at a fixed rate with every recorded review, malformed bodies,
## and a certificate and rule-file change every minute; fails on any unexpected answer.
soak: build
	python3 bench/soak.py

## Reading clusters: dumps of 1x/2x/4x sizes (JSON as kubectl writes it, slim YAML), and
## `explain --pod NAME` against a real kube-apiserver with 1,000 nodes and 20,000 pods.
bench-cluster: build
	$(CARGO) build --release --example snapshot_cost
	python3 bench/cluster_dump.py --shapes kubectl --nodes 1250 --scales 1,2,4
	python3 bench/cluster_dump.py --shapes slim --nodes 5000 --scales 1,2,4 --runs 1
	python3 bench/live_explain.py --nodes 1000

## criterion micro-benchmarks: per-rule review cost, check over the corpus, placement core.
bench-micro:
	$(CARGO) bench

## Fuzz every target for FUZZ_SECONDS each (default 60) with libFuzzer; corpora seeded from
## testdata (and ../shared/corpus/real when present). Needs the nightly toolchain.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= review manifest rule_file cluster_dump
fuzz:
	command -v cargo-fuzz >/dev/null 2>&1 || $(CARGO) install cargo-fuzz --locked
	bash fuzz/seed.sh
	for t in $(FUZZ_TARGETS); do \
	  $(CARGO) +nightly fuzz run $$t fuzz/corpus/$$t -- -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=4096 -timeout=10 || exit 1; \
	done
