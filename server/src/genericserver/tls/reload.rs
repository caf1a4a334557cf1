//! The live TLS configuration of the secure port: the serving certificate, the SNI certificates
//! and the client CA follow their files, as kube-apiserver's `dynamiccertificates` controllers.
//! A poll reads the files and compares their content with what was last loaded; new content
//! that loads is used by the next connection (open connections keep theirs), new content that
//! does not load is logged once and the previous material stays in use.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use rustls::crypto::CryptoProvider;
use rustls::server::danger::ClientCertVerifier;

use crate::authn::x509::DeferredClientVerifier;
use rustls::sign::CertifiedKey;

use super::sni::{CertStore, SniResolver};
use super::{TlsError, TlsOptions, TlsVersion, certified_key, client_verifier, read_file};

/// A certificate/key pair that follows its files.
struct PairSlot {
    cert: PathBuf,
    key: PathBuf,
    names: Vec<String>,
    /// The content of the files last loaded.
    content: Vec<u8>,
    /// The content that last failed to load (logged once).
    failed: Option<Vec<u8>>,
    loaded: Arc<CertifiedKey>,
}

fn pair_content(cert: &Path, key: &Path) -> Result<(Vec<u8>, usize), TlsError> {
    let mut content = read_file(cert)?;
    let split = content.len();
    content.extend(read_file(key)?);
    Ok((content, split))
}

impl PairSlot {
    fn load(cert: PathBuf, key: PathBuf, names: Vec<String>) -> Result<Self, TlsError> {
        let (content, split) = pair_content(&cert, &key)?;
        let loaded = Arc::new(certified_key(
            &content[..split],
            &cert,
            &content[split..],
            &key,
        )?);
        Ok(Self {
            cert,
            key,
            names,
            content,
            failed: None,
            loaded,
        })
    }

    /// Loads the files again if their content changed; returns whether a new pair is in use.
    fn reload(&mut self, what: &str) -> bool {
        let loaded = pair_content(&self.cert, &self.key).and_then(|(content, split)| {
            if content == self.content || self.failed.as_ref() == Some(&content) {
                return Ok(None);
            }
            match certified_key(&content[..split], &self.cert, &content[split..], &self.key) {
                Ok(ck) => Ok(Some((content, ck))),
                Err(e) => {
                    self.failed = Some(content);
                    Err(e)
                }
            }
        });
        match loaded {
            Ok(None) => false,
            Ok(Some((content, ck))) => {
                self.content = content;
                self.failed = None;
                self.loaded = Arc::new(ck);
                tracing::info!(cert = %self.cert.display(), key = %self.key.display(), "loaded the new {what}");
                true
            }
            Err(e) => {
                tracing::error!(error = %e, "the {what} changed but could not be loaded; the previous one stays in use");
                false
            }
        }
    }
}

/// The client CA bundle, following its file.
struct CaSlot {
    path: PathBuf,
    content: Vec<u8>,
    failed: Option<Vec<u8>>,
    verifier: Arc<DeferredClientVerifier>,
}

/// What changed in one poll.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reloaded {
    /// A serving or SNI certificate.
    pub certificates: bool,
    /// The client CA.
    pub client_ca: bool,
}

struct Files {
    serving: PairSlot,
    sni: Vec<PairSlot>,
    ca: CaSlot,
}

/// The TLS configuration of the secure port, kept current with its files.
pub struct TlsReloader {
    provider: Arc<CryptoProvider>,
    min_version: TlsVersion,
    files: Mutex<Files>,
    store: Arc<RwLock<Arc<CertStore>>>,
    /// The configuration per local address (each has its own resolver, for clients that send no
    /// server name); emptied when the client CA changes.
    configs: RwLock<HashMap<Option<IpAddr>, Arc<rustls::ServerConfig>>>,
}

fn store_of(files: &Files) -> CertStore {
    let sni: Vec<(Arc<CertifiedKey>, Vec<String>)> = files
        .sni
        .iter()
        .map(|s| (Arc::clone(&s.loaded), s.names.clone()))
        .collect();
    CertStore::new(Arc::clone(&files.serving.loaded), &sni)
}

