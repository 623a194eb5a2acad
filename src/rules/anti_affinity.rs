//! `hard-anti-affinity`: required pod anti-affinity over a topology wider than allowed. Required
//! anti-affinity is symmetric, so one such pod in a zone shuts every matching pod out of that
//! zone; with a selector over all namespaces, every matching pod in the cluster.

use k8s_openapi::api::core::v1::PodAffinityTerm;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use serde::{Deserialize, Serialize};

use super::{Action, Finding, Input, ObjectKind, Request, Rule, RuleId, RuleMeta, Verdict};
use crate::k8s::fieldpath::{FieldError, FieldPath};
use crate::k8s::model::PodSpec;
use crate::k8s::semantic::SemEq;
use crate::k8s::validation::{is_qualified_name, validate_label_name};
use crate::k8s::workload::PodTemplate;

pub const ID: RuleId = RuleId::new("hard-anti-affinity");

/// deny | warn | allow
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ScopeAction {
    Deny,
    Warn,
    Allow,
}

impl ScopeAction {
    /// The finding's action, or `None` when the scope is allowed.
    pub fn action(self) -> Option<Action> {
        match self {
            ScopeAction::Deny => Some(Action::Deny),
            ScopeAction::Warn => Some(Action::Warn),
            ScopeAction::Allow => None,
        }
    }
}

/// Which terms an UPDATE is judged on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum OnUpdate {
    /// Only terms the old object lacked (ratcheting): existing workloads can still be scaled,
    /// relabelled or ungated.
    NewTermsOnly,
    /// Every term, as LimitPodHardAntiAffinityTopology judges every update of a pod.
    AllTerms,
}

/// The rule file's `hardAntiAffinity` section.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct HardAntiAffinity {
    pub enabled: bool,
    /// Topology keys a required anti-affinity term may use freely (exact comparison).
    pub allowed_topology_keys: Vec<String>,
    /// A wide term that spans all namespaces.
    pub cluster_scope: ScopeAction,
    /// Any other wide term.
    pub namespace_scope: ScopeAction,
    pub exempt_namespaces: Vec<String>,
    pub on_update: OnUpdate,
}

impl Default for HardAntiAffinity {
    fn default() -> Self {
        HardAntiAffinity {
            enabled: true,
            allowed_topology_keys: vec!["kubernetes.io/hostname".to_string()],
            cluster_scope: ScopeAction::Deny,
            namespace_scope: ScopeAction::Warn,
            exempt_namespaces: vec!["kube-system".to_string()],
            on_update: OnUpdate::NewTermsOnly,
        }
    }
}

pub struct HardAntiAffinityRule;

impl Rule for HardAntiAffinityRule {
    type Settings = HardAntiAffinity;
    const META: &'static [RuleMeta] = &[RuleMeta {
        id: ID,
        summary: "Required pod anti-affinity over a wide topology shuts matching pods out of whole zones",
        help: "use preferred anti-affinity or a topologySpreadConstraint for wide topologies; keep required anti-affinity on kubernetes.io/hostname",
        default_action: "deny",
    }];

    /// CREATE and UPDATE of Pods and workloads, on `/validate`.
    fn applies(s: &HardAntiAffinity, r: Request) -> bool {
        s.enabled
            && r.phase == super::Phase::Validate
            && r.operation.writes()
            && matches!(r.kind, ObjectKind::Template(_))
    }

    /// The terms and the request's namespace decide, not the pod's own labels.
    fn reads_metadata(_: &HardAntiAffinity, _: Request, _: Option<&PodSpec>, _: &PodSpec) -> bool {
        false
    }

    fn evaluate(s: &HardAntiAffinity, input: &Input, verdict: &mut Verdict) {
        let Some((object, old)) = input.templates() else {
            return;
        };
        // An exempt namespace is spared the policy, not the apiserver's own refusal of a key.
        let exempt = s.exempt_namespaces.iter().any(|n| n == input.namespace);
        verdict.rules_run.push(ID);
        verdict.findings.extend(
            check(object, old, input.namespace, s, exempt)
                .into_iter()
                .map(|f| Finding {
                    rule: ID,
                    action: f.action,
                    error: f.error,
                    hint: Some(f.hint),
                }),
        );
    }

    fn check_settings(s: &HardAntiAffinity, path: &FieldPath) -> Vec<FieldError> {
        // A topology key is a node label key: anything else can never match.
        s.allowed_topology_keys
            .iter()
            .enumerate()
            .flat_map(|(i, k)| {
                let at = path.child("allowedTopologyKeys").index(i);
                if k.is_empty() {
                    vec![FieldError::invalid(
                        at,
                        serde_json::json!(""),
                        "a topology key may not be empty",
                    )]
                } else {
                    crate::k8s::validation::validate_label_name(k, &at)
                }
            })
            .chain(crate::k8s::validation::validate_namespace_names(
                &s.exempt_namespaces,
                &path.child("exemptNamespaces"),
            ))
            .collect()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Cluster,
    Namespace,
}

