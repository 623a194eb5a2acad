use super::*;
use k8s_openapi::api::core::v1::TopologySpreadConstraint;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
use proptest::collection::{btree_map, vec};
use proptest::option::of;
use proptest::prelude::*;

/// Strings with every kind of byte serde_json escapes, and runs longer than a SIMD chunk.
fn text() -> impl Strategy<Value = String> {
    "(\\PC|[\u{0}-\u{1f}\"\\\\\u{7f}é]|[a-z./-]{16,40}){0,4}"
}

fn selector() -> impl Strategy<Value = LabelSelector> {
    let requirement =
        (text(), text(), of(vec(text(), 0..3))).prop_map(|(key, operator, values)| {
            LabelSelectorRequirement {
                key,
                operator,
                values,
            }
        });
    (
        of(vec(requirement, 0..3)),
        of(btree_map(text(), text(), 0..3)),
    )
        .prop_map(|(match_expressions, match_labels)| LabelSelector {
            match_expressions,
            match_labels,
        })
}

fn constraint() -> impl Strategy<Value = TopologySpreadConstraint> {
    (
        of(selector()),
        of(vec(text(), 0..3)),
        any::<i32>(),
        of(any::<i32>()),
        of(text()),
        of(text()),
        text(),
        text(),
    )
        .prop_map(
            |(
                label_selector,
                match_label_keys,
                max_skew,
                min_domains,
                node_affinity_policy,
                node_taints_policy,
                topology_key,
                when_unsatisfiable,
            )| TopologySpreadConstraint {
                label_selector,
                match_label_keys,
                max_skew,
                min_domains,
                node_affinity_policy,
                node_taints_policy,
                topology_key,
                when_unsatisfiable,
            },
        )
}

/// A list of constraints through [`spread_constraint`], each selector written first.
fn spread_constraints(out: &mut String, constraints: &[TopologySpreadConstraint]) {
    out.push('[');
    for (i, c) in constraints.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let selector = c
            .label_selector
            .as_ref()
            .map(|s| written(|o| label_selector(o, s)));
        spread_constraint(
            out,
            &SpreadConstraint {
                label_selector: selector.as_deref(),
                match_label_keys: c.match_label_keys.as_deref(),
                max_skew: c.max_skew,
                min_domains: c.min_domains,
                node_affinity_policy: c.node_affinity_policy.as_deref(),
                node_taints_policy: c.node_taints_policy.as_deref(),
                topology_key: &c.topology_key,
                when_unsatisfiable: &c.when_unsatisfiable,
            },
        );
    }
    out.push(']');
}

fn written(write: impl FnOnce(&mut String)) -> String {
    let mut out = String::new();
    write(&mut out);
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn strings_are_written_as_serde_json_writes_them(s in "(\\PC|[\u{0}-\u{1f}\"\\\\\u{7f}é])*") {
        prop_assert_eq!(written(|o| string(o, &s)), serde_json::to_string(&s).unwrap());
    }

    #[test]
    fn selectors_are_written_as_serde_json_writes_them(s in selector()) {
        prop_assert_eq!(written(|o| label_selector(o, &s)), serde_json::to_string(&s).unwrap());
    }

    #[test]
    fn constraints_are_written_as_serde_json_writes_them(cs in vec(constraint(), 0..4)) {
        prop_assert_eq!(
            written(|o| spread_constraints(o, &cs)),
            serde_json::to_string(&cs).unwrap()
        );
    }
}

/// Each optional field alone, so a field written in the wrong place or with a wrong comma
/// shows by name rather than in a shrunk random case.
#[test]
fn each_optional_field_is_written_in_its_place() {
    let base = TopologySpreadConstraint {
        max_skew: 1,
        topology_key: "zone".into(),
        when_unsatisfiable: "DoNotSchedule".into(),
        ..Default::default()
    };
    let cases = [
        base.clone(),
        TopologySpreadConstraint {
            label_selector: Some(LabelSelector::default()),
            ..base.clone()
        },
        TopologySpreadConstraint {
            match_label_keys: Some(vec![]),
            ..base.clone()
        },
        TopologySpreadConstraint {
            min_domains: Some(2),
            ..base.clone()
        },
        TopologySpreadConstraint {
            node_affinity_policy: Some("Honor".into()),
            ..base.clone()
        },
        TopologySpreadConstraint {
            node_taints_policy: Some("Ignore".into()),
            ..base.clone()
        },
    ];
    for c in cases {
        let one = std::slice::from_ref(&c);
        assert_eq!(
            written(|o| spread_constraints(o, one)),
            serde_json::to_string(one).unwrap()
        );
    }
}
