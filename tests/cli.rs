// Test and benchmark helpers fail loudly on broken fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::{fixture, temp_dir, BIN};

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str], stdin: Option<&[u8]>) -> Run {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut input = child.stdin.take().unwrap();
        if let Some(data) = stdin {
            // The program may exit before reading stdin (e.g. a bad rule file): ignore EPIPE.
            let _ = input.write_all(data);
        }
    }
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).to_string(),
        stderr: String::from_utf8_lossy(&out.stderr).to_string(),
    }
}

fn path(name: &str) -> String {
    format!(
        "{}/testdata/admission-reviews/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn review_allowed_exits_0() {
    let r = run(
        &[
            "review",
            &path("pod-update-add-nodeselector-gated.validate.json"),
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["response"]["allowed"], true);
}

#[test]
fn review_denied_exits_1_and_prints_the_review() {
    let r = run(
        &["review", "-"],
        Some(&fixture(
            "pod-update-remove-nodeselector-key-gated.mutate.json",
        )),
    );
    assert_eq!(r.code, 1);
    assert_eq!(r.stderr, "");
    insta::assert_snapshot!(r.stdout);
}

#[test]
fn review_matches_the_library_answer() {
    // The CLI prints what /validate answers (the server test checks /validate against the same fixtures).
    let body = fixture("pod-update-remove-nodeselector-key-gated.mutate.json");
    let lib = placement_guard::admission::review(
        &body,
        placement_guard::admission::Endpoint::Validate,
        &Default::default(),
    )
    .unwrap();
    let lib: serde_json::Value = serde_json::from_slice(&lib.body).unwrap();
    let cli: serde_json::Value =
        serde_json::from_str(&run(&["review", "-"], Some(&body)).stdout).unwrap();
    assert_eq!(lib, cli);
}

type Case<'a> = (Vec<&'a str>, Option<&'a [u8]>, &'a str);

#[test]
fn review_bad_input_exits_2_with_reason() {
    let cases: Vec<Case> = vec![
        (vec!["review", "-"], Some(b"nope"), "placement-guard: -: request body is not valid JSON: expected ident at line 1 column 2\n"),
        (vec!["review", "/does/not/exist.json"], None, "placement-guard: cannot read /does/not/exist.json: No such file or directory (os error 2)\n"),
        (vec!["review", "--rules", "/does/not/exist.yaml", "-"], Some(b"{}"), "placement-guard: cannot read rule file /does/not/exist.yaml: No such file or directory (os error 2)\n"),
    ];
    for (args, stdin, want) in cases {
        let r = run(&args, stdin);
        assert_eq!(r.code, 2, "{args:?}");
        assert_eq!(r.stderr, want);
        assert_eq!(r.stdout, "");
    }
    // Over the server's body limit: refused as the server refuses it, not answered.
    let mut big =
        std::fs::read(path("deployment-create-zone-anti-affinity.validate.json")).unwrap();
    big.extend(std::iter::repeat_n(b' ', 10 * 1024 * 1024));
    let r = run(&["review", "-"], Some(&big));
    assert_eq!(
        (r.code, r.stderr.trim()),
        (
            2,
            "placement-guard: -: request body over 10 MiB (the server answers 413)"
        )
    );
}

#[test]
fn bad_rule_file_names_file_line_and_field() {
    let dir = temp_dir("cli-rules");
    let rules = dir.join("rules.yaml");
    std::fs::File::create(&rules)
        .unwrap()
        .write_all(b"apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  mutableDirectives:\n    action: block\n")
        .unwrap();
    let r = run(
        &["review", "--rules", rules.to_str().unwrap(), "-"],
        Some(b"{}"),
    );
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        format!("placement-guard: {}:5:13: spec.mutableDirectives.action: unknown variant `block`, expected one of deny, warn\n", rules.display())
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn print_defaults_round_trips() {
    let r = run(&["rules", "--print-defaults"], None);
    assert_eq!(r.code, 0);
    let parsed = placement_guard::rules::config::RuleSet::from_yaml("stdout", &r.stdout).unwrap();
    assert_eq!(parsed, placement_guard::rules::config::RuleSet::default());
    insta::assert_snapshot!(r.stdout);
}

#[test]
fn rules_list_names_every_rule_with_its_default() {
    let r = run(&["rules", "--list"], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    insta::assert_snapshot!(r.stdout);
    let r = run(&["rules"], None);
    assert_eq!(r.code, 2);
}

#[test]
fn usage_errors_exit_2() {
    let r = run(&["serve", "--tls-cert", "x.pem"], None);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--tls-key"), "{}", r.stderr);
    let r = run(&["frobnicate"], None);
    assert_eq!(r.code, 2);
    // Values actix would panic on, flags that mean nothing in this mode: clap refuses them.
    for (args, says) in [
        (&["serve", "--workers", "0"][..], "0 is not in 1..=512"),
        (
            &["serve", "--workers", "100000"],
            "100000 is not in 1..=512",
        ),
        (&["serve", "--cache-max-stale", "5"], "--cluster-aware"),
        (
            &[
                "serve",
                "--tls-cert",
                "a",
                "--tls-key",
                "b",
                "--dev-cert-dir",
                "c",
            ],
            "cannot be used with",
        ),
    ] {
        let r = run(args, None);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    }
    // A bad address is refused before a development certificate is written.
    let dir = std::env::temp_dir().join(format!("pg-badaddr-{}", std::process::id()));
    let r = run(
        &[
            "serve",
            "--addr",
            "nothost",
            "--dev-cert-dir",
            dir.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(
        (r.code, r.stderr.trim()),
        (
            2,
            "placement-guard: binding nothost: invalid socket address"
        )
    );
    assert!(!dir.exists());
}

#[test]
fn review_mutate_apply_prints_the_stored_object() {
    let r = run(
        &[
            "review",
            "--mutate",
            "--apply",
            &path("pod-create-jsonpatch-spread.mutate.json"),
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    insta::assert_json_snapshot!(v["spec"]["topologySpreadConstraints"]);
    let r = run(
        &[
            "review",
            "--mutate",
            &path("pod-create-jsonpatch-spread.mutate.json"),
        ],
        None,
    );
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["response"]["patchType"], "JSONPatch");
    let r = run(&["review", "--apply", "-"], Some(b"{}"));
    assert_eq!(r.code, 2, "--apply needs --mutate");
}

#[test]
fn review_mutate_shows_update_explanations() {
    let r = run(
        &[
            "review",
            "--mutate",
            &path("pod-update-remove-nodeselector-key-gated.mutate.json"),
        ],
        None,
    );
    assert_eq!(r.code, 0, "/mutate never denies");
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        v["response"]["warnings"][0],
        "placement-guard: spec.nodeSelector[\"disktype\"] removed on a gated pod; while gated you may only add keys"
    );
}

fn manifests(name: &str) -> String {
    format!("{}/testdata/manifests/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn check_exit_codes_and_stdin() {
    // Errors: exit 1, findings on stdout with file:line:col first.
    let r = run(&["check", &manifests("zone-anti-affinity.yaml")], None);
    assert_eq!(r.code, 1);
    assert!(
        r.stdout.contains(
            "zone-anti-affinity.yaml:23:13: error[hard-anti-affinity] Deployment shop/web"
        ),
        "{}",
        r.stdout
    );
    assert!(
        !r.stdout.contains('\x1b'),
        "no color when stdout is not a terminal"
    );
    // Warnings only: exit 0, unless --fail-on warning.
    let warn_only = b"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w}\nspec:\n  selector: {matchLabels: {app: w}}\n  template:\n    metadata: {labels: {app: w}}\n    spec: {containers: [{name: c, image: i}]}\n";
    let r = run(&["check", "-"], Some(warn_only));
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(
        r.stdout
            .starts_with("<stdin>:8:5: warning[topology-spread-defaults] Deployment w"),
        "{}",
        r.stdout
    );
    let r = run(&["check", "--fail-on", "warning", "-"], Some(warn_only));
    assert_eq!(r.code, 1);
    // A clean manifest.
    let r = run(
        &["check", "-"],
        Some(b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"),
    );
    assert_eq!(r.code, 0);
    assert_eq!(r.stdout, "checked 0 object(s) in 1 file(s): 0 error(s), 0 warning(s); 1 other object(s) skipped, 0 finding(s) suppressed\n");
}

#[test]
fn check_bad_usage_or_no_readable_input_exits_2() {
    let r = run(&["check"], None);
    assert_eq!(r.code, 2);
    let r = run(&["check", "/does/not/exist.yaml"], None);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("no such file or directory: /does/not/exist.yaml"),
        "{}",
        r.stderr
    );
    // A mistyped path next to good ones is a usage error too, not a finding.
    let good = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/manifests");
    let r = run(&["check", good, "/does/not/exist.yaml"], None);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert_eq!(r.stdout, "");
    // No objects at all fails, so a broken `helm template | placement-guard check -` does not
    // pass; --allow-empty says it is expected.
    for empty in [&b""[..], b"---\n# nothing\n"] {
        let r = run(&["check", "-"], Some(empty));
        assert_eq!(r.code, 2);
        assert!(r.stderr.contains("no objects in the input"), "{}", r.stderr);
        let r = run(&["check", "--allow-empty", "-"], Some(empty));
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    // Nor do documents that are not Kubernetes objects (a chart's Chart.yaml, values.yaml).
    let chart = b"apiVersion: v2\nname: web\nversion: 0.1.0\n---\nreplicaCount: 2\n";
    let r = run(&["check", "-"], Some(&chart[..]));
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert_eq!(r.stderr.trim(), "placement-guard: no Kubernetes objects in the input, only 2 document(s) without a kind (first: <stdin>:1; a Helm chart? check `helm template` output); pass --allow-empty if that is expected");
    // Beside objects they are named in a note, not counted as objects skipped.
    let mixed = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\nreplicaCount: 2\n";
    let r = run(&["check", "-"], Some(&mixed[..]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("1 other object(s) skipped"),
        "{}",
        r.stdout
    );
    assert!(
        r.stderr
            .contains("note: 1 document(s) without a kind not checked (first: <stdin>:5)"),
        "{}",
        r.stderr
    );
    let empty = temp_dir("empty");
    let r = run(&["check", empty.to_str().unwrap()], None);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("no manifests found"), "{}", r.stderr);
    let r = run(&["check", "-o", "yaml", "-"], Some(b""));
    assert_eq!(r.code, 2);
    // Nothing readable: exit 2, and a machine-read report is still written, with the finding.
    for (format, want) in [
        ("json", "\"rule\": \"unreadable\""),
        ("sarif", "\"ruleId\": \"unreadable\""),
    ] {
        let r = run(&["check", "-o", format, "-"], Some(b"kind: \x80\x81bad"));
        assert_eq!(r.code, 2, "{format}");
        assert!(r.stdout.contains(want), "{format}: {}", r.stdout);
        serde_json::from_str::<serde_json::Value>(&r.stdout).unwrap();
        assert!(r.stderr.contains("no input could be read"), "{}", r.stderr);
    }
    // In text, on stderr, at its line and column as in the machine-read reports.
    let r = run(&["check", "-"], Some(b"kind: \x80\x81bad"));
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        "placement-guard: <stdin>:1:7: not UTF-8 text\nplacement-guard: no input could be read\n"
    );
    std::fs::remove_dir_all(empty).ok();
}

#[test]
fn check_directory_in_every_format() {
    let dir = format!("{}/testdata/manifests", env!("CARGO_MANIFEST_DIR"));
    for format in ["text", "json", "sarif", "junit"] {
        let r = run(&["check", "-o", format, &dir], None);
        assert_eq!(r.code, 1, "{format}");
        match format {
            "json" => {
                let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
                assert_eq!(v["summary"]["errors"], 7);
                assert_eq!(v["summary"]["files"], 4);
            }
            "sarif" => {
                let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
                assert_eq!(v["version"], "2.1.0");
            }
            "junit" => assert!(r.stdout.starts_with("<?xml"), "{}", r.stdout),
            _ => assert!(r.stdout.ends_with("2 finding(s) suppressed\n")),
        }
    }
}

#[test]
fn test_command_passes_on_the_project_suites() {
    let r = run(
        &[
            "test",
            concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/suites"),
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(r.stdout.ends_with("33 passed, 0 failed\n"), "{}", r.stdout);
    // A case filter runs only the cases whose path contains the text.
    let r = run(
        &[
            "test",
            "--filter",
            "node-selection/pod-update",
            concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/suites"),
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(r.stdout.ends_with("2 passed, 0 failed\n"), "{}", r.stdout);
    // A filter that matches nothing fails, rather than passing with nothing run.
    let r = run(
        &[
            "test",
            "--filter",
            "no-such-case",
            concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/suites"),
        ],
        None,
    );
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert_eq!(
        r.stderr,
        "placement-guard: no test case matched --filter \"no-such-case\"\n"
    );
}

#[test]
fn test_command_shows_a_diff_when_a_rule_file_changes_verdicts() {
    let suite = temp_dir("suite");
    let src = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/suites/hard-anti-affinity-strict"
    );
    for e in std::fs::read_dir(src).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, suite.join(p.file_name().unwrap())).unwrap();
    }
    // Relax namespace scope: the StatefulSet and the same-namespace pod are now allowed.
    std::fs::write(
        suite.join("rules.yaml"),
        "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  hardAntiAffinity:\n    namespaceScope: warn\n",
    )
    .unwrap();
    let r = run(&["test", suite.to_str().unwrap()], None);
    assert_eq!(r.code, 1);
    assert!(
        r.stdout.contains("-allowed: false\n+allowed: true\n"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.ends_with("1 passed, 2 failed\n"), "{}", r.stdout);
    let r = run(&["test", "--update", suite.to_str().unwrap()], None);
    assert_eq!(r.code, 0);
    let r = run(&["test", suite.to_str().unwrap()], None);
    assert_eq!(r.code, 0, "{}", r.stdout);
    // A review case cut short is answered as the server answers it, 400 with the reason, not
    // read as a manifest.
    std::fs::write(
        suite.join("broken.validate.json"),
        r#"{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionRev"#,
    )
    .unwrap();
    let r = run(&["test", "--update", suite.to_str().unwrap()], None);
    assert_eq!(r.code, 0, "{}", r.stdout);
    let snap = std::fs::read_to_string(suite.join("broken.validate.json.expected.yaml")).unwrap();
    assert!(
        snap.ends_with("badRequest: \"request body is not valid JSON: EOF while parsing a string at line 1 column 59\"\nendpoint: validate\n"),
        "{snap}"
    );
    // A snapshot whose case is gone fails the run; --update removes it.
    std::fs::remove_file(suite.join("broken.validate.json")).unwrap();
    let r = run(&["test", suite.to_str().unwrap()], None);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stdout.contains("broken.validate.json.expected.yaml: a snapshot whose case is gone; restore the case, or `placement-guard test --update` removes it\n"),
        "{}",
        r.stdout
    );
    let r = run(&["test", "--update", suite.to_str().unwrap()], None);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(!suite.join("broken.validate.json.expected.yaml").exists());
    // A broken rule file fails its suite, and the other suites still run.
    let other = suite.join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(
        other.join("rules.yaml"),
        "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  nope: 1\n",
    )
    .unwrap();
    let r = run(&["test", suite.to_str().unwrap()], None);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stdout.contains(&format!(
            "FAILED  {}:4:3: ",
            other.join("rules.yaml").display()
        )),
        "{}",
        r.stdout
    );
    assert!(r.stdout.ends_with("3 passed, 1 failed\n"), "{}", r.stdout);
    // No suite at all is a usage error, and a path that does not exist says so.
    let r = run(&["test", "/does/not/exist"], None);
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        "placement-guard: /does/not/exist: no such file or directory\n"
    );
    std::fs::remove_dir_all(suite).ok();
}

/// A link back up a suite tree is a loop: each suite runs once, and two such links do not
/// make the walk exponential. An AdmissionReview written as YAML is sent as a review; a file
/// that judges nothing fails as no case instead of passing for ever with an empty snapshot.
#[test]
fn test_command_runs_each_suite_once_and_refuses_files_that_are_no_case() {
    let root = temp_dir("suite-loops");
    let suite = root.join("pol");
    std::fs::create_dir_all(&suite).unwrap();
    std::fs::write(
        suite.join("rules.yaml"),
        "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec: {}\n",
    )
    .unwrap();
    let review = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/admission-reviews/pod-create-denied.validate.json"
    ))
    .unwrap();
    let value: serde_json::Value = serde_json::from_str(&review).unwrap();
    std::fs::write(
        suite.join("denied.validate.yaml"),
        serde_saphyr::to_string(&value).unwrap(),
    )
    .unwrap();
    std::os::unix::fs::symlink("..", suite.join("up")).unwrap();
    std::os::unix::fs::symlink("..", suite.join("up2")).unwrap();
    let r = run(&["test", "--update", root.to_str().unwrap()], None);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .ends_with("1 snapshot(s) written\n1 passed, 0 failed\n"),
        "{}",
        r.stdout
    );
    assert!(
        r.stderr
            .contains("up (a directory walked already: a link back up"),
        "{}",
        r.stderr
    );
    let snap = std::fs::read_to_string(suite.join("denied.validate.yaml.expected.yaml")).unwrap();
    assert!(snap.contains("allowed: false\n"), "{snap}");
    assert!(snap.contains("endpoint: validate\n"), "{snap}");
    // Neither an object no rule judges nor an empty one is a case.
    std::fs::write(
        suite.join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
    )
    .unwrap();
    std::fs::write(suite.join("empty.yaml"), "{}\n").unwrap();
    let r = run(&["test", "--update", root.to_str().unwrap()], None);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stdout.contains(
            "cm.yaml: not a case: none of its objects is a Pod, a workload or a WorkloadSpread"
        ),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("empty.yaml: not a case: no objects\n"),
        "{}",
        r.stdout
    );
    assert!(!suite.join("cm.yaml.expected.yaml").exists());
    // Nor is an AdmissionReview beside another document; a FIFO named like a case is left
    // out with a line; a suite with no case beside its rules.yaml fails.
    std::fs::remove_file(suite.join("cm.yaml")).unwrap();
    std::fs::remove_file(suite.join("empty.yaml")).unwrap();
    std::fs::write(
        suite.join("two.yaml"),
        format!(
            "{}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c}}\n",
            serde_saphyr::to_string(&value).unwrap()
        ),
    )
    .unwrap();
    let fifo = suite.join("fifo.yaml");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let empty = root.join("empty-suite");
    std::fs::create_dir_all(empty.join("cases")).unwrap();
    std::fs::write(
        empty.join("rules.yaml"),
        "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\n",
    )
    .unwrap();
    std::fs::write(
        empty.join("cases/pod.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n",
    )
    .unwrap();
    let r = run(&["test", root.to_str().unwrap()], None);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stdout
            .contains("two.yaml: not a case: an AdmissionReview is a case alone in its file"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(&format!(
            "FAILED  {}: no case beside its rules.yaml\n",
            empty.display()
        )),
        "{}",
        r.stdout
    );
    assert!(
        r.stderr.contains("fifo.yaml (not a regular file)"),
        "{}",
        r.stderr
    );
    std::fs::remove_dir_all(root).ok();
}

#[test]
fn explain_prints_the_schedulers_verdict() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/explain");
    let r = run(
        &[
            "explain",
            "--cluster",
            &format!("{dir}/cluster.yaml"),
            "--pod",
            &format!("{dir}/deployment.yaml"),
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("1/4 nodes are available: 1 node(s) had untolerated taint(s), 2 node(s) didn't match pod topology spread constraints.\n"), "{}", r.stdout);
    let r = run(
        &[
            "explain",
            "-o",
            "json",
            "--cluster",
            &format!("{dir}/cluster.yaml"),
            "--pod",
            &format!("{dir}/deployment.yaml"),
        ],
        None,
    );
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["feasible"], serde_json::json!(["node4"]));
    // A manifest without a namespace goes where -n puts it, as `kubectl apply -n` would: the
    // spread then counts that namespace's pods (none in `other`), not default's.
    let manifest = std::fs::read_to_string(format!("{dir}/deployment.yaml")).unwrap();
    let unplaced = manifest.replace("name: web, namespace: default", "name: web");
    let feasible = |ns: &str| {
        let args = ["explain", "-o", "json", "--cluster"];
        let cluster = format!("{dir}/cluster.yaml");
        let r = run(
            &[&args[..], &[&cluster, "--pod", "-", "-n", ns]].concat(),
            Some(unplaced.as_bytes()),
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        serde_json::from_str::<serde_json::Value>(&r.stdout).unwrap()["feasible"].clone()
    };
    assert_eq!(feasible("default"), serde_json::json!(["node4"]));
    assert_eq!(
        feasible("other"),
        serde_json::json!(["node1", "node2", "node4"])
    );
    // One that names its namespace keeps it; -n may not contradict it.
    let r = run(
        &[
            "explain",
            "--cluster",
            &format!("{dir}/cluster.yaml"),
            "--pod",
            &format!("{dir}/deployment.yaml"),
            "-n",
            "other",
        ],
        None,
    );
    assert_eq!(r.code, 2);
    assert_eq!(r.stderr, format!("placement-guard: {dir}/deployment.yaml: the Deployment's namespace, \"default\", does not match -n \"other\"; pass -n default or leave -n out (kubectl refuses the same)\n"));
    // Bad input: exit 2 with the reason.
    let r = run(
        &[
            "explain",
            "--cluster",
            "/nope.yaml",
            "--pod",
            &format!("{dir}/deployment.yaml"),
        ],
        None,
    );
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("cannot read /nope.yaml"), "{}", r.stderr);
    let r = run(
        &[
            "explain",
            "--cluster",
            &format!("{dir}/deployment.yaml"),
            "--pod",
            &format!("{dir}/deployment.yaml"),
        ],
        None,
    );
    // A manifest given as the dump holds nothing a snapshot takes.
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("the dump holds no Node, Pod or Namespace: write it with `kubectl get nodes,pods,namespaces -A -o json`"),
        "{}",
        r.stderr
    );
    // A directory is not taken for a missing file.
    let r = run(
        &[
            "explain",
            "--cluster",
            &format!("{dir}/cluster.yaml"),
            "--pod",
            dir,
        ],
        None,
    );
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("is a directory; --pod takes one manifest file"),
        "{}",
        r.stderr
    );
}

