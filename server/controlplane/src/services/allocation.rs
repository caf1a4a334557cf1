//! The Service storage's write hooks: kube-apiserver's `beginCreate`, `beginUpdate` and
//! `afterDelete` of `pkg/registry/core/service/storage`, which allocate a Service's cluster IP,
//! node ports and health-check node port before it is validated and stored, give them back
//! when the write fails, release what an update no longer uses once it is stored, and release
//! everything when the Service is deleted.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use apimachinery::errors::FieldError;
use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use async_trait::async_trait;
use kubernetes_api::core::v1::Service;
use kubernetes_api::services::{
    CLUSTER_IP_NONE, is_headless, needs_cluster_ip, needs_health_check_node_port, needs_node_port,
    normalize_cluster_ips, patch_allocated_values,
};
use serde_json::Value;
use server::registry::hooks::{Finish, WriteHooks, finish_nothing};

use super::allocator::{AllocationError, IpAllocator, PortAllocator};

/// What one write allocated (given back when it fails) and what it leaves behind (released
/// when it is stored).
#[derive(Default)]
struct Transaction {
    ips: Vec<IpAddr>,
    ports: Vec<i32>,
    release_ips: Vec<IpAddr>,
    release_ports: Vec<i32>,
}

/// The Service kind's write hooks: allocation of cluster IPs and node ports.
#[derive(Clone)]
pub struct ServiceAllocation {
    ips: IpAllocator,
    ports: PortAllocator,
}

fn invalid(svc: &Service, errors: Vec<FieldError>) -> ApiError {
    ApiError::invalid(
        "",
        "Service",
        svc.metadata.name.as_deref().unwrap_or(""),
        &errors,
    )
}

pub(super) fn owner(svc: &Service) -> String {
    format!(
        "{}/{}",
        svc.metadata.namespace.as_deref().unwrap_or(""),
        svc.metadata.name.as_deref().unwrap_or("")
    )
}

/// The allocated (non-headless) cluster IPs of a Service.
pub(super) fn cluster_ips(svc: &Service) -> Vec<IpAddr> {
    if !needs_cluster_ip(svc) || is_headless(svc) {
        return Vec::new();
    }
    svc.spec
        .cluster_ips
        .iter()
        .filter_map(|ip| kubernetes_api::services::parse_ip(ip))
        .collect()
}

pub(super) fn node_ports(svc: &Service) -> Vec<i32> {
    let mut ports: Vec<i32> = Vec::new();
    if needs_node_port(svc) {
        ports.extend(
            svc.spec
                .ports
                .iter()
                .filter_map(|p| p.node_port)
                .filter(|n| *n != 0),
        );
    }
    if needs_health_check_node_port(svc) {
        ports.extend(svc.spec.health_check_node_port.filter(|n| *n != 0));
    }
    ports.sort_unstable();
    ports.dedup();
    ports
}

impl ServiceAllocation {
    /// Hooks allocating from `ips` and `ports`.
    pub fn new(ips: IpAllocator, ports: PortAllocator) -> Self {
        Self { ips, ports }
    }

