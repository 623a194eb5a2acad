//! Rules: (old object, new object, rule file) → verdict. Pure: no I/O, no async.
//!
//! A rule is one module implementing [`Rule`]: its settings (its own section of the rule file,
//! defaults included), its ids with their metadata, which requests it applies to, and what it
//! returns in the common [`Verdict`] types. [`registry!`] lists the rules once; from that line
//! come the rule file's `spec`, the server's decision to read a request's objects or not
//! ([`applies`]), the one evaluation path ([`evaluate`]) that `/validate`, `/mutate`, `review`,
//! `check` and `test` all call, and the rule table of SARIF and `rules --list` ([`RULES`]).

pub mod anti_affinity;
pub mod config;
pub mod feasibility;
pub mod mutable_directives;
pub mod node_selection;
pub mod spread;
pub mod verdict;
pub mod workloadspread;

use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

pub use config::RuleSet;
pub use verdict::{Action, AddOp, Finding, Note, Outcome, Patch, Verdict, Voice};

use crate::k8s::fieldpath::{FieldError, FieldPath};
use crate::k8s::model::PodSpec;
use crate::k8s::workload::{Kind, PodTemplate};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }

    /// CREATE or UPDATE: the operations that store an object.
    pub fn writes(self) -> bool {
        matches!(self, Operation::Create | Operation::Update)
    }
}

/// Who sent the request (AdmissionRequest `userInfo`).
#[derive(Clone, Copy, Debug, Default)]
pub struct User<'a> {
    pub username: &'a str,
    pub groups: &'a [String],
}

/// Which admission phase asks: validation rules judge, mutation rules patch (and, on Pod
/// UPDATE, explain what validation will refuse).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Validate,
    Mutate,
}

/// What kind of object a request carries, as far as rules care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectKind {
    /// A Pod, or a workload with a pod template.
    Template(Kind),
    /// An OpenKruise WorkloadSpread.
    WorkloadSpread,
}

/// What is known of a request before its objects are read: enough to say which rules apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub phase: Phase,
    pub operation: Operation,
    pub kind: ObjectKind,
    /// Whether the evaluation may be given the live cluster (`serve --cluster-aware`): rules
    /// that need it apply only then, so that without it the server reads nothing more.
    pub cluster_aware: bool,
}

/// An object under review.
#[derive(Clone, Copy, Debug)]
pub enum Subject<'a> {
    Template(&'a PodTemplate),
    WorkloadSpread(&'a crate::kruise::workloadspread::WorkloadSpread),
}

impl Subject<'_> {
    pub fn kind(&self) -> ObjectKind {
        match self {
            Subject::Template(t) => ObjectKind::Template(t.kind),
            Subject::WorkloadSpread(_) => ObjectKind::WorkloadSpread,
        }
    }
}

/// The live cluster as the evaluation may see it.
#[derive(Clone, Copy, Debug, Default)]
pub enum ClusterState<'a> {
    /// Not cluster-aware (`check`, `test`, a server without `--cluster-aware`).
    #[default]
    Absent,
    /// Cluster-aware, but the cache cannot be trusted now (why, for metrics): rules that need
    /// it skip their check and never deny.
    Unavailable(&'static str),
    Ready(&'a crate::core::cluster::Cluster),
}

/// What the evaluation knows beyond the request: other objects of the same input, the cluster.
#[derive(Clone, Copy, Debug, Default)]
pub struct Context<'a> {
    /// The live cluster's cached nodes, pods and namespaces.
    pub cluster: ClusterState<'a>,
    /// The workload a WorkloadSpread targets, when the input holds it.
    pub spread_target: Option<crate::kruise::workloadspread::Target<'a>>,
    /// Another WorkloadSpread of the input that already targets the same workload.
    pub spread_claimed_by: Option<&'a str>,
    /// The caller shows patches to a person (`check`): rules fill [`Patch::summary`] and
    /// [`Patch::hint`]. The webhook only sends the operations, and the words would cost a
    /// patched review about an eighth of its instructions.
    pub describe_patches: bool,
    /// Objects as written (`check`), not as the apiserver hands them to a webhook: a Pod's
    /// `matchLabelKeys` are not yet merged into its spread selectors.
    pub as_written: bool,
    /// On a workload's UPDATE at `/mutate`: whether it changes the pod template (`None`:
    /// not known, on every other request).
    pub template_changed: Option<bool>,
    /// The labels of the request's namespace, when the caller knows them from elsewhere than
    /// the cluster cache (`check`: Namespace manifests and `--cluster`; `audit`: its listing).
    pub namespace_labels: Option<&'a std::collections::BTreeMap<String, String>>,
    /// Where the caller looked for those labels beyond the cluster cache and did not find them.
    pub labels_not_found: Option<LabelsNotFound>,
}

