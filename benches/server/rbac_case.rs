//! Authorization through RBAC (`APIARY_BENCH_ONLY=rbac`): GETs of one ConfigMap and ConfigMap
//! creates over HTTP/1.1 by a user whose only grant is one RoleBinding among 1,000 in its
//! namespace, against the same requests by the admin (`system:masters`, allowed before RBAC is
//! asked), interleaved per connection count on one server in one run.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use http::{Method, StatusCode};
use rcgen::{CertificateParams, DnType, Issuer, KeyPair};

use crate::client::{Endpoint, Kubeconfig, Proto};
use crate::load::{Limit, Outcome};
use crate::process::start_apiary;
use crate::workload::{CONNECTIONS, configmap, http_creates, http_gets, namespace, wait_ready};

/// The namespace of the bindings and the ConfigMaps.
const NS: &str = "rbac";
/// RoleBindings in the namespace (one of them the measured user's).
const BINDINGS: usize = 1_000;
/// The measured user (the certificate's CN).
const USER: &str = "bench-rbac-user";
/// The ConfigMap every GET reads.
const GET_PATH: &str = "/api/v1/namespaces/rbac/configmaps/target";

/// One connection count: the admin's and the RBAC user's GETs and creates.
pub struct RbacRow {
    /// Connections.
    pub connections: usize,
    /// GETs by `system:masters`.
    pub masters_gets: Outcome,
    /// GETs by the RBAC user.
    pub rbac_gets: Outcome,
    /// Creates by `system:masters`.
    pub masters_creates: Outcome,
    /// Creates by the RBAC user.
    pub rbac_creates: Outcome,
}

/// Credentials of `user` (a client certificate signed by the server's CA under `data_dir`) for
/// the server of `admin`.
pub(crate) fn user_credentials(
    data_dir: &Path,
    admin: &Kubeconfig,
    user: &str,
) -> anyhow::Result<Kubeconfig> {
    let pki = data_dir.join("pki");
    let ca_pem = std::fs::read_to_string(pki.join("ca.crt")).context("reading ca.crt")?;
    let ca_key = KeyPair::from_pem(&std::fs::read_to_string(pki.join("ca.key"))?)?;
    let issuer = Issuer::from_ca_cert_pem(&ca_pem, ca_key)?;
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name.push(DnType::CommonName, user);
    let cert = params.signed_by(&key, &issuer)?;
    Ok(Kubeconfig {
        server: admin.server.clone(),
        ca_pem: admin.ca_pem.clone(),
        cert_pem: cert.pem().into_bytes(),
        key_pem: key.serialize_pem().into_bytes(),
    })
}

fn role() -> Bytes {
    Bytes::from(format!(
        r#"{{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{{"name":"configmaps","namespace":"{NS}"}},"rules":[{{"apiGroups":[""],"resources":["configmaps"],"verbs":["get","create"]}}]}}"#
    ))
}

fn binding(name: &str, user: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{{"name":"{name}","namespace":"{NS}"}},"roleRef":{{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"configmaps"}},"subjects":[{{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"{user}"}}]}}"#
    ))
}

/// Runs the case on a fresh server in `tmp`.
pub async fn run(tmp: &Path, case: Duration) -> anyhow::Result<Vec<RbacRow>> {
    let data_dir = tmp.join("rbac");
    let (process, kubeconfig) = start_apiary(&data_dir, &[])?;
    let admin_creds = Kubeconfig::read(&kubeconfig)?;
    let admin = Endpoint::new(admin_creds.addr()?, Proto::H1, &admin_creds)?;
    wait_ready(&admin).await?;
    let user_creds = user_credentials(&data_dir, &admin_creds, USER)?;
    let user = Endpoint::new(user_creds.addr()?, Proto::H1, &user_creds)?;

    let mut conn = admin.connect().await?;
    let post = |path: &str, body: Bytes| admin.request(Method::POST, path, body);
    conn.expect(
        post("/api/v1/namespaces", namespace(NS)),
        StatusCode::CREATED,
    )
    .await?;
    let rbac = format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}");
    conn.expect(post(&format!("{rbac}/roles"), role()), StatusCode::CREATED)
        .await?;
    for n in 0..BINDINGS {
        // The measured user's binding sits in the middle of the others.
        let subject = if n == BINDINGS / 2 {
            USER.to_string()
        } else {
            format!("someone-{n}")
        };
        let req = post(
            &format!("{rbac}/rolebindings"),
            binding(&format!("b{n:04}"), &subject),
        );
        conn.expect(req, StatusCode::CREATED).await?;
    }
    let req = post(
        &format!("/api/v1/namespaces/{NS}/configmaps"),
        configmap(NS, "target"),
    );
    conn.expect(req, StatusCode::CREATED).await?;
    let body = conn
        .expect(
            admin.request(Method::GET, GET_PATH, Bytes::new()),
            StatusCode::OK,
        )
        .await?;

    // The binding reaches the authorizer through the watch cache.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut user_conn = user.connect().await?;
    loop {
        let req = user.request(Method::GET, GET_PATH, Bytes::new());
        if matches!(user_conn.send(req).await, Ok((StatusCode::OK, _))) {
            break;
        }
        if Instant::now() > deadline {
            bail!("the RBAC user was not authorized within 30s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let pid = process.pid();
    let limit = Limit::time(case);
    let mut rows = Vec::new();
    for conns in CONNECTIONS {
        let masters_gets = http_gets(pid, &admin, GET_PATH, &body, conns, limit).await?;
        let rbac_gets = http_gets(pid, &user, GET_PATH, &body, conns, limit).await?;
        let masters_creates =
            http_creates(pid, &admin, NS, &format!("m{conns}-"), conns, limit).await?;
        let rbac_creates =
            http_creates(pid, &user, NS, &format!("u{conns}-"), conns, limit).await?;
        rows.push(RbacRow {
            connections: conns,
            masters_gets,
            rbac_gets,
            masters_creates,
            rbac_creates,
        });
    }
    process.terminate(Duration::from_secs(30))?;
    Ok(rows)
}
