//! Resource requests and host ports as kube-scheduler's NodeResourcesFit and NodePorts read them:
//! quantities in the scheduler's units (milli-CPU, bytes, counts), a pod's effective request
//! (`resourcehelper.PodRequests`) and the host ports it wants (`schedutil.GetHostPorts`).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::k8s::model::{Container, PodSpec};

pub const CPU: &str = "cpu";
pub const MEMORY: &str = "memory";
pub const EPHEMERAL_STORAGE: &str = "ephemeral-storage";
pub const PODS: &str = "pods";

/// A quantity string (`100m`, `1.5Gi`, `2e3`) as a rational `mantissa * 10^e10 * 2^e2`.
fn parse_parts(s: &str) -> Option<(bool, i128, i32, i32)> {
    let s = s.trim();
    let (neg, s) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let num_end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(num_end);
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() && frac.is_empty() || frac.contains('.') {
        return None;
    }
    let mut mantissa: i128 = 0;
    let mut e10: i32 = 0;
    for (i, c) in int.bytes().chain(frac.bytes()).enumerate() {
        // Digits beyond what i128 holds only move the value by less than one part in 10^30.
        if mantissa < 10i128.pow(30) {
            mantissa = mantissa * 10 + i128::from(c - b'0');
            if i >= int.len() {
                e10 -= 1;
            }
        } else if i < int.len() {
            e10 += 1;
        }
    }
    let (x10, x2) = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        e => {
            let exp = e.strip_prefix(['e', 'E'])?;
            let v: i32 = exp.parse().ok()?;
            if !(-100..=100).contains(&v) {
                return None;
            }
            (v, 0)
        }
    };
    Some((neg, mantissa, e10 + x10, x2))
}

/// The quantity times `10^scale`, rounded up as `resource.Quantity.ScaledValue` rounds; `None`
/// when it does not parse. Values beyond i64 saturate.
pub fn scaled(q: &str, scale: i32) -> Option<i64> {
    let (neg, mut m, e10, e2) = parse_parts(q)?;
    let e10 = e10 + scale;
    for _ in 0..e2 {
        m = m.saturating_mul(2);
    }
    let v = if e10 >= 0 {
        m.saturating_mul(10i128.checked_pow(e10 as u32).unwrap_or(i128::MAX))
    } else {
        let d = 10i128.checked_pow(e10.unsigned_abs()).unwrap_or(i128::MAX);
        // Round away from zero, as Quantity.ScaledValue does.
        (m + d - 1) / d
    };
    let v = if neg { -v } else { v };
    Some(v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64)
}

/// `q`'s canonical form (`resource.Quantity.String`) when that is one unit of a suffix: `1m`,
/// `1`, `1k` … `1E`, `1Ki` … `1Ei`, the forms the downward API's divisors may take; `None` for
/// any other value. The form follows the suffix written, as Go's does: `1000m` is `1`, `1024Ki`
/// is `1Mi`, but `1024` stays `1024`, `1e3` stays `1e3`, and a binary value under 1024 is
/// written in decimal (`0.0009765625Ki` is `1`).
pub fn unit_form(q: &str) -> Option<&'static str> {
    let (neg, m, e10, e2) = parse_parts(q)?;
    if neg || m == 0 {
        return None;
    }
    let suffix = q.trim().trim_start_matches(['+', '-']);
    let suffix = suffix.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    // The value in thousandths, when it is a whole number of them.
    let mut v = m;
    for _ in 0..e2 {
        v = v.checked_mul(2)?;
    }
    let e = e10 + 3;
    if e >= 0 {
        v = v.checked_mul(10i128.checked_pow(e as u32)?)?;
    } else {
        let d = 10i128.checked_pow(e.unsigned_abs())?;
        if v % d != 0 {
            return None;
        }
        v /= d;
    }
    const DECIMAL: [&str; 8] = ["1m", "1", "1k", "1M", "1G", "1T", "1P", "1E"];
    const BINARY: [&str; 6] = ["1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"];
    // `1e3`, not `E` (exa) or `Ei`.
    if suffix.len() > 1 && suffix.starts_with(['e', 'E']) && !suffix.ends_with('i') {
        return (v == 1000).then_some("1");
    }
    if suffix.ends_with('i') && v >= 1024 * 1000 {
        return (1..=6u32)
            .find(|&k| Some(v) == 1024i128.checked_pow(k).map(|x| x * 1000))
            .map(|k| BINARY[k as usize - 1]);
    }
    (0..8u32)
        .find(|&k| v == 1000i128.pow(k))
        .map(|k| DECIMAL[k as usize])
}

