//! The diagnostic model of `check` and one renderer per output format, all over the same
//! [`Report`].

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::json;

use crate::ci::check::{RULE_INVALID, RULE_UNREADABLE, RULE_YAML};
use crate::k8s::manifest::Pos;

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

impl Diagnostic {
    /// An error about a whole file (it could not be read, or is not YAML).
    pub fn file_level(file: &str, pos: Pos, rule: &str, message: String) -> Diagnostic {
        Diagnostic {
            file: file.to_string(),
            line: pos.line,
            column: pos.column,
            rule: rule.to_string(),
            severity: Severity::Error,
            object: String::new(),
            path: String::new(),
            message,
            hint: None,
        }
    }
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
    /// Files read; for objects read from the API server (`audit`), none.
    pub files: usize,
    /// The objects came from the API server, not from files.
    #[serde(skip)]
    pub from_cluster: bool,
    /// Objects a rule looked at (Pods, workloads with a pod template, WorkloadSpreads).
    pub objects: usize,
    /// Other objects (ConfigMaps, Services, CRDs, ...).
    pub skipped: usize,
    pub diagnostics: Vec<Diagnostic>,
    pub suppressed: Vec<Suppressed>,
    /// Every checked object as (file, object), clean ones included (JUnit lists them all).
    #[serde(skip)]
    pub checked: Vec<(String, String)>,
    /// What was not checked and why, for stderr (not findings: nothing is wrong with the input).
    #[serde(skip)]
    pub notes: Vec<String>,
    /// Documents without a kind (a Helm chart's Chart.yaml, values.yaml): not
    /// Kubernetes objects, so an input of nothing else still has "no objects".
    #[serde(skip)]
    pub kindless: Vec<String>,
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
}

pub const JSON_SCHEMA_VERSION: u32 = 1;

fn summary(r: &Report) -> String {
    let source = if r.from_cluster {
        "the cluster".to_string()
    } else {
        format!("{} file(s)", r.files)
    };
    format!(
        "checked {} object(s) in {source}: {} error(s), {} warning(s); {} other object(s) skipped, {} finding(s) suppressed",
        r.objects,
        r.count(Severity::Error),
        r.count(Severity::Warning),
        r.skipped,
        r.suppressed.len()
    )
}

fn headline(d: &Diagnostic) -> String {
    one_line(&match (d.object.is_empty(), d.path.is_empty()) {
        (true, _) => d.message.clone(),
        (false, true) => format!("{}: {}", d.object, d.message),
        (false, false) => format!("{}: {}: {}", d.object, d.path, d.message),
    })
    .into_owned()
}

/// `s` with its control characters and line separators escaped (`\n`, `\u{1b}`,
/// `\u{2028}`): a finding is one line, and an object's name or a value quoted in a message
/// must not start a line of its own that CI problem matchers or editors would read as another
/// finding, nor drive the terminal.
fn one_line(s: &str) -> std::borrow::Cow<'_, str> {
    let breaks = |c: char| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}');
    if !s.chars().any(breaks) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if breaks(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Every id a diagnostic can carry: the registry's rules, the input diagnostics and what the
/// manifest reader warns of.
pub fn rule_ids() -> Vec<&'static str> {
    crate::rules::all_rules()
        .map(|m| m.id.as_str())
        .chain(INPUT_RULES.iter().map(|(id, _)| *id))
        .chain(READER_RULES.iter().map(|(id, _)| *id))
        .collect()
}

/// Human output: `file:line:col` first (clickable in editors and terminals), a summary at the end.
pub fn text(r: &Report, color: bool) -> String {
    let mut out = findings_text(r, color);
    for s in &r.suppressed {
        let reason = s
            .reason
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{}:{}: suppressed[{}] {}",
            one_line(&s.file),
            s.line,
            s.rule,
            one_line(&format!("{}{reason}", s.object))
        );
    }
    let _ = writeln!(out, "{}", summary(r));
    out
}

