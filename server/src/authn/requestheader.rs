//! Request-header authentication (k8s.io/apiserver's `headerrequest` behind its `x509`
//! verifier): a front proxy (the aggregator) that authenticated the caller passes the
//! caller's identity in headers (`X-Remote-User`, `X-Remote-Group`, `X-Remote-Extra-<key>`),
//! and proves it is the front proxy with a client certificate signed by the request-header CA
//! (`--requestheader-client-ca-file`) whose Common Name is one of
//! `--requestheader-allowed-names` (any, when empty).
//!
//! The certificate is checked first: without one, or without a request-header CA, the
//! authenticator has no opinion and the headers are ignored (a client cannot claim an identity
//! by sending them); a certificate that does not verify against the CA (with the clientAuth
//! usage) or whose name is not allowed is a failed credential, which another authenticator
//! (x509 against the client CA) may still accept. Once the proxy is trusted, the user is the
//! first non-empty value of the username headers (none: no opinion), the UID the first of the
//! UID headers, the groups every non-empty value of the group headers, and the extra values
//! those of every header starting with an extra prefix, keyed by the rest of the header name,
//! lowercased and percent-unescaped. The identity headers are then removed from the request
//! ([`Authenticator::clear_headers`]).
//!
//! The configuration can be replaced while the server runs ([`RequestHeaderAuthenticator::set`]),
//! as the aggregated server does when the `extension-apiserver-authentication` ConfigMap
//! changes.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::ClientCertVerifier;
use x509_parser::prelude::{FromDer, X509Certificate};

use super::{Authenticator, AuthnOutcome, PeerConnection, UserInfo};

/// The request-header options, as kube-apiserver's `RequestHeaderConfig` holds them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestHeaderConfig {
    /// The CA bundle (PEM) front-proxy certificates must verify against; empty: request-header
    /// authentication is off.
    pub client_ca: Vec<u8>,
    /// The Common Names a front-proxy certificate may have; empty: any.
    pub allowed_names: Vec<String>,
    /// The headers naming the user, in order (`X-Remote-User`).
    pub username_headers: Vec<String>,
    /// The headers naming the user's UID, in order (none by default).
    pub uid_headers: Vec<String>,
    /// The headers naming the user's groups (`X-Remote-Group`).
    pub group_headers: Vec<String>,
    /// The prefixes of the headers carrying extra values (`X-Remote-Extra-`).
    pub extra_headers_prefix: Vec<String>,
}

impl RequestHeaderConfig {
    /// The default headers of a delegating (aggregated) server with `client_ca` and
    /// `allowed_names`: `X-Remote-User`, `X-Remote-Group`, `X-Remote-Extra-`.
    pub fn with_default_headers(client_ca: Vec<u8>, allowed_names: Vec<String>) -> Self {
        Self {
            client_ca,
            allowed_names,
            username_headers: vec![DEFAULT_USERNAME_HEADER.to_string()],
            uid_headers: Vec::new(),
            group_headers: vec![DEFAULT_GROUP_HEADER.to_string()],
            extra_headers_prefix: vec![DEFAULT_EXTRA_HEADERS_PREFIX.to_string()],
        }
    }
}

/// The default username header.
pub const DEFAULT_USERNAME_HEADER: &str = "X-Remote-User";
/// The default group header.
pub const DEFAULT_GROUP_HEADER: &str = "X-Remote-Group";
/// The default prefix of extra headers.
pub const DEFAULT_EXTRA_HEADERS_PREFIX: &str = "X-Remote-Extra-";

/// Why a request-header configuration cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestHeaderError {
    /// The CA bundle holds no usable certificate.
    #[error("requestheader-client-ca-file: {0}")]
    ClientCa(String),
}

/// A configuration ready to check requests: its verifier and the verdicts on certificates seen.
struct Loaded {
    config: RequestHeaderConfig,
    verifier: Option<Arc<dyn ClientCertVerifier>>,
    /// Verdicts by leaf DER, with the window (seconds since the epoch) in which they hold.
    verdicts: Mutex<HashMap<Box<[u8]>, Verdict>>,
}

/// The outcome of checking a certificate, and the seconds since the epoch (from, before) in
/// which it holds.
type Verdict = (Result<(), String>, u64, u64);

