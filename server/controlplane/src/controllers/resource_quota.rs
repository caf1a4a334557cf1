//! The resource quota controller (kube-controller-manager's, run in-process): keeps every
//! ResourceQuota's `status.hard` equal to its `spec.hard` and `status.used` at the number of
//! objects of each limited resource in the namespace.
//!
//! Admission charges creates and releases deletes as they happen (see
//! `admission::resource_quota`); the controller counts what admission cannot know: a limit
//! just added (creates of it are refused until it is counted), and drift — objects removed
//! without admission (expired Events, a namespace being emptied) or a create that never
//! finished. A drifted count is corrected only once the quota has not changed for
//! [`QUIET`], longer than any request may take, so a charge made for a create still being
//! written is never counted away; the write is a compare-and-swap on the quota's
//! resourceVersion, so a charge made meanwhile makes it fail and wait for the next pass.
//!
//! It runs on the controller runtime ([`server::controller`]): a quota is reconciled when it
//! changes, every 10 s (its resync), and, as Kubernetes' quota monitors replenish it, when an
//! object of a kind it counts is deleted in its namespace (every namespaced kind is watched;
//! a deletion maps to the quotas of the object's namespace that count its resource).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use apimachinery::meta::Quantity;
use apimachinery::runtime::{Kind, Object};
use apimachinery::status::ApiError;
use apimachinery::{ResourceInfo, Scheme};
use async_trait::async_trait;
use kubernetes_api::core::RESOURCE_QUOTA_KIND;
use kubernetes_api::core::v1::ResourceQuota;
use parking_lot::Mutex;
use storage::interface::ListOptions;

use crate::admission::resource_quota::counts_objects;
use server::controller::{Action, Change, Controller, Notification, ObjectKey, Reconciler};
use server::registry::{NoAdmission, Registry, Store, UpdateOptions, UpdatedObjectInfo};

/// The controller's name (kube-controller-manager's).
const NAME: &str = "resourcequota-controller";

/// How often every quota is looked at, besides on change.
const RESYNC: Duration = Duration::from_secs(10);

/// How many quotas are synced at once (kube-controller-manager's
/// `--concurrent-resource-quota-syncs`).
const WORKERS: usize = 5;

/// How long a quota must stay unchanged before its counts are corrected (longer than the
/// longest request, `--request-timeout`'s default of a minute).
pub const QUIET: Duration = Duration::from_secs(90);

/// The reconciler of quotas: the stores it counts in and the quotas' quiet times.
pub struct QuotaController {
    registry: Arc<Registry>,
    scheme: Arc<Scheme>,
    quotas: Arc<Store>,
    /// How long a quota must stay unchanged before its counts are corrected.
    quiet: Duration,
    /// Per quota: the uid and resourceVersion it was last seen at, and since when.
    seen: Mutex<HashMap<ObjectKey, (String, String, Instant)>>,
}

impl QuotaController {
    /// The controller over the quota store of `registry`, counting the namespaced kinds of
    /// `scheme`, ready to be started.
    pub fn new(registry: Arc<Registry>, scheme: Arc<Scheme>) -> Result<Controller<Self>, ApiError> {
        Self::with_quiet(registry, scheme, QUIET)
    }

    /// The controller, correcting drift once a quota stayed unchanged for `quiet` (whenever it
    /// is reconciled, for a zero `quiet`).
    fn with_quiet(
        registry: Arc<Registry>,
        scheme: Arc<Scheme>,
        quiet: Duration,
    ) -> Result<Controller<Self>, ApiError> {
        let quotas = registry.store(&RESOURCE_QUOTA_KIND)?;
        let counted: Vec<&'static Kind> = scheme
            .kinds()
            .iter()
            .copied()
            .filter(|k| countable(k.storage_info()))
            .collect();
        let reconciler = Self {
            registry: registry.clone(),
            scheme,
            quotas: quotas.clone(),
            quiet,
            seen: Mutex::new(HashMap::new()),
        };
        let mut controller = Controller::new(NAME, quotas.clone(), reconciler)
            .workers(WORKERS)
            .resync(RESYNC);
        for kind in counted {
            let info = kind.storage_info();
            let quotas = quotas.clone();
            controller =
                controller.watches_changes(registry.store(kind)?, move |n: Notification| {
                    let quotas = quotas.clone();
                    async move {
                        if n.change != Change::Deleted {
                            return Vec::new();
                        }
                        counting(&quotas, &n.key.namespace, info).await
                    }
                });
        }
        Ok(controller)
    }

