use super::*;
use crate::ci::report;

fn run_on_testdata() -> Report {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/manifests");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    let mut c = Checker::new(&RuleSet::default());
    for n in names {
        let text = std::fs::read_to_string(format!("{dir}/{n}")).unwrap();
        c.check_text(&format!("testdata/manifests/{n}"), &text);
    }
    c.finish()
}

#[test]
fn findings_point_at_the_offending_field() {
    let r = run_on_testdata();
    let aa: Vec<&Diagnostic> = r
        .diagnostics
        .iter()
        .filter(|d| d.rule == "hard-anti-affinity")
        .collect();
    assert_eq!(aa.len(), 1);
    let d = aa[0];
    assert_eq!(
        (d.file.as_str(), d.line, d.column),
        ("testdata/manifests/zone-anti-affinity.yaml", 23, 13)
    );
    assert_eq!(d.severity, Severity::Error);
    assert_eq!(d.object, "Deployment shop/web");
    assert_eq!(d.path, "spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].topologyKey");
    // The broken file is a finding at the parser's position; the other files were still checked.
    let y: Vec<&Diagnostic> = r
        .diagnostics
        .iter()
        .filter(|d| d.rule == RULE_YAML)
        .collect();
    assert_eq!(
        (y[0].file.as_str(), y[0].line),
        ("testdata/manifests/broken.yaml", 5)
    );
    assert_eq!(r.files, 4);
    assert_eq!(r.skipped, 1, "the Service");
    assert_eq!(r.suppressed.len(), 2);
    assert!(
        r.suppressed
            .iter()
            .all(|s| s.reason.as_deref()
                == Some("one replica per zone is the point of this database"))
    );
    let invalid: Vec<&Diagnostic> = r
        .diagnostics
        .iter()
        .filter(|d| d.rule == RULE_INVALID)
        .collect();
    assert_eq!(invalid[0].path, "spec.template.spec.nodeSelector");
}

#[test]
fn every_output_format() {
    let r = run_on_testdata();
    insta::assert_snapshot!("text", report::text(&r, false));
    insta::assert_snapshot!("json", report::json(&r));
    insta::assert_snapshot!("sarif", report::sarif(&r, Some("/src/project")));
    insta::assert_snapshot!("junit", report::junit(&r, false));
}

/// With `--fail-on warning` a test case with warnings only fails, as the exit code does.
#[test]
fn junit_fails_warnings_when_the_run_does() {
    let r = run_on_testdata();
    let failures = |xml: &str| xml.matches("<failure").count();
    let (plain, strict) = (report::junit(&r, false), report::junit(&r, true));
    let warned_only = r
        .checked
        .iter()
        .filter(|(file, object)| {
            let mine = r
                .diagnostics
                .iter()
                .filter(|d| &d.file == file && &d.object == object);
            let sev: Vec<Severity> = mine.map(|d| d.severity).collect();
            !sev.is_empty() && sev.iter().all(|s| *s == Severity::Warning)
        })
        .count();
    assert!(warned_only > 0);
    assert_eq!(failures(&strict), failures(&plain) + warned_only);
    assert!(strict.contains("warning(s)\""), "{strict}");
}

#[test]
fn colors_only_when_asked() {
    let r = run_on_testdata();
    assert!(!report::text(&r, false).contains('\x1b'));
    assert!(report::text(&r, true).contains("\x1b[1;31merror\x1b[0m"));
}