/// One wide term, with the action its scope is configured with.
#[derive(Clone, Debug, PartialEq)]
pub struct Flagged {
    pub scope: Scope,
    pub action: Action,
    pub error: FieldError,
    pub hint: String,
}

const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// True when the selector reaches every namespace created from now on: it matches a new
/// namespace that carries only the label every namespace has, under a name none of its
/// requirements mention. `{}` and `Exists` on the name do, and so do selectors that only leave
/// some namespaces out (`NotIn [kube-system]`, `DoesNotExist` on any label): spanning all
/// namespaces but a few, they shut as many pods out as `{}`. A selector that needs a label an
/// administrator sets, or names its namespaces, does not. Evaluated requirement by requirement
/// against that namespace, without building it (this runs on every admission review).
fn selects_all_namespaces(sel: &LabelSelector) -> bool {
    // Any `matchLabels` entry needs a label the new namespace lacks, or a name it does not have.
    sel.match_labels.as_ref().is_none_or(|m| m.is_empty())
        && sel.match_expressions.iter().flatten().all(|e| {
            let name = e.key == NAMESPACE_NAME_LABEL;
            match e.operator.as_str() {
                // A name the selector does not mention is in no `In` list and in every `NotIn`.
                "NotIn" => true,
                "Exists" => name,
                "DoesNotExist" => !name,
                // `In`, and an operator the apiserver refuses (a selector that matches nothing).
                _ => false,
            }
        })
}

pub fn scope_of(term: &PodAffinityTerm) -> Scope {
    match &term.namespace_selector {
        Some(sel) if selects_all_namespaces(sel) => Scope::Cluster,
        _ => Scope::Namespace,
    }
}

/// `s` as `{:?}` writes it; a string with nothing to escape (a label key) is copied whole.
fn push_debug(out: &mut String, s: &str) {
    if s.bytes()
        .all(|b| b == b' ' || (b.is_ascii_graphic() && b != b'"' && b != b'\\'))
    {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        use std::fmt::Write as _;
        let _ = write!(out, "{s:?}");
    }
}

/// "zone", "region" or "topology domain", for messages.
fn domain_word(key: &str) -> &'static str {
    match key {
        "topology.kubernetes.io/zone" | "failure-domain.beta.kubernetes.io/zone" => "zone",
        "topology.kubernetes.io/region" | "failure-domain.beta.kubernetes.io/region" => "region",
        _ => "topology domain",
    }
}

fn namespaces_phrase(term: &PodAffinityTerm, own_namespace: &str) -> String {
    let listed = term.namespaces.as_deref().unwrap_or(&[]);
    match (&term.namespace_selector, listed) {
        (Some(_), _) => "in the namespaces its namespaceSelector selects".to_string(),
        (None, []) if own_namespace.is_empty() => "in its own namespace".to_string(),
        (None, []) => format!("in namespace {own_namespace:?}"),
        (None, l) => format!("in namespaces {}", l.join(", ")),
    }
}

