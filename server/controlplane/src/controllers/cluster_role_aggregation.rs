//! The cluster role aggregation controller (kube-controller-manager's
//! `clusterrole-aggregation-controller`, run in-process): the `rules` of every ClusterRole with
//! an `aggregationRule` are the rules of the ClusterRoles its selectors match (each rule once,
//! roles in name order, the role itself left out), rewritten through the ClusterRole store
//! whenever any ClusterRole changes.
//!
//! It runs on the controller runtime ([`server::controller`]): a ClusterRole is reconciled when
//! it changes, every aggregated ClusterRole when any ClusterRole changes (Kubernetes'
//! controller enqueues every role with an `aggregationRule` on every event), and every
//! ClusterRole every 30 s (its resync).

use std::sync::Arc;
use std::time::Duration;

use apimachinery::runtime::Object;
use apimachinery::selectors::{LabelSelector, SelectorError};
use apimachinery::status::ApiError;
use async_trait::async_trait;
use kubernetes_api::rbac_authorization_k8s_io::CLUSTER_ROLE_KIND;
use kubernetes_api::rbac_authorization_k8s_io::v1::{AggregationRule, ClusterRole, PolicyRule};
use storage::interface::ListOptions;

use super::Replace;
use server::controller::{Action, Controller, ObjectKey, Reconciler};
use server::registry::{NoAdmission, Registry, Store, UpdateOptions};

/// The field manager of the controller's writes (and the controller's name).
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

/// Every ClusterRole in `roles` (a consistent read through the watch cache).
async fn all_roles(roles: &Store) -> Result<Vec<ClusterRole>, ApiError> {
    let (items, _) = roles.list("", ListOptions::default()).await?;
    Ok(items
        .iter()
        .filter_map(|o| o.downcast_ref::<ClusterRole>().cloned())
        .collect())
}

/// The reconciler of aggregated ClusterRoles, over the ClusterRole store.
pub struct AggregationController {
    roles: Arc<Store>,
}

impl AggregationController {
    /// The controller over the ClusterRole store of `registry`, ready to be started.
    pub fn new(registry: &Registry) -> Result<Controller<Self>, ApiError> {
        let roles = registry.store(&CLUSTER_ROLE_KIND)?;
        let reconciler = Self {
            roles: roles.clone(),
        };
        let lister = roles.clone();
        Ok(Controller::new(MANAGER, roles.clone(), reconciler)
            // Any ClusterRole's change may change what every aggregated role aggregates.
            .watches(roles, move |_changed: Box<dyn Object>| {
                let roles = lister.clone();
                async move { aggregated_keys(&roles).await }
            })
            .resync(RESYNC))
    }

    /// Brings `role`'s rules up to date with `roles` if it aggregates.
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
            // Changed meanwhile: its event reconciles it again.
            Err(e) if e.code() == 409 || e.code() == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// The keys of every ClusterRole with an `aggregationRule` (none if the list fails; the
/// resync looks again).
async fn aggregated_keys(roles: &Store) -> Vec<ObjectKey> {
    match all_roles(roles).await {
        Ok(all) => all
            .iter()
            .filter(|r| r.aggregation_rule.is_some())
            .filter_map(|r| r.metadata.name.clone().map(ObjectKey::cluster))
            .collect(),
        Err(e) => {
            tracing::warn!(error = %e, "listing cluster roles to aggregate");
            Vec::new()
        }
    }
}

#[async_trait]
impl Reconciler for AggregationController {
    type Error = ApiError;

    async fn reconcile(&self, key: &ObjectKey) -> Result<Action, ApiError> {
        // Most roles aggregate nothing (every role is reconciled at each resync): those are
        // read alone, and only an aggregating role reads every role.
        let aggregates = self.roles.try_get("", &key.name).await?.is_some_and(|o| {
            o.downcast_ref::<ClusterRole>()
                .is_some_and(|r| r.aggregation_rule.is_some())
        });
        if !aggregates {
            return Ok(Action::Done);
        }
        let roles = all_roles(&self.roles).await?;
        if let Some(role) = roles
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some(key.name.as_str()))
        {
            self.sync(role, &roles).await?;
        }
        Ok(Action::Done)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use apimachinery::meta::{LabelSelector as Selector, ObjectMeta};

