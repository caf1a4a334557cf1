//! The namespace controller (kube-controller-manager's, run in-process): a namespace whose
//! deletion started is `Terminating` and holds the `kubernetes` finalizer; the controller
//! deletes every namespaced object in it (of every stored kind), waits until they are gone
//! (other finalizers may delay them), then removes the finalizer through the namespace's
//! `finalize` subresource, and the store removes the namespace.
//!
//! It runs on the controller runtime ([`server::controller`]): a namespace is reconciled when it
//! changes and every 5 s (its resync), so a deletion interrupted by a restart is finished by
//! the next server. One reconcile is one pass over the namespace's contents (Kubernetes'
//! `deleteAllContent`); while anything is left, the namespace is looked at again after 500 ms,
//! without holding a worker meanwhile. Each pass records what it found in the namespace's
//! status conditions, as Kubernetes' namespace deleter does (`NamespaceContentRemaining`,
//! `NamespaceFinalizersRemaining`, `NamespaceDeletionContentFailure`, and the discovery and
//! group-version conditions, which never fail here: the kinds are known).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use apimachinery::Scheme;
use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use async_trait::async_trait;
use kubernetes_api::core::NAMESPACE_KIND;
use kubernetes_api::core::strategy::KUBERNETES_FINALIZER;
use kubernetes_api::core::v1::{Namespace, NamespaceCondition};

use crate::admission::namespace_lifecycle::is_terminating;
use server::controller::{Action, Controller, ExponentialBackoff, Mutate, ObjectKey, Reconciler};
use server::registry::{DeleteOptions, NoAdmission, Registry, Store, UpdateOptions};

/// The controller's name (kube-controller-manager's).
const NAME: &str = "namespace-controller";

/// How often every namespace is looked at, besides on change.
const RESYNC: Duration = Duration::from_secs(5);

/// How long to wait between passes over a namespace's contents.
const RETRY: Duration = Duration::from_millis(500);

/// How many namespaces are emptied at once (kube-controller-manager's
/// `--concurrent-namespace-syncs`).
const WORKERS: usize = 10;

/// The backoff of a namespace whose pass failed (Kubernetes' namespace controller: 5 ms
/// doubling up to 60 s).
const BACKOFF: ExponentialBackoff = ExponentialBackoff {
    base: Duration::from_millis(5),
    max: Duration::from_secs(60),
};

/// The reconciler of namespaces: the stores it reads and deletes through.
pub struct NamespaceController {
    registry: Arc<Registry>,
    scheme: Arc<Scheme>,
    namespaces: Arc<Store>,
}

impl NamespaceController {
    /// The controller over the namespace store of `registry`, emptying namespaces of the
    /// namespaced kinds of `scheme`, ready to be started.
    pub fn new(registry: Arc<Registry>, scheme: Arc<Scheme>) -> Result<Controller<Self>, ApiError> {
        let namespaces = registry.store(&NAMESPACE_KIND)?;
        let reconciler = Self {
            registry,
            scheme,
            namespaces: namespaces.clone(),
        };
        Ok(Controller::new(NAME, namespaces, reconciler)
            .workers(WORKERS)
            .backoff(BACKOFF)
            .resync(RESYNC))
    }

    /// The stores of every namespaced, stored kind: the scheme's, and those of kinds defined
    /// at run time (custom resources), whose objects go with their namespace too.
    fn namespaced_stores(&self) -> Result<Vec<Arc<Store>>, ApiError> {
        let mut stores: Vec<Arc<Store>> = self
            .scheme
            .kinds()
            .iter()
            .filter(|k| {
                let info = k.storage_info();
                info.namespaced() && !info.create_only
            })
            .map(|k| self.registry.store(k))
            .collect::<Result<_, _>>()?;
        for store in self.registry.stores() {
            let info = store.info();
            if info.namespaced()
                && !info.create_only
                && self.scheme.by_resource(info.group, info.plural).is_none()
            {
                stores.push(store);
            }
        }
        Ok(stores)
    }

