//! HPACK decoding (RFC 7541) for the h2 long request-target adapter: the client's dynamic
//! table is kept exactly as hyper's decoder keeps it, and each field is reported as it was
//! sent, a Huffman-coded string staying coded until someone asks for it. Following a block
//! then costs little more than reading it: only strings that enter the table are decoded
//! (measured with `HTTP=2 tools/callgrind-requests`: a general-purpose decoder that decodes
//! every string cost 270k instructions per GET, 1.8M with a service-account token).

use std::collections::VecDeque;

/// A block the decoder cannot follow; hyper's decoder fails the connection on it too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

/// A string of a field as it was sent.
#[derive(Debug, Clone, Copy)]
pub struct Str<'a> {
    bytes: &'a [u8],
    huffman: bool,
}

impl<'a> Str<'a> {
    /// A string sent without Huffman coding.
    pub fn plain(bytes: &'a [u8]) -> Self {
        Str {
            bytes,
            huffman: false,
        }
    }

    /// The most bytes the string can decode to (Huffman codes are at least 5 bits).
    pub fn bound(&self) -> usize {
        if self.huffman {
            self.bytes.len() * 8 / 5
        } else {
            self.bytes.len()
        }
    }

    /// The string's bytes, decoded into `scratch` when Huffman-coded.
    pub fn decode<'s>(&self, scratch: &'s mut Vec<u8>) -> Result<&'s [u8], Malformed>
    where
        'a: 's,
    {
        if !self.huffman {
            return Ok(self.bytes);
        }
        scratch.clear();
        httlib_huffman::decode(self.bytes, scratch, httlib_huffman::DecoderSpeed::FiveBits)
            .map_err(|_| Malformed)?;
        Ok(scratch)
    }

    /// Appends the string as an HPACK string literal, coded as it was sent.
    pub fn put(&self, out: &mut Vec<u8>) {
        put_integer(
            out,
            if self.huffman { 0x80 } else { 0 },
            7,
            self.bytes.len(),
        );
        out.extend_from_slice(self.bytes);
    }
}

/// Appends an HPACK integer with a `prefix`-bit prefix after `first`'s high bits.
pub fn put_integer(out: &mut Vec<u8>, first: u8, prefix: u8, mut n: usize) {
    let max = (1usize << prefix) - 1;
    if n < max {
        out.push(first | n as u8);
        return;
    }
    out.push(first | max as u8);
    n -= max;
    while n >= 128 {
        out.push((n % 128) as u8 | 0x80);
        n /= 128;
    }
    out.push(n as u8);
}

/// The static table (RFC 7541 Appendix A), from index 1.
const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// An entry's size in the table: its strings and 32 bytes (RFC 7541 §4.1).
fn entry_size(name: &[u8], value: &[u8]) -> usize {
    name.len() + value.len() + 32
}

/// A dynamic table entry: a name and a value.
type Entry = (Box<[u8]>, Box<[u8]>);

/// The decoding side of one connection's HPACK context.
#[derive(Debug)]
pub struct Decoder {
    /// The dynamic table, newest first.
    table: VecDeque<Entry>,
    size: usize,
    /// The table's size limit, as the client last set it.
    max: usize,
    /// The most the client may set (`SETTINGS_HEADER_TABLE_SIZE`).
    limit: usize,
}

