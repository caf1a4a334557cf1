//! The proxy (kube-aggregator's `proxyHandler`): a delegate in front of the main server's
//! handlers that sends every request for the group/version of an APIService with a Service to
//! that Service, with the caller's identity and address (`X-Forwarded-*`), and streams both
//! bodies (a watch flows event by event); a protocol upgrade is relayed and its connection
//! spliced ([`crate::upgrade`]). An APIService that is not available, or a Service that cannot
//! be resolved or reached, answers `503` with a `Status` (`error trying to reach service:
//! <error>` when the server could not be reached, in apimachinery's proxy's words). A server
//! that goes away mid-response cannot be answered for any more: the response is cut short (the
//! HTTP/1.1 connection closed, the HTTP/2 stream reset), as Go's reverse proxy aborts it.
//! Discovery of a group/version (`/apis/<group>/<version>`) has [`DISCOVERY_TIMEOUT`] for its
//! whole answer, as kube-aggregator gives it: clients such as kubectl ask every group for it,
//! and one slow server should not hold them all.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use apimachinery::status::ApiError;
use apimachinery::user::UserInfo;
use axum::body::Body;
use http::{Request, Response, Uri};
use hyper::body::{Bytes, Frame, Incoming, SizeHint};
use hyper::upgrade::OnUpgrade;
use server::audit::PeerAddr;
use server::filters::status_response;
use server::genericserver::director::{Delegate, DelegateFuture};
use server::registry::Registry;
use server::request_target;

use crate::AggregatorError;
use crate::headers::{
    append_forwarded_for, is_upgrade, proxy_request_headers, remove_cors, set_forwarded,
    strip_hop_by_hop,
};
use crate::table::{ApiServiceEntry, ApiServiceTable};
use crate::transport::{ProxyTransport, describe_error};

/// kube-aggregator's answer when an APIService is not available or its Service cannot be
/// resolved.
pub const SERVICE_UNAVAILABLE: &str = "service unavailable";

/// The start of the message of a `503` when the aggregated server could not be reached
/// (apimachinery's proxy transport), followed by the error.
pub const ERROR_REACHING_SERVICE: &str = "error trying to reach service";

/// How long the answer to a discovery request (`/apis/<group>/<version>`) may take, headers
/// and body (kube-aggregator's `aggregatedDiscoveryTimeout`). A server that has not answered
/// by then gets `503` with `error trying to reach service: context deadline exceeded`; an
/// answer still being sent is cut short.
pub const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(5);

/// The error of a discovery answer past [`DISCOVERY_TIMEOUT`], in Go's words.
const DEADLINE_EXCEEDED: &str = "context deadline exceeded";

/// Called with an APIService's name when a proxied call to it failed, so its availability is
/// checked again at once.
pub type FailureHook = Arc<dyn Fn(&str) + Send + Sync>;

/// The `(group, version)` a request path addresses when it is under `/apis/<group>/<version>`.
pub fn group_version_of(path: &str) -> Option<(&str, &str)> {
    let rest = path.strip_prefix("/apis/")?;
    let mut parts = rest.splitn(3, '/');
    let group = parts.next().filter(|g| !g.is_empty())?;
    let version = parts.next().filter(|v| !v.is_empty())?;
    Some((group, version))
}

/// Whether `path` asks for a group/version's discovery document: exactly three segments once
/// leading and trailing slashes are trimmed, as kube-aggregator tells it (`/apis/<group>/<version>`).
fn is_discovery(path: &str) -> bool {
    path.trim_matches('/').split('/').count() == 3
}

/// The `host:port` of a resolved address (an IPv6 host in brackets, as the URL writes it; the
/// scheme's port when the address names none).
pub fn authority_of(url: &reqwest::Url) -> Option<String> {
    Some(format!(
        "{}:{}",
        url.host_str()?,
        url.port_or_known_default()?
    ))
}

/// The proxy delegate (see the module).
pub struct ApiServiceProxy {
    table: Arc<ApiServiceTable>,
    transport: Arc<ProxyTransport>,
    registry: Arc<Registry>,
    on_failure: Option<FailureHook>,
}

