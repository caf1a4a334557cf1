//! The etcd backend: [`Backend`](crate::backend::Backend) on an etcd v3 cluster through
//! `etcd-client`, plus a helper that runs a throwaway etcd for tests and benchmarks.
//!
//! Build it from kube-apiserver-style flags with [`EtcdConfig::from_flags`] and
//! [`EtcdBackend::connect`]. Keys are stored exactly as given (the server builds them under
//! `--etcd-prefix` with [`ResourceKeys`](crate::keys::ResourceKeys)).
//!
//! Watch progress: a watch that asks for progress items gets them from etcd's progress
//! notifications. On etcd 3.4.25+ / 3.5.8+ the backend also requests progress at the asked
//! interval; older servers can announce a revision before its events were sent on such
//! requests, so there the backend relies only on the server's periodic notifications, whose
//! interval is the server flag `--experimental-watch-progress-notify-interval` (10 minutes by
//! default; the test etcds use 100 ms). Watch caches over old etcd versions therefore need that
//! flag lowered to keep consistent reads fast; otherwise such reads fall back to etcd.

mod backend;
mod config;
mod error;
mod lease;
pub mod process;
mod watch;
mod write;

pub use backend::EtcdBackend;
pub use config::{EtcdConfig, EtcdTls};