    /// Whether the quota `key` names has stayed at `quota`'s resourceVersion for the quiet
    /// time (always, when there is no quiet time).
    fn quiet(&self, key: &ObjectKey, quota: &ResourceQuota) -> bool {
        if self.quiet.is_zero() {
            return true;
        }
        let uid = quota.metadata.uid.clone().unwrap_or_default();
        let rv = quota.metadata.resource_version.clone().unwrap_or_default();
        let mut seen = self.seen.lock();
        match seen.get(key) {
            Some((at_uid, at_rv, since)) if *at_uid == uid && *at_rv == rv => {
                since.elapsed() >= self.quiet
            }
            _ => {
                seen.insert(key.clone(), (uid, rv, Instant::now()));
                false
            }
        }
    }

    /// Brings one quota's status up to date.
    async fn sync(&self, key: &ObjectKey, quota: &ResourceQuota) -> Result<(), ApiError> {
        let hard = &quota.spec.hard;
        let mut recount: Vec<String> = Vec::new();
        if counts_objects(quota) {
            recount = hard
                .keys()
                .filter(|k| !quota.status.used.contains_key(*k))
                .cloned()
                .collect();
            if recount.is_empty() && self.quiet(key, quota) {
                recount = hard.keys().cloned().collect();
            }
        }
        let stale = quota.status.used.keys().any(|k| !hard.contains_key(k));
        if recount.is_empty() && !stale && quota.status.hard == *hard {
            return Ok(());
        }
        let mut used: BTreeMap<String, Quantity> = quota
            .status
            .used
            .iter()
            .filter(|(k, _)| hard.contains_key(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for resource in &recount {
            if let Some(count) = self.count(resource, &key.namespace).await {
                used.insert(resource.clone(), Quantity(count.to_string()));
            }
        }
        if used == quota.status.used && quota.status.hard == *hard {
            return Ok(());
        }
        let status = Status {
            resource_version: quota.metadata.resource_version.clone(),
            hard: hard.clone(),
            used,
        };
        self.quotas
            .update(
                &key.namespace,
                &key.name,
                &status,
                &NoAdmission,
                &NoAdmission,
                UpdateOptions {
                    subresource: "status",
                    force_allow_create: false,
                    dry_run: false,
                },
            )
            .await
            .map(drop)
    }

    /// The number of objects a quota resource name counts in `namespace` (`None` for names of
    /// resources this server does not serve, or that are not object counts). Custom resources
    /// are counted as well: a delete through the API releases its count in admission; one made
    /// without admission (the namespace or CRD cleanup) is given back at the quiet recount.
    async fn count(&self, resource: &str, namespace: &str) -> Option<usize> {
        let (group, plural) = counted_resource(resource);
        // The scheme's kinds, then those defined at run time (custom resources), whose stores
        // the registry holds while they are served.
        let store = match self.scheme.by_resource(group, plural) {
            Some(kind) => self.registry.store(kind).ok()?,
            None => self.registry.stores().into_iter().find(|s| {
                let info = s.kind().storage_info();
                info.group == group && info.plural == plural
            })?,
        };
        if !countable(store.kind().storage_info()) {
            return None;
        }
        store
            .list_uncached(namespace)
            .await
            .ok()
            .map(|items| items.len())
    }
}

#[async_trait]
impl Reconciler for QuotaController {
    type Error = ApiError;

    async fn reconcile(&self, key: &ObjectKey) -> Result<Action, ApiError> {
        let Some(object) = self.quotas.try_get(&key.namespace, &key.name).await? else {
            self.seen.lock().remove(key);
            return Ok(Action::Done);
        };
        let Some(quota) = object.downcast_ref::<ResourceQuota>() else {
            return Ok(Action::Done);
        };
        match self.sync(key, quota).await {
            Ok(()) => Ok(Action::Done),
            // Charged, changed or deleted meanwhile: its event reconciles it again.
            Err(e) if e.code() == 409 || e.code() == 404 => Ok(Action::Done),
            Err(e) => Err(e),
        }
    }
}

/// Whether a quota can count the objects of a kind: namespaced and stored.
fn countable(info: &ResourceInfo) -> bool {
    info.namespaced() && !info.create_only
}

/// The group and resource a quota resource name counts: `count/<resource>.<group>`,
/// `count/<resource>` for the core group, or a core resource's plain name.
fn counted_resource(name: &str) -> (&str, &str) {
    match name.strip_prefix("count/") {
        Some(rest) => match rest.split_once('.') {
            Some((plural, group)) => (group, plural),
            None => ("", rest),
        },
        None => ("", name),
    }
}

/// The keys of the quotas in `namespace` that count objects of the resource `info` describes
/// (none if they cannot be read: the resync looks again).
async fn counting(quotas: &Store, namespace: &str, info: &ResourceInfo) -> Vec<ObjectKey> {
    let cached = ListOptions {
        resource_version: "0".into(),
        ..ListOptions::default()
    };
    let items = match quotas.list(namespace, cached).await {
        Ok((items, _)) => items,
        Err(error) => {
            tracing::warn!(%namespace, %error, "listing the quotas to replenish");
            return Vec::new();
        }
    };
    items
        .iter()
        .filter(|item| {
            item.downcast_ref::<ResourceQuota>().is_some_and(|quota| {
                counts_objects(quota)
                    && quota
                        .spec
                        .hard
                        .keys()
                        .any(|k| counted_resource(k) == (info.group, info.plural))
            })
        })
        .map(|item| ObjectKey::of(&**item))
        .collect()
}

/// The status a sync writes, on the quota as it was read (a compare-and-swap on its
/// resourceVersion: a charge made meanwhile makes it fail).
struct Status {
    resource_version: Option<String>,
    hard: BTreeMap<String, Quantity>,
    used: BTreeMap<String, Quantity>,
}

#[async_trait]
impl UpdatedObjectInfo for Status {
    async fn updated_object(&self, old: Option<&dyn Object>) -> Result<Box<dyn Object>, ApiError> {
        let old = old.ok_or_else(|| ApiError::internal("the quota is gone"))?;
        let mut object = old.clone_object();
        object.metadata_mut().resource_version = self.resource_version.clone();
        if let Some(quota) = object.downcast_mut::<ResourceQuota>() {
            quota.status.hard = self.hard.clone();
            quota.status.used = self.used.clone();
        }
        Ok(object)
    }
}

#[cfg(test)]
mod tests {
    use apimachinery::meta::ObjectMeta;
    use kubernetes_api::core::CONFIG_MAP_KIND;
    use kubernetes_api::core::v1::{ConfigMap, ResourceQuotaSpec};
    use server::registry::DeleteOptions;

    use super::*;

    fn config_map(name: &str) -> Box<dyn Object> {
        Box::new(ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        })
    }

    /// Waits until the quota counts `count` ConfigMaps; panics after 5 s (half the resync).
    async fn wait_for_count(quotas: &Store, count: &str) {
        super::super::test_support::eventually(|| async {
            let quota = quotas
                .get("default", "q", "")
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let quota = quota.downcast_ref::<ResourceQuota>().cloned();
            let quota = quota.unwrap_or_default();
            let used = quota
                .status
                .used
                .get("count/configmaps")
                .map(|q| q.0.clone());
            if used.as_deref() == Some(count) {
                assert_eq!(quota.status.hard, quota.spec.hard);
                Ok(())
            } else {
                Err(format!("the quota counts {used:?}, not {count}"))
            }
        })
        .await
    }

    #[tokio::test]
    async fn a_new_quota_is_counted_and_a_deletion_without_admission_is_replenished() {
        let (_dir, registry) = super::super::test_support::registry();
        let scheme = Arc::new(kubernetes_api::scheme());
        let quotas = registry
            .store(&RESOURCE_QUOTA_KIND)
            .unwrap_or_else(|e| panic!("{e}"));
        let config_maps = registry
            .store(&CONFIG_MAP_KIND)
            .unwrap_or_else(|e| panic!("{e}"));
        for name in ["a", "b"] {
            config_maps
                .create(config_map(name), &NoAdmission, false)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let quota = ResourceQuota {
            metadata: ObjectMeta {
                name: Some("q".into()),
                namespace: Some("default".into()),
                ..ObjectMeta::default()
            },
            spec: ResourceQuotaSpec {
                hard: [("count/configmaps".to_string(), Quantity("10".into()))].into(),
                ..ResourceQuotaSpec::default()
            },
            ..ResourceQuota::default()
        };
        quotas
            .create(Box::new(quota), &NoAdmission, false)
            .await
            .unwrap_or_else(|e| panic!("{e}"));

        // Drift is corrected whenever the quota is reconciled (no quiet time).
        let controller = QuotaController::with_quiet(registry.clone(), scheme, Duration::ZERO)
            .unwrap_or_else(|e| panic!("{e}"));
        let running = tokio::spawn(controller.run(std::future::pending()));
        // The limit just added is counted.
        wait_for_count(&quotas, "2").await;

        // A ConfigMap removed without admission (as a namespace's emptying or an Event's
        // expiry removes one) releases nothing; its deletion has the quota counted again,
        // well before the resync would.
        config_maps
            .delete("default", "a", &NoAdmission, &DeleteOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        wait_for_count(&quotas, "1").await;
        running.abort();
    }

    #[test]
    fn quota_resource_names_resolve_to_group_and_resource() {
        assert_eq!(
            counted_resource("count/widgets.example.dev"),
            ("example.dev", "widgets")
        );
        assert_eq!(counted_resource("count/configmaps"), ("", "configmaps"));
        assert_eq!(counted_resource("configmaps"), ("", "configmaps"));
    }
}
