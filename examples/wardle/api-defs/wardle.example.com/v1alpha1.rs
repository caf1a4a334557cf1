//! wardle.example.com/v1alpha1: the first version. A Flunder names what it refers to in one
//! `reference` field; Fischers exist only in this version.
#![group = "wardle.example.com"]
#![version = "v1alpha1"]
#![priority = 10]
#![proto_package = "k8s.io.sample_apiserver.pkg.apis.wardle.v1alpha1"]

/// A Flunder is an example kind with a spec and a status.
#[kind(namespaced, categories = ["all"])]
pub struct Flunder {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The desired state of the flunder.
    #[proto(2)]
    pub spec: FlunderSpec,
    /// The observed state of the flunder.
    #[proto(3)]
    pub status: Option<FlunderStatus>,
}

/// The specification of a Flunder.
pub struct FlunderSpec {
    /// A name of another flunder or fischer, depending on the reference type.
    #[proto(1, by_value)]
    pub reference: Option<String>,
    /// The reference type, defaults to "Flunder" if reference is set.
    #[proto(2)]
    pub reference_type: Option<String>,
}

/// The status of a Flunder.
pub struct FlunderStatus {}

/// A Fischer lists the names no Flunder may take.
#[kind(cluster)]
#[print_column(name = "Disallowed", type = "string", json_path = ".disallowedFlunders", description = "The names no Flunder may take.")]
pub struct Fischer {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// DisallowedFlunders holds a list of Flunder.Names that are disallowed.
    #[proto(2)]
    #[list(type = "atomic")]
    pub disallowed_flunders: Vec<String>,
}
