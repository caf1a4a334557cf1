//! `watch`: a chunked stream of `WatchEvent`s as JSON lines or length-prefixed protobuf frames,
//! optionally as Tables (`kubectl get -w`).

use std::sync::Arc;
use std::time::Duration;

use apimachinery::protobuf::ProtoMessage;
use apimachinery::selectors::{FieldOperator, FieldRequirement};
use apimachinery::status::ApiError;
use axum::body::{Body, Bytes};
use futures::StreamExt;
use http::{Response, StatusCode, header};
use rand::Rng;
use serde_json::{Value, json};
use storage::cacher::{EncodingKey, MemoHandle};
use storage::interface::WatchEvent;

use apimachinery::runtime::Object;

use super::ApiContext;
use super::get::list_params;
use super::scope::RequestScope;
use crate::negotiate::{Negotiated, OutputFormat, Transform, negotiate_watch};
use crate::registry::errors::storage_error;
use crate::registry::{KindStorage, rest_storage};

/// One event to send: from the store (with the cache's encoding memo) or from a user's
/// storage.
enum Item {
    Stored(WatchEvent, Option<MemoHandle>),
    Typed(rest_storage::Event),
}

/// The annotation on the bookmark that ends `sendInitialEvents`.
pub const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// Encodes watch events for one watcher.
struct Encoder {
    rc: Arc<RequestScope>,
    negotiated: Negotiated,
    first_table: bool,
    key: EncodingKey,
}

impl Encoder {
    fn frame(&self, event_type: &str, object: &Value) -> Result<Vec<u8>, ApiError> {
        match self.negotiated.format {
            OutputFormat::Protobuf => {
                let enveloped = if object.get("kind").and_then(Value::as_str) == Some("Status") {
                    let status: apimachinery::meta::Status =
                        serde_json::from_value(object.clone()).map_err(ApiError::internal)?;
                    apimachinery::protobuf::encode_envelope("v1", "Status", &status.encode_to_vec())
                } else {
                    // A bookmark: an object of the kind carrying only its metadata.
                    let codec = self
                        .rc
                        .kind
                        .codec(self.rc.version.version)
                        .ok_or_else(ApiError::not_found_path)?;
                    let mut bookmark = codec.new_object();
                    *bookmark.metadata_mut() = object
                        .get("metadata")
                        .map(|m| serde_json::from_value(m.clone()))
                        .transpose()
                        .map_err(ApiError::internal)?
                        .unwrap_or_default();
                    super::response::encode_protobuf_object(&*bookmark)?
                };
                Ok(apimachinery::protobuf::encode_watch_frame(
                    event_type, &enveloped,
                ))
            }
            _ => Ok(json_line(event_type, object)?),
        }
    }

    /// The event's object as JSON, transformed as negotiated (Table, PartialObjectMetadata).
    fn transform(&mut self, object: &dyn Object) -> Result<Value, ApiError> {
        match self.negotiated.transform.clone() {
            Transform::Table(v) => {
                let meta = json!({"resourceVersion": object.metadata().resource_version.clone().unwrap_or_default()});
                let t = super::response::table_of(&self.rc, &[object], &v, meta, self.first_table)?;
                self.first_table = false;
                Ok(t)
            }
            Transform::PartialObjectMetadata(v) => super::response::partial_metadata(object, &v),
            _ => object.to_value().map_err(ApiError::internal),
        }
    }

    fn object_event(
        &mut self,
        event_type: &str,
        stored: &storage::interface::StoredObject,
        memo: Option<&MemoHandle>,
    ) -> Result<Bytes, ApiError> {
        let memoizable = self.negotiated.transform == Transform::None;
        if let (true, Some(memo)) = (memoizable, memo) {
            let mut failed = None;
            let key = self.key.clone();
            let bytes = memo.encoded(&key, || {
                match self.encode_object_event(event_type, stored) {
                    Ok(b) => Bytes::from(b),
                    Err(e) => {
                        failed = Some(e);
                        Bytes::new()
                    }
                }
            });
            if let Some(e) = failed {
                return Err(e);
            }
            // Shared with every watcher of this encoding: no copy.
            return Ok(bytes);
        }
        self.encode_object_event(event_type, stored)
            .map(Bytes::from)
    }

