//! Table definitions and metadata keys of the embedded engine.

use redb::TableDefinition;

/// Current state: key → [`KvRecord`](super::records::KvRecord).
pub(crate) const KV: TableDefinition<&str, &[u8]> = TableDefinition::new("kv");
/// History: revision → [`LogRecord`](super::records::LogRecord).
pub(crate) const LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("log");
/// TTL keys: `expires_at_ms | key` → (), the keys the writer schedules when it opens the
/// database (see `leases`).
pub(crate) const EXPIRY: TableDefinition<&[u8], ()> = TableDefinition::new("expiry");
/// Counters.
pub(crate) const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

/// The current revision.
pub(crate) const META_REVISION: &str = "revision";
/// The compaction point: reads below it fail with `Expired`.
pub(crate) const META_COMPACTED: &str = "compacted";
/// Every log row below this revision has been physically removed.
pub(crate) const META_LOG_FLOOR: &str = "log_floor";

/// Maps any redb error to an internal storage error.
pub(crate) fn db_err(err: impl std::fmt::Display) -> crate::errors::StorageError {
    crate::errors::StorageError::internal(format!("embedded database: {err}"))
}
