//! Equality as apimachinery's `Semantic.DeepEqual` sees it: nil and empty slices or maps are equal,
//! a nil pointer and a pointer to an empty struct are not, and Go's plain strings make a missing
//! optional string equal to "".

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PodAffinity,
    PodAffinityTerm, PodAntiAffinity, PreferredSchedulingTerm, Toleration, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

pub trait SemEq {
    fn sem_eq(&self, other: &Self) -> bool;
}

/// Pointer semantics: `None` only equals `None`.
impl<T: SemEq> SemEq for Option<T> {
    fn sem_eq(&self, other: &Self) -> bool {
        match (self, other) {
            (None, None) => true,
            (Some(a), Some(b)) => a.sem_eq(b),
            _ => false,
        }
    }
}

impl<T: SemEq + ?Sized> SemEq for &T {
    fn sem_eq(&self, other: &Self) -> bool {
        (**self).sem_eq(*other)
    }
}

impl<T: SemEq> SemEq for [T] {
    fn sem_eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().zip(other).all(|(a, b)| a.sem_eq(b))
    }
}

impl SemEq for String {
    fn sem_eq(&self, other: &Self) -> bool {
        self == other
    }
}

/// nil and empty slices are equal.
pub fn list_eq<T: SemEq>(a: &Option<Vec<T>>, b: &Option<Vec<T>>) -> bool {
    a.as_deref()
        .unwrap_or(&[])
        .sem_eq(b.as_deref().unwrap_or(&[]))
}

/// nil and empty maps are equal.
pub fn map_eq(a: &Option<BTreeMap<String, String>>, b: &Option<BTreeMap<String, String>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b,
        (Some(m), None) | (None, Some(m)) => m.is_empty(),
        (None, None) => true,
    }
}

/// A Go `string` field: absent equals "".
fn str_eq(a: &Option<String>, b: &Option<String>) -> bool {
    a.as_deref().unwrap_or("") == b.as_deref().unwrap_or("")
}

impl SemEq for Affinity {
    fn sem_eq(&self, o: &Self) -> bool {
        self.node_affinity.sem_eq(&o.node_affinity)
            && self.pod_affinity.sem_eq(&o.pod_affinity)
            && self.pod_anti_affinity.sem_eq(&o.pod_anti_affinity)
    }
}

impl SemEq for NodeAffinity {
    fn sem_eq(&self, o: &Self) -> bool {
        self.required_during_scheduling_ignored_during_execution
            .sem_eq(&o.required_during_scheduling_ignored_during_execution)
            && list_eq(
                &self.preferred_during_scheduling_ignored_during_execution,
                &o.preferred_during_scheduling_ignored_during_execution,
            )
    }
}

impl SemEq for NodeSelector {
    fn sem_eq(&self, o: &Self) -> bool {
        self.node_selector_terms.sem_eq(&o.node_selector_terms)
    }
}

impl SemEq for NodeSelectorTerm {
    fn sem_eq(&self, o: &Self) -> bool {
        list_eq(&self.match_expressions, &o.match_expressions)
            && list_eq(&self.match_fields, &o.match_fields)
    }
}

impl SemEq for NodeSelectorRequirement {
    fn sem_eq(&self, o: &Self) -> bool {
        self.key == o.key && self.operator == o.operator && list_eq(&self.values, &o.values)
    }
}

impl SemEq for PreferredSchedulingTerm {
    fn sem_eq(&self, o: &Self) -> bool {
        self.weight == o.weight && self.preference.sem_eq(&o.preference)
    }
}

impl SemEq for PodAffinity {
    fn sem_eq(&self, o: &Self) -> bool {
        list_eq(
            &self.required_during_scheduling_ignored_during_execution,
            &o.required_during_scheduling_ignored_during_execution,
        ) && list_eq(
            &self.preferred_during_scheduling_ignored_during_execution,
            &o.preferred_during_scheduling_ignored_during_execution,
        )
    }
}

impl SemEq for PodAntiAffinity {
    fn sem_eq(&self, o: &Self) -> bool {
        list_eq(
            &self.required_during_scheduling_ignored_during_execution,
            &o.required_during_scheduling_ignored_during_execution,
        ) && list_eq(
            &self.preferred_during_scheduling_ignored_during_execution,
            &o.preferred_during_scheduling_ignored_during_execution,
        )
    }
}

impl SemEq for WeightedPodAffinityTerm {
    fn sem_eq(&self, o: &Self) -> bool {
        self.weight == o.weight && self.pod_affinity_term.sem_eq(&o.pod_affinity_term)
    }
}

impl SemEq for PodAffinityTerm {
    fn sem_eq(&self, o: &Self) -> bool {
        self.topology_key == o.topology_key
            && self.label_selector.sem_eq(&o.label_selector)
            && self.namespace_selector.sem_eq(&o.namespace_selector)
            && list_eq(&self.namespaces, &o.namespaces)
            && list_eq(&self.match_label_keys, &o.match_label_keys)
            && list_eq(&self.mismatch_label_keys, &o.mismatch_label_keys)
    }
}

impl SemEq for LabelSelector {
    fn sem_eq(&self, o: &Self) -> bool {
        map_eq(&self.match_labels, &o.match_labels)
            && list_eq(&self.match_expressions, &o.match_expressions)
    }
}

impl SemEq for LabelSelectorRequirement {
    fn sem_eq(&self, o: &Self) -> bool {
        self.key == o.key && self.operator == o.operator && list_eq(&self.values, &o.values)
    }
}

/// Equal tolerations apart from `tolerationSeconds`, the one field a pod update may change.
pub fn toleration_eq_but_seconds(a: &Toleration, o: &Toleration) -> bool {
    str_eq(&a.key, &o.key)
        && str_eq(&a.operator, &o.operator)
        && str_eq(&a.value, &o.value)
        && str_eq(&a.effect, &o.effect)
}

impl SemEq for Toleration {
    fn sem_eq(&self, o: &Self) -> bool {
        toleration_eq_but_seconds(self, o) && self.toleration_seconds == o.toleration_seconds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nil_and_empty_collections_are_equal_but_pointers_are_not() {
        assert!(map_eq(&None, &Some(BTreeMap::new())));
        let empty_term = NodeSelectorTerm {
            match_expressions: Some(vec![]),
            match_fields: None,
        };
        assert!(empty_term.sem_eq(&NodeSelectorTerm::default()));
        let none: Option<Affinity> = None;
        assert!(!none.sem_eq(&Some(Affinity::default())));
        assert!(Some(Affinity::default()).sem_eq(&Some(Affinity::default())));
        let a = Affinity {
            node_affinity: Some(NodeAffinity::default()),
            ..Default::default()
        };
        assert!(!a.sem_eq(&Affinity::default()));
    }

    #[test]
    fn toleration_strings_are_go_strings() {
        let a = Toleration {
            key: Some(String::new()),
            operator: Some("Exists".into()),
            ..Default::default()
        };
        let b = Toleration {
            operator: Some("Exists".into()),
            ..Default::default()
        };
        assert!(a.sem_eq(&b));
        let c = Toleration {
            toleration_seconds: Some(5),
            ..b.clone()
        };
        assert!(!c.sem_eq(&b));
    }
}
