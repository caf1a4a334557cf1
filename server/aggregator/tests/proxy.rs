//! The proxy and the availability check against an aggregated server stand-in on loopback
//! (see `common`): the caller's identity goes as `X-Remote-*` headers over the front-proxy
//! client certificate, forged headers and `Authorization` stay behind, a watch streams event
//! by event, and a stopped server is unavailable (503, `FailedDiscoveryCheck`) until it
//! is back.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use aggregator::availability::AvailabilityReconciler;
use aggregator::proxy::ApiServiceProxy;
use aggregator::{ApiServiceEntry, ApiServiceTable, ClientIdentity, ProxyTransport, ServiceTarget};
use apimachinery::status::ApiError;
use apimachinery::user::UserInfo;
use apiregistration_api::apiregistration_k8s_io::API_SERVICE_KIND;
use apiregistration_api::apiregistration_k8s_io::v1::APIService;
use apiregistration_api::conditions;
use axum::body::Body;
use common::{Backend, TestCa};
use http::Request;
use http_body_util::BodyExt;
use server::controller::{ObjectKey, Reconciler};
use server::genericserver::director::Delegate;
use server::registry::{NoAdmission, Registry};
use server::webhook::ServiceResolver;

const GROUP: &str = "wardle.example.com";
const VERSION: &str = "v1alpha1";
const NAME: &str = "v1alpha1.wardle.example.com";

/// Resolves every Service to the backend's port on loopback.
struct Loopback(u16);

impl ServiceResolver for Loopback {
    fn resolve(&self, _: &str, _: &str, _: i32) -> Result<reqwest::Url, String> {
        reqwest::Url::parse(&format!("https://127.0.0.1:{}", self.0)).map_err(|e| e.to_string())
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    registry: Arc<Registry>,
    table: Arc<ApiServiceTable>,
    transport: Arc<ProxyTransport>,
    front_proxy: TestCa,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let backend = storage::embedded::EmbeddedBackend::open_dir(dir.path()).unwrap();
    let registry = Arc::new(Registry::new(Arc::new(backend), "/registry".to_string()));
    let front_proxy = TestCa::new("front-proxy-ca");
    let (cert, key) = front_proxy.leaf("front-proxy-client", &[]);
    let transport = Arc::new(ProxyTransport::new(Some(ClientIdentity {
        cert_pem: cert.into_bytes(),
        key_pem: key.into_bytes(),
    })));
    Fixture {
        _dir: dir,
        registry,
        table: Arc::default(),
        transport,
        front_proxy,
    }
}

fn entry(backend: &Backend, available: bool) -> ApiServiceEntry {
    ApiServiceEntry {
        name: NAME.into(),
        group: GROUP.into(),
        version: VERSION.into(),
        service: Some(ServiceTarget {
            namespace: "wardle".into(),
            name: "api".into(),
            port: 443,
            ca_bundle: backend.ca_pem.clone().into_bytes().into(),
            insecure_skip_tls_verify: false,
        }),
        group_priority_minimum: 2000,
        version_priority: 200,
        available,
        reason: String::new(),
        message: String::new(),
    }
}

fn alice() -> Arc<UserInfo> {
    Arc::new(UserInfo {
        name: "alice".into(),
        uid: String::new(),
        groups: vec!["devs".into(), "system:authenticated".into()],
        extra: BTreeMap::from([("example.com/scope".into(), vec!["read".into()])]),
    })
}

fn request(path: &str) -> Request<Body> {
    let mut req = Request::get(path)
        .header("x-remote-user", "mallory")
        .header("x-remote-group", "system:masters")
        .header("x-remote-extra-forged", "yes")
        .header("authorization", "Bearer secret")
        .header("audit-id", "audit-123")
        .body(Body::empty())
        .unwrap();
    req.extensions_mut().insert(alice());
    req
}

async fn status_of(resp: http::Response<Body>) -> (u16, serde_json::Value) {
    let code = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (
        code,
        serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
    )
}

#[tokio::test]
async fn the_proxy_sends_the_callers_identity_and_streams_a_watch() {
    let f = fixture();
    let backend = Backend::start(0, &f.front_proxy).await;
    f.registry
        .set_service_resolver(Arc::new(Loopback(backend.port)));
    f.table.set(entry(&backend, true));
    let proxy = ApiServiceProxy::new(f.table.clone(), f.transport.clone(), f.registry.clone());

    // Another group is handed back to the chain.
    let other = proxy.handle(request("/apis/apps/v1/deployments")).await;
    assert!(other.is_err());

    let path = format!("/apis/{GROUP}/{VERSION}/namespaces/a/flunders?limit=5");
    let resp = proxy
        .handle(request(&path))
        .await
        .unwrap_or_else(|_| panic!("not proxied"));
    let (code, body) = status_of(resp).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        body["path"],
        format!("/apis/{GROUP}/{VERSION}/namespaces/a/flunders?limit=5")
    );
    let seen = backend.last("/apis/").unwrap();
    assert_eq!(seen.get("x-remote-user").unwrap(), "alice");
    let groups: Vec<_> = seen.get_all("x-remote-group").iter().collect();
    assert_eq!(groups, ["devs", "system:authenticated"]);
    assert_eq!(
        seen.get("x-remote-extra-example.com%2Fscope").unwrap(),
        "read"
    );
    assert!(seen.get("x-remote-extra-forged").is_none());
    assert!(seen.get("authorization").is_none());
    assert_eq!(seen.get("audit-id").unwrap(), "audit-123");

