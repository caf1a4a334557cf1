//! Service-account tokens: JWTs signed with the server's key (ES256 with the key generated
//! under `--data-dir`, RS256 or ES256/ES384 with a key given), shaped as Kubernetes' bound tokens (`iss`, `sub`, `aud`, `exp`, `iat`, `nbf`, `jti` and the `kubernetes.io`
//! claim), issued through the `serviceaccounts/token` subresource ([`TokenIssuer`]) and checked
//! as kube-apiserver's JWT authenticator does ([`TokenAuthenticator`]): issuer, key and
//! signature, audiences, validity with a minute of leeway, and a ServiceAccount that still
//! exists with the uid the token names.

pub mod claims;
pub mod keys;
pub mod oidc;

use std::sync::{Arc, OnceLock};

use apimachinery::authentication::{
    Generation, IssuedToken, ServiceAccountToken, TokenAuthenticator, TokenIssuer, TokenOutcome,
    Validity,
};
use parking_lot::Mutex;
use rustc_hash::FxHashMap;

use self::claims::{Claims, KubernetesClaims, ObjectRef};
use self::keys::{PublicKey, SigningKey};
use super::UserInfo;
use super::bearer::intersect;
use crate::registry::Store;

pub use claims::{LEEWAY_SECONDS, go_quote_list};

/// The issuer when `--service-account-issuer` is not given (the in-cluster name of the API
/// server, which kube-apiserver setups use).
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// How many verified tokens the authenticator remembers; when full, the memory starts over.
const VERIFIED_CAPACITY: usize = 4096;

/// What the service-account token authenticator and issuer are built from.
pub struct ServiceAccountConfig {
    /// `--service-account-issuer`: the first signs, every one is accepted.
    pub issuers: Vec<String>,
    /// `--api-audiences` (default: the issuers).
    pub api_audiences: Vec<String>,
    /// The signing key.
    pub signing: SigningKey,
    /// The verifying keys (`--service-account-key-file` and the signing key's public half).
    pub public_keys: Vec<PublicKey>,
    /// `--service-account-jwks-uri`, if given.
    pub jwks_uri: Option<String>,
    /// `--service-account-max-token-expiration`, in seconds, if given.
    pub max_expiration_seconds: Option<i64>,
}

/// What token validation needs of a ServiceAccount or bound Secret, remembered per stored
/// revision.
#[derive(Debug)]
struct AccountFacts {
    /// The storage revision these facts were read at.
    revision: i64,
    /// The uid.
    uid: String,
    /// When deletion started, if it did.
    deleting_since: Option<chrono::DateTime<chrono::Utc>>,
}

/// Late-bound handles on the stores tokens are checked against (the registry is built after
/// the authenticators).
#[derive(Default)]
pub struct LookupStores {
    /// The ServiceAccounts.
    pub accounts: OnceLock<Arc<Store>>,
    /// The Secrets (tokens bound to a Secret).
    pub secrets: OnceLock<Arc<Store>>,
}

/// The shared [`LookupStores`].
pub type ServiceAccountStore = Arc<LookupStores>;

/// Issues and authenticates service-account tokens.
pub struct ServiceAccountTokens {
    config: ServiceAccountConfig,
    accounts: ServiceAccountStore,
    /// Tokens whose signature, issuer and shape were verified, with their claims.
    verified: Mutex<FxHashMap<String, Arc<Claims>>>,
    /// The facts of ServiceAccounts by storage key, so that a request decodes an account only
    /// when it has changed.
    accounts_seen: Mutex<FxHashMap<String, Arc<AccountFacts>>>,
}

impl ServiceAccountTokens {
    /// Tokens over `config`, checked against the ServiceAccounts in `accounts`.
    pub fn new(config: ServiceAccountConfig, accounts: ServiceAccountStore) -> Self {
        Self {
            config,
            accounts,
            verified: Mutex::new(FxHashMap::default()),
            accounts_seen: Mutex::new(FxHashMap::default()),
        }
    }

    /// The issuer tokens are signed as.
    pub fn issuer(&self) -> &str {
        self.config
            .issuers
            .first()
            .map_or(DEFAULT_ISSUER, String::as_str)
    }

    /// The verifying keys.
    pub fn public_keys(&self) -> &[PublicKey] {
        &self.config.public_keys
    }

    /// Where the key set is published: `--service-account-jwks-uri`, or `default`.
    pub fn jwks_uri(&self, default: String) -> String {
        self.config.jwks_uri.clone().unwrap_or(default)
    }

    /// Signs `claims`.
    pub fn sign(&self, claims: &Claims) -> Result<String, String> {
        let mut header = jsonwebtoken::Header::new(self.config.signing.algorithm);
        header.typ = None;
        header.kid = Some(self.config.signing.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.config.signing.encoding)
            .map_err(|e| e.to_string())
    }

