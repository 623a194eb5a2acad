//! The LimitRanger admission plugin's defaults: a new pod's container (or init container) that
//! neither requests nor limits a resource gets the `defaultRequest` of the `Container` items of
//! its namespace's LimitRanges, before kube-scheduler sees it. A pod read from the API server
//! has them already: such a pod is not admitted again.
//!
//! Only what scheduling reads is applied: requests. A container's limit without a request was
//! already its request when the pod was decoded, before admission, so a default request never
//! replaces it; the default limits the plugin also sets are not read by the filters. The
//! plugin's min, max and ratio checks, which may refuse the pod, are not modelled.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::LimitRangeItem;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::k8s::model::Container;
use crate::k8s::workload::PodTemplate;

/// What one LimitRange's `Container` items default a container's requests to.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LimitDefaults {
    pub name: String,
    pub requests: BTreeMap<String, Quantity>,
}

/// The LimitRanges of a cluster that default requests: per namespace, in name order.
pub type LimitRanges = HashMap<String, Vec<LimitDefaults>>;

impl LimitDefaults {
    /// A LimitRange's `spec.limits` as kube-apiserver stores them (`SetDefaults_LimitRangeItem`:
    /// a `defaultRequest` not given is the `default`, else the `max`, else the `min`), so that a
    /// manifest not applied yet reads as its stored form. Later items override earlier ones, as
    /// `defaultContainerResourceRequirements` builds its map.
    pub fn of(name: &str, items: &[LimitRangeItem]) -> LimitDefaults {
        let mut requests = BTreeMap::new();
        for item in items.iter().filter(|i| i.type_ == "Container") {
            let mut these: BTreeMap<String, Quantity> =
                item.default_request.clone().unwrap_or_default();
            for source in [&item.default, &item.max, &item.min].into_iter().flatten() {
                for (k, v) in source {
                    these.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
            requests.extend(these);
        }
        LimitDefaults {
            name: name.to_string(),
            requests,
        }
    }
}

/// `template` as LimitRanger admits it in a namespace with `ranges` (applied in turn, each
/// filling only what is still missing), and what each LimitRange set, in words
/// (`LimitRange "defaults": cpu 500m for container "app"`); `None` when nothing changes.
pub fn admitted(
    template: &PodTemplate,
    ranges: &[LimitDefaults],
) -> Option<(PodTemplate, Vec<String>)> {
    let mut out = template.clone();
    let mut said = Vec::new();
    for range in ranges.iter().filter(|r| !r.requests.is_empty()) {
        let mut set = Vec::new();
        let spec = &mut out.spec;
        for (what, list) in [
            ("container", &mut spec.containers),
            ("init container", &mut spec.init_containers),
        ] {
            for c in list.iter_mut() {
                let added = default_requests(c, &range.requests);
                if !added.is_empty() {
                    set.push(format!(
                        "{} for {what} {:?}",
                        added.join(", "),
                        c.name.as_deref().unwrap_or_default()
                    ));
                }
            }
        }
        if !set.is_empty() {
            said.push(format!("LimitRange {:?}: {}", range.name, set.join("; ")));
        }
    }
    (!said.is_empty()).then_some((out, said))
}

/// [`admitted`] with the LimitRanges of `namespace` in `ranges`.
pub fn admitted_in(
    template: &PodTemplate,
    ranges: &LimitRanges,
    namespace: &str,
) -> Option<(PodTemplate, Vec<String>)> {
    admitted(template, ranges.get(namespace)?)
}

/// Gives `c` each default request it neither requests nor limits; what it gave, in words.
fn default_requests(c: &mut Container, defaults: &BTreeMap<String, Quantity>) -> Vec<String> {
    let resources = c.resources.get_or_insert_with(Default::default);
    let limits = resources.limits.clone().unwrap_or_default();
    let requests = resources.requests.get_or_insert_with(Default::default);
    let mut added = Vec::new();
    for (k, v) in defaults {
        if !requests.contains_key(k) && !limits.contains_key(k) {
            requests.insert(k.clone(), v.clone());
            added.push(format!("{k} {}", v.0));
        }
    }
    added
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn items(v: serde_json::Value) -> Vec<LimitRangeItem> {
        serde_json::from_value(v).unwrap()
    }

    fn pod(containers: serde_json::Value) -> PodTemplate {
        crate::k8s::workload::parse_value(
            crate::k8s::workload::Kind::Pod,
            &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                    "spec": {"containers": containers,
                             "initContainers": [{"name": "init", "image": "i"}]}}),
        )
        .unwrap()
    }

