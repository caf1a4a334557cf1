//! The internal (hub) version of wardle.example.com: every served version of Flunder converts
//! to and from it.
#![group = "wardle.example.com"]
#![version = "internal"]

/// A Flunder is an example kind with a spec and a status.
#[kind(namespaced)]
pub struct Flunder {
    /// Standard object metadata.
    pub metadata: ObjectMeta,
    /// The desired state.
    pub spec: FlunderSpec,
    /// The observed state.
    pub status: Option<FlunderStatus>,
}

/// The specification of a Flunder.
pub struct FlunderSpec {
    /// A name of another flunder, mutually exclusive to the fischer reference.
    pub flunder_reference: Option<String>,
    /// A name of a fischer, mutually exclusive to the flunder reference.
    pub fischer_reference: Option<String>,
    /// The reference type: `Flunder` or `Fischer`.
    pub reference_type: Option<String>,
}

/// The status of a Flunder (empty).
pub struct FlunderStatus {}
