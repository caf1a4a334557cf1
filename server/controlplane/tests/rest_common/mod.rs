//! Shared harness of the REST tests: an [`ApiContext`] over the generated scheme and a fresh
//! embedded store, and a helper that sends requests through `endpoints::serve` with the
//! extensions the filter chain would attach.

#![allow(dead_code)]

use std::sync::Arc;

use axum::body::Body;
use http::{Method, Request};
use http_body_util::BodyExt;
use serde_json::Value;
use server::authn::UserInfo;
use server::authz::{AuthorizerRef, SystemMastersAuthorizer};
use server::endpoints::{ApiContext, serve};
use server::request_info::RequestInfo;

/// A context over a fresh embedded store, bootstrapped.
pub struct Harness {
    /// The context under test.
    pub ctx: Arc<ApiContext>,
    _dir: tempfile::TempDir,
}

/// A collected response.
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// The headers.
    pub headers: http::HeaderMap,
    /// The body.
    pub body: Vec<u8>,
}

impl Reply {
    /// The body as JSON (panics with the body otherwise).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
    /// A header as text (empty when absent).
    pub fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    }
}

/// The admin user the filter chain would attach.
pub fn admin() -> UserInfo {
    UserInfo {
        name: "admin".into(),
        uid: String::new(),
        groups: vec!["system:masters".into(), "system:authenticated".into()],
        extra: Default::default(),
    }
}

impl Harness {
    /// Builds and bootstraps a context.
    pub async fn new() -> Self {
        Self::with(|b| b).await
    }

    /// Builds and bootstraps a context, its builder adjusted by `adjust`.
    pub async fn with(
        adjust: impl FnOnce(
            server::endpoints::ApiContextBuilder,
        ) -> server::endpoints::ApiContextBuilder,
    ) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let backend =
            storage::embedded::EmbeddedBackend::open_dir(dir.path()).expect("embedded backend");
        let builder = ApiContext::builder(
            Arc::new(demo_api::scheme()),
            Arc::new(backend),
            "/registry".into(),
        )
        .groups(Arc::new(controlplane::KubernetesApis::default()));
        let ctx = Arc::new(adjust(builder).build().expect("admission configuration"));
        controlplane::controllers::bootstrap(&ctx)
            .await
            .expect("bootstrap");
        controlplane::controllers::start(&ctx).expect("controllers");
        Self { ctx, _dir: dir }
    }

    /// Sends a request and collects the response.
    pub async fn send(
        &self,
        method: &str,
        uri: &str,
        headers: &[(&str, &str)],
        body: impl Into<Vec<u8>>,
    ) -> Reply {
        let resp = self.send_raw(method, uri, headers, body).await;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = resp
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes()
            .to_vec();
        Reply {
            status,
            headers,
            body,
        }
    }

    /// Sends a request with the chain's extensions and returns the streaming response.
    pub async fn send_raw(
        &self,
        method: &str,
        uri: &str,
        headers: &[(&str, &str)],
        body: impl Into<Vec<u8>>,
    ) -> http::Response<Body> {
        let method = Method::from_bytes(method.as_bytes()).expect("method");
        let (path, query) = uri.split_once('?').unwrap_or((uri, ""));
        let info = RequestInfo::parse(&method, path, query).expect("request info");
        let mut b = Request::builder().method(method).uri(uri);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        let mut req = b.body(Body::from(body.into())).expect("request");
        req.extensions_mut().insert(info);
        req.extensions_mut().insert(Arc::new(admin()));
        req.extensions_mut()
            .insert(AuthorizerRef(Arc::new(SystemMastersAuthorizer)));
        serve(self.ctx.clone(), req).await
    }

    /// `GET`.
    pub async fn get(&self, uri: &str) -> Reply {
        self.send("GET", uri, &[], Vec::new()).await
    }

    /// `POST` of JSON.
    pub async fn post(&self, uri: &str, body: &Value) -> Reply {
        self.send(
            "POST",
            uri,
            &[("content-type", "application/json")],
            serde_json::to_vec(body).unwrap(),
        )
        .await
    }

    /// `PUT` of JSON.
    pub async fn put(&self, uri: &str, body: &Value) -> Reply {
        self.send(
            "PUT",
            uri,
            &[("content-type", "application/json")],
            serde_json::to_vec(body).unwrap(),
        )
        .await
    }

    /// `PATCH` with a content type.
    pub async fn patch(&self, uri: &str, content_type: &str, body: &str) -> Reply {
        self.send(
            "PATCH",
            uri,
            &[("content-type", content_type)],
            body.as_bytes().to_vec(),
        )
        .await
    }

    /// `DELETE` without a body.
    pub async fn delete(&self, uri: &str) -> Reply {
        self.send("DELETE", uri, &[], Vec::new()).await
    }
}

/// The Widget collection in `default`.
pub const WIDGETS: &str = "/apis/example.dev/v1/namespaces/default/widgets";

/// A v1 Widget.
pub fn widget(name: &str, replicas: i64) -> Value {
    serde_json::json!({"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": name}, "spec": {"replicas": replicas}})
}
