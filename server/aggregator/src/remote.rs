//! [`AggregatedResources`]: the remote APIServices as the server's own controllers reach them
//! ([`server::genericserver::remote_resources`]), the way kube-controller-manager reaches
//! aggregated APIs through kube-apiserver: what they serve is read from merged discovery (the
//! aggregated discovery entries [`DiscoveryAggregator`](crate::discovery::DiscoveryAggregator)
//! last fetched, `Stale` when their server could not be reached), and a request goes through
//! the proxy ([`crate::proxy`]) to the APIService's Service with the caller's identity as
//! request headers, so the aggregated server authorizes it by `SubjectAccessReview` back to
//! this server, as it does for a client's request. A request is bounded as kube-apiserver's
//! timeout filter bounds one ([`REQUEST_TIMEOUT`]).

use std::sync::Arc;
use std::time::Duration;

use apimachinery::status::ApiError;
use apimachinery::user::UserInfo;
use async_trait::async_trait;
use axum::body::Body;
use axum::body::Bytes;
use http::{Request, Response, header};
use server::genericserver::aggregated::AggregatedApis;
use server::genericserver::discovery::ApiGroupDirectory;
use server::genericserver::remote_resources::{self, RemoteDiscovery, RemoteResources};
use server::registry::Registry;

use crate::proxy::{FailureHook, group_version_of, proxy};
use crate::table::ApiServiceTable;
use crate::transport::ProxyTransport;

/// How long one request may take (kube-apiserver's `--request-timeout` default).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The most an answer may hold.
const MAX_ANSWER_BYTES: usize = 256 << 20;

/// The aggregator's remote APIServices as [`RemoteResources`] (see the [module docs](self)).
pub struct AggregatedResources {
    table: Arc<ApiServiceTable>,
    apis: Arc<AggregatedApis>,
    transport: Arc<ProxyTransport>,
    registry: Arc<Registry>,
    on_failure: Option<FailureHook>,
}

impl std::fmt::Debug for AggregatedResources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AggregatedResources")
            .finish_non_exhaustive()
    }
}

impl AggregatedResources {
    /// The remote APIServices of `table`, as merged discovery (`apis`) lists them, reached
    /// through `transport` at the addresses `registry`'s service resolver gives.
    pub fn new(
        table: Arc<ApiServiceTable>,
        apis: Arc<AggregatedApis>,
        transport: Arc<ProxyTransport>,
        registry: Arc<Registry>,
    ) -> Self {
        Self {
            table,
            apis,
            transport,
            registry,
            on_failure: None,
        }
    }

    /// Calls `hook` with the APIService's name whenever a request to it fails (as the proxy
    /// does, so its availability is checked again).
    pub fn on_failure(mut self, hook: FailureHook) -> Self {
        self.on_failure = Some(hook);
        self
    }
}

/// The `Status` answer of `error`.
fn status_answer(error: &ApiError) -> Response<Bytes> {
    let mut response = Response::new(Bytes::from(error.to_status_bytes()));
    *response.status_mut() =
        http::StatusCode::from_u16(error.code()).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

#[async_trait]
impl RemoteResources for AggregatedResources {
    fn discover(&self) -> RemoteDiscovery {
        remote_resources::discover(&self.apis.snapshot())
    }

    async fn send(&self, user: Arc<UserInfo>, request: Request<Bytes>) -> Response<Bytes> {
        let entry =
            group_version_of(request.uri().path()).and_then(|(g, v)| self.table.remote(g, v));
        let Some(entry) = entry else {
            return status_answer(&ApiError::not_found_path());
        };
        let (mut parts, body) = request.into_parts();
        parts.extensions.insert(user);
        let request = Request::from_parts(parts, Body::from(body));
        let resolver = self.registry.service_resolver();
        let sent = proxy(
            request,
            &entry,
            &self.transport,
            &*resolver,
            self.on_failure.as_ref(),
        );
        let answered = async {
            let (parts, body) = sent.await.into_parts();
            axum::body::to_bytes(body, MAX_ANSWER_BYTES)
                .await
                .map(|body| Response::from_parts(parts, body))
        };
        match tokio::time::timeout(REQUEST_TIMEOUT, answered).await {
            Ok(Ok(response)) => response,
            Ok(Err(e)) => status_answer(&ApiError::internal(format!(
                "reading the answer of {}: {e}",
                entry.name
            ))),
            Err(_) => status_answer(&ApiError::request_timeout()),
        }
    }
}
