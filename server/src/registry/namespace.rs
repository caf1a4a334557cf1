//! Namespaces: their create defaults, the NamespaceLifecycle admission rule (namespaced
//! writes need an existing namespace that is not terminating) and namespace deletion, which
//! marks the namespace `Terminating`, deletes everything in it and then removes it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use apimachinery::status::ApiError;
use apimachinery::{GroupResource, Scheme};
use serde_json::{Value, json};

use super::meta::{is_deleting, meta_mut};
use super::store::{DeleteOptions, ResourceStore, mark_deleting};

/// The finalizer Kubernetes puts in `spec.finalizers` of every namespace.
pub const KUBERNETES_FINALIZER: &str = "kubernetes";

/// Create defaults of a namespace: `spec.finalizers: [kubernetes]`, `status.phase: Active`
/// and the `kubernetes.io/metadata.name` label.
pub fn prepare_namespace_create(object: &mut Value) {
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let labels = meta_mut(object)
        .entry("labels")
        .or_insert_with(|| json!({}));
    if let Some(l) = labels.as_object_mut() {
        l.insert("kubernetes.io/metadata.name".into(), Value::from(name));
    }
    if let Some(m) = object.as_object_mut() {
        m.insert("spec".into(), json!({"finalizers": [KUBERNETES_FINALIZER]}));
        m.insert("status".into(), json!({"phase": "Active"}));
    }
}

/// Whether a namespace is terminating.
pub fn is_terminating(ns: &Value) -> bool {
    is_deleting(ns) || ns.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating")
}

/// Namespaces whose deletion this server started recently. NamespaceLifecycle reads them
/// from storage rather than the watch cache, which may not have seen the deletion yet (as
/// kube-apiserver's admission plugin keeps a force-live-lookup cache of deleted namespaces).
///
/// It also remembers, per namespace, the resourceVersion at which the watch cache last showed
/// it active, so that a create in a namespace whose cached object has not changed since is
/// admitted without decoding that object again.
#[derive(Debug, Default)]
pub struct RecentNamespaceDeletions {
    started: parking_lot::Mutex<HashMap<String, Instant>>,
    active: parking_lot::RwLock<HashMap<String, i64>>,
}

impl RecentNamespaceDeletions {
    /// How long after a deletion starts the namespace is read from storage (kube: 30 s).
    const TTL: Duration = Duration::from_secs(30);

    /// The most namespaces whose active revision is remembered; beyond it the memo restarts.
    const MAX_ACTIVE: usize = 4096;

    /// Whether the cached namespace `name` at `revision` was already seen active.
    fn seen_active(&self, name: &str, revision: i64) -> bool {
        self.active.read().get(name) == Some(&revision)
    }

    /// Remembers that the cached namespace `name` at `revision` is active.
    fn remember_active(&self, name: &str, revision: i64) {
        let mut active = self.active.write();
        if active.len() >= Self::MAX_ACTIVE && !active.contains_key(name) {
            active.clear();
        }
        active.insert(name.to_string(), revision);
    }

    /// Records that deletion of `name` is starting.
    pub fn mark(&self, name: &str) {
        let mut started = self.started.lock();
        started.retain(|_, at| at.elapsed() < Self::TTL);
        started.insert(name.to_string(), Instant::now());
    }

    /// Whether deletion of `name` started within the last [`Self::TTL`].
    pub fn contains(&self, name: &str) -> bool {
        self.started
            .lock()
            .get(name)
            .is_some_and(|at| at.elapsed() < Self::TTL)
    }
}

