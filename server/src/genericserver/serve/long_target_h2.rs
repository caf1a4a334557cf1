//! Request-targets longer than hyper reads, over HTTP/2.
//!
//! The h2 crate turns `:path` into an `http::Uri`, which stops at 64 KiB, and resets the
//! stream of a longer one; Go's server (and so kube-apiserver) only bounds the whole header
//! list at 1 MiB, and kubectl sends label selectors longer than 64 KiB over h2.
//! [`Http2Targets`] sits between the TLS stream and hyper on connections that negotiated h2.
//! It follows the client's frames and decodes every header block with the client's HPACK
//! state, passing the bytes on unchanged, until a block carries a `:path` too long for a URI.
//! That block, and every later one on the connection, is re-encoded with literals that never
//! touch hyper's HPACK table (so the two decoders cannot disagree from then on): the long
//! `:path` becomes [`LONG_TARGET_PATH`], and the full target follows as the internal header
//! [`LONG_TARGET_HEADER`], which the connection's service turns into the request's
//! [`LongTarget`]. A client that sends that header itself has it removed (its blocks are
//! re-encoded from then on too), so only the adapter can set it.
//!
//! Where the client breaks the protocol in a way the adapter does not follow (a bad preface, a
//! header block interrupted or over [`MAX_BLOCK`], HPACK the adapter cannot decode, a frame
//! over the advertised size), it stops interpreting and every byte passes unchanged, so hyper
//! answers as it always does; once blocks are being re-encoded, the connection fails instead.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, BufMut, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::MAX_HEADER_BYTES;
use super::hpack::{Decoder, Str, put_integer};
use crate::request_target::{LONG_TARGET_HEADER, LONG_TARGET_PATH, LongTarget};

/// The largest frame payload the server accepts (`SETTINGS_MAX_FRAME_SIZE`, set on hyper's
/// builder from this constant; h2's default).
pub const MAX_FRAME_SIZE: u32 = 16_384;
/// The HPACK table size the server announces (`SETTINGS_HEADER_TABLE_SIZE`: h2's default,
/// which hyper-util's builder leaves as it is): the most the client's encoder may use.
pub const HEADER_TABLE_SIZE: u32 = 4_096;
/// The largest encoded header block the adapter holds back (twice the header list limit).
const MAX_BLOCK: usize = 2 * MAX_HEADER_BYTES;
/// The longest `:path` hyper reads (the `http` crate's URI limit).
const MAX_URI_LEN: usize = (u16::MAX - 1) as usize;
/// How much is read from the stream at a time on the slow path.
const READ_SIZE: usize = 16 * 1024;

const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const FRAME_HEADER: usize = 9;
const HEADERS: u8 = 0x1;
const PUSH_PROMISE: u8 = 0x5;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;

/// The full target the adapter carried for `req` (see the module documentation), taken out
/// of its headers.
#[inline]
pub fn take<B>(req: &mut http::Request<B>) -> Option<LongTarget> {
    if req.uri().path() != LONG_TARGET_PATH {
        return None;
    }
    let value = req.headers_mut().remove(LONG_TARGET_HEADER)?;
    LongTarget::parse(value.as_bytes())
}

/// Where the adapter is in the client's byte stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// In the connection preface, this many bytes of it seen.
    Preface(usize),
    /// At a frame boundary, or inside a frame that is not part of a header block (`skip`
    /// payload bytes left).
    Frames,
    /// Not interpreting: every byte passes as it is.
    Through,
}

/// One complete header block at the start of some bytes.
#[derive(Debug)]
struct Block {
    /// Its length on the wire, all frames included.
    len: usize,
    stream: [u8; 4],
    /// The HEADERS frame's flags.
    flags: u8,
    /// The HEADERS frame's priority fields, when it had them.
    priority: Option<[u8; 5]>,
    /// Where its fragments are.
    fragments: Vec<std::ops::Range<usize>>,
}

/// What the bytes at a header block's start are.
#[derive(Debug)]
enum Scan {
    Partial,
    Invalid,
    Complete(Block),
}

