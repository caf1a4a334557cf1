//! Tests of the fetcher against a plain-HTTP server on loopback that plays a remote API server.

use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap as AxumHeaders, Request, Response as AxumResponse};
use axum::routing::get;

use super::*;

#[derive(Default)]
struct Counters {
    apis: AtomicUsize,
    not_modified: AtomicUsize,
    v3_documents: AtomicUsize,
}

struct Remote {
    aggregated: bool,
    counters: Counters,
    /// Each request's path and `X-Remote-User`.
    users: std::sync::Mutex<Vec<(String, String)>>,
}

fn response(
    status: u16,
    content_type: &str,
    etag: Option<&str>,
    body: Vec<u8>,
) -> AxumResponse<Body> {
    let mut r = AxumResponse::builder()
        .status(status)
        .header("content-type", content_type);
    if let Some(etag) = etag {
        r = r.header("etag", etag);
    }
    r.body(Body::from(body)).unwrap()
}

fn conditional(headers: &AxumHeaders, etag: &str) -> bool {
    headers.get("if-none-match").and_then(|v| v.to_str().ok()) == Some(etag)
}

async fn apis(State(remote): State<Arc<Remote>>, headers: AxumHeaders) -> AxumResponse<Body> {
    remote.counters.apis.fetch_add(1, Ordering::SeqCst);
    if !remote.aggregated {
        return response(
            200,
            "application/json",
            None,
            br#"{"kind":"APIGroupList","groups":[]}"#.to_vec(),
        );
    }
    if conditional(&headers, "\"d1\"") {
        remote.counters.not_modified.fetch_add(1, Ordering::SeqCst);
        return response(304, AGGREGATED_V2, Some("\"d1\""), Vec::new());
    }
    let list = json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "items": [
        {"metadata": {"name": "wardle.example.com"}, "versions": [
            {"version": "v1alpha1", "resources": [{"resource": "flunders", "scope": "Namespaced",
                "singularResource": "flunder", "verbs": ["get"]}], "freshness": "Current"}]}]});
    response(
        200,
        AGGREGATED_V2,
        Some("\"d1\""),
        serde_json::to_vec(&list).unwrap(),
    )
}

async fn legacy_version() -> AxumResponse<Body> {
    let list = json!({"kind": "APIResourceList", "groupVersion": "wardle.example.com/v1alpha1", "resources": [
        {"name": "flunders", "singularName": "flunder", "namespaced": true, "kind": "Flunder",
            "verbs": ["get", "list"], "shortNames": ["fl"]},
        {"name": "flunders/status", "singularName": "", "namespaced": true, "kind": "Flunder",
            "verbs": ["get", "patch"]},
        {"name": "fischers/status", "singularName": "", "namespaced": false, "kind": "",
            "verbs": ["get"]}]});
    response(
        200,
        "application/json",
        None,
        serde_json::to_vec(&list).unwrap(),
    )
}

async fn openapi_v2(State(remote): State<Arc<Remote>>, headers: AxumHeaders) -> AxumResponse<Body> {
    if conditional(&headers, "\"o1\"") {
        remote.counters.not_modified.fetch_add(1, Ordering::SeqCst);
        return response(304, "application/json", Some("\"o1\""), Vec::new());
    }
    response(
        200,
        "application/json",
        Some("\"o1\""),
        br#"{"swagger":"2.0","paths":{}}"#.to_vec(),
    )
}

async fn openapi_v3_index() -> AxumResponse<Body> {
    let index = json!({"paths": {"apis/wardle.example.com/v1alpha1":
        {"serverRelativeURL": "/openapi/v3/apis/wardle.example.com/v1alpha1?hash=ABC"}}});
    response(
        200,
        "application/json",
        None,
        serde_json::to_vec(&index).unwrap(),
    )
}

async fn openapi_v3_doc(
    State(remote): State<Arc<Remote>>,
    req: Request<Body>,
) -> AxumResponse<Body> {
    assert_eq!(req.uri().query(), Some("hash=ABC"));
    remote.counters.v3_documents.fetch_add(1, Ordering::SeqCst);
    response(
        200,
        "application/json",
        None,
        br#"{"openapi":"3.0.0"}"#.to_vec(),
    )
}

