//! The ValidatingAdmissionPolicy type-checking controller (kube-apiserver's, run in-process):
//! every policy whose `status.observedGeneration` is behind its generation gets its
//! expressions type-checked ([`crate::admission::policy::type_check`]) and its
//! `status.typeChecking` and `observedGeneration` written through the status subresource.
//!
//! It runs on the controller runtime ([`server::controller`]): a policy is reconciled when it
//! changes and every 30 s (its resync).

use std::sync::Arc;
use std::time::Duration;

use apimachinery::Scheme;
use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use async_trait::async_trait;
use kubernetes_api::admissionregistration_k8s_io::VALIDATING_ADMISSION_POLICY_KIND;
use kubernetes_api::admissionregistration_k8s_io::v1::{
    TypeChecking, ValidatingAdmissionPolicy, ValidatingAdmissionPolicyStatus,
};

use super::Replace;
use crate::admission::policy::type_check;
use server::controller::{Action, Controller, ObjectKey, Reconciler};
use server::registry::{NoAdmission, Registry, Store, UpdateOptions};

/// The field manager of the controller's writes (and the controller's name).
const MANAGER: &str = "validatingadmissionpolicy-status-controller";

/// How often every policy is looked at, besides on change.
const RESYNC: Duration = Duration::from_secs(30);

/// How many policies are checked at once (kube-controller-manager's
/// `ConcurrentPolicySyncs`).
const WORKERS: usize = 5;

/// The reconciler of ValidatingAdmissionPolicies' type checking.
pub struct TypeCheckingController {
    policies: Arc<Store>,
    scheme: Arc<Scheme>,
}

impl TypeCheckingController {
    /// The controller over the policies of `registry`, checking against `scheme`'s kinds,
    /// ready to be started.
    pub fn new(registry: &Registry, scheme: Arc<Scheme>) -> Result<Controller<Self>, ApiError> {
        let policies = registry.store(&VALIDATING_ADMISSION_POLICY_KIND)?;
        let reconciler = Self {
            policies: policies.clone(),
            scheme,
        };
        Ok(Controller::new(MANAGER, policies, reconciler)
            .workers(WORKERS)
            .resync(RESYNC))
    }

    /// Type-checks `policy` if its status is behind its generation.
    async fn sync(&self, policy: &ValidatingAdmissionPolicy) -> Result<(), ApiError> {
        let generation = policy.metadata.generation.unwrap_or(0);
        let status = policy.status.clone().unwrap_or_default();
        if status.observed_generation == Some(generation) && status.type_checking.is_some() {
            return Ok(());
        }
        let warnings = type_check::warnings(&policy.spec, &self.scheme);
        let mut updated = policy.clone();
        updated.status = Some(ValidatingAdmissionPolicyStatus {
            observed_generation: Some(generation),
            type_checking: Some(TypeChecking {
                expression_warnings: warnings,
            }),
            ..status
        });
        let name = policy.metadata.name.clone().unwrap_or_default();
        let mut object: Box<dyn Object> = Box::new(updated);
        server::apply::update_managed_fields(Some(policy), &mut *object, MANAGER, "status")?;
        match self
            .policies
            .update(
                "",
                &name,
                &Replace(object),
                &NoAdmission,
                &NoAdmission,
                UpdateOptions {
                    subresource: "status",
                    ..UpdateOptions::default()
                },
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

#[async_trait]
impl Reconciler for TypeCheckingController {
    type Error = ApiError;

    async fn reconcile(&self, key: &ObjectKey) -> Result<Action, ApiError> {
        let Some(object) = self.policies.try_get("", &key.name).await? else {
            return Ok(Action::Done);
        };
        if let Some(policy) = object.downcast_ref::<ValidatingAdmissionPolicy>() {
            self.sync(policy).await?;
        }
        Ok(Action::Done)
    }
}

#[cfg(test)]
mod tests {
    use apimachinery::meta::ObjectMeta;
    use kubernetes_api::admissionregistration_k8s_io::v1::{
        MatchResources, NamedRuleWithOperations, Rule, RuleWithOperations,
        ValidatingAdmissionPolicySpec, Validation,
    };
    use server::controller::Mutate;

    use super::*;

    /// A policy on ConfigMaps with one validation, `expression`.
    fn policy(expression: &str) -> ValidatingAdmissionPolicy {
        ValidatingAdmissionPolicy {
            metadata: ObjectMeta {
                name: Some("checked".into()),
                ..ObjectMeta::default()
            },
            spec: ValidatingAdmissionPolicySpec {
                match_constraints: Some(MatchResources {
                    resource_rules: vec![NamedRuleWithOperations {
                        rule_with_operations: RuleWithOperations {
                            operations: vec!["CREATE".into()],
                            rule: Rule {
                                api_groups: vec![String::new()],
                                api_versions: vec!["v1".into()],
                                resources: vec!["configmaps".into()],
                                ..Rule::default()
                            },
                        },
                        ..NamedRuleWithOperations::default()
                    }],
                    ..MatchResources::default()
                }),
                validations: vec![Validation {
                    expression: expression.into(),
                    ..Validation::default()
                }],
                ..ValidatingAdmissionPolicySpec::default()
            },
            ..ValidatingAdmissionPolicy::default()
        }
    }

    /// Waits until the policy's status has observed `generation`, and returns its warnings'
    /// field references; panics after 5 s.
    async fn checked_at(policies: &Store, generation: i64) -> Vec<String> {
        super::super::test_support::eventually(|| async {
            let object = policies
                .get("", "checked", "")
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let status = object
                .downcast_ref::<ValidatingAdmissionPolicy>()
                .and_then(|p| p.status.clone())
                .unwrap_or_default();
            match (status.observed_generation, &status.type_checking) {
                (Some(observed), Some(checking)) if observed == generation => Ok(checking
                    .expression_warnings
                    .iter()
                    .map(|w| w.field_ref.clone())
                    .collect()),
                _ => Err(format!(
                    "generation {generation} was never checked: {status:?}"
                )),
            }
        })
        .await
    }

    #[tokio::test]
    async fn a_policy_is_type_checked_at_every_generation() {
        let (_dir, registry) = super::super::test_support::registry();
        let policies = registry
            .store(&VALIDATING_ADMISSION_POLICY_KIND)
            .unwrap_or_else(|e| panic!("{e}"));
        let controller = TypeCheckingController::new(&registry, Arc::new(kubernetes_api::scheme()))
            .unwrap_or_else(|e| panic!("{e}"));
        let running = tokio::spawn(controller.run(std::future::pending()));

        // A ConfigMap has no `dat`: the warning names the validation.
        policies
            .create(Box::new(policy("object.dat == 'x'")), &NoAdmission, false)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            checked_at(&policies, 1).await,
            ["spec.validations[0].expression"]
        );

        // The fixed expression is a new generation, checked again.
        let fix = Mutate(|o: &mut dyn Object| {
            if let Some(p) = o.downcast_mut::<ValidatingAdmissionPolicy>() {
                p.spec.validations[0].expression = "object.data.x == 'x'".into();
            }
        });
        policies
            .update(
                "",
                "checked",
                &fix,
                &NoAdmission,
                &NoAdmission,
                UpdateOptions::default(),
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(checked_at(&policies, 2).await.is_empty());
        running.abort();
    }
}
