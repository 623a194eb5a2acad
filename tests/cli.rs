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
    let parsed = placement_guard::config::RuleSet::from_yaml("stdout", &r.stdout).unwrap();
    assert_eq!(parsed, placement_guard::config::RuleSet::default());
    insta::assert_snapshot!(r.stdout);
}

#[test]
fn usage_errors_exit_2() {
    let r = run(&["serve", "--tls-cert", "x.pem"], None);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--tls-key"), "{}", r.stderr);
    let r = run(&["frobnicate"], None);
    assert_eq!(r.code, 2);
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
