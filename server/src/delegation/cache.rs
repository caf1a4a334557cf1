//! A bounded cache whose entries expire: each is kept for the time-to-live it was added with
//! (the webhook authenticator's and authorizer's caches of k8s.io/apiserver).

use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How many entries a cache holds; when full, expired entries are dropped, then everything.
pub const CAPACITY: usize = 4096;

/// A cache of values by key, each valid for its own time-to-live.
#[derive(Debug)]
pub struct TtlCache<K, V> {
    entries: Mutex<HashMap<K, (V, Instant)>>,
    capacity: usize,
}

impl<K: Hash + Eq, V: Clone> Default for TtlCache<K, V> {
    fn default() -> Self {
        Self::with_capacity(CAPACITY)
    }
}

impl<K: Hash + Eq, V: Clone> TtlCache<K, V> {
    /// An empty cache of at most `capacity` entries.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    /// The value of `key` if it was added less than its time-to-live ago.
    pub fn get(&self, key: &K) -> Option<V> {
        self.get_at(key, Instant::now())
    }

    /// The value of `key` at `now`.
    pub fn get_at(&self, key: &K, now: Instant) -> Option<V> {
        let mut entries = self.entries.lock();
        match entries.get(key) {
            Some((value, expires)) if now < *expires => Some(value.clone()),
            Some(_) => {
                entries.remove(key);
                None
            }
            None => None,
        }
    }

    /// Adds `value` for `key`, valid for `ttl` (a zero `ttl` adds nothing).
    pub fn insert(&self, key: K, value: V, ttl: Duration) {
        self.insert_at(key, value, ttl, Instant::now());
    }

    /// Adds `value` for `key` at `now`, valid for `ttl`.
    pub fn insert_at(&self, key: K, value: V, ttl: Duration, now: Instant) {
        if ttl.is_zero() {
            return;
        }
        let mut entries = self.entries.lock();
        if entries.len() >= self.capacity && !entries.contains_key(&key) {
            entries.retain(|_, (_, expires)| now < *expires);
            if entries.len() >= self.capacity {
                entries.clear();
            }
        }
        entries.insert(key, (value, now + ttl));
    }

    /// How many entries the cache holds (expired ones included until they are dropped).
    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// Whether the cache holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_after_their_own_ttl() {
        let cache: TtlCache<&str, u32> = TtlCache::default();
        let t0 = Instant::now();
        cache.insert_at("short", 1, Duration::from_secs(1), t0);
        cache.insert_at("long", 2, Duration::from_secs(10), t0);
        cache.insert_at("never", 3, Duration::ZERO, t0);
        assert_eq!(cache.get_at(&"short", t0), Some(1));
        assert_eq!(cache.get_at(&"never", t0), None);
        let later = t0 + Duration::from_secs(2);
        assert_eq!(cache.get_at(&"short", later), None);
        assert_eq!(cache.get_at(&"long", later), Some(2));
        assert_eq!(cache.len(), 1, "the expired entry is dropped when read");
        assert_eq!(cache.get_at(&"long", t0 + Duration::from_secs(10)), None);
    }

    #[test]
    fn the_cache_stays_bounded() {
        let cache: TtlCache<u32, u32> = TtlCache::with_capacity(4);
        let t0 = Instant::now();
        for i in 0..4 {
            cache.insert_at(i, i, Duration::from_secs(1), t0);
        }
        // Full of live entries: it starts over.
        cache.insert_at(9, 9, Duration::from_secs(1), t0);
        assert_eq!(cache.len(), 1);
        for i in 0..3 {
            cache.insert_at(i, i, Duration::from_secs(1), t0);
        }
        // Full of expired entries: they go, the live one stays.
        cache.insert_at(10, 10, Duration::from_secs(5), t0 + Duration::from_secs(2));
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.get_at(&10, t0 + Duration::from_secs(3)), Some(10));
    }
}