#[test]
fn check_workloadspreads_against_their_targets() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/workloadspread/spread.yaml"
    );
    let r = run(&["check", "-o", "json", file], None);
    assert_eq!(r.code, 1);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let found: Vec<(u64, &str, &str)> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["rule"] == "workloadspread")
        .map(|d| {
            (
                d["line"].as_u64().unwrap(),
                d["severity"].as_str().unwrap(),
                d["path"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        found,
        vec![
            (28, "warning", "spec.subsets"),
            (30, "error", "spec.subsets[0].requiredNodeSelector"),
            (49, "error", "spec.targetRef"),
        ]
    );
    // `check` and `/validate` apply the configured action alike: with warn, nothing fails.
    let dir = temp_dir("ws-warn");
    let rules = dir.join("rules.yaml");
    std::fs::write(
        &rules,
        "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  workloadSpread: {action: warn}\n",
    )
    .unwrap();
    let r = run(
        &[
            "check",
            "--rules",
            rules.to_str().unwrap(),
            "-o",
            "json",
            file,
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stdout);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let severities: Vec<&str> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["rule"] == "workloadspread")
        .map(|d| d["severity"].as_str().unwrap())
        .collect();
    assert_eq!(severities, ["warning", "warning", "warning"]);
}

#[test]
fn explain_workloadspread_distribution() {
    let d = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata");
    let ws = format!("{d}/workloadspread/zones.yaml");
    let w = format!("{d}/workloadspread/cloneset.yaml");
    let cluster = format!("{d}/explain/cluster.yaml");
    let on_cluster = |ws: &str, w: &str, more: &[&str]| {
        let args = [
            "explain",
            "--workloadspread",
            ws,
            "--workload",
            w,
            "--cluster",
            &cluster,
        ];
        run(&[&args[..], more].concat(), None)
    };
    let r = on_cluster(&ws, &w, &[]);
    // subset-b's 2 pods fit no node: they would stay Pending.
    assert_eq!(r.code, 1, "{}", r.stderr);
    insta::assert_snapshot!("workloadspread_text", r.stdout);
    // With 3 replicas subset-a takes them all, and every pod has a node.
    let r = on_cluster(&ws, &w, &["--replicas", "3"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(r.stdout.contains("subset-b  -    0  "), "{}", r.stdout);
    // A rendered chart: the WorkloadSpread and its target are found among other objects.
    let dir = temp_dir("ws-chart");
    let chart = dir.join("chart.yaml");
    let cloneset = std::fs::read_to_string(&w).unwrap();
    let spread = std::fs::read_to_string(&ws).unwrap();
    std::fs::write(
        &chart,
        format!(
            "apiVersion: v1\nkind: Service\nmetadata: {{name: web}}\n---\n{}\n---\n{cloneset}\n---\n{spread}",
            cloneset.replacen("name: web", "name: api", 1)
        ),
    )
    .unwrap();
    let c = chart.to_str().unwrap();
    let r = on_cluster(c, c, &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    insta::assert_snapshot!("workloadspread_text", r.stdout);
    // The same chart on stdin, read once for both.
    let text = std::fs::read(&chart).unwrap();
    let args = [
        "explain",
        "--workloadspread",
        "-",
        "--workload",
        "-",
        "--cluster",
        &cluster,
    ];
    let r = run(&args, Some(&text));
    assert_eq!(r.code, 1, "{}", r.stderr);
    insta::assert_snapshot!("workloadspread_text", r.stdout);
    let r = run(
        &[
            "explain",
            "--workloadspread",
            "-",
            "--workload",
            c,
            "--cluster",
            "-",
        ],
        Some(&text),
    );
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        "placement-guard: --cluster and the WorkloadSpread or workload cannot both be read from stdin (-)\n"
    );
    std::fs::remove_dir_all(dir).ok();
    let r = run(
        &[
            "explain",
            "-o",
            "json",
            "--workloadspread",
            &ws,
            "--workload",
            &w,
            "--replicas",
            "2",
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    insta::assert_snapshot!("workloadspread_json", r.stdout);
    // The workload file must hold a workload.
    let r = run(
        &["explain", "--workloadspread", &ws, "--workload", &ws],
        None,
    );
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("is not a workload a WorkloadSpread can target"),
        "{}",
        r.stderr
    );
}

#[test]
fn check_finds_workloadspread_targets_in_a_cluster_dump() {
    let d = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/workloadspread");
    let spread = format!("{d}/api-spread.yaml");
    let r = run(&["check", &spread], None);
    assert_eq!(
        r.code, 0,
        "without the target there is nothing to cross-check: {}",
        r.stdout
    );
    // ... and stderr says so, so nobody takes it for a full check.
    assert_eq!(
        r.stderr,
        format!("placement-guard: note: {spread}: WorkloadSpread default/api-spread: its target Deployment.apps api is not in the input; the cross-checks against it were skipped\n")
    );
    let r = run(
        &[
            "check",
            "--cluster",
            &format!("{d}/cluster-dump.yaml"),
            &spread,
        ],
        None,
    );
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("subset \"gpu\" can never hold a pod: \"pool In [gpu]\" contradicts the workload's own node selection (\"pool In [general]\")"), "{}", r.stdout);
}

/// node-selection policies with a `namespaceSelector` in `check`: the labels come from a
/// `--cluster` dump's Namespaces; without them the run says once which objects and policies.
#[test]
fn check_reads_namespace_labels_from_a_cluster_dump() {
    let dir = temp_dir("ns-labels");
    let rules = dir.join("rules.yaml");
    std::fs::write(
        &rules,
        "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  nodeSelection:\n    policies:\n    - name: pci-pool\n      namespaceSelector: {matchLabels: {compliance: pci}}\n      requiredNodes:\n      - matchExpressions: [{key: pool, operator: In, values: [pci]}]\n",
    )
    .unwrap();
    let dump = dir.join("cluster.yaml");
    std::fs::write(
        &dump,
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: pay, labels: {compliance: pci}}\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: shop}\n",
    )
    .unwrap();
    let pods: &[u8] = b"apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: pay}\nspec:\n  containers: [{name: c, image: i}]\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: b, namespace: shop}\nspec:\n  containers: [{name: c, image: i}]\n";
    let (r, d) = (rules.to_str().unwrap(), dump.to_str().unwrap());
    // A server without the cluster would judge nothing with it: refused at start.
    let refused = run(&["serve", "--addr", "127.0.0.1:0", "--rules", r], None);
    assert_eq!(
        (refused.code, refused.stderr.trim_end()),
        (
            2,
            format!("placement-guard: {r}:7:7: spec.nodeSelection.policies[0].namespaceSelector: Forbidden: selects namespaces by labels, which a server only knows with --cluster-aware (its cache of the cluster): serve with --cluster-aware, or select namespaces by name (namespaces, or the kubernetes.io/metadata.name label)").as_str()
        )
    );
    let with = run(
        &[
            "check",
            "--rules",
            r,
            "--cluster",
            d,
            "-o",
            "json",
            "-q",
            "-",
        ],
        Some(pods),
    );
    assert_eq!(with.code, 1, "{}{}", with.stdout, with.stderr);
    let found: serde_json::Value = serde_json::from_str(&with.stdout).unwrap();
    let messages: Vec<&str> = found["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["rule"] == "node-selection")
        .map(|d| d["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        messages,
        ["Forbidden: pods in namespace \"pay\" must stay on nodes matching \"pool In [pci]\" (policy pci-pool); this selection admits a node labelled {}, outside them"]
    );
    // A namespace the dump lacks is said to be missing from it.
    let ghost: &[u8] = b"apiVersion: v1\nkind: Pod\nmetadata: {name: g, namespace: ghost}\nspec:\n  containers: [{name: c, image: i}]\n";
    let r3 = run(
        &["check", "--rules", r, "--cluster", d, "-q", "-"],
        Some(ghost),
    );
    assert_eq!(r3.code, 0, "{}", r3.stdout);
    assert!(
        r3.stdout.contains("warning[node-selection] Pod ghost/g: metadata.namespace: policy \"pci-pool\" selects namespaces by label and did not judge this object: the labels of namespace \"ghost\" are not known here\n    help: namespace \"ghost\" is neither in --cluster nor in the input before its objects: add it to either"),
        "{}",
        r3.stdout
    );
    // Without them: one warning per namespace, on its first object.
    let without = run(&["check", "--rules", r, "-o", "json", "-"], Some(pods));
    assert_eq!(without.code, 0, "{}", without.stdout);
    let found: serde_json::Value = serde_json::from_str(&without.stdout).unwrap();
    let warned: Vec<String> = found["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["rule"] == "node-selection")
        .map(|d| {
            format!(
                "{} {}: {} ({})",
                d["line"], d["object"], d["message"], d["hint"]
            )
        })
        .collect();
    assert_eq!(
        warned,
        [
            "3 \"Pod pay/a\": \"policy \\\"pci-pool\\\" selects namespaces by label and did not judge this object: the labels of namespace \\\"pay\\\" are not known here\" (\"give its Namespace manifest before the objects in it, or `check --cluster` a dump holding it (`kubectl get namespaces -o yaml`)\")",
            "9 \"Pod shop/b\": \"policy \\\"pci-pool\\\" selects namespaces by label and did not judge this object: the labels of namespace \\\"shop\\\" are not known here\" (\"give its Namespace manifest before the objects in it, or `check --cluster` a dump holding it (`kubectl get namespaces -o yaml`)\")",
        ]
    );
    // A Namespace the API server would refuse is an error; a null label value is "".
    let namespace: &[u8] = b"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: pay\n  labels: {compliance: pci, flag: true, env: }\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: pay}\nspec:\n  containers: [{name: c, image: i}]\n";
    let r2 = run(&["check", "--rules", r, "-q", "-"], Some(namespace));
    assert_eq!(r2.code, 1, "{}", r2.stdout);
    assert!(
        r2.stdout.contains("<stdin>:5:29: error[invalid-object] Namespace pay: metadata.labels[flag]: Invalid value: true: must be a string (quote it to make it a string)"),
        "{}",
        r2.stdout
    );
    assert!(
        r2.stdout.contains("error[node-selection] Pod pay/a: spec.nodeSelector: Forbidden: pods in namespace \"pay\" must stay on nodes matching \"pool In [pci]\""),
        "{}",
        r2.stdout
    );
    std::fs::remove_dir_all(dir).ok();
}

/// `review --namespaces`: the labels a server's cache would give, for policies that select
/// namespaces by label; without them the request is not judged by those, and says so.
#[test]
fn review_takes_namespace_labels() {
    let suite = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/suites/node-selection-labels"
    );
    let (rules, namespaces, case) = (
        format!("{suite}/rules.yaml"),
        format!("{suite}/namespaces.yaml"),
        format!("{suite}/pod-update-gated-tightened-into-gpu.validate.json"),
    );
    let r = run(
        &[
            "review",
            "--rules",
            &rules,
            "--namespaces",
            &namespaces,
            &case,
        ],
        None,
    );
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("(policy pci-teams-off-gpu)"),
        "{}",
        r.stdout
    );
    let r = run(&["review", "--rules", &rules, &case], None);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("node-selection: policies \\\"pci-pool\\\", \\\"pci-teams-off-gpu\\\" select namespaces by label and did not judge this request"),
        "{}",
        r.stdout
    );
    let r = run(
        &[
            "review",
            "--rules",
            &rules,
            "--namespaces",
            "/does/not/exist",
            &case,
        ],
        None,
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with("placement-guard: cannot read /does/not/exist: "),
        "{}",
        r.stderr
    );
}

/// `check DIR | head -1`: a closed stdout ends every command quietly, as SIGPIPE ends other Unix
/// tools, instead of a panic.
#[test]
fn a_closed_stdout_ends_commands_quietly() {
    let d = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata");
    let dump = format!("{d}/explain/cluster.yaml");
    let pod = format!("{d}/explain/deployment.yaml");
    let manifests = format!("{d}/manifests");
    let commands: [&[&str]; 4] = [
        &["check", &manifests],
        &["rules", "--list"],
        &["rules", "--print-defaults"],
        &["explain", "--cluster", &dump, "--pod", &pod],
    ];
    for args in commands {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(BIN)
            .args(args)
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(141), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{args:?}");
    }
}

/// A directory the user may not read is reported as unreadable where it lies, and the walk goes
/// on: the files beside it are still checked. Root reads every directory, so as root the
/// binary runs as nobody (a copy, where nobody may run it).
#[test]
fn check_goes_on_past_an_unreadable_directory() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("locked");
    let bad = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/manifests/zone-anti-affinity.yaml"
    ))
    .unwrap();
    std::fs::write(dir.join("app.yaml"), &bad).unwrap();
    std::fs::create_dir_all(dir.join("sub/locked")).unwrap();
    std::fs::write(dir.join("sub/locked/hidden.yaml"), &bad).unwrap();
    std::fs::write(dir.join("sub/z.yaml"), &bad).unwrap();
    std::fs::set_permissions(
        dir.join("sub/locked"),
        std::fs::Permissions::from_mode(0o000),
    )
    .unwrap();
    let root = Command::new("id").arg("-u").output().unwrap().stdout == b"0\n";
    let mut cmd = if root {
        let bin = dir.join("placement-guard");
        std::fs::copy(BIN, &bin).unwrap();
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(bin);
        c
    } else {
        Command::new(BIN)
    };
    // The copy's write handle may live on a moment in a child another test thread forked
    // meanwhile (ETXTBSY until that child execs): tried again then.
    let mut out = cmd.current_dir(&dir).args(["check", "."]).output().unwrap();
    for _ in 0..20 {
        if !String::from_utf8_lossy(&out.stderr).contains("Text file busy") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        out = cmd.output().unwrap();
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(
            "./sub/locked:1:1: error[unreadable] cannot read directory: Permission denied"
        ),
        "{stdout}"
    );
    // Both readable files were checked, before and after the locked directory.
    assert!(stdout.contains("./app.yaml:"), "{stdout}");
    assert!(stdout.contains("./sub/z.yaml:"), "{stdout}");
    assert!(!stdout.contains("hidden.yaml"), "{stdout}");
    std::fs::set_permissions(
        dir.join("sub/locked"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
}

/// `--exclude` globs match paths without the `./` a walk of `.` puts in front, and a glob
/// written with one matches too; `dir/` and `**/name` mean what they mean in a .gitignore.
#[test]
fn exclude_globs_ignore_a_leading_dot_slash() {
    let dir = temp_dir("exclude");
    let bad = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/manifests/zone-anti-affinity.yaml"
    ))
    .unwrap();
    std::fs::create_dir_all(dir.join("bad")).unwrap();
    std::fs::write(dir.join("app.yaml"), &bad).unwrap();
    std::fs::write(dir.join("bad/one.yaml"), &bad).unwrap();
    // Written as a .gitignore line is: `bad/` a directory, `**/x` at the top too; a file
    // named `bad` is not a directory.
    std::fs::create_dir_all(dir.join("other")).unwrap();
    std::fs::write(dir.join("other/app.yaml"), &bad).unwrap();
    for (glob, files) in [
        ("bad/*", 2),
        ("./bad/*", 2),
        ("bad/one.yaml", 2),
        ("one.yaml", 2),
        ("bad/", 2),
        ("**/app.yaml", 1),
        ("app.yaml/", 3),
        ("/app.yaml", 2),
        ("./app.yaml", 2),
        ("/bad/", 2),
        ("/one.yaml", 3),
    ] {
        let out = Command::new(BIN)
            .current_dir(&dir)
            .args(["check", "-o", "json", "--exclude", glob, "."])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["summary"]["files"], files, "{glob}");
    }
    // Anchored at the top of the walk, whatever it is called; written from `/`, an absolute
    // path is matched as written too.
    let top = dir.display().to_string();
    let bad_dir = format!("{top}/bad/");
    for (root, glob, files) in [
        (top.as_str(), bad_dir.as_str(), 2),
        (top.as_str(), "/bad/", 2),
        (top.as_str(), "/other/app.yaml", 2),
    ] {
        let out = Command::new(BIN)
            .args(["check", "-o", "json", "--exclude", glob, root])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["summary"]["files"], files, "{root} {glob}");
    }
}

