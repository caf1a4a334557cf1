//! Kubernetes' `ValidateService`, `ValidateServiceUpdate` and `ValidateServiceStatusUpdate`
//! (`pkg/apis/core/validation`), with their messages. The metadata is the registry's.

use std::collections::BTreeSet;

use ::apimachinery::errors::{FieldError, FieldErrorType};
use ::apimachinery::meta::IntOrString;
use ::apimachinery::validation::{
    is_dns1123_label, is_dns1123_subdomain, is_qualified_name, validate_labels,
};
use ::serde_json::Value;

use super::fields::externally_accessible;
use super::ip::{parse_ip, validate_endpoint_ip, validate_ip};
use super::{
    CLUSTER_IP_NONE, MAX_CLIENT_IP_AFFINITY_SECONDS, PROTOCOLS, TYPE_CLUSTER_IP,
    TYPE_EXTERNAL_NAME, TYPE_LOAD_BALANCER, TYPE_NODE_PORT, is_headless,
    needs_health_check_node_port, port_name_problems, port_num_problems,
};
use crate::core::v1::{Service, ServicePort, SessionAffinityConfig};

const SERVICE_TYPES: [&str; 4] = [
    TYPE_CLUSTER_IP,
    TYPE_EXTERNAL_NAME,
    TYPE_LOAD_BALANCER,
    TYPE_NODE_PORT,
];
const AFFINITIES: [&str; 2] = ["ClientIP", "None"];
const IP_FAMILIES: [&str; 2] = ["IPv4", "IPv6"];
const IP_FAMILY_POLICIES: [&str; 3] = ["PreferDualStack", "RequireDualStack", "SingleStack"];
const TRAFFIC_POLICIES: [&str; 2] = ["Cluster", "Local"];

/// `field.NotSupported`: `Unsupported value: "x": supported values: "a", "b"`.
pub(crate) fn not_supported(
    path: impl Into<String>,
    value: &str,
    supported: &[&str],
) -> FieldError {
    let list = supported
        .iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    FieldError::new(
        FieldErrorType::NotSupported,
        path,
        Some(format!("{value:?}")),
        format!("supported values: {list}"),
    )
}

/// One `Invalid value` error per problem of `value`.
pub(crate) fn each(path: &str, value: &str, problems: Vec<String>) -> Vec<FieldError> {
    problems
        .into_iter()
        .map(|m| FieldError::invalid(path, &Value::from(value), m))
        .collect()
}

fn str_of(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("")
}

