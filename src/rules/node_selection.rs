//! `node-selection`: which nodes the pods of a namespace may reach, and which tolerations they
//! may carry, judged at CREATE and on every UPDATE that changes them (KEP-3838 lets a gated
//! pod's selection be tightened after creation, and any pod gain tolerations), on pods and on
//! every workload's pod template. Decided exactly, by satisfiability over the requirements
//! (`core::satisfy`), not by looking at today's nodes.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelectorTerm, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{
    Action, ClusterState, Finding, Input, LabelsNotFound, Note, ObjectKind, Operation, Phase,
    Request, Rule, RuleId, RuleMeta, Verdict, Voice,
};
use crate::core::nodeselector::{Operator, Requirement, Source, Term};
use crate::core::satisfy::{intersect, outside};
use crate::k8s::fieldpath::{FieldError, FieldPath};
use crate::k8s::model::PodSpec;
use crate::k8s::semantic::{map_eq, SemEq};
use crate::k8s::validation::{validate_label_selector, validate_term, validate_toleration};
use crate::k8s::workload::PodTemplate;

pub const ID: RuleId = RuleId::new("node-selection");

/// The rule file's `nodeSelection` section.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct NodeSelection {
    pub enabled: bool,
    pub action: Action,
    pub policies: Vec<Policy>,
}

impl Default for NodeSelection {
    fn default() -> Self {
        NodeSelection {
            enabled: true,
            action: Action::Deny,
            policies: Vec::new(),
        }
    }
}

/// Where the pods of some namespaces may run.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Policy {
    pub name: String,
    /// Namespace names and globs (`team-*`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    /// Namespace labels; needs the live cluster's namespaces.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "strict::selector"
    )]
    pub namespace_selector: Option<LabelSelector>,
    /// Node selector terms (ORed) no pod may reach.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "strict::terms"
    )]
    pub forbidden_nodes: Vec<NodeSelectorTerm>,
    /// Node selector terms (ORed) every pod must stay inside.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "strict::terms"
    )]
    pub required_nodes: Vec<NodeSelectorTerm>,
    /// The tolerations pods may carry; absent: tolerations are not restricted. A
    /// `tolerationSeconds` is the longest a pod's toleration of that kind may last.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "strict::tolerations"
    )]
    pub allowed_tolerations: Option<Vec<Toleration>>,
}

/// A policy's Kubernetes-typed fields, read with unknown fields refused as the rest of the rule
/// file is: k8s-openapi's own types pass over them, and a misspelt `matchExpression` would
/// leave an empty term, which matches no node, and so a policy that forbids nothing.
mod strict {
    use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm, Toleration};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
    use serde::{Deserialize, Deserializer};
    use std::collections::BTreeMap;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Requirement {
        key: String,
        operator: String,
        #[serde(default)]
        values: Option<Vec<String>>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Term {
        #[serde(default)]
        match_expressions: Option<Vec<Requirement>>,
        #[serde(default)]
        match_fields: Option<Vec<Requirement>>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Tol {
        #[serde(default)]
        key: Option<String>,
        #[serde(default)]
        operator: Option<String>,
        #[serde(default)]
        value: Option<String>,
        #[serde(default)]
        effect: Option<String>,
        #[serde(default)]
        toleration_seconds: Option<i64>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Selector {
        #[serde(default)]
        match_labels: Option<BTreeMap<String, String>>,
        #[serde(default)]
        match_expressions: Option<Vec<Requirement>>,
    }

    fn node(r: Requirement) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: r.key,
            operator: r.operator,
            values: r.values,
        }
    }

    pub fn terms<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<NodeSelectorTerm>, D::Error> {
        let terms = Option::<Vec<Term>>::deserialize(d)?.unwrap_or_default();
        Ok(terms
            .into_iter()
            .map(|t| NodeSelectorTerm {
                match_expressions: t
                    .match_expressions
                    .map(|e| e.into_iter().map(node).collect()),
                match_fields: t.match_fields.map(|f| f.into_iter().map(node).collect()),
            })
            .collect())
    }

    pub fn tolerations<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Vec<Toleration>>, D::Error> {
        Ok(Option::<Vec<Tol>>::deserialize(d)?.map(|ts| {
            ts.into_iter()
                .map(|t| Toleration {
                    key: t.key,
                    operator: t.operator,
                    value: t.value,
                    effect: t.effect,
                    toleration_seconds: t.toleration_seconds,
                })
                .collect()
        }))
    }

    pub fn selector<'de, D: Deserializer<'de>>(d: D) -> Result<Option<LabelSelector>, D::Error> {
        Ok(Option::<Selector>::deserialize(d)?.map(|s| LabelSelector {
            match_labels: s.match_labels,
            match_expressions: s.match_expressions.map(|e| {
                e.into_iter()
                    .map(|r| LabelSelectorRequirement {
                        key: r.key,
                        operator: r.operator,
                        values: r.values,
                    })
                    .collect()
            }),
        }))
    }
}

