//! `Status` errors: the failures every API request can end with, shaped exactly as Kubernetes'
//! `k8s.io/apimachinery/pkg/api/errors` builds them (reason, code, message and details).
//!
//! [`ApiError`] is the error type handlers return; [`ApiError::to_status_json`] renders the
//! `meta.k8s.io/v1` `Status` object (`kind: Status, apiVersion: v1, status: Failure, ...`).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::errors::FieldError;
use crate::gvk::GroupResource;

/// The message of a stale-`resourceVersion` conflict (`OptimisticLockErrorMsg`).
pub const OPTIMISTIC_LOCK_ERROR_MSG: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

/// Machine-readable reasons of a `Status` (`metav1.StatusReason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StatusReason {
    /// No reason (an empty string on the wire).
    Unknown,
    /// 401.
    Unauthorized,
    /// 403.
    Forbidden,
    /// 404.
    NotFound,
    /// 409 on create.
    AlreadyExists,
    /// 409 on a write that lost a race or a precondition.
    Conflict,
    /// 410.
    Gone,
    /// 422.
    Invalid,
    /// 500 `ServerTimeout`.
    ServerTimeout,
    /// 504.
    Timeout,
    /// 429.
    TooManyRequests,
    /// 400.
    BadRequest,
    /// 405.
    MethodNotAllowed,
    /// 406.
    NotAcceptable,
    /// 413.
    RequestEntityTooLarge,
    /// 415.
    UnsupportedMediaType,
    /// 500.
    InternalError,
    /// 410 `Expired`.
    Expired,
    /// 503.
    ServiceUnavailable,
}

impl StatusReason {
    /// The wire string of the reason.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "",
            Self::Unauthorized => "Unauthorized",
            Self::Forbidden => "Forbidden",
            Self::NotFound => "NotFound",
            Self::AlreadyExists => "AlreadyExists",
            Self::Conflict => "Conflict",
            Self::Gone => "Gone",
            Self::Invalid => "Invalid",
            Self::ServerTimeout => "ServerTimeout",
            Self::Timeout => "Timeout",
            Self::TooManyRequests => "TooManyRequests",
            Self::BadRequest => "BadRequest",
            Self::MethodNotAllowed => "MethodNotAllowed",
            Self::NotAcceptable => "NotAcceptable",
            Self::RequestEntityTooLarge => "RequestEntityTooLarge",
            Self::UnsupportedMediaType => "UnsupportedMediaType",
            Self::InternalError => "InternalError",
            Self::Expired => "Expired",
            Self::ServiceUnavailable => "ServiceUnavailable",
        }
    }

    /// Parses a wire reason; unknown strings map to [`StatusReason::Unknown`].
    pub fn parse(s: &str) -> Self {
        match s {
            "Unauthorized" => Self::Unauthorized,
            "Forbidden" => Self::Forbidden,
            "NotFound" => Self::NotFound,
            "AlreadyExists" => Self::AlreadyExists,
            "Conflict" => Self::Conflict,
            "Gone" => Self::Gone,
            "Invalid" => Self::Invalid,
            "ServerTimeout" => Self::ServerTimeout,
            "Timeout" => Self::Timeout,
            "TooManyRequests" => Self::TooManyRequests,
            "BadRequest" => Self::BadRequest,
            "MethodNotAllowed" => Self::MethodNotAllowed,
            "NotAcceptable" => Self::NotAcceptable,
            "RequestEntityTooLarge" => Self::RequestEntityTooLarge,
            "UnsupportedMediaType" => Self::UnsupportedMediaType,
            "InternalError" => Self::InternalError,
            "Expired" => Self::Expired,
            "ServiceUnavailable" => Self::ServiceUnavailable,
            _ => Self::Unknown,
        }
    }
}

/// One cause of a failure (`metav1.StatusCause`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusCause {
    /// The cause type, such as `FieldValueInvalid` or `FieldManagerConflict`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human description of the cause.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The field the cause is about, such as `spec.replicas`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field: String,
}

