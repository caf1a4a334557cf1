//! Hand-written strategy of apiextensions.k8s.io: a CustomResourceDefinition's registry
//! behaviour (Kubernetes' `pkg/registry/customresourcedefinition`); its validation, with
//! Kubernetes' messages and field paths, is the crate's `validation` module.

use ::apimachinery::errors::FieldError;
use ::apimachinery::runtime::Object;
use ::apimachinery::strategy::{Strategy, TableConvertor};
use ::apimachinery::table::DefaultTableConvertor;

use crate::validation::{validate_crd, validate_names};

/// A CustomResourceDefinition's registry behaviour: the storage version joins
/// `status.storedVersions` on every write of the main resource, `kubectl get` prints
/// kube-apiserver's default table (`NAME`, `CREATED AT`), and writes are validated as
/// Kubernetes validates them.
pub struct CustomResourceDefinitionStrategy;

/// The finalizer that holds a deleted CRD until the extension server has deleted its objects.
pub const CUSTOM_RESOURCE_CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

impl Strategy for CustomResourceDefinitionStrategy {
    fn prepare_for_create(&self, object: &mut dyn Object) {
        if let Some(crd) = object.downcast_mut::<v1::CustomResourceDefinition>() {
            crd.status = v1::CustomResourceDefinitionStatus::default();
            add_storage_version(crd);
        }
    }

    fn prepare_for_update(&self, object: &mut dyn Object, _old: &dyn Object, subresource: &str) {
        if subresource.is_empty()
            && let Some(crd) = object.downcast_mut::<v1::CustomResourceDefinition>()
        {
            add_storage_version(crd);
        }
    }

    fn validate(&self, object: &dyn Object) -> Vec<FieldError> {
        object
            .downcast_ref::<v1::CustomResourceDefinition>()
            .map(|crd| validate_crd(crd, None))
            .unwrap_or_default()
    }

    fn validate_update(&self, object: &dyn Object, old: &dyn Object) -> Vec<FieldError> {
        match (
            object.downcast_ref::<v1::CustomResourceDefinition>(),
            old.downcast_ref::<v1::CustomResourceDefinition>(),
        ) {
            (Some(crd), Some(old)) => validate_crd(crd, Some(old)),
            _ => Vec::new(),
        }
    }

    /// Kubernetes' status strategy: only `status.acceptedNames` is checked (a storage
    /// migration removes entries of `status.storedVersions` this way).
    fn validate_status_update(&self, object: &dyn Object, _old: &dyn Object) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if let Some(crd) = object.downcast_ref::<v1::CustomResourceDefinition>() {
            validate_names(
                &crd.status.accepted_names,
                "status.acceptedNames",
                &mut errors,
            );
        }
        errors
    }

    /// `unrecognized format "<format>"` for each format of the schemas kube-apiserver does
    /// not recognize (the write is accepted; the format is not checked).
    fn warnings_on_create(&self, object: &dyn Object) -> Vec<String> {
        object
            .downcast_ref::<v1::CustomResourceDefinition>()
            .map(|crd| {
                unrecognized_formats(crd)
                    .iter()
                    .map(|f| format_warning(f))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// As on create, for the formats the update introduces (one the old CRD already named
    /// is not warned about again).
    fn warnings_on_update(&self, object: &dyn Object, old: &dyn Object) -> Vec<String> {
        let (Some(crd), Some(old)) = (
            object.downcast_ref::<v1::CustomResourceDefinition>(),
            old.downcast_ref::<v1::CustomResourceDefinition>(),
        ) else {
            return Vec::new();
        };
        let before = unrecognized_formats(old);
        unrecognized_formats(crd)
            .iter()
            .filter(|f| !before.contains(f))
            .map(|f| format_warning(f))
            .collect()
    }

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

/// The unrecognized formats of every version's schema, in order, repeats kept.
fn unrecognized_formats(crd: &v1::CustomResourceDefinition) -> Vec<String> {
    crd.spec
        .versions
        .iter()
        .filter_map(|v| v.schema.as_ref()?.open_api_v3_schema.as_ref())
        .flat_map(|schema| {
            ::apimachinery::schema::unrecognized_formats(
                &::serde_json::to_value(schema).unwrap_or_default(),
            )
        })
        .collect()
}

fn format_warning(format: &str) -> String {
    format!("unrecognized format {format:?}")
}

/// Appends the storage version (the first version with `storage: true`) to
/// `status.storedVersions` when it is not there yet, as Kubernetes' strategy does on create and
/// on every update of the main resource.
fn add_storage_version(crd: &mut v1::CustomResourceDefinition) {
    let Some(storage) = crd.spec.versions.iter().find(|v| v.storage) else {
        return;
    };
    let stored = crd.status.stored_versions.get_or_insert_with(Vec::new);
    if !stored.contains(&storage.name) {
        stored.push(storage.name.clone());
    }
}
