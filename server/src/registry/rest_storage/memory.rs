//! [`InMemory`]: a [`RestStorage`](super::RestStorage) that keeps one kind's objects in memory,
//! with a bounded history of changes for watches. It implements every verb, passes the
//! [conformance suite](super::conformance), and is a starting point for a storage of one's
//! own: replace the map with another database and keep the resourceVersion and watch logic.
//!
//! ```
//! use std::sync::Arc;
//! use server::registry::rest_storage::{Creater, Getter, RestStorage, memory::InMemory};
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let kind = &kubernetes_api::core::CONFIG_MAP_KIND;
//! let memory = Arc::new(InMemory::new(kind).with_history(100));
//! let mut object = kind.storage().new_object();
//! object.metadata_mut().name = Some("settings".into());
//! object.metadata_mut().namespace = Some("default".into());
//! let stored = memory.create(object).await.unwrap();
//! assert_eq!(stored.metadata().resource_version.as_deref(), Some("1"));
//! let read = memory.get("default", "settings").await.unwrap();
//! assert_eq!(read.name(), "settings");
//! let storage = RestStorage::read_write(memory);
//! # });
//! ```

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use apimachinery::GroupResource;
use apimachinery::runtime::{Kind, Object};
use apimachinery::status::ApiError;
use async_trait::async_trait;
use futures::StreamExt;
use futures::channel::mpsc;
use parking_lot::Mutex;

use super::{
    Creater, Deleter, Event, EventStream, Getter, ListOptions, Lister, ObjectList, Preconditions,
    ResourceVersionMatch, Updater, Watcher,
};

/// How many changes an [`InMemory`] keeps for watches unless told otherwise.
pub const DEFAULT_HISTORY: usize = 1024;

/// What kind of change a history entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Change {
    Added,
    Modified,
    Deleted,
}

/// One change: its resourceVersion, the object after it (for a deletion, the last state with
/// the deletion's resourceVersion) and the object before it.
struct Entry {
    revision: u64,
    change: Change,
    object: Box<dyn Object>,
    previous: Option<Box<dyn Object>>,
}

/// One open watch.
struct Subscriber {
    options: ListOptions,
    sender: mpsc::UnboundedSender<Event>,
}

struct State {
    /// The objects by (namespace, name).
    objects: BTreeMap<(String, String), Box<dyn Object>>,
    /// The resourceVersion of the last write.
    revision: u64,
    /// The last changes, oldest first.
    history: VecDeque<Arc<Entry>>,
    /// Every change after this resourceVersion is in `history`: a watch from an older one is
    /// 410 Gone.
    oldest_resumable: u64,
    subscribers: Vec<Subscriber>,
}

/// One kind's objects in memory, with the last [`DEFAULT_HISTORY`] (or
/// [`InMemory::with_history`]) changes kept for watches. Lists ignore `limit` (they answer
/// the whole list, as the API allows). Watches send no periodic bookmarks. A watcher that
/// does not read its events holds them in memory until its request ends.
pub struct InMemory {
    kind: &'static Kind,
    resource: GroupResource,
    capacity: usize,
    state: Mutex<State>,
}

impl std::fmt::Debug for InMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemory")
            .field("resource", &self.resource)
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

fn key_of(object: &dyn Object) -> (String, String) {
    (object.namespace().to_string(), object.name().to_string())
}

fn with_revision(mut object: Box<dyn Object>, revision: u64) -> Box<dyn Object> {
    object.metadata_mut().resource_version = Some(revision.to_string());
    object
}

/// Parses a resourceVersion the server has checked (`""` and `"0"` are 0).
fn parse_revision(resource_version: &str) -> Result<u64, ApiError> {
    if resource_version.is_empty() {
        return Ok(0);
    }
    resource_version.parse().map_err(|_| {
        ApiError::bad_request(format!("invalid resource version {resource_version:?}"))
    })
}

impl InMemory {
    /// An empty storage of `kind`'s objects.
    pub fn new(kind: &'static Kind) -> Self {
        let info = kind.storage_info();
        Self {
            kind,
            resource: GroupResource::new(info.group, info.plural),
            capacity: DEFAULT_HISTORY,
            state: Mutex::new(State {
                objects: BTreeMap::new(),
                revision: 0,
                history: VecDeque::new(),
                oldest_resumable: 0,
                subscribers: Vec::new(),
            }),
        }
    }

