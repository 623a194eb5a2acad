//! The HTTPS admission server: a thin actix-web adapter over [`crate::admission::review`].

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use actix_web::http::StatusCode;
use actix_web::{web, App, HttpResponse, HttpServer};
use anyhow::{Context, Result};

use crate::admission::{self, Endpoint};
use crate::config::RuleSet;
use crate::tls::{self, CertPair};

/// Bodies above this are refused with 413. The apiserver caps objects at 3 MiB, and an UPDATE
/// carries two of them.
pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;

/// Above this size the evaluation runs on the blocking pool, off the async workers.
const INLINE_BODY_BYTES: usize = 256 * 1024;

pub struct State {
    pub rules: Arc<RuleSet>,
}

/// Routes shared by `main` and the tests.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.app_data(web::PayloadConfig::new(MAX_BODY_BYTES))
        .route("/validate", web::post().to(validate))
        .route("/mutate", web::post().to(mutate))
        .route("/healthz", web::get().to(healthz))
        .route("/readyz", web::get().to(readyz));
}

async fn healthz() -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain").body("ok")
}

async fn readyz() -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain").body("ok")
}

async fn validate(state: web::Data<State>, body: web::Bytes) -> HttpResponse {
    handle(state, body, Endpoint::Validate).await
}

async fn mutate(state: web::Data<State>, body: web::Bytes) -> HttpResponse {
    handle(state, body, Endpoint::Mutate).await
}

async fn handle(state: web::Data<State>, body: web::Bytes, endpoint: Endpoint) -> HttpResponse {
    let start = Instant::now();
    let rules = state.rules.clone();
    let result = if body.len() > INLINE_BODY_BYTES {
        match web::block(move || admission::review(&body, endpoint, &rules)).await {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(error = %e, "evaluation task failed");
                return HttpResponse::InternalServerError()
                    .content_type("text/plain")
                    .body("internal error");
            }
        }
    } else {
        admission::review(&body, endpoint, &rules)
    };
    match result {
        Ok(r) => {
            let rules: Vec<&str> = r.rules.iter().map(|r| r.as_str()).collect();
            tracing::info!(
                uid = %r.uid,
                namespace = %r.namespace,
                name = %r.name,
                operation = r.operation,
                endpoint = ?endpoint,
                rules = %rules.join(","),
                allowed = r.allowed,
                micros = start.elapsed().as_micros() as u64,
                "admission decision"
            );
            HttpResponse::Ok()
                .content_type("application/json")
                .body(r.body)
        }
        Err(e) => {
            tracing::warn!(error = %e, "bad admission request");
            HttpResponse::build(StatusCode::BAD_REQUEST)
                .content_type("text/plain; charset=utf-8")
                .body(e.0)
        }
    }
}

pub struct ServeOptions {
    pub addr: String,
    pub cert: CertPair,
    pub rules: RuleSet,
    pub workers: Option<usize>,
}

/// Binds, prints the address it listens on, and serves until stopped.
pub async fn serve(opts: ServeOptions) -> Result<()> {
    let acceptor = tls::acceptor(&opts.cert)?;
    let state = web::Data::new(State {
        rules: Arc::new(opts.rules),
    });
    let mut server =
        HttpServer::new(move || App::new().app_data(state.clone()).configure(configure));
    if let Some(w) = opts.workers {
        server = server.workers(w);
    }
    let server = server
        .bind_openssl(&opts.addr, acceptor)
        .with_context(|| format!("binding {}", opts.addr))?;
    let addrs: Vec<SocketAddr> = server.addrs();
    for a in &addrs {
        // The tests read this line to find an ephemeral port.
        println!("listening on https://{a}");
    }
    tracing::info!(addrs = ?addrs, "serving");
    server.run().await.context("server failed")
}
