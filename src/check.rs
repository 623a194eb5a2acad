//! `check`: manifests in, diagnostics out. Each object is treated as a CREATE and goes through the
//! same [`rules::evaluate`] as `/validate` and `/mutate`.

use serde::Serialize;
use serde_json::Value;

use crate::config::{Action, RuleSet};
use crate::fieldpath::FieldPath;
use crate::manifest::{self, Object, Pos};
use crate::rules::{self, Input, Operation, Phase, RuleId, User};
use crate::workload::{self, Kind};

pub const IGNORE_ANNOTATION: &str = "placement-guard.io/ignore";
pub const IGNORE_REASON_ANNOTATION: &str = "placement-guard.io/ignore-reason";
/// Findings about input that could not be read as YAML or as an object.
pub const RULE_YAML: &str = "yaml-syntax";
pub const RULE_INVALID: &str = "invalid-object";
pub const RULE_WORKLOADSPREAD: &str = "workloadspread";

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Diagnostic {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub rule: String,
    pub severity: Severity,
    /// `Deployment demo/web`, empty for file-level problems.
    pub object: String,
    /// Kubernetes-style field path, empty for file-level problems.
    pub path: String,
    /// What is wrong, in Kubernetes' words (`Forbidden: ...`).
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Suppressed {
    pub file: String,
    pub line: usize,
    pub object: String,
    pub rule: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The outcome of a whole run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    pub files: usize,
    /// Objects a rule looked at (Pods and workloads with a pod template).
    pub objects: usize,
    /// Other objects (ConfigMaps, Services, CRDs, ...).
    pub skipped: usize,
    pub diagnostics: Vec<Diagnostic>,
    pub suppressed: Vec<Suppressed>,
    /// Every checked object as (file, object), clean ones included (JUnit lists them all).
    #[serde(skip)]
    pub checked: Vec<(String, String)>,
    /// WorkloadSpreads, judged by [`finish`] once every file is read (their targets may be in
    /// other files).
    #[serde(skip)]
    spreads: Vec<(String, Object)>,
    #[serde(skip)]
    workloads: Vec<Workload>,
}

/// A workload a WorkloadSpread may target: (group, kind, namespace, name), pod spec, replicas.
#[derive(Clone, Debug, PartialEq)]
struct Workload {
    id: (String, String, String, String),
    spec: crate::model::PodSpec,
    replicas: Option<i64>,
}

fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

fn workload_id(v: &Value) -> (String, String, String, String) {
    let s = |x: &Value| x.as_str().unwrap_or("").to_string();
    (
        group_of(v["apiVersion"].as_str().unwrap_or("")).to_string(),
        s(&v["kind"]),
        s(&v["metadata"]["namespace"]),
        s(&v["metadata"]["name"]),
    )
}

/// Registers the workloads of a cluster dump (`--cluster`) as WorkloadSpread targets; they are
/// not checked themselves.
pub fn add_targets(text: &str, report: &mut Report) -> Result<usize, String> {
    let objects = manifest::parse(text).map_err(|e| e.to_string())?;
    let before = report.workloads.len();
    for o in objects {
        let v = &o.value;
        let (api, kind) = (
            v["apiVersion"].as_str().unwrap_or(""),
            v["kind"].as_str().unwrap_or(""),
        );
        let spec = if group_of(api) == crate::workloadspread::GROUP
            && (kind == "CloneSet" || kind == "StatefulSet")
        {
            serde_json::from_value(v["spec"]["template"]["spec"].clone()).ok()
        } else {
            Kind::from_api_version(api, kind)
                .filter(|k| *k != Kind::Pod)
                .and_then(|k| workload::parse_value(k, v).ok())
                .map(|t| t.spec)
        };
        if let Some(spec) = spec {
            report.workloads.push(Workload {
                id: workload_id(v),
                spec,
                replicas: v["spec"]["replicas"].as_i64(),
            });
        }
    }
    Ok(report.workloads.len() - before)
}

/// Judges the WorkloadSpreads collected by [`check_text`]: validation, duplicates, and the
/// cross-checks against targets found anywhere in the input.
pub fn finish(report: &mut Report) {
    use crate::workloadspread::{self as ws, Level, Target};
    let spreads = std::mem::take(&mut report.spreads);
    let mut claimed: Vec<((String, String, String, String), String)> = Vec::new();
    for (file, obj) in &spreads {
        let v = &obj.value;
        let ns = v["metadata"]["namespace"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let object = format!(
            "WorkloadSpread {}",
            if ns.is_empty() {
                name_of(v)
            } else {
                format!("{ns}/{}", name_of(v))
            }
        );
        let (ignored, reason) = ignored_rules(v);
        let mut problems = ws::validate(v);
        if let Some((g, k, n)) = ws::target(v) {
            let id = (g, k, ns.clone(), n);
            if let Some((_, first)) = claimed.iter().find(|(t, _)| *t == id) {
                problems.push(ws::Problem {
                    level: Level::Error,
                    error: crate::fieldpath::FieldError::duplicate(
                        FieldPath::new("spec.targetRef"),
                        serde_json::json!(format!("{}.{} {}", id.1, id.0, id.3)),
                    ),
                });
                if let Some(p) = problems.last_mut() {
                    p.error.detail = format!("{first} already targets this workload");
                }
            } else {
                claimed.push((id.clone(), object.clone()));
            }
            if let Some(w) = report.workloads.iter().find(|w| w.id == id) {
                problems.extend(ws::cross_check(
                    v,
                    &Target {
                        spec: &w.spec,
                        replicas: w.replicas,
                    },
                ));
            }
        }
        for p in problems {
            let pos = obj.position(&p.error.path);
            let d = Diagnostic {
                file: file.clone(),
                line: pos.line,
                column: pos.column,
                rule: RULE_WORKLOADSPREAD.to_string(),
                severity: if p.level == Level::Error {
                    Severity::Error
                } else {
                    Severity::Warning
                },
                object: object.clone(),
                path: p.error.path.to_string(),
                message: p.error.body(),
                hint: None,
            };
            report.record(d, &ignored, &reason);
        }
    }
}

fn name_of(v: &Value) -> String {
    v["metadata"]["name"]
        .as_str()
        .unwrap_or("<unnamed>")
        .to_string()
}

impl Report {
    pub fn count(&self, s: Severity) -> usize {
        self.diagnostics.iter().filter(|d| d.severity == s).count()
    }

    /// Diagnostics sorted by file, position and rule, for stable output.
    pub fn sort(&mut self) {
        self.diagnostics.sort_by(|a, b| {
            (&a.file, a.line, a.column, &a.rule, &a.path)
                .cmp(&(&b.file, b.line, b.column, &b.rule, &b.path))
        });
    }

    /// Keeps a diagnostic, or counts it as suppressed when its object opts out of its rule.
    fn record(&mut self, d: Diagnostic, ignored: &[String], reason: &Option<String>) {
        if ignored.contains(&d.rule) {
            self.suppressed.push(Suppressed {
                file: d.file,
                line: d.line,
                object: d.object,
                rule: d.rule,
                reason: reason.clone(),
            });
        } else {
            self.diagnostics.push(d);
        }
    }

    /// Adds a file that could not be read at all.
    pub fn unreadable(&mut self, file: &str, message: String) {
        self.files += 1;
        self.diagnostics.push(Diagnostic {
            file: file.to_string(),
            line: 1,
            column: 1,
            rule: "unreadable".to_string(),
            severity: Severity::Error,
            object: String::new(),
            path: String::new(),
            message,
            hint: None,
        });
    }
}

fn describe(kind: Kind, value: &Value) -> String {
    let meta = &value["metadata"];
    let name = meta["name"]
        .as_str()
        .or(meta["generateName"].as_str())
        .unwrap_or("<unnamed>");
    match meta["namespace"].as_str() {
        Some(ns) if !ns.is_empty() => format!("{} {ns}/{name}", kind.name()),
        _ => format!("{} {name}", kind.name()),
    }
}

fn ignored_rules(value: &Value) -> (Vec<String>, Option<String>) {
    let ann = &value["metadata"]["annotations"];
    let rules = ann[IGNORE_ANNOTATION]
        .as_str()
        .map(|s| {
            s.split(',')
                .map(|r| r.trim().to_string())
                .filter(|r| !r.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let reason = ann[IGNORE_REASON_ANNOTATION].as_str().map(str::to_string);
    (rules, reason)
}

fn describe_constraints(cs: &[k8s_openapi::api::core::v1::TopologySpreadConstraint]) -> String {
    cs.iter()
        .map(|c| {
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
            format!(
                "maxSkew {} on {} ({}, selecting {sel}{keys})",
                c.max_skew, c.topology_key, c.when_unsatisfiable
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Checks one file's text, adding to `report`.
pub fn check_text(file: &str, text: &str, rules: &RuleSet, report: &mut Report) {
    report.files += 1;
    let objects = match manifest::parse(text) {
        Ok(o) => o,
        Err(e) => {
            report.diagnostics.push(Diagnostic {
                file: file.to_string(),
                line: e.pos_line,
                column: e.pos_col,
                rule: RULE_YAML.to_string(),
                severity: Severity::Error,
                object: String::new(),
                path: String::new(),
                message: format!("not valid YAML: {}", e.message),
                hint: None,
            });
            return;
        }
    };
    for obj in &objects {
        check_object(file, obj, rules, report);
    }
}

fn check_object(file: &str, obj: &Object, rules: &RuleSet, report: &mut Report) {
    let v = &obj.value;
    let kind = match (v["apiVersion"].as_str(), v["kind"].as_str()) {
        (Some(api), Some(kind)) => Kind::from_api_version(api, kind),
        _ => None,
    };
    let (api, kind_name) = (
        v["apiVersion"].as_str().unwrap_or(""),
        v["kind"].as_str().unwrap_or(""),
    );
    if group_of(api) == crate::workloadspread::GROUP {
        match kind_name {
            "WorkloadSpread" => {
                report.objects += 1;
                report
                    .checked
                    .push((file.to_string(), format!("WorkloadSpread {}", name_of(v))));
                report.spreads.push((file.to_string(), obj.clone()));
                return;
            }
            // Kruise workloads keep their template where apps/v1 ones do.
            "CloneSet" | "StatefulSet" => {
                if let Ok(spec) = serde_json::from_value(v["spec"]["template"]["spec"].clone()) {
                    report.workloads.push(Workload {
                        id: workload_id(v),
                        spec,
                        replicas: v["spec"]["replicas"].as_i64(),
                    });
                }
            }
            _ => {}
        }
    }
    let Some(kind) = kind else {
        report.skipped += 1;
        return;
    };
    report.objects += 1;
    let object = describe(kind, v);
    report.checked.push((file.to_string(), object.clone()));
    let diag = |pos: Pos, rule: &str, severity, path: String, message: String, hint| Diagnostic {
        file: file.to_string(),
        line: pos.line,
        column: pos.column,
        rule: rule.to_string(),
        severity,
        object: object.clone(),
        path,
        message,
        hint,
    };
    let template = match workload::parse_value(kind, v) {
        Ok(t) => t,
        Err(e) => {
            let fp = FieldPath::new(&e.path);
            report.diagnostics.push(diag(
                obj.position(&fp),
                RULE_INVALID,
                Severity::Error,
                e.path.clone(),
                format!("cannot read {}: {}", e.kind, e.message),
                None,
            ));
            return;
        }
    };
    if kind != Kind::Pod {
        report.workloads.push(Workload {
            id: workload_id(v),
            spec: template.spec.clone(),
            replicas: v["spec"]["replicas"].as_i64(),
        });
    }
    let (ignored, reason) = ignored_rules(v);
    let namespace = template.meta.namespace.clone().unwrap_or_default();
    let input = Input {
        phase: Phase::Validate,
        operation: Operation::Create,
        namespace: &namespace,
        user: User::default(),
        object: Some(&template),
        old_object: None,
        spread: None,
    };
    let mut found: Vec<Diagnostic> = Vec::new();
    let verdict = rules::evaluate(&input, rules);
    for f in &verdict.findings {
        let severity = if f.action == Action::Deny {
            Severity::Error
        } else {
            Severity::Warning
        };
        found.push(diag(
            obj.position(&f.error.path),
            f.rule.as_str(),
            severity,
            f.error.path.to_string(),
            f.error.body(),
            f.hint.clone(),
        ));
    }
    let mutated = rules::evaluate(
        &Input {
            phase: Phase::Mutate,
            ..input
        },
        rules,
    );
    if let Some((path, constraints)) = &mutated.defaulted {
        found.push(diag(
            obj.position(path),
            RuleId::TopologySpreadDefaults.as_str(),
            Severity::Warning,
            path.to_string(),
            format!(
                "no topology spread constraints; the webhook would add: {}",
                describe_constraints(constraints)
            ),
            Some(format!(
                "set topologySpreadConstraints yourself, or annotate the object with {}: \"skip\"",
                rules::spread::SKIP_ANNOTATION
            )),
        ));
    }
    for note in &mutated.notes {
        let path = template.spec_path();
        let message = note
            .strip_prefix(&format!("{}: ", RuleId::TopologySpreadDefaults))
            .unwrap_or(note)
            .to_string();
        found.push(diag(
            obj.position(&path),
            RuleId::TopologySpreadDefaults.as_str(),
            Severity::Warning,
            path.to_string(),
            message,
            None,
        ));
    }
    for d in found {
        report.record(d, &ignored, &reason);
    }
}

#[cfg(test)]
mod tests;
