//! Node selector requirements and terms as kube-scheduler evaluates them
//! (k8s.io/component-helpers/scheduling/corev1/nodeaffinity), plus an implication test that tells
//! whether one set of requirements selects a subset of the nodes another selects.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
}

impl Operator {
    pub fn parse(s: &str) -> Option<Operator> {
        Some(match s {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            "Gt" => Operator::Gt,
            "Lt" => Operator::Lt,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Operator::In => "In",
            Operator::NotIn => "NotIn",
            Operator::Exists => "Exists",
            Operator::DoesNotExist => "DoesNotExist",
            Operator::Gt => "Gt",
            Operator::Lt => "Lt",
        }
    }
}

/// Whether a requirement reads a node label or a node field (`matchFields`, only
/// `metadata.name` upstream).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    Label,
    Field,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    pub source: Source,
    pub key: String,
    pub op: Operator,
    pub values: Vec<String>,
}

impl Requirement {
    /// Converts an API requirement. An unknown operator yields `None`: upstream treats such a
    /// requirement as matching nothing.
    pub fn from_api(r: &NodeSelectorRequirement, source: Source) -> Option<Requirement> {
        Some(Requirement {
            source,
            key: r.key.clone(),
            op: Operator::parse(&r.operator)?,
            values: r.values.clone().unwrap_or_default(),
        })
    }

    /// `labels` holds node labels for `Source::Label`, and `{"metadata.name": name}` for fields.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let v = labels.get(&self.key);
        match self.op {
            Operator::In => v.is_some_and(|v| self.values.iter().any(|x| x == v)),
            Operator::NotIn => v.is_none_or(|v| !self.values.iter().any(|x| x == v)),
            Operator::Exists => v.is_some(),
            Operator::DoesNotExist => v.is_none(),
            Operator::Gt | Operator::Lt => {
                let (Some(v), [bound]) = (v, self.values.as_slice()) else {
                    return false;
                };
                let (Ok(v), Ok(bound)) = (v.parse::<i64>(), bound.parse::<i64>()) else {
                    return false;
                };
                if self.op == Operator::Gt {
                    v > bound
                } else {
                    v < bound
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.op {
            Operator::In | Operator::NotIn => {
                write!(
                    f,
                    "{} {} [{}]",
                    self.key,
                    self.op.as_str(),
                    self.values.join(",")
                )
            }
            Operator::Exists | Operator::DoesNotExist => {
                write!(f, "{} {}", self.key, self.op.as_str())
            }
            Operator::Gt | Operator::Lt => write!(
                f,
                "{} {} {}",
                self.key,
                self.op.as_str(),
                self.values.first().map(String::as_str).unwrap_or("")
            ),
        }
    }
}

/// A conjunction of requirements. `None` from [`Term::from_api`] marks a term that matches no
/// node (empty, or with an invalid operator), as upstream.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Term {
    pub requirements: Vec<Requirement>,
}

impl Term {
    pub fn from_api(t: &NodeSelectorTerm) -> Option<Term> {
        let exprs = t.match_expressions.as_deref().unwrap_or(&[]);
        let fields = t.match_fields.as_deref().unwrap_or(&[]);
        if exprs.is_empty() && fields.is_empty() {
            return None;
        }
        let mut requirements = Vec::with_capacity(exprs.len() + fields.len());
        for r in exprs {
            requirements.push(Requirement::from_api(r, Source::Label)?);
        }
        for r in fields {
            requirements.push(Requirement::from_api(r, Source::Field)?);
        }
        Some(Term { requirements })
    }

    /// The requirements `key In [value]` of a nodeSelector map.
    pub fn from_node_selector(sel: &BTreeMap<String, String>) -> Term {
        Term {
            requirements: sel
                .iter()
                .map(|(k, v)| Requirement {
                    source: Source::Label,
                    key: k.clone(),
                    op: Operator::In,
                    values: vec![v.clone()],
                })
                .collect(),
        }
    }

    pub fn and(&self, other: &Term) -> Term {
        let mut requirements = self.requirements.clone();
        requirements.extend(other.requirements.iter().cloned());
        Term { requirements }
    }

