//! The allocators on one store shared by two "replicas", and every case of the resolver.

use std::collections::{BTreeMap, HashSet};
use std::net::IpAddr;
use std::sync::Arc;

use apimachinery::admission::ObjectReader;
use apimachinery::runtime::{Object, TypedObject};
use serde_json::{Value, json};
use server::genericserver::service_network::{IpNet, ServingAddress};
use server::webhook::ServiceResolver;

use super::allocator::{AllocationError, IpAllocator, PortAllocator};
use super::resolver::{ClusterServiceResolver, Loopback};

fn backend() -> (tempfile::TempDir, Arc<dyn storage::backend::Backend>) {
    let dir = tempfile::tempdir().unwrap();
    let backend = storage::embedded::EmbeddedBackend::open_dir(dir.path()).unwrap();
    (dir, Arc::new(backend))
}

#[tokio::test]
async fn two_replicas_never_allocate_the_same_ip() {
    let (_dir, backend) = backend();
    let range = IpNet::parse("10.0.0.0/27").unwrap();
    let a = IpAllocator::new(Arc::clone(&backend), "/registry", range);
    let b = IpAllocator::new(Arc::clone(&backend), "/registry/", range);
    // Both ask for the same address at once: exactly one gets it.
    let ip: IpAddr = "10.0.0.9".parse().unwrap();
    let (ra, rb) = tokio::join!(a.allocate(ip, "ns/a", false), b.allocate(ip, "ns/b", false));
    assert_eq!(
        [ra.is_ok(), rb.is_ok()].iter().filter(|ok| **ok).count(),
        1,
        "{ra:?} {rb:?}"
    );
    let err = if ra.is_err() { ra } else { rb }.unwrap_err();
    assert_eq!(err.to_string(), "provided IP is already allocated");
    // 29 more addresses fill the range (32 less the network, broadcast and .9), spread
    // over both replicas concurrently, all different.
    let mut tasks = Vec::new();
    for i in 0..29 {
        let allocator = if i % 2 == 0 { a.clone() } else { b.clone() };
        tasks.push(tokio::spawn(async move {
            allocator.allocate_next(&format!("ns/s{i}"), false).await
        }));
    }
    let mut seen = HashSet::new();
    for task in tasks {
        let ip = task.await.unwrap().unwrap();
        assert!(
            ip != "10.0.0.0".parse::<IpAddr>().unwrap()
                && ip != "10.0.0.31".parse::<IpAddr>().unwrap()
        );
        assert!(seen.insert(ip), "{ip} twice");
    }
    assert_eq!(
        a.allocate_next("ns/full", false).await,
        Err(AllocationError::Full)
    );
    // A dry run checks without taking; a release gives the address back.
    a.release(ip).await.unwrap();
    b.allocate(ip, "ns/c", true).await.unwrap();
    assert_eq!(a.allocate_next("ns/d", false).await.unwrap(), ip);
    assert_eq!(
        a.allocate("10.0.1.1".parse().unwrap(), "ns/e", false)
            .await
            .unwrap_err()
            .to_string(),
        "the provided IP (10.0.1.1) is not in the valid range. The range of valid IPs is 10.0.0.0/27"
    );
    assert!(matches!(
        a.allocate("10.0.0.31".parse().unwrap(), "ns/e", false)
            .await,
        Err(AllocationError::IpNotInRange { .. })
    ));
}

#[tokio::test]
async fn node_ports_are_allocated_once() {
    let (_dir, backend) = backend();
    let a = PortAllocator::new(Arc::clone(&backend), "/registry", 30000..=30019);
    let b = PortAllocator::new(backend, "/registry", 30000..=30019);
    a.allocate(30005, "ns/a", false).await.unwrap();
    assert_eq!(
        b.allocate(30005, "ns/b", false)
            .await
            .unwrap_err()
            .to_string(),
        "provided port is already allocated"
    );
    assert_eq!(
        b.allocate(31000, "ns/b", false)
            .await
            .unwrap_err()
            .to_string(),
        "provided port is not in the valid range. The range of valid ports is 30000-30019"
    );
    let mut seen = HashSet::from([30005]);
    for i in 0..19 {
        let port = if i % 2 == 0 { &a } else { &b }
            .allocate_next("ns/x", false)
            .await
            .unwrap();
        assert!((30000..=30019).contains(&port));
        assert!(seen.insert(port));
    }
    assert_eq!(
        a.allocate_next("ns/y", false).await,
        Err(AllocationError::Full)
    );
    b.release(30005).await.unwrap();
    assert_eq!(a.allocate_next("ns/y", false).await, Ok(30005));
}

/// Objects by (kind, namespace, name), read as the watch caches are.
#[derive(Default)]
struct Objects(BTreeMap<(String, String, String), Box<dyn Object>>);