    /// Verifies the signature of a token whose unverified issuer is one of ours:
    /// `Ok(None)` when it is not a JWT of ours at all, `Err` with Kubernetes' message when it
    /// is ours and does not verify.
    fn verify(&self, token: &str) -> Result<Option<Arc<Claims>>, String> {
        if let Some(known) = self.verified.lock().get(token) {
            return Ok(Some(Arc::clone(known)));
        }
        let Some(unverified_issuer) = claims::unverified_issuer(token) else {
            return Ok(None);
        };
        if !self.config.issuers.contains(&unverified_issuer) {
            return Ok(None);
        }
        let Ok(header) = jsonwebtoken::decode_header(token) else {
            return Ok(None);
        };
        let keys: Vec<&PublicKey> = self
            .config
            .public_keys
            .iter()
            .filter(|k| header.kid.as_ref().is_none_or(|kid| *kid == k.kid))
            .collect();
        if keys.is_empty() {
            return Err("invalid signature, no keys found".to_string());
        }
        let mut errors = Vec::new();
        let mut found = None;
        for key in keys {
            // Each key verifies the algorithm of its kind only: a token whose header names
            // another fails its signature check.
            let mut validation = jsonwebtoken::Validation::new(key.algorithm());
            // Time, issuer and audiences are checked afterwards, in Kubernetes' order and words.
            validation.validate_exp = false;
            validation.validate_nbf = false;
            validation.validate_aud = false;
            validation.required_spec_claims.clear();
            match jsonwebtoken::decode::<Claims>(token, &key.decoding, &validation) {
                Ok(data) => {
                    found = Some(data.claims);
                    break;
                }
                Err(e) => errors.push(claims::jose_error(&e)),
            }
        }
        let Some(claims) = found else {
            return Err(super::aggregate(&errors));
        };
        if !self.config.issuers.contains(&claims.iss) {
            return Err(format!("token issuer {:?} is invalid", claims.iss));
        }
        let claims = Arc::new(claims);
        let mut verified = self.verified.lock();
        if verified.len() >= VERIFIED_CAPACITY {
            verified.clear();
        }
        verified.insert(token.to_string(), Arc::clone(&claims));
        Ok(Some(claims))
    }

    /// The facts of an object, read from the watch cache (then consistently when the cache
    /// does not have it yet) and decoded only when its revision changed, with the value the
    /// cache's change counter had before the read (`None` without a cache).
    async fn facts(
        &self,
        store: Option<&Arc<Store>>,
        namespace: &str,
        name: &str,
    ) -> Result<(Arc<AccountFacts>, Option<Generation>), String> {
        let store = store.ok_or("service account lookup is not ready")?;
        let generation = store.changes().map(Generation::of);
        let found = match store.get_stored(namespace, name, "0").await {
            Err(e) if e.code() == 404 => store.get_stored(namespace, name, "").await,
            other => other,
        };
        let stored = found.map_err(|e| e.message().to_string())?;
        if let Some(known) = self.accounts_seen.lock().get(&stored.key)
            && known.revision == stored.resource_version
        {
            return Ok((Arc::clone(known), generation));
        }
        let account = store.decode(&stored).map_err(|e| e.message().to_string())?;
        let meta = account.metadata();
        let facts = Arc::new(AccountFacts {
            revision: stored.resource_version,
            uid: meta.uid.clone().unwrap_or_default(),
            deleting_since: meta.deletion_timestamp.as_ref().map(|t| t.0),
        });
        let mut seen = self.accounts_seen.lock();
        if seen.len() >= VERIFIED_CAPACITY {
            seen.clear();
        }
        seen.insert(stored.key, Arc::clone(&facts));
        Ok((facts, generation))
    }

    /// Checks that the token's ServiceAccount still exists with the token's uid (and its bound
    /// Secret, if any); the answer holds while neither is written or deleted and until a
    /// deletion in progress passes the leeway.
    async fn check_service_account(&self, k8s: &KubernetesClaims) -> Result<Validity, String> {
        let (namespace, name) = (&k8s.namespace, &k8s.serviceaccount.name);
        let now = chrono::Utc::now();
        let (account, generation) = self
            .facts(self.accounts.accounts.get(), namespace, name)
            .await?;
        let mut valid = Validity::default();
        remember(&mut valid, generation);
        if let Some(deleted) = account.deleting_since {
            if deleted < now - chrono::Duration::seconds(LEEWAY_SECONDS) {
                return Err(format!(
                    "service account {namespace}/{name} has been deleted"
                ));
            }
            valid = valid.until(deleted.timestamp() + LEEWAY_SECONDS);
        }
        if account.uid != k8s.serviceaccount.uid {
            return Err(format!(
                "service account UID ({}) does not match claim ({})",
                account.uid, k8s.serviceaccount.uid
            ));
        }
        let invalidated = || "service account token has been invalidated".to_string();
        if let Some(secret) = &k8s.secret {
            let (found, generation) = self
                .facts(self.accounts.secrets.get(), namespace, &secret.name)
                .await
                .map_err(|_| invalidated())?;
            remember(&mut valid, generation);
            if let Some(deleted) = found.deleting_since {
                if deleted < now - chrono::Duration::seconds(LEEWAY_SECONDS) {
                    return Err(invalidated());
                }
                valid = valid.until(deleted.timestamp() + LEEWAY_SECONDS);
            }
            if found.uid != secret.uid {
                return Err(format!(
                    "secret UID ({}) does not match service account secret ref claim ({})",
                    found.uid, secret.uid
                ));
            }
        }
        // Pods and Nodes are not served: a token bound to one cannot be checked.
        if k8s.pod.is_some() || k8s.node.is_some() {
            return Err(invalidated());
        }
        Ok(valid)
    }
}

