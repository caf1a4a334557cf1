//! Protocol upgrades through the proxy (apimachinery's `UpgradeAwareHandler.tryUpgrade`): a
//! request with `Connection: Upgrade` and an `Upgrade` header (SPDY/3.1 or websocket, as
//! `kubectl exec`, `attach` and `port-forward` send to aggregated subresources) goes to the
//! aggregated server over the proxy's TLS, with the caller's identity and the aggregator's
//! client certificate. The server's `101 Switching Protocols` is relayed, then bytes are
//! copied both ways until either side stops, and both connections close. An error answer
//! (`4xx`, `5xx`) is relayed as it is, and the caller's connection closes after it, as kube
//! closes the connection it hijacked for the upgrade; any other answer is refused as kube
//! refuses it.

use std::time::Duration;

use axum::body::Body;
use http::{HeaderValue, Request, Response, StatusCode};
use hyper::upgrade::{OnUpgrade, Upgraded};
use hyper_util::rt::TokioIo;
use tokio::io::AsyncWriteExt;

use crate::AggregatorError;
use crate::headers::strip_hop_by_hop;
use crate::transport::{ProxyClient, describe_error};

/// How long closing the two sides of a spliced connection may take once one side stopped.
const CLOSE_GRACE: Duration = Duration::from_secs(10);

/// Sends the upgrade request `upstream` through `client` and answers the caller: the
/// backend's `101` (the connection spliced once the caller's side, `caller`, is upgraded),
/// or its error answer. Fails with kube's words when the backend cannot be reached or answers
/// anything else.
pub async fn relay(
    client: &ProxyClient,
    upstream: Request<Body>,
    caller: OnUpgrade,
) -> Result<Response<Body>, AggregatorError> {
    let mut answer = client
        .request(upstream)
        .await
        .map_err(|e| AggregatorError::DialBackend(describe_error(&e)))?;
    let status = answer.status();
    if status != StatusCode::SWITCHING_PROTOCOLS && status.as_u16() < 400 {
        return Err(AggregatorError::InvalidUpgradeResponse(status.as_u16()));
    }
    if status != StatusCode::SWITCHING_PROTOCOLS {
        let (mut parts, body) = answer.into_parts();
        strip_hop_by_hop(&mut parts.headers, false);
        parts
            .headers
            .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
        return Ok(Response::from_parts(parts, Body::new(body)));
    }
    let backend = hyper::upgrade::on(&mut answer);
    tokio::spawn(async move {
        match (caller.await, backend.await) {
            (Ok(caller), Ok(backend)) => splice(caller, backend).await,
            (Err(e), _) => tracing::debug!(error = %e, "the caller's connection was not upgraded"),
            (_, Err(e)) => tracing::debug!(error = %e, "the backend's connection was not upgraded"),
        }
    });
    let (mut parts, _) = answer.into_parts();
    strip_hop_by_hop(&mut parts.headers, true);
    Ok(Response::from_parts(parts, Body::empty()))
}

/// Copies bytes both ways between the caller and the backend until one direction ends (the
/// sender closed, or a connection failed), then closes both connections.
async fn splice(caller: Upgraded, backend: Upgraded) {
    let (mut caller_read, mut caller_write) = tokio::io::split(TokioIo::new(caller));
    let (mut backend_read, mut backend_write) = tokio::io::split(TokioIo::new(backend));
    tokio::select! {
        r = tokio::io::copy(&mut caller_read, &mut backend_write) => {
            if let Err(e) = r {
                tracing::debug!(error = %e, "error proxying data from client to backend");
            }
        }
        r = tokio::io::copy(&mut backend_read, &mut caller_write) => {
            if let Err(e) = r {
                tracing::debug!(error = %e, "error proxying data from backend to client");
            }
        }
    }
    let close = async {
        let _ = caller_write.shutdown().await;
        let _ = backend_write.shutdown().await;
    };
    let _ = tokio::time::timeout(CLOSE_GRACE, close).await;
}
