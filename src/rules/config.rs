//! The rule file: plain data, built in one place, strict about what it accepts.

use serde::{Deserialize, Serialize};

use super::RuleSpec;
use crate::k8s::fieldpath::FieldPath;

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
    /// Left empty (every section commented out): every default, as when left out.
    #[serde(default, deserialize_with = "crate::k8s::model::null_as_default")]
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
        // A file with nothing in it is refused, not taken for every default: it is more often a
        // failed templating step or a file caught half-written than a policy (a server
        // reloading it keeps the rules in force).
        if text
            .lines()
            .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#') || l.trim() == "---")
        {
            return Err(LoadError {
                origin: origin.to_string(),
                line: 1,
                column: 1,
                field: String::new(),
                message: format!(
                    "Required value: the rule file is empty; a rule file needs at least `apiVersion: {API_VERSION}` and `kind: {KIND}` (those two lines alone mean every default)"
                ),
            });
        }
        let mut path = String::new();
        // YAML 1.2's booleans only: where a boolean is taken, `no` or `off` is refused, never
        // read as false (or, by a reader of YAML 1.2, as a string taken for true). Manifests are
        // read as kubectl reads them (YAML 1.1); a rule file takes `true` and `false` alone.
        let mut options = serde_saphyr::Options::default();
        options.strict_booleans = true;
        let parsed = serde_saphyr::with_deserializer_from_str_with_options(text, options, |de| {
            serde_path_to_error::deserialize(de).map_err(|e| {
                path = e.path().to_string();
                e.into_inner()
            })
        });
        let rules: RuleSet = match parsed {
            Ok(r) => r,
            Err(e) => {
                // The typed reader stops at the first field it refuses; a syntax error after it
                // is what the user must fix first (a repeated key keeps the typed reader's path).
                let e = match serde_saphyr::from_str::<serde::de::IgnoredAny>(text) {
                    Err(syntax) if !syntax.to_string().contains("duplicate mapping key") => {
                        path.clear();
                        syntax
                    }
                    _ => e,
                };
                let (line, column) = e.location().map_or((1, 1), |l| (l.line(), l.column()));
                let bare = bare_message(&e.to_string());
                // The parser's words for a repeated key end with its own option; say it as the
                // apiserver would, at the mapping that holds the key.
                let bare = bare
                    .strip_suffix(", set DuplicateKeyPolicy in Options if acceptable")
                    .map_or(bare.clone(), str::to_string);
                let duplicate = bare
                    .strip_prefix("duplicate mapping key")
                    .map(|rest| rest.trim_start_matches(':').trim().to_string());
                let path = match &duplicate {
                    Some(_) => path.trim_end_matches('?').trim_end_matches('.').to_string(),
                    None => path,
                };
                let field = if path.is_empty() || path == "." {
                    String::new()
                } else {
                    format!("{path}: ")
                };
                let message = match duplicate {
                    Some(key) if !key.is_empty() => {
                        format!("Duplicate value: {key:?}: a key may appear once in a mapping")
                    }
                    Some(_) => "Duplicate value: a key may appear once in a mapping".to_string(),
                    None => plain_message(&path, &bare, scalar_at(text, line, column)),
                };
                return Err(LoadError {
                    origin: origin.to_string(),
                    line,
                    column,
                    field: field.replace(".?", " (a key that is not a string)"),
                    message,
                });
            }
        };
        rules.check(origin, text)?;
        Ok(rules)
    }

    /// Checks what the types alone cannot.
    /// [`RuleSet::from_yaml`] for `serve`: without `--cluster-aware` the server knows no
    /// namespace labels, so a node-selection policy that needs them would judge nothing (while
    /// `check` and `test` read them from manifests): refused.
    pub fn from_yaml_to_serve(
        origin: &str,
        text: &str,
        cluster_aware: bool,
    ) -> Result<RuleSet, LoadError> {
        let rules = RuleSet::from_yaml(origin, text)?;
        if cluster_aware {
            return Ok(rules);
        }
        let at = |i: usize| {
            FieldPath::fields(&["spec", "nodeSelection", "policies"])
                .index(i)
                .child("namespaceSelector")
        };
        let policies = rules.spec.node_selection.policies.iter().enumerate();
        let needing: Vec<FieldPath> = policies
            .filter(|(_, p)| p.needs_labels())
            .map(|(i, _)| at(i))
            .collect();
        let Some((first, others)) = needing.split_first() else {
            return Ok(rules);
        };
        // Every one at once, so that one restart is enough to fix them.
        let also = match others {
            [] => String::new(),
            [one] => format!(" (so does {one})"),
            more => {
                let shown: Vec<String> = more.iter().map(ToString::to_string).collect();
                format!(" (so do {})", shown.join(", "))
            }
        };
        Err(positioned(
            origin,
            text,
            first,
            format!("Forbidden: selects namespaces by labels, which a server only knows with --cluster-aware (its cache of the cluster): serve with --cluster-aware, or select namespaces by name (namespaces, or the kubernetes.io/metadata.name label){also}"),
        ))
    }

    fn check(&self, origin: &str, text: &str) -> Result<(), LoadError> {
        let at = |path: &FieldPath, message: String| positioned(origin, text, path, message);
        if self.api_version != API_VERSION {
            return Err(at(
                &FieldPath::new("apiVersion"),
                format!(
                    "Unsupported value: {:?}: supported values: {API_VERSION:?}",
                    self.api_version
                ),
            ));
        }
        if self.kind != KIND {
            return Err(at(
                &FieldPath::new("kind"),
                format!(
                    "Unsupported value: {:?}: supported values: {KIND:?}",
                    self.kind
                ),
            ));
        }
        // The YAML reader takes a quoted `"no"` for false and `"3"` for 3 where the type asks
        // for one; kubectl (and this tool's manifests) read a quoted scalar as a string.
        let source = crate::k8s::manifest::parse(text)
            .ok()
            .and_then(|o| o.into_iter().next());
        if let (Some(source), Ok(typed)) = (source, serde_json::to_value(self)) {
            if let Some((path, v, want)) = quoted_scalar(&source.value, &typed, "") {
                return Err(at(
                    &FieldPath::parse(&path),
                    format!(
                        "Invalid value: {}: must be {want} (a quoted value is a string: write it without quotes)",
                        serde_json::Value::String(v)
                    ),
                ));
            }
        }
        if let Some(e) = self.spec.check().into_iter().next() {
            return Err(at(&e.path, e.body()));
        }
        Ok(())
    }
}

