//! Authentication: who is making a request.
//!
//! The filter chain runs the [`UnionAuthenticator`]: each [`Authenticator`] (one per kind of
//! credentials: a front proxy's identity headers ([`requestheader`]), x509 client
//! certificates, bearer tokens) is tried in order and the first that
//! authenticates decides; when none does, a failed credential is a 401 and a request without
//! credentials becomes `system:anonymous` in group `system:unauthenticated` (when anonymous
//! access is enabled, else a 401), as kube-apiserver's union does. Bearer tokens are checked
//! by a [`TokenUnion`] of token authenticators (the `--token-auth-file` tokens, service-account
//! JWTs), which also answers `TokenReview`s. The resulting [`UserInfo`] is stored as a request
//! extension for authorization, impersonation, managedFields and the
//! `SelfSubjectReview`/`SelfSubjectAccessReview` handlers.

pub mod bearer;
pub mod config;
pub mod requestheader;
pub mod serviceaccount;
pub mod tokenfile;
pub mod x509;

pub use bearer::{BearerTokenAuthenticator, TokenUnion};

use std::sync::{Arc, OnceLock};

use apimachinery::authentication::Validity;
use parking_lot::{Mutex, RwLock};

pub use apimachinery::user::{
    ANONYMOUS_USER, AUTHENTICATED_GROUP, MASTERS_GROUP, UNAUTHENTICATED_GROUP, UserInfo,
};

/// What an authenticator concluded about one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthnOutcome {
    /// The credentials identify this user (shared with what the connection remembers, so a
    /// request does not copy it).
    Authenticated(Arc<UserInfo>),
    /// The request carries no credentials this authenticator understands.
    NoCredentials,
    /// The request carries credentials that are invalid (answered with 401 unless another
    /// authenticator accepts the request).
    Failed(String),
}

/// What authentication knows of one client connection, stored as a request extension by the
/// listener and shared by every request of the connection: the certificate chain the client
/// presented with the verdict of verifying it against the client CA (which holds while the
/// time stays inside the validity periods it was made in: a certificate that expires during a
/// kept connection fails the next request, as kube-apiserver verifies per request), the user
/// read from the leaf, and the `Authorization` header of the last bearer token authenticated
/// on the connection with its verdict.
#[derive(Clone, Debug, Default)]
pub struct PeerConnection(Arc<ConnectionState>);

#[derive(Debug, Default)]
struct ConnectionState {
    chain: Vec<rustls_pki_types::CertificateDer<'static>>,
    /// Verifies the chain again when the time leaves the verdict's window.
    verifier: Option<Arc<x509::DeferredClientVerifier>>,
    verdict: RwLock<ChainVerdict>,
    /// What x509 authentication read from the leaf, remembered for the connection's later
    /// requests.
    x509_user: OnceLock<Result<Option<Arc<UserInfo>>, String>>,
    /// The header of the last bearer token authenticated on the connection.
    bearer: Mutex<Option<RememberedToken>>,
    /// The user the connection's first request authenticated as (not anonymous).
    authenticated: OnceLock<Arc<UserInfo>>,
}

/// The outcome of verifying a chain, and the seconds since the epoch (`from` included,
/// `before` excluded) during which no certificate of the chain starts or ends its validity,
/// so the outcome stays the same.
#[derive(Clone, Debug)]
struct ChainVerdict {
    result: Result<(), String>,
    from: u64,
    before: u64,
}

impl Default for ChainVerdict {
    fn default() -> Self {
        Self {
            result: Ok(()),
            from: 0,
            before: u64::MAX,
        }
    }
}

/// The `Authorization` header value of a bearer token and the user the token was
/// authenticated as, with how long that holds.
struct RememberedToken {
    header: Box<[u8]>,
    user: Arc<UserInfo>,
    valid: Validity,
}

impl std::fmt::Debug for RememberedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The header holds a secret: never printed.
        f.debug_struct("RememberedToken")
            .field("user", &self.user.name)
            .field("valid", &self.valid)
            .finish_non_exhaustive()
    }
}

impl PeerConnection {
    /// A connection whose client presented `chain` (leaf first), taken as verified.
    pub fn new(chain: Vec<rustls_pki_types::CertificateDer<'static>>) -> Self {
        Self::checked(chain, Ok(()))
    }