impl Decoder {
    /// A decoder for a peer allowed a table of `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Decoder {
            table: VecDeque::new(),
            size: 0,
            max: limit,
            limit,
        }
    }

    fn get(&self, index: usize) -> Result<(&[u8], &[u8]), Malformed> {
        match index {
            0 => Err(Malformed),
            1..=61 => Ok(STATIC[index - 1]),
            _ => self
                .table
                .get(index - 62)
                .map(|(n, v)| (&n[..], &v[..]))
                .ok_or(Malformed),
        }
    }

    fn evict(&mut self) {
        while self.size > self.max {
            let Some((n, v)) = self.table.pop_back() else {
                break;
            };
            self.size -= entry_size(&n, &v);
        }
    }

    fn insert(&mut self, name: Box<[u8]>, value: Box<[u8]>) {
        let size = entry_size(&name, &value);
        if size > self.max {
            // An entry larger than the table empties it (RFC 7541 §4.4).
            self.table.clear();
            self.size = 0;
            return;
        }
        self.size += size;
        self.table.push_front((name, value));
        self.evict();
    }

    /// Decodes the header block `block`, calling `field` with each field's name and value as
    /// sent, and keeps the table as the block changes it.
    pub fn decode(
        &mut self,
        block: &[u8],
        mut field: impl FnMut(Str<'_>, Str<'_>),
    ) -> Result<(), Malformed> {
        let mut at = 0;
        let mut start = true;
        let mut scratch = Vec::new();
        while at < block.len() {
            let first = block[at];
            if first & 0x80 != 0 {
                let index = integer(block, &mut at, 7)?;
                let (name, value) = self.get(index)?;
                field(Str::plain(name), Str::plain(value));
            } else if first & 0xe0 == 0x20 {
                // A dynamic table size update: only before the block's first field.
                let max = integer(block, &mut at, 5)?;
                if !start || max > self.limit {
                    return Err(Malformed);
                }
                self.max = max;
                self.evict();
                continue;
            } else {
                let indexing = first & 0x40 != 0;
                let index = integer(block, &mut at, if indexing { 6 } else { 4 })?;
                let sent_name = if index == 0 {
                    Some(string(block, &mut at)?)
                } else {
                    None
                };
                let value = string(block, &mut at)?;
                if indexing {
                    let name: Box<[u8]> = match sent_name {
                        Some(s) => s.decode(&mut scratch)?.into(),
                        None => self.get(index)?.0.into(),
                    };
                    let value: Box<[u8]> = value.decode(&mut scratch)?.into();
                    field(Str::plain(&name), Str::plain(&value));
                    self.insert(name, value);
                } else {
                    match sent_name {
                        Some(name) => field(name, value),
                        None => field(Str::plain(self.get(index)?.0), value),
                    }
                }
            }
            start = false;
        }
        Ok(())
    }
}

/// Reads an HPACK integer with a `prefix`-bit prefix at `at`.
fn integer(block: &[u8], at: &mut usize, prefix: u8) -> Result<usize, Malformed> {
    let max = (1usize << prefix) - 1;
    let mut n = usize::from(*block.get(*at).ok_or(Malformed)?) & max;
    *at += 1;
    if n < max {
        return Ok(n);
    }
    let mut shift = 0;
    loop {
        let b = *block.get(*at).ok_or(Malformed)?;
        *at += 1;
        // Anything past 2^28 is longer than any block the adapter holds.
        if shift > 21 {
            return Err(Malformed);
        }
        n += usize::from(b & 0x7f) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            return Ok(n);
        }
    }
}

