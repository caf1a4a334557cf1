//! ResourceQuota (kube-apiserver's plugin of that name), for object counts: a create in a
//! namespace is refused when it would take any quota of the namespace over a limit on the
//! count of its kind (`count/<resource>.<group>`, `count/<resource>` for the core group, or
//! the legacy core names `configmaps`, `secrets`, `resourcequotas`).
//!
//! Admitting a create charges it: the quota's `status.used` is raised by one with a
//! compare-and-swap write, checked against the fresh quota, so concurrent creates (on any
//! replica) can never all pass a limit together. A create that is then not stored gives its
//! charge back; a delete that removes an object releases one. A quota the server has not
//! counted yet (`status.used` lacks a limited resource) refuses creates of that resource, as
//! kube-apiserver's "status unknown for quota" does. The quota controller
//! (`controllers::resource_quota`) keeps `status` current and repairs counts that drift.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use apimachinery::admission::{Attributes, Operation, Plugin, ValidatingPlugin};
use apimachinery::meta::Quantity;
use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use apimachinery::{ResourceInfo, Scheme};
use async_trait::async_trait;
use kubernetes_api::core::RESOURCE_QUOTA_KIND;
use kubernetes_api::core::v1::ResourceQuota;

use server::registry::{NoAdmission, Registry, Store, UpdateOptions, UpdatedObjectInfo};

/// The plugin's name, as the admission flags spell it.
pub const NAME: &str = "ResourceQuota";

/// The core resources whose object counts have a name without `count/` (Kubernetes' legacy
/// quota names).
const LEGACY: [&str; 7] = [
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
];

/// The plugin, when the scheme serves ResourceQuotas.
pub fn plugin(registry: &Arc<Registry>, scheme: &Scheme) -> Option<Plugin> {
    scheme.by_kind("", "ResourceQuota")?;
    Some(Plugin {
        name: NAME,
        default_enabled: true,
        mutating: None,
        validating: Some(Arc::new(QuotaAdmission {
            registry: registry.clone(),
            no_quota: Arc::new(NoQuota::default()),
        })),
    })
}

/// The quota resource names that count objects of a kind.
pub fn count_names(info: &ResourceInfo) -> Vec<String> {
    let mut names = vec![if info.group.is_empty() {
        format!("count/{}", info.plural)
    } else {
        format!("count/{}.{}", info.plural, info.group)
    }];
    if info.group.is_empty() && LEGACY.contains(&info.plural) {
        names.push(info.plural.to_string());
    }
    names
}

/// Whether a quota applies to object counts (a quota with scopes tracks only pods).
pub fn counts_objects(quota: &ResourceQuota) -> bool {
    quota.spec.scopes.is_empty() && quota.spec.scope_selector.is_none()
}

