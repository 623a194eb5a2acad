//! `placement-guard test`: rule files tested like code. A suite is a folder holding `rules.yaml`
//! and cases: AdmissionReviews (`kind: AdmissionReview`, JSON or YAML, alone in their file; sent
//! to /mutate when the name contains `.mutate.`, else to /validate) or manifests (checked as
//! CREATE; a file with no Pod, workload or WorkloadSpread fails as no case). Each case's outcome
//! is snapshotted by the tool in `<case>.expected.yaml` beside it.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::admission::{self, Endpoint, NamespaceLabels};
use crate::ci::check::Checker;
use crate::k8s::manifest;
use crate::k8s::workload::{self, Kind};
use crate::rules::{self, Context, Input, Operation, Phase, RuleSet, Subject, User};

pub const RULES_FILE: &str = "rules.yaml";
pub const SNAPSHOT_SUFFIX: &str = ".expected.yaml";
/// Namespace manifests beside a suite's `rules.yaml`: the namespace labels every case sees, as a
/// server's cluster cache would (node-selection policies with a `namespaceSelector`).
pub const NAMESPACES_FILE: &str = "namespaces.yaml";

/// Finds suites (folders with a `rules.yaml`) under `roots`, in a stable order, and the
/// directories left out: links are followed, each real directory is walked once (a link back
/// up, or a second link to one already walked, would run its suites again, or for ever), and
/// hidden directories (`.git`) are passed over, as `check` passes them.
pub fn find_suites(roots: &[PathBuf]) -> (Vec<PathBuf>, Vec<crate::cli::inputs::Skipped>) {
    use crate::cli::inputs::Skipped;
    use std::collections::HashSet;
    fn walk(
        dir: &Path,
        seen: &mut HashSet<PathBuf>,
        out: &mut Vec<PathBuf>,
        skipped: &mut Vec<Skipped>,
    ) {
        if std::fs::canonicalize(dir).is_ok_and(|real| !seen.insert(real)) {
            skipped.push(Skipped {
                path: dir.to_path_buf(),
                why: "a directory walked already: a link back up (a file system loop), a second way to it, or a folder given twice",
            });
            return;
        }
        if dir.join(RULES_FILE).is_file() {
            out.push(dir.to_path_buf());
        }
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        let mut subdirs: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .filter(|p| {
                !p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            })
            .collect();
        subdirs.sort();
        for d in subdirs {
            walk(&d, seen, out, skipped);
        }
    }
    let (mut out, mut skipped, mut seen) = (Vec::new(), Vec::new(), HashSet::new());
    for r in roots {
        walk(r, &mut seen, &mut out, &mut skipped);
    }
    (out, skipped)
}

/// The case files of a suite: files beside its `rules.yaml` named like manifests.
pub fn cases(suite: &Path) -> Vec<PathBuf> {
    case_files(suite).0
}

/// The cases of a suite, and what is named like one but is no regular file (a FIFO would block
/// the run, a directory is no case): left out, and said.
pub fn case_files(suite: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    named_cases(suite).into_iter().partition(|p| p.is_file())
}

fn named_cases(suite: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(suite) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name != RULES_FILE
                && name != NAMESPACES_FILE
                && !name.ends_with(SNAPSHOT_SUFFIX)
                && crate::cli::inputs::EXTENSIONS
                    .iter()
                    .any(|e| name.ends_with(&format!(".{e}")))
        })
        .collect();
    out.sort();
    out
}

/// Snapshots whose case is gone (renamed, deleted, or no longer a case): stale expectations
/// nobody checks.
pub fn orphans(suite: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(suite) else {
        return Vec::new();
    };
    let cases = cases(suite);
    let mut out: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.to_str()
                .and_then(|s| s.strip_suffix(SNAPSHOT_SUFFIX))
                .is_some_and(|case| !cases.iter().any(|c| c.as_os_str() == case))
        })
        .collect();
    out.sort();
    out
}

pub fn snapshot_path(case: &Path) -> PathBuf {
    let mut s = case.as_os_str().to_owned();
    s.push(SNAPSHOT_SUFFIX);
    PathBuf::from(s)
}

/// A case is an AdmissionReview when it says so, or when its name says it is sent to an
/// endpoint (`*.validate.json`, `*.mutate.json`): a review that is broken is then answered as
/// the server answers it (400, `badRequest`), not read as a manifest.
fn is_admission_review(name: &str, text: &str) -> bool {
    (name.ends_with(".json") && (name.contains(".validate.") || name.contains(".mutate.")))
        || serde_json::from_str::<Value>(text)
            .ok()
            .is_some_and(|v| v["kind"] == "AdmissionReview")
}

