//! What a connection is doing, for its timeouts (Go's `ReadHeaderTimeout` and `IdleTimeout` as
//! kube-apiserver sets them), and counters of in-flight requests and open connections.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::Instant;

/// Counts things in progress (requests, connections) and wakes who waits for none.
#[derive(Clone, Default)]
pub struct Counter(Arc<(AtomicUsize, Notify)>);

impl Counter {
    /// Counts one more until the guard is dropped.
    pub fn enter(&self) -> CounterGuard {
        self.0.0.fetch_add(1, Ordering::AcqRel);
        CounterGuard(self.clone())
    }

    /// Completes when the count is zero.
    pub async fn drained(&self) {
        loop {
            let notified = self.0.1.notified();
            if self.0.0.load(Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }
}

/// One counted thing; dropping it uncounts it.
pub struct CounterGuard(Counter);

impl Drop for CounterGuard {
    fn drop(&mut self) {
        if self.0.0.0.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.0.1.notify_waiters();
        }
    }
}

#[derive(Debug)]
struct State {
    /// Requests whose response has not been sent completely.
    active: usize,
    /// When the connection last became idle (or was accepted).
    idle_since: Instant,
    /// When the first byte of the next request head arrived (HTTP/1.1).
    head_started: Option<Instant>,
    /// By when each active response with a deadline must have been sent (ordinary requests:
    /// their request timeout; watches have none).
    due: Vec<Instant>,
}

/// The state of one connection that its timeouts follow.
///
/// HTTP/1.1 as Go serves it: the first request head must be complete within the header timeout
/// of the connection's start; after a response, the connection may stay idle for the idle
/// timeout, and once the next request's first byte arrives, its head must be complete within the
/// header timeout. h2: the connection is closed after the idle timeout without an open stream.
/// A request in progress (including a streaming watch) never times out here.
#[derive(Debug)]
pub struct Activity {
    state: Mutex<State>,
    changed: Notify,
    h2: bool,
    header_timeout: Duration,
    idle_timeout: Duration,
}

impl Activity {
    /// A new connection, just accepted.
    pub fn new(h2: bool, header_timeout: Duration, idle_timeout: Duration) -> Self {
        let now = Instant::now();
        Self {
            state: Mutex::new(State {
                active: 0,
                idle_since: now,
                head_started: (!h2).then_some(now),
                due: Vec::new(),
            }),
            changed: Notify::new(),
            h2,
            header_timeout,
            idle_timeout,
        }
    }

    /// A request started; the guard marks its end (when its response body is done).
    pub fn enter(self: &Arc<Self>) -> ActivityGuard {
        {
            let mut s = self.state.lock();
            s.active += 1;
            s.head_started = None;
        }
        self.changed.notify_waiters();
        ActivityGuard {
            activity: Arc::clone(self),
            due: None,
        }
    }

    fn exit(&self, due: Option<Instant>) {
        {
            let mut s = self.state.lock();
            if let Some(at) = due
                && let Some(i) = s.due.iter().position(|d| *d == at)
            {
                s.due.swap_remove(i);
            }
            s.active -= 1;
            if s.active == 0 {
                s.idle_since = Instant::now();
                s.head_started = None;
            }
        }
        self.changed.notify_waiters();
    }

    /// Bytes arrived from the client.
    fn on_read(&self) {
        if self.h2 {
            return;
        }
        let started = {
            let mut s = self.state.lock();
            if s.active == 0 && s.head_started.is_none() {
                s.head_started = Some(Instant::now());
                true
            } else {
                false
            }
        };
        if started {
            self.changed.notify_waiters();
        }
    }

    /// When the connection times out as things stand: while requests are active, when the
    /// first response with a deadline is overdue (a client that stops reading holds a
    /// response, and the connection, no longer than the request timeout, as kube-apiserver's
    /// timeout filter aborts such a write), or never.
    fn deadline(&self) -> Option<Instant> {
        let s = self.state.lock();
        if s.active > 0 {
            return s.due.iter().min().copied();
        }
        Some(match s.head_started {
            Some(at) if !self.h2 => at + self.header_timeout,
            _ => s.idle_since + self.idle_timeout,
        })
    }

    /// Completes when the connection has timed out.
    pub async fn expired(&self) {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match self.deadline() {
                None => notified.await,
                Some(deadline) => {
                    if Instant::now() >= deadline {
                        return;
                    }
                    tokio::select! {
                        () = tokio::time::sleep_until(deadline) => {}
                        () = notified => {}
                    }
                }
            }
        }
    }
}

/// A request in progress on a connection.
pub struct ActivityGuard {
    activity: Arc<Activity>,
    due: Option<Instant>,
}