/// `name=value` pairs sorted by name, comma-separated, as Kubernetes prints resource lists.
fn pretty(values: &BTreeMap<String, i64>) -> String {
    values
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn quantity_value(q: Option<&Quantity>) -> i64 {
    q.and_then(|q| q.value().ok()).unwrap_or(0)
}

/// The validating part of the plugin.
struct QuotaAdmission {
    registry: Arc<Registry>,
    no_quota: Arc<NoQuota>,
}

/// How long a consistent read that found no quota in a namespace is trusted, and how many
/// namespaces are remembered (kube-apiserver's quota accessor keeps its live lookups 30 s in
/// an LRU of 100).
const LIVE_TTL: Duration = Duration::from_secs(30);
const LIVE_ENTRIES: usize = 100;

/// The namespaces a consistent read recently found without quotas, each with when that read
/// stops being trusted. A quota created through this server forgets its namespace as soon as
/// it is stored; one created through another replica is seen once this replica's watch cache
/// has it (within the watch's delay, as with kube-apiserver's informer).
#[derive(Default)]
struct NoQuota(Mutex<NoQuotaState>);

#[derive(Default)]
struct NoQuotaState {
    until: HashMap<String, Instant>,
    /// Counts the quotas stored through this server, so that a read that began before one
    /// was stored is not remembered.
    epoch: u64,
}

impl NoQuota {
    fn lock(&self) -> std::sync::MutexGuard<'_, NoQuotaState> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a recent consistent read found no quota in `namespace`.
    fn known(&self, namespace: &str) -> bool {
        self.lock()
            .until
            .get(namespace)
            .is_some_and(|until| *until > Instant::now())
    }

    /// Where a consistent read starts: its time and the epoch.
    fn start(&self) -> (Instant, u64) {
        (Instant::now(), self.lock().epoch)
    }

    /// Remembers that a consistent read begun at `start` found no quota in `namespace`,
    /// unless a quota was stored through this server since.
    fn remember(&self, namespace: &str, (read_at, epoch): (Instant, u64)) {
        let mut state = self.lock();
        if state.epoch != epoch {
            return;
        }
        if state.until.len() >= LIVE_ENTRIES {
            let now = Instant::now();
            state.until.retain(|_, until| *until > now);
            if state.until.len() >= LIVE_ENTRIES {
                state.until.clear();
            }
        }
        state
            .until
            .insert(namespace.to_string(), read_at + LIVE_TTL);
    }

    /// A quota was stored in `namespace`.
    fn forget(&self, namespace: &str) {
        let mut state = self.lock();
        state.epoch += 1;
        state.until.remove(namespace);
    }
}

#[async_trait]
impl ValidatingPlugin for QuotaAdmission {
    fn handles(&self, attributes: &Attributes<'_>) -> bool {
        let info = attributes.kind.storage_info();
        matches!(attributes.operation, Operation::Create | Operation::Delete)
            && attributes.subresource.is_empty()
            && info.namespaced()
            && !info.create_only
    }

    async fn validate(&self, attributes: &Attributes<'_>) -> Result<(), ApiError> {
        let quotas = self.registry.store(&RESOURCE_QUOTA_KIND)?;
        if std::ptr::eq(attributes.kind, &RESOURCE_QUOTA_KIND)
            && attributes.operation == Operation::Create
            && !attributes.dry_run
        {
            // A new quota limits the next create in its namespace at once.
            let no_quota = self.no_quota.clone();
            let namespace = attributes.namespace.to_string();
            attributes.on_outcome(Box::new(move |stored| {
                Box::pin(async move {
                    if stored {
                        no_quota.forget(&namespace);
                    }
                })
            }));
        }
        // Which quotas exist comes from the watch cache as it is, as kube-apiserver reads its
        // quota informer's lister. When the cache shows none in the namespace, a consistent
        // read (kube-apiserver's live lookup) makes sure a quota created just before is not
        // missed; its finding that there is none is trusted for `LIVE_TTL`. The charge
        // itself is checked against the fresh quota.
        let cached = storage::interface::ListOptions {
            resource_version: "0".into(),
            ..Default::default()
        };
        let (mut items, _) = quotas.list(attributes.namespace, cached).await?;
        if items.is_empty() {
            if self.no_quota.known(attributes.namespace) {
                return Ok(());
            }
            let start = self.no_quota.start();
            (items, _) = quotas
                .list(attributes.namespace, Default::default())
                .await?;
            if items.is_empty() {
                self.no_quota.remember(attributes.namespace, start);
            }
        }
        // Named only once a quota is found: in a namespace without one (the common case) their
        // formatting was ≈1k of the ≈150k instructions of a ConfigMap create.
        let names = count_names(attributes.kind.storage_info());
        let mut applicable: Vec<(String, Vec<String>)> = items
            .iter()
            .filter_map(|o| o.downcast_ref::<ResourceQuota>())
            .filter(|q| counts_objects(q))
            .filter_map(|q| {
                let limited: Vec<String> = names
                    .iter()
                    .filter(|n| q.spec.hard.contains_key(*n))
                    .cloned()
                    .collect();
                (!limited.is_empty())
                    .then(|| (q.metadata.name.clone().unwrap_or_default(), limited))
            })
            .collect();
        if applicable.is_empty() {
            return Ok(());
        }
        applicable.sort();
        match attributes.operation {
            Operation::Create => self.charge(attributes, &quotas, &applicable).await,
            _ => {
                // A delete releases its object's count once the object is gone.
                if !attributes.dry_run {
                    let quotas = quotas.clone();
                    let namespace = attributes.namespace.to_string();
                    attributes.on_outcome(Box::new(move |removed| {
                        Box::pin(async move {
                            if removed {
                                adjust_all(&quotas, &namespace, &applicable, -1).await;
                            }
                        })
                    }));
                }
                Ok(())
            }
        }
    }
}

impl QuotaAdmission {
    /// Charges a create to every applicable quota (only checks on a dry run), giving back the
    /// charges already made when one quota refuses.
    async fn charge(
        &self,
        attributes: &Attributes<'_>,
        quotas: &Arc<Store>,
        applicable: &[(String, Vec<String>)],
    ) -> Result<(), ApiError> {
        let mut charged: Vec<(String, Vec<String>)> = Vec::new();
        for (quota, names) in applicable {
            let change = Charge {
                names,
                delta: 1,
                check: Some(attributes),
                apply: !attributes.dry_run,
            };
            let result = quotas
                .update(
                    attributes.namespace,
                    quota,
                    &change,
                    &NoAdmission,
                    &NoAdmission,
                    UpdateOptions {
                        subresource: "status",
                        force_allow_create: false,
                        dry_run: attributes.dry_run,
                    },
                )
                .await;
            match result {
                Ok(_) => charged.push((quota.clone(), names.clone())),
                // The quota was deleted meanwhile: nothing to charge.
                Err(e) if e.code() == 404 => {}
                Err(e) => {
                    if !attributes.dry_run {
                        adjust_all(quotas, attributes.namespace, &charged, -1).await;
                    }
                    return Err(e);
                }
            }
        }
        if !attributes.dry_run && !charged.is_empty() {
            let quotas = quotas.clone();
            let namespace = attributes.namespace.to_string();
            attributes.on_outcome(Box::new(move |stored| {
                Box::pin(async move {
                    if !stored {
                        adjust_all(&quotas, &namespace, &charged, -1).await;
                    }
                })
            }));
        }
        Ok(())
    }
}

/// Moves the usage of every listed quota by `delta` (never below zero), unchecked: charges
/// given back and releases.
pub async fn adjust_all(
    quotas: &Store,
    namespace: &str,
    targets: &[(String, Vec<String>)],
    delta: i64,
) {
    for (quota, names) in targets {
        let change = Charge {
            names,
            delta,
            check: None,
            apply: true,
        };
        let _ = quotas
            .update(
                namespace,
                quota,
                &change,
                &NoAdmission,
                &NoAdmission,
                UpdateOptions {
                    subresource: "status",
                    force_allow_create: false,
                    dry_run: false,
                },
            )
            .await;
    }
}

/// A change of a quota's usage, made on the fresh quota of every compare-and-swap attempt.
struct Charge<'a> {
    names: &'a [String],
    delta: i64,
    /// The create being admitted, when the limits are checked.
    check: Option<&'a Attributes<'a>>,
    /// Whether the usage is changed (not on a dry run).
    apply: bool,
}