#[test]
fn sarif_is_valid_sarif_2_1_0() {
    let r = run_on_testdata();
    let v: serde_json::Value =
        serde_json::from_str(&report::sarif(&r, Some("/src/project"))).unwrap();
    assert_eq!(v["version"], "2.1.0");
    let results = v["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), r.diagnostics.len());
    assert_eq!(
        results[0]["locations"][0]["physicalLocation"]["region"]["startLine"],
        r.diagnostics[0].line
    );
    // Suppressed findings are not results: code scanning would raise them as open alerts.
    assert_eq!(r.suppressed.len(), 2);
    assert!(!results.iter().any(|x| x.get("suppressions").is_some()));
    // Parses back into the typed SARIF model.
    let _: serde_sarif::sarif::Sarif = serde_json::from_value(v).unwrap();
}

#[test]
fn nothing_panics_on_odd_input() {
    let inputs = [
        "", "---", "- a\n- b", "42", "kind: Pod", "apiVersion: v1\nkind: Pod\nspec: 5",
        "apiVersion: v1\nkind: Pod\nmetadata: []\n", "{\"apiVersion\": \"apps/v1\", \"kind\": \"Deployment\", \"spec\": {\"template\": null}}",
        "apiVersion: v1\nkind: List\nitems: [1, {kind: Pod}]", "a: &x [1]\nb: *x\n", "\u{feff}apiVersion: v1\n", "key: \"unterminated",
        "apiVersion: v1\nkind: Pod\nspec:\n  topologySpreadConstraints: [{maxSkew: 99999999999999999999}]",
    ];
    for text in inputs {
        let mut c = Checker::new(&RuleSet::default());
        c.check_text("x.yaml", text);
        let _ = report::text(&c.finish(), false);
    }
}

/// A term merged in with `<<: *anchor` is judged as kubectl will send it: across all
/// namespaces, so an error, not a warning.
#[test]
fn merge_keys_are_applied_before_judging() {
    let text = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - &per-host
            labelSelector: {matchLabels: {app: web}}
            namespaceSelector: {}
            topologyKey: kubernetes.io/hostname
          - <<: *per-host
            topologyKey: topology.kubernetes.io/zone
      containers: [{name: c, image: i}]
"#;
    let mut c = Checker::new(&RuleSet::default());
    c.check_text("merged.yaml", text);
    let r = c.finish();
    let d: Vec<&Diagnostic> = r
        .diagnostics
        .iter()
        .filter(|d| d.rule == "hard-anti-affinity")
        .collect();
    assert_eq!(d.len(), 1, "{:?}", r.diagnostics);
    assert_eq!(d[0].severity, Severity::Error);
    assert!(
        d[0].message.contains("across all namespaces"),
        "{}",
        d[0].message
    );
}

/// The official SARIF 2.1.0 schema (vendored from Microsoft's jest-sarif package), with formats
/// checked, and what Microsoft's validator adds: URIs percent-encoded, relative URIs against a
/// declared base, every result's rule in the rule table.
#[test]
fn sarif_passes_the_schema_and_the_validator_rules() {
    let mut c = Checker::new(&RuleSet::default());
    let bad = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/manifests/zone-anti-affinity.yaml"
    ))
    .unwrap();
    for name in [
        "<stdin>",
        "dir with space/a#b%c.yaml",
        "./rel.yaml",
        "/src/project/inside/x.yaml",
        "/elsewhere/y z.yaml",
    ] {
        c.check_text(name, &bad);
    }
    c.unreadable("unreadable.yaml", "cannot read: denied".into());
    c.check_text("broken.yaml", "a: [1,\n");
    let r = c.finish();
    let out: serde_json::Value =
        serde_json::from_str(&report::sarif(&r, Some("/src/project"))).unwrap();
    let mut schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testdata/sarif-2.1.0-rtm.5.json"
        ))
        .unwrap(),
    )
    .unwrap();
    // rtm.5 ships one language pattern that is not a valid regex (an unbalanced `]`), in two
    // places; the OASIS errata schema reads it as below. Everything else is used as published.
    for def in ["run", "toolComponent"] {
        schema["definitions"][def]["properties"]["language"]["pattern"] =
            serde_json::json!("^[a-zA-Z]{2}(-[a-zA-Z]{2})?$");
    }
    let validator = jsonschema::draft4::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap();
    let errors: Vec<String> = validator.iter_errors(&out).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // Objects of the live cluster (`audit`): a logical location each, no file to open.
    let mut live = r.clone();
    live.from_cluster = true;
    live.files = 0;
    let audited: serde_json::Value =
        serde_json::from_str(&report::sarif(&live, Some("/src/project"))).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&audited)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let location = &audited["runs"][0]["results"][0]["locations"][0];
    assert_eq!(
        (
            &location["logicalLocations"][0]["fullyQualifiedName"],
            &location["logicalLocations"][0]["kind"],
            location.get("physicalLocation")
        ),
        (
            &serde_json::json!(r.diagnostics[0].file),
            &serde_json::json!("object"),
            None
        )
    );
    let run = &out["runs"][0];
    let rules: Vec<&str> = run["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let mut uris = Vec::new();
    for res in run["results"].as_array().unwrap() {
        assert!(rules.contains(&res["ruleId"].as_str().unwrap()), "{res}");
        let loc = &res["locations"][0]["physicalLocation"]["artifactLocation"];
        let uri = loc["uri"].as_str().unwrap();
        assert!(
            !uri.contains(' ') && !uri.contains('#') && !uri.contains('<'),
            "{uri}"
        );
        if !uri.starts_with("file://") && uri != "stdin" {
            let base = loc["uriBaseId"].as_str().unwrap();
            assert!(run["originalUriBaseIds"][base]["uri"]
                .as_str()
                .unwrap()
                .ends_with('/'));
        }
        uris.push(uri.to_string());
    }
    uris.sort();
    uris.dedup();
    assert_eq!(
        uris,
        [
            "broken.yaml",
            "dir%20with%20space/a%23b%25c.yaml",
            "file:///elsewhere/y%20z.yaml",
            "inside/x.yaml",
            "rel.yaml",
            "stdin",
            "unreadable.yaml",
        ]
    );
}

/// A value of the wrong type is reported at its field, not at the object.
#[test]
fn unreadable_fields_point_at_the_field() {
    let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  topologySpreadConstraints:\n  - maxSkew: \"1\"\n    topologyKey: zone\n    whenUnsatisfiable: DoNotSchedule\n";
    let mut c = Checker::new(&RuleSet::default());
    c.check_text("p.yaml", text);
    let r = c.finish();
    let d = &r.diagnostics[0];
    assert_eq!(
        (d.rule.as_str(), d.line, d.column),
        (RULE_INVALID, 6, 5),
        "{d:?}"
    );
    assert_eq!(d.path, "spec.topologySpreadConstraints[0].maxSkew");
}

/// A broken document in a stream is reported where it is, and the documents after it are
/// still judged, with their positions in the whole file.
#[test]
fn a_broken_document_does_not_hide_the_others() {
    let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: d}\nspec: {containers: [{name: c, image: x}]}\n---\nkind: [\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: b, namespace: d}\nspec:\n  containers: [{name: c, image: x}]\n  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - {topologyKey: topology.kubernetes.io/zone, namespaceSelector: {}, labelSelector: {matchLabels: {a: b}}}\n";
    let mut c = Checker::new(&RuleSet::default());
    c.check_text("f.yaml", text);
    let r = c.finish();
    assert_eq!(r.objects, 2);
    let found: Vec<(usize, &str)> = r
        .diagnostics
        .iter()
        .filter(|d| d.rule != "topology-spread-defaults")
        .map(|d| (d.line, d.rule.as_str()))
        .collect();
    assert_eq!(found, vec![(7, "yaml-syntax"), (16, "hard-anti-affinity")]);
}

/// A document that is not a mapping is an error where it starts (kubectl refuses it); a
/// mapping without kind, an empty or null document is not.
#[test]
fn documents_that_are_not_objects_are_errors() {
    let text = "just text\n---\n- a\n- b\n---\n# a comment\n---\nnull\n---\n42\n---\nfoo: bar\n---\n  [1, 2]\n---\nkind: Deployment\n";
    let mut c = Checker::new(&RuleSet::default());
    c.check_text("f.yaml", text);
    let r = c.finish();
    let found: Vec<(usize, usize, &str)> = r
        .diagnostics
        .iter()
        .map(|d| (d.line, d.column, d.message.as_str()))
        .collect();
    let msg = |shape: &str| {
        format!("not an object: a manifest document is a mapping with apiVersion and kind, found {shape}")
    };
    let (string, sequence, number) = (msg("a string"), msg("a sequence"), msg("a number"));
    assert_eq!(
        found,
        vec![
            (1, 1, string.as_str()),
            (3, 1, sequence.as_str()),
            (10, 1, number.as_str()),
            (14, 3, sequence.as_str()),
            (
                16,
                1,
                "apiVersion not set: a manifest document is a mapping with apiVersion and kind"
            ),
        ]
    );
    assert!(r.diagnostics.iter().all(|d| d.rule == "invalid-object"));
    // A mapping without apiVersion and kind is no Kubernetes object: not counted as one.
    assert_eq!((r.skipped, r.kindless), (0, vec!["f.yaml:12".to_string()]));
}