impl TlsReloader {
    /// Loads every file; any failure here stops the start.
    pub fn new(opts: &TlsOptions) -> Result<Arc<Self>, TlsError> {
        let serving = PairSlot::load(opts.cert.clone(), opts.key.clone(), Vec::new())?;
        let sni = opts
            .sni
            .iter()
            .map(|s| PairSlot::load(s.cert.clone(), s.key.clone(), s.names.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        let content = read_file(&opts.client_ca)?;
        let verifier = client_verifier(&content, &opts.client_ca)?;
        let files = Files {
            serving,
            sni,
            ca: CaSlot {
                path: opts.client_ca.clone(),
                content,
                failed: None,
                verifier,
            },
        };
        let store = Arc::new(RwLock::new(Arc::new(store_of(&files))));
        let me = Self {
            provider: super::provider(&opts.cipher_suites),
            min_version: opts.min_version,
            files: Mutex::new(files),
            store,
            configs: RwLock::new(HashMap::new()),
        };
        // Builds one configuration now, so that a bad combination of settings fails the start.
        me.config_for(None)?;
        Ok(Arc::new(me))
    }

    fn build(&self, local_ip: Option<IpAddr>) -> Result<Arc<rustls::ServerConfig>, TlsError> {
        let verifier: Arc<dyn ClientCertVerifier> = self.client_verifier();
        let resolver = Arc::new(SniResolver {
            store: Arc::clone(&self.store),
            local_ip,
        });
        Ok(Arc::new(super::server_config(
            Arc::clone(&self.provider),
            self.min_version,
            verifier,
            resolver,
        )?))
    }

    /// The verifier of the current client CA, which authentication uses to check the chain a
    /// client presented (the handshake defers that check).
    pub fn client_verifier(&self) -> Arc<DeferredClientVerifier> {
        Arc::clone(&self.files.lock().ca.verifier)
    }

    /// The configuration for the next connection accepted on `local_ip`.
    pub fn config_for(
        &self,
        local_ip: Option<IpAddr>,
    ) -> Result<Arc<rustls::ServerConfig>, TlsError> {
        if let Some(c) = self.configs.read().get(&local_ip) {
            return Ok(Arc::clone(c));
        }
        // Built under the write lock: a poll that changes the client CA empties the map after
        // installing the new verifier, so no configuration with the old one survives it.
        let mut configs = self.configs.write();
        if let Some(c) = configs.get(&local_ip) {
            return Ok(Arc::clone(c));
        }
        let config = self.build(local_ip)?;
        configs.insert(local_ip, Arc::clone(&config));
        Ok(config)
    }

    /// Reads every file and takes in what changed and loads.
    pub fn reload_if_changed(&self) -> Reloaded {
        let mut files = self.files.lock();
        let mut changed = files.serving.reload("serving certificate");
        for slot in &mut files.sni {
            changed |= slot.reload("SNI certificate");
        }
        if changed {
            *self.store.write() = Arc::new(store_of(&files));
        }
        let ca = &mut files.ca;
        let mut ca_changed = false;
        match read_file(&ca.path) {
            Ok(content) if content != ca.content && ca.failed.as_ref() != Some(&content) => {
                match client_verifier(&content, &ca.path) {
                    Ok(verifier) => {
                        ca.verifier = verifier;
                        ca.content = content;
                        ca.failed = None;
                        ca_changed = true;
                        tracing::info!(client_ca = %ca.path.display(), "loaded the new client CA");
                    }
                    Err(e) => {
                        ca.failed = Some(content);
                        tracing::error!(error = %e, "the client CA changed but could not be loaded; the previous one stays in use");
                    }
                }
            }
            Ok(_) => {}
            Err(e) => {
                tracing::error!(error = %e, "the client CA could not be read; the previous one stays in use");
            }
        }
        drop(files);
        if ca_changed {
            self.configs.write().clear();
        }
        Reloaded {
            certificates: changed,
            client_ca: ca_changed,
        }
    }

    /// Polls the files every `interval` (on the blocking pool: the reads are file I/O) until the
    /// returned task is aborted.
    pub fn spawn_watcher(self: &Arc<Self>, interval: Duration) -> tokio::task::JoinHandle<()> {
        let me = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(interval).await;
                let me = Arc::clone(&me);
                let _ = tokio::task::spawn_blocking(move || me.reload_if_changed()).await;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn write_pair(dir: &Path, cn: &str, sans: &[&str]) -> (PathBuf, PathBuf) {
        let key = rcgen::KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
        let mut params =
            rcgen::CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .unwrap_or_else(|e| panic!("{e}"));
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        let cert = params.self_signed(&key).unwrap_or_else(|e| panic!("{e}"));
        let (c, k) = (dir.join(format!("{cn}.crt")), dir.join(format!("{cn}.key")));
        fs::write(&c, cert.pem()).unwrap_or_else(|e| panic!("{e}"));
        fs::write(&k, key.serialize_pem()).unwrap_or_else(|e| panic!("{e}"));
        (c, k)
    }

    fn opts(dir: &Path) -> TlsOptions {
        let (cert, key) = write_pair(dir, "serving", &["localhost"]);
        let (ca, _) = write_pair(dir, "ca", &["ca"]);
        TlsOptions {
            cert,
            key,
            sni: Vec::new(),
            client_ca: ca,
            min_version: TlsVersion::Tls12,
            cipher_suites: Vec::new(),
        }
    }

    fn leaf(r: &TlsReloader) -> Vec<u8> {
        r.store.read().lookup(None, None).cert[0].to_vec()
    }

    #[test]
    fn reloads_on_content_change_only() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let opts = opts(dir.path());
        let r = TlsReloader::new(&opts).unwrap_or_else(|e| panic!("{e}"));
        let before = leaf(&r);
        assert_eq!(r.reload_if_changed(), Reloaded::default());

        // Rewriting the same content is no change.
        let same = fs::read(&opts.cert).unwrap_or_else(|e| panic!("{e}"));
        fs::write(&opts.cert, &same).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.reload_if_changed(), Reloaded::default());

        // A new pair under the same names is taken in.
        let (c, k) = write_pair(dir.path(), "next", &["localhost"]);
        fs::copy(&c, &opts.cert).unwrap_or_else(|e| panic!("{e}"));
        fs::copy(&k, &opts.key).unwrap_or_else(|e| panic!("{e}"));
        assert!(r.reload_if_changed().certificates);
        let after = leaf(&r);
        assert_ne!(after, before);

        // A certificate whose key does not match keeps the previous pair.
        fs::copy(dir.path().join("serving.crt"), &opts.cert).unwrap_or_else(|e| panic!("{e}"));
        let (c2, _) = write_pair(dir.path(), "third", &["localhost"]);
        fs::copy(&c2, &opts.cert).unwrap_or_else(|e| panic!("{e}"));
        assert!(!r.reload_if_changed().certificates);
        assert_eq!(leaf(&r), after);
        // Garbage too.
        fs::write(&opts.cert, "garbage").unwrap_or_else(|e| panic!("{e}"));
        assert!(!r.reload_if_changed().certificates);
        assert_eq!(leaf(&r), after);
    }

    #[test]
    fn client_ca_change_renews_the_configurations() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let opts = opts(dir.path());
        let r = TlsReloader::new(&opts).unwrap_or_else(|e| panic!("{e}"));
        let before = r.config_for(None).unwrap_or_else(|e| panic!("{e}"));
        assert!(Arc::ptr_eq(
            &before,
            &r.config_for(None).unwrap_or_else(|e| panic!("{e}"))
        ));
        let (other, _) = write_pair(dir.path(), "other-ca", &["ca"]);
        fs::copy(&other, &opts.client_ca).unwrap_or_else(|e| panic!("{e}"));
        assert!(r.reload_if_changed().client_ca);
        let after = r.config_for(None).unwrap_or_else(|e| panic!("{e}"));
        assert!(!Arc::ptr_eq(&before, &after));
        // A broken bundle keeps the configuration.
        fs::write(&opts.client_ca, "nothing").unwrap_or_else(|e| panic!("{e}"));
        assert!(!r.reload_if_changed().client_ca);
        assert!(Arc::ptr_eq(
            &after,
            &r.config_for(None).unwrap_or_else(|e| panic!("{e}"))
        ));
        assert_eq!(
            after.alpn_protocols,
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        );
    }

    #[test]
    fn sni_certificates_follow_their_files() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut opts = opts(dir.path());
        let (c, k) = write_pair(dir.path(), "sni", &["sni.example"]);
        opts.sni.push(super::super::SniCertKey {
            cert: c.clone(),
            key: k.clone(),
            names: Vec::new(),
        });
        let r = TlsReloader::new(&opts).unwrap_or_else(|e| panic!("{e}"));
        let sni_leaf =
            |r: &TlsReloader| r.store.read().lookup(Some("sni.example"), None).cert[0].to_vec();
        let before = sni_leaf(&r);
        assert_ne!(before, leaf(&r));
        let (c2, k2) = write_pair(dir.path(), "sni2", &["sni.example"]);
        fs::copy(&c2, &c).unwrap_or_else(|e| panic!("{e}"));
        fs::copy(&k2, &k).unwrap_or_else(|e| panic!("{e}"));
        assert!(r.reload_if_changed().certificates);
        assert_ne!(sni_leaf(&r), before);
    }
}