#[async_trait]
impl UpdatedObjectInfo for Charge<'_> {
    async fn updated_object(&self, old: Option<&dyn Object>) -> Result<Box<dyn Object>, ApiError> {
        let old = old.ok_or_else(|| ApiError::internal("the quota is gone"))?;
        let mut object = old.clone_object();
        let Some(quota) = object.downcast_mut::<ResourceQuota>() else {
            return Ok(object);
        };
        if let Some(attributes) = self.check {
            check(quota, self.names, attributes)?;
        }
        if self.apply {
            for name in self.names {
                let used = quantity_value(quota.status.used.get(name));
                let next = (used + self.delta).max(0);
                quota
                    .status
                    .used
                    .insert(name.clone(), Quantity(next.to_string()));
            }
        }
        Ok(object)
    }
}

/// Refuses a create that would take `quota` over a limit, or whose usage it has not counted.
fn check(
    quota: &ResourceQuota,
    names: &[String],
    attributes: &Attributes<'_>,
) -> Result<(), ApiError> {
    let quota_name = quota.metadata.name.as_deref().unwrap_or("");
    let unknown: Vec<&str> = names
        .iter()
        .filter(|n| !quota.status.used.contains_key(*n))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        return Err(attributes.forbidden(&format!(
            "status unknown for quota: {quota_name}, resources: {}",
            unknown.join(",")
        )));
    }
    let mut requested = BTreeMap::new();
    let mut used = BTreeMap::new();
    let mut limited = BTreeMap::new();
    for name in names {
        let hard = quantity_value(quota.spec.hard.get(name));
        let now = quantity_value(quota.status.used.get(name));
        if now + 1 > hard {
            requested.insert(name.clone(), 1);
            used.insert(name.clone(), now);
            limited.insert(name.clone(), hard);
        }
    }
    if requested.is_empty() {
        return Ok(());
    }
    Err(attributes.forbidden(&format!(
        "exceeded quota: {quota_name}, requested: {}, used: {}, limited: {}",
        pretty(&requested),
        pretty(&used),
        pretty(&limited)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quota_stored_during_a_read_is_not_forgotten() {
        let no_quota = NoQuota::default();
        assert!(!no_quota.known("a"));
        let start = no_quota.start();
        no_quota.remember("a", start);
        assert!(no_quota.known("a"));
        assert!(!no_quota.known("b"));
        // A quota stored in `a` forgets it at once.
        no_quota.forget("a");
        assert!(!no_quota.known("a"));
        // A read that began before a quota was stored (anywhere) is not remembered.
        let start = no_quota.start();
        no_quota.forget("b");
        no_quota.remember("a", start);
        assert!(!no_quota.known("a"));
        // Expired findings are not trusted, and the map stays bounded.
        let (_, epoch) = no_quota.start();
        no_quota.remember("old", (Instant::now() - LIVE_TTL, epoch));
        assert!(!no_quota.known("old"));
        for i in 0..3 * LIVE_ENTRIES {
            no_quota.remember(&format!("ns{i}"), no_quota.start());
        }
        assert!(no_quota.lock().until.len() <= LIVE_ENTRIES);
        assert!(no_quota.known(&format!("ns{}", 3 * LIVE_ENTRIES - 1)));
    }
}
