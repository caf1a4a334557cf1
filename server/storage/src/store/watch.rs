//! Watches of the [`Store`]: optional initial state, then the backend's events converted to
//! Kubernetes watch events with the predicate applied to both the new and the previous state
//! (an object that stops matching is reported DELETED, one that starts matching ADDED).
//!
//! The events of one revision (several keys, only in etcd history another client wrote) come
//! back to back without waiting in between, so a consumer that takes every ready event at once
//! (the watch cache) sees a revision whole.

use futures::StreamExt;
use futures::stream;

use super::Store;
use crate::backend::{Event, EventKind, KeyValue, RangeRequest, WatchItem, WatchRequest};
use crate::errors::{Result, StorageError};
use crate::interface::{
    ListOptions, StoredObject, WatchEvent, WatchEventStream, parse_resource_version,
};
use crate::keys::collection_prefix;

/// Converts backend watch items for one watch.
struct Converter {
    store: Store,
    exact_key: Option<String>,
    opts: ListOptions,
}

impl Converter {
    fn in_scope(&self, key: &str) -> bool {
        self.exact_key.as_deref().is_none_or(|k| k == key)
    }

    fn matches(&self, object: &StoredObject) -> Result<bool> {
        if self.opts.predicate.is_everything() {
            return Ok(true);
        }
        Ok(self
            .opts
            .predicate
            .matches(&self.store.attrs(&object.data)?))
    }

    fn decode_value(&self, key: &str, value: &bytes::Bytes, revision: i64) -> Result<StoredObject> {
        let kv = KeyValue {
            key: key.to_string(),
            value: value.clone(),
            create_revision: 0,
            mod_revision: revision,
            ttl: None,
        };
        self.store.decode(&kv, revision)
    }

    fn convert_event(&self, event: &Event) -> Result<Option<WatchEvent>> {
        if !self.in_scope(&event.key) {
            return Ok(None);
        }
        let revision = event.mod_revision;
        let prev = match &event.prev_value {
            Some(v) => Some(self.decode_value(&event.key, v, revision)?),
            None => None,
        };
        match event.kind {
            EventKind::Delete => {
                let Some(prev) = prev else {
                    return Err(StorageError::internal(format!(
                        "delete event for {} at revision {revision} has no previous value",
                        event.key
                    )));
                };
                Ok(self.matches(&prev)?.then_some(WatchEvent::Deleted(prev)))
            }
            EventKind::Put => {
                let current = self.decode_value(&event.key, &event.value, revision)?;
                let current_matches = self.matches(&current)?;
                let Some(prev) = prev else {
                    return Ok(current_matches.then_some(WatchEvent::Added(current)));
                };
                let prev_matches = self.matches(&prev)?;
                Ok(match (current_matches, prev_matches) {
                    (true, true) => Some(WatchEvent::Modified {
                        object: current,
                        prev: Some(prev.data),
                    }),
                    (true, false) => Some(WatchEvent::Added(current)),
                    (false, true) => Some(WatchEvent::Deleted(prev)),
                    (false, false) => None,
                })
            }
        }
    }

    fn convert(&self, item: Result<WatchItem>) -> Vec<WatchEvent> {
        match item {
            Err(err) => vec![WatchEvent::Error(err)],
            Ok(WatchItem::Progress(revision)) => {
                if self.opts.allow_bookmarks {
                    vec![WatchEvent::Bookmark {
                        resource_version: revision,
                        initial_events_end: false,
                    }]
                } else {
                    Vec::new()
                }
            }
            Ok(WatchItem::Events(events)) => {
                let mut out = Vec::with_capacity(events.len());
                for event in &events {
                    match self.convert_event(event) {
                        Ok(Some(e)) => out.push(e),
                        Ok(None) => {}
                        Err(err) => {
                            out.push(WatchEvent::Error(err));
                            break;
                        }
                    }
                }
                out
            }
        }
    }
}

/// Opens a watch on `key` for `store`.
pub(super) async fn open(store: &Store, key: &str, opts: ListOptions) -> Result<WatchEventStream> {
    let rv = parse_resource_version(&opts.resource_version)?;
    let (prefix, exact_key) = if opts.recursive {
        (collection_prefix(key), None)
    } else {
        (key.to_string(), Some(key.to_string()))
    };
    let initial_required = opts.send_initial_events.unwrap_or(rv == 0);
    let end_bookmark = opts.send_initial_events == Some(true) && opts.allow_bookmarks;
    let progress_interval = opts
        .allow_bookmarks
        .then_some(store.config.bookmark_interval);
    let progress_requests = opts.allow_bookmarks.then(|| store.progress.subscribe());
    let converter = Converter {
        store: store.clone(),
        exact_key,
        opts,
    };
    let mut initial = Vec::new();
    let start_revision = if initial_required {
        let list = store
            .backend
            .range(RangeRequest {
                prefix: prefix.clone(),
                start: String::new(),
                limit: 0,
                revision: 0,
            })
            .await?;
        if rv > list.revision {
            return Err(StorageError::TooLargeResourceVersion {
                requested: rv,
                current: list.revision,
            });
        }
        for kv in &list.kvs {
            if !converter.in_scope(&kv.key) {
                continue;
            }
            let result = store
                .decode(kv, kv.mod_revision)
                .and_then(|o| Ok((converter.matches(&o)?, o)));
            match result {
                Ok((true, object)) => initial.push(WatchEvent::Added(object)),
                Ok((false, _)) => {}
                Err(err) => {
                    initial.push(WatchEvent::Error(err));
                    return Ok(stream::iter(initial).boxed());
                }
            }
        }
        if end_bookmark {
            initial.push(WatchEvent::Bookmark {
                resource_version: list.revision,
                initial_events_end: true,
            });
        }
        list.revision + 1
    } else if rv == 0 {
        // No initial state requested and no position given: from now on.
        0
    } else {
        rv + 1
    };
    let live = match store
        .backend
        .watch(WatchRequest {
            prefix,
            start_revision,
            progress_interval,
            progress_requests,
        })
        .await
    {
        Ok(s) => s
            .map(move |item| stream::iter(converter.convert(item)))
            .flatten()
            .boxed(),
        Err(err) => stream::once(async move { WatchEvent::Error(err) }).boxed(),
    };
    let events = stream::iter(initial)
        .chain(live)
        .scan(false, |done, event| {
            let out = if *done {
                None
            } else {
                *done = matches!(event, WatchEvent::Error(_));
                Some(event)
            };
            futures::future::ready(out)
        });
    Ok(events.boxed())
}