/// A stream is judged a document at a time; bytes that are not UTF-8 end it with an
/// `unreadable` finding after what came before was judged.
#[test]
fn streams_are_read_a_document_at_a_time() {
    let mut bytes = b"apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: d}\nspec: {containers: [{name: c, image: x}]}\n---\nkind: Pod\n".to_vec();
    bytes.extend_from_slice(b"metadata: {name: \xff}\n");
    let mut c = Checker::new(&RuleSet::default());
    c.check_reader("f.yaml", &bytes[..]);
    let r = c.finish();
    assert_eq!(r.objects, 1);
    let bad: Vec<(&str, usize, usize, &str)> = r
        .diagnostics
        .iter()
        .filter(|d| d.rule == "unreadable")
        .map(|d| (d.file.as_str(), d.line, d.column, d.message.as_str()))
        .collect();
    assert_eq!(bad, vec![("f.yaml", 7, 18, "not UTF-8 text")]);
}

/// Two WorkloadSpreads for one workload conflict, as in Kruise; the same WorkloadSpread given
/// twice (two overlays of one base) does not conflict with itself.
#[test]
fn a_workloadspread_given_twice_is_not_its_own_duplicate() {
    let zones = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/workloadspread/zones.yaml"
    ))
    .unwrap();
    let duplicates = |texts: &[String]| -> Vec<String> {
        let mut c = Checker::new(&RuleSet::default());
        for (i, t) in texts.iter().enumerate() {
            c.check_text(&format!("{i}.yaml"), t);
        }
        c.finish()
            .diagnostics
            .iter()
            .filter(|d| d.message.contains("Duplicate value"))
            .map(|d| format!("{}: {}", d.file, d.message))
            .collect()
    };
    assert_eq!(
        duplicates(&[zones.clone(), zones.clone()]),
        Vec::<String>::new()
    );
    let other = zones.replacen("name: web-zones", "name: web-other", 1);
    assert_eq!(
        duplicates(&[zones.clone(), zones, other]),
        ["2.yaml: Duplicate value: \"CloneSet.apps.kruise.io web\": WorkloadSpread web-zones already targets this workload"]
    );
}

/// A WorkloadSpread whose target is in the input but cannot be read is not said to lack it.
#[test]
fn a_target_that_cannot_be_read_is_not_called_missing() {
    let zones = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/workloadspread/zones.yaml"
    ))
    .unwrap();
    let broken = "apiVersion: apps.kruise.io/v1alpha1\nkind: CloneSet\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {nodeSelector: x, containers: [{name: c, image: i}]}\n";
    let mut c = Checker::new(&RuleSet::default());
    c.check_text("w.yaml", broken);
    c.check_text("ws.yaml", &zones);
    let r = c.finish();
    assert_eq!(
        r.notes,
        ["ws.yaml: WorkloadSpread web-zones: its target CloneSet.apps.kruise.io web could not be read; the cross-checks against it were skipped"]
    );
    let mut c = Checker::new(&RuleSet::default());
    c.check_text("ws.yaml", &zones);
    assert_eq!(
        c.finish().notes,
        ["ws.yaml: WorkloadSpread web-zones: its target CloneSet.apps.kruise.io web is not in the input; the cross-checks against it were skipped"]
    );
}

/// A spill that counts what goes through it.
struct Counting {
    inner: Vec<u8>,
    counts: std::rc::Rc<std::cell::Cell<(usize, usize)>>,
}

impl Spill for Counting {
    fn put(&mut self, record: &[u8]) -> u64 {
        let (p, g) = self.counts.get();
        self.counts.set((p + 1, g));
        self.inner.put(record)
    }
    fn get(&mut self, at: u64, len: u32) -> Result<Vec<u8>, String> {
        let (p, g) = self.counts.get();
        self.counts.set((p, g + 1));
        self.inner.get(at, len)
    }
}

/// Every workload goes to the spill and only a WorkloadSpread's target comes back from it;
/// the target is found whether it comes before or after the WorkloadSpread, the first of two
/// with one id wins, and a workload of another kind with the same name is not taken for it.
#[test]
fn workloadspread_targets_are_spilled_and_read_back_when_targeted() {
    let spread = "apiVersion: apps.kruise.io/v1alpha1\nkind: WorkloadSpread\nmetadata: {name: s, namespace: default}\nspec:\n  targetRef: {apiVersion: apps/v1, kind: Deployment, name: d-5}\n  subsets:\n  - name: a\n    requiredNodeSelectorTerm:\n      matchExpressions: [{key: zone, operator: In, values: [z1]}]\n";
    let workload = |kind: &str, name: &str, zone: &str| {
        format!("apiVersion: apps/v1\nkind: {kind}\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  replicas: 3\n  selector: {{matchLabels: {{app: x}}}}\n  template:\n    metadata: {{labels: {{app: x}}}}\n    spec:\n      nodeSelector: {{zone: {zone}}}\n      containers: [{{name: c, image: i}}]\n")
    };
    let contradicts = |r: &Report| {
        r.diagnostics
            .iter()
            .filter(|d| {
                d.message
                    .contains("contradicts the workload's own node selection")
            })
            .count()
    };
    for spread_first in [true, false] {
        let mut docs: Vec<String> = vec![workload("StatefulSet", "d-5", "z2")];
        docs.extend((0..20).map(|i| {
            workload(
                "Deployment",
                &format!("d-{i}"),
                if i == 5 { "z2" } else { "z1" },
            )
        }));
        // A later Deployment of the same id is not the target.
        docs.push(workload("Deployment", "d-5", "z1"));
        if spread_first {
            docs.insert(0, spread.to_string());
        } else {
            docs.push(spread.to_string());
        }
        let counts = std::rc::Rc::new(std::cell::Cell::new((0, 0)));
        let spill = Counting {
            inner: Vec::new(),
            counts: counts.clone(),
        };
        let mut c = Checker::with_spill(&RuleSet::default(), Box::new(spill));
        c.check_text("stream.yaml", &docs.join("---\n"));
        let r = c.finish();
        assert_eq!(contradicts(&r), 1, "{:#?}", r.diagnostics);
        let (puts, gets) = counts.get();
        assert_eq!(puts, 22);
        // The candidates with the target's id hash: the Deployment d-5 read first.
        assert_eq!(gets, 1);
    }
}

