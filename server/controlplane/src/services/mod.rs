//! Services in the control plane: the allocation of cluster IPs and node ports
//! ([`allocation`] over [`allocator`], with the [`repair`] of leaked and missing records), the `default/kubernetes` Service kept pointing at the
//! running replicas ([`kubernetes_service`]), and the one service resolver every caller of a
//! `service` reference uses ([`resolver`]). [`install`] wires them into a generic server;
//! [`crate::KubernetesApis`] calls it.
//!
//! The flags are the generic server's ([`server::genericserver::service_network`]):
//! `--service-cluster-ip-range` (default `10.0.0.0/24`; its first address is the `kubernetes`
//! Service's), `--service-node-port-range` (default `30000-32767`), `--advertise-address` and
//! `--enable-aggregator-routing`.

pub mod allocation;
pub mod allocator;
pub mod kubernetes_service;
pub mod repair;
pub mod resolver;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use apimachinery::status::ApiError;
use server::endpoints::ApiContext;
use server::genericserver::GenericServer;
use server::genericserver::service_network::ServiceNetwork;
use server::registry::CachedObjects;

use self::allocation::ServiceAllocation;
use self::allocator::{IpAllocator, PortAllocator};
use self::kubernetes_service::KubernetesService;
use self::repair::AllocationRepair;
use self::resolver::{ClusterServiceResolver, Loopback};

/// Installs Services into `server` when its scheme serves them: the allocation hooks of the
/// Service store, the service resolver of the registry, and the `bootstrap-controller`
/// post-start hook (the repair of the allocations, then the `kubernetes` Service, its
/// Endpoints and EndpointSlice, reconciled until the server stops; a pre-shutdown hook takes
/// this replica out of them).
pub fn install(server: &mut GenericServer) -> Result<(), ApiError> {
    let api = Arc::clone(server.api());
    if api.scheme.by_kind("", "Service").is_none() {
        return Ok(());
    }
    let network = server.service_network().clone();
    let repair = Arc::new(install_allocation(&api, &network)?);
    let loopback = Loopback::new(server.bind_address(), server.serving_address());
    api.registry
        .set_service_resolver(Arc::new(resolver(&api, &network, Some(loopback))));
    let reconciler = KubernetesService::new(
        Arc::clone(&api),
        network,
        server.bind_address(),
        server.serving_address(),
    );
    if reconciler.advertised().is_none() {
        tracing::warn!(
            "no address to advertise (--advertise-address is unset and the host has only loopback addresses, \
             which Endpoints may not hold): the kubernetes Service has no endpoints"
        );
    }
    let starter = reconciler.clone();
    let bootstrap_api = Arc::clone(&api);
    server.add_post_start_hook(
        "bootstrap-controller",
        Arc::new(move || {
            let (reconciler, api) = (starter.clone(), Arc::clone(&bootstrap_api));
            let repair = Arc::clone(&repair);
            Box::pin(async move {
                // The allocations repaired once before serving, then every few minutes.
                if let Err(e) = repair.run_once().await {
                    tracing::error!(error = %e, "unable to perform initial IP and Port allocation check");
                }
                repair.start();
                // The `default` namespace first (the namespaces' own hook may not have run).
                crate::controllers::bootstrap(&api)
                    .await
                    .map_err(|e| e.to_string())?;
                reconciler
                    .reconcile(false)
                    .await
                    .map_err(|e| e.to_string())?;
                reconciler.start();
                Ok(())
            })
        }),
    );
    server.add_pre_shutdown_hook(
        "bootstrap-controller",
        Arc::new(move || {
            let reconciler = reconciler.clone();
            Box::pin(async move { reconciler.reconcile(true).await.map_err(|e| e.to_string()) })
        }),
    );
    Ok(())
}

/// Sets the allocation hooks of `network` on the Service store of `api`; returns the repair of
/// those allocations, for the caller to run.
pub fn install_allocation(
    api: &Arc<ApiContext>,
    network: &ServiceNetwork,
) -> Result<AllocationRepair, ApiError> {
    let backend = Arc::clone(api.registry.backend());
    let prefix = api.registry.prefix().to_string();
    let ips = IpAllocator::new(Arc::clone(&backend), &prefix, network.cluster_ip_range);
    let ports = PortAllocator::new(backend, &prefix, network.node_port_range.clone());
    let allocation = ServiceAllocation::new(ips.clone(), ports.clone());
    api.store(&kubernetes_api::core::SERVICE_KIND)?
        .set_write_hooks(allocation::hooks(allocation));
    Ok(AllocationRepair::new(Arc::clone(api), ips, ports))
}

/// The service resolver of `api`'s watch caches under `network`'s routing, with the server
/// itself at `loopback`.
pub fn resolver(
    api: &ApiContext,
    network: &ServiceNetwork,
    loopback: Option<Loopback>,
) -> ClusterServiceResolver {
    let objects = Arc::new(CachedObjects::new(
        Arc::clone(&api.registry),
        Arc::clone(&api.scheme),
    ));
    ClusterServiceResolver::new(objects, network.enable_aggregator_routing, loopback)
}
