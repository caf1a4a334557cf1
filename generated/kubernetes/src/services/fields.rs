//! The rules kube-apiserver's service storage applies to a Service's allocated fields before
//! it allocates them (`normalizeClusterIPs`, `patchAllocatedValues`) and its strategy after
//! (`dropTypeDependentFields`).

use crate::core::v1::{Service, ServicePort};

use super::{
    CLUSTER_IP_NONE, TYPE_CLUSTER_IP, TYPE_EXTERNAL_NAME, TYPE_LOAD_BALANCER, TYPE_NODE_PORT,
};

fn service_type(svc: &Service) -> &str {
    svc.spec.r#type.as_deref().unwrap_or("")
}

/// Whether the Service has a cluster IP to allocate or keep: every type but `ExternalName`.
pub fn needs_cluster_ip(svc: &Service) -> bool {
    service_type(svc) != TYPE_EXTERNAL_NAME
}

/// Whether the Service has node ports: `NodePort`, and `LoadBalancer` unless
/// `allocateLoadBalancerNodePorts` is false.
pub fn needs_node_port(svc: &Service) -> bool {
    match service_type(svc) {
        TYPE_NODE_PORT => true,
        TYPE_LOAD_BALANCER => svc.spec.allocate_load_balancer_node_ports != Some(false),
        _ => false,
    }
}

/// Whether the Service has a health-check node port: a `LoadBalancer` with the `Local`
/// external traffic policy.
pub fn needs_health_check_node_port(svc: &Service) -> bool {
    service_type(svc) == TYPE_LOAD_BALANCER
        && svc.spec.external_traffic_policy.as_deref() == Some("Local")
}

/// Whether the Service is headless: its one cluster IP is `None`.
pub fn is_headless(svc: &Service) -> bool {
    svc.spec.cluster_ips.len() == 1 && svc.spec.cluster_ips[0] == CLUSTER_IP_NONE
}

/// Kubernetes' `ExternallyAccessible`: a `NodePort` or `LoadBalancer` Service, or a
/// `ClusterIP` one with external IPs.
pub(crate) fn externally_accessible(svc: &Service) -> bool {
    match service_type(svc) {
        TYPE_NODE_PORT | TYPE_LOAD_BALANCER => true,
        TYPE_CLUSTER_IP => !svc.spec.external_ips.is_empty(),
        _ => false,
    }
}

fn cluster_ip(svc: &Service) -> &str {
    svc.spec.cluster_ip.as_deref().unwrap_or("")
}

/// Kubernetes' `normalizeClusterIPs`: keeps `clusterIP` and `clusterIPs` in step for clients
/// that set only the first. On create (`old` is `None`) a `clusterIP` alone becomes
/// `clusterIPs`; on update a changed `clusterIP` with unchanged `clusterIPs` changes the first
/// of them, and an emptied one empties them.
pub fn normalize_cluster_ips(svc: &mut Service, old: Option<&Service>) {
    let Some(old) = old else {
        if !cluster_ip(svc).is_empty() && svc.spec.cluster_ips.is_empty() {
            svc.spec.cluster_ips = vec![cluster_ip(svc).to_string()];
        }
        return;
    };
    let same_ips = svc.spec.cluster_ips == old.spec.cluster_ips;
    if cluster_ip(svc) == cluster_ip(old) && same_ips {
        return;
    }
    if cluster_ip(svc).is_empty() && same_ips {
        svc.spec.cluster_ips.clear();
        return;
    }
    if cluster_ip(svc) != cluster_ip(old) && same_ips {
        let ip = cluster_ip(svc).to_string();
        match svc.spec.cluster_ips.first_mut() {
            Some(first) => *first = ip,
            None => svc.spec.cluster_ips = vec![ip],
        }
    }
}

