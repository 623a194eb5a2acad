//! `topology-spread` (validation, as kube-apiserver's `validateTopologySpreadConstraints`, plus
//! warnings for constraints that silently spread nothing) and `topology-spread-defaults` (the rule
//! file's default constraints added to objects that have none).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::TopologySpreadConstraint;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::{json, Value};

use serde::{Deserialize, Serialize};

use super::{
    Action, AddOp, Finding, Input, Note, ObjectKind, Operation, Patch, Phase, Request, Rule,
    RuleId, RuleMeta, Verdict, Voice,
};
use crate::core::labels::selector_matches;
use crate::k8s::fieldpath::{FieldError, FieldPath};
use crate::k8s::json_text;
use crate::k8s::model::{selector_has_no_requirements, PodSpec};
use crate::k8s::validation::{keys_in_selector, validate_label_name, validate_label_selector};
use crate::k8s::workload::{Kind, PodTemplate, POD_TEMPLATE_HASH};

pub const VALIDATE_ID: RuleId = RuleId::new("topology-spread");
pub const DEFAULTS_ID: RuleId = RuleId::new("topology-spread-defaults");

/// The rule file's `topologySpread` section: validation and defaulting.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct TopologySpread {
    pub validate: SpreadValidate,
    pub defaults: SpreadDefaults,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct SpreadValidate {
    pub enabled: bool,
    pub action: Action,
}