/// The outcome of one case, as the YAML text of its snapshot; an error for a file that is no
/// case (whose snapshot would pass for ever without judging anything).
pub fn outcome(
    name: &str,
    text: &str,
    rules: &RuleSet,
    namespaces: &NamespaceLabels,
) -> Result<String, String> {
    let v = if is_admission_review(name, text) {
        review_outcome(name, text, rules, namespaces)
    } else if let Some(review) = yaml_review(text) {
        // An AdmissionReview written as YAML: sent as the apiserver would send it, as JSON.
        review_outcome(name, &review, rules, namespaces)
    } else if review_among_others(text) {
        return Err(
            "not a case: an AdmissionReview is a case alone in its file, and this file holds other documents too"
                .to_string(),
        );
    } else {
        manifest_outcome(name, text, rules, namespaces)?
    };
    let body = serde_saphyr::to_string(&v).unwrap_or_else(|e| format!("error: {e}\n"));
    Ok(format!("# placement-guard test snapshot of {name}; rewrite with `placement-guard test --update`\n{body}"))
}

/// The JSON text of a YAML file that is one AdmissionReview.
fn yaml_review(text: &str) -> Option<String> {
    match manifest::parse(text).ok()?.as_slice() {
        [one] if one.value["kind"] == "AdmissionReview" => serde_json::to_string(&one.value).ok(),
        _ => None,
    }
}

/// Whether a YAML file holds an AdmissionReview among other documents (which would be
/// snapshotted as a manifest, the review passed over).
fn review_among_others(text: &str) -> bool {
    manifest::parse(text).is_ok_and(|objects| {
        objects.len() > 1 && objects.iter().any(|o| o.value["kind"] == "AdmissionReview")
    })
}

fn review_outcome(name: &str, text: &str, rules: &RuleSet, namespaces: &NamespaceLabels) -> Value {
    let endpoint = if name.contains(".mutate.") {
        Endpoint::Mutate
    } else {
        Endpoint::Validate
    };
    let endpoint_name = if endpoint == Endpoint::Mutate {
        "mutate"
    } else {
        "validate"
    };
    match admission::review_with_namespaces(text.as_bytes(), endpoint, rules, namespaces) {
        Err(admission::ReviewError::BadRequest(e)) => {
            json!({"endpoint": endpoint_name, "badRequest": e})
        }
        Err(e @ admission::ReviewError::Internal(_)) => {
            json!({"endpoint": endpoint_name, "error": e.to_string()})
        }
        Ok(r) => {
            let resp: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
            let resp = &resp["response"];
            let mut out = json!({"endpoint": endpoint_name, "allowed": r.allowed});
            if !r.allowed {
                out["message"] = resp["status"]["message"].clone();
            }
            if resp["warnings"].is_array() {
                out["warnings"] = resp["warnings"].clone();
            }
            if let Some(v) = r.verdict.as_ref().filter(|v| !v.patches.is_empty()) {
                out["patch"] = v
                    .patch_ops()
                    .and_then(serde_json::to_value)
                    .unwrap_or(Value::Null);
                if let Ok(obj) = admission::patched_object(text.as_bytes(), &r) {
                    out["patched"] = obj["spec"].clone();
                }
            }
            out
        }
    }
}

