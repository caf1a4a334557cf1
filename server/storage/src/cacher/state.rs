//! The cache's data: the objects at the cache revision, and a bounded ring of recent events.

use std::borrow::Borrow;
use std::collections::{BTreeSet, VecDeque};
use std::ops::Bound;
use std::sync::Arc;

use crate::errors::Revision;
use crate::interface::{ObjectAttrs, Predicate, StoredObject};

use super::attrs::CachedAttrs;
use super::memo::EncodedMemo;

/// One cached object with the attributes filters look at.
#[derive(Debug, Clone)]
pub(crate) struct CachedObject {
    pub(crate) object: StoredObject,
    attrs: CachedAttrs,
}

impl CachedObject {
    /// A cached object with the attributes its codec extracted.
    pub(crate) fn new(object: StoredObject, attrs: ObjectAttrs) -> Self {
        let attrs = CachedAttrs::new(&object.key, attrs);
        Self { object, attrs }
    }

    /// Whether the object matches `predicate`.
    pub(crate) fn matches(&self, predicate: &Predicate) -> bool {
        self.attrs.matches(&self.object.key, predicate)
    }
}

/// A [`CachedObject`] ordered and looked up by its storage key, so the index needs no second
/// copy of every key.
#[derive(Debug, Clone)]
struct ByKey(CachedObject);

impl PartialEq for ByKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.object.key == other.0.object.key
    }
}

impl Eq for ByKey {}

impl PartialOrd for ByKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ByKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.object.key.cmp(&other.0.object.key)
    }
}

impl Borrow<str> for ByKey {
    fn borrow(&self) -> &str {
        &self.0.object.key
    }
}

/// The cached objects in key order, indexed by the key each object carries.
#[derive(Debug, Default)]
pub(crate) struct ObjectIndex(BTreeSet<ByKey>);

impl ObjectIndex {
    /// The object stored under `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&CachedObject> {
        self.0.get(key).map(|o| &o.0)
    }

    /// Inserts or replaces the object under its key.
    pub(crate) fn insert(&mut self, object: CachedObject) {
        self.0.replace(ByKey(object));
    }

    /// Removes the object under `key`.
    pub(crate) fn remove(&mut self, key: &str) {
        self.0.remove(key);
    }

    /// The objects whose key is `>= from`, in key order.
    pub(crate) fn range_from<'a>(
        &'a self,
        from: &str,
    ) -> impl Iterator<Item = &'a CachedObject> + 'a {
        self.0
            .range::<str, _>((Bound::Included(from), Bound::Unbounded))
            .map(|o| &o.0)
    }
}

impl FromIterator<CachedObject> for ObjectIndex {
    fn from_iter<I: IntoIterator<Item = CachedObject>>(iter: I) -> Self {
        Self(iter.into_iter().map(ByKey).collect())
    }
}

/// The kind of a cached event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

/// One change as the cache saw it, shared by every watcher it is delivered to.
#[derive(Debug)]
pub(crate) struct CachedEvent {
    pub(crate) kind: ChangeKind,
    pub(crate) revision: Revision,
    pub(crate) key: String,
    /// The object after the change (for a delete: the last state, at the deletion revision).
    pub(crate) current: CachedObject,
    /// The object before the change, when it existed.
    pub(crate) prev: Option<CachedObject>,
    /// Encoded forms of this event, one memo per [`Delivery`] form.
    pub(crate) memos: [EncodedMemo; 3],
}

/// How an event is presented to one watcher, given its filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// As it happened (ADDED, MODIFIED or DELETED with the current object).
    AsIs = 0,
    /// ADDED with the current object: the object started matching the watcher's filter.
    Added = 1,
    /// DELETED with the previous object: the object stopped matching the watcher's filter.
    DeletedPrev = 2,
}

/// Objects and recent history.
#[derive(Debug, Default)]
pub(crate) struct CacheState {
    /// True once the initial list was loaded.
    pub(crate) ready: bool,
    /// Every event up to this revision is applied.
    pub(crate) revision: Revision,
    /// The objects, by key.
    pub(crate) objects: ObjectIndex,
    /// Recent events in revision order.
    pub(crate) events: VecDeque<Arc<CachedEvent>>,
    /// Watches from a revision `>= ring_start` can be served from `events`.
    pub(crate) ring_start: Revision,
}

impl CacheState {
    /// Replaces everything with a fresh list at `revision`.
    pub(crate) fn replace(&mut self, objects: Vec<CachedObject>, revision: Revision) {
        self.objects = objects.into_iter().collect();
        self.events.clear();
        self.revision = revision;
        self.ring_start = revision;
        self.ready = true;
    }

    /// Appends an event, keeping at most `capacity` events (whole revisions are evicted).
    pub(crate) fn push(&mut self, event: Arc<CachedEvent>, capacity: usize) {
        match event.kind {
            ChangeKind::Deleted => {
                self.objects.remove(&event.key);
            }
            ChangeKind::Added | ChangeKind::Modified => {
                self.objects.insert(event.current.clone());
            }
        }
        self.revision = self.revision.max(event.revision);
        self.events.push_back(event);
        while self.events.len() > capacity.max(1) {
            let Some(evicted) = self.events.pop_front() else {
                break;
            };
            // Watches after `evicted.revision` still find every later event.
            self.ring_start = self.ring_start.max(evicted.revision);
            while self
                .events
                .front()
                .is_some_and(|e| e.revision == evicted.revision)
            {
                self.events.pop_front();
            }
        }
    }

    /// Forgets the events at or below `revision`: watches from older revisions then get
    /// `Expired`, as they would from a compacted backend.
    pub(crate) fn compact(&mut self, revision: Revision) {
        while self.events.front().is_some_and(|e| e.revision <= revision) {
            self.events.pop_front();
        }
        self.ring_start = self.ring_start.max(revision.min(self.revision));
    }

    /// The events with a revision greater than `after`, or `None` when some were evicted.
    pub(crate) fn events_after(&self, after: Revision) -> Option<Vec<Arc<CachedEvent>>> {
        if after < self.ring_start {
            return None;
        }
        let start = self.events.partition_point(|e| e.revision <= after);
        Some(self.events.range(start..).cloned().collect())
    }
}
