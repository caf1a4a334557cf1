//! I/O-free Kubernetes API machinery shared by the generated API crate, the server and clients.
//!
//! This crate holds the vocabulary every other crate speaks: group/version/kind names, the
//! REST-mapping facts of a resource, the typed object model ([`runtime`]: `Object`, `Kind`
//! tables, tracked decoding) with the [`scheme::Scheme`] that the generated crate fills with
//! one `Kind` per group and kind, strategies ([`strategy`]) and admission ([`admission`]), the
//! `meta.k8s.io/v1` types, field errors and
//! `Status` errors, selectors, the typed request options (`meta::options`) and the query string
//! they are decoded from (`query`), the Go text formats Kubernetes' messages use (`strconv`,
//! `duration`) and the protobuf envelope. It performs no I/O.

// The generated code (`meta`'s structs) names this crate by its absolute path, as it does in
// the `generated` crate.
extern crate self as apimachinery;

pub mod admission;
pub mod authentication;
pub mod authorization;
pub mod cel;
pub mod duration;
pub mod errors;
pub mod gvk;
pub mod jsonpath;
#[cfg(feature = "kube")]
pub mod kube;
pub mod markers;
pub mod meta;
pub mod object;
pub mod protobuf;
pub mod quantity;
pub mod query;
pub mod rbac;
pub mod resource;
pub mod routes;
pub mod runtime;
pub mod sample;
pub mod schema;
pub mod scheme;
pub mod selectors;
pub mod serde_util;
pub mod status;
pub mod strategy;
pub mod strconv;
pub mod structure;
pub mod table;
pub mod testing;
pub mod user;
pub mod validation;

/// The crates the generated code names, reached through this crate so that a crate of
/// generated types depends on `apimachinery` alone. Not a public API: its contents follow the
/// generator.
#[doc(hidden)]
pub mod __private {
    pub use serde;
    pub use serde_json;
}

pub use gvk::{GroupResource, GroupVersion, GroupVersionKind, GroupVersionResource};
pub use resource::{PrinterColumn, ResourceInfo, ScaleInfo, Scope, SubresourceInfo};
pub use scheme::{CodecError, Scheme};

/// Includes the code `codegen::compile` generated into `OUT_DIR` from the crate's definitions:
/// one module per API group of the crate (`example_dev`, with a module per version),
/// `register_all(&mut Scheme)` and `sample_object`. Use it once, at the crate root or in a
/// module of its own:
///
/// ```text
/// // build.rs: fn main() { codegen::compile("api-defs"); }
/// pub mod api {
///     apimachinery::include_generated!();
/// }
/// ```
#[macro_export]
macro_rules! include_generated {
    () => {
        include!(concat!(env!("OUT_DIR"), "/apiary_generated.rs"));
    };
}
