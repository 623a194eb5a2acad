//! What a cluster dump costs to read and to hold: `cargo run --release --example snapshot_cost
//! -- DUMP`. Prints the time to read it into the compact snapshot and the resident memory the
//! snapshot keeps, per bound pod (RSS after reading minus RSS before, from /proc).

// An example fails loudly on bad input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Instant;

#[path = "common/rss.rs"]
mod rss;
use rss::rss_kib;

fn main() {
    let path = std::env::args().nth(1).expect("usage: snapshot_cost DUMP");
    let before = rss_kib();
    let start = Instant::now();
    let file = std::fs::File::open(&path).unwrap();
    let (cluster, counts) = placement_guard::core::snapshot::read_dump(file, false).unwrap();
    let elapsed = start.elapsed();
    let after = rss_kib();
    let bound = counts.pods - counts.unbound_pods;
    println!(
        "{path}: {} nodes, {} pods ({bound} bound), {} label sets; read in {:.2} s; snapshot {} KiB RSS = {:.0} bytes per bound pod",
        counts.nodes,
        counts.pods,
        cluster.label_sets.len(),
        elapsed.as_secs_f64(),
        after.saturating_sub(before),
        (after.saturating_sub(before) * 1024) as f64 / bound.max(1) as f64
    );
}
