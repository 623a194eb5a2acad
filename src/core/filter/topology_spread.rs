//! PodTopologySpread: DoNotSchedule constraints, with the matching pods counted per topology
//! domain once (PreFilter) and each node's skew checked against the global minimum (Filter).

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::TopologySpreadConstraint;

use super::node_affinity::NodeAffinity;
use super::taint_toleration::TaintToleration;
use super::{merged_selector, SetMatches, REASON_SPREAD, REASON_SPREAD_MISSING_LABEL};
use crate::core::cluster::{Cluster, Node};
use crate::core::labels::Selector;
use crate::k8s::model::selector_has_no_requirements;

/// A DoNotSchedule constraint with its counts per domain.
struct Constraint<'a> {
    key: &'a str,
    max_skew: i64,
    /// Whether the incoming pod matches its own selector (it then counts on the chosen node).
    self_match: bool,
    counts: HashMap<&'a str, i64>,
    /// The global minimum, or `None` when no node is eligible.
    min: Option<i64>,
    /// `minDomains` when there are fewer eligible domains: the minimum was then taken as 0.
    short_of: Option<i32>,
}

pub(super) struct PodTopologySpread<'a> {
    constraints: Vec<Constraint<'a>>,
}

impl<'a> PodTopologySpread<'a> {
    pub(super) fn new(
        cluster: &'a Cluster,
        constraints: &'a [TopologySpreadConstraint],
        pod_labels: &BTreeMap<String, String>,
        namespace: &str,
        affinity: &NodeAffinity,
        taints: Option<&TaintToleration>,
    ) -> PodTopologySpread<'a> {
        let constraints: Vec<&TopologySpreadConstraint> = constraints
            .iter()
            .filter(|c| c.when_unsatisfiable == "DoNotSchedule")
            .collect();
        // A constraint without a selector counts no pods; constraints sharing a selector share
        // one match cache over the snapshot's label sets.
        let mut selectors: Vec<Selector> = Vec::new();
        let mut caches: Vec<SetMatches> = Vec::new();
        let mut cache_of: Vec<Option<usize>> = Vec::new();
        let mut out: Vec<Constraint> = Vec::new();
        for c in &constraints {
            let merged = merged_selector(
                c.label_selector.as_ref(),
                c.match_label_keys.as_deref(),
                None,
                pod_labels,
            );
            // kube-scheduler v1.27 to v1.36 counts no pod for a selector without requirements
            // (`labelSelector: {}`, which matches every pod): countPodsMatchSelector returns 0
            // when `selector.Empty()` (kubernetes#141339, fixed after v1.36). The pod itself
            // still matches it.
            let counts_nothing = merged.as_ref().is_some_and(selector_has_no_requirements);
            let selector = merged.map(|s| Selector::compile(&s));
            let cache = selector.as_ref().filter(|_| !counts_nothing).map(|sel| {
                selectors.iter().position(|s| s == sel).unwrap_or_else(|| {
                    caches.push(SetMatches::new(cluster, |set| {
                        set.namespace == namespace && sel.matches(&set.labels)
                    }));
                    selectors.push(sel.clone());
                    caches.len() - 1
                })
            });
            cache_of.push(cache);
            out.push(Constraint {
                key: c.topology_key.as_str(),
                max_skew: i64::from(c.max_skew),
                self_match: selector.as_ref().is_some_and(|s| s.matches(pod_labels)),
                counts: HashMap::new(),
                min: None,
                short_of: None,
            });
        }
        if !out.is_empty() {
            for (i, node) in cluster.nodes.iter().enumerate() {
                if !out.iter().all(|s| node.labels.contains_key(s.key)) {
                    continue;
                }
                let mut affinity_ok = None;
                let mut taints_ok = None;
                for ((s, c), cache) in out.iter_mut().zip(&constraints).zip(&cache_of) {
                    if c.node_affinity_policy.as_deref().unwrap_or("Honor") == "Honor"
                        && !*affinity_ok.get_or_insert_with(|| affinity.matches(node))
                    {
                        continue;
                    }
                    if c.node_taints_policy.as_deref() == Some("Honor")
                        && !*taints_ok
                            .get_or_insert_with(|| taints.is_none_or(|t| t.filter(node).is_none()))
                    {
                        continue;
                    }
                    let count = cache.map_or(0, |c| {
                        // Terminating pods are not counted (kube-scheduler #87621).
                        cluster.groups_by_node[i]
                            .iter()
                            .filter(|g| caches[c].get(g.set))
                            .map(|g| i64::from(g.live))
                            .sum()
                    });
                    let value = node.labels.get(s.key).map(String::as_str).unwrap_or("");
                    *s.counts.entry(value).or_insert(0) += count;
                }
            }
            for (s, c) in out.iter_mut().zip(&constraints) {
                let domains = s.counts.len() as i64;
                s.min = s.counts.values().min().copied();
                // Fewer eligible domains than minDomains: the global minimum counts as 0.
                if let Some(m) = c.min_domains.filter(|&m| domains < i64::from(m)) {
                    s.min = Some(0);
                    s.short_of = Some(m);
                }
            }
        }
        PodTopologySpread { constraints: out }
    }

    /// Constraints in order, as the scheduler checks them: the first one the node lacks the key
    /// of, or is skewed for, decides. A skew comes with the counts behind it.
    pub(super) fn filter(&self, node: &Node) -> Option<(&'static str, Option<String>)> {
        for s in &self.constraints {
            let Some(value) = node.labels.get(s.key) else {
                return Some((REASON_SPREAD_MISSING_LABEL, None));
            };
            let Some(min) = s.min else { continue };
            let matched = s.counts.get(value.as_str()).copied().unwrap_or(0);
            let skew = matched + i64::from(s.self_match) - min;
            if skew > s.max_skew {
                let mut domains: Vec<(&&str, &i64)> = s.counts.iter().collect();
                domains.sort();
                let counts: Vec<String> =
                    domains.iter().map(|(d, n)| format!("{d}: {n}")).collect();
                // Otherwise the skew does not follow from the counts shown.
                let short = s.short_of.map_or(String::new(), |m| {
                    format!(
                        "; {} eligible domain(s), fewer than minDomains {m}, so the minimum counts as 0",
                        domains.len()
                    )
                });
                return Some((
                    REASON_SPREAD,
                    Some(format!(
                        "{}: {}{short}; skew {skew} here, maxSkew {}",
                        s.key,
                        counts.join(", "),
                        s.max_skew
                    )),
                ));
            }
        }
        None
    }
}
