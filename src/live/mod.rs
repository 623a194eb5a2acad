//! The live cluster, through the `kube` client as kubectl reaches it: kubeconfig (`$KUBECONFIG`,
//! `~/.kube/config`, `--kubeconfig`, `--context`) or the in-cluster service account, a timeout on
//! connecting and on every request, lists read page by page straight into the compact snapshot,
//! and errors in one line that say what to fix.

pub mod cache;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::params::ListParams;
use kube::core::Request;
use kube::{Client, Config};
use serde_json::Value;

use crate::core::cluster::Cluster;
use crate::core::snapshot::{read_page, Builder, Counts};
use crate::k8s::workload::Kind;

/// Objects per list request: kubectl's page size.
pub const PAGE: u32 = 500;

/// How to reach the API server.
#[derive(Clone, Debug, Default)]
pub struct Connect {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    /// Per request; connecting has its own, shorter timeout.
    pub timeout: Duration,
    /// Objects per list request.
    pub page: u32,
}

/// A failure talking to the cluster, in one line.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{0}")]
pub struct LiveError(pub String);

/// A connected client and the namespace the kubeconfig context names.
pub struct Connection {
    pub client: Client,
    pub page: u32,
    pub namespace: String,
    pub server: String,
}

pub async fn connect(c: &Connect) -> Result<Connection, LiveError> {
    let options = KubeConfigOptions {
        context: c.context.clone(),
        ..Default::default()
    };
    let mut config = match (&c.kubeconfig, &c.context) {
        (Some(path), _) => {
            let kc = Kubeconfig::read_from(path)
                .map_err(|e| kubeconfig_failure(Some(path), &e))?;
            Config::from_custom_kubeconfig(kc, &options)
                .await
                .map_err(|e| kubeconfig_failure(Some(path), &e))?
        }
        (None, Some(_)) => Config::from_kubeconfig(&options)
            .await
            .map_err(|e| kubeconfig_failure(None, &e))?,
        (None, None) => Config::infer().await.map_err(|e| {
            LiveError(format!(
                "no cluster to talk to: {e} (set KUBECONFIG, pass --kubeconfig, or run in a pod with a service account)"
            ))
        })?,
    };
    config.connect_timeout = Some(c.timeout.min(Duration::from_secs(10)));
    config.read_timeout = Some(c.timeout);
    // Else the time a pooled connection sat idle counts against the next response's read
    // timeout (we use no exec or attach, whose pings this would also reset).
    config.reset_reader_on_write = true;
    config.write_timeout = Some(c.timeout);
    let server = config.cluster_url.to_string();
    let namespace = config.default_namespace.clone();
    // The client certificate and key a kubeconfig names are read only here.
    let client = Client::try_from(config).map_err(|e| match &e {
        kube::Error::InferKubeconfig(k) => kubeconfig_failure(c.kubeconfig.as_deref(), k),
        _ => LiveError(format!(
            "cannot set up a client for {server}: {}",
            one_line(&e.to_string())
        )),
    })?;
    Ok(Connection {
        client,
        page: c.page,
        namespace,
        server,
    })
}

/// A kubeconfig problem, said with the file when one was given.
fn kubeconfig_failure(
    path: Option<&std::path::Path>,
    e: &kube::config::KubeconfigError,
) -> LiveError {
    match path {
        Some(p) => LiveError(format!(
            "kubeconfig {}: {}",
            p.display(),
            kubeconfig_error(e)
        )),
        None => LiveError(format!("kubeconfig: {}", kubeconfig_error(e))),
    }
}

/// A kubeconfig problem in kubectl's terms, on one line.
fn kubeconfig_error(e: &kube::config::KubeconfigError) -> String {
    use kube::config::KubeconfigError as K;
    let text = match e {
        K::LoadContext(name) => format!("context \"{name}\" does not exist"),
        K::ReadConfig(io, _) => format!("cannot read it: {io}"),
        K::Parse(p) => format!("not a kubeconfig (YAML): {p}"),
        other => other.to_string(),
    };
    one_line(&text)
}

