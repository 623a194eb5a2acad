//! The HTTPS admission server: a thin actix-web adapter over [`crate::admission::review`], with
//! what running in a cluster needs: metrics, certificate and rule-file reloads, readiness, and a
//! graceful stop on SIGTERM.

pub mod decisions;
pub mod metrics;
pub mod tls;

use std::collections::BTreeMap;
use std::future::Future as _;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::task::Poll;
use std::time::{Duration, Instant};

use actix_web::http::StatusCode;
use actix_web::{web, App, HttpResponse, HttpServer};
use anyhow::{Context, Result};
use openssl::ssl::{ClientHelloResponse, SslContext};

use crate::admission::{self, Endpoint, ReviewError};
use crate::live::cache::{Cache, NamespaceLookup};
use crate::rules::{Outcome, RuleSet, Verdict};
use crate::server::metrics::Metrics;
use tls::CertPair;

/// Bodies above this are refused with 413. The apiserver caps objects at 3 MiB, and an UPDATE
/// carries two of them.
pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;

/// Why a body over [`MAX_BODY_BYTES`] is refused (also by `review`, which answers as the server).
pub fn too_large() -> String {
    format!("request body over {} MiB", MAX_BODY_BYTES >> 20)
}

/// How long the head and the body of a request may take to arrive by default. kube-apiserver
/// sends a whole body at once, within its webhook timeout of at most 30 s.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Above this size the evaluation runs on the blocking pool, off the async workers.
const INLINE_BODY_BYTES: usize = 256 * 1024;

/// How long a namespace the cluster cache does not hold may take to read (at most the
/// client's timeout): the manifests' webhooks give the server 5 s (`timeoutSeconds`), and a
/// request whose lookup fails is answered as without it.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(2);

/// What the server found of a request's namespace beyond its cache: its labels, or why not.
type Found = Result<BTreeMap<String, String>, crate::rules::LabelsNotFound>;

pub struct State {
    rules: RwLock<Arc<RuleSet>>,
    pub metrics: Metrics,
    ready: AtomicBool,
    /// Set on SIGTERM: answers carry `Connection: close`, so clients leave keep-alive
    /// connections between requests before the server stops accepting.
    stopping: AtomicBool,
    /// How long a request's body may take to arrive.
    body_timeout: Duration,
    /// The live cluster's cache (`--cluster-aware`).
    cache: Option<Arc<Cache>>,
    /// Reads a namespace the cache does not hold (`--cluster-aware`).
    lookup: Option<Arc<NamespaceLookup>>,
}

impl State {
    pub fn new(rules: RuleSet) -> State {
        State {
            rules: RwLock::new(Arc::new(rules)),
            metrics: Metrics::new(),
            ready: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            body_timeout: DEFAULT_REQUEST_TIMEOUT,
            cache: None,
            lookup: None,
        }
    }

    /// With the live cluster's cache: readiness waits for its first sync, and the rules that
    /// need the cluster read it.
    pub fn with_cache(mut self, cache: Arc<Cache>) -> State {
        self.cache = Some(cache);
        self
    }

    /// With a client to read the namespaces the cache does not hold.
    pub fn with_lookup(mut self, lookup: NamespaceLookup) -> State {
        self.lookup = Some(Arc::new(lookup));
        self
    }

    pub fn rules(&self) -> Arc<RuleSet> {
        match self.rules.read() {
            Ok(r) => r.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn set_rules(&self, rules: RuleSet) {
        match self.rules.write() {
            Ok(mut r) => *r = Arc::new(rules),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(rules),
        }
    }
}

/// Routes shared by `main` and the tests. Another method on a known path is 405 with `Allow`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    let only = |method: &'static str| {
        web::to(move || async move {
            HttpResponse::MethodNotAllowed()
                .insert_header(("Allow", method))
                .content_type("text/plain")
                .body(format!("only {method} is allowed here\n"))
        })
    };
    cfg.service(
        web::resource("/validate")
            .route(web::post().to(validate))
            .default_service(only("POST")),
    )
    .service(
        web::resource("/mutate")
            .route(web::post().to(mutate))
            .default_service(only("POST")),
    );
    // HEAD as well as GET, as HTTP asks of them (probes and load balancers may send either);
    // actix-web answers a HEAD with the head alone.
    let get = || {
        web::route()
            .guard(actix_web::guard::Any(actix_web::guard::Get()).or(actix_web::guard::Head()))
    };
    for (path, handler) in [
        ("/healthz", get().to(healthz)),
        ("/readyz", get().to(readyz)),
        ("/metrics", get().to(metrics)),
    ] {
        cfg.service(
            web::resource(path)
                .route(handler)
                .default_service(only("GET, HEAD")),
        );
    }
}

