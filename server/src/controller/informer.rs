//! [`Informer`]: client-go's reflector and shared informer over one kind's [`Store`] (its watch
//! cache). It lists the kind, watches from the list's resourceVersion, lists again when the
//! watch cannot resume (410 Gone) or ends, and reports every change, and every object again at
//! each resync, to a handler.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use storage::interface::{ListOptions, StoredObject, WatchEvent};

use super::ObjectKey;
use crate::registry::Store;

/// How long to wait before listing again after a list or watch failed.
const RETRY: Duration = Duration::from_secs(1);

/// What happened to an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// It appeared (created, or found by a list).
    Added,
    /// It changed.
    Modified,
    /// It was deleted (seen by the watch, or missing from a new list).
    Deleted,
    /// Nothing: a periodic resync reports every known object again.
    Resync,
}

/// One change an [`Informer`] reports.
#[derive(Clone, Debug)]
pub struct Notification {
    /// What happened.
    pub change: Change,
    /// The object's key.
    pub key: ObjectKey,
    /// The object as stored (for a deletion: its last state), decoded with
    /// [`Store::decode`].
    pub object: StoredObject,
}

/// Lists and watches one kind and reports its changes.
pub struct Informer {
    store: Arc<Store>,
    resync: Option<Duration>,
    /// The objects last seen, by key (client-go's indexer, without indexes).
    known: HashMap<ObjectKey, StoredObject>,
}

impl Informer {
    /// An informer over `store`, without periodic resync.
    pub fn new(store: Arc<Store>) -> Self {
        Self {
            store,
            resync: None,
            known: HashMap::new(),
        }
    }

    /// Reports every known object again ([`Change::Resync`]) every `period`.
    pub fn with_resync(mut self, period: Duration) -> Self {
        self.resync = Some(period);
        self
    }

    /// Runs until `stop` completes, calling `handler` for every change.
    pub async fn run(
        mut self,
        mut handler: impl FnMut(Notification) + Send,
        stop: impl Future<Output = ()> + Send,
    ) {
        let run = async {
            loop {
                let started = tokio::time::Instant::now();
                match self.list_and_watch(&mut handler).await {
                    // A watch that lasted is followed by a list at once; one that ended at
                    // once (or failed) waits first, so a failing storage is not spun on.
                    Ok(()) if started.elapsed() >= RETRY => {}
                    Ok(()) => tokio::time::sleep(RETRY).await,
                    Err(error) => {
                        tracing::warn!(resource = %self.store.resource(), %error, "informer: list or watch failed; listing again");
                        tokio::time::sleep(RETRY).await;
                    }
                }
            }
        };
        tokio::select! {
            _ = stop => {}
            () = run => {}
        }
    }

    /// Lists, reports the differences from what was known, then watches until the watch ends.
    /// `Ok` when the watch ended or could not resume (410 Gone), which calls for a new list.
    async fn list_and_watch(
        &mut self,
        handler: &mut (impl FnMut(Notification) + Send),
    ) -> Result<(), String> {
        let prefix = self.store.collection_key("").map_err(|e| e.to_string())?;
        let list = self
            .store
            .list_stored(
                "",
                ListOptions {
                    resource_version: "0".into(),
                    ..ListOptions::default()
                },
            )
            .await
            .map_err(|e| e.to_string())?;
        self.replace(&prefix, list.items, handler);
        let events = self
            .store
            .watch(
                &prefix,
                ListOptions {
                    resource_version: list.resource_version.to_string(),
                    recursive: true,
                    allow_bookmarks: true,
                    ..ListOptions::default()
                },
            )
            .await;
        let mut events = match events {
            Ok(events) => events,
            // Compacted past the list already: list again.
            Err(e) if e.code() == 410 => return Ok(()),
            Err(e) => return Err(e.to_string()),
        };
        let mut resync = self.resync.map(|period| {
            let mut timer = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
            timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            timer
        });
        loop {
            let tick = async {
                match resync.as_mut() {
                    Some(timer) => {
                        timer.tick().await;
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                event = events.next() => match event {
                    Some(WatchEvent::Added(object)) => self.apply(&prefix, Change::Added, object, handler),
                    Some(WatchEvent::Modified { object, .. }) => {
                        self.apply(&prefix, Change::Modified, object, handler)
                    }
                    Some(WatchEvent::Deleted(object)) => self.apply(&prefix, Change::Deleted, object, handler),
                    Some(WatchEvent::Bookmark { .. }) => {}
                    Some(WatchEvent::Error(e)) if e.is_expired() => return Ok(()),
                    Some(WatchEvent::Error(e)) => return Err(e.to_string()),
                    None => return Ok(()),
                },
                () = tick => {
                    for (key, object) in &self.known {
                        handler(Notification {
                            change: Change::Resync,
                            key: key.clone(),
                            object: object.clone(),
                        });
                    }
                }
            }
        }
    }

    /// The key of a stored object, from its storage key under `prefix`.
    fn key_of(&self, prefix: &str, object: &StoredObject) -> Option<ObjectKey> {
        let rest = object.key.strip_prefix(prefix)?;
        if self.store.info().namespaced() {
            let (namespace, name) = rest.split_once('/')?;
            Some(ObjectKey::new(namespace, name))
        } else {
            Some(ObjectKey::cluster(rest))
        }
    }

    /// Records and reports one watch event.
    fn apply(
        &mut self,
        prefix: &str,
        change: Change,
        object: StoredObject,
        handler: &mut (impl FnMut(Notification) + Send),
    ) {
        let Some(key) = self.key_of(prefix, &object) else {
            return;
        };
        if change == Change::Deleted {
            self.known.remove(&key);
        } else {
            self.known.insert(key.clone(), object.clone());
        }
        handler(Notification {
            change,
            key,
            object,
        });
    }

    /// Takes a new list as what is known, reporting what was added, changed or deleted since
    /// the last (client-go's `Replace`).
    fn replace(
        &mut self,
        prefix: &str,
        items: Vec<StoredObject>,
        handler: &mut (impl FnMut(Notification) + Send),
    ) {
        let mut previous = std::mem::take(&mut self.known);
        for object in items {
            let Some(key) = self.key_of(prefix, &object) else {
                continue;
            };
            let change = match previous.remove(&key) {
                None => Some(Change::Added),
                Some(old) if old.resource_version != object.resource_version => {
                    Some(Change::Modified)
                }
                Some(_) => None,
            };
            self.known.insert(key.clone(), object.clone());
            if let Some(change) = change {
                handler(Notification {
                    change,
                    key,
                    object,
                });
            }
        }
        for (key, object) in previous {
            handler(Notification {
                change: Change::Deleted,
                key,
                object,
            });
        }
    }
}
