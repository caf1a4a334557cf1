//! The director: sends installed API paths to the REST handlers, the well-known paths to the
//! non-API mux (health, version, metrics, discovery, OpenAPI), everything else to the next server
//! in the delegation chain, and finally answers 404 `Status` (503 while a server's paths are not
//! all installed, see [`super::mux_complete`]).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use apimachinery::Scheme;
use apimachinery::runtime::Kind;
use apimachinery::status::ApiError;
use axum::body::Body;
use http::{HeaderValue, Request, Response, header};

use super::discovery::LiveDiscovery;
use super::health::{self, HealthCheck};
use super::metrics::Metrics;
use super::mux_complete::MuxCompleteSignals;
use super::openapi::LiveOpenApi;
use super::runtime_config::RuntimeConfig;
use super::version::VersionInfo;
use crate::endpoints::{self, ApiContext};
use crate::filters::status_response;
use crate::request_info::RequestInfo;
use crate::request_target::{self, LongTarget, Target};

/// The result of a delegate: a response, or the request handed back to try the next server.
pub type DelegateFuture =
    Pin<Box<dyn Future<Output = Result<Response<Body>, Request<Body>>> + Send>>;

/// A server further down the delegation chain (an aggregated or extension server).
pub trait Delegate: Send + Sync + 'static {
    /// Serves the request or hands it back. Its path and query are
    /// [`request_target::of`] the request (an HTTP/1.1 target too long for a URI travels
    /// beside it).
    fn handle(&self, req: Request<Body>) -> DelegateFuture;

    /// The paths it serves that the root document (`GET /`) lists.
    fn root_paths(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The health checks of the three endpoints.
#[derive(Clone, Default)]
pub struct HealthChecks {
    /// `/healthz`.
    pub healthz: Vec<HealthCheck>,
    /// `/livez`.
    pub livez: Vec<HealthCheck>,
    /// `/readyz`.
    pub readyz: Vec<HealthCheck>,
}

/// Everything the director routes to.
pub struct Director {
    /// The kinds served.
    pub scheme: Arc<Scheme>,
    /// The REST handlers.
    pub api: Arc<ApiContext>,
    /// Served group versions.
    pub runtime: RuntimeConfig,
    /// Discovery documents.
    pub discovery: LiveDiscovery,
    /// OpenAPI documents.
    pub openapi: LiveOpenApi,
    /// `/version`.
    pub version: VersionInfo,
    /// Health checks.
    pub health: HealthChecks,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    /// Next servers, tried in order.
    pub delegates: Vec<Arc<dyn Delegate>>,
    /// Handlers tried before this server's own, in order
    /// ([`GenericServer::add_front_delegate`](super::GenericServer::add_front_delegate)).
    pub front_delegates: Vec<Arc<dyn Delegate>>,
    /// Whether every server's paths are installed (404 or 503 at the end of the chain).
    pub(crate) mux_signals: MuxCompleteSignals,
}

/// The director as the tower service the filter chain wraps.
#[derive(Clone)]
pub struct DirectorService(pub Arc<Director>);

impl tower::Service<Request<Body>> for DirectorService {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let director = Arc::clone(&self.0);
        Box::pin(async move { Ok(director.route(req).await) })
    }
}

fn json_response(value: &impl serde::Serialize) -> Response<Body> {
    let mut resp = Response::new(Body::from(serde_json::to_vec(value).unwrap_or_default()));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

impl Director {
    /// The kind an installed API path addresses (a served group version that has the resource).
    fn installed(&self, info: &RequestInfo) -> Option<&'static Kind> {
        if !info.is_resource_request || !self.runtime.enabled(&info.api_group, &info.api_version) {
            return None;
        }
        self.scheme
            .by_resource(&info.api_group, &info.resource)
            .filter(|k| k.info(&info.api_version).is_some())
    }

    /// Routes one request.
    pub async fn route(self: Arc<Self>, mut req: Request<Body>) -> Response<Body> {
        for d in &self.front_delegates {
            match d.handle(req).await {
                Ok(resp) => return resp,
                Err(back) => req = back,
            }
        }
        let kind = req
            .extensions()
            .get::<RequestInfo>()
            .and_then(|info| self.installed(info));
        if let Some(ops) = kind {
            return endpoints::serve_kind(Arc::clone(&self.api), ops, req).await;
        }
        let head = (
            req.method().clone(),
            req.uri().clone(),
            req.headers().clone(),
            req.extensions().get::<LongTarget>().cloned(),
        );
        let target = request_target::with(&head.1, head.3.as_ref());
        if let Some(resp) = self.non_api(&head.0, target, &head.2).await {
            return resp;
        }
        for d in &self.delegates {
            match d.handle(req).await {
                Ok(resp) => return resp,
                Err(back) => req = back,
            }
        }
        status_response(&self.mux_signals.unhandled())
    }

    async fn non_api(
        &self,
        method: &http::Method,
        target: Target<'_>,
        headers: &http::HeaderMap,
    ) -> Option<Response<Body>> {
        let path = target.path();
        let query = target.query();
        let read = matches!(*method, http::Method::GET | http::Method::HEAD);
        for (name, checks) in [
            ("healthz", &self.health.healthz),
            ("livez", &self.health.livez),
            ("readyz", &self.health.readyz),
        ] {
            if let Some(rest) = path.strip_prefix('/').and_then(|p| p.strip_prefix(name))
                && (rest.is_empty() || rest.starts_with('/'))
            {
                if !read {
                    return Some(method_not_allowed());
                }
                return Some(health::serve(name, checks, rest, query).await);
            }
        }
        if !read {
            return None;
        }
        match path.trim_end_matches('/') {
            "/version" => return Some(json_response(&self.version)),
            "/metrics" => {
                self.metrics.set_gauges(
                    self.api.registry.watcher_counts(),
                    tokio::runtime::Handle::current()
                        .metrics()
                        .num_alive_tasks(),
                );
                let mut resp = Response::new(Body::from(self.metrics.render()));
                resp.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
                );
                return Some(resp);
            }
            "" => return Some(json_response(&self.root_paths())),
            _ => {}
        }
        if path.starts_with("/openapi/") {
            return self.openapi.serve(path, query, headers);
        }
        if path.starts_with("/api") {
            return self.discovery.serve(path, headers);
        }
        None
    }

    fn root_paths(&self) -> serde_json::Value {
        let mut paths: Vec<String> = vec![
            "/api".into(),
            "/apis".into(),
            "/healthz".into(),
            "/livez".into(),
            "/metrics".into(),
            "/openapi/v2".into(),
            "/openapi/v3".into(),
            "/openapi/v3/".into(),
            "/readyz".into(),
            "/version".into(),
        ];
        for kind in self.scheme.kinds() {
            for r in kind.versions() {
                if self.runtime.enabled(r.group, r.version) {
                    if r.group.is_empty() {
                        paths.push(format!("/api/{}", r.version));
                    } else {
                        paths.push(format!("/apis/{}", r.group));
                        paths.push(format!("/apis/{}/{}", r.group, r.version));
                    }
                }
            }
        }
        for c in &self.health.readyz {
            paths.push(format!("/readyz/{}", c.name));
        }
        for d in &self.delegates {
            paths.extend(d.root_paths());
        }
        paths.sort();
        paths.dedup();
        serde_json::json!({ "paths": paths })
    }
}

fn method_not_allowed() -> Response<Body> {
    status_response(&ApiError::method_not_allowed())
}