impl ActivityGuard {
    /// The response must have been sent by `at`; past it, the connection times out.
    pub fn due_by(&mut self, at: Instant) {
        if self.due.is_some() {
            return;
        }
        self.due = Some(at);
        self.activity.state.lock().due.push(at);
        self.activity.changed.notify_waiters();
    }
}

impl Drop for ActivityGuard {
    fn drop(&mut self) {
        self.activity.exit(self.due);
    }
}

/// A response body that keeps its request counted as active until it is done or dropped.
pub struct TrackedBody {
    inner: axum::body::Body,
    _busy: ActivityGuard,
}

impl TrackedBody {
    /// Wraps `inner`.
    pub fn new(inner: axum::body::Body, busy: ActivityGuard) -> Self {
        Self { inner, _busy: busy }
    }
}

impl http_body::Body for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// The connection's stream, reporting reads to its [`Activity`].
pub struct ActivityIo<T> {
    inner: T,
    activity: Arc<Activity>,
}

impl<T> ActivityIo<T> {
    /// Wraps `inner`.
    pub fn new(inner: T, activity: Arc<Activity>) -> Self {
        Self { inner, activity }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for ActivityIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.on_read();
        }
        r
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for ActivityIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: Duration = Duration::from_secs(32);
    const IDLE: Duration = Duration::from_secs(90);

    fn head_started(a: &Activity) -> Option<Instant> {
        a.state.lock().head_started
    }

    fn idle_since(a: &Activity) -> Instant {
        a.state.lock().idle_since
    }

    #[test]
    fn http1_deadlines_follow_go() {
        let a = Arc::new(Activity::new(false, HEADER, IDLE));
        // A new connection must send its first head within the header timeout.
        let start = head_started(&a).unwrap_or_else(|| panic!("no head start"));
        assert_eq!(a.deadline(), Some(start + HEADER));

        // No deadline while a request is in progress.
        let guard = a.enter();
        a.on_read();
        assert_eq!(a.deadline(), None);
        drop(guard);

        // After the response, the idle timeout applies until a byte arrives.
        assert_eq!(head_started(&a), None);
        assert_eq!(a.deadline(), Some(idle_since(&a) + IDLE));
        a.on_read();
        let head = head_started(&a).unwrap_or_else(|| panic!("no head start"));
        assert_eq!(a.deadline(), Some(head + HEADER));
        // Later bytes of the same head do not move it.
        a.on_read();
        assert_eq!(a.deadline(), Some(head + HEADER));
    }

    #[test]
    fn h2_deadline_is_the_idle_timeout_without_streams() {
        let a = Arc::new(Activity::new(true, HEADER, IDLE));
        a.on_read();
        assert_eq!(head_started(&a), None);
        assert_eq!(a.deadline(), Some(idle_since(&a) + IDLE));
        let one = a.enter();
        let two = a.enter();
        drop(one);
        assert_eq!(a.deadline(), None);
        drop(two);
        assert_eq!(a.deadline(), Some(idle_since(&a) + IDLE));
    }

    #[test]
    fn a_response_past_its_deadline_times_the_connection_out() {
        let a = Arc::new(Activity::new(true, HEADER, IDLE));
        let watch = a.enter();
        let mut first = a.enter();
        let mut second = a.enter();
        let now = Instant::now();
        first.due_by(now + Duration::from_secs(60));
        second.due_by(now + Duration::from_secs(30));
        assert_eq!(a.deadline(), Some(now + Duration::from_secs(30)));
        drop(second);
        assert_eq!(a.deadline(), Some(now + Duration::from_secs(60)));
        drop(first);
        // A watch alone has no deadline.
        assert_eq!(a.deadline(), None);
        drop(watch);
        assert_eq!(a.deadline(), Some(idle_since(&a) + IDLE));
    }

    #[tokio::test]
    async fn expiry_waits_for_the_end_of_requests() {
        let a = Arc::new(Activity::new(
            true,
            Duration::from_millis(10),
            Duration::from_millis(10),
        ));
        let guard = a.enter();
        let waiter = {
            let a = Arc::clone(&a);
            tokio::spawn(async move { a.expired().await })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!waiter.is_finished(), "expired while a request was active");
        drop(guard);
        let done = tokio::time::timeout(Duration::from_secs(30), waiter).await;
        assert!(matches!(done, Ok(Ok(()))), "{done:?}");
    }

    #[tokio::test]
    async fn counter_drains() {
        let c = Counter::default();
        c.drained().await;
        let g = c.enter();
        let waiter = {
            let c = c.clone();
            tokio::spawn(async move { c.drained().await })
        };
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(g);
        let done = tokio::time::timeout(Duration::from_secs(30), waiter).await;
        assert!(matches!(done, Ok(Ok(()))), "{done:?}");
    }
}
