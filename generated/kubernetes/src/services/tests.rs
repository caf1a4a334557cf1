//! Kubernetes' messages for Services, Endpoints and EndpointSlices, and the allocated-field
//! rules.

use ::apimachinery::runtime::TypedObject;
use ::serde_json::{Value, json};

use super::*;
use crate::core::v1::{Endpoints, Service};
use crate::discovery_k8s_io::v1::EndpointSlice;

/// A Service decoded from JSON with Kubernetes' defaults applied.
fn service(spec: Value) -> Service {
    let mut svc: Service = ::serde_json::from_value(
        json!({"metadata": {"name": "s", "namespace": "ns"}, "spec": spec}),
    )
    .unwrap();
    svc.run_default_hooks();
    svc
}

fn messages(errors: Vec<::apimachinery::errors::FieldError>) -> Vec<String> {
    errors.iter().map(ToString::to_string).collect()
}

#[test]
fn defaults_are_kubernetes() {
    let svc = service(json!({"ports": [{"port": 80}]}));
    let spec = &svc.spec;
    assert_eq!(spec.r#type.as_deref(), Some("ClusterIP"));
    assert_eq!(spec.session_affinity.as_deref(), Some("None"));
    assert_eq!(spec.internal_traffic_policy.as_deref(), Some("Cluster"));
    assert_eq!(spec.external_traffic_policy, None);
    assert_eq!(spec.ports[0].protocol.as_deref(), Some("TCP"));
    assert_eq!(
        spec.ports[0].target_port,
        Some(::apimachinery::meta::IntOrString::Int(80))
    );
    let lb = service(
        json!({"type": "LoadBalancer", "sessionAffinity": "ClientIP", "ports": [{"port": 80, "targetPort": "web"}]}),
    );
    assert_eq!(lb.spec.external_traffic_policy.as_deref(), Some("Cluster"));
    assert_eq!(lb.spec.allocate_load_balancer_node_ports, Some(true));
    assert_eq!(
        lb.spec
            .session_affinity_config
            .unwrap()
            .client_ip
            .unwrap()
            .timeout_seconds,
        Some(10800)
    );
    let external = service(json!({"type": "ExternalName", "externalName": "db.example.com"}));
    assert_eq!(external.spec.internal_traffic_policy, None);
    assert!(validate_service(&external).is_empty());
    let mut ep: Endpoints = ::serde_json::from_value(json!({"metadata": {"name": "e"}, "subsets": [{"addresses": [{"ip": "10.1.0.1"}], "ports": [{"port": 80}]}]})).unwrap();
    ep.run_default_hooks();
    assert_eq!(ep.subsets[0].ports[0].protocol.as_deref(), Some("TCP"));
}

#[test]
fn ports_are_checked() {
    let svc = service(
        json!({"ports": [{"port": 80}, {"port": 80, "name": "Bad_Name"}, {"port": 0, "protocol": "HTTP", "name": "b", "targetPort": "no such name"}]}),
    );
    assert_eq!(
        messages(validate_service(&svc)),
        vec![
            "spec.ports[0].name: Required value".to_string(),
            "spec.ports[1].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".to_string(),
            "spec.ports[2].port: Invalid value: 0: must be between 1 and 65535, inclusive".to_string(),
            "spec.ports[2].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"".to_string(),
            "spec.ports[2].targetPort: Invalid value: \"no such name\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string(),
            "spec.ports[1]: Duplicate value: {\"Name\":\"\",\"Protocol\":\"TCP\",\"AppProtocol\":null,\"Port\":80,\"TargetPort\":0,\"NodePort\":0}".to_string(),
        ]
    );
    let none = service(json!({"ports": []}));
    assert_eq!(
        messages(validate_service(&none)),
        vec!["spec.ports: Required value"]
    );
    let dup_names =
        service(json!({"ports": [{"port": 80, "name": "a"}, {"port": 81, "name": "a"}]}));
    assert_eq!(
        messages(validate_service(&dup_names)),
        vec!["spec.ports[1].name: Duplicate value: \"a\""]
    );
}

#[test]
fn type_rules() {
    let external = service(
        json!({"type": "ExternalName", "externalName": "Not_A_Name", "clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"]}),
    );
    let msgs = messages(validate_service(&external));
    assert_eq!(
        msgs[0],
        "spec.clusterIPs: Forbidden: may not be set for ExternalName services"
    );
    assert!(
        msgs[1].starts_with(
            "spec.externalName: Invalid value: \"Not_A_Name\": a lowercase RFC 1123 subdomain"
        ),
        "{msgs:?}"
    );
    let missing = service(json!({"type": "ExternalName"}));
    assert_eq!(
        messages(validate_service(&missing)),
        vec!["spec.externalName: Required value"]
    );
    let trailing_dot = service(json!({"type": "ExternalName", "externalName": "db.example.com."}));
    assert!(validate_service(&trailing_dot).is_empty());
    let headless_node_port = service(
        json!({"type": "NodePort", "clusterIP": "None", "clusterIPs": ["None"], "ports": [{"port": 80}]}),
    );
    assert_eq!(
        messages(validate_service(&headless_node_port)),
        vec![
            "spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for NodePort services"
        ]
    );
    let headless = service(json!({"clusterIP": "None", "clusterIPs": ["None"]}));
    assert!(
        validate_service(&headless).is_empty(),
        "a headless service needs no ports"
    );
    let node_port_on_cluster_ip = service(json!({"ports": [{"port": 80, "nodePort": 30001}]}));
    assert_eq!(
        messages(validate_service(&node_port_on_cluster_ip)),
        vec!["spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"]
    );
    let bad_ip = service(
        json!({"clusterIP": "10.0.0.300", "clusterIPs": ["10.0.0.300"], "ports": [{"port": 80}]}),
    );
    assert_eq!(
        messages(validate_service(&bad_ip)),
        vec![
            "spec.clusterIPs[0]: Invalid value: \"10.0.0.300\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
        ]
    );
    let selector = service(json!({"selector": {"app": "not valid!"}, "ports": [{"port": 80}]}));
    assert_eq!(validate_service(&selector).len(), 1);
    let external_ip = service(json!({"externalIPs": ["127.0.0.1"], "ports": [{"port": 80}]}));
    assert_eq!(
        messages(validate_service(&external_ip)),
        vec![
            "spec.externalIPs[0]: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)"
        ]
    );
}

