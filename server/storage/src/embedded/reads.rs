//! Reads at the latest or a past revision.
//!
//! The state at a past revision `r` is the current state with every key touched after `r`
//! replaced by its value before the first such change (recorded in the history row of that
//! change). This costs one scan of the history newer than `r`, which the retention window
//! bounds.

use std::collections::BTreeMap;

use redb::ReadTransaction;

use super::records::{KvRecord, LogRecord};
use super::tables::{KV, LOG, META, META_COMPACTED, META_REVISION, db_err};
use crate::backend::{GetResponse, KeyValue, RangeRequest, RangeResponse};
use crate::errors::{Result, Revision, StorageError};

/// Reads (current revision, compaction point) in this snapshot.
pub(super) fn meta(txn: &ReadTransaction) -> Result<(Revision, Revision)> {
    let meta = txn.open_table(META).map_err(db_err)?;
    let get = |name: &str| -> Result<Revision> {
        Ok(meta.get(name).map_err(db_err)?.map_or(0, |v| v.value()) as Revision)
    };
    Ok((get(META_REVISION)?, get(META_COMPACTED)?))
}

/// Resolves the revision to read at: 0 means current; beyond current is too large; below the
/// compaction point is expired.
pub(super) fn resolve(
    revision: Revision,
    current: Revision,
    compacted: Revision,
) -> Result<Revision> {
    if revision <= 0 {
        return Ok(current);
    }
    if revision > current {
        return Err(StorageError::TooLargeResourceVersion {
            requested: revision,
            current,
        });
    }
    if revision < compacted {
        return Err(StorageError::Expired {
            requested: revision,
            compacted,
        });
    }
    Ok(revision)
}

/// Reads one key.
pub(super) fn get(txn: &ReadTransaction, key: &str, revision: Revision) -> Result<GetResponse> {
    let (current, compacted) = meta(txn)?;
    let at = resolve(revision, current, compacted)?;
    let kv = txn.open_table(KV).map_err(db_err)?;
    let record = kv
        .get(key)
        .map_err(db_err)?
        .map(|v| KvRecord::decode(v.value()))
        .transpose()?;
    let latest_applies = record.as_ref().is_some_and(|r| r.mod_revision <= at);
    let value = if at == current || latest_applies {
        record.map(|r| r.into_key_value(key.to_string()))
    } else {
        let mut touched = history_after(txn, at, current, |k| k == key)?;
        match touched.remove(key) {
            Some(state) => state,
            None => record.map(|r| r.into_key_value(key.to_string())),
        }
    };
    Ok(GetResponse {
        kv: value,
        revision: at,
    })
}

/// For every key accepted by `filter` changed in `(at, current]`, its state at `at` (taken from
/// the first change after `at`).
fn history_after(
    txn: &ReadTransaction,
    at: Revision,
    current: Revision,
    filter: impl Fn(&str) -> bool,
) -> Result<BTreeMap<String, Option<KeyValue>>> {
    let mut touched = BTreeMap::new();
    if at >= current {
        return Ok(touched);
    }
    let log = txn.open_table(LOG).map_err(db_err)?;
    for row in log
        .range((at as u64 + 1)..=(current as u64))
        .map_err(db_err)?
    {
        let (_, v) = row.map_err(db_err)?;
        let record = LogRecord::decode(v.value())?;
        if filter(&record.key) && !touched.contains_key(&record.key) {
            let prev = record.prev_key_value();
            touched.insert(record.key, prev);
        }
    }
    Ok(touched)
}

/// Reads keys under a prefix.
pub(super) fn range(txn: &ReadTransaction, request: &RangeRequest) -> Result<RangeResponse> {
    let (current, compacted) = meta(txn)?;
    let at = resolve(request.revision, current, compacted)?;
    let prefix = request.prefix.as_str();
    let start = if request.start.as_str() > prefix {
        request.start.as_str()
    } else {
        prefix
    };
    let touched = history_after(txn, at, current, |k| k.starts_with(prefix) && k >= start)?;
    let mut touched = touched.into_iter().peekable();
    let kv = txn.open_table(KV).map_err(db_err)?;
    let mut rows = kv.range(start..).map_err(db_err)?.peekable();
    let mut kvs = Vec::new();
    let mut count: i64 = 0;
    let limit = request.limit;
    let accept = |item: Option<KeyValue>, count: &mut i64, kvs: &mut Vec<KeyValue>| {
        if let Some(kv) = item {
            *count += 1;
            if limit == 0 || kvs.len() < limit {
                kvs.push(kv);
            }
        }
    };
    loop {
        let row_key = match rows.peek() {
            Some(Ok((k, _))) if k.value().starts_with(prefix) => Some(k.value().to_string()),
            Some(Err(_)) => {
                if let Some(Err(e)) = rows.next() {
                    return Err(db_err(e));
                }
                None
            }
            _ => None,
        };
        let touched_key = touched.peek().map(|(k, _)| k.clone());
        match (row_key, touched_key) {
            (None, None) => break,
            (Some(r), t) if t.as_ref().is_none_or(|t| r < *t) => {
                let Some(Ok((_, v))) = rows.next() else {
                    break;
                };
                let record = KvRecord::decode(v.value())?;
                accept(Some(record.into_key_value(r)), &mut count, &mut kvs);
            }
            (r, Some(t)) => {
                if r.as_deref() == Some(t.as_str()) {
                    rows.next();
                }
                if let Some((_, state)) = touched.next() {
                    accept(state, &mut count, &mut kvs);
                }
            }
            (Some(_), None) => break,
        }
    }
    let more = usize::try_from(count).unwrap_or(usize::MAX) > kvs.len();
    Ok(RangeResponse {
        kvs,
        revision: at,
        more,
        count,
    })
}

/// Counts keys under a prefix at the current revision.
pub(super) fn count(txn: &ReadTransaction, prefix: &str) -> Result<i64> {
    let kv = txn.open_table(KV).map_err(db_err)?;
    let mut n = 0;
    for row in kv.range(prefix..).map_err(db_err)? {
        let (k, _) = row.map_err(db_err)?;
        if !k.value().starts_with(prefix) {
            break;
        }
        n += 1;
    }
    Ok(n)
}
