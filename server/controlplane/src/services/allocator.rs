//! Cluster IPs and node ports, allocated in storage so that every replica on the same etcd
//! sees the same allocations.
//!
//! kube-apiserver's legacy allocator keeps one bitmap (`RangeAllocation` at
//! `/registry/ranges/serviceips`) updated with compare-and-swap; apiary keeps one key per
//! allocated value instead (`<prefix>/ranges/serviceips/<ip>`,
//! `<prefix>/ranges/servicenodeports/<port>`, the value the owning Service's
//! `namespace/name`), created only when absent: two replicas that pick the same value race on
//! one key, and exactly one create succeeds, without a read-modify-write of a shared bitmap.
//! Releasing deletes the key.

use std::net::IpAddr;
use std::sync::Arc;

use server::genericserver::service_network::IpNet;
use storage::backend::{Backend, Condition, RangeRequest, TxnOutcome};

/// Why a value could not be allocated, with kube-apiserver's messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AllocationError {
    /// The requested IP is taken (`ipallocator.ErrAllocated`).
    #[error("provided IP is already allocated")]
    IpAllocated,
    /// The requested IP is outside the range (`ipallocator.ErrNotInRange`).
    #[error("the provided IP ({ip}) is not in the valid range. The range of valid IPs is {range}")]
    IpNotInRange {
        /// The requested IP.
        ip: IpAddr,
        /// `--service-cluster-ip-range`.
        range: String,
    },
    /// The requested port is taken (`portallocator.ErrAllocated`).
    #[error("provided port is already allocated")]
    PortAllocated,
    /// The requested port is outside the range (`portallocator.ErrNotInRange`).
    #[error("provided port is not in the valid range. The range of valid ports is {range}")]
    PortNotInRange {
        /// `--service-node-port-range`.
        range: String,
    },
    /// Every value of the range is taken (`ErrFull`).
    #[error("range is full")]
    Full,
    /// Storage failed.
    #[error("{0}")]
    Storage(String),
}

/// A random number below `n` (`n > 0`), from a version-4 UUID's random bits.
fn random_below(n: u128) -> u128 {
    uuid::Uuid::new_v4().as_u128() % n
}

/// One range of values (IPs or ports), as offsets `0..size`, with its keys in storage.
#[derive(Clone)]
struct Keys {
    backend: Arc<dyn Backend>,
    /// The key prefix, ending with `/`.
    prefix: String,
}

impl Keys {
    /// Records `value` for `owner` unless it is taken; `dry_run` only checks.
    async fn claim(
        &self,
        value: &str,
        owner: &str,
        dry_run: bool,
    ) -> Result<bool, AllocationError> {
        let key = format!("{}{value}", self.prefix);
        if dry_run {
            let got = self
                .backend
                .get(&key, 0)
                .await
                .map_err(|e| AllocationError::Storage(e.to_string()))?;
            return Ok(got.kv.is_none());
        }
        let outcome = self
            .backend
            .put(
                &key,
                owner.to_string().into_bytes().into(),
                Condition::Absent,
                None,
            )
            .await
            .map_err(|e| AllocationError::Storage(e.to_string()))?;
        Ok(matches!(outcome, TxnOutcome::Committed { .. }))
    }

    /// Deletes the record of `value`, if any.
    async fn release(&self, value: &str) -> Result<(), AllocationError> {
        let key = format!("{}{value}", self.prefix);
        self.backend
            .delete(&key, Condition::Always)
            .await
            .map(|_| ())
            .map_err(|e| AllocationError::Storage(e.to_string()))
    }

    /// The values recorded.
    async fn taken(&self) -> Result<Vec<String>, AllocationError> {
        Ok(self.records().await?.into_iter().map(|(v, _)| v).collect())
    }

    /// The values recorded that parse as `T`, with their owners.
    async fn parsed_records<T: std::str::FromStr>(
        &self,
    ) -> Result<Vec<(T, String)>, AllocationError> {
        Ok(self
            .records()
            .await?
            .into_iter()
            .filter_map(|(value, owner)| Some((value.parse().ok()?, owner)))
            .collect())
    }

    /// The values recorded, with their owners.
    async fn records(&self) -> Result<Vec<(String, String)>, AllocationError> {
        let response = self
            .backend
            .range(RangeRequest {
                prefix: self.prefix.clone(),
                start: String::new(),
                limit: 0,
                revision: 0,
            })
            .await
            .map_err(|e| AllocationError::Storage(e.to_string()))?;
        Ok(response
            .kvs
            .into_iter()
            .map(|kv| {
                (
                    kv.key[self.prefix.len()..].to_string(),
                    String::from_utf8_lossy(&kv.value).into_owned(),
                )
            })
            .collect())
    }

    /// Claims a free offset of `0..size` (through `name`), preferring `preferred` (a sub-range
    /// tried first, as kube-apiserver's allocators prefer the upper band of a range for
    /// dynamic values and leave the lower one to values asked for by name).
    async fn claim_any(
        &self,
        size: u128,
        preferred: std::ops::Range<u128>,
        name: impl Fn(u128) -> String,
        owner: &str,
        dry_run: bool,
    ) -> Result<u128, AllocationError> {
        // A few rounds: a value another replica took between the listing and the create is
        // skipped at the next round.
        for _ in 0..8 {
            let taken: std::collections::HashSet<String> =
                self.taken().await?.into_iter().collect();
            let bands = [preferred.clone(), 0..preferred.start, preferred.end..size];
            let mut raced = false;
            for band in bands {
                let len = band.end.saturating_sub(band.start);
                if len == 0 {
                    continue;
                }
                let start = random_below(len);
                for i in 0..len {
                    let offset = band.start + (start + i) % len;
                    let value = name(offset);
                    if taken.contains(&value) {
                        continue;
                    }
                    if self.claim(&value, owner, dry_run).await? {
                        return Ok(offset);
                    }
                    raced = true;
                    break;
                }
                if raced {
                    break;
                }
            }
            if !raced {
                return Err(AllocationError::Full);
            }
        }
        Err(AllocationError::Full)
    }
}

