//! TLS, client-certificate authentication and the built-in authorization of the filter chain,
//! against the real binary.

mod common;

use common::Server;
use rcgen::{CertificateParams, DnType, Issuer, KeyPair};
use serde_json::Value;

fn user_cert(server: &Server, cn: &str, org: &str) -> (String, String) {
    let dir = server.data_dir.join("pki");
    let ca_pem = std::fs::read_to_string(dir.join("ca.crt")).unwrap_or_default();
    let ca_key =
        KeyPair::from_pem(&std::fs::read_to_string(dir.join("ca.key")).unwrap_or_default())
            .unwrap_or_else(|e| panic!("ca key: {e}"));
    let issuer =
        Issuer::from_ca_cert_pem(&ca_pem, ca_key).unwrap_or_else(|e| panic!("issuer: {e}"));
    signed(cn, org, &issuer)
}

fn signed(cn: &str, org: &str, issuer: &Issuer<'_, KeyPair>) -> (String, String) {
    let key = KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap_or_else(|e| panic!("{e}"));
    params.distinguished_name.push(DnType::CommonName, cn);
    params
        .distinguished_name
        .push(DnType::OrganizationName, org);
    let cert = params
        .signed_by(&key, issuer)
        .unwrap_or_else(|e| panic!("{e}"));
    (cert.pem(), key.serialize_pem())
}

async fn status_of(resp: reqwest::Response) -> (u16, Value) {
    let code = resp.status().as_u16();
    let body = resp.json::<Value>().await.unwrap_or(Value::Null);
    (code, body)
}

