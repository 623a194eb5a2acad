//! Running in a cluster: metrics, certificate and rule-file reloads under a running server, and
//! a graceful stop with a request in flight.

// Test and benchmark helpers fail loudly on broken fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{client, fixture, start, temp_dir, RawConn};
use serde_json::Value;

/// Replaces `dst` atomically, as kubelet does for Secret and ConfigMap volumes.
fn replace(dst: &Path, data: &[u8]) {
    let tmp = dst.with_extension("tmp");
    std::fs::write(&tmp, data).unwrap();
    std::fs::rename(&tmp, dst).unwrap();
}

async fn poll<F, Fut>(what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if f().await {
            return;
        }
        actix_rt::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("timed out waiting for: {what}");
}

async fn healthy_with(base: &str, ca: &PathBuf) -> bool {
    // A fresh client per try: a new connection, a new handshake.
    match client(ca).get(format!("{base}/healthz")).send().await {
        Ok(r) => r.status() == 200,
        Err(_) => false,
    }
}

async fn metrics_text(base: &str, ca: &PathBuf) -> String {
    let mut r = client(ca)
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap();
    String::from_utf8(r.body().await.unwrap().to_vec()).unwrap()
}

#[actix_rt::test]
async fn metrics_count_requests_by_endpoint_rule_and_verdict() {
    let s = start(&[]);
    let c = client(&s.ca);
    c.post(format!("{}/validate", s.base))
        .send_body(fixture("pod-create-denied.validate.json"))
        .await
        .unwrap();
    c.post(format!("{}/mutate", s.base))
        .send_body(fixture("pod-create-jsonpatch-spread.mutate.json"))
        .await
        .unwrap();
    c.post(format!("{}/validate", s.base))
        .send_body("nope")
        .await
        .unwrap();
    let text = metrics_text(&s.base, &s.ca).await;
    for want in [
        r#"placement_guard_admission_requests_total{endpoint="validate",rule="hard-anti-affinity",verdict="denied"} 1"#,
        r#"placement_guard_admission_requests_total{endpoint="mutate",rule="topology-spread-defaults",verdict="patched"} 1"#,
        r#"placement_guard_admission_requests_total{endpoint="validate",rule="none",verdict="bad_request"} 1"#,
        "placement_guard_admission_duration_seconds_count{endpoint=\"validate\"} 2",
        "placement_guard_admission_in_flight_requests 0",
        "placement_guard_tls_certificate_expiry_timestamp_seconds ",
    ] {
        assert!(text.contains(want), "missing {want}\n{text}");
    }
}