    /// Keeps the last `changes` changes (at least one) for watches: a watch from a
    /// resourceVersion before them is 410 Gone.
    pub fn with_history(mut self, changes: usize) -> Self {
        self.capacity = changes.max(1);
        self
    }

    /// The resourceVersion of the last write (0 before the first).
    pub fn revision(&self) -> u64 {
        self.state.lock().revision
    }

    /// Forgets every change made so far (a compaction): a watch from any resourceVersion
    /// before the current one is then 410 Gone.
    pub fn compact(&self) {
        let mut state = self.state.lock();
        state.history.clear();
        state.oldest_resumable = state.revision;
    }

    /// Records a change, and sends it to every watcher it concerns (under the lock, so every
    /// watcher sees changes in order).
    fn record(&self, state: &mut State, entry: Entry) {
        let entry = Arc::new(entry);
        state
            .subscribers
            .retain(|s| match self.event_for(&s.options, &entry) {
                Some(event) => s.sender.unbounded_send(event).is_ok(),
                None => !s.sender.is_closed(),
            });
        state.history.push_back(entry);
        while state.history.len() > self.capacity {
            if let Some(dropped) = state.history.pop_front() {
                state.oldest_resumable = dropped.revision;
            }
        }
    }

    /// The event a watcher with `options` gets for a change, if any: selector transitions
    /// become ADDED and DELETED.
    fn event_for(&self, options: &ListOptions, entry: &Entry) -> Option<Event> {
        let now = options.matches(self.kind, &*entry.object);
        let before = entry
            .previous
            .as_deref()
            .is_some_and(|p| options.matches(self.kind, p));
        match (entry.change, before, now) {
            (Change::Added, _, true) => Some(Event::Added(entry.object.clone_object())),
            (Change::Modified, true, true) => Some(Event::Modified(entry.object.clone_object())),
            (Change::Modified, false, true) => Some(Event::Added(entry.object.clone_object())),
            (Change::Modified, true, false) => {
                let previous = entry.previous.as_deref()?.clone_object();
                Some(Event::Deleted(with_revision(previous, entry.revision)))
            }
            (Change::Deleted, _, true) => Some(Event::Deleted(entry.object.clone_object())),
            _ => None,
        }
    }

    fn check_preconditions(
        &self,
        current: &dyn Object,
        name: &str,
        pre: &Preconditions,
    ) -> Result<(), ApiError> {
        crate::registry::rest::check_delete_preconditions(
            &self.resource,
            name,
            current,
            pre.uid.as_deref(),
            pre.resource_version.as_deref(),
        )
    }
}

#[async_trait]
impl Getter for InMemory {
    async fn get(&self, namespace: &str, name: &str) -> Result<Box<dyn Object>, ApiError> {
        let state = self.state.lock();
        state
            .objects
            .get(&(namespace.to_string(), name.to_string()))
            .map(|o| o.clone_object())
            .ok_or_else(|| ApiError::not_found(&self.resource, name))
    }
}

#[async_trait]
impl Lister for InMemory {
    async fn list(&self, options: &ListOptions) -> Result<ObjectList, ApiError> {
        if !options.continue_token.is_empty() {
            return Err(ApiError::bad_request(
                "continue tokens are not supported: lists are never paginated",
            ));
        }
        let requested = parse_revision(&options.resource_version)?;
        let state = self.state.lock();
        if requested > state.revision && options.resource_version != "0" {
            return Err(ApiError::resource_version_too_large(
                requested as i64,
                state.revision as i64,
                1,
            ));
        }
        if options.resource_version_match == Some(ResourceVersionMatch::Exact)
            && requested != state.revision
        {
            return Err(ApiError::too_old_resource_version(
                requested as i64,
                state.revision as i64,
            ));
        }
        let items = state
            .objects
            .values()
            .filter(|o| options.matches(self.kind, &***o))
            .map(|o| o.clone_object())
            .collect();
        Ok(ObjectList {
            items,
            resource_version: state.revision.to_string(),
            continue_token: None,
            remaining_item_count: None,
        })
    }
}

