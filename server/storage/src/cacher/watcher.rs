//! The watcher side of the cache: filters, bounded per-watcher channels, and the conversion of
//! shared cached events into [`WatchEvent`]s.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::{self, BoxStream};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::memo::EncodingKey;
use super::state::{CachedEvent, ChangeKind, Delivery};
use crate::errors::{Revision, StorageError};
use crate::interface::{Predicate, StoredObject, WatchEvent};

/// Which keys a watcher covers and which objects it wants.
#[derive(Debug, Clone)]
pub(crate) struct WatchFilter {
    /// For recursive watches the collection prefix (ending with `/`); otherwise the exact key.
    pub(crate) key: String,
    pub(crate) recursive: bool,
    pub(crate) predicate: Predicate,
    pub(crate) allow_bookmarks: bool,
}

impl WatchFilter {
    pub(crate) fn in_scope(&self, key: &str) -> bool {
        if self.recursive {
            key.starts_with(&self.key)
        } else {
            key == self.key
        }
    }

    /// How `event` is shown to this watcher, or `None` when it is not shown.
    pub(crate) fn delivery(&self, event: &CachedEvent) -> Option<Delivery> {
        if !self.in_scope(&event.key) {
            return None;
        }
        if self.predicate.is_everything() {
            return Some(Delivery::AsIs);
        }
        let current = event.current.matches(&self.predicate);
        match event.kind {
            ChangeKind::Added | ChangeKind::Deleted => current.then_some(Delivery::AsIs),
            ChangeKind::Modified => {
                let prev = event
                    .prev
                    .as_ref()
                    .is_some_and(|p| p.matches(&self.predicate));
                match (current, prev) {
                    (true, true) => Some(Delivery::AsIs),
                    (true, false) => Some(Delivery::Added),
                    (false, true) => Some(Delivery::DeletedPrev),
                    (false, false) => None,
                }
            }
        }
    }
}

/// What travels through a watcher's channel.
#[derive(Debug, Clone)]
pub(crate) enum Item {
    Event(Arc<CachedEvent>, Delivery),
    Bookmark(Revision, bool),
}

/// A watch event from the cache together with the memo of its encoded forms.
#[derive(Debug)]
pub struct MemoizedEvent {
    /// The event.
    pub event: WatchEvent,
    /// The memo shared by every watcher that receives this event in this form; `None` for
    /// bookmarks, errors, and watches the cache delegated to the storage underneath.
    pub memo: Option<MemoHandle>,
}

/// A handle on the memo of one event form; see [`MemoHandle::encoded`].
#[derive(Debug, Clone)]
pub struct MemoHandle {
    event: Arc<CachedEvent>,
    delivery: Delivery,
}

impl MemoHandle {
    /// The encoded form of this event for `key`, computed by `encode` only by the first watcher
    /// that asks; every other watcher of the same encoding gets the same bytes.
    pub fn encoded(&self, key: &EncodingKey, encode: impl FnOnce() -> Bytes) -> Bytes {
        self.event.memos[self.delivery as usize].encoded(key, encode)
    }
}

impl Item {
    /// Converts to the event the consumer sees.
    pub(crate) fn into_memoized(self) -> MemoizedEvent {
        match self {
            Item::Bookmark(resource_version, initial_events_end) => MemoizedEvent {
                event: WatchEvent::Bookmark {
                    resource_version,
                    initial_events_end,
                },
                memo: None,
            },
            Item::Event(event, delivery) => {
                let current = event.current.object.clone();
                let watch_event = match (delivery, event.kind) {
                    (Delivery::AsIs, ChangeKind::Added) | (Delivery::Added, _) => {
                        WatchEvent::Added(current)
                    }
                    (Delivery::AsIs, ChangeKind::Modified) => WatchEvent::Modified {
                        object: current,
                        prev: event.prev.as_ref().map(|p| p.object.data.clone()),
                    },
                    (Delivery::AsIs, ChangeKind::Deleted) => WatchEvent::Deleted(current),
                    (Delivery::DeletedPrev, _) => {
                        let prev = event.prev.as_ref().map_or(current, |p| StoredObject {
                            resource_version: event.revision,
                            ..p.object.clone()
                        });
                        WatchEvent::Deleted(prev)
                    }
                };
                MemoizedEvent {
                    event: watch_event,
                    memo: Some(MemoHandle { event, delivery }),
                }
            }
        }
    }
}