/// A resource list in the scheduler's units: CPU in millicores, everything else in base units.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resources {
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    /// Extended resources, hugepages and other scalar resources (`schedutil.IsScalarResourceName`).
    pub scalar: BTreeMap<String, i64>,
}

/// `IsScalarResourceName`: extended resources (a domain outside kubernetes.io), hugepages,
/// attachable volumes and prefixed native resources; other names are not scheduled on.
pub fn is_scalar(name: &str) -> bool {
    name.starts_with("hugepages-") || name.starts_with("attachable-volumes-") || name.contains('/')
}

impl Resources {
    /// From a resource list. Names the scheduler does not account are dropped; so is `pods`.
    pub fn from_list(list: &BTreeMap<String, Quantity>) -> Resources {
        let mut r = Resources::default();
        for (name, q) in list {
            r.set(name, &q.0);
        }
        r
    }

    fn set(&mut self, name: &str, q: &str) {
        match name {
            CPU => self.milli_cpu = scaled(q, 3).unwrap_or(0),
            MEMORY => self.memory = scaled(q, 0).unwrap_or(0),
            EPHEMERAL_STORAGE => self.ephemeral_storage = scaled(q, 0).unwrap_or(0),
            n if is_scalar(n) => {
                self.scalar.insert(n.to_string(), scaled(q, 0).unwrap_or(0));
            }
            _ => {}
        }
    }

    pub fn is_zero(&self) -> bool {
        self.milli_cpu == 0
            && self.memory == 0
            && self.ephemeral_storage == 0
            && self.scalar.is_empty()
    }

    pub fn add(&mut self, o: &Resources) {
        self.milli_cpu = self.milli_cpu.saturating_add(o.milli_cpu);
        self.memory = self.memory.saturating_add(o.memory);
        self.ephemeral_storage = self.ephemeral_storage.saturating_add(o.ephemeral_storage);
        for (k, v) in &o.scalar {
            let e = self.scalar.entry(k.clone()).or_insert(0);
            *e = e.saturating_add(*v);
        }
    }

    /// Undoes `add` (a pod leaving its node).
    pub fn sub(&mut self, o: &Resources) {
        self.milli_cpu = self.milli_cpu.saturating_sub(o.milli_cpu);
        self.memory = self.memory.saturating_sub(o.memory);
        self.ephemeral_storage = self.ephemeral_storage.saturating_sub(o.ephemeral_storage);
        for (k, v) in &o.scalar {
            if let Some(e) = self.scalar.get_mut(k) {
                *e = e.saturating_sub(*v);
            }
        }
    }

    /// Per resource, the larger of the two (`maxResourceList`).
    fn max(&mut self, o: &Resources) {
        self.milli_cpu = self.milli_cpu.max(o.milli_cpu);
        self.memory = self.memory.max(o.memory);
        self.ephemeral_storage = self.ephemeral_storage.max(o.ephemeral_storage);
        for (k, v) in &o.scalar {
            let e = self.scalar.entry(k.clone()).or_insert(*v);
            *e = (*e).max(*v);
        }
    }
}