fn manifest_outcome(
    name: &str,
    text: &str,
    rules: &RuleSet,
    namespaces: &NamespaceLabels,
) -> Result<Value, String> {
    let mut checker = Checker::new(rules);
    checker.know_namespaces(namespaces, crate::ci::check::LabelsFrom::Suite);
    checker.check_text(name, text);
    let report = checker.finish();
    if report.objects == 0 && report.diagnostics.is_empty() {
        return Err(if report.skipped > 0 {
            "not a case: none of its objects is a Pod, a workload or a WorkloadSpread, which the rules judge (an AdmissionReview is a case alone in its file)".to_string()
        } else {
            "not a case: no objects".to_string()
        });
    }
    let findings: Vec<Value> = report
        .diagnostics
        .iter()
        .map(|d| {
            let mut f = json!({
                "at": format!("{}:{}", d.line, d.column),
                "rule": d.rule,
                "severity": d.severity.as_str(),
                "object": d.object,
                "path": d.path,
                "message": d.message,
            });
            if let Some(h) = &d.hint {
                f["hint"] = json!(h);
            }
            f
        })
        .collect();
    let mut out = json!({"findings": findings});
    // What the run says once rather than per object (policies it could not apply).
    if !report.notes.is_empty() {
        out["notes"] = json!(report.notes);
    }
    if !report.suppressed.is_empty() {
        out["suppressed"] = serde_json::to_value(
            report
                .suppressed
                .iter()
                .map(|s| json!({"rule": s.rule, "object": s.object, "reason": s.reason}))
                .collect::<Vec<_>>(),
        )
        .unwrap_or(Value::Null);
    }
    // What /mutate would store for each object it changes.
    let mut patched = Vec::new();
    for obj in manifest::parse(text).unwrap_or_default() {
        let v = obj.value;
        let Some(kind) = v["apiVersion"]
            .as_str()
            .zip(v["kind"].as_str())
            .and_then(|(a, k)| Kind::from_api_version(a, k))
        else {
            continue;
        };
        let Ok(t) = workload::parse_value(kind, &v) else {
            continue;
        };
        let ns = t.meta.namespace.clone().unwrap_or_default();
        let verdict = rules::evaluate(
            &Input {
                phase: Phase::Mutate,
                operation: Operation::Create,
                namespace: &ns,
                user: User::default(),
                object: Subject::Template(&t),
                old_object: None,
                context: Context::default(),
            },
            rules,
        );
        if verdict.patches.is_empty() {
            continue;
        }
        let mut after = v.clone();
        let applied = verdict
            .patch_ops()
            .is_ok_and(|ops| json_patch::patch(&mut after, &ops).is_ok());
        if applied {
            patched.push(after);
        }
    }
    if !patched.is_empty() {
        out["patched"] = Value::Array(patched);
    }
    Ok(out)
}

/// One case's result.
pub enum CaseResult {
    Passed,
    /// Expected text (None: no snapshot yet) and actual text.
    Failed {
        expected: Option<String>,
        actual: String,
    },
    Updated,
}

/// A suite's [`NAMESPACES_FILE`], when it has one.
pub fn suite_namespaces(suite: &Path) -> Result<NamespaceLabels, String> {
    let path = suite.join(NAMESPACES_FILE);
    if !path.exists() {
        return Ok(NamespaceLabels::new());
    }
    namespaces_file(&path)
}

/// [`crate::ci::check::namespaces_of`] of the file at `path` (a suite's namespaces.yaml, `review --namespaces`),
/// its errors named by the file.
pub fn namespaces_file(path: &std::path::Path) -> Result<NamespaceLabels, String> {
    let display = path.display();
    let text = std::fs::read(path)
        .map_err(|e| format!("cannot read {display}: {e}"))
        .and_then(|b| crate::cli::inputs::decode(b).map_err(|e| format!("{display}: {e}")))?;
    crate::ci::check::namespaces_of(&text).map_err(|e| format!("{display}:{e}"))
}

pub fn run_case(
    case: &Path,
    rules: &RuleSet,
    namespaces: &NamespaceLabels,
    display: &str,
    update: bool,
) -> Result<CaseResult, String> {
    let text = std::fs::read(case)
        .map_err(|e| format!("cannot read {display}: {e}"))
        .and_then(|b| crate::cli::inputs::decode(b).map_err(|e| format!("{display}: {e}")))?;
    // Snapshots name the case by file name only, so they do not depend on where the suite lives.
    let name = case.file_name().and_then(|n| n.to_str()).unwrap_or(display);
    let actual = outcome(name, &text, rules, namespaces)?;
    let snap = snapshot_path(case);
    let expected = std::fs::read_to_string(&snap).ok();
    if expected.as_deref() == Some(actual.as_str()) {
        return Ok(CaseResult::Passed);
    }
    if update {
        std::fs::write(&snap, &actual)
            .map_err(|e| format!("cannot write {}: {e}", snap.display()))?;
        return Ok(CaseResult::Updated);
    }
    Ok(CaseResult::Failed { expected, actual })
}

/// A unified diff of a changed snapshot.
pub fn diff(expected: &str, actual: &str) -> String {
    similar::TextDiff::from_lines(expected, actual)
        .unified_diff()
        .context_radius(3)
        .header("expected", "actual")
        .to_string()
}
