//! Tests of the assembled filter chain over a small router.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::routing::{get, post};
use http::{Request, StatusCode};
use serde_json::Value;
use tower::ServiceExt;

use super::{ChainConfig, build};
use crate::authn::{Authenticator, AuthnOutcome, MASTERS_GROUP, UnionAuthenticator, UserInfo};
use crate::authz::{SystemMastersAuthorizer, UnionAuthorizer};
use crate::genericserver::lifecycle::LifecycleSignals;
use crate::genericserver::metrics::Metrics;

/// Authenticates `x-test-user: name[,group...]`.
struct HeaderAuth;

#[async_trait::async_trait]
impl Authenticator for HeaderAuth {
    async fn authenticate(&self, request: &http::request::Parts) -> AuthnOutcome {
        match request
            .headers
            .get("x-test-user")
            .and_then(|v| v.to_str().ok())
        {
            Some(v) => {
                let mut it = v.split(',');
                let name = it.next().unwrap_or_default().to_string();
                AuthnOutcome::Authenticated(Arc::new(UserInfo {
                    name,
                    groups: it.map(str::to_string).collect(),
                    ..UserInfo::default()
                }))
            }
            None => AuthnOutcome::NoCredentials,
        }
    }
}

/// Allows one user everything.
struct AllowUser(&'static str);

impl crate::authz::Authorizer for AllowUser {
    fn authorize(&self, attributes: &crate::authz::Attributes<'_>) -> crate::authz::Authorization {
        if attributes.user.name == self.0 {
            crate::authz::Authorization::allow("")
        } else {
            crate::authz::Authorization::no_opinion()
        }
    }
}

/// Cannot decide for one user (a delegated authorizer whose review failed).
struct FailsFor(&'static str);

impl crate::authz::Authorizer for FailsFor {
    fn authorize(&self, attributes: &crate::authz::Attributes<'_>) -> crate::authz::Authorization {
        if attributes.user.name == self.0 {
            crate::authz::Authorization::failed("the review failed")
        } else {
            crate::authz::Authorization::no_opinion()
        }
    }
}

async fn boom() -> &'static str {
    panic!("boom")
}

/// Allows every user (authenticated or not) to read the public information paths, as the
/// control plane's `system:public-info-viewer` binding does.
struct PublicInfo;

impl crate::authz::Authorizer for PublicInfo {
    fn authorize(&self, attributes: &crate::authz::Attributes<'_>) -> crate::authz::Authorization {
        const PATHS: &[&str] = &["/healthz", "/livez", "/readyz", "/version", "/version/"];
        let everyone = [
            apimachinery::user::AUTHENTICATED_GROUP,
            apimachinery::user::UNAUTHENTICATED_GROUP,
        ]
        .iter()
        .any(|g| attributes.user.in_group(g));
        if everyone
            && !attributes.is_resource_request
            && attributes.verb == "get"
            && PATHS.contains(&attributes.path.as_ref())
        {
            crate::authz::Authorization::allow("")
        } else {
            crate::authz::Authorization::no_opinion()
        }
    }
}

pub(super) fn app(anonymous: bool) -> super::FilterChain<Router> {
    app_with(anonymous, None)
}

/// The user the handler sees, the real user of an impersonating request, and whether any
/// impersonation header reached the handler.
async fn whoami(req: axum::extract::Request) -> String {
    let user = req
        .extensions()
        .get::<Arc<UserInfo>>()
        .cloned()
        .unwrap_or_default();
    let real = req
        .extensions()
        .get::<super::impersonation::Impersonator>()
        .map(|i| i.0.name.clone());
    let leaked = req
        .headers()
        .keys()
        .any(|k| k.as_str().starts_with("impersonate-"));
    serde_json::json!({
        "name": user.name,
        "uid": user.uid,
        "groups": user.groups,
        "extra": user.extra,
        "real": real,
        "leaked": leaked,
    })
    .to_string()
}

/// The chain over a small router, with an optional auditor.
pub(super) fn app_with(
    anonymous: bool,
    audit: Option<Arc<crate::audit::Auditor>>,
) -> super::FilterChain<Router> {
    let router = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/api/v1/namespaces/default/configmaps",
            get(|req: axum::extract::Request| async move {
                req.extensions()
                    .get::<Arc<UserInfo>>()
                    .map(|u| u.name.clone())
                    .unwrap_or_default()
            })
            .post(|req: axum::extract::Request| async move {
                match super::body_limit::read_body(req.into_body()).await {
                    Ok(b) => (StatusCode::CREATED, b.len().to_string()).into_response_parts(),
                    Err(e) => (
                        StatusCode::from_u16(e.code()).unwrap_or(StatusCode::BAD_REQUEST),
                        e.message().to_string(),
                    )
                        .into_response_parts(),
                }
            }),
        )
        .route(
            "/api/v1/namespaces/default/secrets",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                "late"
            }),
        )
        .route("/api/v1/configmaps", get(boom))
        .route("/api/v1/namespaces/default/pods", get(whoami))
        .route("/version/", get(whoami))
        .route(
            "/api/v1/namespaces/default/events",
            post(|| async { "unused" }),
        );
    let config = Arc::new(ChainConfig {
        authenticator: Arc::new(UnionAuthenticator::new(
            vec![Box::new(HeaderAuth)],
            anonymous,
        )),
        authorizer: Arc::new(UnionAuthorizer(vec![
            Arc::new(AllowUser("jane")),
            Arc::new(FailsFor("carol")),
            Arc::new(SystemMastersAuthorizer),
            Arc::new(PublicInfo),
        ])),
        request_timeout: Duration::from_millis(200),
        min_request_timeout: Duration::from_secs(1800),
        max_request_body_bytes: 1024,
        signals: LifecycleSignals::default(),
        metrics: Arc::new(Metrics::new(Vec::new())),
        in_flight: super::max_in_flight::InFlightLimits::new(1, 1),
        audit,
        scheme: None,
        delegated_authorizer: None,
    });
    build(router, config)
}