/// `check` reports a mutation in words; the webhook's verdict for the same object carries the
/// operation alone (its words are only built when asked for).
#[test]
fn check_describes_the_patch_the_webhook_only_sends() {
    let text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: c, image: x}]}\n";
    let mut c = Checker::new(&RuleSet::default());
    c.check_text("d.yaml", text);
    let r = c.finish();
    let d: Vec<(&str, &str, Option<&str>)> = r
        .diagnostics
        .iter()
        .map(|d| (d.rule.as_str(), d.message.as_str(), d.hint.as_deref()))
        .collect();
    assert_eq!(
        d,
        [(
            "topology-spread-defaults",
            "no topology spread constraints; the webhook would add: maxSkew 3 on kubernetes.io/hostname, maxSkew 5 on topology.kubernetes.io/zone (ScheduleAnyway, selecting app=web + matchLabelKeys [pod-template-hash])",
            Some("set topologySpreadConstraints yourself, or annotate the object with placement-guard.io/spread-defaults: \"skip\""),
        )]
    );

    let value: serde_json::Value = serde_saphyr::from_str(text).unwrap();
    let t = crate::k8s::workload::parse_value(Kind::Deployment, &value).unwrap();
    let input = Input {
        phase: Phase::Mutate,
        operation: Operation::Create,
        namespace: "shop",
        user: User::default(),
        object: Subject::Template(&t),
        old_object: None,
        context: Context::default(),
    };
    let v = rules::evaluate(&input, &RuleSet::default());
    assert_eq!(v.patches.len(), 1);
    assert_eq!(
        (v.patches[0].summary.as_str(), &v.patches[0].hint),
        ("", &None)
    );
    assert_eq!(v.patch_ops().unwrap().len(), 1);
}

/// Kruise's errors name v1alpha1's `preferredNodeSelectorTerms` `preferredSchedulingTerms`; the
/// finding still points at the field as written.
#[test]
fn workloadspread_findings_point_at_the_field_as_written() {
    let text = "apiVersion: apps.kruise.io/v1alpha1
kind: WorkloadSpread
metadata: {name: ws, namespace: default}
spec:
  targetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  subsets:
  - name: a
    preferredNodeSelectorTerms:
    - {weight: 101, preference: {matchExpressions: [{key: zone, operator: Exists}]}}
";
    let mut rules = RuleSet::default();
    rules.spec.workload_spread.enabled = true;
    let mut c = Checker::new(&rules);
    c.check_text("ws.yaml", text);
    let found: Vec<(usize, usize, String)> = c
        .finish()
        .diagnostics
        .iter()
        .map(|d| (d.line, d.column, d.path.clone()))
        .collect();
    assert!(
        found.contains(&(
            9,
            8,
            "spec.subsets[0].preferredSchedulingTerms[0].weight".to_string()
        )),
        "{found:?}"
    );
}

/// The opt-out annotation suppresses the rules it names; a name that is no rule suppresses
/// nothing and is said so, where the annotation is written.
#[test]
fn ignore_annotations_suppress_named_rules_and_flag_unknown_ones() {
    let text = "apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations:
    placement-guard.io/ignore: \"hard-anti-afinity, topology-spread-defaults\"
spec:
  containers: [{name: c, image: nginx}]
";
    let mut c = Checker::new(&RuleSet::default());
    c.check_text("p.yaml", text);
    let r = c.finish();
    assert_eq!(
        r.suppressed
            .iter()
            .map(|s| s.rule.as_str())
            .collect::<Vec<_>>(),
        ["topology-spread-defaults"]
    );
    let found: Vec<(usize, usize, &str, &str)> = r
        .diagnostics
        .iter()
        .map(|d| (d.line, d.column, d.path.as_str(), d.message.as_str()))
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (found[0].0, found[0].1, found[0].2),
        (6, 5, "metadata.annotations[placement-guard.io/ignore]")
    );
    assert!(
        found[0]
            .3
            .starts_with("Unsupported value: \"hard-anti-afinity\": supported values: \"mutable-directives\", \"hard-anti-affinity\""),
        "{}",
        found[0].3
    );
    // The input's own findings are no rule an object opts out of: not offered, and said so.
    assert!(!found[0].3.contains("invalid-object"), "{}", found[0].3);
    let mut c = Checker::new(&RuleSet::default());
    // An object the apiserver refuses (a nodeSelector key that is no label key) stays an error.
    c.check_text(
        "p.yaml",
        &text.replace("hard-anti-afinity", "invalid-object").replace(
            "containers:",
            "nodeSelector: {\"bad key!\": x}\n  containers:",
        ),
    );
    let r = c.finish();
    assert!(r.suppressed.iter().all(|s| s.rule != "invalid-object"));
    let refused: Vec<&str> = r
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| d.message.as_str())
        .collect();
    assert!(
        refused.len() == 1 && refused[0].contains("Invalid value: \"bad key!\""),
        "{refused:?}"
    );
    let d = &r.diagnostics[0];
    assert_eq!(r.diagnostics.len(), 2);
    assert!(
        d.message
            .starts_with("Unsupported value: \"invalid-object\": supported values:"),
        "{}",
        d.message
    );
    assert_eq!(
        d.hint.as_deref(),
        Some("invalid-object findings say the input cannot be read as written, which no object can opt out of; this one suppresses nothing (mend the input, or leave its file out with --exclude)")
    );
}

/// A Pod as written gets the apiserver's matchLabelKeys merge before its spread constraints
/// are validated (the webhook sees pods already merged); a Deployment is accepted as written
/// and warned that its pods will be refused.
#[test]
fn spread_match_label_keys_are_judged_as_the_apiserver_will() {
    let text = r#"
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns, labels: {app: web}}
spec:
  containers: [{name: c, image: x}]
  topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}, matchLabelKeys: [app]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: ns}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: x}]
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}, matchLabelKeys: [app]}
"#;
    let mut c = Checker::new(&RuleSet::default());
    c.check_text("m.yaml", text);
    let r = c.finish();
    let found: Vec<(String, Severity, usize)> = r
        .diagnostics
        .iter()
        .filter(|d| d.message.contains("exists in both matchLabelKeys"))
        .map(|d| (d.object.clone(), d.severity, d.line))
        .collect();
    assert_eq!(
        found,
        vec![
            ("Pod ns/p".to_string(), Severity::Error, 8),
            ("Deployment ns/d".to_string(), Severity::Warning, 20),
        ],
        "{:#?}",
        r.diagnostics
    );
}

