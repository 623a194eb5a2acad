use super::*;

/// `key Op v1,v2` (a leading `!` negates; `field:` reads metadata.name).
fn lit(s: &str) -> Literal {
    let (negated, s) = match s.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let parts: Vec<&str> = s.splitn(3, ' ').collect();
    let (source, key) = match parts[0].strip_prefix("field:") {
        Some(k) => (Source::Field, k),
        None => (Source::Label, parts[0]),
    };
    Literal {
        requirement: Requirement {
            source,
            key: key.to_string(),
            op: Operator::parse(parts[1]).unwrap(),
            values: parts
                .get(2)
                .map(|v| v.split(',').map(str::to_string).collect())
                .unwrap_or_default(),
        },
        negated,
    }
}

fn term(reqs: &[&str]) -> Term {
    Term {
        requirements: reqs.iter().map(|r| lit(r).requirement).collect(),
    }
}

/// Every pair of operators on one key, Gt/Lt on integers, NotIn against In, DoesNotExist against
/// everything, negations, fields, and what the API allows as a label value.
#[test]
fn satisfiability_of_each_pair_of_operators() {
    let cases: &[(&[&str], Option<&str>)] = &[
        (&["k In 1", "k In 2"], None),
        (&["k In 1,2", "k In 2,3"], Some("{k: \"2\"}")),
        (&["k In 1", "k NotIn 1"], None),
        (&["k In 1,2", "k NotIn 1"], Some("{k: \"2\"}")),
        (&["k In 1", "k Exists"], Some("{k: \"1\"}")),
        (&["k In 1", "k DoesNotExist"], None),
        (&["k In 5", "k Gt 3"], Some("{k: \"5\"}")),
        (&["k In 2", "k Gt 3"], None),
        (&["k In x", "k Gt 0"], None),
        (&["k In 1", "k Lt 3"], Some("{k: \"1\"}")),
        (&["k In 5", "k Lt 3"], None),
        (&["k In 007", "k Gt 6", "k Lt 8"], Some("{k: \"007\"}")),
        (&["k NotIn 1", "k NotIn 2"], Some("{}")),
        (&["k NotIn 1", "k Exists"], Some("{k: \"\"}")),
        (&["k NotIn 1", "k DoesNotExist"], Some("{}")),
        (&["k NotIn ", "k Exists"], Some("{k: x0}")),
        // NotIn compares strings, Gt and Lt integers: 04 is 4 to them, and not "4".
        (&["k NotIn 4", "k Gt 3", "k Lt 5"], Some("{k: \"04\"}")),
        (
            &["k NotIn 4,04,004", "k Gt 3", "k Lt 5"],
            Some("{k: \"0004\"}"),
        ),
        (&["k NotIn 4", "k Gt 3", "k Lt 6"], Some("{k: \"5\"}")),
        (&["k NotIn 4", "k Gt 3"], Some("{k: \"5\"}")),
        (&["k Exists", "k DoesNotExist"], None),
        (&["k Exists", "k Gt 3"], Some("{k: \"4\"}")),
        (&["k DoesNotExist", "k Gt 3"], None),
        (&["k DoesNotExist", "k Lt 3"], None),
        (&["k DoesNotExist"], Some("{}")),
        (&["k Gt 3", "k Lt 4"], None),
        (&["k Gt 3", "k Lt 5"], Some("{k: \"4\"}")),
        (&["k Gt 5", "k Lt 3"], None),
        (&["k Gt 3", "k Gt 7"], Some("{k: \"8\"}")),
        // Label values cannot be negative or out of int64, and a bound must be an integer.
        (&["k Lt 0"], None),
        (&["k Lt 1"], Some("{k: \"0\"}")),
        (&["k Gt -5"], Some("{k: \"0\"}")),
        (&["k Gt 9223372036854775807"], None),
        (&["k Gt x"], None),
        (&["k In -1"], None),
        (&["k In bad value"], None),
        // Negations: of In is NotIn, of Gt is "absent, not an integer, or not greater".
        (&["!k In 1", "k In 1"], None),
        (&["!k In 1", "k Exists"], Some("{k: \"\"}")),
        (&["!k Gt 3", "k Exists"], Some("{k: \"\"}")),
        (&["!k Gt 3", "k Gt 2"], Some("{k: \"3\"}")),
        (&["!k Gt 3", "k Gt 3"], None),
        (&["!k Exists", "k In 1"], None),
        (&["!k DoesNotExist"], Some("{k: \"\"}")),
        // Keys are independent; node names are fields that always exist.
        (&["a In 1", "b In 2"], Some("{a: \"1\", b: \"2\"}")),
        (&["field:metadata.name In n1"], Some("{} named n1")),
        (
            &["field:metadata.name In n1", "field:metadata.name NotIn n1"],
            None,
        ),
        (&["field:metadata.name DoesNotExist"], None),
        (&["field:spec.unschedulable In true"], None),
    ];
    for (lits, want) in cases {
        let lits: Vec<Literal> = lits.iter().map(|l| lit(l)).collect();
        let got = witness(&lits);
        assert_eq!(
            got.as_ref().map(|w| w.to_string()).as_deref(),
            *want,
            "{lits:?}"
        );
        if let Some(w) = got {
            let name = w.name.clone().unwrap_or_else(|| "any-node".into());
            for l in &lits {
                let v = match l.requirement.source {
                    Source::Label => w.labels.get(&l.requirement.key).map(String::as_str),
                    Source::Field => Some(name.as_str()),
                };
                assert!(l.holds(v), "witness {w} fails {l:?}");
            }
        }
    }
}

