//! The extension server of apiary: `apiextensions.k8s.io` CustomResourceDefinitions, whose
//! resources are served while the server runs, behind the main server in the delegation chain
//! (kube-apiserver's apiextensions-apiserver: main → extensions → 404).
//!
//! [`ApiExtensions`] is the bundle of API groups to install into a server: it registers the
//! `CustomResourceDefinition` kind (from `apiary-apiextensions-api`), serves custom resources
//! through [`server::runtime_kinds::RuntimeKinds`] (every verb, watch, the watch cache,
//! discovery, status and scale subresources, Tables from the printer columns, selectable
//! fields), and runs the CRD controller ([`controller`]) that accepts names, establishes
//! resources and cleans up the objects of a deleted CRD.
//!
//! ```no_run
//! fn serve(options: server::ServerOptions) -> std::process::ExitCode {
//!     server::Server::new(options)
//!         .install(controlplane::KubernetesApis::default())
//!         .install(apiextensions_server::ApiExtensions::default())
//!         .main()
//! }
//! ```

pub mod conditions;
pub mod controller;
pub mod conversion;
pub mod definition;
pub mod openapi;
pub mod schema;
pub mod shape;
pub mod strategy;

use std::sync::Arc;
use std::time::Duration;

use apiextensions_api::apiextensions_k8s_io::CUSTOM_RESOURCE_DEFINITION_KIND;
use apiextensions_api::apiextensions_k8s_io::v1::CustomResourceDefinition;
use apimachinery::Scheme;
use apimachinery::runtime::Object;
use server::ApiGroups;
use server::controller::{Controller, ObjectKey};
use server::genericserver::GenericServer;
use server::runtime_kinds::RuntimeKinds;

/// How often every CRD is reconciled again even when nothing changed (names another CRD
/// released are picked up then at the latest).
const RESYNC: Duration = Duration::from_secs(30);

/// How often, while the server starts, whether every CRD has been reconciled is looked at.
const INITIAL_SYNC_POLL: Duration = Duration::from_millis(100);

/// The extension server's bundle of API groups (see the crate documentation).
#[derive(Debug, Default)]
pub struct ApiExtensions {
    _private: (),
}

impl ApiGroups for ApiExtensions {
    fn register(&self, scheme: &mut Scheme) {
        apiextensions_api::register_all(scheme);
    }

    fn install(&self, server: &mut GenericServer) {
        let kinds = Arc::new(RuntimeKinds::new(server.api().clone()));
        server.add_delegate(kinds.clone());
        server.add_metrics(|registry| conversion::metrics::METRICS.register(registry));
        server.add_kind_source(kinds.clone());
        let crds = match server.api().store(&CUSTOM_RESOURCE_DEFINITION_KIND) {
            Ok(store) => store,
            Err(e) => {
                tracing::error!(error = %e.message(), "the CustomResourceDefinition store");
                return;
            }
        };
        let documents = Arc::new(controller::CrdDocuments::default());
        server.add_openapi_source(documents.clone());
        let reconciler = controller::CrdController::new(
            crds.clone(),
            kinds,
            documents,
            Box::new(schema::compile),
        );
        // Until every CRD that exists has been looked at once, a request for a path no server
        // serves may be for one of their resources: 503 (retry), not 404 (kube-apiserver's
        // CRDInformerHasNotSynced signal); readyz waits for it as well.
        let synced = server.add_mux_complete_signal("CRDInformerHasNotSynced");
        let reconciled = reconciler.reconciled();
        let lister = crds.clone();
        server.add_post_start_hook(
            "crd-informer-synced",
            Arc::new(move || {
                let (synced, reconciled, lister) =
                    (synced.clone(), reconciled.clone(), lister.clone());
                Box::pin(async move {
                    loop {
                        if let Ok((all, _)) = lister.list("", Default::default()).await
                            && all.iter().all(|crd| reconciled.contains(crd.name()))
                        {
                            synced.complete();
                            return Ok(());
                        }
                        tokio::time::sleep(INITIAL_SYNC_POLL).await;
                    }
                })
            }),
        );
        // One worker: names are accepted one CRD at a time, as kube-apiserver's naming
        // controller does, so two CRDs never accept the same name.
        // A change of one CRD (its names taken or released) is looked at again by the other
        // CRDs of its group, as kube-apiserver's naming controller requeues them.
        let lister = crds.clone();
        server.add_controller(
            Controller::new("customresourcedefinitions", crds.clone(), reconciler)
                .watches(crds, move |changed: Box<dyn Object>| {
                    let lister = lister.clone();
                    async move {
                        let Some(group) = changed
                            .downcast_ref::<CustomResourceDefinition>()
                            .map(|c| c.spec.group.clone())
                        else {
                            return Vec::new();
                        };
                        let Ok((all, _)) = lister.list("", Default::default()).await else {
                            return Vec::new();
                        };
                        all.iter()
                            .filter_map(|o| o.downcast_ref::<CustomResourceDefinition>())
                            .filter(|c| c.spec.group == group)
                            .filter_map(|c| c.metadata.name.clone())
                            .map(ObjectKey::cluster)
                            .collect()
                    }
                })
                .workers(1)
                .resync(RESYNC),
        );
    }
}
