//! Watch caches of Nodes, Pods and Namespaces (and of RuntimeClasses, which complete a
//! workload's pods as admission makes them) for `serve --cluster-aware`, through kube's
//! runtime watcher (initial paginated list, watch, re-list on `410 Gone`, backoff on errors).
//! Each event is read into slim types (what the filters read, not whole objects) and folded
//! into one [`Store`]; admission reads it under a shared lock.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::runtime::watcher::{self, Event as WatchEvent};
use kube::{Api, Client};
use serde::Deserialize;

use crate::core::snapshot::{SlimMeta, SlimObject, SlimSpec, SlimStatus};
use crate::core::store::{Event, Resource, Store};
use crate::rules::ClusterState;

/// Why the feasibility check was skipped, as counted in metrics.
pub const NOT_SYNCED: &str = "not_synced";
pub const STALE: &str = "stale";

#[derive(Debug, Default)]
struct Watch {
    /// The first list has completed.
    synced: bool,
    /// Since when the watch has been failing (cleared by the next event or completed list).
    failing_since: Option<Instant>,
}

/// The cache: the store, and the health of each resource's watch.
pub struct Cache {
    store: RwLock<Store>,
    watches: [Mutex<Watch>; 4],
    restarts: [AtomicU64; 4],
    /// A watch failing for longer than this makes the cache untrusted.
    max_stale: Duration,
    /// How long an unsynced cache holds readiness back ([`Cache::holds_readiness`]).
    sync_timeout: Duration,
    started: Instant,
}

impl Cache {
    pub fn new(max_stale: Duration, sync_timeout: Duration) -> Cache {
        Cache {
            store: RwLock::new(Store::default()),
            watches: Default::default(),
            restarts: Default::default(),
            max_stale,
            sync_timeout,
            started: Instant::now(),
        }
    }

    /// Whether the server should not be ready yet: the first list is still running, for at
    /// most `sync_timeout`. A cache that never syncs (no RBAC, no route to the API server) must
    /// not keep every replica unready: with `failurePolicy: Fail` that would refuse every pod
    /// and workload write of the cluster, while the checks that need the cache only skip.
    pub fn holds_readiness(&self) -> bool {
        !self.synced() && self.started.elapsed() < self.sync_timeout
    }

    fn watch(&self, r: Resource) -> std::sync::MutexGuard<'_, Watch> {
        match self.watches[r as usize].lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Every resource the checks need has been listed once.
    pub fn synced(&self) -> bool {
        Resource::REQUIRED.iter().all(|&r| self.watch(r).synced)
    }

    /// Why the cache cannot be trusted now, if it cannot.
    pub fn unavailable(&self) -> Option<&'static str> {
        let now = Instant::now();
        let mut why = None;
        for r in Resource::REQUIRED {
            let w = self.watch(r);
            if !w.synced {
                return Some(NOT_SYNCED);
            }
            if w.failing_since.is_some_and(|t| now - t > self.max_stale) {
                why = Some(STALE);
            }
        }
        why
    }

    /// Runs `f` with the cluster as admission may use it.
    pub fn with<R>(&self, f: impl FnOnce(ClusterState) -> R) -> R {
        if let Some(why) = self.unavailable() {
            return f(ClusterState::Unavailable(why));
        }
        let store = match self.store.read() {
            Ok(s) => s,
            Err(p) => p.into_inner(),
        };
        f(ClusterState::Ready(store.cluster()))
    }

    /// The labels of namespace `name` while the namespaces' own watch is synced and current,
    /// even when another resource's is not: node-selection policies read nothing else of the
    /// cache, and a namespace read from the API server on every request would add a round trip
    /// to each, just when the API server may be struggling.
    pub fn namespace_labels(&self, name: &str) -> Option<BTreeMap<String, String>> {
        {
            let w = self.watch(Resource::Namespaces);
            if !w.synced
                || w.failing_since
                    .is_some_and(|t| t.elapsed() > self.max_stale)
            {
                return None;
            }
        }
        let store = match self.store.read() {
            Ok(s) => s,
            Err(p) => p.into_inner(),
        };
        store.cluster().namespaces.get(name).cloned()
    }

    fn apply(&self, r: Resource, e: Event) {
        let mut store = match self.store.write() {
            Ok(s) => s,
            Err(p) => p.into_inner(),
        };
        store.apply(r, e);
    }

    /// What metrics show, per resource: (name, objects, watch restarts, cache age in seconds).
    pub fn stats(&self) -> Vec<(&'static str, u64, u64, f64)> {
        let store = match self.store.read() {
            Ok(s) => s,
            Err(p) => p.into_inner(),
        };
        let now = Instant::now();
        Resource::ALL
            .iter()
            .map(|&r| {
                let w = self.watch(r);
                // How long the cache has not been known to be current: 0 while the watch
                // runs, since start before the first list, since the failure while failing.
                let age = match (w.synced, w.failing_since) {
                    (false, _) => now - self.started,
                    (true, Some(t)) => now - t,
                    (true, None) => Duration::ZERO,
                };
                (
                    r.as_str(),
                    store.len(r) as u64,
                    self.restarts[r as usize].load(Ordering::Relaxed),
                    age.as_secs_f64(),
                )
            })
            .collect()
    }
}