/// Reads the header block (HEADERS and its CONTINUATIONs) at the start of `bytes`.
fn scan_block(bytes: &[u8]) -> Scan {
    let mut at = 0;
    let mut block: Option<Block> = None;
    loop {
        if at > MAX_BLOCK {
            return Scan::Invalid;
        }
        let Some(header) = bytes.get(at..at + FRAME_HEADER) else {
            return Scan::Partial;
        };
        let len =
            usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2]);
        let (kind, flags) = (header[3], header[4]);
        let stream = [header[5] & 0x7f, header[6], header[7], header[8]];
        if len > MAX_FRAME_SIZE as usize {
            return Scan::Invalid;
        }
        let Some(payload) = bytes.get(at + FRAME_HEADER..at + FRAME_HEADER + len) else {
            return Scan::Partial;
        };
        let start = at + FRAME_HEADER;
        match &mut block {
            None => {
                if kind != HEADERS || stream == [0; 4] {
                    return Scan::Invalid;
                }
                let mut from = 0;
                let mut to = len;
                if flags & PADDED != 0 {
                    let Some(&pad) = payload.first() else {
                        return Scan::Invalid;
                    };
                    from = 1;
                    to = match len.checked_sub(usize::from(pad)) {
                        Some(to) => to,
                        None => return Scan::Invalid,
                    };
                }
                let priority = if flags & PRIORITY != 0 {
                    let Some(p) = payload.get(from..from + 5) else {
                        return Scan::Invalid;
                    };
                    from += 5;
                    Some(<[u8; 5]>::try_from(p).expect("five bytes"))
                } else {
                    None
                };
                if from > to {
                    return Scan::Invalid;
                }
                block = Some(Block {
                    len: 0,
                    stream,
                    flags,
                    priority,
                    fragments: std::iter::once(start + from..start + to).collect(),
                });
            }
            Some(b) => {
                if kind != CONTINUATION || stream != b.stream {
                    return Scan::Invalid;
                }
                b.fragments.push(start..start + len);
            }
        }
        at += FRAME_HEADER + len;
        if flags & END_HEADERS != 0 {
            let mut b = block.expect("set for the first frame");
            b.len = at;
            return Scan::Complete(b);
        }
    }
}

/// Appends a header field as a literal without indexing with a literal name, which leaves the
/// receiver's dynamic table as it is.
fn put_literal(out: &mut Vec<u8>, name: &[u8], value: Str<'_>) {
    out.push(0);
    put_integer(out, 0, 7, name.len());
    out.extend_from_slice(name);
    value.put(out);
}

/// Appends `block` as a HEADERS frame on `stream` and as many CONTINUATIONs as it needs.
fn put_frames(
    out: &mut BytesMut,
    block: &[u8],
    stream: [u8; 4],
    flags: u8,
    priority: Option<[u8; 5]>,
) {
    let max = MAX_FRAME_SIZE as usize;
    let first = block.len().min(max - priority.map_or(0, |_| 5));
    let (head, mut rest) = block.split_at(first);
    let put = |out: &mut BytesMut, kind: u8, flags: u8, prefix: &[u8], payload: &[u8]| {
        let len = prefix.len() + payload.len();
        out.put_slice(&(len as u32).to_be_bytes()[1..]);
        out.put_u8(kind);
        out.put_u8(flags);
        out.put_slice(&stream);
        out.put_slice(prefix);
        out.put_slice(payload);
    };
    let end = if rest.is_empty() { END_HEADERS } else { 0 };
    let prefix = priority.as_ref().map_or(&[][..], |p| &p[..]);
    put(
        out,
        HEADERS,
        flags & (END_STREAM | PRIORITY) | end,
        prefix,
        head,
    );
    while !rest.is_empty() {
        let (piece, tail) = rest.split_at(rest.len().min(max));
        rest = tail;
        let end = if rest.is_empty() { END_HEADERS } else { 0 };
        put(out, CONTINUATION, end, &[], piece);
    }
}

