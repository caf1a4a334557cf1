//! The etcd backend's watch: one etcd watch per [`WatchStream`], re-established transparently
//! when the connection to etcd is lost.
//!
//! The task remembers the next revision it must deliver. After an etcd restart (or any broken
//! stream) it opens a new etcd watch from exactly that revision, so no event is lost, and drops
//! any event below it, so none is duplicated. If the revision was compacted in the meantime the
//! stream ends with `Expired` and the consumer relists. If etcd stays unreachable longer than
//! the configured budget, the stream ends with `Unavailable`.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use etcd_client::{EventType, WatchOptions, WatchResponse};
use futures::StreamExt;
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;

use super::backend::Inner;
use super::error::{Backoff, classify};
use crate::backend::{
    Event, EventKind, ProgressRequests, WatchItem, WatchRequest, WatchStream, next_progress_request,
};
use crate::errors::{Result, Revision, StorageError};

/// How many items a watch buffers ahead of its consumer before etcd is back-pressured.
const BUFFER: usize = 256;

/// A consumer's progress request that etcd has not answered within this time is sent again.
const REQUEST_RETRY: Duration = Duration::from_millis(100);

/// True for etcd versions whose progress-request answers are ordered with watch events
/// (3.4.25+, 3.5.8+, 3.6+). Older servers may announce a revision before its events were sent.
pub(crate) fn supports_progress_requests(version: &str) -> bool {
    let mut parts = version
        .split(['.', '-', '+'])
        .map(|p| p.parse::<u64>().unwrap_or(0));
    let (major, minor, patch) = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    match (major, minor) {
        (3, 4) => patch >= 25,
        (3, 5) => patch >= 8,
        (3, m) => m >= 6,
        (m, _) => m > 3,
    }
}

/// Why one etcd watch session ended.
enum SessionEnd {
    /// The consumer dropped the stream.
    ConsumerGone,
    /// A terminal error to report to the consumer.
    Fatal(StorageError),
    /// The connection broke; reconnect from the next revision. The flag says whether the
    /// session delivered anything (which resets the reconnect budget).
    Lost(String, bool),
}

/// The state of one watch.
pub(crate) struct WatchTask {
    inner: Arc<Inner>,
    prefix: String,
    next: Revision,
    progress_interval: Option<Duration>,
    /// When the last progress item was delivered.
    last_progress: tokio::time::Instant,
    /// Out-of-turn progress requests of the consumer (only with a `progress_interval`, and
    /// only sent to etcd when it orders their answers with events).
    requests: Option<ProgressRequests>,
    /// When a progress request was sent to etcd and not yet answered.
    requested_at: Option<tokio::time::Instant>,
    tx: mpsc::Sender<Result<WatchItem>>,
    /// Fired when etcd first answers the watch (created, or an error), then `None`.
    established: Option<oneshot::Sender<()>>,
}

/// How long [`WatchTask::start`] waits for etcd to register the watch before it returns the
/// stream anyway (the task keeps trying to establish it).
const ESTABLISH_WAIT: Duration = Duration::from_secs(5);

impl WatchTask {
    /// Starts the watch task from revision `start` (inclusive) and returns its stream once etcd
    /// has registered the watch (or answered it with an error), so that a compaction issued
    /// after this returns can no longer cancel it for being behind: the caller may announce
    /// that it follows the storage from `start`. If etcd does not answer within
    /// [`ESTABLISH_WAIT`] the stream is returned anyway and the task keeps reconnecting.
    pub(crate) async fn start(
        inner: Arc<Inner>,
        request: WatchRequest,
        start: Revision,
    ) -> WatchStream {
        let (tx, rx) = mpsc::channel(BUFFER);
        let (established, is_established) = oneshot::channel();
        let requests = request
            .progress_interval
            .and(request.progress_requests)
            .filter(|_| inner.progress_requests);
        let task = WatchTask {
            inner,
            prefix: request.prefix,
            next: start,
            progress_interval: request.progress_interval,
            last_progress: tokio::time::Instant::now(),
            requests,
            requested_at: None,
            tx,
            established: Some(established),
        };
        tokio::spawn(task.run());
        let _ = tokio::time::timeout(ESTABLISH_WAIT, is_established).await;
        ReceiverStream::new(rx).boxed()
    }