impl Objects {
    fn add<T: TypedObject + serde::de::DeserializeOwned + Object>(mut self, value: Value) -> Self {
        let mut object: T = serde_json::from_value(value).unwrap();
        TypedObject::run_default_hooks(&mut object);
        let dyn_object: &dyn Object = &object;
        let key = (
            T::KIND.to_string(),
            dyn_object.namespace().to_string(),
            dyn_object.name().to_string(),
        );
        self.0.insert(key, Box::new(object));
        self
    }
}

impl ObjectReader for Objects {
    fn resolve(
        &self,
        _: &str,
        _: &str,
        _: &str,
    ) -> Option<&'static apimachinery::resource::ResourceInfo> {
        None
    }
    fn cached(
        &self,
        _group: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Box<dyn Object>> {
        self.0
            .get(&(kind.to_string(), namespace.to_string(), name.to_string()))
            .map(|o| o.clone_object())
    }
    fn cached_list(&self, _group: &str, kind: &str, namespace: &str) -> Vec<Box<dyn Object>> {
        self.0
            .iter()
            .filter(|((k, ns, _), _)| k == kind && ns == namespace)
            .map(|(_, o)| o.clone_object())
            .collect()
    }
}

fn service(name: &str, spec: Value) -> Value {
    json!({"metadata": {"name": name, "namespace": "ns"}, "spec": spec})
}

fn objects() -> Objects {
    use kubernetes_api::core::v1::{Endpoints, Service};
    use kubernetes_api::discovery_k8s_io::v1::EndpointSlice;
    Objects::default()
        .add::<Service>(service("api", json!({"clusterIP": "10.0.0.20", "clusterIPs": ["10.0.0.20"], "ipFamilies": ["IPv4"],
            "ports": [{"name": "https", "port": 443, "targetPort": 8443}]})))
        .add::<Service>(service("lb", json!({"type": "LoadBalancer", "clusterIP": "10.0.0.21", "ports": [{"port": 8443}]})))
        .add::<Service>(service("ext", json!({"type": "ExternalName", "externalName": "api.example.com"})))
        .add::<Service>(service("headless", json!({"clusterIP": "None", "clusterIPs": ["None"], "ports": [{"port": 443}]})))
        .add::<Service>(service("manual", json!({"clusterIP": "10.0.0.22", "ports": [{"name": "web", "port": 443, "targetPort": 9443}]})))
        .add::<Service>(service("empty", json!({"clusterIP": "10.0.0.23", "ports": [{"port": 443}]})))
        .add::<EndpointSlice>(json!({"metadata": {"name": "api-1", "namespace": "ns", "labels": {"kubernetes.io/service-name": "api"}},
            "addressType": "IPv4", "ports": [{"name": "https", "port": 8443}],
            "endpoints": [{"addresses": ["10.1.0.7"], "conditions": {"ready": false}}, {"addresses": ["10.1.0.8"], "conditions": {"ready": true}}]}))
        .add::<EndpointSlice>(json!({"metadata": {"name": "empty-1", "namespace": "ns", "labels": {"kubernetes.io/service-name": "empty"}},
            "addressType": "IPv4", "ports": [{"name": "", "port": 8443}],
            "endpoints": [{"addresses": ["10.1.0.9"], "conditions": {"ready": false}}]}))
        .add::<Endpoints>(json!({"metadata": {"name": "manual", "namespace": "ns"},
            "subsets": [{"addresses": [{"ip": "192.168.7.5"}], "ports": [{"name": "web", "port": 9443}]}]}))
}

fn resolver(routing: bool) -> ClusterServiceResolver {
    let serving = ServingAddress::default();
    serving.set("127.0.0.1:40123".parse().unwrap());
    let loopback = Loopback::new("0.0.0.0:0".parse().unwrap(), serving);
    ClusterServiceResolver::new(Arc::new(objects()), routing, Some(loopback))
}

fn resolve(routing: bool, name: &str, port: i32) -> Result<String, String> {
    resolver(routing)
        .resolve("ns", name, port)
        .map(|u| u.to_string())
}