/// The h2 byte stream of a connection, with over-long `:path`s handed over (see the module
/// documentation).
pub struct Http2Targets<T> {
    inner: T,
    /// Bytes read and not yet given to hyper (only while a header block is incomplete or
    /// rewritten); the first `ready` of them are final.
    buf: BytesMut,
    ready: usize,
    state: State,
    /// Payload bytes of the current frame (not a header block) still to pass.
    skip: usize,
    /// The client's HPACK state.
    decoder: Decoder,
    /// Whether header blocks are re-encoded (since the first one that had to be).
    reencode: bool,
    /// The re-encoded block being built (kept for its capacity).
    encoded: Vec<u8>,
    scratch: Vec<u8>,
    eof: bool,
}

impl<T> Http2Targets<T> {
    /// Follows the h2 stream `inner` from its first byte.
    pub fn new(inner: T) -> Self {
        let decoder = Decoder::new(HEADER_TABLE_SIZE as usize);
        Self {
            inner,
            buf: BytesMut::new(),
            ready: 0,
            state: State::Preface(0),
            skip: 0,
            decoder,
            reencode: false,
            encoded: Vec::new(),
            scratch: Vec::new(),
            eof: false,
        }
    }

    /// Follows `bytes` (the stream after everything followed so far) without changing them:
    /// how many of them are final, and whether a header block starts right after those.
    fn follow(&mut self, bytes: &[u8]) -> std::io::Result<(usize, bool)> {
        let mut done = 0;
        loop {
            match self.state {
                State::Through => return Ok((bytes.len(), false)),
                State::Preface(seen) => {
                    let n = (PREFACE.len() - seen).min(bytes.len() - done);
                    if bytes[done..done + n] != PREFACE[seen..seen + n] {
                        self.state = State::Through;
                        continue;
                    }
                    done += n;
                    self.state = if seen + n == PREFACE.len() {
                        State::Frames
                    } else {
                        State::Preface(seen + n)
                    };
                    if done == bytes.len() {
                        return Ok((done, false));
                    }
                }
                State::Frames => {
                    if self.skip > 0 {
                        let n = self.skip.min(bytes.len() - done);
                        done += n;
                        self.skip -= n;
                    }
                    let Some(header) = bytes.get(done..done + FRAME_HEADER) else {
                        // Everything followed, or a frame header still incomplete.
                        return Ok((done, false));
                    };
                    match header[3] {
                        HEADERS => return Ok((done, true)),
                        // A header block without its HEADERS, or a push from a client: h2
                        // closes the connection.
                        CONTINUATION | PUSH_PROMISE => self.stop()?,
                        _ => {
                            done += FRAME_HEADER;
                            self.skip = usize::from(header[0]) << 16
                                | usize::from(header[1]) << 8
                                | usize::from(header[2]);
                        }
                    }
                }
            }
        }
    }

