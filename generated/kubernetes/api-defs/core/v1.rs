//! The core (legacy) group, version v1, served under `/api/v1`: namespaces, configuration
//! and secret data, service accounts and events. Shapes and protobuf numbers follow
//! Kubernetes' `k8s.io/api/core/v1`.
#![group = ""]
#![version = "v1"]
#![storage]
#![proto_package = "k8s.io.api.core.v1"]

/// A Namespace partitions the names of namespaced objects; objects in different namespaces
/// may share a name.
#[kind(cluster, status, short_names = ["ns"], strategic_merge_patch, unconditional_update, no_generation)]
#[kind(verbs = ["create", "delete", "get", "list", "patch", "update", "watch"])]
#[kind(field_selectors = ["status.phase"], name_format = "dns1123-label")]
#[subresource(name = "finalize", verbs = ["update"])]
pub struct Namespace {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The desired behavior of the namespace.
    #[proto(2)]
    pub spec: NamespaceSpec,
    /// The observed state of the namespace.
    #[proto(3)]
    pub status: NamespaceStatus,
}

/// The desired behavior of a Namespace.
pub struct NamespaceSpec {
    /// Opaque values that must all be removed before the namespace is deleted from storage.
    #[proto(1)]
    #[list(type = "atomic")]
    pub finalizers: Vec<String>,
}

/// The observed state of a Namespace.
pub struct NamespaceStatus {
    /// The lifecycle phase: `Active`, or `Terminating` once deletion has started.
    #[proto(1, by_value)]
    #[default("Active")]
    #[validate(enum = ["Active", "Terminating"])]
    pub phase: Option<String>,
    /// The latest observations of the namespace's state, one per condition type.
    #[proto(2)]
    #[list(type = "map", map_keys = ["type"])]
    #[patch(strategy = "merge", merge_key = "type")]
    pub conditions: Vec<NamespaceCondition>,
}

/// One observation of a Namespace's state.
pub struct NamespaceCondition {
    /// The type of the condition, such as `NamespaceContentRemaining`.
    #[proto(1)]
    #[validate(required)]
    pub r#type: String,
    /// Whether the condition holds: `True`, `False` or `Unknown`.
    #[proto(2)]
    #[validate(required)]
    pub status: String,
    /// When the condition last changed its status.
    #[proto(4)]
    #[json(always)]
    pub last_transition_time: Option<Time>,
    /// A one-word CamelCase reason for the last transition.
    #[proto(5, by_value)]
    pub reason: Option<String>,
    /// A human-readable explanation of the last transition.
    #[proto(6, by_value)]
    pub message: Option<String>,
}

/// A ConfigMap holds configuration data, as strings or bytes, for workloads to consume.
#[kind(namespaced, short_names = ["cm"], strategic_merge_patch, unconditional_update, no_generation)]
pub struct ConfigMap {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// When true, `data` and `binaryData` can no longer change; only metadata can.
    #[proto(4)]
    pub immutable: Option<bool>,
    /// UTF-8 configuration values by key. Keys consist of letters, digits, `-`, `_` and `.`
    /// and may not also appear in `binaryData`.
    #[proto(2)]
    pub data: BTreeMap<String, String>,
    /// Binary configuration values by key, base64 encoded in JSON. Keys may not also appear
    /// in `data`.
    #[proto(3)]
    pub binary_data: BTreeMap<String, Bytes>,
}

/// A Secret holds a small amount of sensitive data of some type, such as a password, a token
/// or a key. The values together must stay under one mebibyte.
#[kind(namespaced, strategic_merge_patch, unconditional_update, no_generation, field_selectors = ["type"])]
pub struct Secret {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// When true, `data` can no longer change; only metadata can.
    #[proto(5)]
    pub immutable: Option<bool>,
    /// The secret values by key, base64 encoded in JSON. Keys consist of letters, digits,
    /// `-`, `_` and `.`.
    #[proto(2)]
    pub data: BTreeMap<String, Bytes>,
    /// A write-only convenience: plain string values that are merged into `data` on write,
    /// replacing values of the same key. It is never returned when reading.
    #[proto(4)]
    pub string_data: BTreeMap<String, String>,
    /// How the data is meant to be used, such as `Opaque` or `kubernetes.io/tls`.
    #[proto(3, by_value)]
    #[default("Opaque")]
    #[validate(immutable)]
    pub r#type: Option<String>,
}