    use super::*;
    use server::registry::DeleteOptions;

    fn role(name: &str, labels: &[(&str, &str)], resources: &[&str]) -> ClusterRole {
        ClusterRole {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<BTreeMap<_, _>>(),
                ..ObjectMeta::default()
            },
            rules: resources
                .iter()
                .map(|r| PolicyRule {
                    verbs: vec!["get".into()],
                    api_groups: vec![String::new()],
                    resources: vec![r.to_string()],
                    ..PolicyRule::default()
                })
                .collect(),
            ..ClusterRole::default()
        }
    }

    /// Waits until the role `name` has rules on exactly `resources`; panics after 5 s.
    async fn wait_for_rules(roles: &Store, name: &str, resources: &[&str]) {
        let wanted: Vec<String> = resources.iter().map(|r| r.to_string()).collect();
        super::super::test_support::eventually(|| async {
            let got: Vec<String> = match roles.try_get("", name).await {
                Ok(Some(o)) => o
                    .downcast_ref::<ClusterRole>()
                    .map(|r| r.rules.iter().flat_map(|p| p.resources.clone()).collect())
                    .unwrap_or_default(),
                other => panic!("reading {name}: {other:?}"),
            };
            if got == wanted {
                Ok(())
            } else {
                Err(format!("{name} aggregates {got:?}, not {wanted:?}"))
            }
        })
        .await
    }

    #[tokio::test]
    async fn aggregated_roles_follow_the_roles_their_selectors_match() {
        let (_dir, registry) = super::super::test_support::registry();
        let roles = registry
            .store(&CLUSTER_ROLE_KIND)
            .unwrap_or_else(|e| panic!("{e}"));
        let create = |role: ClusterRole| {
            let roles = roles.clone();
            async move {
                roles
                    .create(Box::new(role), &NoAdmission, false)
                    .await
                    .unwrap_or_else(|e| panic!("{e}"));
            }
        };
        let mut aggregated = role("aggregated", &[], &[]);
        aggregated.aggregation_rule = Some(AggregationRule {
            cluster_role_selectors: vec![Selector {
                match_labels: [("aggregate".to_string(), "true".to_string())].into(),
                ..Selector::default()
            }],
        });
        create(aggregated).await;
        create(role("b-pods", &[("aggregate", "true")], &["pods"])).await;

        let controller = AggregationController::new(&registry).unwrap_or_else(|e| panic!("{e}"));
        let running = tokio::spawn(controller.run(std::future::pending()));
        // Existing roles at start.
        wait_for_rules(&roles, "aggregated", &["pods"]).await;

        // A new matching role: its rules join, in name order.
        create(role("a-secrets", &[("aggregate", "true")], &["secrets"])).await;
        wait_for_rules(&roles, "aggregated", &["secrets", "pods"]).await;
        // A role that does not match changes nothing.
        create(role("c-other", &[], &["nodes"])).await;

        // A matching role's rules change.
        let mut changed = role("b-pods", &[("aggregate", "true")], &["services"]);
        let current = roles
            .get("", "b-pods", "")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        changed.metadata.resource_version = current.metadata().resource_version.clone();
        roles
            .update(
                "",
                "b-pods",
                &Replace(Box::new(changed)),
                &NoAdmission,
                &NoAdmission,
                UpdateOptions::default(),
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        wait_for_rules(&roles, "aggregated", &["secrets", "services"]).await;

        // A matching role is deleted.
        roles
            .delete("", "a-secrets", &NoAdmission, &DeleteOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        wait_for_rules(&roles, "aggregated", &["services"]).await;
        running.abort();
    }
}
