//! The aggregator of apiary: `apiregistration.k8s.io` APIServices in front of the delegation
//! chain (kube-apiserver's kube-aggregator: aggregator → main → extensions → 404).
//!
//! [`Aggregator`] is the bundle of API groups to install into a server. It registers the
//! `APIService` kind (from `apiary-apiregistration-api`) and installs:
//! - the proxy ([`proxy::ApiServiceProxy`]), a front delegate that sends the requests of every
//!   group/version an APIService with a `service` registers to that Service, with the caller's
//!   identity ([`headers`]) over the server's front-proxy client certificate
//!   ([`GenericServer::front_proxy`], see [`transport`]), and its protocol upgrades
//!   ([`upgrade`]);
//! - the availability controller ([`availability`]), which keeps every APIService's
//!   `Available` condition and the shared [`ApiServiceTable`];
//! - autoregistration ([`autoregister`]): a local APIService for every group/version the chain
//!   serves, CustomResourceDefinitions' included.
//!
//! Merged discovery reads [`Aggregator::table`]: every APIService's group/version, Service,
//! priorities and availability. The server's own controllers reach the remote APIServices'
//! resources through [`remote::AggregatedResources`], which the bundle installs as the
//! registry's remote resources (the namespace controller empties namespaces of them).
//!
//! ```no_run
//! fn serve(options: server::ServerOptions) -> std::process::ExitCode {
//!     server::Server::new(options)
//!         .install(controlplane::KubernetesApis::default())
//!         .install(aggregator::Aggregator::default())
//!         .main()
//! }
//! ```

pub mod autoregister;
pub mod availability;
pub mod discovery;
pub mod headers;
pub mod proxy;
pub mod remote;
pub mod services;
pub mod table;
pub mod transport;
pub mod upgrade;

use std::sync::Arc;
use std::time::Duration;

use apiextensions_api::apiextensions_k8s_io::CUSTOM_RESOURCE_DEFINITION_KIND;
use apiextensions_api::apiextensions_k8s_io::v1::CustomResourceDefinition;
use apimachinery::Scheme;
use apimachinery::runtime::Object;
use apiregistration_api::apiregistration_k8s_io::API_SERVICE_KIND;
use parking_lot::Mutex;
use server::ApiGroups;
use server::controller::{Controller, ObjectKey};
use server::genericserver::GenericServer;

pub use availability::ServiceLister;
pub use table::{ApiServiceEntry, ApiServiceTable, ServiceTarget};
pub use transport::{ClientIdentity, ProxyTransport};

/// How often every APIService is looked at again by autoregistration (kube-aggregator's
/// informer resync).
const AUTOREGISTER_RESYNC: Duration = Duration::from_secs(30);

/// How many APIServices are checked for availability at once (kube-aggregator's workers).
const AVAILABILITY_WORKERS: usize = 5;

/// The errors of the aggregator's boundary.
#[derive(Debug, thiserror::Error)]
pub enum AggregatorError {
    /// The TLS configuration of a connection to an aggregated server could not be built (an
    /// invalid `caBundle`, client certificate or server name).
    #[error("{0}")]
    Tls(String),
    /// An upgrade request could not be sent to the aggregated server (apimachinery's words).
    #[error("error dialing backend: {0}")]
    DialBackend(String),
    /// The aggregated server answered an upgrade request with neither `101` nor an error.
    #[error("invalid upgrade response: status code {0}")]
    InvalidUpgradeResponse(u16),
    /// The caller's connection cannot be taken over for an upgrade (an HTTP/2 request).
    #[error("request connection cannot be hijacked")]
    NotHijackable,
}

/// The aggregator's bundle of API groups (see the crate documentation).
pub struct Aggregator {
    table: Arc<ApiServiceTable>,
    transport: Arc<ProxyTransport>,
    services: Mutex<Option<Arc<dyn ServiceLister>>>,
    /// Whether [`Aggregator::with_proxy_client`] chose the client certificate.
    identity_given: bool,
}

impl Default for Aggregator {
    fn default() -> Self {
        Self {
            table: Arc::default(),
            transport: Arc::new(ProxyTransport::new(None)),
            services: Mutex::new(None),
            identity_given: false,
        }
    }
}

impl std::fmt::Debug for Aggregator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Aggregator")
            .field("apiservices", &self.table.snapshot().len())
            .finish_non_exhaustive()
    }
}

impl Aggregator {
    /// An aggregator presenting `identity` to aggregated servers instead of the server's
    /// front-proxy client certificate ([`GenericServer::front_proxy`], used by default).
    pub fn with_proxy_client(mut self, identity: ClientIdentity) -> Self {
        self.transport.set_identity(Some(identity));
        self.identity_given = true;
        self
    }

    /// Checks the Services (and EndpointSlices) of remote APIServices through `services`.
    /// By default they are read from the server's stores when it serves both kinds; without
    /// them, availability rests on the discovery check alone.
    pub fn with_service_lister(self, services: Arc<dyn ServiceLister>) -> Self {
        *self.services.lock() = Some(services);
        self
    }