#[test]
fn intersections_and_nodes_outside_a_set_of_terms() {
    let gpu = term(&["nvidia.com/gpu.present Exists"]);
    let tenants = term(&["pool In tenants"]);
    assert_eq!(
        intersect(&tenants, &gpu).unwrap().to_string(),
        "{nvidia.com/gpu.present: \"\", pool: tenants}"
    );
    assert!(intersect(&term(&["pool In a"]), &term(&["pool In b"])).is_none());
    // Nothing outside a set the selection is inside of.
    assert!(outside(&tenants, &[Some(tenants.clone())]).is_none());
    assert_eq!(
        outside(&term(&["pool In tenants,gpu"]), &[Some(tenants.clone())])
            .unwrap()
            .to_string(),
        "{pool: gpu}"
    );
    // No selection reaches every node: one without the pool label is outside.
    assert_eq!(
        outside(&Term::default(), &[Some(tenants.clone())])
            .unwrap()
            .to_string(),
        "{}"
    );
    // Outside every one of several terms.
    let zone = term(&["zone In a"]);
    assert!(outside(
        &zone,
        &[Some(tenants.clone()), Some(term(&["zone In a,b"]))]
    )
    .is_none());
    assert_eq!(
        outside(&zone, &[Some(tenants.clone()), Some(term(&["zone In b"]))])
            .unwrap()
            .to_string(),
        "{zone: a}"
    );
    // An empty or invalid term selects nothing, so everything is outside it.
    assert_eq!(outside(&zone, &[None]).unwrap().to_string(), "{zone: a}");
    // Gt and Lt read a label as an integer, leading zeros and all; In compares strings: a
    // node labelled size=01 is between 0 and 2 and not In [1].
    assert_eq!(
        outside(
            &term(&["size Gt 0", "size Lt 2"]),
            &[Some(term(&["size In 1"]))]
        )
        .unwrap()
        .to_string(),
        "{size: \"01\"}"
    );
    assert!(intersect(
        &term(&["size In 1,01"]),
        &term(&["size NotIn 1,01", "size Gt 0"])
    )
    .is_none());
}

mod property {
    use super::*;
    use proptest::prelude::*;

    const KEYS: [&str; 2] = ["a", "b"];
    const VALUES: [&str; 4] = ["1", "2", "3", "x"];

