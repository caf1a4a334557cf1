//! The storage baseline and the stored-bytes census: the embedded engine the server runs on,
//! driven directly through its [`Backend`] contract.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use storage::backend::{Backend, Condition, RangeRequest, TxnOutcome};
use storage::embedded::{EmbeddedBackend, EmbeddedOptions};
use storage::etcd::{EtcdBackend, EtcdConfig};

use crate::load::{Limit, Outcome, drive};

/// Durable creates (`put` with [`Condition::Absent`], the write a Kubernetes create issues) of
/// `value_size`-byte values by `writers` concurrent writers into a fresh store under `dir`,
/// opened with the options apiary uses. The CPU time recorded is this whole process's.
pub async fn creates(
    dir: &Path,
    writers: usize,
    value_size: usize,
    limit: Limit,
) -> anyhow::Result<Outcome> {
    let backend = Arc::new(EmbeddedBackend::open(EmbeddedOptions::new(dir))?);
    let value = Bytes::from(vec![b'x'; value_size]);
    let b = Arc::clone(&backend);
    let outcome = drive(
        std::process::id(),
        vec![(); writers],
        limit,
        move |(), n| {
            let (b, value) = (Arc::clone(&b), value.clone());
            async move {
                let key = format!("/registry/configmaps/raw/cm-{n}");
                match b.put(&key, value, Condition::Absent, None).await? {
                    TxnOutcome::Committed { .. } => Ok(()),
                    TxnOutcome::Failed { .. } => Err(anyhow::anyhow!("{key} already existed")),
                }
            }
        },
    )
    .await?;
    drop(backend);
    Ok(outcome)
}

/// Creates (`put` with [`Condition::Absent`], through apiary's etcd backend with its group
/// commit) of `value_size`-byte values under `prefix` of the etcd at `endpoint`, by `writers`
/// concurrent writers. The CPU time recorded is this process's (etcd's is measured apart).
pub async fn etcd_creates(
    endpoint: &str,
    prefix: &str,
    writers: usize,
    value_size: usize,
    limit: Limit,
) -> anyhow::Result<Outcome> {
    let backend = Arc::new(EtcdBackend::connect(EtcdConfig::new([endpoint.to_string()])).await?);
    let value = Bytes::from(vec![b'x'; value_size]);
    let prefix = prefix.to_string();
    drive(
        std::process::id(),
        vec![(); writers],
        limit,
        move |(), n| {
            let (b, value) = (Arc::clone(&backend), value.clone());
            let key = format!("{prefix}/configmaps/raw/cm-{n}");
            async move {
                match b.put(&key, value, Condition::Absent, None).await? {
                    TxnOutcome::Committed { .. } => Ok(()),
                    TxnOutcome::Failed { .. } => Err(anyhow::anyhow!("{key} already existed")),
                }
            }
        },
    )
    .await
}

/// What a store holds under a prefix.
#[derive(Debug, Default, Clone, Copy)]
pub struct Census {
    /// Keys.
    pub keys: u64,
    /// Sum of the stored value sizes.
    pub value_bytes: u64,
    /// Sum of the key sizes.
    pub key_bytes: u64,
}

/// Counts the live keys under `prefix` of the embedded store in `dir` (which no other process
/// may hold open) and sums their sizes.
pub async fn census(dir: &Path, prefix: &str) -> anyhow::Result<Census> {
    let backend = EmbeddedBackend::open(EmbeddedOptions::new(dir))?;
    let mut census = Census::default();
    let mut start = String::new();
    loop {
        let page = backend
            .range(RangeRequest {
                prefix: prefix.to_string(),
                start: start.clone(),
                limit: 10_000,
                revision: 0,
            })
            .await?;
        for kv in &page.kvs {
            census.keys += 1;
            census.value_bytes += kv.value.len() as u64;
            census.key_bytes += kv.key.len() as u64;
        }
        match page.kvs.last() {
            Some(last) if page.more => start = format!("{}\0", last.key),
            _ => break,
        }
    }
    Ok(census)
}