/// Kubernetes' `patchAllocatedValues`: an update that leaves out what the server allocated
/// (the cluster IPs, a port's node port, the health-check node port) keeps it, as long as the
/// Service still needs it.
pub fn patch_allocated_values(svc: &mut Service, old: &Service) {
    if needs_cluster_ip(old) && needs_cluster_ip(svc) {
        if cluster_ip(svc).is_empty() {
            svc.spec.cluster_ip.clone_from(&old.spec.cluster_ip);
        }
        if svc.spec.cluster_ips.is_empty() && !old.spec.cluster_ips.is_empty() {
            svc.spec.cluster_ips.clone_from(&old.spec.cluster_ips);
        }
    }
    if needs_node_port(old) && needs_node_port(svc) {
        let used = |ports: &[ServicePort]| -> Vec<i32> {
            ports
                .iter()
                .filter_map(|p| p.node_port)
                .filter(|n| *n != 0)
                .collect()
        };
        let new_used = used(&svc.spec.ports);
        let taken: Vec<i32> = used(&old.spec.ports)
            .into_iter()
            .filter(|p| new_used.contains(p))
            .collect();
        for port in &mut svc.spec.ports {
            if port.node_port.unwrap_or(0) != 0 {
                continue;
            }
            let previous = old
                .spec
                .ports
                .iter()
                .rev()
                .find(|p| p.name == port.name)
                .and_then(|p| p.node_port)
                .unwrap_or(0);
            if !taken.contains(&previous) && previous != 0 {
                port.node_port = Some(previous);
            }
        }
    }
    if needs_health_check_node_port(old)
        && needs_health_check_node_port(svc)
        && svc.spec.health_check_node_port.unwrap_or(0) == 0
    {
        svc.spec.health_check_node_port = old.spec.health_check_node_port;
    }
}

/// Kubernetes' `dropTypeDependentFields`: when an update changes the type, the fields the new
/// type does not use are cleared, when the client left them as they were.
pub fn drop_type_dependent_fields(svc: &mut Service, old: &Service) {
    if service_type(svc) == service_type(old) {
        return;
    }
    if needs_cluster_ip(old) && !needs_cluster_ip(svc) {
        if cluster_ip(svc) == cluster_ip(old) && svc.spec.cluster_ips == old.spec.cluster_ips {
            svc.spec.cluster_ip = None;
            svc.spec.cluster_ips.clear();
        }
        if svc.spec.ip_families == old.spec.ip_families {
            svc.spec.ip_families.clear();
        }
        if svc.spec.ip_family_policy == old.spec.ip_family_policy {
            svc.spec.ip_family_policy = None;
        }
    }
    if needs_node_port(old) && !needs_node_port(svc) {
        let same = svc.spec.ports.len() == old.spec.ports.len()
            && svc
                .spec
                .ports
                .iter()
                .zip(&old.spec.ports)
                .all(|(a, b)| a.node_port == b.node_port);
        if same {
            for port in &mut svc.spec.ports {
                port.node_port = None;
            }
        }
    }
    if needs_health_check_node_port(old)
        && !needs_health_check_node_port(svc)
        && svc.spec.health_check_node_port == old.spec.health_check_node_port
    {
        svc.spec.health_check_node_port = None;
    }
    if service_type(svc) != TYPE_LOAD_BALANCER {
        if svc.spec.allocate_load_balancer_node_ports == old.spec.allocate_load_balancer_node_ports
        {
            svc.spec.allocate_load_balancer_node_ports = None;
        }
        if svc.spec.load_balancer_class == old.spec.load_balancer_class {
            svc.spec.load_balancer_class = None;
        }
    }
    if !externally_accessible(svc)
        && svc.spec.external_traffic_policy == old.spec.external_traffic_policy
    {
        svc.spec.external_traffic_policy = None;
    }
    if service_type(svc) == TYPE_EXTERNAL_NAME
        && svc.spec.internal_traffic_policy == old.spec.internal_traffic_policy
    {
        svc.spec.internal_traffic_policy = None;
    }
}