impl Default for SpreadValidate {
    fn default() -> Self {
        SpreadValidate {
            enabled: true,
            action: Action::Deny,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct SpreadDefaults {
    pub enabled: bool,
    pub constraints: Vec<DefaultConstraint>,
    pub selector_label_keys: Vec<String>,
    pub exempt_namespaces: Vec<String>,
}

impl Default for SpreadDefaults {
    fn default() -> Self {
        // kube-scheduler's system default constraints.
        let c = |max_skew, key: &str| DefaultConstraint {
            max_skew,
            topology_key: key.to_string(),
            when_unsatisfiable: "ScheduleAnyway".to_string(),
            min_domains: None,
            node_affinity_policy: None,
            node_taints_policy: None,
        };
        SpreadDefaults {
            enabled: true,
            constraints: vec![
                c(3, "kubernetes.io/hostname"),
                c(5, "topology.kubernetes.io/zone"),
            ],
            selector_label_keys: [
                "app.kubernetes.io/name",
                "app.kubernetes.io/instance",
                "app",
            ]
            .into_iter()
            .map(String::from)
            .collect(),
            exempt_namespaces: vec!["kube-system".to_string()],
        }
    }
}

/// A default constraint; its labelSelector is derived from the object it is added to.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DefaultConstraint {
    pub max_skew: i32,
    pub topology_key: String,
    pub when_unsatisfiable: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_domains: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_affinity_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_taints_policy: Option<String>,
}

impl DefaultConstraint {
    pub fn to_constraint(
        &self,
        selector: Option<LabelSelector>,
        match_label_keys: Option<Vec<String>>,
    ) -> TopologySpreadConstraint {
        TopologySpreadConstraint {
            label_selector: selector,
            match_label_keys,
            max_skew: self.max_skew,
            min_domains: self.min_domains,
            node_affinity_policy: self.node_affinity_policy.clone(),
            node_taints_policy: self.node_taints_policy.clone(),
            topology_key: self.topology_key.clone(),
            when_unsatisfiable: self.when_unsatisfiable.clone(),
        }
    }
}

pub struct TopologySpreadRule;

impl Rule for TopologySpreadRule {
    type Settings = TopologySpread;
    const META: &'static [RuleMeta] = &[
        RuleMeta {
            id: VALIDATE_ID,
            summary: "topologySpreadConstraints as kube-apiserver validates them, and constraints that spread nothing",
            help: "fix the constraint at the path shown; give every constraint a labelSelector that matches the pod's own labels",
            default_action: "deny",
        },
        RuleMeta {
            id: DEFAULTS_ID,
            summary: "Workloads without topology spread constraints get the configured defaults",
            help: "set topologySpreadConstraints yourself, or annotate the object with placement-guard.io/spread-defaults: \"skip\"",
            default_action: "patch",
        },
    ];

    /// Validation: CREATE and UPDATE of Pods and workloads. Defaulting (`/mutate`): Pod and Job
    /// CREATE, other workloads' CREATE and UPDATE, never DaemonSets. A Job's template is
    /// immutable but for the scheduling directives of a suspended Job that never ran
    /// (`validatePodTemplateUpdate`; Kueue admits a Job by setting them as it unsuspends it):
    /// constraints added on UPDATE would make kube-apiserver refuse the update.
    fn applies(s: &TopologySpread, r: Request) -> bool {
        let ObjectKind::Template(kind) = r.kind else {
            return false;
        };
        match r.phase {
            Phase::Validate => s.validate.enabled && r.operation.writes(),
            Phase::Mutate => {
                s.defaults.enabled
                    && kind != Kind::DaemonSet
                    && (r.operation == Operation::Create
                        || (r.operation.writes() && !kind.defaults_at_create_only()))
            }
        }
    }

    /// Validation reads the pod's labels only for constraints the update changed. (Defaults,
    /// which would read them, are added to no Pod UPDATE: see `applies`.)
    fn reads_metadata(
        _: &TopologySpread,
        r: Request,
        old: Option<&PodSpec>,
        new: &PodSpec,
    ) -> bool {
        r.phase == Phase::Mutate
            || old.is_none_or(|o| o.spread_constraints() != new.spread_constraints())
    }

    fn evaluate(s: &TopologySpread, input: &Input, verdict: &mut Verdict) {
        let Some((object, old)) = input.templates() else {
            return;
        };
        match input.phase {
            Phase::Validate => {
                validate(&s.validate, object, old, input.context.as_written, verdict)
            }
            // An UPDATE that leaves the pod template as it was gets no defaults: added, they
            // would change the template and so roll out every pod of a workload that was
            // created before the rule (or while the webhook failed open).
            Phase::Mutate if input.context.template_changed == Some(false) => {
                verdict.rules_run.push(DEFAULTS_ID);
            }
            Phase::Mutate => default(
                &s.defaults,
                object,
                input.namespace,
                input.context.describe_patches,
                verdict,
            ),
        }
    }

    fn check_settings(s: &TopologySpread, path: &FieldPath) -> Vec<FieldError> {
        let d = &s.defaults;
        let constraints: Vec<TopologySpreadConstraint> = d
            .constraints
            .iter()
            .map(|c| c.to_constraint(Some(LabelSelector::default()), None))
            .collect();
        let dp = path.child("defaults");
        let mut out = validate_constraints(&constraints, &dp.child("constraints"), None);
        for (i, k) in d.selector_label_keys.iter().enumerate() {
            out.extend(validate_label_name(
                k,
                &dp.child("selectorLabelKeys").index(i),
            ));
        }
        out.extend(crate::k8s::validation::validate_namespace_names(
            &d.exempt_namespaces,
            &dp.child("exemptNamespaces"),
        ));
        out
    }
}

/// An UPDATE that leaves the constraints as they were is not judged again.
fn validate(
    s: &SpreadValidate,
    object: &PodTemplate,
    old: Option<&PodTemplate>,
    as_written: bool,
    verdict: &mut Verdict,
) {
    if old.is_some_and(|o| o.spec.spread_constraints() == object.spec.spread_constraints()) {
        return;
    }
    verdict.rules_run.push(VALIDATE_ID);
    // No constraints, nothing to judge (and no paths to build).
    if object.spec.spread_constraints().is_empty() {
        return;
    }
    let path = object.spec_path().child("topologySpreadConstraints");
    // The labels each pod will carry, for the merge and for the warnings: read once.
    let carried = object.carried_labels();
    let finding = |action, error| Finding {
        rule: VALIDATE_ID,
        action,
        error,
        hint: None,
    };
    for e in refused_with(object, &carried, as_written) {
        verdict.findings.push(finding(s.action, e));
    }
    if object.kind != Kind::Pod {
        for e in pods_refused(object, &path, &carried) {
            verdict.findings.push(finding(Action::Warn, e));
        }
    }
    for e in warnings(object, &carried) {
        verdict.findings.push(finding(Action::Warn, e));
    }
}

fn default(
    s: &SpreadDefaults,
    object: &PodTemplate,
    namespace: &str,
    describe: bool,
    verdict: &mut Verdict,
) {
    verdict.rules_run.push(DEFAULTS_ID);
    match defaults(object, namespace, s) {
        Defaulting::NotApplicable => {}
        Defaulting::Skipped(why) => verdict.notes.push(Note {
            rule: DEFAULTS_ID,
            voice: Voice::Rule,
            path: object.spec_path(),
            message: why,
        }),
        Defaulting::Add {
            path,
            selector,
            match_label_keys,
        } => {
            let keys = match_label_keys.as_deref();
            let op = AddOp::written(path.clone(), |out| {
                write_constraints(out, &s.constraints, &selector, keys);
            });
            let described = describe.then(|| default_constraints(s, &selector, keys));
            verdict.patches.push(patch(path, op, described.as_deref()));
        }
    }
}

/// The default constraints as JSON, as serde_json would write [`default_constraints`]' (the
/// selector written once for all of them, nothing built or cloned).
fn write_constraints(
    out: &mut String,
    constraints: &[DefaultConstraint],
    selector: &LabelSelector,
    keys: Option<&[String]>,
) {
    let mut sel = String::with_capacity(128);
    json_text::label_selector(&mut sel, selector);
    out.push('[');
    for (i, c) in constraints.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        json_text::spread_constraint(
            out,
            &json_text::SpreadConstraint {
                label_selector: Some(&sel),
                match_label_keys: keys,
                max_skew: c.max_skew,
                min_domains: c.min_domains,
                node_affinity_policy: c.node_affinity_policy.as_deref(),
                node_taints_policy: c.node_taints_policy.as_deref(),
                topology_key: &c.topology_key,
                when_unsatisfiable: &c.when_unsatisfiable,
            },
        );
    }
    out.push(']');
}

