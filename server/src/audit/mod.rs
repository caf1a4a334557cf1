//! Auditing (Kubernetes' `audit` package): with `--audit-policy-file` and `--audit-log-path`
//! every request the policy selects is recorded as `audit.k8s.io/v1` events, one per stage, all
//! with the request's `auditID`.
//!
//! The [`Auditor`] holds the checked [`policy::Policy`] and the [`AuditLog`]. The filter
//! chain evaluates the policy once per request after authentication (nothing is allocated for a
//! request whose level is `None`) and keeps a [`RequestAudit`] for the request's life.

pub mod event;
pub mod log;
pub mod policy;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use apimachinery::meta::ObjectMeta;
use apimachinery::status::ApiError;
use chrono::Utc;
use parking_lot::Mutex;

use self::event::{Event, ObjectRef, RecordedBody};
use self::log::{AuditLog, LogCounters, LogOptions};
use self::policy::{Level, Policy, RequestAuditConfig, Stage};
use crate::authn::UserInfo;
use crate::request_info::RequestInfo;

/// The header carrying a request's audit id, read from requests and set on every response.
pub const AUDIT_ID_HEADER: &str = "audit-id";
/// The annotation recording the authorizer's decision (`allow` or `forbid`).
pub const DECISION_ANNOTATION: &str = "authorization.k8s.io/decision";
/// The annotation recording the authorizer's reason.
pub const REASON_ANNOTATION: &str = "authorization.k8s.io/reason";

/// The policy and the backend.
#[derive(Debug)]
pub struct Auditor {
    policy: Policy,
    log: AuditLog,
}

/// The connection's peer address, stored as a request extension by the server (for
/// `sourceIPs`).
#[derive(Clone, Copy, Debug)]
pub struct PeerAddr(pub SocketAddr);

/// The audit id of a request: its `Audit-ID` header when present, else a new UUID.
pub fn audit_id(headers: &http::HeaderMap) -> http::HeaderValue {
    match headers.get(AUDIT_ID_HEADER) {
        Some(v) if !v.is_empty() => v.clone(),
        _ => {
            // A version 4 UUID from the thread's generator (no system call per request).
            let id = uuid::Builder::from_random_bytes(rand::random()).into_uuid();
            let mut buf = uuid::Uuid::encode_buffer();
            http::HeaderValue::from_str(id.hyphenated().encode_lower(&mut buf))
                .unwrap_or_else(|_| http::HeaderValue::from_static(""))
        }
    }
}

/// The client addresses as Kubernetes' `utilnet.SourceIPs` lists them: the
/// `X-Forwarded-For` entries, then `X-Real-Ip`, then the peer, without duplicates.
fn source_ips(parts: &http::request::Parts) -> Vec<String> {
    let mut ips: Vec<String> = Vec::new();
    let mut add = |ip: &str| {
        let ip = ip.trim();
        if ip.parse::<std::net::IpAddr>().is_ok() && !ips.iter().any(|x| x == ip) {
            ips.push(ip.to_string());
        }
    };
    if let Some(v) = parts
        .headers
        .get("x-forwarded-for")
        .and_then(|v| v.to_str().ok())
    {
        v.split(',').for_each(&mut add);
    }
    if let Some(v) = parts.headers.get("x-real-ip").and_then(|v| v.to_str().ok()) {
        add(v);
    }
    if let Some(peer) = parts.extensions.get::<PeerAddr>() {
        add(&peer.0.ip().to_string());
    }
    ips
}

/// What `--audit-policy-file` and the `--audit-log-*` flags configure.
#[derive(Clone, Debug)]
pub struct AuditOptions {
    /// The checked policy.
    pub policy: Policy,
    /// The log file and its rotation.
    pub log: LogOptions,
}

impl Auditor {
    /// Opens the log (starting its writer thread) and creates the auditor.
    pub fn start(options: AuditOptions, counters: LogCounters) -> std::io::Result<Self> {
        Ok(Self {
            policy: options.policy,
            log: AuditLog::start(options.log, counters)?,
        })
    }

    /// Waits (at most `timeout`) until the events recorded so far are written.
    pub fn flush(&self, timeout: std::time::Duration) -> bool {
        self.log.flush(timeout)
    }

    /// Starts recording a request by `user` when its policy level is above `None`, and writes
    /// its `RequestReceived` event unless the policy omits it.
    pub fn begin(
        &self,
        audit_id: &http::HeaderValue,
        user: &UserInfo,
        info: &RequestInfo,
        parts: &http::request::Parts,
        received: chrono::DateTime<Utc>,
    ) -> Option<RequestAudit> {
        let audit = self.record(audit_id, Some(user), info, parts, received)?;
        audit.emit(Stage::RequestReceived);
        Some(audit)
    }

