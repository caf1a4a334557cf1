//! Discovery, version v1: EndpointSlices, the scalable successor of Endpoints. Shapes and
//! protobuf numbers follow Kubernetes' `k8s.io/api/discovery/v1`.
#![group = "discovery.k8s.io"]
#![version = "v1"]
#![storage]
#![proto_package = "k8s.io.api.discovery.v1"]

/// An EndpointSlice is a subset of the endpoints that implement a service: addresses of one
/// type, and the ports they serve.
#[kind(namespaced, strategic_merge_patch, unconditional_update)]
pub struct EndpointSlice {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The type of the addresses: `IPv4`, `IPv6` or `FQDN`. It may not change.
    #[proto(4)]
    #[json(always)]
    pub address_type: String,
    /// The endpoints of the slice, at most 1000.
    #[proto(2)]
    #[json(always)]
    #[list(type = "atomic")]
    pub endpoints: Vec<Endpoint>,
    /// The network ports every endpoint exposes, at most 100.
    #[proto(3)]
    #[json(always)]
    #[list(type = "atomic")]
    pub ports: Vec<EndpointPort>,
}

/// One endpoint of a slice.
pub struct Endpoint {
    /// The addresses of the endpoint (one is used; more are for implementations that need
    /// them), of the slice's address type.
    #[proto(1)]
    #[json(always)]
    #[list(type = "set")]
    pub addresses: Vec<String>,
    /// The current state of the endpoint.
    #[proto(2)]
    pub conditions: EndpointConditions,
    /// The host name of the endpoint, a DNS label.
    #[proto(3)]
    pub hostname: Option<String>,
    /// The object providing the endpoint.
    #[proto(4)]
    pub target_ref: Option<ObjectReference>,
    /// Deprecated topology information, by key.
    #[proto(5)]
    pub deprecated_topology: BTreeMap<String, String>,
    /// The node hosting the endpoint.
    #[proto(6)]
    pub node_name: Option<String>,
    /// The zone of the endpoint.
    #[proto(7)]
    pub zone: Option<String>,
    /// Hints on how the endpoint should be consumed.
    #[proto(8)]
    pub hints: Option<EndpointHints>,
}

/// The current state of an endpoint.
pub struct EndpointConditions {
    /// Whether the endpoint is ready to receive traffic.
    #[proto(1)]
    pub ready: Option<bool>,
    /// Whether the endpoint can serve, even while terminating.
    #[proto(2)]
    pub serving: Option<bool>,
    /// Whether the endpoint is terminating.
    #[proto(3)]
    pub terminating: Option<bool>,
}

/// Hints on how an endpoint should be consumed.
pub struct EndpointHints {
    /// The zones that should consume the endpoint.
    #[proto(1)]
    #[list(type = "atomic")]
    pub for_zones: Vec<ForZone>,
    /// The nodes that should consume the endpoint.
    #[proto(2)]
    #[list(type = "atomic")]
    pub for_nodes: Vec<ForNode>,
}

/// A zone that should consume an endpoint.
pub struct ForZone {
    /// The name of the zone.
    #[proto(1)]
    #[json(always)]
    pub name: String,
}

/// A node that should consume an endpoint.
pub struct ForNode {
    /// The name of the node.
    #[proto(1)]
    #[json(always)]
    pub name: String,
}

/// A port of the endpoints of a slice.
#[map(type = "atomic")]
pub struct EndpointPort {
    /// The name of the port, matching the Service port's name (empty by default).
    #[proto(1)]
    pub name: Option<String>,
    /// `TCP` (the default), `UDP` or `SCTP`.
    #[proto(2)]
    pub protocol: Option<String>,
    /// The port number; unset means every port.
    #[proto(3)]
    pub port: Option<i32>,
    /// The application protocol of the port.
    #[proto(4)]
    pub app_protocol: Option<String>,
}

/// A reference to the object providing an endpoint: the same message as the core group's
/// `ObjectReference` (a definition refers by path only to another crate's groups, so the
/// discovery group spells it again, with the same fields and protobuf numbers).
#[map(type = "atomic")]
pub struct ObjectReference {
    /// The kind of the referenced object.
    #[proto(1, by_value)]
    pub kind: Option<String>,
    /// The namespace of the referenced object.
    #[proto(2, by_value)]
    pub namespace: Option<String>,
    /// The name of the referenced object.
    #[proto(3, by_value)]
    pub name: Option<String>,
    /// The uid of the referenced object.
    #[proto(4, by_value)]
    pub uid: Option<String>,
    /// The API version of the referenced object.
    #[proto(5, by_value)]
    pub api_version: Option<String>,
    /// The resourceVersion of the referenced object this reference was made at, if any.
    #[proto(6, by_value)]
    pub resource_version: Option<String>,
    /// For a reference to a part of an object, a field access path into it.
    #[proto(7, by_value)]
    pub field_path: Option<String>,
}
