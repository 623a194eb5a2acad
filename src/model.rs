//! The parts of Kubernetes objects the rules read. Only these fields are deserialized from an
//! admission request (containers, volumes, status and managedFields are skipped), which keeps the
//! parse of a 7 KB AdmissionReview cheap; the field types themselves are k8s-openapi's.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, NodeSelectorTerm, PodAffinityTerm, PodSchedulingGate, Toleration,
    TopologySpreadConstraint,
};
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
    #[serde(default)]
    pub annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub owner_references: Option<Vec<OwnerReference>>,
}

impl ObjectMeta {
    pub fn labels(&self) -> &BTreeMap<String, String> {
        static EMPTY: BTreeMap<String, String> = BTreeMap::new();
        self.labels.as_ref().unwrap_or(&EMPTY)
    }

    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.as_ref()?.get(key).map(String::as_str)
    }

    /// `name`, else `generateName` (pods of a ReplicaSet have only that at CREATE).
    pub fn display_name(&self) -> &str {
        self.name
            .as_deref()
            .or(self.generate_name.as_deref())
            .unwrap_or("")
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
