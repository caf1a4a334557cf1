//! Kubernetes' `ValidateEndpoints` (`pkg/apis/core/validation`) and `ValidateEndpointSlice`
//! (`pkg/apis/discovery/validation`), with their messages. The metadata is the registry's.

use std::collections::BTreeSet;

use ::apimachinery::errors::{FieldError, FieldErrorType};
use ::apimachinery::validation::{
    is_dns1123_label, is_dns1123_subdomain, is_qualified_name, validate_labels,
};
use ::serde_json::Value;

use super::ip::{validate_endpoint_ip, validate_ip};
use super::service::{each, not_supported};
use super::{PROTOCOLS, port_num_problems};
use crate::core::v1::{EndpointAddress, EndpointPort, Endpoints};
use crate::discovery_k8s_io::v1::{Endpoint, EndpointSlice};

const ADDRESS_TYPES: [&str; 3] = ["FQDN", "IPv4", "IPv6"];
const MAX_ADDRESSES: usize = 100;
const MAX_PORTS: usize = 20000;
const MAX_ENDPOINTS: usize = 1000;
const MAX_TOPOLOGY_LABELS: usize = 16;
const MAX_HINTS: usize = 8;

fn too_many(path: impl Into<String>, n: usize, max: usize) -> FieldError {
    FieldError::new(
        FieldErrorType::TooMany,
        path,
        Some(n.to_string()),
        format!("must have at most {max} items"),
    )
}

/// The errors of an Endpoints object's subsets, as `ValidateEndpoints` reports them: every
/// subset has addresses, every address is an IP endpoints may have (not loopback, link-local
/// or unspecified), every port a valid number and protocol, named when there are several.
pub fn validate_endpoints(endpoints: &Endpoints) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, subset) in endpoints.subsets.iter().enumerate() {
        let path = format!("subsets[{i}]");
        if subset.addresses.is_empty() && subset.not_ready_addresses.is_empty() {
            errs.push(FieldError::required(
                &path,
                "must specify `addresses` or `notReadyAddresses`",
            ));
        }
        for (j, address) in subset.addresses.iter().enumerate() {
            validate_address(address, &format!("{path}.addresses[{j}]"), &mut errs);
        }
        for (j, address) in subset.not_ready_addresses.iter().enumerate() {
            validate_address(
                address,
                &format!("{path}.notReadyAddresses[{j}]"),
                &mut errs,
            );
        }
        for (j, port) in subset.ports.iter().enumerate() {
            validate_port(
                port,
                subset.ports.len() > 1,
                &format!("{path}.ports[{j}]"),
                &mut errs,
            );
        }
    }
    errs
}

fn validate_address(address: &EndpointAddress, path: &str, errs: &mut Vec<FieldError>) {
    let ip_path = format!("{path}.ip");
    errs.extend(validate_ip(&address.ip, &ip_path));
    if let Some(host) = address.hostname.as_deref().filter(|h| !h.is_empty()) {
        errs.extend(each(
            &format!("{path}.hostname"),
            host,
            is_dns1123_label(host),
        ));
    }
    if let Some(node) = &address.node_name {
        errs.extend(each(
            &format!("{path}.nodeName"),
            node,
            is_dns1123_subdomain(node),
        ));
    }
    errs.extend(validate_endpoint_ip(&address.ip, &ip_path));
}

fn validate_port(port: &EndpointPort, require_name: bool, path: &str, errs: &mut Vec<FieldError>) {
    let name = port.name.as_deref().unwrap_or("");
    if require_name && name.is_empty() {
        errs.push(FieldError::required(format!("{path}.name"), ""));
    } else if !name.is_empty() {
        errs.extend(each(&format!("{path}.name"), name, is_dns1123_label(name)));
    }
    for m in port_num_problems(port.port) {
        errs.push(FieldError::invalid(
            format!("{path}.port"),
            &Value::from(port.port),
            m,
        ));
    }
    let protocol = port.protocol.as_deref().unwrap_or("");
    if protocol.is_empty() {
        errs.push(FieldError::required(format!("{path}.protocol"), ""));
    } else if !PROTOCOLS.contains(&protocol) {
        errs.push(not_supported(
            format!("{path}.protocol"),
            protocol,
            &PROTOCOLS,
        ));
    }
    if let Some(app) = &port.app_protocol {
        errs.extend(each(
            &format!("{path}.appProtocol"),
            app,
            is_qualified_name(app),
        ));
    }
}

/// The errors of an EndpointSlice, as `ValidateEndpointSlice` reports them: a known address
/// type, addresses of that type that endpoints may have, at most 1000 endpoints of at most 100
/// addresses, ports with unique names and known protocols.
pub fn validate_endpoint_slice(slice: &EndpointSlice) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let address_type = slice.address_type.as_str();
    if address_type.is_empty() {
        errs.push(FieldError::required("addressType", ""));
    } else if !ADDRESS_TYPES.contains(&address_type) {
        errs.push(not_supported("addressType", address_type, &ADDRESS_TYPES));
    }
    if slice.endpoints.len() > MAX_ENDPOINTS {
        errs.push(too_many("endpoints", slice.endpoints.len(), MAX_ENDPOINTS));
    } else {
        for (i, endpoint) in slice.endpoints.iter().enumerate() {
            validate_slice_endpoint(
                endpoint,
                address_type,
                &format!("endpoints[{i}]"),
                &mut errs,
            );
        }
    }
    if slice.ports.len() > MAX_PORTS {
        errs.push(too_many("ports", slice.ports.len(), MAX_PORTS));
        return errs;
    }
    let mut names = BTreeSet::new();
    for (i, port) in slice.ports.iter().enumerate() {
        let path = format!("ports[{i}]");
        let name = port.name.as_deref().unwrap_or("");
        if !name.is_empty() {
            errs.extend(each(&format!("{path}.name"), name, is_dns1123_label(name)));
        }
        if !names.insert(name) {
            errs.push(FieldError::new(
                FieldErrorType::Duplicate,
                format!("{path}.name"),
                Some(format!("{name:?}")),
                "",
            ));
        }
        match port.protocol.as_deref() {
            None => errs.push(FieldError::required(format!("{path}.protocol"), "")),
            Some(p) if !PROTOCOLS.contains(&p) => {
                errs.push(not_supported(format!("{path}.protocol"), p, &PROTOCOLS))
            }
            Some(_) => {}
        }
        if let Some(app) = &port.app_protocol {
            errs.extend(each(
                &format!("{path}.appProtocol"),
                app,
                is_qualified_name(app),
            ));
        }
    }
    errs
}

