//! The `audit.k8s.io/v1` `Event` and its JSON line. Events are built on the request path with
//! owned facts only; bodies travel as the bytes the client sent or received and are turned into
//! JSON on the log's writer thread, off the request path.

use std::borrow::Cow;
use std::collections::BTreeMap;

use apimachinery::status::ApiError;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use super::policy::{Level, Stage};
use crate::authn::UserInfo;

/// The encoding of a recorded body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyFormat {
    /// JSON (including JSON patches and merge patches).
    Json,
    /// YAML (apply patches and YAML writes).
    Yaml,
}

impl BodyFormat {
    /// The recordable format of a `Content-Type`; protobuf and other binary bodies are not
    /// recorded.
    pub fn of_content_type(content_type: Option<&http::HeaderValue>) -> Option<Self> {
        let ct = content_type.and_then(|v| v.to_str().ok()).unwrap_or("");
        let essence = ct.split(';').next().unwrap_or("").trim();
        if essence == "application/json" || essence.ends_with("+json") {
            Some(BodyFormat::Json)
        } else if essence == "application/yaml" || essence.ends_with("+yaml") {
            Some(BodyFormat::Yaml)
        } else {
            None
        }
    }
}

/// A request or response body kept for the event.
#[derive(Clone, Debug)]
pub struct RecordedBody {
    /// The bytes.
    pub bytes: Bytes,
    /// Their encoding.
    pub format: BodyFormat,
    /// Whether the bytes are gzip-compressed (`Content-Encoding: gzip`).
    pub gzipped: bool,
}

/// The largest decompressed body recorded.
const MAX_DECOMPRESSED: u64 = 64 * 1024 * 1024;

impl RecordedBody {
    /// An uncompressed body.
    pub fn plain(bytes: Bytes, format: BodyFormat) -> Self {
        Self {
            bytes,
            format,
            gzipped: false,
        }
    }

    /// The body's bytes, decompressed when they are gzip-compressed (`None` when that fails or
    /// the result is larger than recorded bodies may be).
    pub fn decoded(&self) -> Option<std::borrow::Cow<'_, [u8]>> {
        if !self.gzipped {
            return Some(std::borrow::Cow::Borrowed(&self.bytes));
        }
        use std::io::Read;
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&self.bytes[..])
            .take(MAX_DECOMPRESSED + 1)
            .read_to_end(&mut out)
            .ok()?;
        (out.len() as u64 <= MAX_DECOMPRESSED).then_some(std::borrow::Cow::Owned(out))
    }
}

/// What the event says about the object a request is about (`objectRef`).
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    /// The resource.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource: String,
    /// The namespace.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The object's uid, from the request object.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The API group.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    /// The API version.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The object's resourceVersion, from the request object.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// The subresource.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subresource: String,
}

/// One audit event (Kubernetes' `audit.Event`), written as one JSON line.
#[derive(Clone, Debug)]
pub struct Event {
    /// The level the policy chose.
    pub level: Level,
    /// The request's audit id (`Audit-Id`).
    pub audit_id: String,
    /// The stage this event records.
    pub stage: Stage,
    /// The request URI (path and query) as sent.
    pub request_uri: String,
    /// The verb (`get`, `list`, `create`, ... or the lowercase method of a non-resource path).
    pub verb: String,
    /// The authenticated user (absent when authentication failed).
    pub user: Option<UserInfo>,
    /// The user the request impersonated.
    pub impersonated_user: Option<UserInfo>,
    /// The client's addresses: `X-Forwarded-For`, `X-Real-Ip`, then the peer.
    pub source_ips: Vec<String>,
    /// The `User-Agent`.
    pub user_agent: String,
    /// The object of a resource request.
    pub object_ref: Option<ObjectRef>,
    /// The response code, and for a failure the `Status`.
    pub response_status: Option<(u16, Option<ApiError>)>,
    /// The request body (Request and RequestResponse levels).
    pub request_object: Option<RecordedBody>,
    /// The response body (RequestResponse level).
    pub response_object: Option<RecordedBody>,
    /// When the request arrived.
    pub request_received: DateTime<Utc>,
    /// When this stage was reached.
    pub stage_timestamp: DateTime<Utc>,
    /// Annotations, such as `authorization.k8s.io/decision`.
    pub annotations: BTreeMap<Cow<'static, str>, String>,
    /// Whether `metadata.managedFields` is removed from recorded bodies.
    pub omit_managed_fields: bool,
}

