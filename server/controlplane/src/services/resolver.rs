//! The one service resolver of the control plane: where a `service{namespace, name, port}`
//! reference (admission and conversion webhooks, aggregated APIs) is reached, as
//! kube-apiserver resolves it (kube-aggregator's `pkg/apiserver/resolvers.go` over
//! k8s.io/apiserver's `pkg/util/proxy`), from the watch caches:
//!
//! - `default/kubernetes` port 443 is the server itself (its loopback address), as
//!   kube-apiserver's `loopbackResolver` answers;
//! - without `--enable-aggregator-routing` (`ResolveCluster`): a `ClusterIP`, `NodePort` or
//!   `LoadBalancer` Service resolves to `https://<clusterIP>:<port>` (a headless one is
//!   refused), an `ExternalName` one to `https://<externalName>:<port>`;
//! - with it (`ResolveEndpoint`): a random ready endpoint of the Service's EndpointSlices
//!   serving the port's name, at the slice's port (`https://<ip>:<targetPort>`). Without
//!   slices, the Endpoints object of the Service is read the same way (apiary runs no
//!   EndpointSlice mirroring controller, so Endpoints written by hand are read directly).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use parking_lot::Mutex;

use apimachinery::admission::ObjectReader;
use kubernetes_api::core::v1::{Endpoints, Service, ServicePort};
use kubernetes_api::discovery_k8s_io::v1::EndpointSlice;
use server::genericserver::service_network::ServingAddress;
use server::webhook::ServiceResolver;

/// The label naming the Service an EndpointSlice belongs to.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// Where the server itself is reached: its bind address (a loopback address when it listens
/// on every address) and its bound port.
#[derive(Clone, Debug)]
pub struct Loopback {
    bind: SocketAddr,
    serving: ServingAddress,
}

impl Loopback {
    /// The server listening on `bind` (the port may be 0), bound at `serving`.
    pub fn new(bind: SocketAddr, serving: ServingAddress) -> Self {
        Self { bind, serving }
    }

    /// `https://<host>:<port>` of the server.
    pub fn url(&self) -> Option<reqwest::Url> {
        let port = self.serving.get().map_or(self.bind.port(), |a| a.port());
        let ip = match self.bind.ip() {
            IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        reqwest::Url::parse(&format!("https://{}", SocketAddr::new(ip, port))).ok()
    }
}

/// The control plane's [`ServiceResolver`] over the watch caches of Services, EndpointSlices
/// and Endpoints (see the module documentation).
///
/// The Services it reads are kept decoded until their resourceVersion changes, as
/// kube-aggregator reads them from its informer, with the address each port resolved to
/// without endpoint routing: the aggregator resolves an APIService's Service on every proxied
/// request, and decoding it from the watch cache each time cost about 9 % of main's
/// instructions per proxied GET, building its URL 3 % more (BENCHMARKS.md, "API aggregation").
pub struct ClusterServiceResolver {
    objects: Arc<dyn ObjectReader>,
    aggregator_routing: bool,
    loopback: Option<Loopback>,
    services: Mutex<DecodedServices>,
}

/// Services decoded by the resolver, by namespace and name, with their resourceVersions.
#[derive(Default)]
struct DecodedServices {
    by_namespace: HashMap<String, HashMap<String, Decoded>>,
    len: usize,
}

/// One decoded Service and what it resolved to.
struct Decoded {
    version: u64,
    service: Arc<Service>,
    /// The addresses `resolve_cluster` gave for it, by port: they depend on nothing else, and
    /// building the URL (`Url::parse`) was half of what a resolution cost.
    cluster_urls: Vec<(i32, reqwest::Url)>,
}

impl DecodedServices {
    /// At most this many Services are kept: the ones webhooks and APIServices name are few;
    /// past it the memo starts again, empty.
    const MAX: usize = 1024;

    fn decoded(&self, namespace: &str, name: &str, version: u64) -> Option<&Decoded> {
        let decoded = self.by_namespace.get(namespace)?.get(name)?;
        (decoded.version == version).then_some(decoded)
    }

    fn get(&self, namespace: &str, name: &str, version: u64) -> Option<Arc<Service>> {
        self.decoded(namespace, name, version)
            .map(|d| Arc::clone(&d.service))
    }

    fn cluster_url(
        &self,
        namespace: &str,
        name: &str,
        version: u64,
        port: i32,
    ) -> Option<reqwest::Url> {
        let decoded = self.decoded(namespace, name, version)?;
        decoded
            .cluster_urls
            .iter()
            .find(|(p, _)| *p == port)
            .map(|(_, url)| url.clone())
    }

