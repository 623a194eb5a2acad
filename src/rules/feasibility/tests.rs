use std::collections::HashMap;

use serde_json::{json, Value};

use super::*;
use crate::core::cluster::Node;
use crate::core::snapshot::{node_of, SlimObject};
use crate::k8s::workload::parse_value;
use crate::rules::{evaluate, Context, Input, RuleSet, Subject, User};

fn node(name: &str, labels: Value, spec: Value) -> Node {
    let obj: SlimObject =
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}, "spec": spec}))
            .unwrap();
    node_of(obj, false)
}

/// Two general nodes in zones a and b, a GPU node tainted for GPU pods, a cordoned node.
fn cluster() -> Cluster {
    Cluster::new(
        vec![
            node("n1", json!({"zone": "a", "pool": "general"}), json!({})),
            node("n2", json!({"zone": "b", "pool": "general"}), json!({})),
            node(
                "gpu1",
                json!({"zone": "b", "pool": "gpu"}),
                json!({"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}),
            ),
            node(
                "old1",
                json!({"zone": "c", "pool": "general"}),
                json!({"unschedulable": true}),
            ),
        ],
        HashMap::new(),
    )
    .unwrap()
}

const GATES: &str = r#"[{"name": "kueue.x-k8s.io/admission"}]"#;

fn pod(spec: Value) -> PodTemplate {
    parse_value(
        Kind::Pod,
        &json!({"metadata": {"name": "p", "namespace": "default"}, "spec": spec}),
    )
    .unwrap()
}

fn gated(mut spec: Value) -> PodTemplate {
    spec["schedulingGates"] = serde_json::from_str(GATES).unwrap();
    pod(spec)
}

fn rules(action: &str) -> RuleSet {
    RuleSet::from_yaml(
        "r.yaml",
        &format!("apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  feasibility:\n    action: {action}\n"),
    )
    .unwrap()
}

fn judge(
    rules: &RuleSet,
    cluster: ClusterState,
    new: &PodTemplate,
    old: Option<&PodTemplate>,
) -> Verdict {
    let input = Input {
        phase: Phase::Validate,
        operation: if old.is_some() {
            Operation::Update
        } else {
            Operation::Create
        },
        namespace: "default",
        user: User::default(),
        object: Subject::Template(new),
        old_object: old.map(Subject::Template),
        context: Context {
            cluster,
            ..Context::default()
        },
    };
    evaluate(&input, rules)
}

/// (findings as `action path: body`) of the feasibility rule alone.
fn findings(v: &Verdict) -> Vec<String> {
    v.findings
        .iter()
        .filter(|f| f.rule == ID)
        .map(|f| format!("{:?} {}", f.action, f.error))
        .collect()
}

#[test]
fn cases() {
    let c = cluster();
    let ready = ClusterState::Ready(&c);
    let warn = rules("warn");
    let deny = rules("deny");
    let deploy = |spec: Value| {
        parse_value(
            Kind::Deployment,
            &json!({"metadata": {"name": "d"}, "spec": {"template": {"spec": spec}}}),
        )
        .unwrap()
    };
    let job = |suspend: bool, spec: Value| {
        parse_value(
            Kind::Job,
            &json!({"metadata": {"name": "j"}, "spec": {"suspend": suspend, "template": {"spec": spec}}}),
        )
        .unwrap()
    };
    type Case<'a> = (
        &'a str,
        &'a RuleSet,
        PodTemplate,
        Option<PodTemplate>,
        Vec<&'a str>,
    );
    let cases: Vec<Case> = vec![
        (
            "a gated pod tightened to a zone with no nodes is warned, with the label most nodes lack",
            &warn,
            gated(json!({"nodeSelector": {"zone": "z9"}})),
            Some(gated(json!({}))),
            vec!["Warn spec.nodeSelector: Forbidden: after this update no node can run the pod: 0/4 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, 2 node(s) didn't match Pod's node affinity/selector. Most nodes lack zone=z9 (4/4 nodes). This update took away the last node(s) that could run it: n1, n2, which lack zone=z9."],
        ),
        (
            "with action deny the same update is refused",
            &deny,
            gated(json!({"nodeSelector": {"zone": "z9"}})),
            Some(gated(json!({}))),
            vec!["Deny spec.nodeSelector: Forbidden: after this update no node can run the pod: 0/4 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, 2 node(s) didn't match Pod's node affinity/selector. Most nodes lack zone=z9 (4/4 nodes). This update took away the last node(s) that could run it: n1, n2, which lack zone=z9."],
        ),
        (
            "a tightening some node still satisfies passes silently",
            &deny,
            gated(json!({"nodeSelector": {"zone": "a"}})),
            Some(gated(json!({}))),
            vec![],
        ),
        (
            "required node affinity into the GPU pool without the toleration points at the tolerations, the way out",
            &deny,
            gated(json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu"]}, {"key": "zone", "operator": "In", "values": ["b"]}]}]}}}})),
            Some(gated(json!({}))),
            vec!["Deny spec.tolerations: Forbidden: after this update no node can run the pod: 0/4 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, 2 node(s) didn't match Pod's node affinity/selector. Most nodes lack pool=gpu (3/4 nodes). Untolerated: dedicated=gpu:NoSchedule on 1 node(s). This update took away the last node(s) that could run it: n1, n2, which lack pool=gpu."],
        ),
        (
            "adding the toleration makes the GPU node fit",
            &deny,
            gated(json!({"nodeSelector": {"pool": "gpu"}, "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]})),
            Some(gated(json!({"nodeSelector": {"pool": "gpu"}}))),
            vec![],
        ),
        (
            "a gated pod whose update changes nothing the nodes decide is not judged",
            &deny,
            gated(json!({"nodeSelector": {"zone": "z9"}, "priority": 5})),
            Some(gated(json!({"nodeSelector": {"zone": "z9"}}))),
            vec![],
        ),
        (
            "removing the last gate of a pod no node can run warns that it will stay Pending, even with deny",
            &deny,
            pod(json!({"nodeSelector": {"pool": "gpu"}})),
            Some(gated(json!({"nodeSelector": {"pool": "gpu"}}))),
            vec!["Warn spec.schedulingGates: the pod is ungated but no node can run it now, so it will stay Pending: 0/4 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, 2 node(s) didn't match Pod's node affinity/selector. Most nodes lack pool=gpu (3/4 nodes). Untolerated: dedicated=gpu:NoSchedule on 1 node(s)."],
        ),
        (
            "ungating and tightening in one update, as Kueue patches a pod, is judged as the tightening, with deny",
            &deny,
            pod(json!({"nodeSelector": {"zone": "z9"}})),
            Some(gated(json!({}))),
            vec!["Deny spec.nodeSelector: Forbidden: after this update no node can run the pod: 0/4 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, 2 node(s) didn't match Pod's node affinity/selector. Most nodes lack zone=z9 (4/4 nodes). This update took away the last node(s) that could run it: n1, n2, which lack zone=z9."],
        ),
        (
            "ungating and tightening in one update, with action warn, warns the same",
            &warn,
            pod(json!({"nodeSelector": {"zone": "z9"}})),
            Some(gated(json!({}))),
            vec!["Warn spec.nodeSelector: Forbidden: after this update no node can run the pod: 0/4 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, 2 node(s) didn't match Pod's node affinity/selector. Most nodes lack zone=z9 (4/4 nodes). This update took away the last node(s) that could run it: n1, n2, which lack zone=z9."],
        ),
        (
            "added tolerations only widen: on a pod no node could run before, warned, even with deny",
            &deny,
            gated(json!({"nodeSelector": {"zone": "z9"}, "tolerations": [{"key": "dedicated", "operator": "Exists"}]})),
            Some(gated(json!({"nodeSelector": {"zone": "z9"}}))),
            vec!["Warn spec.nodeSelector: Forbidden: after this update no node can run the pod: 0/4 nodes are available: 1 node(s) were unschedulable, 3 node(s) didn't match Pod's node affinity/selector. Most nodes lack zone=z9 (4/4 nodes)."],
        ),
        (
            "so is ungating with them (an autoscaler sees the pod only once it is ungated)",
            &deny,
            pod(json!({"nodeSelector": {"zone": "z9"}, "tolerations": [{"key": "dedicated", "operator": "Exists"}]})),
            Some(gated(json!({"nodeSelector": {"zone": "z9"}}))),
            vec!["Warn spec.nodeSelector: Forbidden: after this update no node can run the pod: 0/4 nodes are available: 1 node(s) were unschedulable, 3 node(s) didn't match Pod's node affinity/selector. Most nodes lack zone=z9 (4/4 nodes)."],
        ),
        (
            "narrowing a pod that had no node already is not this update's doing: warned",
            &deny,
            gated(json!({"nodeSelector": {"zone": "z9", "pool": "gpu"}})),
            Some(gated(json!({"nodeSelector": {"zone": "z9"}}))),
            vec!["Warn spec.nodeSelector: Forbidden: after this update no node can run the pod: 0/4 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, 2 node(s) didn't match Pod's node affinity/selector. Most nodes lack zone=z9 (4/4 nodes)."],
        ),
        (
            "ungating and tightening to a zone a node is in says nothing",
            &deny,
            pod(json!({"nodeSelector": {"zone": "a"}})),
            Some(gated(json!({}))),
            vec![],
        ),
        (
            "removing the last gate of a pod that fits says nothing",
            &deny,
            pod(json!({"nodeSelector": {"zone": "b"}})),
            Some(gated(json!({"nodeSelector": {"zone": "b"}}))),
            vec![],
        ),
        (
            "an update of a running pod is not judged",
            &deny,
            pod(json!({"nodeName": "n1", "nodeSelector": {"zone": "z9"}})),
            Some(pod(json!({"nodeName": "n1"}))),
            vec![],
        ),
        (
            "a new pod no node can run is warned",
            &deny,
            pod(json!({"nodeSelector": {"zone": "z9"}})),
            None,
            vec!["Warn spec: no node can run this pod now: 0/4 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, 2 node(s) didn't match Pod's node affinity/selector. Most nodes lack zone=z9 (4/4 nodes)."],
        ),
        (
            "a new pod naming a NoSchedule-tainted node is admitted by its kubelet, unwarned",
            &deny,
            pod(json!({"nodeName": "gpu1"})),
            None,
            vec![],
        ),
        (
            "a static pod's mirror is not judged: the kubelet runs it already",
            &deny,
            parse_value(
                Kind::Pod,
                &json!({"metadata": {"name": "etcd-n9", "namespace": "kube-system", "annotations": {"kubernetes.io/config.mirror": "abc"}},
                        "spec": {"nodeName": "n9"}}),
            )
            .unwrap(),
            None,
            vec![],
        ),
        (
            "without the annotation, a pod naming a node that does not exist is warned",
            &deny,
            pod(json!({"nodeName": "n9"})),
            None,
            vec!["Warn spec: no node can run this pod now: 0/4 nodes are available: 4 node(s) didn't match the requested node name."],
        ),
        (
            "so is one naming a cordoned node",
            &deny,
            pod(json!({"nodeName": "old1"})),
            None,
            vec![],
        ),
        (
            "a workload whose template tolerates nothing on tainted and cordoned nodes is warned",
            &warn,
            deploy(json!({"nodeSelector": {"pool": "gpu"}, "containers": []})),
            None,
            vec!["Warn spec.template.spec: no node can run a pod of this template now: 0/4 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, 2 node(s) didn't match Pod's node affinity/selector. Most nodes lack pool=gpu (3/4 nodes). Untolerated: dedicated=gpu:NoSchedule on 1 node(s)."],
        ),
        (
            "a workload some node can run passes",
            &warn,
            deploy(json!({"containers": []})),
            None,
            vec![],
        ),
        (
            "a new gated pod only taints keep from every node is not warned: what ungates it may add the tolerations",
            &deny,
            gated(json!({"nodeSelector": {"pool": "gpu"}})),
            None,
            vec![],
        ),
        (
            "a new gated pod whose selection no node has is warned, taints left out",
            &deny,
            gated(json!({"nodeSelector": {"zone": "z9"}})),
            None,
            vec!["Warn spec: no node can run this pod now, even tolerating every taint (what removes its scheduling gates may add tolerations): 0/4 nodes are available: 1 node(s) were unschedulable, 3 node(s) didn't match Pod's node affinity/selector. Most nodes lack zone=z9 (4/4 nodes)."],
        ),
        (
            "a cordon still counts for a held pod",
            &deny,
            gated(json!({"nodeSelector": {"zone": "c"}})),
            None,
            vec!["Warn spec: no node can run this pod now, even tolerating every taint (what removes its scheduling gates may add tolerations): 0/4 nodes are available: 1 node(s) were unschedulable, 3 node(s) didn't match Pod's node affinity/selector. Most nodes lack zone=c (3/4 nodes)."],
        ),
        (
            "a suspended Job into the tainted pool is not warned: what resumes it may add the tolerations",
            &warn,
            job(true, json!({"nodeSelector": {"pool": "gpu"}})),
            None,
            vec![],
        ),
        (
            "resumed without them, it is",
            &warn,
            job(false, json!({"nodeSelector": {"pool": "gpu"}})),
            Some(job(true, json!({"nodeSelector": {"pool": "gpu"}}))),
            vec!["Warn spec.template.spec: no node can run a pod of this template now: 0/4 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, 2 node(s) didn't match Pod's node affinity/selector. Most nodes lack pool=gpu (3/4 nodes). Untolerated: dedicated=gpu:NoSchedule on 1 node(s)."],
        ),
        (
            "a Job Kueue resumes keeps its queue label and is judged in full",
            &warn,
            parse_value(
                Kind::Job,
                &json!({"metadata": {"name": "j", "labels": {"kueue.x-k8s.io/queue-name": "q"}}, "spec": {"suspend": false, "template": {"spec": {"nodeSelector": {"pool": "gpu"}}}}}),
            )
            .unwrap(),
            Some(job(true, json!({"nodeSelector": {"pool": "gpu"}}))),
            vec!["Warn spec.template.spec: no node can run a pod of this template now: 0/4 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, 2 node(s) didn't match Pod's node affinity/selector. Most nodes lack pool=gpu (3/4 nodes). Untolerated: dedicated=gpu:NoSchedule on 1 node(s)."],
        ),
        (
            "a CronJob whose Jobs name a Kueue queue is held (Kueue suspends them)",
            &warn,
            parse_value(
                Kind::CronJob,
                &json!({"metadata": {"name": "c"}, "spec": {"jobTemplate": {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q"}}, "spec": {"template": {"spec": {"nodeSelector": {"pool": "gpu"}}}}}}}),
            )
            .unwrap(),
            None,
            vec![],
        ),
        (
            "the label on the CronJob itself, where Kueue does not look, is not",
            &warn,
            parse_value(
                Kind::CronJob,
                &json!({"metadata": {"name": "c", "labels": {"kueue.x-k8s.io/queue-name": "q"}}, "spec": {"jobTemplate": {"spec": {"template": {"spec": {"nodeSelector": {"pool": "gpu"}}}}}}}),
            )
            .unwrap(),
            None,
            vec!["Warn spec.jobTemplate.spec.template.spec: no node can run a pod of this template now: 0/4 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, 2 node(s) didn't match Pod's node affinity/selector. Most nodes lack pool=gpu (3/4 nodes). Untolerated: dedicated=gpu:NoSchedule on 1 node(s)."],
        ),
        (
            "a suspended CronJob's Jobs are held too",
            &warn,
            parse_value(
                Kind::CronJob,
                &json!({"metadata": {"name": "c"}, "spec": {"jobTemplate": {"spec": {"suspend": true, "template": {"spec": {"nodeSelector": {"zone": "z9"}}}}}}}),
            )
            .unwrap(),
            None,
            vec!["Warn spec.jobTemplate.spec.template.spec: no node can run a pod of this template now, even tolerating every taint (what resumes it may add tolerations): 0/4 nodes are available: 1 node(s) were unschedulable, 3 node(s) didn't match Pod's node affinity/selector. Most nodes lack zone=z9 (4/4 nodes)."],
        ),
        (
            "a Deployment in a Kueue queue is held (Kueue gates its pods)",
            &warn,
            parse_value(
                Kind::Deployment,
                &json!({"metadata": {"name": "d", "labels": {"kueue.x-k8s.io/queue-name": "q"}}, "spec": {"template": {"spec": {"nodeSelector": {"pool": "gpu"}}}}}),
            )
            .unwrap(),
            None,
            vec![],
        ),
        (
            "and warned for a selection no node has",
            &warn,
            parse_value(
                Kind::Deployment,
                &json!({"metadata": {"name": "d"}, "spec": {"template": {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q"}}, "spec": {"nodeSelector": {"zone": "z9"}}}}}),
            )
            .unwrap(),
            None,
            vec!["Warn spec.template.spec: no node can run a pod of this template now, even tolerating every taint (Kueue, kueue.x-k8s.io/queue-name, may add its flavor's tolerations as it admits it): 0/4 nodes are available: 1 node(s) were unschedulable, 3 node(s) didn't match Pod's node affinity/selector. Most nodes lack zone=z9 (4/4 nodes)."],
        ),
    ];
    let mut wrong = Vec::new();
    for (name, rules, new, old, want) in cases {
        let got = findings(&judge(rules, ready, &new, old.as_ref()));
        if got != want {
            wrong.push(format!("{name}:\n  got  {got:?}\n  want {want:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The selection's most-missed requirement is called what most nodes lack only when more than
/// half do, else it is counted; the finding points at the tolerations whenever some node is
/// refused by its taints alone (tolerating them is the way out), and names the nodes the update
/// took away.
#[test]
fn the_most_missed_requirement_is_counted_not_called_most() {
    let tainted = json!({"taints": [{"key": "team", "value": "infra", "effect": "NoSchedule"}]});
    let cases = [
        (3, "tolerations", "1 node(s) didn't match Pod's node affinity/selector, 3 node(s) had untolerated taint(s). 1/4 node(s) lack pool=general, the requirement most missed. Untolerated: team=infra:NoSchedule on 3 node(s). This update took away the last node(s) that could run it: x3, which lacks pool=general."),
        (2, "tolerations", "2 node(s) didn't match Pod's node affinity/selector, 2 node(s) had untolerated taint(s). 2/4 node(s) lack pool=general, the requirement most missed. Untolerated: team=infra:NoSchedule on 2 node(s). This update took away the last node(s) that could run it: x2, x3, which lack pool=general."),
        (1, "tolerations", "1 node(s) had untolerated taint(s), 3 node(s) didn't match Pod's node affinity/selector. Most nodes lack pool=general (3/4 nodes). Untolerated: team=infra:NoSchedule on 1 node(s). This update took away the last node(s) that could run it: x1, x2, x3, which lack pool=general."),
    ];
    for (general, field, want) in cases {
        let nodes = (0..4)
            .map(|i| {
                if i < general {
                    node(
                        &format!("g{i}"),
                        json!({"pool": "general"}),
                        tainted.clone(),
                    )
                } else {
                    node(&format!("x{i}"), json!({"pool": "batch"}), json!({}))
                }
            })
            .collect();
        let c = Cluster::new(nodes, HashMap::new()).unwrap();
        let v = judge(
            &rules("deny"),
            ClusterState::Ready(&c),
            &gated(json!({"nodeSelector": {"pool": "general"}})),
            Some(&gated(json!({}))),
        );
        assert_eq!(
            findings(&v),
            [format!("Deny spec.{field}: Forbidden: after this update no node can run the pod: 0/4 nodes are available: {want}")],
            "{general} general node(s)"
        );
    }
}

#[test]
fn a_cache_that_cannot_be_trusted_never_denies_and_is_counted() {
    let new = gated(json!({"nodeSelector": {"zone": "z9"}}));
    let old = gated(json!({}));
    let v = judge(
        &rules("deny"),
        ClusterState::Unavailable("not_synced"),
        &new,
        Some(&old),
    );
    assert!(v.allowed());
    assert!(findings(&v).is_empty());
    assert_eq!(v.unchecked, vec![(ID, "not_synced")]);
    // Without a cluster at all (check, test, a server that is not cluster-aware) the rule does
    // not apply.
    let v = judge(&rules("deny"), ClusterState::Absent, &new, Some(&old));
    assert!(!v.rules_run.contains(&ID) && v.unchecked.is_empty());
}

#[test]
fn no_nodes_at_all_is_the_schedulers_own_message() {
    let empty = Cluster::default();
    let v = judge(
        &rules("warn"),
        ClusterState::Ready(&empty),
        &pod(json!({})),
        None,
    );
    assert_eq!(
        findings(&v),
        ["Warn spec: no node can run this pod now: no nodes available to schedule pods"]
    );
}

/// A user's cluster: two general nodes (zones a and b), a GPU and a tenants node, each tainted
/// for its pods. The finding points at what would let the pod run again and lists only taints
/// that tolerating would get past; a tightening names the node it took away and what it lacks.
#[test]
fn the_finding_points_at_the_way_out() {
    let taint =
        |v: &str| json!({"taints": [{"key": "dedicated", "value": v, "effect": "NoSchedule"}]});
    let nodes = vec![
        node("n1", json!({"zone": "a", "pool": "general"}), json!({})),
        node(
            "n2",
            json!({"zone": "b", "pool": "general", "special": "yes"}),
            json!({"unschedulable": true}),
        ),
        node("n3", json!({"zone": "a", "pool": "gpu"}), taint("gpu")),
        node(
            "n4",
            json!({"zone": "b", "pool": "tenants"}),
            taint("tenants"),
        ),
    ];
    let c = Cluster::new(nodes, HashMap::new()).unwrap();
    let deny = rules("deny");
    let cases = [
        (
            "the only node with the label is cordoned; the taints are of nodes without it",
            gated(json!({"nodeSelector": {"special": "yes"}})),
            gated(json!({})),
            "Deny spec.nodeSelector: Forbidden: after this update no node can run the pod: 0/4 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) were unschedulable, 2 node(s) had untolerated taint(s). Most nodes lack special=yes (3/4 nodes). This update took away the last node(s) that could run it: n1, which lacks special=yes.",
        ),
        (
            "a toleration added to a pod whose selector no node matches points at the selector",
            gated(json!({"nodeSelector": {"pool": "nope"}, "tolerations": [{"key": "dedicated", "operator": "Exists"}]})),
            gated(json!({"nodeSelector": {"pool": "nope"}})),
            "Warn spec.nodeSelector: Forbidden: after this update no node can run the pod: 0/4 nodes are available: 1 node(s) were unschedulable, 3 node(s) didn't match Pod's node affinity/selector. Most nodes lack pool=nope (4/4 nodes).",
        ),
        (
            "a toleration added to a pod whose nodeSelector nodes meet but whose affinity none does points at the affinity",
            gated(json!({"nodeSelector": {"pool": "general"}, "tolerations": [{"key": "dedicated", "operator": "Exists"}], "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z9"]}]}]}}}})),
            gated(json!({"nodeSelector": {"pool": "general"}, "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z9"]}]}]}}}})),
            "Warn spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: Forbidden: after this update no node can run the pod: 0/4 nodes are available: 1 node(s) were unschedulable, 3 node(s) didn't match Pod's node affinity/selector. Most nodes lack zone=z9 (4/4 nodes).",
        ),
        (
            "a requirement appended to the affinity that takes the last node: named, not a tie of old ones",
            gated(json!({"nodeSelector": {"pool": "general", "zone": "a"}, "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]}}}})),
            gated(json!({"nodeSelector": {"pool": "general", "zone": "a"}})),
            "Deny spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: Forbidden: after this update no node can run the pod: 0/4 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) were unschedulable, 2 node(s) had untolerated taint(s). 2/4 node(s) lack pool=general, the requirement most missed. This update took away the last node(s) that could run it: n1, which lacks zone=b.",
        ),
        (
            "only the taint of the node the selection reaches is listed",
            gated(json!({"nodeSelector": {"pool": "gpu"}})),
            gated(json!({})),
            "Deny spec.tolerations: Forbidden: after this update no node can run the pod: 0/4 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) were unschedulable, 2 node(s) had untolerated taint(s). Most nodes lack pool=gpu (3/4 nodes). Untolerated: dedicated=gpu:NoSchedule on 1 node(s). This update took away the last node(s) that could run it: n1, which lacks pool=gpu.",
        ),
    ];
    let mut wrong = Vec::new();
    for (name, new, old, want) in cases {
        let got = findings(&judge(&deny, ClusterState::Ready(&c), &new, Some(&old)));
        if got != [want] {
            wrong.push(format!("{name}:\n  got  {got:?}\n  want {want:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A workload's pods get what their RuntimeClass adds at admission: with the class known, its
/// toleration lets them onto the GPU node; unknown (the server does not watch RuntimeClasses),
/// the template is not judged, and that is counted, since either verdict could be wrong. A Pod
/// reaching the webhook has been through the RuntimeClass admission plugin already.
#[test]
fn a_workloads_runtime_class_is_applied_or_the_check_skipped() {
    let deploy = parse_value(
        Kind::Deployment,
        &json!({"metadata": {"name": "d"}, "spec": {"template": {"spec": {"runtimeClassName": "gpu", "nodeSelector": {"pool": "gpu"}}}}}),
    )
    .unwrap();
    let mut c = cluster();
    let warn = rules("warn");
    let v = judge(&warn, ClusterState::Ready(&c), &deploy, None);
    assert!(findings(&v).is_empty());
    assert_eq!(v.unchecked, vec![(ID, "runtime_class_unknown")]);
    c.runtime_classes.insert(
        "gpu".into(),
        serde_json::from_value(
            json!({"scheduling": {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}}),
        )
        .unwrap(),
    );
    let v = judge(&warn, ClusterState::Ready(&c), &deploy, None);
    assert!(v.unchecked.is_empty() && v.rules_run.contains(&ID));
    assert!(findings(&v).is_empty(), "{:?}", findings(&v));
    // Without the class's toleration the GPU node is shut: the same template is warned.
    c.runtime_classes.insert("gpu".into(), Default::default());
    let v = judge(&warn, ClusterState::Ready(&c), &deploy, None);
    assert_eq!(findings(&v).len(), 1, "{:?}", findings(&v));
    // A pod names its class too, but has what it adds already: judged as it is.
    let c = cluster();
    let pod = pod(
        json!({"runtimeClassName": "gpu", "nodeSelector": {"pool": "gpu"}, "tolerations": [{"key": "dedicated", "operator": "Exists"}]}),
    );
    let v = judge(&warn, ClusterState::Ready(&c), &pod, None);
    assert!(
        v.unchecked.is_empty() && findings(&v).is_empty(),
        "{:?}",
        findings(&v)
    );
}