/// Makes `valid` depend on the state a change counter counts; without one (no watch cache)
/// the verdict holds for its own request only.
fn remember(valid: &mut Validity, generation: Option<Generation>) {
    match generation {
        Some(g) => valid.unchanged.push(g),
        None => *valid = Validity::once(),
    }
}

/// The user a service-account token stands for (Kubernetes' `ServiceAccountInfo.UserInfo`).
pub fn user_of(claims: &Claims) -> UserInfo {
    let k8s = &claims.kubernetes;
    let mut user = UserInfo {
        name: format!(
            "system:serviceaccount:{}:{}",
            k8s.namespace, k8s.serviceaccount.name
        ),
        uid: k8s.serviceaccount.uid.clone(),
        groups: vec![
            "system:serviceaccounts".to_string(),
            format!("system:serviceaccounts:{}", k8s.namespace),
        ],
        ..UserInfo::default()
    };
    if !claims.jti.is_empty() {
        user.extra.insert(
            "authentication.kubernetes.io/credential-id".to_string(),
            vec![format!("JTI={}", claims.jti)],
        );
    }
    user
}

#[async_trait::async_trait]
impl TokenAuthenticator for ServiceAccountTokens {
    async fn authenticate_token(&self, token: &str, audiences: &[String]) -> TokenOutcome {
        let claims = match self.verify(token) {
            Ok(Some(claims)) => claims,
            Ok(None) => return TokenOutcome::Unrecognized,
            Err(e) => return TokenOutcome::Invalid(e),
        };
        let api = &self.config.api_audiences;
        let token_audiences = if claims.aud.is_empty() {
            api.clone()
        } else {
            claims.aud.clone()
        };
        let requested = if audiences.is_empty() {
            api.as_slice()
        } else {
            audiences
        };
        let shared = intersect(&token_audiences, requested);
        if shared.is_empty() && !api.is_empty() {
            return TokenOutcome::Invalid(format!(
                "token audiences {} is invalid for the target audiences {}",
                go_quote_list(&token_audiences),
                go_quote_list(requested)
            ));
        }
        if let Err(e) = claims.check_time(chrono::Utc::now().timestamp()) {
            return TokenOutcome::Invalid(e.to_string());
        }
        let mut valid = match self.check_service_account(&claims.kubernetes).await {
            Ok(valid) => valid,
            Err(e) => return TokenOutcome::Invalid(e),
        };
        if let Some(before) = claims.valid_before() {
            valid = valid.until(before);
        }
        TokenOutcome::Authenticated {
            user: user_of(&claims),
            audiences: shared,
            valid,
        }
    }
}

impl TokenIssuer for ServiceAccountTokens {
    fn issue(&self, request: &ServiceAccountToken) -> Result<IssuedToken, String> {
        let now = chrono::Utc::now().timestamp();
        let audiences = if request.audiences.is_empty() {
            self.config.api_audiences.clone()
        } else {
            request.audiences.clone()
        };
        let bound = request.bound_object.as_ref().map(|b| ObjectRef {
            name: b.name.clone(),
            uid: b.uid.clone(),
        });
        let kind = request.bound_object.as_ref().map(|b| b.kind.as_str());
        let claims = Claims {
            aud: audiences,
            exp: Some(now + request.expiration_seconds),
            iat: Some(now),
            iss: self.issuer().to_string(),
            jti: uuid::Uuid::new_v4().to_string(),
            kubernetes: KubernetesClaims {
                namespace: request.namespace.clone(),
                serviceaccount: ObjectRef {
                    name: request.name.clone(),
                    uid: request.uid.clone(),
                },
                pod: bound.clone().filter(|_| kind == Some("Pod")),
                secret: bound.clone().filter(|_| kind == Some("Secret")),
                node: bound.filter(|_| kind == Some("Node")),
            },
            nbf: Some(now),
            sub: format!(
                "system:serviceaccount:{}:{}",
                request.namespace, request.name
            ),
        };
        Ok(IssuedToken {
            token: self.sign(&claims)?,
            expires_at: now + request.expiration_seconds,
        })
    }

    fn api_audiences(&self) -> &[String] {
        &self.config.api_audiences
    }

    fn max_expiration_seconds(&self) -> Option<i64> {
        self.config.max_expiration_seconds
    }
}

#[cfg(test)]
mod tests;
