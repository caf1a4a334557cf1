//! Calling one webhook: the `AdmissionReview` v1 request, the HTTPS call (verified against
//! the configuration's `caBundle`, HTTP/1.1 only, redirects never followed, connections reused
//! per trust bundle), and the checks of its answer.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use apimachinery::status::ApiError;
use base64::Engine as _;
use serde_json::{Value, json};
use server::webhook::WebhookError;

/// The largest webhook answer read (see [`server::webhook::MAX_RESPONSE_BYTES`]).
pub use server::webhook::MAX_RESPONSE_BYTES;

/// The `apiVersion` of the reviews sent and expected back.
pub const REVIEW_API_VERSION: &str = "admission.k8s.io/v1";

/// Why a call did not produce a usable answer (`failurePolicy` decides what follows); the
/// text is what kube-apiserver puts after `failed calling webhook "<name>": `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The request could not be sent or answered (refused, unreachable, TLS, timeout, a
    /// non-200 answer).
    #[error("failed to call webhook: {0}")]
    Call(String),
    /// The answer was not a valid `AdmissionReview` for this request.
    #[error("received invalid webhook response: {0}")]
    InvalidResponse(String),
}

impl From<WebhookError> for CallError {
    fn from(e: WebhookError) -> Self {
        match e {
            WebhookError::TooLong(_) => CallError::InvalidResponse(e.to_string()),
            other => CallError::Call(other.to_string()),
        }
    }
}

/// What a webhook answered, checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answer {
    /// Whether it allowed the request.
    pub allowed: bool,
    /// The `status` it gave with a denial.
    pub status: Option<Value>,
    /// The JSON patch operations it returned (mutating webhooks only).
    pub patch: Option<Value>,
    /// Warnings for the client.
    pub warnings: Vec<String>,
    /// Annotations for the audit event.
    pub audit_annotations: HashMap<String, String>,
}

/// HTTPS clients by trust bundle (the generic webhook client's, [`server::webhook::Clients`]).
pub use server::webhook::Clients;

/// Sends `body` (an `AdmissionReview` with its `request`, as JSON) to `url` and checks the
/// answer.
pub async fn call(
    client: &reqwest::Client,
    url: &reqwest::Url,
    timeout: Duration,
    body: Vec<u8>,
    uid: &str,
    mutating: bool,
) -> Result<Answer, CallError> {
    let bytes = server::webhook::post_json(client, url, timeout, body).await?;
    parse_answer(&bytes, uid, mutating)
}

/// Checks an answer as kube-apiserver does: an `admission.k8s.io/v1` `AdmissionReview` with
/// a `response` for this request's uid; a patch only from a mutating webhook, and only a
/// `JSONPatch`.
pub fn parse_answer(bytes: &[u8], uid: &str, mutating: bool) -> Result<Answer, CallError> {
    let invalid = |m: String| CallError::InvalidResponse(m);
    let review: Value =
        serde_json::from_slice(bytes).map_err(|e| invalid(format!("the body is not JSON: {e}")))?;
    let api_version = review
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = review.get("kind").and_then(Value::as_str).unwrap_or("");
    if api_version != REVIEW_API_VERSION || kind != "AdmissionReview" {
        return Err(invalid(format!(
            "expected webhook response of {REVIEW_API_VERSION}, Kind=AdmissionReview, got {api_version}, Kind={kind}"
        )));
    }
    let Some(response) = review.get("response").filter(|r| r.is_object()) else {
        return Err(invalid("webhook response was absent".into()));
    };
    let got_uid = response.get("uid").and_then(Value::as_str).unwrap_or("");
    if got_uid != uid {
        return Err(invalid(format!(
            "expected response.uid={uid:?}, got {got_uid:?}"
        )));
    }
    let allowed = response
        .get("allowed")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let patch_type = response.get("patchType").and_then(Value::as_str);
    let patch = match response.get("patch").and_then(Value::as_str) {
        None | Some("") => {
            if let Some(t) = patch_type {
                return Err(invalid(format!(
                    "webhook returned patchType {t} but not patch"
                )));
            }
            None
        }
        Some(encoded) => {
            if !mutating {
                return Err(invalid("validating webhook may not return a patch".into()));
            }
            match patch_type {
                Some("JSONPatch") => {}
                Some(t) => {
                    return Err(invalid(format!(
                        "webhook returned invalid patchType: {t:?}"
                    )));
                }
                None => return Err(invalid("webhook returned patch but not patchType".into())),
            }
            let raw = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_err(|e| invalid(format!("the patch is not base64: {e}")))?;
            let ops: Value = serde_json::from_slice(&raw)
                .map_err(|e| invalid(format!("the patch is not JSON: {e}")))?;
            if !ops.is_array() {
                return Err(invalid(
                    "the patch is not a JSON patch (an array of operations)".into(),
                ));
            }
            Some(ops)
        }
    };
    let warnings = response
        .get("warnings")
        .and_then(Value::as_array)
        .map(|w| {
            w.iter()
                .filter_map(Value::as_str)
                .map(sanitize_warning)
                .collect()
        })
        .unwrap_or_default();
    let audit_annotations = response
        .get("auditAnnotations")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    Ok(Answer {
        allowed,
        status: response.get("status").cloned(),
        patch,
        warnings,
        audit_annotations,
    })
}

