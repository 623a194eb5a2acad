//! One review's cost per rule, and the cost of reading an AdmissionReview, on recorded bodies.
//! Run with `cargo bench --bench admission`.

// Test and benchmark helpers fail loudly on broken fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use placement_guard::admission::{review, Endpoint};
use placement_guard::rules::config::RuleSet;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/testdata/admission-reviews/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// Drops the whitespace between tokens, keeping key order (a `Value` round trip would sort the
/// keys and put the objects before `operation`, which is not the apiserver's order).
fn compact(json: &[u8]) -> Vec<u8> {
    let (mut out, mut in_str, mut esc) = (Vec::with_capacity(json.len()), false, false);
    for &b in json {
        if in_str {
            if esc {
                esc = false;
            } else if b == b'\\' {
                esc = true;
            } else if b == b'"' {
                in_str = false;
            }
        } else if b == b'"' {
            in_str = true;
        } else if b.is_ascii_whitespace() {
            continue;
        }
        out.push(b);
    }
    out
}

fn bench(c: &mut Criterion) {
    let rules = RuleSet::default();
    let cases = [
        (
            "mutable-directives: gated pod UPDATE tightening nodeSelector",
            "pod-update-add-nodeselector-gated.validate.json",
            Endpoint::Validate,
        ),
        (
            "hard-anti-affinity: Deployment CREATE",
            "deployment-create-zone-anti-affinity.validate.json",
            Endpoint::Validate,
        ),
        (
            "topology-spread-defaults: pod CREATE through /mutate",
            "pod-create-jsonpatch-spread.mutate.json",
            Endpoint::Mutate,
        ),
        (
            "no rule applies: pod UPDATE of labels",
            "pod-update-labels-only-ungated.validate.json",
            Endpoint::Validate,
        ),
    ];
    let mut g = c.benchmark_group("review");
    for (name, file, endpoint) in cases {
        let body = fixture(file);
        g.throughput(Throughput::Bytes(body.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| review(&body, endpoint, &rules).unwrap())
        });
    }
    g.finish();

    // Reading alone: a full serde_json::Value parse of the same body, for comparison with the
    // envelope + partial typed read that `review` does.
    let body = fixture("pod-update-add-nodeselector-gated.validate.json");
    let mut g = c.benchmark_group("parse");
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.bench_function("serde_json::Value of the whole review", |b| {
        b.iter(|| serde_json::from_slice::<serde_json::Value>(&body).unwrap())
    });
    // The floor for any serde_json reader: scanning the body while keeping nothing.
    g.bench_function("serde_json scan keeping nothing (IgnoredAny)", |b| {
        b.iter(|| serde_json::from_slice::<serde::de::IgnoredAny>(&body).unwrap())
    });
    // The same request as the apiserver sends it (compact), through the whole review.
    let wire = compact(&body);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&wire).unwrap(),
        serde_json::from_slice::<serde_json::Value>(&body).unwrap()
    );
    g.throughput(Throughput::Bytes(wire.len() as u64));
    g.bench_function("review of the gated pod UPDATE, compact as sent", |b| {
        b.iter(|| review(&wire, Endpoint::Validate, &rules).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
