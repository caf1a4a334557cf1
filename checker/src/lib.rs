//! Checkers for histories recorded against a real apiary server.
//!
//! A test drives the server with many concurrent clients, records every operation with its
//! real call and return times ([`history`]), records what its watches delivered
//! ([`history::WatchRecord`]), and asks this crate whether the run kept Kubernetes' contract:
//!
//! - [`linearizability`]: every key's operations have a sequential order, consistent with real
//!   time, that a single Kubernetes object would produce (Wing & Gong's search with Lowe's
//!   memoisation, per key by P-compositionality); lists are snapshots at their
//!   resourceVersion; resourceVersions of writes are unique and follow real time.
//! - [`watch`]: the watch guarantees (ordered, unique, atomic, bookmarkable, reliable,
//!   resumable) checked against the same history.
//!
//! No I/O and no async runtime: the recorder lives in the tests, this crate only judges.

pub mod history;