/// A ServiceAccount is an identity for processes running in pods, with the secrets they may
/// use.
#[kind(namespaced, short_names = ["sa"], strategic_merge_patch, unconditional_update, no_generation)]
#[subresource(name = "token", group = "authentication.k8s.io", version = "v1", kind = "TokenRequest")]
pub struct ServiceAccount {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// Secrets in the same namespace that pods running as this account may use. Token secrets
    /// for use outside pods should be requested through the TokenRequest API instead.
    #[proto(2)]
    #[list(type = "map", map_keys = ["name"])]
    #[patch(strategy = "merge", merge_key = "name")]
    pub secrets: Vec<ObjectReference>,
    /// Secrets in the same namespace that the kubelet uses to pull images for pods running as
    /// this account.
    #[proto(3)]
    #[list(type = "atomic")]
    pub image_pull_secrets: Vec<LocalObjectReference>,
    /// Whether pods running as this account get an API token mounted automatically; pods may
    /// override it.
    #[proto(4)]
    pub automount_service_account_token: Option<bool>,
}

/// A ResourceQuota limits what a namespace may hold: here, how many objects of each kind
/// (`count/<resource>.<group>`, `count/<resource>` for the core group, and the legacy core
/// names `configmaps`, `secrets`, `resourcequotas`). The server keeps `status.hard` equal to
/// `spec.hard` and `status.used` at the current counts, and refuses creates that would go over.
#[kind(namespaced, status, short_names = ["quota"], strategic_merge_patch, unconditional_update, no_generation)]
pub struct ResourceQuota {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The limits.
    #[proto(2)]
    pub spec: ResourceQuotaSpec,
    /// The limits enforced and the usage, kept by the server.
    #[proto(3)]
    pub status: ResourceQuotaStatus,
}

/// The limits of a ResourceQuota.
pub struct ResourceQuotaSpec {
    /// The most of each resource the namespace may hold, by resource name.
    #[proto(1)]
    pub hard: BTreeMap<String, Quantity>,
    /// The scopes the quota tracks; a quota with scopes tracks only pods, which this server
    /// does not serve.
    #[proto(2)]
    #[list(type = "atomic")]
    pub scopes: Vec<String>,
    /// A selector of scopes, as `scopes` but with operators.
    #[proto(3)]
    pub scope_selector: Option<ScopeSelector>,
}

/// The observed state of a ResourceQuota.
pub struct ResourceQuotaStatus {
    /// The limits enforced, by resource name.
    #[proto(1)]
    pub hard: BTreeMap<String, Quantity>,
    /// The current usage, by resource name.
    #[proto(2)]
    pub used: BTreeMap<String, Quantity>,
}

/// A selector of quota scopes.
#[map(type = "atomic")]
pub struct ScopeSelector {
    /// The requirements, all of which must hold.
    #[proto(1)]
    #[list(type = "atomic")]
    pub match_expressions: Vec<ScopedResourceSelectorRequirement>,
}

/// One requirement on a quota scope.
pub struct ScopedResourceSelectorRequirement {
    /// The scope, such as `BestEffort`.
    #[proto(1, by_value)]
    pub scope_name: Option<String>,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    #[proto(2, by_value)]
    pub operator: Option<String>,
    /// The values, for `In` and `NotIn`.
    #[proto(3)]
    #[list(type = "atomic")]
    pub values: Vec<String>,
}

