//! TLS for apiary's HTTPS clients (admission and conversion webhooks, the aggregator's proxy to
//! aggregated API servers): a [`rustls::ClientConfig`] whose server certificate verification is
//! that of Go's crypto/x509, so apiary accepts the certificates kube-apiserver accepts and
//! refuses those it refuses, with Go's error texts.
//!
//! What differs from rustls' own (webpki) verification:
//!
//! - A leaf whose DER equals a certificate of the bundle is a chain of one, whatever its basic
//!   constraints say: a self-signed `CA:TRUE` serving certificate (what `openssl req -x509`
//!   makes) given as its own `caBundle` is accepted. Its validity period, name and extended key
//!   usages are still checked.
//! - Otherwise chains are built as Go builds them: to a root of the bundle, through the
//!   intermediates the server sent; CAs must assert `cA` (roots only when they are version 3),
//!   path lengths and DNS/IP name constraints hold, every certificate is within its validity
//!   period, and each one of the chain that lists extended key usages allows `serverAuth` (or
//!   any usage).
//! - The name is matched against the SANs only (Go ≥ 1.15 ignores the common name), with Go's
//!   wildcard rules, and may be another name than the URL's host: kube-apiserver connects to
//!   the address a service resolves to but verifies `<name>.<namespace>.svc`.
//! - Failures read as Go prints them: `tls: failed to verify certificate: x509: certificate
//!   signed by unknown authority` ([`CertificateVerificationError`], found in a client
//!   error's chain by [`verification_error`]).
//!
//! ```
//! use server::tls_client::{ClientTls, Trust};
//!
//! # fn main() -> Result<(), server::tls_client::TlsClientError> {
//! // A webhook's serving certificate, self-signed, with `CA:TRUE`, given as its own bundle.
//! let mut params = rcgen::CertificateParams::new(vec!["hooks.ns.svc".to_string()]).unwrap();
//! params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
//! let key = rcgen::KeyPair::generate().unwrap();
//! let cert = params.self_signed(&key).unwrap();
//!
//! let tls = ClientTls {
//!     trust: Trust::from_ca_bundle(cert.pem().as_bytes()),
//!     // Connect wherever the service resolves to, verify the service's DNS name.
//!     server_name: Some("hooks.ns.svc".to_string()),
//!     client_certificate: None,
//! };
//! let config: rustls::ClientConfig = tls.build()?;
//! # let _ = config;
//!
//! // The verification itself, as a handshake runs it.
//! let verifier = tls.verifier()?;
//! verifier
//!     .verify(cert.der(), &[], "hooks.ns.svc", std::time::SystemTime::now())
//!     .expect("Go accepts it");
//! let wrong = verifier
//!     .verify(cert.der(), &[], "other.ns.svc", std::time::SystemTime::now())
//!     .unwrap_err();
//! assert_eq!(
//!     wrong.to_string(),
//!     "tls: failed to verify certificate: x509: certificate is valid for hooks.ns.svc, not other.ns.svc"
//! );
//! # Ok(())
//! # }
//! ```

mod cert;
mod verify;

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};

use self::cert::Cert;

/// What the server's certificate is verified against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trust {
    /// The certificates of a PEM bundle (a `caBundle`).
    CaBundle(Vec<u8>),
    /// The system's roots (apiary ships the Mozilla roots of `webpki-roots`): a configuration
    /// without a `caBundle`.
    SystemRoots,
    /// No verification (`insecureSkipTLSVerify: true`); the handshake's signatures are still
    /// checked against the certificate the server sent.
    InsecureSkipVerify,
}

impl Trust {
    /// The trust of a `caBundle`: its certificates, or the system roots when it is empty.
    pub fn from_ca_bundle(pem: &[u8]) -> Trust {
        if pem.iter().all(u8::is_ascii_whitespace) {
            Trust::SystemRoots
        } else {
            Trust::CaBundle(pem.to_vec())
        }
    }
}

/// A client certificate to authenticate with: a PEM chain (the leaf first) and its PEM key.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientCertificate {
    /// The certificate chain, PEM.
    pub chain_pem: Vec<u8>,
    /// The private key, PEM (PKCS#8, PKCS#1 or SEC1).
    pub key_pem: Vec<u8>,
}

impl std::fmt::Debug for ClientCertificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCertificate")
            .field("chain_pem", &String::from_utf8_lossy(&self.chain_pem))
            .finish_non_exhaustive()
    }
}

/// How an HTTPS client's TLS is configured (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientTls {
    /// What the server's certificate must chain to.
    pub trust: Trust,
    /// The name the server's certificate is verified against instead of the host connected
    /// to (kube-apiserver's `ServerName`), or `None` for the host of the URL.
    pub server_name: Option<String>,
    /// The certificate presented to the server, if any.
    pub client_certificate: Option<ClientCertificate>,
}

