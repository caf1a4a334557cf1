//! Tests of the h2 long request-target adapter, against an independent HPACK codec
//! (`loona-hpack`) that stands for hyper's.

use futures::FutureExt;
use loona_hpack::{Decoder, Encoder};
use tokio::io::AsyncReadExt;

use super::*;
use crate::genericserver::serve::long_target::tests::Chunks;

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
    // A block longer than h2 accepts in one (with a long path it would otherwise rewrite).
    let mut huge = literal.clone();
    put_literal(
        &mut huge,
        b"x-huge",
        Str::plain(&vec![b'a'; 3 * MAX_HEADER_BYTES / 2]),
    );
    let mut over = start();
    headers(&mut over, 1, &huge, 16_384, false);
    for (name, input) in [
        ("over the block bound", over),
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

/// A block that adds one 4,000-byte entry to the table and then names it `refs` times: a few
/// bytes that decode to `refs` × 4 KB.
fn table_bomb(refs: usize) -> Vec<u8> {
    let mut block = vec![0x82, 0x87, 0x84]; // :method GET, :scheme https, :path /
    block.push(0x40); // a literal with incremental indexing, new name
    block.push(6);
    block.extend_from_slice(b"x-bomb");
    block.extend_from_slice(&[0x7f, 0xa1, 0x1e]); // a 4,000-byte value (127 + 3,873)
    block.extend(std::iter::repeat_n(b'a', 4_000));
    block.extend(std::iter::repeat_n(0xbe, refs)); // index 62: that entry
    block
}

#[test]
fn a_block_that_expands_past_the_limit_passes_to_hyper_as_sent() {
    let mut input = start();
    headers(&mut input, 1, &table_bomb(60_000), 16_384, false);
    let out = run(&input, 1 << 20).expect("read");
    // As sent: hyper refuses it with its own header list limit. (That the 240 MB it names are
    // never copied is checked on the server's memory: `tests/server_hostile_inputs.rs`.)
    assert_eq!(out, input);
}
