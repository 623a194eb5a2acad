//! Rules: (old object, new object, rule file) → verdict. Pure: no I/O, no async. The server, the
//! `review` command and (later) `check` all build an [`Input`] and call [`evaluate`].

pub mod anti_affinity;
pub mod mutable_directives;
pub mod semantic;
pub mod spread;

use std::fmt;

use crate::config::{Action, RuleSet};
use crate::fieldpath::FieldError;
use crate::workload::{Kind, PodTemplate};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
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

/// One request as the rules see it. Requests for subresources never get here.
#[derive(Clone, Copy, Debug)]
pub struct Input<'a> {
    pub phase: Phase,
    pub operation: Operation,
    pub namespace: &'a str,
    pub user: User<'a>,
    pub object: Option<&'a PodTemplate>,
    pub old_object: Option<&'a PodTemplate>,
    /// An OpenKruise WorkloadSpread under review (it has no pod template).
    pub spread: Option<&'a serde_json::Value>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RuleId {
    MutableDirectives,
    HardAntiAffinity,
    TopologySpread,
    TopologySpreadDefaults,
    WorkloadSpread,
}

impl RuleId {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleId::MutableDirectives => "mutable-directives",
            RuleId::HardAntiAffinity => "hard-anti-affinity",
            RuleId::TopologySpread => "topology-spread",
            RuleId::TopologySpreadDefaults => "topology-spread-defaults",
            RuleId::WorkloadSpread => "workloadspread",
        }
    }
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One violation, with the action its rule is configured with.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    pub rule: RuleId,
    pub action: Action,
    pub error: FieldError,
    /// How to fix it, when there is more to say than the error.
    pub hint: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Verdict {
    pub findings: Vec<Finding>,
    /// The rules that looked at the request (for logs and metrics).
    pub rules_run: Vec<RuleId>,
    /// JSONPatch operations of mutation rules.
    pub patch: Vec<json_patch::PatchOperation>,
    /// The constraints defaulting adds, with where (for `check` and tests).
    pub defaulted: Option<(
        crate::fieldpath::FieldPath,
        Vec<k8s_openapi::api::core::v1::TopologySpreadConstraint>,
    )>,
    /// Warnings that are not about one field (e.g. why defaulting skipped an object).
    pub notes: Vec<String>,
}

impl Verdict {
    pub fn allowed(&self) -> bool {
        !self.findings.iter().any(|f| f.action == Action::Deny)
    }

    pub fn denials(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.action == Action::Deny)
    }

    /// Whether [`Verdict::warnings`] would return anything, without formatting them.
    pub fn has_warnings(&self) -> bool {
        !self.notes.is_empty()
            || self
                .findings
                .iter()
                .any(|f| f.action == Action::Warn || f.hint.is_some())
    }

    /// Warnings for the AdmissionResponse: warn-action findings, then every hint.
    pub fn warnings(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .findings
            .iter()
            .filter(|f| f.action == Action::Warn)
            .map(|f| format!("{}: {}", f.rule, f.error))
            .collect();
        out.extend(
            self.findings
                .iter()
                .filter_map(|f| f.hint.as_ref().map(|h| format!("{}: {}", f.rule, h))),
        );
        out.extend(self.notes.iter().cloned());
        out
    }

    /// The denial message in Kubernetes' aggregate style: one error alone, several as `[a, b]`.
    pub fn denial_message(&self) -> Option<String> {
        let errs: Vec<String> = self.denials().map(|f| f.error.to_string()).collect();
        match errs.len() {
            0 => None,
            1 => Some(errs.into_iter().next().unwrap_or_default()),
            _ => Some(format!("[{}]", errs.join(", "))),
        }
    }
}

/// Whether any enabled rule can care about this kind of request; the server answers the rest
/// at once, without reading the objects.
pub fn is_relevant(kind: Kind, operation: Operation, phase: Phase, rules: &RuleSet) -> bool {
    let s = &rules.spec;
    let write = matches!(operation, Operation::Create | Operation::Update);
    match phase {
        Phase::Validate => {
            (s.mutable_directives.enabled && kind == Kind::Pod && operation == Operation::Update)
                || (s.hard_anti_affinity.enabled && write)
                || (s.topology_spread.validate.enabled && write)
        }
        Phase::Mutate => {
            (s.mutable_directives.enabled && kind == Kind::Pod && operation == Operation::Update)
                || (s.topology_spread.defaults.enabled
                    && kind != Kind::DaemonSet
                    && (operation == Operation::Create || (write && kind != Kind::Pod)))
        }
    }
}

/// The single evaluation path.
pub fn evaluate(input: &Input, rules: &RuleSet) -> Verdict {
    match input.phase {
        Phase::Validate => validate(input, rules),
        Phase::Mutate => mutate(input, rules),
    }
}

/// Warnings carry at most this much text in total; the apiserver drops warnings beyond 4096.
const WARNING_BUDGET: usize = 4000;