#[test]
fn cluster_routing_resolves_as_kube_aggregator() {
    assert_eq!(
        resolve(false, "api", 443),
        Ok("https://10.0.0.20/".to_string())
    );
    assert_eq!(
        resolve(false, "lb", 8443),
        Ok("https://10.0.0.21:8443/".to_string())
    );
    assert_eq!(
        resolve(false, "ext", 6443),
        Ok("https://api.example.com:6443/".to_string())
    );
    assert_eq!(
        resolve(false, "headless", 443),
        Err(r#"cannot route to service with ClusterIP "None""#.to_string())
    );
    assert_eq!(
        resolve(false, "api", 8443),
        Err(r#"no service port 8443 found for service "api""#.to_string())
    );
    assert_eq!(
        resolve(false, "missing", 443),
        Err(r#"service "missing" not found"#.to_string())
    );
}

#[test]
fn endpoint_routing_picks_a_ready_endpoint_at_the_target_port() {
    for _ in 0..20 {
        assert_eq!(
            resolve(true, "api", 443),
            Ok("https://10.1.0.8:8443/".to_string())
        );
    }
    assert_eq!(
        resolve(true, "manual", 443),
        Ok("https://192.168.7.5:9443/".to_string()),
        "from Endpoints without slices"
    );
    assert_eq!(
        resolve(true, "empty", 443),
        Err(r#"no endpoints available for service "empty""#.to_string())
    );
    assert_eq!(
        resolve(true, "lb", 8443),
        Err(r#"no endpoints available for service "lb""#.to_string())
    );
    assert_eq!(
        resolve(true, "ext", 443),
        Err(r#"unsupported service type "ExternalName""#.to_string())
    );
    assert_eq!(
        resolve(true, "api", 80),
        Err(r#"no service port 80 found for service "api""#.to_string())
    );
}

#[test]
fn the_kubernetes_service_is_the_server_itself() {
    let r = resolver(false);
    assert_eq!(
        r.resolve("default", "kubernetes", 443).unwrap().as_str(),
        "https://127.0.0.1:40123/"
    );
    assert_eq!(
        r.resolve("default", "kubernetes", 6443),
        Err(r#"service "kubernetes" not found"#.to_string()),
        "only port 443 is the loopback"
    );
}

/// One Service, replaceable, read as the watch cache is: counts the reads that decode it.
#[derive(Default)]
struct ChangingService {
    service: parking_lot::Mutex<Option<kubernetes_api::core::v1::Service>>,
    decodes: std::sync::atomic::AtomicUsize,
}

impl ChangingService {
    fn set(&self, version: &str, external_name: &str) {
        let svc = serde_json::from_value(json!({
            "metadata": {"name": "api", "namespace": "ns", "resourceVersion": version},
            "spec": {"type": "ExternalName", "externalName": external_name}}))
        .unwrap();
        *self.service.lock() = Some(svc);
    }
}

impl ObjectReader for ChangingService {
    fn resolve(
        &self,
        _: &str,
        _: &str,
        _: &str,
    ) -> Option<&'static apimachinery::resource::ResourceInfo> {
        None
    }
    fn cached(&self, _: &str, _: &str, _: &str, _: &str) -> Option<Box<dyn Object>> {
        self.decodes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.service
            .lock()
            .clone()
            .map(|s| Box::new(s) as Box<dyn Object>)
    }
    fn cached_list(&self, _: &str, _: &str, _: &str) -> Vec<Box<dyn Object>> {
        Vec::new()
    }
    fn cached_resource_version(&self, _: &str, _: &str, _: &str, _: &str) -> Option<u64> {
        let svc = self.service.lock();
        svc.as_ref()?
            .metadata
            .resource_version
            .as_deref()?
            .parse()
            .ok()
    }
}

#[test]
fn a_service_is_decoded_again_only_when_it_changes() {
    let objects = Arc::new(ChangingService::default());
    let r = ClusterServiceResolver::new(objects.clone(), false, None);
    let decodes = || objects.decodes.load(std::sync::atomic::Ordering::SeqCst);
    let resolve = || r.resolve("ns", "api", 443).map(|u| u.to_string());
    assert_eq!(resolve(), Err(r#"service "api" not found"#.to_string()));
    objects.set("5", "a.example.com");
    let before = decodes();
    for _ in 0..3 {
        assert_eq!(resolve(), Ok("https://a.example.com/".to_string()));
    }
    assert_eq!(decodes(), before + 1, "decoded once for three requests");
    // Each port keeps its own address.
    let at = |port| r.resolve("ns", "api", port).map(|u| u.to_string());
    assert_eq!(at(8443), Ok("https://a.example.com:8443/".to_string()));
    assert_eq!(at(443), Ok("https://a.example.com/".to_string()));
    assert_eq!(at(8443), Ok("https://a.example.com:8443/".to_string()));
    assert_eq!(decodes(), before + 1, "the other port decoded nothing");
    objects.set("9", "b.example.com");
    assert_eq!(resolve(), Ok("https://b.example.com/".to_string()));
    assert_eq!(resolve(), Ok("https://b.example.com/".to_string()));
    assert_eq!(decodes(), before + 2, "decoded again once it changed");
    *objects.service.lock() = None;
    assert_eq!(
        resolve(),
        Err(r#"service "api" not found"#.to_string()),
        "a deleted Service is not served from the memo"
    );
}
