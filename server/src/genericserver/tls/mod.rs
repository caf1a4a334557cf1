//! TLS for the secure port, as kube-apiserver's secure serving: TLS 1.2 and 1.3 only
//! (`--tls-min-version`), strong cipher suites (`--tls-cipher-suites`, [`ciphers`]), ALPN `h2`
//! and `http/1.1`, client certificates verified against the client CA but optional (requests
//! without one are anonymous), SNI certificates (`--tls-sni-cert-key`, [`sni`]) and every file
//! reloaded when its content changes ([`reload`]).

pub mod ciphers;
pub mod reload;
pub mod sni;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::RootCertStore;
use rustls::crypto::CryptoProvider;
use rustls::server::danger::ClientCertVerifier;

use crate::authn::x509::DeferredClientVerifier;
use rustls::server::{ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

pub use self::ciphers::{TlsVersion, parse_cipher_suites};
pub use self::reload::TlsReloader;
pub use self::sni::SniCertKey;

/// Why the TLS configuration could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A file held no usable PEM item.
    #[error("{path}: {what}")]
    Pem {
        /// The file.
        path: String,
        /// What was wrong.
        what: String,
    },
    /// rustls refused the material.
    #[error("tls: {0}")]
    Rustls(#[from] rustls::Error),
    /// The client verifier could not be built.
    #[error("client CA: {0}")]
    Verifier(String),
}

/// Where the TLS material and settings of the secure port come from.
#[derive(Clone, Debug)]
pub struct TlsOptions {
    /// The default serving certificate chain (PEM, leaf first).
    pub cert: PathBuf,
    /// The default serving key (PEM).
    pub key: PathBuf,
    /// `--tls-sni-cert-key`: certificates chosen by the name the client asks for.
    pub sni: Vec<SniCertKey>,
    /// The client CA bundle (PEM).
    pub client_ca: PathBuf,
    /// `--tls-min-version`.
    pub min_version: TlsVersion,
    /// `--tls-cipher-suites`, resolved by [`parse_cipher_suites`]; empty means every suite of
    /// [`ciphers::PREFERRED`].
    pub cipher_suites: Vec<rustls::SupportedCipherSuite>,
}

impl TlsOptions {
    /// The default serving pair and client CA, without SNI certificates, with the default
    /// version and suites.
    pub fn new(cert: PathBuf, key: PathBuf, client_ca: PathBuf) -> Self {
        Self {
            cert,
            key,
            sni: Vec::new(),
            client_ca,
            min_version: TlsVersion::default(),
            cipher_suites: Vec::new(),
        }
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>, TlsError> {
    fs::read(path).map_err(|source| TlsError::Io {
        path: path.display().to_string(),
        source,
    })
}

fn parse_certs(pem: &[u8], path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs: Result<Vec<_>, _> = rustls_pemfile::certs(&mut &pem[..]).collect();
    let certs = certs.map_err(|e| TlsError::Pem {
        path: path.display().to_string(),
        what: e.to_string(),
    })?;
    if certs.is_empty() {
        return Err(TlsError::Pem {
            path: path.display().to_string(),
            what: "no certificate found".into(),
        });
    }
    Ok(certs)
}

fn parse_key(pem: &[u8], path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    rustls_pemfile::private_key(&mut &pem[..])
        .map_err(|e| TlsError::Pem {
            path: path.display().to_string(),
            what: e.to_string(),
        })?
        .ok_or_else(|| TlsError::Pem {
            path: path.display().to_string(),
            what: "no private key found".into(),
        })
}

/// Reads every certificate of a PEM file.
pub fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    parse_certs(&read_file(path)?, path)
}

/// Reads the first private key of a PEM file.
pub fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    parse_key(&read_file(path)?, path)
}

/// The crypto provider of the secure port: *ring*, with `suites` (when empty, *ring*'s
/// defaults, which are exactly the suites of [`ciphers::PREFERRED`]).
pub fn provider(suites: &[rustls::SupportedCipherSuite]) -> Arc<CryptoProvider> {
    let mut provider = rustls::crypto::ring::default_provider();
    if !suites.is_empty() {
        provider.cipher_suites = suites.to_vec();
    }
    Arc::new(provider)
}

/// Builds a certificate/key pair from the PEM contents of its two files; the key must match the
/// leaf certificate.
pub fn certified_key(
    cert_pem: &[u8],
    cert_path: &Path,
    key_pem: &[u8],
    key_path: &Path,
) -> Result<CertifiedKey, TlsError> {
    let chain = parse_certs(cert_pem, cert_path)?;
    let key = parse_key(key_pem, key_path)?;
    let provider = rustls::crypto::ring::default_provider();
    Ok(CertifiedKey::from_der(chain, key, &provider)?)
}

/// Builds the client verifier from a PEM CA bundle: a client may present no certificate
/// (kube-apiserver's `RequestClientCert`); one it presents is checked against the bundle by
/// authentication ([`DeferredClientVerifier::check`]), so that an untrusted or expired
/// certificate is answered 401 rather than failing the handshake.
pub fn client_verifier(
    ca_pem: &[u8],
    ca_path: &Path,
) -> Result<Arc<DeferredClientVerifier>, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in parse_certs(ca_pem, ca_path)? {
        roots.add(cert)?;
    }
    let inner: Arc<dyn ClientCertVerifier> = WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        Arc::new(rustls::crypto::ring::default_provider()),
    )
    .allow_unauthenticated()
    .build()
    .map_err(|e| TlsError::Verifier(e.to_string()))?;
    Ok(Arc::new(DeferredClientVerifier::new(inner)))
}

/// Builds a server configuration: the protocol versions from `min_version` up, the crypto
/// provider's suites, the client verifier, the certificate resolver, and ALPN `h2` then
/// `http/1.1`.
pub fn server_config(
    provider: Arc<CryptoProvider>,
    min_version: TlsVersion,
    verifier: Arc<dyn ClientCertVerifier>,
    resolver: Arc<dyn ResolvesServerCert>,
) -> Result<rustls::ServerConfig, TlsError> {
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(min_version.versions())?
        .with_client_cert_verifier(verifier)
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}
