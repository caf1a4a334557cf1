//! The `default/kubernetes` Service and its Endpoints and EndpointSlice, kept pointing at the
//! running replicas: kube-apiserver's lease endpoint reconciler
//! (`pkg/controlplane/reconcilers/lease.go`) and its `kubernetes` service controller.
//!
//! Every replica holds a lease, a storage key with a 15-second TTL
//! (`<prefix>/masterleases/<advertised IP>`) renewed every 10 seconds, and reconciles the
//! Endpoints and the EndpointSlice to the IPs of the live leases, at the secure port; a replica
//! that shuts down removes its lease and reconciles once more without it.
//!
//! The advertised address is `--advertise-address`, else the bind address unless it is
//! unspecified or loopback, else the host's first non-loopback address (the source address of
//! its default route), as kube-apiserver's `ResolveBindAddress` chooses it. When the host has
//! only loopback addresses, kube-apiserver refuses to start ("Unable to find suitable network
//! address"); apiary serves anyway and writes no address of its own: Endpoints may not hold
//! loopback addresses, so the `kubernetes` Service then has no endpoints (a warning says why).
//! `kubectl cluster-info` needs none: it prints the server it talks to.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use apimachinery::meta::{IntOrString, ObjectMeta};
use apimachinery::runtime::{Object, TypedObject};
use apimachinery::status::ApiError;
use kubernetes_api::core::v1::{
    EndpointAddress, EndpointPort, EndpointSubset, Endpoints, Service, ServicePort, ServiceSpec,
};
use kubernetes_api::discovery_k8s_io::v1 as discovery;
use server::endpoints::ApiContext;
use server::genericserver::service_network::{ServiceNetwork, ServingAddress};
use server::registry::{NoAdmission, Store, UpdateOptions};
use storage::backend::{Condition, RangeRequest};

use super::resolver::SERVICE_NAME_LABEL;
use crate::controllers::Replace;

/// How long a replica's lease lives without renewal (kube's `--endpoint-reconciler` lease TTL).
pub const LEASE_TTL_SECONDS: u64 = 15;
/// How often a replica renews its lease and reconciles (kube's `EndpointInterval`).
pub const RECONCILE_INTERVAL: Duration = Duration::from_secs(10);

/// The namespace and name of the Service of the API.
const NAMESPACE: &str = "default";
const NAME: &str = "kubernetes";

/// The address a replica advertises (see the module documentation), or `None` when it has
/// only loopback addresses.
pub fn advertise_address(configured: Option<IpAddr>, bind: IpAddr) -> Option<IpAddr> {
    if let Some(ip) = configured {
        return Some(ip);
    }
    if !bind.is_unspecified() && !bind.is_loopback() {
        return Some(bind);
    }
    host_address(bind.is_ipv6())
}

