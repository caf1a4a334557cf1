//! Routes committed batches from the writer to the watches whose prefix they touch.
//!
//! Each watch registers a bounded queue under its key prefix. After a commit the writer hands
//! the batch to every queue whose prefix one of its keys starts with, and to no other, so a
//! write wakes only the watches it concerns. Routing happens before the writer publishes the
//! new current revision: once a watcher has read the current revision `C`, every batch up to
//! `C` that concerns it is already in its queue, so after draining the queue it has processed
//! every revision up to `C` (the progress it reports). A queue that is full when a batch
//! arrives is dropped from the router; its watcher sees the queue close once it has read what
//! was queued, and replays the rest from the history.

use parking_lot::Mutex;
use tokio::sync::mpsc;

use super::EventBatch;

/// The watch queues of the embedded backend.
pub(crate) struct Router {
    routes: Mutex<Vec<Route>>,
    capacity: usize,
}

/// One watch's queue and the prefix it covers.
struct Route {
    prefix: String,
    queue: mpsc::Sender<EventBatch>,
}

impl Router {
    /// A router giving each watch a queue of `capacity` batches.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            routes: Mutex::new(Vec::new()),
            capacity: capacity.max(1),
        }
    }

    /// Registers a queue for the batches touching `prefix`; every batch routed after this call
    /// returns reaches it (or closes it when it is full).
    pub(crate) fn subscribe(&self, prefix: &str) -> mpsc::Receiver<EventBatch> {
        let (queue, receiver) = mpsc::channel(self.capacity);
        let mut routes = self.routes.lock();
        // Watches that ended are removed here as well as on the next routed batch, so a store
        // that is watched but not written does not accumulate them.
        routes.retain(|route| !route.queue.is_closed());
        routes.push(Route {
            prefix: prefix.to_string(),
            queue,
        });
        receiver
    }

    /// Hands `batch` to every queue whose prefix one of its keys starts with, dropping the
    /// queues that are full or whose watch ended.
    pub(crate) fn route(&self, batch: &EventBatch) {
        self.routes.lock().retain(|route| {
            if !batch
                .iter()
                .any(|event| event.key.starts_with(&route.prefix))
            {
                return !route.queue.is_closed();
            }
            route.queue.try_send(EventBatch::clone(batch)).is_ok()
        });
    }

    /// The number of registered queues (for tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.routes.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::sync::mpsc::error::TryRecvError;

    use super::*;
    use crate::backend::{Event, EventKind};

    fn batch(keys: &[&str], first: i64) -> EventBatch {
        keys.iter()
            .zip(first..)
            .map(|(key, revision)| Event {
                kind: EventKind::Put,
                key: key.to_string(),
                value: bytes::Bytes::new(),
                prev_value: None,
                create_revision: revision,
                mod_revision: revision,
            })
            .collect::<Vec<_>>()
            .into()
    }

    #[test]
    fn a_batch_reaches_only_the_queues_of_the_prefixes_it_touches() {
        let router = Router::new(4);
        let mut widgets = router.subscribe("/w/");
        let mut gadgets = router.subscribe("/g/");
        let mut everything = router.subscribe("/");
        let sent = batch(&["/w/a", "/w/b"], 2);
        router.route(&sent);
        assert!(Arc::ptr_eq(&widgets.try_recv().expect("routed"), &sent));
        assert!(Arc::ptr_eq(&everything.try_recv().expect("routed"), &sent));
        assert_eq!(gadgets.try_recv(), Err(TryRecvError::Empty));
        assert_eq!(router.len(), 3);
    }

    #[test]
    fn a_full_queue_is_closed_after_what_it_holds_and_an_ended_watch_is_removed() {
        let router = Router::new(1);
        let mut slow = router.subscribe("/w/");
        let ended = router.subscribe("/g/");
        drop(ended);
        router.route(&batch(&["/w/a"], 2));
        router.route(&batch(&["/w/b"], 3));
        assert_eq!(
            router.len(),
            0,
            "the full queue and the ended watch are dropped"
        );
        assert_eq!(slow.try_recv().expect("the first batch")[0].key, "/w/a");
        assert_eq!(slow.try_recv(), Err(TryRecvError::Disconnected));
    }
}
