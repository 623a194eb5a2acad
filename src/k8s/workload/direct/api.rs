//! k8s-openapi's scheduling types read by hand, as their generated `Deserialize` reads them:
//! every field optional (`null` is absent), a required one defaulted when absent, unknown
//! fields skipped. A repeated field, which the generated code lets overwrite, is an error here
//! (the caller goes to serde). Through serde's visitors an affinity cost about 300
//! instructions a field; a zone anti-affinity term is some twenty fields.

use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PodAffinity,
    PodAffinityTerm, PodAntiAffinity, PodSchedulingGate, PreferredSchedulingTerm, Toleration,
    TopologySpreadConstraint, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use serde_json::Error;

use super::{opt, opt_string_map, opt_vec, Seen};
use crate::k8s::ondemand::Deserializer;

fn opt_strings(de: &mut Deserializer) -> Result<Option<Vec<String>>, Error> {
    opt_vec(de, Deserializer::read_string)
}

fn opt_i32(de: &mut Deserializer) -> Result<Option<i32>, Error> {
    opt(de, |de| {
        let n = de.read_i64()?;
        i32::try_from(n).map_err(|_| serde::de::Error::custom("out of range for i32"))
    })
}

pub(super) fn affinity(de: &mut Deserializer) -> Result<Affinity, Error> {
    let mut a = Affinity::default();
    let mut seen = Seen(0);
    de.read_object(|de, key| {
        match key {
            "nodeAffinity" => {
                seen.first(0)?;
                a.node_affinity = opt(de, node_affinity)?;
            }
            "podAffinity" => {
                seen.first(1)?;
                a.pod_affinity = opt(de, |de| {
                    let (preferred, required) = pod_terms(de)?;
                    Ok(PodAffinity {
                        preferred_during_scheduling_ignored_during_execution: preferred,
                        required_during_scheduling_ignored_during_execution: required,
                    })
                })?;
            }
            "podAntiAffinity" => {
                seen.first(2)?;
                a.pod_anti_affinity = opt(de, |de| {
                    let (preferred, required) = pod_terms(de)?;
                    Ok(PodAntiAffinity {
                        preferred_during_scheduling_ignored_during_execution: preferred,
                        required_during_scheduling_ignored_during_execution: required,
                    })
                })?;
            }
            _ => de.skip_value()?,
        }
        Ok(())
    })?;
    Ok(a)
}

fn node_affinity(de: &mut Deserializer) -> Result<NodeAffinity, Error> {
    let mut n = NodeAffinity::default();
    let mut seen = Seen(0);
    de.read_object(|de, key| {
        match key {
            "preferredDuringSchedulingIgnoredDuringExecution" => {
                seen.first(0)?;
                n.preferred_during_scheduling_ignored_during_execution =
                    opt_vec(de, preferred_scheduling_term)?;
            }
            "requiredDuringSchedulingIgnoredDuringExecution" => {
                seen.first(1)?;
                n.required_during_scheduling_ignored_during_execution = opt(de, node_selector)?;
            }
            _ => de.skip_value()?,
        }
        Ok(())
    })?;
    Ok(n)
}

fn node_selector(de: &mut Deserializer) -> Result<NodeSelector, Error> {
    let mut terms = None;
    let mut seen = Seen(0);
    de.read_object(|de, key| match key {
        "nodeSelectorTerms" => {
            seen.first(0)?;
            terms = opt_vec(de, node_selector_term)?;
            Ok(())
        }
        _ => de.skip_value(),
    })?;
    Ok(NodeSelector {
        node_selector_terms: terms.unwrap_or_default(),
    })
}

fn preferred_scheduling_term(de: &mut Deserializer) -> Result<PreferredSchedulingTerm, Error> {
    let (preference, weight) = weighted(de, "preference", node_selector_term)?;
    Ok(PreferredSchedulingTerm { preference, weight })
}