    // A watch: the first event arrives while the second is still held back by the server.
    let watch = format!("/apis/{GROUP}/{VERSION}/namespaces/a/flunders?watch=true");
    let resp = proxy
        .handle(request(&watch))
        .await
        .unwrap_or_else(|_| panic!("not proxied"));
    assert_eq!(resp.status().as_u16(), 200);
    let mut body = resp.into_body();
    let first = tokio::time::timeout(Duration::from_secs(10), body.frame())
        .await
        .expect("the first event is streamed before the watch ends")
        .unwrap()
        .unwrap();
    assert_eq!(first.into_data().unwrap(), "{\"type\":\"ADDED\"}\n");
    backend.release.notify_one();
    let second = tokio::time::timeout(Duration::from_secs(10), body.frame())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(second.into_data().unwrap(), "{\"type\":\"MODIFIED\"}\n");
}

#[tokio::test]
async fn an_unavailable_or_unreachable_service_answers_503() {
    let f = fixture();
    let backend = Backend::start(0, &f.front_proxy).await;
    f.registry
        .set_service_resolver(Arc::new(Loopback(backend.port)));
    f.table.set(entry(&backend, false));
    let failed = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let record = failed.clone();
    let proxy = ApiServiceProxy::new(f.table.clone(), f.transport.clone(), f.registry.clone())
        .on_failure(Arc::new(move |name: &str| {
            record.lock().unwrap().push(name.into())
        }));
    let path = format!("/apis/{GROUP}/{VERSION}/flunders");
    let (code, status) = status_of(
        proxy
            .handle(request(&path))
            .await
            .unwrap_or_else(|_| panic!()),
    )
    .await;
    assert_eq!(code, 503);
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "ServiceUnavailable");
    assert_eq!(status["message"], "service unavailable");

    f.table.set(entry(&backend, true));
    backend.stop();
    let (code, status) = status_of(
        proxy
            .handle(request(&path))
            .await
            .unwrap_or_else(|_| panic!()),
    )
    .await;
    assert_eq!(code, 503, "{status}");
    assert_eq!(status["reason"], "ServiceUnavailable");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("error trying to reach service: ") && message.contains("Connect"),
        "{status}"
    );
    assert_eq!(*failed.lock().unwrap(), [NAME.to_string()]);
}

#[tokio::test]
async fn a_client_certificate_of_another_ca_is_refused_by_the_backend() {
    let f = fixture();
    let backend = Backend::start(0, &TestCa::new("another-ca")).await;
    f.registry
        .set_service_resolver(Arc::new(Loopback(backend.port)));
    f.table.set(entry(&backend, true));
    let proxy = ApiServiceProxy::new(f.table.clone(), f.transport.clone(), f.registry.clone());
    let path = format!("/apis/{GROUP}/{VERSION}/flunders");
    let (code, _) = status_of(
        proxy
            .handle(request(&path))
            .await
            .unwrap_or_else(|_| panic!()),
    )
    .await;
    assert_eq!(code, 503);
    assert!(backend.seen.lock().unwrap().is_empty());
}