#[tokio::test]
async fn anonymous_may_read_health_and_version_only() {
    let server = Server::start(&[]);
    let anon = server.anonymous();
    // The bootstrap `system:public-info-viewer` binding: exactly these paths, not the
    // individual checks (`system:monitoring`'s `/readyz/*`).
    for path in ["/healthz", "/livez", "/readyz", "/version", "/version/"] {
        let resp = anon
            .get(server.url(path))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(resp.status().as_u16(), 200, "{path}");
    }
    for path in ["/readyz/ping", "/livez/etcd"] {
        let resp = anon
            .get(server.url(path))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(resp.status().as_u16(), 403, "{path}");
    }
    let (code, body) = status_of(
        anon.get(server.url("/api"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(
        body["message"],
        "forbidden: User \"system:anonymous\" cannot get path \"/api\""
    );

    let (code, body) = status_of(
        anon.get(server.url("/api/v1/namespaces/default/configmaps"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        "configmaps is forbidden: User \"system:anonymous\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
    assert_eq!(body["details"]["kind"], "configmaps");
}

#[tokio::test]
async fn admin_certificate_is_system_masters() {
    let server = Server::start(&[]);
    let resp = server
        .admin()
        .get(server.url("/api"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 200);
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    assert_eq!(body["kind"], "APIVersions");
}

#[tokio::test]
async fn other_users_get_403_with_kubernetes_message() {
    let server = Server::start(&[]);
    let (cert, key) = user_cert(&server, "jane", "developers");
    let client = server.with_identity(&cert, &key);
    let (code, body) = status_of(
        client
            .get(server.url("/apis/example.dev/v1/namespaces/team/widgets/w1"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        "widgets.example.dev \"w1\" is forbidden: User \"jane\" cannot get resource \"widgets\" in API group \"example.dev\" in the namespace \"team\""
    );
    assert_eq!(
        body["details"],
        serde_json::json!({"name": "w1", "group": "example.dev", "kind": "widgets"})
    );
    let resp = client
        .get(server.url("/version"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 200);
}

/// Certificates that do not verify against the client CA are failed x509 credentials: 401
/// `Unauthorized`, as kube-apiserver answers, not a failed TLS handshake.
#[tokio::test]
async fn certificates_from_another_ca_or_expired_get_401() {
    let server = Server::start(&[]);
    let other_key = KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap_or_else(|e| panic!("{e}"));
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let other_ca = Issuer::new(params, other_key);
    let foreign = signed("admin", "system:masters", &other_ca);

    let dir = server.data_dir.join("pki");
    let ca_pem = std::fs::read_to_string(dir.join("ca.crt")).unwrap_or_default();
    let ca_key =
        KeyPair::from_pem(&std::fs::read_to_string(dir.join("ca.key")).unwrap_or_default())
            .unwrap_or_else(|e| panic!("ca key: {e}"));
    let our_ca =
        Issuer::from_ca_cert_pem(&ca_pem, ca_key).unwrap_or_else(|e| panic!("issuer: {e}"));
    let key = KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap_or_else(|e| panic!("{e}"));
    params.distinguished_name.push(DnType::CommonName, "admin");
    params
        .distinguished_name
        .push(DnType::OrganizationName, "system:masters");
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    let expired = params
        .signed_by(&key, &our_ca)
        .unwrap_or_else(|e| panic!("{e}"));
    let expired = (expired.pem(), key.serialize_pem());

    for (what, (cert, key)) in [("another CA's", foreign), ("an expired", expired)] {
        let client = server.with_identity(&cert, &key);
        for path in ["/api", "/version"] {
            let (code, body) = status_of(
                client
                    .get(server.url(path))
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("{what} certificate, {path}: {e}")),
            )
            .await;
            assert_eq!(code, 401, "{what} certificate, {path}: {body}");
            assert_eq!(body["kind"], "Status");
            assert_eq!(body["reason"], "Unauthorized");
            assert_eq!(body["message"], "Unauthorized");
        }
    }
}

#[tokio::test]
async fn anonymous_auth_disabled_gives_401() {
    let server = Server::start(&["--anonymous-auth=false"]);
    let (code, body) = status_of(
        server
            .anonymous()
            .get(server.url("/api"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .await;
    assert_eq!(code, 401);
    assert_eq!(body["reason"], "Unauthorized");
    assert_eq!(body["message"], "Unauthorized");
}

#[tokio::test]
async fn version_is_semver_with_build_facts() {
    let server = Server::start(&[]);
    let v: Value = server
        .anonymous()
        .get(server.url("/version"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .json()
        .await
        .unwrap_or(Value::Null);
    assert_eq!(v["major"], "1");
    assert_eq!(v["minor"], "33");
    let git_version = v["gitVersion"].as_str().unwrap_or("");
    assert!(git_version.starts_with("v1.33.0-apiary."), "{git_version}");
    assert_eq!(
        v["platform"],
        format!(
            "linux/{}",
            if cfg!(target_arch = "x86_64") {
                "amd64"
            } else {
                "arm64"
            }
        )
    );
    assert_eq!(v["compiler"], "rustc");
    assert!(v["goVersion"].as_str().unwrap_or("").starts_with("rustc"));
}

#[test]
fn user_serving_certificate_is_trusted_by_the_written_kubeconfig() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let ca_key = KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
    let mut ca_params =
        CertificateParams::new(Vec::<String>::new()).unwrap_or_else(|e| panic!("{e}"));
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "operator-ca");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_cert = ca_params
        .self_signed(&ca_key)
        .unwrap_or_else(|e| panic!("{e}"));
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
    let mut params =
        CertificateParams::new(vec!["localhost".to_string()]).unwrap_or_else(|e| panic!("{e}"));
    params
        .subject_alt_names
        .push(rcgen::SanType::IpAddress([127, 0, 0, 1].into()));
    let cert = params
        .signed_by(&key, &issuer)
        .unwrap_or_else(|e| panic!("{e}"));
    let (cert_file, key_file) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::write(&cert_file, format!("{}{}", cert.pem(), ca_cert.pem()))
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&key_file, key.serialize_pem()).unwrap_or_else(|e| panic!("{e}"));

    let cert_arg = format!("--tls-cert-file={}", cert_file.display());
    let key_arg = format!("--tls-private-key-file={}", key_file.display());
    let server = Server::start_in(&dir.path().join("data"), &[&cert_arg, &key_arg]);
    assert!(
        !server.data_dir.join("pki/apiserver.crt").exists(),
        "no serving certificate is generated"
    );
    let kubectl = common::kubectls().remove(0);
    let out = server.kubectl(&kubectl, &["get", "--raw", "/version"]);
    assert!(
        out.status.success(),
        "kubectl failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
