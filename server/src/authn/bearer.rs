//! Bearer tokens: the `Authorization: Bearer <token>` header of a request, checked by a
//! [`TokenUnion`] of token authenticators (kube-apiserver's `bearertoken` and `tokenunion`).

use std::sync::Arc;

use apimachinery::authentication::{TokenAuthenticator, TokenOutcome};

use super::{Authenticator, AuthnOutcome, add_authenticated_group, aggregate};

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
                } => {
                    add_authenticated_group(&mut user);
                    return TokenOutcome::Authenticated { user, audiences };
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

/// Authenticates requests by their bearer token.
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
        let Some(token) = request
            .headers
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer_token)
        else {
            return AuthnOutcome::NoCredentials;
        };
        match self.tokens.authenticate_token(token, &[]).await {
            TokenOutcome::Authenticated { user, .. } => AuthnOutcome::Authenticated(user),
            TokenOutcome::Unrecognized => AuthnOutcome::Failed(INVALID_BEARER_TOKEN.to_string()),
            TokenOutcome::Invalid(e) => AuthnOutcome::Failed(e),
        }
    }
}

/// The audiences two lists share, in the order of `a` (Kubernetes' `Audiences.Intersect`).
pub fn intersect(a: &[String], b: &[String]) -> Vec<String> {
    a.iter().filter(|x| b.contains(x)).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
