//! x509 client-certificate authentication: the chain a client presented is verified against
//! the client CA ([`DeferredClientVerifier`]: the handshake accepts any chain whose key the
//! client holds, and an unverifiable one fails authentication with 401, as in kube-apiserver);
//! the leaf's Common Name is the user and its Organizations are the groups.

use std::collections::HashMap;
use std::sync::Arc;

use rustls::DigitallySignedStruct;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DistinguishedName, SignatureScheme};

use parking_lot::Mutex;
use x509_parser::prelude::{FromDer, X509Certificate};

use super::{Authenticator, AuthnOutcome, PeerConnection, UserInfo, add_authenticated_group};

/// A client-certificate verifier for the TLS handshake that asks for a certificate, checks
/// that the client holds its key (the handshake signatures), and defers the chain's
/// verification against the client CA to authentication ([`DeferredClientVerifier::check`],
/// recorded in [`PeerConnection`]): kube-apiserver answers an untrusted or expired client
/// certificate with 401, not with a failed handshake.
#[derive(Debug)]
pub struct DeferredClientVerifier {
    inner: Arc<dyn ClientCertVerifier>,
}

impl DeferredClientVerifier {
    /// Defers to `inner` (a verifier over the client CA that allows clients without
    /// certificates).
    pub fn new(inner: Arc<dyn ClientCertVerifier>) -> Self {
        Self { inner }
    }

