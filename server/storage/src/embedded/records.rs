//! On-disk encodings of the embedded engine's tables.
//!
//! - `kv` rows: `create_revision | mod_revision | expires_at_ms | ttl_seconds | value`
//!   (four big-endian 64-bit integers, then the value bytes).
//! - `log` rows (one per revision): `kind | create_revision | key_len | key | value_len | value |
//!   has_prev [| prev_create | prev_mod | prev_ttl | prev_len | prev_value]`.
//! - `expiry` keys: `expires_at_ms (big-endian) | key`, one per key with a TTL: the list of keys
//!   the writer schedules (on the monotonic clock) when the database is opened.

use bytes::Bytes;

use crate::backend::{Event, EventKind, KeyValue};
use crate::errors::{Result, Revision, StorageError};

/// The current state of a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KvRecord {
    pub create_revision: Revision,
    pub mod_revision: Revision,
    /// The timestamp of the key's `expiry` row (the wall-clock Unix milliseconds it was due
    /// when written, for people reading the file); 0 when it has no TTL. Expiry itself follows
    /// the monotonic clock from `ttl` (`embedded::leases`).
    pub expires_at_ms: u64,
    /// The TTL in seconds it was written with; 0 when none.
    pub ttl: u64,
    pub value: Bytes,
}

impl KvRecord {
    #[cfg(test)]
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(&mut out);
        out
    }

    /// Appends the encoding to `out` (the writer reuses one buffer for every row).
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.reserve(32 + self.value.len());
        out.extend_from_slice(&self.create_revision.to_be_bytes());
        out.extend_from_slice(&self.mod_revision.to_be_bytes());
        out.extend_from_slice(&self.expires_at_ms.to_be_bytes());
        out.extend_from_slice(&self.ttl.to_be_bytes());
        out.extend_from_slice(&self.value);
    }

    pub fn decode(data: &[u8]) -> Result<Self> {
        let mut r = Reader::new(data);
        Ok(Self {
            create_revision: r.i64()?,
            mod_revision: r.i64()?,
            expires_at_ms: r.u64()?,
            ttl: r.u64()?,
            value: Bytes::copy_from_slice(r.rest()),
        })
    }

    pub fn into_key_value(self, key: String) -> KeyValue {
        KeyValue {
            key,
            value: self.value,
            create_revision: self.create_revision,
            mod_revision: self.mod_revision,
            ttl: (self.ttl > 0).then_some(self.ttl),
        }
    }
}

/// One revision of history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogRecord {
    pub kind: EventKind,
    pub key: String,
    /// The new value (empty for deletes).
    pub value: Bytes,
    /// The create revision after a put, or of the deleted incarnation.
    pub create_revision: Revision,
    /// The state before this revision.
    pub prev: Option<KvRecord>,
}

impl LogRecord {
    #[cfg(test)]
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(&mut out);
        out
    }

    /// Appends the encoding to `out` (the writer reuses one buffer for every row).
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let prev_len = self.prev.as_ref().map_or(0, |p| 28 + p.value.len());
        out.reserve(22 + self.key.len() + self.value.len() + prev_len);
        out.push(match self.kind {
            EventKind::Put => 0,
            EventKind::Delete => 1,
        });
        out.extend_from_slice(&self.create_revision.to_be_bytes());
        put_bytes(out, self.key.as_bytes());
        put_bytes(out, &self.value);
        match &self.prev {
            None => out.push(0),
            Some(p) => {
                out.push(1);
                out.extend_from_slice(&p.create_revision.to_be_bytes());
                out.extend_from_slice(&p.mod_revision.to_be_bytes());
                out.extend_from_slice(&p.ttl.to_be_bytes());
                put_bytes(out, &p.value);
            }
        }
    }

    pub fn decode(data: &[u8]) -> Result<Self> {
        let mut r = Reader::new(data);
        let kind = match r.u8()? {
            0 => EventKind::Put,
            1 => EventKind::Delete,
            other => return Err(corrupt(format!("unknown log record kind {other}"))),
        };
        let create_revision = r.i64()?;
        let key = String::from_utf8(r.bytes()?.to_vec())
            .map_err(|_| corrupt("log record key is not UTF-8"))?;
        let value = Bytes::copy_from_slice(r.bytes()?);
        let prev = match r.u8()? {
            0 => None,
            _ => Some(KvRecord {
                create_revision: r.i64()?,
                mod_revision: r.i64()?,
                ttl: r.u64()?,
                expires_at_ms: 0,
                value: Bytes::copy_from_slice(r.bytes()?),
            }),
        };
        Ok(Self {
            kind,
            key,
            value,
            create_revision,
            prev,
        })
    }

    /// The watch event of this record at `revision`.
    pub fn to_event(&self, revision: Revision) -> Event {
        Event {
            kind: self.kind,
            key: self.key.clone(),
            value: self.value.clone(),
            prev_value: self.prev.as_ref().map(|p| p.value.clone()),
            create_revision: self.create_revision,
            mod_revision: revision,
        }
    }

    /// The watch event of this record at `revision`, moving its key and values.
    pub fn into_event(self, revision: Revision) -> Event {
        Event {
            kind: self.kind,
            key: self.key,
            value: self.value,
            prev_value: self.prev.map(|p| p.value),
            create_revision: self.create_revision,
            mod_revision: revision,
        }
    }

    /// The state of the key just before this record, as a key-value.
    pub fn prev_key_value(&self) -> Option<KeyValue> {
        self.prev
            .clone()
            .map(|p| p.into_key_value(self.key.clone()))
    }
}