fn api_service(service: bool, ca: &str) -> Box<APIService> {
    let mut value = serde_json::json!({
        "metadata": {"name": NAME},
        "spec": {"group": GROUP, "version": VERSION, "groupPriorityMinimum": 2000, "versionPriority": 200}
    });
    if service {
        value["spec"]["service"] = serde_json::json!({"namespace": "wardle", "name": "api"});
        value["spec"]["caBundle"] = serde_json::Value::from(base64(ca.as_bytes()));
    }
    Box::new(serde_json::from_value(value).unwrap())
}

fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

async fn condition(registry: &Registry) -> (String, String, String) {
    let store = registry.store(&API_SERVICE_KIND).unwrap();
    let object = store.get("", NAME, "").await.unwrap();
    let service = object.downcast_ref::<APIService>().unwrap();
    let c = conditions::condition(service, "Available").unwrap();
    (
        c.status.clone(),
        c.reason.clone().unwrap_or_default(),
        c.message.clone().unwrap_or_default(),
    )
}

#[tokio::test]
async fn availability_follows_the_discovery_check() -> Result<(), ApiError> {
    let f = fixture();
    let backend = Backend::start(0, &f.front_proxy).await;
    f.registry
        .set_service_resolver(Arc::new(Loopback(backend.port)));
    let store = f.registry.store(&API_SERVICE_KIND)?;
    store
        .create(api_service(true, &backend.ca_pem), &NoAdmission, false)
        .await?;
    let reconciler = AvailabilityReconciler::new(
        store.clone(),
        f.table.clone(),
        f.transport.clone(),
        f.registry.clone(),
        None,
    );
    let key = ObjectKey::cluster(NAME);
    reconciler.reconcile(&key).await?;
    assert_eq!(
        condition(&f.registry).await,
        ("True".into(), "Passed".into(), "all checks passed".into())
    );
    assert!(f.table.remote(GROUP, VERSION).unwrap().available);
    let checked = backend.last(&format!("/apis/{GROUP}/{VERSION}")).unwrap();
    assert_eq!(
        checked.get("x-remote-user").unwrap(),
        "system:kube-aggregator"
    );
    assert_eq!(checked.get("x-remote-group").unwrap(), "system:masters");

    let port = backend.stop();
    reconciler.reconcile(&key).await?;
    let (status, reason, message) = condition(&f.registry).await;
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "FailedDiscoveryCheck")
    );
    let url = format!("https://127.0.0.1:{port}/apis/{GROUP}/{VERSION}");
    assert!(
        message.starts_with(&format!(
            "failing or missing response from {url}: Get {url:?}: "
        )),
        "{message}"
    );
    assert!(!f.table.remote(GROUP, VERSION).unwrap().available);

    let back = Backend::start(port, &f.front_proxy).await;
    // The same CA is needed for the restarted server: give the APIService the new bundle.
    store
        .delete("", NAME, &NoAdmission, &Default::default())
        .await?;
    reconciler.reconcile(&key).await?;
    assert!(
        f.table.get(NAME).is_none(),
        "a deleted APIService leaves the table"
    );
    store
        .create(api_service(true, &back.ca_pem), &NoAdmission, false)
        .await?;
    reconciler.reconcile(&key).await?;
    assert_eq!(condition(&f.registry).await.1, "Passed");

    // A local APIService is available at once, reason Local.
    store
        .delete("", NAME, &NoAdmission, &Default::default())
        .await?;
    store
        .create(api_service(false, ""), &NoAdmission, false)
        .await?;
    reconciler.reconcile(&key).await?;
    assert_eq!(
        condition(&f.registry).await,
        (
            "True".into(),
            "Local".into(),
            "Local APIServices are always available".into()
        )
    );
    assert!(f.table.remote(GROUP, VERSION).is_none());
    assert!(f.table.get(NAME).is_some());
    Ok(())
}