    /// Verifies a presented chain (leaf first) against the client CA now; an empty chain is
    /// no credential and passes.
    pub fn check(&self, chain: &[CertificateDer<'_>]) -> Result<(), String> {
        self.check_at(chain, UnixTime::now())
    }

    /// Verifies a presented chain (leaf first) against the client CA at `now`.
    pub fn check_at(&self, chain: &[CertificateDer<'_>], now: UnixTime) -> Result<(), String> {
        let Some((leaf, intermediates)) = chain.split_first() else {
            return Ok(());
        };
        self.inner
            .verify_client_cert(leaf, intermediates, now)
            .map(|_| ())
            .map_err(|e| format!("verifying certificate failed: {e}"))
    }
}

impl ClientCertVerifier for DeferredClientVerifier {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// The seconds since the epoch around `now` (`from` included, `before` excluded) in which no
/// certificate of `chain` starts or ends its validity period, so that verifying the chain
/// anywhere in them has the outcome it has at `now` (the CA's trust does not change with
/// time). A certificate that does not parse has no period: its verification fails the same
/// way at any time.
pub fn unchanged_window(chain: &[CertificateDer<'_>], now: u64) -> (u64, u64) {
    let (mut from, mut before) = (0, u64::MAX);
    for der in chain {
        let Ok((_, cert)) = X509Certificate::from_der(der.as_ref()) else {
            continue;
        };
        let validity = cert.validity();
        // Valid from notBefore through notAfter, both included (RFC 5280, as webpki checks).
        let starts = u64::try_from(validity.not_before.timestamp()).unwrap_or(0);
        let ends = u64::try_from(validity.not_after.timestamp())
            .unwrap_or(0)
            .saturating_add(1);
        for boundary in [starts, ends] {
            if boundary <= now {
                from = from.max(boundary);
            } else {
                before = before.min(boundary);
            }
        }
    }
    (from, before)
}

/// How many distinct client certificates the authenticator remembers; when full, the memory
/// starts over.
const CACHE_CAPACITY: usize = 256;

/// The outcome of reading a certificate: its user (already in `system:authenticated`, so that
/// requests share it unchanged), none when it has no Common Name, or why it cannot be read.
type CertificateUser = Result<Option<Arc<UserInfo>>, String>;

/// Authenticates requests whose TLS connection presented a verified client certificate.
///
/// Every request of a connection carries the same certificate, so the user read from a
/// certificate is remembered for the connection ([`PeerConnection::x509_user_at`]) and, across
/// connections, keyed by the certificate's DER bytes, instead of parsing it again.
#[derive(Debug, Default)]
pub struct X509Authenticator {
    users: Mutex<HashMap<Box<[u8]>, CertificateUser>>,
}

impl X509Authenticator {
    /// The user of a DER certificate, from the cache or read and remembered.
    fn user(&self, der: &[u8]) -> CertificateUser {
        if let Some(known) = self.users.lock().get(der) {
            return known.clone();
        }
        let user = user_from_certificate(der).map(|user| {
            user.map(|mut user| {
                add_authenticated_group(&mut user);
                Arc::new(user)
            })
        });
        let mut users = self.users.lock();
        if users.len() >= CACHE_CAPACITY {
            users.clear();
        }
        users.insert(der.into(), user.clone());
        user
    }
}

/// Reads the user from a DER certificate: CN → name, O → groups. Of several Common Names the
/// last is the user, as Go's `pkix.Name` keeps the last one it reads; without one the
/// certificate names no user (`None`), and the request goes on to the other authenticators
/// (then anonymous), as kube-apiserver's `CommonNameUserConversion` answers.
pub fn user_from_certificate(der: &[u8]) -> Result<Option<UserInfo>, String> {
    let (_, cert) =
        X509Certificate::from_der(der).map_err(|e| format!("invalid client certificate: {e}"))?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .filter_map(|cn| cn.as_str().ok())
        .last()
        .unwrap_or("")
        .to_string();
    if name.is_empty() {
        return Ok(None);
    }
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok())
        .map(str::to_string)
        .collect();
    Ok(Some(UserInfo {
        name,
        groups,
        ..UserInfo::default()
    }))
}

#[async_trait::async_trait]
impl Authenticator for X509Authenticator {
    async fn authenticate(&self, request: &http::request::Parts) -> AuthnOutcome {
        let Some(user) = request
            .extensions
            .get::<PeerConnection>()
            .and_then(|conn| conn.x509_user_at(UnixTime::now(), |leaf| self.user(leaf)))
        else {
            return AuthnOutcome::NoCredentials;
        };
        match user {
            Ok(Some(user)) => AuthnOutcome::Authenticated(Arc::clone(user)),
            Ok(None) => AuthnOutcome::NoCredentials,
            Err(reason) => AuthnOutcome::Failed(reason),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn certificate(cn: &str, org: &str) -> Vec<u8> {
        let key = rcgen::KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
        let mut params =
            rcgen::CertificateParams::new(Vec::<String>::new()).unwrap_or_else(|e| panic!("{e}"));
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, org);
        let cert = params.self_signed(&key).unwrap_or_else(|e| panic!("{e}"));
        cert.der().to_vec()
    }

    /// Of two Common Names the last is the user, as in Go. (The certificate's Organization
    /// attribute is turned into a second Common Name: rcgen writes one attribute per type.)
    #[test]
    fn the_last_common_name_is_the_user() {
        let mut der = certificate("alice", "admin");
        let organization = [0x06, 0x03, 0x55, 0x04, 0x0a];
        let at = der
            .windows(organization.len())
            .rposition(|w| w == organization)
            .unwrap_or_else(|| panic!("no Organization attribute"));
        der[at + 4] = 0x03;
        let user = user_from_certificate(&der)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no user"));
        assert_eq!(user.name, "admin");
        assert!(user.groups.is_empty(), "{:?}", user.groups);
    }

    /// A verified certificate without a Common Name names no user: the request is not
    /// authenticated by it (and goes on to anonymous), as in kube-apiserver, rather than 401.
    #[tokio::test]
    async fn a_certificate_without_a_common_name_names_no_user() {
        let authn = X509Authenticator::default();
        let der = certificate("", "dev");
        assert!(matches!(authn.user(&der), Ok(None)));
        let connection = PeerConnection::new(vec![der.into()]);
        let (mut parts, ()) = http::Request::new(()).into_parts();
        parts.extensions.insert(connection);
        assert_eq!(
            authn.authenticate(&parts).await,
            AuthnOutcome::NoCredentials
        );
    }

    #[test]
    fn remembered_users_match_each_certificate() {
        let authn = X509Authenticator::default();
        let admin = certificate("admin", "system:masters");
        let alice = certificate("alice", "dev");
        // Remembered in `system:authenticated` already, so requests share it as it is.
        for _ in 0..2 {
            let user = authn
                .user(&admin)
                .ok()
                .flatten()
                .unwrap_or_else(|| panic!("admin"));
            assert_eq!(user.name, "admin");
            assert_eq!(
                user.groups,
                ["system:masters", crate::authn::AUTHENTICATED_GROUP]
            );
            let user = authn
                .user(&alice)
                .ok()
                .flatten()
                .unwrap_or_else(|| panic!("alice"));
            assert_eq!(user.name, "alice");
            assert_eq!(user.groups, ["dev", crate::authn::AUTHENTICATED_GROUP]);
        }
        assert_eq!(authn.users.lock().len(), 2);
        assert!(authn.user(b"not a certificate").is_err());
        assert!(authn.user(b"not a certificate").is_err());
    }

    fn request_with(certs: &PeerConnection) -> http::request::Parts {
        let mut req = http::Request::new(());
        req.extensions_mut().insert(certs.clone());
        req.into_parts().0
    }

    #[tokio::test]
    async fn every_request_of_a_connection_gets_its_certificate_user() {
        let authn = X509Authenticator::default();
        let admin = PeerConnection::new(vec![certificate("admin", "system:masters").into()]);
        let alice = PeerConnection::new(vec![certificate("alice", "dev").into()]);
        for _ in 0..2 {
            for (certs, name) in [(&admin, "admin"), (&alice, "alice")] {
                match authn.authenticate(&request_with(certs)).await {
                    AuthnOutcome::Authenticated(user) => assert_eq!(user.name, name),
                    other => panic!("{other:?}"),
                }
            }
        }
        let broken = PeerConnection::new(vec![b"not a certificate".to_vec().into()]);
        for _ in 0..2 {
            assert!(matches!(
                authn.authenticate(&request_with(&broken)).await,
                AuthnOutcome::Failed(_)
            ));
        }
        let none = PeerConnection::new(Vec::new());
        assert_eq!(
            authn.authenticate(&request_with(&none)).await,
            AuthnOutcome::NoCredentials
        );
        assert_eq!(
            authn
                .authenticate(&http::Request::new(()).into_parts().0)
                .await,
            AuthnOutcome::NoCredentials
        );
    }

    #[tokio::test]
    async fn a_chain_that_did_not_verify_fails_authentication() {
        let authn = X509Authenticator::default();
        let certs = PeerConnection::checked(
            vec![certificate("admin", "system:masters").into()],
            Err("verifying certificate failed: invalid peer certificate: UnknownIssuer".into()),
        );
        assert_eq!(
            authn.authenticate(&request_with(&certs)).await,
            AuthnOutcome::Failed(
                "verifying certificate failed: invalid peer certificate: UnknownIssuer".into()
            )
        );
    }

    #[test]
    fn the_deferred_verifier_checks_chains_against_the_client_ca() {
        let ca_key = rcgen::KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
        let mut ca_params =
            rcgen::CertificateParams::new(Vec::<String>::new()).unwrap_or_else(|e| panic!("{e}"));
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = ca_params
            .self_signed(&ca_key)
            .unwrap_or_else(|e| panic!("{e}"));
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let leaf_key = rcgen::KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
        let mut leaf_params =
            rcgen::CertificateParams::new(Vec::<String>::new()).unwrap_or_else(|e| panic!("{e}"));
        leaf_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "jane");
        let leaf = leaf_params
            .signed_by(&leaf_key, &issuer)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(ca.der().clone())
            .unwrap_or_else(|e| panic!("{e}"));
        let inner = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            Arc::new(rustls::crypto::ring::default_provider()),
        )
        .allow_unauthenticated()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
        let verifier = DeferredClientVerifier::new(inner);
        assert!(!verifier.client_auth_mandatory());
        assert_eq!(verifier.check(&[]), Ok(()));
        assert_eq!(verifier.check(&[leaf.der().clone()]), Ok(()));
        let stranger = CertificateDer::from(certificate("jane", "dev"));
        let err = verifier
            .check(std::slice::from_ref(&stranger))
            .err()
            .unwrap_or_default();
        assert!(err.starts_with("verifying certificate failed: "), "{err}");
        // The handshake itself accepts the stranger: authentication answers it.
        assert!(
            verifier
                .verify_client_cert(&stranger, &[], UnixTime::now())
                .is_ok()
        );
    }

    /// A CA's verifier and a leaf of user `jane` it signed, valid through 2020–2030.
    fn ca_and_leaf() -> (Arc<DeferredClientVerifier>, CertificateDer<'static>) {
        let ca_key = rcgen::KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
        let mut ca_params =
            rcgen::CertificateParams::new(Vec::<String>::new()).unwrap_or_else(|e| panic!("{e}"));
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = ca_params
            .self_signed(&ca_key)
            .unwrap_or_else(|e| panic!("{e}"));
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let leaf_key = rcgen::KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
        let mut leaf_params =
            rcgen::CertificateParams::new(Vec::<String>::new()).unwrap_or_else(|e| panic!("{e}"));
        leaf_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "jane");
        leaf_params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        leaf_params.not_after = rcgen::date_time_ymd(2030, 1, 1);
        let leaf = leaf_params
            .signed_by(&leaf_key, &issuer)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(ca.der().clone())
            .unwrap_or_else(|e| panic!("{e}"));
        let inner = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            Arc::new(rustls::crypto::ring::default_provider()),
        )
        .allow_unauthenticated()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
        (
            Arc::new(DeferredClientVerifier::new(inner)),
            leaf.der().clone(),
        )
    }

