//! The cache's single upstream: list the resource, then watch from the list's revision, apply
//! every event to the cache and fan it out to the watchers. On any upstream failure the
//! reflector relists (closing the cache's watchers, which then re-watch).

use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt};

use super::Shared;
use super::state::{CachedEvent, CachedObject, ChangeKind};
use super::watcher::Dispatch;
use crate::errors::{Result, Revision, StorageError};
use crate::interface::{ListOptions, StoredObject, WatchEvent};

/// Runs forever (until the cacher is dropped and this task aborted).
pub(crate) async fn run(shared: Arc<Shared>) {
    let mut delay = Duration::from_millis(50);
    loop {
        let error = list_and_watch(&shared).await;
        tracing::warn!(
            prefix = %shared.config.resource_prefix,
            %error,
            "watch cache lost its upstream watch; relisting"
        );
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(2));
        if matches!(error, StorageError::Expired { .. }) {
            delay = Duration::from_millis(50);
        }
    }
}

fn cached(shared: &Shared, object: StoredObject) -> Result<CachedObject> {
    let attrs = shared.config.codec.attrs(&object.data)?;
    Ok(CachedObject::new(object, attrs))
}

/// The initial list is read in pages of this many objects (all at the first page's revision),
/// so the storage's transient copies of a large resource stay small.
const LIST_PAGE: i64 = 5_000;

/// Lists every object of the resource at one revision, page by page.
async fn list_all(shared: &Shared, prefix: &str) -> Result<(Vec<CachedObject>, Revision)> {
    let mut objects = Vec::new();
    let mut revision = None;
    let mut continue_token = String::new();
    loop {
        let page = shared
            .storage
            .get_list(
                prefix,
                ListOptions {
                    recursive: true,
                    limit: LIST_PAGE,
                    continue_token: std::mem::take(&mut continue_token),
                    ..ListOptions::default()
                },
            )
            .await?;
        let revision = *revision.get_or_insert(page.resource_version);
        let remaining = page.remaining_item_count.unwrap_or(0).max(0);
        objects.reserve(page.items.len() + usize::try_from(remaining).unwrap_or(0));
        for item in page.items {
            objects.push(cached(shared, item)?);
        }
        match page.continue_token {
            Some(token) if !token.is_empty() => continue_token = token,
            _ => return Ok((objects, revision)),
        }
    }
}

/// Lists, then follows the watch; returns the error that ended it.
async fn list_and_watch(shared: &Arc<Shared>) -> StorageError {
    let prefix = shared.config.resource_prefix.clone();
    let (objects, revision) = match list_all(shared, &prefix).await {
        Ok(list) => list,
        Err(error) => return error,
    };
    {
        let mut state = shared.state.write();
        state.replace(objects, revision);
        // Watchers were served from the previous incarnation; end their streams so they
        // re-watch against the new one.
        shared.watchers.lock().clear();
        shared.changed();
    }

    let mut upstream = match shared
        .storage
        .watch(
            &prefix,
            ListOptions {
                resource_version: revision.to_string(),
                recursive: true,
                allow_bookmarks: true,
                send_initial_events: Some(false),
                ..ListOptions::default()
            },
        )
        .await
    {
        Ok(stream) => stream,
        Err(error) => return error,
    };
    // Announced only once the upstream watch is open: a reader that waited for this revision
    // may then write and compact the storage without cancelling the cache's watch.
    shared.revision.send_replace(revision);
    let mut bookmarks = tokio::time::interval(shared.config.bookmark_interval);
    bookmarks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            event = upstream.next() => {
                let Some(event) = event else {
                    return StorageError::unavailable("the upstream watch ended");
                };
                // Every event of one storage revision is ready together (the storage's watch
                // yields them back to back): apply them as one group, so that no reader, watcher
                // or bookmark sees a revision half applied.
                let mut group = vec![event];
                let mut ended = false;
                loop {
                    match upstream.next().now_or_never() {
                        Some(Some(event)) => {
                            let split = group.len() >= GROUP_LIMIT
                                && group.last().and_then(revision_of) != revision_of(&event);
                            if split
                                && let Err(error) = apply(shared, std::mem::take(&mut group))
                            {
                                return error;
                            }
                            group.push(event);
                        }
                        Some(None) => {
                            ended = true;
                            break;
                        }
                        None => break,
                    }
                }
                if let Err(error) = apply(shared, group) {
                    return error;
                }
                if ended {
                    return StorageError::unavailable("the upstream watch ended");
                }
            }
            _ = bookmarks.tick() => send_bookmarks(shared),
        }
    }
}