async fn unavailable() -> AxumResponse<Body> {
    response(503, "text/plain", None, b"service unavailable".to_vec())
}

async fn huge() -> AxumResponse<Body> {
    response(200, "application/json", None, vec![b' '; 4096])
}

async fn slow() -> AxumResponse<Body> {
    tokio::time::sleep(Duration::from_secs(5)).await;
    response(200, "application/json", None, b"{}".to_vec())
}

async fn start(aggregated: bool) -> (String, Arc<Remote>) {
    let remote = Arc::new(Remote {
        aggregated,
        counters: Counters::default(),
        users: std::sync::Mutex::new(Vec::new()),
    });
    let recorder = Arc::clone(&remote);
    let app = Router::new()
        .route("/apis", get(apis))
        .route("/apis/wardle.example.com/v1alpha1", get(legacy_version))
        .route("/openapi/v2", get(openapi_v2))
        .route("/openapi/v3", get(openapi_v3_index))
        .route(
            "/openapi/v3/apis/wardle.example.com/v1alpha1",
            get(openapi_v3_doc),
        )
        .route("/unavailable", get(unavailable))
        .route("/huge", get(huge))
        .route("/slow", get(slow))
        .with_state(Arc::clone(&remote))
        .layer(axum::middleware::from_fn(
            move |req: Request<Body>, next: axum::middleware::Next| {
                let user = req
                    .headers()
                    .get("x-remote-user")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_string();
                recorder
                    .users
                    .lock()
                    .unwrap()
                    .push((req.uri().path().to_string(), user));
                next.run(req)
            },
        ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), remote)
}

fn server(base: &str) -> RemoteServer {
    RemoteServer::new(reqwest::Client::new(), base)
}

#[tokio::test]
async fn aggregated_discovery_is_fetched_once_then_revalidated() {
    let (base, remote) = start(true).await;
    let s = server(&base);
    let entry = s
        .version_discovery("wardle.example.com", "v1alpha1")
        .await
        .unwrap();
    assert_eq!(entry["resources"][0]["resource"], "flunders");
    // The missing responseKind is filled as kube-aggregator fills it.
    assert_eq!(
        entry["resources"][0]["responseKind"],
        json!({"group": "", "version": "", "kind": ""})
    );
    let again = s
        .version_discovery("wardle.example.com", "v1alpha1")
        .await
        .unwrap();
    assert_eq!(entry, again);
    assert_eq!(remote.counters.apis.load(Ordering::SeqCst), 2);
    assert_eq!(remote.counters.not_modified.load(Ordering::SeqCst), 1);
    // A group version the server does not list: an entry with no resources.
    let missing = s
        .version_discovery("wardle.example.com", "v9")
        .await
        .unwrap();
    assert_eq!(missing, json!({"version": "v9"}));
}

#[tokio::test]
async fn legacy_discovery_when_there_is_no_aggregated_discovery() {
    let (base, _) = start(false).await;
    let entry = server(&base)
        .version_discovery("wardle.example.com", "v1alpha1")
        .await
        .unwrap();
    assert_eq!(
        entry,
        json!({"version": "v1alpha1", "resources": [
            {"resource": "flunders",
                "responseKind": {"group": "", "version": "", "kind": "Flunder"},
                "scope": "Namespaced", "singularResource": "flunder", "verbs": ["get", "list"],
                "shortNames": ["fl"],
                "subresources": [{"subresource": "status",
                    "responseKind": {"group": "", "version": "", "kind": "Flunder"},
                    "verbs": ["get", "patch"]}]},
            {"resource": "fischers",
                "responseKind": {"group": "", "version": "", "kind": ""},
                "scope": "Cluster", "singularResource": "", "verbs": [],
                "subresources": [{"subresource": "status",
                    "responseKind": {"group": "", "version": "", "kind": ""},
                    "verbs": ["get"]}]}]})
    );
}

