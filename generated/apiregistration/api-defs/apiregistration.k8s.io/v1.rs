//! Group apiregistration.k8s.io, version v1: APIServices, which register an API group version
//! with the aggregator, served locally or by a Service. Shapes and protobuf numbers follow
//! Kubernetes' `k8s.io/kube-aggregator/pkg/apis/apiregistration/v1`.
#![group = "apiregistration.k8s.io"]
#![version = "v1"]
#![storage]
#![proto_package = "k8s.io.kube_aggregator.pkg.apis.apiregistration.v1"]

/// APIService represents a server for a particular GroupVersion. Name must be
/// "version.group".
#[kind(cluster, status, categories = ["api-extensions"], strategic_merge_patch, no_generation, name_format = "path-segment")]
pub struct APIService {
    /// Standard object's metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// Spec contains information for locating and communicating with a server.
    #[proto(2)]
    pub spec: APIServiceSpec,
    /// Status contains derived information about an API server.
    #[proto(3)]
    pub status: APIServiceStatus,
}

/// APIServiceSpec contains information for locating and communicating with a server. Only
/// https is supported, though you are able to disable certificate verification.
pub struct APIServiceSpec {
    /// Service is a reference to the service for this API server. It must communicate on port
    /// 443. If the Service is nil, that means the handling for the API groupversion is handled
    /// locally on this server. The call will simply delegate to the normal handler chain to be
    /// fulfilled.
    #[proto(1)]
    pub service: Option<ServiceReference>,
    /// Group is the API group name this server hosts.
    #[proto(2, by_value)]
    pub group: Option<String>,
    /// Version is the API version this server hosts. For example, "v1".
    #[proto(3, by_value)]
    pub version: Option<String>,
    /// InsecureSkipTLSVerify disables TLS certificate verification when communicating with
    /// this server. This is strongly discouraged. You should use the CABundle instead.
    #[proto(4, by_value)]
    #[json(name = "insecureSkipTLSVerify")]
    pub insecure_skip_tls_verify: Option<bool>,
    /// CABundle is a PEM encoded CA bundle which will be used to validate an API server's
    /// serving certificate. If unspecified, system trust roots on the apiserver are used.
    #[proto(5)]
    #[json(name = "caBundle")]
    pub ca_bundle: Option<Bytes>,
    /// GroupPriorityMinimum is the priority this group should have at least. Higher priority
    /// means that the group is preferred by clients over lower priority ones. Note that other
    /// versions of this group might specify even higher GroupPriorityMinimum values such that
    /// the whole group gets a higher priority. The primary sort is based on
    /// GroupPriorityMinimum, ordered highest number to lowest (20 before 10). The secondary
    /// sort is based on the alphabetical comparison of the name of the object (v1.bar before
    /// v1.foo). We'd recommend something like: *.k8s.io (except extensions) at 18000 and
    /// PaaSes (OpenShift, Deis) are recommended to be in the 2000s.
    #[proto(7)]
    pub group_priority_minimum: i32,
    /// VersionPriority controls the ordering of this API version inside of its group. Must be
    /// greater than zero. The primary sort is based on VersionPriority, ordered highest to
    /// lowest (20 before 10). Since it's inside of a group, the number can be small, probably
    /// in the 10s. In case of equal version priorities, the version string will be used to
    /// compute the order inside a group. If the version string is "kube-like", it will sort
    /// above non "kube-like" version strings, which are ordered lexicographically. "Kube-like"
    /// versions start with a "v", then are followed by a number (the major version), then
    /// optionally the string "alpha" or "beta" and another number (the minor version). These
    /// are sorted first by GA > beta > alpha (where GA is a version with no suffix such as beta
    /// or alpha), and then by comparing major version, then minor version. An example sorted
    /// list of versions: v10, v2, v1, v11beta2, v10beta3, v3beta1, v12alpha1, v11alpha2,
    /// foo1, foo10.
    #[proto(8)]
    pub version_priority: i32,
}

/// ServiceReference holds a reference to Service.legacy.k8s.io.
pub struct ServiceReference {
    /// Namespace is the namespace of the service.
    #[proto(1, by_value)]
    pub namespace: Option<String>,
    /// Name is the name of the service.
    #[proto(2, by_value)]
    pub name: Option<String>,
    /// If specified, the port on the service that hosting webhook. Default to 443 for backward
    /// compatibility. `port` should be a valid port number (1-65535, inclusive).
    #[proto(3)]
    #[default(443)]
    pub port: Option<i32>,
}

/// APIServiceStatus contains derived information about an API server.
pub struct APIServiceStatus {
    /// Current service state of apiService.
    #[proto(1)]
    #[list(type = "map", map_keys = ["type"])]
    #[patch(strategy = "merge", merge_key = "type")]
    pub conditions: Option<Vec<APIServiceCondition>>,
}

/// APIServiceCondition describes the state of an APIService at a particular point.
pub struct APIServiceCondition {
    /// Type is the type of the condition.
    #[proto(1)]
    pub type_: String,
    /// Status is the status of the condition. Can be True, False, Unknown.
    #[proto(2)]
    pub status: String,
    /// Last time the condition transitioned from one status to another.
    #[proto(3, by_value)]
    pub last_transition_time: Option<Time>,
    /// Unique, one-word, CamelCase reason for the condition's last transition.
    #[proto(4, by_value)]
    pub reason: Option<String>,
    /// Human-readable message indicating details about last transition.
    #[proto(5, by_value)]
    pub message: Option<String>,
}