/// Past this many ready events a group is applied at the next revision boundary.
const GROUP_LIMIT: usize = 1024;

/// The revision an upstream event carries.
fn revision_of(event: &WatchEvent) -> Option<Revision> {
    match event {
        WatchEvent::Added(object) | WatchEvent::Deleted(object) => Some(object.resource_version),
        WatchEvent::Modified { object, .. } => Some(object.resource_version),
        WatchEvent::Bookmark {
            resource_version, ..
        } => Some(*resource_version),
        WatchEvent::Error(_) => None,
    }
}

/// An upstream event ready to apply.
enum Change {
    Progress(Revision),
    Object(ChangeKind, CachedObject),
}

/// Applies a group of upstream events to the cache under one lock, dispatches them, and then
/// announces the new cache revision. An error event ends the group (after the events before
/// it were applied) and is returned.
fn apply(shared: &Shared, events: Vec<WatchEvent>) -> Result<()> {
    let mut changes = Vec::with_capacity(events.len());
    let mut failure = None;
    for event in events {
        let change = match event {
            WatchEvent::Error(error) => Err(error),
            WatchEvent::Bookmark {
                resource_version, ..
            } => Ok(Change::Progress(resource_version)),
            WatchEvent::Added(object) => {
                cached(shared, object).map(|o| Change::Object(ChangeKind::Added, o))
            }
            WatchEvent::Modified { object, .. } => {
                cached(shared, object).map(|o| Change::Object(ChangeKind::Modified, o))
            }
            WatchEvent::Deleted(object) => {
                cached(shared, object).map(|o| Change::Object(ChangeKind::Deleted, o))
            }
        };
        match change {
            Ok(change) => changes.push(change),
            Err(error) => {
                failure = Some(error);
                break;
            }
        }
    }
    let mut state = shared.state.write();
    let mut watchers = shared.watchers.lock();
    let mut applied: Vec<Arc<CachedEvent>> = Vec::with_capacity(changes.len());
    for change in changes {
        let (incoming, current) = match change {
            Change::Progress(revision) => {
                state.revision = state.revision.max(revision);
                continue;
            }
            Change::Object(kind, object) => (kind, object),
        };
        let key = current.object.key.clone();
        let revision = current.object.resource_version;
        if revision < state.revision {
            // Already applied (the upstream never repeats events, but a relist may overlap).
            continue;
        }
        let prev = state.objects.get(&key).cloned();
        let kind = match (incoming, &prev) {
            (ChangeKind::Deleted, _) => ChangeKind::Deleted,
            (_, Some(_)) => ChangeKind::Modified,
            (_, None) => ChangeKind::Added,
        };
        let event = Arc::new(CachedEvent {
            kind,
            revision,
            key,
            current,
            prev,
            memos: Default::default(),
        });
        state.push(Arc::clone(&event), shared.config.event_capacity);
        applied.push(event);
    }
    for revision in applied.chunk_by(|a, b| a.revision == b.revision) {
        watchers.retain(|watcher| matches!(watcher.offer_revision(revision), Dispatch::Keep));
    }
    drop(watchers);
    let revision = state.revision;
    if !applied.is_empty() {
        shared.changed();
    }
    drop(state);
    shared.revision.send_replace(revision);
    match failure {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// Sends a bookmark at the cache revision to every watcher that allows bookmarks.
fn send_bookmarks(shared: &Shared) {
    let state = shared.state.read();
    if !state.ready || state.revision == 0 {
        return;
    }
    let revision = state.revision;
    shared
        .watchers
        .lock()
        .retain(|watcher| matches!(watcher.offer_bookmark(revision), Dispatch::Keep));
}
