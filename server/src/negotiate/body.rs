//! Decoding request bodies by `Content-Type`: JSON (nesting bounded before parsing), YAML
//! (`yaml`) and Kubernetes protobuf.

use apimachinery::status::ApiError;
use serde_json::Value;

/// The deepest nesting accepted in a YAML or JSON request body.
pub const MAX_DEPTH: usize = 100;

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

/// The nesting depth of a JSON value (containers only: `1` and `"a"` are 0, `[]` and `{}` 1),
/// computed without recursion.
pub fn depth(v: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(v, 0usize)];
    while let Some((v, d)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(a) => Box::new(a.iter()),
            Value::Object(o) => Box::new(o.values()),
            _ => continue,
        };
        deepest = deepest.max(d + 1);
        stack.extend(children.map(|c| (c, d + 1)));
    }
    deepest
}

/// Finds where a JSON text first nests deeper than `max` containers, in one pass over its
/// bytes (strings and their escapes skipped), before any parsing. Returns the opening bracket
/// that went too deep. For valid JSON the count is the parser's own, so this is exact; on
/// malformed text it is exact up to the first error, where every parser stops.
pub fn json_too_deep(text: &[u8], max: usize) -> Option<u8> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'"' => {
                i += 1;
                while i < text.len() {
                    match text[i] {
                        b'\\' => i += 2,
                        b'"' => break,
                        _ => i += 1,
                    }
                }
            }
            c @ (b'[' | b'{') => {
                depth += 1;
                if depth > max {
                    return Some(c);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// The message Go's JSON scanner gives for nesting deeper than its limit (Kubernetes' limit is
/// 10,000; apiary's is [`MAX_DEPTH`]).
pub fn json_depth_message(bracket: u8) -> String {
    format!("invalid character '{}' exceeded max depth", bracket as char)
}

/// Parses a JSON body, refusing nesting deeper than [`MAX_DEPTH`] before parsing. The error
/// is the bare message (the caller adds its context).
pub fn parse_json(body: &[u8]) -> Result<Value, String> {
    if let Some(c) = json_too_deep(body, MAX_DEPTH) {
        return Err(json_depth_message(c));
    }
    serde_json::from_slice(body).map_err(|e| e.to_string())
}

/// Decodes a JSON or YAML body into a JSON value (protobuf bodies are decoded by the caller,
/// which knows the kind). Nesting deeper than [`MAX_DEPTH`] is refused before parsing, with
/// the messages of Kubernetes' decoders (`couldn't get version/kind; json parse error: invalid
/// character '{' exceeded max depth`, `yaml: exceeded max depth of …`).
pub fn decode_body(format: BodyFormat, body: &[u8]) -> Result<Value, ApiError> {
    match format {
        BodyFormat::Json => parse_json(body).map_err(|e| {
            ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
        }),
        BodyFormat::Yaml => super::yaml::yaml_to_json(body),
        BodyFormat::Protobuf => Err(ApiError::internal("protobuf bodies are decoded per kind")),
    }
}

/// The message Kubernetes gives when a create or update body cannot be decoded at all
/// (`transformDecodeError` when no kind was read): the decoder's error and a summary of the
/// body (its first 30 bytes, as text when it starts with `{`, else in hex).
pub fn unrecognized_body_message(kind: &str, error: &str, body: &[u8]) -> String {
    const SUMMARY: usize = 30;
    let summary = match body {
        [] => "<empty>".to_string(),
        [b'{', ..] if body.len() > SUMMARY => {
            format!("{} ...", String::from_utf8_lossy(&body[..SUMMARY]))
        }
        [b'{', ..] => String::from_utf8_lossy(body).into_owned(),
        _ if body.len() > SUMMARY => format!("{} ...", hex::encode(&body[..SUMMARY])),
        _ => hex::encode(body),
    };
    format!("the object provided is unrecognized (must be of type {kind}): {error} ({summary})")
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
    fn json_bodies_nested_too_deep_are_refused() {
        let deep = format!("{}1{}", "[".repeat(150), "]".repeat(150));
        let err = decode_body(BodyFormat::Json, deep.as_bytes()).unwrap_err();
        assert_eq!(err.code(), 400);
        assert_eq!(
            err.message(),
            "couldn't get version/kind; json parse error: invalid character '[' exceeded max depth"
        );
    }

    fn nest(open: &str, leaf: &str, close: &str, n: usize) -> String {
        format!("{}{leaf}{}", open.repeat(n), close.repeat(n))
    }

    #[test]
    fn json_depth_is_counted_outside_strings() {
        let at_limit = nest("[", "1", "]", MAX_DEPTH);
        assert_eq!(json_too_deep(at_limit.as_bytes(), MAX_DEPTH), None);
        assert_eq!(depth(&parse_json(at_limit.as_bytes()).unwrap()), MAX_DEPTH);
        let over = nest("{\"a\":", "1", "}", MAX_DEPTH + 1);
        assert_eq!(json_too_deep(over.as_bytes(), MAX_DEPTH), Some(b'{'));
        assert_eq!(
            parse_json(over.as_bytes()).unwrap_err(),
            "invalid character '{' exceeded max depth"
        );
        // Brackets in strings, escaped quotes included, do not count.
        let strings = format!("[\"{}\\\"{}\"]", "[".repeat(500), "{".repeat(500));
        assert_eq!(json_too_deep(strings.as_bytes(), MAX_DEPTH), None);
        assert!(parse_json(strings.as_bytes()).is_ok());
        // Closers in strings do not hide real nesting.
        let hidden = nest("[\"]]\",", "1", "]", 200);
        assert_eq!(json_too_deep(hidden.as_bytes(), MAX_DEPTH), Some(b'['));
    }
}