/// `{<term>, weight}`, the shape of both kinds of weighted term: the term and the weight
/// defaulted when absent.
fn weighted<'de, T: Default>(
    de: &mut Deserializer<'de>,
    term_key: &str,
    read: fn(&mut Deserializer<'de>) -> Result<T, Error>,
) -> Result<(T, i32), Error> {
    let (mut term, mut weight) = (None, None);
    let mut seen = Seen(0);
    de.read_object(|de, key| {
        match key {
            k if k == term_key => {
                seen.first(0)?;
                term = opt(de, read)?;
            }
            "weight" => {
                seen.first(1)?;
                weight = opt_i32(de)?;
            }
            _ => de.skip_value()?,
        }
        Ok(())
    })?;
    Ok((term.unwrap_or_default(), weight.unwrap_or_default()))
}

fn node_selector_term(de: &mut Deserializer) -> Result<NodeSelectorTerm, Error> {
    let mut t = NodeSelectorTerm::default();
    let mut seen = Seen(0);
    de.read_object(|de, key| {
        match key {
            "matchExpressions" => {
                seen.first(0)?;
                t.match_expressions = opt_vec(de, node_selector_requirement)?;
            }
            "matchFields" => {
                seen.first(1)?;
                t.match_fields = opt_vec(de, node_selector_requirement)?;
            }
            _ => de.skip_value()?,
        }
        Ok(())
    })?;
    Ok(t)
}

/// `{key, operator, values}`, the shape of both kinds of requirement.
fn requirement(de: &mut Deserializer) -> Result<(String, String, Option<Vec<String>>), Error> {
    let (mut key, mut operator, mut values) = (None, None, None);
    let mut seen = Seen(0);
    de.read_object(|de, k| {
        match k {
            "key" => {
                seen.first(0)?;
                key = de.read_opt_string()?;
            }
            "operator" => {
                seen.first(1)?;
                operator = de.read_opt_string()?;
            }
            "values" => {
                seen.first(2)?;
                values = opt_strings(de)?;
            }
            _ => de.skip_value()?,
        }
        Ok(())
    })?;
    Ok((
        key.unwrap_or_default(),
        operator.unwrap_or_default(),
        values,
    ))
}

fn node_selector_requirement(de: &mut Deserializer) -> Result<NodeSelectorRequirement, Error> {
    let (key, operator, values) = requirement(de)?;
    Ok(NodeSelectorRequirement {
        key,
        operator,
        values,
    })
}

fn label_selector_requirement(de: &mut Deserializer) -> Result<LabelSelectorRequirement, Error> {
    let (key, operator, values) = requirement(de)?;
    Ok(LabelSelectorRequirement {
        key,
        operator,
        values,
    })
}

/// `PodAffinity` and `PodAntiAffinity`: preferred and required terms.
type PodTerms = (
    Option<Vec<WeightedPodAffinityTerm>>,
    Option<Vec<PodAffinityTerm>>,
);

fn pod_terms(de: &mut Deserializer) -> Result<PodTerms, Error> {
    let (mut preferred, mut required) = (None, None);
    let mut seen = Seen(0);
    de.read_object(|de, key| {
        match key {
            "preferredDuringSchedulingIgnoredDuringExecution" => {
                seen.first(0)?;
                preferred = opt_vec(de, weighted_pod_affinity_term)?;
            }
            "requiredDuringSchedulingIgnoredDuringExecution" => {
                seen.first(1)?;
                required = opt_vec(de, pod_affinity_term)?;
            }
            _ => de.skip_value()?,
        }
        Ok(())
    })?;
    Ok((preferred, required))
}

fn weighted_pod_affinity_term(de: &mut Deserializer) -> Result<WeightedPodAffinityTerm, Error> {
    let (pod_affinity_term, weight) = weighted(de, "podAffinityTerm", pod_affinity_term)?;
    Ok(WeightedPodAffinityTerm {
        pod_affinity_term,
        weight,
    })
}

