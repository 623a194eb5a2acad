//! Label selectors as apimachinery's `LabelSelectorAsSelector` evaluates them: an absent selector
//! matches nothing, an empty one everything; an invalid operator matches nothing.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

pub fn selector_matches(sel: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    if let Some(ml) = &sel.match_labels {
        if !ml.iter().all(|(k, v)| labels.get(k) == Some(v)) {
            return false;
        }
    }
    sel.match_expressions
        .as_deref()
        .unwrap_or(&[])
        .iter()
        .all(|r| {
            let values = r.values.as_deref().unwrap_or(&[]);
            let v = labels.get(&r.key);
            match r.operator.as_str() {
                "In" => v.is_some_and(|v| values.contains(v)),
                "NotIn" => v.is_none_or(|v| !values.contains(v)),
                "Exists" => v.is_some(),
                "DoesNotExist" => v.is_none(),
                _ => false,
            }
        })
}

pub fn optional_selector_matches(
    sel: Option<&LabelSelector>,
    labels: &BTreeMap<String, String>,
) -> bool {
    sel.is_some_and(|s| selector_matches(s, labels))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn req(key: &str, op: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        }
    }

    #[test]
    fn matching() {
        let labels: BTreeMap<String, String> = [("app".to_string(), "web".to_string())].into();
        let cases = [
            (LabelSelector::default(), true),
            (
                LabelSelector {
                    match_labels: Some(labels.clone()),
                    match_expressions: None,
                },
                true,
            ),
            (
                LabelSelector {
                    match_labels: Some([("app".into(), "db".into())].into()),
                    match_expressions: None,
                },
                false,
            ),
            (
                LabelSelector {
                    match_labels: None,
                    match_expressions: Some(vec![req("app", "In", &["web", "x"])]),
                },
                true,
            ),
            (
                LabelSelector {
                    match_labels: None,
                    match_expressions: Some(vec![req("app", "NotIn", &["web"])]),
                },
                false,
            ),
            (
                LabelSelector {
                    match_labels: None,
                    match_expressions: Some(vec![req("tier", "NotIn", &["x"])]),
                },
                true,
            ),
            (
                LabelSelector {
                    match_labels: None,
                    match_expressions: Some(vec![req("tier", "Exists", &[])]),
                },
                false,
            ),
            (
                LabelSelector {
                    match_labels: None,
                    match_expressions: Some(vec![req("tier", "DoesNotExist", &[])]),
                },
                true,
            ),
            (
                LabelSelector {
                    match_labels: None,
                    match_expressions: Some(vec![req("app", "Bogus", &[])]),
                },
                false,
            ),
        ];
        for (sel, want) in cases {
            assert_eq!(selector_matches(&sel, &labels), want, "{sel:?}");
        }
        assert!(!optional_selector_matches(None, &labels));
    }
}