    fn requirement() -> impl Strategy<Value = Requirement> {
        (
            0..KEYS.len(),
            0..6usize,
            proptest::collection::vec(0..VALUES.len(), 1..3),
        )
            .prop_map(|(k, op, vals)| {
                let op = [
                    Operator::In,
                    Operator::NotIn,
                    Operator::Exists,
                    Operator::DoesNotExist,
                    Operator::Gt,
                    Operator::Lt,
                ][op];
                let values = match op {
                    Operator::Exists | Operator::DoesNotExist => Vec::new(),
                    // Gt and Lt take one integer.
                    Operator::Gt | Operator::Lt => vec![(vals[0] % 3 + 1).to_string()],
                    _ => vals.iter().map(|v| VALUES[*v].to_string()).collect(),
                };
                Requirement {
                    source: Source::Label,
                    key: KEYS[k].to_string(),
                    op,
                    values,
                }
            })
    }

    fn term() -> impl Strategy<Value = Term> {
        proptest::collection::vec(requirement(), 0..4)
            .prop_map(|requirements| Term { requirements })
    }

    /// Every label set over the alphabet (each key absent or one of the values, "0" and "4"
    /// included to step past the bounds, "01" for an integer no In names).
    fn nodes() -> Vec<BTreeMap<String, String>> {
        let options: Vec<Option<&str>> = [None]
            .into_iter()
            .chain(
                ["0", "1", "01", "2", "3", "4", "x", ""]
                    .into_iter()
                    .map(Some),
            )
            .collect();
        let mut out = Vec::new();
        for a in &options {
            for b in &options {
                let mut m = BTreeMap::new();
                if let Some(v) = a {
                    m.insert("a".to_string(), v.to_string());
                }
                if let Some(v) = b {
                    m.insert("b".to_string(), v.to_string());
                }
                out.push(m);
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// When no node is both selected and forbidden, none of the generated nodes is; when a
        /// witness is reported, it is both.
        #[test]
        fn intersection_is_exact(selection in term(), forbidden in term()) {
            match intersect(&selection, &forbidden) {
                Some(w) => {
                    prop_assert!(w.satisfies(&selection) && w.satisfies(&forbidden), "{w}");
                }
                None => {
                    for n in nodes() {
                        prop_assert!(
                            !(selection.matches_node(&n, "n") && forbidden.matches_node(&n, "n")),
                            "{n:?} is in both"
                        );
                    }
                }
            }
        }

        /// Same for "selected but outside every required term".
        #[test]
        fn outside_is_exact(selection in term(), required in proptest::collection::vec(term(), 0..3)) {
            let others: Vec<Option<Term>> = required.iter().cloned().map(Some).collect();
            match outside(&selection, &others) {
                Some(w) => {
                    prop_assert!(w.satisfies(&selection), "{w}");
                    prop_assert!(!required.iter().any(|r| w.satisfies(r)), "{w}");
                }
                None => {
                    for n in nodes() {
                        prop_assert!(
                            !selection.matches_node(&n, "n")
                                || required.iter().any(|r| r.matches_node(&n, "n")),
                            "{n:?} is selected and outside"
                        );
                    }
                }
            }
        }
    }
}

/// A witness's label values are shown as they can be copied into a nodeSelector: quoted where
/// YAML would read another type.
#[test]
fn witness_values_are_quoted_where_yaml_reads_another_type() {
    let w = Witness {
        labels: [
            ("a", "true"),
            ("b", "1"),
            ("c", "null"),
            ("d", "z9"),
            ("e", ""),
            ("f", "0x1F"),
            ("g", "On"),
            ("h", "1.5"),
            ("i", "v1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
        name: None,
    };
    assert_eq!(
        w.to_string(),
        r#"{a: "true", b: "1", c: "null", d: z9, e: "", f: "0x1F", g: "On", h: "1.5", i: v1}"#
    );
}