trait IntoParts {
    fn into_response_parts(self) -> axum::response::Response;
}

impl IntoParts for (StatusCode, String) {
    fn into_response_parts(self) -> axum::response::Response {
        axum::response::IntoResponse::into_response(self)
    }
}

pub(super) async fn call(
    app: super::FilterChain<Router>,
    req: Request<Body>,
) -> (StatusCode, Vec<u8>) {
    let resp = app.oneshot(req).await.unwrap_or_else(|e| match e {});
    let status = resp.status();
    let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .map(|b| b.to_vec())
        .unwrap_or_default();
    (status, body)
}

pub(super) fn req(method: &str, path: &str, user: Option<&str>, body: Body) -> Request<Body> {
    let mut b = Request::builder().method(method).uri(path);
    if let Some(u) = user {
        b = b.header("x-test-user", u);
    }
    b.body(body).unwrap_or_default()
}

pub(super) fn status_json(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap_or(Value::Null)
}

pub(super) const ADMIN: &str = "admin,system:masters";

#[tokio::test]
async fn masters_pass_and_see_their_identity() {
    let (code, body) = call(
        app(true),
        req(
            "GET",
            "/api/v1/namespaces/default/configmaps",
            Some(ADMIN),
            Body::empty(),
        ),
    )
    .await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(body, b"admin");
    assert!(ADMIN.contains(MASTERS_GROUP));
}

#[tokio::test]
async fn an_authorizer_that_could_not_decide_makes_a_500_unless_another_allows() {
    let (code, body) = call(
        app(true),
        req(
            "GET",
            "/api/v1/namespaces/default/configmaps",
            Some("carol"),
            Body::empty(),
        ),
    )
    .await;
    assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR);
    let status = status_json(&body);
    assert_eq!(status["reason"], "InternalError");
    assert_eq!(
        status["message"],
        "Internal error occurred: the review failed"
    );
    // A member of system:masters is allowed by a later authorizer: the error does not matter.
    let (code, _) = call(
        app(true),
        req(
            "GET",
            "/api/v1/namespaces/default/configmaps",
            Some("carol,system:masters"),
            Body::empty(),
        ),
    )
    .await;
    assert_eq!(code, StatusCode::OK);
}

#[tokio::test]
async fn anonymous_is_forbidden_except_public_paths() {
    let (code, _) = call(app(true), req("GET", "/healthz", None, Body::empty())).await;
    assert_eq!(code, StatusCode::OK);
    let (code, body) = call(
        app(true),
        req(
            "GET",
            "/api/v1/namespaces/default/configmaps",
            None,
            Body::empty(),
        ),
    )
    .await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    assert_eq!(status_json(&body)["reason"], "Forbidden");
    let (code, body) = call(
        app(false),
        req(
            "GET",
            "/api/v1/namespaces/default/configmaps",
            None,
            Body::empty(),
        ),
    )
    .await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
    assert_eq!(status_json(&body)["message"], "Unauthorized");
}

#[tokio::test]
async fn panics_become_500_status() {
    let (code, body) = call(
        app(true),
        req("GET", "/api/v1/configmaps", Some(ADMIN), Body::empty()),
    )
    .await;
    assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR);
    let s = status_json(&body);
    assert_eq!(s["reason"], "InternalError");
    assert!(s["message"].as_str().unwrap_or("").contains("boom"));
}

