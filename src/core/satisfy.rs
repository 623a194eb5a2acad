//! Exact satisfiability of node selections: is there a node (any label set the API allows, any
//! name) that satisfies a conjunction of requirements and negated requirements, and which one?
//!
//! A requirement's truth on one key depends only on whether the key is present, on which of the
//! values mentioned for that key the node's value equals, whether it parses as an integer, and
//! where that integer lies between the mentioned Gt/Lt bounds. So a finite set of candidates per
//! key (absent, each mentioned value, a fresh non-integer, and a fresh integer in each interval
//! between bounds, spelt with leading zeros when every integer there is mentioned) contains a
//! witness whenever one exists.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::nodeselector::{Operator, Requirement, Source, Term};
use crate::k8s::validation::label_value_errors;

/// A requirement, or its negation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Literal {
    pub requirement: Requirement,
    pub negated: bool,
}

impl Literal {
    pub fn holds(&self, value: Option<&str>) -> bool {
        let mut one = BTreeMap::new();
        if let Some(v) = value {
            one.insert(self.requirement.key.clone(), v.to_string());
        }
        self.requirement.matches(&one) != self.negated
    }
}

/// A node that satisfies a selection: its labels and, when the selection reads it, its name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Witness {
    pub labels: BTreeMap<String, String>,
    pub name: Option<String>,
}

impl Witness {
    /// Whether `term` selects this node (a fresh name when none was chosen).
    pub fn satisfies(&self, term: &Term) -> bool {
        term.matches_node(&self.labels, self.name.as_deref().unwrap_or("any-node"))
    }
}

impl fmt::Display for Witness {
    /// `{pool: tenants, nvidia.com/gpu.present: ""}`, and the name when it matters.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Quoted where YAML would read another type (`true`, `1`, `null`): the value is to
        // be copied into a nodeSelector, where only a string is a label value.
        let show = |v: &str| {
            if v.is_empty() || !yaml_reads_as_string(v) {
                format!("{v:?}")
            } else {
                v.to_string()
            }
        };
        let labels: Vec<String> = self
            .labels
            .iter()
            .map(|(k, v)| format!("{k}: {}", show(v)))
            .collect();
        write!(f, "{{{}}}", labels.join(", "))?;
        if let Some(n) = &self.name {
            write!(f, " named {n}")?;
        }
        Ok(())
    }
}

/// Whether YAML (1.1, as kubectl's go-yaml reads it, or 1.2) reads `v` unquoted as a string:
/// not a boolean, a null or a number.
fn yaml_reads_as_string(v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    let special = matches!(
        lower.as_str(),
        "true" | "false" | "yes" | "no" | "y" | "n" | "on" | "off" | "null" | "~"
    ) || lower.starts_with('.');
    let numeric = v.parse::<f64>().is_ok()
        || v.strip_prefix("0x")
            .is_some_and(|h| i64::from_str_radix(h, 16).is_ok())
        || v.strip_prefix("0o")
            .is_some_and(|o| i64::from_str_radix(o, 8).is_ok());
    !special && !numeric
}

/// Whether a string can be a label value (the API refuses the others, so no node has them).
fn valid_label_value(v: &str) -> bool {
    label_value_errors(v).is_empty()
}