/// The findings alone (`check --quiet`): no suppressed lines, no summary.
pub fn findings_text(r: &Report, color: bool) -> String {
    let paint = |code: &str, s: &str| {
        if color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    };
    let mut out = String::new();
    for d in &r.diagnostics {
        let sev = match d.severity {
            Severity::Error => paint("1;31", "error"),
            Severity::Warning => paint("1;33", "warning"),
        };
        // Objects read from the API server have no position: `namespace/Kind/name` alone.
        let file = one_line(&d.file);
        let loc = if d.line == 0 {
            paint("1", &file)
        } else {
            paint("1", &format!("{file}:{}:{}", d.line, d.column))
        };
        let _ = writeln!(out, "{loc}: {sev}[{}] {}", d.rule, headline(d));
        if let Some(h) = &d.hint {
            let _ = writeln!(out, "    {} {}", paint("36", "help:"), one_line(h));
        }
    }
    out
}

/// Stable JSON: `{"version": 1, "summary": {...}, "diagnostics": [...], "suppressed": [...]}`.
pub fn json(r: &Report) -> String {
    let v = json!({
        "version": JSON_SCHEMA_VERSION,
        "summary": {
            "files": r.files,
            "objects": r.objects,
            "skipped": r.skipped,
            "errors": r.count(Severity::Error),
            "warnings": r.count(Severity::Warning),
            "suppressed": r.suppressed.len(),
        },
        "diagnostics": r.diagnostics,
        "suppressed": r.suppressed,
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}

/// Whether `rule` says an input could not be checked (not YAML, not its kind, not readable):
/// such findings are reported whatever `--only-rule` and `--skip-rule` say, so that a filtered
/// run over a broken or garbled input cannot pass.
pub fn is_input_rule(rule: &str) -> bool {
    INPUT_RULES.iter().any(|(id, _)| *id == rule)
}

/// Diagnostics about the input rather than a rule: (id, summary).
const INPUT_RULES: [(&str, &str); 3] = [
    (RULE_YAML, "The file is not valid YAML"),
    (RULE_INVALID, "The object cannot be read as its kind"),
    (RULE_UNREADABLE, "The file cannot be read"),
];

/// What the manifest reader warns of while the object is still read and checked: filtered as a
/// rule's findings are (`--skip-rule duplicate-key`).
const READER_RULES: [(&str, &str); 1] = [(
    crate::ci::check::RULE_DUPLICATE_KEY,
    "A key is written twice in one mapping: kubectl keeps the last value",
)];

/// `%SRCROOT%`: the directory relative paths are relative to.
const SRCROOT: &str = "%SRCROOT%";

/// Characters a URI path may not carry as they are (RFC 3986 pchar, with `/` kept).
const PATH: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'/')
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

fn encode_path(p: &str) -> String {
    percent_encoding::utf8_percent_encode(p, PATH).to_string()
}

/// Where a diagnostic's file is, as SARIF wants it: a relative URI against `%SRCROOT%`, an
/// absolute `file:` URI outside it, or `stdin`.
fn artifact(file: &str, root: Option<&str>) -> (String, Option<&'static str>) {
    if file == "<stdin>" {
        return ("stdin".to_string(), None);
    }
    if !file.starts_with('/') {
        // `a/../b` is `b`; a path that climbs out of the root (`../x`) is named absolutely,
        // since a URI relative to `%SRCROOT%` cannot leave it.
        match (lexical(file), root) {
            (Some(rel), _) => return (encode_path(&rel), Some(SRCROOT)),
            // Resolved against an absolute root only (a relative one would never end).
            (None, Some(r)) if r.starts_with('/') => {
                return artifact(&format!("{}/{file}", r.trim_end_matches('/')), root)
            }
            (None, _) => return (encode_path(file), Some(SRCROOT)),
        }
    }
    let file = lexical(file.trim_start_matches('/')).map_or(file.to_string(), |f| format!("/{f}"));
    let root = root.map(|r| r.trim_end_matches('/'));
    match root
        .and_then(|r| file.strip_prefix(r))
        .and_then(|rest| rest.strip_prefix('/'))
    {
        Some(rel) => (encode_path(rel), Some(SRCROOT)),
        None => (format!("file://{}", encode_path(&file)), None),
    }
}

/// A relative path with `.` and `dir/..` taken out, as a URI resolver takes them; `None` when
/// it climbs above where it starts.
fn lexical(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// SARIF 2.1.0 for GitHub code scanning. `root` is the absolute directory relative file names
/// are relative to (the working directory); relative artifact URIs name it through
/// `%SRCROOT%`.
pub fn sarif(r: &Report, root: Option<&str>) -> String {
    use serde_sarif::sarif::{
        ArtifactLocation, Location, LogicalLocation, Message, MultiformatMessageString,
        PhysicalLocation, Region, ReportingDescriptor, Result as SarifResult, ResultLevel, Run,
        Sarif, Tool, ToolComponent,
    };
    let text = |t: &str| MultiformatMessageString::builder().text(t).build();
    let rules: Vec<ReportingDescriptor> = crate::rules::all_rules()
        .map(|m| {
            ReportingDescriptor::builder()
                .id(m.id.as_str())
                .short_description(text(m.summary))
                .help(text(m.help))
                .build()
        })
        .chain(
            INPUT_RULES
                .iter()
                .chain(&READER_RULES)
                .map(|(id, summary)| {
                    ReportingDescriptor::builder()
                        .id(*id)
                        .short_description(text(summary))
                        .build()
                }),
        )
        .collect();
    // Suppressed findings are left out: GitHub code scanning does not honour SARIF's
    // `suppressions` (github/codeql-action#1230) and would raise them as open alerts.
    let results: Vec<SarifResult> = r
        .diagnostics
        .iter()
        .map(|d| {
            let mut text = headline(d);
            if let Some(h) = &d.hint {
                text.push_str("\nhelp: ");
                text.push_str(h);
            }
            SarifResult::builder()
                .rule_id(d.rule.clone())
                .level(match d.severity {
                    Severity::Error => ResultLevel::Error,
                    Severity::Warning => ResultLevel::Warning,
                })
                .message(Message::builder().text(text).build())
                .locations(vec![if r.from_cluster {
                    // An object of the live cluster (`audit`): named, not a file to open.
                    Location::builder()
                        .logical_locations(vec![LogicalLocation::builder()
                            .fully_qualified_name(d.file.clone())
                            .kind("object")
                            .build()])
                        .build()
                } else {
                    Location::builder()
                        .physical_location({
                            let artifact = {
                                let (uri, base) = artifact(&d.file, root);
                                match base {
                                    Some(b) => {
                                        ArtifactLocation::builder().uri(uri).uri_base_id(b).build()
                                    }
                                    None => ArtifactLocation::builder().uri(uri).build(),
                                }
                            };
                            // A finding without a position has no region.
                            if d.line > 0 {
                                PhysicalLocation::builder()
                                    .artifact_location(artifact)
                                    .region(
                                        Region::builder()
                                            .start_line(d.line as i64)
                                            .start_column(d.column as i64)
                                            .build(),
                                    )
                                    .build()
                            } else {
                                PhysicalLocation::builder()
                                    .artifact_location(artifact)
                                    .build()
                            }
                        })
                        .build()
                }])
                .build()
        })
        .collect();
    let tool = Tool::builder()
        .driver(
            ToolComponent::builder()
                .name("placement-guard")
                .version(env!("CARGO_PKG_VERSION"))
                .rules(rules)
                .build(),
        )
        .build();
    // Columns are counted in characters (the YAML parser's), which SARIF must be told: a
    // reader assuming UTF-16 units would shift every column after a character outside the BMP.
    const COLUMN_KIND: &str = "unicodeCodePoints";
    let sarif = Sarif::builder()
        .version(serde_json::json!("2.1.0"))
        .schema(serde_sarif::sarif::SCHEMA_URL)
        .runs(vec![match root {
            Some(root) => {
                let base = ArtifactLocation::builder()
                    .uri(format!(
                        "file://{}/",
                        encode_path(root.trim_end_matches('/'))
                    ))
                    .build();
                Run::builder()
                    .tool(tool)
                    .results(results)
                    .column_kind(COLUMN_KIND)
                    .original_uri_base_ids(std::collections::BTreeMap::from([(
                        SRCROOT.to_string(),
                        base,
                    )]))
                    .build()
            }
            None => Run::builder()
                .tool(tool)
                .results(results)
                .column_kind(COLUMN_KIND)
                .build(),
        }])
        .build();
    let mut s = serde_json::to_string_pretty(&sarif).unwrap_or_default();
    s.push('\n');
    s
}

/// JUnit XML for GitLab and Jenkins: one test case per checked object (and per unreadable file);
/// errors fail it, warnings are listed in its output, and fail it too with `fail_on_warnings`
/// (`--fail-on warning`), so that the report agrees with the exit code.
pub fn junit(r: &Report, fail_on_warnings: bool) -> String {
    use quick_junit::{NonSuccessKind, Report as JReport, TestCase, TestCaseStatus, TestSuite};
    let mut suite = TestSuite::new("placement-guard check");
    // Files that could not be read, then every checked object, clean ones included.
    let mut keys: Vec<(String, String)> = r
        .diagnostics
        .iter()
        .filter(|d| d.object.is_empty())
        .map(|d| (d.file.clone(), String::new()))
        .collect();
    keys.extend(r.checked.iter().cloned());
    keys.sort();
    keys.dedup();
    for (file, object) in keys {
        let ds: Vec<&Diagnostic> = r
            .diagnostics
            .iter()
            .filter(|d| d.file == file && d.object == object)
            .collect();
        let lines = |sev: Severity, label: &str| -> Vec<String> {
            ds.iter()
                .filter(|d| d.severity == sev)
                .map(|d| {
                    let mut line = format!(
                        "{}:{}:{}: {label}[{}] {}",
                        d.file,
                        d.line,
                        d.column,
                        d.rule,
                        headline(d)
                    );
                    // The fix, as the text output gives it.
                    if let Some(h) = &d.hint {
                        line.push_str("\n    help: ");
                        line.push_str(h);
                    }
                    line
                })
                .collect()
        };
        let errors = lines(Severity::Error, "");
        let warnings = lines(Severity::Warning, "warning");
        let name = if object.is_empty() {
            file.clone()
        } else {
            format!("{file}: {object}")
        };
        let fails = !errors.is_empty() || (fail_on_warnings && !warnings.is_empty());
        let status = if !fails {
            TestCaseStatus::success()
        } else if errors.is_empty() {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(format!("{} warning(s)", warnings.len()));
            s.set_description(warnings.join("\n"));
            s
        } else {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(format!("{} error(s)", errors.len()));
            s.set_description(errors.join("\n"));
            s
        };
        let mut case = TestCase::new(name, status);
        case.set_classname(file);
        if !warnings.is_empty() {
            case.set_system_out(warnings.join("\n"));
        }
        suite.add_test_case(case);
    }
    let mut report = JReport::new("placement-guard");
    report.add_test_suite(suite);
    report.to_string().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SARIF locations stay inside `%SRCROOT%` as GitHub code scanning needs them: `..` taken
    /// out of a relative path, and one that climbs out of the root named absolutely.
    #[test]
    fn sarif_locations_are_normalized() {
        let root = Some("/work/repo");
        let cases = [
            ("./a/../c/dep.yaml", ("c/dep.yaml", Some(SRCROOT))),
            ("c/./dep.yaml", ("c/dep.yaml", Some(SRCROOT))),
            ("../c/dep.yaml", ("file:///work/c/dep.yaml", None)),
            ("../repo/sub/p.yaml", ("sub/p.yaml", Some(SRCROOT))),
            ("/work/repo/a/../b.yaml", ("b.yaml", Some(SRCROOT))),
            ("/elsewhere/b.yaml", ("file:///elsewhere/b.yaml", None)),
            ("<stdin>", ("stdin", None)),
        ];
        for (file, (uri, base)) in cases {
            assert_eq!(artifact(file, root), (uri.to_string(), base), "{file}");
        }
        // A relative root cannot resolve what climbs out of it: the path as written.
        assert_eq!(
            artifact("../x.yaml", Some(".")),
            ("..%2Fx.yaml".replace("%2F", "/"), Some(SRCROOT))
        );
    }

    /// A name with a line break cannot forge a finding line of its own in the text output
    /// (the apiserver refuses such a name, but `check` reads what it is given).
    #[test]
    fn a_finding_is_one_line_whatever_its_object_is_called() {
        let d = Diagnostic {
            object: "Pod n/p\nfake.yaml:1:1: error[x] injected\u{1b}[2J\u{2028}".into(),
            path: "spec".into(),
            hint: Some("a\rb".into()),
            ..Diagnostic::file_level("a\nb.yaml", Pos { line: 1, column: 1 }, "r", "m".into())
        };
        let r = Report {
            diagnostics: vec![d],
            ..Report::default()
        };
        assert_eq!(
            findings_text(&r, false),
            "a\\nb.yaml:1:1: error[r] Pod n/p\\nfake.yaml:1:1: error[x] injected\\u{1b}[2J\\u{2028}: spec: m\n    help: a\\rb\n"
        );
    }
}
