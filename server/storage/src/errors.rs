//! The single error type of the storage layer.
//!
//! Every backend, the [`Store`](crate::store::Store), the watch cache and the value transformer
//! report failures as [`StorageError`]. The server converts it to an API `Status` in one place;
//! each variant carries the data that conversion needs (key, versions, messages).

use std::sync::Arc;

/// A revision of the backend, which is also the resourceVersion exposed at the API.
pub type Revision = i64;

/// The result type used throughout the storage crate.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;

/// Every failure the storage layer can report.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StorageError {
    /// The key does not exist (at the requested revision).
    #[error("key not found: {key}")]
    KeyNotFound {
        /// The full storage key.
        key: String,
        /// The revision the read was served at (0 when unknown).
        revision: Revision,
    },
    /// A create found the key already present.
    #[error("key exists: {key}")]
    KeyExists {
        /// The full storage key.
        key: String,
        /// The mod revision of the existing value (0 when unknown).
        revision: Revision,
    },
    /// A compare-and-swap lost against a concurrent writer and cannot be retried by the store
    /// (for example because the caller pinned the resourceVersion).
    #[error("conflict on {key}: {message}")]
    Conflict {
        /// The full storage key.
        key: String,
        /// A human-readable explanation.
        message: String,
    },
    /// The requested resourceVersion is newer than the backend's current revision. Kubernetes
    /// answers 504 with a `ResourceVersionTooLarge` cause and `retryAfterSeconds: 1`.
    #[error("Too large resource version: {requested}, current: {current}")]
    TooLargeResourceVersion {
        /// The requested revision.
        requested: Revision,
        /// The backend's current revision.
        current: Revision,
    },
    /// The requested revision was compacted away ("410 Gone", reason `Expired`).
    #[error(
        "The resourceVersion for the provided request is too old: requested {requested}, compacted {compacted}"
    )]
    Expired {
        /// The requested revision.
        requested: Revision,
        /// The oldest revision still available (the compaction point).
        compacted: Revision,
    },
    /// A continue token is malformed or does not belong to the listed prefix (400 BadRequest).
    #[error("invalid continue token: {message}")]
    InvalidContinue {
        /// A human-readable explanation.
        message: String,
    },
    /// A continue token references a compacted revision (410 Gone, reason `Expired`; the client
    /// must restart the list).
    #[error(
        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter."
    )]
    ContinueExpired {
        /// The revision encoded in the token.
        requested: Revision,
        /// The oldest revision still available.
        compacted: Revision,
    },
    /// A resourceVersion string is not a valid decimal revision (400 BadRequest).
    #[error("invalid resource version {value:?}: {message}")]
    InvalidResourceVersion {
        /// The string as received.
        value: String,
        /// A human-readable explanation.
        message: String,
    },
    /// A key is malformed (empty segment, `.` or `..`, outside the store's prefix).
    #[error("invalid key {key:?}: {message}")]
    InvalidKey {
        /// The offending key or segment.
        key: String,
        /// A human-readable explanation.
        message: String,
    },
    /// The object violates a storage precondition (uid or resourceVersion mismatch). Kubernetes
    /// maps this to 409 Conflict.
    #[error("Precondition failed for {key}: {message}")]
    InvalidObj {
        /// The full storage key.
        key: String,
        /// A human-readable explanation.
        message: String,
    },
    /// A stored value could not be decrypted by any configured key. This is reported per
    /// object and never treated as "missing".
    #[error("failed to decrypt value at {key}: {message}")]
    Decrypt {
        /// The full storage key.
        key: String,
        /// The provider prefix found on the value, if any (for example `k8s:enc:aesgcm:v1:key1:`).
        prefix: Option<String>,
        /// A human-readable explanation.
        message: String,
    },
    /// The backend cannot be reached or is shutting down (503).
    #[error("storage unavailable: {message}")]
    Unavailable {
        /// A human-readable explanation.
        message: String,
    },
    /// The store is at its space quota: a write that would grow it is refused until deletes
    /// and history compaction free space (etcd's `mvcc: database space exceeded`; 500, as
    /// kube-apiserver answers it). Deletes are still accepted.
    #[error("{message}")]
    SpaceExceeded {
        /// A human-readable explanation.
        message: String,
    },
    /// A value larger than the store accepts in one write (etcd's `request is too large` past
    /// its default `--max-request-bytes` of 1.5 MiB; 500, as kube-apiserver answers it).
    #[error(
        "request is too large: {size} bytes to store, more than the {limit} the store accepts in one write"
    )]
    TooLarge {
        /// The bytes of the key and value.
        size: usize,
        /// The most the store accepts.
        limit: usize,
    },
    /// The operation did not finish in time (504).
    #[error("storage operation timed out: {message}")]
    Timeout {
        /// A human-readable explanation.
        message: String,
    },
    /// An error produced by a caller-supplied callback (update function, deletion validation,
    /// attribute extraction). The server downcasts it back to its own error type.
    #[error("{0}")]
    Callback(Arc<dyn std::error::Error + Send + Sync>),
    /// Any other failure (I/O, corruption, invariant violation) (500).
    #[error("internal storage error: {message}")]
    Internal {
        /// A human-readable explanation.
        message: String,
    },
}

impl StorageError {
    /// Builds an [`StorageError::Internal`] from anything displayable.
    pub fn internal(message: impl std::fmt::Display) -> Self {
        Self::Internal {
            message: message.to_string(),
        }
    }

    /// Builds an [`StorageError::Unavailable`] from anything displayable.
    pub fn unavailable(message: impl std::fmt::Display) -> Self {
        Self::Unavailable {
            message: message.to_string(),
        }
    }

    /// Wraps a caller error as [`StorageError::Callback`].
    pub fn callback(err: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Callback(Arc::new(err))
    }

    /// True for [`StorageError::KeyNotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::KeyNotFound { .. })
    }

    /// True for [`StorageError::KeyExists`].
    pub fn is_exists(&self) -> bool {
        matches!(self, Self::KeyExists { .. })
    }

    /// True for [`StorageError::Conflict`].
    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Conflict { .. })
    }

    /// True for [`StorageError::Expired`] and [`StorageError::ContinueExpired`] (410 Gone).
    pub fn is_expired(&self) -> bool {
        matches!(self, Self::Expired { .. } | Self::ContinueExpired { .. })
    }

    /// True for [`StorageError::InvalidObj`] (precondition failures).
    pub fn is_invalid_obj(&self) -> bool {
        matches!(self, Self::InvalidObj { .. })
    }
}
