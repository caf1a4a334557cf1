//! Classification of etcd client errors into storage errors.

use std::time::Duration;

use crate::errors::StorageError;

/// What an etcd error means for the caller.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The requested revision was compacted (`mvcc: required revision has been compacted`).
    Compacted,
    /// The requested revision is in the future (`mvcc: required revision is a future revision`).
    FutureRevision,
    /// etcd is unreachable or has no leader; the request may be retried if idempotent.
    Unavailable(String),
    /// Anything else.
    Other(StorageError),
}

impl Failure {
    /// Converts to a storage error for failures that need no extra context.
    pub(crate) fn into_storage(self) -> StorageError {
        match self {
            Failure::Compacted => StorageError::internal("etcd revision compacted"),
            Failure::FutureRevision => StorageError::internal("etcd revision in the future"),
            Failure::Unavailable(message) => StorageError::Unavailable { message },
            Failure::Other(error) => error,
        }
    }
}

/// Classifies an etcd client error.
pub(crate) fn classify(error: etcd_client::Error) -> Failure {
    use etcd_client::Error as E;
    match error {
        E::GRpcStatus(status) => {
            let message = status.message();
            if message.contains("required revision has been compacted") {
                return Failure::Compacted;
            }
            if message.contains("required revision is a future revision") {
                return Failure::FutureRevision;
            }
            if message.contains("database space exceeded") {
                // etcd's words: `etcdserver: mvcc: database space exceeded`.
                return Failure::Other(StorageError::SpaceExceeded {
                    message: message.to_string(),
                });
            }
            match status.code() {
                tonic::Code::Unavailable | tonic::Code::Unknown | tonic::Code::Cancelled
                    if is_transient(message) || status.code() == tonic::Code::Unavailable =>
                {
                    Failure::Unavailable(format!("etcd: {message}"))
                }
                tonic::Code::DeadlineExceeded => Failure::Other(StorageError::Timeout {
                    message: format!("etcd: {message}"),
                }),
                _ => Failure::Other(StorageError::internal(format!("etcd: {status}"))),
            }
        }
        E::TransportError(e) => Failure::Unavailable(format!("etcd transport: {e}")),
        E::IoError(e) => Failure::Unavailable(format!("etcd i/o: {e}")),
        E::WatchError(e) => Failure::Unavailable(format!("etcd watch: {e}")),
        other => Failure::Other(StorageError::internal(format!("etcd: {other}"))),
    }
}

/// Messages of errors that etcd returns while it restarts or elects a leader.
fn is_transient(message: &str) -> bool {
    const TRANSIENT: &[&str] = &[
        "no leader",
        "leader changed",
        "transport",
        "connection",
        "stopped",
        "timed out",
        "server is shutting down",
    ];
    TRANSIENT.iter().any(|t| message.contains(t))
}

/// Exponential backoff between retries: 25 ms doubling to 1 s.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    next: Duration,
}

impl Backoff {
    /// A fresh backoff.
    pub(crate) fn new() -> Self {
        Self {
            next: Duration::from_millis(25),
        }
    }

    /// The delay before the next attempt (and doubles the one after).
    pub(crate) fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = (self.next * 2).min(Duration::from_secs(1));
        delay
    }
}
