//! `workloadspread`: OpenKruise WorkloadSpreads as Kruise's webhook validates them, and, where
//! the input holds the target workload, cross-checked against it through the placement core.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{
    Action, Finding, Input, ObjectKind, Phase, Request, Rule, RuleId, RuleMeta, Subject, Verdict,
};
use crate::k8s::fieldpath::{FieldError, FieldPath};
use crate::kruise::workloadspread::{self as ws, Level};

pub const ID: RuleId = RuleId::new("workloadspread");

/// The rule file's `workloadSpread` section. Off by default on the server: register
/// `workloadspreads` with the webhook when you turn it on (`check` always validates them).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct WorkloadSpreadSettings {
    pub enabled: bool,
    pub action: Action,
}

impl Default for WorkloadSpreadSettings {
    fn default() -> Self {
        WorkloadSpreadSettings {
            enabled: false,
            action: Action::Deny,
        }
    }
}

pub struct WorkloadSpreadRule;

impl Rule for WorkloadSpreadRule {
    type Settings = WorkloadSpreadSettings;
    const META: &'static [RuleMeta] = &[RuleMeta {
        id: ID,
        summary: "OpenKruise WorkloadSpreads as Kruise validates them, cross-checked against their workload",
        help: "fix the subset at the path shown; `placement-guard explain --workloadspread` shows how replicas are distributed",
        default_action: "off",
    }];

    /// CREATE and UPDATE of WorkloadSpreads, on `/validate`.
    fn applies(s: &WorkloadSpreadSettings, r: Request) -> bool {
        s.enabled
            && r.phase == Phase::Validate
            && r.operation.writes()
            && r.kind == ObjectKind::WorkloadSpread
    }

    fn evaluate(s: &WorkloadSpreadSettings, input: &Input, verdict: &mut Verdict) {
        let Subject::WorkloadSpread(spread) = input.object else {
            return;
        };
        verdict.rules_run.push(ID);
        let mut problems = ws::validate(spread);
        // As Kruise: the target's group, kind and name are fixed once created; its version
        // may change.
        if let Some(Subject::WorkloadSpread(old)) = input.old_object {
            let key = |w: &ws::WorkloadSpread| {
                w.target_ref.as_ref().map(|t| {
                    (
                        ws::parse_group(&t.api_version).unwrap_or("").to_string(),
                        t.kind.clone(),
                        t.name.clone(),
                    )
                })
            };
            if let (Some(new_ref), Some(old_ref)) = (key(spread), key(old)) {
                if new_ref != old_ref {
                    problems.push(ws::Problem {
                        level: Level::Error,
                        error: FieldError::invalid(
                            FieldPath::new("spec.targetRef"),
                            json!(spread.target_ref.as_ref().map(|t| json!({"apiVersion": t.api_version, "kind": t.kind, "name": t.name}))),
                            format!(
                                "change TargetReference is not permitted for WorkloadSpread: it targets {}.{} {}; only the version may change",
                                old_ref.1, old_ref.0, old_ref.2
                            ),
                        ),
                    });
                }
            }
        }
        if let Some(first) = input.context.spread_claimed_by {
            let mut e = FieldError::duplicate(
                FieldPath::new("spec.targetRef"),
                match spread.target() {
                    Some((g, k, n)) => json!(format!("{k}.{g} {n}")),
                    None => json!(null),
                },
            );
            e.detail = format!("{first} already targets this workload");
            problems.push(ws::Problem {
                level: Level::Error,
                error: e,
            });
        }
        if let Some(target) = &input.context.spread_target {
            problems.extend(ws::cross_check(spread, target));
        }
        verdict
            .findings
            .extend(problems.into_iter().map(|p| Finding {
                rule: ID,
                action: match p.level {
                    Level::Error => s.action,
                    Level::Warning => Action::Warn,
                },
                error: p.error,
                hint: None,
            }));
    }
}