/// A refusal of the rule file `text` at `path`, positioned by the manifest reader, which records
/// each key's (read again only for a file that is refused).
fn positioned(origin: &str, text: &str, path: &FieldPath, message: String) -> LoadError {
    let source = crate::k8s::manifest::parse(text)
        .ok()
        .and_then(|o| o.into_iter().next());
    let (line, column) = source.as_ref().map_or((1, 1), |o| {
        let p = o.position(path);
        (p.line as u64, p.column as u64)
    });
    LoadError {
        origin: origin.to_string(),
        line,
        column,
        field: format!("{path}: "),
        message,
    }
}

/// The first scalar written as a string (`source`, as the file says it) where the rule set took
/// a boolean or a number (`typed`, as it was read): its path, its text and what is allowed.
fn quoted_scalar(
    source: &serde_json::Value,
    typed: &serde_json::Value,
    at: &str,
) -> Option<(String, String, &'static str)> {
    use serde_json::Value;
    match (source, typed) {
        (Value::String(s), Value::Bool(_)) => Some((at.to_string(), s.clone(), "true or false")),
        (Value::String(s), Value::Number(_)) => Some((at.to_string(), s.clone(), "a number")),
        (Value::Object(a), Value::Object(b)) => a.iter().find_map(|(k, v)| {
            let here = if at.is_empty() {
                k.clone()
            } else {
                format!("{at}.{k}")
            };
            b.get(k).and_then(|t| quoted_scalar(v, t, &here))
        }),
        (Value::Array(a), Value::Array(b)) => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (v, t))| quoted_scalar(v, t, &format!("{at}[{i}]"))),
        _ => None,
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

