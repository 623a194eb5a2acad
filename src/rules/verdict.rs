//! What rules return, in types common to every rule: findings about fields, notes, and patches.
//! `deny` vs `warn` is carried on each finding; the adapters turn a verdict into an
//! AdmissionResponse, diagnostics or metrics without knowing which rule said what.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::RuleId;
use crate::k8s::fieldpath::{FieldError, FieldPath};

/// deny | warn
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Deny,
    Warn,
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

/// Who speaks in a note's warning line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Voice {
    /// `<rule id>: ...`
    Rule,
    /// `placement-guard: ...`, for explanations of what another component (the apiserver) is
    /// about to refuse.
    Tool,
}

/// Something a user should hear that is not a violation of the rule itself: why a rule left an
/// object alone, or what kube-apiserver will refuse.
#[derive(Clone, Debug, PartialEq)]
pub struct Note {
    pub rule: RuleId,
    pub voice: Voice,
    /// The field it is about.
    pub path: FieldPath,
    pub message: String,
}

impl Note {
    /// The note as one AdmissionResponse warning.
    pub fn warning(&self) -> String {
        self.as_warning().to_string()
    }

    /// [`Note::warning`], formatted where it is written.
    pub fn as_warning(&self) -> impl fmt::Display + '_ {
        struct Warning<'a>(&'a Note);
        impl fmt::Display for Warning<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.0.voice {
                    Voice::Rule => write!(f, "{}: {}", self.0.rule, self.0.message),
                    Voice::Tool => write!(f, "placement-guard: {}", self.0.message),
                }
            }
        }
        Warning(self)
    }
}

/// A change a mutation rule makes: the JSONPatch operations, and the same change in words for
/// `check`, which reports what the webhook would do instead of doing it.
#[derive(Clone, Debug, PartialEq)]
pub struct Patch {
    pub rule: RuleId,
    pub path: FieldPath,
    pub ops: Vec<AddOp>,
    /// Empty, as is `hint`, unless the caller asked for words ([`super::Context::describe_patches`]).
    pub summary: String,
    pub hint: Option<String>,
}

/// An RFC 6902 `add` (the only operation our rules make), its value kept as the JSON text the
/// response carries: written once, not built as a `serde_json::Value` and serialized again
/// (that cost a patched review about a sixth of its instructions). [`crate::k8s::json_text`]
/// writes the API values as serde_json writes k8s-openapi's types, keys sorted as a `Value`
/// wrote them, so the patch bytes are those earlier versions sent.
#[derive(Clone, Debug, PartialEq)]
pub struct AddOp {
    pub path: FieldPath,
    /// JSON text.
    pub value: String,
}

impl AddOp {
    /// `value` written by `write`, which must write one JSON value (the writers of
    /// [`crate::k8s::json_text`] do, byte for byte as serde_json would).
    pub(crate) fn written(path: FieldPath, write: impl FnOnce(&mut String)) -> AddOp {
        let mut value = String::with_capacity(512);
        write(&mut value);
        AddOp { path, value }
    }

    /// The operation as json-patch applies and serializes it.
    pub fn to_operation(&self) -> serde_json::Result<json_patch::PatchOperation> {
        Ok(json_patch::PatchOperation::Add(json_patch::AddOperation {
            path: self.path.json_pointer(),
            value: serde_json::from_str(&self.value)?,
        }))
    }
}

