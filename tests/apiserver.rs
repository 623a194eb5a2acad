//! Against a real kube-apiserver (v1.36.2 from ../shared/k8s) with placement-guard registered as
//! a real validating webhook: what a controller sees through the API.

// Test helpers fail loudly on broken fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use serde_json::{json, Value};

use common::kube::with_apiserver;
use common::{start, temp_dir};

/// KEP-3838's risk, closed: a queue manager's update that steers a gated pod into a forbidden
/// pool is refused through the API, and the stored pod is unchanged; a tightening inside the
/// pool goes through.
#[test]
fn node_selection_refuses_tightening_into_a_forbidden_pool() {
    let Some(api) = with_apiserver("node_selection_refuses_tightening_into_a_forbidden_pool")
    else {
        return;
    };
    let dir = temp_dir("ns-e2e");
    let rules = dir.join("rules.yaml");
    std::fs::write(
        &rules,
        "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  nodeSelection:\n    policies:\n    - name: no-gpu\n      namespaces: [team-a]\n      forbiddenNodes: [{matchExpressions: [{key: pool, operator: In, values: [gpu]}]}]\n",
    )
    .unwrap();
    let server = start(&["--rules", rules.to_str().unwrap()]);
    api.namespace("team-a");
    // Created before the policy's webhook, gated, with no selection yet.
    let pods = "/api/v1/namespaces/team-a/pods";
    let (code, body) = api.create(
        pods,
        &json!({"metadata": {"name": "job-1"}, "spec": {
            "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}),
    );
    assert_eq!(code, 201, "{body}");
    api.register_webhooks(&server, "team-a", &["pods.validate.placement-guard.io"]);

    let pod = format!("{pods}/job-1");
    let into_gpu = json!({"spec": {"nodeSelector": {"pool": "gpu"}}});
    // The apiserver's informer picks the registration up asynchronously: probe with dry runs.
    api.eventually("the webhook to refuse a dry run", || {
        api.patch(&format!("{pod}?dryRun=All"), &into_gpu).0 == 403
    });
    let (code, body) = api.patch(&pod, &into_gpu);
    assert_eq!(code, 403, "{body}");
    let message = body["message"].as_str().unwrap();
    assert_eq!(
        message,
        r#"admission webhook "pods.validate.placement-guard.io" denied the request: spec.nodeSelector: Forbidden: pods in namespace "team-a" may not reach nodes matching "pool In [gpu]" (policy no-gpu); this selection admits a node labelled {pool: gpu}"#
    );
    let (code, stored) = api.curl("GET", &pod, None);
    assert_eq!(code, 200);
    assert_eq!(
        stored["spec"]["nodeSelector"],
        Value::Null,
        "stored pod unchanged"
    );

    let (code, body) = api.patch(
        &pod,
        &json!({"spec": {"nodeSelector": {"pool": "tenants"}}}),
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["spec"]["nodeSelector"], json!({"pool": "tenants"}));
    std::fs::remove_dir_all(dir).ok();
}

/// One cause of a refusal, as a `Status` gives it: (field, reason, message).
type Cause = (String, String, String);

/// A `Status`'s `details.causes`.
fn causes(status: &Value) -> Vec<Cause> {
    status["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let text = |k: &str| c[k].as_str().unwrap_or("").to_string();
            (text("field"), text("reason"), text("message"))
        })
        .collect()
}

/// The apiserver's causes for a dry run: none when it took the object (`ok`: 200 or 201), its
/// 422's otherwise.
fn refused_by_apiserver(what: &str, (code, answer): (u16, Value), ok: u16) -> Vec<Cause> {
    match code {
        c if c == ok => Vec::new(),
        422 => causes(&answer),
        _ => panic!("{what}: the apiserver answered {code}: {answer}"),
    }
}

/// What `/validate` answers to a Pod request with the built-in rules, computed offline
/// (`admission::review`) as the server computes it: whether it is allowed, and its causes.
fn refused_by_webhook(operation: &str, object: &Value, old: Option<&Value>) -> (bool, Vec<Cause>) {
    use placement_guard::admission::{review, Endpoint};
    use placement_guard::rules::config::RuleSet;
    let mut request = json!({"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "name": object["metadata"]["name"], "namespace": object["metadata"]["namespace"],
        "operation": operation, "userInfo": {"username": "admin"}, "object": object});
    if let Some(old) = old {
        request["oldObject"] = old.clone();
    }
    let body = serde_json::to_vec(
        &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}),
    )
    .unwrap();
    let reviewed = review(&body, Endpoint::Validate, &RuleSet::default()).unwrap();
    let response: Value = serde_json::from_slice(&reviewed.body).unwrap();
    (reviewed.allowed, causes(&response["response"]["status"]))
}

/// `Invalid value: V: detail` with V read as JSON and normalized as the apiserver prints it:
/// kube-apiserver validates its internal types, which have no JSON tags, so a node selector
/// term prints as `{"MatchExpressions":[{"Key":…}],"MatchFields":null}` where the API (and our
/// message, which a user can paste back) says `{"matchExpressions":[{"key":…}]}`. Both become
/// lower-camel keys without nulls; the rest of the text is compared as it is.
fn normalized(message: &str) -> (Option<Value>, String) {
    fn camel(v: Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.into_iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| {
                        let mut c = k.chars();
                        let k = c
                            .next()
                            .map(|f| f.to_lowercase().chain(c).collect())
                            .unwrap_or_default();
                        (k, camel(v))
                    })
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.into_iter().map(camel).collect()),
            v => v,
        }
    }
    let Some(rest) = message.strip_prefix("Invalid value: ") else {
        return (None, message.to_string());
    };
    let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
    match values.next() {
        Some(Ok(v)) => {
            let detail = rest[values.byte_offset()..].to_string();
            (Some(camel(v)), detail)
        }
        _ => (None, message.to_string()),
    }
}

