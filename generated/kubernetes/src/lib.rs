//! The typed Kubernetes API groups apiary serves, generated from this crate's `api-defs/` by
//! `codegen` at build time: `core` (v1), `rbac.authorization.k8s.io`, `authentication.k8s.io`,
//! `authorization.k8s.io`, `coordination.k8s.io`, `discovery.k8s.io` and
//! `admissionregistration.k8s.io`, each
//! with its hand-written hooks (defaulting, validation), strategies and admission plugins.
//!
//! A server links this crate to serve the Kubernetes groups beside its own; a client imports
//! it without the server (it depends on `apimachinery` alone) to read and write these kinds,
//! and with the `kube` feature uses them with kube-rs (`kube::Api<KubeObject<Pod>>`, see
//! `apimachinery::kube`).
//!
//! Every group is a module (`kubernetes_api::core`, `kubernetes_api::rbac_authorization_k8s_io`,
//! …) with one module per served version (`core::v1`) plus `internal` for a group's hub. A
//! version module holds the typed structs with Kubernetes' JSON and protobuf encodings
//! (`core::v1::Pod`), their `Validate` walks and `StructShape` statics, the conversions to and
//! from the hub and one `ResourceInfo` per kind (`core::v1::POD_RESOURCE`). A group module
//! holds one `apimachinery::runtime::Kind` table per kind, its `strategy` and `admission`
//! modules, `register(&mut Scheme)` and `sample_object`.
//!
//! - [`register_all`]: registers every group's kinds and OpenAPI documents (core first).
//! - [`scheme()`]: a `Scheme` with every group registered.
//! - [`resources()`]: every served (group, version, kind) as `ResourceInfo`.
//! - [`routes()`]: the REST paths and verbs of every resource and subresource.
//! - [`sample_object`]: a random object of a (group, version, kind) as JSON.
//!
//! Another API crate's definitions may refer to this crate's types (`core::v1::ObjectReference`):
//! the crate declares `links = "apiary-kubernetes-api"`, and its build script gives its
//! definitions to the build scripts of the crates that depend on it (see `api-defs/README.md`).
//!
//! Read the generated source with
//! `cargo run -p apiary-codegen -- show core/v1 --api-defs generated/kubernetes/api-defs`.

use apimachinery::routes::RouteEntry;

pub mod services;

apimachinery::include_generated!();

/// A scheme with every Kubernetes group's kinds and OpenAPI documents registered.
pub fn scheme() -> apimachinery::Scheme {
    let mut scheme = apimachinery::Scheme::new();
    register_all(&mut scheme);
    scheme
}

/// Every served (group, version, kind), groups in registration order, versions in priority order.
pub fn resources() -> Vec<apimachinery::ResourceInfo> {
    resources_of(&scheme())
}

/// Every REST route of every served resource and subresource (see [`RouteEntry`]).
pub fn routes() -> Vec<RouteEntry> {
    resources()
        .iter()
        .flat_map(apimachinery::routes::routes_of)
        .collect()
}

/// Every (group, version, kind) a scheme serves, groups in registration order, versions in
/// priority order.
pub fn resources_of(scheme: &apimachinery::Scheme) -> Vec<apimachinery::ResourceInfo> {
    scheme
        .kinds()
        .iter()
        .flat_map(|k| k.versions().cloned().collect::<Vec<_>>())
        .collect()
}