/// Errors are one line: a multi-line message (a YAML error's excerpt) joined.
fn one_line(s: &str) -> String {
    s.split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The causes of an unanswered request, once each (hyper repeats its cause in its own
/// message), and a failed TLS verification in words that say what to fix.
fn connect_failure(e: &kube::Error, server: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut src: Option<&dyn std::error::Error> = Some(e);
    while let Some(s) = src {
        let m = one_line(&s.to_string());
        if !parts.iter().any(|p| p.contains(&m)) {
            parts.push(m);
        }
        src = s.source();
    }
    let chain = parts.join(": ");
    match tls_verify_failure(&chain) {
        Some(why) => format!("cannot verify the API server at {server}: {why}"),
        None => format!("cannot reach the API server at {server}: {chain}"),
    }
}

/// A failed verification of the server's certificate, from OpenSSL's text (`...:certificate
/// verify failed:FILE:LINE:: REASON`), with what to check for that reason.
fn tls_verify_failure(chain: &str) -> Option<String> {
    let at = chain.find("certificate verify failed")?;
    let reason = chain[at..]
        .split(": ")
        .map(|r| r.trim().trim_end_matches(':'))
        .filter(|r| {
            !r.is_empty()
                && !r.contains(".c:")
                && !r.starts_with("error:")
                && !r.starts_with("certificate verify failed")
        })
        .last()
        .unwrap_or("certificate verify failed");
    let check = if reason.contains("expired") || reason.contains("not yet valid") {
        "the server's certificate is outside its validity period (or this machine's clock is wrong)"
    } else if reason.contains("mismatch") {
        "the kubeconfig's server address is not one the certificate names: use one it names, or set tls-server-name"
    } else {
        "check the kubeconfig's certificate-authority(-data) for this cluster"
    };
    Some(format!(
        "its TLS certificate is not trusted ({reason}); {check}"
    ))
}

/// One line for a failed request: `verb` and `what` say what was attempted (`list`, `pods`).
fn explain_error(e: kube::Error, server: &str, verb: &str, what: &str) -> LiveError {
    use kube::Error as E;
    LiveError(match e {
        E::Api(s) => match s.code {
            401 => format!(
                "the API server at {server} refused the credentials (401 Unauthorized): they are missing, expired or revoked; log in again or check the kubeconfig's user"
            ),
            403 => format!("cannot {verb} {what}: {} (403 Forbidden: grant the user `{verb}` on {what})", s.message),
            404 => format!("{what} not found"),
            code => format!("cannot {verb} {what}: {} ({code} {})", s.message, s.reason),
        },
        E::HyperError(_) | E::Service(_) => connect_failure(&e, server),
        other => format!("cannot {verb} {what}: {other}"),
    })
}

async fn send(
    cl: &Connection,
    req: http::Request<Vec<u8>>,
    timeout: Duration,
    verb: &str,
    what: &str,
) -> Result<String, LiveError> {
    send_raw(cl, req, timeout, verb, what)
        .await?
        .map_err(|e| explain_error(e, &cl.server, verb, what))
}

/// [`send`], with the API server's error as it came (a caller may look at its code); only a
/// request that gets no answer in time is an error in our words.
async fn send_raw(
    cl: &Connection,
    req: http::Request<Vec<u8>>,
    timeout: Duration,
    verb: &str,
    what: &str,
) -> Result<Result<String, kube::Error>, LiveError> {
    tokio::time::timeout(timeout, cl.client.request_text(req))
        .await
        .map_err(|_| {
            LiveError(format!(
                "cannot {verb} {what}: the API server at {} did not answer within {}s",
                cl.server,
                timeout.as_secs()
            ))
        })
}

/// A progress line on stderr for listings that take more than a second; only on a terminal.
pub struct Progress {
    start: Instant,
    tty: bool,
    shown: bool,
}

impl Default for Progress {
    fn default() -> Progress {
        Progress {
            start: Instant::now(),
            tty: std::io::stderr().is_terminal(),
            shown: false,
        }
    }
}

impl Progress {
    pub fn update(&mut self, what: &str, objects: usize) {
        if self.tty && self.start.elapsed() > Duration::from_secs(1) {
            self.shown = true;
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[Klisting {what}: {objects} objects read");
            let _ = e.flush();
        }
    }

    pub fn done(&mut self) {
        if self.shown {
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[K");
            let _ = e.flush();
            self.shown = false;
        }
    }
}

/// `/api/v1/...` or `/apis/GROUP/v1/...` for a kind, in a namespace or across all.
fn collection(kind: Kind, namespace: Option<&str>) -> String {
    let base = match kind.group() {
        "" => "/api/v1".to_string(),
        g => format!("/apis/{g}/{}", kind.version()),
    };
    match namespace {
        Some(ns) => format!("{base}/namespaces/{ns}/{}", kind.resource()),
        None => format!("{base}/{}", kind.resource()),
    }
}

/// Nodes, Namespaces and the Pods of every namespace that hold a node (those not finished:
/// the scheduler's own field selector), paginated, into a snapshot. Pods bound to a node that
/// appeared after the node list are counted, not fatal: a live list is not atomic.
pub async fn snapshot(
    cl: &Connection,
    timeout: Duration,
    progress: &mut Progress,
) -> Result<(Cluster, Counts), LiveError> {
    let mut b = Builder::new(true).from_api();
    let lists = [
        ("/api/v1/nodes", "Node", "nodes", None),
        ("/api/v1/namespaces", "Namespace", "namespaces", None),
        (
            "/api/v1/pods",
            "Pod",
            "pods",
            Some("status.phase!=Succeeded,status.phase!=Failed"),
        ),
    ];
    for (path, kind, what, fields) in lists {
        let mut token: Option<String> = None;
        loop {
            let mut lp = ListParams::default().limit(cl.page);
            if let Some(t) = &token {
                lp = lp.continue_token(t);
            }
            if let Some(f) = fields {
                lp = lp.fields(f);
            }
            let req = Request::new(path)
                .list(&lp)
                .map_err(|e| LiveError(format!("cannot build the request for {what}: {e}")))?;
            let what_all = format!("{what} (at the cluster scope)");
            let page = send(cl, req, timeout, "list", &what_all).await?;
            token = read_page(page.as_bytes(), kind, &mut b)
                .map_err(|e| LiveError(format!("cannot read the {what} list: {e}")))?;
            progress.update("the cluster", b.counts.objects());
            if token.is_none() {
                break;
            }
        }
    }
    // What admission adds to a new pod: its RuntimeClass's overhead, nodeSelector and
    // tolerations, its LimitRanges' default requests. A user who may not list them (or an API
    // server without node.k8s.io) still gets the rest, with a note.
    let runtime_classes = list_optional(
        cl,
        timeout,
        &mut b,
        "/apis/node.k8s.io/v1/runtimeclasses",
        "RuntimeClass",
        "runtimeclasses.node.k8s.io",
    )
    .await?;
    let limit_ranges = list_optional(
        cl,
        timeout,
        &mut b,
        "/api/v1/limitranges",
        "LimitRange",
        "limitranges",
    )
    .await?;
    progress.done();
    let (mut cluster, counts) = b.finish().map_err(|e| LiveError(e.to_string()))?;
    cluster.runtime_classes_unread = runtime_classes;
    cluster.limit_ranges_unread = limit_ranges;
    Ok((cluster, counts))
}

/// Lists `kind` at the cluster scope into `b`, page by page; why not, when the user may not
/// list it or the API server does not serve it.
async fn list_optional(
    cl: &Connection,
    timeout: Duration,
    b: &mut Builder,
    path: &str,
    kind: &str,
    resource: &str,
) -> Result<Option<String>, LiveError> {
    let what = format!("{resource} (at the cluster scope)");
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default().limit(cl.page);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let req = Request::new(path)
            .list(&lp)
            .map_err(|e| LiveError(format!("cannot build the request for {resource}: {e}")))?;
        match send_raw(cl, req, timeout, "list", &what).await? {
            Ok(page) => {
                token = read_page(page.as_bytes(), kind, b)
                    .map_err(|e| LiveError(format!("cannot read the {resource} list: {e}")))?;
                if token.is_none() {
                    return Ok(None);
                }
            }
            Err(kube::Error::Api(s)) if s.code == 403 || s.code == 404 => {
                return Ok(Some(
                    explain_error(kube::Error::Api(s), &cl.server, "list", &what).0,
                ))
            }
            Err(e) => return Err(explain_error(e, &cl.server, "list", &what)),
        }
    }
}

/// One object by kind, namespace and name, as JSON.
pub async fn get(
    cl: &Connection,
    kind: Kind,
    namespace: &str,
    name: &str,
    timeout: Duration,
) -> Result<Value, LiveError> {
    let req = Request::new(collection(kind, Some(namespace)))
        .get(name, &Default::default())
        .map_err(|e| LiveError(format!("cannot build the request: {e}")))?;
    let what = format!("{} {namespace}/{name}", kind.display());
    let text = send(cl, req, timeout, "get", &what).await?;
    serde_json::from_str(&text).map_err(|e| LiveError(format!("cannot read {what}: {e}")))
}

/// Whether namespace `ns` exists; `None` when the user may not read it (a user confined to
/// a namespace often may not), which says nothing either way.
pub async fn namespace_exists(
    cl: &Connection,
    ns: &str,
    timeout: Duration,
) -> Result<Option<bool>, LiveError> {
    let req = Request::new("/api/v1/namespaces")
        .get(ns, &Default::default())
        .map_err(|e| LiveError(format!("cannot build the request: {e}")))?;
    let what = format!("namespace {ns}");
    match send_raw(cl, req, timeout, "get", &what).await? {
        Ok(_) => Ok(Some(true)),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(Some(false)),
        Err(kube::Error::Api(s)) if s.code == 403 => Ok(None),
        Err(e) => Err(explain_error(e, &cl.server, "get", &what)),
    }
}

/// Whether the API server serves `kind`'s group and version (OpenKruise's only where it is
/// installed). Discovery is open to every authenticated user, while a list of a resource that
/// does not exist is refused with 403 before it could be found missing.
pub async fn served(cl: &Connection, kind: Kind, timeout: Duration) -> Result<bool, LiveError> {
    let path = format!("/apis/{}/{}", kind.group(), kind.version());
    let req = http::Request::get(&path)
        .body(Vec::new())
        .map_err(|e| LiveError(format!("cannot build the request: {e}")))?;
    let what = format!("API group {}/{}", kind.group(), kind.version());
    match send_raw(cl, req, timeout, "get", &what).await? {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
        Err(e) => Err(explain_error(e, &cl.server, "get", &what)),
    }
}

/// Every object of a kind (those `labels` selects, when given), a page at a time, handed to
/// `each` and dropped.
pub async fn list_each(
    cl: &Connection,
    kind: Kind,
    namespace: Option<&str>,
    labels: Option<&kube::core::Selector>,
    timeout: Duration,
    mut each: impl FnMut(Value),
) -> Result<usize, LiveError> {
    #[derive(serde::Deserialize)]
    struct Page {
        #[serde(default)]
        items: Vec<Value>,
        #[serde(default)]
        metadata: Meta,
    }
    #[derive(serde::Deserialize, Default)]
    struct Meta {
        #[serde(default, rename = "continue")]
        cont: Option<String>,
    }
    // As kubectl names a resource that two groups share (`statefulsets.apps.kruise.io`).
    let resource = match kind.display().split_once('.') {
        Some((_, group)) => format!("{}.{group}", kind.resource()),
        None => kind.resource().to_string(),
    };
    let what = match namespace {
        Some(ns) => format!("{resource} in namespace {ns}"),
        None => format!("{resource} (at the cluster scope)"),
    };
    let (api_version, kind_name) = match kind.group() {
        "" => ("v1".to_string(), kind.name()),
        g => (format!("{g}/{}", kind.version()), kind.name()),
    };
    let mut token: Option<String> = None;
    let mut n = 0;
    loop {
        let mut lp = ListParams::default().limit(cl.page);
        if let Some(l) = labels {
            lp = lp.labels_from(l);
        }
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let req = Request::new(collection(kind, namespace))
            .list(&lp)
            .map_err(|e| LiveError(format!("cannot build the request: {e}")))?;
        let text = send(cl, req, timeout, "list", &what).await?;
        let page: Page = serde_json::from_str(&text)
            .map_err(|e| LiveError(format!("cannot read the {what} list: {e}")))?;
        for mut item in page.items {
            // Items of a typed list carry neither; the rules read both.
            if let Some(o) = item.as_object_mut() {
                o.insert("apiVersion".into(), Value::String(api_version.clone()));
                o.insert("kind".into(), Value::String(kind_name.to_string()));
            }
            n += 1;
            each(item);
        }
        token = page.metadata.cont.filter(|c| !c.is_empty());
        if token.is_none() {
            return Ok(n);
        }
    }
}

/// `pod/NAME`, `deploy/NAME`, `NAME` (a pod): kubectl's resource names and short names.
pub fn parse_ref(s: &str) -> Option<(Kind, &str)> {
    let Some((kind, name)) = s.split_once('/') else {
        return (!s.is_empty()).then_some((Kind::Pod, s));
    };
    let lower = kind.to_ascii_lowercase();
    // kubectl's qualified forms, `RESOURCE.GROUP` and `RESOURCE.VERSION.GROUP`
    // (`deployments.apps/web`, `deployments.v1.apps/web`): the group must be the kind's own.
    let (resource, group) = match lower.split_once('.') {
        Some((r, g)) => (r, Some(g)),
        None => (lower.as_str(), None),
    };
    let kruise = group.is_some_and(|g| g.ends_with(crate::k8s::workload::KRUISE_GROUP));
    let kind = match resource {
        "pod" | "pods" | "po" => Kind::Pod,
        "deployment" | "deployments" | "deploy" => Kind::Deployment,
        // `statefulset` alone stays apps/v1's; OpenKruise's is `asts` or qualified.
        "statefulset" | "statefulsets" | "sts" if kruise => Kind::KruiseStatefulSet,
        "statefulset" | "statefulsets" | "sts" => Kind::StatefulSet,
        "daemonset" | "daemonsets" | "ds" => Kind::DaemonSet,
        "replicaset" | "replicasets" | "rs" => Kind::ReplicaSet,
        "job" | "jobs" => Kind::Job,
        "cronjob" | "cronjobs" | "cj" => Kind::CronJob,
        "replicationcontroller" | "replicationcontrollers" | "rc" => Kind::ReplicationController,
        "podtemplate" | "podtemplates" => Kind::PodTemplate,
        // OpenKruise's, with their CRDs' short names.
        "cloneset" | "clonesets" | "clone" => Kind::CloneSet,
        "asts" => Kind::KruiseStatefulSet,
        _ => return None,
    };
    if let Some(g) = group {
        let own = !kind.group().is_empty()
            && (g == kind.group() || g == format!("{}.{}", kind.version(), kind.group()));
        if !own {
            return None;
        }
    }
    (!name.is_empty() && !name.contains('/')).then_some((kind, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_verification_failures_say_what_to_check() {
        let cases = [
            (
                "client error (Connect): error:0A000086:SSL routines:tls_post_process_server_certificate:certificate verify failed:../ssl/statem/statem_clnt.c:1889:: self-signed certificate",
                "its TLS certificate is not trusted (self-signed certificate); check the kubeconfig's certificate-authority(-data) for this cluster",
            ),
            (
                "error:1416F086:SSL routines:tls_process_server_certificate:certificate verify failed:../ssl/statem/statem_clnt.c:1919:: unable to get local issuer certificate",
                "its TLS certificate is not trusted (unable to get local issuer certificate); check the kubeconfig's certificate-authority(-data) for this cluster",
            ),
            (
                "error:0A000086:SSL routines:tls_post_process_server_certificate:certificate verify failed:../ssl/statem/statem_clnt.c:1889:: certificate has expired",
                "its TLS certificate is not trusted (certificate has expired); the server's certificate is outside its validity period (or this machine's clock is wrong)",
            ),
            (
                "error:0A000086:SSL routines:tls_post_process_server_certificate:certificate verify failed:../ssl/statem/statem_clnt.c:1889:: IP address mismatch",
                "its TLS certificate is not trusted (IP address mismatch); the kubeconfig's server address is not one the certificate names: use one it names, or set tls-server-name",
            ),
            (
                "error:0A000086:SSL routines::certificate verify failed:::",
                "its TLS certificate is not trusted (certificate verify failed); check the kubeconfig's certificate-authority(-data) for this cluster",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(tls_verify_failure(text).as_deref(), Some(want), "{text}");
        }
        assert_eq!(
            tls_verify_failure("tcp connect error: Connection refused (os error 111)"),
            None
        );
    }

    /// What a kubeconfig names but cannot be loaded is said with its cause, on one line.
    #[tokio::test]
    async fn kubeconfig_problems_keep_their_cause() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        let cert = crate::server::tls::generate_dev_cert(&dir.path().join("client")).unwrap();
        let client_key = format!(
            "{{client-certificate: {}, client-key: /nonexistent/u.key}}",
            cert.cert.display()
        );
        let text = |cluster: &str, user: &str| {
            format!(
                "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster: {{server: 'https://127.0.0.1:1', {cluster}}}\ncontexts:\n- name: c\n  context: {{cluster: k, user: u}}\nusers:\n- name: u\n  user: {user}\n"
            )
        };
        let cases = [
            (
                "insecure-skip-tls-verify: true",
                "{client-certificate: /nonexistent/u.crt, client-key: /nonexistent/u.key}",
                "failed to load client certificate: failed to read file '\"/nonexistent/u.crt\"': No such file or directory (os error 2)",
            ),
            (
                "insecure-skip-tls-verify: true",
                &client_key,
                "failed to load client key: failed to read file '\"/nonexistent/u.key\"': No such file or directory (os error 2)",
            ),
            // Read with the kubeconfig itself.
            (
                "certificate-authority: /nonexistent/ca.crt",
                "{token: t}",
                "failed to load certificate authority: failed to read file '\"/nonexistent/ca.crt\"': No such file or directory (os error 2)",
            ),
        ];
        for (cluster, user, want) in cases {
            std::fs::write(&path, text(cluster, user)).unwrap();
            let err = connect(&Connect {
                kubeconfig: Some(path.clone()),
                ..Default::default()
            })
            .await
            .err()
            .unwrap();
            let prefix = format!("kubeconfig {}: ", path.display());
            assert_eq!(err.0, format!("{prefix}{want}"));
            assert!(!err.0.contains('\n'), "{}", err.0);
        }
    }

    #[test]
    fn references_as_kubectl_writes_them() {
        let cases = [
            ("web-1", Some((Kind::Pod, "web-1"))),
            ("clone/web", Some((Kind::CloneSet, "web"))),
            ("asts/db", Some((Kind::KruiseStatefulSet, "db"))),
            ("pod/web-1", Some((Kind::Pod, "web-1"))),
            ("deploy/web", Some((Kind::Deployment, "web"))),
            ("Deployment/web", Some((Kind::Deployment, "web"))),
            ("sts/db", Some((Kind::StatefulSet, "db"))),
            ("cj/nightly", Some((Kind::CronJob, "nightly"))),
            ("deployments.apps/web", Some((Kind::Deployment, "web"))),
            ("cronjob.batch/nightly", Some((Kind::CronJob, "nightly"))),
            (
                "clonesets.apps.kruise.io/web",
                Some((Kind::CloneSet, "web")),
            ),
            ("statefulsets.apps/db", Some((Kind::StatefulSet, "db"))),
            (
                "statefulsets.apps.kruise.io/db",
                Some((Kind::KruiseStatefulSet, "db")),
            ),
            ("deployments.v1.apps/web", Some((Kind::Deployment, "web"))),
            (
                "sts.apps.kruise.io/db",
                Some((Kind::KruiseStatefulSet, "db")),
            ),
            (
                "statefulset.v1beta1.apps.kruise.io/db",
                Some((Kind::KruiseStatefulSet, "db")),
            ),
            ("deployments.v2.apps/web", None),
            ("deployments.batch/web", None),
            ("pods./p", None),
            ("service/web", None),
            ("pod/", None),
            ("./pod.yaml", None),
            ("", None),
        ];
        for (s, want) in cases {
            assert_eq!(parse_ref(s), want, "{s}");
        }
        assert_eq!(
            collection(Kind::Deployment, Some("d")),
            "/apis/apps/v1/namespaces/d/deployments"
        );
        assert_eq!(collection(Kind::Pod, None), "/api/v1/pods");
    }
}
