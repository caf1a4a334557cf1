//! Room for a new connection at the open-connection bound. The oldest connection whose client
//! has not been authenticated as a user (still in its TLS handshake, or anonymous so far) is
//! closed to let a new one in; when every open connection has an authenticated user, the
//! oldest connection of the user holding the most (at least two) is, so no one user can hold
//! the bound against others. Connections of `system:masters` users are never closed. So a
//! client reopening anonymous connections, or one user opening many, fills the bound only with
//! connections the next newcomer displaces. Go's server has no bound (only the file descriptor
//! limit) and kube-apiserver shares capacity between users by priority and fairness; this is
//! the listener's share of that promise.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::authn::{MASTERS_GROUP, PeerConnection};

/// The open connections that may be closed to make room, by age.
#[derive(Default)]
pub(super) struct Evictable {
    inner: Mutex<Ages>,
}

#[derive(Default)]
struct Ages {
    next: u64,
    /// Connections by the order they were accepted in, oldest first.
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

    /// Tells one connection to close to make room: the oldest without an authenticated user,
    /// else the oldest of the user (not in `system:masters`) holding the most connections, if
    /// at least two. False when there is none.
    pub(super) fn evict_oldest(&self) -> bool {
        let mut ages = self.inner.lock();
        // Per user: how many connections, and the oldest.
        let mut held: HashMap<&str, (usize, u64)> = HashMap::new();
        let mut victim = None;
        for (id, entry) in &ages.open {
            let Some(user) = entry
                .peer
                .get()
                .and_then(PeerConnection::authenticated_user)
            else {
                victim = Some(*id);
                break;
            };
            if user.in_group(MASTERS_GROUP) {
                continue;
            }
            held.entry(user.name.as_str()).or_insert((0, *id)).0 += 1;
        }
        let victim = victim.or_else(|| {
            held.values()
                .filter(|(count, _)| *count >= 2)
                .max_by_key(|(count, oldest)| (*count, std::cmp::Reverse(*oldest)))
                .map(|(_, oldest)| *oldest)
        });
        let Some(entry) = victim.and_then(|id| ages.open.remove(&id)) else {
            return false;
        };
        entry.close.notify_one();
        true
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
    use crate::authn::UserInfo;

    fn ready(r: &Registration) -> bool {
        use std::future::Future;
        let fut = std::pin::pin!(r.evicted());
        let waker = std::task::Waker::noop();
        fut.poll(&mut std::task::Context::from_waker(waker))
            .is_ready()
    }

    fn user(name: &str, groups: &[&str]) -> PeerConnection {
        let peer = PeerConnection::default();
        peer.note_authenticated(&Arc::new(UserInfo {
            name: name.to_string(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        }));
        peer
    }

    #[test]
    fn connections_without_a_user_go_first_then_those_of_the_user_holding_most() {
        let evictable = Arc::new(Evictable::default());
        let connect = |peer: Option<PeerConnection>| {
            let r = evictable.register();
            if let Some(peer) = peer {
                r.handshaken(&peer);
            }
            r
        };
        let oldest = connect(None);
        let admin = [
            connect(Some(user("admin", &[MASTERS_GROUP]))),
            connect(Some(user("admin", &[MASTERS_GROUP]))),
            connect(Some(user("admin", &[MASTERS_GROUP]))),
        ];
        let bob = connect(Some(user("bob", &[])));
        let mallory = [
            connect(Some(user("mallory", &[]))),
            connect(Some(user("mallory", &[]))),
        ];
        let anonymous = connect(Some(PeerConnection::default()));
        let handshaking = connect(None);
        drop(oldest);

        // Without a user, oldest first.
        assert!(evictable.evict_oldest());
        assert!(ready(&anonymous));
        assert!(evictable.evict_oldest());
        assert!(ready(&handshaking));
        // Then the oldest of the user holding the most, while that is two or more; never
        // `system:masters`.
        assert!(evictable.evict_oldest());
        assert!(ready(&mallory[0]) && !ready(&mallory[1]) && !ready(&bob));
        assert!(!evictable.evict_oldest(), "one connection each stays");
        assert!(!ready(&mallory[1]) && !ready(&bob));
        assert!(admin.iter().all(|a| !ready(a)));
        drop((anonymous, handshaking, mallory, bob, admin));
        assert!(evictable.inner.lock().open.is_empty());
    }
}
