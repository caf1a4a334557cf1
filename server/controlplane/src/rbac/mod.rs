//! The RBAC authorizer (Kubernetes' `plugin/pkg/auth/authorizer/rbac`): a request is allowed
//! when a rule granted to its user through a binding allows it. Rules come from an in-memory
//! [`Snapshot`] of every role and binding, kept current from the registry's watch cache by the
//! [`informer`]; a request never reads storage. The same snapshot is the [`RuleResolver`] of
//! the RBAC kinds' escalation checks and answers `SelfSubjectRulesReview`.

pub mod bootstrap;
pub mod controller_roles;
pub mod informer;
pub mod namespace_roles;
pub mod snapshot;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use apimachinery::authorization::{Attributes, Authorization, Authorizer, Reason, RulesInfo};
use apimachinery::rbac::{PolicyRule, RuleResolver};
use apimachinery::status::ApiError;
use apimachinery::user::UserInfo;
use parking_lot::RwLock;

pub use self::snapshot::{Binding, OwnedRuleSource, Snapshot, Sources, Subject, Visit};

/// The RBAC authorizer and rule resolver over the current [`Snapshot`].
#[derive(Default)]
pub struct RbacAuthorizer {
    snapshot: RwLock<Arc<Snapshot>>,
    synced: tokio::sync::watch::Sender<bool>,
}

impl std::fmt::Debug for RbacAuthorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RbacAuthorizer").finish_non_exhaustive()
    }
}

impl RbacAuthorizer {
    /// An authorizer over no roles and bindings (it allows nothing until the informer fills
    /// it).
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The current snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        Arc::clone(&self.snapshot.read())
    }

    /// Replaces the snapshot.
    pub fn publish(&self, snapshot: Snapshot) {
        *self.snapshot.write() = Arc::new(snapshot);
    }

    /// Records that every kind's initial list has been loaded.
    pub fn mark_synced(&self) {
        self.synced.send_replace(true);
    }

    /// Waits until the informer has loaded every role and binding once.
    pub async fn wait_synced(&self) {
        let mut rx = self.synced.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }

    /// The rules granted to `user` in `namespace`, and the resolution errors (Kubernetes'
    /// `DefaultRuleResolver.RulesFor`).
    pub fn policy_rules_for(
        &self,
        user: &UserInfo,
        namespace: &str,
    ) -> (Vec<PolicyRule>, Vec<String>) {
        let snapshot = self.snapshot();
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        snapshot.visit_rules_for(user, namespace, &mut |v| {
            match v {
                Visit::Rule(_, rule) => rules.push(rule.clone()),
                Visit::Error(e) => errors.push(e),
            }
            true
        });
        (rules, errors)
    }
}

/// RBAC's reason for an allowed request, rendered only when read (the audit annotation, an
/// access review).
struct AllowedBy(OwnedRuleSource);

impl std::fmt::Display for AllowedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RBAC: allowed by {}", self.0)
    }
}

impl Authorizer for RbacAuthorizer {
    fn authorize(&self, attributes: &Attributes<'_>) -> Authorization {
        let snapshot = self.snapshot();
        let mut allowed = None;
        let mut errors = Vec::new();
        snapshot.visit_rules_for(&attributes.user, &attributes.namespace, &mut |v| match v {
            Visit::Rule(source, rule) => {
                if rule.allows(attributes) {
                    allowed = Some(source.owned());
                    false
                } else {
                    true
                }
            }
            Visit::Error(e) => {
                errors.push(e);
                true
            }
        });
        if let Some(source) = allowed {
            return Authorization::allow(Reason::described(AllowedBy(source)));
        }
        let reason = match errors.len() {
            0 => String::new(),
            1 => format!("RBAC: {}", errors[0]),
            _ => format!("RBAC: [{}]", errors.join(", ")),
        };
        Authorization {
            decision: apimachinery::authorization::Decision::NoOpinion,
            reason: reason.into(),
            error: None,
        }
    }

    fn rules_for(&self, user: &UserInfo, namespace: &str) -> Option<RulesInfo> {
        let (rules, errors) = self.policy_rules_for(user, namespace);
        let mut info = RulesInfo {
            errors,
            ..RulesInfo::default()
        };
        for rule in rules {
            if !rule.resources.is_empty() {
                info.resource_rules.push(PolicyRule {
                    non_resource_urls: Vec::new(),
                    ..rule.clone()
                });
            }
            if !rule.non_resource_urls.is_empty() {
                info.non_resource_rules.push(PolicyRule {
                    verbs: rule.verbs,
                    non_resource_urls: rule.non_resource_urls,
                    ..PolicyRule::default()
                });
            }
        }
        Some(info)
    }
}

impl RuleResolver for RbacAuthorizer {
    fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        self.policy_rules_for(user, namespace)
    }

    fn role_reference_rules(
        &self,
        kind: &str,
        name: &str,
        binding_namespace: &str,
    ) -> Result<Vec<PolicyRule>, ApiError> {
        let snapshot = self.snapshot();
        match snapshot.role_reference_rules(kind, name, binding_namespace) {
            Ok(rules) => Ok(rules.as_ref().clone()),
            Err(snapshot::RoleRefError::NotFound(resource, name)) => Err(ApiError::not_found(
                &apimachinery::GroupResource::new("rbac.authorization.k8s.io", resource),
                &name,
            )),
            Err(e) => Err(ApiError::internal(e.to_string())),
        }
    }
}