/// After a lookup that got no answer, how long the server answers without looking up: an API
/// server that cannot be reached would otherwise add the lookup's timeout to every request.
const LOOKUP_PAUSE: Duration = Duration::from_secs(10);

/// What a namespace lookup found.
#[derive(Debug, PartialEq)]
pub enum Lookup {
    Found(BTreeMap<String, String>),
    /// The API server has no such namespace.
    NotFound,
    /// No answer, or a refusal (said in the log).
    Failed,
    /// A recent lookup failed; none was tried.
    Paused,
}

impl Lookup {
    pub fn as_str(&self) -> &'static str {
        match self {
            Lookup::Found(_) => "found",
            Lookup::NotFound => "not_found",
            Lookup::Failed => "failed",
            Lookup::Paused => "paused",
        }
    }

    /// The labels, or why they are not known (for the policies' note).
    pub fn labels(self) -> Result<BTreeMap<String, String>, crate::rules::LabelsNotFound> {
        use crate::rules::LabelsNotFound as Not;
        match self {
            Lookup::Found(labels) => Ok(labels),
            Lookup::NotFound => Err(Not::NoSuchNamespace),
            Lookup::Failed => Err(Not::LookupFailed),
            Lookup::Paused => Err(Not::LookupPaused),
        }
    }
}

/// Namespaces the cache does not hold (created a moment ago, or the watch not synced or
/// failing), read from the API server as kube-apiserver's PodNodeSelector plugin reads them
/// when its informer lacks one: a policy that selects namespaces by label then judges a
/// Deployment applied in the same breath as its Namespace.
pub struct NamespaceLookup {
    client: Client,
    timeout: Duration,
    failed_at: Mutex<Option<Instant>>,
}

impl NamespaceLookup {
    pub fn new(client: Client, timeout: Duration) -> NamespaceLookup {
        NamespaceLookup {
            client,
            timeout,
            failed_at: Mutex::new(None),
        }
    }

