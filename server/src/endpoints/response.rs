//! Encoding responses: objects, lists, Tables, metadata-only forms and `Status` errors in the
//! negotiated media type, with `Warning` headers.

use apimachinery::status::ApiError;
use axum::body::Body;
use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use serde_json::{Map, Value, json};

use apimachinery::meta::ListMeta;
use apimachinery::runtime::Object;

use super::scope::RequestScope;
use crate::negotiate::{OutputFormat, Transform, negotiate_output};
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

/// The gzip of `parts` one after another (`size` bytes in all).
fn gzip<'a>(parts: impl IntoIterator<Item = &'a [u8]>, size: usize) -> Option<Vec<u8>> {
    use std::io::Write;
    let mut enc =
        flate2::write::GzEncoder::new(Vec::with_capacity(size / 4), flate2::Compression::fast());
    for part in parts {
        enc.write_all(part).ok()?;
    }
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
        match gzip([&body[..]], body.len()) {
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
            let mut out = Vec::with_capacity(1024);
            serde_json::to_writer(&mut out, value).map_err(ApiError::internal)?;
            Ok(out)
        }
    }
}

/// Encodes an object as protobuf in the `k8s\0` envelope.
pub fn encode_protobuf_object(object: &dyn Object) -> Result<Vec<u8>, ApiError> {
    let mut raw = Vec::with_capacity(512);
    object
        .write_protobuf(&mut raw)
        .map_err(ApiError::internal)?;
    let info = object.info();
    Ok(apimachinery::protobuf::encode_envelope(
        &info.api_version(),
        info.kind,
        &raw,
    ))
}

/// The `PartialObjectMetadata` of an object in the given `meta.k8s.io` version.
pub fn partial_metadata(object: &dyn Object, meta_version: &str) -> Result<Value, ApiError> {
    Ok(json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": format!("meta.k8s.io/{meta_version}"),
        "metadata": serde_json::to_value(object.metadata()).map_err(ApiError::internal)?,
    }))
}

/// The `Table` of objects (of the requested version) with `list_meta`.
pub fn table_of(
    scope: &RequestScope,
    objects: &[&dyn Object],
    meta_version: &str,
    list_meta: Value,
    with_columns: bool,
) -> Result<Value, ApiError> {
    let include = IncludeObject::parse(scope.q("includeObject"))?;
    table::table(
        objects,
        scope.version,
        scope.kind.strategy().table(),
        include,
        meta_version,
        list_meta,
        with_columns,
    )
}

/// Sends one object (of the requested version) with the negotiated encoding and transform.
pub fn object(
    scope: &RequestScope,
    status: StatusCode,
    object: &dyn Object,
    warnings: &[String],
) -> Result<Response<Body>, ApiError> {
    let n = negotiate_output(scope.header("accept"), false, scope.protobuf())?;
    let gz = accepts_gzip(scope.header("accept-encoding"));
    let transformed = match &n.transform {
        Transform::Table(v) => {
            let meta = json!({"resourceVersion": object.metadata().resource_version.clone().unwrap_or_default()});
            Some(table_of(scope, &[object], v, meta, true)?)
        }
        Transform::PartialObjectMetadata(v) => Some(partial_metadata(object, v)?),
        Transform::PartialObjectMetadataList(_) | Transform::None => None,
    };
    if let Some(value) = transformed {
        return build(
            status,
            &n.content_type(),
            encode_text(n.format, &value)?,
            warnings,
            gz,
        );
    }
    match n.format {
        OutputFormat::Protobuf => match encode_protobuf_object(object) {
            Ok(bytes) => {
                if let Some(note) = &scope.audit_note {
                    note.record_response(object);
                }
                build(status, n.content_type().as_str(), bytes, warnings, gz)
            }
            // A kind whose protobuf encoding fails is served as JSON, which clients accept.
            Err(_) => build(
                status,
                "application/json",
                json_bytes(object)?,
                warnings,
                gz,
            ),
        },
        OutputFormat::Yaml => {
            let value = object.to_value().map_err(ApiError::internal)?;
            build(
                status,
                &n.content_type(),
                encode_text(n.format, &value)?,
                warnings,
                gz,
            )
        }
        OutputFormat::Json => build(status, &n.content_type(), json_bytes(object)?, warnings, gz),
    }
}