    fn encode_object_event(
        &mut self,
        event_type: &str,
        stored: &storage::interface::StoredObject,
    ) -> Result<Vec<u8>, ApiError> {
        let KindStorage::Store(store) = &self.rc.storage else {
            return Err(ApiError::internal(
                "a stored event of a kind without a store",
            ));
        };
        if self.negotiated.format == OutputFormat::Json
            && self.negotiated.transform == Transform::None
            && self.rc.is_storage_version()
        {
            // Written from the stored bytes: no decode, no re-encode.
            let object = store.json_bytes(stored)?;
            let mut line = Vec::with_capacity(object.len() + event_type.len() + 24);
            line.extend_from_slice(b"{\"type\":\"");
            line.extend_from_slice(event_type.as_bytes());
            line.extend_from_slice(b"\",\"object\":");
            line.extend_from_slice(&object);
            line.extend_from_slice(b"}\n");
            return Ok(line);
        }
        let obj = store.decode(stored)?;
        self.typed_event(event_type, obj)
    }

    /// Encodes an event of a typed object of the storage version.
    fn typed_event(&mut self, event_type: &str, obj: Box<dyn Object>) -> Result<Vec<u8>, ApiError> {
        let obj = self.rc.to_request_version(obj)?;
        if self.negotiated.format == OutputFormat::Protobuf
            && self.negotiated.transform == Transform::None
        {
            let enveloped = super::response::encode_protobuf_object(&*obj)?;
            return Ok(apimachinery::protobuf::encode_watch_frame(
                event_type, &enveloped,
            ));
        }
        let value = self.transform(&*obj)?;
        json_line(event_type, &value)
    }

    fn bookmark(
        &self,
        resource_version: String,
        initial_events_end: bool,
    ) -> Result<Vec<u8>, ApiError> {
        let mut meta = json!({"resourceVersion": resource_version});
        if initial_events_end {
            meta["annotations"] = json!({INITIAL_EVENTS_END: "true"});
        }
        let obj = json!({"kind": self.rc.version.kind, "apiVersion": self.rc.version.api_version(), "metadata": meta});
        self.frame("BOOKMARK", &obj)
    }

    /// Encodes one event; `true` ends the stream after an error event.
    fn item(&mut self, item: Item) -> (Option<Bytes>, bool) {
        match item {
            Item::Stored(event, memo) => self.event(&event, memo.as_ref()),
            Item::Typed(event) => self.typed(event),
        }
    }

    /// Encodes one event of a user's storage.
    fn typed(&mut self, event: rest_storage::Event) -> (Option<Bytes>, bool) {
        let result = match event {
            rest_storage::Event::Added(o) => self.typed_event("ADDED", o),
            rest_storage::Event::Modified(o) => self.typed_event("MODIFIED", o),
            rest_storage::Event::Deleted(o) => self.typed_event("DELETED", o),
            rest_storage::Event::Bookmark {
                resource_version,
                initial_events_end,
            } => self.bookmark(resource_version, initial_events_end),
            rest_storage::Event::Error(e) => Err(e),
        };
        match result {
            Ok(b) => (Some(Bytes::from(b)), false),
            Err(e) => (
                self.frame("ERROR", &e.to_status_json())
                    .ok()
                    .map(Bytes::from),
                true,
            ),
        }
    }

    /// Encodes one event of the store; `true` ends the stream after an error event.
    fn event(&mut self, event: &WatchEvent, memo: Option<&MemoHandle>) -> (Option<Bytes>, bool) {
        let result = match event {
            WatchEvent::Added(o) => self.object_event("ADDED", o, memo),
            WatchEvent::Modified { object, .. } => self.object_event("MODIFIED", object, memo),
            WatchEvent::Deleted(o) => self.object_event("DELETED", o, memo),
            WatchEvent::Bookmark {
                resource_version,
                initial_events_end,
            } => self
                .bookmark(resource_version.to_string(), *initial_events_end)
                .map(Bytes::from),
            WatchEvent::Error(e) => {
                let status =
                    storage_error(e.clone(), self.rc.storage.resource(), "").to_status_json();
                return (self.frame("ERROR", &status).ok().map(Bytes::from), true);
            }
        };
        match result {
            Ok(b) => (Some(b), false),
            Err(e) => (
                self.frame("ERROR", &e.to_status_json())
                    .ok()
                    .map(Bytes::from),
                true,
            ),
        }
    }
}