/// A Pod read from the API server (a uid: `kubectl get -o yaml`, or `audit`) is as stored,
/// its `matchLabelKeys` already merged into the selector: not merged again. The same document
/// written by hand would be merged by the apiserver, and refused; so is one with a uid whose
/// selector lacks what the merge appends.
#[test]
fn a_stored_pods_merged_selector_is_not_merged_again() {
    let pod = |uid: &str| {
        format!(
            r#"
apiVersion: v1
kind: Pod
metadata: {{name: web-1, namespace: ns, {uid}labels: {{app: web, pod-template-hash: abc}}}}
spec:
  containers: [{{name: c, image: x}}]
  topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: zone
    whenUnsatisfiable: DoNotSchedule
    matchLabelKeys: [pod-template-hash]
    labelSelector:
      matchLabels: {{app: web}}
      matchExpressions: [{{key: pod-template-hash, operator: In, values: [abc]}}]
"#
        )
    };
    for (uid, want) in [("uid: 3f1c, ", 0), ("", 1)] {
        let mut c = Checker::new(&RuleSet::default());
        c.check_text("p.yaml", &pod(uid));
        let r = c.finish();
        let duplicates = r
            .diagnostics
            .iter()
            .filter(|d| d.message.contains("exists in both matchLabelKeys"))
            .count();
        assert_eq!(duplicates, want, "uid {uid:?}: {:#?}", r.diagnostics);
    }
    // A uid, but a selector without what the merge appends: never stored so (a dump edited,
    // or restored under a new name), and the apiserver merges it at create, then refuses it.
    let unmerged = pod("uid: 3f1c, ").replace(
        "    matchLabelKeys: [pod-template-hash]\n",
        "    matchLabelKeys: [app]\n",
    );
    let mut c = Checker::new(&RuleSet::default());
    c.check_text("p.yaml", &unmerged);
    let r = c.finish();
    let found: Vec<&str> = r
        .diagnostics
        .iter()
        .filter(|d| d.message.contains("exists in both matchLabelKeys"))
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(found.len(), 1, "{:#?}", r.diagnostics);
}

/// Infinity or NaN, which JSON has no form for, is reported where it stands, not judged as an unset field
/// (`maxSkew: .inf` read as null would be "must be greater than zero"); the next document is
/// still checked.
#[test]
fn infinity_is_reported_where_it_stands() {
    let text = "apiVersion: v1
kind: Pod
metadata: {name: a}
spec:
  topologySpreadConstraints:
  - maxSkew: .inf
    topologyKey: zone
    whenUnsatisfiable: DoNotSchedule
---
apiVersion: v1
kind: Pod
metadata: {name: b}
spec:
  nodeSelector: {zone: a}
";
    let mut c = Checker::new(&RuleSet::default());
    c.check_text("inf.yaml", text);
    let r = c.finish();
    let yaml: Vec<(usize, usize, &str)> = r
        .diagnostics
        .iter()
        .filter(|d| d.rule == RULE_YAML)
        .map(|d| (d.line, d.column, d.message.as_str()))
        .collect();
    assert_eq!(
        yaml,
        [(
            6,
            14,
            "cannot be sent to the API server: .inf is not a number JSON can carry: kubectl refuses it (json: unsupported value); write a finite number"
        )]
    );
    assert!(
        r.diagnostics.iter().all(|d| d.object != "Pod a"),
        "the first pod is not judged: {:?}",
        r.diagnostics
    );
    assert_eq!(r.objects, 1, "the second pod is checked");
}

