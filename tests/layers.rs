//! The layers of `src/`, top-down as `lib.rs` lists them: a pure layer imports no I/O, async,
//! TLS, CLI or logging-backend crates, and no module of a layer below it.

// Test and benchmark helpers fail loudly on broken fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

/// Pure layers in order; each may use the ones before it.
const LAYERS: [(&str, &[&str]); 6] = [
    ("k8s", &["src/k8s"]),
    ("core", &["src/core"]),
    ("kruise", &["src/kruise"]),
    ("rules", &["src/rules"]),
    ("admission", &["src/admission"]),
    // `test` reads its suites from disk, so testsuite.rs is an adapter.
    (
        "ci",
        &[
            "src/ci/check.rs",
            "src/ci/check",
            "src/ci/report.rs",
            "src/ci/explain.rs",
        ],
    ),
];
/// Adapters: they may use every layer, and no pure layer may use them.
const ADAPTERS: [&str; 3] = ["server", "cli", "live"];
const FORBIDDEN: [&str; 8] = [
    "actix",
    "tokio",
    "openssl",
    "clap",
    "tracing_subscriber",
    "awc",
    "std::fs",
    "std::net",
];

fn rust_files(path: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    if path.is_dir() {
        for e in std::fs::read_dir(path).unwrap() {
            rust_files(&e.unwrap().path(), out);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_path_buf());
    }
}

#[test]
fn pure_layers_stay_pure_and_look_only_upwards() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut checked = 0;
    for (i, (layer, paths)) in LAYERS.iter().enumerate() {
        let below: Vec<&str> = LAYERS[i + 1..]
            .iter()
            .map(|(l, _)| *l)
            .chain(ADAPTERS)
            .collect();
        let mut files = Vec::new();
        for p in *paths {
            rust_files(&root.join(p), &mut files);
        }
        assert!(!files.is_empty(), "layer {layer} has no files");
        for f in files {
            // Tests may read fixtures and use anything; the check is about the library code.
            if f.ends_with("tests.rs") {
                continue;
            }
            checked += 1;
            let text = std::fs::read_to_string(&f).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            for line in code
                .lines()
                .map(str::trim)
                .filter(|l| !l.starts_with("//"))
                .filter(|l| l.starts_with("use ") || l.contains("::"))
            {
                for bad in FORBIDDEN {
                    let hit = line.starts_with(&format!("use {bad}"))
                        || line.contains(&format!("{bad}::"));
                    assert!(
                        !hit,
                        "{}: `{line}` reaches {bad} from a pure layer",
                        f.display()
                    );
                }
                for lower in &below {
                    assert!(
                        !line.contains(&format!("crate::{lower}::"))
                            && !line.contains(&format!("crate::{lower};"))
                            && !line.contains(&format!("crate::{{{lower}")),
                        "{}: `{line}` reaches {lower}, a layer below {layer}",
                        f.display()
                    );
                }
            }
        }
    }
    assert!(checked > 20, "checked only {checked} files");
}

/// Unsafe code is denied crate-wide; the global allocator is the one module that lifts it.
#[test]
fn unsafe_is_allowed_only_in_the_allocator() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "examples", "benches", "tests"] {
        rust_files(&root.join(dir), &mut files);
    }
    // Any mention of the lint (`allow`, `expect`, `cfg_attr`, a list of lints): only the crate
    // root, which denies it, and the allocator, which lifts it.
    let lint = concat!("unsafe", "_code");
    let mut named: Vec<_> = files
        .iter()
        .filter(|f| std::fs::read_to_string(f).unwrap().contains(lint))
        .map(|f| f.strip_prefix(root).unwrap().to_path_buf())
        .collect();
    named.sort();
    assert_eq!(
        named,
        ["src/alloc.rs", "src/lib.rs"].map(std::path::PathBuf::from)
    );
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    assert!(lib.contains(&format!("#![deny({lint})]")));
}
