//! Profiling driver: `valgrind --tool=callgrind target/release/examples/parse_cost 2000`.

// Test and benchmark helpers fail loudly on broken fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20000);
    let body = std::fs::read(std::env::args().nth(2).unwrap_or(
        "testdata/admission-reviews/pod-update-add-nodeselector-gated.validate.json".into(),
    ))
    .unwrap();
    let rules = placement_guard::rules::config::RuleSet::default();
    let t = std::time::Instant::now();
    for _ in 0..n {
        let r = placement_guard::admission::review(
            &body,
            placement_guard::admission::Endpoint::Validate,
            &rules,
        )
        .unwrap();
        std::hint::black_box(r);
    }
    println!(
        "review ({} bytes): {:?}",
        body.len(),
        t.elapsed() / n as u32
    );
}