    async fn run(mut self) {
        let mut backoff = Backoff::new();
        let mut deadline: Option<tokio::time::Instant> = None;
        loop {
            match self.session().await {
                SessionEnd::ConsumerGone => return,
                SessionEnd::Fatal(error) => {
                    let _ = self.tx.send(Err(error)).await;
                    return;
                }
                SessionEnd::Lost(message, delivered) => {
                    if delivered {
                        backoff = Backoff::new();
                        deadline = None;
                    }
                    let now = tokio::time::Instant::now();
                    let deadline =
                        *deadline.get_or_insert(now + self.inner.config.watch_reconnect_budget);
                    if now >= deadline {
                        let error = StorageError::Unavailable {
                            message: format!("etcd watch could not be re-established: {message}"),
                        };
                        let _ = self.tx.send(Err(error)).await;
                        return;
                    }
                    tracing::debug!(%message, next = self.next, "etcd watch lost; reconnecting");
                    tokio::select! {
                        _ = self.tx.closed() => return,
                        _ = tokio::time::sleep(backoff.next_delay()) => {}
                    }
                }
            }
        }
    }

    /// Runs one etcd watch from `self.next` until it breaks or the consumer leaves.
    async fn session(&mut self) -> SessionEnd {
        let mut options = WatchOptions::new()
            .with_prefix()
            .with_start_revision(self.next)
            .with_prev_key();
        if self.progress_interval.is_some() {
            options = options.with_progress_notify();
        }
        let mut client = self.inner.client.clone();
        let opened = tokio::select! {
            _ = self.tx.closed() => return SessionEnd::ConsumerGone,
            opened = client.watch(self.prefix.as_bytes().to_vec(), Some(options)) => opened,
        };
        let (mut sender, mut responses) = match opened {
            Ok(stream) => stream.split(),
            Err(error) => {
                return SessionEnd::Lost(classify(error).into_storage().to_string(), false);
            }
        };
        let request_progress = self.inner.progress_requests;
        let mut ticker = self.progress_interval.map(|period| {
            let mut ticker = tokio::time::interval(period.max(Duration::from_millis(10)));
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticker
        });
        let mut delivered = false;
        loop {
            let tick = async {
                match ticker.as_mut() {
                    Some(ticker) if request_progress => {
                        ticker.tick().await;
                    }
                    _ => std::future::pending::<()>().await,
                }
            };
            let message = tokio::select! {
                _ = self.tx.closed() => return SessionEnd::ConsumerGone,
                _ = tick => {
                    // A failed request shows up as a broken response stream below.
                    let _ = sender.request_progress().await;
                    continue;
                }
                () = next_progress_request(self.requests.as_mut()) => {
                    // One request in flight at a time: later ones are answered by its answer
                    // unless it took longer than this (then it is asked again).
                    let now = tokio::time::Instant::now();
                    if self.requested_at.is_none_or(|at| now - at >= REQUEST_RETRY) {
                        self.requested_at = Some(now);
                        let _ = sender.request_progress().await;
                    }
                    continue;
                }
                message = responses.message() => message,
            };
            let response = match message {
                Ok(Some(response)) => response,
                Ok(None) => return SessionEnd::Lost("etcd closed the watch".into(), delivered),
                Err(error) => {
                    return SessionEnd::Lost(classify(error).into_storage().to_string(), delivered);
                }
            };
            match self.handle(response).await {
                Ok(true) => delivered = true,
                Ok(false) => {}
                Err(end) => return end,
            }
        }
    }

