//! A real etcd and kube-apiserver on loopback for tests (as envtest does for controller-runtime):
//! binaries from `../shared/k8s` (installed into `target/k8s-bin` by `.ci/run`), free ports,
//! generated certificates and a token file. Without the binaries a test prints one line saying
//! how to enable it and returns.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::temp_dir;

pub const ADMIN_TOKEN: &str = "placement-guard-admin-token";
/// An authenticated user that RBAC grants nothing.
pub const NOBODY_TOKEN: &str = "placement-guard-nobody-token";
/// kube-scheduler's identity: the built-in RBAC roles bind `system:kube-scheduler`.
const SCHEDULER_TOKEN: &str = "placement-guard-scheduler-token";

pub struct ApiServer {
    pub url: String,
    /// The apiserver's serving certificate (self-signed for 127.0.0.1).
    pub ca: PathBuf,
    dir: PathBuf,
    children: Vec<Child>,
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        for c in self.children.iter_mut().rev() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}

/// Where kube-apiserver is, installing it from `../shared/k8s` when that is present.
fn binaries() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::var_os("PG_K8S_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/k8s-bin"));
    let have = |d: &Path| {
        d.join("kube-apiserver").is_file()
            && Command::new("sh")
                .args(["-c", "command -v etcd"])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
    };
    if have(&dir) {
        return Some(dir);
    }
    let install = root.join("../shared/k8s/install.sh");
    if install.is_file() {
        let ok = Command::new("bash")
            .arg(&install)
            .arg(&dir)
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok && have(&dir) {
            return Some(dir);
        }
    }
    None
}

/// A fresh etcd and kube-apiserver, or `None` after printing how to enable the test.
pub fn with_apiserver(test: &str) -> Option<ApiServer> {
    let Some(bin) = binaries() else {
        // Straight to stderr, past the test harness's capture, so the skip is always seen.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "skipping {test}: no kube-apiserver; run ../shared/k8s/install.sh target/k8s-bin (or set PG_K8S_BIN) to enable it"
        );
        return None;
    };
    // One start at a time in a test binary: free ports are picked by binding and releasing
    // them, so two servers starting together could pick the same one, and the loser's etcd or
    // apiserver never comes up (seen once: "kube-apiserver not ready after 90 s").
    static STARTING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = STARTING.lock().unwrap_or_else(|e| e.into_inner());
    Some(ApiServer::start(&bin))
}

impl ApiServer {
    fn start(bin: &Path) -> ApiServer {
        let dir = temp_dir("kube").keep();
        let mut children = Vec::new();
        let (client, peer, secure) = (free_port(), free_port(), free_port());
        let log = |name: &str| std::fs::File::create(dir.join(name)).unwrap();
        children.push(
            Command::new("etcd")
                .arg("--data-dir")
                .arg(dir.join("etcd"))
                .args([
                    "--name",
                    "test",
                    "--listen-client-urls",
                    &format!("http://127.0.0.1:{client}"),
                    "--advertise-client-urls",
                    &format!("http://127.0.0.1:{client}"),
                    "--listen-peer-urls",
                    &format!("http://127.0.0.1:{peer}"),
                    "--initial-advertise-peer-urls",
                    &format!("http://127.0.0.1:{peer}"),
                    "--initial-cluster",
                    &format!("test=http://127.0.0.1:{peer}"),
                ])
                .stdout(log("etcd.log"))
                .stderr(log("etcd.err"))
                .spawn()
                .expect("start etcd"),
        );
        // Serving certificate for 127.0.0.1, and the service-account signing key.
        let certs = dir.join("certs");
        let pair = placement_guard::server::tls::generate_dev_cert(&certs).unwrap();
        let rsa = openssl::rsa::Rsa::generate(2048).unwrap();
        let key = openssl::pkey::PKey::from_rsa(rsa).unwrap();
        std::fs::write(dir.join("sa.key"), key.private_key_to_pem_pkcs8().unwrap()).unwrap();
        std::fs::write(dir.join("sa.pub"), key.public_key_to_pem().unwrap()).unwrap();
        std::fs::write(
            dir.join("tokens.csv"),
            format!(
                "{ADMIN_TOKEN},admin,1,\"system:masters\"\n{NOBODY_TOKEN},nobody,2\n{SCHEDULER_TOKEN},system:kube-scheduler,3\n"
            ),
        )
        .unwrap();
        let path = |p: &str| dir.join(p).display().to_string();
        children.push(
            Command::new(bin.join("kube-apiserver"))
                .args([
                    "--bind-address=127.0.0.1",
                    "--advertise-address=127.0.0.1",
                    &format!("--secure-port={secure}"),
                    &format!("--etcd-servers=http://127.0.0.1:{client}"),
                    &format!("--tls-cert-file={}", pair.cert.display()),
                    &format!("--tls-private-key-file={}", pair.key.display()),
                    &format!("--token-auth-file={}", path("tokens.csv")),
                    "--authorization-mode=RBAC",
                    "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                    &format!("--service-account-key-file={}", path("sa.pub")),
                    &format!("--service-account-signing-key-file={}", path("sa.key")),
                    "--service-cluster-ip-range=10.0.0.0/24",
                    "--endpoint-reconciler-type=none",
                    &format!("--cert-dir={}", path("apiserver-certs")),
                    "--profiling=false",
                ])
                .stdout(log("apiserver.log"))
                .stderr(log("apiserver.err"))
                .spawn()
                .expect("start kube-apiserver"),
        );
        let api = ApiServer {
            url: format!("https://127.0.0.1:{secure}"),
            ca: pair.cert,
            dir,
            children,
        };
        api.wait_ready();
        api
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let out = self.curl("GET", "/readyz", None);
            if out.0 == 200 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "kube-apiserver not ready after 90 s: {out:?}\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    pub fn log(&self) -> String {
        let tail = |f: &str| {
            let t = std::fs::read_to_string(self.dir.join(f)).unwrap_or_default();
            let lines: Vec<&str> = t.lines().collect();
            lines[lines.len().saturating_sub(20)..].join("\n")
        };
        format!(
            "apiserver:\n{}\netcd:\n{}",
            tail("apiserver.err"),
            tail("etcd.err")
        )
    }