    /// Records a request whose authentication failed (Kubernetes'
    /// `WithFailedAuthenticationAudit`): one `ResponseStarted` event with the 401 code.
    pub fn failed_authentication(
        &self,
        audit_id: &http::HeaderValue,
        info: &RequestInfo,
        parts: &http::request::Parts,
        received: chrono::DateTime<Utc>,
    ) {
        if let Some(mut audit) = self.record(audit_id, None, info, parts, received) {
            audit.response_status(401, None);
            audit.emit(Stage::ResponseStarted);
        }
    }

    fn record(
        &self,
        audit_id: &http::HeaderValue,
        user: Option<&UserInfo>,
        info: &RequestInfo,
        parts: &http::request::Parts,
        received: chrono::DateTime<Utc>,
    ) -> Option<RequestAudit> {
        let config = self.policy.evaluate(user, info);
        if config.level == Level::None {
            return None;
        }
        let object_ref = info.is_resource_request.then(|| ObjectRef {
            resource: info.resource.clone(),
            namespace: info.namespace.clone(),
            name: info.name.clone(),
            api_group: info.api_group.clone(),
            api_version: info.api_version.clone(),
            subresource: info.subresource.clone(),
            ..ObjectRef::default()
        });
        let event = Event {
            level: config.level,
            audit_id: String::from_utf8_lossy(audit_id.as_bytes()).into_owned(),
            stage: Stage::RequestReceived,
            request_uri: crate::request_target::of(&parts.uri, &parts.extensions)
                .path_and_query()
                .to_string(),
            verb: info.verb.clone(),
            user: user.cloned(),
            impersonated_user: None,
            source_ips: source_ips(parts),
            user_agent: parts
                .headers
                .get(http::header::USER_AGENT)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .unwrap_or_default(),
            object_ref,
            response_status: None,
            request_object: None,
            response_object: None,
            request_received: received,
            stage_timestamp: received,
            annotations: BTreeMap::new(),
            omit_managed_fields: config.omit_managed_fields,
        };
        Some(RequestAudit {
            log: self.log.clone(),
            config,
            note: info
                .is_resource_request
                .then(|| ObjectNote::new(config.level)),
            event,
        })
    }
}

/// What a handler learns of a request's object once it has decoded it (Kubernetes'
/// `LogRequestObject`): the chain stores one as a request extension for every recorded resource
/// request, and the handler's decode step fills it. Its metadata completes the event's
/// `objectRef` (the name of a created object, the uid and resourceVersion of an update); at the
/// Request and RequestResponse levels the object's JSON is the event's `requestObject`, whatever
/// encoding the client sent.
#[derive(Clone, Debug)]
pub struct ObjectNote {
    noted: Arc<Mutex<Noted>>,
    level: Level,
}

#[derive(Debug, Default)]
struct Noted {
    meta: Option<ObjectMeta>,
    json: Option<bytes::Bytes>,
    response_json: Option<bytes::Bytes>,
    /// What admission added to the event (webhooks' and policies' `auditAnnotations`).
    annotations: Vec<(String, String)>,
}

impl ObjectNote {
    /// A note for a request recorded at `level`: the request object's JSON is kept from the
    /// Request level, a binary response object's from the RequestResponse level.
    fn new(level: Level) -> Self {
        Self {
            noted: Arc::default(),
            level,
        }
    }

    /// Records the object of a response sent in a binary encoding (protobuf), which the
    /// event cannot record from the bytes sent; a no-op below the RequestResponse level.
    pub fn record_response(&self, object: &dyn apimachinery::runtime::Object) {
        if self.level >= Level::RequestResponse {
            self.noted.lock().response_json = object.to_json().ok().map(bytes::Bytes::from);
        }
    }

    /// Records the request's decoded object.
    pub fn record(&self, object: &dyn apimachinery::runtime::Object) {
        let meta = object.metadata();
        let json = if self.level >= Level::Request {
            object.to_json().ok().map(bytes::Bytes::from)
        } else {
            None
        };
        let mut noted = self.noted.lock();
        noted.meta = Some(ObjectMeta {
            namespace: meta.namespace.clone(),
            name: meta.name.clone(),
            uid: meta.uid.clone(),
            resource_version: meta.resource_version.clone(),
            ..ObjectMeta::default()
        });
        noted.json = json;
    }

    /// Adds annotations to the event (admission's `auditAnnotations`); a key added twice keeps
    /// its first value, as Kubernetes keeps it.
    pub fn annotate(&self, annotations: Vec<(String, String)>) {
        if !annotations.is_empty() {
            self.noted.lock().annotations.extend(annotations);
        }
    }

    /// The JSON of the recorded object, if it was kept.
    fn json(&self) -> Option<bytes::Bytes> {
        self.noted.lock().json.clone()
    }

