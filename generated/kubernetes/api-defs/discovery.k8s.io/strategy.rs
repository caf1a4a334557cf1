//! Hand-written strategies of discovery.k8s.io: an EndpointSlice's validation (Kubernetes'
//! `pkg/apis/discovery/validation`) and printer.

use ::apimachinery::errors::FieldError;
use ::apimachinery::runtime::Object;
use ::apimachinery::strategy::{Strategy, TableConvertor};

/// An EndpointSlice: Kubernetes' validation (its `addressType` may not change) and printer.
pub struct EndpointSliceStrategy;

impl Strategy for EndpointSliceStrategy {
    fn validate(&self, object: &dyn Object) -> Vec<FieldError> {
        object
            .downcast_ref::<v1::EndpointSlice>()
            .map(crate::services::validate_endpoint_slice)
            .unwrap_or_default()
    }

    fn validate_update(&self, object: &dyn Object, old: &dyn Object) -> Vec<FieldError> {
        match (object.downcast_ref::<v1::EndpointSlice>(), old.downcast_ref::<v1::EndpointSlice>()) {
            (Some(slice), Some(old)) => crate::services::validate_endpoint_slice_update(slice, old),
            _ => Vec::new(),
        }
    }

    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&crate::services::ENDPOINT_SLICE_TABLE)
    }
}
