//! The pod template views read by hand from the on-demand reader, for the admission path.
//!
//! serde's derived visitors cost about 300 instructions a field read or passed over (a key
//! identified, an `Option` slot, results threaded through generic layers); a request carries
//! some 120 of them, most of the cost of a review. Here the views' own fields are matched by
//! hand, and the nested API types (affinity, spread constraints, resources, owner references,
//! selectors) still go through their serde implementations on the same reader.
//!
//! Whatever is not of the plain shape serde would read the same way (a duplicate key, an array
//! for a struct, an escaped key, a number where a string goes) is an error here, and the caller
//! reads the object again with serde: this reader gives serde's result or none. The tests hold
//! it to the derived implementations: the same result on every recorded object and on mutated
//! ones, and the same field names as each view's derived `Deserialize`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PodSchedulingGate, Toleration};
use serde::de::Error as _;
use serde::Deserialize;
use serde_json::Error;

use super::{check_kind, from_workload, Kind, PodTemplate, TemplateView, WorkloadSpec};
use crate::k8s::model::{Container, ObjectMeta, PodSpec, ANNOTATION_PREFIX};
use crate::k8s::ondemand::Deserializer;

/// One bit a field: a second occurrence is serde's `duplicate field` error.
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
/// (nodeName, nodeSelector, affinity, tolerations, schedulingGates, topologySpreadConstraints).
/// What is not read is skipped like any unread value (structure checked) and left empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    /// The object's and the template's metadata, and a workload's selector: not compared of an
    /// UPDATE's old object (skipping them spares a gated pod UPDATE a sixth of its reading).
    pub identity: bool,
    /// Containers, init containers, overhead and pod-level resources: read only for rules that
    /// use them ([`crate::rules::reads_resources`]).
    pub resources: bool,
}

impl Part {
    pub const WHOLE: Part = Part {
        identity: true,
        resources: true,
    };
    /// What rules compare of an UPDATE's old object.
    pub const SCHEDULING: Part = Part {
        identity: false,
        resources: false,
    };
}

/// The pod template of an object of `kind`, or an error when serde must read it.
pub(super) fn template(
    kind: Kind,
    part: Part,
    de: &mut Deserializer,
) -> Result<PodTemplate, Error> {
    let bad_kind = |e: super::ParseError| Error::custom(e.message);
    match kind {
        Kind::Pod => {
            let (declared, meta, spec) = object(de, part, |de| pod_spec(de, part))?;
            check_kind(kind, &declared).map_err(bad_kind)?;
            Ok(PodTemplate {
                kind,
                template_meta: None,
                meta,
                spec,
                selector: None,
            })
        }
        Kind::PodTemplate => {
            let (declared, meta, view) =
                object_with(de, part, "template", |de| template_view(de, part))?;
            check_kind(kind, &declared).map_err(bad_kind)?;
            Ok(PodTemplate {
                kind,
                meta,
                template_meta: Some(view.metadata),
                spec: view.spec,
                selector: None,
            })
        }
        Kind::CronJob => {
            let (declared, meta, spec) = object(de, part, |de| {
                let mut spec = WorkloadSpec::default();
                let mut seen = Seen(0);
                de.read_object(|de, key| match key {
                    "jobTemplate" => {
                        seen.first(0)?;
                        let mut inner = Seen(0);
                        de.read_object(|de, key| match key {
                            "spec" => {
                                inner.first(0)?;
                                spec = workload_spec(de, part)?;
                                Ok(())
                            }
                            _ => de.skip_value(),
                        })
                    }
                    _ => de.skip_value(),
                })?;
                Ok(spec)
            })?;
            check_kind(kind, &declared).map_err(bad_kind)?;
            Ok(from_workload(kind, meta, spec))
        }
        _ => {
            let (declared, meta, spec) = object(de, part, |de| workload_spec(de, part))?;
            check_kind(kind, &declared).map_err(bad_kind)?;
            Ok(from_workload(kind, meta, spec))
        }
    }
}

/// `{kind, metadata, spec}`, the spec read by `spec`.
fn object<'de, S: Default>(
    de: &mut Deserializer<'de>,
    part: Part,
    spec: impl FnMut(&mut Deserializer<'de>) -> Result<S, Error>,
) -> Result<(Option<String>, ObjectMeta, S), Error> {
    object_with(de, part, "spec", spec)
}

/// `{kind, metadata, <body>}` (a PodTemplate's body is `template`), the body read by `read`.
fn object_with<'de, S: Default>(
    de: &mut Deserializer<'de>,
    part: Part,
    body: &str,
    mut read: impl FnMut(&mut Deserializer<'de>) -> Result<S, Error>,
) -> Result<(Option<String>, ObjectMeta, S), Error> {
    let (mut declared, mut meta, mut s) = (None, ObjectMeta::default(), None);
    let mut seen = Seen(0);
    de.read_object(|de, key| match key {
        "kind" => {
            seen.first(0)?;
            declared = de.read_opt_string()?;
            Ok(())
        }
        "metadata" => {
            seen.first(1)?;
            meta = object_meta(de, part)?;
            Ok(())
        }
        k if k == body => {
            seen.first(2)?;
            s = Some(read(de)?);
            Ok(())
        }
        _ => de.skip_value(),
    })?;
    Ok((declared, meta, s.unwrap_or_default()))
}