/// A container's requests as the apiserver stores them: a resource with a limit and no request
/// is defaulted to request its limit.
fn container_requests(c: &Container) -> Resources {
    let Some(res) = &c.resources else {
        return Resources::default();
    };
    let mut r = Resources::default();
    if let Some(limits) = &res.limits {
        for (name, q) in limits {
            r.set(name, &q.0);
        }
    }
    if let Some(requests) = &res.requests {
        for (name, q) in requests {
            r.set(name, &q.0);
        }
    }
    r
}

/// What a bound pod's status says of its containers' resources (`status.containerStatuses`
/// and `initContainerStatuses`): the kubelet's `allocatedResources` and what it has actuated
/// (`resources.requests`), which differ from the spec while an in-place resize is under way.
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerHeld {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub allocated_resources: Option<BTreeMap<String, Quantity>>,
    #[serde(default)]
    pub resources: Option<HeldRequests>,
}

#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
pub struct HeldRequests {
    #[serde(default)]
    pub requests: Option<BTreeMap<String, Quantity>>,
}

/// A bound pod's status as the scheduler reads it for its requests.
#[derive(Clone, Copy, Debug, Default)]
pub struct Held<'a> {
    pub containers: &'a [ContainerHeld],
    /// The `PodResizePending` condition says `Infeasible`: the spec is not what the pod holds.
    pub resize_infeasible: bool,
}

impl Held<'_> {
    fn of(&self, name: &str) -> Option<&ContainerHeld> {
        self.containers.iter().find(|c| c.name == name)
    }
}

/// The containers' part of `resourcehelper.PodRequests`, each container's resources given by
/// `each`: regular containers and sidecars (restartable init containers) run together; each
/// other init container runs alone beside the sidecars started before it; the pod needs the
/// larger of the two.
fn aggregate(spec: &PodSpec, each: impl Fn(&Container) -> Resources) -> Resources {
    let mut reqs = Resources::default();
    for c in &spec.containers {
        reqs.add(&each(c));
    }
    let mut sidecars = Resources::default();
    let mut init_max = Resources::default();
    for c in &spec.init_containers {
        let mut r = each(c);
        if c.restart_policy.as_deref() == Some("Always") {
            reqs.add(&r);
            sidecars.add(&r);
            r = sidecars.clone();
        } else {
            r.add(&sidecars);
        }
        init_max.max(&r);
    }
    reqs.max(&init_max);
    reqs
}

/// `resourcehelper.PodRequests` without non-zero defaults, as NodeResourcesFit's filter uses it,
/// for a pod with no status (one to be placed). Pod-level requests (`spec.resources`) replace
/// the containers' sum for the resources they set (cpu, memory, hugepages); the overhead comes
/// on top.
pub fn pod_requests(spec: &PodSpec) -> Resources {
    pod_requests_held(spec, Held::default())
}

/// [`pod_requests`] of a bound pod with `UseStatusResources`, as the scheduler counts what a
/// node has given out since in-place resize (GA in v1.35): per resource the largest of what the
/// spec asks, what the kubelet allocated and what it actuated, so a pod being resized down
/// holds its old size until the kubelet has shrunk it; with a resize found infeasible, only
/// what it holds.
pub fn pod_requests_held(spec: &PodSpec, held: Held) -> Resources {
    let mut reqs = if held.containers.is_empty() && !held.resize_infeasible {
        aggregate(spec, container_requests)
    } else {
        let infeasible = held.resize_infeasible;
        let fallback = |c: &Container| {
            if infeasible {
                Resources::default()
            } else {
                container_requests(c)
            }
        };
        let allocated = |c: &Container| match held
            .of(c.name.as_deref().unwrap_or_default())
            .and_then(|h| h.allocated_resources.as_ref())
        {
            Some(list) => Resources::from_list(list),
            None => fallback(c),
        };
        let actuated = |c: &Container| {
            let h = held.of(c.name.as_deref().unwrap_or_default());
            match h.and_then(|h| h.resources.as_ref()?.requests.as_ref()) {
                Some(list) => Resources::from_list(list),
                None => allocated(c),
            }
        };
        let mut reqs = aggregate(spec, actuated);
        reqs.max(&aggregate(spec, allocated));
        if !infeasible {
            reqs.max(&aggregate(spec, container_requests));
        }
        reqs
    };
    let pod_level = spec.resources.as_ref();
    if let Some(requests) = pod_level.and_then(|r| r.requests.as_ref()) {
        for (name, q) in requests.iter().filter(|(n, _)| pod_level_resource(n)) {
            reqs.set(name, &q.0);
        }
    }
    // The apiserver's `defaultPodRequests` (PodLevelResources, on by default since v1.34): a
    // pod-level limit no container asks for is the pod's request for it.
    if let Some(limits) = pod_level.and_then(|r| r.limits.as_ref()) {
        let requested = pod_level.and_then(|r| r.requests.as_ref());
        for (name, q) in limits.iter().filter(|(n, _)| pod_level_resource(n)) {
            if !requested.is_some_and(|r| r.contains_key(name)) && !containers_ask(spec, name) {
                reqs.set(name, &q.0);
            }
        }
    }
    if let Some(overhead) = &spec.overhead {
        reqs.add(&Resources::from_list(overhead));
    }
    reqs
}

