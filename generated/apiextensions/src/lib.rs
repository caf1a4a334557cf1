//! The `apiextensions.k8s.io` API group apiary serves, generated from this crate's
//! `api-defs/` by `codegen` at build time: `CustomResourceDefinition` (v1), with its JSON
//! schema types (`JSONSchemaProps` and its "either" types, whose JSON encodings are written by
//! hand in `api-defs/apiextensions.k8s.io/hooks.rs`), its defaulting, and its strategy.
//!
//! - [`register_all`]: registers the group's kinds and OpenAPI documents.
//! - [`scheme()`]: a `Scheme` with the group registered.
//! - [`resources()`]: every served (group, version, kind) as `ResourceInfo`.
//! - [`routes()`]: the REST paths and verbs of every resource and subresource.
//! - [`sample_object`]: a random object of a (group, version, kind) as JSON.
//! - [`validation`]: Kubernetes' CRD validation, which the strategy calls.
//!
//! Read the generated source with
//! `cargo run -p apiary-codegen -- show apiextensions.k8s.io/v1 --api-defs generated/apiextensions/api-defs`.

use apimachinery::routes::RouteEntry;

pub mod validation;

apimachinery::include_generated!();

/// A scheme with the apiextensions.k8s.io kinds and OpenAPI documents registered.
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
