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

use bytes::{BufMut, BytesMut};
use tokio::io::{AsyncRead, ReadBuf};

use super::MAX_HEADER_BYTES;
use super::hpack::{Decoder, Str, put_integer};
use super::long_target::{emit, read_more};
use crate::request_target::{LONG_TARGET_HEADER, LONG_TARGET_PATH, LongTarget};

/// The largest frame payload the server accepts (`SETTINGS_MAX_FRAME_SIZE`, set on hyper's
/// builder from this constant; h2's default).
pub const MAX_FRAME_SIZE: u32 = 16_384;
/// The HPACK table size the server announces (`SETTINGS_HEADER_TABLE_SIZE`: h2's default,
/// which hyper-util's builder leaves as it is): the most the client's encoder may use.
pub const HEADER_TABLE_SIZE: u32 = 4_096;
/// The largest encoded header block the adapter holds back: as many full frames as h2 accepts
/// in one block (HEADERS and the CONTINUATIONs its flood guard allows: the header list limit
/// over the frame size, plus a quarter), so a longer block fails in hyper as it would without
/// the adapter, and a connection holds at most about this much.
const MAX_BLOCK: usize = {
    let frames = MAX_HEADER_BYTES / MAX_FRAME_SIZE as usize;
    (frames + frames / 4 + 1) * (FRAME_HEADER + MAX_FRAME_SIZE as usize)
};
/// The longest `:path` hyper reads (the `http` crate's URI limit).
const MAX_URI_LEN: usize = (u16::MAX - 1) as usize;
/// Above this, the buffer a re-encoded block was built in is let go.
const KEEP_ENCODED: usize = 64 * 1024;

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
    /// The stream underneath, which writes go to unchanged.
    pub fn inner_mut(&mut self) -> &mut T {
        &mut self.inner
    }

    /// The stream underneath.
    pub fn inner(&self) -> &T {
        &self.inner
    }

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
        // The decoded header list, sized as HTTP/2 sizes it (name, value and 32 bytes a
        // field). A short block can name a large table entry thousands of times (a 64 KB block
        // expanded to 560 MB when every field was copied), so past twice hyper's limit nothing
        // more is copied and the block is left to hyper, which refuses it. Twice: a Huffman
        // string's bound is at most 8/5 of its decoded length, so no block hyper accepts is
        // counted as too long.
        let mut list_size = 0usize;
        let mut too_long = false;
        let decoded = self.decoder.decode(fragment, |name, value| {
            list_size = list_size.saturating_add(name.bound() + value.bound() + 32);
            if list_size > 2 * MAX_HEADER_BYTES {
                too_long = true;
            }
            if too_long {
                return;
            }
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
        if too_long {
            // hyper refuses the block as it would without the adapter (whose re-encoded
            // blocks it could no longer follow: that connection fails instead).
            self.encoded = Vec::new();
            if self.reencode {
                return self.stop();
            }
            self.ready += block.len;
            return Ok(());
        }
        if !self.reencode && long.is_none() && !internal {
            self.ready += block.len;
            if self.encoded.capacity() > KEEP_ENCODED {
                self.encoded = Vec::new();
            }
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
        if self.encoded.capacity() > KEEP_ENCODED {
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
        emit(&mut self.buf, &mut self.ready, out);
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
mod tests;