/// The values of the rule file's enum fields, by field name, for messages about a value of the
/// wrong shape (serde names the values only for an unknown string). A test keeps them equal to
/// what the types accept.
const ENUM_VALUES: [(&str, &str); 4] = [
    ("action", "deny, warn"),
    ("clusterScope", "deny, warn, allow"),
    ("namespaceScope", "deny, warn, allow"),
    ("onUpdate", "newTermsOnly, allTerms"),
];

/// The plain scalar written at 1-based `line`:`column` (flow or block style), for messages
/// about a value the types refused.
fn scalar_at(text: &str, line: u64, column: u64) -> Option<&str> {
    let l = text
        .lines()
        .nth(usize::try_from(line).ok()?.checked_sub(1)?)?;
    let rest = l.get(usize::try_from(column).ok()?.checked_sub(1)?..)?;
    let end = rest.find([',', '}', ']', '#']).unwrap_or(rest.len());
    Some(rest[..end].trim()).filter(|s| !s.is_empty())
}

/// serde's wording for a value of the wrong shape, in a rule file author's words; `value` is
/// the scalar written there.
fn plain_message(path: &str, message: &str, value: Option<&str>) -> String {
    let field = path.rsplit('.').next().unwrap_or("");
    let one_of = ENUM_VALUES
        .iter()
        .find(|(f, _)| *f == field)
        .map(|(_, v)| format!(": one of {v}"))
        .unwrap_or_default();
    let shown = value.map(|v| format!("{v}: ")).unwrap_or_default();
    match message {
        "externally tagged enum expected scalar or mapping"
        | "unexpected value for unit enum variant" => {
            format!("expected a single value{one_of}")
        }
        "expected mapping start" => "expected a mapping of fields (`key: value`)".to_string(),
        "expected sequence start" => "expected a list".to_string(),
        // A key with nothing after its colon, or `~`: the reader's words name its own types.
        m if m.starts_with("cannot deserialize null into string") => {
            "Invalid value: null: must be a string (quote an empty one: \"\")".to_string()
        }
        m if m.starts_with("cannot deserialize null into") => {
            "Invalid value: null: a value is required here (or leave the key out)".to_string()
        }
        m if m.starts_with("multiple YAML documents detected") => {
            "a rule file is one YAML document; remove this `---` and what follows, or merge it into the first".to_string()
        }
        "invalid boolean" | "invalid boolean (strict mode expects true/false)" => {
            format!("Invalid value: {shown}must be true or false")
        }
        "invalid i32" | "invalid i64" => {
            let (min, max) = if message.ends_with("32") {
                (i64::from(i32::MIN), i64::from(i32::MAX))
            } else {
                (i64::MIN, i64::MAX)
            };
            format!("Invalid value: {shown}must be a whole number from {min} to {max}")
        }
        other => other.to_string(),
    }
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
    fn an_empty_rule_file_is_refused_and_the_header_alone_means_the_defaults() {
        for text in ["", "\n# just a comment\n", "---\n"] {
            let e = RuleSet::from_yaml("r.yaml", text).unwrap_err();
            assert_eq!(
                e.to_string(),
                "r.yaml:1:1: Required value: the rule file is empty; a rule file needs at least `apiVersion: placement-guard.io/v1alpha1` and `kind: RuleSet` (those two lines alone mean every default)"
            );
        }
        let header = "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\n";
        assert_eq!(
            RuleSet::from_yaml("r.yaml", header).unwrap(),
            RuleSet::default()
        );
        // A spec or a section left empty (its fields commented out) means its defaults.
        for rest in [
            "spec:\n#  hardAntiAffinity:\n",
            "spec:\n  hardAntiAffinity:\n  topologySpread: null\n",
        ] {
            assert_eq!(
                RuleSet::from_yaml("r.yaml", &format!("{header}{rest}")).unwrap(),
                RuleSet::default(),
                "{rest}"
            );
        }
    }

    /// The values named for a value of the wrong shape are the ones the types accept.
    #[test]
    fn enum_values_in_messages_match_the_types() {
        let sections = [
            ("mutableDirectives", "action"),
            ("topologySpread:\n    validate", "action"),
            ("hardAntiAffinity", "clusterScope"),
            ("hardAntiAffinity", "namespaceScope"),
            ("hardAntiAffinity", "onUpdate"),
            ("nodeSelection", "action"),
            ("workloadSpread", "action"),
        ];
        for (section, field) in sections {
            let indent = if section.contains('\n') {
                "      "
            } else {
                "    "
            };
            let text = |v: &str| {
                format!("apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  {section}:\n{indent}{field}: {v}\n")
            };
            let unknown = RuleSet::from_yaml("r.yaml", &text("bogus")).unwrap_err();
            let listed = unknown
                .message
                .split("expected one of ")
                .nth(1)
                .unwrap()
                .to_string();
            let shaped = RuleSet::from_yaml("r.yaml", &text("[x]")).unwrap_err();
            assert_eq!(
                shaped.message,
                format!("expected a single value: one of {listed}"),
                "{section}.{field}"
            );
        }
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
                "r.yaml:5:14: spec.mutableDirectives.enabled: Invalid value: 3: must be true or false",
            ),
            // Nothing after the colon, or `~`: null, said in the rule file's terms.
            (
                "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  hardAntiAffinity:\n    exemptNamespaces: [~]\n".to_string(),
                "r.yaml:5:24: spec.hardAntiAffinity.exemptNamespaces[0]: Invalid value: null: must be a string (quote an empty one: \"\")",
            ),
            (
                format!("{head}    allowedUsers:\n    - \n"),
                "r.yaml:6:7: spec.mutableDirectives.allowedUsers[0]: Invalid value: null: must be a string (quote an empty one: \"\")",
            ),
            // Names compared exactly: a glob there would exempt nothing.
            (
                "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  hardAntiAffinity:\n    exemptNamespaces: [kube-system, \"de*\"]\n".to_string(),
                "r.yaml:5:37: spec.hardAntiAffinity.exemptNamespaces[1]: Invalid value: \"de*\": matches no namespace: this list takes namespace names, compared exactly (lowercase letters, digits and '-', at most 63), not patterns",
            ),
            (
                format!("{head}    enabled: no\n"),
                "r.yaml:5:14: spec.mutableDirectives.enabled: Invalid value: no: must be true or false",
            ),
            // Quoted, a scalar is a string, as kubectl reads it: never false, nor 3.
            (
                format!("{head}    enabled: \"no\"\n"),
                "r.yaml:5:14: spec.mutableDirectives.enabled: Invalid value: \"no\": must be true or false",
            ),
            (
                format!("{head}    enabled: \"false\"\n"),
                "r.yaml:5:5: spec.mutableDirectives.enabled: Invalid value: \"false\": must be true or false (a quoted value is a string: write it without quotes)",
            ),
            (
                "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  topologySpread:\n    defaults:\n      constraints:\n      - maxSkew: \"3\"\n        topologyKey: zone\n        whenUnsatisfiable: ScheduleAnyway\n".to_string(),
                "r.yaml:7:9: spec.topologySpread.defaults.constraints[0].maxSkew: Invalid value: \"3\": must be a number (a quoted value is a string: write it without quotes)",
            ),
            (
                format!("{head}    allowedUsers: alice\n"),
                "r.yaml:5:19: spec.mutableDirectives.allowedUsers: expected a list",
            ),
            (
                format!("{head}    action: [deny]\n"),
                "r.yaml:5:13: spec.mutableDirectives.action: expected a single value: one of deny, warn",
            ),
            (
                "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  hardAntiAffinity:\n    clusterScope: {deny: 1}\n".to_string(),
                "r.yaml:5:26: spec.hardAntiAffinity.clusterScope.deny: expected a single value",
            ),
            (
                "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  hardAntiAffinity: 3\n".to_string(),
                "r.yaml:4:21: spec.hardAntiAffinity: expected a mapping of fields (`key: value`)",
            ),
            (
                format!("{head}    allowedUsers: [\"\"]\n"),
                "r.yaml:5:20: spec.mutableDirectives.allowedUsers[0]: Invalid value: \"\": must be a user name or group:NAME",
            ),
            (
                format!("{head}    allowedUsers: [alice, \"group:\"]\n"),
                "r.yaml:5:27: spec.mutableDirectives.allowedUsers[1]: Invalid value: \"group:\": must be a user name or group:NAME",
            ),
            (
                "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  topologySpread:\n    defaults:\n      constraints:\n      - {maxSkew: 99999999999, topologyKey: zone}\n".to_string(),
                "r.yaml:7:19: spec.topologySpread.defaults.constraints[0].maxSkew: Invalid value: 99999999999: must be a whole number from -2147483648 to 2147483647",
            ),
            (
                "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  topologySpread:\n    defaults:\n      constraints:\n      - maxSkew: 1.5\n        topologyKey: zone\n".to_string(),
                "r.yaml:7:18: spec.topologySpread.defaults.constraints[0].maxSkew: Invalid value: 1.5: must be a whole number from -2147483648 to 2147483647",
            ),
            (
                "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\n---\napiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\n".to_string(),
                "r.yaml:4:1: a rule file is one YAML document; remove this `---` and what follows, or merge it into the first",
            ),
            (
                // A syntax error outranks the unknown field before it.
                format!("{head}    bogus: 1\n    allowedUsers: [alice\n"),
                "r.yaml:6:19: unclosed bracket '['",
            ),
            (
                "apiVersion: v1\nkind: RuleSet\n".to_string(),
                r#"r.yaml:1:1: apiVersion: Unsupported value: "v1": supported values: "placement-guard.io/v1alpha1""#,
            ),
            (
                "apiVersion: placement-guard.io/v1alpha1\nkind: Policy\n".to_string(),
                r#"r.yaml:2:1: kind: Unsupported value: "Policy": supported values: "RuleSet""#,
            ),
            ("spec: [\n".to_string(), "r.yaml:1:7: unclosed bracket '['"),
            (
                "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  hardAntiAffinity:\n    clusterScope: block\n".to_string(),
                "r.yaml:5:19: spec.hardAntiAffinity.clusterScope: unknown variant `block`, expected one of deny, warn, allow",
            ),
            (
                "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  topologySpread:\n    defaults:\n      constraints:\n      - {maxSkew: 0, topologyKey: zone, whenUnsatisfiable: Never}\n".to_string(),
                "r.yaml:7:10: spec.topologySpread.defaults.constraints[0].maxSkew: Invalid value: 0: must be greater than zero",
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
                r#"r.yaml:5:27: spec.hardAntiAffinity.allowedTopologyKeys[0]: Invalid value: "": a topology key may not be empty"#,
            ),
            (
                "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  hardAntiAffinity:\n    allowedTopologyKeys: [zone, \"Not A Key\"]\n".to_string(),
                r#"r.yaml:5:33: spec.hardAntiAffinity.allowedTopologyKeys[1]: Invalid value: "Not A Key": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#,
            ),
            (
                "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  nodeSelection:\n    policies:\n    - name: p\n      namespaces: [team-a, \"team-[\"]\n      forbiddenNodes: [{matchExpressions: [{key: gpu, operator: Exists}]}]\n".to_string(),
                r#"r.yaml:7:28: spec.nodeSelection.policies[0].namespaces[1]: Invalid value: "team-[": matches no namespace: a name or glob has lowercase letters, digits, '-', and the wildcards '*' (any run) and '?' (one character)"#,
            ),
            (
                "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nkind: RuleSet\n".to_string(),
                r#"r.yaml:3:1: Duplicate value: "kind": a key may appear once in a mapping"#,
            ),
            (
                "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  hardAntiAffinity:\n    exemptNamespaces: [a]\n    exemptNamespaces: [b]\n".to_string(),
                r#"r.yaml:6:5: spec.hardAntiAffinity: Duplicate value: "exemptNamespaces": a key may appear once in a mapping"#,
            ),
        ];
        for (text, want) in cases {
            let err = RuleSet::from_yaml("r.yaml", &text).unwrap_err();
            assert_eq!(err.to_string(), want, "for:\n{text}");
        }
    }
}