/// The errors of a Service's spec, as `ValidateService` reports them.
pub fn validate_service(svc: &Service) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = &svc.spec;
    let ty = str_of(&spec.r#type);
    let headless = is_headless(svc);
    if spec.ports.is_empty() && !headless && ty != TYPE_EXTERNAL_NAME {
        errs.push(FieldError::required("spec.ports", ""));
    }
    match ty {
        TYPE_LOAD_BALANCER if headless => errs.push(FieldError::invalid(
            "spec.clusterIPs[0]",
            &Value::from(CLUSTER_IP_NONE),
            "may not be set to 'None' for LoadBalancer services",
        )),
        TYPE_NODE_PORT if headless => errs.push(FieldError::invalid(
            "spec.clusterIPs[0]",
            &Value::from(CLUSTER_IP_NONE),
            "may not be set to 'None' for NodePort services",
        )),
        TYPE_EXTERNAL_NAME => {
            if !spec.cluster_ips.is_empty() {
                errs.push(FieldError::forbidden(
                    "spec.clusterIPs",
                    "may not be set for ExternalName services",
                ));
            }
            if !spec.ip_families.is_empty() {
                errs.push(FieldError::forbidden(
                    "spec.ipFamilies",
                    "may not be set for ExternalName services",
                ));
            }
            if spec.ip_family_policy.is_some() {
                errs.push(FieldError::forbidden(
                    "spec.ipFamilyPolicy",
                    "may not be set for ExternalName services",
                ));
            }
            // The value (a CNAME) may end with a dot, fully qualified.
            let cname = str_of(&spec.external_name);
            let cname = cname.strip_suffix('.').unwrap_or(cname);
            if cname.is_empty() {
                errs.push(FieldError::required("spec.externalName", ""));
            } else {
                errs.extend(each(
                    "spec.externalName",
                    cname,
                    is_dns1123_subdomain(cname),
                ));
            }
        }
        _ => {}
    }
    let mut names = BTreeSet::new();
    for (i, port) in spec.ports.iter().enumerate() {
        validate_service_port(
            port,
            spec.ports.len() > 1,
            &mut names,
            &format!("spec.ports[{i}]"),
            &mut errs,
        );
    }
    errs.extend(validate_labels(&spec.selector, "spec.selector"));
    let affinity = str_of(&spec.session_affinity);
    if affinity.is_empty() {
        errs.push(FieldError::required("spec.sessionAffinity", ""));
    } else if !AFFINITIES.contains(&affinity) {
        errs.push(not_supported("spec.sessionAffinity", affinity, &AFFINITIES));
    }
    if affinity == "ClientIP" {
        validate_client_ip_affinity(spec.session_affinity_config.as_ref(), &mut errs);
    } else if affinity == "None" && spec.session_affinity_config.is_some() {
        errs.push(FieldError::forbidden(
            "spec.sessionAffinityConfig",
            "must not be set when session affinity is None",
        ));
    }
    validate_cluster_ips_related_fields(svc, &mut errs);
    for (i, ip) in spec.external_ips.iter().enumerate() {
        let path = format!("spec.externalIPs[{i}]");
        let invalid = validate_ip(ip, &path);
        if invalid.is_empty() {
            errs.extend(validate_endpoint_ip(ip, &path));
        } else {
            errs.extend(invalid);
        }
    }
    if ty.is_empty() {
        errs.push(FieldError::required("spec.type", ""));
    } else if !SERVICE_TYPES.contains(&ty) {
        errs.push(not_supported("spec.type", ty, &SERVICE_TYPES));
    }
    if ty == TYPE_CLUSTER_IP {
        for (i, port) in spec.ports.iter().enumerate() {
            if port.node_port.unwrap_or(0) != 0 {
                errs.push(FieldError::forbidden(
                    format!("spec.ports[{i}].nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
        }
    }
    let mut node_ports = BTreeSet::new();
    for (i, port) in spec.ports.iter().enumerate() {
        let node_port = port.node_port.unwrap_or(0);
        if node_port != 0 && !node_ports.insert((str_of(&port.protocol), node_port)) {
            errs.push(FieldError::new(
                FieldErrorType::Duplicate,
                format!("spec.ports[{i}].nodePort"),
                Some(node_port.to_string()),
                "",
            ));
        }
    }
    let mut ports = BTreeSet::new();
    for (i, port) in spec.ports.iter().enumerate() {
        let protocol = str_of(&port.protocol);
        if !ports.insert((protocol, port.port)) {
            // The internal ServicePort key, as Go marshals it to JSON.
            let key = format!(
                "{{\"Name\":\"\",\"Protocol\":{},\"AppProtocol\":null,\"Port\":{},\"TargetPort\":0,\"NodePort\":0}}",
                Value::from(protocol),
                port.port
            );
            errs.push(FieldError::new(
                FieldErrorType::Duplicate,
                format!("spec.ports[{i}]"),
                Some(key),
                "",
            ));
        }
    }
    if !spec.load_balancer_source_ranges.is_empty() {
        if ty != TYPE_LOAD_BALANCER {
            errs.push(FieldError::forbidden(
                "spec.LoadBalancerSourceRanges",
                "may only be used when `type` is 'LoadBalancer'",
            ));
        }
        for (i, range) in spec.load_balancer_source_ranges.iter().enumerate() {
            let range = range.trim();
            if !is_cidr(range) {
                errs.push(FieldError::invalid(
                    format!("spec.LoadBalancerSourceRanges[{i}]"),
                    &Value::from(range),
                    "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
                ));
            }
        }
    }
    if spec.allocate_load_balancer_node_ports.is_some() && ty != TYPE_LOAD_BALANCER {
        errs.push(FieldError::forbidden(
            "spec.allocateLoadBalancerNodePorts",
            "may only be used when `type` is 'LoadBalancer'",
        ));
    }
    if ty == TYPE_LOAD_BALANCER && spec.allocate_load_balancer_node_ports.is_none() {
        errs.push(FieldError::required("allocateLoadBalancerNodePorts", ""));
    }
    if let Some(class) = &spec.load_balancer_class {
        if ty == TYPE_LOAD_BALANCER {
            errs.extend(each(
                "spec.loadBalancerClass",
                class,
                is_qualified_name(class),
            ));
        } else {
            errs.push(FieldError::forbidden(
                "spec.loadBalancerClass",
                "may only be used when `type` is 'LoadBalancer'",
            ));
        }
    }
    validate_external_traffic_policy(svc, &mut errs);
    let internal = spec.internal_traffic_policy.as_deref();
    match internal {
        None if [TYPE_NODE_PORT, TYPE_LOAD_BALANCER, TYPE_CLUSTER_IP].contains(&ty) => {
            errs.push(FieldError::required("spec.internalTrafficPolicy", ""));
        }
        Some(policy) if !TRAFFIC_POLICIES.contains(&policy) => {
            errs.push(not_supported(
                "spec.internalTrafficPolicy",
                policy,
                &TRAFFIC_POLICIES,
            ));
        }
        _ => {}
    }
    if let Some(distribution) = spec.traffic_distribution.as_deref()
        && distribution != "PreferClose"
    {
        errs.push(not_supported(
            "spec.trafficDistribution",
            distribution,
            &["PreferClose"],
        ));
    }
    errs
}

fn is_cidr(text: &str) -> bool {
    let Some((ip, bits)) = text.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    match ip.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => bits <= 32,
        Ok(std::net::IpAddr::V6(_)) => bits <= 128,
        Err(_) => false,
    }
}

fn validate_service_port(
    port: &ServicePort,
    require_name: bool,
    names: &mut BTreeSet<String>,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let name = str_of(&port.name);
    if require_name && name.is_empty() {
        errs.push(FieldError::required(format!("{path}.name"), ""));
    } else if !name.is_empty() {
        errs.extend(each(&format!("{path}.name"), name, is_dns1123_label(name)));
        if !names.insert(name.to_string()) {
            errs.push(FieldError::new(
                FieldErrorType::Duplicate,
                format!("{path}.name"),
                Some(format!("{name:?}")),
                "",
            ));
        }
    }
    for m in port_num_problems(port.port) {
        errs.push(FieldError::invalid(
            format!("{path}.port"),
            &Value::from(port.port),
            m,
        ));
    }
    let protocol = str_of(&port.protocol);
    if protocol.is_empty() {
        errs.push(FieldError::required(format!("{path}.protocol"), ""));
    } else if !PROTOCOLS.contains(&protocol) {
        errs.push(not_supported(
            format!("{path}.protocol"),
            protocol,
            &PROTOCOLS,
        ));
    }
    let target = format!("{path}.targetPort");
    match port.target_port.as_ref().unwrap_or(&IntOrString::Int(0)) {
        IntOrString::Int(n) => {
            for m in port_num_problems(*n) {
                errs.push(FieldError::invalid(&target, &Value::from(*n), m));
            }
        }
        IntOrString::String(s) => errs.extend(each(&target, s, port_name_problems(s))),
    }
    if let Some(app) = &port.app_protocol {
        errs.extend(each(
            &format!("{path}.appProtocol"),
            app,
            is_qualified_name(app),
        ));
    }
}

fn validate_client_ip_affinity(config: Option<&SessionAffinityConfig>, errs: &mut Vec<FieldError>) {
    const WHEN: &str = "when session affinity type is ClientIP";
    let Some(config) = config else {
        errs.push(FieldError::required("spec.sessionAffinityConfig", WHEN));
        return;
    };
    let Some(client_ip) = &config.client_ip else {
        errs.push(FieldError::required(
            "spec.sessionAffinityConfig.clientIP",
            WHEN,
        ));
        return;
    };
    let path = "spec.sessionAffinityConfig.clientIP.timeoutSeconds";
    match client_ip.timeout_seconds {
        None => errs.push(FieldError::required(path, WHEN)),
        Some(t) if t <= 0 || t > MAX_CLIENT_IP_AFFINITY_SECONDS => errs.push(FieldError::invalid(
            path,
            &Value::from(t),
            format!("must be greater than 0 and less than {MAX_CLIENT_IP_AFFINITY_SECONDS}"),
        )),
        Some(_) => {}
    }
}

fn validate_external_traffic_policy(svc: &Service, errs: &mut Vec<FieldError>) {
    let policy = str_of(&svc.spec.external_traffic_policy);
    if !externally_accessible(svc) {
        if !policy.is_empty() {
            errs.push(FieldError::invalid(
                "spec.externalTrafficPolicy",
                &Value::from(policy),
                "may only be set for externally-accessible services",
            ));
        }
    } else if policy.is_empty() {
        errs.push(FieldError::required("spec.externalTrafficPolicy", ""));
    } else if !TRAFFIC_POLICIES.contains(&policy) {
        errs.push(not_supported(
            "spec.externalTrafficPolicy",
            policy,
            &TRAFFIC_POLICIES,
        ));
    }
    let hc = svc.spec.health_check_node_port.unwrap_or(0);
    if !needs_health_check_node_port(svc) {
        if hc != 0 {
            errs.push(FieldError::invalid(
                "spec.healthCheckNodePort",
                &Value::from(hc),
                "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
            ));
        }
    } else if hc == 0 {
        errs.push(FieldError::required("spec.healthCheckNodePort", ""));
    } else {
        for m in port_num_problems(hc) {
            errs.push(FieldError::invalid(
                "spec.healthCheckNodePort",
                &Value::from(hc),
                m,
            ));
        }
    }
}

/// Kubernetes' `ValidateServiceClusterIPsRelatedFields`.
fn validate_cluster_ips_related_fields(svc: &Service, errs: &mut Vec<FieldError>) {
    let spec = &svc.spec;
    if str_of(&spec.r#type) == TYPE_EXTERNAL_NAME {
        return;
    }
    let ips_value = Value::from(spec.cluster_ips.clone());
    let cluster_ip = str_of(&spec.cluster_ip);
    if !cluster_ip.is_empty() {
        if spec.cluster_ips.is_empty() {
            errs.push(FieldError::required("spec.clusterIPs", ""));
        } else if spec.cluster_ips[0] != cluster_ip {
            errs.push(FieldError::invalid(
                "spec.clusterIPs",
                &ips_value,
                "first value must match `clusterIP`",
            ));
        }
    } else if !spec.cluster_ips.is_empty() {
        errs.push(FieldError::invalid(
            "spec.clusterIPs",
            &ips_value,
            "must be empty when `clusterIP` is not specified",
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, family) in spec.ip_families.iter().enumerate() {
        if !IP_FAMILIES.contains(&family.as_str()) {
            errs.push(not_supported(
                format!("spec.ipFamilies[{i}]"),
                family,
                &IP_FAMILIES,
            ));
        }
        if !seen.insert(family.as_str()) {
            errs.push(FieldError::new(
                FieldErrorType::Duplicate,
                format!("spec.ipFamilies[{i}]"),
                Some(format!("{family:?}")),
                "",
            ));
        }
    }
    if let Some(policy) = spec.ip_family_policy.as_deref()
        && !IP_FAMILY_POLICIES.contains(&policy)
    {
        errs.push(not_supported(
            "spec.ipFamilyPolicy",
            policy,
            &IP_FAMILY_POLICIES,
        ));
    }
    let mut invalid = false;
    for (i, ip) in spec.cluster_ips.iter().enumerate() {
        if i == 0 && ip == CLUSTER_IP_NONE {
            if spec.cluster_ips.len() > 1 {
                invalid = true;
                errs.push(FieldError::invalid(
                    "spec.clusterIPs",
                    &ips_value,
                    "'None' must be the first and only value",
                ));
            }
            continue;
        }
        let ip_errs = validate_ip(ip, &format!("spec.clusterIPs[{i}]"));
        invalid |= !ip_errs.is_empty();
        errs.extend(ip_errs);
    }
    if spec.cluster_ips.len() > 2 {
        errs.push(FieldError::invalid(
            "spec.clusterIPs",
            &ips_value,
            "may only hold up to 2 values",
        ));
    }
    if invalid {
        return;
    }
    if spec.cluster_ips.len() > 1 {
        let v6: Vec<bool> = spec
            .cluster_ips
            .iter()
            .filter_map(|ip| parse_ip(ip))
            .map(|ip| ip.is_ipv6())
            .collect();
        let dual = v6.len() == 2 && v6[0] != v6[1];
        if !dual {
            errs.push(FieldError::invalid(
                "spec.clusterIPs",
                &ips_value,
                "may specify no more than one IP for each IP family",
            ));
        }
    }
    if !is_headless(svc) {
        for (i, (ip, family)) in spec.cluster_ips.iter().zip(&spec.ip_families).enumerate() {
            let is_v6 = parse_ip(ip).is_some_and(|ip| ip.is_ipv6());
            if family == "IPv4" && is_v6 {
                errs.push(FieldError::invalid(
                    format!("spec.clusterIPs[{i}]"),
                    &Value::from(ip.as_str()),
                    format!("expected an IPv4 value as indicated by `ipFamilies[{i}]`"),
                ));
            }
            if family == "IPv6" && !is_v6 {
                errs.push(FieldError::invalid(
                    format!("spec.clusterIPs[{i}]"),
                    &Value::from(ip.as_str()),
                    format!("expected an IPv6 value as indicated by `ipFamilies[{i}]`"),
                ));
            }
        }
    }
}

/// The errors of a Service's update, as `ValidateServiceUpdate` reports them: the cluster IPs
/// and IP families may not change once set (except to or from `ExternalName`), nor the
/// health-check node port or the load balancer class; then the new Service's own errors.
pub fn validate_service_update(svc: &Service, old: &Service) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let ty = str_of(&svc.spec.r#type);
    let old_ty = str_of(&old.spec.r#type);
    let either_external_name = ty == TYPE_EXTERNAL_NAME || old_ty == TYPE_EXTERNAL_NAME;
    if !either_external_name && !(is_headless(svc) && is_headless(old)) {
        let ips_value = Value::from(svc.spec.cluster_ips.clone());
        let (new_ips, old_ips) = (&svc.spec.cluster_ips, &old.spec.cluster_ips);
        let changed = "may not change once set";
        if new_ips.len() == old_ips.len() {
            for (i, ip) in old_ips.iter().enumerate() {
                if *ip != new_ips[i] {
                    errs.push(FieldError::invalid(
                        format!("spec.clusterIPs[{i}]"),
                        &ips_value,
                        changed,
                    ));
                }
            }
        } else if old_ips.len() > new_ips.len() {
            if new_ips.is_empty() {
                errs.push(FieldError::invalid(
                    "spec.clusterIPs[0]",
                    &ips_value,
                    "primary clusterIP can not be unset",
                ));
            } else if !old_ips.is_empty() && new_ips[0] != old_ips[0] {
                errs.push(FieldError::invalid(
                    "spec.clusterIPs[0]",
                    &ips_value,
                    changed,
                ));
            }
            if new_ips.len() == 1 && svc.spec.ip_family_policy.as_deref() != Some("SingleStack") {
                let policy = svc
                    .spec
                    .ip_family_policy
                    .as_deref()
                    .map_or(Value::Null, Value::from);
                errs.push(FieldError::invalid(
                    "spec.ipFamilyPolicy",
                    &policy,
                    "must be set to 'SingleStack' when releasing the secondary clusterIP",
                ));
            }
        } else if !old_ips.is_empty() && new_ips[0] != old_ips[0] {
            errs.push(FieldError::invalid(
                "spec.clusterIPs[0]",
                &ips_value,
                changed,
            ));
        }
    }
    if !either_external_name
        && is_headless(svc) == is_headless(old)
        && !is_headless(svc)
        && svc.spec.ip_families.len() == old.spec.ip_families.len()
        && svc.spec.ip_families != old.spec.ip_families
    {
        errs.push(FieldError::invalid(
            "spec.ipFamilies[0]",
            &Value::from(svc.spec.ip_families.clone()),
            "may not change once set",
        ));
    }
    if ty == TYPE_LOAD_BALANCER
        && old_ty == TYPE_LOAD_BALANCER
        && svc.spec.load_balancer_class != old.spec.load_balancer_class
    {
        let class = svc
            .spec
            .load_balancer_class
            .as_deref()
            .map_or(Value::Null, Value::from);
        errs.push(FieldError::invalid(
            "spec.loadBalancerClass",
            &class,
            "may not change once set",
        ));
    }
    if needs_health_check_node_port(old)
        && needs_health_check_node_port(svc)
        && svc.spec.health_check_node_port != old.spec.health_check_node_port
    {
        errs.push(FieldError::forbidden(
            "spec.healthCheckNodePort",
            "field is immutable",
        ));
    }
    errs.extend(validate_service(svc));
    errs
}

/// The errors of a write of a Service's status (`ValidateServiceStatusUpdate`): each
/// load-balancer ingress point has a valid IP or a DNS host name.
pub fn validate_service_status_update(svc: &Service) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, ingress) in svc.status.load_balancer.ingress.iter().enumerate() {
        let path = format!("status.loadBalancer.ingress[{i}]");
        let ip = str_of(&ingress.ip);
        if !ip.is_empty() {
            errs.extend(validate_ip(ip, &format!("{path}.ip")));
        }
        let host = str_of(&ingress.hostname);
        if !host.is_empty() {
            errs.extend(each(
                &format!("{path}.hostname"),
                host,
                is_dns1123_subdomain(host),
            ));
            if parse_ip(host).is_some() {
                errs.push(FieldError::invalid(
                    format!("{path}.hostname"),
                    &Value::from(host),
                    "must be a DNS name, not an IP address",
                ));
            }
        }
    }
    errs
}