    fn failed_at(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        match self.failed_at.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    pub async fn labels(&self, name: &str) -> Lookup {
        // The name comes from the request: one no namespace can have is not sent on (a crafted
        // one would name another path, under the server's credentials).
        if !crate::k8s::validation::is_dns1123_label(name) {
            return Lookup::NotFound;
        }
        if self.failed_at().is_some_and(|t| t.elapsed() < LOOKUP_PAUSE) {
            return Lookup::Paused;
        }
        let api = Api::<WatchedNamespace>::all(self.client.clone());
        let error = match tokio::time::timeout(self.timeout, api.get_opt(name)).await {
            Ok(Ok(Some(ns))) => return Lookup::Found(ns.metadata.labels.unwrap_or_default()),
            Ok(Ok(None)) => return Lookup::NotFound,
            Ok(Err(kube::Error::Api(s))) if s.code == 403 => format!(
                "{} (403 Forbidden: the server's account needs get on namespaces, as manifests/cluster-aware/rbac.yaml grants)",
                s.message
            ),
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {} ms", self.timeout.as_millis()),
        };
        *self.failed_at() = Some(Instant::now());
        tracing::warn!(namespace = name, %error, pause_seconds = LOOKUP_PAUSE.as_secs(), "cannot read a namespace the cluster cache does not hold; node-selection policies that select namespaces by label do not judge its requests, and no lookup is tried for a while");
        Lookup::Failed
    }
}

/// Starts one watcher per resource on the current runtime; they run until the runtime stops.
/// `silence` is the client's read timeout: each watch asks the API server to end it before
/// that (the watcher then resumes it from its resource version, without a list), so that a
/// server that stops answering without closing the connection is noticed within `silence`
/// (kube's default of 290 s hid it for five minutes, and `--cache-max-stale` never saw it).
///
/// kube's watcher drops a watch idle for its `timeoutSeconds` + 5 s without an error and
/// starts another: the watch must end before `silence`, and that idle limit lie beyond it, so
/// that a silent server is met by the read timeout, an error the cache counts as a failing
/// watch (else the first error came only from the next request, at twice the silence).
pub fn spawn(client: Client, cache: Arc<Cache>, page: u32, silence: Duration) {
    let watch_seconds = silence.as_secs().saturating_sub(2).max(3);
    let watch_seconds = u32::try_from(watch_seconds).unwrap_or(290);
    let c = cache.clone();
    tokio::spawn(async move {
        tokio::time::sleep(c.sync_timeout).await;
        if !c.synced() {
            tracing::error!(
                after_seconds = c.sync_timeout.as_secs(),
                "cluster cache: not synced; ready without it, the checks that need it are skipped (counted as not_synced) until it syncs. The server's account must be able to list and watch nodes, pods and namespaces (and runtimeclasses.node.k8s.io), and get namespaces (manifests/cluster-aware/rbac.yaml)"
            );
        }
    });
    let config = move || {
        watcher::Config::default()
            .page_size(page)
            .timeout(watch_seconds)
    };
    let nodes = Api::<WatchedNode>::all(client.clone());
    tokio::spawn(run(
        move || watcher::watcher(nodes.clone(), config()),
        cache.clone(),
        Resource::Nodes,
    ));
    let namespaces = Api::<WatchedNamespace>::all(client.clone());
    tokio::spawn(run(
        move || watcher::watcher(namespaces.clone(), config()),
        cache.clone(),
        Resource::Namespaces,
    ));
    // What admission adds to a workload's new pods: their RuntimeClass's node selector and
    // tolerations. A Pod reaching the webhook has them already, and its LimitRanges' default
    // requests too; the node-side filters a template is judged by read no requests.
    let runtime_classes = Api::<WatchedRuntimeClass>::all(client.clone());
    tokio::spawn(run(
        move || watcher::watcher(runtime_classes.clone(), config()),
        cache.clone(),
        Resource::RuntimeClasses,
    ));
    // As the scheduler's informer: finished pods take nothing, and leave the watch as deletes.
    let pods = Api::<WatchedPod>::all(client);
    tokio::spawn(run(
        move || {
            watcher::watcher(
                pods.clone(),
                config().fields("status.phase!=Succeeded,status.phase!=Failed"),
            )
        },
        cache,
        Resource::Pods,
    ));
}

/// The watcher yields `Init` before its list request: passed on at once, a list that then
/// fails would follow a success, which resets the backoff (a refused list was retried every
/// 0.8 s for ever) and looks like a recovery. `Init` is held until the list yields something.
fn defer_init<K>(
    stream: impl futures_util::Stream<Item = Result<WatchEvent<K>, watcher::Error>>,
) -> impl futures_util::Stream<Item = Result<WatchEvent<K>, watcher::Error>> {
    use futures_util::stream;
    stream
        .scan(false, |init_pending, item| {
            let out = match item {
                Ok(WatchEvent::Init) => {
                    *init_pending = true;
                    Vec::new()
                }
                Ok(e) if std::mem::take(init_pending) => vec![Ok(WatchEvent::Init), Ok(e)],
                other => {
                    *init_pending = false;
                    vec![other]
                }
            };
            futures_util::future::ready(Some(stream::iter(out)))
        })
        .flatten()
}

/// Keeps one resource's part of the cache, from watchers `watch` makes. After a failure it
/// starts a new watcher, which lists again, after a backoff (kube's: 0.8 s doubling to 30 s).
/// The watcher would resume the watch itself, but a resumed watch says nothing until the next
/// change, so a quiet resource (namespaces) would stay failing, and the checks that need the
/// cache skipped as stale, for as long as nothing changed; a list ends with `InitDone`, which
/// says the cache is current again.
async fn run<K, S>(watch: impl Fn() -> S + Send, cache: Arc<Cache>, r: Resource)
where
    K: Into<SlimObject> + Send + 'static,
    S: futures_util::Stream<Item = Result<WatchEvent<K>, watcher::Error>> + Send,
{
    use kube::runtime::utils::Backoff;
    let mut backoff = watcher::DefaultBackoff::default();
    let mut lists = 0u64;
    loop {
        let mut stream = std::pin::pin!(defer_init(watch()));
        while let Some(item) = stream.next().await {
            let event = match item {
                Ok(e) => e,
                // The ordinary end of a watch that fell behind the server's history: kube
                // lists again (counted as a restart); not a failure.
                Err(watcher::Error::WatchError(s)) if s.code == 410 => {
                    tracing::info!(
                        resource = r.as_str(),
                        "cluster cache: the watch's resource version expired (410 Gone); listing again"
                    );
                    continue;
                }
                Err(e) => {
                    let mut w = cache.watch(r);
                    if w.failing_since.is_none() {
                        w.failing_since = Some(Instant::now());
                        tracing::warn!(resource = r.as_str(), error = %watch_failure(&e), "cluster cache: watch failed; retrying with backoff");
                    }
                    break;
                }
            };
            backoff.reset();
            apply(&cache, r, event, &mut lists);
        }
        tokio::time::sleep(backoff.next().unwrap_or(Duration::from_secs(30))).await;
    }
}

/// One watch event into the cache, and what it says of the watch's health.
fn apply<K: Into<SlimObject>>(cache: &Cache, r: Resource, event: WatchEvent<K>, lists: &mut u64) {
    let done = matches!(event, WatchEvent::InitDone);
    match event {
        WatchEvent::Init => {
            *lists += 1;
            if *lists > 1 {
                cache.restarts[r as usize].fetch_add(1, Ordering::Relaxed);
            }
            cache.apply(r, Event::Relist);
        }
        WatchEvent::InitApply(o) | WatchEvent::Apply(o) => cache.apply(r, Event::Apply(o.into())),
        WatchEvent::Delete(o) => cache.apply(r, Event::Delete(o.into())),
        WatchEvent::InitDone => cache.apply(r, Event::RelistDone),
    }
    let mut w = cache.watch(r);
    if w.failing_since.take().is_some() {
        tracing::info!(resource = r.as_str(), "cluster cache: watch recovered");
    }
    if done && !w.synced {
        w.synced = true;
        drop(w);
        // This resource's count (the others may not be listed yet; all are in the metrics).
        let objects = cache
            .stats()
            .iter()
            .find(|(name, ..)| *name == r.as_str())
            .map_or(0, |s| s.1);
        tracing::info!(resource = r.as_str(), objects, "cluster cache: listed");
    }
}

/// A watcher's error in one line: the API server's own message and status, and for a 403 the
/// permissions the cache needs (kube's text ends with the whole `Status` in debug form).
fn watch_failure(e: &watcher::Error) -> String {
    use watcher::Error as W;
    let (verb, status) = match e {
        W::InitialListFailed(kube::Error::Api(s)) => ("list", s.as_ref()),
        W::WatchStartFailed(kube::Error::Api(s)) | W::WatchFailed(kube::Error::Api(s)) => {
            ("watch", s.as_ref())
        }
        W::WatchError(s) => ("watch", s.as_ref()),
        other => return other.to_string(),
    };
    match status.code {
        403 => format!(
            "cannot {verb}: {} (403 Forbidden: the server's account needs list and watch on nodes, pods, namespaces and runtimeclasses.node.k8s.io, and get on namespaces, as manifests/cluster-aware/rbac.yaml grants)",
            status.message
        ),
        code => format!("cannot {verb}: {} ({code} {})", status.message, status.reason),
    }
}

/// ObjectMeta with only what the store and the watcher read (the resource version is what a
/// re-watch resumes from); managedFields and annotations are skipped unread.
fn slim_meta<'de, D: serde::Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct M {
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        namespace: Option<String>,
        #[serde(default)]
        labels: Option<BTreeMap<String, String>>,
        #[serde(default)]
        resource_version: Option<String>,
        #[serde(default)]
        deletion_timestamp: Option<Time>,
    }
    let m = M::deserialize(d)?;
    Ok(ObjectMeta {
        name: m.name,
        namespace: m.namespace,
        labels: m.labels,
        resource_version: m.resource_version,
        deletion_timestamp: m.deletion_timestamp,
        ..Default::default()
    })
}