/// `GET ...?watch=true` (or `/watch/...`).
pub async fn watch(ctx: &ApiContext, rc: RequestScope) -> Result<Response<Body>, ApiError> {
    let mut params = list_params(&rc)?;
    // `/watch/namespaces/ns/widgets/name` watches one object: the name authorized is the
    // path's, so a field selector may only narrow it (kube-apiserver's `ListResource`).
    if rc.info.parts.len() >= 2 && !rc.info.name.is_empty() {
        if params
            .fields
            .exact("metadata.name")
            .is_some_and(|name| name != rc.info.name)
        {
            return Err(ApiError::bad_request(
                "fieldSelector metadata.name doesn't match requested name",
            ));
        }
        params.fields.requirements.push(FieldRequirement {
            field: "metadata.name".into(),
            operator: FieldOperator::Equals,
            value: rc.info.name.clone(),
        });
    }
    let negotiated = negotiate_watch(rc.header("accept"), rc.protobuf())?;
    // `includeObject` is checked before the stream starts.
    crate::table::IncludeObject::parse(rc.q("includeObject"))?;
    // As kube-apiserver: `timeoutSeconds` bounds the watch; 0 or none means a random duration
    // between --min-request-timeout and twice that; a negative value is a timeout that has
    // already passed, so the watch ends at once (200 with no events).
    let timeout = match params.timeout_seconds {
        Some(s) if s > 0 => Duration::from_secs(s as u64),
        Some(s) if s < 0 => Duration::ZERO,
        _ => {
            let factor: f64 = rand::rng().random_range(1.0..2.0);
            ctx.min_request_timeout.mul_f64(factor)
        }
    };
    let mut end = ctx.watches_end_signal();
    let content_type = match negotiated.format {
        OutputFormat::Protobuf => apimachinery::protobuf::WATCH_MEDIA_TYPE.to_string(),
        _ => match &negotiated.transform {
            Transform::None => "application/json".to_string(),
            _ => negotiated.content_type(),
        },
    };
    let encoding_key = EncodingKey::new(format!(
        "{}|{}",
        negotiated.content_type(),
        rc.version.api_version()
    ));
    let events: futures::stream::BoxStream<'static, Item> = match &rc.storage {
        KindStorage::Store(store) => {
            let key = store.collection_key(rc.namespace())?;
            let opts = params.storage_options();
            let started = match store.cacher() {
                Some(c) => c
                    .watch_memoized(&key, opts)
                    .await
                    .map(|s| s.map(|m| Item::Stored(m.event, m.memo)).boxed()),
                None => store
                    .storage()
                    .watch(&key, opts)
                    .await
                    .map(|s| s.map(|e| Item::Stored(e, None)).boxed()),
            };
            // As kube-apiserver, a watch from a compacted revision is accepted and then ends
            // with an `ERROR` event carrying the 410 `Expired` Status.
            match started {
                Ok(s) => s,
                Err(e) if e.is_expired() => {
                    futures::stream::iter([Item::Stored(WatchEvent::Error(e), None)]).boxed()
                }
                Err(e) => return Err(storage_error(e, store.resource(), "")),
            }
        }
        KindStorage::Custom(custom) => {
            match custom.watch(&params.rest_options(rc.namespace())).await {
                Ok(s) => s.map(Item::Typed).boxed(),
                Err(e) if e.code() == 410 => {
                    futures::stream::iter([Item::Typed(rest_storage::Event::Error(e))]).boxed()
                }
                Err(e) => return Err(e),
            }
        }
    };
    let mut encoder = Encoder {
        rc: Arc::new(rc),
        negotiated,
        first_table: true,
        key: encoding_key,
    };
    let deadline = async move {
        if timeout.is_zero() {
            return;
        }
        tokio::select! {
            _ = tokio::time::sleep(timeout) => {}
            _ = end.wait_for(|ended| *ended) => {}
        }
    };
    let body_stream = events
        .take_until(deadline)
        .scan(false, move |done, item| {
            if *done {
                return futures::future::ready(None);
            }
            let (bytes, end) = encoder.item(item);
            *done = end;
            futures::future::ready(Some(bytes))
        })
        .filter_map(futures::future::ready);
    let body_stream = Coalesced::new(body_stream.boxed()).map(Ok::<_, std::convert::Infallible>);
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::CACHE_CONTROL, "no-cache, private")
        .body(Body::from_stream(body_stream))
        .map_err(ApiError::internal)
}

/// The most bytes of queued events [`Coalesced`] joins into one body chunk.
const COALESCE_BYTES: usize = 64 * 1024;