/// Walks leave out hidden directories and Helm chart templates (and say so), `--exclude` leaves
/// out more, and the rule filters and `--quiet` shape the report.
#[test]
fn check_walks_and_filters_like_a_linter() {
    let dir = temp_dir("walk");
    let bad = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/manifests/zone-anti-affinity.yaml"
    ))
    .unwrap();
    let chart = dir.join("chart");
    for sub in [".git", "chart/templates", "vendor"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: c\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(
        chart.join("templates/deploy.yaml"),
        "{{ .Values.broken }}: [\n",
    )
    .unwrap();
    std::fs::write(dir.join(".git/config.yaml"), "[core]\n").unwrap();
    std::fs::write(dir.join("vendor/zone.yaml"), &bad).unwrap();
    std::fs::write(dir.join("app.yaml"), &bad).unwrap();
    // A link back up is a loop: followed, it would walk the tree again at every level.
    std::os::unix::fs::symlink("..", dir.join("vendor/loop")).unwrap();
    // A FIFO named like a manifest is passed over: reading it would block the walk.
    let fifo = dir.join("pipe.yaml");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    // Should it be read after all, a writer ends it, so the assertions fail instead of hanging.
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(20));
        let _ = std::fs::OpenOptions::new().write(true).open(fifo);
    });
    let d = dir.to_str().unwrap();
    let r = run(&["check", "-o", "json", d], None);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("pipe.yaml (not a regular file)"),
        "{}",
        r.stderr
    );
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        v["summary"]["files"], 3,
        "app.yaml, Chart.yaml, vendor/zone.yaml"
    );
    assert!(r.stderr.contains(".git (hidden directory)"), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("vendor/loop (a link back to a directory above it: a file system loop)"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("chart/templates (Helm chart templates"),
        "{}",
        r.stderr
    );
    let r = run(&["check", "-o", "json", "--exclude", "*/vendor", d], None);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["summary"]["files"], 2);
    // Rule filters.
    let rules = |r: &Run| -> Vec<String> {
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        let mut ids: Vec<String> = v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["rule"].as_str().unwrap().to_string())
            .collect();
        ids.dedup();
        ids
    };
    let app = dir.join("app.yaml");
    let a = app.to_str().unwrap();
    let r = run(
        &[
            "check",
            "-o",
            "json",
            "--only-rule",
            "hard-anti-affinity",
            a,
        ],
        None,
    );
    assert_eq!(rules(&r), ["hard-anti-affinity"]);
    let r = run(
        &[
            "check",
            "-o",
            "json",
            "--skip-rule",
            "hard-anti-affinity",
            a,
        ],
        None,
    );
    assert!(
        !rules(&r).contains(&"hard-anti-affinity".to_string()),
        "{:?}",
        rules(&r)
    );
    assert_eq!(r.code, 0, "only warnings remain");
    // Suppressed findings are filtered as findings are.
    let suppressed = |r: &Run| -> Vec<String> {
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        v["suppressed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["rule"].as_str().unwrap().to_string())
            .collect()
    };
    let db = "testdata/manifests/suppressed.json";
    let r = run(&["check", "-o", "json", db], None);
    assert_eq!(
        suppressed(&r),
        ["hard-anti-affinity", "topology-spread-defaults"]
    );
    let r = run(
        &[
            "check",
            "-o",
            "json",
            "--skip-rule",
            "hard-anti-affinity",
            db,
        ],
        None,
    );
    assert_eq!(suppressed(&r), ["topology-spread-defaults"]);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&r.stdout).unwrap()["summary"]["suppressed"],
        1
    );
    let r = run(
        &[
            "check",
            "-o",
            "json",
            "--only-rule",
            "hard-anti-affinity",
            db,
        ],
        None,
    );
    assert_eq!(suppressed(&r), ["hard-anti-affinity"]);
    let r = run(&["check", "--only-rule", "no-such-rule", a], None);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("unknown rule \"no-such-rule\"; rules: mutable-directives"),
        "{}",
        r.stderr
    );
    // An input that could not be checked is reported whatever the filters say: a broken file
    // or a garbled `helm template` stream must not pass a filtered run.
    let broken = "testdata/manifests/broken.yaml";
    for filter in ["--only-rule", "--skip-rule"] {
        let r = run(
            &["check", "-o", "json", filter, "hard-anti-affinity", broken],
            None,
        );
        assert_eq!(
            (rules(&r), r.code),
            (vec!["yaml-syntax".to_string()], 1),
            "{filter}"
        );
    }
    let garbled = "Error: INSTALLATION FAILED: template: web/templates/deploy.yaml:12:3: bad\n";
    let r = run(
        &["check", "--only-rule", "hard-anti-affinity", "-"],
        Some(garbled.as_bytes()),
    );
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stdout.contains("<stdin>:1:27: error[yaml-syntax]"),
        "{}",
        r.stdout
    );
    let r = run(&["check", "--skip-rule", "yaml-syntax", broken], None);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("--skip-rule yaml-syntax: yaml-syntax findings say an input could not be checked and are always reported; leave the file out with --exclude instead"),
        "{}",
        r.stderr
    );
    // --quiet: findings only.
    let r = run(&["check", "--quiet", d], None);
    assert!(!r.stdout.contains("checked "), "{}", r.stdout);
    assert!(
        r.stdout.contains("error[hard-anti-affinity]"),
        "{}",
        r.stdout
    );
    assert_eq!(r.stderr, "");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn utf16_is_read_from_stdin_as_from_a_file() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n";
    let le: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain(text.encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    let r = run(&["check", "-"], Some(&le));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("1 other object(s) skipped"),
        "{}",
        r.stdout
    );
}

