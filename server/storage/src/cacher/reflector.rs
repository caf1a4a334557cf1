//! The cache's single upstream: list the resource, then watch from the list's revision, apply
//! every event to the cache and fan it out to the watchers. On any upstream failure the
//! reflector relists (closing the cache's watchers, which then re-watch).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;

use super::Shared;
use super::state::{CachedEvent, CachedObject, ChangeKind};
use super::watcher::Dispatch;
use crate::errors::{Result, StorageError};
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
    Ok(CachedObject {
        object,
        attrs: Arc::new(attrs),
    })
}

/// Lists, then follows the watch; returns the error that ended it.
async fn list_and_watch(shared: &Arc<Shared>) -> StorageError {
    let prefix = shared.config.resource_prefix.clone();
    let list = match shared
        .storage
        .get_list(
            &prefix,
            ListOptions {
                recursive: true,
                ..ListOptions::default()
            },
        )
        .await
    {
        Ok(list) => list,
        Err(error) => return error,
    };
    let mut objects = Vec::with_capacity(list.items.len());
    for item in list.items {
        match cached(shared, item) {
            Ok(object) => objects.push(object),
            Err(error) => return error,
        }
    }
    let revision = list.resource_version;
    {
        let mut state = shared.state.write();
        state.replace(objects, revision);
        // Watchers were served from the previous incarnation; end their streams so they
        // re-watch against the new one.
        shared.watchers.lock().clear();
    }
    shared.revision.send_replace(revision);

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
    let mut bookmarks = tokio::time::interval(shared.config.bookmark_interval);
    bookmarks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            event = upstream.next() => {
                let Some(event) = event else {
                    return StorageError::unavailable("the upstream watch ended");
                };
                if let Err(error) = apply(shared, event) {
                    return error;
                }
            }
            _ = bookmarks.tick() => send_bookmarks(shared),
        }
    }
}

/// Applies one upstream event to the cache and dispatches it.
fn apply(shared: &Shared, event: WatchEvent) -> Result<()> {
    let (incoming, object) = match event {
        WatchEvent::Error(error) => return Err(error),
        WatchEvent::Bookmark {
            resource_version, ..
        } => {
            let revision = {
                let mut state = shared.state.write();
                state.revision = state.revision.max(resource_version);
                state.revision
            };
            shared.revision.send_replace(revision);
            return Ok(());
        }
        WatchEvent::Added(object) => (ChangeKind::Added, object),
        WatchEvent::Modified { object, .. } => (ChangeKind::Modified, object),
        WatchEvent::Deleted(object) => (ChangeKind::Deleted, object),
    };
    let current = cached(shared, object)?;
    let key = current.object.key.clone();
    let revision = current.object.resource_version;
    let mut state = shared.state.write();
    if revision < state.revision {
        // Already applied (the upstream never repeats events, but a relist may overlap).
        return Ok(());
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
    shared
        .watchers
        .lock()
        .retain(|watcher| matches!(watcher.offer(&event), Dispatch::Keep));
    drop(state);
    shared.revision.send_replace(revision);
    Ok(())
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