/// An Event reports something that happened to an object. Events are kept for a limited time
/// and are informative, best-effort data.
#[kind(namespaced, short_names = ["ev"], strategic_merge_patch, unconditional_update, create_on_update, no_generation)]
#[kind(field_selectors = ["involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason", "reportingComponent", "type"])]
pub struct Event {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The object this event is about.
    #[proto(2)]
    pub involved_object: ObjectReference,
    /// A short, machine-readable reason for the change this event reports.
    #[proto(3, by_value)]
    pub reason: Option<String>,
    /// A human-readable description of what happened.
    #[proto(4, by_value)]
    pub message: Option<String>,
    /// The component that reported the event.
    #[proto(5)]
    pub source: EventSource,
    /// When the event was first recorded.
    #[proto(6)]
    #[json(always)]
    pub first_timestamp: Option<Time>,
    /// When the most recent occurrence of the event was recorded.
    #[proto(7)]
    #[json(always)]
    pub last_timestamp: Option<Time>,
    /// How many times the event has occurred.
    #[proto(8, by_value)]
    pub count: Option<i32>,
    /// The type of the event: `Normal` or `Warning`; more may be added.
    #[proto(9, by_value)]
    pub r#type: Option<String>,
    /// When the event was first observed, with microsecond precision.
    #[proto(10)]
    #[json(always)]
    pub event_time: Option<MicroTime>,
    /// The series this event belongs to; absent for a one-off event.
    #[proto(11)]
    pub series: Option<EventSeries>,
    /// The action that was taken, or that failed, on the involved object.
    #[proto(12, by_value)]
    pub action: Option<String>,
    /// A second object the event relates to, for more complex actions.
    #[proto(13)]
    pub related: Option<ObjectReference>,
    /// The controller that emitted the event, such as `kubernetes.io/kubelet`.
    #[proto(14)]
    #[json(name = "reportingComponent", always)]
    pub reporting_controller: String,
    /// The instance of the controller that emitted the event, such as `kubelet-xyzf`.
    #[proto(15)]
    #[json(always)]
    pub reporting_instance: String,
}

/// The component, and node, that reported an Event.
pub struct EventSource {
    /// The component that generated the event.
    #[proto(1, by_value)]
    pub component: Option<String>,
    /// The node on which the event was generated.
    #[proto(2, by_value)]
    pub host: Option<String>,
}

/// A series of events: something that happened repeatedly over a period of time.
pub struct EventSeries {
    /// How many times it has happened up to the last heartbeat.
    #[proto(1, by_value)]
    pub count: Option<i32>,
    /// When the last occurrence was observed.
    #[proto(2)]
    #[json(always)]
    pub last_observed_time: Option<MicroTime>,
}

/// A reference to an object (or a part of one) by kind, namespace, name and, optionally, uid
/// and resourceVersion.
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
    /// For a reference to a part of an object, a field access path into it, such as
    /// `spec.containers{name}` or `spec.containers[2]`.
    #[proto(7, by_value)]
    pub field_path: Option<String>,
}

/// A reference, by name, to an object in the same namespace.
#[map(type = "atomic")]
pub struct LocalObjectReference {
    /// The name of the referenced object. It should not be empty, though older clients may
    /// send it so.
    #[proto(1, by_value)]
    pub name: Option<String>,
}

/// A Service is a named abstraction of software service (for example, mysql) consisting of a
/// local port (for example 3306) that the proxy listens on, and the selector that determines
/// which pods will answer requests sent through the proxy. The server allocates its cluster IP
/// and node ports; nothing proxies its traffic.
#[kind(namespaced, status, short_names = ["svc"], categories = ["all"], strategic_merge_patch, unconditional_update, no_generation)]
#[kind(name_format = "dns1035-label")]
pub struct Service {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The behavior of the service.
    #[proto(2)]
    pub spec: ServiceSpec,
    /// The most recently observed status of the service.
    #[proto(3)]
    pub status: ServiceStatus,
}