    /// True when every node this term selects is also selected by `other`. Sound but not
    /// complete: `false` means "could not prove it", which callers treat as "not a tightening".
    pub fn implies(&self, other: &Term) -> bool {
        let facts = Facts::of(self);
        if facts.unsatisfiable() {
            return true;
        }
        other.requirements.iter().all(|r| facts.implies(r))
    }

    /// Whether a node with these labels and this name satisfies every requirement.
    pub fn matches_node(&self, labels: &BTreeMap<String, String>, name: &str) -> bool {
        self.requirements.iter().all(|r| match r.source {
            Source::Label => r.matches(labels),
            Source::Field => {
                let fields: BTreeMap<String, String> = if r.key == "metadata.name" {
                    [("metadata.name".to_string(), name.to_string())].into()
                } else {
                    BTreeMap::new()
                };
                r.matches(&fields)
            }
        })
    }

    /// Whether some node could satisfy every requirement.
    pub fn satisfiable(&self) -> bool {
        !Facts::of(self).unsatisfiable()
    }

    pub fn implies_any(&self, others: &[Term]) -> bool {
        others.iter().any(|o| self.implies(o))
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.requirements.iter().map(|r| r.to_string()).collect();
        f.write_str(&parts.join(", "))
    }
}

/// What a conjunction of requirements says about each key.
struct Facts<'a> {
    by_key: BTreeMap<(Source, &'a str), KeyFacts>,
}

#[derive(Default)]
struct KeyFacts {
    must_exist: bool,
    must_not_exist: bool,
    /// Intersection of all `In` sets, when there is one.
    allowed: Option<BTreeSet<String>>,
    excluded: BTreeSet<String>,
    gt: Option<i64>,
    lt: Option<i64>,
    /// A Gt/Lt with an unparsable bound matches nothing.
    broken: bool,
}

impl KeyFacts {
    fn value_possible(&self, v: &str) -> bool {
        if self.excluded.contains(v) {
            return false;
        }
        if self.gt.is_some() || self.lt.is_some() {
            let Ok(n) = v.parse::<i64>() else {
                return false;
            };
            if self.gt.is_some_and(|g| n <= g) || self.lt.is_some_and(|l| n >= l) {
                return false;
            }
        }
        true
    }

    /// The finite set of values the key may take, if the requirements restrict it to one.
    fn possible_values(&self) -> Option<Vec<&str>> {
        self.allowed.as_ref().map(|a| {
            a.iter()
                .map(String::as_str)
                .filter(|v| self.value_possible(v))
                .collect()
        })
    }