fn workload_spec(de: &mut Deserializer, part: Part) -> Result<WorkloadSpec, Error> {
    let mut spec = WorkloadSpec::default();
    let mut seen = Seen(0);
    de.read_object(|de, key| match key {
        "selector" => {
            seen.first(0)?;
            if !part.identity {
                return de.skip_value();
            }
            spec.selector = Option::<serde_json::Value>::deserialize(&mut *de)?;
            Ok(())
        }
        "template" => {
            seen.first(1)?;
            spec.template = template_view(de, part)?;
            Ok(())
        }
        _ => de.skip_value(),
    })?;
    Ok(spec)
}

fn template_view(de: &mut Deserializer, part: Part) -> Result<TemplateView, Error> {
    let mut view = TemplateView::default();
    let mut seen = Seen(0);
    de.read_object(|de, key| match key {
        "metadata" => {
            seen.first(0)?;
            view.metadata = object_meta(de, part)?;
            Ok(())
        }
        "spec" => {
            seen.first(1)?;
            view.spec = pod_spec(de, part)?;
            Ok(())
        }
        _ => de.skip_value(),
    })?;
    Ok(view)
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

fn pod_spec(de: &mut Deserializer, part: Part) -> Result<PodSpec, Error> {
    let mut spec = PodSpec::default();
    let mut seen = Seen(0);
    de.read_object(|de, key| {
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
                spec.affinity = Deserialize::deserialize(&mut *de)?;
            }
            "tolerations" => {
                seen.first(3)?;
                spec.tolerations = opt_vec(de, toleration)?;
            }
            "schedulingGates" => {
                seen.first(4)?;
                spec.scheduling_gates = opt_vec(de, scheduling_gate)?;
            }
            "topologySpreadConstraints" => {
                seen.first(5)?;
                spec.topology_spread_constraints = Deserialize::deserialize(&mut *de)?;
            }
            "containers" => {
                seen.first(6)?;
                if part.resources {
                    spec.containers = opt_vec(de, container)?.unwrap_or_default();
                } else {
                    de.skip_value()?;
                }
            }
            "initContainers" => {
                seen.first(7)?;
                if part.resources {
                    spec.init_containers = opt_vec(de, container)?.unwrap_or_default();
                } else {
                    de.skip_value()?;
                }
            }
            "overhead" => {
                seen.first(8)?;
                if part.resources {
                    spec.overhead = Deserialize::deserialize(&mut *de)?;
                } else {
                    de.skip_value()?;
                }
            }
            "resources" => {
                seen.first(9)?;
                if part.resources {
                    spec.resources = Deserialize::deserialize(&mut *de)?;
                } else {
                    de.skip_value()?;
                }
            }
            _ => de.skip_value()?,
        }
        Ok(())
    })?;
    Ok(spec)
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
            _ => de.skip_value()?,
        }
        Ok(())
    })?;
    Ok(c)
}

/// k8s-openapi's `Toleration`: every field optional, unknown ones ignored. (It lets a repeated
/// key overwrite; here a repeat goes to serde.)
fn toleration(de: &mut Deserializer) -> Result<Toleration, Error> {
    let mut t = Toleration::default();
    let mut seen = Seen(0);
    de.read_object(|de, key| {
        match key {
            "effect" => {
                seen.first(0)?;
                t.effect = de.read_opt_string()?;
            }
            "key" => {
                seen.first(1)?;
                t.key = de.read_opt_string()?;
            }
            "operator" => {
                seen.first(2)?;
                t.operator = de.read_opt_string()?;
            }
            "tolerationSeconds" => {
                seen.first(3)?;
                t.toleration_seconds = if de.read_null() {
                    None
                } else {
                    Some(de.read_i64()?)
                };
            }
            "value" => {
                seen.first(4)?;
                t.value = de.read_opt_string()?;
            }
            _ => de.skip_value()?,
        }
        Ok(())
    })?;
    Ok(t)
}

/// k8s-openapi's `PodSchedulingGate`: a missing or null name is empty.
fn scheduling_gate(de: &mut Deserializer) -> Result<PodSchedulingGate, Error> {
    let mut name = None;
    let mut seen = Seen(0);
    de.read_object(|de, key| match key {
        "name" => {
            seen.first(0)?;
            name = de.read_opt_string()?;
            Ok(())
        }
        _ => de.skip_value(),
    })?;
    Ok(PodSchedulingGate {
        name: name.unwrap_or_default(),
    })
}

/// A map of strings (labels, a node selector): a repeated key keeps its last value, as a
/// `BTreeMap` does under serde.
fn opt_string_map(de: &mut Deserializer) -> Result<Option<BTreeMap<String, String>>, Error> {
    if de.read_null() {
        return Ok(None);
    }
    let mut map = BTreeMap::new();
    de.read_object(|de, key| {
        map.insert(key.to_owned(), de.read_string()?);
        Ok(())
    })?;
    Ok(Some(map))
}

/// [`ObjectMeta::annotations`]: only this tool's own.
fn own_annotations(de: &mut Deserializer) -> Result<Option<BTreeMap<String, String>>, Error> {
    if de.read_null() {
        return Ok(None);
    }
    let mut own = BTreeMap::new();
    de.read_object(|de, key| {
        if key.starts_with(ANNOTATION_PREFIX) {
            own.insert(key.to_owned(), de.read_string()?);
            Ok(())
        } else {
            de.skip_value()
        }
    })?;
    Ok(Some(own))
}

fn opt_vec<'de, T>(
    de: &mut Deserializer<'de>,
    mut item: impl FnMut(&mut Deserializer<'de>) -> Result<T, Error>,
) -> Result<Option<Vec<T>>, Error> {
    if de.read_null() {
        return Ok(None);
    }
    let mut v = Vec::new();
    de.read_array(|de| {
        v.push(item(de)?);
        Ok(())
    })?;
    Ok(Some(v))
}

#[cfg(test)]
mod tests;
