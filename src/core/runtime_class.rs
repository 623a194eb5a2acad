//! The RuntimeClass admission plugin: a new pod that names a RuntimeClass (`spec.runtimeClassName`)
//! gets the class's `overhead.podFixed` as its overhead, the class's `scheduling.nodeSelector`
//! merged into its own and its `scheduling.tolerations` added, before kube-scheduler sees it.
//! A pod read from the API server has them already, as its class was when the pod was created
//! (the class may have changed since, or gone): such a pod is not admitted again.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::Toleration;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde::Deserialize;

use super::resources::scaled;
use crate::k8s::model::PodSpec;
use crate::k8s::semantic::SemEq;
use crate::k8s::workload::PodTemplate;

/// What the plugin reads of a `node.k8s.io/v1` RuntimeClass.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeClass {
    #[serde(default)]
    pub overhead: Option<Overhead>,
    #[serde(default)]
    pub scheduling: Option<Scheduling>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Overhead {
    #[serde(default)]
    pub pod_fixed: Option<BTreeMap<String, Quantity>>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Scheduling {
    #[serde(default)]
    pub node_selector: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub tolerations: Option<Vec<Toleration>>,
}

/// The RuntimeClasses of a cluster, by name.
pub type RuntimeClasses = HashMap<String, RuntimeClass>;

/// `spec` as the plugin admits it, or the apiserver's reason for refusing the pod (then `spec`
/// is left as it was). A spec without `runtimeClassName` is left alone.
pub fn admit(spec: &mut PodSpec, classes: &RuntimeClasses) -> Result<(), String> {
    let Some(name) = spec.runtime_class_name.as_deref() else {
        return Ok(());
    };
    let Some(class) = classes.get(name) else {
        return Err(format!("pod rejected: RuntimeClass {name:?} not found"));
    };
    // The class's `overhead` (even `{}`) is the pod's to match exactly; without one, the pod
    // may have none (`apiequality.Semantic.DeepEqual` of the two lists, quantities by value).
    let overhead = class
        .overhead
        .as_ref()
        .map(|o| o.pod_fixed.clone().unwrap_or_default());
    // An empty overhead is none to the apiserver (it compares only a non-empty one).
    let own = spec.overhead.as_ref().filter(|o| !o.is_empty());
    match (&overhead, own) {
        (Some(fixed), Some(own)) if !same_list(fixed, own) => {
            return Err(
                "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead".into(),
            )
        }
        (None, Some(_)) => return Err(
            "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
                .into(),
        ),
        _ => {}
    }
    let scheduling = class.scheduling.as_ref();
    let selector = scheduling.and_then(|s| s.node_selector.as_ref());
    let own = spec.node_selector.as_ref();
    for (key, value) in selector.into_iter().flatten() {
        if let Some(pod_value) = own.and_then(|m| m.get(key)).filter(|v| *v != value) {
            return Err(format!(
                "conflict: runtimeClass.scheduling.nodeSelector[{key}] = {value}; pod.spec.nodeSelector[{key}] = {pod_value}"
            ));
        }
    }
    if let Some(fixed) = overhead {
        spec.overhead = (!fixed.is_empty()).then_some(fixed);
    }
    if let Some(selector) = selector {
        spec.node_selector
            .get_or_insert_with(BTreeMap::new)
            .extend(selector.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    let added = scheduling
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or(&[]);
    for t in added {
        let own = spec.tolerations.get_or_insert_with(Vec::new);
        if !own.iter().any(|o| o.sem_eq(t)) {
            own.push(t.clone());
        }
    }
    Ok(())
}

/// `template` as admission passes it to the scheduler: unchanged without a RuntimeClass (or
/// when it holds what its class adds already, as a pod read from the API server does), else a
/// copy with what the class adds; or why kube-apiserver refuses its pods.
pub fn admitted<'a>(
    template: &'a PodTemplate,
    classes: &RuntimeClasses,
) -> Result<Cow<'a, PodTemplate>, String> {
    if template.spec.runtime_class_name.is_none() {
        return Ok(Cow::Borrowed(template));
    }
    let mut spec = template.spec.clone();
    admit(&mut spec, classes)?;
    Ok(if spec == template.spec {
        Cow::Borrowed(template)
    } else {
        let mut t = template.clone();
        t.spec = spec;
        Cow::Owned(t)
    })
}

/// The same resource names with the same quantities, by value (`1` and `1000m`): compared in
/// nano units, or written alike where that does not fit (a saturated value says nothing).
fn same_list(a: &BTreeMap<String, Quantity>, b: &BTreeMap<String, Quantity>) -> bool {
    let nano = |q: &Quantity| scaled(&q.0, 9).filter(|v| *v != i64::MAX && *v != i64::MIN);
    a.len() == b.len()
        && a.iter().all(|(name, q)| {
            b.get(name)
                .is_some_and(|o| o.0 == q.0 || nano(o).is_some_and(|v| Some(v) == nano(q)))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn classes() -> RuntimeClasses {
        let gvisor: RuntimeClass = serde_json::from_value(json!({
            "handler": "runsc",
            "scheduling": {"nodeSelector": {"sandbox": "yes"}, "tolerations": [{"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}]}
        }))
        .unwrap();
        let kata: RuntimeClass = serde_json::from_value(json!({
            "handler": "kata", "overhead": {"podFixed": {"cpu": "600m", "memory": "100Mi"}}
        }))
        .unwrap();
        [("gvisor".to_string(), gvisor), ("kata".to_string(), kata)].into()
    }

    fn spec(v: serde_json::Value) -> PodSpec {
        serde_json::from_value(v).unwrap()
    }

    /// The plugin's cases (plugin/pkg/admission/runtimeclass): what it adds, what it refuses
    /// with its own words, and a pod admitted already staying as it is.
    #[test]
    fn a_pod_gets_what_its_runtime_class_adds() {
        let cases = [
            ("no runtimeClassName: nothing", json!({}), Ok(json!({}))),
            (
                "scheduling merged: the selector and the tolerations",
                json!({"runtimeClassName": "gvisor", "nodeSelector": {"zone": "a"}}),
                Ok(json!({"runtimeClassName": "gvisor", "nodeSelector": {"zone": "a", "sandbox": "yes"},
                    "tolerations": [{"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}]})),
            ),
            (
                "admitted already: unchanged",
                json!({"runtimeClassName": "gvisor", "nodeSelector": {"sandbox": "yes"},
                    "tolerations": [{"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}]}),
                Ok(json!({"runtimeClassName": "gvisor", "nodeSelector": {"sandbox": "yes"},
                    "tolerations": [{"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}]})),
            ),
            (
                "the overhead set",
                json!({"runtimeClassName": "kata"}),
                Ok(json!({"runtimeClassName": "kata", "overhead": {"cpu": "600m", "memory": "100Mi"}})),
            ),
            (
                "the same overhead written otherwise is the same",
                json!({"runtimeClassName": "kata", "overhead": {"cpu": "0.6", "memory": "100Mi"}}),
                Ok(json!({"runtimeClassName": "kata", "overhead": {"cpu": "600m", "memory": "100Mi"}})),
            ),
            (
                "an overhead with one more resource, even at zero, is another",
                json!({"runtimeClassName": "kata", "overhead": {"cpu": "600m", "memory": "100Mi", "example.com/x": "0"}}),
                Err("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"),
            ),
            (
                "an empty overhead is none: the class's is set",
                json!({"runtimeClassName": "kata", "overhead": {}}),
                Ok(json!({"runtimeClassName": "kata", "overhead": {"cpu": "600m", "memory": "100Mi"}})),
            ),
            (
                "quantities beyond what nano units hold are compared as written",
                json!({"runtimeClassName": "kata", "overhead": {"cpu": "-10E", "memory": "100Mi"}}),
                Err("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"),
            ),
            (
                "another overhead is refused",
                json!({"runtimeClassName": "kata", "overhead": {"cpu": "1"}}),
                Err("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"),
            ),
            (
                "an overhead the class does not define is refused",
                json!({"runtimeClassName": "gvisor", "overhead": {"cpu": "1"}}),
                Err("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"),
            ),
            (
                "a conflicting selector is refused",
                json!({"runtimeClassName": "gvisor", "nodeSelector": {"sandbox": "no"}}),
                Err("conflict: runtimeClass.scheduling.nodeSelector[sandbox] = yes; pod.spec.nodeSelector[sandbox] = no"),
            ),
            (
                "an unknown class is refused",
                json!({"runtimeClassName": "wasm"}),
                Err("pod rejected: RuntimeClass \"wasm\" not found"),
            ),
        ];
        for (name, given, want) in cases {
            let mut s = spec(given.clone());
            let got = admit(&mut s, &classes());
            match want {
                Ok(after) => {
                    assert_eq!(got, Ok(()), "{name}");
                    assert_eq!(s, spec(after), "{name}");
                }
                Err(e) => {
                    assert_eq!(got, Err(e.to_string()), "{name}");
                    assert_eq!(s, spec(given), "{name}: left as it was");
                }
            }
        }
    }
}