impl Policy {
    /// Whether the policy applies to the pods of `namespace`, whose labels are `labels` when
    /// known: both its names and its selector must match (as Gatekeeper's `match` and
    /// Kyverno's `resources` combine them; a pod affinity term unites its two instead). `None`:
    /// it selects by label and the labels are not known. No policy applies to an object that
    /// names no namespace (`check` says so once).
    pub fn applies_to(
        &self,
        namespace: &str,
        labels: Option<&BTreeMap<String, String>>,
    ) -> Option<bool> {
        if namespace.is_empty() {
            return Some(false);
        }
        if !self.namespaces.is_empty()
            && !self
                .namespaces
                .iter()
                .any(|g| wildmatch::WildMatch::new(g).matches(namespace))
        {
            return Some(false);
        }
        match (&self.namespace_selector, labels) {
            (None, _) => Some(true),
            (Some(sel), Some(l)) => Some(crate::core::labels::selector_matches(sel, l)),
            (Some(sel), None) => by_name_alone(sel, namespace),
        }
    }

    /// Whether the policy needs namespace labels beyond the name to know where it applies:
    /// what a server without `--cluster-aware` can never judge.
    pub fn needs_labels(&self) -> bool {
        self.namespace_selector
            .as_ref()
            .is_some_and(reads_other_labels)
    }
}

/// What a run says of policies that could not tell whether they apply to a namespace:
/// `policy "a" selects` / `policies "a", "b" select`.
pub fn selecting_by_label(policies: &[&Policy]) -> String {
    let names: Vec<String> = policies.iter().map(|p| format!("{:?}", p.name)).collect();
    match names.as_slice() {
        [one] => format!("policy {one} selects namespaces by label"),
        _ => format!("policies {} select namespaces by label", names.join(", ")),
    }
}

/// The policies of `s` that need the labels of `namespace` to know whether they apply to it.
pub fn needing_labels<'a>(s: &'a NodeSelection, namespace: &str) -> Vec<&'a Policy> {
    s.policies
        .iter()
        .filter(|p| p.applies_to(namespace, None).is_none())
        .collect()
}

/// The label kube-apiserver gives every namespace, its name.
const NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// What a selector says of a namespace whose only known label is its name: `{}` selects it, a
/// requirement on the name label it fails rules it out, anything else needs its labels.
fn by_name_alone(sel: &LabelSelector, namespace: &str) -> Option<bool> {
    let on_name = LabelSelector {
        match_labels: sel.match_labels.as_ref().map(|m| {
            m.iter()
                .filter(|(k, _)| *k == NAME_LABEL)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        }),
        match_expressions: sel
            .match_expressions
            .as_ref()
            .map(|e| e.iter().filter(|r| r.key == NAME_LABEL).cloned().collect()),
    };
    let known = BTreeMap::from([(NAME_LABEL.to_string(), namespace.to_string())]);
    if !crate::core::labels::selector_matches(&on_name, &known) {
        return Some(false);
    }
    (!reads_other_labels(sel)).then_some(true)
}

/// Whether a selector reads labels other than the namespace's name.
fn reads_other_labels(sel: &LabelSelector) -> bool {
    sel.match_labels
        .iter()
        .flatten()
        .any(|(k, _)| k != NAME_LABEL)
        || sel
            .match_expressions
            .iter()
            .flatten()
            .any(|r| r.key != NAME_LABEL)
}