/// The attributes a user creates on a Service.
pub struct ServiceSpec {
    /// The list of ports that are exposed by this service.
    #[proto(1)]
    #[list(type = "map", map_keys = ["port", "protocol"])]
    #[patch(strategy = "merge", merge_key = "port")]
    pub ports: Vec<ServicePort>,
    /// Route service traffic to pods with label keys and values matching this selector. If
    /// empty or not present, an external process manages the service's endpoints.
    #[proto(2)]
    #[map(type = "atomic")]
    pub selector: BTreeMap<String, String>,
    /// The IP address of the service, usually assigned randomly; `None` makes a headless
    /// service. It may not change once set, except to or from `ExternalName`.
    #[proto(3, by_value)]
    #[json(name = "clusterIP")]
    pub cluster_ip: Option<String>,
    /// The IP addresses of the service, the first equal to `clusterIP`.
    #[proto(18)]
    #[json(name = "clusterIPs")]
    #[list(type = "atomic")]
    pub cluster_ips: Vec<String>,
    /// How the service is exposed: `ClusterIP` (the default), `NodePort`, `LoadBalancer` or
    /// `ExternalName`.
    #[proto(4, by_value)]
    pub r#type: Option<String>,
    /// IP addresses for which nodes in the cluster will also accept traffic for this service.
    #[proto(5)]
    #[json(name = "externalIPs")]
    #[list(type = "atomic")]
    pub external_ips: Vec<String>,
    /// `ClientIP` for client-IP based session affinity, or `None` (the default).
    #[proto(7, by_value)]
    pub session_affinity: Option<String>,
    /// Deprecated: the IP a `LoadBalancer` service asks its load balancer for.
    #[proto(8, by_value)]
    #[json(name = "loadBalancerIP")]
    pub load_balancer_ip: Option<String>,
    /// The client IP ranges a cloud load balancer accepts.
    #[proto(9)]
    #[list(type = "atomic")]
    pub load_balancer_source_ranges: Vec<String>,
    /// The DNS name an `ExternalName` service is an alias of (a CNAME record).
    #[proto(10, by_value)]
    pub external_name: Option<String>,
    /// How externally-reached traffic is distributed: `Cluster` or `Local`.
    #[proto(11, by_value)]
    pub external_traffic_policy: Option<String>,
    /// The health-check node port of a `LoadBalancer` service with the `Local` policy.
    #[proto(12, by_value)]
    pub health_check_node_port: Option<i32>,
    /// Whether the endpoints publish addresses of pods that are not ready.
    #[proto(13, by_value)]
    pub publish_not_ready_addresses: Option<bool>,
    /// The configuration of session affinity.
    #[proto(14)]
    pub session_affinity_config: Option<SessionAffinityConfig>,
    /// The IP families (`IPv4`, `IPv6`) of the service's cluster IPs.
    #[proto(19)]
    #[list(type = "atomic")]
    pub ip_families: Vec<String>,
    /// `SingleStack`, `PreferDualStack` or `RequireDualStack`.
    #[proto(17)]
    pub ip_family_policy: Option<String>,
    /// Whether a `LoadBalancer` service gets node ports allocated (the default is true).
    #[proto(20)]
    pub allocate_load_balancer_node_ports: Option<bool>,
    /// The class of load balancer implementation a `LoadBalancer` service belongs to.
    #[proto(21)]
    pub load_balancer_class: Option<String>,
    /// How cluster-internal traffic is routed: `Cluster` (the default) or `Local`.
    #[proto(22)]
    pub internal_traffic_policy: Option<String>,
    /// How traffic is preferably distributed among the endpoints (`PreferClose`).
    #[proto(23)]
    pub traffic_distribution: Option<String>,
}

/// One port of a Service.
pub struct ServicePort {
    /// The name of the port, a DNS label; required when the service has several ports.
    #[proto(1, by_value)]
    pub name: Option<String>,
    /// `TCP` (the default), `UDP` or `SCTP`.
    #[proto(2, by_value)]
    pub protocol: Option<String>,
    /// The application protocol of the port, such as `kubernetes.io/h2c`.
    #[proto(6)]
    pub app_protocol: Option<String>,
    /// The port the service exposes.
    #[proto(3)]
    #[json(always)]
    pub port: i32,
    /// The port (number or name) on the endpoints the traffic goes to; defaults to `port`.
    #[proto(4)]
    pub target_port: Option<IntOrString>,
    /// The port on every node of a `NodePort` or `LoadBalancer` service, allocated by the
    /// server unless given.
    #[proto(5, by_value)]
    pub node_port: Option<i32>,
}