#[actix_rt::test]
async fn certificate_rotation_is_served_without_a_restart_and_a_broken_pair_is_refused() {
    let live = temp_dir("tls-live");
    let first = placement_guard::server::tls::generate_dev_cert(&live).unwrap();
    let second_dir = temp_dir("tls-next");
    let second = placement_guard::server::tls::generate_dev_cert(&second_dir).unwrap();
    let s = start(&[
        "--tls-cert",
        first.cert.to_str().unwrap(),
        "--tls-key",
        first.key.to_str().unwrap(),
        "--reload-interval",
        "1",
    ]);
    let old_ca = second_dir.join("old-ca.pem");
    std::fs::copy(&first.cert, &old_ca).unwrap();
    assert!(healthy_with(&s.base, &old_ca).await);
    assert!(
        !healthy_with(&s.base, &second.cert).await,
        "not the new certificate yet"
    );

    // An open connection survives the rotation (used every poll, so keep-alive never expires it).
    let mut kept = RawConn::connect(&s.base, &old_ca).unwrap();
    assert_eq!(kept.get("/healthz"), Ok(200));

    // cert-manager renews the secret: key first, then certificate.
    replace(&first.key, &std::fs::read(&second.key).unwrap());
    replace(&first.cert, &std::fs::read(&second.cert).unwrap());
    let deadline = Instant::now() + Duration::from_secs(20);
    while !healthy_with(&s.base, &second.cert).await {
        assert!(
            Instant::now() < deadline,
            "the renewed certificate was not served"
        );
        assert_eq!(
            kept.get("/healthz"),
            Ok(200),
            "the open connection keeps working"
        );
        actix_rt::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        !healthy_with(&s.base, &old_ca).await,
        "new handshakes get the new certificate"
    );
    assert_eq!(
        kept.get("/healthz"),
        Ok(200),
        "the kept connection still answers"
    );

    // A broken pair is refused; the last good one keeps serving.
    replace(
        &first.cert,
        b"-----BEGIN CERTIFICATE-----\nbroken\n-----END CERTIFICATE-----\n",
    );
    let ca = second.cert.clone();
    poll("the broken certificate to be refused", || {
        let (base, ca) = (s.base.clone(), ca.clone());
        async move {
            metrics_text(&base, &ca)
                .await
                .contains(r#"placement_guard_tls_certificate_reloads_total{result="failure"} 1"#)
        }
    })
    .await;
    assert!(healthy_with(&s.base, &second.cert).await);
    assert!(
        s.stderr().contains("refused a new TLS certificate"),
        "{}",
        s.stderr()
    );

    // An expired pair, whole and matching, is refused too: the API server would refuse every
    // call with it (with failurePolicy Fail, every pod in the cluster).
    let (expired_cert, expired_key) = expired_pair();
    let reloads = s.stderr().matches("reloaded the TLS certificate").count();
    replace(&first.key, &expired_key);
    replace(&first.cert, &expired_cert);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !s.stderr().contains("expired on Feb  1 00:00:00 2020 GMT") {
        assert!(
            Instant::now() < deadline,
            "the expired certificate was not refused"
        );
        actix_rt::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(healthy_with(&s.base, &second.cert).await);
    assert!(
        s.stderr().matches("reloaded the TLS certificate").count() == reloads,
        "{}",
        s.stderr()
    );
    std::fs::remove_dir_all(live).ok();
    std::fs::remove_dir_all(second_dir).ok();
}

/// A self-signed certificate that expired on 2020-02-01, and its key (PEM).
fn expired_pair() -> (Vec<u8>, Vec<u8>) {
    use openssl::{asn1::Asn1Time, ec, hash::MessageDigest, nid::Nid, pkey::PKey, x509};
    let group = ec::EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap();
    let key = PKey::from_ec_key(ec::EcKey::generate(&group).unwrap()).unwrap();
    let mut name = x509::X509NameBuilder::new().unwrap();
    name.append_entry_by_nid(Nid::COMMONNAME, "localhost")
        .unwrap();
    let name = name.build();
    let mut b = x509::X509::builder().unwrap();
    b.set_subject_name(&name).unwrap();
    b.set_issuer_name(&name).unwrap();
    b.set_pubkey(&key).unwrap();
    b.set_not_before(&Asn1Time::from_unix(1_577_836_800).unwrap())
        .unwrap();
    b.set_not_after(&Asn1Time::from_unix(1_580_515_200).unwrap())
        .unwrap();
    b.sign(&key, MessageDigest::sha256()).unwrap();
    (
        b.build().to_pem().unwrap(),
        key.private_key_to_pem_pkcs8().unwrap(),
    )
}

async fn statefulset_allowed(base: &str, ca: &PathBuf) -> bool {
    let mut r = client(ca)
        .post(format!("{base}/validate"))
        .send_body(fixture(
            "statefulset-create-zone-anti-affinity.validate.json",
        ))
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    v["response"]["allowed"].as_bool().unwrap()
}

#[actix_rt::test]
async fn rule_file_changes_apply_without_a_restart_and_a_bad_file_is_refused() {
    let dir = temp_dir("rules-live");
    let rules = dir.join("rules.yaml");
    std::fs::write(
        &rules,
        "apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\n",
    )
    .unwrap();
    let s = start(&["--rules", rules.to_str().unwrap(), "--reload-interval", "1"]);
    assert!(
        statefulset_allowed(&s.base, &s.ca).await,
        "namespace scope warns by default"
    );

    replace(&rules, b"apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  hardAntiAffinity:\n    namespaceScope: deny\n");
    poll("the stricter rules to apply", || {
        let (base, ca) = (s.base.clone(), s.ca.clone());
        async move { !statefulset_allowed(&base, &ca).await }
    })
    .await;
    // Loading at start-up was not a reload: one reload counted and logged, of the rule file only.
    let text = metrics_text(&s.base, &s.ca).await;
    assert!(
        text.contains(r#"placement_guard_rule_file_reloads_total{result="success"} 1"#),
        "{text}"
    );
    assert!(!text.contains("tls_certificate_reloads_total{"), "{text}");
    let log = s.stderr();
    assert_eq!(log.matches("reloaded the rule file").count(), 1, "{log}");
    assert!(!log.contains("reloaded the TLS certificate"), "{log}");

    replace(&rules, b"apiVersion: placement-guard.io/v1alpha1\nkind: RuleSet\nspec:\n  hardAntiAffinity:\n    namespaceScope: maybe\n");
    poll("the bad rule file to be refused", || {
        let (base, ca) = (s.base.clone(), s.ca.clone());
        async move {
            metrics_text(&base, &ca)
                .await
                .contains(r#"placement_guard_rule_file_reloads_total{result="failure"} 1"#)
        }
    })
    .await;
    assert!(
        !statefulset_allowed(&s.base, &s.ca).await,
        "the old rules stay in force"
    );
    let log = s.stderr();
    assert!(
        log.contains("refused a new rule file") && log.contains("namespaceScope"),
        "{log}"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[actix_rt::test]
async fn sigterm_finishes_in_flight_requests_then_exits() {
    let mut s = start(&["--shutdown-timeout", "10", "--shutdown-delay", "0"]);
    let mut probe = RawConn::connect(&s.base, &s.ca).unwrap();
    assert_eq!(probe.get("/readyz"), Ok(200));

    // A request whose body arrives in two parts, with SIGTERM in between.
    let body = fixture("pod-create-denied.validate.json");
    let (a, b) = body.split_at(body.len() / 2);
    let mut conn = RawConn::connect(&s.base, &s.ca).unwrap();
    conn.write(format!("POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", body.len()).as_bytes());
    conn.write(a);
    std::process::Command::new("kill")
        .args(["-TERM", &s.child.id().to_string()])
        .status()
        .unwrap();
    actix_rt::time::sleep(Duration::from_millis(700)).await;
    // Shutting down: no longer ready, no new connections.
    assert!(
        RawConn::connect(&s.base, &s.ca).is_err(),
        "new connections are refused"
    );
    conn.write(b);
    let (status, answer) = conn
        .read_response()
        .expect("the in-flight request is answered");
    assert_eq!(status, 200);
    let v: Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(v["response"]["allowed"], false);

    // Then the server exits by itself, cleanly.
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(st) = s.child.try_wait().unwrap() {
            break st;
        }
        assert!(
            Instant::now() < deadline,
            "server did not exit after SIGTERM"
        );
        actix_rt::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(status.success(), "{status:?}");
    let log = s.stderr();
    assert!(
        log.contains("stop signal: finishing in-flight requests") && log.contains("stopped"),
        "{log}"
    );
}

/// The decision lines in a server's JSON log, once `want` of them are there.
async fn decision_lines(s: &common::Server, want: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = s.stderr();
        let decisions: Vec<Value> = log
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}"))
            })
            .filter(|v| v["fields"]["message"] == "admission decision")
            .collect();
        if decisions.len() >= want {
            return decisions;
        }
        assert!(
            Instant::now() < deadline,
            "no {want} decision lines in {log}"
        );
        actix_rt::time::sleep(Duration::from_millis(100)).await;
    }
}

#[actix_rt::test]
async fn json_logs_have_one_line_per_decision_that_changes_something() {
    let s = start(&["--log-format", "json"]);
    let c = client(&s.ca);
    // A plain allow first: at the default level it is counted, not logged.
    for name in [
        "pod-update-labels-only-ungated.validate.json",
        "pod-create-denied.validate.json",
    ] {
        c.post(format!("{}/validate", s.base))
            .send_body(fixture(name))
            .await
            .unwrap();
    }
    let decisions = decision_lines(&s, 1).await;
    assert_eq!(decisions.len(), 1, "{decisions:?}");
    let f = &decisions[0]["fields"];
    assert_eq!(f["uid"], "026b30ea-b7e4-48f4-b596-4026f9f35eac");
    assert_eq!(f["namespace"], "demo");
    assert_eq!(f["operation"], "CREATE");
    assert_eq!(f["allowed"], false);
    assert_eq!(f["verdict"], "denied");
    assert!(f["rules"].as_str().unwrap().contains("hard-anti-affinity"));
    assert!(f["micros"].as_u64().is_some());
    assert_eq!(decisions[0]["level"], "INFO");

    // RUST_LOG=debug shows every decision.
    let s = common::start_env(&["--log-format", "json"], &[("RUST_LOG", "debug")]);
    let c = client(&s.ca);
    let body = fixture("pod-update-labels-only-ungated.validate.json");
    c.post(format!("{}/validate", s.base))
        .send_body(body)
        .await
        .unwrap();
    let decisions = decision_lines(&s, 1).await;
    assert_eq!(decisions[0]["fields"]["verdict"], "allowed");
    assert_eq!(decisions[0]["level"], "DEBUG");
}

/// SIGTERM under load: readiness turns 503 at once while the server keeps answering for the
/// delay, busy keep-alive connections are closed only between requests, and every request sent
/// gets an answer.
#[actix_rt::test]
async fn sigterm_under_load_answers_every_request() {
    let mut s = start(&["--shutdown-delay", "2", "--shutdown-timeout", "10"]);
    let body = fixture("pod-create-denied.validate.json");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut clients = Vec::new();
    for _ in 0..8 {
        let (base, ca, body, stop) = (s.base.clone(), s.ca.clone(), body.clone(), stop.clone());
        clients.push(std::thread::spawn(move || {
            let (mut answered, mut failed, mut closed) = (0, Vec::new(), 0);
            let mut conn = RawConn::connect(&base, &ca).unwrap();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                match conn.post("/validate", &body) {
                    Ok((200, close)) => {
                        answered += 1;
                        if close {
                            closed += 1;
                            // The server asked to move off this connection. Like the apiserver
                            // behind a Service, go on only while the pod is a ready endpoint.
                            let ready = RawConn::connect(&base, &ca)
                                .and_then(|mut p| p.get("/readyz"))
                                .is_ok_and(|s| s == 200);
                            match RawConn::connect(&base, &ca) {
                                Ok(c) if ready => conn = c,
                                _ => break,
                            }
                        }
                    }
                    other => {
                        failed.push(format!("{other:?}"));
                        break;
                    }
                }
            }
            (answered, failed, closed)
        }));
    }
    actix_rt::time::sleep(Duration::from_millis(500)).await;
    std::process::Command::new("kill")
        .args(["-TERM", &s.child.id().to_string()])
        .status()
        .unwrap();
    // During the delay: still accepting, and not ready.
    let mut probe = RawConn::connect(&s.base, &s.ca).expect("still accepting during the delay");
    assert_eq!(probe.get("/readyz"), Ok(503));
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(st) = s.child.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "server did not exit");
        actix_rt::time::sleep(Duration::from_millis(100)).await;
    };
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(status.success(), "{status:?}");
    let (mut answered, mut closed) = (0, 0);
    for c in clients {
        let (a, failed, cl) = c.join().unwrap();
        assert!(failed.is_empty(), "unanswered requests: {failed:?}");
        answered += a;
        closed += cl;
    }
    assert!(answered >= 16, "only {answered} requests answered");
    assert!(
        closed >= 8,
        "every busy connection was closed between requests: {closed}"
    );
}