    fn unsatisfiable(&self) -> bool {
        if self.broken || (self.must_exist && self.must_not_exist) {
            return true;
        }
        if let (Some(g), Some(l)) = (self.gt, self.lt) {
            if g.checked_add(1).is_none_or(|g1| g1 >= l) {
                return true;
            }
        }
        self.must_exist && self.possible_values().is_some_and(|v| v.is_empty())
    }
}

impl<'a> Facts<'a> {
    fn of(term: &'a Term) -> Facts<'a> {
        let mut by_key: BTreeMap<(Source, &str), KeyFacts> = BTreeMap::new();
        for r in &term.requirements {
            let k = by_key.entry((r.source, r.key.as_str())).or_default();
            match r.op {
                Operator::In => {
                    k.must_exist = true;
                    let set: BTreeSet<String> = r.values.iter().cloned().collect();
                    k.allowed = Some(match k.allowed.take() {
                        Some(prev) => prev.intersection(&set).cloned().collect(),
                        None => set,
                    });
                }
                Operator::NotIn => k.excluded.extend(r.values.iter().cloned()),
                Operator::Exists => k.must_exist = true,
                Operator::DoesNotExist => k.must_not_exist = true,
                Operator::Gt | Operator::Lt => {
                    k.must_exist = true;
                    match r.values.as_slice() {
                        [b] => match b.parse::<i64>() {
                            Ok(n) if r.op == Operator::Gt => {
                                k.gt = Some(k.gt.map_or(n, |g| g.max(n)))
                            }
                            Ok(n) => k.lt = Some(k.lt.map_or(n, |l| l.min(n))),
                            Err(_) => k.broken = true,
                        },
                        _ => k.broken = true,
                    }
                }
            }
        }
        Facts { by_key }
    }

    fn unsatisfiable(&self) -> bool {
        self.by_key.values().any(KeyFacts::unsatisfiable)
    }

    fn implies(&self, r: &Requirement) -> bool {
        let empty = KeyFacts::default();
        let k = self
            .by_key
            .get(&(r.source, r.key.as_str()))
            .unwrap_or(&empty);
        match r.op {
            Operator::Exists => k.must_exist,
            Operator::DoesNotExist => k.must_not_exist,
            Operator::In => {
                k.must_exist
                    && k.possible_values()
                        .is_some_and(|vals| vals.iter().all(|v| r.values.iter().any(|x| x == v)))
            }
            Operator::NotIn => {
                k.must_not_exist
                    || r.values.iter().all(|x| k.excluded.contains(x))
                    || k.possible_values()
                        .is_some_and(|vals| vals.iter().all(|v| !r.values.iter().any(|x| x == v)))
                    || r.values
                        .iter()
                        .all(|x| !k.value_possible(x) && k.must_exist)
            }
            Operator::Gt | Operator::Lt => {
                let [b] = r.values.as_slice() else {
                    return false;
                };
                let Ok(bound) = b.parse::<i64>() else {
                    return false;
                };
                if !k.must_exist {
                    return false;
                }
                let check = |n: i64| {
                    if r.op == Operator::Gt {
                        n > bound
                    } else {
                        n < bound
                    }
                };
                if let Some(vals) = k.possible_values() {
                    return vals.iter().all(|v| v.parse::<i64>().is_ok_and(check));
                }
                if r.op == Operator::Gt {
                    k.gt.is_some_and(|g| g >= bound)
                } else {
                    k.lt.is_some_and(|l| l <= bound)
                }
            }
        }
    }
}

/// The node constraint of a pod: its nodeSelector ANDed into each required term. `None` means
/// every node qualifies; an empty list means none does.
pub fn pod_node_constraint(
    node_selector: &BTreeMap<String, String>,
    required_terms: Option<&[NodeSelectorTerm]>,
) -> Option<Vec<Term>> {
    let sel = Term::from_node_selector(node_selector);
    match required_terms {
        None => {
            if sel.requirements.is_empty() {
                None
            } else {
                Some(vec![sel])
            }
        }
        Some(terms) => Some(
            terms
                .iter()
                .filter_map(Term::from_api)
                .map(|t| t.and(&sel))
                .collect(),
        ),
    }
}

/// True when every node allowed by `new` is allowed by `old` (`None` = all nodes).
pub fn constraint_implies(new: Option<&[Term]>, old: Option<&[Term]>) -> bool {
    match (new, old) {
        (_, None) => true,
        (None, Some(_)) => false,
        (Some(n), Some(o)) => n.iter().all(|t| t.implies_any(o)),
    }
}

/// True when every node `new`'s nodeSelector and required terms allow, `old`'s allow. Two
/// selectors without terms need no terms built: a map of `key = value` requirements (one value
/// a key, so never contradictory) implies another exactly when it holds every pair of it.
pub fn pod_constraint_implies(
    new: (&BTreeMap<String, String>, Option<&[NodeSelectorTerm]>),
    old: (&BTreeMap<String, String>, Option<&[NodeSelectorTerm]>),
) -> bool {
    match (new, old) {
        ((n, None), (o, None)) => o.iter().all(|(k, v)| n.get(k) == Some(v)),
        ((n, nt), (o, ot)) => constraint_implies(
            pod_node_constraint(n, nt).as_deref(),
            pod_node_constraint(o, ot).as_deref(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(s: &str) -> Requirement {
        let parts: Vec<&str> = s.splitn(3, ' ').collect();
        let values = parts
            .get(2)
            .map(|v| {
                v.trim_matches(|c| c == '[' || c == ']')
                    .split(',')
                    .filter(|x| !x.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        Requirement {
            source: Source::Label,
            key: parts[0].to_string(),
            op: Operator::parse(parts[1]).unwrap(),
            values,
        }
    }

    fn term(reqs: &[&str]) -> Term {
        Term {
            requirements: reqs.iter().map(|r| req(r)).collect(),
        }
    }

    #[test]
    fn matching_follows_the_scheduler() {
        let labels: BTreeMap<String, String> = [("zone", "a"), ("cpu", "8")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let cases = [
            ("zone In [a,b]", true),
            ("zone In [b]", false),
            ("zone NotIn [b]", true),
            ("missing NotIn [b]", true),
            ("zone Exists", true),
            ("missing Exists", false),
            ("missing DoesNotExist", true),
            ("cpu Gt 4", true),
            ("cpu Gt 8", false),
            ("cpu Lt 9", true),
            ("zone Gt 1", false),
            ("cpu Gt x", false),
        ];
        for (r, want) in cases {
            assert_eq!(req(r).matches(&labels), want, "{r}");
        }
    }

    #[test]
    fn implication_table() {
        let cases: &[(&[&str], &[&str], bool)] = &[
            (&["zone In [a]"], &["zone In [a,b]"], true),
            (&["zone In [a,b]"], &["zone In [a]"], false),
            (&["zone In [a,b]", "zone NotIn [b]"], &["zone In [a]"], true),
            (&["zone In [a]"], &["zone Exists"], true),
            (&["zone Exists"], &["zone In [a]"], false),
            (&["zone DoesNotExist"], &["zone NotIn [a]"], true),
            (&["zone In [a]"], &["zone NotIn [b]"], true),
            (&["zone NotIn [a,b]"], &["zone NotIn [a]"], true),
            (&["zone NotIn [a]"], &["zone NotIn [a,b]"], false),
            (&["cpu Gt 8"], &["cpu Gt 4"], true),
            (&["cpu Gt 4"], &["cpu Gt 8"], false),
            (&["cpu Lt 4"], &["cpu Lt 8"], true),
            (&["cpu In [5,6]"], &["cpu Gt 4"], true),
            (&["zone In [a]", "disk In [ssd]"], &["zone In [a]"], true),
            (&["zone In [a]"], &["zone In [a]", "disk In [ssd]"], false),
            // unsatisfiable terms imply anything
            (&["zone In [a]", "zone In [b]"], &["x Exists"], true),
            (&["zone Exists", "zone DoesNotExist"], &["x Exists"], true),
            (&[], &[], true),
        ];
        for (a, b, want) in cases {
            assert_eq!(term(a).implies(&term(b)), *want, "{a:?} => {b:?}");
        }
    }

    #[test]
    fn pod_constraint_combines_selector_and_terms() {
        let sel: BTreeMap<String, String> = [("disk".to_string(), "ssd".to_string())].into();
        assert_eq!(pod_node_constraint(&BTreeMap::new(), None), None);
        let c = pod_node_constraint(&sel, None).unwrap();
        assert_eq!(c[0].to_string(), "disk In [ssd]");
        let terms = vec![NodeSelectorTerm {
            match_expressions: Some(vec![NodeSelectorRequirement {
                key: "zone".into(),
                operator: "In".into(),
                values: Some(vec!["a".into()]),
            }]),
            match_fields: None,
        }];
        let c = pod_node_constraint(&sel, Some(&terms)).unwrap();
        assert_eq!(c[0].to_string(), "zone In [a], disk In [ssd]");
        assert!(constraint_implies(Some(&c), None));
        assert!(!constraint_implies(None, Some(&c)));
    }

    /// The selector-only shortcut gives what the general implication gives.
    #[test]
    fn selector_implication_shortcut_agrees_with_terms() {
        let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let selectors = [
            map(&[]),
            map(&[("disk", "ssd")]),
            map(&[("disk", "hdd")]),
            map(&[("disk", "ssd"), ("zone", "a")]),
            map(&[("zone", "a")]),
            map(&[("disk", "")]),
            map(&[("disk", "ssd"), ("zone", "a"), ("gpu", "t4")]),
        ];
        for n in &selectors {
            for o in &selectors {
                let general = constraint_implies(
                    pod_node_constraint(n, None).as_deref(),
                    pod_node_constraint(o, None).as_deref(),
                );
                assert_eq!(
                    pod_constraint_implies((n, None), (o, None)),
                    general,
                    "{n:?} => {o:?}"
                );
            }
        }
    }
}