fn pod_affinity_term(de: &mut Deserializer) -> Result<PodAffinityTerm, Error> {
    let mut t = PodAffinityTerm::default();
    let mut topology_key = None;
    let mut seen = Seen(0);
    de.read_object(|de, key| {
        match key {
            "labelSelector" => {
                seen.first(0)?;
                t.label_selector = opt(de, label_selector)?;
            }
            "matchLabelKeys" => {
                seen.first(1)?;
                t.match_label_keys = opt_strings(de)?;
            }
            "mismatchLabelKeys" => {
                seen.first(2)?;
                t.mismatch_label_keys = opt_strings(de)?;
            }
            "namespaceSelector" => {
                seen.first(3)?;
                t.namespace_selector = opt(de, label_selector)?;
            }
            "namespaces" => {
                seen.first(4)?;
                t.namespaces = opt_strings(de)?;
            }
            "topologyKey" => {
                seen.first(5)?;
                topology_key = de.read_opt_string()?;
            }
            _ => de.skip_value()?,
        }
        Ok(())
    })?;
    t.topology_key = topology_key.unwrap_or_default();
    Ok(t)
}

fn label_selector(de: &mut Deserializer) -> Result<LabelSelector, Error> {
    selector(de, false)
}

/// A workload's `spec.selector` where it is a `LabelSelector` (as `workload::selector_from` takes
/// it): any other key is an error, so that a map of labels (a ReplicationController's
/// selector) goes to serde.
pub(super) fn workload_selector(de: &mut Deserializer) -> Result<LabelSelector, Error> {
    selector(de, true)
}

fn selector(de: &mut Deserializer, strict: bool) -> Result<LabelSelector, Error> {
    let mut s = LabelSelector::default();
    let mut seen = Seen(0);
    de.read_object(|de, key| {
        match key {
            "matchExpressions" => {
                seen.first(0)?;
                s.match_expressions = opt_vec(de, label_selector_requirement)?;
            }
            "matchLabels" => {
                seen.first(1)?;
                s.match_labels = opt_string_map(de)?;
            }
            _ if strict => return Err(serde::de::Error::custom("not a label selector")),
            _ => de.skip_value()?,
        }
        Ok(())
    })?;
    Ok(s)
}

pub(super) fn topology_spread_constraint(
    de: &mut Deserializer,
) -> Result<TopologySpreadConstraint, Error> {
    let mut c = TopologySpreadConstraint::default();
    let (mut max_skew, mut topology_key, mut when) = (None, None, None);
    let mut seen = Seen(0);
    de.read_object(|de, key| {
        match key {
            "labelSelector" => {
                seen.first(0)?;
                c.label_selector = opt(de, label_selector)?;
            }
            "matchLabelKeys" => {
                seen.first(1)?;
                c.match_label_keys = opt_strings(de)?;
            }
            "maxSkew" => {
                seen.first(2)?;
                max_skew = opt_i32(de)?;
            }
            "minDomains" => {
                seen.first(3)?;
                c.min_domains = opt_i32(de)?;
            }
            "nodeAffinityPolicy" => {
                seen.first(4)?;
                c.node_affinity_policy = de.read_opt_string()?;
            }
            "nodeTaintsPolicy" => {
                seen.first(5)?;
                c.node_taints_policy = de.read_opt_string()?;
            }
            "topologyKey" => {
                seen.first(6)?;
                topology_key = de.read_opt_string()?;
            }
            "whenUnsatisfiable" => {
                seen.first(7)?;
                when = de.read_opt_string()?;
            }
            _ => de.skip_value()?,
        }
        Ok(())
    })?;
    c.max_skew = max_skew.unwrap_or_default();
    c.topology_key = topology_key.unwrap_or_default();
    c.when_unsatisfiable = when.unwrap_or_default();
    Ok(c)
}

/// k8s-openapi's `Toleration`: every field optional, unknown ones ignored.
pub(super) fn toleration(de: &mut Deserializer) -> Result<Toleration, Error> {
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
                t.toleration_seconds = opt(de, Deserializer::read_i64)?;
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
pub(super) fn scheduling_gate(de: &mut Deserializer) -> Result<PodSchedulingGate, Error> {
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