/// A warning as a header can carry it: one line, printable, at most 256 characters (as
/// kube-apiserver truncates webhook warnings).
fn sanitize_warning(w: &str) -> String {
    let cleaned: String = w
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(256)
        .collect();
    cleaned.trim().to_string()
}

/// The error a denial becomes: the webhook's `status`, at least 400, its message prefixed
/// `admission webhook "<name>" denied the request` (Kubernetes' `ToStatusErr`).
pub fn denial(webhook: &str, status: Option<&Value>) -> ApiError {
    let denied_by = format!("admission webhook {webhook:?} denied the request");
    let mut status = status.cloned().unwrap_or_else(|| json!({}));
    if !status.is_object() {
        status = json!({});
    }
    let code = status
        .get("code")
        .and_then(Value::as_u64)
        .filter(|c| (400..600).contains(c))
        .unwrap_or(400);
    let message = status.get("message").and_then(Value::as_str).unwrap_or("");
    let reason = status.get("reason").and_then(Value::as_str).unwrap_or("");
    let message = if !message.is_empty() {
        format!("{denied_by}: {message}")
    } else if !reason.is_empty() {
        format!("{denied_by}: {reason}")
    } else {
        format!("{denied_by} without explanation")
    };
    let mut out = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "code": code,
    });
    if !reason.is_empty() {
        out["reason"] = Value::from(reason);
    }
    if let Some(d) = status.get("details").filter(|d| d.is_object()) {
        out["details"] = d.clone();
    }
    ApiError::from_status_json(&out).unwrap_or_else(|| ApiError::bad_request(message_of(&out)))
}

fn message_of(status: &Value) -> String {
    status
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// A failed call under `failurePolicy: Fail`: 500 InternalError,
/// `failed calling webhook "<name>": <why>`.
pub fn call_failure(webhook: &str, error: &CallError) -> ApiError {
    ApiError::internal(format!("failed calling webhook {webhook:?}: {error}"))
}

/// A shared handle to the clients.
pub type SharedClients = Arc<Clients>;

#[cfg(test)]
mod tests {
    use super::*;

    fn review(response: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response
        }))
        .unwrap()
    }

    #[test]
    fn answers_are_checked_as_kube_apiserver_checks_them() {
        let ok = parse_answer(&review(json!({"uid": "u", "allowed": true})), "u", false).unwrap();
        assert!(ok.allowed);
        let wrong_uid = parse_answer(&review(json!({"uid": "x", "allowed": true})), "u", false);
        assert_eq!(
            wrong_uid.unwrap_err().to_string(),
            "received invalid webhook response: expected response.uid=\"u\", got \"x\""
        );
        let garbage = parse_answer(b"<html>", "u", false).unwrap_err();
        assert!(
            garbage
                .to_string()
                .starts_with("received invalid webhook response: the body is not JSON")
        );
        let v1beta1 = parse_answer(
            br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","response":{"uid":"u","allowed":true}}"#,
            "u",
            false,
        )
        .unwrap_err();
        assert!(v1beta1.to_string().contains("expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got admission.k8s.io/v1beta1"));
        let patch = base64::engine::general_purpose::STANDARD
            .encode(r#"[{"op":"add","path":"/x","value":1}]"#);
        let validating_patch = parse_answer(
            &review(json!({"uid": "u", "allowed": true, "patch": patch, "patchType": "JSONPatch"})),
            "u",
            false,
        );
        assert_eq!(
            validating_patch.unwrap_err().to_string(),
            "received invalid webhook response: validating webhook may not return a patch"
        );
        let mutating = parse_answer(
            &review(json!({"uid": "u", "allowed": true, "patch": patch, "patchType": "JSONPatch", "warnings": ["a\nb"]})),
            "u",
            true,
        )
        .unwrap();
        assert_eq!(
            mutating.patch,
            Some(json!([{"op":"add","path":"/x","value":1}]))
        );
        assert_eq!(mutating.warnings, vec!["a b".to_string()]);
    }

    #[test]
    fn denials_read_as_kubernetes_prints_them() {
        let e = denial(
            "deny.example.dev",
            Some(&json!({"message": "no widgets today", "code": 403})),
        );
        assert_eq!(e.code(), 403);
        assert_eq!(
            e.message(),
            "admission webhook \"deny.example.dev\" denied the request: no widgets today"
        );
        let bare = denial("deny.example.dev", None);
        assert_eq!(bare.code(), 400);
        assert_eq!(
            bare.message(),
            "admission webhook \"deny.example.dev\" denied the request without explanation"
        );
        let low = denial("d", Some(&json!({"code": 200, "reason": "Nope"})));
        assert_eq!(low.code(), 400);
        assert_eq!(
            low.message(),
            "admission webhook \"d\" denied the request: Nope"
        );
    }
}