#[derive(Serialize)]
struct UserView<'a> {
    #[serde(skip_serializing_if = "str::is_empty")]
    username: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    uid: &'a str,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    groups: &'a [String],
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    extra: &'a BTreeMap<String, Vec<String>>,
}

impl<'a> UserView<'a> {
    fn of(u: &'a UserInfo) -> Self {
        Self {
            username: &u.name,
            uid: &u.uid,
            groups: &u.groups,
            extra: &u.extra,
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EventView<'a> {
    kind: &'static str,
    api_version: &'static str,
    level: &'static str,
    #[serde(rename = "auditID")]
    audit_id: &'a str,
    stage: &'static str,
    #[serde(rename = "requestURI")]
    request_uri: &'a str,
    verb: &'a str,
    user: UserView<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    impersonated_user: Option<UserView<'a>>,
    #[serde(rename = "sourceIPs", skip_serializing_if = "<[String]>::is_empty")]
    source_ips: &'a [String],
    #[serde(skip_serializing_if = "str::is_empty")]
    user_agent: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    object_ref: Option<&'a ObjectRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_status: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_object: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_object: Option<Value>,
    request_received_timestamp: String,
    stage_timestamp: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: &'a BTreeMap<Cow<'static, str>, String>,
}

/// Kubernetes' `MicroTime` form: RFC 3339 in UTC with six fractional digits.
pub fn micro_time(t: &DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// A recorded body as JSON (`None` when it is empty or cannot be read), without
/// `metadata.managedFields` when asked.
fn body_json(body: &RecordedBody, omit_managed_fields: bool) -> Option<Value> {
    if body.bytes.is_empty() {
        return None;
    }
    let bytes = body.decoded()?;
    let mut value = match body.format {
        BodyFormat::Json => serde_json::from_slice::<Value>(&bytes).ok()?,
        BodyFormat::Yaml => crate::negotiate::yaml_to_json(&bytes).ok()?,
    };
    if omit_managed_fields {
        strip_managed_fields(&mut value);
    }
    Some(value)
}

/// Removes `metadata.managedFields` from an object, or from every item of a list.
fn strip_managed_fields(value: &mut Value) {
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.shift_remove("managedFields");
    }
    if let Some(items) = value.get_mut("items").and_then(Value::as_array_mut) {
        for item in items {
            if let Some(meta) = item.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.shift_remove("managedFields");
            }
        }
    }
}

/// The `responseStatus` of an event: the code, and for a failure the `Status` fields.
fn response_status(code: u16, error: Option<&ApiError>) -> Value {
    let mut status = match error {
        Some(err) => match err.to_status_json() {
            Value::Object(mut map) => {
                map.shift_remove("kind");
                map.shift_remove("apiVersion");
                map
            }
            _ => serde_json::Map::new(),
        },
        None => {
            let mut map = serde_json::Map::new();
            map.insert("metadata".into(), Value::Object(serde_json::Map::new()));
            map
        }
    };
    status.insert("code".into(), Value::from(code));
    Value::Object(status)
}

impl Event {
    /// Appends the event's JSON line (with its newline) to `out`.
    pub fn write_line(&self, out: &mut Vec<u8>) {
        let empty = UserInfo::default();
        let view = EventView {
            kind: "Event",
            api_version: "audit.k8s.io/v1",
            level: self.level.as_str(),
            audit_id: &self.audit_id,
            stage: self.stage.as_str(),
            request_uri: &self.request_uri,
            verb: &self.verb,
            user: UserView::of(self.user.as_ref().unwrap_or(&empty)),
            impersonated_user: self.impersonated_user.as_ref().map(UserView::of),
            source_ips: &self.source_ips,
            user_agent: &self.user_agent,
            object_ref: self.object_ref.as_ref(),
            response_status: self
                .response_status
                .as_ref()
                .map(|(code, err)| response_status(*code, err.as_ref())),
            request_object: self
                .request_object
                .as_ref()
                .and_then(|b| body_json(b, self.omit_managed_fields)),
            response_object: self
                .response_object
                .as_ref()
                .and_then(|b| body_json(b, self.omit_managed_fields)),
            request_received_timestamp: micro_time(&self.request_received),
            stage_timestamp: micro_time(&self.stage_timestamp),
            annotations: &self.annotations,
        };
        if serde_json::to_writer(&mut *out, &view).is_ok() {
            out.push(b'\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_has_kubernetes_fields() {
        let t = DateTime::parse_from_rfc3339("2026-01-02T03:04:05.123456789Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default();
        let mut annotations = BTreeMap::new();
        annotations.insert("authorization.k8s.io/decision".into(), "allow".to_string());
        let event = Event {
            level: Level::Request,
            audit_id: "id-1".into(),
            stage: Stage::ResponseComplete,
            request_uri: "/api/v1/namespaces/a/configmaps?fieldManager=x".into(),
            verb: "create".into(),
            user: Some(UserInfo {
                name: "admin".into(),
                groups: vec!["system:masters".into()],
                ..UserInfo::default()
            }),
            impersonated_user: None,
            source_ips: vec!["127.0.0.1".into()],
            user_agent: "kubectl".into(),
            object_ref: Some(ObjectRef {
                resource: "configmaps".into(),
                namespace: "a".into(),
                api_version: "v1".into(),
                ..ObjectRef::default()
            }),
            response_status: Some((201, None)),
            request_object: Some(RecordedBody::plain(
                Bytes::from_static(
                    b"{\n \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"c\", \"managedFields\": []}}",
                ),
                BodyFormat::Json,
            )),
            response_object: None,
            request_received: t,
            stage_timestamp: t,
            annotations,
            omit_managed_fields: true,
        };
        let mut out = Vec::new();
        event.write_line(&mut out);
        let text = String::from_utf8(out).unwrap_or_default();
        assert_eq!(text.matches('\n').count(), 1, "{text}");
        assert_eq!(
            text.trim_end(),
            r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Request","auditID":"id-1","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/a/configmaps?fieldManager=x","verb":"create","user":{"username":"admin","groups":["system:masters"]},"sourceIPs":["127.0.0.1"],"userAgent":"kubectl","objectRef":{"resource":"configmaps","namespace":"a","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201},"requestObject":{"kind":"ConfigMap","metadata":{"name":"c"}},"requestReceivedTimestamp":"2026-01-02T03:04:05.123456Z","stageTimestamp":"2026-01-02T03:04:05.123456Z","annotations":{"authorization.k8s.io/decision":"allow"}}"#
        );
    }

    #[test]
    fn gzipped_bodies_are_decompressed() {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let _ = gz.write_all(br#"{"kind":"ConfigMapList","items":[]}"#);
        let bytes = gz.finish().unwrap_or_default();
        let body = RecordedBody {
            bytes: Bytes::from(bytes),
            format: BodyFormat::Json,
            gzipped: true,
        };
        assert_eq!(
            body_json(&body, false),
            Some(serde_json::json!({"kind": "ConfigMapList", "items": []}))
        );
        let broken = RecordedBody {
            gzipped: true,
            ..RecordedBody::plain(Bytes::from_static(b"{}"), BodyFormat::Json)
        };
        assert_eq!(body_json(&broken, false), None);
    }

    #[test]
    fn failures_carry_the_status() {
        let err = ApiError::bad_request("no");
        let v = response_status(400, Some(&err));
        assert_eq!(
            v.to_string(),
            r#"{"metadata":{},"status":"Failure","message":"no","reason":"BadRequest","code":400}"#
        );
    }
}