/// The source address of the host's default route: a UDP socket "connected" to a public
/// address (no packet is sent) reads the address the kernel would send from.
fn host_address(v6: bool) -> Option<IpAddr> {
    let (local, remote) = if v6 {
        ("[::]:0", "[2001:db8::1]:53")
    } else {
        ("0.0.0.0:0", "192.0.2.1:53")
    };
    let socket = UdpSocket::bind(local).ok()?;
    socket.connect(remote).ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// The reconciler of the `kubernetes` Service of one replica.
#[derive(Clone)]
pub struct KubernetesService {
    api: Arc<ApiContext>,
    network: ServiceNetwork,
    bind: SocketAddr,
    serving: ServingAddress,
}

impl KubernetesService {
    /// The reconciler of the replica listening on `bind` (bound at `serving`).
    pub fn new(
        api: Arc<ApiContext>,
        network: ServiceNetwork,
        bind: SocketAddr,
        serving: ServingAddress,
    ) -> Self {
        Self {
            api,
            network,
            bind,
            serving,
        }
    }

    fn port(&self) -> i32 {
        i32::from(self.serving.get().map_or(self.bind.port(), |a| a.port()))
    }

    fn lease_prefix(&self) -> String {
        format!(
            "{}/masterleases/",
            self.api.registry.prefix().trim_end_matches('/')
        )
    }

    /// This replica's advertised IP, when it may be an endpoint.
    pub fn advertised(&self) -> Option<IpAddr> {
        advertise_address(self.network.advertise_address, self.bind.ip()).filter(|ip| {
            kubernetes_api::services::validate_endpoint_ip(&ip.to_string(), "").is_empty()
        })
    }

    /// Renews this replica's lease (unless `leaving`, which removes it) and brings the Service,
    /// the Endpoints and the EndpointSlice in line with the live leases.
    pub async fn reconcile(&self, leaving: bool) -> Result<(), ApiError> {
        let backend = self.api.registry.backend();
        let prefix = self.lease_prefix();
        if let Some(ip) = self.advertised() {
            let key = format!("{prefix}{ip}");
            let written = if leaving {
                backend.delete(&key, Condition::Always).await.map(|_| ())
            } else {
                let value = self.port().to_string().into_bytes().into();
                backend
                    .put(&key, value, Condition::Always, Some(LEASE_TTL_SECONDS))
                    .await
                    .map(|_| ())
            };
            written.map_err(|e| ApiError::internal(e.to_string()))?;
        }
        let leases = backend
            .range(RangeRequest {
                prefix: prefix.clone(),
                start: String::new(),
                limit: 0,
                revision: 0,
            })
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?;
        let mut ips: Vec<IpAddr> = leases
            .kvs
            .iter()
            .filter_map(|kv| kv.key[prefix.len()..].parse().ok())
            .collect();
        ips.sort();
        ips.dedup();
        if !leaving {
            self.ensure_service().await?;
        }
        self.ensure_endpoints(&ips).await?;
        self.ensure_endpoint_slice(&ips).await
    }

    /// The Service as kube-apiserver creates it.
    fn desired_service(&self) -> Service {
        let ip = self.network.kubernetes_service_ip().to_string();
        let mut svc = Service {
            metadata: ObjectMeta {
                name: Some(NAME.to_string()),
                namespace: Some(NAMESPACE.to_string()),
                labels: [("component", "apiserver"), ("provider", "kubernetes")]
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                ..ObjectMeta::default()
            },
            spec: ServiceSpec {
                ports: vec![ServicePort {
                    name: Some("https".to_string()),
                    protocol: Some("TCP".to_string()),
                    port: 443,
                    target_port: Some(IntOrString::Int(self.port())),
                    ..ServicePort::default()
                }],
                cluster_ip: Some(ip.clone()),
                cluster_ips: vec![ip],
                r#type: Some("ClusterIP".to_string()),
                session_affinity: Some("None".to_string()),
                ..ServiceSpec::default()
            },
            ..Service::default()
        };
        TypedObject::run_default_hooks(&mut svc);
        svc
    }

    async fn ensure_service(&self) -> Result<(), ApiError> {
        let store = self.api.store(&kubernetes_api::core::SERVICE_KIND)?;
        let desired = self.desired_service();
        match store.try_get(NAMESPACE, NAME).await? {
            None => create(&store, Box::new(desired)).await,
            Some(current) => {
                let Some(current) = current.downcast_ref::<Service>() else {
                    return Ok(());
                };
                if current.spec.ports == desired.spec.ports
                    && current.spec.r#type == desired.spec.r#type
                {
                    return Ok(());
                }
                let mut updated = current.clone();
                updated.spec.ports = desired.spec.ports;
                updated.spec.r#type = desired.spec.r#type;
                replace(&store, Box::new(updated)).await
            }
        }
    }

    async fn ensure_endpoints(&self, ips: &[IpAddr]) -> Result<(), ApiError> {
        let store = self.api.store(&kubernetes_api::core::ENDPOINTS_KIND)?;
        let subsets = if ips.is_empty() {
            Vec::new()
        } else {
            vec![EndpointSubset {
                addresses: ips
                    .iter()
                    .map(|ip| EndpointAddress {
                        ip: ip.to_string(),
                        ..EndpointAddress::default()
                    })
                    .collect(),
                ports: vec![EndpointPort {
                    name: Some("https".to_string()),
                    port: self.port(),
                    protocol: Some("TCP".to_string()),
                    ..EndpointPort::default()
                }],
                ..EndpointSubset::default()
            }]
        };
        match store.try_get(NAMESPACE, NAME).await? {
            None => {
                let endpoints = Endpoints {
                    metadata: meta(),
                    subsets,
                };
                create(&store, Box::new(endpoints)).await
            }
            Some(current) => {
                let Some(current) = current.downcast_ref::<Endpoints>() else {
                    return Ok(());
                };
                if current.subsets == subsets {
                    return Ok(());
                }
                let mut updated = current.clone();
                updated.subsets = subsets;
                replace(&store, Box::new(updated)).await
            }
        }
    }

    async fn ensure_endpoint_slice(&self, ips: &[IpAddr]) -> Result<(), ApiError> {
        let store = self
            .api
            .store(&kubernetes_api::discovery_k8s_io::ENDPOINT_SLICE_KIND)?;
        let address_type = if self.network.cluster_ip_range.network.is_ipv4() {
            "IPv4"
        } else {
            "IPv6"
        };
        let endpoints: Vec<discovery::Endpoint> = ips
            .iter()
            .filter(|ip| ip.is_ipv4() == (address_type == "IPv4"))
            .map(|ip| discovery::Endpoint {
                addresses: vec![ip.to_string()],
                conditions: discovery::EndpointConditions {
                    ready: Some(true),
                    ..Default::default()
                },
                ..Default::default()
            })
            .collect();
        let ports = vec![discovery::EndpointPort {
            name: Some("https".to_string()),
            protocol: Some("TCP".to_string()),
            port: Some(self.port()),
            ..Default::default()
        }];
        match store.try_get(NAMESPACE, NAME).await? {
            None => {
                let mut metadata = meta();
                metadata
                    .labels
                    .insert(SERVICE_NAME_LABEL.to_string(), NAME.to_string());
                let slice = discovery::EndpointSlice {
                    metadata,
                    address_type: address_type.to_string(),
                    endpoints,
                    ports,
                };
                create(&store, Box::new(slice)).await
            }
            Some(current) => {
                let Some(current) = current.downcast_ref::<discovery::EndpointSlice>() else {
                    return Ok(());
                };
                if current.endpoints == endpoints && current.ports == ports {
                    return Ok(());
                }
                let mut updated = current.clone();
                updated.endpoints = endpoints;
                updated.ports = ports;
                replace(&store, Box::new(updated)).await
            }
        }
    }

    /// Reconciles now and every [`RECONCILE_INTERVAL`] until the server stops.
    pub fn start(self) {
        let mut end = self.api.watches_end_signal();
        tokio::spawn(async move {
            loop {
                if let Err(e) = self.reconcile(false).await {
                    tracing::warn!(error = %e, "reconciling the kubernetes service failed");
                }
                tokio::select! {
                    _ = tokio::time::sleep(RECONCILE_INTERVAL) => {}
                    _ = end.wait_for(|ended| *ended) => return,
                }
            }
        });
    }
}

fn meta() -> ObjectMeta {
    ObjectMeta {
        name: Some(NAME.to_string()),
        namespace: Some(NAMESPACE.to_string()),
        ..ObjectMeta::default()
    }
}

/// Creates `object`; another replica creating it first is success.
async fn create(store: &Store, mut object: Box<dyn Object>) -> Result<(), ApiError> {
    server::apply::update_managed_fields(None, &mut *object, "kube-apiserver", "")?;
    match store.create(object, &NoAdmission, false).await {
        Ok(_) => Ok(()),
        Err(e) if e.code() == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Writes `object` over the stored one at its resourceVersion (a conflict is retried at the
/// next round).
async fn replace(store: &Store, object: Box<dyn Object>) -> Result<(), ApiError> {
    let (namespace, name) = (object.namespace().to_string(), object.name().to_string());
    store
        .update(
            &namespace,
            &name,
            &Replace(object),
            &NoAdmission,
            &NoAdmission,
            UpdateOptions::default(),
        )
        .await
        .map(|_| ())
}
