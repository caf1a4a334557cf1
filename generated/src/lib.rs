//! The typed API crate, generated from `api-defs/` by `codegen` at build time.
//!
//! Every API group is a module (`generated::example_dev`, `generated::core`, …) with one
//! module per served version (`generated::example_dev::v1::Widget`) plus the internal hub.
//! [`scheme()`] returns an `apimachinery::Scheme` with every kind and OpenAPI document
//! registered; [`resources()`] lists every served (group, version, kind).

#![allow(missing_docs)]

#[cfg(feature = "kube")]
pub mod kube;
pub mod routes;
pub mod runtime;

pub use routes::RouteEntry;

include!(concat!(env!("OUT_DIR"), "/apiary_generated.rs"));

/// A scheme with every generated kind and every group version's OpenAPI documents registered.
pub fn scheme() -> apimachinery::Scheme {
    let mut scheme = apimachinery::Scheme::new();
    register_all(&mut scheme);
    scheme
}

/// Every served (group, version, kind), groups in registration order, versions in priority order.
pub fn resources() -> Vec<apimachinery::ResourceInfo> {
    scheme()
        .kinds()
        .iter()
        .flat_map(|k| k.versions().to_vec())
        .collect()
}

/// Every REST route of every served resource and subresource (see [`routes::RouteEntry`]).
pub fn routes() -> Vec<RouteEntry> {
    resources().iter().flat_map(routes::routes_of).collect()
}