impl ApiServiceProxy {
    /// A proxy for the remote APIServices of `table`, resolving Services with `registry`'s
    /// service resolver and sending through `transport`.
    pub fn new(
        table: Arc<ApiServiceTable>,
        transport: Arc<ProxyTransport>,
        registry: Arc<Registry>,
    ) -> Self {
        Self {
            table,
            transport,
            registry,
            on_failure: None,
        }
    }

    /// Calls `hook` with the APIService's name whenever a proxied call fails.
    pub fn on_failure(mut self, hook: FailureHook) -> Self {
        self.on_failure = Some(hook);
        self
    }

    /// The remote APIService a request is for, if any.
    fn target_of(&self, req: &Request<Body>) -> Option<ApiServiceEntry> {
        if !self.table.has_remote() {
            return None;
        }
        let target = request_target::of(req.uri(), req.extensions());
        let (group, version) = group_version_of(target.path())?;
        self.table.remote(group, version)
    }
}

impl Delegate for ApiServiceProxy {
    fn handle(&self, req: Request<Body>) -> DelegateFuture {
        let Some(entry) = self.target_of(&req) else {
            return Box::pin(async move { Err(req) });
        };
        let transport = Arc::clone(&self.transport);
        let resolver = self.registry.service_resolver();
        let on_failure = self.on_failure.clone();
        Box::pin(async move {
            Ok(proxy(req, &entry, &transport, &*resolver, on_failure.as_ref()).await)
        })
    }
}

/// Sends `req` to `entry`'s Service and returns its answer (or the `503`/`500` of a failure).
pub(crate) async fn proxy(
    req: Request<Body>,
    entry: &ApiServiceEntry,
    transport: &ProxyTransport,
    resolver: &dyn server::webhook::ServiceResolver,
    on_failure: Option<&FailureHook>,
) -> Response<Body> {
    let Some(service) = entry.service.as_ref() else {
        return status_response(&ApiError::not_found_path());
    };
    if !entry.available {
        return status_response(&ApiError::service_unavailable(SERVICE_UNAVAILABLE));
    }
    let Some(user) = req.extensions().get::<Arc<UserInfo>>().cloned() else {
        return status_response(&ApiError::internal("missing user"));
    };
    let location = match resolver.resolve(&service.namespace, &service.name, service.port) {
        Ok(url) => url,
        Err(e) => {
            tracing::warn!(
                apiservice = %entry.name,
                "error resolving {}/{}: {e}",
                service.namespace,
                service.name
            );
            return status_response(&ApiError::service_unavailable(SERVICE_UNAVAILABLE));
        }
    };
    let Some(authority) = authority_of(&location) else {
        return status_response(&ApiError::service_unavailable(SERVICE_UNAVAILABLE));
    };
    let client = match transport.client(&authority, service) {
        Ok(c) => c,
        Err(e) => return status_response(&ApiError::internal(e)),
    };
    let target = request_target::of(req.uri(), req.extensions());
    let deadline =
        is_discovery(target.path()).then(|| tokio::time::Instant::now() + DISCOVERY_TIMEOUT);
    let path_and_query = target.path_and_query().to_string();
    let uri: Uri = match format!("https://{authority}{path_and_query}").parse() {
        Ok(u) => u,
        Err(e) => return status_response(&ApiError::bad_request(format!("invalid path: {e}"))),
    };
    let (mut parts, body) = req.into_parts();
    let upgrade = is_upgrade(&parts.headers);
    let client_ip = parts.extensions.get::<PeerAddr>().map(|p| p.0.ip());
    proxy_request_headers(&mut parts.headers, &user, upgrade);
    append_forwarded_for(&mut parts.headers, client_ip);
    if !upgrade {
        set_forwarded(&mut parts.headers, &authority, uri.path());
    }
    let caller = if upgrade {
        match parts.extensions.remove::<OnUpgrade>() {
            Some(caller) => Some(caller),
            None => {
                let e = AggregatorError::NotHijackable;
                return status_response(&ApiError::service_unavailable(e.to_string()));
            }
        }
    } else {
        None
    };
    let mut upstream = Request::builder()
        .method(parts.method)
        .uri(uri)
        .version(http::Version::HTTP_11);
    if let Some(h) = upstream.headers_mut() {
        *h = parts.headers;
    }
    let upstream = match upstream.body(body) {
        Ok(r) => r,
        Err(e) => return status_response(&ApiError::internal(e)),
    };
    let failed = |message: String| {
        tracing::warn!(apiservice = %entry.name, "proxying failed: {message}");
        if let Some(hook) = on_failure {
            hook(&entry.name);
        }
        status_response(&ApiError::service_unavailable(message))
    };
    if let Some(caller) = caller {
        return match crate::upgrade::relay(&client, upstream, caller).await {
            Ok(resp) => resp,
            Err(e @ AggregatorError::DialBackend(_)) => failed(e.to_string()),
            Err(e) => status_response(&ApiError::service_unavailable(e.to_string())),
        };
    }
    let sent = client.request(upstream);
    let answer = match deadline {
        Some(deadline) => tokio::time::timeout_at(deadline, sent).await,
        None => Ok(sent.await),
    };
    match answer {
        Ok(Ok(resp)) => {
            let (mut parts, body) = resp.into_parts();
            strip_hop_by_hop(&mut parts.headers, false);
            remove_cors(&mut parts.headers);
            let body = match deadline {
                Some(deadline) => Body::new(UntilDeadline::new(body, deadline)),
                None => Body::new(body),
            };
            Response::from_parts(parts, body)
        }
        Ok(Err(e)) => failed(format!("{ERROR_REACHING_SERVICE}: {}", describe_error(&e))),
        Err(_) => failed(format!("{ERROR_REACHING_SERVICE}: {DEADLINE_EXCEEDED}")),
    }
}

