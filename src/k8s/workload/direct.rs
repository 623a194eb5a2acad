//! The pod template views read by hand from the on-demand reader, for the admission path.
//!
//! serde's derived visitors cost about 300 instructions a field read or passed over (a key
//! identified, an `Option` slot, results threaded through generic layers); a request carries
//! some 120 of them, most of the cost of a review. Here the views' own fields are matched by
//! hand, as are the k8s-openapi scheduling types inside them (affinity, spread constraints,
//! selectors, tolerations, gates: `api`); resources, owner references, overhead, ports and a
//! ReplicationController's selector still go through their serde implementations on the same
//! reader.
//!
//! Whatever is not of the plain shape serde would read the same way (a duplicate key, an array
//! for a struct, an escaped key, a number where a string goes) is an error here, and the caller
//! reads the object again with serde: this reader gives serde's result or none. The tests hold
//! it to the derived implementations: the same result on every recorded object and on mutated
//! ones, and the same field names as each view's derived `Deserialize`.

use std::collections::BTreeMap;
use std::ops::Range;

use serde::de::Error as _;
use serde::Deserialize;
use serde_json::Error;

use super::{check_kind, defaulted_selector, selector_from, Kind, PodTemplate, KUEUE_QUEUE_LABEL};
use crate::k8s::model::{kept_annotation, Container, ObjectMeta, PodSpec};
use crate::k8s::ondemand::{Deserializer, Shape};
use k8s_openapi::api::core::v1::Toleration;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// One bit a field: a second occurrence is an error (serde's `duplicate field` for the derived
/// views; k8s-openapi's types let a repeat overwrite, and serde reads those bodies).
struct Seen(u32);

impl Seen {
    fn first(&mut self, field: usize) -> Result<(), Error> {
        let bit = 1 << field;
        if self.0 & bit != 0 {
            return Err(Error::custom("duplicate field"));
        }
        self.0 |= bit;
        Ok(())
    }
}

/// How much of an object to read, beyond the kind and the pod spec's scheduling fields
/// (nodeName, nodeSelector, affinity, schedulingGates, topologySpreadConstraints).
/// What is not read is skipped like any unread value (structure checked) and left empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    /// The object's and the template's metadata, a workload's selector, a Job's
    /// `manualSelector` and `suspend` (a CronJob's Jobs', and their queue label): not compared of an
    /// UPDATE's old object (skipping them spares a gated pod UPDATE a sixth of its reading). A
    /// Pod UPDATE's new object is read without it too, its metadata read afterwards
    /// ([`pod_metadata`]) only when a rule asks ([`crate::rules::reads_metadata`]).
    pub identity: bool,
    /// Containers, init containers, overhead, pod-level resources, runtimeClassName and
    /// hostNetwork (which gives
    /// a DaemonSet's pods one more toleration, so also read with the tolerations): read only for
    /// rules that place pods
    /// ([`crate::rules::reads_resources`]).
    pub resources: bool,
    /// Tolerations: read only for rules that compare or place them
    /// ([`crate::rules::reads_tolerations`]); every pod carries the two DefaultTolerationSeconds
    /// adds, a tenth of reading a pod. A Pod UPDATE's new object may be read without them, and
    /// they are read afterwards unless the old object's are the same text
    /// ([`Noted::pass_over_tolerations`]).
    pub tolerations: bool,
}

impl Part {
    pub const WHOLE: Part = Part {
        identity: true,
        resources: true,
        tolerations: true,
    };
    /// What rules compare of an UPDATE's old object, tolerations included.
    pub const SCHEDULING: Part = Part {
        identity: false,
        resources: false,
        tolerations: true,
    };

    /// Whether a [`pod_spec_field`] is read.
    fn reads(self, field: usize) -> bool {
        match field {
            3 => self.tolerations,
            // hostNetwork gives a DaemonSet's pods one more toleration.
            10 => self.tolerations || self.resources,
            6.. => self.resources,
            _ => true,
        }
    }
}