/// A manifest that names no namespace is where `kubectl apply -n` puts it: `check -n` says
/// where, and without it no namespace's node-selection policy applies, which a note says.
#[test]
fn objects_without_a_namespace_are_judged_in_the_one_given() {
    let rules = RuleSet::from_yaml(
        "r.yaml",
        "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  nodeSelection:\n    policies:\n    - name: off-gpu\n      namespaces: [team-a]\n      forbiddenNodes: [{matchExpressions: [{key: gpu, operator: Exists}]}]\n",
    )
    .unwrap();
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  nodeSelector: {gpu: \"true\"}\n  containers: [{name: c, image: x}]\n";
    let run = |namespace: Option<&str>| {
        let mut c = Checker::new(&rules).in_namespace(namespace.map(String::from));
        c.check_text("p.yaml", pod);
        let r = c.finish();
        let rules: Vec<String> = r
            .diagnostics
            .iter()
            .filter(|d| d.rule == "node-selection")
            .map(|d| d.rule.clone())
            .collect();
        (rules, r.notes)
    };
    assert_eq!(
        run(None),
        (
            vec![],
            vec!["1 object(s) name no namespace, so no node-selection policy applied to them; pass -n NAMESPACE, the namespace `kubectl apply -n` will create them in".to_string()]
        )
    );
    assert_eq!(
        run(Some("team-a")),
        (vec!["node-selection".to_string()], vec![])
    );
    assert_eq!(run(Some("team-b")), (vec![], vec![]));
}

/// The `invalid-object` findings of checking `text` as (path, message), and how many objects
/// were checked.
fn invalid_objects(
    rules: &crate::rules::config::RuleSet,
    text: &str,
) -> (Vec<(String, String)>, usize) {
    let mut c = Checker::new(rules);
    c.check_text("w.yaml", text);
    let r = c.finish();
    let invalid = r
        .diagnostics
        .iter()
        .filter(|d| d.rule == "invalid-object")
        .map(|d| (d.path.clone(), d.message.clone()))
        .collect();
    (invalid, r.objects)
}

/// One workload of `kind` under `api`, as a manifest writes it.
fn workload_doc(api: &str, kind: &str) -> String {
    format!("apiVersion: {api}\nkind: {kind}\nmetadata: {{name: w, namespace: ns}}\nspec: {{template: {{spec: {{containers: [{{name: c, image: i}}]}}}}}}\n")
}

/// Kubernetes' own workload kinds under a version kube-apiserver does not serve are an error
/// at their apiVersion (kubectl apply fails on them), neither skipped as another kind nor
/// checked as if served; OpenKruise's kinds are taken in every version.
#[test]
fn workloads_under_unserved_versions_are_refused() {
    let rules = crate::rules::config::RuleSet::default();
    let cases = [
        (
            "extensions/v1beta1",
            "Deployment",
            Some(
                "(removed in Kubernetes v1.16), so kubectl apply fails: write apiVersion: apps/v1",
            ),
        ),
        (
            "apps/v1beta2",
            "DaemonSet",
            Some(
                "(removed in Kubernetes v1.16), so kubectl apply fails: write apiVersion: apps/v1",
            ),
        ),
        (
            "apps/v1beta1",
            "DaemonSet",
            Some("in version \"apps/v1beta1\", so kubectl apply fails: write apiVersion: apps/v1"),
        ),
        (
            "batch/v1beta1",
            "CronJob",
            Some(
                "(removed in Kubernetes v1.25), so kubectl apply fails: write apiVersion: batch/v1",
            ),
        ),
        (
            "v1",
            "Deployment",
            Some("in version \"v1\", so kubectl apply fails: write apiVersion: apps/v1"),
        ),
        ("apps/v1", "Deployment", None),
        ("apps.kruise.io/v1alpha1", "StatefulSet", None),
        ("example.com/v1", "Deployment", None),
    ];
    for (api, kind, want) in cases {
        let (invalid, objects) = invalid_objects(&rules, &workload_doc(api, kind));
        match want {
            Some(end) => {
                assert_eq!(invalid.len(), 1, "{api} {kind}: {invalid:?}");
                assert!(
                    invalid[0].1.ends_with(end),
                    "{api} {kind}: {}",
                    invalid[0].1
                );
                assert_eq!(objects, 0, "{api} {kind}");
            }
            None => assert!(invalid.is_empty(), "{api} {kind}: {invalid:?}"),
        }
    }
}

/// Every field of the metadata and pod template has the type kube-apiserver decodes it into:
/// kubectl sends a YAML boolean or number as such, and the apiserver refuses one where a string
/// is taken (an annotation `sidecar.istio.io/inject: false`, `args: [--x, on]`, an env value),
/// while a number is a quantity, and either is an int-or-string.
#[test]
fn fields_of_the_wrong_type_are_refused_as_kubectl_would_be() {
    let rules = crate::rules::config::RuleSet::default();
    let pod = |meta: &str, container: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: ns{meta}}}\nspec:\n  containers: [{{name: c, image: i{container}}}]\n")
    };
    let cases = [
        (pod(", annotations: {sidecar.istio.io/inject: false}", ""), Some(("metadata.annotations[sidecar.istio.io/inject]", "Invalid value: false: must be a string (quote it to make it a string)"))),
        (pod(", annotations: {team: no}", ""), Some(("metadata.annotations.team", "Invalid value: false: must be a string (quote it to make it a string)"))),
        (pod("", ", args: [--x, on]"), Some(("spec.containers[0].args[1]", "Invalid value: true: must be a string (quote it to make it a string)"))),
        (pod("", ", env: [{name: E, value: 8080}]"), Some(("spec.containers[0].env[0].value", "Invalid value: 8080: must be a string (quote it to make it a string)"))),
        (pod("", ", ports: [{containerPort: \"80\"}]"), Some(("spec.containers[0].ports[0].containerPort", "Invalid value: \"80\": must be a whole number from -2147483648 to 2147483647 (a quoted number is a string: write it without quotes)"))),
        (pod(", annotations: {a: \"false\"}", ", resources: {requests: {cpu: 1, memory: 1e9}}, livenessProbe: {httpGet: {port: 8080}}"), None),
        // Nulls are zero values to the apiserver (an unset Helm value).
        (pod(", labels: {app: }, annotations: {x: ~}", ", args: [--a, ~], resources: {limits: {cpu: }}"), None),
    ];
    for (text, want) in cases {
        let (invalid, _) = invalid_objects(&rules, &text);
        match want {
            Some((path, message)) => assert_eq!(
                invalid,
                [(path.to_string(), format!("cannot read Pod: {message}"))],
                "{text}"
            ),
            None => assert!(invalid.is_empty(), "{text}: {invalid:?}"),
        }
    }
}

/// What kube-apiserver refuses in a manifest's scheduling directives is an `invalid-object`
/// error at the field, in its words (held to kube-apiserver v1.36.2 in `tests/apiserver.rs`),
/// also in a file taken from the API server (a uid), whose Pod selectors are not merged again.
#[test]
fn scheduling_directives_the_apiserver_refuses_are_errors() {
    let doc = |uid: &str, spec: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: ns, {uid}labels: {{app: web}}}}\nspec:\n  containers: [{{name: c, image: x}}]\n{spec}")
    };
    let cases = [
        (
            "  nodeSelector: {disk: \"bad value!\"}\n",
            vec!["spec.nodeSelector: Invalid value: \"bad value!\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"],
        ),
        (
            "  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: Equals, values: [a]}]}]}}}\n",
            vec!["spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: \"Equals\": not a valid selector operator"],
        ),
        (
            "  affinity: {podAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 101, podAffinityTerm: {topologyKey: zone, labelSelector: {matchLabels: {app: web}}, matchLabelKeys: [app]}}]}}\n",
            vec![
                "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 101: must be in the range 1-100",
                "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.matchLabelKeys[0]: Invalid value: \"app\": exists in both matchLabelKeys and labelSelector",
            ],
        ),
        (
            "  tolerations: [{key: k, operator: Exists, effect: NoSchedule, tolerationSeconds: 5}]\n",
            vec!["spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set"],
        ),
        (
            "  schedulingGates: [{name: example.com/gate}, {name: example.com/gate}]\n",
            vec!["spec.schedulingGates[1]: Duplicate value: \"example.com/gate\""],
        ),
        (
            "  affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, preference: {matchExpressions: [{key: zone, operator: In, values: [\"a b\"]}]}}]}}\n",
            vec![],
        ),
    ];
    for (spec, want) in cases {
        let (found, _) = invalid_objects(&RuleSet::default(), &doc("", spec));
        let got: Vec<String> = found.iter().map(|(p, m)| format!("{p}: {m}")).collect();
        assert_eq!(got, want, "{spec}");
        // A file taken from the API server (a uid) is applied again: validated the same way.
        let (stored, _) = invalid_objects(&RuleSet::default(), &doc("uid: 3f1c, ", spec));
        let stored: Vec<String> = stored.iter().map(|(p, m)| format!("{p}: {m}")).collect();
        let unmerged = |w: &&str| !w.contains("exists in both matchLabelKeys and labelSelector");
        let want: Vec<&str> = want.iter().copied().filter(unmerged).collect();
        assert_eq!(stored, want, "{spec}");
    }
}

