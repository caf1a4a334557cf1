//! The cluster role aggregation controller (kube-controller-manager's
//! `clusterrole-aggregation-controller`, run in-process): the `rules` of every ClusterRole with
//! an `aggregationRule` are the rules of the ClusterRoles its selectors match (each rule once,
//! roles in name order, the role itself left out), rewritten through the ClusterRole store
//! whenever any ClusterRole changes.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::runtime::Object;
use apimachinery::selectors::{LabelSelector, SelectorError};
use apimachinery::status::ApiError;
use futures::{FutureExt, StreamExt};
use generated::rbac_authorization_k8s_io::CLUSTER_ROLE_KIND;
use generated::rbac_authorization_k8s_io::v1::{AggregationRule, ClusterRole, PolicyRule};
use storage::interface::ListOptions;

use super::Replace;
use server::registry::{NoAdmission, Registry, Store, UpdateOptions};

/// The field manager of the controller's writes.
const MANAGER: &str = "clusterrole-aggregation-controller";

/// How often every aggregated role is looked at, besides on change.
const RESYNC: Duration = Duration::from_secs(30);

/// The rules `rule` aggregates for the role named `name` out of `roles` (Kubernetes'
/// `syncClusterRole`): for each selector in order, the matching roles by name, each rule once.
pub fn aggregate(
    name: &str,
    rule: &AggregationRule,
    roles: &[ClusterRole],
) -> Result<Vec<PolicyRule>, SelectorError> {
    let mut sorted: Vec<&ClusterRole> = roles.iter().collect();
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut out: Vec<PolicyRule> = Vec::new();
    for selector in &rule.cluster_role_selectors {
        let selector = LabelSelector::try_from(selector)?;
        for role in &sorted {
            if role.metadata.name.as_deref() == Some(name)
                || !selector.matches(&role.metadata.labels)
            {
                continue;
            }
            for r in &role.rules {
                if !out.contains(r) {
                    out.push(r.clone());
                }
            }
        }
    }
    Ok(out)
}

/// The controller over the ClusterRole store.
pub struct AggregationController {
    roles: Arc<Store>,
}

impl AggregationController {
    /// The controller over the ClusterRole store of `registry`.
    pub fn new(registry: &Registry) -> Result<Arc<Self>, ApiError> {
        Ok(Arc::new(Self {
            roles: registry.store(&CLUSTER_ROLE_KIND)?,
        }))
    }

    /// Runs until the process ends: on every ClusterRole change and every [`RESYNC`].
    pub async fn run(self: Arc<Self>) {
        loop {
            let watch = self
                .roles
                .watch(
                    &self.roles.collection_key("").unwrap_or_default(),
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
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            self.sync_all().await;
            loop {
                tokio::select! {
                    event = events.next() => match event {
                        Some(_) => {
                            // Sync once for every event ready now.
                            while let Some(Some(_)) = events.next().now_or_never() {}
                            self.sync_all().await;
                        }
                        None => break,
                    },
                    _ = tokio::time::sleep(RESYNC) => self.sync_all().await,
                }
            }
        }
    }

    /// Brings every aggregated ClusterRole's rules up to date.
    pub async fn sync_all(&self) {
        let Ok((items, _)) = self.roles.list("", ListOptions::default()).await else {
            return;
        };
        let roles: Vec<ClusterRole> = items
            .iter()
            .filter_map(|o| o.downcast_ref::<ClusterRole>().cloned())
            .collect();
        for role in &roles {
            if let Err(e) = self.sync(role, &roles).await {
                tracing::warn!(role = ?role.metadata.name, error = %e, "aggregating cluster role");
            }
        }
    }

    async fn sync(&self, role: &ClusterRole, roles: &[ClusterRole]) -> Result<(), ApiError> {
        let Some(rule) = &role.aggregation_rule else {
            return Ok(());
        };
        let name = role.metadata.name.clone().unwrap_or_default();
        let rules = aggregate(&name, rule, roles).map_err(|e| ApiError::bad_request(&e.0))?;
        if rules == role.rules {
            return Ok(());
        }
        let mut updated = role.clone();
        updated.rules = rules;
        let mut object: Box<dyn Object> = Box::new(updated);
        server::apply::update_managed_fields(Some(role), &mut *object, MANAGER, "")?;
        match self
            .roles
            .update(
                "",
                &name,
                &Replace(object),
                &NoAdmission,
                &NoAdmission,
                UpdateOptions::default(),
            )
            .await
        {
            Ok(_) => Ok(()),
            // Changed meanwhile: its event syncs it again.
            Err(e) if e.code() == 409 || e.code() == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }
}