/// The watched kinds: what the store reads of each, as kube resources.
macro_rules! watched {
    ($name:ident, $kind:literal, $group:literal, $plural:literal, $scope:ty) => {
        #[derive(Clone, Debug, Deserialize)]
        pub struct $name {
            #[serde(deserialize_with = "slim_meta")]
            metadata: ObjectMeta,
            #[serde(default)]
            spec: Option<SlimSpec>,
            #[serde(default)]
            status: Option<SlimStatus>,
            /// A RuntimeClass's (top-level fields; no other kind has them there).
            #[serde(default)]
            overhead: Option<crate::core::runtime_class::Overhead>,
            #[serde(default)]
            scheduling: Option<crate::core::runtime_class::Scheduling>,
        }

        impl kube::Resource for $name {
            type DynamicType = ();
            type Scope = $scope;
            fn kind(_: &()) -> Cow<'_, str> {
                Cow::Borrowed($kind)
            }
            fn group(_: &()) -> Cow<'_, str> {
                Cow::Borrowed($group)
            }
            fn version(_: &()) -> Cow<'_, str> {
                Cow::Borrowed("v1")
            }
            fn plural(_: &()) -> Cow<'_, str> {
                Cow::Borrowed($plural)
            }
            fn meta(&self) -> &ObjectMeta {
                &self.metadata
            }
            fn meta_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }

        impl From<$name> for SlimObject {
            fn from(o: $name) -> SlimObject {
                let m = o.metadata;
                SlimObject {
                    api_version: None,
                    kind: Some($kind.to_string()),
                    metadata: SlimMeta {
                        name: m.name,
                        namespace: m.namespace,
                        labels: m.labels,
                        deletion_timestamp: m.deletion_timestamp.map(|_| serde::de::IgnoredAny),
                    },
                    spec: o.spec,
                    status: o.status,
                    runtime_class: crate::core::runtime_class::RuntimeClass {
                        overhead: o.overhead,
                        scheduling: o.scheduling,
                    },
                }
            }
        }
    };
}

