//! One review's cost per rule, and the cost of reading an AdmissionReview, on recorded bodies as
//! the apiserver sends them (compact), with the on-demand reader and with serde_json reading the
//! whole body (the reference), measured in the same run. Run with `cargo bench --bench admission`.

// Test and benchmark helpers fail loudly on broken fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use placement_guard::admission::{review, review_reference, Endpoint};
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
        let body = compact(&fixture(file));
        g.throughput(Throughput::Bytes(body.len() as u64));
        g.bench_function(format!("{name} (on demand)"), |b| {
            b.iter(|| review(&body, endpoint, &rules).unwrap())
        });
        g.bench_function(format!("{name} (reference: serde_json)"), |b| {
            b.iter(|| review_reference(&body, endpoint, &rules).unwrap())
        });
    }
    g.finish();

    // Reading alone: scanning the body while keeping nothing, the floor for any reader.
    let pretty = fixture("pod-update-add-nodeselector-gated.validate.json");
    let body = compact(&pretty);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&body).unwrap(),
        serde_json::from_slice::<serde_json::Value>(&pretty).unwrap()
    );
    let text = std::str::from_utf8(&body).unwrap();
    let mut g = c.benchmark_group("parse");
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.bench_function("serde_json::Value of the whole review", |b| {
        b.iter(|| serde_json::from_slice::<serde_json::Value>(&body).unwrap())
    });
    g.bench_function("serde_json scan keeping nothing (IgnoredAny)", |b| {
        b.iter(|| serde_json::from_str::<serde::de::IgnoredAny>(text).unwrap())
    });
    g.bench_function("on-demand scan keeping nothing (IgnoredAny)", |b| {
        b.iter(|| {
            let mut de = placement_guard::k8s::ondemand::Deserializer::new(text);
            <serde::de::IgnoredAny as serde::Deserialize>::deserialize(&mut de).unwrap()
        })
    });
    // The same request as stored (pretty-printed, 12 KB).
    g.throughput(Throughput::Bytes(pretty.len() as u64));
    g.bench_function("review of the gated pod UPDATE, pretty-printed", |b| {
        b.iter(|| review(&pretty, Endpoint::Validate, &rules).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
