//! The etcd backend: [`Backend`](crate::backend::Backend) on an etcd v3 cluster through
//! `etcd-client`, plus a helper that runs a throwaway etcd for tests and benchmarks.

mod backend;
mod config;
mod error;
mod lease;
pub mod process;
mod watch;

pub use backend::EtcdBackend;
pub use config::{EtcdConfig, EtcdTls};