    /// The IP family of the cluster IP range.
    fn family(&self) -> &'static str {
        if self.ips.range().network.is_ipv4() {
            "IPv4"
        } else {
            "IPv6"
        }
    }

    /// kube-apiserver's `initIPFamilyFields` for a single-stack cluster: the policy defaults
    /// to `SingleStack` (`RequireDualStack` for a headless Service without a selector), the
    /// families to the cluster's; a family or policy the cluster cannot serve is refused.
    fn init_ip_families(&self, svc: &mut Service) -> Vec<FieldError> {
        let family = self.family();
        let headless = is_headless(svc);
        if svc.spec.ip_family_policy.is_none() {
            let policy = if headless && svc.spec.selector.is_empty() {
                "RequireDualStack"
            } else {
                "SingleStack"
            };
            svc.spec.ip_family_policy = Some(policy.to_string());
        }
        let mut errors = Vec::new();
        if !headless && svc.spec.ip_family_policy.as_deref() == Some("RequireDualStack") {
            errors.push(FieldError::invalid(
                "spec.ipFamilyPolicy",
                &Value::from("RequireDualStack"),
                "this cluster is not configured for dual-stack services",
            ));
        }
        for (i, f) in svc.spec.ip_families.iter().enumerate() {
            if f != family && (f == "IPv4" || f == "IPv6") {
                errors.push(FieldError::invalid(
                    format!("spec.ipFamilies[{i}]"),
                    &Value::from(f.as_str()),
                    "not configured on this cluster",
                ));
            }
        }
        if !headless
            && let Some(ip) = svc
                .spec
                .cluster_ips
                .first()
                .and_then(|ip| kubernetes_api::services::parse_ip(ip))
        {
            let ip_family = if ip.is_ipv4() { "IPv4" } else { "IPv6" };
            if ip_family != family {
                errors.push(FieldError::invalid(
                    "spec.clusterIPs[0]",
                    &Value::from(svc.spec.cluster_ips[0].as_str()),
                    format!("expected an {family} value as indicated by `ipFamilies[0]`"),
                ));
            }
        }
        if svc.spec.ip_families.is_empty() {
            svc.spec.ip_families = vec![family.to_string()];
        }
        errors
    }

    /// Allocates the cluster IP a Service asks for, or a free one.
    async fn allocate_cluster_ip(
        &self,
        svc: &mut Service,
        txn: &mut Transaction,
        dry_run: bool,
    ) -> Result<(), ApiError> {
        let owner = owner(svc);
        match svc.spec.cluster_ip.clone().filter(|ip| !ip.is_empty()) {
            Some(ip) if ip == CLUSTER_IP_NONE => Ok(()),
            Some(text) => {
                let Some(ip) = kubernetes_api::services::parse_ip(&text) else {
                    // Validation reports the malformed address.
                    return Ok(());
                };
                self.ips.allocate(ip, &owner, dry_run).await.map_err(|e| {
                    invalid(
                        svc,
                        vec![FieldError::invalid(
                            "spec.clusterIPs",
                            &Value::from(svc.spec.cluster_ips.clone()),
                            format!("failed to allocate IP {text}: {e}"),
                        )],
                    )
                })?;
                txn.ips.push(ip);
                Ok(())
            }
            None => {
                let ip = self
                    .ips
                    .allocate_next(&owner, dry_run)
                    .await
                    .map_err(|e| match e {
                        AllocationError::Storage(e) => ApiError::internal(e),
                        e => ApiError::internal(format!("failed to allocate a serviceIP: {e}")),
                    })?;
                txn.ips.push(ip);
                svc.spec.cluster_ip = Some(ip.to_string());
                svc.spec.cluster_ips = vec![ip.to_string()];
                Ok(())
            }
        }
    }

    /// Allocates the node ports a Service's ports ask for, and free ones for the others (one
    /// per port number: a port served over two protocols has one node port), keeping those
    /// in `kept` (already the Service's).
    async fn allocate_node_ports(
        &self,
        svc: &mut Service,
        kept: &[i32],
        txn: &mut Transaction,
        dry_run: bool,
    ) -> Result<(), ApiError> {
        let owner = owner(svc);
        let mut by_port: BTreeMap<i32, i32> = BTreeMap::new();
        for i in 0..svc.spec.ports.len() {
            let (port, node_port) = (
                svc.spec.ports[i].port,
                svc.spec.ports[i].node_port.unwrap_or(0),
            );
            if node_port != 0 {
                if !kept.contains(&node_port) && !txn.ports.contains(&node_port) {
                    self.ports
                        .allocate(node_port, &owner, dry_run)
                        .await
                        .map_err(|e| {
                            invalid(
                                svc,
                                vec![FieldError::invalid(
                                    format!("spec.ports[{i}].nodePort"),
                                    &Value::from(node_port),
                                    e.to_string(),
                                )],
                            )
                        })?;
                    txn.ports.push(node_port);
                }
                by_port.insert(port, node_port);
                continue;
            }
            let node_port = match by_port.get(&port) {
                Some(n) => *n,
                None => {
                    let n = self
                        .ports
                        .allocate_next(&owner, dry_run)
                        .await
                        .map_err(|e| {
                            ApiError::internal(format!("failed to allocate a nodePort: {e}"))
                        })?;
                    txn.ports.push(n);
                    by_port.insert(port, n);
                    n
                }
            };
            svc.spec.ports[i].node_port = Some(node_port);
        }
        Ok(())
    }

    /// Allocates the health-check node port a `LoadBalancer` with the `Local` policy needs.
    async fn allocate_health_check_port(
        &self,
        svc: &mut Service,
        kept: &[i32],
        txn: &mut Transaction,
        dry_run: bool,
    ) -> Result<(), ApiError> {
        let owner = owner(svc);
        match svc.spec.health_check_node_port.filter(|n| *n != 0) {
            Some(n) if kept.contains(&n) => Ok(()),
            Some(n) => {
                self.ports.allocate(n, &owner, dry_run).await.map_err(|e| {
                    invalid(
                        svc,
                        vec![FieldError::invalid(
                            "spec.healthCheckNodePort",
                            &Value::from(n),
                            format!("failed to allocate requested HealthCheck NodePort {n}: {e}"),
                        )],
                    )
                })?;
                txn.ports.push(n);
                Ok(())
            }
            None => {
                let n = self
                    .ports
                    .allocate_next(&owner, dry_run)
                    .await
                    .map_err(|e| {
                        ApiError::internal(format!("failed to allocate a nodePort: {e}"))
                    })?;
                txn.ports.push(n);
                svc.spec.health_check_node_port = Some(n);
                Ok(())
            }
        }
    }

    /// The end of a write: given back on failure, what it left behind released on success.
    fn finish(&self, txn: Transaction, dry_run: bool) -> Finish {
        if dry_run {
            return finish_nothing();
        }
        let this = self.clone();
        Box::new(move |stored| {
            Box::pin(async move {
                let (ips, ports) = if stored {
                    (txn.release_ips, txn.release_ports)
                } else {
                    (txn.ips, txn.ports)
                };
                this.release(&ips, &ports).await;
            })
        })
    }

    async fn release(&self, ips: &[IpAddr], ports: &[i32]) {
        for ip in ips {
            if let Err(e) = self.ips.release(*ip).await {
                tracing::warn!(%ip, error = %e, "releasing a cluster IP failed");
            }
        }
        for port in ports {
            if let Err(e) = self.ports.release(*port).await {
                tracing::warn!(port, error = %e, "releasing a node port failed");
            }
        }
    }

    /// Gives back what `txn` allocated, for an error on the way.
    async fn abort(&self, txn: &Transaction, dry_run: bool) {
        if !dry_run {
            self.release(&txn.ips, &txn.ports).await;
        }
    }
}