/// Where an UPDATE's new object's values lie in the body, by key: its top-level values that
/// are non-empty containers, and every value of its pod spec (consecutive entries, so that a
/// run of them can be compared at once).
#[derive(Debug, Default)]
pub struct Noted<'de> {
    top: Vec<(&'de str, Range<usize>)>,
    spec: Vec<(&'de str, Range<usize>)>,
    /// What of the new object was read (what was not cannot be taken from it).
    part: Option<Part>,
    /// Its tolerations were passed over, as only their changes are read: the old object's are
    /// then taken unread where their text is the same, and read (both) where it is not.
    tolerations_passed_over: bool,
}

impl Noted<'_> {
    /// Where the new object's top-level `key` lies, when it is a non-empty container.
    pub fn top_value(&self, key: &str) -> Option<Range<usize>> {
        noted_value(&self.top, &mut 0, key)
    }

    /// Where the new object's pod spec value for `key` lies.
    pub fn spec_value(&self, key: &str) -> Option<Range<usize>> {
        noted_value(&self.spec, &mut 0, key)
    }

    /// The new pod's tolerations are to be passed over (its [`Part`] without them): a rule
    /// that only compares the two pods' asks for them only where the update changed them
    /// ([`crate::rules::reads_unchanged_tolerations`]). After the old object, they are read
    /// with [`pod_tolerations`] unless [`Echo::Reuse`] took the old object's as the same text.
    pub fn pass_over_tolerations(&mut self) {
        self.tolerations_passed_over = true;
    }
}

/// A pod spec's tolerations, read whole: for tolerations passed over first
/// ([`Noted::pass_over_tolerations`]).
pub fn pod_tolerations(de: &mut Deserializer) -> Result<Option<Vec<Toleration>>, Error> {
    opt_vec(de, api::toleration)
}

/// A Pod's metadata, read whole: what [`Part::identity`] reads, for metadata passed over first.
pub fn pod_metadata(de: &mut Deserializer) -> Result<ObjectMeta, Error> {
    object_meta(de, Part::WHOLE)
}

/// kube-apiserver sends an UPDATE's old object after the new one, and an update changes few
/// fields: a value of the old object whose text is the new object's value for the same key is
/// taken from the new object (a byte comparison) instead of being read again. Both objects
/// sit at the same depth of the review and are read as the same kind, so a copy reads as its
/// original did.
pub enum Echo<'a, 'de> {
    Off,
    /// Reading the new object: note where its values lie.
    Note(&'a mut Noted<'de>),
    /// Reading the old object: take what is unchanged from the new one. `top` and `spec` are
    /// where the next key is looked for first (the keys come in the same order);
    /// `tolerations_taken`: the tolerations were taken from the new object (when it passed them
    /// over, the same text, so neither pod's needs reading).
    Reuse {
        noted: &'a Noted<'de>,
        new: &'a PodTemplate,
        top: usize,
        spec: usize,
        tolerations_taken: bool,
    },
}

/// Where `key` is in `noted`, looked for at `*at` first; `*at` moves past it.
fn noted_index(noted: &[(&str, Range<usize>)], at: &mut usize, key: &str) -> Option<usize> {
    let i = match noted.get(*at) {
        Some((k, _)) if *k == key => *at,
        _ => noted.iter().position(|(k, _)| *k == key)?,
    };
    *at = i + 1;
    Some(i)
}

/// The extent of `key`'s value in `noted`, looked for at `*at` first.
fn noted_value(noted: &[(&str, Range<usize>)], at: &mut usize, key: &str) -> Option<Range<usize>> {
    noted_index(noted, at, key).map(|i| noted[i].1.clone())
}

/// Which of [`Noted`]'s lists a value goes to.
#[derive(Clone, Copy)]
enum Level {
    Top,
    Spec,
}