/// The current state of a Service.
pub struct ServiceStatus {
    /// The status of the load balancer, if any.
    #[proto(1)]
    pub load_balancer: LoadBalancerStatus,
    /// The current conditions of the service.
    #[proto(2)]
    #[list(type = "map", map_keys = ["type"])]
    #[patch(strategy = "merge", merge_key = "type")]
    pub conditions: Vec<Condition>,
}

/// The status of a load balancer.
pub struct LoadBalancerStatus {
    /// The points of entry of the load balancer.
    #[proto(1)]
    #[list(type = "atomic")]
    pub ingress: Vec<LoadBalancerIngress>,
}

/// A point of entry of a load balancer: an IP address or a host name.
pub struct LoadBalancerIngress {
    /// The IP address of the point of entry.
    #[proto(1, by_value)]
    pub ip: Option<String>,
    /// The DNS name of the point of entry.
    #[proto(2, by_value)]
    pub hostname: Option<String>,
    /// `VIP` or `Proxy`: how the load balancer's IP behaves.
    #[proto(3)]
    pub ip_mode: Option<String>,
    /// The status of each of the service's ports.
    #[proto(4)]
    #[list(type = "atomic")]
    pub ports: Vec<PortStatus>,
}

/// The status of one port of a load balancer.
pub struct PortStatus {
    /// The port number.
    #[proto(1)]
    #[json(always)]
    pub port: i32,
    /// `TCP`, `UDP` or `SCTP`.
    #[proto(2)]
    #[json(always)]
    pub protocol: String,
    /// Why the port is in error, as a CamelCase reason.
    #[proto(3)]
    pub error: Option<String>,
}

/// The configuration of a Service's session affinity.
pub struct SessionAffinityConfig {
    /// The configuration of client-IP based session affinity.
    #[proto(1)]
    #[json(name = "clientIP")]
    pub client_ip: Option<ClientIPConfig>,
}

/// The configuration of client-IP based session affinity.
pub struct ClientIPConfig {
    /// How long, in seconds, a client sticks to one endpoint (above 0, at most 86400; the
    /// default is 10800).
    #[proto(1)]
    pub timeout_seconds: Option<i32>,
}

/// Endpoints are the addresses that implement a Service, as sets of addresses and ports.
#[kind(namespaced, short_names = ["ep"], strategic_merge_patch, unconditional_update, no_generation)]
pub struct Endpoints {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The sets of addresses and ports; the endpoints are their union.
    #[proto(2)]
    #[list(type = "atomic")]
    pub subsets: Vec<EndpointSubset>,
}

/// A set of addresses with a common set of ports.
pub struct EndpointSubset {
    /// The addresses ready to serve.
    #[proto(1)]
    #[list(type = "atomic")]
    pub addresses: Vec<EndpointAddress>,
    /// The addresses that are not ready to serve yet.
    #[proto(2)]
    #[list(type = "atomic")]
    pub not_ready_addresses: Vec<EndpointAddress>,
    /// The port numbers available on the addresses.
    #[proto(3)]
    #[list(type = "atomic")]
    pub ports: Vec<EndpointPort>,
}

/// One endpoint: an IP address, and what it belongs to.
#[map(type = "atomic")]
pub struct EndpointAddress {
    /// The IP of the endpoint; not loopback, link-local or link-local multicast.
    #[proto(1)]
    #[json(always)]
    pub ip: String,
    /// The host name of the endpoint.
    #[proto(3, by_value)]
    pub hostname: Option<String>,
    /// The node hosting the endpoint.
    #[proto(4)]
    pub node_name: Option<String>,
    /// The object providing the endpoint.
    #[proto(2)]
    pub target_ref: Option<ObjectReference>,
}

/// A port of the endpoints.
#[map(type = "atomic")]
pub struct EndpointPort {
    /// The name of the port, matching the Service port's name; required when there are
    /// several.
    #[proto(1, by_value)]
    pub name: Option<String>,
    /// The port number.
    #[proto(2)]
    #[json(always)]
    pub port: i32,
    /// `TCP` (the default), `UDP` or `SCTP`.
    #[proto(3, by_value)]
    pub protocol: Option<String>,
    /// The application protocol of the port.
    #[proto(4)]
    pub app_protocol: Option<String>,
}
