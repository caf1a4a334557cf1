//! Hand-written strategy of apiextensions.k8s.io: a CustomResourceDefinition prints
//! kube-apiserver's default table (`NAME`, `CREATED AT`).

use ::apimachinery::strategy::{Strategy, TableConvertor};
use ::apimachinery::table::DefaultTableConvertor;

/// A CustomResourceDefinition's registry behaviour (Kubernetes' `customresourcedefinition`
/// strategy).
pub struct CustomResourceDefinitionStrategy;

/// The finalizer that holds a deleted CRD until the extension server has deleted its objects.
pub const CUSTOM_RESOURCE_CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

impl Strategy for CustomResourceDefinitionStrategy {
    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&DefaultTableConvertor)
    }

    /// The first delete of a CRD only marks it (kube-apiserver's CRD `Delete`): it waits for
    /// the cleanup of its objects even when it has no finalizer yet.
    fn has_pending_finalizers(&self, object: &dyn ::apimachinery::runtime::Object) -> bool {
        object.metadata().deletion_timestamp.is_none()
    }

    /// Adds the cleanup finalizer and the `Terminating` condition (`InstanceDeletionPending`)
    /// to a CRD whose deletion starts.
    fn prepare_for_delete(&self, object: &mut dyn ::apimachinery::runtime::Object) {
        let Some(crd) = object.downcast_mut::<v1::CustomResourceDefinition>() else {
            return;
        };
        if !crd
            .metadata
            .finalizers
            .iter()
            .any(|f| f == CUSTOM_RESOURCE_CLEANUP_FINALIZER)
        {
            crd.metadata
                .finalizers
                .push(CUSTOM_RESOURCE_CLEANUP_FINALIZER.to_string());
        }
        let conditions = crd.status.conditions.get_or_insert_with(Vec::new);
        if !conditions.iter().any(|c| c.type_ == "Terminating") {
            conditions.push(v1::CustomResourceDefinitionCondition {
                type_: "Terminating".into(),
                status: "True".into(),
                last_transition_time: Some(::apimachinery::meta::Time::now()),
                reason: Some("InstanceDeletionPending".into()),
                message: Some(
                    "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon"
                        .into(),
                ),
                ..Default::default()
            });
        }
    }
}
