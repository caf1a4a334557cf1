//! wardle.example.com/v1beta1: the preferred and stored version of Flunder.
#![group = "wardle.example.com"]
#![version = "v1beta1"]
#![storage]
#![priority = 20]
#![proto_package = "k8s.io.sample_apiserver.pkg.apis.wardle.v1beta1"]

/// A Flunder is an example kind with a spec and a status.
#[kind(namespaced, categories = ["all"])]
#[print_column(name = "Reference Type", type = "string", json_path = ".spec.referenceType", description = "Whether the flunder refers to a Flunder or a Fischer.")]
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
    /// A name of another flunder, mutually exclusive to the FischerReference.
    #[proto(1, by_value)]
    pub flunder_reference: Option<String>,
    /// A name of a fischer, mutually exclusive to the FlunderReference.
    #[proto(2, by_value)]
    pub fischer_reference: Option<String>,
    /// The reference type.
    #[proto(3, by_value)]
    pub reference_type: Option<String>,
}

/// The status of a Flunder.
pub struct FlunderStatus {}
