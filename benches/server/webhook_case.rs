//! The admission extensions case (`APIARY_BENCH_ONLY=webhooks`): ConfigMap creates through five
//! `apiary` processes in the same run, interleaved per concurrency level: one without
//! extensions; one with one validating webhook that matches every create (an allowing HTTPS
//! webhook served by this process on loopback, with its own CA); one with 100 validating
//! webhook configurations that match nothing the load does; one with one
//! ValidatingAdmissionPolicy (and binding) that checks every create; one with 100 policies
//! that match nothing. Targets (issue 12): one matching policy ≥ 0.8× the creates without,
//! one matching webhook ≥ 0.5×, 100 policies that do not match cost ≤ 5%.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::client::{Endpoint, Kubeconfig, Proto};
use crate::load::{Limit, Outcome};
use crate::process::{Process, start_apiary};
use crate::workload::{CONNECTIONS, http_creates, namespace, wait_ready};

/// Creates with one matching webhook must reach this fraction of creates without.
pub const MATCHING_TARGET: f64 = 0.5;

/// Creates with 100 webhooks or policies that do not match must reach this fraction.
pub const UNMATCHED_TARGET: f64 = 0.95;

/// Creates with one matching policy must reach this fraction.
pub const POLICY_TARGET: f64 = 0.8;

/// One concurrency level.
pub struct WebhookRow {
    /// Connections.
    pub connections: usize,
    /// Creates without webhooks.
    pub plain: Outcome,
    /// Creates with one matching validating webhook.
    pub matching: Outcome,
    /// Creates with 100 webhook configurations that do not match.
    pub unmatched: Outcome,
    /// Creates with one matching ValidatingAdmissionPolicy.
    pub policy: Outcome,
    /// Creates with 100 policies that do not match.
    pub unmatched_policies: Outcome,
}

/// Serves an allowing validating webhook on loopback; returns its URL and CA (PEM).
async fn serve_allowing_webhook() -> anyhow::Result<(String, String)> {
    let ca_key = rcgen::KeyPair::generate()?;
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let ca_pem = ca_cert.pem();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate()?;
    let cert =
        rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])?.signed_by(&key, &issuer)?;
    let certs = rustls_pemfile::certs(&mut cert.pem().as_bytes()).collect::<Result<Vec<_>, _>>()?;
    let key = rustls_pemfile::private_key(&mut key.serialize_pem().as_bytes())?
        .ok_or_else(|| anyhow::anyhow!("no key"))?;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_no_client_auth()
    .with_single_cert(certs, key)?;
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = service_fn(|req: hyper::Request<hyper::body::Incoming>| async move {
                    let body = req.into_body().collect().await.map(|b| b.to_bytes());
                    let review: serde_json::Value = body
                        .ok()
                        .and_then(|b| serde_json::from_slice(&b).ok())
                        .unwrap_or_default();
                    let uid = review["request"]["uid"].clone();
                    let answer = serde_json::json!({
                        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                        "response": {"uid": uid, "allowed": true}
                    });
                    Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(Bytes::from(
                        answer.to_string(),
                    ))))
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    Ok((format!("https://127.0.0.1:{port}/allow"), ca_pem))
}

/// A ValidatingWebhookConfiguration of one webhook on ConfigMap creates, or (unmatched) on
/// a resource the load never writes.
fn configuration(name: &str, url: &str, ca: &str, resource: &str) -> Bytes {
    Bytes::from(
        serde_json::json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [{
                "name": format!("{name}.bench.example.dev"),
                "clientConfig": {"url": url,
                                 "caBundle": base64::engine::general_purpose::STANDARD.encode(ca)},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                           "resources": [resource]}],
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "failurePolicy": "Fail",
            }]
        })
        .to_string(),
    )
}

/// A ValidatingAdmissionPolicy `name` checking creates of `resource`, and its binding.
fn policy(name: &str, resource: &str) -> [(&'static str, Bytes); 2] {
    let policy = serde_json::json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""],
                                                    "apiVersions": ["v1"], "resources": [resource]}]},
            "validations": [{"expression": "size(object.data) < 10", "message": "too many keys"}]
        }
    });
    let binding = serde_json::json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"]}
    });
    [
        (
            "validatingadmissionpolicies",
            Bytes::from(policy.to_string()),
        ),
        (
            "validatingadmissionpolicybindings",
            Bytes::from(binding.to_string()),
        ),
    ]
}