/// A field the API does not have (a misspelt `minDomains`, a key nested one level off) is an
/// `invalid-object` error at its path, where its line is, as kube-apiserver's strict field
/// validation refuses the object (held to v1.36.2 in `tests/apiserver.rs`); the object is still
/// judged.
#[test]
fn unknown_fields_are_errors_where_they_stand() {
    let text = "apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ns, label: {app: web}}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: x}]
      topologySpreadConstraints:
      - {maxSkew: 0, minDomain: 2, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}
";
    let mut c = Checker::new(&RuleSet::default());
    c.check_text("w.yaml", text);
    let r = c.finish();
    let got: Vec<String> = r
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| {
            format!(
                "{}:{} {} {}: {}",
                d.line, d.column, d.rule, d.path, d.message
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            "3:38 invalid-object metadata.label: unknown field \"label\": kube-apiserver's strict field validation (kubectl's default) refuses the object, and without it the field is dropped",
            "11:10 topology-spread spec.template.spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
            "11:22 invalid-object spec.template.spec.topologySpreadConstraints[0].minDomain: unknown field \"minDomain\": kube-apiserver's strict field validation (kubectl's default) refuses the object, and without it the field is dropped",
        ]
    );
}

/// Unknown fields are found whatever their value (a misspelt key with an unset Helm value is
/// `null`, and the apiserver still refuses it), anywhere in a built-in kind's object (its top
/// level, its spec, a CronJob's Jobs' metadata, a StatefulSet's claim templates, its status),
/// and in an OpenKruise workload's metadata, though not in its template (its CRD keeps unknown
/// fields) nor its other fields (no type here).
#[test]
fn unknown_fields_with_null_values_and_in_every_typed_part() {
    let cases = [
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: c, image: x, args: [a, ~]}]\n      toleration:\n      affinity: {nodeAfinity: }\n      nodeSelector: {disk: }\n",
            vec![
                "spec.template.spec.affinity.nodeAfinity",
                "spec.template.spec.toleration",
            ],
        ),
        (
            "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly}\nspec:\n  schedule: '@daily'\n  jobTemplate:\n    metadata: {lables: {a: b}}\n    spec:\n      template:\n        spec:\n          restartPolicy: Never\n          containers: [{name: c, image: x}]\n",
            vec!["spec.jobTemplate.metadata.lables"],
        ),
        (
            "apiVersion: apps.kruise.io/v1alpha1\nkind: CloneSet\nmetadata: {name: web, bogus: x}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: c, image: x}]\n      foo: 1\n",
            vec!["metadata.bogus"],
        ),
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nsepc: {}\nspec:\n  replica: 2\n  strategy: {rollingUpdte: }\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: c, image: x}]\nstatus: {replica: 1}\n",
            vec![
                "sepc",
                "spec.replica",
                "spec.strategy.rollingUpdte",
                "status.replica",
            ],
        ),
        (
            "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  serviceName: db\n  selector: {matchLabels: {app: db}}\n  template:\n    metadata: {labels: {app: db}}\n    spec:\n      containers: [{name: c, image: x}]\n  volumeClaimTemplates:\n  - metadata: {name: data}\n    spec: {storageClass: fast, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n",
            vec!["spec.volumeClaimTemplates[0].spec.storageClass"],
        ),
        (
            "apiVersion: v1\nkind: PodTemplate\nmetadata: {name: t}\ntemplates: {}\ntemplate:\n  spec:\n    containers: [{name: c, image: x}]\n",
            vec!["templates"],
        ),
        (
            "apiVersion: apps.kruise.io/v1alpha1\nkind: CloneSet\nmetadata: {name: web}\nspec:\n  replica: 2\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: c, image: x}]\n",
            vec![],
        ),
    ];
    for (text, want) in cases {
        let (found, objects) = invalid_objects(&RuleSet::default(), text);
        assert_eq!(objects, 1, "{text}");
        let mut got: Vec<&str> = found
            .iter()
            .filter(|(_, m)| m.starts_with("unknown field"))
            .map(|(p, _)| p.as_str())
            .collect();
        got.sort_unstable();
        assert_eq!(got, want, "{text}: {found:?}");
        assert_eq!(found.len(), want.len(), "{text}: {found:?}");
    }
}

/// A WorkloadSpread or workload that names no namespace is created in `-n`'s, as `kubectl
/// apply -n` creates it: two WorkloadSpreads there target the same workload (Kruise's
/// `validateWorkloadSpreadConflict` refuses the second), and a target in that namespace is
/// found for the cross-checks.
#[test]
fn workloadspreads_without_a_namespace_are_in_the_one_given() {
    let spread = |name: &str, ns: &str| {
        format!("apiVersion: apps.kruise.io/v1alpha1\nkind: WorkloadSpread\nmetadata: {{name: {name}{ns}}}\nspec:\n  targetRef: {{apiVersion: apps.kruise.io/v1alpha1, kind: CloneSet, name: web}}\n  subsets:\n  - {{name: a, maxReplicas: 1}}\n  - {{name: b}}\n")
    };
    let cloneset = "apiVersion: apps.kruise.io/v1alpha1\nkind: CloneSet\nmetadata: {name: web, namespace: default}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: c, image: \"\"}]\n";
    let text = format!(
        "{}---\n{}---\n{cloneset}",
        spread("first", ", namespace: default"),
        spread("second", "")
    );
    let mut rules = RuleSet::default();
    rules.spec.workload_spread.enabled = true;
    let mut c = Checker::new(&rules).in_namespace(Some("default".into()));
    c.check_text("ws.yaml", &text);
    let r = c.finish();
    let messages: Vec<String> = r
        .diagnostics
        .iter()
        .filter(|d| d.rule == "workloadspread")
        .map(|d| format!("{} {}: {}", d.object, d.path, d.message))
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("WorkloadSpread default/second ")
                && m.contains("already targets this workload")),
        "{messages:#?}"
    );
    assert!(
        !r.notes.iter().any(|n| n.contains("not in the input")),
        "{:?}",
        r.notes
    );
}

