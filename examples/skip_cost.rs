//! Timing driver for the JSON readers alone: the fastest of many batches skipping or reading a
//! body (`cargo run --release --example skip_cost -- BODY`).

// Test and benchmark helpers fail loudly on broken fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde::de::{Deserialize, IgnoredAny};

#[global_allocator]
static GLOBAL: placement_guard::alloc::MiMalloc = placement_guard::alloc::MiMalloc;

fn fastest(mut f: impl FnMut()) -> std::time::Duration {
    (0..300)
        .map(|_| {
            let t = std::time::Instant::now();
            for _ in 0..200 {
                f();
            }
            t.elapsed() / 200
        })
        .min()
        .unwrap()
}

fn main() {
    let path = std::env::args().nth(1).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let od = fastest(|| {
        let mut de = placement_guard::k8s::ondemand::Deserializer::new(&text);
        std::hint::black_box(IgnoredAny::deserialize(&mut de).unwrap());
    });
    let sj = fastest(|| {
        let mut de = serde_json::Deserializer::from_str(&text);
        std::hint::black_box(IgnoredAny::deserialize(&mut de).unwrap());
    });
    println!(
        "skip {} bytes: on demand {od:?}, serde_json {sj:?}",
        text.len()
    );
    let endpoint = if path.contains("mutate") {
        placement_guard::admission::Endpoint::Mutate
    } else {
        placement_guard::admission::Endpoint::Validate
    };
    let rules = placement_guard::rules::RuleSet::default();
    let body = text.as_bytes();
    let od = fastest(|| {
        std::hint::black_box(placement_guard::admission::review(body, endpoint, &rules).unwrap());
    });
    let sj = fastest(|| {
        std::hint::black_box(
            placement_guard::admission::review_reference(body, endpoint, &rules).unwrap(),
        );
    });
    println!("review: on demand {od:?}, reference {sj:?}");
}
