//! Calling webhooks (k8s.io/apiserver's `pkg/util/webhook`): where a webhook's `clientConfig`
//! points (its `url`, or a `service` reference resolved at each call, [`Endpoint`]), HTTPS
//! clients that trust the configuration's `caBundle` and verify certificates as Go does
//! ([`crate::tls_client`]; HTTP/1.1 only, redirects never followed, connections reused per
//! trust bundle and verified name), and one POST of a JSON review with a timeout and a bound on the answer.
//!
//! What a review holds and how its answer is checked belongs to the caller: admission webhooks
//! (the control plane's `AdmissionReview`) and CustomResourceDefinition conversion webhooks
//! (the extension server's `ConversionReview`) both call through here.

use std::collections::HashMap;
use std::time::Duration;

use parking_lot::Mutex;

/// The largest webhook answer read; a longer one is a failed call (apiary's bound: the
/// 3 MiB kube-apiserver allows for a request body).
pub const MAX_RESPONSE_BYTES: usize = 3 * 1024 * 1024;

/// Why a call did not produce an answer to check. The texts are those kube-apiserver's
/// admission plugins report after `failed calling webhook "<name>": ` (a caller may word them
/// otherwise).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    /// No client could be built for the configuration (an unusable `caBundle`).
    #[error("{0}")]
    Client(String),
    /// The request could not be sent or answered in time (refused, unreachable, TLS, timeout):
    /// `Post "<url>": <why>`.
    #[error("{0}")]
    Post(String),
    /// The webhook answered with another status than 200.
    #[error(
        "the server responded with the status code {code} but did not return more information: {body}"
    )]
    Status {
        /// The HTTP status code.
        code: u16,
        /// The first 256 bytes of the answer's body, as text.
        body: String,
    },
    /// The answer was longer than [`MAX_RESPONSE_BYTES`].
    #[error("the response is longer than {0} bytes")]
    TooLong(usize),
}

/// A `service` reference of a `clientConfig`.
#[derive(Debug, Clone, Copy)]
pub struct ServiceReference<'a> {
    /// The service's namespace.
    pub namespace: &'a str,
    /// The service's name.
    pub name: &'a str,
    /// The URL path sent to (none: `/`).
    pub path: Option<&'a str>,
    /// The service's port (none: 443).
    pub port: Option<i32>,
}

/// Where a webhook is reached: its `url` (which must be `https`), or
/// `https://<service>.<namespace>.svc:<port><path>` for a service reference (resolved by name,
/// as kube-apiserver's default service resolver does).
pub fn url_of(url: Option<&str>, service: Option<ServiceReference<'_>>) -> Result<String, String> {
    if let Some(url) = url.filter(|u| !u.is_empty()) {
        if !url.starts_with("https://") {
            return Err(format!("the webhook URL {url:?} is not https"));
        }
        return Ok(url.to_string());
    }
    if let Some(s) = service {
        return Ok(format!(
            "https://{}.{}.svc:{}{}",
            s.name,
            s.namespace,
            s.port.unwrap_or(443),
            s.path.unwrap_or("")
        ));
    }
    Err("the webhook has neither a url nor a service".into())
}

/// Where a Service's port is reached: kube-apiserver's `ServiceResolver`, used by everything
/// that calls a `service{namespace, name, port}` reference (admission webhooks, conversion
/// webhooks, aggregated API servers).
///
/// The answer is the `https://host:port` to connect to; the caller still verifies the peer's
/// certificate for the service's DNS name, [`service_dns_name`], whatever host it connects to.
///
/// ```
/// use server::webhook::{DnsServiceResolver, ServiceResolver};
///
/// let url = DnsServiceResolver.resolve("ns", "hooks", 8443).unwrap();
/// assert_eq!(url.as_str(), "https://hooks.ns.svc:8443/");
/// ```
pub trait ServiceResolver: Send + Sync + 'static {
    /// The address of `port` of the Service `namespace/name`, or why it has none (the Service
    /// does not exist, has no such port, no ready endpoints, …), worded for the caller's
    /// message.
    fn resolve(&self, namespace: &str, name: &str, port: i32) -> Result<reqwest::Url, String>;
}

/// The resolver of a server without Services: the service's DNS name
/// (`<name>.<namespace>.svc`) and the port as given, as k8s.io/apiserver's
/// `DefaultServiceResolver`.
#[derive(Debug, Clone, Copy, Default)]
pub struct DnsServiceResolver;

impl ServiceResolver for DnsServiceResolver {
    fn resolve(&self, namespace: &str, name: &str, port: i32) -> Result<reqwest::Url, String> {
        let host = service_dns_name(namespace, name);
        reqwest::Url::parse(&format!("https://{host}:{port}"))
            .map_err(|e| format!("the service address of {namespace}/{name} is invalid: {e}"))
    }
}

/// The DNS name a Service's serving certificate is verified against:
/// `<name>.<namespace>.svc`.
pub fn service_dns_name(namespace: &str, name: &str) -> String {
    format!("{name}.{namespace}.svc")
}

