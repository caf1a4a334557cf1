//! REST endpoints: the handlers for every installed group, version, resource and subresource.
//!
//! Interface with the generic server (which owns the filter chain, TLS, discovery, OpenAPI and
//! health): the server builds one [`ApiContext`] at start-up with [`ApiContext::new`], runs
//! [`ApiContext::bootstrap`] as a post-start hook, and hands every request whose `RequestInfo`
//! extension has `is_resource_request == true` to [`serve`]. Requests arrive authenticated and
//! authorized: the extensions `crate::request_info::RequestInfo`, `crate::authn::UserInfo` and
//! `crate::authz::AuthorizerRef` are always present; bodies are already limited to 3 MiB (reading
//! past it yields an error whose response must be the 413 `Status` built by
//! `crate::filters::body_limit::too_large()`). A resource the scheme does not serve answers 404
//! `Status` so the chain can fall through.
//!
//! The REST engineer replaces the bodies here (keeping these signatures).

use std::sync::Arc;

use apimachinery::Scheme;
use apimachinery::status::ApiError;
use axum::body::Body;

/// Everything the REST handlers share: the scheme and the storage underneath.
pub struct ApiContext {
    /// Every kind served.
    pub scheme: Arc<Scheme>,
    /// The revisioned key-value store all resources live in.
    pub backend: Arc<dyn storage::backend::Backend>,
    /// The key prefix of every resource (`--etcd-prefix`, `/registry` by default).
    pub prefix: String,
}

impl ApiContext {
    /// Builds the context from the scheme and the storage backend.
    pub fn new(
        scheme: Arc<Scheme>,
        backend: Arc<dyn storage::backend::Backend>,
        prefix: String,
    ) -> Self {
        Self {
            scheme,
            backend,
            prefix,
        }
    }

    /// Creates the namespaces every cluster has (`default`, `kube-system`, `kube-public`) if they
    /// are missing. Idempotent; run as the `apiary-bootstrap-namespaces` post-start hook.
    pub async fn bootstrap(&self) -> Result<(), ApiError> {
        Ok(())
    }
}

/// Serves one resource request (the `RequestInfo` extension says which).
pub async fn serve(ctx: Arc<ApiContext>, req: http::Request<Body>) -> http::Response<Body> {
    let _ = (&ctx, &req);
    let err = ApiError::not_found_path();
    http::Response::builder()
        .status(err.code())
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Body::from(err.to_status_bytes()))
        .unwrap_or_default()
}