/// The cache's side of one watcher.
pub(crate) struct WatcherEntry {
    pub(crate) filter: WatchFilter,
    pub(crate) tx: mpsc::Sender<Item>,
    /// Set when the watcher was dropped because its buffer was full.
    pub(crate) overflowed: Arc<AtomicBool>,
}

/// What dispatching to one watcher did.
pub(crate) enum Dispatch {
    /// Delivered or not relevant; keep the watcher.
    Keep,
    /// The consumer went away or fell behind; remove the watcher.
    Remove,
}

impl WatcherEntry {
    /// Offers the events of one revision without waiting: all of them that this watcher
    /// wants, or none. A buffer without room for all closes this watcher (with an error on its
    /// stream), so a consumer never ends its stream in the middle of a revision and resumes
    /// from that revision without the rest of it.
    pub(crate) fn offer_revision(&self, events: &[Arc<CachedEvent>]) -> Dispatch {
        if let [event] = events {
            // The common case, without collecting the deliveries first.
            let Some(delivery) = self.filter.delivery(event) else {
                return Dispatch::Keep;
            };
            return match self.tx.try_send(Item::Event(Arc::clone(event), delivery)) {
                Ok(()) => Dispatch::Keep,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    self.overflowed.store(true, Ordering::Release);
                    Dispatch::Remove
                }
                Err(mpsc::error::TrySendError::Closed(_)) => Dispatch::Remove,
            };
        }
        let deliveries: Vec<_> = events
            .iter()
            .filter_map(|event| Some((event, self.filter.delivery(event)?)))
            .collect();
        if self.tx.is_closed() {
            return Dispatch::Remove;
        }
        // The cache is the only sender and holds the watcher registry's lock, so the room
        // can only grow between this check and the sends.
        if self.tx.capacity() < deliveries.len() {
            self.overflowed.store(true, Ordering::Release);
            return Dispatch::Remove;
        }
        for (event, delivery) in deliveries {
            if self
                .tx
                .try_send(Item::Event(Arc::clone(event), delivery))
                .is_err()
            {
                return Dispatch::Remove;
            }
        }
        Dispatch::Keep
    }

    /// Offers a bookmark; a full buffer just skips it. A watcher whose consumer went away is
    /// removed whether or not it takes bookmarks, so the periodic bookmark round also prunes
    /// the watchers of resources that see no events.
    pub(crate) fn offer_bookmark(&self, revision: Revision) -> Dispatch {
        if self.tx.is_closed() {
            return Dispatch::Remove;
        }
        if !self.filter.allow_bookmarks {
            return Dispatch::Keep;
        }
        match self.tx.try_send(Item::Bookmark(revision, false)) {
            Ok(()) | Err(mpsc::error::TrySendError::Full(_)) => Dispatch::Keep,
            Err(mpsc::error::TrySendError::Closed(_)) => Dispatch::Remove,
        }
    }
}

/// Builds a watcher: its registry entry and the consumer's stream, which yields `backlog` first,
/// then live items, then (if the watcher was closed for falling behind) an error.
pub(crate) fn new_watcher(
    filter: WatchFilter,
    backlog: Vec<Item>,
    buffer: usize,
) -> (WatcherEntry, BoxStream<'static, MemoizedEvent>) {
    let (tx, rx) = mpsc::channel(buffer.max(1));
    let overflowed = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&overflowed);
    let tail = stream::once(async move { flag.load(Ordering::Acquire) }).filter_map(
        move |overflowed| async move {
            overflowed.then(|| MemoizedEvent {
                event: WatchEvent::Error(StorageError::Unavailable {
                    message: format!(
                        "watch closed: the watcher did not keep up with its buffer of {} events",
                        buffer.max(1)
                    ),
                }),
                memo: None,
            })
        },
    );
    let stream = stream::iter(backlog)
        .chain(ReceiverStream::new(rx))
        .map(Item::into_memoized)
        .chain(tail)
        .boxed();
    (
        WatcherEntry {
            filter,
            tx,
            overflowed,
        },
        stream,
    )
}