    fn insert(&mut self, namespace: &str, name: &str, version: u64, svc: Arc<Service>) {
        if self.len >= Self::MAX {
            *self = Self::default();
        }
        let decoded = Decoded {
            version,
            service: svc,
            cluster_urls: Vec::new(),
        };
        let replaced = self
            .by_namespace
            .entry(namespace.to_string())
            .or_default()
            .insert(name.to_string(), decoded);
        if replaced.is_none() {
            self.len += 1;
        }
    }

    /// Keeps what `svc` (kept before) resolved to at `port`.
    fn remember_cluster_url(&mut self, svc: &Arc<Service>, port: i32, url: &reqwest::Url) {
        let (Some(namespace), Some(name)) = (&svc.metadata.namespace, &svc.metadata.name) else {
            return;
        };
        let Some(decoded) = self
            .by_namespace
            .get_mut(namespace)
            .and_then(|m| m.get_mut(name))
            .filter(|d| Arc::ptr_eq(&d.service, svc))
        else {
            return;
        };
        if decoded.cluster_urls.len() < 8 && !decoded.cluster_urls.iter().any(|(p, _)| *p == port) {
            decoded.cluster_urls.push((port, url.clone()));
        }
    }
}

impl std::fmt::Debug for ClusterServiceResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterServiceResolver")
            .field("aggregator_routing", &self.aggregator_routing)
            .field("loopback", &self.loopback)
            .finish_non_exhaustive()
    }
}

/// Go's `net.JoinHostPort`.
fn join_host_port(host: &str, port: i32) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

fn https(host_port: &str) -> Result<reqwest::Url, String> {
    reqwest::Url::parse(&format!("https://{host_port}"))
        .map_err(|e| format!("invalid service address {host_port}: {e}"))
}

/// `findServicePort`.
fn find_service_port(svc: &Service, port: i32) -> Result<&ServicePort, String> {
    svc.spec
        .ports
        .iter()
        .find(|p| p.port == port)
        .ok_or_else(|| {
            format!(
                "no service port {port} found for service {:?}",
                svc.metadata.name.as_deref().unwrap_or("")
            )
        })
}

impl ClusterServiceResolver {
    /// A resolver reading `objects`; `aggregator_routing` resolves to endpoints; `loopback`
    /// is the server itself, for `default/kubernetes:443`.
    pub fn new(
        objects: Arc<dyn ObjectReader>,
        aggregator_routing: bool,
        loopback: Option<Loopback>,
    ) -> Self {
        Self {
            objects,
            aggregator_routing,
            loopback,
            services: Mutex::default(),
        }
    }

    /// The Service as the watch cache holds it: the one decoded before while its
    /// resourceVersion is the same, else decoded now (and kept).
    fn service(&self, namespace: &str, name: &str) -> Result<Arc<Service>, String> {
        let not_found = || format!("service {name:?} not found");
        let version = self
            .objects
            .cached_resource_version("", "Service", namespace, name);
        if let Some(svc) = version.and_then(|v| self.services.lock().get(namespace, name, v)) {
            return Ok(svc);
        }
        let svc = self
            .objects
            .cached("", "Service", namespace, name)
            .and_then(|o| o.downcast_ref::<Service>().cloned())
            .map(Arc::new)
            .ok_or_else(not_found)?;
        // Kept under the version the decoded object states: the cache may have moved on
        // between the two reads.
        if version.is_some()
            && let Some(v) = svc
                .metadata
                .resource_version
                .as_deref()
                .and_then(|v| v.parse().ok())
        {
            self.services
                .lock()
                .insert(namespace, name, v, Arc::clone(&svc));
        }
        Ok(svc)
    }

