//! What Services, Endpoints and EndpointSlices share beyond their definitions: Kubernetes'
//! validation of them (`pkg/apis/core/validation`, `pkg/apis/discovery/validation`, with its
//! messages) and the pure rules of a Service's cluster IPs and node ports that kube-apiserver's
//! service storage applies before it allocates them (`pkg/registry/core/service/storage`).
//!
//! The allocation itself (cluster IPs, node ports) needs storage and lives in the control plane
//! (`controlplane::services`); the strategies of the kinds call what is here.

mod endpoints;
mod fields;
mod ip;
mod service;
mod tables;

pub use endpoints::{validate_endpoint_slice, validate_endpoint_slice_update, validate_endpoints};
pub use fields::{
    drop_type_dependent_fields, is_headless, needs_cluster_ip, needs_health_check_node_port,
    needs_node_port, normalize_cluster_ips, patch_allocated_values,
};
pub use ip::{parse_ip, validate_endpoint_ip};
pub use service::{validate_service, validate_service_status_update, validate_service_update};
pub use tables::{ENDPOINT_SLICE_TABLE, ENDPOINTS_TABLE, SERVICE_TABLE, format_endpoints};

/// `spec.type` of a Service exposed on a cluster IP only (the default).
pub const TYPE_CLUSTER_IP: &str = "ClusterIP";
/// `spec.type` of a Service exposed on a port of every node too.
pub const TYPE_NODE_PORT: &str = "NodePort";
/// `spec.type` of a Service exposed through a cloud load balancer too.
pub const TYPE_LOAD_BALANCER: &str = "LoadBalancer";
/// `spec.type` of a Service that is a DNS alias of `spec.externalName`.
pub const TYPE_EXTERNAL_NAME: &str = "ExternalName";
/// The `clusterIP` of a headless Service.
pub const CLUSTER_IP_NONE: &str = "None";
/// The protocols a port may have, in Kubernetes' (sorted) order.
pub const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];
/// The longest client-IP session affinity, in seconds.
pub const MAX_CLIENT_IP_AFFINITY_SECONDS: i32 = 86400;
/// The default client-IP session affinity, in seconds.
pub const DEFAULT_CLIENT_IP_AFFINITY_SECONDS: i32 = 10800;

/// Kubernetes' `IsValidPortNum`: the problems of a port number.
pub fn port_num_problems(port: i32) -> Vec<String> {
    if (1..=65535).contains(&port) {
        Vec::new()
    } else {
        vec!["must be between 1 and 65535, inclusive".to_string()]
    }
}

/// Kubernetes' `IsValidPortName`: the problems of a port name (an IANA service name).
pub fn port_name_problems(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > 15 {
        errs.push(::apimachinery::validation::max_len_error(15));
    }
    let charset = !port.is_empty()
        && port
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !charset {
        errs.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string(),
        );
    } else {
        if !port.bytes().any(|b| b.is_ascii_lowercase()) {
            errs.push("must contain at least one letter (a-z)".to_string());
        }
        if port.contains("--") {
            errs.push("must not contain consecutive hyphens".to_string());
        }
        if port.starts_with('-') || port.ends_with('-') {
            errs.push("must not begin or end with a hyphen".to_string());
        }
    }
    errs
}

#[cfg(test)]
mod tests;
