//! Authentication's vocabulary shared by the server and the kinds' strategies (Kubernetes'
//! `authenticator.Token` and the service-account `TokenGenerator`): a [`TokenAuthenticator`]
//! answers `TokenReview`s and a [`TokenIssuer`] signs the tokens of the `serviceaccounts/token`
//! subresource.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;

use crate::user::UserInfo;

/// What a token authenticator concluded about one token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenOutcome {
    /// The token identifies this user, valid for these audiences (among those asked for).
    Authenticated {
        /// The user.
        user: UserInfo,
        /// The audiences the token is valid for.
        audiences: Vec<String>,
        /// How long this verdict holds, for a caller that remembers it (the same token on
        /// the same connection).
        valid: Validity,
    },
    /// No authenticator recognises the token.
    Unrecognized,
    /// An authenticator recognised the token and found it invalid; the text is Kubernetes'.
    Invalid(String),
}

/// How long an authentication verdict holds: until a time, and while the state it was read
/// from is unchanged. A caller that remembers the verdict checks [`Validity::holds`] on every
/// use and authenticates again when it does not.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Validity {
    /// The verdict holds while the time, in seconds since the epoch, is before this; `None`:
    /// no time limit.
    pub before: Option<i64>,
    /// The verdict holds while each of these counters keeps the value it had when the state
    /// was read.
    pub unchanged: Vec<Generation>,
}

impl Validity {
    /// A verdict that holds for the request it was made for only.
    pub fn once() -> Self {
        Self {
            before: Some(i64::MIN),
            unchanged: Vec::new(),
        }
    }

    /// Also ends the verdict at `before` (seconds since the epoch), if that is sooner.
    pub fn until(mut self, before: i64) -> Self {
        self.before = Some(self.before.map_or(before, |b| b.min(before)));
        self
    }

    /// Whether the verdict still holds at `now` (seconds since the epoch).
    pub fn holds(&self, now: i64) -> bool {
        self.before.is_none_or(|before| now < before)
            && self.unchanged.iter().all(Generation::current)
    }
}

/// The value a change counter had when some state was read: the counter is incremented with
/// every change to that state, before a read can find the change, so while it keeps the value
/// taken before the read, what was read is still what a read would find.
#[derive(Clone, Debug)]
pub struct Generation {
    counter: Arc<AtomicU64>,
    seen: u64,
}

impl Generation {
    /// The current value of `counter`. Take it before reading the state it counts changes of.
    pub fn of(counter: &Arc<AtomicU64>) -> Self {
        Self {
            counter: Arc::clone(counter),
            seen: counter.load(Ordering::Acquire),
        }
    }

    /// Whether the counter still has the value it had.
    pub fn current(&self) -> bool {
        self.counter.load(Ordering::Acquire) == self.seen
    }
}

impl PartialEq for Generation {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.counter, &other.counter) && self.seen == other.seen
    }
}

impl Eq for Generation {}

/// Authenticates bearer tokens (Kubernetes' `authenticator.Token`).
#[async_trait]
pub trait TokenAuthenticator: Send + Sync {
    /// Authenticates `token` for `audiences`; an empty list means the API server's own
    /// audiences.
    async fn authenticate_token(&self, token: &str, audiences: &[String]) -> TokenOutcome;
}

/// What a service-account token is issued for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceAccountToken {
    /// The service account's namespace.
    pub namespace: String,
    /// The service account's name.
    pub name: String,
    /// The service account's uid.
    pub uid: String,
    /// The audiences (empty: the API server's own).
    pub audiences: Vec<String>,
    /// How long the token is valid, in seconds.
    pub expiration_seconds: i64,
    /// The object the token is bound to, if any.
    pub bound_object: Option<BoundObject>,
}

/// The object a token is bound to: the token stops working when it is deleted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BoundObject {
    /// `Pod`, `Secret` or `Node`.
    pub kind: String,
    /// The object's name.
    pub name: String,
    /// The object's uid.
    pub uid: String,
}

/// A signed token and when it expires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IssuedToken {
    /// The compact JWT.
    pub token: String,
    /// The expiry, in seconds since the Unix epoch.
    pub expires_at: i64,
}

/// Signs service-account tokens (Kubernetes' `serviceaccount.TokenGenerator`).
pub trait TokenIssuer: Send + Sync {
    /// Signs a token for `request`.
    fn issue(&self, request: &ServiceAccountToken) -> Result<IssuedToken, String>;

    /// The API server's audiences (`--api-audiences`), used when a request names none.
    fn api_audiences(&self) -> &[String];

    /// The longest validity a token is issued with, in seconds
    /// (`--service-account-max-token-expiration`); longer requests get this.
    fn max_expiration_seconds(&self) -> Option<i64> {
        None
    }
}

/// Reads the metadata of objects the server serves, for strategies that must check another
/// object (a token bound to a Secret).
#[async_trait]
pub trait ObjectReader: Send + Sync {
    /// The metadata of the named object of `group`/`kind`: `None` when the server does not
    /// serve that kind, `Some(Err)` when the read fails (404 when there is no such object).
    async fn metadata(
        &self,
        group: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Result<crate::meta::ObjectMeta, crate::status::ApiError>>;
}
