//! Conversion of storage failures into API `Status` errors.

use apimachinery::GroupResource;
use apimachinery::status::ApiError;
use storage::StorageError;

/// Maps a storage error on `resource`/`name` to the `Status` Kubernetes returns.
pub fn storage_error(err: StorageError, resource: &GroupResource, name: &str) -> ApiError {
    match err {
        StorageError::KeyNotFound { .. } => ApiError::not_found(resource, name),
        StorageError::KeyExists { .. } => ApiError::already_exists(resource, name),
        StorageError::Conflict { .. } => ApiError::conflict_stale(resource, name),
        StorageError::TooLargeResourceVersion { requested, current } => {
            ApiError::resource_version_too_large(requested, current, 1)
        }
        StorageError::Expired {
            requested,
            compacted,
        } => ApiError::too_old_resource_version(requested, compacted),
        e @ StorageError::ContinueExpired { .. } => ApiError::expired(e.to_string()),
        StorageError::InvalidContinue { message } => {
            ApiError::bad_request(format!("invalid continue token: {message}"))
        }
        e @ StorageError::InvalidResourceVersion { .. } => ApiError::bad_request(e.to_string()),
        e @ StorageError::InvalidKey { .. } => ApiError::bad_request(e.to_string()),
        StorageError::InvalidObj { message, .. } => ApiError::conflict(resource, name, &message),
        StorageError::Callback(inner) => match inner.downcast_ref::<ApiError>() {
            Some(api) => api.clone(),
            None => ApiError::internal(inner),
        },
        StorageError::Unavailable { message } => ApiError::service_unavailable(message),
        StorageError::Timeout { message } => ApiError::timeout(&message, 1),
        other => ApiError::internal(other),
    }
}

/// Wraps an API error so it can pass through a storage callback unchanged.
pub fn callback(err: ApiError) -> StorageError {
    StorageError::callback(err)
}