/// Where a `clientConfig` points: its `url`, or a `service` reference resolved at every call
/// (a Service that changes takes effect on the next call, as in kube-apiserver).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A `url` (https); the peer is verified against its host.
    Url(reqwest::Url),
    /// A `service` reference; the peer is verified against [`service_dns_name`].
    Service {
        /// The service's namespace.
        namespace: String,
        /// The service's name.
        name: String,
        /// The service's port (443 when the reference gives none).
        port: i32,
        /// The path sent to (empty: `/`).
        path: String,
        /// `https://<name>.<namespace>.svc:<port><path>`, the URL messages name (the port
        /// always written, as kube-apiserver writes it).
        url: String,
    },
}

impl Endpoint {
    /// The endpoint of a `clientConfig`'s `url` or `service` (see [`url_of`]).
    ///
    /// ```
    /// use server::webhook::{DnsServiceResolver, Endpoint, ServiceReference};
    ///
    /// let service = ServiceReference { namespace: "ns", name: "hooks", path: Some("/v"), port: None };
    /// let endpoint = Endpoint::of(None, Some(service)).unwrap();
    /// assert_eq!(endpoint.server_name().as_deref(), Some("hooks.ns.svc"));
    /// let url = endpoint.resolve(&DnsServiceResolver).unwrap();
    /// assert_eq!(url.as_str(), "https://hooks.ns.svc/v");
    /// ```
    pub fn of(
        url: Option<&str>,
        service: Option<ServiceReference<'_>>,
    ) -> Result<Endpoint, String> {
        let text = url_of(url, service)?;
        let parsed = reqwest::Url::parse(&text)
            .map_err(|e| format!("the webhook URL {text:?} is invalid: {e}"))?;
        match service.filter(|_| url.is_none_or(str::is_empty)) {
            None => Ok(Endpoint::Url(parsed)),
            Some(s) => Ok(Endpoint::Service {
                namespace: s.namespace.to_string(),
                name: s.name.to_string(),
                port: s.port.unwrap_or(443),
                path: s.path.unwrap_or("").to_string(),
                url: text,
            }),
        }
    }

    /// The name the peer's certificate is verified against instead of the URL's host: the
    /// service's DNS name, or `None` for a `url`.
    pub fn server_name(&self) -> Option<String> {
        match self {
            Endpoint::Url(_) => None,
            Endpoint::Service {
                namespace, name, ..
            } => Some(service_dns_name(namespace, name)),
        }
    }

    /// The URL to call now: the `url`, or the address `resolver` gives the service with the
    /// reference's path. A service that does not resolve fails as kube-apiserver's dial does:
    /// `Post "https://<name>.<namespace>.svc:<port><path>": <why>`.
    pub fn resolve(&self, resolver: &dyn ServiceResolver) -> Result<reqwest::Url, WebhookError> {
        match self {
            Endpoint::Url(url) => Ok(url.clone()),
            Endpoint::Service {
                namespace,
                name,
                port,
                path,
                url,
            } => {
                let mut resolved = resolver
                    .resolve(namespace, name, *port)
                    .map_err(|e| WebhookError::Post(format!("Post {url:?}: {e}")))?;
                resolved.set_path(path);
                Ok(resolved)
            }
        }
    }
}

/// The key of a cached client: the trust bundle and the name verified.
type ClientKey = (Vec<u8>, Option<String>);

/// HTTPS clients by trust bundle and verified name, so calls to one webhook reuse their
/// connections. Their certificates are verified as Go verifies them ([`crate::tls_client`]).
#[derive(Default)]
pub struct Clients {
    by_bundle: Mutex<HashMap<ClientKey, reqwest::Client>>,
}

impl std::fmt::Debug for Clients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clients")
            .field("bundles", &self.by_bundle.lock().len())
            .finish()
    }
}

impl Clients {
    /// The client that trusts `ca_bundle` (PEM), or the system roots when it is empty, and
    /// verifies the peer's certificate for `server_name` (none: the URL's host).
    pub fn get(
        &self,
        ca_bundle: &[u8],
        server_name: Option<&str>,
    ) -> Result<reqwest::Client, WebhookError> {
        let key = (ca_bundle.to_vec(), server_name.map(str::to_string));
        if let Some(c) = self.by_bundle.lock().get(&key) {
            return Ok(c.clone());
        }
        let mut tls = crate::tls_client::ClientTls {
            trust: crate::tls_client::Trust::from_ca_bundle(ca_bundle),
            server_name: key.1.clone(),
            client_certificate: None,
        }
        .build()
        .map_err(|e| WebhookError::Client(e.to_string()))?;
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        // HTTP/1.1 only, as kube-apiserver calls webhooks (kubernetes#82090): one connection
        // per concurrent call, so calls to a service spread over its endpoints instead of
        // sharing one HTTP/2 connection to a single pod.
        let client = reqwest::Client::builder()
            .http1_only()
            .redirect(reqwest::redirect::Policy::none())
            .pool_idle_timeout(Duration::from_secs(90))
            .use_preconfigured_tls(tls)
            .build()
            .map_err(|e| WebhookError::Client(e.to_string()))?;
        let mut clients = self.by_bundle.lock();
        // A bounded memo: configurations with ever new bundles must not grow it forever.
        if clients.len() >= 256 {
            clients.clear();
        }
        clients.insert(key, client.clone());
        Ok(client)
    }
}