    /// One request as the admin, through a real HTTPS client: (status, JSON body).
    pub fn curl(&self, method: &str, path: &str, body: Option<(&str, &Value)>) -> (u16, Value) {
        let (code, v, _) = self.request(method, path, body);
        (code, v)
    }

    /// [`ApiServer::curl`] with the answer's `Warning` headers (the text of each, as kubectl
    /// prints it).
    pub fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<(&str, &Value)>,
    ) -> (u16, Value, Vec<String>) {
        let api = self.url.clone();
        let ca = self.ca.clone();
        let method = awc::http::Method::from_bytes(method.as_bytes()).unwrap();
        let path = path.to_string();
        let body = body.map(|(ct, v)| (ct.to_string(), serde_json::to_vec(v).unwrap()));
        // Each call runs its own small runtime: the tests are synchronous.
        actix_rt::System::new().block_on(async move {
            let req = super::client(&ca)
                .request(method, format!("{api}{path}"))
                .bearer_auth(ADMIN_TOKEN);
            let sent = match body {
                Some((ct, b)) => req.content_type(ct).send_body(b).await,
                None => req.send().await,
            };
            match sent {
                Ok(mut r) => {
                    // `299 - "text"`: the text between the quotes, unescaped.
                    let warnings = r
                        .headers()
                        .get_all("warning")
                        .filter_map(|h| h.to_str().ok())
                        .map(|h| {
                            let t = h.splitn(3, ' ').nth(2).unwrap_or(h);
                            let t = t.strip_prefix('"').unwrap_or(t);
                            let t = t.strip_suffix('"').unwrap_or(t);
                            t.replace("\\\"", "\"")
                        })
                        .collect();
                    let bytes = r.body().limit(64 << 20).await.unwrap_or_default();
                    let v = serde_json::from_slice(&bytes)
                        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
                    (r.status().as_u16(), v, warnings)
                }
                Err(e) => (0, Value::String(e.to_string()), Vec::new()),
            }
        })
    }

    /// A Ready node with these labels and taints, 2 CPUs, 4 GiB and room for 110 pods. Status
    /// is written through the status subresource, as a kubelet does.
    pub fn node(&self, name: &str, labels: &Value, taints: &[Value]) {
        let mut labels = labels.clone();
        labels["kubernetes.io/hostname"] = Value::String(name.into());
        let (code, body) = self.create(
            "/api/v1/nodes",
            &serde_json::json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}),
        );
        assert_eq!(code, 201, "{body}");
        let resources = serde_json::json!({"cpu": "2", "memory": "4Gi", "pods": "110"});
        let (code, body) = self.patch(
            &format!("/api/v1/nodes/{name}/status"),
            &serde_json::json!({"status": {"capacity": resources, "allocatable": resources,
                    "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready",
                                    "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}),
        );
        assert_eq!(code, 200, "{body}");
        // The apiserver taints a new node not-ready; with no node lifecycle controller here, the
        // test lifts it as that controller would for a Ready node.
        let taints = if taints.is_empty() {
            Value::Null
        } else {
            Value::Array(taints.to_vec())
        };
        let (code, body) = self.patch(
            &format!("/api/v1/nodes/{name}"),
            &serde_json::json!({"spec": {"taints": taints}}),
        );
        assert_eq!(code, 200, "{body}");
    }

    /// A namespace with the `default` ServiceAccount that pods need (no controller-manager
    /// here creates it).
    pub fn namespace(&self, name: &str) {
        let (code, body) = self.create(
            "/api/v1/namespaces",
            &serde_json::json!({"metadata": {"name": name}}),
        );
        assert_eq!(code, 201, "{body}");
        let (code, body) = self.create(
            &format!("/api/v1/namespaces/{name}/serviceaccounts"),
            &serde_json::json!({"metadata": {"name": "default"}}),
        );
        assert_eq!(code, 201, "{body}");
    }

    /// The manifests' own validating webhooks of these names (their rules and CEL
    /// matchConditions), pointed at `server` by URL and limited to `namespace`.
    pub fn register_webhooks(&self, server: &super::Server, namespace: &str, names: &[&str]) {
        self.register("ValidatingWebhookConfiguration", server, namespace, names);
    }

    /// [`ApiServer::register_webhooks`] for the manifests' mutating webhooks (`/mutate`).
    pub fn register_mutating_webhooks(
        &self,
        server: &super::Server,
        namespace: &str,
        names: &[&str],
    ) {
        self.register("MutatingWebhookConfiguration", server, namespace, names);
    }

    fn register(&self, kind: &str, server: &super::Server, namespace: &str, names: &[&str]) {
        use base64::Engine;
        let (path, resource) = if kind == "MutatingWebhookConfiguration" {
            ("mutate", "mutatingwebhookconfigurations")
        } else {
            ("validate", "validatingwebhookconfigurations")
        };
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/manifests/webhooks.yaml"
        ))
        .unwrap();
        let cfg = placement_guard::k8s::manifest::parse(&text)
            .unwrap()
            .into_iter()
            .map(|o| o.value)
            .find(|v| v["kind"] == kind)
            .unwrap();
        let ca = std::fs::read(&server.ca).unwrap();
        let hooks: Vec<Value> = cfg["webhooks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| names.iter().any(|n| w["name"] == *n))
            .map(|w| {
                let mut hook = w.clone();
                hook["clientConfig"] = serde_json::json!({
                    "url": format!("{}/{path}", server.base),
                    "caBundle": base64::engine::general_purpose::STANDARD.encode(&ca),
                });
                hook["namespaceSelector"] =
                    serde_json::json!({"matchLabels": {"kubernetes.io/metadata.name": namespace}});
                hook
            })
            .collect();
        assert_eq!(
            hooks.len(),
            names.len(),
            "webhooks {names:?} in the manifests"
        );
        let (code, body) = self.create(
            &format!("/apis/admissionregistration.k8s.io/v1/{resource}"),
            &serde_json::json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                    "metadata": {"name": format!("placement-guard-{namespace}")}, "webhooks": hooks}),
        );
        assert_eq!(code, 201, "{body}");
    }

    pub fn create(&self, path: &str, object: &Value) -> (u16, Value) {
        self.curl("POST", path, Some(("application/json", object)))
    }

    pub fn patch(&self, path: &str, merge: &Value) -> (u16, Value) {
        self.curl("PATCH", path, Some(("application/merge-patch+json", merge)))
    }

    /// A kubeconfig for this API server with `token` (context `test`, namespace `ns`).
    pub fn kubeconfig(&self, token: &str, ns: &str) -> PathBuf {
        let path = self.dir.join(format!("kubeconfig-{token}-{ns}"));
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: {}\n    certificate-authority: {}\nusers:\n- name: u\n  user:\n    token: {token}\ncontexts:\n- name: test\n  context: {{cluster: test, user: u, namespace: {ns}}}\ncurrent-context: test\n",
            self.url,
            self.ca.display()
        );
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Stops (`STOP`) or resumes (`CONT`) the API server process: it keeps its connections
    /// open and answers nothing, as a server or a load balancer that hangs does.
    pub fn signal_apiserver(&self, signal: &str) {
        let pid = self.children[1].id().to_string();
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} {pid}");
    }

    /// Starts kube-scheduler (from the same folder as kube-apiserver) against this API server.
    pub fn start_scheduler(&mut self) {
        let bin = binaries().unwrap();
        let kc = self.kubeconfig(SCHEDULER_TOKEN, "default");
        let kc = kc.display().to_string();
        let log = |name: &str| std::fs::File::create(self.dir.join(name)).unwrap();
        let child = Command::new(bin.join("kube-scheduler"))
            .args([
                format!("--kubeconfig={kc}"),
                format!("--authentication-kubeconfig={kc}"),
                format!("--authorization-kubeconfig={kc}"),
                "--bind-address=127.0.0.1".into(),
                format!("--secure-port={}", free_port()),
                "--leader-elect=false".into(),
            ])
            .stdout(log("scheduler.log"))
            .stderr(log("scheduler.err"))
            .spawn()
            .expect("start kube-scheduler");
        self.children.push(child);
    }

    /// Polls until `f` holds (the apiserver's informers pick registrations up asynchronously).
    pub fn eventually(&self, what: &str, mut f: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !f() {
            assert!(
                Instant::now() < deadline,
                "{what}: not within 60 s\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}
