//! The pure layers import no I/O, async, TLS, CLI or logging-backend crates.

const PURE: [&str; 13] = [
    "src/fieldpath.rs",
    "src/core",
    "src/model.rs",
    "src/workload.rs",
    "src/config.rs",
    "src/rules",
    "src/admission.rs",
    "src/validation.rs",
    "src/manifest.rs",
    "src/check.rs",
    "src/report.rs",
    "src/explain.rs",
    "src/check",
];
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
fn pure_layers_stay_pure() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for p in PURE {
        rust_files(&root.join(p), &mut files);
    }
    assert!(files.len() > 15, "found {} files", files.len());
    for f in files {
        // Tests may read fixtures; the check is about the library code.
        let text = std::fs::read_to_string(&f).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        if f.components().any(|c| c.as_os_str() == "tests.rs") || f.ends_with("tests.rs") {
            continue;
        }
        for line in code
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("use ") || l.contains("::"))
        {
            for bad in FORBIDDEN {
                let hit =
                    line.starts_with(&format!("use {bad}")) || line.contains(&format!("{bad}::"));
                assert!(
                    !hit,
                    "{}: `{line}` reaches {bad} from a pure layer",
                    f.display()
                );
            }
        }
    }
}