/// The labels of `namespace` as the caller or the cluster cache knows them, or why they are not
/// known (for metrics, and the note that says which policies did not judge the object).
fn namespace_labels<'a>(input: &Input<'a>) -> Result<&'a BTreeMap<String, String>, &'static str> {
    if let Some(l) = input.context.namespace_labels {
        return Ok(l);
    }
    match input.context.cluster {
        ClusterState::Ready(c) => c
            .namespaces
            .get(input.namespace)
            .ok_or("namespace_not_cached"),
        ClusterState::Unavailable(why) => Err(why),
        ClusterState::Absent => Err("namespace_labels_unknown"),
    }
}

/// Why some policies could not tell whether they apply, in words.
fn unknown_labels_note(
    namespace: &str,
    why: &str,
    not_found: Option<LabelsNotFound>,
    policies: &[&Policy],
) -> String {
    let mut reason = match why {
        _ if not_found == Some(LabelsNotFound::NotGiven) => format!(
            "namespace {namespace:?} is not among the namespaces given (`review --namespaces`, a suite's namespaces.yaml)"
        ),
        "namespace_not_cached" => format!(
            "namespace {namespace:?} is not in the server's cluster cache yet (created a moment ago, or the watch lags)"
        ),
        "namespace_labels_unknown" => format!(
            "the labels of namespace {namespace:?} are not known here (a server reads them from its cluster cache with `serve --cluster-aware`, `test` from its suite's namespaces.yaml, `review` from --namespaces)"
        ),
        other => format!(
            "the server's cluster cache cannot be trusted now ({other}), and with it the labels of namespace {namespace:?}"
        ),
    };
    reason.push_str(match not_found {
        Some(LabelsNotFound::NoSuchNamespace) => "; the API server has no such namespace",
        Some(LabelsNotFound::LookupFailed) => {
            "; reading it from the API server failed (the server's log says why)"
        }
        Some(LabelsNotFound::LookupPaused) => {
            "; not read from the API server, where a lookup failed a moment ago"
        }
        Some(LabelsNotFound::NotGiven) | None => "",
    });
    format!(
        "{} and did not judge this request; {reason}",
        selecting_by_label(policies)
    )
}

pub struct NodeSelectionRule;