/// An aggregated server's response body that fails at a deadline (see [`DISCOVERY_TIMEOUT`]).
struct UntilDeadline {
    body: Incoming,
    deadline: Pin<Box<tokio::time::Sleep>>,
}

impl UntilDeadline {
    fn new(body: Incoming, deadline: tokio::time::Instant) -> Self {
        Self {
            body,
            deadline: Box::pin(tokio::time::sleep_until(deadline)),
        }
    }
}

impl hyper::body::Body for UntilDeadline {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if self.deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(DEADLINE_EXCEEDED.into())));
        }
        Pin::new(&mut self.body)
            .poll_frame(cx)
            .map(|frame| frame.map(|f| f.map_err(Into::into)))
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_versions_come_from_apis_paths() {
        assert_eq!(
            group_version_of("/apis/wardle.example.com/v1alpha1"),
            Some(("wardle.example.com", "v1alpha1"))
        );
        assert_eq!(
            group_version_of("/apis/wardle.example.com/v1alpha1/namespaces/a/flunders"),
            Some(("wardle.example.com", "v1alpha1"))
        );
        assert_eq!(group_version_of("/apis/wardle.example.com"), None);
        assert_eq!(group_version_of("/apis/wardle.example.com/"), None);
        assert_eq!(group_version_of("/api/v1"), None);
        assert_eq!(group_version_of("/apis"), None);
    }

    #[test]
    fn discovery_is_a_group_version_path() {
        assert!(is_discovery("/apis/wardle.example.com/v1alpha1"));
        assert!(is_discovery("/apis/wardle.example.com/v1alpha1/"));
        assert!(!is_discovery("/apis/wardle.example.com/v1alpha1/flunders"));
        assert!(!is_discovery(
            "/apis/wardle.example.com/v1alpha1/namespaces/a/flunders"
        ));
        assert!(!is_discovery("/apis/wardle.example.com"));
    }

    #[test]
    fn authorities_keep_the_port_and_bracket_ipv6() {
        let url = |s: &str| reqwest::Url::parse(s).unwrap();
        assert_eq!(
            authority_of(&url("https://api.wardle.svc:443")).unwrap(),
            "api.wardle.svc:443"
        );
        assert_eq!(
            authority_of(&url("https://127.0.0.1:8443/x")).unwrap(),
            "127.0.0.1:8443"
        );
        assert_eq!(
            authority_of(&url("https://[::1]:9443")).unwrap(),
            "[::1]:9443"
        );
        assert_eq!(
            authority_of(&url("https://example.com")).unwrap(),
            "example.com:443"
        );
    }
}
