//! Serialize-once support: each cached event carries a small memo of its encoded forms, so the
//! server encodes an event once per encoding and reuses the bytes for every watcher.

use bytes::Bytes;
use parking_lot::Mutex;

/// Identifies one wire form of an event (for example `"json;v1"` or
/// `"protobuf;example.dev/v1"`). Chosen by the server; compared by value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EncodingKey(pub String);

impl EncodingKey {
    /// An encoding key from any string.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }
}

/// The memo of one delivered form of one event: a few `(encoding, bytes)` pairs. Encodings are
/// few (JSON, protobuf, per version), so a short vector behind a mutex is enough.
#[derive(Debug, Default)]
pub struct EncodedMemo {
    entries: Mutex<Vec<(EncodingKey, Bytes)>>,
}

impl EncodedMemo {
    /// The encoded form for `key`, computing it with `encode` the first time. Concurrent callers
    /// may both compute it; the first stored result wins and both return it.
    pub fn encoded(&self, key: &EncodingKey, encode: impl FnOnce() -> Bytes) -> Bytes {
        if let Some((_, bytes)) = self.entries.lock().iter().find(|(k, _)| k == key) {
            return bytes.clone();
        }
        let bytes = encode();
        let mut entries = self.entries.lock();
        if let Some((_, existing)) = entries.iter().find(|(k, _)| k == key) {
            return existing.clone();
        }
        entries.push((key.clone(), bytes.clone()));
        bytes
    }

    /// How many encodings are memoized.
    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// True when nothing is memoized yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
