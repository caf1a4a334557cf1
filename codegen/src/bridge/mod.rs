//! The bridge between definitions and CustomResourceDefinitions.
//!
//! - [`export`]: a group's kinds as `apiextensions.k8s.io/v1` CRD manifests (`codegen
//!   export-crd <group>`), so the same definitions install as CRDs on any Kubernetes cluster.
//! - [`import`]: a CRD as the definitions of its group (`codegen import-crd <crd.yaml>`), for a
//!   user who starts with a CRD and wants an API server with compiled types.
//!
//! What a direction cannot carry is listed in a [`Loss`] report, never dropped silently.

pub mod export;
pub mod import;

/// One thing the other side cannot say, with where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loss {
    /// Where: a kind, version, field or file of the definitions (`Widget v1 .spec.size`,
    /// `example.dev/hooks.rs`), or a path in the CRD
    /// (`spec.versions[name=v1].schema.openAPIV3Schema.properties.spec`).
    pub at: String,
    /// What is not carried, and what happens instead.
    pub what: String,
}

impl std::fmt::Display for Loss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.at, self.what)
    }
}
