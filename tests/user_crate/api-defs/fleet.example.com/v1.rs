//! fleet.example.com/v1: Ships and the Harbors they berth in.
#![group = "fleet.example.com"]
#![version = "v1"]
#![storage]
#![priority = 20]
#![proto_package = "com.example.fleet.v1"]

/// A Ship is crewed by a number of sailors and berths in a Harbor.
#[kind(namespaced, status, short_names = ["sh"], categories = ["all"])]
#[scale(spec_replicas = ".spec.crew", status_replicas = ".status.crew", selector = ".status.selector")]
#[print_column(name = "Harbor", type = "string", json_path = ".spec.harbor", description = "The harbor the ship berths in.")]
#[print_column(name = "Crew", type = "integer", json_path = ".spec.crew", description = "Desired crew.")]
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
    /// Desired number of sailors.
    #[proto(2)]
    #[default(1)]
    #[validate(minimum = 0, maximum = 500)]
    #[json(always)]
    pub crew: i32,
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

/// A Harbor is a place Ships berth in; it holds at most `capacity` of them.
#[kind(cluster, short_names = ["hb"])]
#[print_column(name = "Capacity", type = "integer", json_path = ".spec.capacity", description = "How many ships may berth here.")]
pub struct Harbor {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The desired state of the harbor.
    #[proto(2)]
    pub spec: HarborSpec,
}

/// The desired state of a Harbor.
pub struct HarborSpec {
    /// How many ships may berth here.
    #[proto(1)]
    #[default(10)]
    #[validate(minimum = 1)]
    #[json(always)]
    pub capacity: i32,
}