impl Rule for NodeSelectionRule {
    type Settings = NodeSelection;
    const META: &'static [RuleMeta] = &[RuleMeta {
        id: ID,
        summary: "Pods of a namespace stay on the nodes its policy allows and carry only allowed tolerations, at create and on every update",
        help: "narrow the pod's nodeSelector or required node affinity into the policy's requiredNodes and away from its forbiddenNodes; drop tolerations the policy does not allow",
        default_action: "deny",
    }];

    /// CREATE and UPDATE of Pods and workloads, on `/validate`, when some policy is configured.
    fn applies(s: &NodeSelection, r: Request) -> bool {
        s.enabled
            && !s.policies.is_empty()
            && r.phase == Phase::Validate
            && r.operation.writes()
            && matches!(r.kind, ObjectKind::Template(_))
    }

    /// A policy's `allowedTolerations`, and the tolerations an update adds.
    fn reads_tolerations(_: &NodeSelection, _: Request) -> bool {
        true
    }

    /// On UPDATE, only those the old object lacked.
    fn reads_unchanged_tolerations(_: &NodeSelection, r: Request) -> bool {
        r.operation != Operation::Update
    }

    /// A pod's selection and tolerations are its spec's; its owner references (which give a
    /// DaemonSet's pods their tolerations) count at CREATE only.
    fn reads_metadata(_: &NodeSelection, r: Request, _: Option<&PodSpec>, _: &PodSpec) -> bool {
        r.operation == Operation::Create
    }

    fn evaluate(s: &NodeSelection, input: &Input, verdict: &mut Verdict) {
        let Some((object, old)) = input.templates() else {
            return;
        };
        let labels = namespace_labels(input);
        let (mut policies, mut unknown) = (Vec::new(), Vec::new());
        for p in &s.policies {
            match p.applies_to(input.namespace, labels.ok()) {
                Some(true) => policies.push(p),
                Some(false) => {}
                None => unknown.push(p),
            }
        }
        // On UPDATE, the selection is judged when it changed and the tolerations the old object
        // lacked; what was admitted before is not judged again.
        let old_tolerations = old.map_or(&[][..], |o| o.spec.tolerations());
        let selection = match old {
            Some(o) if same_selection(o, object) => None,
            _ => Some(Selection::of(object)),
        };
        let new_tolerations: Vec<(usize, &Toleration)> = object
            .spec
            .tolerations()
            .iter()
            .enumerate()
            .filter(|(_, t)| !old_tolerations.iter().any(|o| o.sem_eq(*t)))
            .collect();
        if (policies.is_empty() && unknown.is_empty())
            || (selection.is_none() && new_tolerations.is_empty())
        {
            return;
        }
        verdict.rules_run.push(ID);
        if !unknown.is_empty() {
            // Never a denial on a guess: said, and counted in metrics.
            let why = labels.err().unwrap_or("namespace_labels_unknown");
            verdict.unchecked.push((ID, why));
            verdict.notes.push(Note {
                rule: ID,
                voice: Voice::Rule,
                path: FieldPath::fields(&["metadata", "namespace"]),
                message: unknown_labels_note(
                    input.namespace,
                    why,
                    input.context.labels_not_found,
                    &unknown,
                ),
            });
        }
        for p in policies {
            for f in judge(
                p,
                selection.as_ref(),
                &new_tolerations,
                object,
                input.namespace,
                input.operation == Operation::Create,
            ) {
                verdict.findings.push(Finding {
                    rule: ID,
                    action: s.action,
                    error: f.0,
                    hint: f.1,
                });
            }
        }
    }

    fn check_settings(s: &NodeSelection, path: &FieldPath) -> Vec<FieldError> {
        let mut out = Vec::new();
        for (i, p) in s.policies.iter().enumerate() {
            let pp = path.child("policies").index(i);
            if p.name.is_empty() {
                out.push(FieldError::required(pp.child("name"), ""));
            } else if s.policies[..i].iter().any(|q| q.name == p.name) {
                out.push(FieldError::duplicate(pp.child("name"), json!(p.name)));
            }
            match &p.namespace_selector {
                Some(sel) => {
                    out.extend(validate_label_selector(sel, &pp.child("namespaceSelector")))
                }
                None if p.namespaces.is_empty() => out.push(FieldError::required(
                    pp.child("namespaces"),
                    "the namespaces this policy applies to: names or globs such as \"team-*\", or namespace labels in namespaceSelector",
                )),
                None => {}
            }
            // A namespace name is a DNS label: a pattern with other characters never matches,
            // and the policy would quietly apply nowhere.
            for (j, n) in p.namespaces.iter().enumerate() {
                let fits = |c: char| matches!(c, 'a'..='z' | '0'..='9' | '-' | '*' | '?');
                if n.is_empty() || !n.chars().all(fits) {
                    out.push(FieldError::invalid(
                        pp.child("namespaces").index(j),
                        json!(n),
                        "matches no namespace: a name or glob has lowercase letters, digits, '-', and the wildcards '*' (any run) and '?' (one character)",
                    ));
                }
            }
            if p.forbidden_nodes.is_empty()
                && p.required_nodes.is_empty()
                && p.allowed_tolerations.is_none()
            {
                out.push(FieldError::required(
                    pp.clone(),
                    "at least one of forbiddenNodes, requiredNodes, allowedTolerations",
                ));
            }
            for (field, terms) in [
                ("forbiddenNodes", &p.forbidden_nodes),
                ("requiredNodes", &p.required_nodes),
            ] {
                for (j, t) in terms.iter().enumerate() {
                    let tp = pp.child(field).index(j);
                    if t.match_expressions.as_deref().unwrap_or(&[]).is_empty()
                        && t.match_fields.as_deref().unwrap_or(&[]).is_empty()
                    {
                        out.push(FieldError::invalid(
                            tp.clone(),
                            json!({}),
                            "a term without matchExpressions or matchFields matches no node (as in Kubernetes), so it would forbid nothing in forbiddenNodes and allow nothing in requiredNodes; give it requirements",
                        ));
                    }
                    out.extend(validate_term(t, &tp, true));
                    // Stricter than the apiserver is with pods: a Gt/Lt value that is no integer
                    // matches no node, so in a policy it would quietly disable the term.
                    for (k, r) in t.match_expressions.iter().flatten().enumerate() {
                        let values = r.values.as_deref().unwrap_or(&[]);
                        if let ("Gt" | "Lt", [v]) = (r.operator.as_str(), values) {
                            if v.parse::<i64>().is_err() {
                                out.push(FieldError::invalid(
                                    tp.child("matchExpressions").index(k).child("values").index(0),
                                    serde_json::json!(v),
                                    "must be an integer: Gt and Lt compare a node label's value as one, and a value that is not matches no node",
                                ));
                            }
                        }
                    }
                }
            }
            for (j, t) in p.allowed_tolerations.iter().flatten().enumerate() {
                out.extend(validate_toleration(
                    t,
                    &pp.child("allowedTolerations").index(j),
                ));
            }
        }
        out
    }
}

