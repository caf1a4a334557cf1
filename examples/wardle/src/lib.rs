//! The types of k8s.io/sample-apiserver's `wardle.example.com` group, generated from
//! `api-defs/wardle.example.com/` at build time: Flunders (namespaced; `v1alpha1` and the
//! preferred, stored `v1beta1`, over the hub `internal`, with the hand-written conversion of
//! `hooks.rs`) and Fischers (cluster-scoped; `v1alpha1`), and the `BanFlunder` admission plugin
//! (`admission.rs`).
//!
//! - `wardle_example_com::v1beta1::Flunder`, `wardle_example_com::v1alpha1::Fischer`, …: the
//!   typed objects with Kubernetes' JSON and protobuf encodings.
//! - [`register_all`]: registers the group in a scheme; the `wardle-apiserver` binary (feature
//!   `server`, on by default) installs it into `server::Server` beside the Kubernetes groups.
//! - feature `kube`: every kind works with kube-rs (`kube::Api<KubeObject<Flunder>>`), without
//!   the server (`default-features = false, features = ["kube"]`).

#[cfg(feature = "kube")]
pub use apimachinery::kube;

apimachinery::include_generated!();
