//! Request-targets longer than hyper reads, over HTTP/1.1.
//!
//! hyper's HTTP/1.1 parser and the `http` crate's URIs stop at 64 KiB; Go's server (and so
//! kube-apiserver) only bounds the whole request head at 1 MiB, and clients send label selectors
//! longer than 64 KiB. [`Http1Targets`] sits between the TLS stream and hyper on connections
//! that did not negotiate h2: it follows the byte stream request by request, and when a
//! request-target is too long for a URI it gives hyper the request with the short target
//! [`LONG_TARGET_PATH`] instead, and keeps the full target in the connection's [`Handoff`],
//! which the connection's service takes in request order and attaches to the request as its
//! [`LongTarget`] (hyper serves an HTTP/1.1 connection's requests one after another).
//!
//! Boundaries must be exactly hyper's, or a body could be read as a request (request smuggling),
//! so the adapter parses each head with `httparse` (as hyper does, with hyper's defaults),
//! follows `Content-Length` bodies and chunked bodies (with trailers) byte for byte as hyper's
//! decoder does, and stops interpreting for the rest of the connection (every byte passes
//! unchanged, and hyper answers as it always does) at anything it does not follow exactly: an
//! upgrade or `CONNECT`, a `Transfer-Encoding` other than one `chunked`, more than one
//! `Content-Length` or one with both, a length that is not digits, a head that does not parse,
//! is over the head limit or has more headers than hyper reads, a long target that is not a
//! valid URI path and query, or a chunked body hyper would refuse. No internal header is added
//! and none can be sent: the target travels outside the request, tied to its place in the
//! connection.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};

use bytes::{Buf, BytesMut};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, ReadBuf};

use super::MAX_HEADER_BYTES;
use crate::request_target::{LONG_TARGET_PATH, LongTarget};

/// The longest request-target hyper reads (`MAX_URI_LEN` in hyper's `role.rs`, the `http`
/// crate's `MAX_LEN`); longer ones are handed over.
const MAX_URI_LEN: usize = (u16::MAX - 1) as usize;
/// The most headers hyper reads (`DEFAULT_MAX_HEADERS`); a head with more is passed to hyper,
/// which refuses it.
const MAX_HEADERS: usize = 100;
/// The largest head the adapter holds back: hyper's read buffer (`max_buf_size`); a longer one
/// passes to hyper, which answers 431 as before.
const MAX_HEAD: usize = MAX_HEADER_BYTES + 4096;
/// How much is read from the stream at a time.
const READ_SIZE: usize = 16 * 1024;

/// The full targets of a connection's requests, from the adapter to the connection's service.
///
/// At most one target waits at a time: the adapter holds back the next long request until the
/// service has taken the previous one, so a client cannot queue targets without bound.
#[derive(Debug, Default)]
pub struct Handoff {
    /// Whether a target waits (read without the lock on every request).
    waiting: AtomicBool,
    /// How many requests the service has been given.
    served: AtomicU64,
    slot: Mutex<Slot>,
}

#[derive(Debug, Default)]
struct Slot {
    /// The waiting target and the index of its request on the connection.
    target: Option<(u64, LongTarget)>,
    /// The adapter, when it waits for the slot to empty.
    waker: Option<Waker>,
}

impl Handoff {
    /// Called by the service once per request, in order: the full target of this request when
    /// the adapter handed it over.
    #[inline]
    pub fn next_request(&self) -> Option<LongTarget> {
        let index = self.served.fetch_add(1, Ordering::AcqRel);
        if !self.waiting.load(Ordering::Acquire) {
            return None;
        }
        self.take(index)
    }

    #[cold]
    fn take(&self, index: u64) -> Option<LongTarget> {
        let mut slot = self.slot.lock();
        match &slot.target {
            Some((i, _)) if *i == index => {}
            _ => return None,
        }
        let (_, target) = slot.target.take()?;
        self.waiting.store(false, Ordering::Release);
        if let Some(w) = slot.waker.take() {
            w.wake();
        }
        Some(target)
    }

