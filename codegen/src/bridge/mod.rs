//! The bridge between definitions and CustomResourceDefinitions.
//!
//! - [`export`]: a group's kinds as `apiextensions.k8s.io/v1` CRD manifests (`codegen
//!   export-crd <group>`), so the same definitions install as CRDs on any Kubernetes cluster.
//! - What a direction cannot carry is listed in a [`Loss`] report, never dropped silently.

pub mod export;

/// One thing the other side cannot say, with where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loss {
    /// Where: a kind, version, field or file (`Widget v1 .spec.size`, `hooks.rs`).
    pub at: String,
    /// What is not carried, and what happens instead.
    pub what: String,
}

impl std::fmt::Display for Loss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.at, self.what)
    }
}