impl<'de> Echo<'_, 'de> {
    /// Where the next value starts, when it is to be noted: at the top level only non-empty
    /// containers are (a scalar or a short string is skipped faster than it is compared); in
    /// the pod spec every value is, as runs of entries are compared whole.
    #[inline]
    fn note_start(&self, level: Level, de: &mut Deserializer) -> Option<usize> {
        match (self, level) {
            (Echo::Note(_), Level::Spec) => {
                de.at_value();
                Some(de.position())
            }
            (Echo::Note(_), Level::Top) if de.worth_copying() => Some(de.position()),
            _ => None,
        }
    }

    #[inline]
    fn note(&mut self, level: Level, key: &'de str, start: Option<usize>, de: &Deserializer) {
        if let (Echo::Note(noted), Some(start)) = (self, start) {
            let list = match level {
                Level::Top => &mut noted.top,
                Level::Spec => &mut noted.spec,
            };
            list.push((key, start..de.position()));
        }
    }

    /// Consumes an old object's top-level value that is the new object's (skipped whole).
    #[inline]
    fn reuse_top(&mut self, de: &mut Deserializer, key: &str) -> bool {
        match self {
            Echo::Reuse { noted, top, .. } if de.worth_copying() => {
                noted_value(&noted.top, top, key).is_some_and(|of| de.skip_copy(of, true))
            }
            _ => false,
        }
    }

    /// Consumes an old object's pod spec value that is the new object's, taking what this
    /// reader would have read of it from the new object's `spec`, and the entries after it
    /// while their text is the new object's too (an update changes one or two fields: the
    /// rest of the spec is consumed in a few comparisons instead of key by key).
    fn reuse_spec(
        &mut self,
        de: &mut Deserializer,
        key: &str,
        part: Part,
        seen: &mut Seen,
        spec: &mut PodSpec,
    ) -> Result<bool, Error> {
        let Echo::Reuse {
            noted,
            new,
            spec: at,
            tolerations_taken,
            ..
        } = self
        else {
            return Ok(false);
        };
        let Some(i) = noted_index(&noted.spec, at, key) else {
            return Ok(false);
        };
        let take = |f: Option<usize>| {
            // Passed over in the new object: the same text needs no comparing, so neither is
            // read; nor hostNetwork, read with them only for a DaemonSet's pods.
            if noted.tolerations_passed_over && (f == Some(3) || (f == Some(10) && !part.resources))
            {
                return Some(None);
            }
            let read = f.filter(|&f| part.reads(f));
            // Taken only when the new object read the field as this one would.
            read.is_none_or(|f| noted.part.is_some_and(|p| p.reads(f)))
                .then_some(read)
        };
        let field = pod_spec_field(key);
        let Some(read) = take(field) else {
            return Ok(false);
        };
        if !de.skip_copy(noted.spec[i].1.clone(), read.is_none()) {
            return Ok(false);
        }
        if let Some(f) = field {
            seen.first(f)?;
        }
        *tolerations_taken |= field == Some(3);
        take_field(read, spec, &new.spec);
        let mut last = i;
        while let Some((key, value)) = noted.spec.get(last + 1) {
            let field = pod_spec_field(key);
            let Some(read) = take(field) else {
                break;
            };
            if !de.skip_same_entry(noted.spec[last].1.end..value.end) {
                break;
            }
            if let Some(f) = field {
                seen.first(f)?;
            }
            *tolerations_taken |= field == Some(3);
            take_field(read, spec, &new.spec);
            last += 1;
        }
        *at = last + 1;
        Ok(true)
    }
}