/// The apiserver's own refusals of updates to a gated pod (`details.causes` of its 422, a dry
/// run of each update against a pod it stored) are the mutable-directives rule's: the same
/// updates are refused, at the same fields, for the same reasons, in the same order, and the
/// same updates go through. What the webhook answers is computed offline (`admission::review`)
/// from the very objects the apiserver saw.
#[test]
fn mutable_directives_refuses_exactly_what_the_apiserver_refuses() {
    let Some(api) = with_apiserver("mutable_directives_refuses_exactly_what_the_apiserver_refuses")
    else {
        return;
    };
    api.namespace("kep");
    let expr = |key: &str, op: &str, values: &[&str]| json!({"key": key, "operator": op, "values": values});
    let required = |terms: Value| json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}});
    let zone_a = required(json!([{"matchExpressions": [expr("zone", "In", &["a"])]}]));
    let toleration = json!({"key": "gpu", "operator": "Exists", "effect": "NoSchedule"});
    // (what, old spec fields, new spec fields); a pod is gated unless its fields say otherwise.
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "a first nodeSelector",
            json!({}),
            json!({"nodeSelector": {"disk": "ssd"}}),
        ),
        (
            "a nodeSelector key added",
            json!({"nodeSelector": {"disk": "ssd"}}),
            json!({"nodeSelector": {"disk": "ssd", "zone": "a"}}),
        ),
        (
            "a nodeSelector value changed",
            json!({"nodeSelector": {"disk": "ssd"}}),
            json!({"nodeSelector": {"disk": "hdd"}}),
        ),
        (
            "a nodeSelector key removed",
            json!({"nodeSelector": {"disk": "ssd", "zone": "a"}}),
            json!({"nodeSelector": {"zone": "a"}}),
        ),
        // Emptied, as a patch that removes its keys leaves it. (An update that drops the field
        // itself is refused alike, but printed `null`: the webhook cannot tell the two apart,
        // since the apiserver sends an empty map as no field at all.)
        (
            "the nodeSelector emptied",
            json!({"nodeSelector": {"disk": "ssd"}}),
            json!({"nodeSelector": {}}),
        ),
        (
            "a first required node affinity",
            json!({}),
            json!({"affinity": zone_a.clone()}),
        ),
        (
            "a requirement appended",
            json!({"affinity": zone_a.clone()}),
            json!({"affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["a"]), expr("disk", "In", &["ssd"])]}]))}),
        ),
        (
            "an expression widened",
            json!({"affinity": zone_a.clone()}),
            json!({"affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["a", "b"])]}]))}),
        ),
        (
            "a term added",
            json!({"affinity": zone_a.clone()}),
            json!({"affinity": required(json!([{"matchExpressions": [expr("zone", "In", &["a"])]}, {"matchExpressions": [expr("zone", "In", &["b"])]}]))}),
        ),
        (
            "the required block removed",
            json!({"affinity": zone_a.clone()}),
            json!({"affinity": {"nodeAffinity": {}}}),
        ),
        (
            "the affinity removed",
            json!({"affinity": zone_a.clone()}),
            json!({}),
        ),
        (
            "a preferred term added",
            json!({"affinity": zone_a.clone()}),
            json!({"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": zone_a["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"].clone(),
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {"matchExpressions": [expr("disk", "In", &["ssd"])]}}]}}}),
        ),
        (
            "a toleration added",
            json!({}),
            json!({"tolerations": [toleration.clone()]}),
        ),
        (
            "a toleration removed",
            json!({"tolerations": [toleration.clone()]}),
            json!({}),
        ),
        (
            "a scheduling gate added",
            json!({}),
            json!({"schedulingGates": [{"name": "example.com/gate"}, {"name": "example.com/second"}]}),
        ),
        (
            "the gates removed with a tightening",
            json!({}),
            json!({"schedulingGates": [], "nodeSelector": {"disk": "ssd"}}),
        ),
        (
            "an ungated pod's nodeSelector set",
            json!({"schedulingGates": []}),
            json!({"nodeSelector": {"disk": "ssd"}}),
        ),
        (
            "an ungated pod's toleration added",
            json!({"schedulingGates": []}),
            json!({"tolerations": [toleration.clone()]}),
        ),
    ];
    let mut disagreements = Vec::new();
    for (i, (what, old_fields, new_fields)) in cases.iter().enumerate() {
        let name = format!("p{i}");
        let mut spec = json!({
            "schedulingGates": [{"name": "example.com/gate"}],
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]});
        for (k, v) in old_fields.as_object().unwrap() {
            spec[k] = v.clone();
        }
        let (code, old) = api.create(
            "/api/v1/namespaces/kep/pods",
            &json!({"metadata": {"name": name}, "spec": spec}),
        );
        assert_eq!(code, 201, "{what}: {old}");
        // The new pod: the stored one with the case's fields in place of its own.
        let mut new = old.clone();
        for k in ["nodeSelector", "affinity"] {
            new["spec"].as_object_mut().unwrap().remove(k);
        }
        if let Some(t) = old_fields.get("tolerations") {
            // The defaulted tolerations stay; the case's own are taken out.
            let kept: Vec<Value> = new["spec"]["tolerations"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|x| !t.as_array().unwrap().contains(x))
                .cloned()
                .collect();
            new["spec"]["tolerations"] = Value::Array(kept);
        }
        for (k, v) in new_fields.as_object().unwrap() {
            if k == "tolerations" {
                let mut all = new["spec"]["tolerations"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                all.extend(v.as_array().unwrap().iter().cloned());
                new["spec"]["tolerations"] = Value::Array(all);
            } else {
                new["spec"][k] = v.clone();
            }
        }
        let put = api.curl(
            "PUT",
            &format!("/api/v1/namespaces/kep/pods/{name}?dryRun=All"),
            Some(("application/json", &new)),
        );
        let code = put.0;
        let normalize = |c: Vec<Cause>| -> Vec<(String, String, (Option<Value>, String))> {
            c.into_iter()
                .map(|(field, reason, message)| (field, reason, normalized(&message)))
                .collect()
        };
        let theirs = normalize(refused_by_apiserver(what, put, 200));
        let (allowed, ours) = refused_by_webhook("UPDATE", &new, Some(&old));
        let ours = normalize(ours);
        // An ungated pod's scheduling fields are refused by the apiserver's catch-all (`spec:
        // Forbidden: pod updates may not change fields other than …` and a diff of its internal
        // types); ours names the field and why. The same refusal, the same reason, at or below
        // the apiserver's field.
        let same = if what.starts_with("an ungated") {
            theirs.len() == ours.len()
                && theirs.iter().zip(&ours).all(|(t, o)| {
                    t.1 == o.1 && (o.0 == t.0 || o.0.starts_with(&format!("{}.", t.0)))
                })
        } else {
            theirs == ours
        };
        if !same {
            disagreements.push(format!(
                "{what}:\n  apiserver {code}: {theirs:?}\n  webhook allowed={allowed}: {ours:?}"
            ));
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

/// The apiserver's own refusals of `topologySpreadConstraints` (`details.causes` of its 422 to
/// a dry-run create) are the topology-spread rule's, field, reason and message, and the
/// constraints it takes pass the rule; what the webhook answers is computed offline from the
/// same pod.
#[test]
fn topology_spread_refuses_exactly_what_the_apiserver_refuses() {
    let Some(api) = with_apiserver("topology_spread_refuses_exactly_what_the_apiserver_refuses")
    else {
        return;
    };
    api.namespace("tsc");
    let selector = json!({"matchLabels": {"app": "web"}});
    let zone = |extra: Value| {
        let mut c = json!({"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector});
        for (k, v) in extra.as_object().unwrap() {
            if v.is_null() {
                c.as_object_mut().unwrap().remove(k);
            } else {
                c[k] = v.clone();
            }
        }
        c
    };
    let cases: Vec<(&str, Value)> = vec![
        ("a valid constraint", json!([zone(json!({}))])),
        (
            "matchLabelKeys and minDomains",
            json!([zone(
                json!({"minDomains": 2, "matchLabelKeys": ["pod-template-hash"]})
            )]),
        ),
        ("maxSkew 0", json!([zone(json!({"maxSkew": 0}))])),
        ("maxSkew negative", json!([zone(json!({"maxSkew": -1}))])),
        (
            "whenUnsatisfiable unknown",
            json!([zone(json!({"whenUnsatisfiable": "Sometimes"}))]),
        ),
        (
            "whenUnsatisfiable missing",
            json!([zone(json!({"whenUnsatisfiable": null}))]),
        ),
        (
            "topologyKey empty",
            json!([zone(json!({"topologyKey": ""}))]),
        ),
        (
            "topologyKey not a label key",
            json!([zone(json!({"topologyKey": "zone name"}))]),
        ),
        (
            "topologyKey of three parts",
            json!([zone(json!({"topologyKey": "a/b/c"}))]),
        ),
        ("minDomains 0", json!([zone(json!({"minDomains": 0}))])),
        (
            "minDomains with ScheduleAnyway",
            json!([zone(
                json!({"minDomains": 2, "whenUnsatisfiable": "ScheduleAnyway"})
            )]),
        ),
        (
            "a duplicate",
            json!([zone(json!({})), zone(json!({"maxSkew": 2}))]),
        ),
        (
            "the same key, the other policy",
            json!([
                zone(json!({})),
                zone(json!({"whenUnsatisfiable": "ScheduleAnyway"}))
            ]),
        ),
        (
            "matchLabelKeys without a selector",
            json!([zone(
                json!({"labelSelector": null, "matchLabelKeys": ["pod-template-hash"]})
            )]),
        ),
        (
            "matchLabelKeys not a label key",
            json!([zone(json!({"matchLabelKeys": ["a b"]}))]),
        ),
        (
            "matchLabelKeys naming a selector key",
            json!([zone(json!({"matchLabelKeys": ["app"]}))]),
        ),
        (
            "nodeAffinityPolicy unknown",
            json!([zone(json!({"nodeAffinityPolicy": "Always"}))]),
        ),
        (
            "nodeTaintsPolicy unknown",
            json!([zone(json!({"nodeTaintsPolicy": "honor"}))]),
        ),
        (
            "a selector operator unknown",
            json!([zone(
                json!({"labelSelector": {"matchExpressions": [{"key": "app", "operator": "Has", "values": ["web"]}]}})
            )]),
        ),
        (
            "a selector value not a label value",
            json!([zone(
                json!({"labelSelector": {"matchLabels": {"app": "web app"}}})
            )]),
        ),
        (
            "two mistakes in two constraints",
            json!([
                zone(json!({"maxSkew": 0})),
                zone(
                    json!({"topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "Never"})
                )
            ]),
        ),
    ];
    // The apiserver reports a `matchLabelKeys` key the selector names at
    // `topologySpreadConstraints[i][j]`; we at the entry to remove, `[i].matchLabelKeys[j]`.
    let entry = |field: String| match field.strip_suffix(']').and_then(|f| f.rsplit_once("][")) {
        Some((constraint, j)) if j.parse::<usize>().is_ok() => {
            format!("{constraint}].matchLabelKeys[{j}]")
        }
        _ => field,
    };
    let mut disagreements = Vec::new();
    for (i, (what, constraints)) in cases.iter().enumerate() {
        let labels = json!({"app": "web"});
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("p{i}"), "namespace": "tsc", "labels": labels},
            "spec": {"topologySpreadConstraints": constraints,
                "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}});
        let created = api.create("/api/v1/namespaces/tsc/pods?dryRun=All", &pod);
        let code = created.0;
        let theirs: Vec<_> = refused_by_apiserver(what, created, 201)
            .into_iter()
            .map(|(field, reason, message)| (entry(field), reason, message))
            .collect();
        // What webhooks are sent: the pod after the apiserver merged each `matchLabelKeys` key
        // the pod carries into its selector (`key In [value]`, appended), as it does on create.
        let mut pod = pod;
        for c in pod["spec"]["topologySpreadConstraints"]
            .as_array_mut()
            .unwrap()
        {
            let keys: Vec<String> = c["matchLabelKeys"]
                .as_array()
                .map(|k| {
                    k.iter()
                        .filter_map(|k| k.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            if c["labelSelector"].is_null() {
                continue;
            }
            for k in keys {
                if let Some(v) = labels.get(&k) {
                    let exprs = &mut c["labelSelector"]["matchExpressions"];
                    if exprs.is_null() {
                        *exprs = json!([]);
                    }
                    exprs
                        .as_array_mut()
                        .unwrap()
                        .push(json!({"key": k, "operator": "In", "values": [v]}));
                }
            }
        }
        let (allowed, ours) = refused_by_webhook("CREATE", &pod, None);
        if theirs != ours {
            disagreements.push(format!(
                "{what}:\n  apiserver {code}: {theirs:?}\n  webhook allowed={allowed}: {ours:?}"
            ));
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

/// A required anti-affinity term whose `topologyKey` is no node label key is refused by the
/// hard-anti-affinity rule with the apiserver's own causes (a dry-run create through
/// kube-apiserver v1.36.2 against the webhook's offline review of the same pod), and one on the
/// node's hostname passes both.
#[test]
fn anti_affinity_keys_are_refused_as_the_apiserver_refuses_them() {
    let Some(api) = with_apiserver("anti_affinity_keys_are_refused_as_the_apiserver_refuses_them")
    else {
        return;
    };
    api.namespace("aa");
    let term =
        |key: &str| json!({"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": key});
    let cases: [(&str, Vec<Value>); 6] = [
        ("the hostname", vec![term("kubernetes.io/hostname")]),
        ("an empty key", vec![term("")]),
        ("a key with a space", vec![term("zone name")]),
        ("an empty prefix name", vec![term("example.com/")]),
        (
            "a prefix that is no DNS subdomain",
            vec![term("Example_com/zone")],
        ),
        (
            "two bad keys",
            vec![term("-zone"), term("kubernetes.io/hostname"), term("a/b/c")],
        ),
    ];
    let mut disagreements = Vec::new();
    for (i, (what, terms)) in cases.iter().enumerate() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("p{i}"), "namespace": "aa", "labels": {"app": "db"}},
            "spec": {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}},
                "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}});
        let created = api.create("/api/v1/namespaces/aa/pods?dryRun=All", &pod);
        let code = created.0;
        let theirs = refused_by_apiserver(what, created, 201);
        let (allowed, ours) = refused_by_webhook("CREATE", &pod, None);
        if theirs != ours {
            disagreements.push(format!(
                "{what}:\n  apiserver {code}: {theirs:?}\n  webhook allowed={allowed}: {ours:?}"
            ));
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

/// What happens to the constraints `/mutate` defaulted onto a Deployment when its owner later
/// declares some, through kube-apiserver v1.36.2: server-side apply merges the declared list
/// with the defaults by (topologyKey, whenUnsatisfiable), since the defaults belong to no
/// manager, so they stay; a replace (`kubectl replace`, a full update) stores the manifest's
/// list, and applies after it keep it. The README's advice is this test.
#[test]
fn declared_constraints_take_over_from_defaults_through_a_replace() {
    let Some(api) =
        with_apiserver("declared_constraints_take_over_from_defaults_through_a_replace")
    else {
        return;
    };
    let server = start(&[]);
    api.namespace("apply");
    api.register_mutating_webhooks(&server, "apply", &["workloads.mutate.placement-guard.io"]);
    let deploys = "/apis/apps/v1/namespaces/apply/deployments";
    let manifest = |name: &str, constraints: Option<&Value>| {
        let mut m = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}});
        if let Some(c) = constraints {
            m["spec"]["template"]["spec"]["topologySpreadConstraints"] = c.clone();
        }
        m
    };
    let constraints = |v: &Value| -> Vec<String> {
        v["spec"]["template"]["spec"]["topologySpreadConstraints"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                format!(
                    "{} {} {} {}",
                    c["topologyKey"].as_str().unwrap_or(""),
                    c["whenUnsatisfiable"].as_str().unwrap_or(""),
                    c["maxSkew"],
                    c["matchLabelKeys"]
                )
            })
            .collect()
    };
    // The webhook is seen once a dry-run create comes back defaulted.
    api.eventually("the mutating webhook registered", || {
        let (_, v) = api.curl(
            "POST",
            &format!("{deploys}?dryRun=All"),
            Some(("application/json", &manifest("probe", None))),
        );
        !constraints(&v).is_empty()
    });
    let apply = |m: &Value| {
        let name = m["metadata"]["name"].as_str().unwrap();
        api.curl(
            "PATCH",
            &format!("{deploys}/{name}?fieldManager=kubectl&force=true"),
            Some(("application/apply-patch+yaml", m)),
        )
    };
    let defaults = [
        "kubernetes.io/hostname ScheduleAnyway 3 [\"pod-template-hash\"]",
        "topology.kubernetes.io/zone ScheduleAnyway 5 [\"pod-template-hash\"]",
    ];
    let (code, v) = apply(&manifest("web", None));
    assert_eq!(code, 201, "{v}");
    assert_eq!(constraints(&v), defaults);
    let declared = json!([{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
                           "labelSelector": {"matchLabels": {"app": "web"}}}]);
    let wanted = ["kubernetes.io/hostname DoNotSchedule 1 null"];
    // Server-side apply: the defaults stay beside the declared constraint.
    let (code, v) = apply(&manifest("web", Some(&declared)));
    assert_eq!(code, 200, "{v}");
    let mut merged: Vec<String> = defaults.iter().map(|d| d.to_string()).collect();
    merged.insert(1, wanted[0].to_string());
    let mut got = constraints(&v);
    got.sort();
    merged.sort();
    assert_eq!(got, merged);
    // A replace stores the manifest's list, and an apply after it keeps it.
    let mut replacing = manifest("web", Some(&declared));
    replacing["metadata"]["resourceVersion"] = v["metadata"]["resourceVersion"].clone();
    let (code, v) = api.curl(
        "PUT",
        &format!("{deploys}/web?fieldManager=kubectl-replace"),
        Some(("application/json", &replacing)),
    );
    assert_eq!(code, 200, "{v}");
    assert_eq!(constraints(&v), wanted);
    let (code, v) = apply(&manifest("web", Some(&declared)));
    assert_eq!(code, 200, "{v}");
    assert_eq!(constraints(&v), wanted);
}

/// kube-apiserver refuses a pod update that changes scheduling directives it may not before any
/// validating webhook is called, so what a controller author reads is the mutating webhook's
/// explanation: registered from the manifests, it reaches them for gated pods and for pods
/// whose gates are gone (another actor removed them, the controller's patch lands after), and
/// stays out of updates that leave the directives alone.
#[test]
fn refused_directive_changes_are_explained_through_the_mutating_webhook() {
    let Some(api) =
        with_apiserver("refused_directive_changes_are_explained_through_the_mutating_webhook")
    else {
        return;
    };
    let server = start(&[]);
    api.namespace("explained");
    api.register_mutating_webhooks(
        &server,
        "explained",
        &["pods-update.mutate.placement-guard.io"],
    );
    let pods = "/api/v1/namespaces/explained/pods";
    let pod = |name: &str, gated: bool| {
        let mut spec = json!({"nodeSelector": {"disktype": "ssd"},
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]});
        if gated {
            spec["schedulingGates"] = json!([{"name": "example.com/gate"}]);
        }
        let (code, body) = api.create(pods, &json!({"metadata": {"name": name}, "spec": spec}));
        assert_eq!(code, 201, "{body}");
        format!("{pods}/{name}")
    };
    let merge = |path: &str, patch: Value| {
        api.request(
            "PATCH",
            path,
            Some(("application/merge-patch+json", &patch)),
        )
    };
    let gated = pod("gated", true);
    let ungated = pod("ungated", false);
    let loosen = json!({"spec": {"nodeSelector": {"disktype": null}}});
    // The apiserver's informer picks the registration up asynchronously: probe with dry runs.
    api.eventually("the mutating webhook's explanation", || {
        !merge(&format!("{gated}?dryRun=All"), loosen.clone())
            .2
            .is_empty()
    });
    let (code, _, warnings) = merge(&gated, loosen.clone());
    assert_eq!(code, 422);
    assert_eq!(
        warnings,
        ["placement-guard: spec.nodeSelector[\"disktype\"] removed on a gated pod; while gated you may only add keys"]
    );
    let (code, body, warnings) = merge(&ungated, json!({"spec": {"nodeSelector": {"rack": "r1"}}}));
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        warnings,
        ["placement-guard: spec.nodeSelector changed on a pod without scheduling gates; it is fixed once ungated"]
    );
    // A label change reaches neither the webhook nor the client's warnings.
    let (code, body, warnings) = merge(&ungated, json!({"metadata": {"labels": {"team": "a"}}}));
    assert_eq!(code, 200, "{body}");
    assert!(warnings.is_empty(), "{warnings:?}");
}

/// `check` refuses the scheduling directives kube-apiserver v1.36.2 refuses (nodeSelector, node
/// affinity, pod affinity and anti-affinity terms, tolerations, scheduling gates), at the same
/// fields with the same messages, and passes what it takes: each pod is dry-run created through
/// the API and checked as a manifest (its `invalid-object` errors, and the hard-anti-affinity
/// rule's own for a required anti-affinity term's topologyKey).
#[test]
fn scheduling_fields_are_refused_as_the_apiserver_refuses_them() {
    use placement_guard::ci::check::Checker;
    use placement_guard::rules::config::RuleSet;
    let Some(api) = with_apiserver("scheduling_fields_are_refused_as_the_apiserver_refuses_them")
    else {
        return;
    };
    api.namespace("sched");
    let req = |expressions: Value| json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": expressions}]}}});
    let expr = |key: &str, op: &str, values: &[&str]| -> Value {
        let mut e = json!({"key": key, "operator": op});
        if !values.is_empty() {
            e["values"] = json!(values);
        }
        e
    };
    let fields = |f: Value| json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [f]}]}}});
    let preferred_node = |weight: i64, e: Value| json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": weight, "preference": {"matchExpressions": [e]}}]}});
    let web = json!({"matchLabels": {"app": "web"}});
    let term = |extra: Value| {
        let mut t = json!({"topologyKey": "kubernetes.io/hostname", "labelSelector": web});
        for (k, v) in extra.as_object().unwrap() {
            if v.is_null() {
                t.as_object_mut().unwrap().remove(k);
            } else {
                t[k] = v.clone();
            }
        }
        t
    };
    let affinity = |kind: &str, t: Value| json!({kind: {"requiredDuringSchedulingIgnoredDuringExecution": [t]}});
    let preferred = |kind: &str, weight: i64, t: Value| json!({kind: {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": weight, "podAffinityTerm": t}]}});
    let tol = |t: Value| json!([t]);
    let cases: Vec<(&str, &str, Value)> = vec![
        (
            "valid scheduling directives",
            "affinity",
            req(json!([
                expr("zone", "In", &["a"]),
                expr("gen", "Gt", &["4"])
            ])),
        ),
        (
            "nodeSelector key of three parts",
            "nodeSelector",
            json!({"a/b/c": "x"}),
        ),
        (
            "nodeSelector key with a space",
            "nodeSelector",
            json!({"bad key": "x"}),
        ),
        (
            "nodeSelector value not a label value",
            "nodeSelector",
            json!({"disk": "bad value!"}),
        ),
        (
            "nodeSelector value too long",
            "nodeSelector",
            json!({"disk": "v".repeat(64)}),
        ),
        (
            "operator unknown",
            "affinity",
            req(json!([expr("zone", "Equals", &["a"])])),
        ),
        (
            "In without values",
            "affinity",
            req(json!([expr("zone", "In", &[])])),
        ),
        (
            "Exists with values",
            "affinity",
            req(json!([expr("zone", "Exists", &["a"])])),
        ),
        (
            "Gt with two values",
            "affinity",
            req(json!([expr("gen", "Gt", &["1", "2"])])),
        ),
        (
            "Lt with a negative value",
            "affinity",
            req(json!([expr("gen", "Lt", &["-5"])])),
        ),
        (
            "a value not a label value",
            "affinity",
            req(json!([expr("zone", "In", &["not valid!"])])),
        ),
        (
            "a key not a label key",
            "affinity",
            req(json!([expr("bad key", "Exists", &[])])),
        ),
        (
            "no terms",
            "affinity",
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}),
        ),
        (
            "matchFields on another field",
            "affinity",
            fields(json!({"key": "metadata.namespace", "operator": "In", "values": ["a"]})),
        ),
        (
            "matchFields Exists",
            "affinity",
            fields(json!({"key": "metadata.name", "operator": "Exists"})),
        ),
        (
            "matchFields two names",
            "affinity",
            fields(json!({"key": "metadata.name", "operator": "NotIn", "values": ["n1", "n2"]})),
        ),
        (
            "matchFields a name no node has",
            "affinity",
            fields(json!({"key": "metadata.name", "operator": "In", "values": ["Node_1"]})),
        ),
        (
            "preferred weight 0",
            "affinity",
            preferred_node(0, expr("zone", "In", &["a"])),
        ),
        (
            "preferred weight 101",
            "affinity",
            preferred_node(101, expr("zone", "In", &["a"])),
        ),
        (
            "preferred operator unknown",
            "affinity",
            preferred_node(1, expr("zone", "Bogus", &["a"])),
        ),
        (
            "preferred value not a label value",
            "affinity",
            preferred_node(1, expr("zone", "In", &["a b"])),
        ),
        (
            "pod affinity topologyKey empty",
            "affinity",
            affinity("podAffinity", term(json!({"topologyKey": ""}))),
        ),
        (
            "pod affinity topologyKey invalid",
            "affinity",
            affinity("podAffinity", term(json!({"topologyKey": "bad key"}))),
        ),
        (
            "pod affinity selector operator unknown",
            "affinity",
            affinity(
                "podAffinity",
                term(
                    json!({"labelSelector": {"matchExpressions": [expr("app", "Foo", &["web"])]}}),
                ),
            ),
        ),
        (
            "pod affinity selector value invalid",
            "affinity",
            affinity(
                "podAffinity",
                term(json!({"labelSelector": {"matchLabels": {"app": "bad value!"}}})),
            ),
        ),
        (
            "anti-affinity namespaceSelector In without values",
            "affinity",
            affinity(
                "podAntiAffinity",
                term(json!({"namespaceSelector": {"matchExpressions": [expr("team", "In", &[])]}})),
            ),
        ),
        (
            "anti-affinity namespace invalid",
            "affinity",
            affinity("podAntiAffinity", term(json!({"namespaces": ["Bad_NS"]}))),
        ),
        (
            "anti-affinity topologyKey empty",
            "affinity",
            affinity("podAntiAffinity", term(json!({"topologyKey": ""}))),
        ),
        (
            "matchLabelKeys without selector",
            "affinity",
            affinity(
                "podAffinity",
                term(json!({"labelSelector": null, "matchLabelKeys": ["app"]})),
            ),
        ),
        (
            "mismatchLabelKeys without selector",
            "affinity",
            affinity(
                "podAntiAffinity",
                term(json!({"labelSelector": null, "mismatchLabelKeys": ["app"]})),
            ),
        ),
        (
            "matchLabelKeys key invalid",
            "affinity",
            affinity("podAffinity", term(json!({"matchLabelKeys": ["bad key"]}))),
        ),
        (
            "matchLabelKeys key in the selector",
            "affinity",
            affinity("podAffinity", term(json!({"matchLabelKeys": ["app"]}))),
        ),
        (
            "matchLabelKeys key the pod lacks",
            "affinity",
            affinity("podAffinity", term(json!({"matchLabelKeys": ["version"]}))),
        ),
        (
            "a key in match and mismatch",
            "affinity",
            affinity(
                "podAntiAffinity",
                term(
                    json!({"labelSelector": {"matchLabels": {"team": "a"}}, "matchLabelKeys": ["tier"], "mismatchLabelKeys": ["tier"]}),
                ),
            ),
        ),
        (
            "preferred pod affinity weight 101",
            "affinity",
            preferred("podAffinity", 101, term(json!({}))),
        ),
        (
            "preferred anti-affinity weight 0, topologyKey empty",
            "affinity",
            preferred("podAntiAffinity", 0, term(json!({"topologyKey": ""}))),
        ),
        (
            "valid tolerations",
            "tolerations",
            json!([{"key": "k", "operator": "Equal", "value": "v", "effect": "NoExecute", "tolerationSeconds": 30}, {"operator": "Exists"}]),
        ),
        (
            "toleration Exists with a value",
            "tolerations",
            tol(json!({"key": "k", "operator": "Exists", "value": "x"})),
        ),
        (
            "toleration effect unknown",
            "tolerations",
            tol(json!({"key": "k", "operator": "Exists", "effect": "NoRun"})),
        ),
        (
            "toleration operator In",
            "tolerations",
            tol(json!({"key": "k", "operator": "In", "value": "v"})),
        ),
        (
            "toleration operator Lt",
            "tolerations",
            tol(json!({"key": "k", "operator": "Lt", "value": "5"})),
        ),
        (
            "toleration without key, Equal",
            "tolerations",
            tol(json!({"operator": "Equal", "value": "v"})),
        ),
        (
            "toleration without key or operator",
            "tolerations",
            tol(json!({"value": "v"})),
        ),
        (
            "toleration seconds without NoExecute",
            "tolerations",
            tol(
                json!({"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}),
            ),
        ),
        (
            "toleration seconds without effect",
            "tolerations",
            tol(json!({"key": "k", "operator": "Exists", "tolerationSeconds": 5})),
        ),
        (
            "toleration key invalid",
            "tolerations",
            tol(json!({"key": "bad key", "operator": "Exists"})),
        ),
        (
            "toleration value invalid",
            "tolerations",
            tol(json!({"key": "k", "value": "bad value!"})),
        ),
        (
            "gates duplicated",
            "schedulingGates",
            json!([{"name": "example.com/gate"}, {"name": "example.com/gate"}]),
        ),
        (
            "gate name invalid",
            "schedulingGates",
            json!([{"name": "bad gate!"}]),
        ),
        (
            "gate name of three parts",
            "schedulingGates",
            json!([{"name": "a/b/c"}]),
        ),
        ("gate name empty", "schedulingGates", json!([{"name": ""}])),
    ];
    // The apiserver reports a `matchLabelKeys` key the selector names at `...[i][j]`; we at
    // the entry to remove, `[i].matchLabelKeys[j]`.
    let entry = |field: String| match field.strip_suffix(']').and_then(|f| f.rsplit_once("][")) {
        Some((term, j)) if j.parse::<usize>().is_ok() => format!("{term}].matchLabelKeys[{j}]"),
        _ => field,
    };
    let rules = RuleSet::default();
    let mut disagreements = Vec::new();
    let mut refused = 0;
    for (i, (what, field, value)) in cases.iter().enumerate() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("p{i}"), "namespace": "sched", "labels": {"app": "web", "tier": "front"}},
            "spec": {field.to_string(): value,
                "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}});
        let created = api.create("/api/v1/namespaces/sched/pods?dryRun=All", &pod);
        let mut theirs: Vec<(String, String)> = refused_by_apiserver(what, created, 201)
            .into_iter()
            .map(|(field, _, message)| (entry(field), message))
            .collect();
        let mut checker = Checker::new(&rules);
        checker.check_text("pod.json", &pod.to_string());
        let report = checker.finish();
        let mut ours: Vec<(String, String)> = report
            .diagnostics
            .iter()
            .filter(|d| d.severity == placement_guard::ci::report::Severity::Error)
            .map(|d| (d.path.clone(), d.message.clone()))
            .collect();
        theirs.sort();
        ours.sort();
        refused += usize::from(!theirs.is_empty());
        if theirs != ours {
            disagreements.push(format!(
                "{what}:\n  apiserver: {theirs:#?}\n  check:     {ours:#?}"
            ));
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
    assert!(refused >= 45, "only {refused} cases refused");
}

/// A field the API does not have, in an object's metadata or pod template, is an
/// `invalid-object` error at its path, whatever its value, as kube-apiserver's strict field
/// validation (kubectl's default) refuses the object: the paths `check` reports are those
/// kube-apiserver v1.36.2 names in its `strict decoding error` for the same objects.
#[test]
fn unknown_fields_are_refused_as_the_apiserver_refuses_them() {
    use placement_guard::ci::check::Checker;
    use placement_guard::rules::config::RuleSet;
    let Some(api) = with_apiserver("unknown_fields_are_refused_as_the_apiserver_refuses_them")
    else {
        return;
    };
    api.namespace("strict");
    let container =
        json!({"name": "c", "image": "registry.k8s.io/pause:3.10", "imagePullPolicie": "Always"});
    let spec = json!({"containers": [container],
        "topologySpreadConstraints": [{"maxSkew": 1, "minDomain": 2, "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecutions": {"nodeSelectorTerms": []}}},
        "tolerations": [{"key": "k", "operator": "Exists", "tolerationSecond": 5}],
        // A misspelt key with an unset Helm value: refused all the same.
        "toleration": null, "nodeSelector": {"disk": null}});
    // Outside the pod spec too: the object's top level, the workload's spec, its claim
    // templates.
    let cases = [
        (
            "/api/v1/namespaces/strict/pods",
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "labels": {"app": "web"}, "label": {"x": "y"}}, "spec": spec,
                "sepc": {}}),
            7,
        ),
        (
            "/apis/apps/v1/namespaces/strict/deployments",
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                "spec": {"selector": {"matchLabels": {"app": "web"}}, "replica": 2,
                    "strategy": {"type": "RollingUpdate", "rollingUpdte": {"maxSurge": 1}},
                    "template": {"metadata": {"labels": {"app": "web"}, "annotation": {"a": "b"}}, "spec": spec}}}),
            8,
        ),
        (
            "/apis/apps/v1/namespaces/strict/statefulsets",
            json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
                "spec": {"selector": {"matchLabels": {"app": "db"}}, "serviceName": "db",
                    "template": {"metadata": {"labels": {"app": "db"}},
                        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}},
                    "volumeClaimTemplates": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "data"},
                        "spec": {"storageClass": "fast", "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "1Gi"}}}}]}}),
            1,
        ),
        // v1.37's Job `scheduling`: the v1.36 apiserver does not have it.
        (
            "/apis/batch/v1/namespaces/strict/jobs",
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                "spec": {"scheduling": {},
                    "template": {"spec": {"restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}}),
            1,
        ),
    ];
    let rules = RuleSet::default();
    for (path, object, count) in cases {
        let (code, answer) = api.create(
            &format!("{path}?dryRun=All&fieldValidation=Strict"),
            &object,
        );
        assert_eq!(code, 400, "{answer}");
        let message = answer["message"].as_str().unwrap();
        let mut theirs: Vec<String> = message
            .split("unknown field \"")
            .skip(1)
            .map(|rest| rest.split('"').next().unwrap().to_string())
            .collect();
        let mut checker = Checker::new(&rules);
        checker.check_text("o.json", &object.to_string());
        let report = checker.finish();
        let mut ours: Vec<String> = report
            .diagnostics
            .iter()
            .filter(|d| d.message.starts_with("unknown field"))
            .map(|d| d.path.clone())
            .collect();
        theirs.sort();
        ours.sort();
        assert_eq!(ours, theirs, "{message}");
        assert_eq!(ours.len(), count, "{ours:?}");
    }
}

/// A WorkloadSpread subset's patch is applied with `StrategicMergePatch` and the pod's patch
/// strategies; kube-apiserver applies a strategic-merge PATCH with the same code and tags. Each
/// patch is sent to a PodTemplate (`{"template": patch}`, dry run) and the patched template's
/// lists, in order, must be ours (`k8s::strategic::apply` of the stored template). Defaults
/// the apiserver adds to new entries are left out of the comparison.
#[test]
fn subset_patches_merge_as_the_apiserver_merges_them() {
    use placement_guard::k8s::strategic;
    let Some(api) = with_apiserver("subset_patches_merge_as_the_apiserver_merges_them") else {
        return;
    };
    api.namespace("smp");
    let c = |name: &str| json!({"name": name, "image": "registry.k8s.io/pause:3.10"});
    let mut a = c("a");
    a["ports"] = json!([{"containerPort": 80, "name": "http"}]);
    a["env"] = json!([{"name": "X", "value": "1"}, {"name": "Y", "value": "1"}]);
    a["volumeMounts"] = json!([{"name": "data", "mountPath": "/data"}]);
    let template = json!({
        "metadata": {"labels": {"app": "web"}, "finalizers": ["example.com/a"]},
        "spec": {"containers": [a, c("b"), c("c")],
            "volumes": [{"name": "data", "emptyDir": {}}, {"name": "other", "emptyDir": {}}],
            "tolerations": [{"key": "k", "operator": "Exists"}]}});
    let (code, stored) = api.create(
        "/api/v1/namespaces/smp/podtemplates",
        &json!({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"}, "template": template}),
    );
    assert_eq!(code, 201, "{stored}");
    let stored = stored["template"].clone();
    // What a patch can change, in order; not what defaulting adds.
    let lists = |t: &Value| {
        let names = |v: &Value, key: &str| -> Vec<Value> {
            v.as_array()
                .map(|a| a.iter().map(|e| e[key].clone()).collect())
                .unwrap_or_default()
        };
        let spec = &t["spec"];
        let containers: Vec<Value> = spec["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                json!({"name": c["name"], "image": c["image"],
                    "ports": c["ports"].as_array().map(|p| p.iter().map(|p| json!([p["containerPort"], p["name"]])).collect::<Vec<_>>()),
                    "env": c["env"], "mounts": c["volumeMounts"].as_array().map(|m| m.iter().map(|m| json!([m["mountPath"], m["name"]])).collect::<Vec<_>>())})
            })
            .collect();
        let volumes: Vec<Value> = spec["volumes"]
            .as_array()
            .map(|v| {
                v.iter()
                    .map(|v| {
                        let mut keys: Vec<&String> = v.as_object().unwrap().keys().collect();
                        keys.sort();
                        json!(keys)
                    })
                    .collect()
            })
            .unwrap_or_default();
        json!({"containers": containers, "volumes": volumes, "volumeNames": names(&spec["volumes"], "name"),
            "tolerations": spec["tolerations"],
            // An empty list is no list once stored (Go's omitempty).
            "finalizers": t["metadata"]["finalizers"].as_array().filter(|f| !f.is_empty()),
            "labels": t["metadata"]["labels"]})
    };
    let cases = [
        (
            "an added container",
            json!({"spec": {"containers": [c("d")]}}),
        ),
        (
            "merged by name; ports by containerPort, env by name, mounts by mountPath",
            json!({"spec": {"containers": [{"name": "a", "image": "registry.k8s.io/pause:3.9",
                "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 9090, "name": "metrics"}],
                "env": [{"name": "Y", "value": "2"}, {"name": "Z", "value": "3"}],
                "volumeMounts": [{"name": "other", "mountPath": "/data"}, {"name": "data", "mountPath": "/more"}]}]}}),
        ),
        (
            "the server's entries around the patched ones",
            json!({"spec": {"containers": [{"name": "b", "image": "registry.k8s.io/pause:3.9"}, c("d")]}}),
        ),
        (
            "$patch: delete",
            json!({"spec": {"containers": [{"name": "b", "$patch": "delete"}]}}),
        ),
        (
            "$patch: replace in a list",
            json!({"spec": {"containers": [{"$patch": "replace"}, c("z")]}}),
        ),
        (
            "$retainKeys",
            json!({"spec": {"volumes": [{"name": "data", "$retainKeys": ["name", "hostPath"], "hostPath": {"path": "/x"}}]}}),
        ),
        (
            "$setElementOrder",
            json!({"spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}],
                "containers": [{"name": "a", "image": "registry.k8s.io/pause:3.9"}]}}),
        ),
        (
            "finalizers as a set, and $deleteFromPrimitiveList",
            json!({"metadata": {"finalizers": ["example.com/b", "example.com/a"],
                "labels": {"app": null, "tier": "web"}}}),
        ),
        (
            "$deleteFromPrimitiveList",
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/a"]}}),
        ),
        (
            "tolerations are replaced",
            json!({"spec": {"tolerations": [{"key": "z", "operator": "Exists"}]}}),
        ),
        (
            "$patch: replace on an entry replaces the list with the others",
            json!({"spec": {"containers": [{"name": "a", "$patch": "replace"}, c("z")]}}),
        ),
        (
            "$patch: replace in a map",
            json!({"metadata": {"labels": {"$patch": "replace", "tier": "x"}}}),
        ),
    ];
    // The patch sent as a strategic-merge PATCH of the template, dry run.
    let dry_patch = |patch: &Value| {
        api.curl(
            "PATCH",
            "/api/v1/namespaces/smp/podtemplates/t?dryRun=All",
            Some((
                "application/strategic-merge-patch+json",
                &json!({"template": patch}),
            )),
        )
    };
    for (what, patch) in cases {
        let (code, answer) = dry_patch(&patch);
        assert_eq!(code, 200, "{what}: {answer}");
        let ours = strategic::apply(&stored, &patch).unwrap();
        assert_eq!(lists(&ours), lists(&answer["template"]), "{what}");
    }
    // An entry without its merge key: both refuse the patch.
    let patch = json!({"spec": {"containers": [{"image": "x"}]}});
    let (code, answer) = dry_patch(&patch);
    assert_ne!(code, 200, "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains("does not contain declared merge key: name"),
        "{answer}"
    );
    assert!(strategic::apply(&stored, &patch).is_err());
}

