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

use super::{Authenticator, AuthnOutcome, PeerCertificates, UserInfo};

/// A client-certificate verifier for the TLS handshake that asks for a certificate, checks
/// that the client holds its key (the handshake signatures), and defers the chain's
/// verification against the client CA to authentication ([`DeferredClientVerifier::check`],
/// recorded in [`PeerCertificates`]): kube-apiserver answers an untrusted or expired client
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

    /// Verifies a presented chain (leaf first) against the client CA; an empty chain is no
    /// credential and passes.
    pub fn check(&self, chain: &[CertificateDer<'_>]) -> Result<(), String> {
        let Some((leaf, intermediates)) = chain.split_first() else {
            return Ok(());
        };
        self.inner
            .verify_client_cert(leaf, intermediates, UnixTime::now())
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

/// How many distinct client certificates the authenticator remembers; when full, the memory
/// starts over.
const CACHE_CAPACITY: usize = 256;

/// The outcome of reading a certificate: its user, or why it has none.
type CertificateUser = Result<UserInfo, String>;

/// Authenticates requests whose TLS connection presented a verified client certificate.
///
/// Every request of a connection carries the same certificate, so the user read from a
/// certificate is remembered for the connection ([`PeerCertificates::x509_user`]) and, across
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
        let user = user_from_certificate(der);
        let mut users = self.users.lock();
        if users.len() >= CACHE_CAPACITY {
            users.clear();
        }
        users.insert(der.into(), user.clone());
        user
    }
}

/// Reads the user from a DER certificate: CN → name, O → groups.
pub fn user_from_certificate(der: &[u8]) -> Result<UserInfo, String> {
    let (_, cert) =
        X509Certificate::from_der(der).map_err(|e| format!("invalid client certificate: {e}"))?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .unwrap_or("")
        .to_string();
    if name.is_empty() {
        return Err("client certificate has no common name".to_string());
    }
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok())
        .map(str::to_string)
        .collect();
    Ok(UserInfo {
        name,
        groups,
        ..UserInfo::default()
    })
}

#[async_trait::async_trait]
impl Authenticator for X509Authenticator {
    async fn authenticate(&self, request: &http::request::Parts) -> AuthnOutcome {
        let Some(user) = request
            .extensions
            .get::<PeerCertificates>()
            .and_then(|certs| certs.x509_user(|leaf| self.user(leaf)))
        else {
            return AuthnOutcome::NoCredentials;
        };
        match user {
            Ok(user) => {
                // Room for the group the union adds (`system:authenticated`).
                let mut groups = Vec::with_capacity(user.groups.len() + 1);
                groups.extend_from_slice(&user.groups);
                AuthnOutcome::Authenticated(UserInfo {
                    name: user.name.clone(),
                    uid: user.uid.clone(),
                    groups,
                    extra: user.extra.clone(),
                })
            }
            Err(reason) => AuthnOutcome::Failed(reason.clone()),
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

    #[test]
    fn remembered_users_match_each_certificate() {
        let authn = X509Authenticator::default();
        let admin = certificate("admin", "system:masters");
        let alice = certificate("alice", "dev");
        for _ in 0..2 {
            let user = authn.user(&admin).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(user.name, "admin");
            assert_eq!(user.groups, vec!["system:masters".to_string()]);
            let user = authn.user(&alice).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(user.name, "alice");
            assert_eq!(user.groups, vec!["dev".to_string()]);
        }
        assert_eq!(authn.users.lock().len(), 2);
        assert!(authn.user(b"not a certificate").is_err());
        assert!(authn.user(b"not a certificate").is_err());
    }

    fn request_with(certs: &PeerCertificates) -> http::request::Parts {
        let mut req = http::Request::new(());
        req.extensions_mut().insert(certs.clone());
        req.into_parts().0
    }

    #[tokio::test]
    async fn every_request_of_a_connection_gets_its_certificate_user() {
        let authn = X509Authenticator::default();
        let admin = PeerCertificates::new(vec![certificate("admin", "system:masters").into()]);
        let alice = PeerCertificates::new(vec![certificate("alice", "dev").into()]);
        for _ in 0..2 {
            for (certs, name) in [(&admin, "admin"), (&alice, "alice")] {
                match authn.authenticate(&request_with(certs)).await {
                    AuthnOutcome::Authenticated(user) => assert_eq!(user.name, name),
                    other => panic!("{other:?}"),
                }
            }
        }
        let broken = PeerCertificates::new(vec![b"not a certificate".to_vec().into()]);
        for _ in 0..2 {
            assert!(matches!(
                authn.authenticate(&request_with(&broken)).await,
                AuthnOutcome::Failed(_)
            ));
        }
        let none = PeerCertificates::new(Vec::new());
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
        let certs = PeerCertificates::checked(
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
