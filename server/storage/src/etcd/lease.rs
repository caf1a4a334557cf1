//! Leases for keys with a TTL.
//!
//! Granting one lease per write would create one lease per Event object; like kube-apiserver,
//! a lease is reused for writes whose TTL it can serve: a write asking for `ttl` seconds gets a
//! lease that expires between `ttl` and `ttl + 5%` (at most 60 s more) from now.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use etcd_client::Client;
use parking_lot::Mutex;

use super::error::classify;
use crate::errors::Result;

/// The longest extra lifetime a reused lease may give a key.
const MAX_REUSE_SECONDS: u64 = 60;

#[derive(Debug, Clone, Copy)]
struct Granted {
    id: i64,
    expires: Instant,
}

/// Hands out (and reuses) leases and remembers the TTL each lease was granted with.
#[derive(Debug, Default)]
pub(crate) struct LeaseManager {
    previous: Mutex<Option<Granted>>,
    ttls: Mutex<HashMap<i64, u64>>,
}

impl LeaseManager {
    /// A lease that keeps a key alive for at least `ttl` seconds (and at most 5% longer).
    pub(crate) async fn lease_for(&self, client: &Client, ttl: u64) -> Result<i64> {
        let ttl = ttl.max(1);
        let reuse = (ttl / 20).min(MAX_REUSE_SECONDS);
        let now = Instant::now();
        if let Some(prev) = *self.previous.lock() {
            let long_enough = now + Duration::from_secs(ttl) < prev.expires;
            let short_enough = now + Duration::from_secs(ttl + reuse) >= prev.expires;
            if long_enough && short_enough {
                return Ok(prev.id);
            }
        }
        let granted_ttl = ttl + reuse;
        let response = client
            .lease_client()
            .grant(i64::try_from(granted_ttl).unwrap_or(i64::MAX), None)
            .await
            .map_err(|e| classify(e).into_storage())?;
        let granted = Granted {
            id: response.id(),
            expires: now + Duration::from_secs(granted_ttl),
        };
        *self.previous.lock() = Some(granted);
        self.ttls.lock().insert(granted.id, granted_ttl);
        Ok(granted.id)
    }

    /// The TTL (seconds) a lease was granted with, asking etcd for leases granted elsewhere.
    /// Returns `None` for lease 0 (no lease) or a lease that no longer exists.
    pub(crate) async fn ttl_of(&self, client: &Client, lease: i64) -> Option<u64> {
        if lease == 0 {
            return None;
        }
        if let Some(ttl) = self.ttls.lock().get(&lease) {
            return Some(*ttl);
        }
        let response = client.lease_client().time_to_live(lease, None).await.ok()?;
        let ttl = u64::try_from(response.granted_ttl()).ok()?;
        let mut ttls = self.ttls.lock();
        if ttls.len() > 10_000 {
            ttls.clear();
        }
        ttls.insert(lease, ttl);
        Some(ttl)
    }
}