#[test]
fn a_subresource_of_another_scope_is_refused() {
    let list = json!({"resources": [
        {"name": "things", "namespaced": true, "kind": "Thing", "verbs": []},
        {"name": "things/status", "namespaced": false, "kind": "Thing", "verbs": []}]});
    assert_eq!(
        resource_list_to_discovery(&list).unwrap_err(),
        "Error: Parent things (scope: Namespaced) and subresource status (scope: Cluster) scope do not match"
    );
}

#[tokio::test]
async fn openapi_documents_with_etags_and_hashed_urls() {
    let (base, remote) = start(true).await;
    let s = server(&base);
    let docs = s.fetch("wardle.example.com", "v1alpha1").await;
    assert_eq!(docs.openapi_v2.unwrap()["swagger"], "2.0");
    assert_eq!(
        docs.openapi_v3.unwrap(),
        Some(Bytes::from_static(br#"{"openapi":"3.0.0"}"#))
    );
    assert_eq!(docs.discovery.unwrap()["version"], "v1alpha1");
    let again = s.fetch("wardle.example.com", "v1alpha1").await;
    assert!(again.openapi_v2.is_ok() && again.openapi_v3.is_ok());
    // The v3 document's URL did not change: fetched once.
    assert_eq!(remote.counters.v3_documents.load(Ordering::SeqCst), 1);
    // /apis and /openapi/v2 were revalidated.
    assert_eq!(remote.counters.not_modified.load(Ordering::SeqCst), 2);
    assert_eq!(s.openapi_v3("other.example.com", "v1").await.unwrap(), None);
}

#[tokio::test]
async fn failures_are_bounded_and_reported() {
    let (base, _) = start(true).await;
    let s = server(&base).with_limits(FetchLimits {
        discovery_timeout: Duration::from_millis(200),
        openapi_timeout: Duration::from_millis(200),
        max_bytes: 1024,
    });
    let status = s
        .get(
            false,
            "/unavailable",
            "application/json",
            None,
            Duration::from_secs(5),
        )
        .await
        .map(|a| s.status_error("/unavailable", &a))
        .unwrap();
    assert_eq!(
        status.to_string(),
        format!(
            "Get \"{base}/unavailable\": the server responded with the status code 503: service unavailable"
        )
    );
    assert!(matches!(
        s.get(
            false,
            "/huge",
            "application/json",
            None,
            Duration::from_secs(5)
        )
        .await,
        Err(FetchError::TooLarge { limit: 1024, .. })
    ));
    assert!(matches!(
        s.get(
            false,
            "/slow",
            "application/json",
            None,
            Duration::from_millis(200)
        )
        .await,
        Err(FetchError::Timeout { .. })
    ));
    let refused = server("http://127.0.0.1:1")
        .version_discovery("wardle.example.com", "v1alpha1")
        .await;
    assert!(
        matches!(refused, Err(FetchError::Request { .. })),
        "{refused:?}"
    );
}

#[tokio::test]
async fn openapi_is_fetched_with_its_own_headers() {
    let (base, remote) = start(true).await;
    let header = |user: &'static str| {
        let mut h = HeaderMap::new();
        h.insert("x-remote-user", http::HeaderValue::from_static(user));
        h
    };
    let s = server(&base)
        .with_headers(header("system:kube-aggregator"))
        .with_openapi_headers(header("system:aggregator"));
    let docs = s.fetch("wardle.example.com", "v1alpha1").await;
    assert!(docs.discovery.is_ok() && docs.openapi_v2.is_ok() && docs.openapi_v3.is_ok());
    let mut users = remote.users.lock().unwrap().clone();
    users.sort();
    assert_eq!(
        users,
        [
            ("/apis", "system:kube-aggregator"),
            ("/openapi/v2", "system:aggregator"),
            ("/openapi/v3", "system:aggregator"),
            (
                "/openapi/v3/apis/wardle.example.com/v1alpha1",
                "system:aggregator"
            ),
        ]
        .map(|(p, u)| (p.to_string(), u.to_string()))
    );
}