#[test]
fn shell_completions() {
    for shell in ["bash", "zsh", "fish"] {
        let r = run(&["completions", shell], None);
        assert_eq!(r.code, 0, "{shell}");
        assert!(
            r.stdout.contains("placement-guard") && r.stdout.contains("only-rule"),
            "{shell}"
        );
    }
    // bash completes a subcommand's options (each dispatched name has its case arm).
    let r = run(&["completions", "bash"], None);
    let dir = std::env::temp_dir().join(format!("pg-compl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("pg.bash");
    std::fs::write(&script, &r.stdout).unwrap();
    let complete = |words: &str, cword: usize| {
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!(
                "source {}; COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_LINE=\"{words}\"; COMP_POINT=${{#COMP_LINE}}; _placement__guard placement-guard \"${{COMP_WORDS[$COMP_CWORD]}}\" \"${{COMP_WORDS[$COMP_CWORD-1]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
                script.display()
            ))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let serve = complete("placement-guard serve --wor", 2);
    assert_eq!(serve.trim(), "--workers", "{serve}");
    let format = complete("placement-guard check --output ", 3);
    assert!(format.contains("sarif"), "{format}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn explain_exits_1_when_no_node_fits() {
    let d = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/explain");
    let dir = temp_dir("nofit");
    let pod = dir.join("pod.yaml");
    std::fs::write(
        &pod,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec:\n  nodeSelector: {no-such-label: x}\n  containers: [{name: c, image: i}]\n",
    )
    .unwrap();
    let r = run(
        &[
            "explain",
            "--cluster",
            &format!("{d}/cluster.yaml"),
            "--pod",
            pod.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.starts_with("0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 node(s) didn't match Pod's node affinity/selector."), "{}", r.stdout);
    // The same pod from stdin.
    let manifest = std::fs::read(&pod).unwrap();
    let cluster = format!("{d}/cluster.yaml");
    let r = run(
        &["explain", "--cluster", &cluster, "--pod", "-"],
        Some(&manifest),
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.starts_with("0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 node(s) didn't match Pod's node affinity/selector."), "{}", r.stdout);
    // A quantity that is none would be read as zero and fit: refused, as the apiserver does.
    let r = run(
        &["explain", "--cluster", &cluster, "--pod", "-"],
        Some(b"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: i, resources: {requests: {cpu: lots}}}]\n"),
    );
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (2, "placement-guard: -: Pod: spec.containers[0].resources.requests.cpu: Invalid value: \"lots\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'\n")
    );
    let r = run(
        &["explain", "--cluster", "-", "--pod", "-"],
        Some(&manifest),
    );
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        "placement-guard: --pod and --cluster cannot both be read from stdin (-)\n"
    );
    // An empty dump is a `kubectl get` that failed, not a cluster where nothing fits.
    let empty = dir.join("empty.json");
    std::fs::write(&empty, "").unwrap();
    let r = run(
        &[
            "explain",
            "--cluster",
            empty.to_str().unwrap(),
            "--pod",
            pod.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert_eq!(
        r.stderr,
        format!("placement-guard: {}: the dump holds no Node, Pod or Namespace: write it with `kubectl get nodes,pods,namespaces -A -o json`\n", empty.display())
    );
    std::fs::remove_dir_all(dir).ok();
}

/// Kruise injects nothing into the pods of a workload its WorkloadSpread does not target.
#[test]
fn explain_workloadspread_refuses_a_workload_it_does_not_target() {
    let d = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata");
    let dir = temp_dir("not-target");
    let other = dir.join("other.yaml");
    let cloneset = std::fs::read_to_string(format!("{d}/workloadspread/cloneset.yaml")).unwrap();
    std::fs::write(&other, cloneset.replacen("name: web", "name: api", 1)).unwrap();
    let r = run(
        &[
            "explain",
            "--workloadspread",
            &format!("{d}/workloadspread/zones.yaml"),
            "--workload",
            other.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(
        r.stderr.contains("WorkloadSpread web-zones targets CloneSet.apps.kruise.io web, not CloneSet.apps.kruise.io api: Kruise injects nothing into this workload's pods"),
        "{}",
        r.stderr
    );
    std::fs::remove_dir_all(dir).ok();
}

/// The YAML dump reader parses on two threads kept for the process: reading many dumps starts
/// no thread per dump (threads started per dump left the parser's thread-local destructors
/// racing their exit, which LeakSanitizer reported while fuzzing `cluster_dump`).
#[test]
fn yaml_dumps_are_parsed_on_two_threads_kept_for_the_process() {
    let parsers = || {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter(|t| {
                let comm = std::fs::read_to_string(t.as_ref().unwrap().path().join("comm"));
                comm.is_ok_and(|c| c.starts_with("yaml-parser-"))
            })
            .count()
    };
    let dump = "apiVersion: v1\nkind: List\nitems:\n- kind: Node\n  metadata: {name: n1}\n- kind: Node\n  metadata: {name: n2}\n";
    for _ in 0..50 {
        let objs =
            placement_guard::core::snapshot::yaml_objects_pieces(dump.as_bytes(), 1).unwrap();
        assert_eq!(objs.len(), 2);
    }
    assert_eq!(parsers(), 2);
}

/// A NAME beside a dump is still read from the live cluster; without one, the error says how
/// to explain an object of the dump instead.
#[test]
fn explain_by_name_beside_a_dump_without_a_cluster_says_how_to_use_the_dump() {
    let home = temp_dir("no-kubeconfig");
    let dump = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/explain/cluster.yaml");
    let out = Command::new(BIN)
        .args([
            "explain",
            "--cluster",
            dump,
            "--pod",
            "deploy/web",
            "-n",
            "shop",
        ])
        .env("KUBECONFIG", home.join("missing"))
        .env("HOME", &home)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with("placement-guard: no cluster to talk to: "),
        "{stderr}"
    );
    assert!(
        stderr.trim_end().ends_with(&format!("; --pod deploy/web is read from the live cluster even with --cluster: to explain an object of the dump, give it as a file: yq '.items[] | select(.kind == \"Deployment\" and .metadata.name == \"web\" and .metadata.namespace == \"shop\")' {dump} > pod.yaml")),
        "{stderr}"
    );
    std::fs::remove_dir_all(home).ok();
}

/// A pod taken out of a dump (`jq` on `kubectl get -o json`, as the hint above says) is
/// placed as the live one would be: without itself, as if it were scheduled now. Counted twice
/// and held to its nodeName, it would fit nowhere. What the snapshot does not take (other
/// kinds, the pods of a deleted node) is skipped with a note.
#[test]
fn explain_a_pod_of_the_dump_without_itself() {
    let dir = temp_dir("dump-pod");
    let fat = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "fat", "namespace": "shop", "uid": "6f1c", "labels": {"app": "fat"}},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "3"}}}]},
        "status": {"phase": "Running"}});
    let dump = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
         "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
        fat,
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "orphan", "namespace": "shop", "uid": "9a2b"},
         "spec": {"nodeName": "deleted-node", "containers": [{"name": "c", "image": "i"}]}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"},
         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                  "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}},
    ]});
    let cluster = dir.join("cluster.json");
    std::fs::write(&cluster, dump.to_string()).unwrap();
    // `explain --cluster DUMP --pod FILE` of `pod` written as the file.
    let explain = |pod: &serde_json::Value| {
        let file = dir.join("pod.json");
        std::fs::write(&file, pod.to_string()).unwrap();
        run(
            &[
                "explain",
                "--cluster",
                cluster.to_str().unwrap(),
                "--pod",
                file.to_str().unwrap(),
            ],
            None,
        )
    };
    let r = explain(&fat);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.starts_with("1/1 nodes are available"),
        "{}",
        r.stdout
    );
    assert_eq!(
        r.stderr,
        "placement-guard: note: 1 pod(s) of the dump are bound to nodes it does not hold (nodes deleted since, or left out of the dump): they are left out\n\
         placement-guard: note: 1 object(s) of the dump are not Nodes, Pods or Namespaces: the filters do not read them\n\
         placement-guard: pod shop/fat is bound to n1; explained as if it were scheduled now, without itself\n"
    );
    // A pod of the API that the dump does not hold on its node (newer than the dump, or of
    // another cluster): nothing of the dump's is taken for it, and a note says so.
    let mut stranger = fat.clone();
    stranger["metadata"]["name"] = "stranger".into();
    stranger["metadata"]["labels"] = serde_json::json!({"app": "stranger"});
    let r = explain(&stranger);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("Insufficient cpu"), "{}", r.stdout);
    assert!(
        r.stderr.ends_with("placement-guard: note: pod shop/stranger is not among the pods of the dump on node \"n1\" (a snapshot older than the pod, or another cluster's): it is placed as a new pod, beside what runs there\n"),
        "{}",
        r.stderr
    );
    // The same spec written by hand (no uid) is a new pod held to its nodeName: the running one
    // takes the room.
    let mut new = fat.clone();
    new["metadata"]["uid"] = serde_json::Value::Null;
    new["metadata"]["name"] = "fat-2".into();
    let r = explain(&new);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("Insufficient cpu"), "{}", r.stdout);
    std::fs::remove_dir_all(dir).ok();
}