/// A quantity kube-apiserver's decoder cannot parse refuses the object (400), one it can is
/// taken; `check` agrees on each, at the field.
#[test]
fn quantities_are_refused_as_the_apiserver_refuses_them() {
    use placement_guard::ci::check::Checker;
    use placement_guard::rules::config::RuleSet;
    let Some(api) = with_apiserver("quantities_are_refused_as_the_apiserver_refuses_them") else {
        return;
    };
    api.namespace("qty");
    let rules = RuleSet::default();
    for (i, q) in [
        json!("1.5Gi"),
        json!("2e3"),
        json!("129M"),
        json!(".5"),
        json!(512),
        json!("10GB"),
        json!("10gi"),
        json!("10 Gi"),
        json!("1Gii"),
        json!("1e"),
        json!("lots"),
        json!(""),
    ]
    .into_iter()
    .enumerate()
    {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": format!("p{i}")},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"memory": q}}}]}});
        let (code, answer) = api.create(
            "/api/v1/namespaces/qty/pods?dryRun=All&fieldValidation=Strict",
            &pod,
        );
        let mut checker = Checker::new(&rules);
        checker.check_text("p.json", &pod.to_string());
        let report = checker.finish();
        let ours: Vec<String> = report
            .diagnostics
            .iter()
            .filter(|d| d.rule == "invalid-object")
            .map(|d| format!("{}: {}", d.path, d.message))
            .collect();
        if code == 201 {
            assert_eq!(ours, Vec::<String>::new(), "{q}");
        } else {
            assert_eq!(code, 400, "{q}: {answer}");
            let theirs = answer["message"].as_str().unwrap();
            assert_eq!(ours.len(), 1, "{q}: {ours:?}");
            assert!(
                ours[0].starts_with("spec.containers[0].resources.requests.memory: "),
                "{q}: {ours:?}"
            );
            let why = ours[0].rsplit(": ").next().unwrap();
            assert!(theirs.contains(why), "{q}: ours {why:?}, theirs {theirs}");
        }
    }
}