fn same_selection(old: &PodTemplate, new: &PodTemplate) -> bool {
    let (o, n) = (&old.spec, &new.spec);
    map_eq(&o.node_selector, &n.node_selector)
        && o.node_name == n.node_name
        && o.required_node_selector_terms()
            .sem_eq(&n.required_node_selector_terms())
}

/// The nodes a pod may reach: nodeSelector and spec.nodeName ANDed into each required term,
/// each with the path a finding points at.
struct Selection {
    terms: Vec<(FieldPath, Term)>,
    /// The paths are required node affinity terms (else the nodeSelector or nodeName).
    in_terms: bool,
}

impl Selection {
    fn of(t: &PodTemplate) -> Selection {
        let spec = t.spec_path();
        let mut base = Term::from_node_selector(t.spec.node_selector());
        if let Some(name) = t.spec.node_name.as_deref().filter(|n| !n.is_empty()) {
            base.requirements.push(Requirement {
                source: Source::Field,
                key: "metadata.name".to_string(),
                op: Operator::In,
                values: vec![name.to_string()],
            });
        }
        let required = t.spec.required_node_selector_terms();
        let terms = match required {
            // An empty or invalid term selects no node, so it reaches nothing.
            Some(terms) => terms
                .iter()
                .enumerate()
                .filter_map(|(i, term)| {
                    let path = spec
                        .child("affinity")
                        .child("nodeAffinity")
                        .child("requiredDuringSchedulingIgnoredDuringExecution")
                        .child("nodeSelectorTerms")
                        .index(i);
                    Term::from_api(term).map(|term| (path, base.and(&term)))
                })
                .collect(),
            None => {
                let path = if t.spec.node_selector().is_empty() && t.spec.node_name.is_some() {
                    spec.child("nodeName")
                } else {
                    spec.child("nodeSelector")
                };
                vec![(path, base)]
            }
        };
        Selection {
            terms,
            in_terms: required.is_some(),
        }
    }
}

/// Where a pod already runs, against the policies of its namespace (`audit`): Forbidden at
/// `spec.nodeName` for each policy whose `forbiddenNodes` match node `node` (with `labels`), or
/// whose `requiredNodes` do not. A pod admitted before the policy, or while the webhook failed
/// open, may sit on such a node: a stronger finding than a selection that merely could.
/// `namespace_labels`: when unknown, policies that select namespaces by label are left out
/// (the object's own verdict says so).
pub fn placed_outside(
    s: &NodeSelection,
    namespace: &str,
    namespace_labels: Option<&BTreeMap<String, String>>,
    node: &str,
    labels: &BTreeMap<String, String>,
) -> Vec<Finding> {
    if !s.enabled {
        return Vec::new();
    }
    let matches = |terms: &[NodeSelectorTerm]| {
        terms
            .iter()
            .filter_map(Term::from_api)
            .any(|t| t.matches_node(labels, node))
    };
    let path = FieldPath::fields(&["spec", "nodeName"]);
    let who = format!("pods in namespace {namespace:?}");
    let mut out = Vec::new();
    let applies = |p: &&Policy| p.applies_to(namespace, namespace_labels) == Some(true);
    for p in s.policies.iter().filter(applies) {
        if matches(&p.forbidden_nodes) {
            out.push(FieldError::forbidden(
                path.clone(),
                format!(
                    "the pod runs on node {node:?}, which matches {} that {who} may not reach (policy {})",
                    quote_terms(&p.forbidden_nodes),
                    p.name
                ),
            ));
        }
        if !p.required_nodes.is_empty() && !matches(&p.required_nodes) {
            out.push(FieldError::forbidden(
                path.clone(),
                format!(
                    "the pod runs on node {node:?}, outside {} where {who} must stay (policy {})",
                    quote_terms(&p.required_nodes),
                    p.name
                ),
            ));
        }
    }
    out.into_iter()
        .map(|error| Finding {
            rule: ID,
            action: s.action,
            error,
            hint: Some(
                "the pod stays on that node until it is deleted: delete it (its controller, if any, recreates it where the policy allows) once its workload's selection is within the policy".to_string(),
            ),
        })
        .collect()
}