async fn healthz() -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain").body("ok")
}

async fn readyz(state: web::Data<State>) -> HttpResponse {
    let cache_synced = state.cache.as_ref().is_none_or(|c| !c.holds_readiness());
    if state.ready.load(Ordering::Acquire) && !cache_synced {
        HttpResponse::ServiceUnavailable()
            .content_type("text/plain")
            .body("not ready: the cluster cache has not synced yet")
    } else if state.ready.load(Ordering::Acquire) {
        HttpResponse::Ok().content_type("text/plain").body("ok")
    } else {
        HttpResponse::ServiceUnavailable()
            .content_type("text/plain")
            .body("not ready: starting or shutting down")
    }
}

async fn metrics(state: web::Data<State>) -> HttpResponse {
    if let Some(c) = &state.cache {
        state.metrics.cache(&c.stats());
    }
    HttpResponse::Ok()
        .content_type("application/openmetrics-text; version=1.0.0; charset=utf-8")
        .body(state.metrics.encode())
}

async fn validate(state: web::Data<State>, body: web::Payload) -> HttpResponse {
    handle(state, body, Endpoint::Validate).await
}

async fn mutate(state: web::Data<State>, body: web::Payload) -> HttpResponse {
    handle(state, body, Endpoint::Mutate).await
}

