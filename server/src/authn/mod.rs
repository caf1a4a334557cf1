//! Authentication: who is making a request.
//!
//! The filter chain runs the [`UnionAuthenticator`]: each [`Authenticator`] (one per kind of
//! credentials: x509 client certificates, bearer tokens) is tried in order and the first that
//! authenticates decides; when none does, a failed credential is a 401 and a request without
//! credentials becomes `system:anonymous` in group `system:unauthenticated` (when anonymous
//! access is enabled, else a 401), as kube-apiserver's union does. Bearer tokens are checked
//! by a [`TokenUnion`] of token authenticators (the `--token-auth-file` tokens, service-account
//! JWTs), which also answers `TokenReview`s. The resulting [`UserInfo`] is stored as a request
//! extension for authorization, impersonation, managedFields and the
//! `SelfSubjectReview`/`SelfSubjectAccessReview` handlers.

pub mod bearer;
pub mod config;
pub mod serviceaccount;
pub mod tokenfile;
pub mod x509;

pub use bearer::{BearerTokenAuthenticator, TokenUnion};

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
    /// The request carries credentials that are invalid (answered with 401 unless another
    /// authenticator accepts the request).
    Failed(String),
}

/// The connection-level facts an authenticator may use, stored as a request extension by the
/// TLS acceptor: the certificate chain the client presented and whether it verified against the
/// client CA, shared by every request of the connection.
#[derive(Clone, Debug, Default)]
pub struct PeerCertificates(Arc<ConnectionCertificates>);

#[derive(Debug, Default)]
struct ConnectionCertificates {
    chain: Vec<rustls_pki_types::CertificateDer<'static>>,
    /// Why the chain did not verify against the client CA, if it did not.
    unverified: Option<String>,
    /// What x509 authentication read from the leaf, remembered for the connection's later
    /// requests.
    x509_user: OnceLock<Result<UserInfo, String>>,
}

impl PeerCertificates {
    /// The verified certificates a client presented on one connection, leaf first.
    pub fn new(chain: Vec<rustls_pki_types::CertificateDer<'static>>) -> Self {
        Self::checked(chain, Ok(()))
    }

    /// The certificates a client presented, leaf first, with the outcome of verifying them
    /// against the client CA (the handshake accepts any chain; an unverifiable one is a failed
    /// x509 credential, answered 401 as kube-apiserver does).
    pub fn checked(
        chain: Vec<rustls_pki_types::CertificateDer<'static>>,
        verified: Result<(), String>,
    ) -> Self {
        Self(Arc::new(ConnectionCertificates {
            chain,
            unverified: verified.err(),
            x509_user: OnceLock::new(),
        }))
    }

    /// The chain, leaf first (empty when the client presented none).
    pub fn chain(&self) -> &[rustls_pki_types::CertificateDer<'static>] {
        &self.0.chain
    }

    /// The user x509 authentication reads from the leaf: computed by `read` on the connection's
    /// first request, then remembered (every request of a connection has the same chain). A
    /// chain that did not verify gives its verification error.
    pub fn x509_user(
        &self,
        read: impl FnOnce(&[u8]) -> Result<UserInfo, String>,
    ) -> Option<&Result<UserInfo, String>> {
        let leaf = self.0.chain.first()?;
        Some(self.0.x509_user.get_or_init(|| match &self.0.unverified {
            Some(reason) => Err(reason.clone()),
            None => read(leaf.as_ref()),
        }))
    }
}

/// Recognises one kind of credentials.
#[async_trait::async_trait]
pub trait Authenticator: Send + Sync + 'static {
    /// Authenticates a request from its head (headers and extensions such as
    /// [`PeerCertificates`]); it must not read the body.
    async fn authenticate(&self, request: &http::request::Parts) -> AuthnOutcome;
}

/// Runs authenticators in order; the first that authenticates decides (kube-apiserver's
/// `union` authenticator, with the anonymous authenticator after it as `FailOnError`).
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

    /// Authenticates a request; `Err` carries the reasons for a 401 (credentials that failed,
    /// or none when anonymous access is off).
    pub async fn authenticate(&self, request: &http::request::Parts) -> Result<UserInfo, String> {
        let mut failures: Vec<String> = Vec::new();
        for a in &self.authenticators {
            match a.authenticate(request).await {
                AuthnOutcome::Authenticated(mut user) => {
                    add_authenticated_group(&mut user);
                    return Ok(user);
                }
                AuthnOutcome::NoCredentials => {}
                AuthnOutcome::Failed(reason) => failures.push(reason),
            }
        }
        if !failures.is_empty() {
            return Err(aggregate(&failures));
        }
        if self.anonymous {
            Ok(UserInfo::anonymous())
        } else {
            Err("Unauthorized".to_string())
        }
    }
}

/// Adds `system:authenticated` to an authenticated user, unless it is already in it or in
/// `system:unauthenticated` (kube-apiserver's `AuthenticatedGroupAdder`).
pub fn add_authenticated_group(user: &mut UserInfo) {
    if !user.in_group(AUTHENTICATED_GROUP) && !user.in_group(UNAUTHENTICATED_GROUP) {
        user.groups.push(AUTHENTICATED_GROUP.to_string());
    }
}

/// Several errors as one message, as Kubernetes' `utilerrors.NewAggregate` prints them: one
/// error alone, several in brackets separated by commas.
pub fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}