#[test]
fn cluster_ip_may_not_change() {
    let old = service(
        json!({"clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"], "ports": [{"port": 80}]}),
    );
    let mut new = service(json!({"clusterIP": "10.0.0.6", "ports": [{"port": 80}]}));
    patch_allocated_values(&mut new, &old);
    normalize_cluster_ips(&mut new, Some(&old));
    assert_eq!(new.spec.cluster_ips, vec!["10.0.0.6"]);
    assert_eq!(
        messages(validate_service_update(&new, &old)),
        vec!["spec.clusterIPs[0]: Invalid value: [\"10.0.0.6\"]: may not change once set"]
    );
    // Left out, the allocated values are kept.
    let mut kept = service(json!({"ports": [{"port": 80}]}));
    patch_allocated_values(&mut kept, &old);
    normalize_cluster_ips(&mut kept, Some(&old));
    assert_eq!(kept.spec.cluster_ip.as_deref(), Some("10.0.0.5"));
    assert!(validate_service_update(&kept, &old).is_empty());
    // To ExternalName, the cluster IPs go.
    let mut external = service(
        json!({"type": "ExternalName", "externalName": "x.example.com", "clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"], "ports": [{"port": 80}]}),
    );
    drop_type_dependent_fields(&mut external, &old);
    assert_eq!(external.spec.cluster_ip, None);
    assert!(validate_service_update(&external, &old).is_empty());
}

#[test]
fn node_ports_are_kept_by_name() {
    let old = service(
        json!({"type": "NodePort", "ports": [{"name": "a", "port": 80, "nodePort": 30080}, {"name": "b", "port": 81, "nodePort": 30081}]}),
    );
    let mut new = service(
        json!({"type": "NodePort", "ports": [{"name": "b", "port": 81}, {"name": "a", "port": 90}]}),
    );
    patch_allocated_values(&mut new, &old);
    assert_eq!(new.spec.ports[0].node_port, Some(30081));
    assert_eq!(new.spec.ports[1].node_port, Some(30080));
    let mut cluster = service(
        json!({"type": "ClusterIP", "ports": [{"name": "a", "port": 80, "nodePort": 30080}, {"name": "b", "port": 81, "nodePort": 30081}]}),
    );
    drop_type_dependent_fields(&mut cluster, &old);
    assert!(cluster.spec.ports.iter().all(|p| p.node_port.is_none()));
}

