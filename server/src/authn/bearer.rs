//! Bearer tokens: the `Authorization: Bearer <token>` header of a request, checked by a
//! [`TokenUnion`] of token authenticators (kube-apiserver's `bearertoken` and `tokenunion`).

use std::sync::Arc;

use apimachinery::authentication::{TokenAuthenticator, TokenOutcome};

use super::{Authenticator, AuthnOutcome, PeerConnection, add_authenticated_group, aggregate};

/// The error of a bearer token no authenticator recognises (Kubernetes' `invalidToken`).
pub const INVALID_BEARER_TOKEN: &str = "invalid bearer token";

/// Token authenticators tried in order; the first that authenticates a token decides, and the
/// errors of those that found it invalid are reported together when none does.
#[derive(Default)]
pub struct TokenUnion {
    authenticators: Vec<Arc<dyn TokenAuthenticator>>,
}

impl TokenUnion {
    /// A union of `authenticators`, tried in order.
    pub fn new(authenticators: Vec<Arc<dyn TokenAuthenticator>>) -> Self {
        Self { authenticators }
    }

    /// Whether the union has no authenticator.
    pub fn is_empty(&self) -> bool {
        self.authenticators.is_empty()
    }
}

#[async_trait::async_trait]
impl TokenAuthenticator for TokenUnion {
    async fn authenticate_token(&self, token: &str, audiences: &[String]) -> TokenOutcome {
        let mut errors = Vec::new();
        for a in &self.authenticators {
            match a.authenticate_token(token, audiences).await {
                TokenOutcome::Authenticated {
                    mut user,
                    audiences,
                    valid,
                } => {
                    add_authenticated_group(&mut user);
                    return TokenOutcome::Authenticated {
                        user,
                        audiences,
                        valid,
                    };
                }
                TokenOutcome::Unrecognized => {}
                TokenOutcome::Invalid(e) => errors.push(e),
            }
        }
        if errors.is_empty() {
            TokenOutcome::Unrecognized
        } else {
            TokenOutcome::Invalid(aggregate(&errors))
        }
    }
}

/// Authenticates requests by their bearer token. The `Authorization` header of the last token
/// authenticated on a connection is remembered there with its verdict
/// ([`PeerConnection::remembered_bearer`]): a later request with the same header is answered
/// by comparing its bytes, before any parsing, while the verdict holds (the token's expiry,
/// and no write to the ServiceAccount or Secret it names since it was checked), as x509
/// remembers a connection's certificate user.
pub struct BearerTokenAuthenticator {
    tokens: Arc<TokenUnion>,
}

impl BearerTokenAuthenticator {
    /// Checks bearer tokens with `tokens`.
    pub fn new(tokens: Arc<TokenUnion>) -> Self {
        Self { tokens }
    }
}