    /// Leaves `target` for request `index`; `false` (and the waker kept) while the slot is
    /// taken.
    fn offer(&self, index: u64, target: &mut Option<LongTarget>, cx: &Context<'_>) -> bool {
        let mut slot = self.slot.lock();
        if slot.target.is_some() {
            slot.waker = Some(cx.waker().clone());
            return false;
        }
        slot.target = target.take().map(|t| (index, t));
        self.waiting.store(true, Ordering::Release);
        true
    }
}

/// Where the adapter is in the byte stream.
#[derive(Debug)]
enum State {
    /// At the start of a request head.
    Head,
    /// In a `Content-Length` body: how many bytes are left.
    Length(u64),
    /// In a chunked body.
    Chunked(Chunked),
    /// Not interpreting: every byte passes as it is.
    Through,
}

/// The decoder states of hyper's chunked decoder (`proto/h1/decode.rs`), byte for byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    Start,
    Size,
    SizeLws,
    Extension,
    SizeLf,
    Body,
    BodyCr,
    BodyLf,
    Trailer,
    TrailerLf,
    EndCr,
    EndLf,
}

#[derive(Debug)]
struct Chunked {
    state: Chunk,
    size: u64,
}

impl Chunked {
    /// Follows `bytes`: how many belong to the body, and whether the body ends there;
    /// `Err` where hyper's decoder fails.
    fn scan(&mut self, bytes: &[u8]) -> Result<(usize, bool), ()> {
        let mut i = 0;
        while i < bytes.len() {
            if self.state == Chunk::Body {
                let take = usize::try_from(self.size)
                    .unwrap_or(usize::MAX)
                    .min(bytes.len() - i);
                i += take;
                self.size -= take as u64;
                if self.size == 0 {
                    self.state = Chunk::BodyCr;
                }
                continue;
            }
            let b = bytes[i];
            i += 1;
            self.state = match (self.state, b) {
                (Chunk::Start, _) => {
                    self.size = u64::from(hex(b).ok_or(())?);
                    Chunk::Size
                }
                (Chunk::Size, b'\t' | b' ') => Chunk::SizeLws,
                (Chunk::Size, b';') | (Chunk::SizeLws, b';') => Chunk::Extension,
                (Chunk::Size, b'\r') | (Chunk::SizeLws, b'\r') | (Chunk::Extension, b'\r') => {
                    Chunk::SizeLf
                }
                (Chunk::Size, _) => {
                    let digit = hex(b).ok_or(())?;
                    self.size = self
                        .size
                        .checked_mul(16)
                        .and_then(|s| s.checked_add(u64::from(digit)))
                        .ok_or(())?;
                    Chunk::Size
                }
                (Chunk::SizeLws, b'\t' | b' ') => Chunk::SizeLws,
                (Chunk::SizeLws, _) | (Chunk::Extension, b'\n') => return Err(()),
                (Chunk::Extension, _) => Chunk::Extension,
                (Chunk::SizeLf, b'\n') if self.size == 0 => Chunk::EndCr,
                (Chunk::SizeLf, b'\n') => Chunk::Body,
                (Chunk::BodyCr, b'\r') => Chunk::BodyLf,
                (Chunk::BodyLf, b'\n') => Chunk::Start,
                (Chunk::EndCr, b'\r') => Chunk::EndLf,
                (Chunk::EndCr, _) => Chunk::Trailer,
                (Chunk::Trailer, b'\r') => Chunk::TrailerLf,
                (Chunk::Trailer, _) => Chunk::Trailer,
                (Chunk::TrailerLf, b'\n') => Chunk::EndCr,
                (Chunk::EndLf, b'\n') => return Ok((i, true)),
                (Chunk::SizeLf | Chunk::BodyCr | Chunk::BodyLf | Chunk::TrailerLf, _)
                | (Chunk::EndLf, _) => return Err(()),
                (Chunk::Body, _) => unreachable!("chunk data is taken above"),
            };
        }
        Ok((i, false))
    }
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// What the bytes at a request's start are.
enum Head {
    /// Not a complete head yet.
    Partial,
    /// Stop interpreting.
    Through,
    /// A head of `len` bytes followed by a body framed as `next`.
    Request {
        len: usize,
        next: State,
        /// The target to hand over, and where it is in the head.
        long: Option<(LongTarget, std::ops::Range<usize>)>,
    },
}

/// Parses the head at the start of `bytes` as hyper does and reads its framing.
fn parse_head(bytes: &[u8], eof: bool) -> Head {
    let mut headers = [std::mem::MaybeUninit::uninit(); MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let len = match req.parse_with_uninit_headers(bytes, &mut headers) {
        Ok(httparse::Status::Complete(len)) if len <= MAX_HEAD => len,
        Ok(httparse::Status::Partial) if bytes.len() < MAX_HEAD && !eof => return Head::Partial,
        _ => return Head::Through,
    };
    let (Some(method), Some(target), Some(version)) = (req.method, req.path, req.version) else {
        return Head::Through;
    };
    if method == "CONNECT" {
        return Head::Through;
    }
    let mut length: Option<u64> = None;
    let mut chunked = false;
    for h in req.headers.iter() {
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"content-length") {
            if length.is_some() || h.value.is_empty() {
                return Head::Through;
            }
            let mut n: u64 = 0;
            for &d in h.value {
                if !d.is_ascii_digit() {
                    return Head::Through;
                }
                n = match n
                    .checked_mul(10)
                    .and_then(|n| n.checked_add(u64::from(d - b'0')))
                {
                    Some(n) => n,
                    None => return Head::Through,
                };
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            if chunked || version != 1 || !h.value.trim_ascii().eq_ignore_ascii_case(b"chunked") {
                return Head::Through;
            }
            chunked = true;
        } else if name.eq_ignore_ascii_case(b"upgrade") {
            return Head::Through;
        }
    }
    let next = match (length, chunked) {
        (Some(_), true) => return Head::Through,
        (None, true) => State::Chunked(Chunked {
            state: Chunk::Start,
            size: 0,
        }),
        (Some(0) | None, false) => State::Head,
        (Some(n), false) => State::Length(n),
    };
    if target.len() <= MAX_URI_LEN {
        return Head::Request {
            len,
            next,
            long: None,
        };
    }
    let Some(long) = LongTarget::parse(target.as_bytes()) else {
        return Head::Through;
    };
    let start = target.as_ptr() as usize - bytes.as_ptr() as usize;
    Head::Request {
        len,
        next,
        long: Some((long, start..start + target.len())),
    }
}

/// Whether the end of a head (an empty line) may be in `bytes` after the first `seen`, which
/// did not hold it (hyper's `is_complete_fast`).
fn may_end_head(bytes: &[u8], seen: usize) -> bool {
    let from = seen.saturating_sub(3);
    bytes[from..].windows(2).any(|w| w == b"\n\n")
        || bytes[from..].windows(3).any(|w| w == b"\n\r\n")
}

/// A head to rewrite: its length, where its target is, the target and the body after it.
type Rewrite = (usize, std::ops::Range<usize>, LongTarget, State);

/// The HTTP/1.1 byte stream of a connection, with over-long request-targets handed over (see
/// the module documentation).
pub struct Http1Targets<T> {
    inner: T,
    handoff: Arc<Handoff>,
    /// Bytes read and not yet given to hyper (only while a head is incomplete or rewritten);
    /// the first `ready` of them are final.
    buf: BytesMut,
    ready: usize,
    state: State,
    /// The index of the next request head on the connection.
    heads: u64,
    /// A rewritten head (at `ready` in `buf`) that hyper gets once its target is in the
    /// handoff's slot: its index, its target and its length.
    held: Option<(u64, LongTarget, usize)>,
    /// How many bytes after `ready` are known to be an incomplete head.
    partial: usize,
    /// Where the slow path reads.
    scratch: Vec<u8>,
    eof: bool,
}

impl<T> Http1Targets<T> {
    /// The stream underneath, which writes go to unchanged.
    pub fn inner_mut(&mut self) -> &mut T {
        &mut self.inner
    }

    /// The stream underneath.
    pub fn inner(&self) -> &T {
        &self.inner
    }

    /// Follows the HTTP/1.1 stream `inner`, handing over targets through `handoff`.
    pub fn new(inner: T, handoff: Arc<Handoff>) -> Self {
        Self {
            inner,
            handoff,
            buf: BytesMut::new(),
            ready: 0,
            state: State::Head,
            heads: 0,
            held: None,
            partial: 0,
            scratch: Vec::new(),
            eof: false,
        }
    }

    /// Follows `bytes` (the stream after everything followed so far) without changing them:
    /// how many of them are final, and the head right after those when it must be rewritten.
    fn follow(&mut self, bytes: &[u8]) -> (usize, Option<Rewrite>) {
        let mut done = 0;
        while done < bytes.len() {
            let rest = &bytes[done..];
            match &mut self.state {
                State::Through => return (bytes.len(), None),
                State::Length(left) => {
                    let take = usize::try_from(*left).unwrap_or(usize::MAX).min(rest.len());
                    done += take;
                    *left -= take as u64;
                    if *left == 0 {
                        self.state = State::Head;
                    }
                }
                State::Chunked(c) => match c.scan(rest) {
                    Ok((n, end)) => {
                        done += n;
                        if end {
                            self.state = State::Head;
                        }
                    }
                    Err(()) => self.state = State::Through,
                },
                State::Head => match parse_head(rest, self.eof) {
                    Head::Partial => break,
                    Head::Through => self.state = State::Through,
                    Head::Request {
                        len,
                        next,
                        long: None,
                    } => {
                        done += len;
                        self.heads += 1;
                        self.state = next;
                    }
                    Head::Request {
                        len,
                        next,
                        long: Some((long, at)),
                    } => return (done, Some((len, at, long, next))),
                },
            }
        }
        (done, None)
    }

    /// Rewrites the head at `ready` in `buf` with the short target, and holds it.
    fn rewrite(&mut self, (len, at, long, next): Rewrite) {
        let head = self.ready;
        let mut buf = BytesMut::with_capacity(self.buf.len() - at.len() + LONG_TARGET_PATH.len());
        buf.extend_from_slice(&self.buf[..head + at.start]);
        buf.extend_from_slice(LONG_TARGET_PATH.as_bytes());
        buf.extend_from_slice(&self.buf[head + at.end..]);
        self.buf = buf;
        self.held = Some((self.heads, long, len - at.len() + LONG_TARGET_PATH.len()));
        self.heads += 1;
        self.state = next;
    }

    /// The slow path: interprets `buf` after `ready` as far as it goes; `Pending` while a
    /// rewritten head waits for the handoff's slot.
    fn advance(&mut self, cx: &Context<'_>) -> Poll<()> {
        loop {
            if let Some((index, target, len)) = self.held.take() {
                let mut offered = Some(target);
                if !self.handoff.offer(index, &mut offered, cx) {
                    self.held = offered.map(|t| (index, t, len));
                    return Poll::Pending;
                }
                self.ready += len;
            }
            let rest = &self.buf[self.ready..];
            if self.partial > 0
                && !self.eof
                && rest.len() < MAX_HEAD
                && !may_end_head(rest, self.partial)
            {
                // Not parsed again until its end may have arrived (as hyper does), so a head
                // sent a byte at a time costs linear time.
                self.partial = rest.len();
                return Poll::Ready(());
            }
            let buf = std::mem::take(&mut self.buf);
            let (n, rewrite) = self.follow(&buf[self.ready..]);
            self.buf = buf;
            self.ready += n;
            self.partial = if rewrite.is_none() {
                self.buf.len() - self.ready
            } else {
                0
            };
            match rewrite {
                Some(r) => self.rewrite(r),
                None => return Poll::Ready(()),
            }
        }
    }

    /// Gives hyper up to `ready` bytes of `buf`.
    fn emit(&mut self, out: &mut ReadBuf<'_>) {
        emit(&mut self.buf, &mut self.ready, out);
    }
}

/// Gives hyper up to `ready` bytes of `buf` (both adapters' held bytes).
pub(super) fn emit(buf: &mut BytesMut, ready: &mut usize, out: &mut ReadBuf<'_>) {
    let n = (*ready).min(out.remaining());
    out.put_slice(&buf[..n]);
    buf.advance(n);
    *ready -= n;
    if buf.is_empty() && buf.capacity() > 4 * READ_SIZE {
        *buf = BytesMut::new();
    }
}

/// Reads more of `inner` onto the end of `buf` through `scratch` (both adapters' slow path);
/// `eof` once the stream has ended.
pub(super) fn read_more<T: AsyncRead + Unpin>(
    inner: &mut T,
    cx: &mut Context<'_>,
    scratch: &mut Vec<u8>,
    buf: &mut BytesMut,
    eof: &mut bool,
) -> Poll<std::io::Result<()>> {
    if scratch.is_empty() {
        *scratch = vec![0; READ_SIZE];
    }
    let mut read = ReadBuf::new(scratch);
    std::task::ready!(Pin::new(inner).poll_read(cx, &mut read))?;
    let n = read.filled().len();
    if n == 0 {
        *eof = true;
    }
    buf.extend_from_slice(&scratch[..n]);
    Poll::Ready(Ok(()))
}

impl<T: AsyncRead + Unpin> AsyncRead for Http1Targets<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        if this.buf.is_empty() && this.held.is_none() {
            // The fast path: the bytes go straight into hyper's buffer, and only what is not
            // final yet (an incomplete head, a head to rewrite) is taken back.
            let before = out.filled().len();
            std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, out))?;
            let new = &out.filled()[before..];
            if new.is_empty() || matches!(this.state, State::Through) {
                return Poll::Ready(Ok(()));
            }
            let (n, rewrite) = this.follow(new);
            if n == new.len() {
                return Poll::Ready(Ok(()));
            }
            this.buf.extend_from_slice(&new[n..]);
            this.partial = if rewrite.is_none() { new.len() - n } else { 0 };
            out.set_filled(before + n);
            if let Some(r) = rewrite {
                this.rewrite(r);
            }
            if n > 0 {
                return Poll::Ready(Ok(()));
            }
        }
        loop {
            let waiting = this.advance(cx).is_pending();
            if this.ready > 0 {
                this.emit(out);
                return Poll::Ready(Ok(()));
            }
            if waiting {
                return Poll::Pending;
            }
            if this.eof {
                // What is left (a partial head) goes to hyper as it is.
                this.ready = this.buf.len();
                this.emit(out);
                return Poll::Ready(Ok(()));
            }
            // More bytes are needed for the head at the start of `buf`.
            std::task::ready!(read_more(
                &mut this.inner,
                cx,
                &mut this.scratch,
                &mut this.buf,
                &mut this.eof
            ))?;
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use futures::FutureExt;
    use tokio::io::AsyncReadExt;

    use super::*;

    /// A stream that yields `step` bytes per read (the h2 adapter's tests read through it too).
    pub(in crate::genericserver::serve) struct Chunks {
        pub(in crate::genericserver::serve) data: Vec<u8>,
        pub(in crate::genericserver::serve) pos: usize,
        pub(in crate::genericserver::serve) step: usize,
    }

    impl AsyncRead for Chunks {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            let n = self
                .step
                .min(buf.remaining())
                .min(self.data.len() - self.pos);
            let pos = self.pos;
            buf.put_slice(&self.data[pos..pos + n]);
            self.pos += n;
            Poll::Ready(Ok(()))
        }
    }

    /// Empties the handoff's slot as the service would.
    fn drain(handoff: &Handoff, taken: &mut Vec<(u64, String)>) {
        let mut slot = handoff.slot.lock();
        if let Some((i, t)) = slot.target.take() {
            taken.push((i, t.as_str().to_string()));
            handoff.waiting.store(false, Ordering::Release);
        }
        if let Some(w) = slot.waker.take() {
            w.wake();
        }
    }

    /// What hyper reads from `input` delivered `step` bytes at a time, and the targets handed
    /// over with their request indices.
    fn run(input: &[u8], step: usize) -> (Vec<u8>, Vec<(u64, String)>) {
        let handoff = Arc::new(Handoff::default());
        let inner = Chunks {
            data: input.to_vec(),
            pos: 0,
            step,
        };
        let mut io = Http1Targets::new(inner, Arc::clone(&handoff));
        let (mut out, mut taken) = (Vec::new(), Vec::new());
        let mut buf = vec![0u8; 8192];
        loop {
            match io.read(&mut buf).now_or_never() {
                Some(Ok(0)) => break,
                Some(Ok(n)) => out.extend_from_slice(&buf[..n]),
                Some(Err(e)) => panic!("{e}"),
                None => drain(&handoff, &mut taken),
            }
        }
        drain(&handoff, &mut taken);
        (out, taken)
    }

    fn long_target(n: usize) -> String {
        format!(
            "/api/v1/configmaps?labelSelector=app+in+%28{}%29",
            "v".repeat(n)
        )
    }

    const SIZED: &str = "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello";
    const CHUNKED: &str = "POST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\
        3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\nX-Trailer: t\r\n\r\n";

    #[test]
    fn ordinary_requests_pass_unchanged() {
        let input = format!("{SIZED}{CHUNKED}GET /c HTTP/1.1\r\n\r\n\r\n{CHUNKED}{SIZED}");
        for step in [1, 2, 7, 100, 1 << 20] {
            let (out, taken) = run(input.as_bytes(), step);
            assert_eq!(String::from_utf8_lossy(&out), input, "step {step}");
            assert!(taken.is_empty());
        }
    }

    #[test]
    fn long_targets_are_handed_over_in_place() {
        let long = long_target(100_000);
        let second = long_target(70_000);
        let get = |t: &str| format!("GET {t} HTTP/1.1\r\nHost: x\r\n\r\n");
        let input = format!(
            "{SIZED}{}{CHUNKED}{}{}{SIZED}",
            get(&long),
            get(&second),
            get("/short")
        );
        let want = format!(
            "{SIZED}{}{CHUNKED}{}{}{SIZED}",
            get(LONG_TARGET_PATH),
            get(LONG_TARGET_PATH),
            get("/short")
        );
        for step in [1, 13, 16 * 1024, 1 << 20] {
            let (out, taken) = run(input.as_bytes(), step);
            assert_eq!(String::from_utf8_lossy(&out), want, "step {step}");
            assert_eq!(
                taken,
                [(1, long.clone()), (3, second.clone())],
                "step {step}"
            );
        }
    }

    #[test]
    fn framing_not_followed_exactly_stops_the_rewriting() {
        let long = format!("GET {} HTTP/1.1\r\n\r\n", long_target(70_000));
        for first in [
            "GET / HTTP/1.1\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: +3\r\n\r\nabc",
            "GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
            "CONNECT x:443 HTTP/1.1\r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3 x\r\nabc\r\n0\r\n\r\n",
            "GET / HTTP/1.1\r\nBad Header\r\n\r\n",
            "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        ] {
            let input = format!("{first}{long}");
            let (out, taken) = run(input.as_bytes(), 4096);
            assert_eq!(String::from_utf8_lossy(&out), input, "{first:?}");
            assert!(taken.is_empty(), "{first:?}");
        }
    }

    #[test]
    fn heads_over_the_limit_and_partial_heads_pass_as_sent() {
        let over = format!("GET {} HTTP/1.1\r\n\r\n", long_target(MAX_HEAD));
        let partial = format!("GET {}", long_target(70_000));
        for input in [over, partial] {
            let (out, taken) = run(input.as_bytes(), 16 * 1024);
            assert!(out == input.as_bytes(), "{:.40}", input);
            assert!(taken.is_empty());
        }
    }
}