/// Beside a dump, a pod that names a RuntimeClass is placed with what the class adds when the
/// dump holds it (`kubectl get ...,runtimeclasses`), and a note says how to dump it when not.
#[test]
fn explain_applies_the_runtime_class_of_a_dump() {
    let dir = temp_dir("runtime-class");
    let nodes = r#"
- {apiVersion: v1, kind: Node, metadata: {name: plain, labels: {kubernetes.io/hostname: plain}}, status: {allocatable: {cpu: "2", pods: "10"}}}
- {apiVersion: v1, kind: Node, metadata: {name: sandbox, labels: {sandbox: "yes"}}, spec: {taints: [{key: sandbox, value: x, effect: NoSchedule}]}, status: {allocatable: {cpu: "2", pods: "10"}}}
"#;
    let class = "- {apiVersion: node.k8s.io/v1, kind: RuntimeClass, metadata: {name: gvisor}, handler: runsc, scheduling: {nodeSelector: {sandbox: \"yes\"}, tolerations: [{key: sandbox, operator: Exists, effect: NoSchedule}]}}\n";
    let with = dir.join("with.yaml");
    std::fs::write(
        &with,
        format!("apiVersion: v1\nkind: List\nitems:{nodes}{class}"),
    )
    .unwrap();
    let without = dir.join("without.yaml");
    std::fs::write(
        &without,
        format!("apiVersion: v1\nkind: List\nitems:{nodes}"),
    )
    .unwrap();
    let pod = dir.join("pod.yaml");
    std::fs::write(
        &pod,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {runtimeClassName: gvisor, containers: [{name: c, image: i}]}\n",
    )
    .unwrap();
    let r = run(
        &[
            "explain",
            "--cluster",
            with.to_str().unwrap(),
            "--pod",
            pod.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.starts_with(
            "1/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."
        ),
        "{}",
        r.stdout
    );
    assert!(
        r.stderr.contains(
            "placement-guard: note: placed with what RuntimeClass \"gvisor\" adds at admission"
        ),
        "{}",
        r.stderr
    );
    let r = run(
        &[
            "explain",
            "--cluster",
            without.to_str().unwrap(),
            "--pod",
            pod.to_str().unwrap(),
        ],
        None,
    );
    assert!(
        r.stderr.contains("placement-guard: note: the pod names RuntimeClass \"gvisor\", which the dump does not hold: placed without the overhead, nodeSelector and tolerations it adds (dump them too: kubectl get nodes,pods,namespaces,runtimeclasses -A -o json)"),
        "{}",
        r.stderr
    );
    std::fs::remove_dir_all(dir).ok();
}

/// Beside a dump that holds LimitRanges, a new pod's containers get the default requests of
/// its namespace's, as LimitRanger gives them at admission: a pod that asks for nothing does not
/// fit a node with less room than the defaults; another namespace's LimitRanges do not count,
/// nor do they for a pod read from the API server (admitted already).
#[test]
fn explain_applies_the_limit_ranges_of_a_dump() {
    let dir = temp_dir("limit-range");
    let dump = dir.join("dump.yaml");
    std::fs::write(
        &dump,
        r#"apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: small}, status: {allocatable: {cpu: 400m, pods: "10"}}}
- {apiVersion: v1, kind: Namespace, metadata: {name: shop}}
- {apiVersion: v1, kind: LimitRange, metadata: {name: defaults, namespace: shop}, spec: {limits: [{type: Container, default: {cpu: 500m}}]}}
"#,
    )
    .unwrap();
    let pod = dir.join("pod.yaml");
    std::fs::write(
        &pod,
        "apiVersion: v1
kind: Pod
metadata: {name: p, namespace: shop}
spec: {containers: [{name: app, image: i}]}
",
    )
    .unwrap();
    let explain = |pod: &std::path::Path| {
        run(
            &[
                "explain",
                "--cluster",
                dump.to_str().unwrap(),
                "--pod",
                pod.to_str().unwrap(),
            ],
            None,
        )
    };
    let r = explain(&pod);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .starts_with("0/1 nodes are available: 1 Insufficient cpu."),
        "{}",
        r.stdout
    );
    assert!(
        r.stderr.contains("placement-guard: note: placed with the default requests LimitRanger gives at admission (LimitRange \"defaults\": cpu 500m for container \"app\")"),
        "{}",
        r.stderr
    );
    // In another namespace, and as read from the API server: as written.
    let elsewhere = dir.join("elsewhere.yaml");
    std::fs::write(
        &elsewhere,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: other}\nspec: {containers: [{name: app, image: i}]}\n",
    )
    .unwrap();
    let admitted = dir.join("admitted.yaml");
    std::fs::write(
        &admitted,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: shop, uid: 5f0c}\nspec: {containers: [{name: app, image: i}]}\n",
    )
    .unwrap();
    for p in [&elsewhere, &admitted] {
        let r = explain(p);
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        assert!(!r.stderr.contains("LimitRange"), "{}", r.stderr);
    }
    std::fs::remove_dir_all(dir).ok();
}