/// The cluster IPs of `--service-cluster-ip-range`: every address but the network address
/// (and an IPv4 range's broadcast address).
#[derive(Clone)]
pub struct IpAllocator {
    keys: Keys,
    range: IpNet,
}

impl IpAllocator {
    /// The allocator of `range`, its records under `<prefix>/ranges/serviceips/`.
    pub fn new(backend: Arc<dyn Backend>, prefix: &str, range: IpNet) -> Self {
        let prefix = format!("{}/ranges/serviceips/", prefix.trim_end_matches('/'));
        Self {
            keys: Keys { backend, prefix },
            range,
        }
    }

    /// The range.
    pub fn range(&self) -> IpNet {
        self.range
    }

    /// How many addresses may be allocated.
    fn usable(&self) -> u128 {
        let size = self.range.size();
        if self.range.network.is_ipv4() {
            size - 2
        } else {
            (size - 1).min(1 << 64)
        }
    }

    /// Allocates `ip` for `owner` (`dry_run`: only checks that it is free and in range).
    pub async fn allocate(
        &self,
        ip: IpAddr,
        owner: &str,
        dry_run: bool,
    ) -> Result<(), AllocationError> {
        if !self.contains(ip) {
            return Err(AllocationError::IpNotInRange {
                ip,
                range: self.range.to_string(),
            });
        }
        if self
            .keys
            .claim(&ip.to_canonical().to_string(), owner, dry_run)
            .await?
        {
            Ok(())
        } else {
            Err(AllocationError::IpAllocated)
        }
    }

    /// Allocates a free address for `owner`, preferring the upper band of the range.
    pub async fn allocate_next(
        &self,
        owner: &str,
        dry_run: bool,
    ) -> Result<IpAddr, AllocationError> {
        let usable = self.usable();
        // kube-apiserver's static band: min(max(16, size/16), 256) addresses at the start.
        let band = (usable / 16).clamp(16, 256).min(usable);
        let range = self.range;
        let offset = self
            .keys
            .claim_any(
                usable,
                band..usable,
                |o| range.at(o + 1).to_string(),
                owner,
                dry_run,
            )
            .await?;
        Ok(range.at(offset + 1))
    }

    /// Releases `ip`.
    pub async fn release(&self, ip: IpAddr) -> Result<(), AllocationError> {
        self.keys.release(&ip.to_canonical().to_string()).await
    }

    /// The addresses recorded as allocated, with the owner each record names.
    pub async fn allocated(&self) -> Result<Vec<(IpAddr, String)>, AllocationError> {
        self.keys.parsed_records().await
    }

    /// Whether `ip` may be allocated from the range.
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.range
            .offset_of(ip)
            .is_some_and(|o| o >= 1 && o <= self.usable())
    }
}

/// The node ports of `--service-node-port-range`.
#[derive(Clone)]
pub struct PortAllocator {
    keys: Keys,
    range: std::ops::RangeInclusive<u16>,
}

impl PortAllocator {
    /// The allocator of `range`, its records under `<prefix>/ranges/servicenodeports/`.
    pub fn new(
        backend: Arc<dyn Backend>,
        prefix: &str,
        range: std::ops::RangeInclusive<u16>,
    ) -> Self {
        let prefix = format!("{}/ranges/servicenodeports/", prefix.trim_end_matches('/'));
        Self {
            keys: Keys { backend, prefix },
            range,
        }
    }

    /// Allocates `port` for `owner` (`dry_run`: only checks).
    pub async fn allocate(
        &self,
        port: i32,
        owner: &str,
        dry_run: bool,
    ) -> Result<(), AllocationError> {
        if !self.contains(port) {
            return Err(AllocationError::PortNotInRange {
                range: self.range_text(),
            });
        }
        if self.keys.claim(&port.to_string(), owner, dry_run).await? {
            Ok(())
        } else {
            Err(AllocationError::PortAllocated)
        }
    }

    /// Allocates a free port for `owner`, preferring the upper band of the range.
    pub async fn allocate_next(&self, owner: &str, dry_run: bool) -> Result<i32, AllocationError> {
        let start = u128::from(*self.range.start());
        let size = u128::from(*self.range.end()) - start + 1;
        let band = (size / 32).clamp(16, 128).min(size);
        let offset = self
            .keys
            .claim_any(
                size,
                band..size,
                |o| (start + o).to_string(),
                owner,
                dry_run,
            )
            .await?;
        Ok((start + offset) as i32)
    }

    /// Releases `port`.
    pub async fn release(&self, port: i32) -> Result<(), AllocationError> {
        self.keys.release(&port.to_string()).await
    }

    /// The ports recorded as allocated, with the owner each record names.
    pub async fn allocated(&self) -> Result<Vec<(i32, String)>, AllocationError> {
        self.keys.parsed_records().await
    }

    /// Whether `port` may be allocated from the range.
    pub fn contains(&self, port: i32) -> bool {
        u16::try_from(port).is_ok_and(|p| self.range.contains(&p))
    }

    /// The range as kube-apiserver prints it (`30000-32767`).
    pub fn range_text(&self) -> String {
        format!("{}-{}", self.range.start(), self.range.end())
    }
}