/// Sets an old object's pod spec field `read` ([`pod_spec_field`]) to the new object's.
fn take_field(read: Option<usize>, spec: &mut PodSpec, n: &PodSpec) {
    match read {
        Some(0) => spec.node_name.clone_from(&n.node_name),
        Some(1) => spec.node_selector.clone_from(&n.node_selector),
        Some(2) => spec.affinity.clone_from(&n.affinity),
        Some(3) => spec.tolerations.clone_from(&n.tolerations),
        Some(4) => spec.scheduling_gates.clone_from(&n.scheduling_gates),
        Some(5) => spec
            .topology_spread_constraints
            .clone_from(&n.topology_spread_constraints),
        Some(6) => spec.containers.clone_from(&n.containers),
        Some(7) => spec.init_containers.clone_from(&n.init_containers),
        Some(8) => spec.overhead.clone_from(&n.overhead),
        Some(9) => spec.resources.clone_from(&n.resources),
        Some(10) => spec.host_network = n.host_network,
        Some(11) => spec.runtime_class_name.clone_from(&n.runtime_class_name),
        _ => {}
    }
}

/// The pod template of an object of `kind`, or an error when serde must read it.
#[cfg(test)]
fn template(kind: Kind, part: Part, de: &mut Deserializer) -> Result<PodTemplate, Error> {
    template_echo(kind, part, de, &mut Echo::Off)
}

/// [`template`], noting or reusing values as `echo` says.
#[cfg(test)]
fn template_echo<'de>(
    kind: Kind,
    part: Part,
    de: &mut Deserializer<'de>,
    echo: &mut Echo<'_, 'de>,
) -> Result<PodTemplate, Error> {
    let mut t = PodTemplate::empty(kind);
    template_into(kind, part, de, echo, &mut t)?;
    Ok(t)
}

/// Reads an object of `kind` into `t` ([`PodTemplate::empty`]), noting or reusing values as
/// `echo` says. Each part is read in place: a template is some 800 bytes, and returning it
/// through each layer moved it six times (2k instructions of `memcpy` an UPDATE).
pub(super) fn template_into<'de>(
    kind: Kind,
    part: Part,
    de: &mut Deserializer<'de>,
    echo: &mut Echo<'_, 'de>,
    t: &mut PodTemplate,
) -> Result<(), Error> {
    if let Echo::Note(noted) = echo {
        noted.part = Some(part);
        // Room for a pod spec's entries as kube-apiserver sends them (some 20): noting them
        // would otherwise grow the list four times.
        noted.spec.reserve(32);
    }
    let declared = match kind {
        Kind::Pod => object_with(de, part, "spec", echo, &mut t.meta, |de, echo| {
            pod_spec(de, part, echo, &mut t.spec)
        })?,
        Kind::PodTemplate => {
            let template_meta = t.template_meta.insert(ObjectMeta::default());
            object_with(de, part, "template", echo, &mut t.meta, |de, echo| {
                template_view(de, part, echo, template_meta, &mut t.spec)
            })?
        }
        _ => {
            let template_meta = t.template_meta.insert(ObjectMeta::default());
            let mut selection = Selection {
                selector: Selector::Absent,
                manual: false,
                suspend: false,
            };
            let declared = object_with(de, part, "spec", echo, &mut t.meta, |de, echo| {
                let mut read = |de: &mut Deserializer<'de>, echo: &mut Echo<'_, 'de>| {
                    workload_spec(
                        kind,
                        de,
                        part,
                        echo,
                        &mut selection,
                        template_meta,
                        &mut t.spec,
                    )
                };
                if kind != Kind::CronJob {
                    return read(de, echo);
                }
                let mut seen = Seen(0);
                de.read_object(|de, key| match key {
                    "jobTemplate" => {
                        seen.first(0)?;
                        let mut inner = Seen(0);
                        de.read_object(|de, key| match key {
                            "metadata" => {
                                inner.first(1)?;
                                let meta = object_meta(de, part)?;
                                t.queued_jobs = meta.labels().contains_key(KUEUE_QUEUE_LABEL);
                                Ok(())
                            }
                            "spec" => {
                                inner.first(0)?;
                                read(de, echo)
                            }
                            _ => de.skip_value(),
                        })
                    }
                    _ => de.skip_value(),
                })
            })?;
            let selector = match selection.selector {
                Selector::Absent => None,
                Selector::Read(s) => Some(s),
                Selector::Value(v) => selector_from(Some(v)),
            };
            t.selector = defaulted_selector(kind, selector, template_meta);
            t.manual_selector = selection.manual;
            t.suspended = selection.suspend;
            declared
        }
    };
    check_kind(kind, &declared).map_err(|e| Error::custom(e.message))
}

