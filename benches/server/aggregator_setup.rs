//! The aggregation the aggregator case measures, set up as `tests/aggregator_wardle.rs` sets it
//! up (kube's aggregator e2e scenario): the release `apiary` binary in front, the wardle example
//! (`examples/wardle`, built in release the way its users build it) as an aggregated API server
//! behind it with only the delegation flags and a serving certificate for its Service's name,
//! registered by an ExternalName Service and two APIServices whose `caBundle` is wardle's CA,
//! and main's RBAC objects that let wardle delegate (kube's roles for aggregated servers) and
//! let the user `jane` use flunders. Also the standalone wardle (its own Kubernetes groups and
//! RBAC, no delegation) the delegated authorization is compared against.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use base64::Engine;
use bytes::Bytes;
use http::{Method, StatusCode};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

use crate::client::{Conn, Endpoint, Kubeconfig, Proto};
use crate::crates;
use crate::process::{Process, apiary_bin, server_args, start_apiary_bin};
use crate::rbac_case::user_credentials;
use crate::workload::wait_ready;

/// The user whose flunder requests RBAC allows (main's for the delegated authorization, the
/// standalone wardle's own for the local one).
pub const USER: &str = "jane";
/// The identity wardle authenticates to main with (kube's `wardle-apiserver`).
const WARDLE_USER: &str = "wardle-apiserver";
/// The namespace of the flunders.
pub const NS: &str = "default";
/// The flunder collection of the preferred version.
pub const FLUNDERS: &str = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders";
/// How long the aggregation may take to become available.
const PATIENCE: Duration = Duration::from_secs(120);

/// The JSON of a flunder named `name` (a label, and a spec naming a Fischer, as the e2e test's).
pub fn flunder(name: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"apiVersion":"wardle.example.com/v1alpha1","kind":"Flunder","metadata":{{"name":"{name}","namespace":"{NS}","labels":{{"app":"bench"}}}},"spec":{{"reference":"fischer-1","referenceType":"Fischer"}}}}"#
    ))
}

fn json(value: serde_json::Value) -> Bytes {
    Bytes::from(value.to_string())
}

/// The RBAC objects of the e2e test in main: wardle may delegate; `jane` may do anything to
/// flunders and fischers.
fn main_rbac() -> Vec<(&'static str, Bytes)> {
    let user = |name: &str| serde_json::json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name}]);
    let role_ref = |kind: &str, name: &str| serde_json::json!({"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name});
    let mut objects = vec![
        (
            "/api/v1/namespaces",
            json(
                serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "wardle-system"}}),
            ),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            json(serde_json::json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "wardle:system:auth-delegator"},
                "roleRef": role_ref("ClusterRole", "system:auth-delegator"),
                "subjects": user(WARDLE_USER),
            })),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings",
            json(serde_json::json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "wardle-auth-reader", "namespace": "kube-system"},
                "roleRef": role_ref("Role", "extension-apiserver-authentication-reader"),
                "subjects": user(WARDLE_USER),
            })),
        ),
    ];
    objects.extend(wardler_rbac());
    objects
}

/// The ClusterRole of flunders and fischers and `jane`'s binding to it.
fn wardler_rbac() -> Vec<(&'static str, Bytes)> {
    vec![
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            json(serde_json::json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "wardler"},
                "rules": [{"apiGroups": ["wardle.example.com"], "resources": ["flunders", "fischers"], "verbs": ["*"]}],
            })),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            json(serde_json::json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "jane-wardler"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "wardler"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}],
            })),
        ),
    ]
}

/// The ExternalName Service wardle is reached by: `localhost` at wardle's port.
fn service(port: u16) -> Bytes {
    json(serde_json::json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "api", "namespace": "wardle-system"},
        "spec": {"type": "ExternalName", "externalName": "localhost", "ports": [{"name": "https", "port": port}]},
    }))
}

/// An APIService of wardle's group, as the e2e test registers them.
fn api_service(version: &str, version_priority: u32, ca_bundle: &str, port: u16) -> Bytes {
    json(serde_json::json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": format!("{version}.wardle.example.com")},
        "spec": {
            "group": "wardle.example.com", "version": version,
            "groupPriorityMinimum": 2000, "versionPriority": version_priority,
            "caBundle": ca_bundle,
            "service": {"namespace": "wardle-system", "name": "api", "port": port},
        },
    }))
}

/// POSTs each `(collection, object)` on `conn`, every one answered `201 Created`.
pub async fn create_all(
    conn: &mut Conn,
    ep: &Endpoint,
    objects: Vec<(&str, Bytes)>,
) -> anyhow::Result<()> {
    for (path, body) in objects {
        conn.expect(ep.request(Method::POST, path, body), StatusCode::CREATED)
            .await?;
    }
    Ok(())
}