    fn requests(t: &PodTemplate) -> Vec<(String, String, String)> {
        t.spec
            .containers
            .iter()
            .chain(&t.spec.init_containers)
            .flat_map(|c| {
                let name = c.name.clone().unwrap_or_default();
                c.resources
                    .iter()
                    .flat_map(|r| r.requests.iter().flatten())
                    .map(move |(k, v)| (name.clone(), k.clone(), v.0.clone()))
            })
            .collect()
    }

    /// The stored form of a LimitRange: `defaultRequest`, else `default`, else `max`, else `min`;
    /// other item types default nothing.
    #[test]
    fn a_limit_range_defaults_requests_as_it_is_stored() {
        let d = LimitDefaults::of(
            "lr",
            &items(json!([
                {"type": "Pod", "max": {"cpu": "4"}},
                {"type": "Container", "defaultRequest": {"cpu": "100m"}, "default": {"cpu": "1", "memory": "1Gi"},
                 "max": {"memory": "2Gi", "ephemeral-storage": "1Gi"}, "min": {"example.com/gpu": "1", "memory": "1Mi"}},
                {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}},
            ])),
        );
        let got: Vec<(&str, &str)> = d
            .requests
            .iter()
            .map(|(k, v)| (k.as_str(), v.0.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("cpu", "100m"),
                ("ephemeral-storage", "1Gi"),
                ("example.com/gpu", "1"),
                ("memory", "1Gi")
            ]
        );
    }

    /// (containers, what the pod's containers then request, what is said)
    #[test]
    fn containers_get_only_what_they_neither_request_nor_limit() {
        let ranges = vec![
            LimitDefaults::of(
                "first",
                &items(json!([{"type": "Container", "defaultRequest": {"cpu": "500m"}}])),
            ),
            LimitDefaults::of(
                "second",
                &items(
                    json!([{"type": "Container", "defaultRequest": {"cpu": "1", "memory": "64Mi"}}]),
                ),
            ),
        ];
        let t = pod(json!([
            {"name": "bare", "image": "i"},
            {"name": "asks", "image": "i", "resources": {"requests": {"cpu": "2"}}},
            {"name": "limited", "image": "i", "resources": {"limits": {"cpu": "3", "memory": "1Gi"}}},
        ]));
        let (got, said) = admitted(&t, &ranges).unwrap();
        let s = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
        assert_eq!(
            requests(&got),
            [
                s("bare", "cpu", "500m"),
                s("bare", "memory", "64Mi"),
                s("asks", "cpu", "2"),
                s("asks", "memory", "64Mi"),
                s("init", "cpu", "500m"),
                s("init", "memory", "64Mi"),
            ]
        );
        assert_eq!(
            said,
            [
                "LimitRange \"first\": cpu 500m for container \"bare\"; cpu 500m for init container \"init\"",
                "LimitRange \"second\": memory 64Mi for container \"bare\"; memory 64Mi for container \"asks\"; memory 64Mi for init container \"init\"",
            ]
        );
        // Nothing to add: the template as it is.
        let full = pod(
            json!([{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1", "memory": "1"}}}]),
        );
        let full_init = {
            let mut f = full.clone();
            f.spec.init_containers.clear();
            f
        };
        assert_eq!(admitted(&full_init, &ranges), None);
        assert_eq!(admitted(&t, &[]), None);
    }
}
