//! Starts the real binary and talks to it over real HTTPS.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use openssl::ssl::{SslConnector, SslMethod};

pub const BIN: &str = env!("CARGO_BIN_EXE_placement-guard");

pub struct Server {
    child: Child,
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

pub fn temp_dir(tag: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("pg-{tag}-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Starts `serve` on an ephemeral port with a generated certificate and waits for its
/// "listening on" line (no sleeping).
pub fn start(extra: &[&str]) -> Server {
    let dir = temp_dir("srv");
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--workers",
            "2",
            "--dev-cert-dir",
        ])
        .arg(&dir)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
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