    /// One pass over `namespace`'s contents: deletes every object not being deleted yet, and
    /// returns what it found.
    async fn delete_contents(&self, namespace: &str) -> Result<Contents, ApiError> {
        let mut contents = Contents::default();
        for store in self.namespaced_stores()? {
            let items = match store.list_uncached(namespace).await {
                Ok(items) => items,
                Err(e) => {
                    contents.found += 1;
                    contents.failures.push(e.to_string());
                    continue;
                }
            };
            let info = store.info();
            for item in items {
                contents.found += 1;
                let mut left = item.metadata().deletion_timestamp.is_some();
                if !left {
                    // A failed delete leaves the object, which the next pass finds again.
                    let deleted = store
                        .delete(
                            namespace,
                            item.name(),
                            &NoAdmission,
                            &DeleteOptions::default(),
                        )
                        .await;
                    left = match deleted {
                        Ok(_) => !item.metadata().finalizers.is_empty(),
                        Err(e) if e.code() == 404 => false,
                        Err(e) => {
                            contents.failures.push(e.to_string());
                            true
                        }
                    };
                }
                if left {
                    *contents
                        .remaining
                        .entry((info.plural.to_string(), info.group.to_string()))
                        .or_default() += 1;
                    for finalizer in &item.metadata().finalizers {
                        *contents.finalizers.entry(finalizer.clone()).or_default() += 1;
                    }
                }
            }
        }
        Ok(contents)
    }

    /// Writes the deletion conditions of what `contents` found into the namespace's status
    /// (through `/status`), if they changed.
    async fn record(&self, namespace: &Namespace, contents: &Contents) -> Result<(), ApiError> {
        let conditions = contents.conditions();
        let mut status = namespace.status.clone();
        if !merge_conditions(&mut status.conditions, &conditions) {
            return Ok(());
        }
        let write = Mutate(move |o: &mut dyn Object| {
            if let Some(ns) = o.downcast_mut::<Namespace>() {
                merge_conditions(&mut ns.status.conditions, &conditions);
            }
        });
        let options = UpdateOptions {
            subresource: "status",
            force_allow_create: false,
            dry_run: false,
        };
        let name = namespace.metadata.name.as_deref().unwrap_or_default();
        match self
            .namespaces
            .update("", name, &write, &NoAdmission, &NoAdmission, options)
            .await
        {
            // Gone meanwhile: nothing to record.
            Err(e) if e.code() == 404 => Ok(()),
            other => other.map(|_| ()),
        }
    }

    /// Removes the `kubernetes` finalizer through the `finalize` subresource.
    async fn finalize(&self, namespace: &str) -> Result<(), ApiError> {
        let remove = Mutate(|o: &mut dyn Object| {
            if let Some(ns) = o.downcast_mut::<Namespace>() {
                ns.spec.finalizers.retain(|f| f != KUBERNETES_FINALIZER);
            }
        });
        let options = UpdateOptions {
            subresource: "finalize",
            force_allow_create: false,
            dry_run: false,
        };
        match self
            .namespaces
            .update("", namespace, &remove, &NoAdmission, &NoAdmission, options)
            .await
        {
            Ok(_) => Ok(()),
            // Finalized meanwhile (by another replica, say).
            Err(e) if e.code() == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }
}

#[async_trait]
impl Reconciler for NamespaceController {
    type Error = ApiError;

