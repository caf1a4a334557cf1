//! The writer's schedule of TTL expiry, on the monotonic clock.
//!
//! A key written with a TTL expires that many seconds later as measured by
//! [`Instant`] (`CLOCK_MONOTONIC`), so jumps of the wall clock neither expire keys early nor
//! keep them late. What is stored is the TTL itself (in the key's `kv` row) and an `expiry` row
//! per TTL key, which only lists the keys to schedule; its timestamp is not a deadline. When
//! the database is opened, each TTL key gets its full TTL again from then, as etcd gives every
//! lease its full TTL when a leader takes over: the time a server was down never counts, and a
//! key lives at least its TTL after it was written.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use redb::{Database, ReadableDatabase, ReadableTable};

use super::records::{KvRecord, split_expiry_key};
use super::tables::{EXPIRY, KV, db_err};
use crate::errors::Result;

/// When a key expires, and the timestamp of its `expiry` row (the row's key prefix, equal to
/// the `expires_at_ms` of the `kv` row that scheduled it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Deadline {
    pub at: Instant,
    pub row: u64,
}

impl Deadline {
    /// The deadline of a key written now with `ttl` seconds, whose expiry row is `row`.
    pub fn after(ttl: u64, row: u64) -> Self {
        Self {
            at: Instant::now() + Duration::from_secs(ttl),
            row,
        }
    }
}

/// The TTL keys by deadline.
#[derive(Debug, Default)]
pub(crate) struct Leases {
    due: BTreeSet<(Instant, String)>,
    deadlines: HashMap<String, Deadline>,
}

impl Leases {
    /// The schedule of every key listed in the `expiry` table, each due its full TTL from now.
    /// A row whose key no longer carries it is due at once (the sweep removes it).
    pub fn load(db: &Database) -> Result<Self> {
        let mut leases = Self::default();
        let txn = db.begin_read().map_err(db_err)?;
        let expiry = match txn.open_table(EXPIRY) {
            Ok(table) => table,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(leases),
            Err(e) => return Err(db_err(e)),
        };
        let kv = txn.open_table(KV).map_err(db_err)?;
        let now = Instant::now();
        for row in expiry.iter().map_err(db_err)? {
            let (k, _) = row.map_err(db_err)?;
            let (at, key) = split_expiry_key(k.value())?;
            let current = kv
                .get(key.as_str())
                .map_err(db_err)?
                .map(|v| KvRecord::decode(v.value()))
                .transpose()?;
            let ttl = match current {
                Some(record) if record.expires_at_ms == at && record.ttl > 0 => record.ttl,
                _ => 0,
            };
            leases.set(
                key,
                Some(Deadline {
                    at: now + Duration::from_secs(ttl),
                    row: at,
                }),
            );
        }
        Ok(leases)
    }

    /// Schedules `key` at `deadline`, or forgets it (`None`).
    pub fn set(&mut self, key: String, deadline: Option<Deadline>) {
        if let Some(old) = self.deadlines.remove(&key) {
            self.due.remove(&(old.at, key.clone()));
        }
        if let Some(deadline) = deadline {
            self.due.insert((deadline.at, key.clone()));
            self.deadlines.insert(key, deadline);
        }
    }

    /// Up to `limit` keys due at `now`, earliest first, with their deadlines.
    pub fn due(&self, now: Instant, limit: usize) -> Vec<(String, Deadline)> {
        self.due
            .iter()
            .take_while(|(at, _)| *at <= now)
            .take(limit)
            .filter_map(|(_, key)| Some((key.clone(), *self.deadlines.get(key)?)))
            .collect()
    }

    /// The number of scheduled keys.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.deadlines.len()
    }

    /// After the database was reopened: keys still listed keep their deadline, keys newly
    /// listed (a commit that reached the file although it reported an error) are due their full
    /// TTL from now, and keys no longer listed are forgotten.
    pub fn reload(&mut self, db: &Database) -> Result<()> {
        let stored = Self::load(db)?;
        let mut merged = Self::default();
        for (key, deadline) in stored.deadlines {
            let kept = self
                .deadlines
                .get(&key)
                .filter(|old| old.row == deadline.row)
                .copied();
            merged.set(key, Some(kept.unwrap_or(deadline)));
        }
        *self = merged;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_keys_come_earliest_first_and_rescheduling_replaces() {
        let mut leases = Leases::default();
        let now = Instant::now();
        let at = |ms: u64, row: u64| Deadline {
            at: now + Duration::from_millis(ms),
            row,
        };
        leases.set("/b".into(), Some(at(20, 1)));
        leases.set("/a".into(), Some(at(10, 2)));
        leases.set("/c".into(), Some(at(30, 3)));
        let names = |due: Vec<(String, Deadline)>| -> Vec<String> {
            due.into_iter().map(|(k, _)| k).collect()
        };
        assert_eq!(
            names(leases.due(now + Duration::from_millis(25), 10)),
            ["/a", "/b"]
        );
        assert_eq!(
            names(leases.due(now + Duration::from_millis(25), 1)),
            ["/a"]
        );
        // A rewrite moves the key; forgetting removes it.
        leases.set("/a".into(), Some(at(40, 4)));
        leases.set("/b".into(), None);
        assert_eq!(
            names(leases.due(now + Duration::from_millis(35), 10)),
            ["/c"]
        );
        assert_eq!(leases.len(), 2);
    }
}
