//! Prometheus metrics of the server (served on `/metrics` in OpenMetrics text).

use std::sync::{OnceLock, RwLock};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::admission::Endpoint;
use crate::rules::{Outcome, Verdict};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    endpoint: &'static str,
    rule: &'static str,
    verdict: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EndpointLabels {
    endpoint: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResourceLabels {
    resource: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SkipLabels {
    rule: &'static str,
    reason: &'static str,
}

pub struct Metrics {
    registry: Registry,
    cache_objects: Family<ResourceLabels, Gauge>,
    cache_restarts: Family<ResourceLabels, Counter>,
    cache_age: Family<ResourceLabels, Gauge<f64, std::sync::atomic::AtomicU64>>,
    unchecked: Family<SkipLabels, Counter>,
    namespace_lookups: Family<ResultLabels, Counter>,
    requests: Family<RequestLabels, Counter>,
    latency: Family<EndpointLabels, Histogram>,
    in_flight: Gauge,
    handles: Handles,
    rule_reloads: Family<ResultLabels, Counter>,
    tls_reloads: Family<ResultLabels, Counter>,
    cert_expiry: Gauge,
}

/// The request counters and latency histograms already taken from their families. A family
/// lookup (a lock and a SipHash of the labels) for each rule of each request cost the server
/// about 2% of a request's instructions; a counter is found again by the addresses of its
/// static labels (the same text at another address only takes a second slot for the same
/// series).
#[derive(Default)]
struct Handles {
    latency: [OnceLock<Histogram>; 2],
    requests: RwLock<Vec<(LabelAddrs, Counter)>>,
}

type LabelAddrs = [(usize, usize); 3];

fn addrs(l: &RequestLabels) -> LabelAddrs {
    [l.endpoint, l.rule, l.verdict].map(|s| (s.as_ptr() as usize, s.len()))
}

/// Decrements the in-flight gauge when a request ends, however it ends.
pub struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

fn endpoint_name(e: Endpoint) -> &'static str {
    match e {
        Endpoint::Validate => "validate",
        Endpoint::Mutate => "mutate",
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("placement_guard");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "admission_requests",
            "Admission requests by endpoint, rule and verdict",
            requests.clone(),
        );
        // 50 µs .. ~0.8 s: admission answers are expected well under a millisecond.
        let latency = Family::<EndpointLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
                0.00005, 2.0, 15,
            ))
        });
        registry.register(
            "admission_duration_seconds",
            "Time to answer an admission request",
            latency.clone(),
        );
        let in_flight = Gauge::default();
        registry.register(
            "admission_in_flight_requests",
            "Admission requests being answered",
            in_flight.clone(),
        );
        let rule_reloads = Family::<ResultLabels, Counter>::default();
        registry.register(
            "rule_file_reloads",
            "Rule file loads after start, by result",
            rule_reloads.clone(),
        );
        let tls_reloads = Family::<ResultLabels, Counter>::default();
        registry.register(
            "tls_certificate_reloads",
            "TLS certificate loads after start, by result",
            tls_reloads.clone(),
        );
        let cert_expiry = Gauge::default();
        registry.register(
            "tls_certificate_expiry_timestamp_seconds",
            "When the serving certificate expires (Unix time)",
            cert_expiry.clone(),
        );
        let cache_objects = Family::<ResourceLabels, Gauge>::default();
        registry.register(
            "cluster_cache_objects",
            "Objects in the cluster cache (serve --cluster-aware), by resource",
            cache_objects.clone(),
        );
        let cache_restarts = Family::<ResourceLabels, Counter>::default();
        registry.register(
            "cluster_cache_watch_restarts",
            "Re-lists of the cluster cache after its watch was lost (410 Gone, errors), by resource",
            cache_restarts.clone(),
        );
        let cache_age =
            Family::<ResourceLabels, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
        registry.register(
            "cluster_cache_age_seconds",
            "How long the cluster cache has not been known current: 0 while its watch runs, else since start or since the watch failed",
            cache_age.clone(),
        );
        let unchecked = Family::<SkipLabels, Counter>::default();
        registry.register(
            "rule_checks_skipped",
            "Checks a rule skipped (it never denies then): the cluster cache not synced or stale, a template naming a RuntimeClass the cache does not hold, or a namespace whose labels are not known to a node-selection policy that selects by label",
            unchecked.clone(),
        );
        let namespace_lookups = Family::<ResultLabels, Counter>::default();
        registry.register(
            "namespace_lookups",
            "Namespaces read from the API server because the cluster cache did not hold them, for node-selection policies that select by label: found, not_found, failed (no answer or refused) and paused (none tried, for 10 s after a failure)",
            namespace_lookups.clone(),
        );
        Metrics {
            registry,
            namespace_lookups,
            cache_objects,
            cache_restarts,
            cache_age,
            unchecked,
            requests,
            latency,
            in_flight,
            handles: Handles::default(),
            rule_reloads,
            tls_reloads,
            cert_expiry,
        }
    }

    pub fn in_flight(&self) -> InFlight {
        self.in_flight.inc();
        InFlight(self.in_flight.clone())
    }

    /// Counts one answered request once per rule that looked at it, with what that rule
    /// decided (`rule="none"` with the request's outcome when no rule did), and its latency.
    pub fn observe(&self, endpoint: Endpoint, verdict: Option<&Verdict>, took: Duration) {
        for (rule, reason) in verdict.iter().flat_map(|v| &v.unchecked) {
            self.unchecked
                .get_or_create(&SkipLabels {
                    rule: rule.as_str(),
                    reason,
                })
                .inc();
        }
        let rules: Vec<(&'static str, &'static str)> = match verdict {
            Some(v) if !v.rules_run.is_empty() => v
                .rules_run
                .iter()
                .map(|r| (r.as_str(), v.outcome_of(*r).as_str()))
                .collect(),
            Some(v) => vec![("none", v.outcome().as_str())],
            None => vec![("none", Outcome::Allowed.as_str())],
        };
        self.count(endpoint, &rules, took);
    }

    /// Counts a request that got no AdmissionReview answer (`bad_request`, `error`).
    pub fn observe_failure(&self, endpoint: Endpoint, verdict: &'static str, took: Duration) {
        self.count(endpoint, &[("none", verdict)], took);
    }

    fn count(&self, endpoint: Endpoint, rules: &[(&'static str, &'static str)], took: Duration) {
        let at = match endpoint {
            Endpoint::Validate => 0,
            Endpoint::Mutate => 1,
        };
        let endpoint = endpoint_name(endpoint);
        self.handles.latency[at]
            .get_or_init(|| {
                self.latency
                    .get_or_create(&EndpointLabels { endpoint })
                    .clone()
            })
            .observe(took.as_secs_f64());
        for &(rule, verdict) in rules {
            self.inc_request(RequestLabels {
                endpoint,
                rule,
                verdict,
            });
        }
    }

    fn inc_request(&self, labels: RequestLabels) {
        let key = addrs(&labels);
        if let Ok(known) = self.handles.requests.read() {
            if let Some((_, c)) = known.iter().find(|(k, _)| *k == key) {
                c.inc();
                return;
            }
        }
        let c = self.requests.get_or_create(&labels).clone();
        c.inc();
        if let Ok(mut known) = self.handles.requests.write() {
            known.push((key, c));
        }
    }

    pub fn namespace_lookup(&self, result: &'static str) {
        self.namespace_lookups
            .get_or_create(&ResultLabels { result })
            .inc();
    }

    pub fn rules_reload(&self, ok: bool) {
        self.rule_reloads
            .get_or_create(&ResultLabels {
                result: if ok { "success" } else { "failure" },
            })
            .inc();
    }

    pub fn tls_reload(&self, ok: bool) {
        self.tls_reloads
            .get_or_create(&ResultLabels {
                result: if ok { "success" } else { "failure" },
            })
            .inc();
    }

    pub fn cert_expiry(&self, unix: Option<i64>) {
        if let Some(t) = unix {
            self.cert_expiry.set(t);
        }
    }

    /// The cluster cache's figures at scrape time: (resource, objects, restarts, age).
    pub fn cache(&self, stats: &[(&'static str, u64, u64, f64)]) {
        for &(resource, objects, restarts, age) in stats {
            let l = ResourceLabels { resource };
            self.cache_objects.get_or_create(&l).set(objects as i64);
            let c = self.cache_restarts.get_or_create(&l);
            c.inc_by(restarts.saturating_sub(c.get()));
            self.cache_age.get_or_create(&l).set(age);
        }
    }

    pub fn encode(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counted through the handles, a series is the same one whatever the labels' addresses.
    #[test]
    fn cached_counters_count_the_same_series() {
        let m = Metrics::new();
        let verdict: &'static str = String::from("denied").leak();
        for v in ["denied", verdict, "denied"] {
            m.count(
                Endpoint::Validate,
                &[("hard-anti-affinity", v)],
                Duration::ZERO,
            );
        }
        m.count(Endpoint::Mutate, &[("none", "allowed")], Duration::ZERO);
        let text = m.encode();
        for want in [
            r#"placement_guard_admission_requests_total{endpoint="validate",rule="hard-anti-affinity",verdict="denied"} 3"#,
            r#"placement_guard_admission_requests_total{endpoint="mutate",rule="none",verdict="allowed"} 1"#,
            r#"placement_guard_admission_duration_seconds_count{endpoint="validate"} 3"#,
            r#"placement_guard_admission_duration_seconds_count{endpoint="mutate"} 1"#,
        ] {
            assert!(text.contains(want), "{want}\n{text}");
        }
    }

    #[test]
    fn encodes_every_family() {
        use crate::k8s::fieldpath::{FieldError, FieldPath};
        use crate::rules::{anti_affinity, spread, Action, Finding};
        let m = Metrics::new();
        // A Deployment denied by one rule: the other rule that ran found nothing.
        let denied = Verdict {
            findings: vec![Finding {
                rule: anti_affinity::ID,
                action: Action::Deny,
                error: FieldError::forbidden(FieldPath::new("spec"), "no"),
                hint: None,
            }],
            rules_run: vec![anti_affinity::ID, spread::VALIDATE_ID],
            ..Verdict::default()
        };
        m.observe(Endpoint::Validate, Some(&denied), Duration::from_micros(80));
        m.observe(Endpoint::Mutate, None, Duration::from_micros(80));
        m.observe_failure(Endpoint::Validate, "bad_request", Duration::from_micros(80));
        m.rules_reload(false);
        m.tls_reload(true);
        m.cert_expiry(Some(1_900_000_000));
        {
            let _g = m.in_flight();
            assert!(m
                .encode()
                .contains("placement_guard_admission_in_flight_requests 1"));
        }
        let text = m.encode();
        for want in [
            r#"placement_guard_admission_requests_total{endpoint="validate",rule="hard-anti-affinity",verdict="denied"} 1"#,
            r#"placement_guard_admission_requests_total{endpoint="validate",rule="topology-spread",verdict="allowed"} 1"#,
            r#"placement_guard_admission_requests_total{endpoint="validate",rule="none",verdict="bad_request"} 1"#,
            r#"placement_guard_admission_requests_total{endpoint="mutate",rule="none",verdict="allowed"} 1"#,
            r#"placement_guard_admission_duration_seconds_bucket{le="0.0001",endpoint="validate"} 2"#,
            "placement_guard_admission_in_flight_requests 0",
            r#"placement_guard_rule_file_reloads_total{result="failure"} 1"#,
            r#"placement_guard_tls_certificate_reloads_total{result="success"} 1"#,
            "placement_guard_tls_certificate_expiry_timestamp_seconds 1900000000",
        ] {
            assert!(text.contains(want), "missing {want}\n{text}");
        }
    }
}