/// A subset whose feasible nodes have room for fewer of its pods than the distribution gives
/// it is flagged, with how many fit, and `explain` exits 1: the rest would stay Pending.
#[test]
fn explain_workloadspread_counts_the_room_of_each_subset() {
    let dir = temp_dir("ws-room");
    let ws = dir.join("ws.yaml");
    std::fs::write(
        &ws,
        "apiVersion: apps.kruise.io/v1alpha1\nkind: WorkloadSpread\nmetadata: {name: ws, namespace: default}\nspec:\n  targetRef: {apiVersion: apps.kruise.io/v1alpha1, kind: CloneSet, name: web}\n  subsets:\n  - {name: a, requiredNodeSelectorTerm: {matchExpressions: [{key: zone, operator: In, values: [z1]}]}, maxReplicas: 1}\n  - {name: b, requiredNodeSelectorTerm: {matchExpressions: [{key: zone, operator: In, values: [z2]}]}}\n",
    )
    .unwrap();
    let cs = dir.join("cs.yaml");
    std::fs::write(
        &cs,
        "apiVersion: apps.kruise.io/v1alpha1\nkind: CloneSet\nmetadata: {name: web, namespace: default}\nspec:\n  replicas: 4\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: c, image: x, resources: {requests: {cpu: 500m}}}]}\n",
    )
    .unwrap();
    // n2 (z2) has 1 CPU left of 2: room for two 500m pods, and the subset gets three.
    let dump = dir.join("dump.yaml");
    std::fs::write(
        &dump,
        "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Node, metadata: {name: n1, labels: {zone: z1}}, status: {allocatable: {cpu: \"2\", pods: \"110\"}}}\n- {apiVersion: v1, kind: Node, metadata: {name: n2, labels: {zone: z2}}, status: {allocatable: {cpu: \"2\", pods: \"110\"}}}\n- {apiVersion: v1, kind: Pod, metadata: {name: e1, namespace: default}, spec: {nodeName: n2, containers: [{name: c, image: x, resources: {requests: {cpu: \"1\"}}}]}}\n",
    )
    .unwrap();
    let args = |extra: &[&'static str]| {
        let mut a = vec![
            "explain".to_string(),
            "--workloadspread".into(),
            ws.display().to_string(),
            "--workload".into(),
            cs.display().to_string(),
            "--cluster".into(),
            dump.display().to_string(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let a = args(&[]);
    let r = run(&a.iter().map(String::as_str).collect::<Vec<_>>(), None);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("b       -    3     zone In [z2]   n2 (room for 2 of its 3 pod(s): the rest stay Pending)\n"),
        "{}",
        r.stdout
    );
    let a = args(&["-o", "json"]);
    let r = run(&a.iter().map(String::as_str).collect::<Vec<_>>(), None);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["subsets"][0]["room"], 4);
    assert_eq!(v["subsets"][1]["room"], 2);
    std::fs::remove_dir_all(dir).ok();
}

/// A key written twice is a `duplicate-key` warning at the second, in YAML and in a JSON
/// stream alike, the object checked with the last value; `--skip-rule duplicate-key` leaves
/// it out.
#[test]
fn duplicate_keys_are_warned_and_can_be_skipped() {
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: x}\ndata: {a: y}\n";
    let r = run(&["check", "-"], Some(yaml.as_bytes()));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.starts_with("<stdin>:5:1: warning[duplicate-key] duplicated key in mapping: \"data\": kubectl keeps the last value, and the one before it is lost\n"),
        "{}",
        r.stdout
    );
    let json = "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\"}\n  {\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"}\n";
    let r = run(&["check", "-"], Some(json.as_bytes()));
    assert!(
        r.stdout.starts_with(
            "<stdin>:2:41: warning[duplicate-key] duplicated key in mapping: \"kind\""
        ),
        "{}",
        r.stdout
    );
    let r = run(
        &["check", "--skip-rule", "duplicate-key", "-"],
        Some(yaml.as_bytes()),
    );
    assert!(!r.stdout.contains("duplicate-key"), "{}", r.stdout);
    let r = run(
        &["check", "--fail-on", "warning", "-"],
        Some(yaml.as_bytes()),
    );
    assert_eq!(r.code, 1, "{}", r.stdout);
}