/// On Pod UPDATE, /mutate explains what validation is about to refuse: kube-apiserver rejects a
/// loosening update before any validating webhook runs, but warnings from a mutating webhook
/// still reach the client. Never denies, never patches.
fn explain_update(input: &Input, rules: &RuleSet, verdict: &mut Verdict) {
    let md = &rules.spec.mutable_directives;
    let (Some(new), Some(old)) = (input.object, input.old_object) else {
        return;
    };
    if !md.enabled || new.kind != Kind::Pod {
        return;
    }
    verdict.rules_run.push(RuleId::MutableDirectives);
    let lines: Vec<String> = mutable_directives::check(&old.spec, &new.spec, &input.user, md)
        .into_iter()
        .flat_map(|p| p.explain)
        .map(|l| format!("placement-guard: {l}"))
        .collect();
    let mut used = 0;
    for (i, line) in lines.iter().enumerate() {
        if used + line.len() > WARNING_BUDGET {
            verdict.notes.push(format!(
                "placement-guard: {} more refused change(s) not shown",
                lines.len() - i
            ));
            break;
        }
        used += line.len();
        verdict.notes.push(line.clone());
    }
}

fn mutate(input: &Input, rules: &RuleSet) -> Verdict {
    let mut verdict = Verdict::default();
    let d = &rules.spec.topology_spread.defaults;
    let Some(object) = input.object else {
        return verdict;
    };
    if object.kind == Kind::Pod && input.operation == Operation::Update {
        explain_update(input, rules, &mut verdict);
        return verdict;
    }
    let applies = match object.kind {
        Kind::Pod => input.operation == Operation::Create,
        _ => matches!(input.operation, Operation::Create | Operation::Update),
    };
    if !d.enabled || !applies {
        return verdict;
    }
    verdict.rules_run.push(RuleId::TopologySpreadDefaults);
    match spread::defaults(object, input.namespace, d) {
        spread::Defaulting::NotApplicable => {}
        spread::Defaulting::Skipped(why) => verdict
            .notes
            .push(format!("{}: {why}", RuleId::TopologySpreadDefaults)),
        spread::Defaulting::Add { path, constraints } => {
            let value = serde_json::to_value(&constraints).unwrap_or(serde_json::Value::Null);
            if let Ok(ptr) = json_patch::jsonptr::PointerBuf::parse(path.json_pointer()) {
                verdict
                    .patch
                    .push(json_patch::PatchOperation::Add(json_patch::AddOperation {
                        path: ptr,
                        value,
                    }));
            }
            verdict.defaulted = Some((path, constraints));
        }
    }
    verdict
}

fn validate(input: &Input, rules: &RuleSet) -> Verdict {
    let mut verdict = Verdict::default();
    let wsr = &rules.spec.workload_spread;
    if let (true, Some(ws)) = (wsr.enabled, input.spread) {
        if matches!(input.operation, Operation::Create | Operation::Update) {
            verdict.rules_run.push(RuleId::WorkloadSpread);
            for p in crate::workloadspread::validate(ws) {
                let action = match p.level {
                    crate::workloadspread::Level::Error => wsr.action,
                    crate::workloadspread::Level::Warning => Action::Warn,
                };
                verdict.findings.push(Finding {
                    rule: RuleId::WorkloadSpread,
                    action,
                    error: p.error,
                    hint: None,
                });
            }
        }
        return verdict;
    }
    let md = &rules.spec.mutable_directives;
    if md.enabled && input.operation == Operation::Update {
        if let (Some(new), Some(old)) = (input.object, input.old_object) {
            if new.kind == Kind::Pod && old.kind == Kind::Pod {
                verdict.rules_run.push(RuleId::MutableDirectives);
                for p in mutable_directives::check(&old.spec, &new.spec, &input.user, md) {
                    verdict.findings.push(Finding {
                        rule: RuleId::MutableDirectives,
                        action: md.action,
                        error: p.error,
                        hint: p.hint,
                    });
                }
            }
        }
    }
    let haa = &rules.spec.hard_anti_affinity;
    if haa.enabled
        && matches!(input.operation, Operation::Create | Operation::Update)
        && !haa.exempt_namespaces.iter().any(|n| n == input.namespace)
    {
        if let Some(object) = input.object {
            verdict.rules_run.push(RuleId::HardAntiAffinity);
            for f in anti_affinity::check(object, input.old_object, input.namespace, haa) {
                verdict.findings.push(Finding {
                    rule: RuleId::HardAntiAffinity,
                    action: f.action,
                    error: f.error,
                    hint: Some(f.hint),
                });
            }
        }
    }
    let ts = &rules.spec.topology_spread.validate;
    if ts.enabled && matches!(input.operation, Operation::Create | Operation::Update) {
        if let Some(object) = input.object {
            let unchanged = input
                .old_object
                .is_some_and(|o| o.spec.spread_constraints() == object.spec.spread_constraints());
            if !unchanged {
                verdict.rules_run.push(RuleId::TopologySpread);
                let path = object.spec_path().child("topologySpreadConstraints");
                let merged = object.kind == Kind::Pod;
                for e in
                    spread::validate_constraints(object.spec.spread_constraints(), &path, merged)
                {
                    verdict.findings.push(Finding {
                        rule: RuleId::TopologySpread,
                        action: ts.action,
                        error: e,
                        hint: None,
                    });
                }
                for e in spread::warnings(object) {
                    verdict.findings.push(Finding {
                        rule: RuleId::TopologySpread,
                        action: Action::Warn,
                        error: e,
                        hint: None,
                    });
                }
            }
        }
    }
    verdict
}
