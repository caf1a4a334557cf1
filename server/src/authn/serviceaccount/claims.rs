//! The claims of a service-account token, as Kubernetes writes and reads them.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Deserializer, Serialize};

/// The clock skew allowed on `nbf` and `exp`, in seconds (go-jose's `DefaultLeeway`, which
/// Kubernetes uses).
pub const LEEWAY_SECONDS: i64 = 60;

/// The claims of a token; fields in the order Go writes them (sorted).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The audiences.
    #[serde(default, deserialize_with = "one_or_many")]
    pub aud: Vec<String>,
    /// Expiry, seconds since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exp: Option<i64>,
    /// Issued at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<i64>,
    /// The issuer.
    #[serde(default)]
    pub iss: String,
    /// The token's unique id.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub jti: String,
    /// Kubernetes' private claim.
    #[serde(rename = "kubernetes.io", default)]
    pub kubernetes: KubernetesClaims,
    /// Not before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<i64>,
    /// The subject, `system:serviceaccount:<namespace>:<name>`.
    #[serde(default)]
    pub sub: String,
}

/// The `kubernetes.io` claim.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KubernetesClaims {
    /// The ServiceAccount's namespace.
    #[serde(default)]
    pub namespace: String,
    /// The Node the token is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<ObjectRef>,
    /// The Pod the token is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<ObjectRef>,
    /// The Secret the token is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<ObjectRef>,
    /// The ServiceAccount.
    #[serde(default)]
    pub serviceaccount: ObjectRef,
}

/// A name and uid.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRef {
    /// The name.
    #[serde(default)]
    pub name: String,
    /// The uid.
    #[serde(default)]
    pub uid: String,
}

/// Why a token's validity period rejects it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    /// `nbf` is ahead of now by more than the leeway.
    #[error("service account token is not valid yet")]
    NotValidYet,
    /// `exp` is behind now by more than the leeway.
    #[error("service account token has expired")]
    Expired,
    /// `iat` is ahead of now by more than the leeway.
    #[error("service account token is issued in the future")]
    IssuedInTheFuture,
}

impl Claims {
    /// Checks `nbf`, `exp` and `iat` against `now` (seconds) with the leeway, in go-jose's
    /// order.
    pub fn check_time(&self, now: i64) -> Result<(), TimeError> {
        if self.nbf.is_some_and(|nbf| now + LEEWAY_SECONDS < nbf) {
            return Err(TimeError::NotValidYet);
        }
        if self.exp.is_some_and(|exp| now - LEEWAY_SECONDS > exp) {
            return Err(TimeError::Expired);
        }
        if self.iat.is_some_and(|iat| now + LEEWAY_SECONDS < iat) {
            return Err(TimeError::IssuedInTheFuture);
        }
        Ok(())
    }

    /// The first second (since the epoch) at which [`Claims::check_time`] finds the token
    /// expired, if it expires.
    pub fn valid_before(&self) -> Option<i64> {
        self.exp.map(|exp| exp.saturating_add(LEEWAY_SECONDS + 1))
    }
}

/// `aud` is a string or a list of strings.
fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match Option::<OneOrMany>::deserialize(d)? {
        None => Vec::new(),
        Some(OneOrMany::One(s)) => vec![s],
        Some(OneOrMany::Many(v)) => v,
    })
}

/// The issuer of a compact JWT, read without verifying it (Kubernetes' `hasCorrectIssuer`);
/// `None` when the text is not a JWT.
pub fn unverified_issuer(token: &str) -> Option<String> {
    if token.trim_start().starts_with('{') {
        return None;
    }
    let mut parts = token.split('.');
    let (_, payload, _, None) = (parts.next()?, parts.next()?, parts.next()?, parts.next()) else {
        return None;
    };
    #[derive(Deserialize)]
    struct Issuer {
        #[serde(default)]
        iss: String,
    }
    let bytes = URL_SAFE_NO_PAD.decode(payload).ok()?;
    serde_json::from_slice::<Issuer>(&bytes).ok().map(|i| i.iss)
}

/// A verification error in go-jose's words, which Kubernetes reports.
pub fn jose_error(e: &jsonwebtoken::errors::Error) -> String {
    match e.kind() {
        jsonwebtoken::errors::ErrorKind::InvalidSignature
        | jsonwebtoken::errors::ErrorKind::InvalidAlgorithm
        | jsonwebtoken::errors::ErrorKind::Crypto(_) => {
            "go-jose/go-jose: error in cryptographic primitive".to_string()
        }
        _ => format!("go-jose/go-jose: {e}"),
    }
}

/// A list of strings as Go's `%q` prints a `[]string`: `["a" "b"]`.
pub fn go_quote_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", quoted.join(" "))
}