/// A workload's `spec.selector` and a Job's `spec.manualSelector` and `spec.suspend`, as read.
struct Selection {
    selector: Selector,
    manual: bool,
    suspend: bool,
}

/// A workload's `spec.selector` as read.
enum Selector {
    Absent,
    Read(LabelSelector),
    /// A ReplicationController's (a map of labels, or a selector).
    Value(serde_json::Value),
}

/// `{kind, metadata, <body>}` (a Pod's body is `spec`, a PodTemplate's `template`): the
/// metadata read into `meta`, the body read by `read`; the declared kind returned.
fn object_with<'a, 'de>(
    de: &mut Deserializer<'de>,
    part: Part,
    body: &str,
    echo: &mut Echo<'a, 'de>,
    meta: &mut ObjectMeta,
    mut read: impl FnMut(&mut Deserializer<'de>, &mut Echo<'a, 'de>) -> Result<(), Error>,
) -> Result<Option<String>, Error> {
    let mut declared = None;
    let mut seen = Seen(0);
    de.read_object(|de, key| {
        let start = echo.note_start(Level::Top, de);
        match key {
            "kind" => {
                seen.first(0)?;
                declared = de.read_opt_string()?;
            }
            "metadata" => {
                seen.first(1)?;
                // Only skipped metadata is taken from the new object (the old one's is).
                if part.identity || !echo.reuse_top(de, key) {
                    *meta = object_meta(de, part)?;
                }
            }
            k if k == body => {
                seen.first(2)?;
                read(de, echo)?;
            }
            _ => {
                if !echo.reuse_top(de, key) {
                    de.skip_value()?;
                }
            }
        }
        echo.note(Level::Top, key, start, de);
        Ok(())
    })?;
    Ok(declared)
}

fn workload_spec<'de>(
    kind: Kind,
    de: &mut Deserializer<'de>,
    part: Part,
    echo: &mut Echo<'_, 'de>,
    selection: &mut Selection,
    template_meta: &mut ObjectMeta,
    spec: &mut PodSpec,
) -> Result<(), Error> {
    let mut seen = Seen(0);
    de.read_object(|de, key| match key {
        "manualSelector" => {
            seen.first(2)?;
            if !part.identity {
                return de.skip_as(Shape::Scalar);
            }
            selection.manual = Option::<bool>::deserialize(&mut *de)? == Some(true);
            Ok(())
        }
        "suspend" => {
            seen.first(3)?;
            if !part.identity {
                return de.skip_as(Shape::Scalar);
            }
            selection.suspend = Option::<bool>::deserialize(&mut *de)? == Some(true);
            Ok(())
        }
        "selector" => {
            seen.first(0)?;
            if !part.identity {
                // serde's view reads any value here.
                return de.skip_value();
            }
            if de.read_null() {
                return Ok(());
            }
            selection.selector = if kind == Kind::ReplicationController {
                Selector::Value(serde_json::Value::deserialize(&mut *de)?)
            } else {
                Selector::Read(api::workload_selector(de)?)
            };
            Ok(())
        }
        "template" => {
            seen.first(1)?;
            template_view(de, part, echo, template_meta, spec)
        }
        _ => de.skip_value(),
    })
}

