//! Test support shared by every backend's tests: a JSON object codec, object builders, and the
//! backend-neutral conformance suite.
//!
//! Hidden from the documentation; it is public so the etcd backend's and the watch cache's
//! tests can run the same suite (see [`conformance_tests!`](crate::conformance_tests)).

pub mod conformance;
pub mod watch_conformance;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use futures::future::BoxFuture;

use crate::backend::Backend;
use crate::errors::{Result, StorageError};
use crate::interface::{Interface, ObjectAttrs, ObjectCodec, WatchEvent, WatchEventStream};
use crate::keys::ResourceKeys;

/// Decodes the test objects: JSON with `metadata.{name,namespace,uid,labels}`.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonTestCodec;

impl ObjectCodec for JsonTestCodec {
    fn attrs(&self, data: &[u8]) -> Result<ObjectAttrs> {
        let value: serde_json::Value =
            serde_json::from_slice(data).map_err(|e| StorageError::InvalidObj {
                key: String::new(),
                message: format!("test object is not JSON: {e}"),
            })?;
        let meta = &value["metadata"];
        let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
        let labels = meta["labels"]
            .as_object()
            .map(|m| m.iter().map(|(k, v)| (k.as_str(), text(v))).collect())
            .unwrap_or_default();
        let fields = [
            ("metadata.name", text(&meta["name"])),
            ("metadata.namespace", text(&meta["namespace"])),
        ]
        .into_iter()
        .collect();
        Ok(ObjectAttrs {
            uid: text(&meta["uid"]),
            labels,
            fields,
        })
    }
}

/// Builds a test object.
pub fn object(namespace: &str, name: &str, labels: &[(&str, &str)], spec: &str) -> Bytes {
    let labels: serde_json::Map<String, serde_json::Value> = labels
        .iter()
        .map(|(k, v)| ((*k).to_string(), serde_json::Value::from(*v)))
        .collect();
    let value = serde_json::json!({
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": format!("uid-{namespace}-{name}"),
            "labels": labels,
        },
        "spec": spec,
    });
    Bytes::from(value.to_string())
}

/// Reads the `spec` of a test object.
pub fn spec_of(data: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(data)
        .ok()
        .and_then(|v| v["spec"].as_str().map(str::to_string))
        .unwrap_or_default()
}

/// What one conformance case runs against.
pub struct TestContext {
    /// The storage under test.
    pub store: Arc<dyn Interface>,
    /// The backend underneath (used to compact).
    pub backend: Arc<dyn Backend>,
    /// The key layout of the test resource; factories give each context its own resource so
    /// cases can share one backend (for example one etcd).
    pub keys: ResourceKeys,
    /// Keeps whatever the context needs alive (temporary directories, tasks).
    pub guard: Box<dyn std::any::Any + Send + Sync>,
}

/// Creates a fresh [`TestContext`] per case. The store must use [`JsonTestCodec`] and a
/// bookmark interval of at most one second.
pub type Factory = Arc<dyn Fn() -> BoxFuture<'static, TestContext> + Send + Sync>;

/// How long a case waits for an expected watch event.
pub const WAIT: Duration = Duration::from_secs(10);

/// Waits for the next event of a watch, failing the test after [`WAIT`].
pub async fn next_event(stream: &mut WatchEventStream) -> WatchEvent {
    match tokio::time::timeout(WAIT, stream.next()).await {
        Ok(Some(event)) => event,
        Ok(None) => panic!("watch ended unexpectedly"),
        Err(_) => panic!("no watch event within {WAIT:?}"),
    }
}

/// Waits for the next event that is not a bookmark.
pub async fn next_non_bookmark(stream: &mut WatchEventStream) -> WatchEvent {
    loop {
        let event = next_event(stream).await;
        if !matches!(event, WatchEvent::Bookmark { .. }) {
            return event;
        }
    }
}

/// Asserts that no non-bookmark event arrives within `wait`.
pub async fn expect_no_event(stream: &mut WatchEventStream, wait: Duration) {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Err(_) => return,
            Ok(Some(WatchEvent::Bookmark { .. })) => continue,
            Ok(other) => panic!("unexpected watch event {other:?}"),
        }
    }
}

/// Generates one `#[tokio::test]` per conformance case for a factory expression of type
/// [`Factory`].
#[macro_export]
macro_rules! conformance_tests {
    ($factory:expr) => {
        $crate::conformance_tests!(@cases $factory;
            conformance::create,
            conformance::create_with_ttl,
            conformance::create_key_exists,
            conformance::get,
            conformance::get_too_large_resource_version,
            conformance::unconditional_delete,
            conformance::conditional_delete,
            conformance::delete_with_stale_suggestion,
            conformance::delete_validation,
            conformance::guaranteed_update,
            conformance::guaranteed_update_ignore_not_found,
            conformance::guaranteed_update_preconditions,
            conformance::guaranteed_update_conflicts,
            conformance::guaranteed_update_stale_suggestion,
            conformance::list_recursive_and_single,
            conformance::list_namespace_prefix,
            conformance::list_pagination,
            conformance::list_continue_after_compaction,
            conformance::list_continue_with_filter,
            conformance::list_resource_version_match,
            conformance::count,
            conformance::invalid_keys,
            conformance::consistent_reads_see_acknowledged_writes,
            watch_conformance::watch_from_zero,
            watch_conformance::watch_from_resource_version,
            watch_conformance::watch_delete,
            watch_conformance::watch_single_key,
            watch_conformance::watch_predicate_transitions,
            watch_conformance::watch_error_after_compaction,
            watch_conformance::watch_cancel,
            watch_conformance::watch_bookmarks,
            watch_conformance::watch_initial_events,
            watch_conformance::watch_without_initial_events,
            watch_conformance::watch_ordering_under_concurrency,
        );
    };
    (@cases $factory:expr; $($module:ident :: $case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let factory: $crate::testing::Factory = $factory;
                $crate::testing::$module::$case(&factory).await;
            }
        )*
    };
}