/// The release `wardle-apiserver`: `APIARY_BENCH_WARDLE_BIN`, or `examples/wardle` built with
/// `cargo build --release` into the shared target directory of the crates outside the
/// workspace (`tests/common/crates.rs`), as its users build it.
pub fn wardle_binary() -> anyhow::Result<PathBuf> {
    if let Some(bin) = std::env::var_os("APIARY_BENCH_WARDLE_BIN") {
        return Ok(PathBuf::from(bin));
    }
    let dir = crates::repo_root().join("examples/wardle");
    eprintln!(
        "aggregator case: cargo build --release in {}",
        dir.display()
    );
    let out = {
        let _lock = crates::lock();
        crates::cargo(&dir, &["build", "--release"])
    };
    if !out.status.success() {
        bail!(
            "cargo build --release in {} failed:\n{}",
            dir.display(),
            crates::stderr(&out)
        );
    }
    Ok(crates::target_dir()
        .join("release")
        .join("wardle-apiserver"))
}

/// How main's `apiary` runs: as it is, or under callgrind with instrumentation off until the
/// bench turns it on (`valgrind --tool=callgrind --instr-atstart=no --separate-threads=yes`,
/// as `tools/callgrind-requests` runs it), its output files `<dir>/cg.out*`.
pub enum MainRun {
    /// The binary itself.
    Native,
    /// Under callgrind, writing into the directory.
    Callgrind(PathBuf),
}

/// Main, wardle behind it, and how to reach both.
pub struct Aggregation {
    /// Main's `apiary` process.
    pub main: Process,
    /// Main's data directory.
    pub main_dir: PathBuf,
    /// Main's admin credentials.
    pub main_creds: Kubeconfig,
    /// Main's admin (`system:masters`) over HTTP/1.1.
    pub main_admin: Arc<Endpoint>,
    /// wardle's process.
    pub wardle: Process,
    /// wardle's own admin credentials (its generated CA's `system:masters` certificate; the
    /// CA of the serving certificate as the trusted CA).
    pub wardle_creds: Kubeconfig,
    /// wardle's admin over HTTP/1.1, straight to wardle.
    pub wardle_admin: Arc<Endpoint>,
}

/// A CA for wardle's serving certificate and the certificate (PEM: the chain ending with the CA,
/// and the key) for `api.wardle-system.svc`, `localhost` and `127.0.0.1`.
fn wardle_serving() -> anyhow::Result<(String, String, String)> {
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "wardle-ca");
    let ca_pem = ca.self_signed(&ca_key)?.pem();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate()?;
    let mut leaf = CertificateParams::new(vec![
        "api.wardle-system.svc".to_string(),
        "localhost".to_string(),
        "127.0.0.1".to_string(),
    ])?;
    leaf.distinguished_name
        .push(DnType::CommonName, "api.wardle-system.svc");
    let cert = leaf.signed_by(&key, &issuer)?;
    Ok((
        ca_pem.clone(),
        format!("{}{ca_pem}", cert.pem()),
        key.serialize_pem(),
    ))
}