fn json_bytes(object: &dyn Object) -> Result<Vec<u8>, ApiError> {
    object.to_json().map_err(ApiError::internal)
}

/// Sends a list of objects (of the requested version) with its list metadata.
pub fn list(
    scope: &RequestScope,
    items: &[Box<dyn Object>],
    list_meta: &ListMeta,
) -> Result<Response<Body>, ApiError> {
    let n = negotiate_output(scope.header("accept"), true, scope.protobuf())?;
    let gz = accepts_gzip(scope.header("accept-encoding"));
    let meta_json = serde_json::to_value(list_meta).map_err(ApiError::internal)?;
    let refs: Vec<&dyn Object> = items.iter().map(|o| &**o).collect();
    let transformed = match &n.transform {
        Transform::Table(v) => Some(table_of(scope, &refs, v, meta_json.clone(), true)?),
        Transform::PartialObjectMetadataList(v) => {
            let items = refs
                .iter()
                .map(|o| partial_metadata(*o, v))
                .collect::<Result<Vec<_>, _>>()?;
            Some(
                json!({"kind": "PartialObjectMetadataList", "apiVersion": format!("meta.k8s.io/{v}"), "metadata": meta_json, "items": items}),
            )
        }
        Transform::PartialObjectMetadata(_) | Transform::None => None,
    };
    if let Some(value) = transformed {
        return build(
            StatusCode::OK,
            &n.content_type(),
            encode_text(n.format, &value)?,
            &[],
            gz,
        );
    }
    match n.format {
        OutputFormat::Protobuf => {
            if let Ok(bytes) = encode_protobuf_list(scope, &refs, list_meta) {
                return build(StatusCode::OK, n.content_type().as_str(), bytes, &[], gz);
            }
            // A kind whose protobuf encoding fails is served as JSON.
            build(
                StatusCode::OK,
                "application/json",
                json_list(scope, &refs, &meta_json)?,
                &[],
                gz,
            )
        }
        OutputFormat::Yaml => {
            let items = refs
                .iter()
                .map(|o| o.to_value().map_err(ApiError::internal))
                .collect::<Result<Vec<_>, _>>()?;
            let mut m = Map::new();
            m.insert("kind".into(), Value::from(scope.version.list_kind));
            m.insert(
                "apiVersion".into(),
                Value::from(scope.version.api_version()),
            );
            m.insert("metadata".into(), meta_json);
            m.insert("items".into(), Value::Array(items));
            build(
                StatusCode::OK,
                &n.content_type(),
                encode_text(n.format, &Value::Object(m))?,
                &[],
                gz,
            )
        }
        OutputFormat::Json => build(
            StatusCode::OK,
            &n.content_type(),
            json_list(scope, &refs, &meta_json)?,
            &[],
            gz,
        ),
    }
}

/// The JSON of a list: `{"kind", "apiVersion", "metadata", "items": [...]}` with each item
/// written by its typed encoder.
fn json_list(
    scope: &RequestScope,
    items: &[&dyn Object],
    list_meta: &Value,
) -> Result<Vec<u8>, ApiError> {
    let mut body = Vec::with_capacity(256 + items.len() * 512);
    write_list_head(scope, list_meta, &mut body)?;
    for (i, o) in items.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        o.write_json(&mut body).map_err(ApiError::internal)?;
    }
    body.extend_from_slice(b"]}");
    Ok(body)
}