    /// Kubernetes' `namespacedResourcesDeleter.Delete`: nothing for a namespace that is gone,
    /// not terminating, or no longer holds the `kubernetes` finalizer; otherwise one pass over
    /// its contents, then, once nothing is left, the finalizer's removal.
    async fn reconcile(&self, key: &ObjectKey) -> Result<Action, ApiError> {
        let Some(object) = self.namespaces.try_get("", &key.name).await? else {
            return Ok(Action::Done);
        };
        let Some(namespace) = object.downcast_ref::<Namespace>() else {
            return Ok(Action::Done);
        };
        let finalized = !namespace
            .spec
            .finalizers
            .iter()
            .any(|f| f == KUBERNETES_FINALIZER);
        if !is_terminating(namespace) || finalized {
            return Ok(Action::Done);
        }
        let contents = self.delete_contents(&key.name).await?;
        self.record(namespace, &contents).await?;
        if contents.found > 0 {
            return Ok(Action::RequeueAfter(RETRY));
        }
        self.finalize(&key.name).await?;
        Ok(Action::Done)
    }
}

/// What one pass over a namespace's contents found.
#[derive(Default)]
struct Contents {
    /// Objects found (a kind that could not be listed counts as one).
    found: usize,
    /// The objects still there after the pass, by resource and group.
    remaining: BTreeMap<(String, String), usize>,
    /// The finalizers those objects hold, with how many hold each.
    finalizers: BTreeMap<String, usize>,
    /// Lists and deletes that failed.
    failures: Vec<String>,
}

impl Contents {
    /// The deletion conditions of what was found, in Kubernetes' order and words (its
    /// `namespaceConditionUpdater`): each is `True` with what went wrong, or `False` with its
    /// "ok" reason and message. Discovery and group versions never fail here: the kinds are
    /// known.
    fn conditions(&self) -> Vec<NamespaceCondition> {
        let content_failure = (!self.failures.is_empty()).then(|| {
            let mut failures = self.failures.clone();
            failures.sort();
            let message = format!(
                "Failed to delete all resource types, {} remaining: {}",
                failures.len(),
                failures.join(", ")
            );
            ("ContentDeletionFailed", message)
        });
        let remaining = (!self.remaining.is_empty()).then(|| {
            let left: Vec<String> = self
                .remaining
                .iter()
                .map(|((resource, group), n)| {
                    format!("{resource}.{group} has {n} resource instances")
                })
                .collect();
            let message = format!("Some resources are remaining: {}", left.join(", "));
            ("SomeResourcesRemain", message)
        });
        let finalizers = (!self.finalizers.is_empty()).then(|| {
            let left: Vec<String> = self
                .finalizers
                .iter()
                .map(|(finalizer, n)| format!("{finalizer} in {n} resource instances"))
                .collect();
            let message = format!("Some finalizers are remaining: {}", left.join(", "));
            ("SomeFinalizerRemain", message)
        });
        vec![
            condition(
                "NamespaceDeletionDiscoveryFailure",
                None,
                (
                    "ResourcesDiscovered",
                    "All resources successfully discovered",
                ),
            ),
            condition(
                "NamespaceDeletionGroupVersionParsingFailure",
                None,
                (
                    "ParsedGroupVersions",
                    "All legacy kube types successfully parsed",
                ),
            ),
            condition(
                "NamespaceDeletionContentFailure",
                content_failure,
                (
                    "ContentDeleted",
                    "All content successfully deleted, may be waiting on finalization",
                ),
            ),
            condition(
                "NamespaceContentRemaining",
                remaining,
                ("ContentRemoved", "All content successfully removed"),
            ),
            condition(
                "NamespaceFinalizersRemaining",
                finalizers,
                ("ContentRemoved", "All content successfully removed"),
            ),
        ]
    }
}

/// A condition of type `kind`, as of now: `True` with the reason and message of `failing`,
/// else `False` with those of `ok`.
fn condition(kind: &str, failing: Option<(&str, String)>, ok: (&str, &str)) -> NamespaceCondition {
    let (status, reason, message) = match failing {
        Some((reason, message)) => ("True", reason, message),
        None => ("False", ok.0, ok.1.to_string()),
    };
    NamespaceCondition {
        r#type: kind.into(),
        status: status.into(),
        last_transition_time: Some(apimachinery::meta::Time::now()),
        reason: Some(reason.into()),
        message: Some(message),
    }
}

/// Sets each of `wanted` in `conditions` (Kubernetes' `updateConditions`): a missing type is
/// added, a changed one takes the new status, reason and message (and the new transition time
/// only when its status changed). Returns whether anything changed.
fn merge_conditions(
    conditions: &mut Vec<NamespaceCondition>,
    wanted: &[NamespaceCondition],
) -> bool {
    let mut changed = false;
    for new in wanted {
        match conditions.iter_mut().find(|c| c.r#type == new.r#type) {
            None => {
                conditions.push(new.clone());
                changed = true;
            }
            Some(old)
                if old.status != new.status
                    || old.reason != new.reason
                    || old.message != new.message =>
            {
                if old.status != new.status {
                    old.last_transition_time = new.last_transition_time;
                }
                old.status = new.status.clone();
                old.reason = new.reason.clone();
                old.message = new.message.clone();
                changed = true;
            }
            Some(_) => {}
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use apimachinery::meta::ObjectMeta;
    use kubernetes_api::core::CONFIG_MAP_KIND;
    use kubernetes_api::core::v1::ConfigMap;

    use super::*;

    /// A hold on a ConfigMap that only this test removes.
    const HOLD: &str = "example.com/hold";

    fn config_map(name: &str, finalizers: &[&str]) -> Box<dyn Object> {
        Box::new(ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("doomed".into()),
                finalizers: finalizers.iter().map(|f| f.to_string()).collect(),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        })
    }

    /// Waits until `check` holds; panics with `what` after 5 s.
    async fn eventually<F, Fut>(what: &str, check: F)
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        super::super::test_support::eventually(|| async {
            if check().await {
                Ok(())
            } else {
                Err(what.to_string())
            }
        })
        .await
    }

    #[test]
    fn a_condition_keeps_its_transition_time_until_its_status_changes() {
        let condition = |status: &str, message: &str, at: i64| NamespaceCondition {
            r#type: "NamespaceContentRemaining".into(),
            status: status.into(),
            last_transition_time: Some(apimachinery::meta::Time::from_timestamp(at)),
            reason: Some("SomeResourcesRemain".into()),
            message: Some(message.into()),
        };
        let mut conditions = vec![condition("True", "two left", 100)];
        assert!(!merge_conditions(
            &mut conditions,
            &[condition("True", "two left", 200)]
        ));
        assert!(merge_conditions(
            &mut conditions,
            &[condition("True", "one left", 300)]
        ));
        assert_eq!(conditions, [condition("True", "one left", 100)]);
        assert!(merge_conditions(
            &mut conditions,
            &[condition("False", "one left", 400)]
        ));
        assert_eq!(conditions, [condition("False", "one left", 400)]);
    }

    #[tokio::test]
    async fn a_terminating_namespace_is_emptied_then_finalized_once_its_contents_are_gone() {
        let (_dir, registry) = super::super::test_support::registry();
        let scheme = Arc::new(kubernetes_api::scheme());
        let namespaces = registry
            .store(&NAMESPACE_KIND)
            .unwrap_or_else(|e| panic!("{e}"));
        let config_maps = registry
            .store(&CONFIG_MAP_KIND)
            .unwrap_or_else(|e| panic!("{e}"));
        for name in ["doomed", "kept"] {
            let ns = Namespace {
                metadata: ObjectMeta {
                    name: Some(name.into()),
                    ..ObjectMeta::default()
                },
                ..Namespace::default()
            };
            namespaces
                .create(Box::new(ns), &NoAdmission, false)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        }
        for (name, finalizers) in [("plain", &[][..]), ("held", &[HOLD][..])] {
            config_maps
                .create(config_map(name, finalizers), &NoAdmission, false)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let controller =
            NamespaceController::new(registry.clone(), scheme).unwrap_or_else(|e| panic!("{e}"));
        let running = tokio::spawn(controller.run(std::future::pending()));

        // A namespace that is not terminating is left alone.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let left = config_maps.list_uncached("doomed").await.map(|l| l.len());
        assert_eq!(left.ok(), Some(2));

        namespaces
            .delete("", "doomed", &NoAdmission, &DeleteOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        // Its contents are deleted; the held ConfigMap stays, being deleted, and so does the
        // namespace, terminating with its finalizer.
        eventually("the plain ConfigMap was not deleted", || async {
            matches!(config_maps.try_get("doomed", "plain").await, Ok(None))
        })
        .await;
        eventually("the held ConfigMap was not marked deleted", || async {
            matches!(config_maps.try_get("doomed", "held").await,
                Ok(Some(o)) if o.metadata().deletion_timestamp.is_some())
        })
        .await;
        tokio::time::sleep(Duration::from_millis(1200)).await;
        let ns = namespaces
            .get("", "doomed", "")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let ns = ns.downcast_ref::<Namespace>().cloned().unwrap_or_default();
        assert_eq!(ns.status.phase.as_deref(), Some("Terminating"));
        assert_eq!(ns.spec.finalizers, [KUBERNETES_FINALIZER]);
        // Its status says what is left, as Kubernetes' namespace controller writes it.
        let conditions: Vec<(&str, &str, &str, &str)> = ns
            .status
            .conditions
            .iter()
            .map(|c| {
                (
                    c.r#type.as_str(),
                    c.status.as_str(),
                    c.reason.as_deref().unwrap_or_default(),
                    c.message.as_deref().unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(
            conditions,
            [
                (
                    "NamespaceDeletionDiscoveryFailure",
                    "False",
                    "ResourcesDiscovered",
                    "All resources successfully discovered"
                ),
                (
                    "NamespaceDeletionGroupVersionParsingFailure",
                    "False",
                    "ParsedGroupVersions",
                    "All legacy kube types successfully parsed"
                ),
                (
                    "NamespaceDeletionContentFailure",
                    "False",
                    "ContentDeleted",
                    "All content successfully deleted, may be waiting on finalization"
                ),
                (
                    "NamespaceContentRemaining",
                    "True",
                    "SomeResourcesRemain",
                    "Some resources are remaining: configmaps. has 1 resource instances"
                ),
                (
                    "NamespaceFinalizersRemaining",
                    "True",
                    "SomeFinalizerRemain",
                    "Some finalizers are remaining: example.com/hold in 1 resource instances"
                ),
            ]
        );
        assert!(
            ns.status
                .conditions
                .iter()
                .all(|c| c.last_transition_time.is_some())
        );

        // Once the held ConfigMap is gone, the namespace is finalized and removed.
        let release = Mutate(|o: &mut dyn Object| o.metadata_mut().finalizers.clear());
        config_maps
            .update(
                "doomed",
                "held",
                &release,
                &NoAdmission,
                &NoAdmission,
                UpdateOptions::default(),
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        eventually("the emptied namespace was not removed", || async {
            matches!(namespaces.try_get("", "doomed").await, Ok(None))
        })
        .await;
        // Another namespace is untouched.
        assert!(matches!(namespaces.try_get("", "kept").await, Ok(Some(_))));
        running.abort();
    }
}
