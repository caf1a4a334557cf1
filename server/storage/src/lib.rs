//! Storage for apiary: one interface with etcd3 semantics and Kubernetes' storage semantics on
//! top of it.
//!
//! - [`backend::Backend`]: the raw revisioned key-value contract (embedded engine, etcd).
//! - [`interface::Interface`]: Kubernetes' `storage.Interface` over opaque encoded objects,
//!   implemented by [`store::Store`] over any backend (and by the watch cache).
//! - [`keys`]: the key layout; [`continue_token`]: list continuation tokens.
//! - [`transformer`]: encryption at rest.
//! - [`errors::StorageError`]: the one error type.

pub mod attr_map;
pub mod backend;
pub mod cacher;
pub mod compactor;
pub mod continue_token;
pub mod embedded;
pub mod errors;
pub mod etcd;
pub mod factory;
pub mod fault;
pub mod interface;
pub mod keys;
pub mod private_files;
pub mod store;
#[doc(hidden)]
pub mod testing;
pub mod transformer;

pub use errors::{Result, Revision, StorageError};