#[async_trait]
impl WriteHooks for ServiceAllocation {
    async fn begin_create(
        &self,
        object: &mut dyn Object,
        dry_run: bool,
    ) -> Result<Finish, ApiError> {
        let Some(svc) = object.downcast_mut::<Service>() else {
            return Ok(finish_nothing());
        };
        normalize_cluster_ips(svc, None);
        let mut txn = Transaction::default();
        if needs_cluster_ip(svc) {
            let errors = self.init_ip_families(svc);
            if !errors.is_empty() {
                return Err(invalid(svc, errors));
            }
            self.allocate_cluster_ip(svc, &mut txn, dry_run).await?;
        }
        let result = async {
            if needs_node_port(svc) {
                self.allocate_node_ports(svc, &[], &mut txn, dry_run)
                    .await?;
            }
            if needs_health_check_node_port(svc) {
                self.allocate_health_check_port(svc, &[], &mut txn, dry_run)
                    .await?;
            }
            Ok::<_, ApiError>(())
        }
        .await;
        if let Err(e) = result {
            self.abort(&txn, dry_run).await;
            return Err(e);
        }
        Ok(self.finish(txn, dry_run))
    }

    async fn begin_update(
        &self,
        object: &mut dyn Object,
        old: &dyn Object,
        dry_run: bool,
    ) -> Result<Finish, ApiError> {
        let (Some(svc), Some(old)) = (
            object.downcast_mut::<Service>(),
            old.downcast_ref::<Service>(),
        ) else {
            return Ok(finish_nothing());
        };
        patch_allocated_values(svc, old);
        normalize_cluster_ips(svc, Some(old));
        let mut txn = Transaction::default();
        let result = async {
            if needs_cluster_ip(svc) {
                if needs_cluster_ip(old) {
                    if svc.spec.ip_families.is_empty() {
                        svc.spec.ip_families.clone_from(&old.spec.ip_families);
                    }
                    if svc.spec.ip_family_policy.is_none() {
                        svc.spec
                            .ip_family_policy
                            .clone_from(&old.spec.ip_family_policy);
                    }
                } else {
                    // From ExternalName: a cluster IP as for a new Service.
                    let errors = self.init_ip_families(svc);
                    if !errors.is_empty() {
                        return Err(invalid(svc, errors));
                    }
                    self.allocate_cluster_ip(svc, &mut txn, dry_run).await?;
                }
            }
            let old_ports = node_ports(old);
            if needs_node_port(svc) {
                self.allocate_node_ports(svc, &old_ports, &mut txn, dry_run)
                    .await?;
            }
            if needs_health_check_node_port(svc) {
                self.allocate_health_check_port(svc, &old_ports, &mut txn, dry_run)
                    .await?;
            }
            Ok(())
        }
        .await;
        if let Err(e) = result {
            self.abort(&txn, dry_run).await;
            return Err(e);
        }
        // What the old Service held and the new one does not is released once stored.
        let new_ips = cluster_ips(svc);
        txn.release_ips = cluster_ips(old)
            .into_iter()
            .filter(|ip| !new_ips.contains(ip))
            .collect();
        let new_ports = node_ports(svc);
        txn.release_ports = node_ports(old)
            .into_iter()
            .filter(|p| !new_ports.contains(p))
            .collect();
        Ok(self.finish(txn, dry_run))
    }

    async fn after_delete(&self, object: &dyn Object) {
        if let Some(svc) = object.downcast_ref::<Service>() {
            self.release(&cluster_ips(svc), &node_ports(svc)).await;
        }
    }
}

/// Shares the hooks with the store.
pub fn hooks(allocation: ServiceAllocation) -> Arc<dyn WriteHooks> {
    Arc::new(allocation)
}
