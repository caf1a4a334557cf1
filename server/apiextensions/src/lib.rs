//! The apiextensions.k8s.io API server of apiary (Kubernetes' `apiextensions-apiserver`):
//! the `CustomResourceDefinition` kind of [`apiextensions_api`] and the controllers that keep
//! its status, installed into the generic server as one [`ApiGroups`] bundle,
//! [`ApiextensionsApis`]:
//!
//! - [`naming`]: the naming controller, which accepts a CRD's names unless another CRD of its
//!   group holds them (`status.acceptedNames`, condition `NamesAccepted`);
//! - [`establishing`]: the establishing controller, which marks a CRD whose names are
//!   accepted `Established`.
//!
//! Serving the custom resources a CRD defines is not part of this crate yet.
//!
//! ```
//! use std::sync::Arc;
//!
//! use apiextensions::ApiextensionsApis;
//! use server::genericserver::groups::{ApiGroups, scheme_of};
//!
//! let groups: Vec<Arc<dyn ApiGroups>> = vec![Arc::new(ApiextensionsApis)];
//! let scheme = scheme_of(&groups);
//! assert!(scheme.by_kind("apiextensions.k8s.io", "CustomResourceDefinition").is_some());
//! ```

pub mod conditions;
pub mod establishing;
pub mod naming;

use std::sync::Arc;

use apimachinery::Scheme;
use apimachinery::status::ApiError;
use server::endpoints::ApiContext;
use server::genericserver::GenericServer;
use server::genericserver::groups::ApiGroups;

/// The apiextensions.k8s.io group with its controllers: installing it serves
/// CustomResourceDefinitions and starts the naming and establishing controllers once the server
/// serves (post-start hook `start-apiextensions-controllers`, as kube-apiserver names it).
#[derive(Clone, Copy, Debug, Default)]
pub struct ApiextensionsApis;

impl ApiGroups for ApiextensionsApis {
    fn register(&self, scheme: &mut Scheme) {
        apiextensions_api::register_all(scheme);
    }

    fn install(&self, server: &mut GenericServer) {
        let api = Arc::clone(server.api());
        server.add_post_start_hook(
            "start-apiextensions-controllers",
            Arc::new(move || {
                let api = Arc::clone(&api);
                Box::pin(async move { start(&api).map_err(|e| e.to_string()) })
            }),
        );
    }
}

/// Starts the naming and establishing controllers over the CRDs of `api`'s registry, in the
/// background; they stop with the server.
pub fn start(api: &ApiContext) -> Result<(), ApiError> {
    api.spawn_controller(naming::NamingController::new(&api.registry)?);
    api.spawn_controller(establishing::EstablishingController::new(&api.registry)?);
    Ok(())
}