fn template_view<'de>(
    de: &mut Deserializer<'de>,
    part: Part,
    echo: &mut Echo<'_, 'de>,
    meta: &mut ObjectMeta,
    spec: &mut PodSpec,
) -> Result<(), Error> {
    let mut seen = Seen(0);
    de.read_object(|de, key| match key {
        "metadata" => {
            seen.first(0)?;
            *meta = object_meta(de, part)?;
            Ok(())
        }
        "spec" => {
            seen.first(1)?;
            pod_spec(de, part, echo, spec)
        }
        _ => de.skip_value(),
    })
}

fn object_meta(de: &mut Deserializer, part: Part) -> Result<ObjectMeta, Error> {
    let mut meta = ObjectMeta::default();
    if !part.identity {
        // Skipped, but an object as the view requires (anything else goes to serde).
        if !de.at_object() {
            return Err(Error::custom("metadata is not an object"));
        }
        return de.skip_value().map(|()| meta);
    }
    let mut seen = Seen(0);
    de.read_object(|de, key| {
        match key {
            "name" => {
                seen.first(0)?;
                meta.name = de.read_opt_string()?;
            }
            "generateName" => {
                seen.first(1)?;
                meta.generate_name = de.read_opt_string()?;
            }
            "namespace" => {
                seen.first(2)?;
                meta.namespace = de.read_opt_string()?;
            }
            "labels" => {
                seen.first(3)?;
                meta.labels = opt_string_map(de)?;
            }
            "annotations" => {
                seen.first(4)?;
                meta.annotations = own_annotations(de)?;
            }
            "ownerReferences" => {
                seen.first(5)?;
                meta.owner_references = Deserialize::deserialize(&mut *de)?;
            }
            _ => de.skip_value()?,
        }
        Ok(())
    })?;
    Ok(meta)
}

/// The pod spec's fields read here, as [`Seen`] bits; tolerations only with
/// [`Part::tolerations`], from 6 on (containers, initContainers, overhead, resources,
/// hostNetwork, runtimeClassName) only with [`Part::resources`] (hostNetwork also with the tolerations:
/// [`Part::reads`]).
fn pod_spec_field(key: &str) -> Option<usize> {
    Some(match key {
        "nodeName" => 0,
        "nodeSelector" => 1,
        "affinity" => 2,
        "tolerations" => 3,
        "schedulingGates" => 4,
        "topologySpreadConstraints" => 5,
        "containers" => 6,
        "initContainers" => 7,
        "overhead" => 8,
        "resources" => 9,
        "hostNetwork" => 10,
        "runtimeClassName" => 11,
        _ => return None,
    })
}

fn pod_spec<'de>(
    de: &mut Deserializer<'de>,
    part: Part,
    echo: &mut Echo<'_, 'de>,
    spec: &mut PodSpec,
) -> Result<(), Error> {
    let mut seen = Seen(0);
    de.read_object(|de, key| {
        if echo.reuse_spec(de, key, part, &mut seen, spec)? {
            return Ok(());
        }
        let start = echo.note_start(Level::Spec, de);
        match key {
            "nodeName" => {
                seen.first(0)?;
                spec.node_name = de.read_opt_string()?;
            }
            "nodeSelector" => {
                seen.first(1)?;
                spec.node_selector = opt_string_map(de)?;
            }
            "affinity" => {
                seen.first(2)?;
                spec.affinity = opt(de, api::affinity)?;
            }
            "tolerations" => {
                seen.first(3)?;
                if part.tolerations {
                    spec.tolerations = opt_vec(de, api::toleration)?;
                } else {
                    de.skip_as(Shape::Array)?;
                }
            }
            "schedulingGates" => {
                seen.first(4)?;
                spec.scheduling_gates = opt_vec(de, api::scheduling_gate)?;
            }
            "topologySpreadConstraints" => {
                seen.first(5)?;
                spec.topology_spread_constraints = opt_vec(de, api::topology_spread_constraint)?;
            }
            "containers" => {
                seen.first(6)?;
                if part.resources {
                    spec.containers = opt_vec(de, container)?.unwrap_or_default();
                } else {
                    de.skip_as(Shape::Array)?;
                }
            }
            "initContainers" => {
                seen.first(7)?;
                if part.resources {
                    spec.init_containers = opt_vec(de, container)?.unwrap_or_default();
                } else {
                    de.skip_as(Shape::Array)?;
                }
            }
            "overhead" => {
                seen.first(8)?;
                if part.resources {
                    spec.overhead = Deserialize::deserialize(&mut *de)?;
                } else {
                    de.skip_as(Shape::Object)?;
                }
            }
            "resources" => {
                seen.first(9)?;
                if part.resources {
                    spec.resources = Deserialize::deserialize(&mut *de)?;
                } else {
                    de.skip_as(Shape::Object)?;
                }
            }
            "hostNetwork" => {
                seen.first(10)?;
                if part.reads(10) {
                    spec.host_network = Option::<bool>::deserialize(&mut *de)?;
                } else {
                    de.skip_as(Shape::Scalar)?;
                }
            }
            "runtimeClassName" => {
                seen.first(11)?;
                if part.resources {
                    spec.runtime_class_name = de.read_opt_string()?;
                } else {
                    de.skip_as(Shape::Scalar)?;
                }
            }
            _ => de.skip_value()?,
        }
        echo.note(Level::Spec, key, start, de);
        Ok(())
    })?;
    Ok(())
}

