//! The rule file: plain data, built in one place, strict about what it accepts.

use k8s_openapi::api::core::v1::TopologySpreadConstraint;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde::{Deserialize, Serialize};

use crate::fieldpath::FieldPath;

pub const API_VERSION: &str = "placement-guard.io/v1alpha1";
pub const KIND: &str = "RuleSet";

/// The built-in rule file, printed by `placement-guard rules --print-defaults`. A test keeps it
/// equal to `RuleSet::default()`.
pub const DEFAULT_RULES_YAML: &str = include_str!("default-rules.yaml");

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RuleSet {
    pub api_version: String,
    pub kind: String,
    #[serde(default)]
    pub spec: RuleSpec,
}

impl Default for RuleSet {
    fn default() -> Self {
        RuleSet {
            api_version: API_VERSION.to_string(),
            kind: KIND.to_string(),
            spec: RuleSpec::default(),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RuleSpec {
    #[serde(default)]
    pub mutable_directives: MutableDirectives,
    #[serde(default)]
    pub hard_anti_affinity: HardAntiAffinity,
    #[serde(default)]
    pub topology_spread: TopologySpread,
    #[serde(default)]
    pub workload_spread: WorkloadSpreadRule,
}

/// OpenKruise WorkloadSpreads on `/validate` (`check` always validates them). Off by default:
/// register `workloadspreads` with the webhook when you turn it on.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WorkloadSpreadRule {
    #[serde(default)]
    pub enabled: bool,
    #[serde(default = "deny")]
    pub action: Action,
}

impl Default for WorkloadSpreadRule {
    fn default() -> Self {
        WorkloadSpreadRule {
            enabled: false,
            action: Action::Deny,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TopologySpread {
    #[serde(default)]
    pub validate: SpreadValidate,
    #[serde(default)]
    pub defaults: SpreadDefaults,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SpreadValidate {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default = "deny")]
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
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SpreadDefaults {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default = "system_default_constraints")]
    pub constraints: Vec<DefaultConstraint>,
    #[serde(default = "selector_label_keys")]
    pub selector_label_keys: Vec<String>,
    #[serde(default = "kube_system")]
    pub exempt_namespaces: Vec<String>,
}

impl Default for SpreadDefaults {
    fn default() -> Self {
        SpreadDefaults {
            enabled: true,
            constraints: system_default_constraints(),
            selector_label_keys: selector_label_keys(),
            exempt_namespaces: kube_system(),
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

/// kube-scheduler's system default constraints.
fn system_default_constraints() -> Vec<DefaultConstraint> {
    let c = |max_skew, key: &str| DefaultConstraint {
        max_skew,
        topology_key: key.to_string(),
        when_unsatisfiable: "ScheduleAnyway".to_string(),
        min_domains: None,
        node_affinity_policy: None,
        node_taints_policy: None,
    };
    vec![
        c(3, "kubernetes.io/hostname"),
        c(5, "topology.kubernetes.io/zone"),
    ]
}

fn selector_label_keys() -> Vec<String> {
    [
        "app.kubernetes.io/name",
        "app.kubernetes.io/instance",
        "app",
    ]
    .into_iter()
    .map(String::from)
    .collect()
}

/// deny | warn
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Deny,
    Warn,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MutableDirectives {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default = "deny")]
    pub action: Action,
    /// User names, or `group:NAME`; empty means anyone may tighten a gated pod's directives.
    #[serde(default)]
    pub allowed_users: Vec<String>,
}

impl Default for MutableDirectives {
    fn default() -> Self {
        MutableDirectives {
            enabled: true,
            action: Action::Deny,
            allowed_users: Vec::new(),
        }
    }
}

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

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HardAntiAffinity {
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Topology keys a required anti-affinity term may use freely (exact comparison).
    #[serde(default = "hostname_only")]
    pub allowed_topology_keys: Vec<String>,
    /// A wide term that spans all namespaces.
    #[serde(default = "scope_deny")]
    pub cluster_scope: ScopeAction,
    /// Any other wide term.
    #[serde(default = "scope_warn")]
    pub namespace_scope: ScopeAction,
    #[serde(default = "kube_system")]
    pub exempt_namespaces: Vec<String>,
}

impl Default for HardAntiAffinity {
    fn default() -> Self {
        HardAntiAffinity {
            enabled: true,
            allowed_topology_keys: hostname_only(),
            cluster_scope: ScopeAction::Deny,
            namespace_scope: ScopeAction::Warn,
            exempt_namespaces: kube_system(),
        }
    }
}

fn hostname_only() -> Vec<String> {
    vec!["kubernetes.io/hostname".to_string()]
}

fn kube_system() -> Vec<String> {
    vec!["kube-system".to_string()]
}

fn scope_deny() -> ScopeAction {
    ScopeAction::Deny
}

fn scope_warn() -> ScopeAction {
    ScopeAction::Warn
}

fn yes() -> bool {
    true
}

fn deny() -> Action {
    Action::Deny
}

/// A rule file that cannot be used, with where and why.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{origin}:{line}:{column}: {field}{message}")]
pub struct LoadError {
    pub origin: String,
    pub line: u64,
    pub column: u64,
    /// `spec.mutableDirectives.action: `, or empty when the error is not about one field.
    pub field: String,
    pub message: String,
}

impl RuleSet {
    /// Parses a rule file. `origin` names it in errors (a path, or `<defaults>`).
    pub fn from_yaml(origin: &str, text: &str) -> Result<RuleSet, LoadError> {
        let mut path = String::new();
        let parsed = serde_saphyr::with_deserializer_from_str(text, |de| {
            serde_path_to_error::deserialize(de).map_err(|e| {
                path = e.path().to_string();
                e.into_inner()
            })
        });
        let rules: RuleSet = match parsed {
            Ok(r) => r,
            Err(e) => {
                let (line, column) = e.location().map_or((1, 1), |l| (l.line(), l.column()));
                let field = if path.is_empty() || path == "." {
                    String::new()
                } else {
                    format!("{path}: ")
                };
                return Err(LoadError {
                    origin: origin.to_string(),
                    line,
                    column,
                    field,
                    message: bare_message(&e.to_string()),
                });
            }
        };
        rules.check(origin, text)?;
        Ok(rules)
    }

    /// Checks what the types alone cannot.
    fn check(&self, origin: &str, text: &str) -> Result<(), LoadError> {
        let at = |key: &str, field: &str, message: String| {
            let (line, column) = find_key(text, key);
            LoadError {
                origin: origin.to_string(),
                line,
                column,
                field: format!("{field}: "),
                message,
            }
        };
        if self.api_version != API_VERSION {
            return Err(at(
                "apiVersion",
                "apiVersion",
                format!(
                    "Unsupported value: {:?}: supported values: {API_VERSION:?}",
                    self.api_version
                ),
            ));
        }
        if self.kind != KIND {
            return Err(at(
                "kind",
                "kind",
                format!(
                    "Unsupported value: {:?}: supported values: {KIND:?}",
                    self.kind
                ),
            ));
        }
        for (i, u) in self
            .spec
            .mutable_directives
            .allowed_users
            .iter()
            .enumerate()
        {
            if u.trim().is_empty() || u == "group:" {
                return Err(at(
                    "allowedUsers",
                    &format!("spec.mutableDirectives.allowedUsers[{i}]"),
                    "Invalid value: must be a user name or group:NAME".to_string(),
                ));
            }
        }
        for (i, k) in self
            .spec
            .hard_anti_affinity
            .allowed_topology_keys
            .iter()
            .enumerate()
        {
            if k.is_empty() {
                return Err(at(
                    "allowedTopologyKeys",
                    &format!("spec.hardAntiAffinity.allowedTopologyKeys[{i}]"),
                    "Invalid value: \"\": a topology key may not be empty".to_string(),
                ));
            }
        }
        let d = &self.spec.topology_spread.defaults;
        let constraints: Vec<TopologySpreadConstraint> = d
            .constraints
            .iter()
            .map(|c| c.to_constraint(Some(LabelSelector::default()), None))
            .collect();
        let path = FieldPath::new("spec.topologySpread.defaults.constraints");
        if let Some(e) =
            crate::rules::spread::validate_constraints(&constraints, &path, false).first()
        {
            return Err(at("constraints", &e.path.to_string(), e.body()));
        }
        for (i, k) in d.selector_label_keys.iter().enumerate() {
            let p = FieldPath::new("spec.topologySpread.defaults.selectorLabelKeys").index(i);
            if let Some(e) = crate::validation::validate_label_name(k, &p).first() {
                return Err(at("selectorLabelKeys", &e.path.to_string(), e.body()));
            }
        }
        Ok(())
    }
}

/// serde-saphyr renders `error: line L column C: message` and a snippet; we print the location
/// our own way, so keep only the message.
fn bare_message(rendered: &str) -> String {
    let first = rendered.lines().next().unwrap_or(rendered);
    let rest = first.strip_prefix("error: ").unwrap_or(first);
    if rest.starts_with("line ") {
        if let Some(idx) = rest.find(": ") {
            return rest[idx + 2..].to_string();
        }
    }
    rest.to_string()
}

/// Line and column (1-based) of the first `key:` in a YAML text, for errors found after parsing.
fn find_key(text: &str, key: &str) -> (u64, u64) {
    let needle = format!("{key}:");
    for (i, line) in text.lines().enumerate() {
        if let Some(col) = line.find(&needle) {
            return (i as u64 + 1, col as u64 + 1);
        }
    }
    (1, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_file_is_the_builtin_default() {
        let parsed = RuleSet::from_yaml("<defaults>", DEFAULT_RULES_YAML).unwrap();
        assert_eq!(parsed, RuleSet::default());
    }

    #[test]
    fn sections_may_be_left_out() {
        let r = RuleSet::from_yaml(
            "r.yaml",
            "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\n",
        )
        .unwrap();
        assert_eq!(r, RuleSet::default());
    }

    #[test]
    fn load_errors_name_file_line_field_and_what_is_allowed() {
        let head =
            "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  mutableDirectives:\n";
        let cases = [
            (
                format!("{head}    action: block\n"),
                "r.yaml:5:13: spec.mutableDirectives.action: unknown variant `block`, expected one of deny, warn",
            ),
            (
                format!("{head}    allowedUser: []\n"),
                "r.yaml:5:5: spec.mutableDirectives.allowedUser: unknown field `allowedUser`, expected one of enabled, action, allowedUsers",
            ),
            (
                format!("{head}    enabled: 3\n"),
                "r.yaml:5:14: spec.mutableDirectives.enabled: invalid boolean",
            ),
            (
                format!("{head}    allowedUsers: alice\n"),
                "r.yaml:5:19: spec.mutableDirectives.allowedUsers: expected sequence start",
            ),
            (
                format!("{head}    allowedUsers: [\"\"]\n"),
                "r.yaml:5:5: spec.mutableDirectives.allowedUsers[0]: Invalid value: must be a user name or group:NAME",
            ),
            (
                "apiVersion: v1\nkind: RuleSet\n".to_string(),
                r#"r.yaml:1:1: apiVersion: Unsupported value: "v1": supported values: "placement-guard.io/v1alpha1""#,
            ),
            (
                "apiVersion: placement-guard.io/v1alpha1\nkind: Policy\n".to_string(),
                r#"r.yaml:2:1: kind: Unsupported value: "Policy": supported values: "RuleSet""#,
            ),
            ("spec: [\n".to_string(), "r.yaml:1:7: spec: expected mapping start"),
            (
                "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  hardAntiAffinity:\n    clusterScope: block\n".to_string(),
                "r.yaml:5:19: spec.hardAntiAffinity.clusterScope: unknown variant `block`, expected one of deny, warn, allow",
            ),
            (
                "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  topologySpread:\n    defaults:\n      constraints:\n      - {maxSkew: 0, topologyKey: zone, whenUnsatisfiable: Never}\n".to_string(),
                "r.yaml:6:7: spec.topologySpread.defaults.constraints[0].maxSkew: Invalid value: 0: must be greater than zero",
            ),
            (
                "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  topologySpread:\n    defaults:\n      constraints:\n      - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {}}\n".to_string(),
                "r.yaml:7:75: spec.topologySpread.defaults.constraints[0].labelSelector: unknown field `labelSelector`, expected one of maxSkew, topologyKey, whenUnsatisfiable, minDomains, nodeAffinityPolicy, nodeTaintsPolicy",
            ),
            (
                "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  topologySpread:\n    validate: {action: allow}\n".to_string(),
                "r.yaml:5:24: spec.topologySpread.validate.action: unknown variant `allow`, expected one of deny, warn",
            ),
            (
                "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  hardAntiAffinity:\n    allowedTopologyKeys: [\"\"]\n".to_string(),
                r#"r.yaml:5:5: spec.hardAntiAffinity.allowedTopologyKeys[0]: Invalid value: "": a topology key may not be empty"#,
            ),
        ];
        for (text, want) in cases {
            let err = RuleSet::from_yaml("r.yaml", &text).unwrap_err();
            assert_eq!(err.to_string(), want, "for:\n{text}");
        }
    }
}
