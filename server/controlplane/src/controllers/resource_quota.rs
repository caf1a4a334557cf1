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

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use apimachinery::meta::Quantity;
use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use async_trait::async_trait;
use futures::StreamExt;
use kubernetes_api::core::RESOURCE_QUOTA_KIND;
use kubernetes_api::core::v1::ResourceQuota;
use parking_lot::Mutex;
use storage::interface::ListOptions;

use crate::admission::resource_quota::counts_objects;
use server::registry::{NoAdmission, Registry, Store, UpdateOptions, UpdatedObjectInfo};

/// How often every quota is looked at, besides on change.
const RESYNC: Duration = Duration::from_secs(10);

/// How long a quota must stay unchanged before its counts are corrected (longer than the
/// longest request, `--request-timeout`'s default of a minute).
pub const QUIET: Duration = Duration::from_secs(90);

/// The controller.
pub struct QuotaController {
    registry: Arc<Registry>,
    scheme: Arc<apimachinery::Scheme>,
    quotas: Arc<Store>,
    /// Per quota uid: the resourceVersion it was last seen at, and since when.
    seen: Mutex<HashMap<String, (String, Instant)>>,
}

impl QuotaController {
    /// The controller over the quota store of `registry`.
    pub fn new(
        registry: Arc<Registry>,
        scheme: Arc<apimachinery::Scheme>,
    ) -> Result<Arc<Self>, ApiError> {
        let quotas = registry.store(&RESOURCE_QUOTA_KIND)?;
        Ok(Arc::new(Self {
            registry,
            scheme,
            quotas,
            seen: Mutex::new(HashMap::new()),
        }))
    }

    /// Runs until the process ends: on every quota change and every `RESYNC`.
    pub async fn run(self: Arc<Self>) {
        loop {
            let watch = self
                .quotas
                .watch(
                    &self.quotas.collection_key("").unwrap_or_default(),
                    ListOptions {
                        resource_version: "0".into(),
                        recursive: true,
                        ..ListOptions::default()
                    },
                )
                .await;
            let mut events = match watch {
                Ok(w) => w,
                Err(_) => {
                    tokio::time::sleep(RESYNC).await;
                    continue;
                }
            };
            self.sync_all().await;
            loop {
                tokio::select! {
                    event = events.next() => match event {
                        Some(_) => self.sync_all().await,
                        None => break,
                    },
                    _ = tokio::time::sleep(RESYNC) => self.sync_all().await,
                }
            }
        }
    }

    async fn sync_all(&self) {
        let Ok((items, _)) = self.quotas.list("", ListOptions::default()).await else {
            return;
        };
        let mut live = Vec::new();
        for item in items {
            let Some(quota) = item.downcast_ref::<ResourceQuota>() else {
                continue;
            };
            live.push(quota.metadata.uid.clone().unwrap_or_default());
            let _ = self.sync(quota).await;
        }
        self.seen.lock().retain(|uid, _| live.contains(uid));
    }

    /// Whether `quota` has stayed at its resourceVersion for [`QUIET`].
    fn quiet(&self, quota: &ResourceQuota) -> bool {
        let uid = quota.metadata.uid.clone().unwrap_or_default();
        let rv = quota.metadata.resource_version.clone().unwrap_or_default();
        let mut seen = self.seen.lock();
        match seen.get(&uid) {
            Some((at_rv, since)) if *at_rv == rv => since.elapsed() >= QUIET,
            _ => {
                seen.insert(uid, (rv, Instant::now()));
                false
            }
        }
    }

    /// Brings one quota's status up to date.
    async fn sync(&self, quota: &ResourceQuota) -> Result<(), ApiError> {
        let namespace = quota.metadata.namespace.clone().unwrap_or_default();
        let name = quota.metadata.name.clone().unwrap_or_default();
        let hard = &quota.spec.hard;
        let mut recount: Vec<String> = Vec::new();
        if counts_objects(quota) {
            recount = hard
                .keys()
                .filter(|k| !quota.status.used.contains_key(*k))
                .cloned()
                .collect();
            if recount.is_empty() && self.quiet(quota) {
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
            if let Some(count) = self.count(resource, &namespace).await {
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
                &namespace,
                &name,
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
    /// resources this server does not serve, or that are not object counts).
    async fn count(&self, resource: &str, namespace: &str) -> Option<usize> {
        let (plural, group) = match resource.strip_prefix("count/") {
            Some(rest) => match rest.split_once('.') {
                Some((plural, group)) => (plural, group),
                None => (rest, ""),
            },
            None => (resource, ""),
        };
        let kind = self.scheme.by_resource(group, plural)?;
        let info = kind.storage_info();
        if !info.namespaced() || info.create_only {
            return None;
        }
        let store = self.registry.store(kind).ok()?;
        store
            .list_uncached(namespace)
            .await
            .ok()
            .map(|items| items.len())
    }
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