/// A subset's pods are placed with what their RuntimeClass adds at admission, and the text says
/// so; a class the dump lacks, or one kube-apiserver would refuse the pods for, is a note on the
/// subset instead of a silent placement as written.
#[test]
fn explain_workloadspread_applies_and_notes_the_runtime_class() {
    let d = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata");
    let ws = format!("{d}/workloadspread/zones.yaml");
    let dump = std::fs::read_to_string(format!("{d}/explain/cluster.yaml")).unwrap();
    let cloneset = std::fs::read_to_string(format!("{d}/workloadspread/cloneset.yaml")).unwrap();
    let dir = temp_dir("ws-runtime-class");
    let explain = |template_spec: &str, class: &str| {
        let w = dir.join("cloneset.yaml");
        std::fs::write(
            &w,
            cloneset.replace("    spec:\n", &format!("    spec:\n{template_spec}")),
        )
        .unwrap();
        let c = dir.join("cluster.yaml");
        std::fs::write(&c, format!("{dump}{class}")).unwrap();
        run(
            &[
                "explain",
                "--workloadspread",
                &ws,
                "--workload",
                w.to_str().unwrap(),
                "--cluster",
                c.to_str().unwrap(),
            ],
            None,
        )
    };
    // The class sends its pods to zoneB, where subset-a's term cannot go.
    let zone_b = "- {apiVersion: node.k8s.io/v1, kind: RuntimeClass, metadata: {name: kata}, handler: kata, scheduling: {nodeSelector: {topology.kubernetes.io/zone: zoneB}}}\n";
    let r = explain("      runtimeClassName: kata\n", zone_b);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stdout.contains("subset-a  3    3     topology.kubernetes.io/zone In [zoneA]  NONE: 0/4 nodes are available"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("subset subset-a: placed with what RuntimeClass \"kata\" adds at admission (its overhead, nodeSelector and tolerations)\n"),
        "{}",
        r.stdout
    );
    let r = explain("      runtimeClassName: kata\n", "");
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stdout.contains("subset subset-a: the pod names RuntimeClass \"kata\", which the dump does not hold: placed without the overhead, nodeSelector and tolerations it adds"),
        "{}",
        r.stdout
    );
    let r = explain(
        "      runtimeClassName: kata\n      nodeSelector: {topology.kubernetes.io/zone: zoneA}\n",
        zone_b,
    );
    assert!(
        r.stdout.contains("subset subset-a: kube-apiserver refuses the pod (conflict: runtimeClass.scheduling.nodeSelector[topology.kubernetes.io/zone] = zoneB; pod.spec.nodeSelector[topology.kubernetes.io/zone] = zoneA); placed as written\n"),
        "{}",
        r.stdout
    );
}

