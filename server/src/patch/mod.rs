//! Patches as clients send them: JSON patch (RFC 6902), JSON merge patch (RFC 7386) and
//! Kubernetes' strategic merge patch. Server-side apply lives in [`crate::apply`].

pub mod json;
pub mod schema;
pub mod strategic;

use apimachinery::status::ApiError;
use serde_json::Value;

pub use schema::SchemaNode;

/// The media type of a JSON patch.
pub const JSON_PATCH: &str = "application/json-patch+json";
/// The media type of a JSON merge patch.
pub const MERGE_PATCH: &str = "application/merge-patch+json";
/// The media type of a strategic merge patch.
pub const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";
/// The media type of a server-side apply request.
pub const APPLY_PATCH_YAML: &str = "application/apply-patch+yaml";
/// The media type of a server-side apply request in CBOR (accepted name only).
pub const APPLY_PATCH_CBOR: &str = "application/apply-patch+cbor";

/// The kinds of patch a `PATCH` request may carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    /// RFC 6902.
    Json,
    /// RFC 7386.
    Merge,
    /// Kubernetes' strategic merge patch.
    Strategic,
    /// Server-side apply.
    Apply,
}

impl PatchType {
    /// Reads the patch type from a `Content-Type` (parameters ignored); `strategic` says
    /// whether the kind accepts strategic merge patch. Unknown or refused types → 415 with
    /// the accepted list.
    pub fn from_content_type(content_type: &str, strategic: bool) -> Result<Self, ApiError> {
        let essence = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        let t = match essence.as_str() {
            JSON_PATCH => Self::Json,
            MERGE_PATCH => Self::Merge,
            STRATEGIC_MERGE_PATCH if strategic => Self::Strategic,
            APPLY_PATCH_YAML => Self::Apply,
            _ => {
                return Err(ApiError::unsupported_media_type(&Self::accepted(strategic)));
            }
        };
        Ok(t)
    }

    /// The patch media types a kind accepts, in Kubernetes' order.
    pub fn accepted(strategic: bool) -> Vec<&'static str> {
        if strategic {
            vec![
                JSON_PATCH,
                MERGE_PATCH,
                STRATEGIC_MERGE_PATCH,
                APPLY_PATCH_YAML,
            ]
        } else {
            vec![JSON_PATCH, MERGE_PATCH, APPLY_PATCH_YAML]
        }
    }
}

/// Parses the body of a JSON, merge or strategic merge patch. As in Kubernetes, a body that is
/// not valid JSON is 400 `invalid JSON patch` whatever the patch type; so is one nested deeper
/// than [`crate::negotiate::body::MAX_DEPTH`] (refused before parsing).
pub fn decode_patch_body(body: &[u8]) -> Result<Value, ApiError> {
    crate::negotiate::body::parse_json(body)
        .map_err(|_| ApiError::bad_request("invalid JSON patch"))
}

/// The largest patch body applied on the request's own worker; a longer one is applied on the
/// blocking pool by [`apply_patch_off_worker`].
pub const INLINE_PATCH_BYTES: usize = 4096;

/// [`apply_patch`], on the blocking pool when the body is longer than
/// [`INLINE_PATCH_BYTES`]. A JSON patch costs up to its operations times the object's size
/// (each `add` into a list moves the list's tail, as in Kubernetes): 9,999 inserts at the
/// front of a 700,000-item list take ≈ 15 s of CPU. Run on an async worker, eight such
/// patches held up every other request and `/readyz` for a minute and outlived the request
/// timeout; off the workers the timeout answers 504 and the rest of the server is served.
pub async fn apply_patch_off_worker(
    patch_type: PatchType,
    original: Value,
    body: bytes::Bytes,
    schema: SchemaNode,
) -> Result<Value, ApiError> {
    if body.len() <= INLINE_PATCH_BYTES {
        return apply_patch(patch_type, &original, &body, &schema);
    }
    tokio::task::spawn_blocking(move || apply_patch(patch_type, &original, &body, &schema))
        .await
        .map_err(ApiError::internal)?
}

/// Applies a JSON, merge or strategic merge patch to `original` (apply is handled by
/// [`crate::apply`]). `schema` is the kind's schema for strategic merge.
pub fn apply_patch(
    patch_type: PatchType,
    original: &Value,
    body: &[u8],
    schema: &SchemaNode,
) -> Result<Value, ApiError> {
    match patch_type {
        PatchType::Json => json::apply_json_patch(original, body),
        PatchType::Merge => json::apply_merge_patch(original, body),
        PatchType::Strategic => {
            let patch = decode_patch_body(body)?;
            strategic::strategic_merge(original, &patch, schema)
        }
        PatchType::Apply => Err(ApiError::internal(
            "apply patches are handled by server-side apply",
        )),
    }
}