/// The bearer token of an `Authorization` header value, parsed as Kubernetes does: the value
/// trimmed, split on spaces, the scheme `bearer` in any case, the token non-empty.
pub fn bearer_token(header: &str) -> Option<&str> {
    let mut parts = header.trim().splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[async_trait::async_trait]
impl Authenticator for BearerTokenAuthenticator {
    async fn authenticate(&self, request: &http::request::Parts) -> AuthnOutcome {
        let Some(header) = request.headers.get(http::header::AUTHORIZATION) else {
            return AuthnOutcome::NoCredentials;
        };
        let connection = request.extensions.get::<PeerConnection>();
        let now = unix_now();
        // The remembered header is compared first: checking and parsing it scan the whole
        // header, which cost ≈ 2.2k instructions per GET with a 0.9 KiB service-account token
        // (tools/callgrind-requests, `sa-admin`).
        if let Some(user) = connection.and_then(|c| c.remembered_bearer(header.as_bytes(), now)) {
            return AuthnOutcome::Authenticated(user);
        }
        let Some(token) = header.to_str().ok().and_then(bearer_token) else {
            return AuthnOutcome::NoCredentials;
        };
        match self.tokens.authenticate_token(token, &[]).await {
            TokenOutcome::Authenticated { user, valid, .. } => {
                let user = Arc::new(user);
                if let Some(connection) = connection
                    && valid.holds(now)
                {
                    connection.remember_bearer(header.as_bytes(), &user, valid);
                }
                AuthnOutcome::Authenticated(user)
            }
            TokenOutcome::Unrecognized => AuthnOutcome::Failed(INVALID_BEARER_TOKEN.to_string()),
            TokenOutcome::Invalid(e) => AuthnOutcome::Failed(e),
        }
    }
}

/// Seconds since the epoch.
fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// The audiences two lists share, in the order of `a` (Kubernetes' `Audiences.Intersect`).
pub fn intersect(a: &[String], b: &[String]) -> Vec<String> {
    a.iter().filter(|x| b.contains(x)).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authn::UserInfo;
    use crate::authn::tokenfile::TokenFileAuthenticator;
    use apimachinery::authentication::{Generation, Validity};

    /// The `Authorization` header value of `token`.
    fn header(token: &str) -> Vec<u8> {
        format!("Bearer {token}").into_bytes()
    }

    fn request(connection: &PeerConnection, token: &str) -> http::request::Parts {
        request_with(connection, &header(token))
    }

    fn request_with(connection: &PeerConnection, header: &[u8]) -> http::request::Parts {
        let mut req = http::Request::new(());
        req.extensions_mut().insert(connection.clone());
        req.headers_mut().insert(
            http::header::AUTHORIZATION,
            http::HeaderValue::from_bytes(header).unwrap_or_else(|e| panic!("{e}")),
        );
        req.into_parts().0
    }

    #[tokio::test]
    async fn a_connection_remembers_its_last_token() {
        let file = TokenFileAuthenticator::from_csv(
            "tokens.csv",
            "t1,alice,1,\"system:masters\"\nt2,bob,2\n",
            vec!["api".to_string()],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let union = TokenUnion::new(vec![Arc::new(file) as Arc<dyn TokenAuthenticator>]);
        let bearer = BearerTokenAuthenticator::new(Arc::new(union));
        let connection = PeerConnection::default();
        let now = unix_now();
        let name = |outcome: AuthnOutcome| match outcome {
            AuthnOutcome::Authenticated(user) => user.name.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(connection.remembered_bearer(&header("t1"), now), None);
        assert_eq!(
            name(bearer.authenticate(&request(&connection, "t1")).await),
            "alice"
        );
        let alice = connection.remembered_bearer(&header("t1"), now);
        assert_eq!(
            alice.map(|u| u.groups.clone()),
            Some(vec![
                "system:masters".to_string(),
                crate::authn::AUTHENTICATED_GROUP.to_string()
            ])
        );
        // Another token on the same connection is authenticated, and remembered instead.
        assert_eq!(
            name(bearer.authenticate(&request(&connection, "t2")).await),
            "bob"
        );
        assert_eq!(connection.remembered_bearer(&header("t1"), now), None);
        assert!(connection.remembered_bearer(&header("t2"), now).is_some());
        // A token differing from the remembered one is never taken for it.
        assert_eq!(connection.remembered_bearer(&header("t2x"), now), None);
        assert_eq!(connection.remembered_bearer(&header("t"), now), None);
        assert_eq!(
            bearer.authenticate(&request(&connection, "t2x")).await,
            AuthnOutcome::Failed(INVALID_BEARER_TOKEN.to_string())
        );
        // A failed token leaves the remembered one alone; a token file never expires.
        assert!(
            connection
                .remembered_bearer(&header("t2"), i64::MAX - 1)
                .is_some()
        );
        assert_eq!(
            name(bearer.authenticate(&request(&connection, "t1")).await),
            "alice"
        );
        // The header is remembered as sent: the same token in another form of the header is
        // authenticated again (and remembered in that form), a header that only starts with
        // the remembered one is not taken for it.
        let lower = b"bearer t1 ".to_vec();
        assert_eq!(connection.remembered_bearer(&lower, now), None);
        assert_eq!(
            name(
                bearer
                    .authenticate(&request_with(&connection, &lower))
                    .await
            ),
            "alice"
        );
        assert!(connection.remembered_bearer(&lower, now).is_some());
        assert_eq!(connection.remembered_bearer(&header("t1"), now), None);
        assert_eq!(connection.remembered_bearer(b"bearer t1", now), None);
        // A header that is not a bearer token is no credential, remembered or not.
        assert_eq!(
            bearer
                .authenticate(&request_with(&connection, b"Basic dDE6"))
                .await,
            AuthnOutcome::NoCredentials
        );
    }

    #[tokio::test]
    async fn requests_share_the_remembered_user() {
        let file = TokenFileAuthenticator::from_csv("tokens.csv", "t1,alice,1\n", Vec::new())
            .unwrap_or_else(|e| panic!("{e}"));
        let union = TokenUnion::new(vec![Arc::new(file) as Arc<dyn TokenAuthenticator>]);
        let bearer = BearerTokenAuthenticator::new(Arc::new(union));
        let connection = PeerConnection::default();
        let mut users = Vec::new();
        for _ in 0..2 {
            match bearer.authenticate(&request(&connection, "t1")).await {
                AuthnOutcome::Authenticated(user) => users.push(user),
                other => panic!("{other:?}"),
            }
        }
        assert!(Arc::ptr_eq(&users[0], &users[1]));
        // The remembered user is already in `system:authenticated`: the union adds nothing.
        let union = crate::authn::UnionAuthenticator::new(
            vec![Box::new(BearerTokenAuthenticator::new(Arc::clone(
                &bearer.tokens,
            )))],
            false,
        );
        let user = union
            .authenticate(&request(&connection, "t1"))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(Arc::ptr_eq(&user, &users[0]));
    }

    #[test]
    fn a_remembered_verdict_ends_with_its_validity() {
        let connection = PeerConnection::default();
        let user = Arc::new(UserInfo {
            name: "robot".to_string(),
            ..UserInfo::default()
        });
        let counter = Arc::new(std::sync::atomic::AtomicU64::new(7));
        let valid = Validity {
            before: Some(1_000),
            unchanged: vec![Generation::of(&counter)],
        };
        connection.remember_bearer(&header("tok"), &user, valid);
        assert_eq!(
            connection.remembered_bearer(&header("tok"), 999),
            Some(user)
        );
        assert_eq!(connection.remembered_bearer(&header("tok"), 1_000), None);
        counter.fetch_add(1, std::sync::atomic::Ordering::Release);
        assert_eq!(connection.remembered_bearer(&header("tok"), 999), None);
        assert!(!Validity::once().holds(i64::MIN));
        assert!(Validity::default().holds(i64::MAX));
    }

    #[test]
    fn bearer_header_forms() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("  bearer abc  "), Some("abc"));
        assert_eq!(bearer_token("BEARER abc extra"), Some("abc"));
        assert_eq!(bearer_token("Bearer "), None);
        assert_eq!(bearer_token("Bearer"), None);
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token(""), None);
    }
}
