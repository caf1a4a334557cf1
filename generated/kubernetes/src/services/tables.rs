//! How Services, Endpoints and EndpointSlices print as a `Table`, as kube-apiserver's printers
//! print them (`printService`, `printEndpoints`, `printEndpointSlice`).

use ::apimachinery::table::{self, AGE_COLUMN, NAME_COLUMN, TypedTable, column};
use ::chrono::{DateTime, Utc};
use ::serde_json::Value;

use crate::core::v1::{Endpoints, Service};
use crate::discovery_k8s_io::v1::EndpointSlice;

/// `kubectl get services`: Name, Type, Cluster-IP, External-IP, Port(s), Age, and Selector
/// with `-o wide`.
pub static SERVICE_TABLE: TypedTable<Service> = TypedTable::new(
    &[
        NAME_COLUMN,
        column(
            "Type",
            "string",
            0,
            "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer.",
        ),
        column(
            "Cluster-IP",
            "string",
            0,
            "clusterIP is the IP address of the service and is usually assigned randomly.",
        ),
        column(
            "External-IP",
            "string",
            0,
            "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system.",
        ),
        column(
            "Port(s)",
            "string",
            0,
            "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies",
        ),
        AGE_COLUMN,
        column(
            "Selector",
            "string",
            1,
            "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/",
        ),
    ],
    service_cells,
);