/// Why a TLS client configuration could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsClientError {
    /// The `caBundle` is not PEM certificates.
    #[error("invalid caBundle: {0}")]
    InvalidBundle(String),
    /// The `caBundle` holds no certificate.
    #[error("caBundle holds no certificate")]
    EmptyBundle,
    /// The client certificate or its key could not be read or used.
    #[error("invalid client certificate: {0}")]
    ClientCertificate(String),
    /// rustls refused the configuration.
    #[error("{0}")]
    Config(String),
}

/// Why Go refuses a server's certificate: the texts of crypto/x509's errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// No chain reaches a root (`hint`: why the candidate authority of that name failed).
    #[error("x509: certificate signed by unknown authority{}", hint_text(.hint))]
    UnknownAuthority {
        /// The first candidate's failure and its name, as Go reports them.
        hint: Option<(String, String)>,
    },
    /// A certificate of the chain is outside its validity period.
    #[error("x509: certificate has expired or is not yet valid: {0}")]
    Expired(String),
    /// The name is not among the leaf's SANs.
    #[error("x509: certificate is valid for {valid}, not {host}")]
    Hostname {
        /// The SANs, comma separated.
        valid: String,
        /// The name wanted.
        host: String,
    },
    /// An IP was wanted and the leaf has no IP SAN.
    #[error("x509: cannot validate certificate for {0} because it doesn't contain any IP SANs")]
    NoIpSans(String),
    /// The leaf has no name at all.
    #[error("x509: certificate is not valid for any names, but wanted to match {0}")]
    NoNames(String),
    /// The name is only the leaf's common name, which Go ignores.
    #[error("x509: certificate relies on legacy Common Name field, use SANs instead")]
    LegacyCommonName,
    /// An intermediate is not a CA.
    #[error("x509: certificate is not authorized to sign other certificates")]
    NotAuthorizedToSign,
    /// A CA's path length constraint is exceeded.
    #[error("x509: too many intermediates for path length constraint")]
    TooManyIntermediates,
    /// No chain allows `serverAuth`.
    #[error("x509: certificate specifies an incompatible key usage")]
    IncompatibleUsage,
    /// A critical extension Go does not handle.
    #[error("x509: unhandled critical extension")]
    UnhandledCriticalExtension,
    /// A CA's name constraints exclude, or do not permit, a name of the leaf.
    #[error(
        "x509: a root or intermediate certificate is not authorized to sign for this name: {0}"
    )]
    NameConstraint(String),
    /// A CA constrains names of kinds apiary does not check.
    #[error(
        "x509: issuer has name constraints but leaf contains unknown or unconstrained name: {0}"
    )]
    UnconstrainedName(String),
    /// Too many signatures checked while building chains.
    #[error("x509: signature check attempts limit reached while verifying certificate chain")]
    SignatureCheckLimit,
    /// A certificate the server sent is not a certificate.
    #[error("{0}")]
    Malformed(String),
}

fn hint_text(hint: &Option<(String, String)>) -> String {
    match hint {
        None => String::new(),
        Some((error, name)) => format!(
            " (possibly because of {error:?} while trying to verify candidate authority certificate {name:?})"
        ),
    }
}

/// A refused server certificate as crypto/tls reports it: `tls: failed to verify
/// certificate: <why>` (or `tls: failed to parse certificate from server: <why>`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CertificateVerificationError {
    /// The certificate was verified and refused.
    #[error("tls: failed to verify certificate: {0}")]
    Verify(VerifyError),
    /// A certificate the server sent could not be parsed.
    #[error("tls: failed to parse certificate from server: {0}")]
    Parse(String),
}

/// The [`CertificateVerificationError`] somewhere in `error`'s chain of causes (a reqwest or
/// hyper error of a refused handshake), as its text.
pub fn verification_error(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(found) = from_rustls(e) {
            return Some(found);
        }
        // io::Error hides its inner error from `source()` (and connectors wrap io errors in io
        // errors): look inside.
        let mut inner = e;
        while let Some(io) = inner.downcast_ref::<std::io::Error>()
            && let Some(wrapped) = io.get_ref()
        {
            inner = wrapped;
            if let Some(found) = from_rustls(inner) {
                return Some(found);
            }
        }
        next = e.source();
    }
    None
}

fn from_rustls(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    match e.downcast_ref::<rustls::Error>()? {
        rustls::Error::InvalidCertificate(CertificateError::Other(other)) => other
            .0
            .downcast_ref::<CertificateVerificationError>()
            .map(ToString::to_string),
        _ => None,
    }
}

