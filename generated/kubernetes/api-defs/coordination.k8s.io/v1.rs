//! Coordination, version v1: leases used for leader election and heartbeats. Shapes and
//! protobuf numbers follow Kubernetes' `k8s.io/api/coordination/v1`.
#![group = "coordination.k8s.io"]
#![version = "v1"]
#![storage]
#![proto_package = "k8s.io.api.coordination.v1"]

/// A Lease records who holds a lock and until when, for leader election and heartbeats.
#[kind(namespaced, strategic_merge_patch, create_on_update, no_generation)]
pub struct Lease {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The state of the lease.
    #[proto(2)]
    pub spec: LeaseSpec,
}

/// The state of a Lease.
pub struct LeaseSpec {
    /// The identity of the current holder.
    #[proto(1)]
    pub holder_identity: Option<String>,
    /// How long, in seconds, candidates wait after the last renewal before taking the lease
    /// over. Measured against the candidate's own clock from when it saw the renewal.
    #[proto(2)]
    #[validate(exclusive_minimum = 0)]
    pub lease_duration_seconds: Option<i32>,
    /// When the current holder acquired the lease.
    #[proto(3)]
    pub acquire_time: Option<MicroTime>,
    /// When the current holder last renewed the lease.
    #[proto(4)]
    pub renew_time: Option<MicroTime>,
    /// How many times the lease has changed holders.
    #[proto(5)]
    #[validate(minimum = 0)]
    pub lease_transitions: Option<i32>,
    /// The strategy for picking the next holder in coordinated leader election, such as
    /// `OldestEmulationVersion`.
    #[proto(6)]
    pub strategy: Option<String>,
    /// A signal to the current holder that another candidate should take the lease over.
    #[proto(7)]
    pub preferred_holder: Option<String>,
}