watched!(
    WatchedNode,
    "Node",
    "",
    "nodes",
    k8s_openapi::ClusterResourceScope
);
watched!(
    WatchedPod,
    "Pod",
    "",
    "pods",
    k8s_openapi::NamespaceResourceScope
);
watched!(
    WatchedNamespace,
    "Namespace",
    "",
    "namespaces",
    k8s_openapi::ClusterResourceScope
);
watched!(
    WatchedRuntimeClass,
    "RuntimeClass",
    "node.k8s.io",
    "runtimeclasses",
    k8s_openapi::ClusterResourceScope
);

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    fn names(events: Vec<Result<WatchEvent<u8>, watcher::Error>>) -> Vec<String> {
        events
            .into_iter()
            .map(|e| match e {
                Ok(WatchEvent::Init) => "Init".to_string(),
                Ok(WatchEvent::InitApply(o)) => format!("InitApply({o})"),
                Ok(WatchEvent::InitDone) => "InitDone".to_string(),
                Ok(WatchEvent::Apply(o)) => format!("Apply({o})"),
                Ok(WatchEvent::Delete(o)) => format!("Delete({o})"),
                Err(_) => "Err".to_string(),
            })
            .collect()
    }

    /// A list refused twice, then one that succeeds, then an empty one: `Init` reaches the
    /// cache (and the backoff, as a success) only with what the list yields, so two refusals
    /// in a row are two errors in a row.
    #[tokio::test]
    async fn init_waits_for_what_the_list_yields() {
        let input = vec![
            Ok(WatchEvent::Init),
            Err(watcher::Error::NoResourceVersion),
            Ok(WatchEvent::Init),
            Err(watcher::Error::NoResourceVersion),
            Ok(WatchEvent::Init),
            Ok(WatchEvent::InitApply(1)),
            Ok(WatchEvent::InitDone),
            Ok(WatchEvent::Apply(2)),
            Ok(WatchEvent::Init),
            Ok(WatchEvent::InitDone),
        ];
        let out = defer_init(futures_util::stream::iter(input))
            .collect::<Vec<_>>()
            .await;
        assert_eq!(
            names(out),
            [
                "Err",
                "Err",
                "Init",
                "InitApply(1)",
                "InitDone",
                "Apply(2)",
                "Init",
                "InitDone"
            ]
        );
    }

    #[test]
    fn an_unsynced_cache_holds_readiness_only_until_the_timeout() {
        let waiting = Cache::new(Duration::from_secs(60), Duration::from_secs(3600));
        assert!(waiting.holds_readiness());
        let given_up = Cache::new(Duration::from_secs(60), Duration::ZERO);
        assert!(!given_up.holds_readiness());
        assert_eq!(given_up.unavailable(), Some(NOT_SYNCED));
    }
}