/// The candidate values of one key; `None` stands for an absent key.
fn candidates(source: Source, lits: &[&Literal]) -> Vec<Option<String>> {
    let mut mentioned: Vec<String> = Vec::new();
    let mut bounds: BTreeSet<i64> = BTreeSet::new();
    for l in lits {
        let r = &l.requirement;
        match r.op {
            Operator::Gt | Operator::Lt => {
                if let [b] = r.values.as_slice() {
                    if let Ok(n) = b.parse::<i64>() {
                        bounds.insert(n);
                    }
                }
            }
            _ => {
                for v in &r.values {
                    if !mentioned.contains(v) {
                        mentioned.push(v.clone());
                    }
                }
            }
        }
    }
    // Node names are always there; label values must be valid ones.
    let mut out: Vec<Option<String>> = Vec::new();
    if source == Source::Label {
        out.push(None);
    }
    let usable = |v: &str| source == Source::Field || valid_label_value(v);
    out.extend(
        mentioned
            .iter()
            .filter(|v| usable(v))
            .map(|v| Some(v.clone())),
    );
    // A non-integer value no requirement names ("" for labels: valid, and it reads well).
    let first = if source == Source::Label {
        ""
    } else {
        "node-x"
    };
    let fresh = std::iter::once(first.to_string())
        .chain((0..).map(|i| format!("x{i}")))
        .find(|v| !mentioned.contains(v))
        .unwrap_or_default();
    out.push(Some(fresh));
    // An integer of each class the bounds cut the integers into ([0, b1-1], {b1}, [b1+1, b2-1],
    // ...), one no requirement names. Label values cannot be negative: they must start with a
    // letter or digit.
    let bs: Vec<i64> = bounds.into_iter().filter(|b| *b >= 0).collect();
    let mut classes: Vec<(i64, Option<i64>)> = Vec::new();
    let mut lo = 0i64;
    for b in &bs {
        classes.push((lo, b.checked_sub(1)));
        classes.push((*b, Some(*b)));
        match b.checked_add(1) {
            Some(next) => lo = next,
            None => {
                lo = i64::MAX;
                break;
            }
        }
    }
    classes.push((lo, None));
    for (lo, hi) in classes {
        let mut n = lo;
        let mut found = false;
        for _ in 0..=mentioned.len() {
            if hi.is_some_and(|h| n > h) {
                break;
            }
            let s = n.to_string();
            if !mentioned.contains(&s) {
                out.push(Some(s));
                found = true;
                break;
            }
            match n.checked_add(1) {
                Some(next) => n = next,
                None => break,
            }
        }
        // Every integer of the class is named (`In [1]` against `Gt 0, Lt 2`): the same
        // integer spelt with leading zeros, which Gt and Lt read as that integer (the
        // scheduler's ParseInt) and In and NotIn as another value.
        if !found && hi.is_none_or(|h| lo <= h) {
            let padded = (1..=mentioned.len() + 1)
                .map(|k| format!("{}{lo}", "0".repeat(k)))
                .find(|p| !mentioned.contains(p) && usable(p));
            out.extend(padded.map(Some));
        }
    }
    out
}

/// A node satisfying every literal, if any exists.
pub fn witness(literals: &[Literal]) -> Option<Witness> {
    let mut by_key: BTreeMap<(Source, &str), Vec<&Literal>> = BTreeMap::new();
    for l in literals {
        by_key
            .entry((l.requirement.source, l.requirement.key.as_str()))
            .or_default()
            .push(l);
    }
    let mut w = Witness::default();
    for ((source, key), lits) in by_key {
        // Only metadata.name is a node field; a requirement on another field matches no node.
        let chosen = candidates(source, &lits)
            .into_iter()
            .find(|c| lits.iter().all(|l| l.holds(c.as_deref())))?;
        match (source, chosen) {
            (Source::Label, Some(v)) => {
                w.labels.insert(key.to_string(), v);
            }
            (Source::Label, None) => {}
            (Source::Field, Some(v)) if key == "metadata.name" => w.name = Some(v),
            (Source::Field, _) => {
                if lits.iter().any(|l| !l.negated) {
                    return None;
                }
            }
        }
    }
    Some(w)
}

fn positive(term: &Term) -> Vec<Literal> {
    term.requirements
        .iter()
        .map(|r| Literal {
            requirement: r.clone(),
            negated: false,
        })
        .collect()
}

/// A node that `a` and `b` both select.
pub fn intersect(a: &Term, b: &Term) -> Option<Witness> {
    let mut lits = positive(a);
    lits.extend(positive(b));
    witness(&lits)
}

/// A node that `selection` selects and none of `others` does. `others` are ORed terms; `None`
/// in it is an empty or invalid term, which selects nothing.
pub fn outside(selection: &Term, others: &[Option<Term>]) -> Option<Witness> {
    let terms: Vec<&Term> = others.iter().flatten().collect();
    // Each other term must fail: one of its requirements is false. Depth-first over the
    // choices, pruning as soon as the literals so far have no witness.
    fn search(lits: &mut Vec<Literal>, rest: &[&Term]) -> Option<Witness> {
        let Some((first, rest)) = rest.split_first() else {
            return witness(lits);
        };
        for r in &first.requirements {
            lits.push(Literal {
                requirement: r.clone(),
                negated: true,
            });
            if witness(lits).is_some() {
                if let Some(w) = search(lits, rest) {
                    return Some(w);
                }
            }
            lits.pop();
        }
        None
    }
    let mut lits = positive(selection);
    search(&mut lits, &terms)
}

#[cfg(test)]
mod tests;