/// Extra facts of a failure (`metav1.StatusDetails`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    /// The name of the object concerned.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The group of the object concerned.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// The kind (or, for most errors, the plural resource) concerned.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The uid of the object concerned.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The individual causes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
    /// Seconds a client should wait before retrying; 0 means unset.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retry_after_seconds: i32,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// An API failure, convertible to a `Status` object and an HTTP status code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    code: u16,
    reason: StatusReason,
    message: String,
    // Boxed so that `Result<_, ApiError>` stays small on the happy path.
    details: Option<Box<StatusDetails>>,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ApiError {}

fn details_for(resource: &GroupResource, name: &str) -> StatusDetails {
    StatusDetails {
        name: name.to_string(),
        group: resource.group.clone(),
        kind: resource.resource.clone(),
        ..StatusDetails::default()
    }
}

/// Renders a `GroupKind` as Kubernetes does in `Invalid` messages: `Widget.example.dev`, or
/// `ConfigMap` for the core group.
pub fn qualified_kind(group: &str, kind: &str) -> String {
    if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    }
}

/// Returns the body of a field error, without the leading `field: ` (`field.Error.ErrorBody`).
pub fn field_error_body(err: &FieldError) -> String {
    let full = err.to_string();
    let prefix = format!("{}: ", err.field);
    match full.strip_prefix(&prefix) {
        Some(body) => body.to_string(),
        None => full,
    }
}

