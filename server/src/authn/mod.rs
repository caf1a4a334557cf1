//! Authentication: who is making a request.
//!
//! The filter chain runs the configured [`Authenticator`]s in order; the first that recognises
//! credentials decides. Requests without credentials become `system:anonymous` in group
//! `system:unauthenticated` when anonymous access is enabled. The resulting [`UserInfo`] is stored
//! as a request extension for authorization, impersonation, managedFields and the
//! `SelfSubjectReview`/`SelfSubjectAccessReview` handlers.

pub mod x509;

use std::sync::{Arc, OnceLock};

pub use apimachinery::user::{
    ANONYMOUS_USER, AUTHENTICATED_GROUP, MASTERS_GROUP, UNAUTHENTICATED_GROUP, UserInfo,
};

/// What an authenticator concluded about one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthnOutcome {
    /// The credentials identify this user.
    Authenticated(UserInfo),
    /// The request carries no credentials this authenticator understands.
    NoCredentials,
    /// The request carries credentials that are invalid (answered with 401).
    Failed(String),
}

/// The connection-level facts an authenticator may use, stored as a request extension by the
/// TLS acceptor: the client's verified certificate chain, shared by every request of the
/// connection.
#[derive(Clone, Debug, Default)]
pub struct PeerCertificates(Arc<ConnectionCertificates>);

#[derive(Debug, Default)]
struct ConnectionCertificates {
    chain: Vec<rustls_pki_types::CertificateDer<'static>>,
    /// What x509 authentication read from the leaf, remembered for the connection's later
    /// requests.
    x509_user: OnceLock<Result<UserInfo, String>>,
}

impl PeerCertificates {
    /// The certificates a client presented on one connection, leaf first.
    pub fn new(chain: Vec<rustls_pki_types::CertificateDer<'static>>) -> Self {
        Self(Arc::new(ConnectionCertificates {
            chain,
            x509_user: OnceLock::new(),
        }))
    }

    /// The chain, leaf first (empty when the client presented none).
    pub fn chain(&self) -> &[rustls_pki_types::CertificateDer<'static>] {
        &self.0.chain
    }

    /// The user x509 authentication reads from the leaf: computed by `read` on the connection's
    /// first request, then remembered (every request of a connection has the same chain).
    pub fn x509_user(
        &self,
        read: impl FnOnce(&[u8]) -> Result<UserInfo, String>,
    ) -> Option<&Result<UserInfo, String>> {
        let leaf = self.0.chain.first()?;
        Some(self.0.x509_user.get_or_init(|| read(leaf.as_ref())))
    }
}

/// Recognises one kind of credentials.
pub trait Authenticator: Send + Sync + 'static {
    /// Authenticates a request from its head (headers and extensions such as
    /// [`PeerCertificates`]); it must not read the body.
    fn authenticate(&self, request: &http::request::Parts) -> AuthnOutcome;
}

/// Runs authenticators in order; the first that finds credentials decides.
#[derive(Default)]
pub struct UnionAuthenticator {
    authenticators: Vec<Box<dyn Authenticator>>,
    anonymous: bool,
}

impl UnionAuthenticator {
    /// Creates a union; `anonymous` lets requests without credentials through as
    /// `system:anonymous`.
    pub fn new(authenticators: Vec<Box<dyn Authenticator>>, anonymous: bool) -> Self {
        Self {
            authenticators,
            anonymous,
        }
    }

    /// Authenticates a request; `Err` carries the reason for a 401.
    pub fn authenticate(&self, request: &http::request::Parts) -> Result<UserInfo, String> {
        for a in &self.authenticators {
            match a.authenticate(request) {
                AuthnOutcome::Authenticated(mut user) => {
                    if !user.in_group(AUTHENTICATED_GROUP) {
                        user.groups.push(AUTHENTICATED_GROUP.to_string());
                    }
                    return Ok(user);
                }
                AuthnOutcome::NoCredentials => {}
                AuthnOutcome::Failed(reason) => return Err(reason),
            }
        }
        if self.anonymous {
            Ok(UserInfo::anonymous())
        } else {
            Err("Unauthorized".to_string())
        }
    }
}