/// A body that was not read: status, metrics verdict, reason.
type Refused = (StatusCode, &'static str, String);

/// Reads a body within the size limit and the request timeout, so a client that trickles a body
/// cannot hold a connection.
///
/// The deadline is armed only for a body still incomplete at the handler's second poll. The
/// dispatcher feeds a body that came with its head right after the handler's first poll, so
/// waking at once then reads it; a timer armed and disarmed per request cost 1% of the server's
/// CPU on a gated pod update.
async fn read_body(state: &State, payload: web::Payload) -> Result<web::Bytes, Refused> {
    let mut read = std::pin::pin!(payload.to_bytes_limited(MAX_BODY_BYTES));
    let mut first = true;
    let early = std::future::poll_fn(|cx| match read.as_mut().poll(cx) {
        Poll::Ready(r) => Poll::Ready(Some(r)),
        Poll::Pending if std::mem::take(&mut first) => {
            cx.waker().wake_by_ref();
            Poll::Pending
        }
        Poll::Pending => Poll::Ready(None),
    })
    .await;
    let read = match early {
        Some(r) => Ok(r),
        None => actix_web::rt::time::timeout(state.body_timeout, read).await,
    };
    match read {
        Ok(Ok(Ok(body))) => Ok(body),
        Ok(Ok(Err(e))) => Err((
            StatusCode::BAD_REQUEST,
            "bad_request",
            format!("cannot read the request body: {e}"),
        )),
        Ok(Err(_)) => Err((StatusCode::PAYLOAD_TOO_LARGE, "too_large", too_large())),
        Err(_) => Err((
            StatusCode::REQUEST_TIMEOUT,
            "timeout",
            format!(
                "request body not received within {} s",
                state.body_timeout.as_secs()
            ),
        )),
    }
}

async fn handle(
    state: web::Data<State>,
    payload: web::Payload,
    endpoint: Endpoint,
) -> HttpResponse {
    let start = Instant::now();
    let _in_flight = state.metrics.in_flight();
    let body = match read_body(&state, payload).await {
        Ok(b) => b,
        Err((status, verdict, reason)) => {
            state
                .metrics
                .observe_failure(endpoint, verdict, start.elapsed());
            tracing::warn!(error = %reason, "bad admission request");
            return HttpResponse::build(status)
                .content_type("text/plain; charset=utf-8")
                .body(reason);
        }
    };
    let large = body.len() > INLINE_BODY_BYTES;
    let rules = state.rules();
    let mut result = evaluate(&state, large, &body, endpoint, &rules, None).await;
    if let (Ok(r), Some(lookup), Some(cache)) = (&result, &state.lookup, &state.cache) {
        // Some node-selection policy needs labels the cache could not give: those of its
        // namespaces' watch when only another is not current, else the API server's. Asked
        // again with them, or with why not, for its note.
        if r.namespace_labels_missing() {
            let found = match cache.namespace_labels(&r.namespace) {
                Some(labels) => Ok(labels),
                None => {
                    let found = lookup.labels(&r.namespace).await;
                    state.metrics.namespace_lookup(found.as_str());
                    found.labels()
                }
            };
            let namespace = Some((r.namespace.clone(), found));
            result = evaluate(&state, large, &body, endpoint, &rules, namespace).await;
        }
    }
    answer(&state, endpoint, start, result)
}

/// Reviews a body with the cluster cache, if any, and the labels of the request's namespace
/// when they were read from the API server; a large body on the blocking pool.
async fn evaluate(
    state: &State,
    large: bool,
    body: &web::Bytes,
    endpoint: Endpoint,
    rules: &Arc<RuleSet>,
    namespace: Option<(String, Found)>,
) -> Result<admission::Reviewed, ReviewError> {
    if !large {
        return review(body, endpoint, rules, state.cache.as_deref(), namespace);
    }
    let (body, rules, cache) = (body.clone(), rules.clone(), state.cache.clone());
    match web::block(move || review(&body, endpoint, &rules, cache.as_deref(), namespace)).await {
        Ok(r) => r,
        Err(e) => Err(ReviewError::Internal(format!(
            "evaluation task failed: {e}"
        ))),
    }
}

fn review(
    body: &[u8],
    endpoint: Endpoint,
    rules: &RuleSet,
    cache: Option<&Cache>,
    namespace: Option<(String, Found)>,
) -> Result<admission::Reviewed, ReviewError> {
    let Some(cache) = cache else {
        return admission::review(body, endpoint, rules);
    };
    cache.with(|cluster| match namespace {
        Some((ns, found)) => {
            admission::review_in_namespace(body, endpoint, rules, cluster, &ns, found)
        }
        None => admission::review_in(body, endpoint, rules, cluster),
    })
}

/// The HTTP answer to a review, counted and logged.
fn answer(
    state: &State,
    endpoint: Endpoint,
    start: Instant,
    result: Result<admission::Reviewed, ReviewError>,
) -> HttpResponse {
    match result {
        Ok(r) => {
            let elapsed = start.elapsed();
            state.metrics.observe(endpoint, r.verdict.as_ref(), elapsed);
            let verdict = r
                .verdict
                .as_ref()
                .map_or(Outcome::Allowed, Verdict::outcome);
            // Decisions that change something are logged; plain allows are only counted (a log
            // line costs about as much as the review itself), and RUST_LOG=debug shows them too.
            let level = if verdict == Outcome::Allowed {
                tracing::Level::DEBUG
            } else {
                tracing::Level::INFO
            };
            decisions::log(
                level,
                &decisions::Decision {
                    uid: &r.uid,
                    namespace: &r.namespace,
                    name: &r.name,
                    operation: r.operation,
                    endpoint,
                    rules: &r.rules,
                    verdict: verdict.as_str(),
                    allowed: r.allowed,
                    micros: elapsed.as_micros() as u64,
                },
            );
            HttpResponse::Ok()
                .content_type("application/json")
                .body(r.body)
        }
        Err(ReviewError::BadRequest(reason)) => {
            state
                .metrics
                .observe_failure(endpoint, "bad_request", start.elapsed());
            tracing::warn!(error = %reason, "bad admission request");
            HttpResponse::build(StatusCode::BAD_REQUEST)
                .content_type("text/plain; charset=utf-8")
                .body(reason)
        }
        Err(e @ ReviewError::Internal(_)) => {
            state
                .metrics
                .observe_failure(endpoint, "error", start.elapsed());
            tracing::error!(error = %e, "could not answer an admission request");
            HttpResponse::InternalServerError()
                .content_type("text/plain; charset=utf-8")
                .body("internal error; see the server's log")
        }
    }
}

pub struct ServeOptions {
    pub addr: String,
    pub cert: CertPair,
    pub rules: RuleSet,
    pub rules_path: Option<PathBuf>,
    /// The rule file's bytes as `rules` was loaded from them.
    pub rules_bytes: Option<Vec<u8>>,
    pub workers: Option<usize>,
    pub reload_interval: Duration,
    /// After SIGTERM, how long the server keeps accepting and answering (readiness 503) while
    /// the pod's endpoints are removed, before it stops accepting.
    pub shutdown_delay: Duration,
    pub shutdown_timeout: Duration,
    /// How long the head and the body of a request may take to arrive.
    pub request_timeout: Duration,
    /// `--cluster-aware`: watch the live cluster and give the rules its cache.
    pub cluster: Option<ClusterAware>,
}

/// How `--cluster-aware` reaches the cluster, and how long a failing watch is tolerated.
pub struct ClusterAware {
    pub connect: crate::live::Connect,
    pub max_stale: Duration,
    /// How long the first sync may hold readiness back.
    pub sync_timeout: Duration,
}

/// Watches the certificate pair and the rule file, and swaps in new versions that load; a
/// broken new version is refused with a log line and the old one keeps serving.
struct Reloader {
    state: web::Data<State>,
    tls: Arc<RwLock<SslContext>>,
    cert: CertPair,
    rules_path: Option<PathBuf>,
    last_cert: Option<(Vec<u8>, Vec<u8>)>,
    last_rules: Option<Vec<u8>>,
    /// Whether the files could not be read at the last tick (logged once, not every tick).
    cert_unreadable: bool,
    /// Why the current files' certificate was refused as out of date (logged once).
    cert_out_of_date: Option<String>,
    rules_unreadable: bool,
}

impl Reloader {
    fn tick(&mut self) {
        match (
            std::fs::read(&self.cert.cert),
            std::fs::read(&self.cert.key),
        ) {
            (Ok(c), Ok(k)) => {
                self.cert_unreadable = false;
                let pair = (c, k);
                if self.last_cert.as_ref() != Some(&pair) {
                    self.last_cert = Some(pair);
                    self.load_cert();
                }
            }
            (Err(e), _) | (_, Err(e)) => {
                if !self.cert_unreadable {
                    self.cert_unreadable = true;
                    tracing::warn!(cert = %self.cert.cert.display(), key = %self.cert.key.display(), error = %e, "cannot read the TLS certificate or key; the loaded one keeps serving");
                }
            }
        }
        if let Some(path) = self.rules_path.clone() {
            match std::fs::read(&path) {
                Ok(bytes) => {
                    self.rules_unreadable = false;
                    if self.last_rules.as_ref() != Some(&bytes) {
                        let text = String::from_utf8_lossy(&bytes).to_string();
                        self.last_rules = Some(bytes);
                        self.load_rules(&path, &text);
                    }
                }
                Err(e) => {
                    if !self.rules_unreadable {
                        self.rules_unreadable = true;
                        tracing::warn!(rules = %path.display(), error = %e, "cannot read the rule file; the loaded rules stay in force");
                    }
                }
            }
        }
    }

    fn load_cert(&mut self) {
        // A pair the API server would refuse is refused here, like a broken one: with the
        // webhooks' failurePolicy Fail, serving it would refuse every pod in the cluster.
        if let Some((why, mends)) = tls::out_of_date(&self.cert.cert) {
            if mends {
                // Looked at again at the next tick, until it is valid.
                self.last_cert = None;
            }
            if self.cert_out_of_date.as_ref() != Some(&why) {
                self.state.metrics.tls_reload(false);
                tracing::error!(error = %why, "refused a new TLS certificate: the API server would refuse every call with it; the old one keeps serving");
                self.cert_out_of_date = Some(why);
            }
            return;
        }
        self.cert_out_of_date = None;
        match tls::acceptor(&self.cert) {
            Ok(b) => {
                let ctx = b.build().into_context();
                if let Ok(mut cur) = self.tls.write() {
                    *cur = ctx;
                }
                self.state
                    .metrics
                    .cert_expiry(tls::not_after_unix(&self.cert.cert).ok());
                self.state.metrics.tls_reload(true);
                tracing::info!(cert = %self.cert.cert.display(), "reloaded the TLS certificate");
            }
            Err(e) => {
                self.state.metrics.tls_reload(false);
                tracing::error!(error = %format!("{e:#}"), "refused a new TLS certificate; the old one keeps serving");
            }
        }
    }

    fn load_rules(&mut self, path: &std::path::Path, text: &str) {
        let aware = self.state.cache.is_some();
        match RuleSet::from_yaml_to_serve(&path.display().to_string(), text, aware) {
            Ok(r) => {
                self.state.set_rules(r);
                self.state.metrics.rules_reload(true);
                tracing::info!(rules = %path.display(), "reloaded the rule file");
            }
            Err(e) => {
                self.state.metrics.rules_reload(false);
                tracing::error!(error = %e, "refused a new rule file; the old rules stay in force");
            }
        }
    }
}

/// Binds, prints the address it listens on, and serves until SIGTERM or SIGINT, then finishes
/// in-flight requests (up to the shutdown timeout) before returning.
pub async fn serve(opts: ServeOptions) -> Result<()> {
    let loaded_cert = std::fs::read(&opts.cert.cert)
        .ok()
        .zip(std::fs::read(&opts.cert.key).ok());
    let mut builder = tls::acceptor(&opts.cert)?;
    let initial = tls::acceptor(&opts.cert)?.build().into_context();
    let current = Arc::new(RwLock::new(initial));
    let swap = current.clone();
    // Each handshake takes the newest certificate, so a renewed pair serves at once while
    // established connections keep theirs.
    builder.set_client_hello_callback(move |ssl, _alert| {
        if let Ok(ctx) = swap.read() {
            ssl.set_ssl_context(&ctx)?;
        }
        Ok(ClientHelloResponse::SUCCESS)
    });

    let mut state = State::new(opts.rules);
    state.body_timeout = opts.request_timeout;
    if let Some(ca) = &opts.cluster {
        let conn = crate::live::connect(&ca.connect)
            .await
            .map_err(|e| anyhow::anyhow!("--cluster-aware: {e}"))?;
        tracing::info!(server = %conn.server, "cluster cache: listing and watching nodes, pods, namespaces and runtimeclasses");
        let cache = Arc::new(Cache::new(ca.max_stale, ca.sync_timeout));
        let lookup =
            NamespaceLookup::new(conn.client.clone(), ca.connect.timeout.min(LOOKUP_TIMEOUT));
        crate::live::cache::spawn(conn.client, cache.clone(), conn.page, ca.connect.timeout);
        state = state.with_cache(cache).with_lookup(lookup);
    }
    let state = web::Data::new(state);
    state
        .metrics
        .cert_expiry(tls::not_after_unix(&opts.cert.cert).ok());
    if let Some((why, _)) = tls::out_of_date(&opts.cert.cert) {
        // Served all the same (the server has no other); the reloader takes a renewed pair.
        tracing::error!(error = %why, "the API server will refuse every call until the certificate is replaced");
    }
    let app_state = state.clone();
    let mut server = HttpServer::new(move || {
        let stopping = app_state.clone();
        App::new()
            .app_data(app_state.clone())
            // While stopping, every answer closes its connection, so clients move off
            // keep-alive connections between requests, never in the middle of one.
            .wrap_fn(move |req, srv| {
                use actix_web::dev::Service as _;
                let close = stopping.stopping.load(Ordering::Acquire);
                let fut = srv.call(req);
                async move {
                    let mut res = fut.await?;
                    if close {
                        res.response_mut()
                            .head_mut()
                            .set_connection_type(actix_web::http::ConnectionType::Close);
                    }
                    Ok(res)
                }
            })
            .configure(configure)
    })
    .disable_signals()
    // As Go's net package does for the apiserver's side: answers are small and must not
    // wait for the peer's delayed ACK.
    .tcp_nodelay(true)
    // A request head that trickles in is cut off (the body has its own deadline).
    .client_request_timeout(opts.request_timeout)
    .shutdown_timeout(opts.shutdown_timeout.as_secs());
    if let Some(w) = opts.workers {
        server = server.workers(w);
    }
    let server = server
        .bind_openssl(&opts.addr, builder)
        .with_context(|| format!("binding {}", opts.addr))?;
    let addrs: Vec<SocketAddr> = server.addrs();
    let server = server.run();
    let handle = server.handle();

    // What start-up loaded is the baseline: only a change after it is a reload.
    let mut reloader = Reloader {
        state: state.clone(),
        tls: current,
        cert: opts.cert.clone(),
        rules_path: opts.rules_path.clone(),
        last_cert: loaded_cert,
        last_rules: opts.rules_bytes.clone(),
        cert_unreadable: false,
        cert_out_of_date: None,
        rules_unreadable: false,
    };
    let interval = opts.reload_interval;
    actix_web::rt::spawn(async move {
        loop {
            actix_web::rt::time::sleep(interval).await;
            reloader.tick();
        }
    });

    let stop_state = state.clone();
    let delay = opts.shutdown_delay;
    actix_web::rt::spawn(async move {
        wait_for_stop_signal().await;
        stop_state.ready.store(false, Ordering::Release);
        stop_state.stopping.store(true, Ordering::Release);
        tracing::info!(
            delay_seconds = delay.as_secs_f64(),
            "stop signal: not ready, still serving while the endpoints are removed"
        );
        actix_web::rt::time::sleep(delay).await;
        tracing::info!("stop signal: finishing in-flight requests");
        handle.stop(true).await;
    });

    state.ready.store(true, Ordering::Release);
    for a in &addrs {
        // The tests read this line to find an ephemeral port.
        // A closed stdout must not stop the server.
        let _ = writeln!(std::io::stdout(), "listening on https://{a}");
    }
    tracing::info!(addrs = ?addrs, "serving");
    server.await.context("server failed")?;
    tracing::info!("stopped");
    Ok(())
}

#[cfg(unix)]
async fn wait_for_stop_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot listen for SIGTERM/SIGINT");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

#[cfg(not(unix))]
async fn wait_for_stop_signal() {
    let _ = tokio::signal::ctrl_c().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body(r: HttpResponse) -> String {
        let bytes = actix_web::body::to_bytes(r.into_body()).await.unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[actix_rt::test]
    async fn our_faults_are_500_without_details_and_bad_input_is_400_with_the_reason() {
        let state = State::new(RuleSet::default());
        let fault = ReviewError::Internal("the patch does not apply".into());
        let r = answer(&state, Endpoint::Mutate, Instant::now(), Err(fault));
        assert_eq!(r.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(body(r).await, "internal error; see the server's log");
        let bad = ReviewError::BadRequest("AdmissionReview has no request".into());
        let r = answer(&state, Endpoint::Validate, Instant::now(), Err(bad));
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
        assert_eq!(body(r).await, "AdmissionReview has no request");
        let text = state.metrics.encode();
        for want in [
            r#"placement_guard_admission_requests_total{endpoint="mutate",rule="none",verdict="error"} 1"#,
            r#"placement_guard_admission_requests_total{endpoint="validate",rule="none",verdict="bad_request"} 1"#,
        ] {
            assert!(text.contains(want), "missing {want}\n{text}");
        }
    }
}