/// Joins messages as `utilerrors.NewAggregate(...).Error()` does: one message alone, several as
/// `[a, b]`, duplicates removed.
pub fn aggregate_messages(messages: &[String]) -> String {
    let mut unique: Vec<&String> = Vec::new();
    for m in messages {
        if !unique.contains(&m) {
            unique.push(m);
        }
    }
    match unique.as_slice() {
        [] => String::new(),
        [one] => (*one).clone(),
        many => format!(
            "[{}]",
            many.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

impl ApiError {
    /// Builds an error from its parts.
    pub fn new(
        code: u16,
        reason: StatusReason,
        message: impl Into<String>,
        details: Option<StatusDetails>,
    ) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: details.map(Box::new),
        }
    }

    /// The HTTP status code.
    pub fn code(&self) -> u16 {
        self.code
    }

    /// The reason.
    pub fn reason(&self) -> StatusReason {
        self.reason
    }

    /// The human message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The details, if any.
    pub fn details(&self) -> Option<&StatusDetails> {
        self.details.as_deref()
    }

    /// Mutable access to the details, created empty if absent.
    pub fn details_mut(&mut self) -> &mut StatusDetails {
        self.details.get_or_insert_with(Box::default)
    }

    /// The `retryAfterSeconds` detail, if set (for a `Retry-After` header).
    pub fn retry_after_seconds(&self) -> Option<i32> {
        self.details
            .as_ref()
            .map(|d| d.retry_after_seconds)
            .filter(|&s| s > 0)
    }

    /// Renders the `Status` object as JSON.
    pub fn to_status_json(&self) -> Value {
        let mut status = serde_json::Map::new();
        status.insert("kind".into(), Value::from("Status"));
        status.insert("apiVersion".into(), Value::from("v1"));
        status.insert("metadata".into(), Value::Object(serde_json::Map::new()));
        status.insert("status".into(), Value::from("Failure"));
        if !self.message.is_empty() {
            status.insert("message".into(), Value::from(self.message.clone()));
        }
        if self.reason != StatusReason::Unknown {
            status.insert("reason".into(), Value::from(self.reason.as_str()));
        }
        if let Some(d) = &self.details {
            status.insert(
                "details".into(),
                serde_json::to_value(d).unwrap_or(Value::Null),
            );
        }
        status.insert("code".into(), Value::from(self.code));
        Value::Object(status)
    }

    /// Renders the `Status` object as JSON bytes.
    pub fn to_status_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(&self.to_status_json()).unwrap_or_default()
    }

    /// Parses a `Status` object back into an error (for clients and tests).
    pub fn from_status_json(value: &Value) -> Option<Self> {
        let code = u16::try_from(value.get("code")?.as_u64()?).ok()?;
        let reason = StatusReason::parse(value.get("reason").and_then(Value::as_str).unwrap_or(""));
        let message = value
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let details = value
            .get("details")
            .and_then(|d| serde_json::from_value(d.clone()).ok());
        Some(Self {
            code,
            reason,
            message,
            details,
        })
    }

    /// 404 `widgets.example.dev "foo" not found`.
    pub fn not_found(resource: &GroupResource, name: &str) -> Self {
        Self::new(
            404,
            StatusReason::NotFound,
            format!("{resource} {name:?} not found"),
            Some(details_for(resource, name)),
        )
    }

    /// 404 for a path nothing serves: `the server could not find the requested resource`.
    pub fn not_found_path() -> Self {
        Self::new(
            404,
            StatusReason::NotFound,
            "the server could not find the requested resource",
            Some(StatusDetails::default()),
        )
    }

    /// 409 `widgets.example.dev "foo" already exists`.
    pub fn already_exists(resource: &GroupResource, name: &str) -> Self {
        Self::new(
            409,
            StatusReason::AlreadyExists,
            format!("{resource} {name:?} already exists"),
            Some(details_for(resource, name)),
        )
    }

    /// 409 `AlreadyExists` after `generateName` retries ran out, with `retryAfterSeconds`.
    pub fn generate_name_conflict(
        resource: &GroupResource,
        name: &str,
        retry_after_seconds: i32,
    ) -> Self {
        let mut details = details_for(resource, name);
        details.retry_after_seconds = retry_after_seconds;
        Self::new(
            409,
            StatusReason::AlreadyExists,
            format!(
                "{resource} {name:?} already exists, the server was not able to generate a unique name for the object"
            ),
            Some(details),
        )
    }

    /// 409 `Operation cannot be fulfilled on widgets.example.dev "foo": <message>`.
    pub fn conflict(resource: &GroupResource, name: &str, message: &str) -> Self {
        Self::new(
            409,
            StatusReason::Conflict,
            format!("Operation cannot be fulfilled on {resource} {name:?}: {message}"),
            Some(details_for(resource, name)),
        )
    }

    /// 409 for a stale `resourceVersion` (the optimistic-lock message).
    pub fn conflict_stale(resource: &GroupResource, name: &str) -> Self {
        Self::conflict(resource, name, OPTIMISTIC_LOCK_ERROR_MSG)
    }

    /// 409 for server-side apply conflicts (`NewApplyConflict`): causes carry
    /// `FieldManagerConflict` entries.
    pub fn apply_conflict(causes: Vec<StatusCause>, message: impl Into<String>) -> Self {
        Self::new(
            409,
            StatusReason::Conflict,
            message,
            Some(StatusDetails {
                causes,
                ..StatusDetails::default()
            }),
        )
    }

    /// 422 `Widget.example.dev "foo" is invalid: <errors>` with one cause per field error.
    pub fn invalid(group: &str, kind: &str, name: &str, errors: &[FieldError]) -> Self {
        let causes = errors
            .iter()
            .map(|e| StatusCause {
                reason: e.type_.reason().to_string(),
                message: field_error_body(e),
                field: e.field.clone(),
            })
            .collect();
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        Self::new(
            422,
            StatusReason::Invalid,
            format!(
                "{} {name:?} is invalid: {}",
                qualified_kind(group, kind),
                aggregate_messages(&messages)
            ),
            Some(StatusDetails {
                name: name.to_string(),
                group: group.to_string(),
                kind: kind.to_string(),
                causes,
                ..StatusDetails::default()
            }),
        )
    }

    /// 400 with the given message.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, StatusReason::BadRequest, message, None)
    }

    /// 401; an empty message becomes `not authorized`.
    pub fn unauthorized(message: &str) -> Self {
        let message = if message.is_empty() {
            "not authorized"
        } else {
            message
        };
        Self::new(401, StatusReason::Unauthorized, message, None)
    }

    /// 403 as `NewForbidden`: `configmaps is forbidden: <err>`, `configmaps "x" is forbidden: <err>`,
    /// or `forbidden: <err>` when no resource is known.
    pub fn forbidden(resource: &GroupResource, name: &str, err: &str) -> Self {
        let message = if resource.group.is_empty() && resource.resource.is_empty() {
            format!("forbidden: {err}")
        } else if name.is_empty() {
            format!("{resource} is forbidden: {err}")
        } else {
            format!("{resource} {name:?} is forbidden: {err}")
        };
        Self::new(
            403,
            StatusReason::Forbidden,
            message,
            Some(details_for(resource, name)),
        )
    }

    /// 405 for a method the path has no route for (kube-apiserver's answer from its router:
    /// `the server does not allow this method on the requested resource`).
    pub fn method_not_allowed() -> Self {
        Self::new(
            405,
            StatusReason::MethodNotAllowed,
            "the server does not allow this method on the requested resource",
            Some(Default::default()),
        )
    }

    /// 405 `<action> is not supported on resources of kind "widgets.example.dev"`.
    pub fn method_not_supported(resource: &GroupResource, action: &str) -> Self {
        Self::new(
            405,
            StatusReason::MethodNotAllowed,
            format!(
                "{action} is not supported on resources of kind {:?}",
                resource.to_string()
            ),
            Some(details_for(resource, "")),
        )
    }

    /// 406 `only the following media types are accepted: a, b`.
    pub fn not_acceptable(accepted: &[&str]) -> Self {
        Self::new(
            406,
            StatusReason::NotAcceptable,
            format!(
                "only the following media types are accepted: {}",
                accepted.join(", ")
            ),
            None,
        )
    }

    /// 415 `the body of the request was in an unknown format - accepted media types include: a, b`.
    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        Self::new(
            415,
            StatusReason::UnsupportedMediaType,
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
            None,
        )
    }

    /// 413 `Request entity too large: <message>`.
    pub fn request_entity_too_large(message: &str) -> Self {
        Self::new(
            413,
            StatusReason::RequestEntityTooLarge,
            format!("Request entity too large: {message}"),
            None,
        )
    }

    /// 410 `Gone` with the given message.
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, StatusReason::Gone, message, None)
    }

    /// 410 `Expired` with the given message (clients match the reason alone).
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, StatusReason::Expired, message, None)
    }

    /// 410 `Expired` for a watch or list from a compacted revision:
    /// `too old resource version: <requested> (<oldest>)`.
    pub fn too_old_resource_version(requested: i64, oldest: i64) -> Self {
        Self::expired(format!("too old resource version: {requested} ({oldest})"))
    }

    /// 429 `Too many requests: <message>` with `retryAfterSeconds`.
    pub fn too_many_requests(message: &str, retry_after_seconds: i32) -> Self {
        Self::new(
            429,
            StatusReason::TooManyRequests,
            format!("Too many requests: {message}"),
            Some(StatusDetails {
                retry_after_seconds,
                ..StatusDetails::default()
            }),
        )
    }

    /// 500 `Internal error occurred: <err>` with the error as a cause.
    pub fn internal(err: impl fmt::Display) -> Self {
        let text = err.to_string();
        Self::new(
            500,
            StatusReason::InternalError,
            format!("Internal error occurred: {text}"),
            Some(StatusDetails {
                causes: vec![StatusCause {
                    message: text,
                    ..StatusCause::default()
                }],
                ..StatusDetails::default()
            }),
        )
    }

    /// 503 with the given message.
    pub fn service_unavailable(message: impl Into<String>) -> Self {
        Self::new(503, StatusReason::ServiceUnavailable, message, None)
    }

    /// 503 with the given message and `retryAfterSeconds` (a `Retry-After` header).
    pub fn service_unavailable_retry(message: impl Into<String>, retry_after_seconds: i32) -> Self {
        Self::new(
            503,
            StatusReason::ServiceUnavailable,
            message,
            Some(StatusDetails {
                retry_after_seconds,
                ..StatusDetails::default()
            }),
        )
    }

    /// 504 `Timeout: <message>` with `retryAfterSeconds`.
    pub fn timeout(message: &str, retry_after_seconds: i32) -> Self {
        Self::new(
            504,
            StatusReason::Timeout,
            format!("Timeout: {message}"),
            Some(StatusDetails {
                retry_after_seconds,
                ..StatusDetails::default()
            }),
        )
    }

    /// 504 from the request-timeout filter.
    pub fn request_timeout() -> Self {
        Self::timeout(
            "request did not complete within requested timeout - context deadline exceeded",
            0,
        )
    }

    /// 500 `ServerTimeout`: `The <operation> operation against <resource> could not be completed
    /// at this time, please try again.`
    pub fn server_timeout(
        resource: &GroupResource,
        operation: &str,
        retry_after_seconds: i32,
    ) -> Self {
        Self::new(
            500,
            StatusReason::ServerTimeout,
            format!(
                "The {operation} operation against {resource} could not be completed at this time, please try again."
            ),
            Some(StatusDetails {
                name: operation.to_string(),
                group: resource.group.clone(),
                kind: resource.resource.clone(),
                retry_after_seconds,
                ..StatusDetails::default()
            }),
        )
    }

    /// 504 `Timeout: Too large resource version: X, current: Y` with the
    /// `ResourceVersionTooLarge` cause.
    pub fn resource_version_too_large(
        minimum: i64,
        current: i64,
        retry_after_seconds: i32,
    ) -> Self {
        let mut err = Self::timeout(
            &format!("Too large resource version: {minimum}, current: {current}"),
            retry_after_seconds,
        );
        err.details_mut().causes.push(StatusCause {
            reason: "ResourceVersionTooLarge".to_string(),
            message: "Too large resource version".to_string(),
            field: String::new(),
        });
        err
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn widgets() -> GroupResource {
        GroupResource::new("example.dev", "widgets")
    }

    #[test]
    fn not_found_shape() {
        let e = ApiError::not_found(&widgets(), "foo");
        assert_eq!(
            e.to_status_json(),
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                "message":"widgets.example.dev \"foo\" not found","reason":"NotFound",
                "details":{"name":"foo","group":"example.dev","kind":"widgets"},"code":404})
        );
    }

    #[test]
    fn conflict_message() {
        let e = ApiError::conflict_stale(&widgets(), "foo");
        assert_eq!(
            e.message(),
            "Operation cannot be fulfilled on widgets.example.dev \"foo\": the object has been modified; please apply your changes to the latest version and try again"
        );
        assert_eq!(e.code(), 409);
    }

    #[test]
    fn invalid_message_and_causes() {
        let errs = vec![
            FieldError::invalid(
                "spec.replicas",
                &json!(-1),
                "must be greater than or equal to 0",
            ),
            FieldError::required("spec.color", ""),
        ];
        let e = ApiError::invalid("example.dev", "Widget", "foo", &errs);
        assert_eq!(
            e.message(),
            "Widget.example.dev \"foo\" is invalid: [spec.replicas: Invalid value: -1: must be greater than or equal to 0, spec.color: Required value]"
        );
        let causes = &e.details().map(|d| d.causes.clone()).unwrap_or_default();
        assert_eq!(causes[0].reason, "FieldValueInvalid");
        assert_eq!(
            causes[0].message,
            "Invalid value: -1: must be greater than or equal to 0"
        );
        assert_eq!(causes[0].field, "spec.replicas");
        let one = ApiError::invalid("", "ConfigMap", "x", &errs[..1]);
        assert_eq!(
            one.message(),
            "ConfigMap \"x\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
    }

    #[test]
    fn forbidden_forms() {
        let e = ApiError::forbidden(
            &GroupResource::new("", "configmaps"),
            "",
            "User \"x\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\"",
        );
        assert_eq!(
            e.message(),
            "configmaps is forbidden: User \"x\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
        );
        let p = ApiError::forbidden(
            &GroupResource::new("", ""),
            "",
            "User \"x\" cannot get path \"/\"",
        );
        assert_eq!(p.message(), "forbidden: User \"x\" cannot get path \"/\"");
    }

    #[test]
    fn too_large_rv_and_roundtrip() {
        let e = ApiError::resource_version_too_large(10, 5, 1);
        assert_eq!(
            e.message(),
            "Timeout: Too large resource version: 10, current: 5"
        );
        let back = ApiError::from_status_json(&e.to_status_json());
        assert_eq!(back, Some(e));
    }
}