    /// A connection whose client presented `chain` (leaf first), with the outcome of verifying
    /// it against the client CA, taken to hold for the whole connection.
    pub fn checked(
        chain: Vec<rustls_pki_types::CertificateDer<'static>>,
        verified: Result<(), String>,
    ) -> Self {
        Self(Arc::new(ConnectionState {
            chain,
            verdict: RwLock::new(ChainVerdict {
                result: verified,
                ..ChainVerdict::default()
            }),
            ..ConnectionState::default()
        }))
    }

    /// A connection whose client presented `chain` (leaf first), verified by `verifier` now
    /// and again whenever a request comes outside the validity periods the verdict was made in
    /// (the handshake accepts any chain; an unverifiable one is a failed x509 credential,
    /// answered 401 as kube-apiserver does).
    pub fn verified_by(
        chain: Vec<rustls_pki_types::CertificateDer<'static>>,
        verifier: Arc<x509::DeferredClientVerifier>,
    ) -> Self {
        let verdict = verify_at(&chain, &verifier, rustls_pki_types::UnixTime::now());
        Self(Arc::new(ConnectionState {
            chain,
            verifier: Some(verifier),
            verdict: RwLock::new(verdict),
            ..ConnectionState::default()
        }))
    }

    /// The chain, leaf first (empty when the client presented none).
    pub fn chain(&self) -> &[rustls_pki_types::CertificateDer<'static>] {
        &self.0.chain
    }

    /// The user x509 authentication reads from the leaf at `now`: a chain that does not verify
    /// then gives its verification error; otherwise the user `read` finds in the leaf, computed
    /// on the connection's first request and then remembered (every request of a connection
    /// has the same chain; `Ok(None)` when the leaf names no user). `None` when the client
    /// presented no certificate.
    pub fn x509_user_at(
        &self,
        now: rustls_pki_types::UnixTime,
        read: impl FnOnce(&[u8]) -> Result<Option<Arc<UserInfo>>, String>,
    ) -> Option<Result<Option<&Arc<UserInfo>>, String>> {
        let leaf = self.0.chain.first()?;
        if let Err(reason) = self.chain_verdict(now) {
            return Some(Err(reason));
        }
        Some(
            self.0
                .x509_user
                .get_or_init(|| read(leaf.as_ref()))
                .as_ref()
                .map(Option::as_ref)
                .map_err(Clone::clone),
        )
    }

    /// The verdict on the chain at `now`: the remembered one while `now` is inside its window,
    /// else a fresh verification (remembered in its place).
    fn chain_verdict(&self, now: rustls_pki_types::UnixTime) -> Result<(), String> {
        let secs = now.as_secs();
        {
            let verdict = self.0.verdict.read();
            if (verdict.from..verdict.before).contains(&secs) {
                return verdict.result.clone();
            }
        }
        let Some(verifier) = &self.0.verifier else {
            return self.0.verdict.read().result.clone();
        };
        let fresh = verify_at(&self.0.chain, verifier, now);
        let result = fresh.result.clone();
        *self.0.verdict.write() = fresh;
        result
    }

    /// The user of an `Authorization` header value when it is, byte for byte, the header whose
    /// bearer token was last authenticated on this connection and that verdict still holds at
    /// `now` (seconds since the epoch). Both headers came from this connection's client; the
    /// same bytes carry the same token, so the header need not be parsed or checked first.
    pub fn remembered_bearer(&self, header: &[u8], now: i64) -> Option<Arc<UserInfo>> {
        let remembered = self.0.bearer.lock();
        let known = remembered.as_ref()?;
        (*known.header == *header && known.valid.holds(now)).then(|| Arc::clone(&known.user))
    }

    /// Remembers that the bearer token of the `Authorization` header value `header`
    /// authenticated as `user`, for as long as `valid` says.
    pub fn remember_bearer(&self, header: &[u8], user: &Arc<UserInfo>, valid: Validity) {
        *self.0.bearer.lock() = Some(RememberedToken {
            header: header.into(),
            user: Arc::clone(user),
            valid,
        });
    }
}

impl PeerConnection {
    /// Records that a request of this connection was authenticated as `user` (the first such
    /// user is kept).
    pub fn note_authenticated(&self, user: &Arc<UserInfo>) {
        if self.0.authenticated.get().is_none() {
            let _ = self.0.authenticated.set(Arc::clone(user));
        }
    }