/// The resources pod-level `spec.resources` may set (`IsSupportedPodLevelResource`).
fn pod_level_resource(name: &str) -> bool {
    name == CPU || name == MEMORY || name.starts_with("hugepages-")
}

/// Whether some container (init containers and sidecars included) requests `name` or limits it
/// (a limit defaults its request).
fn containers_ask(spec: &PodSpec, name: &str) -> bool {
    spec.containers
        .iter()
        .chain(&spec.init_containers)
        .filter_map(|c| c.resources.as_ref())
        .any(|r| {
            r.requests.as_ref().is_some_and(|m| m.contains_key(name))
                || r.limits.as_ref().is_some_and(|m| m.contains_key(name))
        })
}

/// One host port a pod binds, defaulted as `HostPortInfo.Add` does.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostPort {
    pub ip: String,
    pub protocol: String,
    pub port: i32,
}

pub const ANY_IP: &str = "0.0.0.0";

/// `schedutil.GetHostPorts`: the host ports of the regular containers and sidecars.
pub fn host_ports(spec: &PodSpec) -> Vec<HostPort> {
    let sidecars = spec
        .init_containers
        .iter()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"));
    let mut out = Vec::new();
    // The apiserver gives a host-network pod's ports their container port as host port
    // (`defaultHostNetworkPorts`, in Pods only since v1.28: so in every pod a template makes).
    let host_network = spec.host_network == Some(true);
    for c in spec.containers.iter().chain(sidecars) {
        for p in &c.ports {
            let port = match p.host_port.unwrap_or(0) {
                0 if host_network => p.container_port.unwrap_or(0),
                port => port,
            };
            if port <= 0 {
                continue;
            }
            let ip = p
                .host_ip
                .as_deref()
                .filter(|s| !s.is_empty())
                .unwrap_or(ANY_IP);
            let protocol = p
                .protocol
                .as_deref()
                .filter(|s| !s.is_empty())
                .unwrap_or("TCP");
            out.push(HostPort {
                ip: ip.to_string(),
                protocol: protocol.to_string(),
                port,
            });
        }
    }
    out
}