/// How many front-proxy certificates' verdicts are remembered.
const VERDICTS: usize = 64;

/// The request-header authenticator. See the [module docs](self).
pub struct RequestHeaderAuthenticator {
    loaded: RwLock<Arc<Loaded>>,
}

impl std::fmt::Debug for RequestHeaderAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestHeaderAuthenticator")
            .field("config", &self.loaded.read().config)
            .finish()
    }
}

impl RequestHeaderAuthenticator {
    /// An authenticator with `config`.
    pub fn new(config: RequestHeaderConfig) -> Result<Self, RequestHeaderError> {
        Ok(Self {
            loaded: RwLock::new(Arc::new(load(config)?)),
        })
    }

    /// Replaces the configuration (a rotated CA, other names or headers); later requests use
    /// the new one.
    pub fn set(&self, config: RequestHeaderConfig) -> Result<(), RequestHeaderError> {
        if self.loaded.read().config == config {
            return Ok(());
        }
        *self.loaded.write() = Arc::new(load(config)?);
        Ok(())
    }

    /// The configuration in use.
    pub fn config(&self) -> RequestHeaderConfig {
        self.loaded.read().config.clone()
    }
}

/// Builds the verifier of `config`'s CA (none when it has none).
fn load(config: RequestHeaderConfig) -> Result<Loaded, RequestHeaderError> {
    let verifier = if config.client_ca.is_empty() {
        None
    } else {
        Some(client_verifier(&config.client_ca).map_err(RequestHeaderError::ClientCa)?)
    };
    Ok(Loaded {
        config,
        verifier,
        verdicts: Mutex::new(HashMap::new()),
    })
}

/// A verifier of client certificates (clientAuth usage) against the CAs of a PEM bundle.
pub fn client_verifier(bundle: &[u8]) -> Result<Arc<dyn ClientCertVerifier>, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut &bundle[..]) {
        let cert = cert.map_err(|e| format!("reading the CA bundle: {e}"))?;
        roots
            .add(cert)
            .map_err(|e| format!("adding a CA of the bundle: {e}"))?;
    }
    if roots.is_empty() {
        return Err("the CA bundle holds no certificate".to_string());
    }
    rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        Arc::new(rustls::crypto::ring::default_provider()),
    )
    .allow_unauthenticated()
    .build()
    .map_err(|e| e.to_string())
}

