//! Label selectors as apimachinery's `LabelSelectorAsSelector` evaluates them: an absent selector
//! matches nothing, an empty one everything; an invalid operator matches nothing.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Requirement {
    key: String,
    op: Op,
    values: Vec<String>,
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let v = labels.get(&self.key);
        match self.op {
            Op::In => v.is_some_and(|v| self.values.contains(v)),
            Op::NotIn => v.is_none_or(|v| !self.values.contains(v)),
            Op::Exists => v.is_some(),
            Op::DoesNotExist => v.is_none(),
        }
    }
}

/// A label selector compiled once: operators parsed, `matchLabels` turned into `In`
/// requirements. Matching cannot fail; a selector with an invalid operator matches nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector(Option<Vec<Requirement>>);

impl Selector {
    pub fn compile(sel: &LabelSelector) -> Selector {
        let mut reqs: Vec<Requirement> = sel
            .match_labels
            .iter()
            .flatten()
            .map(|(k, v)| Requirement {
                key: k.clone(),
                op: Op::In,
                values: vec![v.clone()],
            })
            .collect();
        for r in sel.match_expressions.as_deref().unwrap_or(&[]) {
            let op = match r.operator.as_str() {
                "In" => Op::In,
                "NotIn" => Op::NotIn,
                "Exists" => Op::Exists,
                "DoesNotExist" => Op::DoesNotExist,
                _ => return Selector(None),
            };
            reqs.push(Requirement {
                key: r.key.clone(),
                op,
                values: r.values.clone().unwrap_or_default(),
            });
        }
        Selector(Some(reqs))
    }

    /// An absent selector, which matches nothing.
    pub fn compile_optional(sel: Option<&LabelSelector>) -> Selector {
        sel.map_or(Selector(None), Selector::compile)
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0
            .as_ref()
            .is_some_and(|reqs| reqs.iter().all(|r| r.matches(labels)))
    }
}

/// Matches a selector used once; compile it with [`Selector::compile`] to use it often.
pub fn selector_matches(sel: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    Selector::compile(sel).matches(labels)
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
        assert!(!Selector::compile_optional(None).matches(&labels));
    }
}
