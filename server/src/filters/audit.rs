//! The audit step of the chain (Kubernetes' `WithAudit` and `WithFailedAuthenticationAudit`):
//! the policy is evaluated right after authentication; a recorded request gets its
//! `RequestReceived` event at once, `ResponseStarted` when a long-running response starts, and
//! `ResponseComplete` when its response body has been sent (or dropped), so that a watch is
//! complete when its stream ends. Bodies are kept only at the levels that record them: the
//! request body is copied as the handler reads it, the response body as it is sent.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use apimachinery::status::ApiError;
use axum::body::{Body, Bytes};
use bytes::BytesMut;
use http::{Request, Response};
use http_body::{Body as HttpBody, Frame, SizeHint};
use parking_lot::Mutex;

use crate::audit::RequestAudit;
use crate::audit::event::{BodyFormat, RecordedBody};
use crate::audit::policy::Level;

/// The largest body recorded in an event; a larger one is left out.
const MAX_RECORDED_BODY: usize = 3 * 1024 * 1024;
/// The largest error body read back for the `Status` of a failure.
const MAX_STATUS_BODY: usize = 64 * 1024;

/// A request body copied while the handler reads it.
#[derive(Clone, Default)]
pub struct RequestCopy(Arc<Mutex<Option<BytesMut>>>);

impl RequestCopy {
    /// The bytes read so far, or `None` when the body was larger than recorded bodies may be.
    fn take(&self) -> Option<Bytes> {
        self.0.lock().take().map(BytesMut::freeze)
    }
}

struct TeeBody {
    inner: Body,
    copy: RequestCopy,
}

impl HttpBody for TeeBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
        {
            let mut copy = self.copy.0.lock();
            let full = copy
                .as_ref()
                .is_some_and(|b| b.len() + data.len() > MAX_RECORDED_BODY);
            if full {
                *copy = None;
            } else if let Some(b) = copy.as_mut() {
                b.extend_from_slice(data);
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Copies the request body while the handler reads it when the level records it; returns the
/// request to hand on and the copy with its format.
pub fn copy_request(
    audit: Option<&RequestAudit>,
    req: Request<Body>,
) -> (Request<Body>, Option<(RequestCopy, BodyFormat)>) {
    if audit.is_none_or(|a| a.level() < Level::Request) {
        return (req, None);
    }
    // Protobuf and other binary bodies are recorded from the decoded object only.
    let Some(format) = BodyFormat::of_content_type(req.headers().get(http::header::CONTENT_TYPE))
    else {
        return (req, None);
    };
    let copy = RequestCopy(Arc::new(Mutex::new(Some(BytesMut::new()))));
    let (parts, inner) = req.into_parts();
    let body = Body::new(TeeBody {
        inner,
        copy: copy.clone(),
    });
    (Request::from_parts(parts, body), Some((copy, format)))
}

/// Records the copied request body in the event.
pub fn record_request(audit: &mut RequestAudit, copy: Option<(RequestCopy, BodyFormat)>) {
    let sent =
        copy.and_then(|(copy, format)| copy.take().map(|bytes| RecordedBody::plain(bytes, format)));
    audit.request_body(sent);
}

/// Finishes the record of a request a filter refused with `err`.
pub fn refused(mut audit: RequestAudit, err: &ApiError) {
    audit.response_status(err.code(), Some(err.clone()));
    audit.complete();
}

/// Finishes the record of a request the handler answered: long-running responses get their
/// `ResponseStarted` event now; `ResponseComplete` is written when the body has been sent.
pub fn responded(
    mut audit: RequestAudit,
    long_running: bool,
    resp: Response<Body>,
) -> Response<Body> {
    let code = resp.status().as_u16();
    audit.response_status(code, None);
    if long_running {
        audit.response_started();
    }
    let format = BodyFormat::of_content_type(resp.headers().get(http::header::CONTENT_TYPE));
    let gzipped = resp
        .headers()
        .get(http::header::CONTENT_ENCODING)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"gzip"));
    let failed = code >= 400;
    let keep_body =
        !long_running && format.is_some() && (failed || audit.level() >= Level::RequestResponse);
    let (parts, inner) = resp.into_parts();
    let body = AuditedBody {
        inner,
        pending: Some(Pending {
            audit,
            capture: keep_body.then(BytesMut::new),
            format: format.unwrap_or(BodyFormat::Json),
            gzipped,
            failed,
            code,
        }),
    };
    Response::from_parts(parts, Body::new(body))
}

struct Pending {
    audit: RequestAudit,
    capture: Option<BytesMut>,
    format: BodyFormat,
    gzipped: bool,
    failed: bool,
    code: u16,
}

impl Pending {
    fn finish(mut self) {
        let sent = self.capture.take().map(|bytes| RecordedBody {
            bytes: bytes.freeze(),
            format: self.format,
            gzipped: self.gzipped,
        });
        if let Some(body) = &sent
            && self.failed
            && self.format == BodyFormat::Json
            && !body.gzipped
            && body.bytes.len() <= MAX_STATUS_BODY
        {
            let status = serde_json::from_slice::<serde_json::Value>(&body.bytes)
                .ok()
                .and_then(|v| ApiError::from_status_json(&v));
            if let Some(err) = status {
                self.audit.response_status(self.code, Some(err));
            }
        }
        self.audit.response_body(sent);
        self.audit.complete();
    }
}

/// A response body that writes the request's `ResponseComplete` event when it ends or is
/// dropped, keeping a copy of what it sent when the event records it.
struct AuditedBody {
    inner: Body,
    pending: Option<Pending>,
}

impl HttpBody for AuditedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref()
                    && let Some(pending) = self.pending.as_mut()
                {
                    let full = pending
                        .capture
                        .as_ref()
                        .is_some_and(|c| c.len() + data.len() > MAX_RECORDED_BODY);
                    if full {
                        pending.capture = None;
                    } else if let Some(c) = pending.capture.as_mut() {
                        c.extend_from_slice(data);
                    }
                }
            }
            Poll::Ready(None) | Poll::Ready(Some(Err(_))) => {
                if let Some(pending) = self.pending.take() {
                    pending.finish();
                }
            }
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for AuditedBody {
    fn drop(&mut self) {
        if let Some(pending) = self.pending.take() {
            pending.finish();
        }
    }
}
