//! Decoding request bodies by `Content-Type`: JSON, YAML (bounded) and Kubernetes protobuf.

use apimachinery::status::ApiError;
use serde_json::Value;

/// The deepest nesting accepted in a YAML or JSON request body.
pub const MAX_DEPTH: usize = 100;

/// The largest number of YAML aliases accepted in one document (bounds alias expansion).
pub const MAX_YAML_ALIASES: usize = 100;

/// The body's media type, decided from `Content-Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyFormat {
    /// JSON.
    Json,
    /// YAML.
    Yaml,
    /// Kubernetes protobuf.
    Protobuf,
}

/// Reads the body format from a `Content-Type`; an unsupported type is 415 with the accepted
/// list. A missing header means JSON.
pub fn body_format(content_type: Option<&str>, protobuf: bool) -> Result<BodyFormat, ApiError> {
    let essence = content_type
        .and_then(|c| c.split(';').next())
        .map(|c| c.trim().to_ascii_lowercase())
        .unwrap_or_default();
    match essence.as_str() {
        "" | "application/json" => Ok(BodyFormat::Json),
        "application/yaml" | "application/x-yaml" | "text/yaml" => Ok(BodyFormat::Yaml),
        super::media::PROTOBUF if protobuf => Ok(BodyFormat::Protobuf),
        _ => {
            let mut accepted = vec!["application/json", "application/yaml"];
            if protobuf {
                accepted.push(super::media::PROTOBUF);
            }
            Err(ApiError::unsupported_media_type(&accepted))
        }
    }
}

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Converts YAML text to JSON, refusing documents with more than [`MAX_YAML_ALIASES`] aliases
/// (before expansion) or nesting deeper than [`MAX_DEPTH`].
pub fn yaml_to_json(text: &[u8]) -> Result<Value, ApiError> {
    let s = std::str::from_utf8(text)
        .map_err(|e| ApiError::bad_request(format!("error converting YAML to JSON: {e}")))?;
    let aliases = s
        .split(|c: char| c.is_whitespace() || c == '[' || c == ',' || c == '{')
        .filter(|w| w.starts_with('*') && w.len() > 1)
        .count();
    if aliases > MAX_YAML_ALIASES {
        return Err(ApiError::bad_request(
            "error converting YAML to JSON: yaml: document contains excessive aliasing",
        ));
    }
    let v: Value = serde_yaml_ng::from_str(s)
        .map_err(|e| ApiError::bad_request(format!("error converting YAML to JSON: {e}")))?;
    if depth(&v) > MAX_DEPTH {
        return Err(ApiError::bad_request(
            "error converting YAML to JSON: yaml: exceeded max depth",
        ));
    }
    Ok(v)
}

/// Decodes a JSON or YAML body into a JSON value (protobuf bodies are decoded by the caller,
/// which knows the kind).
pub fn decode_body(format: BodyFormat, body: &[u8]) -> Result<Value, ApiError> {
    match format {
        BodyFormat::Json => {
            let v: Value = serde_json::from_slice(body).map_err(|e| {
                ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
            })?;
            if depth(&v) > MAX_DEPTH {
                return Err(ApiError::bad_request("json: exceeded max depth"));
            }
            Ok(v)
        }
        BodyFormat::Yaml => yaml_to_json(body),
        BodyFormat::Protobuf => Err(ApiError::internal("protobuf bodies are decoded per kind")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(body_format(None, false).unwrap(), BodyFormat::Json);
        assert_eq!(
            body_format(Some("application/yaml; charset=utf-8"), false).unwrap(),
            BodyFormat::Yaml
        );
        let err = body_format(Some("text/plain"), false).unwrap_err();
        assert_eq!(err.code(), 415);
        assert_eq!(
            err.message(),
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"
        );
    }

    #[test]
    fn yaml_decodes_and_bounds_aliases() {
        assert_eq!(
            yaml_to_json(b"a: 1\nb: [x]\n").unwrap(),
            serde_json::json!({"a": 1, "b": ["x"]})
        );
        let mut bomb = String::from("a: &a [x]\n");
        for i in 0..200 {
            bomb.push_str(&format!("k{i}: [*a, *a]\n"));
        }
        assert_eq!(yaml_to_json(bomb.as_bytes()).unwrap_err().code(), 400);
        let deep = format!("{}1{}", "[".repeat(150), "]".repeat(150));
        assert_eq!(
            decode_body(BodyFormat::Json, deep.as_bytes())
                .unwrap_err()
                .code(),
            400
        );
    }
}
#[cfg(test)]
mod alias_bombs {
    /// Few aliases, nested: 81 aliases that would expand to 9^9 nodes.
    #[test]
    fn nested_alias_bomb_is_refused_quickly() {
        let mut doc = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            let p = i - 1;
            doc.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        let t = std::time::Instant::now();
        let err = super::yaml_to_json(doc.as_bytes()).unwrap_err();
        assert_eq!(err.code(), 400);
        assert!(t.elapsed() < std::time::Duration::from_secs(5));
    }
}
