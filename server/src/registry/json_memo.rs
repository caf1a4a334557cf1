//! [`JsonMemo`]: the served JSON of recently read objects, so that repeated GETs of a hot
//! object do not transcode its stored protobuf again.
//!
//! Entries are keyed by storage key and identified by resourceVersion (a key's bytes never
//! change without a new revision), so a stale entry is never served: it simply misses. The memo
//! holds at most [`MEMO_ENTRIES`] objects and is emptied when full, which keeps it a few
//! hundred KiB no matter how many objects the store has.

use bytes::Bytes;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;

/// The most objects a memo holds.
pub const MEMO_ENTRIES: usize = 256;

/// The largest object a memo keeps (bigger ones are transcoded each time).
const MAX_OBJECT_BYTES: usize = 16 * 1024;

/// Recently served JSON by storage key.
#[derive(Debug, Default)]
pub struct JsonMemo {
    entries: Mutex<FxHashMap<Box<str>, (i64, Bytes)>>,
}

impl JsonMemo {
    /// The JSON of `key` at `resource_version`, computed by `encode` unless memoized.
    pub fn get_or_encode<E>(
        &self,
        key: &str,
        resource_version: i64,
        encode: impl FnOnce() -> Result<Vec<u8>, E>,
    ) -> Result<Bytes, E> {
        if let Some((rv, json)) = self.entries.lock().get(key)
            && *rv == resource_version
        {
            return Ok(json.clone());
        }
        let json = Bytes::from(encode()?);
        if json.len() <= MAX_OBJECT_BYTES {
            let mut entries = self.entries.lock();
            if entries.len() >= MEMO_ENTRIES && !entries.contains_key(key) {
                entries.clear();
            }
            entries.insert(key.into(), (resource_version, json.clone()));
        }
        Ok(json)
    }

    /// How many objects are memoized.
    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// Whether nothing is memoized.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serves_the_memo_only_at_the_same_revision() {
        let memo = JsonMemo::default();
        let calls = std::cell::Cell::new(0);
        let encode = |s: &'static str| {
            calls.set(calls.get() + 1);
            Ok::<_, ()>(s.as_bytes().to_vec())
        };
        assert_eq!(
            memo.get_or_encode("/a", 1, || encode("one")),
            Ok(Bytes::from("one"))
        );
        assert_eq!(
            memo.get_or_encode("/a", 1, || encode("x")),
            Ok(Bytes::from("one"))
        );
        assert_eq!(calls.get(), 1);
        assert_eq!(
            memo.get_or_encode("/a", 2, || encode("two")),
            Ok(Bytes::from("two"))
        );
        assert_eq!(calls.get(), 2);
        assert_eq!(memo.get_or_encode("/b", 2, || Err(())), Err(()));
        assert_eq!(memo.len(), 1);
    }

    #[test]
    fn stays_bounded() {
        let memo = JsonMemo::default();
        for i in 0..(MEMO_ENTRIES * 3) {
            let key = format!("/k{i}");
            let _ = memo.get_or_encode(&key, 1, || Ok::<_, ()>(vec![b'x'; 10]));
            assert!(memo.len() <= MEMO_ENTRIES);
        }
    }
}