/// `HostPortInfo.CheckConflict`: the same protocol and port on the same address, or on any
/// address when either side binds 0.0.0.0.
pub fn conflicts(used: &[HostPort], want: &HostPort) -> bool {
    used.iter().any(|u| {
        u.port == want.port
            && u.protocol == want.protocol
            && (u.ip == want.ip || u.ip == ANY_IP || want.ip == ANY_IP)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The canonical form Go writes, when it is one unit: the suffix written decides the form.
    #[test]
    fn unit_forms_follow_the_suffix_written() {
        for (q, want) in [
            ("1", Some("1")),
            ("1000m", Some("1")),
            ("0.001", Some("1m")),
            ("1m", Some("1m")),
            ("1000", Some("1k")),
            ("1k", Some("1k")),
            ("1000000000000000000", Some("1E")),
            ("1E", Some("1E")),
            ("1000P", Some("1E")),
            ("1024", None),
            ("1Ki", Some("1Ki")),
            ("1024Ki", Some("1Mi")),
            ("0.5Mi", None),
            ("1Ei", Some("1Ei")),
            ("0.0009765625Ki", Some("1")),
            ("1e3", None),
            ("1e0", Some("1")),
            ("2", None),
            ("1u", None),
            ("0", None),
            ("-1", None),
            ("lots", None),
        ] {
            assert_eq!(unit_form(q), want, "{q}");
        }
    }

    #[test]
    fn quantities_in_scheduler_units() {
        let cases = [
            ("100m", 3, Some(100)),
            ("1", 3, Some(1000)),
            ("0.5", 3, Some(500)),
            ("1.5", 3, Some(1500)),
            ("2500u", 3, Some(3)), // rounded up
            ("1n", 3, Some(1)),
            ("1Ki", 0, Some(1024)),
            ("1.5Gi", 0, Some(1_610_612_736)),
            ("128974848", 0, Some(128_974_848)),
            ("129e6", 0, Some(129_000_000)),
            ("123Mi", 0, Some(128_974_848)),
            ("1M", 0, Some(1_000_000)),
            ("1E", 0, Some(1_000_000_000_000_000_000)),
            ("8Ei", 0, Some(i64::MAX)), // saturates
            ("-1", 0, Some(-1)),
            ("+2k", 0, Some(2000)),
            (".5", 0, Some(1)),
            ("", 0, None),
            ("1Z", 0, None),
            ("1.2.3", 0, None),
            ("e3", 0, None),
        ];
        for (q, scale, want) in cases {
            assert_eq!(scaled(q, scale), want, "{q} at 10^{scale}");
        }
    }

    fn container(requests: &[(&str, &str)], limits: &[(&str, &str)], sidecar: bool) -> Container {
        let list = |kv: &[(&str, &str)]| {
            (!kv.is_empty()).then(|| {
                kv.iter()
                    .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                    .collect()
            })
        };
        Container {
            resources: Some(k8s_openapi::api::core::v1::ResourceRequirements {
                requests: list(requests),
                limits: list(limits),
                ..Default::default()
            }),
            restart_policy: sidecar.then(|| "Always".to_string()),
            ..Default::default()
        }
    }

    /// Cases from component-helpers' TestPodRequests with `UseStatusResources`: a bound pod
    /// counts, per resource, the largest of its spec, what the kubelet allocated and what it
    /// actuated; with a resize found infeasible, only what it holds.
    #[test]
    fn a_bound_pod_counts_what_its_containers_hold_during_a_resize() {
        let named = |name: &str, cpu: &str, sidecar: bool| Container {
            name: Some(name.to_string()),
            ..container(&[("cpu", cpu)], &[], sidecar)
        };
        let held = |name: &str, allocated: Option<&str>, actuated: Option<&str>| ContainerHeld {
            name: name.to_string(),
            allocated_resources: allocated
                .map(|q| BTreeMap::from([("cpu".to_string(), Quantity(q.to_string()))])),
            resources: actuated.map(|q| HeldRequests {
                requests: Some(BTreeMap::from([(
                    "cpu".to_string(),
                    Quantity(q.to_string()),
                )])),
            }),
        };
        let spec = PodSpec {
            containers: vec![named("a", "1", false), named("b", "500m", false)],
            init_containers: vec![named("side", "100m", true)],
            ..Default::default()
        };
        let cases: Vec<(&str, Vec<ContainerHeld>, bool, i64)> = vec![
            ("no status: the spec", vec![], false, 1600),
            (
                "resized down, not actuated yet: what is allocated",
                vec![held("a", Some("1800m"), Some("1800m"))],
                false,
                2400,
            ),
            (
                "allocated down, still actuated up: what is actuated",
                vec![held("a", Some("1"), Some("1500m"))],
                false,
                2100,
            ),
            (
                "resized up, not allocated yet: the spec",
                vec![held("a", Some("200m"), Some("200m"))],
                false,
                1600,
            ),
            (
                "a sidecar's status counts like a container's",
                vec![held("side", Some("700m"), None)],
                false,
                2200,
            ),
            (
                "an infeasible resize: only what is held, the spec of a container without status",
                vec![held("a", Some("200m"), Some("200m"))],
                true,
                200,
            ),
        ];
        for (name, containers, infeasible, want) in cases {
            let got = pod_requests_held(
                &spec,
                Held {
                    containers: &containers,
                    resize_infeasible: infeasible,
                },
            );
            assert_eq!(got.milli_cpu, want, "{name}");
        }
    }

    /// Cases from component-helpers' TestPodRequests and the scheduler's fit tests.
    #[test]
    fn pod_requests_count_init_containers_sidecars_and_overhead() {
        let cpu_mem = |cpu: i64, mem: i64| Resources {
            milli_cpu: cpu,
            memory: mem,
            ..Default::default()
        };
        struct Case {
            name: &'static str,
            spec: PodSpec,
            want: Resources,
        }
        let cases = [
            Case {
                name: "containers are summed",
                spec: PodSpec {
                    containers: vec![
                        container(&[("cpu", "1"), ("memory", "1Gi")], &[], false),
                        container(&[("cpu", "500m")], &[], false),
                    ],
                    ..Default::default()
                },
                want: cpu_mem(1500, 1 << 30),
            },
            Case {
                name: "a limit without a request is the request",
                spec: PodSpec {
                    containers: vec![container(
                        &[("cpu", "1")],
                        &[("cpu", "2"), ("memory", "1Mi")],
                        false,
                    )],
                    ..Default::default()
                },
                want: cpu_mem(1000, 1 << 20),
            },
            Case {
                name: "the largest init container wins over a smaller sum",
                spec: PodSpec {
                    containers: vec![container(&[("cpu", "1")], &[], false)],
                    init_containers: vec![
                        container(&[("cpu", "3")], &[], false),
                        container(&[("cpu", "2"), ("memory", "1")], &[], false),
                    ],
                    ..Default::default()
                },
                want: cpu_mem(3000, 1),
            },
            Case {
                // TestPodRequests "restartable init container": sidecar 1 + later init 2 = 3
                // against containers 1 + sidecar 1 = 2.
                name: "sidecars run beside later init containers and the app",
                spec: PodSpec {
                    containers: vec![container(&[("cpu", "1")], &[], false)],
                    init_containers: vec![
                        container(&[("cpu", "1")], &[], true),
                        container(&[("cpu", "2")], &[], false),
                    ],
                    ..Default::default()
                },
                want: cpu_mem(3000, 0),
            },
            Case {
                name: "an init container before the sidecar runs alone",
                spec: PodSpec {
                    containers: vec![container(&[("cpu", "1")], &[], false)],
                    init_containers: vec![
                        container(&[("cpu", "2")], &[], false),
                        container(&[("cpu", "1")], &[], true),
                    ],
                    ..Default::default()
                },
                want: cpu_mem(2000, 0),
            },
            Case {
                name: "overhead is added; pod-level requests replace the sum",
                spec: PodSpec {
                    containers: vec![container(&[("cpu", "1"), ("memory", "1")], &[], false)],
                    overhead: Some(
                        [("cpu".to_string(), Quantity("250m".into()))]
                            .into_iter()
                            .collect(),
                    ),
                    resources: Some(k8s_openapi::api::core::v1::ResourceRequirements {
                        requests: Some(
                            [("memory".to_string(), Quantity("5".into()))]
                                .into_iter()
                                .collect(),
                        ),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                want: cpu_mem(1250, 5),
            },
            Case {
                // `defaultPodRequests`: a pod-level limit no container asks for is its request;
                // one a container asks for is left to the containers' sum.
                name: "a pod-level limit no container asks for is the pod's request",
                spec: PodSpec {
                    containers: vec![container(&[("memory", "1")], &[], false)],
                    resources: Some(k8s_openapi::api::core::v1::ResourceRequirements {
                        limits: Some(
                            [
                                ("cpu".to_string(), Quantity("1200m".into())),
                                ("memory".to_string(), Quantity("3".into())),
                            ]
                            .into_iter()
                            .collect(),
                        ),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                want: cpu_mem(1200, 1),
            },
            Case {
                name: "extended resources and hugepages are scalar; unknown names are not",
                spec: PodSpec {
                    containers: vec![container(
                        &[
                            ("nvidia.com/gpu", "2"),
                            ("hugepages-2Mi", "4Mi"),
                            ("foo", "1"),
                        ],
                        &[],
                        false,
                    )],
                    ..Default::default()
                },
                want: Resources {
                    scalar: [
                        ("hugepages-2Mi".to_string(), 4 << 20),
                        ("nvidia.com/gpu".to_string(), 2),
                    ]
                    .into_iter()
                    .collect(),
                    ..Default::default()
                },
            },
        ];
        for c in cases {
            assert_eq!(pod_requests(&c.spec), c.want, "{}", c.name);
        }
    }

    #[test]
    fn a_host_network_pods_ports_are_its_host_ports() {
        let spec = |host_network: bool| -> PodSpec {
            serde_json::from_value(serde_json::json!({
                "hostNetwork": host_network,
                "containers": [{"name": "c", "ports": [{"containerPort": 9100}, {"containerPort": 53, "hostPort": 5353, "protocol": "UDP"}]}],
                "initContainers": [{"name": "i", "ports": [{"containerPort": 7000}]}],
            }))
            .unwrap()
        };
        let hp = |protocol: &str, port| HostPort {
            ip: ANY_IP.into(),
            protocol: protocol.into(),
            port,
        };
        // As `defaultHostNetworkPorts` writes them; a plain init container's are never counted.
        assert_eq!(host_ports(&spec(true)), [hp("TCP", 9100), hp("UDP", 5353)]);
        assert_eq!(host_ports(&spec(false)), [hp("UDP", 5353)]);
    }

    #[test]
    fn host_port_conflicts() {
        let hp = |ip: &str, proto: &str, port| HostPort {
            ip: ip.into(),
            protocol: proto.into(),
            port,
        };
        // From the scheduler's node_ports_test.go.
        let cases = [
            (
                vec![hp("127.0.0.1", "UDP", 8080)],
                hp("127.0.0.1", "UDP", 8080),
                true,
            ),
            (
                vec![hp("127.0.0.1", "TCP", 8080)],
                hp("127.0.0.1", "UDP", 8080),
                false,
            ),
            (
                vec![hp("127.0.0.1", "TCP", 8080)],
                hp("127.0.0.2", "TCP", 8080),
                false,
            ),
            (
                vec![hp("127.0.0.1", "TCP", 8001)],
                hp("127.0.0.1", "TCP", 8080),
                false,
            ),
            (
                vec![hp("127.0.0.1", "TCP", 8080)],
                hp(ANY_IP, "TCP", 8080),
                true,
            ),
            (
                vec![hp(ANY_IP, "TCP", 8001)],
                hp("127.0.0.1", "TCP", 8001),
                true,
            ),
            (
                vec![hp(ANY_IP, "UDP", 8001)],
                hp("127.0.0.1", "TCP", 8001),
                false,
            ),
        ];
        for (used, want, conflict) in cases {
            assert_eq!(conflicts(&used, &want), conflict, "{used:?} vs {want:?}");
        }
    }
}