/// Flags every wide required anti-affinity term of `object`, and in an `exempt` namespace
/// only the topology keys the apiserver refuses. On UPDATE, with `onUpdate: newTermsOnly`,
/// terms the old object already had are not flagged again (ratcheting).
pub fn check(
    object: &PodTemplate,
    old: Option<&PodTemplate>,
    namespace: &str,
    cfg: &HardAntiAffinity,
    exempt: bool,
) -> Vec<Flagged> {
    let terms = object.spec.required_pod_anti_affinity();
    if terms.is_empty() {
        return Vec::new();
    }
    let old_terms = old
        .map(|o| o.spec.required_pod_anti_affinity())
        .unwrap_or(&[]);
    let base = required_terms_path(object);
    let allowed = cfg.allowed_topology_keys.join(", ");
    let mut out = Vec::new();
    for (i, term) in terms.iter().enumerate() {
        let scope = scope_of(term);
        if !is_qualified_name(&term.topology_key) {
            // Not a topology at all: the apiserver refuses the object whatever the term
            // selects, so say what it will say instead of calling the key wide.
            let invalid = invalid_key(term, &base.index(i).child("topologyKey"));
            out.extend(invalid.into_iter().map(|error| Flagged {
                scope,
                action: Action::Deny,
                error,
                hint: INVALID_KEY_HINT.to_string(),
            }));
            continue;
        }
        // A null labelSelector matches no pod (the scheduler reads it as labels.Nothing()):
        // the term blocks nothing, however wide.
        if exempt || term.label_selector.is_none() {
            continue;
        }
        if cfg
            .allowed_topology_keys
            .iter()
            .any(|k| k == &term.topology_key)
        {
            continue;
        }
        if cfg.on_update == OnUpdate::NewTermsOnly && old_terms.iter().any(|o| o.sem_eq(term)) {
            continue;
        }
        let setting = match scope {
            Scope::Cluster => cfg.cluster_scope,
            Scope::Namespace => cfg.namespace_scope,
        };
        let Some(action) = setting.action() else {
            continue;
        };
        out.push(flag(term, i, &base, scope, action, namespace, &allowed));
    }
    out
}

/// Where `object`'s required anti-affinity terms are.
fn required_terms_path(object: &PodTemplate) -> FieldPath {
    object.spec_path().children(&[
        "affinity",
        "podAntiAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
    ])
}

/// What kube-apiserver refuses in `object`'s required anti-affinity terms: a topologyKey that
/// is no label key (what [`check`] denies in any namespace, exempt or not).
pub fn refused_keys(object: &PodTemplate) -> Vec<FieldError> {
    let base = required_terms_path(object);
    object
        .spec
        .required_pod_anti_affinity()
        .iter()
        .enumerate()
        .filter(|(_, t)| !is_qualified_name(&t.topology_key))
        .flat_map(|(i, t)| invalid_key(t, &base.index(i).child("topologyKey")))
        .collect()
}

const INVALID_KEY_HINT: &str = "a topologyKey is a node label key, such as kubernetes.io/hostname or topology.kubernetes.io/zone";

/// The apiserver's errors for the term's topologyKey (`validatePodAffinityTerm`): Required when
/// empty, then `ValidateLabelName`.
fn invalid_key(term: &PodAffinityTerm, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if term.topology_key.is_empty() {
        errs.push(FieldError::required(path.clone(), "can not be empty"));
    }
    errs.extend(validate_label_name(&term.topology_key, path));
    errs
}

fn flag(
    term: &PodAffinityTerm,
    i: usize,
    base: &FieldPath,
    scope: Scope,
    action: Action,
    namespace: &str,
    allowed: &str,
) -> Flagged {
    let key = &term.topology_key;
    let domain = domain_word(key);
    let path = base.index(i).child("topologyKey");
    // Pushed piece by piece: through `format!` the two lines cost about 2k instructions, a
    // sixth of a denied review.
    let mut detail = String::with_capacity(200 + allowed.len());
    detail.push_str("hard anti-affinity on ");
    push_debug(&mut detail, key);
    match scope {
        Scope::Cluster => detail.push_str(
            " across all namespaces lets this pod block every matching pod in the cluster from a whole ",
        ),
        Scope::Namespace => {
            detail.push(' ');
            detail.push_str(&namespaces_phrase(term, namespace));
            detail.push_str(" lets this pod block every matching pod there from a whole ");
        }
    }
    detail.push_str(domain);
    detail.push_str("; allowed keys: ");
    detail.push_str(allowed);
    // One line next to the error, which carries the full path: the term's index is enough.
    let mut hint = String::with_capacity(160);
    hint.push_str("required anti-affinity term [");
    hint.push_str(itoa::Buffer::new().format(i));
    hint.push_str(
        "]: to spread without shutting others out, use a preferred term or a topologySpreadConstraint on ",
    );
    push_debug(&mut hint, key);
    Flagged {
        scope,
        action,
        error: FieldError::forbidden(path, detail),
        hint,
    }
}

#[cfg(test)]
mod tests;