fn container(de: &mut Deserializer) -> Result<Container, Error> {
    let mut c = Container::default();
    let mut seen = Seen(0);
    de.read_object(|de, key| {
        match key {
            "resources" => {
                seen.first(0)?;
                c.resources = Deserialize::deserialize(&mut *de)?;
            }
            "ports" => {
                seen.first(1)?;
                c.ports = Option::<Vec<_>>::deserialize(&mut *de)?.unwrap_or_default();
            }
            "restartPolicy" => {
                seen.first(2)?;
                c.restart_policy = de.read_opt_string()?;
            }
            "name" => {
                seen.first(3)?;
                c.name = de.read_opt_string()?;
            }
            _ => de.skip_value()?,
        }
        Ok(())
    })?;
    Ok(c)
}

/// A map of strings (labels, a node selector): a repeated key keeps its last value, as a
/// `BTreeMap` does under serde.
fn opt_string_map(de: &mut Deserializer) -> Result<Option<BTreeMap<String, String>>, Error> {
    opt(de, |de| {
        let mut map = BTreeMap::new();
        de.read_object(|de, key| {
            map.insert(key.to_owned(), de.read_string()?);
            Ok(())
        })?;
        Ok(map)
    })
}

/// [`ObjectMeta::annotations`]: only this tool's own.
fn own_annotations(de: &mut Deserializer) -> Result<Option<BTreeMap<String, String>>, Error> {
    opt(de, |de| {
        let mut own = BTreeMap::new();
        de.read_object(|de, key| {
            if kept_annotation(key) {
                own.insert(key.to_owned(), de.read_string()?);
                Ok(())
            } else {
                de.skip_value()
            }
        })?;
        Ok(own)
    })
}

/// `null` as `None`, else the value `read` reads, as serde reads an `Option<T>`.
fn opt<'de, T>(
    de: &mut Deserializer<'de>,
    read: impl FnOnce(&mut Deserializer<'de>) -> Result<T, Error>,
) -> Result<Option<T>, Error> {
    if de.read_null() {
        return Ok(None);
    }
    read(de).map(Some)
}

fn opt_vec<'de, T>(
    de: &mut Deserializer<'de>,
    mut item: impl FnMut(&mut Deserializer<'de>) -> Result<T, Error>,
) -> Result<Option<Vec<T>>, Error> {
    opt(de, |de| {
        let mut v = Vec::new();
        de.read_array(|de| {
            v.push(item(de)?);
            Ok(())
        })?;
        Ok(v)
    })
}

mod api;

#[cfg(test)]
mod tests;
