//! Encoding responses: objects, lists, Tables, metadata-only forms and `Status` errors in the
//! negotiated media type, with `Warning` headers.

use apimachinery::status::ApiError;
use axum::body::Body;
use http::{HeaderValue, Response, StatusCode, header};
use serde_json::{Map, Value, json};

use super::request::RequestContext;
use crate::negotiate::{Negotiated, OutputFormat, Transform, negotiate_output};
use crate::table::{self, IncludeObject};

/// Renders an API error as its `Status` JSON response (with `Retry-After` when set).
pub fn error(err: &ApiError) -> Response<Body> {
    let mut b = Response::builder()
        .status(StatusCode::from_u16(err.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(s) = err.retry_after_seconds() {
        b = b.header(header::RETRY_AFTER, s.to_string());
    }
    b.body(Body::from(err.to_status_bytes()))
        .unwrap_or_default()
}

/// Formats one `Warning` header value (code 299, agent `-`).
pub fn warning_header(text: &str) -> String {
    format!(
        "299 - \"{}\"",
        text.replace('\\', "\\\\").replace('"', "\\\"")
    )
}

/// Responses larger than this are gzip-compressed when the client accepts it (as
/// kube-apiserver's `APIResponseCompression`).
pub const GZIP_THRESHOLD: usize = 128 * 1024;

/// Whether an `Accept-Encoding` header accepts gzip.
pub fn accepts_gzip(accept_encoding: Option<&str>) -> bool {
    accept_encoding.is_some_and(|h| {
        h.split(',').any(|e| {
            let mut parts = e.split(';');
            let name = parts.next().unwrap_or("").trim();
            let zero = parts.any(|p| p.trim().replace(' ', "") == "q=0");
            (name.eq_ignore_ascii_case("gzip") || name == "*") && !zero
        })
    })
}

fn gzip(body: &[u8]) -> Option<Vec<u8>> {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(
        Vec::with_capacity(body.len() / 4),
        flate2::Compression::fast(),
    );
    enc.write_all(body).ok()?;
    enc.finish().ok()
}

fn build(
    status: StatusCode,
    content_type: &str,
    body: Vec<u8>,
    warnings: &[String],
    allow_gzip: bool,
) -> Result<Response<Body>, ApiError> {
    let mut b = Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, content_type);
    for w in warnings {
        if let Ok(v) = HeaderValue::from_str(&warning_header(w)) {
            b = b.header(header::WARNING, v);
        }
    }
    let body = if allow_gzip && body.len() > GZIP_THRESHOLD {
        match gzip(&body) {
            Some(z) => {
                b = b
                    .header(header::CONTENT_ENCODING, "gzip")
                    .header(header::VARY, "Accept-Encoding");
                z
            }
            None => body,
        }
    } else {
        body
    };
    b.body(Body::from(body)).map_err(ApiError::internal)
}

/// Serializes a JSON value as JSON or YAML.
pub fn encode_text(format: OutputFormat, value: &Value) -> Result<Vec<u8>, ApiError> {
    match format {
        OutputFormat::Yaml => serde_yaml_ng::to_string(value)
            .map(String::into_bytes)
            .map_err(ApiError::internal),
        _ => {
            // Objects are rarely under a kilobyte: one allocation instead of several regrowths
            // from serde_json's 128 bytes. The bytes are `serde_json::to_writer`'s.
            let mut out = Vec::with_capacity(1024);
            apimachinery::json::write_compact(&mut out, value);
            Ok(out)
        }
    }
}

/// Encodes an object of the requested version as protobuf in the `k8s\0` envelope.
pub fn encode_protobuf_object(rc: &RequestContext, object: &Value) -> Result<Vec<u8>, ApiError> {
    let raw = rc
        .ops
        .encode_protobuf(rc.version(), object)
        .map_err(ApiError::internal)?;
    Ok(apimachinery::protobuf::encode_envelope(
        &rc.version_info.api_version(),
        rc.version_info.kind,
        &raw,
    ))
}

/// Sends one object (of the requested version) with the negotiated encoding and transform.
pub fn object(
    rc: &RequestContext,
    status: StatusCode,
    object: Value,
    warnings: &[String],
) -> Result<Response<Body>, ApiError> {
    let n = negotiate_output(rc.header("accept"), false, rc.protobuf())?;
    let body = match &n.transform {
        Transform::Table(v) => {
            let include = IncludeObject::parse(rc.q("includeObject"))?;
            let meta = json!({"resourceVersion": object.pointer("/metadata/resourceVersion").cloned().unwrap_or(Value::from(""))});
            table::table(
                std::slice::from_ref(&object),
                &rc.version_info,
                include,
                v,
                meta,
                true,
            )
        }
        Transform::PartialObjectMetadata(v) => table::partial_metadata(&object, v),
        Transform::PartialObjectMetadataList(_) | Transform::None => object,
    };
    send(rc, &n, status, &body, false, warnings)
}

fn send(
    rc: &RequestContext,
    n: &Negotiated,
    status: StatusCode,
    body: &Value,
    list: bool,
    warnings: &[String],
) -> Result<Response<Body>, ApiError> {
    let gz = accepts_gzip(rc.header("accept-encoding"));
    if n.format == OutputFormat::Protobuf && n.transform == Transform::None {
        let raw = if list {
            rc.ops.encode_protobuf_list(rc.version(), body)
        } else {
            rc.ops.encode_protobuf(rc.version(), body)
        };
        if let Ok(raw) = raw {
            let kind = if list {
                rc.version_info.list_kind
            } else {
                rc.version_info.kind
            };
            let bytes =
                apimachinery::protobuf::encode_envelope(&rc.version_info.api_version(), kind, &raw);
            return build(status, n.content_type().as_str(), bytes, warnings, gz);
        }
        // A kind whose protobuf encoding fails is served as JSON, which clients always accept.
        return build(
            status,
            "application/json",
            encode_text(OutputFormat::Json, body)?,
            warnings,
            gz,
        );
    }
    build(
        status,
        &n.content_type(),
        encode_text(n.format, body)?,
        warnings,
        gz,
    )
}

/// Sends a list of objects (of the requested version) with its list metadata.
pub fn list(
    rc: &RequestContext,
    items: Vec<Value>,
    list_meta: Value,
) -> Result<Response<Body>, ApiError> {
    let n = negotiate_output(rc.header("accept"), true, rc.protobuf())?;
    let body = match &n.transform {
        Transform::Table(v) => {
            let include = IncludeObject::parse(rc.q("includeObject"))?;
            table::table(&items, &rc.version_info, include, v, list_meta, true)
        }
        Transform::PartialObjectMetadataList(v) => {
            let items: Vec<Value> = items
                .iter()
                .map(|o| table::partial_metadata(o, v))
                .collect();
            json!({"kind": "PartialObjectMetadataList", "apiVersion": format!("meta.k8s.io/{v}"), "metadata": list_meta, "items": items})
        }
        Transform::PartialObjectMetadata(_) | Transform::None => {
            let mut m = Map::new();
            m.insert("kind".into(), Value::from(rc.version_info.list_kind));
            m.insert(
                "apiVersion".into(),
                Value::from(rc.version_info.api_version()),
            );
            m.insert("metadata".into(), list_meta);
            m.insert("items".into(), Value::Array(items));
            Value::Object(m)
        }
    };
    send(rc, &n, StatusCode::OK, &body, true, &[])
}

/// Sends an already-encoded JSON object with 200.
pub fn raw_json(rc: &RequestContext, body: Vec<u8>) -> Result<Response<Body>, ApiError> {
    build(
        StatusCode::OK,
        "application/json",
        body,
        &[],
        accepts_gzip(rc.header("accept-encoding")),
    )
}

/// Sends a JSON list whose items are already-encoded JSON objects of the requested version,
/// given comma-separated (the inside of the `items` array).
pub fn raw_json_list(
    rc: &RequestContext,
    items: &[u8],
    list_meta: &Value,
) -> Result<Response<Body>, ApiError> {
    let head = serde_json::to_vec(&json!({"kind": rc.version_info.list_kind, "apiVersion": rc.version_info.api_version(), "metadata": list_meta})).map_err(ApiError::internal)?;
    let mut body = Vec::with_capacity(head.len() + items.len() + 16);
    // `head` ends with `}`: reopen it to append the items.
    body.extend_from_slice(&head[..head.len().saturating_sub(1)]);
    body.extend_from_slice(b",\"items\":[");
    body.extend_from_slice(items);
    body.extend_from_slice(b"]}");
    build(
        StatusCode::OK,
        "application/json",
        body,
        &[],
        accepts_gzip(rc.header("accept-encoding")),
    )
}

/// Sends a `Status` of success (delete).
pub fn success(details: Value) -> Result<Response<Body>, ApiError> {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details});
    build(
        StatusCode::OK,
        "application/json",
        encode_text(OutputFormat::Json, &body)?,
        &[],
        false,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_negotiation() {
        assert!(accepts_gzip(Some("gzip")));
        assert!(accepts_gzip(Some("deflate, gzip;q=0.5")));
        assert!(!accepts_gzip(Some("gzip;q=0")));
        assert!(!accepts_gzip(None));
        let big = vec![b'a'; GZIP_THRESHOLD + 1];
        assert!(gzip(&big).is_some_and(|z| z.len() < big.len()));
    }

    #[test]
    fn warning_format() {
        assert_eq!(
            warning_header("unknown field \"spec.foo\""),
            "299 - \"unknown field \\\"spec.foo\\\"\""
        );
    }
}