/// Starts one server, makes its `bench` namespace and the given admissionregistration
/// objects (`(resource, body)`).
async fn server(
    data_dir: &Path,
    objects: Vec<(&'static str, Bytes)>,
) -> anyhow::Result<(Process, Arc<Endpoint>)> {
    let (process, kubeconfig) = start_apiary(data_dir, &[])?;
    let creds = Kubeconfig::read(&kubeconfig)?;
    let ep = Endpoint::new(creds.addr()?, Proto::H1, &creds)?;
    wait_ready(&ep).await?;
    let mut conn = ep.connect().await?;
    let req = ep.request(Method::POST, "/api/v1/namespaces", namespace("bench"));
    conn.expect(req, StatusCode::CREATED).await?;
    for (resource, body) in objects {
        let path = format!("/apis/admissionregistration.k8s.io/v1/{resource}");
        let req = ep.request(Method::POST, &path, body);
        conn.expect(req, StatusCode::CREATED).await?;
    }
    Ok((process, ep))
}

/// Runs the webhook case in `tmp`.
pub async fn run(tmp: &Path, case: Duration) -> anyhow::Result<Vec<WebhookRow>> {
    let (url, ca) = serve_allowing_webhook().await?;
    let (plain, plain_ep) = server(&tmp.join("apiary-plain"), Vec::new()).await?;
    const WEBHOOKS: &str = "validatingwebhookconfigurations";
    let (matching, matching_ep) = server(
        &tmp.join("apiary-webhook"),
        vec![(WEBHOOKS, configuration("allow", &url, &ca, "configmaps"))],
    )
    .await?;
    let unmatched_configs = (0..100)
        .map(|i| {
            (
                WEBHOOKS,
                configuration(&format!("other-{i}"), &url, &ca, "secrets"),
            )
        })
        .collect();
    let (policy_server, policy_ep) = server(
        &tmp.join("apiary-policy"),
        policy("cm-keys", "configmaps").into(),
    )
    .await?;
    let unmatched_policies = (0..100)
        .flat_map(|i| policy(&format!("other-{i}"), "secrets"))
        .collect();
    let (policies_server, policies_ep) =
        server(&tmp.join("apiary-policies"), unmatched_policies).await?;
    let (unmatched, unmatched_ep) =
        server(&tmp.join("apiary-unmatched"), unmatched_configs).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut rows = Vec::new();
    for c in CONNECTIONS {
        eprintln!(
            "creates without webhooks, with one matching, with 100 unmatched at {c} connections"
        );
        let tag = format!("c{c}-");
        let plain_out =
            http_creates(plain.pid(), &plain_ep, "bench", &tag, c, Limit::time(case)).await?;
        let matching_out = http_creates(
            matching.pid(),
            &matching_ep,
            "bench",
            &tag,
            c,
            Limit::time(case),
        )
        .await?;
        let unmatched_out = http_creates(
            unmatched.pid(),
            &unmatched_ep,
            "bench",
            &tag,
            c,
            Limit::time(case),
        )
        .await?;
        let policy_out = http_creates(
            policy_server.pid(),
            &policy_ep,
            "bench",
            &tag,
            c,
            Limit::time(case),
        )
        .await?;
        let policies_out = http_creates(
            policies_server.pid(),
            &policies_ep,
            "bench",
            &tag,
            c,
            Limit::time(case),
        )
        .await?;
        rows.push(WebhookRow {
            connections: c,
            plain: plain_out,
            matching: matching_out,
            unmatched: unmatched_out,
            policy: policy_out,
            unmatched_policies: policies_out,
        });
    }
    for p in [plain, matching, unmatched, policy_server, policies_server] {
        p.terminate(Duration::from_secs(30))?;
    }
    Ok(rows)
}

/// Prints the table of the webhook case.
pub fn print(rows: &[WebhookRow]) {
    println!(
        "\n## Creates/s with admission extensions vs none: one matching validating webhook (loopback HTTPS), 100 unmatched webhook configurations, one matching ValidatingAdmissionPolicy, 100 unmatched policies (HTTPS, HTTP/1.1 keep-alive)\n"
    );
    println!(
        "| connections | none creates/s | CPU µs/op | 1 webhook creates/s | CPU µs/op | webhook / none | 100 unmatched webhooks / none | 1 policy creates/s | policy / none | 100 unmatched policies / none |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let verdict = |ratio: f64, target: f64| if ratio >= target { "met" } else { "MISSED" };
    for row in rows {
        let base = row.plain.rate().max(1e-9);
        let m = row.matching.rate() / base;
        let u = row.unmatched.rate() / base;
        let p = row.policy.rate() / base;
        let up = row.unmatched_policies.rate() / base;
        println!(
            "| {} | {:.0} | {:.0} | {:.0} | {:.0} | {m:.2}× (≥ {MATCHING_TARGET}×: {}) | {u:.2}× | {:.0} | {p:.2}× (≥ {POLICY_TARGET}×: {}) | {up:.2}× (≥ {UNMATCHED_TARGET}×: {}) |",
            row.connections,
            row.plain.rate(),
            row.plain.cpu_per_op(),
            row.matching.rate(),
            row.matching.cpu_per_op(),
            verdict(m, MATCHING_TARGET),
            row.policy.rate(),
            verdict(p, POLICY_TARGET),
            verdict(up, UNMATCHED_TARGET),
        );
    }
}