/// Starts main (`how`), registers wardle behind it as the e2e test does and waits until
/// flunders are served through the aggregator.
pub async fn start(tmp: &Path, wardle_bin: &Path, how: &MainRun) -> anyhow::Result<Aggregation> {
    let main_dir = tmp.join("aggregator-main");
    let main = match how {
        MainRun::Native => start_apiary_bin(&apiary_bin(), &main_dir, &[])?.0,
        MainRun::Callgrind(out) => {
            std::fs::create_dir_all(out)?;
            let mut cmd = Command::new("valgrind");
            cmd.args([
                "--tool=callgrind",
                "--instr-atstart=no",
                "--separate-threads=yes",
            ])
            .arg(format!(
                "--callgrind-out-file={}",
                out.join("cg.out").display()
            ))
            .arg(apiary_bin())
            .args(server_args(&main_dir, &[]))
            .env("RUST_LOG", "warn");
            Process::spawn(cmd, Duration::from_secs(600))?
        }
    };
    let main_creds = Kubeconfig::read(&main_dir.join("admin.kubeconfig"))?;
    let main_admin = Endpoint::new(main_creds.addr()?, Proto::H1, &main_creds)?;
    wait_ready(&main_admin).await?;
    eprintln!("aggregator case: main apiary pid {}", main.pid());
    let mut conn = main_admin.connect().await?;
    create_all(&mut conn, &main_admin, main_rbac()).await?;

    // wardle: its identity in main, a serving certificate for its Service's DNS name.
    let wardle_dir = tmp.join("aggregator-wardle");
    std::fs::create_dir_all(&wardle_dir)?;
    let (ca_pem, chain, key) = wardle_serving()?;
    let (cert_path, key_path) = (wardle_dir.join("tls.crt"), wardle_dir.join("tls.key"));
    std::fs::write(&cert_path, chain)?;
    std::fs::write(&key_path, key)?;
    let identity = user_credentials(&main_dir, &main_creds, WARDLE_USER)?;
    let kubeconfig = wardle_dir.join("main.kubeconfig");
    std::fs::write(
        &kubeconfig,
        server::pki::kubeconfig(
            &identity.server,
            &String::from_utf8_lossy(&identity.ca_pem),
            &String::from_utf8_lossy(&identity.cert_pem),
            &String::from_utf8_lossy(&identity.key_pem),
        ),
    )?;
    let data = wardle_dir.join("data");
    let args = [
        format!("--authentication-kubeconfig={}", kubeconfig.display()),
        format!("--authorization-kubeconfig={}", kubeconfig.display()),
        format!("--tls-cert-file={}", cert_path.display()),
        format!("--tls-private-key-file={}", key_path.display()),
    ];
    let (wardle, wardle_kubeconfig) = start_apiary_bin(wardle_bin, &data, &args)?;
    let wardle_creds = Kubeconfig::read(&wardle_kubeconfig)?;
    let wardle_admin = Endpoint::new(wardle_creds.addr()?, Proto::H1, &wardle_creds)?;
    wait_ready(&wardle_admin).await?;
    eprintln!("aggregator case: wardle pid {}", wardle.pid());

    // The Service and the APIServices, as the e2e test registers them.
    let port = wardle_creds.addr()?.port();
    let bundle = base64::engine::general_purpose::STANDARD.encode(ca_pem.as_bytes());
    create_all(
        &mut conn,
        &main_admin,
        vec![
            ("/api/v1/namespaces/wardle-system/services", service(port)),
            (
                "/apis/apiregistration.k8s.io/v1/apiservices",
                api_service("v1alpha1", 200, &bundle, port),
            ),
            (
                "/apis/apiregistration.k8s.io/v1/apiservices",
                api_service("v1beta1", 100, &bundle, port),
            ),
        ],
    )
    .await?;
    let deadline = Instant::now() + PATIENCE;
    loop {
        let req = main_admin.request(Method::GET, FLUNDERS, Bytes::new());
        let answer = conn.send(req).await;
        if matches!(answer, Ok((StatusCode::OK, _))) {
            break;
        }
        if Instant::now() > deadline {
            match answer {
                Ok((status, body)) => bail!(
                    "flunders through the aggregator: {status} {}",
                    String::from_utf8_lossy(&body)
                ),
                Err(e) => return Err(e.context("flunders through the aggregator")),
            }
        }
        if answer.is_err() {
            conn = main_admin.connect().await?;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(Aggregation {
        main,
        main_dir,
        main_creds,
        main_admin,
        wardle,
        wardle_creds,
        wardle_admin,
    })
}

/// The standalone wardle (no delegation flags: its own Kubernetes groups, RBAC as its
/// `--authorization-mode`), with `jane` bound to the flunder ClusterRole in its own RBAC; its
/// process, admin endpoint and `jane`'s endpoint (a client certificate of its own CA).
pub async fn start_standalone(
    tmp: &Path,
    wardle_bin: &Path,
) -> anyhow::Result<(Process, Arc<Endpoint>, Arc<Endpoint>)> {
    let dir = tmp.join("standalone-wardle");
    let (wardle, kubeconfig) = start_apiary_bin(wardle_bin, &dir, &[])?;
    let creds = Kubeconfig::read(&kubeconfig)?;
    let admin = Endpoint::new(creds.addr()?, Proto::H1, &creds)?;
    wait_ready(&admin).await?;
    eprintln!("aggregator case: standalone wardle pid {}", wardle.pid());
    let mut conn = admin.connect().await?;
    create_all(&mut conn, &admin, wardler_rbac()).await?;
    let jane = Endpoint::new(
        creds.addr()?,
        Proto::H1,
        &user_credentials(&dir, &creds, USER)?,
    )?;
    Ok((wardle, admin, jane))
}

/// Waits until `ep` may GET `path` (a binding reaches RBAC through the watch cache; a delegated
/// denial is cached for ten seconds).
pub async fn wait_allowed(ep: &Endpoint, path: &str) -> anyhow::Result<()> {
    let mut conn = ep.connect().await?;
    let deadline = Instant::now() + PATIENCE;
    loop {
        let req = ep.request(Method::GET, path, Bytes::new());
        if matches!(conn.send(req).await, Ok((StatusCode::OK, _))) {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("GET {path} was not allowed within {PATIENCE:?}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// `jane`'s credentials for wardle behind `aggregation`: a client certificate of main's CA
/// (which wardle trusts through the ConfigMap it read), wardle's address and CA.
pub fn jane_at_wardle(aggregation: &Aggregation) -> anyhow::Result<Arc<Endpoint>> {
    let creds = user_credentials(&aggregation.main_dir, &aggregation.wardle_creds, USER)
        .context("jane's certificate")?;
    Endpoint::new(creds.addr()?, Proto::H1, &creds)
}