fn validate_slice_endpoint(
    endpoint: &Endpoint,
    address_type: &str,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let addresses = format!("{path}.addresses");
    if endpoint.addresses.is_empty() {
        errs.push(FieldError::required(
            &addresses,
            "must contain at least 1 address",
        ));
    } else if endpoint.addresses.len() > MAX_ADDRESSES {
        errs.push(too_many(
            &addresses,
            endpoint.addresses.len(),
            MAX_ADDRESSES,
        ));
    }
    for (i, address) in endpoint.addresses.iter().enumerate() {
        let path = format!("{addresses}[{i}]");
        let value = Value::from(address.as_str());
        match address_type {
            "IPv4" | "IPv6" => {
                let want_v6 = address_type == "IPv6";
                match address.parse::<std::net::IpAddr>() {
                    Ok(ip) if ip.is_ipv6() == want_v6 => {
                        errs.extend(validate_endpoint_ip(address, &path))
                    }
                    _ if want_v6 => errs.push(FieldError::invalid(
                        &path,
                        &value,
                        "must be a valid IPv6 address",
                    )),
                    _ => errs.push(FieldError::invalid(
                        &path,
                        &value,
                        "must be a valid IPv4 address",
                    )),
                }
            }
            "FQDN" => errs.extend(fqdn_errors(address, &path)),
            _ => {}
        }
    }
    if let Some(node) = &endpoint.node_name {
        errs.extend(each(
            &format!("{path}.nodeName"),
            node,
            is_dns1123_subdomain(node),
        ));
    }
    let topology = format!("{path}.deprecatedTopology");
    if endpoint.deprecated_topology.len() > MAX_TOPOLOGY_LABELS {
        errs.push(too_many(
            &topology,
            endpoint.deprecated_topology.len(),
            MAX_TOPOLOGY_LABELS,
        ));
    }
    errs.extend(validate_labels(&endpoint.deprecated_topology, &topology));
    if let Some(host) = &endpoint.hostname {
        errs.extend(each(
            &format!("{path}.hostname"),
            host,
            is_dns1123_label(host),
        ));
    }
    if let Some(hints) = &endpoint.hints {
        let hints_path = format!("{path}.hints");
        if hints.for_zones.len() > MAX_HINTS {
            errs.push(too_many(
                format!("{hints_path}.forZones"),
                hints.for_zones.len(),
                MAX_HINTS,
            ));
        }
        let mut zones = BTreeSet::new();
        for (i, zone) in hints.for_zones.iter().enumerate() {
            let zone_path = format!("{hints_path}.forZones[{i}].name");
            errs.extend(each(
                &zone_path,
                &zone.name,
                ::apimachinery::validation::is_valid_label_value(&zone.name),
            ));
            if !zones.insert(zone.name.as_str()) {
                errs.push(FieldError::new(
                    FieldErrorType::Duplicate,
                    zone_path,
                    Some(format!("{:?}", zone.name)),
                    "",
                ));
            }
        }
        if hints.for_nodes.len() > MAX_HINTS {
            errs.push(too_many(
                format!("{hints_path}.forNodes"),
                hints.for_nodes.len(),
                MAX_HINTS,
            ));
        }
        let mut nodes = BTreeSet::new();
        for (i, node) in hints.for_nodes.iter().enumerate() {
            let node_path = format!("{hints_path}.forNodes[{i}].name");
            errs.extend(each(
                &node_path,
                &node.name,
                is_dns1123_subdomain(&node.name),
            ));
            if !nodes.insert(node.name.as_str()) {
                errs.push(FieldError::new(
                    FieldErrorType::Duplicate,
                    node_path,
                    Some(format!("{:?}", node.name)),
                    "",
                ));
            }
        }
    }
}

/// `IsFullyQualifiedDomainName`: a DNS subdomain of at least two labels.
fn fqdn_errors(name: &str, path: &str) -> Vec<FieldError> {
    let value = Value::from(name);
    let trimmed = name.strip_suffix('.').unwrap_or(name);
    if trimmed.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let mut errs = each(path, trimmed, is_dns1123_subdomain(trimmed));
    if errs.is_empty() && trimmed.split('.').count() < 2 {
        errs.push(FieldError::invalid(
            path,
            &value,
            "should be a domain with at least two segments separated by dots",
        ));
    }
    errs
}

/// The errors of an EndpointSlice's update (`ValidateEndpointSliceUpdate`): the new slice's
/// own, and `addressType` may not change.
pub fn validate_endpoint_slice_update(
    slice: &EndpointSlice,
    old: &EndpointSlice,
) -> Vec<FieldError> {
    let mut errs = validate_endpoint_slice(slice);
    if slice.address_type != old.address_type {
        errs.push(FieldError::invalid(
            "addressType",
            &Value::from(slice.address_type.as_str()),
            "field is immutable",
        ));
    }
    errs
}
