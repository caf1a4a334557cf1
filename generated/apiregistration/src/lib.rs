//! The `apiregistration.k8s.io` API group apiary's aggregator serves, generated from this
//! crate's `api-defs/` by `codegen` at build time: `APIService` (v1), which registers an API
//! group version with the aggregator, served locally or by a Service.
//!
//! - [`register_all`]: registers the group's kinds and OpenAPI documents.
//! - [`scheme()`]: a `Scheme` with the group registered.
//! - [`resources()`]: every served (group, version, kind) as `ResourceInfo`.
//! - [`routes()`]: the REST paths and verbs of every resource and subresource.
//! - [`validation`]: kube-aggregator's APIService validation, which the strategy calls.
//! - [`conditions`]: the `Available` condition and its helpers.
//!
//! Read the generated source with
//! `cargo run -p apiary-codegen -- show apiregistration.k8s.io/v1 --api-defs generated/apiregistration/api-defs`.

use apimachinery::routes::RouteEntry;

pub mod conditions;
pub mod validation;

apimachinery::include_generated!();

/// A scheme with the apiregistration.k8s.io kinds and OpenAPI documents registered.
pub fn scheme() -> apimachinery::Scheme {
    let mut scheme = apimachinery::Scheme::new();
    register_all(&mut scheme);
    scheme
}

/// Every served (group, version, kind), versions in priority order.
pub fn resources() -> Vec<apimachinery::ResourceInfo> {
    scheme()
        .kinds()
        .iter()
        .flat_map(|k| k.versions().cloned().collect::<Vec<_>>())
        .collect()
}

/// Every REST route of every served resource and subresource (see [`RouteEntry`]).
pub fn routes() -> Vec<RouteEntry> {
    resources()
        .iter()
        .flat_map(apimachinery::routes::routes_of)
        .collect()
}