#[tokio::test]
async fn slow_requests_get_504() {
    let (code, body) = call(
        app(true),
        req(
            "GET",
            "/api/v1/namespaces/default/secrets",
            Some(ADMIN),
            Body::empty(),
        ),
    )
    .await;
    assert_eq!(code, StatusCode::GATEWAY_TIMEOUT);
    let s = status_json(&body);
    assert_eq!(s["reason"], "Timeout");
    assert_eq!(s["code"], 504);
}

#[tokio::test]
async fn bodies_over_the_limit_get_413() {
    let small = req(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some(ADMIN),
        Body::from(vec![b'a'; 1000]),
    );
    let (code, body) = call(app(true), small).await;
    assert_eq!(
        (code, body.as_slice()),
        (StatusCode::CREATED, b"1000".as_slice())
    );

    let mut declared = req(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some(ADMIN),
        Body::from(vec![b'a'; 2000]),
    );
    declared
        .headers_mut()
        .insert(http::header::CONTENT_LENGTH, http::HeaderValue::from(2000));
    let (code, body) = call(app(true), declared).await;
    assert_eq!(code, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        status_json(&body)["message"],
        "Request entity too large: limit is 1024"
    );

    let stream = futures::stream::iter(
        (0..4).map(|_| Ok::<_, std::io::Error>(bytes::Bytes::from(vec![b'a'; 600]))),
    );
    let streamed = req(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some(ADMIN),
        Body::from_stream(stream),
    );
    let (code, body) = call(app(true), streamed).await;
    assert_eq!(code, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        String::from_utf8_lossy(&body),
        "Request entity too large: limit is 3145728"
    );
}

#[tokio::test]
async fn full_in_flight_pool_gets_429_but_masters_are_exempt() {
    let app = app(true);
    let slow = tokio::spawn(call(
        app.clone(),
        req(
            "GET",
            "/api/v1/namespaces/default/secrets",
            Some("jane"),
            Body::empty(),
        ),
    ));
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (code, body) = call(
        app.clone(),
        req("GET", "/healthz", Some("joe"), Body::empty()),
    )
    .await;
    assert_eq!(code, StatusCode::TOO_MANY_REQUESTS);
    let s = status_json(&body);
    assert_eq!(s["reason"], "TooManyRequests");
    assert_eq!(s["details"]["retryAfterSeconds"], 1);
    let (code, _) = call(
        app.clone(),
        req("GET", "/healthz", Some(ADMIN), Body::empty()),
    )
    .await;
    assert_eq!(code, StatusCode::OK);
    let _ = slow.await;
}

#[tokio::test]
async fn request_timeout_parameter_shortens_the_deadline() {
    let started = std::time::Instant::now();
    let (code, _) = call(
        app(true),
        req(
            "GET",
            "/api/v1/namespaces/default/secrets?timeout=50ms",
            Some(ADMIN),
            Body::empty(),
        ),
    )
    .await;
    assert_eq!(code, StatusCode::GATEWAY_TIMEOUT);
    assert!(started.elapsed() < Duration::from_millis(190));
    let (code, body) = call(
        app(true),
        req(
            "GET",
            "/api/v1/namespaces/default/secrets?timeout=soon",
            Some(ADMIN),
            Body::empty(),
        ),
    )
    .await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    assert_eq!(status_json(&body)["reason"], "BadRequest");
}

#[tokio::test]
async fn watches_are_exempt_from_a_full_pool_and_panics_leave_the_chain_serving() {
    let app = app(true);
    let slow = tokio::spawn(call(
        app.clone(),
        req(
            "GET",
            "/api/v1/namespaces/default/secrets",
            Some("jane"),
            Body::empty(),
        ),
    ));
    // Wait until the slow request holds the only read-only slot.
    loop {
        let (code, _) = call(
            app.clone(),
            req("GET", "/healthz", Some("joe"), Body::empty()),
        )
        .await;
        if code == StatusCode::TOO_MANY_REQUESTS {
            break;
        }
        tokio::task::yield_now().await;
    }
    let (code, body) = call(
        app.clone(),
        req(
            "GET",
            "/api/v1/namespaces/default/configmaps?watch=true",
            Some("jane"),
            Body::empty(),
        ),
    )
    .await;
    assert_eq!(
        (code, body.as_slice()),
        (StatusCode::OK, b"jane".as_slice())
    );
    let _ = slow.await;

    let (code, _) = call(
        app.clone(),
        req("GET", "/api/v1/configmaps", Some(ADMIN), Body::empty()),
    )
    .await;
    assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR);
    let (code, body) = call(
        app,
        req(
            "GET",
            "/api/v1/namespaces/default/configmaps",
            Some(ADMIN),
            Body::empty(),
        ),
    )
    .await;
    assert_eq!(
        (code, body.as_slice()),
        (StatusCode::OK, b"admin".as_slice())
    );
}