/// A WorkloadSpread subset's patched pod spec is validated as Kruise validates it, with the
/// apiserver's `ValidatePodSpec`: the environment's sources are refused as kube-apiserver
/// refuses them on a pod (dry-run creates), at the same fields with the same messages, and the
/// same ones are taken (a divisor `1000` is `1k`, `spec.host` is `spec.nodeName`).
#[test]
fn environment_sources_are_refused_as_the_apiserver_refuses_them() {
    use placement_guard::k8s::fieldpath::FieldPath;
    use placement_guard::kruise::podspec::validate_pod_spec;
    let Some(api) = with_apiserver("environment_sources_are_refused_as_the_apiserver_refuses_them")
    else {
        return;
    };
    api.namespace("env");
    let field = |p: &str| json!({"fieldRef": {"fieldPath": p}});
    let resource = |r: &str, d: Option<&str>| {
        let mut f = json!({"resource": r});
        if let Some(d) = d {
            f["divisor"] = json!(d);
        }
        json!({"resourceFieldRef": f})
    };
    let cases: Vec<(&str, Value)> = vec![
        ("no source", json!({"valueFrom": {}})),
        (
            "a value beside a source",
            json!({"value": "x", "valueFrom": field("metadata.name")}),
        ),
        (
            "two sources",
            json!({"valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}, "secretKeyRef": {"name": "s", "key": "k"}}}),
        ),
        (
            "a pod field not for the environment",
            json!({"valueFrom": field("status.phase")}),
        ),
        (
            "an unknown pod field",
            json!({"valueFrom": field("spec.foo")}),
        ),
        (
            "another apiVersion",
            json!({"valueFrom": {"fieldRef": {"apiVersion": "v2", "fieldPath": "metadata.name"}}}),
        ),
        (
            "a bad label key",
            json!({"valueFrom": field("metadata.labels['bad key!']")}),
        ),
        (
            "an annotation key, lower-cased",
            json!({"valueFrom": field("metadata.annotations['Example.com/Team']")}),
        ),
        (
            "a subscript of a plain field",
            json!({"valueFrom": field("metadata.name['x']")}),
        ),
        ("spec.host", json!({"valueFrom": field("spec.host")})),
        ("host IPs", json!({"valueFrom": field("status.hostIPs")})),
        (
            "an unknown resource",
            json!({"valueFrom": resource("limits.gpu", None)}),
        ),
        ("no resource", json!({"valueFrom": resource("", Some("1"))})),
        (
            "a cpu divisor in bytes",
            json!({"valueFrom": resource("limits.cpu", Some("1Mi"))}),
        ),
        (
            "a cpu divisor of 1000m",
            json!({"valueFrom": resource("limits.cpu", Some("1000m"))}),
        ),
        (
            "a memory divisor of 1000",
            json!({"valueFrom": resource("requests.memory", Some("1000"))}),
        ),
        (
            "a memory divisor of 1024",
            json!({"valueFrom": resource("requests.memory", Some("1024"))}),
        ),
        (
            "a memory divisor of 1024Ki",
            json!({"valueFrom": resource("requests.memory", Some("1024Ki"))}),
        ),
        (
            "a memory divisor of 1e3",
            json!({"valueFrom": resource("limits.memory", Some("1e3"))}),
        ),
        (
            "a storage divisor of 1m",
            json!({"valueFrom": resource("limits.ephemeral-storage", Some("1m"))}),
        ),
        (
            "a hugepages divisor of 1m",
            json!({"valueFrom": resource("requests.hugepages-2Mi", Some("1m"))}),
        ),
        (
            "a zero divisor",
            json!({"valueFrom": resource("limits.cpu", Some("0"))}),
        ),
        (
            "a config map's bad name and no key",
            json!({"valueFrom": {"configMapKeyRef": {"name": "Bad_Name", "key": ""}}}),
        ),
        (
            "a secret's bad keys",
            json!({"valueFrom": {"secretKeyRef": {"name": "s", "key": "a/b"}}}),
        ),
        (
            "a secret key ..",
            json!({"valueFrom": {"secretKeyRef": {"name": "s", "key": ".."}}}),
        ),
        (
            "a secret without a name",
            json!({"valueFrom": {"secretKeyRef": {"key": "k"}}}),
        ),
    ];
    let mut refused = 0;
    for (i, (what, env)) in cases.iter().enumerate() {
        let mut var = json!({"name": "V"});
        for (k, v) in env.as_object().unwrap() {
            var[k] = v.clone();
        }
        let spec = json!({"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "env": [var]}]});
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": format!("p{i}")}, "spec": spec});
        let theirs: Vec<String> = refused_by_apiserver(
            what,
            api.create("/api/v1/namespaces/env/pods?dryRun=All", &pod),
            201,
        )
        .into_iter()
        // Kruise vendors Kubernetes 1.32, before `fileKeyRef` (1.34).
        .map(|(field, _, message)| {
            format!("{field}: {message}").replace(
                "`configMapKeyRef`, `secretKeyRef` or `fileKeyRef`",
                "`configMapKeyRef` or `secretKeyRef`",
            )
        })
        .collect();
        let ours: Vec<String> = validate_pod_spec(&spec, &FieldPath::new("spec"))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(ours, theirs, "{what}");
        refused += usize::from(!theirs.is_empty());
    }
    // The table is not vacuous: all but the seven valid rows are refused.
    assert_eq!(refused, cases.len() - 7);
}
