//! The ValidatingAdmissionPolicy type-checking controller (kube-apiserver's, run in-process):
//! every policy whose `status.observedGeneration` is behind its generation gets its
//! expressions type-checked ([`crate::admission::policy::type_check`]) and its
//! `status.typeChecking` and `observedGeneration` written through the status subresource.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::Scheme;
use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use futures::{FutureExt, StreamExt};
use kubernetes_api::admissionregistration_k8s_io::VALIDATING_ADMISSION_POLICY_KIND;
use kubernetes_api::admissionregistration_k8s_io::v1::{
    TypeChecking, ValidatingAdmissionPolicy, ValidatingAdmissionPolicyStatus,
};
use storage::interface::ListOptions;

use super::Replace;
use crate::admission::policy::type_check;
use server::registry::{NoAdmission, Registry, Store, UpdateOptions};

/// The field manager of the controller's writes.
const MANAGER: &str = "validatingadmissionpolicy-status-controller";

/// How often every policy is looked at, besides on change.
const RESYNC: Duration = Duration::from_secs(30);

/// The controller over the ValidatingAdmissionPolicy store.
pub struct TypeCheckingController {
    policies: Arc<Store>,
    scheme: Arc<Scheme>,
}

impl TypeCheckingController {
    /// The controller over the policies of `registry`, checking against `scheme`'s kinds.
    pub fn new(registry: &Registry, scheme: Arc<Scheme>) -> Result<Arc<Self>, ApiError> {
        Ok(Arc::new(Self {
            policies: registry.store(&VALIDATING_ADMISSION_POLICY_KIND)?,
            scheme,
        }))
    }

    /// Runs until the process ends: on every policy change and every `RESYNC`.
    pub async fn run(self: Arc<Self>) {
        loop {
            let watch = self
                .policies
                .watch(
                    &self.policies.collection_key("").unwrap_or_default(),
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

    /// Type-checks every policy whose status is behind.
    pub async fn sync_all(&self) {
        let cached = ListOptions {
            resource_version: "0".into(),
            ..ListOptions::default()
        };
        let Ok((items, _)) = self.policies.list("", cached).await else {
            return;
        };
        for item in &items {
            let Some(policy) = item.downcast_ref::<ValidatingAdmissionPolicy>() else {
                continue;
            };
            if let Err(e) = self.sync(policy).await {
                tracing::warn!(policy = ?policy.metadata.name, error = %e, "type-checking admission policy");
            }
        }
    }

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
