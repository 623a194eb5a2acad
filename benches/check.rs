//! `check` over the shared corpus of real manifests (../shared/corpus/real): files per second.
//! Run with `cargo bench --bench check`; it reports nothing when the corpus is absent.

// Test and benchmark helpers fail loudly on broken fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use placement_guard::ci::check::Checker;
use placement_guard::rules::config::RuleSet;

fn corpus() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/real");
    let root = root.to_string_lossy().to_string();
    placement_guard::cli::inputs::collect(&[root], &[])
        .inputs
        .into_iter()
        .filter_map(|i| {
            let mut text = String::new();
            i.reader().ok()?.read_to_string(&mut text).ok()?;
            Some((i.name, text))
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let files = corpus();
    if files.is_empty() {
        eprintln!("corpus not found: skipping the check benchmark");
        return;
    }
    let bytes: usize = files.iter().map(|(_, t)| t.len()).sum();
    eprintln!("corpus: {} files, {} KiB", files.len(), bytes / 1024);
    let rules = RuleSet::default();
    let mut g = c.benchmark_group("check");
    g.sample_size(20);
    g.throughput(Throughput::Elements(files.len() as u64));
    g.bench_function("corpus", |b| {
        b.iter(|| {
            let mut c = Checker::new(&rules);
            for (name, text) in &files {
                c.check_text(name, text);
            }
            c.finish()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