    /// Stops interpreting: every byte passes from here on. Once blocks are re-encoded hyper's
    /// HPACK state no longer follows the client's, so the connection fails instead.
    fn stop(&mut self) -> std::io::Result<()> {
        if self.reencode {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "h2 header block the long request-target adapter cannot follow",
            ));
        }
        self.state = State::Through;
        Ok(())
    }

    /// Decodes the complete header block at `ready` in `buf` and passes it on, as it is or
    /// re-encoded.
    fn block(&mut self, block: Block) -> std::io::Result<()> {
        let at = self.ready;
        let joined;
        let fragment: &[u8] = match block.fragments.as_slice() {
            [one] => &self.buf[at + one.start..at + one.end],
            many => {
                joined = many
                    .iter()
                    .flat_map(|r| &self.buf[at + r.start..at + r.end])
                    .copied()
                    .collect::<Vec<u8>>();
                &joined
            }
        };
        let mut long: Option<Vec<u8>> = None;
        let mut internal = false;
        let encoded = &mut self.encoded;
        encoded.clear();
        let (mut name_buf, mut value_buf) = (Vec::new(), Vec::new());
        let mut bad_name = false;
        let decoded = self.decoder.decode(fragment, |name, value| {
            let Ok(name) = name.decode(&mut name_buf) else {
                bad_name = true;
                return;
            };
            if name.eq_ignore_ascii_case(LONG_TARGET_HEADER.as_bytes()) {
                internal = true;
                return;
            }
            if name == b":path"
                && value.bound() > MAX_URI_LEN
                && long.is_none()
                && let Ok(path) = value.decode(&mut value_buf)
                && path.len() > MAX_URI_LEN
                && LongTarget::parse(path).is_some()
            {
                long = Some(path.to_vec());
                put_literal(encoded, name, Str::plain(LONG_TARGET_PATH.as_bytes()));
                return;
            }
            put_literal(encoded, name, value);
        });
        if decoded.is_err() || bad_name {
            // hyper's decoder fails the connection on the same block.
            return self.stop();
        }
        if !self.reencode && long.is_none() && !internal {
            self.ready += block.len;
            return Ok(());
        }
        self.reencode = true;
        if let Some(target) = &long {
            put_literal(
                &mut self.encoded,
                LONG_TARGET_HEADER.as_bytes(),
                Str::plain(target),
            );
        }
        let mut out = BytesMut::with_capacity(self.buf.len() - block.len + self.encoded.len() + 64);
        out.put_slice(&self.buf[..at]);
        put_frames(
            &mut out,
            &self.encoded,
            block.stream,
            block.flags,
            block.priority,
        );
        let written = out.len() - at;
        out.put_slice(&self.buf[at + block.len..]);
        self.buf = out;
        self.ready += written;
        if self.encoded.capacity() > 4 * READ_SIZE {
            self.encoded = Vec::new();
        }
        Ok(())
    }

    /// The slow path: interprets `buf` after `ready` as far as it goes.
    fn advance(&mut self) -> std::io::Result<()> {
        loop {
            let buf = std::mem::take(&mut self.buf);
            let followed = self.follow(&buf[self.ready..]);
            self.buf = buf;
            let (n, block) = followed?;
            self.ready += n;
            if !block {
                return Ok(());
            }
            match scan_block(&self.buf[self.ready..]) {
                Scan::Partial if !self.eof => return Ok(()),
                Scan::Partial | Scan::Invalid => self.stop()?,
                Scan::Complete(b) => self.block(b)?,
            }
        }
    }

    /// Gives hyper up to `ready` bytes of `buf`.
    fn emit(&mut self, out: &mut ReadBuf<'_>) {
        let n = self.ready.min(out.remaining());
        out.put_slice(&self.buf[..n]);
        self.buf.advance(n);
        self.ready -= n;
        if self.buf.is_empty() && self.buf.capacity() > 4 * READ_SIZE {
            self.buf = BytesMut::new();
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Http2Targets<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        if this.buf.is_empty() {
            // The fast path: the bytes go straight into hyper's buffer, and only what is not
            // final yet (a header block, an incomplete frame header) is taken back.
            let before = out.filled().len();
            std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, out))?;
            let new = &out.filled()[before..];
            if new.is_empty() || this.state == State::Through {
                return Poll::Ready(Ok(()));
            }
            let (n, _) = this.follow(new)?;
            if n == new.len() {
                return Poll::Ready(Ok(()));
            }
            this.buf.extend_from_slice(&new[n..]);
            out.set_filled(before + n);
            if n > 0 {
                // What follows is interpreted on the next read.
                return Poll::Ready(Ok(()));
            }
        }
        loop {
            this.advance()?;
            if this.ready > 0 {
                this.emit(out);
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                // What is left (an incomplete frame) goes to hyper as it is.
                this.ready = this.buf.len();
                this.emit(out);
                return Poll::Ready(Ok(()));
            }
            if this.scratch.is_empty() {
                this.scratch = vec![0; READ_SIZE];
            }
            let mut read = ReadBuf::new(&mut this.scratch);
            std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            let n = read.filled().len();
            if n == 0 {
                this.eof = true;
            }
            this.buf.extend_from_slice(&this.scratch[..n]);
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Http2Targets<T> {
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
    use futures::FutureExt;
    use loona_hpack::{Decoder, Encoder};
    use tokio::io::AsyncReadExt;

    use super::*;

    /// A stream that yields `step` bytes per read.
    struct Chunks {
        data: Vec<u8>,
        pos: usize,
        step: usize,
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

    /// What hyper reads from `input` delivered `step` bytes at a time.
    fn run(input: &[u8], step: usize) -> std::io::Result<Vec<u8>> {
        let mut io = Http2Targets::new(Chunks {
            data: input.to_vec(),
            pos: 0,
            step,
        });
        let mut out = Vec::new();
        io.read_to_end(&mut out)
            .now_or_never()
            .expect("the stream never waits")?;
        Ok(out)
    }

    fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        out.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
        out.push(kind);
        out.push(flags);
        out.extend_from_slice(&stream.to_be_bytes());
        out.extend_from_slice(payload);
    }

    /// The preface and an empty SETTINGS frame.
    fn start() -> Vec<u8> {
        let mut out = PREFACE.to_vec();
        frame(&mut out, 0x4, 0, 0, &[]);
        out
    }

    /// Appends `block` as a HEADERS frame (padded and with priority when asked) and
    /// CONTINUATIONs of at most `piece` bytes.
    fn headers(out: &mut Vec<u8>, stream: u32, block: &[u8], piece: usize, padded: bool) {
        let first = block.len().min(piece);
        let mut payload = Vec::new();
        let mut flags = END_STREAM;
        if padded {
            flags |= PADDED | PRIORITY;
            payload.push(3);
            payload.extend_from_slice(&[0, 0, 0, 0, 15]);
        }
        payload.extend_from_slice(&block[..first]);
        if padded {
            payload.extend_from_slice(&[0; 3]);
        }
        let mut rest = &block[first..];
        frame(
            out,
            HEADERS,
            flags | if rest.is_empty() { END_HEADERS } else { 0 },
            stream,
            &payload,
        );
        while !rest.is_empty() {
            let (p, tail) = rest.split_at(rest.len().min(piece));
            rest = tail;
            let end = if rest.is_empty() { END_HEADERS } else { 0 };
            frame(out, CONTINUATION, end, stream, p);
        }
    }

    type Fields = Vec<(Vec<u8>, Vec<u8>)>;

    /// Reads `bytes` as hyper's h2 does: the header lists with its own HPACK state, and the
    /// other frames as (type, payload).
    fn read_as_hyper(bytes: &[u8]) -> (Vec<Fields>, Vec<(u8, Vec<u8>)>) {
        assert!(bytes.starts_with(PREFACE));
        let mut decoder = Decoder::new();
        let (mut lists, mut others) = (Vec::new(), Vec::new());
        let mut at = PREFACE.len();
        let mut block = Vec::new();
        while at < bytes.len() {
            let h = &bytes[at..at + FRAME_HEADER];
            let len = usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
            assert!(len <= MAX_FRAME_SIZE as usize, "frame of {len} bytes");
            let payload = &bytes[at + FRAME_HEADER..at + FRAME_HEADER + len];
            at += FRAME_HEADER + len;
            match h[3] {
                HEADERS => {
                    let mut from = 0;
                    let mut to = len;
                    if h[4] & PADDED != 0 {
                        from = 1;
                        to -= usize::from(payload[0]);
                    }
                    if h[4] & PRIORITY != 0 {
                        from += 5;
                    }
                    block.extend_from_slice(&payload[from..to]);
                }
                CONTINUATION => block.extend_from_slice(payload),
                kind => {
                    others.push((kind, payload.to_vec()));
                    continue;
                }
            }
            if h[4] & END_HEADERS != 0 {
                lists.push(decoder.decode(&block).expect("hyper decodes the block"));
                block.clear();
            }
        }
        (lists, others)
    }

    fn fields(list: &[(&str, &str)]) -> Fields {
        list.iter()
            .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect()
    }

    fn request(path: &str) -> Vec<(String, String)> {
        [
            (":method", "GET"),
            (":scheme", "https"),
            (":authority", "127.0.0.1:6443"),
            (":path", path),
            ("user-agent", "kubectl/v1.32.0"),
            ("accept", "application/json"),
        ]
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
    }

    fn encode(encoder: &mut Encoder<'_>, list: &[(String, String)]) -> Vec<u8> {
        encoder.encode(list.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())))
    }

    fn long_path(len: usize) -> String {
        let mut p = String::from("/api/v1/configmaps?labelSelector=app+in+%28");
        let mut i = 0;
        while p.len() < len {
            p.push_str(&format!("v{i:06}%2C"));
            i += 1;
        }
        p.push_str("x%29");
        p
    }

    #[test]
    fn short_paths_pass_byte_for_byte() {
        let mut encoder = Encoder::new();
        let mut input = start();
        for (i, path) in ["/api", "/api/v1/namespaces", &long_path(60_000), "/api"]
            .into_iter()
            .enumerate()
        {
            let stream = 2 * i as u32 + 1;
            headers(
                &mut input,
                stream,
                &encode(&mut encoder, &request(path)),
                16_384,
                i == 1,
            );
            frame(&mut input, 0x0, END_STREAM, stream, b"{}");
        }
        frame(&mut input, 0x8, 0, 0, &[0, 0, 1, 0]);
        for step in [1, 9, 1000, 16_384, 1 << 20] {
            assert!(run(&input, step).expect("read") == input, "step {step}");
        }
    }

    #[test]
    fn a_long_path_is_handed_over_and_later_blocks_follow_the_clients_table() {
        let long = long_path(112_000);
        let mut encoder = Encoder::new();
        let mut input = start();
        // The client's table holds entries from the first request, which later ones index.
        headers(
            &mut input,
            1,
            &encode(&mut encoder, &request("/api")),
            16_384,
            false,
        );
        headers(
            &mut input,
            3,
            &encode(&mut encoder, &request(&long)),
            4_000,
            true,
        );
        frame(&mut input, 0x0, END_STREAM, 3, b"body");
        let mut next = request("/api/v1/namespaces");
        next.push(("authorization".into(), "Bearer abc".into()));
        headers(&mut input, 5, &encode(&mut encoder, &next), 16_384, false);
        headers(
            &mut input,
            7,
            &encode(&mut encoder, &request("/api")),
            16_384,
            false,
        );
        for step in [1, 10, 4_096, 1 << 20] {
            let out = run(&input, step).expect("read");
            let (lists, others) = read_as_hyper(&out);
            let mut handed = fields(&[
                (":method", "GET"),
                (":scheme", "https"),
                (":authority", "127.0.0.1:6443"),
                (":path", LONG_TARGET_PATH),
                ("user-agent", "kubectl/v1.32.0"),
                ("accept", "application/json"),
            ]);
            handed.push((LONG_TARGET_HEADER.into(), long.clone().into_bytes()));
            let as_sent = |r: &[(String, String)]| {
                r.iter()
                    .map(|(n, v)| (n.clone().into_bytes(), v.clone().into_bytes()))
                    .collect::<Fields>()
            };
            assert_eq!(lists.len(), 4, "step {step}");
            assert_eq!(lists[0], as_sent(&request("/api")));
            assert!(lists[1] == handed, "step {step}");
            assert_eq!(lists[2], as_sent(&next));
            assert_eq!(lists[3], as_sent(&request("/api")));
            assert_eq!(others, vec![(0x4, vec![]), (0x0, b"body".to_vec())]);
        }
    }

    #[test]
    fn huffman_coded_blocks_are_followed() {
        // RFC 7541 C.4: three requests with Huffman coding and indexing.
        let blocks = [
            "828684418cf1e3c2e5f23a6ba0ab90f4ff",
            "828684be5886a8eb10649cbf",
            "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf",
        ];
        let expected = [
            fields(&[
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":authority", "www.example.com"),
            ]),
            fields(&[
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":authority", "www.example.com"),
                ("cache-control", "no-cache"),
            ]),
            fields(&[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/index.html"),
                (":authority", "www.example.com"),
                ("custom-key", "custom-value"),
            ]),
        ];
        let hex = |s: &str| {
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
                .collect::<Vec<u8>>()
        };
        // Passed as they are, then with a long path between the first and the others.
        let mut plain = start();
        let mut switched = start();
        let long = long_path(70_000);
        let mut literal = Vec::new();
        put_literal(&mut literal, b":path", Str::plain(long.as_bytes()));
        for (i, b) in blocks.iter().enumerate() {
            headers(&mut plain, 2 * i as u32 + 1, &hex(b), 16_384, false);
            headers(&mut switched, 4 * i as u32 + 1, &hex(b), 16_384, false);
            if i == 0 {
                headers(&mut switched, 3, &literal, 16_384, false);
            }
        }
        let out = run(&plain, 7).expect("read");
        assert!(out == plain);
        let (lists, _) = read_as_hyper(&run(&switched, 7).expect("read"));
        assert_eq!(lists.len(), 4);
        assert_eq!(lists[0], expected[0]);
        assert_eq!(
            lists[1],
            vec![
                (b":path".to_vec(), LONG_TARGET_PATH.as_bytes().to_vec()),
                (LONG_TARGET_HEADER.as_bytes().to_vec(), long.into_bytes()),
            ]
        );
        assert_eq!(lists[2], expected[1]);
        assert_eq!(lists[3], expected[2]);
    }

    #[test]
    fn a_client_cannot_send_the_internal_header() {
        let mut encoder = Encoder::new();
        let mut input = start();
        let mut forged = request(LONG_TARGET_PATH);
        forged.push((LONG_TARGET_HEADER.into(), "/api/v1/secrets".into()));
        headers(&mut input, 1, &encode(&mut encoder, &forged), 16_384, false);
        let (lists, _) = read_as_hyper(&run(&input, 1 << 20).expect("read"));
        let names: Vec<&[u8]> = lists[0].iter().map(|(n, _)| n.as_slice()).collect();
        assert!(!names.contains(&LONG_TARGET_HEADER.as_bytes()));
        assert_eq!(names.len(), 6);
    }

    #[test]
    fn what_the_adapter_does_not_follow_passes_as_sent() {
        let mut literal = Vec::new();
        put_literal(
            &mut literal,
            b":path",
            Str::plain(long_path(70_000).as_bytes()),
        );
        // Not the h2 preface.
        let mut bad_preface = b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n".to_vec();
        headers(&mut bad_preface, 1, &literal, 16_384, false);
        // A header block interrupted by another frame.
        let mut interrupted = start();
        headers(&mut interrupted, 1, &literal, 16_384, false);
        let cut = interrupted.len() - 16_384 - FRAME_HEADER;
        let mut tail = interrupted.split_off(cut);
        frame(&mut interrupted, 0x6, 0, 0, &[0; 8]);
        interrupted.append(&mut tail);
        // HPACK that does not decode (an index past both tables).
        let mut undecodable = start();
        headers(&mut undecodable, 1, &[0xff, 0x7f], 16_384, false);
        headers(&mut undecodable, 3, &literal, 16_384, false);
        // A frame larger than announced.
        let mut oversized = start();
        headers(&mut oversized, 1, &literal, 20_000, false);
        // A header block cut off by the end of the stream.
        let mut cut_off = start();
        headers(&mut cut_off, 1, &literal, 16_384, false);
        cut_off.truncate(cut_off.len() - 10);
        for (name, input) in [
            ("bad preface", bad_preface),
            ("interrupted", interrupted),
            ("undecodable", undecodable),
            ("oversized", oversized),
            ("cut off", cut_off),
        ] {
            for step in [3, 1 << 20] {
                assert!(
                    run(&input, step).expect(name) == input,
                    "{name}, step {step}"
                );
            }
        }
    }

    #[test]
    fn once_re_encoding_what_cannot_be_followed_fails_the_connection() {
        let mut literal = Vec::new();
        put_literal(
            &mut literal,
            b":path",
            Str::plain(long_path(70_000).as_bytes()),
        );
        let mut input = start();
        headers(&mut input, 1, &literal, 16_384, false);
        headers(&mut input, 3, &[0xff, 0x7f], 16_384, false);
        let err = run(&input, 1 << 20).expect_err("the connection fails");
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    }
}