    /// Delivers one etcd watch response. Returns whether anything was delivered.
    async fn handle(&mut self, response: WatchResponse) -> std::result::Result<bool, SessionEnd> {
        if let Some(established) = self.established.take() {
            let _ = established.send(());
        }
        if response.compact_revision() > 0 {
            let compacted = response.compact_revision();
            self.inner.compacted.fetch_max(compacted, Ordering::Relaxed);
            return Err(SessionEnd::Fatal(StorageError::Expired {
                requested: self.next,
                compacted,
            }));
        }
        if response.canceled() {
            let reason = response.cancel_reason();
            return Err(SessionEnd::Lost(
                format!("etcd canceled the watch: {reason}"),
                false,
            ));
        }
        if response.events().is_empty() {
            if response.created() || self.progress_interval.is_none() {
                return Ok(false);
            }
            let revision = response.header().map(|h| h.revision()).unwrap_or(0);
            // A notification for revision R says every event up to R was sent.
            if revision + 1 < self.next {
                return Ok(false);
            }
            self.next = revision + 1;
            // etcd may notify more often than asked (its interval is a server setting); an
            // answer to a request of the consumer is always delivered.
            let due = self.requested_at.take().is_some()
                || self
                    .progress_interval
                    .is_some_and(|interval| self.last_progress.elapsed() >= interval.mul_f32(0.8));
            if !due {
                return Ok(false);
            }
            self.last_progress = tokio::time::Instant::now();
            self.send(WatchItem::Progress(revision)).await?;
            return Ok(true);
        }
        let mut batch: Vec<Event> = Vec::new();
        let mut delivered = false;
        for event in response.events() {
            let converted = match convert_event(event) {
                Ok(event) => event,
                Err(error) => return Err(SessionEnd::Fatal(error)),
            };
            if converted.mod_revision < self.next {
                // Already delivered before a reconnect.
                continue;
            }
            if batch
                .first()
                .is_some_and(|first| first.mod_revision != converted.mod_revision)
            {
                let revision = batch[0].mod_revision;
                self.send(WatchItem::Events(std::mem::take(&mut batch)))
                    .await?;
                self.next = revision + 1;
                delivered = true;
            }
            batch.push(converted);
        }
        if let Some(first) = batch.first() {
            let revision = first.mod_revision;
            self.send(WatchItem::Events(batch)).await?;
            self.next = revision + 1;
            delivered = true;
        }
        Ok(delivered)
    }

    async fn send(&self, item: WatchItem) -> std::result::Result<(), SessionEnd> {
        self.tx
            .send(Ok(item))
            .await
            .map_err(|_| SessionEnd::ConsumerGone)
    }
}

/// Converts one etcd event.
fn convert_event(event: &etcd_client::Event) -> Result<Event> {
    let kv = event
        .kv()
        .ok_or_else(|| StorageError::internal("etcd watch event without key-value"))?;
    let key = String::from_utf8(kv.key().to_vec())
        .map_err(|e| StorageError::internal(format!("etcd returned a non-UTF-8 key: {e}")))?;
    let prev = event.prev_kv();
    let prev_value = prev.map(|p| Bytes::copy_from_slice(p.value()));
    Ok(match event.event_type() {
        EventType::Put => Event {
            kind: EventKind::Put,
            key,
            value: Bytes::copy_from_slice(kv.value()),
            prev_value,
            create_revision: kv.create_revision(),
            mod_revision: kv.mod_revision(),
        },
        EventType::Delete => Event {
            kind: EventKind::Delete,
            key,
            value: Bytes::new(),
            prev_value,
            create_revision: prev.map(|p| p.create_revision()).unwrap_or(0),
            mod_revision: kv.mod_revision(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::supports_progress_requests;

    #[test]
    fn progress_request_support_by_version() {
        assert!(!supports_progress_requests("3.4.23"));
        assert!(supports_progress_requests("3.4.25"));
        assert!(!supports_progress_requests("3.5.7"));
        assert!(supports_progress_requests("3.5.8"));
        assert!(supports_progress_requests("3.6.0"));
        assert!(!supports_progress_requests("garbage"));
    }
}