/// Why the labels of a request's namespace are not known where the caller looked for them
/// beyond the cluster cache: said in the note of the policies that could not judge it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelsNotFound {
    /// Not among the namespaces the caller was given (`review --namespaces`, a suite's
    /// namespaces.yaml).
    NotGiven,
    /// The server read it from the API server, which has no such namespace.
    NoSuchNamespace,
    /// The server could not read it from the API server (no answer, or refused).
    LookupFailed,
    /// The server did not try: a lookup failed a moment ago.
    LookupPaused,
}

/// One request as the rules see it. Requests for subresources never get here.
#[derive(Clone, Copy, Debug)]
pub struct Input<'a> {
    pub phase: Phase,
    pub operation: Operation,
    pub namespace: &'a str,
    /// Empty on the admission path when no rule that applies reads it ([`Rule::reads_user`]).
    pub user: User<'a>,
    /// On the admission path a Pod UPDATE's new metadata is empty when no rule that applies
    /// reads it ([`Rule::reads_metadata`]), and its tolerations, in both pods, when they are
    /// the same text in both and no rule that applies reads unchanged ones
    /// ([`Rule::reads_unchanged_tolerations`]).
    pub object: Subject<'a>,
    /// On UPDATE, the stored object (of the same kind). Rules may compare only its kind and
    /// its pod spec's scheduling fields: the admission path's single pass reads only those of a
    /// pod template ([`crate::k8s::workload::Part::SCHEDULING`]), leaving its metadata and
    /// containers empty (and its tolerations, as the new object's, when no rule that applies
    /// reads them: [`Rule::reads_tolerations`]), while the other paths (objects met before the
    /// request's kind, the reference reader) read it whole.
    pub old_object: Option<Subject<'a>>,
    pub context: Context<'a>,
}

impl<'a> Input<'a> {
    pub fn request(&self) -> Request {
        Request {
            phase: self.phase,
            operation: self.operation,
            kind: self.object.kind(),
            cluster_aware: !matches!(self.context.cluster, ClusterState::Absent),
        }
    }

    /// The new and old pod templates, when the request is about one.
    pub fn templates(&self) -> Option<(&'a PodTemplate, Option<&'a PodTemplate>)> {
        let Subject::Template(new) = self.object else {
            return None;
        };
        let old = match self.old_object {
            Some(Subject::Template(o)) => Some(o),
            _ => None,
        };
        Some((new, old))
    }
}

/// A rule's name in findings, metrics and `placement-guard.io/ignore` annotations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RuleId(&'static str);

impl RuleId {
    pub const fn new(id: &'static str) -> RuleId {
        RuleId(id)
    }

    pub const fn as_str(self) -> &'static str {
        self.0
    }
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// What SARIF's rule table, `rules --list` and the docs say about a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleMeta {
    pub id: RuleId,
    /// One line: what the rule checks.
    pub summary: &'static str,
    /// Where to read more, or what to do about a finding.
    pub help: &'static str,
    /// What it does with the built-in rule file: `deny`, `warn`, `patch`, or `off`.
    pub default_action: &'static str,
}

