//! The types of the CronTab CustomResourceDefinition (`crd.yaml`), imported into definitions by
//! `codegen import-crd crd.yaml --out api-defs` and generated from `api-defs/` at build time:
//! `stable_example_com::v1::CronTab` (stored, preferred) and `stable_example_com::v1beta1::CronTab`,
//! with the JSON and protobuf encodings, defaults, checks and CEL rule the CRD's schemas say.
//!
//! - [`register_all`]: registers the group in a scheme; the `crontab-apiserver` binary
//!   (feature `server`, on by default) installs it into `server::Server` beside the Kubernetes
//!   groups.
//! - feature `kube`: every kind works with kube-rs (`kube::Api<KubeObject<CronTab>>`).

#[cfg(feature = "kube")]
pub use apimachinery::kube;

apimachinery::include_generated!();