/// The key of an `expiry` row.
pub(crate) fn expiry_key(expires_at_ms: u64, key: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + key.len());
    out.extend_from_slice(&expires_at_ms.to_be_bytes());
    out.extend_from_slice(key.as_bytes());
    out
}

/// Splits an `expiry` row key into its deadline and key.
pub(crate) fn split_expiry_key(data: &[u8]) -> Result<(u64, String)> {
    let mut r = Reader::new(data);
    let at = r.u64()?;
    let key =
        String::from_utf8(r.rest().to_vec()).map_err(|_| corrupt("expiry key is not UTF-8"))?;
    Ok((at, key))
}

fn put_bytes(out: &mut Vec<u8>, data: &[u8]) {
    // Keys and values are bounded far below 4 GiB by the API server's request limits.
    let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&data[..len as usize]);
}

fn corrupt(message: impl std::fmt::Display) -> StorageError {
    StorageError::internal(format!("corrupt embedded record: {message}"))
}

struct Reader<'a> {
    data: &'a [u8],
}

impl<'a> Reader<'a> {
    fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.data.len() < n {
            return Err(corrupt("truncated"));
        }
        let (head, tail) = self.data.split_at(n);
        self.data = tail;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn u64(&mut self) -> Result<u64> {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.take(8)?);
        Ok(u64::from_be_bytes(b))
    }

    fn i64(&mut self) -> Result<i64> {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.take(8)?);
        Ok(i64::from_be_bytes(b))
    }

    fn bytes(&mut self) -> Result<&'a [u8]> {
        let mut b = [0u8; 4];
        b.copy_from_slice(self.take(4)?);
        let n = u32::from_be_bytes(b) as usize;
        self.take(n)
    }

    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_round_trip() {
        let rec = LogRecord {
            kind: EventKind::Put,
            key: "/a/b".into(),
            value: Bytes::from_static(b"new"),
            create_revision: 3,
            prev: Some(KvRecord {
                create_revision: 3,
                mod_revision: 4,
                expires_at_ms: 0,
                ttl: 9,
                value: Bytes::from_static(b"old"),
            }),
        };
        assert_eq!(LogRecord::decode(&rec.encode()).expect("decode"), rec);
        assert!(LogRecord::decode(&rec.encode()[..10]).is_err());
    }

    #[test]
    fn kv_round_trip() {
        let rec = KvRecord {
            create_revision: 1,
            mod_revision: 2,
            expires_at_ms: 3,
            ttl: 4,
            value: Bytes::from_static(b"v"),
        };
        assert_eq!(KvRecord::decode(&rec.encode()).expect("decode"), rec);
    }

    /// The encodings are byte for byte those of the first layout (stores written before the
    /// writer reused its encoding buffer read back the same), and a reused buffer holds only the
    /// last row.
    #[test]
    fn encodings_are_stable() {
        let kv = KvRecord {
            create_revision: 1,
            mod_revision: 2,
            expires_at_ms: 3,
            ttl: 4,
            value: Bytes::from_static(b"v"),
        };
        let mut kv_bytes = vec![];
        for n in [1u64, 2, 3, 4] {
            kv_bytes.extend_from_slice(&n.to_be_bytes());
        }
        kv_bytes.push(b'v');
        assert_eq!(kv.encode(), kv_bytes);
        let log = LogRecord {
            kind: EventKind::Delete,
            key: "/k".into(),
            value: Bytes::new(),
            create_revision: 5,
            prev: Some(kv.clone()),
        };
        let mut log_bytes = vec![1];
        log_bytes.extend_from_slice(&5i64.to_be_bytes());
        log_bytes.extend_from_slice(&[0, 0, 0, 2, b'/', b'k', 0, 0, 0, 0, 1]);
        for n in [1u64, 2, 4] {
            log_bytes.extend_from_slice(&n.to_be_bytes());
        }
        log_bytes.extend_from_slice(&[0, 0, 0, 1, b'v']);
        assert_eq!(log.encode(), log_bytes);
        let mut buf = vec![9; 3];
        buf.clear();
        log.encode_into(&mut buf);
        assert_eq!(buf, log_bytes);
        let event = log.clone().into_event(7);
        assert_eq!(event, log.to_event(7));
    }
}