/// `explain --workloadspread` of the zones example with `spec` added to subset-a's patch, as
/// text and as JSON.
fn explain_patched_zones(tag: &str, spec: &str) -> (Run, Run) {
    let d = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata");
    let spread = std::fs::read_to_string(format!("{d}/workloadspread/zones.yaml")).unwrap();
    let dir = temp_dir(tag);
    let ws = dir.join("zones.yaml");
    let label = "        labels: {subset-name: subset-a}\n";
    let patched = spread.replacen(label, &format!("{label}      spec:\n        {spec}\n"), 1);
    assert_ne!(patched, spread);
    std::fs::write(&ws, patched).unwrap();
    explain_spread(&ws, &["--replicas", "3"])
}

/// `explain --workloadspread WS` over the example CloneSet and cluster, as text and as JSON.
fn explain_spread(ws: &std::path::Path, more: &[&str]) -> (Run, Run) {
    let d = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata");
    let w = format!("{d}/workloadspread/cloneset.yaml");
    let cluster = format!("{d}/explain/cluster.yaml");
    let args = [
        "explain",
        "--workloadspread",
        ws.to_str().unwrap(),
        "--workload",
        &w,
        "--cluster",
        &cluster,
    ];
    let args = [&args[..], more].concat();
    (
        run(&args, None),
        run(&[&args[..], &["-o", "json"]].concat(), None),
    )
}

/// A subset whose patch strategic merge refuses (here an entry without its merge key) is said
/// so: Kruise's webhook refuses that subset's pods. The pod is shown without the patch.
#[test]
fn explain_workloadspread_says_which_patch_cannot_be_applied() {
    let (r, json) = explain_patched_zones("ws-patch-error", "containers: [{image: other}]");
    assert!(
        r.stdout.contains("subset subset-a: its pods are never created: failed to merge patch: {\"image\":\"other\"} does not contain declared merge key: name\n"),
        "{}",
        r.stdout
    );
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(
        v["subsets"][0]["patchError"],
        "failed to merge patch: {\"image\":\"other\"} does not contain declared merge key: name"
    );
    assert_eq!(v["subsets"][1]["patchError"], serde_json::Value::Null);
    // Its pods are never created: they count as pods that never run (exit 1).
    assert_eq!(v["subsets"][0]["pending"], v["subsets"][0]["pods"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
}

/// With `scheduleStrategy: Adaptive` and `rescheduleCriticalSeconds`, Kruise's controller
/// deletes the pods Pending in a subset other than the last and its webhook skips that subset:
/// `explain` shows where the pods end up, and exits 0 when they all have a node then. Without
/// the seconds (or with the Fixed type) nothing is moved and the pods stay Pending (exit 1).
#[test]
fn explain_workloadspread_follows_adaptive_rescheduling() {
    let dir = temp_dir("ws-adaptive");
    let spread = |adaptive: &str| {
        let ws = dir.join("ws.yaml");
        std::fs::write(
            &ws,
            format!(
                "apiVersion: apps.kruise.io/v1alpha1
kind: WorkloadSpread
metadata: {{name: web-adaptive}}
spec:
  targetRef: {{apiVersion: apps.kruise.io/v1alpha1, kind: CloneSet, name: web}}
  scheduleStrategy:
    type: Adaptive
    adaptive: {adaptive}
  subsets:
  - name: subset-c
    requiredNodeSelectorTerm:
      matchExpressions: [{{key: topology.kubernetes.io/zone, operator: In, values: [zoneC]}}]
    maxReplicas: 2
  - name: subset-a
    requiredNodeSelectorTerm:
      matchExpressions: [{{key: topology.kubernetes.io/zone, operator: In, values: [zoneA]}}]
"
            ),
        )
        .unwrap();
        explain_spread(&ws, &[])
    };
    let (text, json) = spread("{rescheduleCriticalSeconds: 30}");
    assert_eq!(text.code, 0, "{}", text.stdout);
    assert!(
        text.stdout
            .contains("subset-c  2    2     topology.kubernetes.io/zone In [zoneC]  NONE: "),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.contains("\nAdaptive: pods Pending over 30s in a subset other than the last are deleted and the subset skipped, so they end up: subset-c 0, subset-a 5\n"),
        "{}",
        text.stdout
    );
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(
        v["adaptive"],
        serde_json::json!({"rescheduleCriticalSeconds": 30, "overflow": 0})
    );
    assert_eq!(v["subsets"][0]["pods"], 2);
    assert_eq!(v["subsets"][0]["podsAfterRescheduling"], 0);
    assert_eq!(v["subsets"][1]["podsAfterRescheduling"], 5);
    assert_eq!(v["subsets"][0]["pending"], 0);
    let (text, json) = spread("{}");
    assert_eq!(text.code, 1, "{}", text.stdout);
    assert!(!text.stdout.contains("Adaptive:"), "{}", text.stdout);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v.get("adaptive"), None);
}

/// A patch that merges but leaves pods the apiserver refuses (here: no container left) has
/// its pods never created, said so, and counted as pending (exit 1).
#[test]
fn explain_workloadspread_says_when_the_apiserver_refuses_the_patched_pods() {
    let (r, _) = explain_patched_zones("ws-patch-refused", "containers: [{$patch: replace}]");
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stdout.contains("subset subset-a: its pods are never created: kube-apiserver refuses the patched pods: spec.containers: Required value"),
        "{}",
        r.stdout
    );
}

/// A WorkloadSpread Kruise's webhook refuses is never created: `explain` says so, with the
/// webhook's causes, before the table of what it would do (and `refused` in the JSON).
#[test]
fn explain_workloadspread_says_when_kruise_refuses_it() {
    let d = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata");
    let zones = std::path::PathBuf::from(format!("{d}/workloadspread/zones.yaml"));
    let bad = std::fs::read_to_string(&zones)
        .unwrap()
        .replacen("name: subset-b", "name: subset-a", 1)
        .replacen("maxReplicas: 3", "maxReplicas: 150%", 1);
    let dir = temp_dir("ws-refused");
    let ws = dir.join("ws.yaml");
    std::fs::write(&ws, bad).unwrap();
    let (text, json) = explain_spread(&ws, &[]);
    assert_eq!(
        text.stderr,
        "placement-guard: note: Kruise's webhook refuses this WorkloadSpread as written, so it never places a pod (below: what it would do if it were admitted): spec.subsets[0].maxReplicas: Invalid value: \"150%\": must be a whole percentage between 0% and 100%, e.g. \"20%\"; spec.subsets[1].name: Duplicate value: \"subset-a\"\n"
    );
    assert!(
        text.stdout
            .starts_with("WorkloadSpread web-zones over CloneSet web"),
        "{}",
        text.stdout
    );
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(
        v["refused"].as_array().map(Vec::len),
        Some(2),
        "{}",
        json.stdout
    );
    // A valid one says nothing of the kind.
    let (text, json) = explain_spread(&zones, &[]);
    assert_eq!(text.stderr, "");
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v["refused"], serde_json::Value::Null);
}
