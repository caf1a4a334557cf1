//! apiary's own demo API crate: the `example.dev` group (Widgets, `v1` and `v1alpha1` over an
//! internal hub), generated from the repository's `api-defs/` by `codegen` at build time, the
//! way a user's crate generates its own groups. The Kubernetes groups are the
//! `apiary-kubernetes-api` crate (`kubernetes_api`); [`scheme()`] puts both together, as the
//! `apiary` binary serves them.
//!
//! `generated::example_dev` has one module per served version (`example_dev::v1`) plus
//! `internal` for the hub. A version module holds the typed structs with Kubernetes' JSON
//! encoding (`v1::Widget`, `v1::WidgetList`), their `apimachinery::markers::Validate` walks and
//! `StructShape` statics, the conversions to and from the hub (`widget_to_internal`,
//! `widget_from_internal`) and one `ResourceInfo` per kind (`v1::WIDGET_RESOURCE`); every
//! kind's struct implements `apimachinery::runtime::TypedObject`. The group module holds the
//! `Kind` table (`example_dev::WIDGET_KIND`), the group's hand-written `admission` module,
//! `register(&mut Scheme)` and `sample_object` (random objects for property tests).
//!
//! - [`register_all`]: registers the `example.dev` group alone.
//! - [`scheme()`]: a scheme with the Kubernetes groups (`kubernetes_api::register_all`) and
//!   `example.dev`, what the `apiary` binary serves.
//! - [`resources()`] and [`routes()`]: the resources and REST routes of that scheme.
//! - feature `kube`: every kind implements `apimachinery::kube::KubeKind`, so
//!   `kube::Api<KubeObject<Widget>>` works (`apimachinery::kube::KubeObject`).
//!
//! Read the generated source with `cargo run -p apiary-codegen -- show example.dev/v1`.

#[cfg(feature = "kube")]
pub use apimachinery::kube;
pub use apimachinery::routes::{self, RouteEntry};

apimachinery::include_generated!();

/// A scheme with the Kubernetes groups and `example.dev` registered (core first), with their
/// OpenAPI documents: the API the `apiary` binary serves.
pub fn scheme() -> apimachinery::Scheme {
    let mut scheme = apimachinery::Scheme::new();
    kubernetes_api::register_all(&mut scheme);
    register_all(&mut scheme);
    scheme
}

/// Every (group, version, kind) of [`scheme()`], groups in registration order, versions in
/// priority order.
pub fn resources() -> Vec<apimachinery::ResourceInfo> {
    kubernetes_api::resources_of(&scheme())
}

/// Every REST route of every resource and subresource of [`scheme()`] (see [`RouteEntry`]).
pub fn routes() -> Vec<RouteEntry> {
    resources().iter().flat_map(routes::routes_of).collect()
}