#[async_trait]
impl Watcher for InMemory {
    async fn watch(&self, options: &ListOptions) -> Result<EventStream, ApiError> {
        let from = parse_revision(&options.resource_version)?;
        let (sender, receiver) = mpsc::unbounded();
        let mut state = self.state.lock();
        let mut initial = Vec::new();
        let from_now = options.resource_version.is_empty() || options.resource_version == "0";
        if from_now {
            if options.send_initial_events != Some(false) {
                initial.extend(
                    state
                        .objects
                        .values()
                        .filter(|o| options.matches(self.kind, &***o))
                        .map(|o| Event::Added(o.clone_object())),
                );
            }
            if options.send_initial_events == Some(true) && options.allow_bookmarks {
                initial.push(Event::Bookmark {
                    resource_version: state.revision.to_string(),
                    initial_events_end: true,
                });
            }
        } else {
            if from < state.oldest_resumable {
                return Err(ApiError::too_old_resource_version(
                    from as i64,
                    state.oldest_resumable as i64,
                ));
            }
            initial.extend(
                state
                    .history
                    .iter()
                    .filter(|e| e.revision > from)
                    .filter_map(|e| self.event_for(options, e)),
            );
        }
        state.subscribers.push(Subscriber {
            options: options.clone(),
            sender,
        });
        drop(state);
        Ok(futures::stream::iter(initial).chain(receiver).boxed())
    }
}

#[async_trait]
impl Creater for InMemory {
    async fn create(&self, object: Box<dyn Object>) -> Result<Box<dyn Object>, ApiError> {
        let key = key_of(&*object);
        let mut state = self.state.lock();
        if state.objects.contains_key(&key) {
            return Err(ApiError::already_exists(&self.resource, &key.1));
        }
        state.revision += 1;
        let stored = with_revision(object, state.revision);
        state.objects.insert(key, stored.clone_object());
        let revision = state.revision;
        self.record(
            &mut state,
            Entry {
                revision,
                change: Change::Added,
                object: stored.clone_object(),
                previous: None,
            },
        );
        Ok(stored)
    }
}

#[async_trait]
impl Updater for InMemory {
    async fn update(&self, object: Box<dyn Object>) -> Result<Box<dyn Object>, ApiError> {
        let key = key_of(&*object);
        let mut state = self.state.lock();
        let current = state
            .objects
            .get(&key)
            .ok_or_else(|| ApiError::not_found(&self.resource, &key.1))?;
        if current.metadata().resource_version != object.metadata().resource_version {
            return Err(ApiError::conflict_stale(&self.resource, &key.1));
        }
        state.revision += 1;
        let stored = with_revision(object, state.revision);
        let previous = state.objects.insert(key, stored.clone_object());
        let revision = state.revision;
        self.record(
            &mut state,
            Entry {
                revision,
                change: Change::Modified,
                object: stored.clone_object(),
                previous,
            },
        );
        Ok(stored)
    }
}

#[async_trait]
impl Deleter for InMemory {
    async fn delete(
        &self,
        namespace: &str,
        name: &str,
        preconditions: &Preconditions,
    ) -> Result<Box<dyn Object>, ApiError> {
        let key = (namespace.to_string(), name.to_string());
        let mut state = self.state.lock();
        let current = state
            .objects
            .get(&key)
            .ok_or_else(|| ApiError::not_found(&self.resource, name))?;
        self.check_preconditions(&**current, name, preconditions)?;
        let removed = state
            .objects
            .remove(&key)
            .ok_or_else(|| ApiError::not_found(&self.resource, name))?;
        state.revision += 1;
        let revision = state.revision;
        let event_object = with_revision(removed.clone_object(), revision);
        self.record(
            &mut state,
            Entry {
                revision,
                change: Change::Deleted,
                object: event_object,
                previous: Some(removed.clone_object()),
            },
        );
        Ok(removed)
    }
}

#[cfg(test)]
#[path = "memory_tests.rs"]
mod tests;