    /// The JSON of the recorded response object, if one was kept.
    fn response_json(&self) -> Option<bytes::Bytes> {
        self.noted.lock().response_json.clone()
    }

    /// Fills the empty fields of `object_ref` from the recorded metadata.
    fn complete(&self, object_ref: &mut ObjectRef) {
        let noted = self.noted.lock();
        let Some(meta) = noted.meta.as_ref() else {
            return;
        };
        let fill = |field: &mut String, value: &Option<String>| {
            if field.is_empty()
                && let Some(v) = value
            {
                field.clone_from(v);
            }
        };
        fill(&mut object_ref.namespace, &meta.namespace);
        fill(&mut object_ref.name, &meta.name);
        fill(&mut object_ref.uid, &meta.uid);
        fill(&mut object_ref.resource_version, &meta.resource_version);
    }
}

/// One request being recorded.
#[derive(Debug)]
pub struct RequestAudit {
    log: AuditLog,
    config: RequestAuditConfig,
    note: Option<ObjectNote>,
    event: Event,
}

impl RequestAudit {
    /// The level the policy chose.
    pub fn level(&self) -> Level {
        self.config.level
    }

    /// The note the handler fills for a resource request.
    pub fn object_note(&self) -> Option<ObjectNote> {
        self.note.clone()
    }

    fn emit(&self, stage: Stage) {
        if self.config.omit_stages.contains(stage) {
            return;
        }
        let mut event = self.event.clone();
        if let (Some(note), Some(object_ref)) = (&self.note, event.object_ref.as_mut()) {
            note.complete(object_ref);
        }
        if let Some(note) = &self.note {
            for (k, v) in &note.noted.lock().annotations {
                event
                    .annotations
                    .entry(k.clone().into())
                    .or_insert_with(|| v.clone());
            }
        }
        event.stage = stage;
        event.stage_timestamp = Utc::now();
        self.log.process(event);
    }

    /// Records the user a request impersonates.
    pub fn impersonated(&mut self, user: &UserInfo) {
        self.event.impersonated_user = Some(user.clone());
    }

    /// Records the authorizer's decision and reason (kube-apiserver's annotations: a failed
    /// decision has only the reason `internal error`).
    pub fn authorized(&mut self, verdict: &crate::filters::authorization::Verdict) {
        use crate::filters::authorization::Verdict;
        let (decision, reason) = match verdict {
            Verdict::Allowed(reason) => (Some("allow"), reason.to_string()),
            Verdict::Forbidden(reason) => (Some("forbid"), reason.to_string()),
            Verdict::Failed => (None, "internal error".to_string()),
        };
        if let Some(decision) = decision {
            self.event
                .annotations
                .insert(DECISION_ANNOTATION.into(), decision.to_string());
        }
        self.event
            .annotations
            .insert(REASON_ANNOTATION.into(), reason);
    }

    /// Records the request body (kept only at the Request and RequestResponse levels): the
    /// decoded object the handler noted, else the body as sent.
    pub fn request_body(&mut self, body: Option<RecordedBody>) {
        if self.config.level < Level::Request {
            return;
        }
        let decoded = self.note.as_ref().and_then(ObjectNote::json);
        self.event.request_object = match decoded {
            Some(bytes) => Some(RecordedBody::plain(bytes, event::BodyFormat::Json)),
            None => body,
        };
    }

    /// Records the response code and, for a failure, its `Status`.
    pub fn response_status(&mut self, code: u16, error: Option<ApiError>) {
        self.event.response_status = Some((code, error));
    }

    /// Records the response body (kept only at the RequestResponse level): the bytes sent, or
    /// the object the handler noted for a binary response.
    pub fn response_body(&mut self, body: Option<RecordedBody>) {
        if self.config.level < Level::RequestResponse {
            return;
        }
        let noted = self.note.as_ref().and_then(ObjectNote::response_json);
        self.event.response_object = match (body, noted) {
            (Some(body), _) => Some(body),
            (None, Some(bytes)) => Some(RecordedBody::plain(bytes, event::BodyFormat::Json)),
            (None, None) => None,
        };
    }

    /// Writes the `ResponseStarted` event (long-running requests).
    pub fn response_started(&self) {
        self.emit(Stage::ResponseStarted);
    }

    /// Writes the `ResponseComplete` event.
    pub fn complete(self) {
        self.emit(Stage::ResponseComplete);
    }

    /// Writes the `Panic` event of a handler that panicked with `message`.
    pub fn panicked(mut self, message: &str) {
        self.event.response_status = Some((
            500,
            Some(ApiError::new(
                500,
                apimachinery::status::StatusReason::InternalError,
                format!("APIServer panic'd: {message}"),
                None,
            )),
        ));
        self.emit(Stage::Panic);
    }
}