/// A Namespace manifest's labels as kube-apiserver stores them: null is "", the name label is
/// the name whatever the manifest says, and what is not a string is refused.
#[test]
fn namespace_labels_are_read_as_the_apiserver_stores_them() {
    let v = serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "pay", "labels": {"env": null, "tier": "a", "n": 1,
                     "kubernetes.io/metadata.name": "forged"}}});
    let (labels, wrong) = super::namespace_labels(&v);
    let want: std::collections::BTreeMap<String, String> = [
        ("env", ""),
        ("kubernetes.io/metadata.name", "pay"),
        ("tier", "a"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(labels, want);
    assert_eq!(wrong, [("n".to_string(), serde_json::json!(1))]);
}

/// A file of Namespaces (a suite's namespaces.yaml, `review --namespaces`) is read strictly: a
/// label left out would leave the policies that select by it quietly unapplied.
#[test]
fn a_namespaces_file_is_read_strictly() {
    let ns = |body: &str| format!("apiVersion: v1\nkind: Namespace\nmetadata: {body}\n");
    let cases = [
        (ns("{name: a, label: {x: y}}"), "3:21: Namespace a: metadata.label: unknown field \"label\": kube-apiserver's strict field validation (kubectl's default) refuses the object, and without it the field is dropped"),
        (ns("{name: a, labels: {x: \"a b\"}}"), "3:21: Namespace a: metadata.labels: Invalid value: \"a b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
        (ns("{labels: {x: v}}"), "3:1: Namespace : metadata.name: Required value: name or generateName is required"),
        (format!("{}---\n{}", ns("{name: a}"), ns("{name: a}")), "5:1: Namespace a: given twice"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n".to_string(), "1:1: ConfigMap: only v1 Namespaces belong here (their labels are what this file gives)"),
        ("# nothing\n".to_string(), "1:1: no Namespace in it"),
    ];
    for (text, want) in cases {
        assert_eq!(namespaces_of(&text).unwrap_err(), want, "{text}");
    }
    let good = namespaces_of(&ns("{name: a, labels: {x: v, e: }}")).unwrap();
    assert_eq!(good["a"]["x"], "v");
    assert_eq!(good["a"]["e"], "");
}

/// A Namespace manifest in `check` is checked as kube-apiserver checks it: a misspelt `labels`
/// is an error, not a namespace without labels that no policy selects.
#[test]
fn a_namespace_manifest_is_checked_strictly() {
    let mut c = Checker::new(&RuleSet::default());
    c.check_text(
        "ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: Team_A, label: {x: y}}\nsepc: {}\n",
    );
    let found: Vec<String> = c
        .finish()
        .diagnostics
        .iter()
        .map(|d| format!("{}:{} {} {}", d.line, d.column, d.path, d.severity.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            "3:12 metadata.name error",
            "3:26 metadata.label error",
            "4:1 sepc error"
        ]
    );
}

/// A kind that a served version of a group without a dot does not have is a typo kubectl apply
/// refuses (no CRD can add one): an error at `kind`, never an object skipped as another kind.
#[test]
fn unknown_kinds_in_groups_without_a_dot_are_refused() {
    let rules = crate::rules::config::RuleSet::default();
    let typo = |end: &'static str| Some(("kind", end));
    let version = |end: &'static str| Some(("apiVersion", end));
    let cases = [
        (
            "apps/v1",
            "Deploymnet",
            typo("did you mean \"Deployment\"?"),
        ),
        (
            "apps/v1",
            "deployment",
            typo("did you mean \"Deployment\"?"),
        ),
        ("v1", "pod", typo("did you mean \"Pod\"?")),
        ("v1", "Pods", typo("did you mean \"Pod\"?")),
        ("v1", "Services", typo("did you mean \"Service\"?")),
        ("batch/v1", "cronjob", typo("did you mean \"CronJob\"?")),
        (
            "policy/v1",
            "PodSecurityPolicy",
            typo("policy/v1 serves Eviction, PodDisruptionBudget"),
        ),
        // Another group's kind: the version is what to mend.
        ("apps/v1", "ConfigMap", version("write apiVersion: v1")),
        (
            "apps/v1",
            "configmap",
            version("write apiVersion: v1 and kind: ConfigMap"),
        ),
        (
            "v1",
            "deployment",
            version("write apiVersion: apps/v1 and kind: Deployment"),
        ),
        (
            "v1",
            "PodDisruptionBudget",
            version("write apiVersion: policy/v1"),
        ),
        (
            "apps/v1",
            "HorizontalPodAutoscaler",
            version("write apiVersion: autoscaling/v2"),
        ),
        // Not a near miss of Node: Kubernetes' own kind in a dotted group.
        (
            "v1",
            "Role",
            version("write apiVersion: rbac.authorization.k8s.io/v1"),
        ),
        (
            "apps/v1",
            "Ingress",
            version("write apiVersion: networking.k8s.io/v1"),
        ),
        // Served kinds are checked or skipped as before.
        ("apps/v1", "Deployment", None),
        ("v1", "ConfigMap", None),
        ("autoscaling/v2", "HorizontalPodAutoscaler", None),
        // Dotted groups are anybody's; unserved versions of dotless ones are not this check's.
        ("example.com/v1", "Deploymnet", None),
        ("policy/v1beta1", "PodSecurityPolicy", None),
        // Files that are no API objects: a kubeconfig, an old scheduler policy.
        ("v1", "Config", None),
        ("v1", "Policy", None),
    ];
    for (api, kind, want) in cases {
        let (invalid, _) = invalid_objects(&rules, &workload_doc(api, kind));
        match want {
            Some((field, end)) => {
                assert_eq!(invalid.len(), 1, "{api} {kind}: {invalid:?}");
                let m = &invalid[0].1;
                let value = if field == "kind" { kind } else { api };
                assert!(
                    m.starts_with(&format!("{field}: Unsupported value: {value:?}: no matches for kind {kind:?} in version {api:?}, so kubectl apply fails"))
                        && m.ends_with(end),
                    "{api} {kind}: {m}"
                );
            }
            None => assert!(invalid.is_empty(), "{api} {kind}: {invalid:?}"),
        }
    }
    let mut c = Checker::new(&rules);
    c.check_text(
        "w.yaml",
        &[
            workload_doc("apps/v1", "Deploymnet"),
            workload_doc("apps/v1", "ConfigMap"),
        ]
        .join("---\n"),
    );
    insta::assert_snapshot!("unknown_kind", report::text(&c.finish(), false));
}