fn quote_terms(terms: &[NodeSelectorTerm]) -> String {
    let shown: Vec<String> = terms
        .iter()
        .map(|t| match Term::from_api(t) {
            Some(t) => format!("\"{t}\""),
            None => "(a term that matches no node)".to_string(),
        })
        .collect();
    shown.join(" or ")
}

/// The findings of one policy: (error, hint).
fn judge(
    p: &Policy,
    selection: Option<&Selection>,
    tolerations: &[(usize, &Toleration)],
    object: &PodTemplate,
    namespace: &str,
    create: bool,
) -> Vec<(FieldError, Option<String>)> {
    let mut out = Vec::new();
    let who = format!("pods in namespace {namespace:?}");
    let in_term = selection.is_some_and(|s| s.in_terms);
    for (path, term) in selection.iter().flat_map(|s| &s.terms) {
        let hit = p
            .forbidden_nodes
            .iter()
            .filter_map(|f| Term::from_api(f).map(|t| (f, t)))
            .find_map(|(f, t)| intersect(term, &t).map(|w| (f, w)));
        let place = if in_term {
            "append it to this term"
        } else {
            "add it as required node affinity"
        };
        if let Some((f, w)) = hit {
            // The legal form, when the forbidden term is one requirement with a one-requirement
            // negation; but a selection with no node outside the forbidden ones (`pool: gpu`
            // against `pool In [gpu]`) must select others, as the negation would leave it none.
            let forbidden = Term::from_api(f);
            let hint = if forbidden
                .as_ref()
                .is_some_and(|t| outside(term, &[Some(t.clone())]).is_none())
            {
                Some(format!(
                    "every node this selection admits matches {}: select nodes the policy allows here (requiring the opposite beside it would leave the pod no node)",
                    quote_terms(std::slice::from_ref(f))
                ))
            } else {
                forbidden.and_then(|t| match t.requirements.as_slice() {
                    [r] => negation(r)
                        .map(|n| format!("to stay off those nodes, require \"{n}\": {place}")),
                    _ => None,
                })
            };
            out.push((
                FieldError::forbidden(
                    path.clone(),
                    format!(
                        "{who} may not reach nodes matching {} (policy {}); this selection admits a node labelled {w}",
                        quote_terms(std::slice::from_ref(f)),
                        p.name
                    ),
                ),
                hint,
            ));
        }
        if p.required_nodes.is_empty() {
            continue;
        }
        let required: Vec<Option<Term>> = p.required_nodes.iter().map(Term::from_api).collect();
        if let Some(w) = outside(term, &required) {
            let legal =
                required.iter().flatten().next().map(|r| {
                    format!("to stay inside the policy's nodes, require \"{r}\": {place}")
                });
            out.push((
                FieldError::forbidden(
                    path.clone(),
                    format!(
                        "{who} must stay on nodes matching {} (policy {}); this selection admits a node labelled {w}, outside them",
                        quote_terms(&p.required_nodes),
                        p.name
                    ),
                ),
                legal,
            ));
        }
    }
    if let Some(allowed) = &p.allowed_tolerations {
        let tp = object.spec_path().child("tolerations");
        for &(j, t) in tolerations {
            // What admission and a DaemonSet's controller add is not the pod author's choice:
            // a policy refusing it would admit the DaemonSet and refuse every one of its pods.
            // The controller gives them at CREATE only; an update adding them is the author's.
            if is_default_toleration(t)
                || (create && object.given_by_daemonset_controller(t))
                || allowed.iter().any(|a| covers(a, t))
            {
                continue;
            }
            let shown: Vec<String> = allowed.iter().map(describe_toleration).collect();
            out.push((
                FieldError::forbidden(
                    tp.index(j),
                    format!(
                        "{who} may not carry the toleration {} (policy {}); allowed: {}",
                        describe_toleration(t),
                        p.name,
                        if shown.is_empty() {
                            "none".to_string()
                        } else {
                            shown.join(", ")
                        }
                    ),
                ),
                None,
            ));
        }
    }
    out
}

