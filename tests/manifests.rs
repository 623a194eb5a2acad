//! The deployment manifests: they parse, agree with the server's routes and ports, carry a rule
//! file that loads, and their CEL matchConditions parse and select the right requests.

// Test and benchmark helpers fail loudly on broken fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;

use placement_guard::k8s::manifest;
use placement_guard::rules::config::RuleSet;
use serde_json::Value;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/manifests");

fn all_objects() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut names: Vec<String> = std::fs::read_dir(DIR)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    names.sort();
    for n in names {
        let text = std::fs::read_to_string(format!("{DIR}/{n}")).unwrap();
        for o in manifest::parse(&text).unwrap_or_else(|e| panic!("{n}: {e}")) {
            out.push((n.clone(), o.value));
        }
    }
    out
}

fn find<'a>(objs: &'a [(String, Value)], kind: &str) -> Vec<&'a Value> {
    objs.iter()
        .map(|(_, v)| v)
        .filter(|v| v["kind"] == kind)
        .collect()
}

#[test]
fn kustomization_lists_every_manifest() {
    let objs = all_objects();
    let k = find(&objs, "Kustomization")[0];
    let listed: BTreeSet<String> = k["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect();
    let files: BTreeSet<String> = objs
        .iter()
        .map(|(f, _)| f.clone())
        .filter(|f| f != "kustomization.yaml")
        .collect();
    assert_eq!(listed, files);
}

#[test]
fn webhooks_service_and_deployment_agree_with_the_server() {
    let objs = all_objects();
    let svc = find(&objs, "Service")[0];
    let port = &svc["spec"]["ports"][0];
    let dep = find(&objs, "Deployment")[0];
    let c = &dep["spec"]["template"]["spec"]["containers"][0];
    let cport = c["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == port["targetPort"])
        .expect("targetPort names a container port");
    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let addr = args.iter().find_map(|a| a.strip_prefix("--addr=")).unwrap();
    assert_eq!(
        addr.rsplit(':').next().unwrap(),
        cport["containerPort"].to_string()
    );
    for probe in ["readinessProbe", "livenessProbe"] {
        assert_eq!(c[probe]["httpGet"]["scheme"], "HTTPS");
        assert!(["/readyz", "/healthz"].contains(&c[probe]["httpGet"]["path"].as_str().unwrap()));
    }
    assert_eq!(dep["spec"]["replicas"], 2);
    let sc = &c["securityContext"];
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(
        dep["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"],
        true
    );
    // Every mounted file the args name comes from a volume.
    for flag in ["--tls-cert=", "--tls-key=", "--rules="] {
        let path = args.iter().find_map(|a| a.strip_prefix(flag)).unwrap();
        assert!(
            c["volumeMounts"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| path.starts_with(m["mountPath"].as_str().unwrap())),
            "{path}"
        );
    }
    let routes = ["/validate", "/mutate"];
    for kind in [
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ] {
        let cfg = find(&objs, kind)[0];
        assert_eq!(
            cfg["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
            "placement-guard/placement-guard"
        );
        for w in cfg["webhooks"].as_array().unwrap() {
            let s = &w["clientConfig"]["service"];
            assert!(
                routes.contains(&s["path"].as_str().unwrap()),
                "{}",
                w["name"]
            );
            assert_eq!(s["port"], port["port"]);
            assert_eq!(s["name"], svc["metadata"]["name"]);
            assert_eq!(w["admissionReviewVersions"], serde_json::json!(["v1"]));
            assert_eq!(w["sideEffects"], "None");
            let excluded = &w["namespaceSelector"]["matchExpressions"][0]["values"];
            assert!(excluded.as_array().unwrap().contains(&"kube-system".into()));
            assert!(excluded
                .as_array()
                .unwrap()
                .contains(&svc["metadata"]["namespace"]));
            let expected_path = if kind.starts_with("Validating") {
                "/validate"
            } else {
                "/mutate"
            };
            assert_eq!(s["path"], expected_path);
        }
    }
}

#[test]
fn every_workload_kind_is_sent_to_validation() {
    let objs = all_objects();
    let cfg = find(&objs, "ValidatingWebhookConfiguration")[0];
    let mut resources = BTreeSet::new();
    for w in cfg["webhooks"].as_array().unwrap() {
        for r in w["rules"].as_array().unwrap() {
            for group in r["apiGroups"].as_array().unwrap() {
                for res in r["resources"].as_array().unwrap() {
                    resources.insert((
                        group.as_str().unwrap().to_string(),
                        res.as_str().unwrap().to_string(),
                    ));
                }
            }
        }
    }
    for k in placement_guard::k8s::workload::Kind::ALL {
        let key = (k.group().to_string(), k.resource().to_string());
        assert!(resources.contains(&key), "{k:?}");
        let req = serde_json::json!({"resource": {"group": k.group(), "version": k.version(), "resource": k.resource()}, "operation": "UPDATE"});
        assert!(
            cfg["webhooks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| rules_select(w, &req)),
            "{k:?} at {}",
            k.version()
        );
    }
}

#[test]
fn configmap_rule_file_loads() {
    let objs = all_objects();
    let cm = find(&objs, "ConfigMap")[0];
    let text = cm["data"]["rules.yaml"].as_str().unwrap();
    let rules = RuleSet::from_yaml("configmap", text).unwrap();
    assert_eq!(rules, RuleSet::default());
}

fn conditions(kind: &str, webhook: &str) -> Vec<(String, cel::Program)> {
    let objs = all_objects();
    let cfg = find(&objs, kind)[0];
    let w = cfg["webhooks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == webhook)
        .unwrap();
    w["matchConditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let expr = c["expression"].as_str().unwrap();
            let p = cel::Program::compile(expr).unwrap_or_else(|e| panic!("{}: {e}", c["name"]));
            (c["name"].as_str().unwrap().to_string(), p)
        })
        .collect()
}

#[test]
fn every_cel_expression_parses() {
    let objs = all_objects();
    let mut n = 0;
    for (_, v) in &objs {
        for w in v["webhooks"].as_array().into_iter().flatten() {
            for c in w["matchConditions"].as_array().into_iter().flatten() {
                cel::Program::compile(c["expression"].as_str().unwrap())
                    .unwrap_or_else(|e| panic!("{}: {e}", c["name"]));
                n += 1;
            }
        }
    }
    assert_eq!(n, 3);
}

/// Evaluates a webhook's matchConditions on a recorded AdmissionReview, as the apiserver would.
fn matches(kind: &str, webhook: &str, fixture: &str) -> bool {
    let body: Value = serde_json::from_slice(
        &std::fs::read(format!(
            "{}/testdata/admission-reviews/{fixture}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap(),
    )
    .unwrap();
    let req = &body["request"];
    let mut ctx = cel::Context::default();
    ctx.add_variable("object", req["object"].clone()).unwrap();
    ctx.add_variable("oldObject", req["oldObject"].clone())
        .unwrap();
    ctx.add_variable(
        "request",
        serde_json::json!({"operation": req["operation"]}),
    )
    .unwrap();
    conditions(kind, webhook)
        .iter()
        .all(|(name, p)| match p.execute(&ctx) {
            Ok(cel::Value::Bool(b)) => b,
            other => panic!("{webhook}/{name} on {fixture}: {other:?}"),
        })
}

#[test]
fn match_conditions_call_the_server_only_when_a_rule_can_care() {
    let v = "ValidatingWebhookConfiguration";
    let pods = "pods.validate.placement-guard.io";
    for (fixture, want) in [
        ("pod-create-gated.validate.json", true),
        ("pod-update-add-nodeselector-gated.validate.json", true),
        ("pod-update-add-toleration-gated.validate.json", true),
        ("pod-update-ungate-and-add-nodeselector.validate.json", true),
        ("pod-update-labels-only-ungated.validate.json", false),
        ("pod-update-denied.validate.json", false),
    ] {
        assert_eq!(matches(v, pods, fixture), want, "{fixture}");
    }
    let m = "MutatingWebhookConfiguration";
    let update = "pods-update.mutate.placement-guard.io";
    for (fixture, want) in [
        (
            "pod-update-remove-nodeselector-key-gated-rejected-later.mutate.json",
            true,
        ),
        ("pod-update-add-nodeselector-gated-2.mutate.json", true),
        ("pod-update-labels-only-ungated.validate.json", false),
    ] {
        assert_eq!(matches(m, update, fixture), want, "{fixture}");
    }
    let create = "pods-create.mutate.placement-guard.io";
    assert!(matches(
        m,
        create,
        "pod-create-jsonpatch-spread.mutate.json"
    ));
    assert!(!matches(
        m,
        create,
        "pod-create-topology-spread.mutate.json"
    ));
}

#[test]
fn our_own_deployment_passes_our_check() {
    let mut checker = placement_guard::ci::check::Checker::new(&RuleSet::default());
    let text = std::fs::read_to_string(format!("{DIR}/deployment.yaml")).unwrap();
    checker.check_text("deployment.yaml", &text);
    let report = checker.finish();
    assert!(report.diagnostics.is_empty(), "{:?}", report.diagnostics);
}

/// Whether a webhook's rules select this request (group, resource without subresource,
/// operation), as the apiserver matches them before evaluating matchConditions.
fn rules_select(webhook: &Value, req: &Value) -> bool {
    let resource = match req["subResource"].as_str() {
        Some(s) if !s.is_empty() => {
            format!("{}/{s}", req["resource"]["resource"].as_str().unwrap())
        }
        _ => req["resource"]["resource"].as_str().unwrap().to_string(),
    };
    let has = |list: &Value, v: &str| list.as_array().unwrap().iter().any(|x| x == v || x == "*");
    webhook["rules"].as_array().unwrap().iter().any(|r| {
        has(&r["apiGroups"], req["resource"]["group"].as_str().unwrap())
            && req["resource"]["version"]
                .as_str()
                .is_none_or(|v| has(&r["apiVersions"], v))
            && has(&r["resources"], &resource)
            && has(&r["operations"], req["operation"].as_str().unwrap())
    })
}

/// The rules' declared applicability and the hand-written webhook configuration must agree on
/// every recorded request: the webhook sends nothing no rule applies to, and never skips a
/// request on which the server would deny, warn or patch.
#[test]
fn webhook_configuration_agrees_with_the_rules_applicability() {
    use placement_guard::admission::{review, Endpoint};
    let objs = all_objects();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/admission-reviews");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    // The defaults, and a node-selection policy over every namespace that forbids a pool and
    // every toleration: it judges pod updates that change the selection or tolerations.
    let strict = RuleSet::from_yaml(
        "strict",
        "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  nodeSelection:\n    policies:\n    - {name: all, namespaces: ['*'], forbiddenNodes: [{matchExpressions: [{key: pool, operator: In, values: [gpu]}]}], allowedTolerations: []}\n",
    )
    .unwrap();
    let mut sent = 0;
    for (rules, strict_rules) in [(RuleSet::default(), false), (strict, true)] {
        for (config, endpoint, path) in [
            (
                "ValidatingWebhookConfiguration",
                Endpoint::Validate,
                "/validate",
            ),
            ("MutatingWebhookConfiguration", Endpoint::Mutate, "/mutate"),
        ] {
            let cfg = find(&objs, config)[0];
            for name in &names {
                let bytes = std::fs::read(format!("{dir}/{name}")).unwrap();
                let body: Value = serde_json::from_slice(&bytes).unwrap();
                let req = &body["request"];
                let sends = cfg["webhooks"].as_array().unwrap().iter().any(|w| {
                    w["clientConfig"]["service"]["path"] == path
                        && rules_select(w, req)
                        && (w["matchConditions"].is_null()
                            || matches(config, w["name"].as_str().unwrap(), name))
                });
                let r = review(&bytes, endpoint, &rules).unwrap();
                let applies = !r.rules.is_empty();
                let says_something = r
                    .verdict
                    .as_ref()
                    .is_some_and(|v| !v.allowed() || v.has_warnings() || !v.patches.is_empty());
                if sends && !strict_rules {
                    sent += 1;
                    assert!(applies, "{config} sends {name}, to which no rule applies");
                }
                assert!(
                    sends || !says_something,
                    "{config} skips {name}, on which {path} answers {:?}",
                    r.verdict
                );
            }
        }
    }
    assert!(sent > 20, "only {sent} recorded requests are sent");
    // Beyond the recordings: spread defaults are added to every workload kind at CREATE, and
    // at UPDATE too unless its kind takes them at CREATE only (a Job, OpenKruise's workloads);
    // the mutating webhook's workload rules send exactly those (pods have their own webhooks).
    use placement_guard::k8s::workload::Kind;
    let mutating = find(&objs, "MutatingWebhookConfiguration")[0];
    for kind in Kind::ALL {
        if matches!(kind, Kind::Pod | Kind::DaemonSet) {
            continue;
        }
        for op in ["CREATE", "UPDATE"] {
            let req = serde_json::json!({"resource": {"group": kind.group(), "version": kind.version(), "resource": kind.resource()}, "operation": op});
            let sends = mutating["webhooks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| rules_select(w, &req));
            assert_eq!(
                sends,
                op == "CREATE" || !kind.defaults_at_create_only(),
                "{kind:?} {op}"
            );
        }
    }
}

/// The base install keeps no RBAC rights and no token; only the cluster-aware component adds
/// the flag, read-only rights on exactly what the cache watches, and the token. Rendered with
/// `kubectl kustomize` as a user would (skipped with a line when kubectl is missing).
#[test]
fn cluster_aware_component_adds_rights_and_token_only_there() {
    let objs = all_objects();
    for kind in ["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"] {
        assert!(
            find(&objs, kind).is_empty(),
            "the base install has a {kind}"
        );
    }
    assert_eq!(
        find(&objs, "ServiceAccount")[0]["automountServiceAccountToken"],
        false
    );
    let deploy = find(&objs, "Deployment")[0];
    assert_eq!(
        deploy["spec"]["template"]["spec"]["automountServiceAccountToken"],
        false
    );

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let overlay = root.join("target/cluster-aware-overlay");
    std::fs::create_dir_all(&overlay).unwrap();
    std::fs::write(
        overlay.join("kustomization.yaml"),
        "resources: [../../manifests]\ncomponents: [../../manifests/cluster-aware]\n",
    )
    .unwrap();
    let out = match std::process::Command::new("kubectl")
        .args(["kustomize"])
        .arg(&overlay)
        .output()
    {
        Ok(o) => o,
        Err(_) => {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "skipping the kustomize render: no kubectl on PATH"
            );
            return;
        }
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let rendered: Vec<Value> = manifest::parse(&text)
        .unwrap()
        .into_iter()
        .map(|o| o.value)
        .collect();
    let of =
        |kind: &str| -> Vec<&Value> { rendered.iter().filter(|v| v["kind"] == kind).collect() };
    let role = of("ClusterRole");
    assert_eq!(role.len(), 1);
    assert_eq!(
        role[0]["rules"],
        serde_json::json!([{"apiGroups": [""], "resources": ["nodes", "pods", "namespaces"], "verbs": ["get", "list", "watch"]},
                           {"apiGroups": ["node.k8s.io"], "resources": ["runtimeclasses"], "verbs": ["list", "watch"]}])
    );
    let binding = of("ClusterRoleBinding");
    assert_eq!(binding[0]["roleRef"]["name"], role[0]["metadata"]["name"]);
    assert_eq!(
        binding[0]["subjects"],
        serde_json::json!([{"kind": "ServiceAccount", "name": "placement-guard", "namespace": "placement-guard"}])
    );
    assert!(of("Role").is_empty() && of("RoleBinding").is_empty());
    assert_eq!(
        of("ServiceAccount")[0]["automountServiceAccountToken"],
        true
    );
    let pod = &of("Deployment")[0]["spec"]["template"]["spec"];
    assert_eq!(pod["automountServiceAccountToken"], true);
    let args: Vec<&str> = pod["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(args.contains(&"--cluster-aware"), "{args:?}");
    // The rendered arguments are ones the server takes.
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_placement-guard"))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for a in &args[1..] {
        let flag = a.split('=').next().unwrap();
        assert!(help.contains(flag), "serve does not take {flag}");
    }
}