impl Loaded {
    /// Verifies the presented chain against the CA and the leaf's name against the allowed
    /// names (x509's `Verifier`).
    fn verify(
        &self,
        verifier: &dyn ClientCertVerifier,
        chain: &[CertificateDer<'_>],
    ) -> Result<(), String> {
        let Some((leaf, intermediates)) = chain.split_first() else {
            return Err("no certificate".to_string());
        };
        let now = UnixTime::now();
        let secs = now.as_secs();
        if let Some((result, from, before)) = self.verdicts.lock().get(leaf.as_ref())
            && (*from..*before).contains(&secs)
        {
            return result.clone();
        }
        let (from, before) = super::x509::unchanged_window(chain, secs);
        let result = verifier
            .verify_client_cert(leaf, intermediates, now)
            .map(|_| ())
            .map_err(|e| format!("x509: {e}"))
            .and_then(|()| self.verify_subject(leaf.as_ref()));
        let mut verdicts = self.verdicts.lock();
        if verdicts.len() >= VERDICTS {
            verdicts.clear();
        }
        verdicts.insert(leaf.as_ref().into(), (result.clone(), from, before));
        result
    }

    /// The leaf's Common Name must be allowed (any, when no name is listed).
    fn verify_subject(&self, der: &[u8]) -> Result<(), String> {
        if self.config.allowed_names.is_empty() {
            return Ok(());
        }
        let common_name = common_name(der);
        if self.config.allowed_names.contains(&common_name) {
            Ok(())
        } else {
            Err(format!(
                "x509: subject with cn={common_name} is not in the allowed list"
            ))
        }
    }
}

/// The last Common Name of a certificate's subject, as Go's `pkix.Name.CommonName` keeps it
/// (empty when it has none or does not parse).
fn common_name(der: &[u8]) -> String {
    X509Certificate::from_der(der)
        .ok()
        .and_then(|(_, cert)| {
            cert.subject()
                .iter_common_name()
                .filter_map(|cn| cn.as_str().ok())
                .last()
                .map(str::to_string)
        })
        .unwrap_or_default()
}

/// The identity the headers carry under `config` (none without a username), as
/// `headerrequest`'s `AuthenticateRequest` reads it.
pub fn user_from_headers(
    config: &RequestHeaderConfig,
    headers: &http::HeaderMap,
) -> Option<UserInfo> {
    let name = first_value(headers, &config.username_headers)?;
    let uid = first_value(headers, &config.uid_headers).unwrap_or_default();
    let mut groups = Vec::new();
    for header in &config.group_headers {
        for value in headers.get_all(header.trim()) {
            if let Ok(value) = value.to_str()
                && !value.is_empty()
            {
                groups.push(value.to_string());
            }
        }
    }
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for prefix in &config.extra_headers_prefix {
        for (name, value) in headers {
            let Some(rest) = strip_prefix_ignore_case(name.as_str(), prefix) else {
                continue;
            };
            let key = unescape_extra_key(&rest.to_ascii_lowercase());
            if let Ok(value) = value.to_str() {
                extra.entry(key).or_default().push(value.to_string());
            }
        }
    }
    Some(UserInfo {
        name,
        uid,
        groups,
        extra,
    })
}

/// The first non-empty value of the first of `names` that has one (Go's `Header.Get` per name).
fn first_value(headers: &http::HeaderMap, names: &[String]) -> Option<String> {
    names.iter().find_map(|name| {
        headers
            .get(name.trim())
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    })
}

/// `name` without `prefix`, compared without case; `None` when it does not start with it.
fn strip_prefix_ignore_case<'a>(name: &'a str, prefix: &str) -> Option<&'a str> {
    let prefix = prefix.trim();
    (name.len() >= prefix.len()
        && name.is_char_boundary(prefix.len())
        && name[..prefix.len()].eq_ignore_ascii_case(prefix))
    .then(|| &name[prefix.len()..])
}

/// Go's `url.PathUnescape` of an extra key; a malformed escape leaves the key as it is.
pub fn unescape_extra_key(encoded: &str) -> String {
    let bytes = encoded.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match hex {
                Some(b) => {
                    out.push(b);
                    i += 3;
                    continue;
                }
                None => return encoded.to_string(),
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| encoded.to_string())
}

/// Removes the identity headers `config` names (`ClearAuthenticationHeaders`).
pub fn clear_headers(config: &RequestHeaderConfig, headers: &mut http::HeaderMap) {
    for name in config
        .username_headers
        .iter()
        .chain(&config.uid_headers)
        .chain(&config.group_headers)
    {
        headers.remove(name.trim());
    }
    if config.extra_headers_prefix.is_empty() {
        return;
    }
    let extra: Vec<http::HeaderName> = headers
        .keys()
        .filter(|name| {
            config
                .extra_headers_prefix
                .iter()
                .any(|p| strip_prefix_ignore_case(name.as_str(), p).is_some())
        })
        .cloned()
        .collect();
    for name in extra {
        headers.remove(name);
    }
}

#[async_trait::async_trait]
impl Authenticator for RequestHeaderAuthenticator {
    async fn authenticate(&self, request: &http::request::Parts) -> AuthnOutcome {
        let Some(connection) = request.extensions.get::<PeerConnection>() else {
            return AuthnOutcome::NoCredentials;
        };
        if connection.chain().is_empty() {
            return AuthnOutcome::NoCredentials;
        }
        let loaded = Arc::clone(&self.loaded.read());
        let Some(verifier) = &loaded.verifier else {
            return AuthnOutcome::NoCredentials;
        };
        if let Err(reason) = loaded.verify(verifier.as_ref(), connection.chain()) {
            return AuthnOutcome::Failed(reason);
        }
        match user_from_headers(&loaded.config, &request.headers) {
            Some(user) => AuthnOutcome::Authenticated(Arc::new(user)),
            None => AuthnOutcome::NoCredentials,
        }
    }

    fn clear_headers(&self, headers: &mut http::HeaderMap) {
        clear_headers(&self.loaded.read().config, headers);
    }
}

#[cfg(test)]
#[path = "requestheader_tests.rs"]
mod tests;