/// Reads a string literal at `at`.
fn string<'b>(block: &'b [u8], at: &mut usize) -> Result<Str<'b>, Malformed> {
    let huffman = *block.get(*at).ok_or(Malformed)? & 0x80 != 0;
    let len = integer(block, at, 7)?;
    let bytes = block.get(*at..*at + len).ok_or(Malformed)?;
    *at += len;
    Ok(Str { bytes, huffman })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    fn decode_all(d: &mut Decoder, block: &[u8]) -> Result<Vec<(String, String)>, Malformed> {
        let mut out = Vec::new();
        let mut bad = false;
        d.decode(block, |n, v| {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            match (n.decode(&mut a), v.decode(&mut b)) {
                (Ok(n), Ok(v)) => out.push((
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                )),
                _ => bad = true,
            }
        })?;
        if bad {
            return Err(Malformed);
        }
        Ok(out)
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn rfc_7541_examples_with_and_without_huffman() {
        // C.3 (plain) and C.4 (Huffman): three requests on one connection.
        for blocks in [
            [
                "828684410f7777772e6578616d706c652e636f6d",
                "828684be58086e6f2d6361636865",
                "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565",
            ],
            [
                "828684418cf1e3c2e5f23a6ba0ab90f4ff",
                "828684be5886a8eb10649cbf",
                "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf",
            ],
        ] {
            let mut d = Decoder::new(4096);
            let base = [
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":authority", "www.example.com"),
            ];
            assert_eq!(decode_all(&mut d, &hex(blocks[0])), Ok(pairs(&base)));
            let mut second = base.to_vec();
            second.push(("cache-control", "no-cache"));
            assert_eq!(decode_all(&mut d, &hex(blocks[1])), Ok(pairs(&second)));
            assert_eq!(
                decode_all(&mut d, &hex(blocks[2])),
                Ok(pairs(&[
                    (":method", "GET"),
                    (":scheme", "https"),
                    (":path", "/index.html"),
                    (":authority", "www.example.com"),
                    ("custom-key", "custom-value"),
                ]))
            );
            assert_eq!(d.size, 164);
        }
    }

    #[test]
    fn the_table_evicts_and_obeys_size_updates() {
        let mut d = Decoder::new(100);
        // Two 64-byte entries (16 + 16 + 32): the first is evicted by the second.
        let literal = |n: &str, v: &str| {
            let mut b = vec![0x40];
            Str::plain(n.as_bytes()).put(&mut b);
            Str::plain(v.as_bytes()).put(&mut b);
            b
        };
        decode_all(&mut d, &literal("aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb")).expect("decodes");
        decode_all(&mut d, &literal("cccccccccccccccc", "dddddddddddddddd")).expect("decodes");
        assert_eq!(d.table.len(), 1);
        assert_eq!(
            decode_all(&mut d, &[0x80 | 62]),
            Ok(pairs(&[("cccccccccccccccc", "dddddddddddddddd")]))
        );
        assert_eq!(decode_all(&mut d, &[0x80 | 63]), Err(Malformed));
        // A size update empties it; one above the limit, or after a field, is refused.
        assert_eq!(
            decode_all(&mut d, &[0x20, 0x82]),
            Ok(pairs(&[(":method", "GET")]))
        );
        assert!(d.table.is_empty());
        assert_eq!(decode_all(&mut d, &[0x3f, 0x50]), Err(Malformed));
        assert_eq!(decode_all(&mut d, &[0x82, 0x20]), Err(Malformed));
        // An entry larger than the table empties it.
        assert_eq!(decode_all(&mut d, &[0x3f, 0x45]), Ok(vec![]));
        decode_all(&mut d, &literal("a", "b")).expect("decodes");
        decode_all(&mut d, &literal("x", &"y".repeat(200))).expect("decodes");
        assert!(d.table.is_empty() && d.size == 0);
    }

    #[test]
    fn strings_outside_the_table_stay_coded() {
        let mut d = Decoder::new(4096);
        // A literal without indexing, Huffman-coded value "www.example.com".
        let block = hex("048cf1e3c2e5f23a6ba0ab90f4ff");
        let mut seen = Vec::new();
        d.decode(&block, |n, v| {
            seen.push((n.bytes.to_vec(), v.huffman, v.bound()))
        })
        .expect("decodes");
        assert_eq!(seen, vec![(b":path".to_vec(), true, 19)]);
        let mut put = vec![];
        Str {
            bytes: &block[2..],
            huffman: true,
        }
        .put(&mut put);
        assert_eq!(put, block[1..]);
        assert!(d.table.is_empty());
    }

    #[test]
    fn truncated_and_bad_blocks_are_malformed() {
        let mut d = Decoder::new(4096);
        for block in [
            &[0x80][..],
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0x7f],
            &[0x04, 0x05, b'a'],
            &[0x40],
        ] {
            assert_eq!(decode_all(&mut d, block), Err(Malformed), "{block:?}");
        }
    }

    #[test]
    fn integers_are_hpack_integers() {
        // RFC 7541 C.1.
        let mut out = Vec::new();
        put_integer(&mut out, 0, 5, 10);
        put_integer(&mut out, 0, 5, 1337);
        put_integer(&mut out, 0, 8, 42);
        assert_eq!(out, [10, 31, 154, 10, 42]);
        let mut at = 1;
        assert_eq!(integer(&out, &mut at, 5), Ok(1337));
        assert_eq!(at, 4);
    }
}
