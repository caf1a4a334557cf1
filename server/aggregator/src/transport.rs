//! How the aggregator reaches an aggregated API server: HTTPS to the address the service
//! resolver gives, the serving certificate verified against the APIService's `caBundle` for
//! the Service's DNS name `<name>.<namespace>.svc` (or not at all with
//! `insecureSkipTLSVerify`), the aggregator authenticated by the front-proxy client
//! certificate (kube-aggregator's `BuildTransportConfig`). One pooled HTTP/1.1 client per
//! (address, Service, trust), so consecutive requests reuse their connections.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use parking_lot::{Mutex, RwLock};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

use crate::AggregatorError;
use crate::table::ServiceTarget;

/// How long connecting to an aggregated server may take (kube-aggregator's proxy dialer).
pub const DIAL_TIMEOUT: Duration = Duration::from_secs(30);

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

/// Accepts any server certificate (`insecureSkipTLSVerify`); the handshake signatures are
/// still checked.
#[derive(Debug)]
struct SkipVerify(Arc<CryptoProvider>);

impl ServerCertVerifier for SkipVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The TLS configuration of a connection to `target`'s server: trust from its `caBundle` (no
/// verification with `insecureSkipTLSVerify`), `identity` as the client certificate (the
/// connector offers ALPN `http/1.1` itself).
///
/// This is the one place the proxy's certificate verification is decided; a verifier that
/// accepts exactly what Go's crypto/x509 accepts replaces the trust store here.
pub fn client_tls_config(
    target: &ServiceTarget,
    identity: Option<&ClientIdentity>,
) -> Result<ClientConfig, AggregatorError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| AggregatorError::Tls(e.to_string()))?;
    let builder = if target.insecure_skip_tls_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(SkipVerify(provider)))
    } else {
        let mut roots = RootCertStore::empty();
        for cert in rustls_pemfile::certs(&mut &target.ca_bundle[..]) {
            let cert = cert.map_err(|e| AggregatorError::Tls(format!("invalid caBundle: {e}")))?;
            roots
                .add(cert)
                .map_err(|e| AggregatorError::Tls(format!("invalid caBundle: {e}")))?;
        }
        builder.with_root_certificates(roots)
    };
    let config = match identity {
        Some(id) => {
            let certs = rustls_pemfile::certs(&mut &id.cert_pem[..])
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| AggregatorError::Tls(format!("proxy client certificate: {e}")))?;
            let key: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut &id.key_pem[..])
                .map_err(|e| AggregatorError::Tls(format!("proxy client key: {e}")))?
                .ok_or_else(|| AggregatorError::Tls("proxy client key: no key".into()))?;
            builder
                .with_client_auth_cert(certs, key)
                .map_err(|e| AggregatorError::Tls(format!("proxy client certificate: {e}")))?
        }
        None => builder.with_no_client_auth(),
    };
    Ok(config)
}

/// What a pooled client is for: the address connected to and the Service's name and trust.
#[derive(Clone, PartialEq, Eq, Hash)]
struct ClientKey {
    authority: String,
    target: ServiceTarget,
}

/// The aggregator's clients to aggregated servers, by address and Service (see the module).
#[derive(Default)]
pub struct ProxyTransport {
    identity: RwLock<Option<ClientIdentity>>,
    clients: Mutex<HashMap<ClientKey, ProxyClient>>,
}

impl std::fmt::Debug for ProxyTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyTransport")
            .field("clients", &self.clients.lock().len())
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

    /// The client connecting to `authority` (`host:port`, from the service resolver) for
    /// `target`'s Service.
    pub fn client(
        &self,
        authority: &str,
        target: &ServiceTarget,
    ) -> Result<ProxyClient, AggregatorError> {
        let key = ClientKey {
            authority: authority.to_string(),
            target: target.clone(),
        };
        if let Some(c) = self.clients.lock().get(&key) {
            return Ok(c.clone());
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
            .pool_idle_timeout(Duration::from_secs(90))
            .build(connector);
        let mut clients = self.clients.lock();
        if clients.len() >= MAX_CLIENTS {
            clients.clear();
        }
        clients.insert(key, client.clone());
        Ok(client)
    }
}