/// How one rule decided one request, for per-rule metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Allowed,
    Warned,
    Patched,
    Denied,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Allowed => "allowed",
            Outcome::Warned => "warned",
            Outcome::Patched => "patched",
            Outcome::Denied => "denied",
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Verdict {
    pub findings: Vec<Finding>,
    pub notes: Vec<Note>,
    pub patches: Vec<Patch>,
    /// The rules that looked at the request (for logs and metrics).
    pub rules_run: Vec<RuleId>,
    /// Checks a rule skipped because what it needs was not to be had (a cache not synced), with
    /// why: counted in metrics; such a rule never denies.
    pub unchecked: Vec<(RuleId, &'static str)>,
}

impl Verdict {
    pub fn allowed(&self) -> bool {
        !self.findings.iter().any(|f| f.action == Action::Deny)
    }

    pub fn denials(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.action == Action::Deny)
    }

    /// Every patch operation, in the order the rules made them, as json-patch applies them.
    pub fn patch_ops(&self) -> serde_json::Result<Vec<json_patch::PatchOperation>> {
        self.patches
            .iter()
            .flat_map(|p| &p.ops)
            .map(AddOp::to_operation)
            .collect()
    }

    /// Whether [`Verdict::warnings`] would return anything, without formatting them.
    pub fn has_warnings(&self) -> bool {
        !self.notes.is_empty()
            || self
                .findings
                .iter()
                .any(|f| f.action == Action::Warn || f.hint.is_some())
    }

    /// Warnings for the AdmissionResponse: warn-action findings, then every hint, then notes.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.each_warning(|w| out.push(w.to_string()));
        out
    }

    /// [`Verdict::warnings`] one at a time, each formatted where it is written.
    pub fn each_warning(&self, mut f: impl FnMut(fmt::Arguments<'_>)) {
        for w in self.findings.iter().filter(|w| w.action == Action::Warn) {
            f(format_args!("{}: {}", w.rule, w.error));
        }
        for w in &self.findings {
            if let Some(h) = &w.hint {
                f(format_args!("{}: {}", w.rule, h));
            }
        }
        for n in &self.notes {
            f(format_args!("{}", n.as_warning()));
        }
    }

    /// The denial message in Kubernetes' aggregate style: one error alone, several as `[a, b]`.
    pub fn denial_message(&self) -> Option<String> {
        let mut s = String::new();
        self.write_denial_message(&mut s).ok()?.then_some(s)
    }

    /// [`Verdict::denial_message`] written into `w`; false (nothing written) when nothing is
    /// denied.
    pub fn write_denial_message<W: fmt::Write + ?Sized>(
        &self,
        w: &mut W,
    ) -> Result<bool, fmt::Error> {
        let n = self.denials().count();
        if n == 0 {
            return Ok(false);
        }
        if n > 1 {
            w.write_char('[')?;
        }
        for (i, f) in self.denials().enumerate() {
            if i > 0 {
                w.write_str(", ")?;
            }
            write!(w, "{}", f.error)?;
        }
        if n > 1 {
            w.write_char(']')?;
        }
        Ok(true)
    }

    /// The whole request's outcome: a denial outweighs a patch, a patch a warning.
    pub fn outcome(&self) -> Outcome {
        if !self.allowed() {
            Outcome::Denied
        } else if !self.patches.is_empty() {
            Outcome::Patched
        } else if self.has_warnings() {
            Outcome::Warned
        } else {
            Outcome::Allowed
        }
    }

    /// What one rule decided, from what it returned alone.
    pub fn outcome_of(&self, rule: RuleId) -> Outcome {
        let findings = || self.findings.iter().filter(|f| f.rule == rule);
        if findings().any(|f| f.action == Action::Deny) {
            Outcome::Denied
        } else if self.patches.iter().any(|p| p.rule == rule) {
            Outcome::Patched
        } else if findings().next().is_some() || self.notes.iter().any(|n| n.rule == rule) {
            Outcome::Warned
        } else {
            Outcome::Allowed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{anti_affinity, mutable_directives, spread, workloadspread};

    fn finding(rule: RuleId, action: Action) -> Finding {
        Finding {
            rule,
            action,
            error: FieldError::forbidden(FieldPath::new("spec"), "no"),
            hint: None,
        }
    }

    #[test]
    fn each_rule_is_judged_by_what_it_returned() {
        let v = Verdict {
            findings: vec![
                finding(anti_affinity::ID, Action::Deny),
                finding(spread::VALIDATE_ID, Action::Warn),
            ],
            notes: vec![Note {
                rule: mutable_directives::ID,
                voice: Voice::Tool,
                path: FieldPath::new("spec"),
                message: "m".into(),
            }],
            patches: vec![Patch {
                rule: spread::DEFAULTS_ID,
                path: FieldPath::new("spec"),
                ops: Vec::new(),
                summary: String::new(),
                hint: None,
            }],
            rules_run: Vec::new(),
            unchecked: Vec::new(),
        };
        assert_eq!(v.outcome(), Outcome::Denied);
        let cases = [
            (anti_affinity::ID, Outcome::Denied),
            (spread::VALIDATE_ID, Outcome::Warned),
            (mutable_directives::ID, Outcome::Warned),
            (spread::DEFAULTS_ID, Outcome::Patched),
            (workloadspread::ID, Outcome::Allowed),
        ];
        for (rule, want) in cases {
            assert_eq!(v.outcome_of(rule), want, "{rule}");
        }
        assert_eq!(
            v.warnings(),
            ["topology-spread: spec: Forbidden: no", "placement-guard: m"]
        );
    }
}
