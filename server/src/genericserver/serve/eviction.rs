//! Room for a new connection at the open-connection bound. A connection whose client has not
//! been authenticated as a user (still in its TLS handshake, or anonymous so far) may be closed,
//! the oldest first, to let a new one in; a connection on which a request was authenticated
//! stays. So a client that reopens anonymous connections can fill the bound only with its own
//! connections, which the next newcomer displaces, and cannot keep authenticated clients out.
//! Go's server has no bound (only the file descriptor limit), so it has no such rule.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::authn::PeerConnection;

/// The open connections that may be closed to make room, by age.
#[derive(Default)]
pub(super) struct Evictable {
    inner: Mutex<Ages>,
}

#[derive(Default)]
struct Ages {
    next: u64,
    /// Connections by the order they were accepted in, oldest first. An entry whose client
    /// authenticated is dropped when an eviction meets it.
    open: BTreeMap<u64, Arc<Entry>>,
}

#[derive(Default)]
struct Entry {
    /// The connection once its TLS handshake is done.
    peer: OnceLock<PeerConnection>,
    /// Told when the connection is to close.
    close: Notify,
}

/// One connection's place among the evictable ones; dropping it (when the connection ends)
/// removes the connection.
pub(super) struct Registration {
    evictable: Arc<Evictable>,
    id: u64,
    entry: Arc<Entry>,
}

impl Evictable {
    /// Adds a just-accepted connection, the youngest.
    pub(super) fn register(self: &Arc<Self>) -> Registration {
        let entry = Arc::new(Entry::default());
        let mut ages = self.inner.lock();
        let id = ages.next;
        ages.next += 1;
        ages.open.insert(id, Arc::clone(&entry));
        Registration {
            evictable: Arc::clone(self),
            id,
            entry,
        }
    }

    /// Tells the oldest connection whose client has not authenticated to close; false when
    /// there is none.
    pub(super) fn evict_oldest(&self) -> bool {
        let mut ages = self.inner.lock();
        while let Some((_, entry)) = ages.open.pop_first() {
            if entry.peer.get().is_some_and(PeerConnection::authenticated) {
                // It stays open, and is never a candidate again.
                continue;
            }
            entry.close.notify_one();
            return true;
        }
        false
    }
}

impl Registration {
    /// Records the connection once its TLS handshake is done, so its authentication counts.
    pub(super) fn handshaken(&self, peer: &PeerConnection) {
        let _ = self.entry.peer.set(peer.clone());
    }

    /// Completes when the connection is to close to make room for another.
    pub(super) async fn evicted(&self) {
        self.entry.close.notified().await;
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.evictable.inner.lock().open.remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(r: &Registration) -> bool {
        use std::future::Future;
        let fut = std::pin::pin!(r.evicted());
        let waker = std::task::Waker::noop();
        fut.poll(&mut std::task::Context::from_waker(waker))
            .is_ready()
    }

    #[test]
    fn the_oldest_connection_without_a_user_is_closed_first() {
        let evictable = Arc::new(Evictable::default());
        let oldest = evictable.register();
        let authenticated = evictable.register();
        let anonymous = evictable.register();
        let handshaking = evictable.register();
        let peer = PeerConnection::default();
        authenticated.handshaken(&peer);
        peer.note_authenticated();
        anonymous.handshaken(&PeerConnection::default());
        drop(oldest);

        assert!(evictable.evict_oldest());
        assert!(ready(&anonymous), "the oldest anonymous one goes first");
        assert!(!ready(&authenticated) && !ready(&handshaking));
        assert!(evictable.evict_oldest());
        assert!(ready(&handshaking));
        assert!(
            !evictable.evict_oldest(),
            "an authenticated connection stays"
        );
        assert!(!ready(&authenticated));
        drop((anonymous, handshaking, authenticated));
        assert!(evictable.inner.lock().open.is_empty());
    }
}