    /// The APIServices as the aggregator sees them (shared with the proxy and the
    /// availability controller; merged discovery reads it).
    pub fn table(&self) -> Arc<ApiServiceTable> {
        Arc::clone(&self.table)
    }

    /// The transport to aggregated servers (its client identity can be replaced while the
    /// server runs).
    pub fn transport(&self) -> Arc<ProxyTransport> {
        Arc::clone(&self.transport)
    }
}

/// The group/versions `server` serves from its scheme, as `(group, version)`.
fn served_group_versions(server: &GenericServer) -> Vec<(String, String)> {
    let runtime = server.runtime_config();
    let mut out: Vec<(String, String)> = Vec::new();
    for kind in server.api().scheme.kinds() {
        for r in kind.versions() {
            let gv = (r.group.to_string(), r.version.to_string());
            if runtime.enabled(r.group, r.version) && !out.contains(&gv) {
                out.push(gv);
            }
        }
    }
    out
}

impl ApiGroups for Aggregator {
    fn register(&self, scheme: &mut Scheme) {
        apiregistration_api::register_all(scheme);
    }

    fn install(&self, server: &mut GenericServer) {
        let store = match server.api().store(&API_SERVICE_KIND) {
            Ok(store) => store,
            Err(e) => {
                tracing::error!(error = %e.message(), "the APIService store");
                return;
            }
        };
        // The server's front-proxy client certificate, unless one was given explicitly.
        if let Some(front_proxy) = server.front_proxy()
            && !self.identity_given
        {
            self.transport.set_identity(Some(ClientIdentity {
                cert_pem: front_proxy.client_cert_pem.clone().into_bytes(),
                key_pem: front_proxy.client_key_pem.clone().into_bytes(),
            }));
        }
        let registry = Arc::clone(&server.api().registry);
        let services = self.services.lock().clone().or_else(|| {
            let api = server.api();
            let services = api.store(&kubernetes_api::core::SERVICE_KIND).ok()?;
            let slices = api
                .store(&kubernetes_api::discovery_k8s_io::ENDPOINT_SLICE_KIND)
                .ok()?;
            Some(
                Arc::new(services::StoreServiceLister::new(services, slices))
                    as Arc<dyn ServiceLister>,
            )
        });
        let reconciler = availability::AvailabilityReconciler::new(
            store.clone(),
            self.table(),
            self.transport(),
            Arc::clone(&registry),
            services,
        );
        let mut availability =
            Controller::new("apiservice-availability", store.clone(), reconciler)
                .workers(AVAILABILITY_WORKERS);
        let recheck = availability.queue();
        let on_failure: proxy::FailureHook =
            Arc::new(move |name: &str| recheck.add(ObjectKey::cluster(name)));
        let proxy =
            proxy::ApiServiceProxy::new(self.table(), self.transport(), Arc::clone(&registry))
                .on_failure(Arc::clone(&on_failure));
        server.add_front_delegate(Arc::new(proxy));
        // Merged discovery and OpenAPI: every APIService's priorities, the remote ones'
        // documents.
        let apis = Arc::new(server::genericserver::aggregated::AggregatedApis::default());
        server.set_api_group_directory(apis.clone());
        server.add_remote_openapi_source(apis.clone());
        // The server's controllers (the namespace controller) reach the remote APIServices'
        // resources as merged discovery lists them, through the proxy.
        registry.set_remote_resources(Arc::new(
            remote::AggregatedResources::new(
                self.table(),
                Arc::clone(&apis),
                self.transport(),
                Arc::clone(&registry),
            )
            .on_failure(on_failure),
        ));
        let merged = Arc::new(discovery::DiscoveryAggregator::new(
            self.table(),
            apis,
            self.transport(),
            Arc::clone(&registry),
        ));
        server.add_post_start_hook(
            "apiservice-discovery-controller",
            Arc::new(move || {
                merged.start();
                Box::pin(async { Ok(()) })
            }),
        );
        server.add_controller(availability);

        let on_start = autoregister::on_start_services(
            served_group_versions(server)
                .iter()
                .map(|(g, v)| (g.as_str(), v.as_str())),
        );
        let crds = server.api().store(&CUSTOM_RESOURCE_DEFINITION_KIND).ok();
        let autoregister = autoregister::AutoRegister::new(store.clone(), crds.clone(), on_start);
        let names = autoregister.on_start_names();
        let mut controller = Controller::new("apiservice-autoregistration", store, autoregister)
            .resync(AUTOREGISTER_RESYNC);
        if let Some(crds) = crds {
            controller = controller.watches(crds, |changed: Box<dyn Object>| async move {
                let Some(crd) = changed.downcast_ref::<CustomResourceDefinition>() else {
                    return Vec::new();
                };
                crd.spec
                    .versions
                    .iter()
                    .map(|v| ObjectKey::cluster(format!("{}.{}", v.name, crd.spec.group)))
                    .collect()
            });
        }
        let queue = controller.queue();
        for name in names {
            queue.add(ObjectKey::cluster(name));
        }
        server.add_controller(controller);
    }
}
