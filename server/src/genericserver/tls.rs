//! TLS for the secure port: TLS 1.2 and 1.3, ALPN `h2` and `http/1.1`, optional client
//! certificates (requests without one are anonymous) verified against the client CA by
//! authentication (an unverifiable one is answered 401, as kube-apiserver does), and a serving
//! certificate that is reloaded when its files change.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use parking_lot::RwLock;
use rustls::RootCertStore;
use rustls::server::danger::ClientCertVerifier;
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::authn::x509::DeferredClientVerifier;

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

fn read_file(path: &Path) -> Result<Vec<u8>, TlsError> {
    fs::read(path).map_err(|source| TlsError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Reads every certificate of a PEM file.
pub fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read_file(path)?;
    let certs: Result<Vec<_>, _> = rustls_pemfile::certs(&mut pem.as_slice()).collect();
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

/// Reads the first private key of a PEM file.
pub fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let pem = read_file(path)?;
    rustls_pemfile::private_key(&mut pem.as_slice())
        .map_err(|e| TlsError::Pem {
            path: path.display().to_string(),
            what: e.to_string(),
        })?
        .ok_or_else(|| TlsError::Pem {
            path: path.display().to_string(),
            what: "no private key found".into(),
        })
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn certified_key(cert: &Path, key: &Path) -> Result<CertifiedKey, TlsError> {
    let chain = load_certs(cert)?;
    let key = load_key(key)?;
    Ok(CertifiedKey::from_der(chain, key, &provider())?)
}

/// A serving certificate that follows its files: [`ReloadingCert::spawn_watcher`] polls their
/// modification times and swaps in the new pair when both parse.
#[derive(Debug)]
pub struct ReloadingCert {
    cert_path: PathBuf,
    key_path: PathBuf,
    current: RwLock<(Arc<CertifiedKey>, Option<SystemTime>)>,
}

fn mtime(cert: &Path, key: &Path) -> Option<SystemTime> {
    let a = fs::metadata(cert).and_then(|m| m.modified()).ok()?;
    let b = fs::metadata(key).and_then(|m| m.modified()).ok()?;
    Some(a.max(b))
}

impl ReloadingCert {
    /// Loads the pair.
    pub fn load(cert_path: PathBuf, key_path: PathBuf) -> Result<Arc<Self>, TlsError> {
        let ck = certified_key(&cert_path, &key_path)?;
        let stamp = mtime(&cert_path, &key_path);
        Ok(Arc::new(Self {
            cert_path,
            key_path,
            current: RwLock::new((Arc::new(ck), stamp)),
        }))
    }

    /// Reloads if the files changed; returns whether a new pair was installed.
    pub fn reload_if_changed(&self) -> bool {
        let stamp = mtime(&self.cert_path, &self.key_path);
        if stamp.is_none() || stamp == self.current.read().1 {
            return false;
        }
        match certified_key(&self.cert_path, &self.key_path) {
            Ok(ck) => {
                *self.current.write() = (Arc::new(ck), stamp);
                tracing::info!(cert = %self.cert_path.display(), "reloaded serving certificate");
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, "serving certificate changed but could not be loaded; keeping the old one");
                false
            }
        }
    }

    /// Polls the files every `interval` until the returned task is aborted.
    pub fn spawn_watcher(self: &Arc<Self>, interval: Duration) -> tokio::task::JoinHandle<()> {
        let me = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(interval).await;
                me.reload_if_changed();
            }
        })
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(&self.current.read().0))
    }
}

/// Builds the client verifier: a client may present no certificate; one it presents is checked
/// against `client_ca` by authentication ([`DeferredClientVerifier::check`]), so that an
/// untrusted or expired certificate is answered 401 rather than failing the handshake.
pub fn client_verifier(client_ca: &Path) -> Result<Arc<DeferredClientVerifier>, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in load_certs(client_ca)? {
        roots.add(cert)?;
    }
    let inner: Arc<dyn ClientCertVerifier> =
        WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
            .allow_unauthenticated()
            .build()
            .map_err(|e| TlsError::Verifier(e.to_string()))?;
    Ok(Arc::new(DeferredClientVerifier::new(inner)))
}

/// Builds the server configuration with client certificates checked against `client_ca`.
pub fn server_config(
    cert: Arc<ReloadingCert>,
    client_ca: &Path,
) -> Result<rustls::ServerConfig, TlsError> {
    server_config_with(cert, client_verifier(client_ca)?)
}

