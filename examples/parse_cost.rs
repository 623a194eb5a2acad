//! Profiling driver: `valgrind --tool=callgrind target/release/examples/parse_cost 2000 [BODY]
//! [validate|mutate]`; `DUMP=1` prints the response first.

// Test and benchmark helpers fail loudly on broken fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use placement_guard::admission::Endpoint;

// The server's allocator, so profiles show what the server spends.
#[global_allocator]
static GLOBAL: placement_guard::alloc::MiMalloc = placement_guard::alloc::MiMalloc;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20000);
    let body = std::fs::read(std::env::args().nth(2).unwrap_or(
        "testdata/admission-reviews/pod-update-add-nodeselector-gated.validate.json".into(),
    ))
    .unwrap();
    let endpoint = match std::env::args().nth(3).as_deref() {
        None | Some("validate") => Endpoint::Validate,
        Some("mutate") => Endpoint::Mutate,
        Some(other) => panic!("endpoint {other:?}: validate or mutate"),
    };
    // REFERENCE=1: serde_json reads the whole body (the reference reader), for A/B runs.
    let reference = std::env::var_os("REFERENCE").is_some_and(|v| v == "1");
    let review = if reference {
        placement_guard::admission::review_reference
    } else {
        placement_guard::admission::review
    };
    let rules = placement_guard::rules::config::RuleSet::default();
    // DUMP=1: the response body, to see what the profile spends its formatting on.
    if std::env::var_os("DUMP").is_some() {
        let r = review(&body, endpoint, &rules).unwrap();
        println!("{}", String::from_utf8_lossy(&r.body));
    }
    let t = std::time::Instant::now();
    for _ in 0..n {
        let r = review(&body, endpoint, &rules).unwrap();
        std::hint::black_box(r);
    }
    println!(
        "review ({} bytes, {endpoint:?}, {}): {:?}",
        body.len(),
        if reference { "reference" } else { "on demand" },
        t.elapsed() / n as u32
    );
}