    /// The user a request of this connection was first authenticated as (never anonymous);
    /// `None` while none was. The listener makes room for new connections at its bound by
    /// closing connections without one first, then those of the user holding the most.
    pub fn authenticated_user(&self) -> Option<&Arc<UserInfo>> {
        self.0.authenticated.get()
    }
}

/// Verifies `chain` at `now`, with the window in which the outcome stays the same.
fn verify_at(
    chain: &[rustls_pki_types::CertificateDer<'static>],
    verifier: &x509::DeferredClientVerifier,
    now: rustls_pki_types::UnixTime,
) -> ChainVerdict {
    let (from, before) = x509::unchanged_window(chain, now.as_secs());
    ChainVerdict {
        result: verifier.check_at(chain, now),
        from,
        before,
    }
}

/// Recognises one kind of credentials.
#[async_trait::async_trait]
pub trait Authenticator: Send + Sync + 'static {
    /// Authenticates a request from its head (headers and extensions such as
    /// [`PeerConnection`]); it must not read the body.
    async fn authenticate(&self, request: &http::request::Parts) -> AuthnOutcome;

    /// Removes from a request this authenticator authenticated the headers that carried its
    /// credentials, so handlers never see them (the request-header identity headers).
    /// Default: nothing.
    fn clear_headers(&self, _headers: &mut http::HeaderMap) {}
}

#[async_trait::async_trait]
impl<T: Authenticator + ?Sized> Authenticator for Arc<T> {
    async fn authenticate(&self, request: &http::request::Parts) -> AuthnOutcome {
        (**self).authenticate(request).await
    }

    fn clear_headers(&self, headers: &mut http::HeaderMap) {
        (**self).clear_headers(headers);
    }
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
    pub async fn authenticate(
        &self,
        request: &http::request::Parts,
    ) -> Result<Arc<UserInfo>, String> {
        self.authenticate_with(request).await.map(|(user, _)| user)
    }

    /// Authenticates a request as [`authenticate`](Self::authenticate) does, then removes the
    /// headers that carried the credentials of the authenticator that decided
    /// ([`Authenticator::clear_headers`]).
    pub async fn authenticate_and_clear(
        &self,
        request: &mut http::request::Parts,
    ) -> Result<Arc<UserInfo>, String> {
        let (user, by) = self.authenticate_with(request).await?;
        if let Some(by) = by {
            self.authenticators[by].clear_headers(&mut request.headers);
        }
        Ok(user)
    }

    /// The user and the index of the authenticator that authenticated it (none: anonymous).
    async fn authenticate_with(
        &self,
        request: &http::request::Parts,
    ) -> Result<(Arc<UserInfo>, Option<usize>), String> {
        let mut failures: Vec<String> = Vec::new();
        for (index, a) in self.authenticators.iter().enumerate() {
            match a.authenticate(request).await {
                AuthnOutcome::Authenticated(mut user) => {
                    if needs_authenticated_group(&user) {
                        add_authenticated_group(Arc::make_mut(&mut user));
                    }
                    if let Some(connection) = request.extensions.get::<PeerConnection>() {
                        connection.note_authenticated(&user);
                    }
                    return Ok((user, Some(index)));
                }
                AuthnOutcome::NoCredentials => {}
                AuthnOutcome::Failed(reason) => failures.push(reason),
            }
        }
        if !failures.is_empty() {
            return Err(aggregate(&failures));
        }
        if self.anonymous {
            Ok((Arc::new(UserInfo::anonymous()), None))
        } else {
            Err("Unauthorized".to_string())
        }
    }
}

/// Adds `system:authenticated` to an authenticated user, unless it is already in it or in
/// `system:unauthenticated` (kube-apiserver's `AuthenticatedGroupAdder`).
pub fn add_authenticated_group(user: &mut UserInfo) {
    if needs_authenticated_group(user) {
        user.groups.push(AUTHENTICATED_GROUP.to_string());
    }
}

/// Whether [`add_authenticated_group`] would add `system:authenticated` to `user`.
fn needs_authenticated_group(user: &UserInfo) -> bool {
    !user.in_group(AUTHENTICATED_GROUP) && !user.in_group(UNAUTHENTICATED_GROUP)
}

/// Several errors as one message, as Kubernetes' `utilerrors.NewAggregate` prints them: one
/// error alone, several in brackets separated by commas.
pub fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}
