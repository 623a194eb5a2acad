//! The parts of Kubernetes objects the rules read. Only these fields are deserialized from an
//! admission request (of containers only resources, ports and restart policy; volumes, status
//! and managedFields are skipped), which keeps the parse of a 7 KB AdmissionReview cheap; the
//! field types themselves are k8s-openapi's.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, NodeSelectorTerm, PodAffinityTerm, PodSchedulingGate, ResourceRequirements,
    Toleration, TopologySpreadConstraint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde::Deserialize;

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub generate_name: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub labels: Option<BTreeMap<String, String>>,
    /// Only this tool's own annotations (`placement-guard.io/...`) are kept: the others, above
    /// all kubectl's last-applied-configuration, can be kilobytes that no rule reads.
    #[serde(default, deserialize_with = "own_annotations")]
    pub annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub owner_references: Option<Vec<OwnerReference>>,
}

/// The prefix of the annotations this tool reads.
pub const ANNOTATION_PREFIX: &str = "placement-guard.io/";
/// The annotation the kubelet puts on the mirror pod of a static pod it already runs.
pub const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// The annotations the views keep: this tool's own, and whether a pod is a mirror pod.
pub fn kept_annotation(key: &str) -> bool {
    key.starts_with(ANNOTATION_PREFIX) || key == MIRROR_ANNOTATION
}

/// A map key, borrowed from the input unless it had escapes.
struct Key<'de>(std::borrow::Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Borrowed(v)))
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(v.to_string())))
            }

            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

fn own_annotations<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<BTreeMap<String, String>>, D::Error> {
    struct Own;
    impl<'de> serde::de::Visitor<'de> for Own {
        type Value = Option<BTreeMap<String, String>>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a map of annotations")
        }

        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(self)
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut own = BTreeMap::new();
            while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                if kept_annotation(&key) {
                    own.insert(key.into_owned(), map.next_value::<String>()?);
                } else {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
            Ok(Some(own))
        }
    }
    d.deserialize_option(Own)
}

impl ObjectMeta {
    pub fn labels(&self) -> &BTreeMap<String, String> {
        static EMPTY: BTreeMap<String, String> = BTreeMap::new();
        self.labels.as_ref().unwrap_or(&EMPTY)
    }

    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.as_ref()?.get(key).map(String::as_str)
    }
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OwnerReference {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub controller: Option<bool>,
}

/// The scheduling directives of a pod spec.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodSpec {
    #[serde(default)]
    pub node_name: Option<String>,
    #[serde(default)]
    pub node_selector: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub affinity: Option<Affinity>,
    #[serde(default)]
    pub tolerations: Option<Vec<Toleration>>,
    #[serde(default)]
    pub scheduling_gates: Option<Vec<PodSchedulingGate>>,
    #[serde(default)]
    pub topology_spread_constraints: Option<Vec<TopologySpreadConstraint>>,
    /// A DaemonSet's host-network pods also tolerate `network-unavailable`.
    #[serde(default)]
    pub host_network: Option<bool>,
    /// What NodeResourcesFit and NodePorts read of the containers.
    #[serde(default, deserialize_with = "null_as_default")]
    pub containers: Vec<Container>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub init_containers: Vec<Container>,
    #[serde(default)]
    pub overhead: Option<BTreeMap<String, Quantity>>,
    /// Pod-level resources.
    #[serde(default)]
    pub resources: Option<ResourceRequirements>,
    /// The RuntimeClass admission plugin adds its class's overhead, nodeSelector and
    /// tolerations to the pod.
    #[serde(default)]
    pub runtime_class_name: Option<String>,
}

/// A container, as far as the scheduler's resource and port filters read it.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    /// To find its status (what a bound pod's container holds during an in-place resize).
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub resources: Option<ResourceRequirements>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub ports: Vec<ContainerPort>,
    /// `Always` on an init container makes it a sidecar.
    #[serde(default)]
    pub restart_policy: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ContainerPort {
    /// A host-network pod's default host port.
    #[serde(default)]
    pub container_port: Option<i32>,
    #[serde(default, rename = "hostIP")]
    pub host_ip: Option<String>,
    #[serde(default)]
    pub host_port: Option<i32>,
    #[serde(default)]
    pub protocol: Option<String>,
}

/// A field written but left empty (`spec:`, `null`) reads as its default.
pub(crate) fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

impl PodSpec {
    pub fn node_selector(&self) -> &BTreeMap<String, String> {
        static EMPTY: BTreeMap<String, String> = BTreeMap::new();
        self.node_selector.as_ref().unwrap_or(&EMPTY)
    }

    pub fn tolerations(&self) -> &[Toleration] {
        self.tolerations.as_deref().unwrap_or(&[])
    }

    pub fn scheduling_gates(&self) -> &[PodSchedulingGate] {
        self.scheduling_gates.as_deref().unwrap_or(&[])
    }

    pub fn spread_constraints(&self) -> &[TopologySpreadConstraint] {
        self.topology_spread_constraints.as_deref().unwrap_or(&[])
    }

    /// Required node affinity terms; `None` when there is no required node affinity.
    pub fn required_node_selector_terms(&self) -> Option<&[NodeSelectorTerm]> {
        self.affinity
            .as_ref()?
            .node_affinity
            .as_ref()?
            .required_during_scheduling_ignored_during_execution
            .as_ref()
            .map(|r| r.node_selector_terms.as_slice())
    }

    /// Required pod affinity terms.
    pub fn required_pod_affinity(&self) -> &[PodAffinityTerm] {
        self.affinity
            .as_ref()
            .and_then(|a| a.pod_affinity.as_ref())
            .and_then(|p| {
                p.required_during_scheduling_ignored_during_execution
                    .as_deref()
            })
            .unwrap_or(&[])
    }

    /// Required pod anti-affinity terms.
    pub fn required_pod_anti_affinity(&self) -> &[PodAffinityTerm] {
        self.affinity
            .as_ref()
            .and_then(|a| a.pod_anti_affinity.as_ref())
            .and_then(|p| {
                p.required_during_scheduling_ignored_during_execution
                    .as_deref()
            })
            .unwrap_or(&[])
    }

    pub fn is_gated(&self) -> bool {
        !self.scheduling_gates().is_empty()
    }
}

/// A selector with neither labels nor expressions (`{}`): it matches every object, and
/// kube-scheduler up to v1.36 counts no pod for it in topology spread.
pub fn selector_has_no_requirements(s: &LabelSelector) -> bool {
    s.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
        && s.match_expressions.as_ref().is_none_or(Vec::is_empty)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_own_annotations_are_kept() {
        let m: ObjectMeta = serde_json::from_str(
            r#"{"annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{\"kind\":\"Pod\"}",
                "placement-guard.io/spread-defaults": "skip",
                "placement-guard.io/\u0078": "escaped key",
                "other": 7
            }}"#,
        )
        .unwrap();
        assert_eq!(
            m.annotation(crate::rules::spread::SKIP_ANNOTATION),
            Some("skip")
        );
        assert_eq!(m.annotation("placement-guard.io/x"), Some("escaped key"));
        assert_eq!(m.annotations.as_ref().map(BTreeMap::len), Some(2));
        let m: ObjectMeta = serde_json::from_str(r#"{"annotations": null}"#).unwrap();
        assert_eq!(m.annotations, None);
        // Our own annotations must still be strings.
        assert!(serde_json::from_str::<ObjectMeta>(
            r#"{"annotations": {"placement-guard.io/a": 1}}"#
        )
        .is_err());
        assert!(crate::rules::spread::SKIP_ANNOTATION.starts_with(ANNOTATION_PREFIX));
    }
}