/// `makePortString`: `port/protocol`, or `port:nodePort/protocol`, comma-separated.
fn port_string(svc: &Service) -> String {
    svc.spec
        .ports
        .iter()
        .map(|p| {
            let protocol = p.protocol.as_deref().unwrap_or("");
            match p.node_port.filter(|n| *n > 0) {
                Some(node_port) => format!("{}:{node_port}/{protocol}", p.port),
                None => format!("{}/{protocol}", p.port),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// `getServiceExternalIP` (wide): the external IPs, a load balancer's ingress points,
/// `<pending>` for a load balancer without any, the external name of an `ExternalName`.
fn external_ip(svc: &Service) -> String {
    let external = svc.spec.external_ips.join(",");
    match svc.spec.r#type.as_deref().unwrap_or("") {
        "ClusterIP" | "NodePort" if !external.is_empty() => external,
        "ClusterIP" | "NodePort" => "<none>".to_string(),
        "LoadBalancer" => {
            let ingress: std::collections::BTreeSet<&str> = svc
                .status
                .load_balancer
                .ingress
                .iter()
                .filter_map(|i| {
                    i.ip.as_deref()
                        .filter(|s| !s.is_empty())
                        .or(i.hostname.as_deref().filter(|s| !s.is_empty()))
                })
                .collect();
            let mut all: Vec<&str> = ingress.into_iter().collect();
            all.extend(svc.spec.external_ips.iter().map(String::as_str));
            if all.is_empty() {
                "<pending>".to_string()
            } else {
                all.join(",")
            }
        }
        "ExternalName" => svc.spec.external_name.clone().unwrap_or_default(),
        _ => "<unknown>".to_string(),
    }
}

fn service_cells(svc: &Service, now: DateTime<Utc>) -> Vec<Value> {
    let cluster_ip = svc
        .spec
        .cluster_ips
        .first()
        .cloned()
        .unwrap_or_else(|| "<none>".to_string());
    let ports = port_string(svc);
    let selector = if svc.spec.selector.is_empty() {
        "<none>".to_string()
    } else {
        svc.spec
            .selector
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    vec![
        table::name(&svc.metadata),
        Value::from(svc.spec.r#type.clone().unwrap_or_default()),
        Value::from(cluster_ip),
        Value::from(external_ip(svc)),
        Value::from(if ports.is_empty() {
            "<none>".to_string()
        } else {
            ports
        }),
        table::age(&svc.metadata, now),
        Value::from(selector),
    ]
}

/// `kubectl get endpoints`: Name, Endpoints (the first three `ip:port`), Age.
pub static ENDPOINTS_TABLE: TypedTable<Endpoints> = TypedTable::new(
    &[
        NAME_COLUMN,
        column(
            "Endpoints",
            "string",
            0,
            "The set of all endpoints is the union of all subsets. Addresses are placed into subsets according to the IPs they share. A single address with multiple ports, some of which are ready and some of which are not (because they come from different containers) will result in the address being displayed in different subsets for the different ports. No address will appear in both Addresses and NotReadyAddresses in the same subset. Sets of addresses and ports that comprise a service.",
        ),
        AGE_COLUMN,
    ],
    |ep, now| {
        vec![
            table::name(&ep.metadata),
            Value::from(format_endpoints(ep)),
            table::age(&ep.metadata, now),
        ]
    },
);

/// `formatEndpoints`: the ready addresses with each port (`ip:port`, or the address alone for
/// a subset without ports), three at most, then `+ N more...`.
pub fn format_endpoints(ep: &Endpoints) -> String {
    if ep.subsets.is_empty() {
        return "<none>".to_string();
    }
    const MAX: usize = 3;
    let mut list = Vec::new();
    let mut count = 0;
    let mut more = false;
    'subsets: for ss in &ep.subsets {
        if ss.ports.is_empty() {
            count += ss.addresses.len();
            for a in &ss.addresses {
                if list.len() == MAX {
                    more = true;
                    break 'subsets;
                }
                list.push(a.ip.clone());
            }
        } else {
            for port in &ss.ports {
                count += ss.addresses.len();
                for a in &ss.addresses {
                    if list.len() == MAX {
                        more = true;
                        break 'subsets;
                    }
                    list.push(join_host_port(&a.ip, port.port));
                }
            }
        }
    }
    let ret = list.join(",");
    if more {
        format!("{ret} + {} more...", count - MAX)
    } else {
        ret
    }
}

/// Go's `net.JoinHostPort`: an IPv6 address in brackets.
fn join_host_port(host: &str, port: i32) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `kubectl get endpointslices`: Name, AddressType, Ports, Endpoints, Age.
pub static ENDPOINT_SLICE_TABLE: TypedTable<EndpointSlice> = TypedTable::new(
    &[
        NAME_COLUMN,
        column(
            "AddressType",
            "string",
            0,
            "addressType specifies the type of address carried by this EndpointSlice. All addresses in this slice must be the same type. This field is immutable after creation. The following address types are currently supported: * IPv4: Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain Name. (Deprecated) The EndpointSlice controller only generates, and kube-proxy only processes, slices of addressType \"IPv4\" and \"IPv6\". No semantics are defined for the \"FQDN\" type.",
        ),
        column(
            "Ports",
            "string",
            0,
            "ports specifies the list of network ports exposed by each endpoint in this slice. Each port must have a unique name. Each slice may include a maximum of 100 ports. Services always have at least 1 port, so EndpointSlices generated by the EndpointSlice controller will likewise always have at least 1 port. EndpointSlices used for other purposes may have an empty ports list.",
        ),
        column(
            "Endpoints",
            "string",
            0,
            "endpoints is a list of unique endpoints in this slice. Each slice may include a maximum of 1000 endpoints.",
        ),
        AGE_COLUMN,
    ],
    endpoint_slice_cells,
);

/// `listWithMoreString`: three at most, then `+ N more...`; `<unset>` when empty.
fn list_with_more(items: Vec<String>) -> String {
    const MAX: usize = 3;
    let count = items.len();
    let ret = items.into_iter().take(MAX).collect::<Vec<_>>().join(",");
    if count > MAX {
        format!("{ret} + {} more...", count - MAX)
    } else if ret.is_empty() {
        "<unset>".to_string()
    } else {
        ret
    }
}

fn endpoint_slice_cells(slice: &EndpointSlice, now: DateTime<Utc>) -> Vec<Value> {
    let ports = slice
        .ports
        .iter()
        .map(|p| match (p.port, p.name.as_deref()) {
            (Some(n), _) => n.to_string(),
            (None, Some(name)) => name.to_string(),
            (None, None) => "*".to_string(),
        })
        .collect();
    let addresses = slice
        .endpoints
        .iter()
        .flat_map(|e| e.addresses.iter().cloned())
        .collect();
    vec![
        table::name(&slice.metadata),
        Value::from(slice.address_type.clone()),
        Value::from(list_with_more(ports)),
        Value::from(list_with_more(addresses)),
        table::age(&slice.metadata, now),
    ]
}