    /// kube's `ResolveCluster`.
    fn resolve_cluster(svc: &Service, port: i32) -> Result<reqwest::Url, String> {
        let ty = svc.spec.r#type.as_deref().unwrap_or("");
        let cluster_ip = svc.spec.cluster_ip.as_deref().unwrap_or("");
        match ty {
            "ClusterIP" if cluster_ip == "None" => {
                Err(r#"cannot route to service with ClusterIP "None""#.to_string())
            }
            "ClusterIP" | "LoadBalancer" | "NodePort" => {
                let svc_port = find_service_port(svc, port)?;
                https(&join_host_port(cluster_ip, svc_port.port))
            }
            "ExternalName" => https(&join_host_port(
                svc.spec.external_name.as_deref().unwrap_or(""),
                port,
            )),
            other => Err(format!("unsupported service type {other:?}")),
        }
    }

    /// kube's `ResolveEndpoint`.
    fn resolve_endpoint(&self, svc: &Service, port: i32) -> Result<reqwest::Url, String> {
        let ty = svc.spec.r#type.as_deref().unwrap_or("");
        if !matches!(ty, "ClusterIP" | "LoadBalancer" | "NodePort") {
            return Err(format!("unsupported service type {ty:?}"));
        }
        let svc_port = find_service_port(svc, port)?;
        let port_name = svc_port.name.as_deref().unwrap_or("");
        let namespace = svc.metadata.namespace.as_deref().unwrap_or("");
        let name = svc.metadata.name.as_deref().unwrap_or("");
        let slices: Vec<EndpointSlice> = self
            .objects
            .cached_list("discovery.k8s.io", "EndpointSlice", namespace)
            .into_iter()
            .filter_map(|o| o.downcast_ref::<EndpointSlice>().cloned())
            .filter(|s| {
                s.metadata
                    .labels
                    .get(SERVICE_NAME_LABEL)
                    .map(String::as_str)
                    == Some(name)
            })
            .collect();
        let preferred = svc
            .spec
            .ip_families
            .first()
            .map(String::as_str)
            .unwrap_or("");
        let found = if slices.is_empty() {
            self.objects
                .cached("", "Endpoints", namespace, name)
                .and_then(|o| {
                    o.downcast_ref::<Endpoints>()
                        .map(|ep| random_from_endpoints(ep, port_name))
                })
                .flatten()
        } else {
            random_endpoint(slices, port_name, preferred)
        };
        match found {
            Some(host_port) => https(&host_port),
            None => Err(format!("no endpoints available for service {name:?}")),
        }
    }
}

/// A random number below `n` (`n > 0`).
fn random_below(n: usize) -> usize {
    (uuid::Uuid::new_v4().as_u128() % n as u128) as usize
}

/// kube's `RandomEndpoint`: slices of the preferred family first, in random order; in the
/// first slice with the named port and endpoints, a ready endpoint from a random start.
fn random_endpoint(
    mut slices: Vec<EndpointSlice>,
    port_name: &str,
    preferred: &str,
) -> Option<String> {
    let mut order: Vec<(bool, usize, EndpointSlice)> = slices
        .drain(..)
        .map(|s| (s.address_type != preferred, random_below(usize::MAX), s))
        .collect();
    order.sort_by_key(|(other_family, r, _)| (*other_family, *r));
    for (_, _, slice) in order {
        for port in &slice.ports {
            if port.name.as_deref() != Some(port_name) {
                continue;
            }
            let Some(number) = port.port else { continue };
            if slice.endpoints.is_empty() {
                continue;
            }
            let offset = random_below(slice.endpoints.len());
            for i in 0..slice.endpoints.len() {
                let ep = &slice.endpoints[(i + offset) % slice.endpoints.len()];
                if ep.conditions.ready == Some(false) {
                    continue;
                }
                if let Some(ip) = ep.addresses.first() {
                    return Some(join_host_port(ip, number));
                }
            }
        }
    }
    None
}

/// The same over an Endpoints object: a random ready address of the first subset with the
/// named port.
fn random_from_endpoints(ep: &Endpoints, port_name: &str) -> Option<String> {
    for subset in &ep.subsets {
        for port in &subset.ports {
            if port.name.as_deref().unwrap_or("") != port_name || subset.addresses.is_empty() {
                continue;
            }
            let address = &subset.addresses[random_below(subset.addresses.len())];
            return Some(join_host_port(&address.ip, port.port));
        }
    }
    None
}

impl ServiceResolver for ClusterServiceResolver {
    fn resolve(&self, namespace: &str, name: &str, port: i32) -> Result<reqwest::Url, String> {
        if namespace == "default"
            && name == "kubernetes"
            && port == 443
            && let Some(url) = self.loopback.as_ref().and_then(Loopback::url)
        {
            return Ok(url);
        }
        if self.aggregator_routing {
            let svc = self.service(namespace, name)?;
            return self.resolve_endpoint(&svc, port);
        }
        let version = self
            .objects
            .cached_resource_version("", "Service", namespace, name);
        if let Some(url) =
            version.and_then(|v| self.services.lock().cluster_url(namespace, name, v, port))
        {
            return Ok(url);
        }
        let svc = self.service(namespace, name)?;
        let url = Self::resolve_cluster(&svc, port)?;
        self.services.lock().remember_cluster_url(&svc, port, &url);
        Ok(url)
    }
}