/// Writes `{"kind":…,"apiVersion":…,"metadata":…,"items":[` of a list.
fn write_list_head(
    scope: &RequestScope,
    list_meta: &Value,
    body: &mut Vec<u8>,
) -> Result<(), ApiError> {
    let head = serde_json::to_vec(&json!({"kind": scope.version.list_kind, "apiVersion": scope.version.api_version(), "metadata": list_meta}))
        .map_err(ApiError::internal)?;
    // `head` ends with `}`: reopen it to append the items.
    body.extend_from_slice(&head[..head.len().saturating_sub(1)]);
    body.extend_from_slice(b",\"items\":[");
    Ok(())
}

/// The protobuf of a list in the `k8s\0` envelope: every Kubernetes list message is
/// `{ ListMeta metadata = 1; repeated <Kind> items = 2; }`.
fn encode_protobuf_list(
    scope: &RequestScope,
    items: &[&dyn Object],
    list_meta: &ListMeta,
) -> Result<Vec<u8>, ApiError> {
    use apimachinery::protobuf::ProtoMessage as _;
    let mut raw = Vec::with_capacity(64 + items.len() * 256);
    apimachinery::protobuf::put_len_delimited(&mut raw, 1, &list_meta.encode_to_vec());
    let mut item = Vec::with_capacity(512);
    for o in items {
        item.clear();
        o.write_protobuf(&mut item).map_err(ApiError::internal)?;
        apimachinery::protobuf::put_len_delimited(&mut raw, 2, &item);
    }
    Ok(apimachinery::protobuf::encode_envelope(
        &scope.version.api_version(),
        scope.version.list_kind,
        &raw,
    ))
}

/// Sends an already-encoded JSON object with 200.
pub fn raw_json(scope: &RequestScope, body: Vec<u8>) -> Result<Response<Body>, ApiError> {
    build(
        StatusCode::OK,
        "application/json",
        body,
        &[],
        accepts_gzip(scope.header("accept-encoding")),
    )
}

/// Sends a list whose items are already JSON, in the parts
/// [`Store::json_list_items`](crate::registry::Store::json_list_items) made (joined by
/// commas), with its list metadata. The parts go out one after another without being copied
/// into one buffer, unless the body is gzipped.
pub fn raw_json_list(
    scope: &RequestScope,
    parts: Vec<Vec<u8>>,
    list_meta: &Value,
) -> Result<Response<Body>, ApiError> {
    let mut head = Vec::with_capacity(256);
    write_list_head(scope, list_meta, &mut head)?;
    let size = head.len() + parts.iter().map(|p| p.len() + 1).sum::<usize>() + 2;
    if size <= JOIN_BELOW {
        // A small list goes out as one buffer (one DATA frame): peers count small frames
        // (the h2 crate closes a connection that receives too many of them).
        let mut body = head;
        body.reserve(size);
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                body.push(b',');
            }
            body.extend_from_slice(part);
        }
        body.extend_from_slice(b"]}");
        return build(
            StatusCode::OK,
            "application/json",
            body,
            &[],
            accepts_gzip(scope.header("accept-encoding")),
        );
    }
    let mut chunks = Vec::with_capacity(2 * parts.len() + 1);
    chunks.push(Bytes::from(head));
    let last = parts.len().saturating_sub(1);
    for (i, mut part) in parts.into_iter().enumerate() {
        // The separator and the end go at the end of a part when it has room for them, so
        // the body has as few small frames as it can.
        let tail: &'static [u8] = if i == last { b"]}" } else { b"," };
        if part.capacity() - part.len() >= tail.len() {
            part.extend_from_slice(tail);
            chunks.push(Bytes::from(part));
        } else {
            chunks.push(Bytes::from(part));
            chunks.push(Bytes::from_static(tail));
        }
    }
    let size: usize = chunks.iter().map(Bytes::len).sum();
    let response = Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json");
    if accepts_gzip(scope.header("accept-encoding"))
        && size > GZIP_THRESHOLD
        && let Some(z) = gzip(chunks.iter().map(|c| &c[..]), size)
    {
        return response
            .header(header::CONTENT_ENCODING, "gzip")
            .header(header::VARY, "Accept-Encoding")
            .body(Body::from(z))
            .map_err(ApiError::internal);
    }
    response
        .body(Body::new(Chunks::new(chunks)))
        .map_err(ApiError::internal)
}

