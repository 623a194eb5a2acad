//! `check`: manifests in, diagnostics out. Each object is treated as a CREATE and goes through the
//! same [`rules::evaluate`] as `/validate` and `/mutate`; every finding, note and patch becomes a
//! [`Diagnostic`] through one constructor.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::Value;

use crate::admission::NamespaceLabels;
use crate::ci::report::{Diagnostic, Report, Severity, Suppressed};
use crate::k8s::fieldpath::FieldError;
use crate::k8s::fieldpath::FieldPath;
use crate::k8s::manifest::{self, Object};
use crate::k8s::validation::{dns1123_label_errors, validate_labels, validate_scheduling};
use crate::k8s::workload::{self, group_of, Kind};
use crate::kruise::workloadspread::{self as ws, Target};
use crate::rules::{
    self, Action, Context, Input, Operation, Phase, RuleSet, Subject, User, Verdict,
};

pub const IGNORE_ANNOTATION: &str = "placement-guard.io/ignore";
pub const IGNORE_REASON_ANNOTATION: &str = "placement-guard.io/ignore-reason";
/// Findings about input that could not be read as YAML or as an object.
pub const RULE_YAML: &str = "yaml-syntax";
/// A key written twice in one mapping (a warning: kubectl keeps the last value).
pub const RULE_DUPLICATE_KEY: &str = "duplicate-key";
pub const RULE_INVALID: &str = "invalid-object";
pub const RULE_UNREADABLE: &str = "unreadable";
/// `audit`: a pod, or a workload's pod template, that no node of the cluster can run now.
/// `audit`'s findings for Pending pods and templates no node can run: the `feasibility` rule's.
pub const RULE_FEASIBILITY: &str = crate::rules::feasibility::ID.as_str();

/// A workload a WorkloadSpread may target: (group, kind, namespace, name), its pod template,
/// the names of its volumeClaimTemplates, replicas, and the selector its controller owns its
/// pods by.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Workload {
    id: (String, String, String, String),
    template: Value,
    claims: Vec<String>,
    replicas: Option<i64>,
    selector: Option<LabelSelector>,
}

/// A [`Workload`] as it is written to the spill, borrowing the object it is read from.
#[derive(serde::Serialize)]
struct WorkloadRecord<'a> {
    id: &'a (String, String, String, String),
    template: &'a Value,
    claims: Vec<&'a str>,
    replicas: Option<i64>,
    selector: Option<LabelSelector>,
}

impl Workload {
    fn spec(&self) -> Option<crate::k8s::model::PodSpec> {
        serde_json::from_value(self.template["spec"].clone()).ok()
    }
}

/// Where the WorkloadSpread target index keeps its records (a temporary file for `check`).
pub trait Spill {
    /// Appends a record and returns where it starts.
    fn put(&mut self, record: &[u8]) -> u64;
    /// Reads back the `len` bytes at `at`.
    fn get(&mut self, at: u64, len: u32) -> Result<Vec<u8>, String>;
}

impl Spill for Vec<u8> {
    fn put(&mut self, record: &[u8]) -> u64 {
        let at = self.len() as u64;
        self.extend_from_slice(record);
        at
    }

    fn get(&mut self, at: u64, len: u32) -> Result<Vec<u8>, String> {
        let at = usize::try_from(at).map_err(|e| e.to_string())?;
        self.as_slice()
            .get(at..at + len as usize)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| "record out of range".into())
    }
}

/// Every workload a WorkloadSpread may target, whichever file it comes from and in whichever
/// order. Each is written to the spill as one compact record; only its id's hash and place are
/// held, so a stream of any number of workloads keeps memory flat, and a WorkloadSpread's
/// target is read back in [`Checker::finish`].
struct Targets {
    spill: Box<dyn Spill>,
    /// (hash of the id, place, length), in the order the workloads were read.
    index: Vec<(u64, u64, u32)>,
    sorted: bool,
}

fn id_hash(id: &(String, String, String, String)) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    id.hash(&mut h);
    h.finish()
}