impl ClientTls {
    /// The rustls configuration: TLS 1.2 and 1.3 with ring's cipher suites and signature
    /// schemes, the verifier of [`ClientTls::verifier`], and the client certificate. No ALPN
    /// protocol is set (the HTTP client sets its own).
    pub fn build(&self) -> Result<rustls::ClientConfig, TlsClientError> {
        let verifier = Arc::new(self.verifier()?);
        let provider = verifier.provider.clone();
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|e| TlsClientError::Config(e.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        match &self.client_certificate {
            None => Ok(builder.with_no_client_auth()),
            Some(c) => {
                let bad =
                    |e: &dyn std::fmt::Display| TlsClientError::ClientCertificate(e.to_string());
                let chain = rustls_pemfile::certs(&mut c.chain_pem.as_slice())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| bad(&e))?;
                if chain.is_empty() {
                    return Err(bad(&"no certificate in the chain"));
                }
                let key = rustls_pemfile::private_key(&mut c.key_pem.as_slice())
                    .map_err(|e| bad(&e))?
                    .ok_or_else(|| bad(&"no private key"))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| bad(&e))
            }
        }
    }

    /// The server certificate verifier alone (see [`GoVerifier`]).
    pub fn verifier(&self) -> Result<GoVerifier, TlsClientError> {
        let roots = match &self.trust {
            Trust::CaBundle(pem) => Some(parse_bundle(pem)?),
            Trust::SystemRoots => Some(
                webpki_roots::TLS_SERVER_ROOTS
                    .iter()
                    .map(Cert::anchor)
                    .collect(),
            ),
            Trust::InsecureSkipVerify => None,
        };
        Ok(GoVerifier {
            roots,
            server_name: self.server_name.clone(),
            provider: Arc::new(rustls::crypto::ring::default_provider()),
        })
    }
}

/// The certificates of a PEM bundle, as Go's `AppendCertsFromPEM` reads them: every
/// `CERTIFICATE` block that parses (others are skipped); none at all is an error.
fn parse_bundle(pem: &[u8]) -> Result<Vec<Cert>, TlsClientError> {
    let mut certs = Vec::new();
    for item in rustls_pemfile::read_all(&mut &pem[..]) {
        match item {
            Ok(rustls_pemfile::Item::X509Certificate(der)) => {
                if let Ok(c) = Cert::parse(&der) {
                    certs.push(c);
                }
            }
            Ok(_) => {}
            Err(e) => return Err(TlsClientError::InvalidBundle(e.to_string())),
        }
    }
    if certs.is_empty() {
        return Err(TlsClientError::EmptyBundle);
    }
    Ok(certs)
}

/// A [`ServerCertVerifier`] with the semantics of Go's `(*x509.Certificate).Verify` for a TLS
/// client (see the module documentation).
pub struct GoVerifier {
    /// The roots (none: insecure, nothing is verified).
    roots: Option<Vec<Cert>>,
    /// The name verified instead of the connection's.
    server_name: Option<String>,
    /// The signature algorithms (ring's).
    provider: Arc<CryptoProvider>,
}

impl std::fmt::Debug for GoVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoVerifier")
            .field("roots", &self.roots.as_ref().map(Vec::len))
            .field("server_name", &self.server_name)
            .finish()
    }
}

impl GoVerifier {
    /// Verifies the server's certificate `leaf` (DER), sent with `intermediates`, for `name`
    /// (a DNS name or an IP address) at `now`, as Go does. An insecure verifier accepts
    /// anything.
    pub fn verify(
        &self,
        leaf: &[u8],
        intermediates: &[&[u8]],
        name: &str,
        now: SystemTime,
    ) -> Result<(), CertificateVerificationError> {
        let Some(roots) = &self.roots else {
            return Ok(());
        };
        let leaf = Cert::parse(leaf).map_err(CertificateVerificationError::Parse)?;
        let intermediates = intermediates
            .iter()
            .map(|der| Cert::parse(der))
            .collect::<Result<Vec<_>, _>>()
            .map_err(CertificateVerificationError::Parse)?;
        let now = match now.duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_secs() as i64,
            Err(e) => -(e.duration().as_secs() as i64),
        };
        verify::Verification {
            roots,
            intermediates: &intermediates,
            name,
            now,
            algorithms: self.algorithms(),
        }
        .verify(&leaf)
        .map_err(CertificateVerificationError::Verify)
    }

    fn algorithms(&self) -> &WebPkiSupportedAlgorithms {
        &self.provider.signature_verification_algorithms
    }
}

impl ServerCertVerifier for GoVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let connected = server_name.to_str();
        let name = self.server_name.as_deref().unwrap_or(&connected);
        let intermediates: Vec<&[u8]> = intermediates.iter().map(|c| c.as_ref()).collect();
        let now = UNIX_EPOCH + std::time::Duration::from_secs(now.as_secs());
        self.verify(end_entity.as_ref(), &intermediates, name, now)
            .map(|()| ServerCertVerified::assertion())
            .map_err(|e| {
                rustls::Error::InvalidCertificate(CertificateError::Other(rustls::OtherError(
                    Arc::new(e),
                )))
            })
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, self.algorithms())
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, self.algorithms())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms().supported_schemes()
    }
}

#[cfg(test)]
mod tests;
