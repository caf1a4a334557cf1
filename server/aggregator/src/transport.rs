//! How the aggregator reaches an aggregated API server: HTTPS to the address the service
//! resolver gives, the serving certificate verified against the APIService's `caBundle` for
//! the Service's DNS name `<name>.<namespace>.svc` (or not at all with
//! `insecureSkipTLSVerify`), the aggregator authenticated by the front-proxy client
//! certificate (kube-aggregator's `BuildTransportConfig`). One pooled HTTP/1.1 client per
//! (address, Service, trust), so consecutive requests reuse their connections; a connection
//! the server closed (it went away) leaves the pool, and at most [`MAX_IDLE_PER_HOST`] idle
//! ones are kept.

use std::collections::HashMap;
use std::time::Duration;

use axum::body::Body;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use parking_lot::{Mutex, RwLock};
use rustls::ClientConfig;
use rustls_pki_types::ServerName;
use server::tls_client::{ClientCertificate, ClientTls, Trust};

use crate::AggregatorError;
use crate::table::ServiceTarget;

/// How long connecting to an aggregated server may take (kube-aggregator's proxy dialer).
pub const DIAL_TIMEOUT: Duration = Duration::from_secs(30);

/// How many idle connections a client keeps to one aggregated server: a burst of requests
/// opens more, and those beyond it are closed once idle instead of waiting out the idle
/// timeout.
///
/// kube-aggregator's transports keep client-go's 25, but they speak HTTP/2 to aggregated
/// servers, where one connection carries every concurrent request. Over HTTP/1.1 a connection
/// carries one request at a time, so the pool must keep as many as there are requests in
/// flight or every request beyond the cap pays a TLS handshake on both sides: with 25, main
/// spent 294 µs per proxied GET at 64 concurrent clients against 108 µs at 16 (BENCHMARKS.md,
/// "API aggregation"). An idle connection costs a socket and its buffers (tens of KiB).
pub const MAX_IDLE_PER_HOST: usize = 128;

/// How long an idle connection is kept (Go's `http.Transport` default `IdleConnTimeout`).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// How many clients are kept before the memo starts over.
const MAX_CLIENTS: usize = 256;

/// The client certificate and key (PEM) the aggregator presents to aggregated servers: the
/// front-proxy client certificate, which they trust through `--requestheader-client-ca-file`.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    /// The certificate chain, PEM.
    pub cert_pem: Vec<u8>,
    /// The private key, PEM.
    pub key_pem: Vec<u8>,
}

impl std::fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientIdentity").finish_non_exhaustive()
    }
}

/// The HTTP client the proxy and the discovery check send with.
pub type ProxyClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Body>;

/// The TLS configuration of a connection to `target`'s server: its certificate verified as
/// Go's crypto/x509 verifies it ([`server::tls_client`]) against the `caBundle` (the system
/// roots when it is empty, nothing with `insecureSkipTLSVerify`) for the Service's DNS name,
/// `identity` as the client certificate (the connector offers ALPN `http/1.1` itself).
pub fn client_tls_config(
    target: &ServiceTarget,
    identity: Option<&ClientIdentity>,
) -> Result<ClientConfig, AggregatorError> {
    let trust = if target.insecure_skip_tls_verify {
        Trust::InsecureSkipVerify
    } else {
        Trust::from_ca_bundle(&target.ca_bundle)
    };
    ClientTls {
        trust,
        server_name: Some(server::webhook::service_dns_name(
            &target.namespace,
            &target.name,
        )),
        client_certificate: identity.map(|id| ClientCertificate {
            chain_pem: id.cert_pem.clone(),
            key_pem: id.key_pem.clone(),
        }),
    }
    .build()
    .map_err(|e| AggregatorError::Tls(e.to_string()))
}

/// The cause of a failed request to an aggregated server as Go words it: a refused serving
/// certificate as crypto/tls reports it (`tls: failed to verify certificate: x509: …`), any
/// other failure as its chain of causes.
pub fn describe_error(error: &(dyn std::error::Error + 'static)) -> String {
    server::tls_client::verification_error(error)
        .unwrap_or_else(|| server::webhook::error_chain(error))
}

/// The aggregator's clients to aggregated servers, by address and Service (see the module).
#[derive(Default)]
pub struct ProxyTransport {
    identity: RwLock<Option<ClientIdentity>>,
    /// By address (`host:port`), then by the Service's name and trust: looked up on every
    /// proxied request without building a key.
    clients: Mutex<HashMap<String, Vec<(ServiceTarget, ProxyClient)>>>,
}

impl std::fmt::Debug for ProxyTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyTransport")
            .field("addresses", &self.clients.lock().len())
            .finish_non_exhaustive()
    }
}

impl ProxyTransport {
    /// A transport presenting `identity` (none: no client certificate).
    pub fn new(identity: Option<ClientIdentity>) -> Self {
        Self {
            identity: RwLock::new(identity),
            clients: Mutex::default(),
        }
    }

    /// Presents `identity` from now on (the pooled connections are dropped when it changed).
    pub fn set_identity(&self, identity: Option<ClientIdentity>) {
        let mut current = self.identity.write();
        if *current != identity {
            *current = identity;
            self.clients.lock().clear();
        }
    }

    /// The client certificate presented now, if any.
    pub fn identity(&self) -> Option<ClientIdentity> {
        self.identity.read().clone()
    }

    /// The client connecting to `authority` (`host:port`, from the service resolver) for
    /// `target`'s Service.
    pub fn client(
        &self,
        authority: &str,
        target: &ServiceTarget,
    ) -> Result<ProxyClient, AggregatorError> {
        if let Some(clients) = self.clients.lock().get(authority)
            && let Some((_, client)) = clients.iter().find(|(t, _)| t == target)
        {
            return Ok(client.clone());
        }
        let tls = client_tls_config(target, self.identity.read().as_ref())?;
        let dns = server::webhook::service_dns_name(&target.namespace, &target.name);
        let name = ServerName::try_from(dns.clone())
            .map_err(|_| AggregatorError::Tls(format!("invalid server name {dns:?}")))?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(DIAL_TIMEOUT));
        http.set_nodelay(true);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_only()
            .with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name))
            .enable_http1()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(IDLE_TIMEOUT)
            .pool_max_idle_per_host(MAX_IDLE_PER_HOST)
            .build(connector);
        let mut clients = self.clients.lock();
        if clients.values().map(Vec::len).sum::<usize>() >= MAX_CLIENTS {
            clients.clear();
        }
        let for_address = clients.entry(authority.to_string()).or_default();
        // A concurrent first request may have built one meanwhile: keep a single pool.
        if let Some((_, existing)) = for_address.iter().find(|(t, _)| t == target) {
            return Ok(existing.clone());
        }
        for_address.push((target.clone(), client.clone()));
        Ok(client)
    }
}