/// The constraints defaulting adds: each configured one, selecting by `selector` and
/// `match_label_keys`.
pub fn default_constraints(
    cfg: &SpreadDefaults,
    selector: &LabelSelector,
    match_label_keys: Option<&[String]>,
) -> Vec<TopologySpreadConstraint> {
    cfg.constraints
        .iter()
        .map(|c| c.to_constraint(Some(selector.clone()), match_label_keys.map(<[_]>::to_vec)))
        .collect()
}

/// The patch, in words too when `described` holds the constraints.
fn patch(path: FieldPath, op: AddOp, described: Option<&[TopologySpreadConstraint]>) -> Patch {
    Patch {
        rule: DEFAULTS_ID,
        ops: vec![op],
        summary: described.map_or_else(String::new, |c| {
            format!(
                "no topology spread constraints; the webhook would add: {}",
                describe_constraints(c)
            )
        }),
        hint: described.map(|_| {
            format!(
                "set topologySpreadConstraints yourself, or annotate the object with {SKIP_ANNOTATION}: \"skip\""
            )
        }),
        path,
    }
}

fn describe_constraints(cs: &[TopologySpreadConstraint]) -> String {
    let selecting = |c: &TopologySpreadConstraint| {
        let sel = c
            .label_selector
            .as_ref()
            .and_then(|s| s.match_labels.as_ref())
            .map(|m| {
                m.iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default();
        let keys = c
            .match_label_keys
            .as_ref()
            .map(|k| format!(" + matchLabelKeys [{}]", k.join(",")))
            .unwrap_or_default();
        format!("{}, selecting {sel}{keys}", c.when_unsatisfiable)
    };
    let skews = |cs: &[TopologySpreadConstraint]| {
        cs.iter()
            .map(|c| format!("maxSkew {} on {}", c.max_skew, c.topology_key))
            .collect::<Vec<_>>()
            .join(", ")
    };
    // Defaults select alike: said once, the line stays readable in CI output.
    match cs.split_first() {
        Some((first, rest)) if rest.iter().all(|c| selecting(c) == selecting(first)) => {
            format!("{} ({})", skews(cs), selecting(first))
        }
        _ => cs
            .iter()
            .map(|c| format!("{} ({})", skews(std::slice::from_ref(c)), selecting(c)))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

pub const SKIP_ANNOTATION: &str = "placement-guard.io/spread-defaults";
const NOT_POSITIVE: &str = "must be greater than zero";

/// Every apiserver error of `constraints` under `path` (`spec.topologySpreadConstraints`).
/// `merge`: the labels of a Pod whose `matchLabelKeys` the apiserver has yet to merge into
/// its selectors (its PrepareForCreate appends `key In [value]` for each key the pod
/// carries, before validation).
pub fn validate_constraints(
    constraints: &[TopologySpreadConstraint],
    path: &FieldPath,
    merge: Option<&BTreeMap<String, String>>,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, c) in constraints.iter().enumerate() {
        let p = path.index(i);
        if c.max_skew <= 0 {
            errs.push(FieldError::invalid(
                p.child("maxSkew"),
                json!(c.max_skew),
                NOT_POSITIVE,
            ));
        }
        if c.topology_key.is_empty() {
            errs.push(FieldError::required(
                p.child("topologyKey"),
                "can not be empty",
            ));
        }
        let action = c.when_unsatisfiable.as_str();
        if !matches!(action, "DoNotSchedule" | "ScheduleAnyway") {
            errs.push(FieldError::not_supported(
                p.child("whenUnsatisfiable"),
                json!(action),
                &["DoNotSchedule", "ScheduleAnyway"],
            ));
        }
        if constraints[i + 1..].iter().any(|o| {
            o.topology_key == c.topology_key && o.when_unsatisfiable == c.when_unsatisfiable
        }) {
            errs.push(FieldError::duplicate(
                p.child("{topologyKey, whenUnsatisfiable}"),
                json!(format!("{{{}, {}}}", c.topology_key, action)),
            ));
        }
        if let Some(md) = c.min_domains {
            if md <= 0 {
                errs.push(FieldError::invalid(
                    p.child("minDomains"),
                    json!(md),
                    NOT_POSITIVE,
                ));
            }
            if action != "DoNotSchedule" {
                errs.push(FieldError::invalid(
                    p.child("minDomains"),
                    json!(md),
                    format!(
                        "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"
                    ),
                ));
            }
        }
        for (field, policy) in [
            ("nodeAffinityPolicy", &c.node_affinity_policy),
            ("nodeTaintsPolicy", &c.node_taints_policy),
        ] {
            if let Some(v) = policy {
                if v != "Honor" && v != "Ignore" {
                    errs.push(FieldError::not_supported(
                        p.child(field),
                        json!(v),
                        &["Honor", "Ignore"],
                    ));
                }
            }
        }
        errs.extend(validate_match_label_keys(
            c,
            &p.child("matchLabelKeys"),
            merge,
        ));
        if let Some(sel) = &c.label_selector {
            errs.extend(validate_label_selector(sel, &p.child("labelSelector")));
        }
    }
    errs
}

/// `ValidateMatchLabelKeysAndMismatchLabelKeys` as `ValidateTopologySpreadConstraints` calls
/// it since 1.34 (MatchLabelKeysInPodTopologySpreadSelectorMerge): a key is refused where a
/// selector expression names it after `matchLabels` or an earlier expression did, which after
/// the merge means a key the pod carries that the selector also names. The apiserver reports
/// it at `topologySpreadConstraints[i][j]`; here it is the `matchLabelKeys` entry, the one to
/// remove.
fn validate_match_label_keys(
    c: &TopologySpreadConstraint,
    path: &FieldPath,
    merge: Option<&BTreeMap<String, String>>,
) -> Vec<FieldError> {
    let keys = c.match_label_keys.as_deref().unwrap_or(&[]);
    if keys.is_empty() {
        return Vec::new();
    }
    let Some(sel) = c.label_selector.as_ref() else {
        return vec![FieldError::forbidden(
            path.clone(),
            "must not be specified when labelSelector is not set",
        )];
    };
    let mut errs = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        errs.extend(validate_label_name(key, &path.index(i)));
    }
    let merged = merge.into_iter().flat_map(|labels| {
        keys.iter()
            .map(String::as_str)
            .filter(|k| labels.contains_key(*k))
    });
    errs.extend(keys_in_selector(keys, sel, merged, path));
    errs
}

/// What kube-apiserver refuses in `object`'s topology spread constraints, in its words;
/// `as_written`: a Pod as a manifest holds it, not yet merged ([`Context::as_written`]).
///
/// [`Context::as_written`]: crate::rules::Context::as_written
pub fn refused(object: &PodTemplate, as_written: bool) -> Vec<FieldError> {
    if object.spec.spread_constraints().is_empty() {
        return Vec::new();
    }
    refused_with(object, &object.carried_labels(), as_written)
}

/// What kube-apiserver refuses in every pod of a workload's template, which it accepts: a
/// `matchLabelKeys` key that the merge into each pod's selector makes a duplicate. Nothing for
/// a Pod, which [`refused`] judges as merged.
pub fn template_pods_refused(object: &PodTemplate) -> Vec<FieldError> {
    if object.kind == Kind::Pod || object.spec.spread_constraints().is_empty() {
        return Vec::new();
    }
    let path = object.spec_path().child("topologySpreadConstraints");
    pods_refused(object, &path, &object.carried_labels())
}

/// [`refused`] with the labels its pods carry.
fn refused_with(
    object: &PodTemplate,
    carried: &BTreeMap<String, String>,
    as_written: bool,
) -> Vec<FieldError> {
    let path = object.spec_path().child("topologySpreadConstraints");
    // A Pod written in a manifest is merged as the apiserver will merge it; a Pod under
    // review already was, and templates never are (their pods are). A Pod read from the API
    // server (a file with a uid) whose selectors lack what the merge appends was not stored
    // so: one restored from a dump under another name is merged again at create.
    let merge = (object.kind == Kind::Pod && (as_written || !merged_as_stored(object, carried)))
        .then_some(carried);
    validate_constraints(object.spec.spread_constraints(), &path, merge)
}

/// Whether each spread constraint's selector holds the `key In [value]` expression the
/// apiserver appends for each `matchLabelKeys` key the pod carries, as a Pod it stored does.
fn merged_as_stored(pod: &PodTemplate, labels: &BTreeMap<String, String>) -> bool {
    pod.spec.spread_constraints().iter().all(|c| {
        let Some(sel) = &c.label_selector else {
            return true;
        };
        let exprs = sel.match_expressions.as_deref().unwrap_or_default();
        c.match_label_keys.iter().flatten().all(|k| {
            labels.get(k).is_none_or(|v| {
                exprs.iter().any(|e| {
                    e.key == *k
                        && e.operator == "In"
                        && e.values.as_deref() == Some(std::slice::from_ref(v))
                })
            })
        })
    })
}

/// A template the apiserver accepts whose pods it will refuse: once each pod's `matchLabelKeys`
/// are merged into its selector, a key the selector already names is an error. `labels`:
/// [`PodTemplate::carried_labels`].
fn pods_refused(
    t: &PodTemplate,
    path: &FieldPath,
    labels: &BTreeMap<String, String>,
) -> Vec<FieldError> {
    let mut out = Vec::new();
    for (i, c) in t.spec.spread_constraints().iter().enumerate() {
        let p = path.index(i).child("matchLabelKeys");
        let as_is = validate_match_label_keys(c, &p, None);
        for e in validate_match_label_keys(c, &p, Some(labels)) {
            if !as_is.contains(&e) {
                out.push(FieldError {
                    detail: format!(
                        "{}: the apiserver accepts the template, but merges the key into each pod's selector and then refuses every pod (remove it from matchLabelKeys or from the selector)",
                        e.detail
                    ),
                    ..e
                });
            }
        }
    }
    out
}

fn describe_labels(labels: &BTreeMap<String, String>) -> String {
    if labels.is_empty() {
        return "none".to_string();
    }
    labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Mistakes the apiserver accepts but that make a constraint spread nothing. `labels`: the
/// labels each pod will carry ([`PodTemplate::carried_labels`]).
pub fn warnings(t: &PodTemplate, labels: &BTreeMap<String, String>) -> Vec<FieldError> {
    let path = t.spec_path().child("topologySpreadConstraints");
    let written = t.template_meta().labels();
    let added: Vec<&str> = labels
        .keys()
        .filter(|k| !written.contains_key(*k))
        .map(String::as_str)
        .collect();
    let also = match t.kind {
        _ if added.is_empty() => String::new(),
        Kind::Job | Kind::CronJob => {
            "; and the job-name and controller-uid labels the apiserver adds".to_string()
        }
        _ => format!(
            "; and the {} label(s) its controller adds",
            added.join(", ")
        ),
    };
    let mut out = Vec::new();
    for (i, c) in t.spec.spread_constraints().iter().enumerate() {
        let p = path.index(i).child("labelSelector");
        match &c.label_selector {
            None => out.push(FieldError::required(
                p,
                "without a labelSelector the constraint counts no pods and spreads nothing; select this workload's own pods",
            )),
            // Empty after matchLabelKeys are merged in (a key the pods do not carry adds nothing).
            Some(sel)
                if selector_has_no_requirements(sel)
                    && !c
                        .match_label_keys
                        .iter()
                        .flatten()
                        .any(|k| labels.contains_key(k)) =>
            {
                out.push(FieldError::invalid(
                    p,
                    json!({}),
                    "kube-scheduler v1.27 to v1.36 counts no pods for an empty labelSelector (kubernetes#141339), so the constraint spreads nothing there; select this workload's own pods with matchLabels",
                ))
            }
            // An invalid selector is an error of its own; saying it does not match adds nothing.
            Some(sel)
                if validate_label_selector(sel, &p).is_empty()
                    && !selector_matches(sel, labels) =>
            {
                out.push(FieldError::invalid(
                p,
                serde_json::to_value(sel).unwrap_or(Value::Null),
                format!(
                    "does not match the pod's own labels ({}{also}), so the pod is not counted by its own constraint and the spread drifts",
                    describe_labels(written),
                ),
            ))
            }
            Some(_) => {}
        }
    }
    out
}

/// What defaulting decided for one object.
#[derive(Clone, Debug, PartialEq)]
pub enum Defaulting {
    /// Nothing to do (already has constraints, exempt, opted out, DaemonSet, made by another
    /// controller, disabled).
    NotApplicable,
    /// Left alone, with the reason the user should hear.
    Skipped(String),
    /// Constraints to set at `path`: the configured ones, selecting by `selector` and
    /// `match_label_keys` ([`default_constraints`]).
    Add {
        path: FieldPath,
        selector: LabelSelector,
        match_label_keys: Option<Vec<String>>,
    },
}

fn opted_out(t: &PodTemplate) -> bool {
    [&t.meta, t.template_meta()]
        .iter()
        .any(|m| m.annotation(SKIP_ANNOTATION) == Some("skip"))
}

/// A workload object a controller manages (a Deployment's or an Argo Rollout's ReplicaSet, a
/// CronJob's Job, an operator's Deployment): a ReplicaSet's controller finds it again by
/// comparing templates, and one changed under it is taken for another (kubernetes#57167); an
/// operator reconciles to its own spec, and would fight the defaults. Its pods are defaulted
/// when they are created.
fn made_by_a_controller(t: &PodTemplate) -> bool {
    t.kind != Kind::Pod
        && t.meta
            .owner_references
            .as_deref()
            .unwrap_or(&[])
            .iter()
            .any(|o| o.controller == Some(true))
}

/// The default constraints for `t`, if it should get any.
pub fn defaults(t: &PodTemplate, namespace: &str, cfg: &SpreadDefaults) -> Defaulting {
    if !cfg.enabled
        || cfg.constraints.is_empty()
        || t.kind == Kind::DaemonSet
        || t.made_by_daemonset()
        || made_by_a_controller(t)
        || !t.spec.spread_constraints().is_empty()
        || cfg.exempt_namespaces.iter().any(|n| n == namespace)
        || opted_out(t)
    {
        return Defaulting::NotApplicable;
    }
    let labels = t.template_meta().labels();
    let (selector, mut keys) = match (&t.selector, t.kind) {
        // Both controllers label each pod they create with its revision's pod-template-hash
        // (OpenKruise's `WriteRevisionHash`), so each revision's pods spread among themselves,
        // whatever the mix of revisions mid-rollout.
        (Some(sel), Kind::Deployment | Kind::CloneSet) => {
            (sel.clone(), vec![POD_TEMPLATE_HASH.to_string()])
        }
        (Some(sel), k) if k != Kind::Pod => (sel.clone(), Vec::new()),
        _ => {
            let picked: BTreeMap<String, String> = labels
                .iter()
                .filter(|(k, _)| cfg.selector_label_keys.contains(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if picked.is_empty() {
                return Defaulting::Skipped(format!(
                    "topology spread constraints were not defaulted: the {} has none of the labels {} to select its peers by; add one, or set topologySpreadConstraints",
                    if t.kind == Kind::Pod { "pod" } else { "pod template" },
                    cfg.selector_label_keys
                        .iter()
                        .map(|k| format!("{k:?}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            let keys = if labels.contains_key(POD_TEMPLATE_HASH) {
                vec![POD_TEMPLATE_HASH.to_string()]
            } else {
                Vec::new()
            };
            (
                LabelSelector {
                    match_labels: Some(picked),
                    match_expressions: None,
                },
                keys,
            )
        }
    };
    // A key the selector already names would be a validation error.
    keys.retain(|k| {
        !selector
            .match_labels
            .as_ref()
            .is_some_and(|m| m.contains_key(k))
            && !selector
                .match_expressions
                .as_deref()
                .unwrap_or(&[])
                .iter()
                .any(|e| &e.key == k)
    });
    Defaulting::Add {
        path: t.spec_path().child("topologySpreadConstraints"),
        selector,
        match_label_keys: (!keys.is_empty()).then_some(keys),
    }
}

#[cfg(test)]
mod tests;