#[test]
fn endpoints_refuse_loopback_and_link_local() {
    let mut ep: Endpoints = ::serde_json::from_value(json!({"metadata": {"name": "e"}, "subsets": [
        {"addresses": [{"ip": "127.0.0.1"}, {"ip": "169.254.1.1"}, {"ip": "::1"}, {"ip": "nope"}], "notReadyAddresses": [{"ip": "0.0.0.0"}],
         "ports": [{"port": 80}, {"port": 81, "name": "b"}]},
        {"ports": [{"port": 80}]}
    ]})).unwrap();
    ep.run_default_hooks();
    assert_eq!(
        messages(validate_endpoints(&ep)),
        vec![
            "subsets[0].addresses[0].ip: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
            "subsets[0].addresses[1].ip: Invalid value: \"169.254.1.1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)",
            "subsets[0].addresses[2].ip: Invalid value: \"::1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
            "subsets[0].addresses[3].ip: Invalid value: \"nope\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            "subsets[0].addresses[3].ip: Invalid value: \"nope\": must be a valid IP address",
            "subsets[0].notReadyAddresses[0].ip: Invalid value: \"0.0.0.0\": may not be unspecified (0.0.0.0)",
            "subsets[0].ports[0].name: Required value",
            "subsets[1]: Required value: must specify `addresses` or `notReadyAddresses`",
        ]
    );
}

#[test]
fn endpoint_slices_are_checked() {
    let slice: EndpointSlice = ::serde_json::from_value(json!({"metadata": {"name": "s"}, "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.1.0.1", "fe80::1", "127.0.0.2"]}, {"addresses": []}],
        "ports": [{"name": "a", "port": 80, "protocol": "TCP"}, {"name": "a", "port": 81, "protocol": "TCP"}]})).unwrap();
    assert_eq!(
        messages(validate_endpoint_slice(&slice)),
        vec![
            "endpoints[0].addresses[1]: Invalid value: \"fe80::1\": must be a valid IPv4 address",
            "endpoints[0].addresses[2]: Invalid value: \"127.0.0.2\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
            "endpoints[1].addresses: Required value: must contain at least 1 address",
            "ports[1].name: Duplicate value: \"a\"",
        ]
    );
    let mut changed = slice.clone();
    changed.address_type = "IPv6".to_string();
    changed.endpoints.clear();
    changed.ports.truncate(1);
    assert_eq!(
        messages(validate_endpoint_slice_update(&changed, &slice)),
        vec!["addressType: Invalid value: \"IPv6\": field is immutable"]
    );
}

#[test]
fn tables_print_as_kubectl() {
    let now = ::chrono::Utc::now();
    let svc = service(
        json!({"type": "NodePort", "clusterIP": "10.0.0.7", "clusterIPs": ["10.0.0.7"], "selector": {"b": "2", "a": "1"},
        "ports": [{"port": 80, "nodePort": 30080}, {"port": 53, "protocol": "UDP", "name": "dns"}]}),
    );
    let cells = ::apimachinery::strategy::TableConvertor::cells(&SERVICE_TABLE, &svc, now);
    assert_eq!(
        &cells[1..5],
        &[
            json!("NodePort"),
            json!("10.0.0.7"),
            json!("<none>"),
            json!("80:30080/TCP,53/UDP")
        ]
    );
    assert_eq!(cells[6], json!("a=1,b=2"));
    let lb = service(json!({"type": "LoadBalancer", "ports": [{"port": 80}]}));
    let cells = ::apimachinery::strategy::TableConvertor::cells(&SERVICE_TABLE, &lb, now);
    assert_eq!(cells[2], json!("<none>"));
    assert_eq!(cells[3], json!("<pending>"));
    assert_eq!(cells[6], json!("<none>"));
    let ep: Endpoints = ::serde_json::from_value(json!({"metadata": {"name": "e"}, "subsets": [
        {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}, {"ip": "fd00::1"}], "ports": [{"port": 80}, {"port": 443}]}]})).unwrap();
    assert_eq!(
        format_endpoints(&ep),
        "10.0.0.1:80,10.0.0.2:80,[fd00::1]:80 + 3 more..."
    );
    let slice: EndpointSlice =
        ::serde_json::from_value(json!({"metadata": {"name": "s"}, "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": [{"port": 443}, {"name": "x"}]}))
        .unwrap();
    let cells = ::apimachinery::strategy::TableConvertor::cells(&ENDPOINT_SLICE_TABLE, &slice, now);
    assert_eq!(
        &cells[1..4],
        &[json!("IPv4"), json!("443,x"), json!("10.0.0.1")]
    );
}
