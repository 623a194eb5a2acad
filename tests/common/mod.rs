//! Starts the real binary and talks to it over real HTTPS.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use openssl::ssl::{SslConnector, SslMethod};

pub mod kube;

pub const BIN: &str = env!("CARGO_BIN_EXE_placement-guard");

pub struct Server {
    pub child: Child,
    pub base: String,
    pub ca: PathBuf,
    pub dir: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A directory of the test's own, removed with everything in it when the test is done (some
/// hold a copy of the binary: left behind, each run of the suite would leave hundreds of MB).
pub struct TempDir(PathBuf);

impl TempDir {
    /// Keeps the directory: the caller removes it (a server's folder, removed with it).
    pub fn keep(self) -> PathBuf {
        let me = std::mem::ManuallyDrop::new(self);
        me.0.clone()
    }
}

impl std::ops::Deref for TempDir {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::path::Path> for TempDir {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TempDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // A test may have taken permissions away from a subdirectory.
        use std::os::unix::fs::PermissionsExt;
        fn open_up(dir: &std::path::Path) {
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755));
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    open_up(&entry.path());
                }
            }
        }
        if std::fs::remove_dir_all(&self.0).is_err() {
            open_up(&self.0);
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

pub fn temp_dir(tag: &str) -> TempDir {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("pg-{tag}-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    TempDir(dir)
}

/// Starts `serve` on an ephemeral port with a generated certificate and waits for its
/// "listening on" line (no sleeping).
pub fn start(extra: &[&str]) -> Server {
    start_env(extra, &[])
}

/// [`start`] with environment variables (`RUST_LOG` is unset unless given here).
pub fn start_env(extra: &[&str], env: &[(&str, &str)]) -> Server {
    let dir = temp_dir("srv").keep();
    let mut child = Command::new(BIN)
        .env_remove("RUST_LOG")
        .envs(env.iter().copied())
        .args(["serve", "--addr", "127.0.0.1:0", "--workers", "2"])
        // A certificate of the test's own, or a generated one in the server's folder.
        .args(if extra.contains(&"--tls-cert") {
            vec![]
        } else {
            vec![std::ffi::OsStr::new("--dev-cert-dir"), dir.as_os_str()]
        })
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.join("stderr.log")).unwrap())
        .spawn()
        .expect("start server");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut base = None;
    while base.is_none() {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("server did not report its address in time");
        if let Some(addr) = line.strip_prefix("listening on ") {
            base = Some(addr.to_string());
        }
    }
    Server {
        child,
        base: base.unwrap(),
        ca: dir.join("tls.crt"),
        dir,
    }
}

/// An HTTPS client that trusts only the server's generated certificate.
impl Server {
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.join("stderr.log")).unwrap_or_default()
    }
}

pub fn client(ca: &PathBuf) -> awc::Client {
    let mut ssl = SslConnector::builder(SslMethod::tls_client()).unwrap();
    ssl.set_ca_file(ca).unwrap();
    awc::Client::builder()
        .connector(awc::Connector::new().openssl(ssl.build()))
        .timeout(Duration::from_secs(30))
        .finish()
}

pub fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/testdata/admission-reviews/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// One TLS connection under the test's control (keep-alive, partial writes), speaking HTTP/1.1.
pub struct RawConn {
    stream: openssl::ssl::SslStream<std::net::TcpStream>,
}

impl RawConn {
    pub fn connect(base: &str, ca: &PathBuf) -> Result<RawConn, String> {
        let hostport = base.trim_start_matches("https://");
        let tcp = std::net::TcpStream::connect(hostport).map_err(|e| e.to_string())?;
        tcp.set_read_timeout(Some(Duration::from_secs(20))).ok();
        let mut b = SslConnector::builder(SslMethod::tls_client()).unwrap();
        b.set_ca_file(ca).unwrap();
        let host = hostport
            .rsplit_once(':')
            .map(|(h, _)| h)
            .unwrap_or(hostport);
        let stream = b.build().connect(host, tcp).map_err(|e| e.to_string())?;
        Ok(RawConn { stream })
    }

    /// Writes, reporting a closed connection instead of panicking.
    pub fn write_some(&mut self, data: &[u8]) -> Result<(), String> {
        use std::io::Write;
        self.stream
            .write_all(data)
            .and_then(|()| self.stream.flush())
            .map_err(|e| e.to_string())
    }

    pub fn write(&mut self, data: &[u8]) {
        use std::io::Write;
        self.stream.write_all(data).unwrap();
        self.stream.flush().unwrap();
    }

    /// Reads one response: status and body (Content-Length framing).
    pub fn read_response(&mut self) -> Result<(u16, Vec<u8>), String> {
        self.read_response_closing().map(|(s, b, _)| (s, b))
    }

    /// One POST on this connection: status, and whether the server closes the connection after
    /// it (`Connection: close`).
    pub fn post(&mut self, path: &str, body: &[u8]) -> Result<(u16, bool), String> {
        use std::io::Write;
        let head = format!("POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", body.len());
        self.stream
            .write_all(head.as_bytes())
            .and_then(|()| self.stream.write_all(body))
            .and_then(|()| self.stream.flush())
            .map_err(|e| e.to_string())?;
        self.read_response_closing().map(|(s, _, close)| (s, close))
    }

    /// Reads one response: status, body, and whether it says `Connection: close`.
    pub fn read_response_closing(&mut self) -> Result<(u16, Vec<u8>, bool), String> {
        use std::io::Read;
        let mut buf = Vec::new();
        let mut byte = [0u8; 1];
        while !buf.ends_with(b"\r\n\r\n") {
            match self.stream.read(&mut byte) {
                Ok(0) => return Err("connection closed".into()),
                Ok(_) => buf.push(byte[0]),
                Err(e) => return Err(e.to_string()),
            }
        }
        let head = String::from_utf8_lossy(&buf).to_string();
        let status: u16 = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or("no status")?;
        let len: usize = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().parse().unwrap_or(0))
            })
            .unwrap_or(0);
        let close = head
            .lines()
            .any(|l| l.to_ascii_lowercase().replace(' ', "") == "connection:close");
        let mut body = vec![0u8; len];
        self.stream
            .read_exact(&mut body)
            .map_err(|e| e.to_string())?;
        Ok((status, body, close))
    }

    pub fn get(&mut self, path: &str) -> Result<u16, String> {
        self.write(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes());
        self.read_response().map(|(s, _)| s)
    }
}
