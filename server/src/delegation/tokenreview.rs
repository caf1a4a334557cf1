//! Delegated token authentication: a bearer token is checked by POSTing a `TokenReview`
//! (`authentication.k8s.io/v1`) to the main server (k8s.io/apiserver's webhook token
//! authenticator), its verdicts kept for `--authentication-token-webhook-cache-ttl`.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::authentication::{TokenAuthenticator, TokenOutcome, Validity};
use apimachinery::user::UserInfo;

use super::cache::TtlCache;
use super::kubeconfig::KubeClient;

/// The path `TokenReview`s are created at.
pub const TOKEN_REVIEWS: &str = "/apis/authentication.k8s.io/v1/tokenreviews";

/// Checks tokens with `TokenReview`s. See the [module docs](self).
pub struct TokenReviewAuthenticator {
    client: KubeClient,
    ttl: Duration,
    /// Verdicts by token and audiences (transport failures are not kept).
    cache: TtlCache<(String, Vec<String>), TokenOutcome>,
}

impl std::fmt::Debug for TokenReviewAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenReviewAuthenticator")
            .field("server", &self.client.base().as_str())
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl TokenReviewAuthenticator {
    /// An authenticator asking the server `client` reaches, keeping verdicts for `ttl`.
    pub fn new(client: KubeClient, ttl: Duration) -> Arc<Self> {
        Arc::new(Self {
            client,
            ttl,
            cache: TtlCache::default(),
        })
    }
}

/// The `TokenReview` sent for `token` (with `audiences` when there are some).
pub fn review(token: &str, audiences: &[String]) -> serde_json::Value {
    let mut spec = serde_json::json!({ "token": token });
    if !audiences.is_empty() {
        spec["audiences"] = serde_json::json!(audiences);
    }
    serde_json::json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": spec,
    })
}

/// The verdict of a `TokenReview` answer, as the webhook authenticator reads it: not
/// authenticated is an unrecognized token, or an invalid one when the answer gives an error.
pub fn outcome(answer: &serde_json::Value, audiences: &[String]) -> TokenOutcome {
    let status = &answer["status"];
    if status["authenticated"].as_bool() != Some(true) {
        return match status["error"].as_str() {
            Some(error) if !error.is_empty() => TokenOutcome::Invalid(error.to_string()),
            _ => TokenOutcome::Unrecognized,
        };
    }
    let strings = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let user = &status["user"];
    let extra = user["extra"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), strings(v))).collect())
        .unwrap_or_default();
    let got = strings(&status["audiences"]);
    let audiences = if audiences.is_empty() {
        got
    } else if got.is_empty() {
        audiences.to_vec()
    } else {
        let both: Vec<String> = audiences
            .iter()
            .filter(|a| got.contains(a))
            .cloned()
            .collect();
        if both.is_empty() {
            return TokenOutcome::Unrecognized;
        }
        both
    };
    TokenOutcome::Authenticated {
        user: UserInfo {
            name: user["username"].as_str().unwrap_or_default().to_string(),
            uid: user["uid"].as_str().unwrap_or_default().to_string(),
            groups: strings(&user["groups"]),
            extra,
        },
        audiences,
        valid: Validity::default(),
    }
}

#[async_trait::async_trait]
impl TokenAuthenticator for TokenReviewAuthenticator {
    async fn authenticate_token(&self, token: &str, audiences: &[String]) -> TokenOutcome {
        let key = (token.to_string(), audiences.to_vec());
        if let Some(known) = self.cache.get(&key) {
            return known;
        }
        let answer = match self
            .client
            .post_json(TOKEN_REVIEWS, &review(token, audiences))
            .await
        {
            Ok(answer) => answer,
            Err(e) => {
                tracing::error!(error = %e, "Failed to make webhook authenticator request");
                return TokenOutcome::Invalid(e.to_string());
            }
        };
        let mut verdict = outcome(&answer, audiences);
        if let TokenOutcome::Authenticated { valid, .. } = &mut verdict {
            // A connection remembers the verdict no longer than the cache keeps it.
            let until = chrono::Utc::now().timestamp()
                + i64::try_from(self.ttl.as_secs()).unwrap_or(i64::MAX);
            *valid = Validity::default().until(until);
        }
        self.cache.insert(key, verdict.clone(), self.ttl);
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reviews_and_answers_as_the_webhook_authenticator_reads_them() {
        assert_eq!(
            review("t", &[]),
            serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "t"}})
        );
        assert_eq!(
            review("t", &["a".into()])["spec"]["audiences"],
            serde_json::json!(["a"])
        );
        let answer = serde_json::json!({"status": {"authenticated": true, "user": {
            "username": "system:serviceaccount:default:sa", "uid": "u",
            "groups": ["system:serviceaccounts"], "extra": {"k": ["v"]}},
            "audiences": ["https://kubernetes.default.svc"]}});
        match outcome(&answer, &[]) {
            TokenOutcome::Authenticated {
                user, audiences, ..
            } => {
                assert_eq!(user.name, "system:serviceaccount:default:sa");
                assert_eq!(user.uid, "u");
                assert_eq!(user.groups, ["system:serviceaccounts"]);
                assert_eq!(user.extra["k"], ["v"]);
                assert_eq!(audiences, ["https://kubernetes.default.svc"]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            outcome(&answer, &["other".into()]),
            TokenOutcome::Unrecognized
        );
        assert_eq!(
            outcome(&serde_json::json!({"status": {}}), &[]),
            TokenOutcome::Unrecognized
        );
        assert_eq!(
            outcome(
                &serde_json::json!({"status": {"error": "token expired"}}),
                &[]
            ),
            TokenOutcome::Invalid("token expired".into())
        );
    }
}