    /// Seconds since the epoch of midnight UTC on 1 January of `year`.
    fn new_year(year: i32) -> u64 {
        u64::try_from(rcgen::date_time_ymd(year, 1, 1).unix_timestamp()).unwrap_or(0)
    }

    #[test]
    fn a_certificate_that_expires_on_a_kept_connection_fails_the_next_request() {
        let (verifier, leaf) = ca_and_leaf();
        let authn = X509Authenticator::default();
        let at = |secs: u64| UnixTime::since_unix_epoch(std::time::Duration::from_secs(secs));
        // Verified at the handshake (2025); the verdict holds until notAfter has passed.
        let connection = PeerConnection::verified_by(vec![leaf.clone()], verifier);
        let user_at = |secs: u64| {
            connection
                .x509_user_at(at(secs), |der| authn.user(der))
                .map(|r| r.map(|u| u.map_or_else(String::new, |u| u.name.clone())))
        };
        assert_eq!(user_at(new_year(2025)), Some(Ok("jane".to_string())));
        let not_after = new_year(2030);
        assert_eq!(user_at(not_after), Some(Ok("jane".to_string())));
        let err = match user_at(not_after + 1) {
            Some(Err(e)) => e,
            other => panic!("{other:?}"),
        };
        assert!(
            err.starts_with("verifying certificate failed: invalid peer certificate: ")
                && err.contains("xpired"),
            "{err}"
        );
        assert_eq!(user_at(not_after + 3600), Some(Err(err)));
        // Before notBefore it was not valid yet either.
        let early = match user_at(new_year(2019)) {
            Some(Err(e)) => e,
            other => panic!("{other:?}"),
        };
        assert!(
            early.contains("NotValidYet") || early.contains("not valid yet"),
            "{early}"
        );
        assert_eq!(user_at(new_year(2026)), Some(Ok("jane".to_string())));
        assert_eq!(
            unchanged_window(&[leaf], new_year(2026)),
            (new_year(2020), not_after + 1)
        );
    }

    #[test]
    fn the_memory_stays_bounded() {
        let authn = X509Authenticator::default();
        for i in 0..CACHE_CAPACITY + 3 {
            let der = format!("garbage {i}").into_bytes();
            assert!(authn.user(&der).is_err());
        }
        assert!(authn.users.lock().len() <= CACHE_CAPACITY);
    }
}