/// A watch body that joins the events already queued behind the one it sends into one chunk
/// (up to [`COALESCE_BYTES`]), so a watcher that has fallen behind costs one HTTP/2 DATA frame
/// or HTTP/1.1 chunk, one TLS record and one write for several events, as kube-apiserver's
/// watch server flushes only once its channel of events is empty. A watcher that keeps up is
/// sent each event as it comes, without a copy.
struct Coalesced<S> {
    inner: futures::stream::Fuse<S>,
    /// An event that did not fit into the last chunk: the next chunk starts with it.
    held: Option<Bytes>,
}

impl<S: futures::Stream<Item = Bytes> + Unpin> Coalesced<S> {
    fn new(inner: S) -> Self {
        Self {
            inner: inner.fuse(),
            held: None,
        }
    }
}

impl<S: futures::Stream<Item = Bytes> + Unpin> futures::Stream for Coalesced<S> {
    type Item = Bytes;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Bytes>> {
        use std::task::Poll;
        let this = self.get_mut();
        let first = match this.held.take() {
            Some(first) => first,
            None => match std::task::ready!(this.inner.poll_next_unpin(cx)) {
                Some(first) => first,
                None => return Poll::Ready(None),
            },
        };
        let mut joined: Option<bytes::BytesMut> = None;
        let mut len = first.len();
        while len < COALESCE_BYTES {
            let Poll::Ready(Some(next)) = this.inner.poll_next_unpin(cx) else {
                break;
            };
            if len + next.len() > COALESCE_BYTES {
                this.held = Some(next);
                break;
            }
            len += next.len();
            let chunk = joined.get_or_insert_with(|| {
                let mut chunk = bytes::BytesMut::with_capacity(COALESCE_BYTES.min(4 * len));
                chunk.extend_from_slice(&first);
                chunk
            });
            chunk.extend_from_slice(&next);
        }
        Poll::Ready(Some(joined.map_or(first, bytes::BytesMut::freeze)))
    }
}

/// One JSON watch event line: `{"type":…,"object":…}` and a newline.
fn json_line(event_type: &str, object: &Value) -> Result<Vec<u8>, ApiError> {
    let mut line = serde_json::to_vec(&json!({"type": event_type, "object": object}))
        .map_err(ApiError::internal)?;
    line.push(b'\n');
    Ok(line)
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use futures::channel::mpsc;

    use super::{Bytes, COALESCE_BYTES, Coalesced};

    fn chunk(byte: u8, len: usize) -> Bytes {
        Bytes::from(vec![byte; len])
    }

    #[tokio::test]
    async fn queued_events_are_joined_and_a_waiting_watcher_gets_each_as_it_comes() {
        let (tx, rx) = mpsc::unbounded();
        let mut body = Coalesced::new(rx);
        for b in [b'a', b'b', b'c'] {
            tx.unbounded_send(chunk(b, 10)).unwrap();
        }
        assert_eq!(
            body.next().await.unwrap(),
            Bytes::from([vec![b'a'; 10], vec![b'b'; 10], vec![b'c'; 10]].concat())
        );
        tx.unbounded_send(chunk(b'd', 10)).unwrap();
        assert_eq!(body.next().await.unwrap(), chunk(b'd', 10));
        drop(tx);
        assert_eq!(body.next().await, None);
    }

    #[tokio::test]
    async fn a_chunk_stops_at_the_limit_and_the_event_that_would_pass_it_starts_the_next() {
        let (tx, rx) = mpsc::unbounded();
        let mut body = Coalesced::new(rx);
        let third = COALESCE_BYTES / 3;
        for b in [b'a', b'b', b'c', b'd'] {
            tx.unbounded_send(chunk(b, third)).unwrap();
        }
        tx.unbounded_send(chunk(b'e', 2 * COALESCE_BYTES)).unwrap();
        drop(tx);
        let chunks: Vec<Bytes> = body.by_ref().collect().await;
        let lens: Vec<usize> = chunks.iter().map(Bytes::len).collect();
        assert_eq!(lens, [3 * third, third, 2 * COALESCE_BYTES]);
        assert_eq!(chunks[1], chunk(b'd', third));
        assert!(
            chunks
                .iter()
                .all(|c| c.len() <= COALESCE_BYTES || c.iter().all(|&b| b == b'e'))
        );
    }
}