/// The one shape of a rule.
pub trait Rule {
    /// Its section of the rule file, with the built-in defaults as `Default`.
    type Settings: Clone + fmt::Debug + Default + PartialEq + Serialize + DeserializeOwned;
    /// The ids it reports under (one module may report under several).
    const META: &'static [RuleMeta];
    /// Whether it reads requests like this one. The server skips reading objects no rule
    /// applies to, and [`evaluate`] calls only the rules that apply.
    fn applies(settings: &Self::Settings, request: Request) -> bool;
    /// Whether, applying to such a request, it reads the pod's containers, overhead and
    /// pod-level resources (the scheduler's resource and port filters). When no rule does, the
    /// admission path skips them: a tenth of reading a pod.
    fn reads_resources(_settings: &Self::Settings, _request: Request) -> bool {
        false
    }
    /// Whether, applying to such a request, it reads the pod's tolerations. When no rule does,
    /// the admission path skips them.
    fn reads_tolerations(_settings: &Self::Settings, _request: Request) -> bool {
        false
    }
    /// Whether, reading them on such a Pod UPDATE, it reads tolerations the update left as
    /// they were. A rule that only compares the old pod's with the new pod's does not: when no
    /// rule does, the admission path passes over both where their text is the same (every pod
    /// carries the two DefaultTolerationSeconds adds, an eighth of a gated pod UPDATE's review).
    fn reads_unchanged_tolerations(settings: &Self::Settings, request: Request) -> bool {
        Self::reads_tolerations(settings, request)
    }
    /// Whether, applying to such a request, it reads who sent it (`userInfo`). When no rule
    /// does, the admission path passes it over and [`Input::user`] is empty.
    fn reads_user(_settings: &Self::Settings, _request: Request) -> bool {
        false
    }
    /// Whether, applying to such a request for a Pod UPDATE whose old and new pod specs are
    /// these, it reads the new pod's metadata (labels, annotations, owner references). When no
    /// rule does, the admission path passes it over: most pod updates change no directive a
    /// rule judges, and the metadata is a third of the new pod.
    fn reads_metadata(
        _settings: &Self::Settings,
        _request: Request,
        _old: Option<&PodSpec>,
        _new: &PodSpec,
    ) -> bool {
        true
    }
    /// Judges one request that it applies to, adding to the verdict.
    fn evaluate(settings: &Self::Settings, input: &Input, verdict: &mut Verdict);
    /// What the types of the settings cannot express; `path` is the section's.
    fn check_settings(_settings: &Self::Settings, _path: &FieldPath) -> Vec<FieldError> {
        Vec::new()
    }
}

/// Lists the rules, each as `field: Type` (the field is the rule file's section in camelCase),
/// in the order they run.
macro_rules! registry {
    ($($field:ident: $rule:ty,)*) => {
        /// The rule file's `spec`: one section per rule.
        #[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        pub struct RuleSpec {
            $(
                #[serde(default, deserialize_with = "crate::k8s::model::null_as_default")]
                pub $field: <$rule as Rule>::Settings,
            )*
        }

        /// Every rule's metadata, in registry order.
        pub const RULES: &[&[RuleMeta]] = &[$(<$rule as Rule>::META,)*];

        /// Whether any rule applies to such a request.
        pub fn applies(spec: &RuleSpec, request: Request) -> bool {
            $(<$rule as Rule>::applies(&spec.$field, request) ||)* false
        }

        /// Whether a rule that applies to such a request reads the pod's resources.
        pub fn reads_resources(spec: &RuleSpec, request: Request) -> bool {
            $((<$rule as Rule>::applies(&spec.$field, request)
                && <$rule as Rule>::reads_resources(&spec.$field, request)) ||)* false
        }

        /// Whether a rule that applies to such a request reads the pod's tolerations.
        pub fn reads_tolerations(spec: &RuleSpec, request: Request) -> bool {
            $((<$rule as Rule>::applies(&spec.$field, request)
                && <$rule as Rule>::reads_tolerations(&spec.$field, request)) ||)* false
        }

        /// Whether a rule that applies to such a Pod UPDATE reads tolerations it left as they
        /// were.
        pub fn reads_unchanged_tolerations(spec: &RuleSpec, request: Request) -> bool {
            $((<$rule as Rule>::applies(&spec.$field, request)
                && <$rule as Rule>::reads_unchanged_tolerations(&spec.$field, request)) ||)* false
        }

        /// Whether a rule that applies to such a Pod UPDATE reads the new pod's metadata.
        pub fn reads_metadata(
            spec: &RuleSpec,
            request: Request,
            old: Option<&PodSpec>,
            new: &PodSpec,
        ) -> bool {
            $((<$rule as Rule>::applies(&spec.$field, request)
                && <$rule as Rule>::reads_metadata(&spec.$field, request, old, new)) ||)* false
        }

        /// Whether a rule that applies to such a request reads who sent it.
        pub fn reads_user(spec: &RuleSpec, request: Request) -> bool {
            $((<$rule as Rule>::applies(&spec.$field, request)
                && <$rule as Rule>::reads_user(&spec.$field, request)) ||)* false
        }

        fn run(spec: &RuleSpec, input: &Input, verdict: &mut Verdict) {
            let request = input.request();
            $(
                if <$rule as Rule>::applies(&spec.$field, request) {
                    <$rule as Rule>::evaluate(&spec.$field, input, verdict);
                }
            )*
        }

        impl RuleSpec {
            /// Every rule's own checks of its settings, with paths under `spec`.
            pub fn check(&self) -> Vec<FieldError> {
                let mut out = Vec::new();
                $(
                    out.extend(<$rule as Rule>::check_settings(
                        &self.$field,
                        &FieldPath::new(&format!("spec.{}", camel(stringify!($field)))),
                    ));
                )*
                out
            }
        }
    };
}

