//! Aggregated API servers' serving certificates verified as kube-aggregator (Go's crypto/x509)
//! verifies them, against the real binary: one APIService per case, each reaching its own
//! stand-in through an `ExternalName` Service, verified for `<service>.<namespace>.svc`. A
//! self-signed `CA:TRUE` leaf given as its own `caBundle`, a leaf of a proper CA, and a bundle
//! whose right CA is not the first are accepted (Available, proxied); a leaf of another CA, an
//! expired leaf, and a leaf for another name are refused: `Available=False` with reason
//! `FailedDiscoveryCheck` and kube-aggregator's message carrying crypto/tls' words, and
//! proxied requests answer `503`.

mod common;

use std::time::{Duration, Instant};

use common::aggregated_server::{self, AggregatedServer, Identity};
use common::tls::TestCa;
use common::{Server, send_json};
use reqwest::Method;
use serde_json::Value;

const PATIENCE: Duration = Duration::from_secs(60);
const NAMESPACE: &str = "certs";
const VERSION: &str = "v1";

/// One case: its Service (and so the name verified), the certificate served, the bundle.
struct Case {
    service: &'static str,
    identity: Identity,
}

impl Case {
    fn group(&self) -> String {
        format!("{}.certs.example.com", self.service)
    }

    fn api_service(&self) -> String {
        format!("{VERSION}.{}", self.group())
    }

    /// The name the aggregator verifies.
    fn dns(&self) -> String {
        format!("{}.{NAMESPACE}.svc", self.service)
    }
}

fn cases() -> Vec<Case> {
    let dns = |service: &str| format!("{service}.{NAMESPACE}.svc");
    let mut cases = Vec::new();

    // (a) A self-signed serving certificate that is a CA, given as its own bundle.
    let (cert, key) = TestCa::self_signed_ca_leaf("selfsigned", &[&dns("selfsigned")]);
    cases.push(Case {
        service: "selfsigned",
        identity: Identity::from_pem(&cert, &cert, &key),
    });

    // (b) A leaf of a proper CA.
    let ca = TestCa::new("proper-ca");
    let (cert, key) = ca.leaf("proper", None, &[&dns("proper")]);
    cases.push(Case {
        service: "proper",
        identity: Identity::from_pem(&ca.pem, &cert, &key),
    });

    // (c) A leaf of a CA the bundle does not hold.
    let signer = TestCa::new("signer-ca");
    let other = TestCa::new("other-ca");
    let (cert, key) = signer.leaf("wrongca", None, &[&dns("wrongca")]);
    cases.push(Case {
        service: "wrongca",
        identity: Identity::from_pem(&other.pem, &cert, &key),
    });

    // (d) An expired leaf of the bundle's CA.
    let ca = TestCa::new("expiry-ca");
    let (cert, key) = ca.expired_leaf("expired", &[&dns("expired")]);
    cases.push(Case {
        service: "expired",
        identity: Identity::from_pem(&ca.pem, &cert, &key),
    });

    // (e) A leaf of the bundle's CA for another name.
    let ca = TestCa::new("names-ca");
    let (cert, key) = ca.leaf("mismatch", None, &[&dns("other")]);
    cases.push(Case {
        service: "mismatch",
        identity: Identity::from_pem(&ca.pem, &cert, &key),
    });

    // (f) A bundle of several CAs, the right one last.
    let right = TestCa::new("right-ca");
    let (cert, key) = right.leaf("bundle", None, &[&dns("bundle")]);
    let bundle = format!(
        "{}{}{}",
        TestCa::new("first-ca").pem,
        TestCa::new("second-ca").pem,
        right.pem
    );
    cases.push(Case {
        service: "bundle",
        identity: Identity::from_pem(&bundle, &cert, &key),
    });
    cases
}

/// Waits until the APIService's `Available` condition has `status`; returns its reason and
/// message.
async fn wait_available(server: &Server, name: &str, status: &str) -> (String, String) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let condition = aggregated_server::available(server, name).await;
        if let Some((s, reason, message)) = &condition
            && s == status
        {
            return (reason.clone(), message.clone());
        }
        assert!(
            Instant::now() < deadline,
            "{name}: not Available={status}: {condition:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn get(server: &Server, path: &str) -> (u16, Value) {
    let (code, body, _) = send_json(&server.admin(), Method::GET, server.url(path), None).await;
    (code, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serving_certificates_are_verified_as_kube_aggregator_verifies_them() {
    let server = Server::start(&[]);
    let front_proxy_ca = String::from_utf8_lossy(&server.pem("front-proxy-ca.crt")).into_owned();
    let cases = cases();
    let mut backends = Vec::new();
    for case in &cases {
        let backend = AggregatedServer::start(0, &case.identity, &front_proxy_ca).await;
        aggregated_server::register(
            &server,
            NAMESPACE,
            case.service,
            &case.group(),
            VERSION,
            backend.port,
            &case.identity.ca_pem,
        )
        .await;
        backends.push(backend);
    }

    for (case, backend) in cases.iter().zip(&backends) {
        let things = format!("/apis/{}/{VERSION}/namespaces/default/things", case.group());
        let discovery = format!(
            "https://localhost:{}/apis/{}/{VERSION}",
            backend.port,
            case.group()
        );
        let refused = |why: &str| {
            format!(
                "failing or missing response from {discovery}: Get {discovery:?}: tls: failed to \
                 verify certificate: x509: {why}"
            )
        };
        match case.service {
            "selfsigned" | "proper" | "bundle" => {
                let (reason, message) = wait_available(&server, &case.api_service(), "True").await;
                assert_eq!(
                    (reason.as_str(), message.as_str()),
                    ("Passed", "all checks passed"),
                    "{}",
                    case.service
                );
                let (code, body) = get(&server, &things).await;
                assert_eq!(code, 200, "{}: {body}", case.service);
                assert_eq!(body["path"], things, "{}", case.service);
            }
            "wrongca" | "expired" | "mismatch" => {
                let (reason, message) = wait_available(&server, &case.api_service(), "False").await;
                assert_eq!(
                    reason, "FailedDiscoveryCheck",
                    "{}: {message}",
                    case.service
                );
                match case.service {
                    "wrongca" => {
                        assert_eq!(message, refused("certificate signed by unknown authority"))
                    }
                    "mismatch" => assert_eq!(
                        message,
                        refused(&format!(
                            "certificate is valid for other.{NAMESPACE}.svc, not {}",
                            case.dns()
                        ))
                    ),
                    _ => {
                        let prefix =
                            refused("certificate has expired or is not yet valid: current time ");
                        assert!(message.starts_with(&prefix), "{message}");
                        assert!(
                            message.ends_with(" is after 2021-01-01T00:00:00Z"),
                            "{message}"
                        );
                    }
                }
                let (code, body) = get(&server, &things).await;
                assert_eq!(code, 503, "{}: {body}", case.service);
                assert_eq!(body["kind"], "Status", "{body}");
                assert_eq!(body["message"], "service unavailable", "{body}");
                assert!(
                    backend.last("/apis/").is_none(),
                    "{}: no request may reach a server whose certificate is refused",
                    case.service
                );
            }
            other => panic!("no expectation for {other}"),
        }
    }
}
