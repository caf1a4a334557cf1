//! Token authentication against x509 (`APIARY_BENCH_ONLY=tokens`): GETs of one ConfigMap and
//! ConfigMap creates over HTTP/1.1, on one server in one run, interleaved per connection count,
//! by pairs of users that differ only in how they authenticate:
//! - the admin's client certificate against a `--token-auth-file` token of a user in the same
//!   group (`system:masters`, so authorization is the same);
//! - a client certificate of a user bound to `cluster-admin` against a service-account token
//!   (TokenRequest) of an account bound to it the same way (both authorized by RBAC).

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use http::{Method, StatusCode};

use crate::client::{Endpoint, Kubeconfig, Proto};
use crate::load::{Limit, Outcome};
use crate::process::start_apiary;
use crate::rbac_case::user_credentials;
use crate::workload::{CONNECTIONS, configmap, http_creates, http_gets, namespace, wait_ready};

/// The namespace of the ConfigMaps and the service account.
const NS: &str = "tokens";
/// The ConfigMap every GET reads.
const GET_PATH: &str = "/api/v1/namespaces/tokens/configmaps/target";
/// The static token (of a `system:masters` user).
const STATIC_TOKEN: &str = "bench-static-token-0123456789abcdef";
/// The user of the client certificate bound to `cluster-admin`.
const X509_USER: &str = "bench-x509-user";
/// The service account bound to `cluster-admin`.
const ACCOUNT: &str = "bench";

/// One connection count: GETs and creates by each credential.
pub struct TokenRow {
    /// Connections.
    pub connections: usize,
    /// `(credential, GETs, creates)`, x509 first in each pair.
    pub results: Vec<(&'static str, Outcome, Outcome)>,
}

fn json(value: serde_json::Value) -> Bytes {
    Bytes::from(value.to_string())
}

/// Runs the case on a fresh server in `tmp`.
pub async fn run(tmp: &Path, case: Duration) -> anyhow::Result<Vec<TokenRow>> {
    let data_dir = tmp.join("tokens");
    std::fs::create_dir_all(&data_dir)?;
    let token_file = tmp.join("tokens.csv");
    std::fs::write(
        &token_file,
        format!("{STATIC_TOKEN},bench-token-admin,uid-1,\"system:masters\"\n"),
    )?;
    let args = [format!("--token-auth-file={}", token_file.display())];
    let (process, kubeconfig) = start_apiary(&data_dir, &args)?;
    let admin_creds = Kubeconfig::read(&kubeconfig)?;
    let addr = admin_creds.addr()?;
    let admin = Endpoint::new(addr, Proto::H1, &admin_creds)?;
    wait_ready(&admin).await?;

    let mut conn = admin.connect().await?;
    let post = |path: &str, body: Bytes| admin.request(Method::POST, path, body);
    conn.expect(
        post("/api/v1/namespaces", namespace(NS)),
        StatusCode::CREATED,
    )
    .await?;
    let account = json(serde_json::json!({
        "apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": ACCOUNT, "namespace": NS},
    }));
    conn.expect(
        post(&format!("/api/v1/namespaces/{NS}/serviceaccounts"), account),
        StatusCode::CREATED,
    )
    .await?;
    let binding = json(serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "bench-cluster-admins"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": X509_USER},
            {"kind": "ServiceAccount", "name": ACCOUNT, "namespace": NS},
        ],
    }));
    conn.expect(
        post(
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            binding,
        ),
        StatusCode::CREATED,
    )
    .await?;
    let request = json(serde_json::json!({
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {},
    }));
    let answer = conn
        .expect(
            post(
                &format!("/api/v1/namespaces/{NS}/serviceaccounts/{ACCOUNT}/token"),
                request,
            ),
            StatusCode::CREATED,
        )
        .await?;
    let answer: serde_json::Value = serde_json::from_slice(&answer)?;
    let sa_token = answer["status"]["token"]
        .as_str()
        .context("the TokenRequest answer has no token")?
        .to_string();
    conn.expect(
        post(
            &format!("/api/v1/namespaces/{NS}/configmaps"),
            configmap(NS, "target"),
        ),
        StatusCode::CREATED,
    )
    .await?;
    let body = conn
        .expect(
            admin.request(Method::GET, GET_PATH, Bytes::new()),
            StatusCode::OK,
        )
        .await?;

    let static_user = Endpoint::with_token(addr, Proto::H1, &admin_creds, STATIC_TOKEN)?;
    let x509_user = Endpoint::new(
        addr,
        Proto::H1,
        &user_credentials(&data_dir, &admin_creds, X509_USER)?,
    )?;
    let sa_user = Endpoint::with_token(addr, Proto::H1, &admin_creds, &sa_token)?;
    // The binding reaches the authorizer through the watch cache.
    for endpoint in [&static_user, &x509_user, &sa_user] {
        let mut c = endpoint.connect().await?;
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let req = endpoint.request(Method::GET, GET_PATH, Bytes::new());
            if matches!(c.send(req).await, Ok((StatusCode::OK, _))) {
                break;
            }
            anyhow::ensure!(
                std::time::Instant::now() < deadline,
                "a bench credential was not authorized within 30s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    let pid = process.pid();
    let limit = Limit::time(case);
    let mut rows = Vec::new();
    for conns in CONNECTIONS {
        let mut results = Vec::new();
        for (label, endpoint) in [
            ("x509, system:masters", &admin),
            ("static token, system:masters", &static_user),
            ("x509, RBAC cluster-admin", &x509_user),
            ("service-account token, RBAC cluster-admin", &sa_user),
        ] {
            let gets = http_gets(pid, endpoint, GET_PATH, &body, conns, limit).await?;
            let prefix = format!("{}-{conns}-", results.len());
            let creates = http_creates(pid, endpoint, NS, &prefix, conns, limit).await?;
            results.push((label, gets, creates));
        }
        rows.push(TokenRow {
            connections: conns,
            results,
        });
    }
    process.terminate(Duration::from_secs(30))?;
    Ok(rows)
}

/// Prints the table: each token credential's rates against the x509 credential of its pair.
pub fn print(rows: &[TokenRow]) {
    println!("\n## Token authentication vs x509 client certificates (HTTP/1.1)\n");
    println!(
        "| connections | credential | GET/s | GET CPU µs/op | creates/s | create CPU µs/op | GETs / x509 | creates / x509 |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|");
    for row in rows {
        for (i, (label, gets, creates)) in row.results.iter().enumerate() {
            let (base_gets, base_creates) = {
                let (_, g, c) = &row.results[i - i % 2];
                (g.rate(), c.rate())
            };
            println!(
                "| {} | {label} | {:.0} | {:.0} | {:.0} | {:.0} | {:.2}× | {:.2}× |",
                row.connections,
                gets.rate(),
                gets.cpu_per_op(),
                creates.rate(),
                creates.cpu_per_op(),
                gets.rate() / base_gets.max(1e-9),
                creates.rate() / base_creates.max(1e-9),
            );
        }
    }
}