/// A body that trickles in is cut off after the request timeout, other methods get 405 with
/// `Allow`, and refused bodies are counted.
#[actix_rt::test]
async fn slow_bodies_wrong_methods_and_large_bodies() {
    let s = start(&["--request-timeout", "2"]);
    let mut conn = RawConn::connect(&s.base, &s.ca).unwrap();
    conn.write(b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\n");
    let started = Instant::now();
    let mut answer = None;
    for _ in 0..20 {
        // One byte every half second, for as long as the server takes it.
        if conn.write_some(b"{").is_err() {
            break;
        }
        if started.elapsed() > Duration::from_secs(3) {
            answer = Some(conn.read_response_closing());
            break;
        }
        actix_rt::time::sleep(Duration::from_millis(500)).await;
    }
    // Either a 408 or the connection closed; what matters is that it was not held.
    if let Some(Ok((status, _, _))) = answer {
        assert_eq!(status, 408);
    }
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "the trickling connection was held for {:?}",
        started.elapsed()
    );
    let c = client(&s.ca);
    let r = c.get(format!("{}/validate", s.base)).send().await.unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(r.headers().get("allow").unwrap(), "POST");
    let r = c.post(format!("{}/healthz", s.base)).send().await.unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(r.headers().get("allow").unwrap(), "GET, HEAD");
    let r = c
        .post(format!("{}/validate", s.base))
        .send_body(vec![b' '; 11 * 1024 * 1024])
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    let text = metrics_text(&s.base, &s.ca).await;
    for want in [
        r#"placement_guard_admission_requests_total{endpoint="validate",rule="none",verdict="too_large"} 1"#,
        r#"placement_guard_admission_requests_total{endpoint="validate",rule="none",verdict="timeout"} 1"#,
    ] {
        assert!(text.contains(want), "missing {want}\n{text}");
    }
}