/// The one requirement that selects exactly the nodes `r` does not, when there is one.
fn negation(r: &Requirement) -> Option<Requirement> {
    let op = match r.op {
        Operator::In => Operator::NotIn,
        Operator::NotIn => Operator::In,
        Operator::Exists => Operator::DoesNotExist,
        Operator::DoesNotExist => Operator::Exists,
        // Not Gt: absent, not an integer, or not greater; no single requirement says that.
        Operator::Gt | Operator::Lt => return None,
    };
    Some(Requirement { op, ..r.clone() })
}

/// The tolerations kube-apiserver's DefaultTolerationSeconds plugin adds to every pod.
fn is_default_toleration(t: &Toleration) -> bool {
    matches!(
        t.key.as_deref(),
        Some("node.kubernetes.io/not-ready" | "node.kubernetes.io/unreachable")
    ) && t.operator.as_deref() == Some("Exists")
        && t.effect.as_deref() == Some("NoExecute")
        && t.toleration_seconds.is_some()
        && t.value.as_deref().unwrap_or("").is_empty()
}

/// Whether `allowed` tolerates every taint `t` tolerates.
pub fn covers(allowed: &Toleration, t: &Toleration) -> bool {
    // An allowed tolerationSeconds is the longest the pod's may last; without one it lasts
    // for ever.
    if let Some(max) = allowed.toleration_seconds {
        if t.toleration_seconds.is_none_or(|s| s > max) {
            return false;
        }
    }
    let (ae, te) = (
        allowed.effect.as_deref().unwrap_or(""),
        t.effect.as_deref().unwrap_or(""),
    );
    if !ae.is_empty() && ae != te {
        return false;
    }
    let op = |x: &Toleration| match x.operator.as_deref() {
        None | Some("") => "Equal".to_string(),
        Some(o) => o.to_string(),
    };
    let (ak, tk) = (
        allowed.key.as_deref().unwrap_or(""),
        t.key.as_deref().unwrap_or(""),
    );
    if ak.is_empty() {
        return op(allowed) == "Exists";
    }
    if ak != tk {
        return false;
    }
    match op(allowed).as_str() {
        "Exists" => true,
        "Equal" => {
            op(t) == "Equal"
                && allowed.value.as_deref().unwrap_or("") == t.value.as_deref().unwrap_or("")
        }
        _ => false,
    }
}

fn describe_toleration(t: &Toleration) -> String {
    let mut parts = Vec::new();
    if let Some(k) = t.key.as_deref().filter(|k| !k.is_empty()) {
        parts.push(format!("key: {k}"));
    }
    parts.push(format!(
        "operator: {}",
        t.operator
            .as_deref()
            .filter(|o| !o.is_empty())
            .unwrap_or("Equal")
    ));
    if let Some(v) = t.value.as_deref().filter(|v| !v.is_empty()) {
        parts.push(format!("value: {v}"));
    }
    if let Some(e) = t.effect.as_deref().filter(|e| !e.is_empty()) {
        parts.push(format!("effect: {e}"));
    }
    if let Some(s) = t.toleration_seconds {
        parts.push(format!("tolerationSeconds: {s}"));
    }
    format!("{{{}}}", parts.join(", "))
}

#[cfg(test)]
mod tests;
