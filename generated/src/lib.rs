//! The typed API crate, generated from `api-defs/` by `codegen` at build time.
//!
//! Every API group is a module (`generated::example_dev`, `generated::core`, …) with one
//! module per served version (`generated::example_dev::v1`) plus `internal` for a group's hub.
//! A version module holds the typed structs with Kubernetes' JSON encoding
//! (`v1::Widget`, `v1::WidgetList`), their `apimachinery::markers::Validate` walks and `StructShape` statics, the
//! conversions to and from the hub (`widget_to_internal`, `widget_from_internal`) and one
//! `ResourceInfo` per kind (`v1::WIDGET_RESOURCE`); every kind's struct implements
//! `apimachinery::runtime::TypedObject`. A group module holds one `apimachinery::runtime::Kind`
//! table per kind (`example_dev::WIDGET_KIND`), the group's hand-written `strategy` and
//! `admission` modules, `register(&mut Scheme)` and `sample_object` (random objects for
//! property tests). The generic code all of it calls is in `apimachinery`, so an API crate
//! generated anywhere depends on `apimachinery` alone.
//!
//! - [`scheme()`]: an `apimachinery::Scheme` with every kind and every group version's OpenAPI
//!   documents registered (core first, then groups by name).
//! - [`resources()`]: every served (group, version, kind) as `ResourceInfo`.
//! - [`routes()`]: the REST paths and verbs of every resource and subresource.
//! - [`sample_object`]: a random object of a (group, version, kind) as JSON.
//! - feature `kube`: `generated::kube::KubeObject` makes any kind a `kube::Resource`
//!   (`kube::Api<KubeObject<Widget>>`), plus `ApiResource` and `DynamicObject` conversions.
//!
//! Read the generated source with `cargo run -p codegen -- show example.dev/v1`.

#[cfg(feature = "kube")]
pub mod kube;
pub mod routes;

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
        .flat_map(|k| k.versions().cloned().collect::<Vec<_>>())
        .collect()
}

/// Every REST route of every served resource and subresource (see [`routes::RouteEntry`]).
pub fn routes() -> Vec<RouteEntry> {
    resources().iter().flat_map(routes::routes_of).collect()
}