/// Builds the server configuration with `verifier` for client certificates.
pub fn server_config_with(
    cert: Arc<ReloadingCert>,
    verifier: Arc<DeferredClientVerifier>,
) -> Result<rustls::ServerConfig, TlsError> {
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .with_client_cert_verifier(verifier)
        .with_cert_resolver(cert);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// The TLS configuration for new connections and the client verifier it uses.
type TlsState = (
    Arc<rustls::ServerConfig>,
    Arc<DeferredClientVerifier>,
    Option<SystemTime>,
);

/// The live TLS configuration: the serving pair follows its files through [`ReloadingCert`], and
/// a change of the client CA bundle rebuilds the configuration used for new connections.
pub struct TlsReloader {
    cert: Arc<ReloadingCert>,
    client_ca: PathBuf,
    state: RwLock<TlsState>,
}

fn file_mtime(path: &Path) -> Option<SystemTime> {
    fs::metadata(path).and_then(|m| m.modified()).ok()
}

impl TlsReloader {
    /// Loads the serving pair and the client CA.
    pub fn new(cert: Arc<ReloadingCert>, client_ca: PathBuf) -> Result<Arc<Self>, TlsError> {
        let verifier = client_verifier(&client_ca)?;
        let config = Arc::new(server_config_with(
            Arc::clone(&cert),
            Arc::clone(&verifier),
        )?);
        let stamp = file_mtime(&client_ca);
        Ok(Arc::new(Self {
            cert,
            client_ca,
            state: RwLock::new((config, verifier, stamp)),
        }))
    }

    /// The configuration for the next connection.
    pub fn current(&self) -> Arc<rustls::ServerConfig> {
        Arc::clone(&self.state.read().0)
    }

    /// The configuration for the next connection and the verifier of its client certificates.
    pub fn current_with_verifier(
        &self,
    ) -> (Arc<rustls::ServerConfig>, Arc<DeferredClientVerifier>) {
        let state = self.state.read();
        (Arc::clone(&state.0), Arc::clone(&state.1))
    }

    /// Reloads what changed; returns whether the client CA was reloaded.
    pub fn reload_if_changed(&self) -> bool {
        self.cert.reload_if_changed();
        let stamp = file_mtime(&self.client_ca);
        if stamp.is_none() || stamp == self.state.read().2 {
            return false;
        }
        let built = client_verifier(&self.client_ca).and_then(|verifier| {
            server_config_with(Arc::clone(&self.cert), Arc::clone(&verifier))
                .map(|config| (config, verifier))
        });
        match built {
            Ok((config, verifier)) => {
                *self.state.write() = (Arc::new(config), verifier, stamp);
                tracing::info!(client_ca = %self.client_ca.display(), "reloaded the client CA");
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, "client CA changed but could not be loaded; keeping the old one");
                false
            }
        }
    }

    /// Polls the files every `interval` until the returned task is aborted.
    pub fn spawn_watcher(self: &Arc<Self>, interval: Duration) -> tokio::task::JoinHandle<()> {
        let me = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(interval).await;
                me.reload_if_changed();
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_pair(dir: &Path, cn: &str) -> (PathBuf, PathBuf) {
        let key = rcgen::KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .unwrap_or_else(|e| panic!("{e}"));
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        let cert = params.self_signed(&key).unwrap_or_else(|e| panic!("{e}"));
        let (c, k) = (dir.join("tls.crt"), dir.join("tls.key"));
        fs::write(&c, cert.pem()).unwrap_or_else(|e| panic!("{e}"));
        fs::write(&k, key.serialize_pem()).unwrap_or_else(|e| panic!("{e}"));
        (c, k)
    }

    fn leaf(cert: &ReloadingCert) -> Vec<u8> {
        cert.current.read().0.cert[0].to_vec()
    }

    #[test]
    fn reloads_when_files_change() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (c, k) = write_pair(dir.path(), "first");
        let cert = ReloadingCert::load(c.clone(), k.clone()).unwrap_or_else(|e| panic!("{e}"));
        let before = leaf(&cert);
        assert!(!cert.reload_if_changed(), "unchanged files must not reload");

        write_pair(dir.path(), "second");
        let later = SystemTime::now() + Duration::from_secs(5);
        for p in [&c, &k] {
            let f = fs::File::options()
                .write(true)
                .open(p)
                .unwrap_or_else(|e| panic!("{e}"));
            f.set_modified(later).unwrap_or_else(|e| panic!("{e}"));
        }
        assert!(cert.reload_if_changed());
        assert_ne!(leaf(&cert), before);

        // A broken replacement keeps the previous pair.
        fs::write(&c, "garbage").unwrap_or_else(|e| panic!("{e}"));
        let f = fs::File::options()
            .write(true)
            .open(&c)
            .unwrap_or_else(|e| panic!("{e}"));
        f.set_modified(later + Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("{e}"));
        let current = leaf(&cert);
        assert!(!cert.reload_if_changed());
        assert_eq!(leaf(&cert), current);
    }

    #[test]
    fn client_ca_changes_rebuild_the_config() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (c, k) = write_pair(dir.path(), "serving");
        let ca = dir.path().join("ca.crt");
        fs::copy(&c, &ca).unwrap_or_else(|e| panic!("{e}"));
        let cert = ReloadingCert::load(c, k).unwrap_or_else(|e| panic!("{e}"));
        let reloader = TlsReloader::new(cert, ca.clone()).unwrap_or_else(|e| panic!("{e}"));
        let before = reloader.current();
        assert!(!reloader.reload_if_changed());
        let f = fs::File::options()
            .write(true)
            .open(&ca)
            .unwrap_or_else(|e| panic!("{e}"));
        f.set_modified(SystemTime::now() + Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(reloader.reload_if_changed());
        assert!(!Arc::ptr_eq(&before, &reloader.current()));
    }

    #[test]
    fn server_config_offers_h2_and_http11() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (c, k) = write_pair(dir.path(), "ca");
        let cert = ReloadingCert::load(c.clone(), k).unwrap_or_else(|e| panic!("{e}"));
        let config = server_config(cert, &c).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            config.alpn_protocols,
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        );
    }
}