/// Lists up to this size are sent as one buffer.
const JOIN_BELOW: usize = 64 * 1024;

/// The largest frame [`Chunks`] yields. The server takes a frame only once the connection has
/// room for more, so a body handed over in frames of this size stays (with what it holds, such
/// as its list memory reservation) until nearly all of it has been sent; a whole buffer
/// would be taken at once into the connection's send queue.
const FRAME_BYTES: usize = 64 * 1024;

/// A response body sent as the buffers it was made of, in order, in frames of at most
/// [`FRAME_BYTES`] (slices of the buffers, not copies), with its exact length (so it goes out
/// with a `Content-Length`).
struct Chunks {
    chunks: std::collections::VecDeque<Bytes>,
    remaining: u64,
}

impl Chunks {
    fn new(chunks: Vec<Bytes>) -> Self {
        let remaining = chunks.iter().map(|c| c.len() as u64).sum();
        Self {
            chunks: chunks.into(),
            remaining,
        }
    }
}

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        let next = match self.chunks.front_mut() {
            Some(front) if front.len() > FRAME_BYTES => Some(front.split_to(FRAME_BYTES)),
            _ => self.chunks.pop_front(),
        };
        if let Some(chunk) = &next {
            self.remaining -= chunk.len() as u64;
        }
        std::task::Poll::Ready(next.map(|chunk| Ok(http_body::Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.remaining)
    }
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
        assert!(gzip([&big[..]], big.len()).is_some_and(|z| z.len() < big.len()));
        // Parts gzip as their concatenation does.
        let parts = [&b"{\"a\":"[..], b"[1,2", b"]}"];
        let z = gzip(parts, 12).unwrap_or_default();
        let mut unzipped = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&z[..]), &mut unzipped)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(unzipped, "{\"a\":[1,2]}");
    }

    /// A body of parts sends each in order, with its exact remaining length.
    #[tokio::test]
    async fn chunks_are_sent_in_order_with_their_length() {
        use http_body::Body as _;
        use http_body_util::BodyExt;
        let body = Chunks::new(vec![
            Bytes::from_static(b"{\"items\":["),
            Bytes::from(b"1,2".to_vec()),
            Bytes::from_static(b","),
            Bytes::from(b"3".to_vec()),
            Bytes::from_static(b"]}"),
        ]);
        assert_eq!(body.size_hint().exact(), Some(17));
        let mut body = std::pin::pin!(body);
        let first = body.frame().await.and_then(|f| f.ok()?.into_data().ok());
        assert_eq!(first.as_deref(), Some(&b"{\"items\":["[..]));
        assert_eq!(body.size_hint().exact(), Some(7));
        let rest = body.collect().await.map(|c| c.to_bytes());
        assert_eq!(rest.ok().as_deref(), Some(&b"1,2,3]}"[..]));
        // A large buffer goes out in frames of at most `FRAME_BYTES`.
        let big = Bytes::from(vec![b'x'; 2 * FRAME_BYTES + 1]);
        let mut body = std::pin::pin!(Chunks::new(vec![big]));
        let mut frames = Vec::new();
        while let Some(Ok(frame)) = body.frame().await {
            frames.push(frame.into_data().map(|d| d.len()).unwrap_or_default());
        }
        assert_eq!(frames, [FRAME_BYTES, FRAME_BYTES, 1]);
    }

    #[test]
    fn warning_format() {
        assert_eq!(
            warning_header("unknown field \"spec.foo\""),
            "299 - \"unknown field \\\"spec.foo\\\"\""
        );
    }
}