/// NamespaceLifecycle: a namespaced create in `namespace` needs it to exist and not be
/// terminating. `resource`/`name` name the object for the 403 message. `recent` lists the
/// namespaces whose deletion this server started lately; they are always read from storage.
pub async fn check_namespace_for_create(
    namespaces: &ResourceStore,
    recent: &RecentNamespaceDeletions,
    namespace: &str,
    resource: &GroupResource,
    name: &str,
) -> Result<(), ApiError> {
    // As kube-apiserver's admission plugin answers from its informer, the watch cache answers
    // for a namespace it holds as active, unless this server started deleting it lately. A
    // namespace the cache lacks or shows terminating is read consistently from storage, so one
    // created (or recreated) just before is never refused.
    if !recent.contains(namespace)
        && let Ok(stored) = namespaces.get_stored("", namespace, "0").await
    {
        if recent.seen_active(namespace, stored.resource_version) {
            return Ok(());
        }
        if let Ok(cached) = namespaces.decode(&stored)
            && !is_terminating(&cached)
        {
            recent.remember_active(namespace, stored.resource_version);
            return Ok(());
        }
    }
    let ns = namespaces.try_get("", namespace).await?;
    match ns {
        None => Err(ApiError::not_found(
            &GroupResource::new("", "namespaces"),
            namespace,
        )),
        Some(ns) if is_terminating(&ns) => {
            let mut err = ApiError::forbidden(
                resource,
                name,
                &format!(
                    "unable to create new content in namespace {namespace} because it is being terminated"
                ),
            );
            err.details_mut()
                .causes
                .push(apimachinery::status::StatusCause {
                    reason: "NamespaceTerminating".into(),
                    message: format!("namespace {namespace} is being terminated"),
                    field: "metadata.namespace".into(),
                });
            Err(err)
        }
        Some(_) => Ok(()),
    }
}

/// Starts deleting a namespace: marks it `Terminating` with a deletionTimestamp and returns
/// the updated object; [`finalize_namespace`] does the rest in the background.
pub async fn begin_namespace_deletion(
    namespaces: &ResourceStore,
    name: &str,
) -> Result<Value, ApiError> {
    let (obj, _) = namespaces
        .update(
            "",
            name,
            false,
            false,
            Box::new(|cur| {
                let mut obj = cur.ok_or_else(|| {
                    ApiError::not_found(&GroupResource::new("", "namespaces"), name)
                })?;
                if !is_deleting(&obj) {
                    mark_deleting(&mut obj);
                }
                if let Some(m) = obj.as_object_mut() {
                    let status = m.entry("status").or_insert_with(|| json!({}));
                    status["phase"] = Value::from("Terminating");
                }
                Ok(obj)
            }),
        )
        .await?;
    Ok(obj)
}

/// Deletes every namespaced object in `namespace` (every kind of the scheme), waits for
/// them to disappear (finalizers of other controllers may delay them), then removes the
/// namespace's `kubernetes` finalizer and the namespace itself.
pub async fn finalize_namespace(
    stores: Vec<Arc<ResourceStore>>,
    namespaces: Arc<ResourceStore>,
    namespace: String,
) {
    for _attempt in 0..600 {
        let mut remaining = 0usize;
        for store in &stores {
            let Ok(items) = store.list_uncached(&namespace).await else {
                remaining += 1;
                continue;
            };
            for item in items {
                remaining += 1;
                let name = item
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                if !is_deleting(&item) {
                    let _ = store
                        .delete(&namespace, &name, &DeleteOptions::default())
                        .await;
                }
            }
        }
        if remaining == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let _ = namespaces
        .update(
            "",
            &namespace,
            false,
            false,
            Box::new(|cur| {
                let mut obj = cur.ok_or_else(|| {
                    ApiError::not_found(&GroupResource::new("", "namespaces"), &namespace)
                })?;
                if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.insert("finalizers".into(), json!([]));
                }
                Ok(obj)
            }),
        )
        .await;
    let _ = namespaces
        .delete("", &namespace, &DeleteOptions::default())
        .await;
}

/// The stores of every namespaced, stored kind of the scheme.
pub fn namespaced_kinds(scheme: &Scheme) -> Vec<Arc<dyn apimachinery::KindOps>> {
    scheme
        .kinds()
        .iter()
        .filter(|k| k.storage_version().namespaced() && !k.storage_version().create_only)
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_deletions_are_remembered_per_name() {
        let recent = RecentNamespaceDeletions::default();
        assert!(!recent.contains("doomed"));
        recent.mark("doomed");
        assert!(recent.contains("doomed"));
        assert!(!recent.contains("doomed2"));
    }
}