/// POSTs `body` (a JSON review) to `url` and returns the answer's body: a 200 answer of at
/// most [`MAX_RESPONSE_BYTES`], within `timeout`.
pub async fn post_json(
    client: &reqwest::Client,
    url: &reqwest::Url,
    timeout: Duration,
    body: Vec<u8>,
) -> Result<Vec<u8>, WebhookError> {
    let post =
        |e: &dyn std::fmt::Display| WebhookError::Post(format!("Post {:?}: {e}", url.as_str()));
    // A refused certificate reads as crypto/tls words it, not as the chain of client errors.
    let cause = |e: &reqwest::Error| {
        crate::tls_client::verification_error(e).unwrap_or_else(|| error_chain(e))
    };
    let send = async {
        let mut response = client
            .post(url.clone())
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| post(&cause(&e)))?;
        let status = response.status();
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| post(&cause(&e)))? {
            if bytes.len() + chunk.len() > MAX_RESPONSE_BYTES {
                return Err(WebhookError::TooLong(MAX_RESPONSE_BYTES));
            }
            bytes.extend_from_slice(&chunk);
        }
        if status != reqwest::StatusCode::OK {
            let body = String::from_utf8_lossy(&bytes[..bytes.len().min(256)]).into_owned();
            return Err(WebhookError::Status {
                code: status.as_u16(),
                body,
            });
        }
        Ok(bytes)
    };
    match tokio::time::timeout(timeout, send).await {
        Ok(r) => r,
        Err(_) => Err(post(&format!(
            "context deadline exceeded (the webhook did not answer within {}s)",
            timeout.as_secs()
        ))),
    }
}

/// The whole cause of a client error (reqwest's own text stops at its outermost layer).
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_come_from_the_url_or_the_service() {
        assert_eq!(
            url_of(Some("https://h:8443/x"), None).unwrap(),
            "https://h:8443/x"
        );
        assert_eq!(
            url_of(Some("http://h/x"), None).unwrap_err(),
            "the webhook URL \"http://h/x\" is not https"
        );
        let service = ServiceReference {
            namespace: "ns",
            name: "hooks",
            path: Some("/convert"),
            port: None,
        };
        assert_eq!(
            url_of(None, Some(service)).unwrap(),
            "https://hooks.ns.svc:443/convert"
        );
        assert!(url_of(None, None).is_err());
    }

    /// A resolver that knows one service, at a loopback address.
    struct OneService;

    impl ServiceResolver for OneService {
        fn resolve(&self, namespace: &str, name: &str, port: i32) -> Result<reqwest::Url, String> {
            if (namespace, name, port) == ("ns", "hooks", 443) {
                return Ok(reqwest::Url::parse("https://127.0.0.1:9443").unwrap());
            }
            Err(format!("service \"{name}\" not found"))
        }
    }

    #[test]
    fn services_resolve_at_each_call_and_keep_their_path_and_name() {
        let service = ServiceReference {
            namespace: "ns",
            name: "hooks",
            path: Some("/mutate"),
            port: None,
        };
        let endpoint = Endpoint::of(None, Some(service)).unwrap();
        assert_eq!(endpoint.server_name().as_deref(), Some("hooks.ns.svc"));
        assert_eq!(
            endpoint.resolve(&OneService).unwrap().as_str(),
            "https://127.0.0.1:9443/mutate"
        );
        let missing = Endpoint::of(
            None,
            Some(ServiceReference {
                name: "gone",
                ..service
            }),
        )
        .unwrap();
        assert_eq!(
            missing.resolve(&OneService).unwrap_err().to_string(),
            "Post \"https://gone.ns.svc:443/mutate\": service \"gone\" not found"
        );
        // A url wins over a service, and is verified against its own host.
        let url = Endpoint::of(Some("https://h:8443/x"), Some(service)).unwrap();
        assert_eq!(url.server_name(), None);
        assert_eq!(
            url.resolve(&OneService).unwrap().as_str(),
            "https://h:8443/x"
        );
        // One client per bundle and verified name.
        let clients = Clients::default();
        clients.get(b"", None).unwrap();
        clients.get(b"", Some("hooks.ns.svc")).unwrap();
        clients.get(b"", Some("hooks.ns.svc")).unwrap();
        assert_eq!(clients.by_bundle.lock().len(), 2);
    }

    #[test]
    fn errors_read_as_kube_apiserver_prints_them() {
        let e = WebhookError::Status {
            code: 500,
            body: "boom".into(),
        };
        assert_eq!(
            e.to_string(),
            "the server responded with the status code 500 but did not return more information: boom"
        );
        assert_eq!(
            WebhookError::TooLong(MAX_RESPONSE_BYTES).to_string(),
            "the response is longer than 3145728 bytes"
        );
        let bad = Clients::default()
            .get(b"not a certificate", None)
            .unwrap_err();
        assert!(matches!(bad, WebhookError::Client(_)), "{bad:?}");
    }
}