impl Targets {
    /// Keeps `v` if it is a workload with a pod template.
    /// `namespace`: the one an object that names none is created in (`-n`).
    fn add(&mut self, v: &Value, namespace: &str) {
        let Some(template) = workload::workload_template(v).filter(|t| t["spec"].is_object())
        else {
            return;
        };
        let id = workload_id(v, namespace);
        let claims = v["spec"]["volumeClaimTemplates"]
            .as_array()
            .map(|list| {
                list.iter()
                    .filter_map(|c| c["metadata"]["name"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        let record = WorkloadRecord {
            id: &id,
            template,
            claims,
            replicas: v["spec"]["replicas"].as_i64(),
            selector: workload::workload_selector(v),
        };
        let Ok(record) = serde_json::to_vec(&record) else {
            return;
        };
        let Ok(len) = u32::try_from(record.len()) else {
            return;
        };
        let at = self.spill.put(&record);
        self.index.push((id_hash(&id), at, len));
        self.sorted = false;
    }

    /// The first workload read with this id.
    fn find(&mut self, id: &(String, String, String, String)) -> Result<Option<Workload>, String> {
        let h = id_hash(id);
        // Sorted once: by hash, then by place, which keeps the reading order among equal ids.
        if !self.sorted {
            self.index.sort_unstable();
            self.sorted = true;
        }
        let from = self.index.partition_point(|e| e.0 < h);
        for &(eh, at, len) in &self.index[from..] {
            if eh != h {
                break;
            }
            let record = self.spill.get(at, len)?;
            let w: Workload = serde_json::from_slice(&record).map_err(|e| e.to_string())?;
            if &w.id == id {
                return Ok(Some(w));
            }
        }
        Ok(None)
    }
}

fn workload_id(v: &Value, namespace: &str) -> (String, String, String, String) {
    let s = |x: &Value| x.as_str().unwrap_or("").to_string();
    (
        group_of(v["apiVersion"].as_str().unwrap_or("")).to_string(),
        s(&v["kind"]),
        v["metadata"]["namespace"]
            .as_str()
            .unwrap_or(namespace)
            .to_string(),
        s(&v["metadata"]["name"]),
    )
}

/// A run of `check`: the rules, what has been read so far, and the report it fills.
/// An object read from the API server ([`Checker::check_value`]).
struct Live {
    judge: bool,
    placed: Vec<rules::Finding>,
}

/// Where a run takes namespace labels from, beside Namespace manifests: what to advise when
/// they are missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelsFrom {
    /// `check`: manifests, and `--cluster`.
    Manifests,
    /// `test`: the suite's namespaces.yaml.
    Suite,
    /// `audit`: the cluster's listing.
    Cluster,
}

/// The objects of a namespace whose labels were not known when they were judged: said once, on
/// the first of them, by [`Checker::finish`].
struct Unlabelled {
    /// The first object's warning, its message written at the end.
    first: Diagnostic,
    objects: usize,
    /// Where a Namespace manifest for it came, after them.
    late: Option<String>,
}

pub struct Checker {
    rules: RuleSet,
    report: Report,
    /// WorkloadSpreads, judged by [`Checker::finish`] once every file is read (their targets
    /// may be in other files).
    spreads: Vec<(String, Object)>,
    targets: Targets,
    /// Targets were also read from a cluster dump (`--cluster`).
    with_cluster: bool,
    /// The namespace of objects that name none (`check -n`, as `kubectl apply -n`).
    namespace: Option<String>,
    /// Objects judged in no namespace while node-selection policies are configured.
    unplaced: usize,
    /// Namespace labels, from Namespace manifests read so far, `--cluster` and `audit`'s
    /// listing: what node-selection policies with a `namespaceSelector` match.
    namespaces: NamespaceLabels,
    /// Namespaces whose objects were judged without their labels.
    unlabelled: BTreeMap<String, Unlabelled>,
    labels_from: LabelsFrom,
}

impl Checker {
    pub fn new(rules: &RuleSet) -> Checker {
        Checker::with_spill(rules, Box::new(Vec::new()))
    }

    /// A checker whose WorkloadSpread target index is kept in `spill`.
    pub fn with_spill(rules: &RuleSet, spill: Box<dyn Spill>) -> Checker {
        let mut rules = rules.clone();
        // `workloadSpread.enabled` says whether the webhook is registered for WorkloadSpreads;
        // manifests are always checked, with the configured action.
        rules.spec.workload_spread.enabled = true;
        Checker {
            rules,
            report: Report::default(),
            spreads: Vec::new(),
            targets: Targets {
                spill,
                index: Vec::new(),
                sorted: true,
            },
            with_cluster: false,
            namespace: None,
            unplaced: 0,
            namespaces: NamespaceLabels::new(),
            unlabelled: BTreeMap::new(),
            labels_from: LabelsFrom::Manifests,
        }
    }

    /// Objects that name no namespace are judged in `namespace`, where `kubectl apply -n`
    /// would create them.
    pub fn in_namespace(mut self, namespace: Option<String>) -> Checker {
        self.namespace = namespace;
        self
    }

    /// Registers the workloads of a cluster dump (`--cluster`) as WorkloadSpread targets; they
    /// are not checked themselves.
    pub fn add_targets(&mut self, text: &str) -> Result<usize, String> {
        let objects = manifest::parse(text).map_err(|e| e.to_string())?;
        self.with_cluster = true;
        let before = self.targets.index.len();
        for o in &objects {
            self.targets.add(&o.value, "");
            if let Some((name, labels)) = namespace_object(o)? {
                self.namespaces.insert(name, labels);
            }
        }
        Ok(self.targets.index.len() - before)
    }

    /// Namespace labels for every object checked, from `from` (`test`: a suite's
    /// namespaces.yaml; `audit`: the cluster's listing).
    pub fn know_namespaces(&mut self, namespaces: &NamespaceLabels, from: LabelsFrom) {
        self.labels_from = from;
        for (name, labels) in namespaces {
            self.namespaces.insert(name.clone(), labels.clone());
        }
    }

    /// Adds a file that could not be read at all.
    pub fn unreadable(&mut self, file: &str, message: String) {
        self.report.files += 1;
        self.report.diagnostics.push(Diagnostic::file_level(
            file,
            manifest::Pos { line: 1, column: 1 },
            RULE_UNREADABLE,
            message,
        ));
    }

    /// Checks one file's text, a document at a time: a broken document does not hide the
    /// others.
    pub fn check_text(&mut self, file: &str, text: &str) {
        self.report.files += 1;
        for (offset, doc) in manifest::documents(text) {
            self.check_document(file, offset, doc);
        }
    }

    /// Checks a file read as a stream: only one document's text and tree are held at a time,
    /// whatever the file's size. A read error ends the file with an `unreadable` finding.
    pub fn check_reader(&mut self, file: &str, reader: impl std::io::BufRead) {
        self.report.files += 1;
        let read =
            manifest::read_documents(reader, |offset, doc| self.check_document(file, offset, doc));
        if let Err(e) = read {
            self.report.diagnostics.push(Diagnostic::file_level(
                file,
                manifest::Pos {
                    line: e.line,
                    column: e.column,
                },
                RULE_UNREADABLE,
                e.message,
            ));
        }
    }

    /// One document starting on 0-based line `offset` of `file`.
    fn check_document(&mut self, file: &str, offset: usize, doc: &str) {
        // Objects are checked as they are read: those before an error keep their findings.
        match manifest::parse_document_each(doc, offset, |o| self.check_object(file, o, None)) {
            Ok(()) => {}
            Err(e) => self.report.diagnostics.push(Diagnostic::file_level(
                file,
                manifest::Pos {
                    line: e.pos_line,
                    column: e.pos_col,
                },
                RULE_YAML,
                if e.no_json {
                    format!("cannot be sent to the API server: {}", e.message)
                } else {
                    format!("not valid YAML: {}", e.message)
                },
            )),
        }
    }

    /// Checks one object read from the API server; `origin` (`namespace/Kind/name`) stands
    /// where a file name would.
    /// `placed`: findings about where the object runs now, judged by the caller against the
    /// cluster ([`rules::node_selection::placed_outside`]), reported and suppressed as the
    /// object's other findings are. `judge`: whether the rules judge the object itself (not
    /// when its owner's template was judged for it).
    pub fn check_value(
        &mut self,
        origin: &str,
        value: Value,
        judge: bool,
        placed: Vec<rules::Finding>,
    ) {
        self.report.files += 1;
        self.check_object(
            origin,
            Object::from_value(value),
            Some(Live { judge, placed }),
        );
    }

    pub fn rules(&self) -> &RuleSet {
        &self.rules
    }

    /// A warning that no node can run the pod (or the workload's pods) now: `summary` is the
    /// scheduler's `0/N nodes are available: ...`.
    pub fn infeasible(&mut self, origin: &str, object: &str, message: String) {
        let mut d = Diagnostic::file_level(
            origin,
            manifest::Pos { line: 0, column: 0 },
            RULE_FEASIBILITY,
            message,
        );
        d.severity = Severity::Warning;
        d.object = object.to_string();
        self.report.diagnostics.push(d);
    }

    /// `live`: read from the API server (where a Pod's spec can no longer change).
    fn check_object(&mut self, file: &str, mut obj: Object, live: Option<Live>) {
        for (at, message) in &obj.warnings {
            let mut d = Diagnostic::file_level(file, *at, RULE_DUPLICATE_KEY, message.clone());
            d.severity = Severity::Warning;
            self.report.diagnostics.push(d);
        }
        let v = &obj.value;
        // kubectl refuses a document that is not a mapping (a garbled `helm template`, a stray
        // list); a mapping without kind is left alone, as config files beside manifests are.
        let shape = match v {
            Value::Object(_) => None,
            Value::Array(_) => Some("a sequence"),
            Value::String(_) => Some("a string"),
            Value::Number(_) => Some("a number"),
            Value::Bool(_) => Some("a boolean"),
            Value::Null => Some("null"),
        };
        if let Some(shape) = shape {
            self.report.diagnostics.push(Diagnostic::file_level(
                file,
                obj.start(),
                RULE_INVALID,
                format!("not an object: a manifest document is a mapping with apiVersion and kind, found {shape}"),
            ));
            return;
        }
        let (api, kind_name) = (
            v["apiVersion"].as_str().unwrap_or(""),
            v["kind"].as_str().unwrap_or(""),
        );
        if group_of(api) == ws::GROUP && kind_name == "WorkloadSpread" {
            self.report.objects += 1;
            self.report
                .checked
                .push((file.to_string(), format!("WorkloadSpread {}", name_of(v))));
            workload::strip_nulls(&mut obj.value, false);
            self.spreads.push((file.to_string(), obj));
            return;
        }
        // No kind: no Kubernetes object (a chart's Chart.yaml has an apiVersion of its own).
        match (api.is_empty(), kind_name.is_empty()) {
            (_, true) => {
                self.report
                    .kindless
                    .push(format!("{file}:{}", obj.start().line));
                return;
            }
            // A kind without its apiVersion: kubectl refuses it with these words.
            (true, false) => {
                self.report.diagnostics.push(Diagnostic::file_level(
                    file,
                    obj.start(),
                    RULE_INVALID,
                    "apiVersion not set: a manifest document is a mapping with apiVersion and kind"
                        .to_string(),
                ));
                return;
            }
            (false, false) => {}
        }
        // What kubectl apply refuses as no kind the API server serves, at the field to mend.
        let unserved = workload::unserved_version(api, kind_name)
            .map(|m| ("apiVersion", m))
            .or_else(|| workload::unknown_kind(api, kind_name).map(|u| (u.field, u.message)));
        if let Some((field, message)) = unserved {
            self.report.diagnostics.push(Diagnostic::file_level(
                file,
                obj.position(&FieldPath::fields(&[field])),
                RULE_INVALID,
                message,
            ));
            return;
        }
        let Some(kind) = Kind::from_api_version(api, kind_name) else {
            // Not judged, but its labels say which node-selection policies apply to the
            // objects after it.
            if v["apiVersion"] == "v1" && kind_name == "Namespace" {
                self.namespace_manifest(file, &obj);
            }
            self.report.skipped += 1;
            return;
        };
        // Objects read from the API server have their types already.
        let from_file = live.is_none();
        let null_unknown = if from_file {
            workload::null_fields_unknown(kind, &obj.value)
        } else {
            Vec::new()
        };
        // Read as the apiserver's decoder reads them; the objects checked alone (a ConfigMap's
        // data is never copied for this).
        workload::zero_nulls(kind, &mut obj.value);
        let v = &obj.value;
        self.report.objects += 1;
        let object = describe(kind, v);
        self.report.checked.push((file.to_string(), object.clone()));
        let on = Found {
            file,
            obj: &obj,
            object: &object,
        };
        if kind != Kind::Pod {
            // Kept for WorkloadSpreads found later (in any file), also when it cannot be read:
            // their cross-checks then say so rather than that it is missing.
            let namespace = self.namespace.as_deref().unwrap_or("");
            self.targets.add(v, namespace);
        }
        let typed = if from_file {
            workload::typed(kind, v)
        } else {
            Ok(Vec::new())
        };
        let template = match typed.and_then(|mut unknown| {
            unknown.extend(null_unknown);
            for path in unknown {
                let fp = FieldPath::parse(&path);
                self.report.diagnostics.push(on.diagnostic(
                    RULE_INVALID,
                    Severity::Error,
                    &fp,
                    unknown_field(&path),
                    Some(UNKNOWN_FIELD_HINT.into()),
                ));
            }
            workload::parse_value(kind, v)
        }) {
            Ok(t) => t,
            Err(e) => {
                let fp = FieldPath::parse(&e.path);
                let d = on.diagnostic(
                    RULE_INVALID,
                    Severity::Error,
                    &fp,
                    format!("cannot read {}: {}", e.kind, e.message),
                    None,
                );
                self.report.diagnostics.push(d);
                return;
            }
        };
        let namespace = template
            .meta
            .namespace
            .clone()
            .or_else(|| self.namespace.clone())
            .unwrap_or_default();
        if namespace.is_empty()
            && self.rules.spec.node_selection.enabled
            && !self.rules.spec.node_selection.policies.is_empty()
        {
            self.unplaced += 1;
        }
        // An object read from the API server is as stored: a Pod's `matchLabelKeys` are
        // already merged into its spread selectors, and merging them again would call every
        // such key a duplicate.
        let stored = live.is_some() || manifest::from_api_server(v);
        let input = Input {
            phase: Phase::Validate,
            operation: Operation::Create,
            namespace: &namespace,
            user: User::default(),
            object: Subject::Template(&template),
            old_object: None,
            context: Context {
                describe_patches: true,
                as_written: !stored,
                namespace_labels: self.namespaces.get(&namespace),
                ..Context::default()
            },
        };
        // What the mutating webhook would add to a live pod cannot be added any more: its
        // owner is where to act, and is judged itself.
        let (validate, mutate, placed) = match live {
            None => (true, true, Vec::new()),
            Some(l) => (l.judge, l.judge && kind != Kind::Pod, l.placed),
        };
        let mut validated = if validate {
            rules::evaluate(&input, &self.rules)
        } else {
            rules::Verdict::default()
        };
        let mutated = if !mutate {
            rules::Verdict::default()
        } else {
            rules::evaluate(
                &Input {
                    phase: Phase::Mutate,
                    ..input
                },
                &self.rules,
            )
        };
        // Said once for the namespace (in `finish`), not on every object in it.
        if validated.unchecked.iter().any(|&(rule, why)| {
            rule == rules::node_selection::ID && why == "namespace_labels_unknown"
        }) {
            validated
                .notes
                .retain(|n| n.rule != rules::node_selection::ID);
            self.unlabelled
                .entry(namespace.clone())
                .or_insert_with(|| Unlabelled {
                    first: on.diagnostic(
                        rules::node_selection::ID.as_str(),
                        Severity::Warning,
                        &FieldPath::fields(&["metadata", "namespace"]),
                        String::new(),
                        None,
                    ),
                    objects: 0,
                    late: None,
                })
                .objects += 1;
        }
        let placed = rules::Verdict {
            findings: placed,
            ..rules::Verdict::default()
        };
        let mut found: Vec<Diagnostic> = [validated, mutated, placed]
            .iter()
            .flat_map(|v| on.diagnostics(v))
            .collect();
        // What kube-apiserver itself refuses in the scheduling directives: kubectl's request
        // would fail. A live object passed it already (and newer checks ratchet on update);
        // a file taken from the API server is applied again, but a Pod's affinity selectors
        // are merged in it already.
        if validate && from_file {
            let labels = (kind == Kind::Pod && !stored).then(|| template.carried_labels());
            let refused =
                validate_scheduling(&template.spec, &template.spec_path(), labels.as_ref());
            found.extend(
                refused
                    .iter()
                    .map(|e| on.diagnostic(RULE_INVALID, Severity::Error, &e.path, e.body(), None)),
            );
        }
        self.record(found, &on);
    }

    /// The warning on the first object of a namespace whose labels were not known: which
    /// policies did not judge how many objects, and where the labels would come from.
    fn unlabelled_warning(&self, ns: &str, u: Unlabelled) -> Diagnostic {
        let policies = rules::node_selection::needing_labels(&self.rules.spec.node_selection, ns);
        let objects = match u.objects {
            1 => "this object".to_string(),
            n => format!("this object and {} more in it", n - 1),
        };
        let hint = match (&u.late, self.labels_from, self.with_cluster) {
            (Some(at), _, _) => format!(
                "its Namespace manifest ({at}) comes after them: give it first, as `kubectl apply` needs and Helm does"
            ),
            (None, LabelsFrom::Cluster, _) => format!(
                "namespace {ns:?} was not in the cluster's listing (see what the audit could not read)"
            ),
            (None, LabelsFrom::Suite, _) => format!(
                "add namespace {ns:?} to the suite's namespaces.yaml, or its Namespace manifest before the objects in it"
            ),
            (None, LabelsFrom::Manifests, true) => format!(
                "namespace {ns:?} is neither in --cluster nor in the input before its objects: add it to either"
            ),
            (None, LabelsFrom::Manifests, false) => "give its Namespace manifest before the objects in it, or `check --cluster` a dump holding it (`kubectl get namespaces -o yaml`)".to_string(),
        };
        Diagnostic {
            message: format!(
                "{} and did not judge {objects}: the labels of namespace {ns:?} are not known here",
                rules::node_selection::selecting_by_label(&policies)
            ),
            hint: Some(hint),
            ..u.first
        }
    }

    /// A Namespace manifest: its labels, for the objects after it, checked as kube-apiserver
    /// checks them (it would refuse the namespace, and every object in it after).
    fn namespace_manifest(&mut self, file: &str, obj: &Object) {
        let v = &obj.value;
        let name = v["metadata"]["name"].as_str().unwrap_or("");
        let object = format!("Namespace {name}");
        let on = Found {
            file,
            obj,
            object: &object,
        };
        let (labels, problems) = namespace_problems(v);
        for (path, message, hint) in problems {
            let d = on.diagnostic(RULE_INVALID, Severity::Error, &path, message, hint);
            self.report.diagnostics.push(d);
        }
        if name.is_empty() {
            return;
        }
        if let Some(u) = self.unlabelled.get_mut(name) {
            u.late
                .get_or_insert_with(|| format!("{file}:{}", obj.start().line));
        }
        self.namespaces.insert(name.to_string(), labels);
    }

    /// Keeps diagnostics, or counts them as suppressed when their object opts out of the rule.
    /// A rule the opt-out names that does not exist (a misspelt id suppresses nothing) is a
    /// warning of its own.
    fn record(&mut self, found: Vec<Diagnostic>, on: &Found) {
        let (ignored, reason) = ignored_rules(&on.obj.value);
        // Only the policy rules: the input's own findings (invalid-object, duplicate-key, ...)
        // are about the file, not something an object can opt out of.
        let known: Vec<&str> = crate::rules::all_rules().map(|m| m.id.as_str()).collect();
        for id in ignored.iter().filter(|r| !known.contains(&r.as_str())) {
            let path = FieldPath::new("metadata.annotations").key(IGNORE_ANNOTATION);
            let hint = if crate::ci::report::rule_ids().contains(&id.as_str()) {
                format!("{id} findings say the input cannot be read as written, which no object can opt out of; this one suppresses nothing (mend the input, or leave its file out with --exclude)")
            } else {
                "the annotation names rule ids as `placement-guard rules --list` shows them; this one suppresses nothing".to_string()
            };
            self.report.diagnostics.push(on.diagnostic(
                RULE_INVALID,
                Severity::Warning,
                &path,
                format!(
                    "Unsupported value: {id:?}: supported values: {}",
                    known.iter().map(|k| format!("{k:?}")).collect::<Vec<_>>().join(", ")
                ),
                Some(hint),
            ));
        }
        for d in found {
            if ignored.contains(&d.rule) && known.contains(&d.rule.as_str()) {
                self.report.suppressed.push(Suppressed {
                    file: d.file,
                    line: d.line,
                    object: d.object,
                    rule: d.rule,
                    reason: reason.clone(),
                });
            } else {
                self.report.diagnostics.push(d);
            }
        }
    }

    /// Judges the WorkloadSpreads (validation, duplicates, and the cross-checks against targets
    /// found anywhere in the input) and returns the sorted report.
    pub fn finish(mut self) -> Report {
        if self.unplaced > 0 {
            self.report.notes.push(format!(
                "{} object(s) name no namespace, so no node-selection policy applied to them; pass -n NAMESPACE, the namespace `kubectl apply -n` will create them in",
                self.unplaced
            ));
        }
        for (ns, u) in std::mem::take(&mut self.unlabelled) {
            let d = self.unlabelled_warning(&ns, u);
            self.report.diagnostics.push(d);
        }
        let spreads = std::mem::take(&mut self.spreads);
        let mut claimed: Vec<((String, String, String, String), String)> = Vec::new();
        for (file, obj) in &spreads {
            let v = &obj.value;
            // Created in `-n`'s namespace when it names none, as kubectl apply -n creates it.
            let ns = v["metadata"]["namespace"]
                .as_str()
                .or(self.namespace.as_deref())
                .unwrap_or("");
            let object = format!(
                "WorkloadSpread {}",
                if ns.is_empty() {
                    name_of(v)
                } else {
                    format!("{ns}/{}", name_of(v))
                }
            );
            let spread = match ws::WorkloadSpread::from_value(v) {
                Ok(s) => s,
                Err(e) => {
                    let on = Found {
                        file,
                        obj,
                        object: &object,
                    };
                    let path = FieldPath::parse(&e.path);
                    let d = on.diagnostic(
                        RULE_INVALID,
                        Severity::Error,
                        &path,
                        format!("cannot read WorkloadSpread: {}", e.message),
                        None,
                    );
                    self.report.diagnostics.push(d);
                    continue;
                }
            };
            let id = spread.target().map(|(g, k, n)| (g, k, ns.to_string(), n));
            // Kruise passes over a WorkloadSpread of the same name: the same object given twice
            // (two overlays of one base) is not a conflict with itself.
            let claimed_by = id.as_ref().and_then(|id| {
                if !claimed.iter().any(|(t, _)| t == id) {
                    claimed.push((id.clone(), object.clone()));
                }
                claimed
                    .iter()
                    .find(|(t, o)| t == id && *o != object)
                    .map(|(_, o)| o.clone())
            });
            // Whether the target was in the input at all, whatever its spec.
            let mut present = false;
            let found = match id.as_ref().map(|id| self.targets.find(id)) {
                Some(Ok(w)) => {
                    present = w.is_some();
                    w.and_then(|w| Some((w.spec()?, w)))
                }
                Some(Err(e)) => {
                    self.report.diagnostics.push(Diagnostic::file_level(
                        file,
                        manifest::Pos { line: 1, column: 1 },
                        RULE_UNREADABLE,
                        format!("cannot read back the workloads kept for WorkloadSpreads: {e}"),
                    ));
                    continue;
                }
                None => None,
            };
            if let (Some((group, kind, _, name)), None) = (&id, &found) {
                let why = if present {
                    // Its own finding says why.
                    "could not be read".to_string()
                } else if self.with_cluster {
                    "is not in the input nor in --cluster".to_string()
                } else {
                    "is not in the input".to_string()
                };
                self.report.notes.push(format!(
                    "{file}: {object}: its target {kind}.{group} {name} {why}; the cross-checks against it were skipped"
                ));
            }
            let target = found.as_ref().map(|(spec, w)| Target {
                spec,
                replicas: w.replicas,
                template: Some(&w.template),
                claims: &w.claims,
                selector: w.selector.as_ref(),
            });
            let input = Input {
                phase: Phase::Validate,
                operation: Operation::Create,
                namespace: ns,
                user: User::default(),
                object: Subject::WorkloadSpread(&spread),
                old_object: None,
                context: Context {
                    spread_target: target,
                    spread_claimed_by: claimed_by.as_deref(),
                    ..Context::default()
                },
            };
            let verdict = rules::evaluate(&input, &self.rules);
            let on = Found {
                file,
                obj,
                object: &object,
            };
            let found = on.diagnostics(&verdict);
            self.record(found, &on);
        }
        self.report.sort();
        self.report
    }
}

/// Where findings of one object are reported.
struct Found<'a> {
    file: &'a str,
    obj: &'a Object,
    object: &'a str,
}

impl Found<'_> {
    /// The one constructor of an object's diagnostics.
    fn diagnostic(
        &self,
        rule: &str,
        severity: Severity,
        path: &FieldPath,
        message: String,
        hint: Option<String>,
    ) -> Diagnostic {
        let written = crate::kruise::workloadspread::written_path(path);
        let pos = self.obj.position(written.as_ref().unwrap_or(path));
        Diagnostic {
            file: self.file.to_string(),
            line: pos.line,
            column: pos.column,
            rule: rule.to_string(),
            severity,
            object: self.object.to_string(),
            path: path.to_string(),
            message,
            hint,
        }
    }

    /// A verdict as diagnostics: denials are errors; warnings, notes and the patches the
    /// webhook would make are warnings.
    fn diagnostics(&self, v: &Verdict) -> Vec<Diagnostic> {
        let findings = v.findings.iter().map(|f| {
            let severity = match f.action {
                Action::Deny => Severity::Error,
                Action::Warn => Severity::Warning,
            };
            self.diagnostic(
                f.rule.as_str(),
                severity,
                &f.error.path,
                f.error.body(),
                f.hint.clone(),
            )
        });
        let patches = v.patches.iter().map(|p| {
            self.diagnostic(
                p.rule.as_str(),
                Severity::Warning,
                &p.path,
                p.summary.clone(),
                p.hint.clone(),
            )
        });
        let notes = v.notes.iter().map(|n| {
            self.diagnostic(
                n.rule.as_str(),
                Severity::Warning,
                &n.path,
                n.message.clone(),
                None,
            )
        });
        findings.chain(patches).chain(notes).collect()
    }
}

/// The Namespaces of a file that holds only Namespaces (a test suite's namespaces.yaml,
/// `review --namespaces`; `kubectl get namespaces -o yaml` as it is): their labels by name.
/// Whatever kube-apiserver would refuse in one, another kind, a namespace given twice or no
/// namespace at all is an error (`line:column: ...`, as a manifest's parse error is): a label
/// left out would quietly leave the policies that select by it unapplied.
pub fn namespaces_of(text: &str) -> Result<NamespaceLabels, String> {
    let objects = manifest::parse(text).map_err(|e| e.to_string())?;
    let mut out = NamespaceLabels::new();
    for o in &objects {
        let at = o.start();
        let Some((name, labels)) = namespace_object(o)? else {
            let kind = o.value["kind"].as_str().unwrap_or("an object without kind");
            return Err(format!(
                "{}:{}: {kind}: only v1 Namespaces belong here (their labels are what this file gives)",
                at.line, at.column
            ));
        };
        if out.insert(name.clone(), labels).is_some() {
            return Err(format!(
                "{}:{}: Namespace {name}: given twice",
                at.line, at.column
            ));
        }
    }
    if out.is_empty() {
        return Err("1:1: no Namespace in it".to_string());
    }
    Ok(out)
}

/// A v1 Namespace's name and labels (`None` for another kind); an error (`line:column: ...`)
/// for the first thing kube-apiserver would refuse in it.
fn namespace_object(o: &Object) -> Result<Option<(String, Labels)>, String> {
    let v = &o.value;
    if v["apiVersion"] != "v1" || v["kind"] != "Namespace" {
        return Ok(None);
    }
    let name = v["metadata"]["name"].as_str().unwrap_or("");
    let (labels, problems) = namespace_problems(v);
    if let Some((path, message, _)) = problems.into_iter().next() {
        let at = o.position(&path);
        return Err(format!(
            "{}:{}: Namespace {name}: {path}: {message}",
            at.line, at.column
        ));
    }
    Ok(Some((name.to_string(), labels)))
}

type Labels = BTreeMap<String, String>;

/// A Namespace manifest's labels, and what kube-apiserver would refuse in it (path, message,
/// hint): a field it does not know (strict field validation, kubectl's default), a value of
/// the wrong type, its name, its labels.
fn namespace_problems(v: &Value) -> (Labels, Vec<(FieldPath, String, Option<String>)>) {
    let mut out = Vec::new();
    let (labels, wrong) = namespace_labels(v);
    let at_labels = FieldPath::fields(&["metadata", "labels"]);
    for (k, value) in &wrong {
        let e = FieldError::invalid(at_labels.key(k), value.clone(), NOT_A_STRING);
        out.push((e.path.clone(), e.body(), None));
    }
    // Read with the labels as stored (null is "", the refused ones out of the way), so that
    // only what is not said above is said.
    let mut stored = v.clone();
    if stored["metadata"]["labels"].is_object() {
        stored["metadata"]["labels"] = serde_json::json!(labels);
    }
    match workload::typed_namespace(&stored) {
        Ok(unknown) => {
            for path in unknown {
                let message = unknown_field(&path);
                out.push((
                    FieldPath::parse(&path),
                    message,
                    Some(UNKNOWN_FIELD_HINT.into()),
                ));
            }
        }
        Err(e) => out.push((
            FieldPath::parse(&e.path),
            format!("cannot read Namespace: {}", e.message),
            None,
        )),
    }
    let at_name = FieldPath::fields(&["metadata", "name"]);
    match v["metadata"]["name"].as_str().unwrap_or("") {
        "" => out.push((
            at_name,
            "Required value: name or generateName is required".to_string(),
            None,
        )),
        name => {
            for m in dns1123_label_errors(name) {
                let e = FieldError::invalid(at_name.clone(), serde_json::json!(name), m);
                out.push((e.path.clone(), e.body(), None));
            }
        }
    }
    for e in validate_labels(&labels, &at_labels) {
        out.push((e.path.clone(), e.body(), None));
    }
    (labels, out)
}

const NOT_A_STRING: &str = "must be a string (quote it to make it a string)";

/// What `check` says of a field kube-apiserver does not know, at `path`.
fn unknown_field(path: &str) -> String {
    let field = path.rsplit(['.', '[']).next().unwrap_or(path);
    format!("unknown field {:?}: kube-apiserver's strict field validation (kubectl's default) refuses the object, and without it the field is dropped", field.trim_end_matches(']'))
}

const UNKNOWN_FIELD_HINT: &str =
    "check its spelling and where it is nested against the API reference (`kubectl explain`)";

/// A Namespace's labels as kube-apiserver stores them (a null value is the empty string, as
/// Go decodes it), with the `kubernetes.io/metadata.name` label it gives every namespace; and
/// the values it would refuse (not strings).
fn namespace_labels(v: &Value) -> (BTreeMap<String, String>, Vec<(String, Value)>) {
    let (mut labels, mut wrong) = (BTreeMap::new(), Vec::new());
    for (k, value) in v["metadata"]["labels"].as_object().into_iter().flatten() {
        match value {
            Value::String(s) => {
                labels.insert(k.clone(), s.clone());
            }
            Value::Null => {
                labels.insert(k.clone(), String::new());
            }
            other => wrong.push((k.clone(), other.clone())),
        }
    }
    if let Some(name) = v["metadata"]["name"].as_str() {
        labels.insert("kubernetes.io/metadata.name".into(), name.to_string());
    }
    (labels, wrong)
}

fn name_of(v: &Value) -> String {
    v["metadata"]["name"]
        .as_str()
        .unwrap_or("<unnamed>")
        .to_string()
}

fn describe(kind: Kind, value: &Value) -> String {
    let meta = &value["metadata"];
    let name = meta["name"]
        .as_str()
        .or(meta["generateName"].as_str())
        .unwrap_or("<unnamed>");
    match meta["namespace"].as_str() {
        Some(ns) if !ns.is_empty() => format!("{} {ns}/{name}", kind.display()),
        _ => format!("{} {name}", kind.display()),
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

#[cfg(test)]
mod tests;
