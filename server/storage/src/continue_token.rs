//! Opaque list continuation tokens, in Kubernetes' wire format.
//!
//! A token is the unpadded URL-safe base64 of `{"v":"meta.k8s.io/v1","rv":N,"start":"<key>"}`
//! where `rv` is the revision the first page was read at and `start` is the next key to read,
//! relative to the listed prefix. Decoding rejects tokens whose start key would escape the
//! prefix (`..`, `.`, empty or trailing segments), so a client cannot use a crafted token to
//! read another collection.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use crate::errors::{Result, Revision, StorageError};

/// The only token version understood.
const TOKEN_VERSION: &str = "meta.k8s.io/v1";

#[derive(Serialize, Deserialize)]
struct Token {
    v: String,
    rv: Revision,
    start: String,
}

/// Encodes a token that resumes a list of `key_prefix` at `next_key` (inclusive) and at
/// `revision`. `next_key` must start with `key_prefix`.
pub fn encode(next_key: &str, key_prefix: &str, revision: Revision) -> Result<String> {
    let Some(relative) = next_key.strip_prefix(key_prefix) else {
        return Err(StorageError::internal(format!(
            "continue key {next_key:?} is outside the listed prefix {key_prefix:?}"
        )));
    };
    let token = Token {
        v: TOKEN_VERSION.to_string(),
        rv: revision,
        start: relative.to_string(),
    };
    let json = serde_json::to_vec(&token).map_err(StorageError::internal)?;
    Ok(URL_SAFE_NO_PAD.encode(json))
}

/// Decodes a token for a list of `key_prefix` (which ends with `/`), returning the absolute
/// start key and the revision.
pub fn decode(token: &str, key_prefix: &str) -> Result<(String, Revision)> {
    let invalid = |message: String| StorageError::InvalidContinue { message };
    let data = URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|e| invalid(format!("continue key is not valid: {e}")))?;
    let token: Token = serde_json::from_slice(&data)
        .map_err(|e| invalid(format!("continue key is not valid: {e}")))?;
    if token.v != TOKEN_VERSION {
        return Err(invalid(format!(
            "continue key is not valid: server does not recognize this encoded version {:?}",
            token.v
        )));
    }
    // kube-apiserver's checks and words (`storage.DecodeContinue`); a negative revision is
    // as meaningless as none.
    if token.rv <= 0 {
        return Err(invalid(format!(
            "continue key is not valid: incorrect encoded start resourceVersion (version {TOKEN_VERSION})"
        )));
    }
    if token.start.is_empty() {
        return Err(invalid(format!(
            "continue key is not valid: encoded start key empty (version {TOKEN_VERSION})"
        )));
    }
    let relative = token.start.strip_prefix('/').unwrap_or(&token.start);
    if relative
        .split('/')
        .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return Err(invalid(format!(
            "continue key is not valid: {:?}",
            token.start
        )));
    }
    let base = key_prefix.strip_suffix('/').unwrap_or(key_prefix);
    Ok((format!("{base}/{relative}"), token.rv))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let t = encode("/registry/w/ns1/b\0", "/registry/w/", 42).expect("encode");
        let (key, rv) = decode(&t, "/registry/w/").expect("decode");
        assert_eq!(key, "/registry/w/ns1/b\0");
        assert_eq!(rv, 42);
    }

    #[test]
    fn kubernetes_format() {
        let t = encode("/p/a\0", "/p/", 7).expect("encode");
        let json = URL_SAFE_NO_PAD.decode(t).expect("b64");
        assert_eq!(
            String::from_utf8(json).expect("utf8"),
            "{\"v\":\"meta.k8s.io/v1\",\"rv\":7,\"start\":\"a\\u0000\"}"
        );
    }

    #[test]
    fn rejects_escapes_and_garbage() {
        for start in ["../x", "a/../../b", "./a", "a//b", ""] {
            let json = format!("{{\"v\":\"meta.k8s.io/v1\",\"rv\":1,\"start\":\"{start}\"}}");
            let t = URL_SAFE_NO_PAD.encode(json);
            assert!(decode(&t, "/p/").is_err(), "{start}");
        }
        assert!(decode("%%%", "/p/").is_err());
        let other = URL_SAFE_NO_PAD.encode("{\"v\":\"x\",\"rv\":1,\"start\":\"a\"}");
        assert!(decode(&other, "/p/").is_err());
    }

    #[test]
    fn a_revision_of_zero_or_below_or_an_empty_start_is_refused_in_kubernetes_words() {
        let message = |json: &str| match decode(&URL_SAFE_NO_PAD.encode(json), "/p/") {
            Err(StorageError::InvalidContinue { message }) => message,
            other => panic!("{json}: {other:?}"),
        };
        for rv in ["0", "-5"] {
            assert_eq!(
                message(&format!(
                    "{{\"v\":\"meta.k8s.io/v1\",\"rv\":{rv},\"start\":\"a\"}}"
                )),
                "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
            );
        }
        assert_eq!(
            message("{\"v\":\"meta.k8s.io/v1\",\"rv\":3,\"start\":\"\"}"),
            "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)"
        );
    }
}
