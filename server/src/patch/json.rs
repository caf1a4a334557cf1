//! JSON patch (RFC 6902, via the `json-patch` crate) and JSON merge patch (RFC 7386).

use apimachinery::status::{ApiError, StatusReason};
use serde_json::Value;

/// The largest number of operations accepted in one JSON patch.
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// Applies an RFC 6902 patch. A malformed patch is 400, too many operations 413, and an
/// operation that cannot be applied (missing path, failed test) 422.
pub fn apply_json_patch(original: &Value, body: &[u8]) -> Result<Value, ApiError> {
    let raw: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    if let Some(ops) = raw.as_array()
        && ops.len() > MAX_JSON_PATCH_OPERATIONS
    {
        return Err(ApiError::request_entity_too_large(&format!(
            "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
            ops.len()
        )));
    }
    let patch: json_patch::Patch = serde_json::from_value(raw)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    let mut doc = original.clone();
    json_patch::patch(&mut doc, &patch)
        .map_err(|e| ApiError::new(422, StatusReason::Invalid, e.to_string(), None))?;
    Ok(doc)
}

/// Applies an RFC 7386 merge patch; the patch must be a JSON object.
pub fn apply_merge_patch(original: &Value, body: &[u8]) -> Result<Value, ApiError> {
    let patch: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    if !patch.is_object() {
        return Err(ApiError::bad_request(
            "error decoding patch: a merge patch must be a JSON object",
        ));
    }
    let mut doc = original.clone();
    json_patch::merge(&mut doc, &patch);
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_patch_applies() {
        let out = apply_json_patch(
            &json!({"a": 1}),
            br#"[{"op":"add","path":"/b","value":2},{"op":"replace","path":"/a","value":3}]"#,
        )
        .unwrap();
        assert_eq!(out, json!({"a": 3, "b": 2}));
    }

    #[test]
    fn json_patch_errors() {
        let err = apply_json_patch(&json!({}), br#"[{"op":"remove","path":"/x"}]"#).unwrap_err();
        assert_eq!(err.code(), 422);
        let err = apply_json_patch(&json!({}), b"{").unwrap_err();
        assert_eq!(err.code(), 400);
        let ops: Vec<Value> = (0..10_001)
            .map(|_| json!({"op":"test","path":"/a","value":1}))
            .collect();
        let err =
            apply_json_patch(&json!({"a": 1}), &serde_json::to_vec(&ops).unwrap()).unwrap_err();
        assert_eq!(err.code(), 413);
        assert_eq!(
            err.message(),
            "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
        );
    }

    #[test]
    fn merge_patch_removes_nulls() {
        let out = apply_merge_patch(
            &json!({"metadata": {"labels": {"a": "1", "b": "2"}}}),
            br#"{"metadata":{"labels":{"a":null,"c":"3"}}}"#,
        )
        .unwrap();
        assert_eq!(out, json!({"metadata": {"labels": {"b": "2", "c": "3"}}}));
    }
}