registry! {
    mutable_directives: mutable_directives::MutableDirectivesRule,
    hard_anti_affinity: anti_affinity::HardAntiAffinityRule,
    topology_spread: spread::TopologySpreadRule,
    workload_spread: workloadspread::WorkloadSpreadRule,
    node_selection: node_selection::NodeSelectionRule,
    feasibility: feasibility::FeasibilityRule,
}

fn camel(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Every rule id with its metadata, in registry order.
pub fn all_rules() -> impl Iterator<Item = &'static RuleMeta> {
    RULES.iter().flat_map(|m| m.iter())
}

/// The single evaluation path: every rule that applies, in registry order.
pub fn evaluate(input: &Input, rules: &RuleSet) -> Verdict {
    let mut verdict = Verdict::default();
    run(&rules.spec, input, &mut verdict);
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Template requests of every phase, operation and cluster awareness, for three kinds.
    fn template_requests() -> impl Iterator<Item = (Request, Kind)> {
        [false, true].into_iter().flat_map(|cluster_aware| {
            [Phase::Validate, Phase::Mutate]
                .into_iter()
                .flat_map(move |phase| {
                    [Operation::Create, Operation::Update, Operation::Delete]
                        .into_iter()
                        .flat_map(move |operation| {
                            [Kind::Pod, Kind::Deployment, Kind::PodTemplate].map(move |kind| {
                                let request = Request {
                                    phase,
                                    operation,
                                    kind: ObjectKind::Template(kind),
                                    cluster_aware,
                                };
                                (request, kind)
                            })
                        })
                })
        })
    }

    /// Only the cluster-aware feasibility check reads containers and resources; everywhere
    /// else the admission path leaves them unread.
    #[test]
    fn only_cluster_aware_validation_reads_resources() {
        let spec = RuleSpec::default();
        for (r, kind) in template_requests() {
            let want = r.cluster_aware
                && r.phase == Phase::Validate
                && r.operation != Operation::Delete
                && kind != Kind::PodTemplate;
            assert_eq!(reads_resources(&spec, r), want, "{r:?}");
        }
    }

    /// The built-in rules and a node-selection policy for every namespace.
    fn policed() -> RuleSpec {
        let mut policed = RuleSpec::default();
        policed.node_selection.policies =
            vec![
                serde_json::from_value(serde_json::json!({"name": "all", "namespaces": ["*"]}))
                    .unwrap(),
            ];
        policed
    }

    /// Tolerations are read where the gated-pod rule compares them (pod UPDATE), where the
    /// cluster-aware feasibility check places pods, and wherever a node-selection policy
    /// applies; nowhere else. Where they are the same in both pods of an UPDATE, only the
    /// cluster-aware feasibility check, which places the pod, reads them.
    #[test]
    fn only_rules_that_compare_or_place_tolerations_read_them() {
        let spec = RuleSpec::default();
        let policed = policed();
        for (r, kind) in template_requests() {
            let gated = r.operation == Operation::Update && kind == Kind::Pod;
            let placed = r.cluster_aware
                && r.phase == Phase::Validate
                && r.operation != Operation::Delete
                && kind != Kind::PodTemplate;
            assert_eq!(reads_tolerations(&spec, r), gated || placed, "{r:?}");
            let judged = r.phase == Phase::Validate && r.operation != Operation::Delete;
            assert_eq!(
                reads_tolerations(&policed, r),
                gated || placed || judged,
                "{r:?}"
            );
            // The gated-pod rule compares them, a policy judges those an update adds:
            // unchanged, they need no reading.
            assert_eq!(reads_unchanged_tolerations(&spec, r), placed, "{r:?}");
            assert_eq!(
                reads_unchanged_tolerations(&policed, r),
                placed || (judged && r.operation != Operation::Update),
                "{r:?}"
            );
        }
    }

    /// A Pod UPDATE's new metadata is read for spread validation of changed constraints and
    /// wherever a rule that keeps the default applies (the cluster-aware feasibility check);
    /// the gated-pod rule, hard anti-affinity and node-selection policies never read it.
    #[test]
    fn only_rules_that_read_a_pods_labels_read_its_metadata() {
        let spec = RuleSpec::default();
        let policed = policed();
        let plain = PodSpec::default();
        let spread: PodSpec = serde_json::from_value(serde_json::json!({
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}]}))
        .unwrap();
        for (r, kind) in template_requests() {
            if r.operation != Operation::Update || kind != Kind::Pod {
                continue;
            }
            let validated = r.phase == Phase::Validate;
            let placed = r.cluster_aware && validated;
            assert_eq!(
                reads_metadata(&spec, r, Some(&plain), &plain),
                placed,
                "{r:?}"
            );
            assert_eq!(
                reads_metadata(&spec, r, Some(&spread), &spread),
                placed,
                "{r:?}"
            );
            assert_eq!(
                reads_metadata(&spec, r, Some(&plain), &spread),
                validated,
                "{r:?}"
            );
            assert_eq!(reads_metadata(&spec, r, None, &plain), validated, "{r:?}");
            assert_eq!(
                reads_metadata(&policed, r, Some(&plain), &plain),
                placed,
                "{r:?}"
            );
            assert_eq!(
                reads_metadata(&policed, r, Some(&plain), &spread),
                validated,
                "{r:?}"
            );
        }
    }

    /// Only the gated-pod rule reads the user, and only when it restricts who may tighten.
    #[test]
    fn only_a_restricted_mutable_directives_rule_reads_the_user() {
        let open = RuleSpec::default();
        let mut restricted = RuleSpec::default();
        restricted.mutable_directives.allowed_users = vec!["group:queue-controllers".into()];
        for (r, kind) in template_requests() {
            assert!(!reads_user(&open, r), "{r:?}");
            let want = r.operation == Operation::Update && kind == Kind::Pod;
            assert_eq!(reads_user(&restricted, r), want, "{r:?}");
        }
    }

    #[test]
    fn rule_ids_are_unique_and_documented() {
        let mut ids: Vec<&str> = all_rules().map(|m| m.id.as_str()).collect();
        assert_eq!(ids.len(), 7);
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 7, "{ids:?}");
        for m in all_rules() {
            assert!(!m.summary.is_empty() && !m.help.is_empty(), "{}", m.id);
            assert!(
                ["deny", "warn", "patch", "off"].contains(&m.default_action),
                "{}",
                m.id
            );
        }
    }

    #[test]
    fn sections_are_named_in_camel_case() {
        assert_eq!(camel("hard_anti_affinity"), "hardAntiAffinity");
        assert_eq!(camel("workload_spread"), "workloadSpread");
    }
}
