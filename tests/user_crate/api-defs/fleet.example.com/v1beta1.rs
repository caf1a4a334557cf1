//! fleet.example.com/v1beta1: the preview version, where a Ship's crew was its `sailors`.
#![group = "fleet.example.com"]
#![version = "v1beta1"]
#![priority = 10]
#![proto_package = "com.example.fleet.v1beta1"]

/// A Ship is crewed by a number of sailors and berths in a Harbor.
#[kind(namespaced, status)]
#[scale(spec_replicas = ".spec.sailors", status_replicas = ".status.crew", selector = ".status.selector")]
pub struct Ship {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The desired state of the ship.
    #[proto(2)]
    pub spec: ShipSpec,
    /// The observed state of the ship.
    #[proto(3)]
    pub status: Option<ShipStatus>,
}

/// The desired state of a Ship.
pub struct ShipSpec {
    /// The Harbor the ship berths in.
    #[proto(1)]
    #[validate(required, format = "dns1123-subdomain")]
    pub harbor: String,
    /// Desired number of sailors; called `crew` from v1 on.
    #[proto(2)]
    #[default(1)]
    #[validate(minimum = 0, maximum = 500)]
    #[json(always)]
    pub sailors: i32,
}

/// The observed state of a Ship.
pub struct ShipStatus {
    /// Sailors aboard.
    #[proto(1)]
    pub crew: i32,
    /// Label selector of the sailors, for the scale subresource.
    #[proto(2)]
    pub selector: Option<String>,
}
