//! Baseline for the load benchmark (not a route of the production server): the same stack
//! (actix-web + openssl, same TLS settings, worker count, body limit and allocator) that reads
//! the body, parses nothing, and answers a fixed allow.
//!
//! cargo run --release --example noop_server -- 127.0.0.1:18444 2 /tmp/noop-cert
//!
//! `PROBE` adds one thing to each request, to see what a handler's extra work costs the whole
//! server under the benchmark's pinned load (README, "Session 33"); `make bench` never sets it.
//! `PROBE=spin:NANOS` busy-waits that long, reading only the clock (so it takes no cache from
//! the network path); `PROBE=review` runs the real review of the body and throws it away.

// Test and benchmark helpers fail loudly on broken fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use actix_web::{web, App, HttpResponse, HttpServer};

// The server's allocator, so the ratio measures the server's work and not an allocator swap.
#[global_allocator]
static GLOBAL: placement_guard::alloc::MiMalloc = placement_guard::alloc::MiMalloc;

const ALLOW: &str = r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"","allowed":true}}"#;

/// What `PROBE` asks for, read once at start.
enum Probe {
    None,
    Spin(std::time::Duration),
    Review(Box<placement_guard::rules::config::RuleSet>),
}

static PROBE: std::sync::OnceLock<Probe> = std::sync::OnceLock::new();

async fn allow(body: web::Bytes) -> HttpResponse {
    match PROBE.get() {
        None | Some(Probe::None) => {}
        Some(Probe::Spin(d)) => {
            let t = std::time::Instant::now();
            while t.elapsed() < *d {
                std::hint::spin_loop();
            }
        }
        Some(Probe::Review(rules)) => {
            let r = placement_guard::admission::review(
                &body,
                placement_guard::admission::Endpoint::Validate,
                rules,
            );
            std::hint::black_box(r.is_ok());
        }
    }
    std::hint::black_box(body.len());
    HttpResponse::Ok()
        .content_type("application/json")
        .body(ALLOW)
}

fn main() -> std::io::Result<()> {
    let probe = match std::env::var("PROBE").as_deref() {
        Err(_) | Ok("") => Probe::None,
        Ok("review") => Probe::Review(Default::default()),
        Ok(s) => match s.strip_prefix("spin:").and_then(|n| n.parse().ok()) {
            Some(ns) => Probe::Spin(std::time::Duration::from_nanos(ns)),
            None => panic!("PROBE={s:?}: spin:NANOS or review"),
        },
    };
    let _ = PROBE.set(probe);
    let args: Vec<String> = std::env::args().collect();
    let addr = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| "127.0.0.1:18444".into());
    let workers: usize = args.get(2).and_then(|w| w.parse().ok()).unwrap_or(2);
    let dir = std::path::PathBuf::from(
        args.get(3)
            .cloned()
            .unwrap_or_else(|| "/tmp/placement-guard-noop".into()),
    );
    let pair =
        placement_guard::server::tls::generate_dev_cert(&dir).map_err(std::io::Error::other)?;
    let acceptor = placement_guard::server::tls::acceptor(&pair).map_err(std::io::Error::other)?;
    actix_web::rt::System::new().block_on(async move {
        let server = HttpServer::new(|| {
            App::new()
                .app_data(web::PayloadConfig::new(
                    placement_guard::server::MAX_BODY_BYTES,
                ))
                .route("/validate", web::post().to(allow))
                .route("/mutate", web::post().to(allow))
        })
        .workers(workers)
        .tcp_nodelay(true)
        .bind_openssl(&addr, acceptor)?;
        for a in server.addrs() {
            println!("listening on https://{a}");
        }
        server.run().await
    })
}
