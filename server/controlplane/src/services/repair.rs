//! The repair of cluster IP and node port allocations: kube-apiserver's repair controllers
//! (`pkg/registry/core/service/ipallocator/controller/repair.go` and
//! `portallocator/controller/repair.go`), run by every replica.
//!
//! An allocation is recorded before its Service is stored and released after the Service is
//! deleted (see [`super::allocation`]), so a server killed between the two leaves a record no
//! Service holds (a leak), and a restore of the Services from a backup can leave a Service whose
//! value has no record. Every [`REPAIR_INTERVAL`] a pass reads the records, then lists the
//! Services from storage, and:
//!
//! - records a Service's cluster IP or node port that has none (kube's `ClusterIPNotAllocated`
//!   and `PortNotAllocated`, "… is not allocated; repairing");
//! - reports a value two Services hold, and a value outside the configured range (kube's
//!   `ClusterIPAlreadyAllocated`, `ClusterIPOutOfRange` and their port twins): only a person can
//!   fix those, by recreating a Service;
//! - releases a record that no Service has held for [`PASSES_BEFORE_RELEASE`] passes in a row
//!   (kube's `numRepairsBeforeLeakCleanup`): a Service being created holds its record before it
//!   is stored, so one pass that finds no Service is not a leak yet.
//!
//! kube-apiserver reports what a pass finds as Events on the Service; apiary logs them, with
//! kube's messages.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apimachinery::status::ApiError;
use kubernetes_api::core::v1::Service;
use server::endpoints::ApiContext;

use super::allocation::{cluster_ips, node_ports, owner};
use super::allocator::{AllocationError, IpAllocator, PortAllocator};

/// How often a pass runs (kube-apiserver repairs every 3 minutes).
pub const REPAIR_INTERVAL: Duration = Duration::from_secs(180);

/// How many passes in a row a record must go unheld before it is released (kube's
/// `numRepairsBeforeLeakCleanup`).
pub const PASSES_BEFORE_RELEASE: u32 = 3;

/// What one pass found and did, for logs and tests.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RepairReport {
    /// Values a Service held without a record, now recorded.
    pub recorded: Vec<String>,
    /// Values found unheld this pass and kept for a later pass.
    pub flagged: Vec<String>,
    /// Values released as leaked.
    pub released: Vec<String>,
    /// Values held by more than one Service, with their owners.
    pub duplicates: Vec<String>,
    /// Values outside the configured range, with their owners.
    pub out_of_range: Vec<String>,
}

/// The repair of one replica's allocators (see the [module docs](self)).
pub struct AllocationRepair {
    api: Arc<ApiContext>,
    ips: IpAllocator,
    ports: PortAllocator,
    /// How many passes in a row each unheld record has been seen (`ip:<ip>`, `port:<port>`).
    unheld: Mutex<HashMap<String, u32>>,
}

impl AllocationRepair {
    /// The repair of `ips` and `ports` against the Services stored through `api`.
    pub fn new(api: Arc<ApiContext>, ips: IpAllocator, ports: PortAllocator) -> Self {
        Self {
            api,
            ips,
            ports,
            unheld: Mutex::new(HashMap::new()),
        }
    }

    /// Runs a pass every [`REPAIR_INTERVAL`] in the background, the first after one interval
    /// (the bootstrap hook runs the first pass itself).
    pub fn start(self: &Arc<Self>) {
        let this = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(REPAIR_INTERVAL).await;
                if let Err(e) = this.run_once().await {
                    tracing::warn!(error = %e, "unable to repair the service IP and port allocations");
                }
            }
        });
    }

    /// One pass: the records first, then the Services from storage (a Service stored after the
    /// records were read holds a record written before it, which a later pass sees).
    pub async fn run_once(&self) -> Result<RepairReport, ApiError> {
        let storage = |e: AllocationError| ApiError::internal(e.to_string());
        let ip_records = self.ips.allocated().await.map_err(storage)?;
        let port_records = self.ports.allocated().await.map_err(storage)?;
        let store = self.api.store(&kubernetes_api::core::SERVICE_KIND)?;
        let objects = store.list_uncached("").await?;
        let services: Vec<&Service> = objects
            .iter()
            .filter_map(|o| o.downcast_ref::<Service>())
            .collect();
        Ok(repair_pass(
            &self.ips,
            &self.ports,
            &self.unheld,
            &services,
            ip_records,
            port_records,
        )
        .await)
    }
}

/// One pass over the records read and the Services listed (see the [module docs](self)).
async fn repair_pass(
    ips: &IpAllocator,
    ports: &PortAllocator,
    unheld: &Mutex<HashMap<String, u32>>,
    services: &[&Service],
    ip_records: Vec<(IpAddr, String)>,
    port_records: Vec<(i32, String)>,
) -> RepairReport {
    let mut report = RepairReport::default();
    let mut held_ips: BTreeMap<IpAddr, Vec<String>> = BTreeMap::new();
    let mut held_ports: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    for svc in services {
        for ip in cluster_ips(svc) {
            held_ips.entry(ip).or_default().push(owner(svc));
        }
        for port in node_ports(svc) {
            held_ports.entry(port).or_default().push(owner(svc));
        }
    }
    let recorded_ips: HashMap<IpAddr, String> = ip_records.into_iter().collect();
    let recorded_ports: HashMap<i32, String> = port_records.into_iter().collect();

    for (ip, owners) in &held_ips {
        let services = owners.join(", ");
        if !ips.contains(*ip) {
            tracing::warn!(
                services,
                "Cluster IP {ip} is not within the configured Service CIDR {}; please recreate service",
                ips.range()
            );
            report.out_of_range.push(format!("{ip} ({services})"));
            continue;
        }
        if owners.len() > 1 {
            tracing::warn!(
                services,
                "Cluster IP {ip} was assigned to multiple services; please recreate service"
            );
            report.duplicates.push(format!("{ip} ({services})"));
        }
        if !recorded_ips.contains_key(ip) {
            match ips.allocate(*ip, &owners[0], false).await {
                Ok(()) | Err(AllocationError::IpAllocated) => {
                    tracing::warn!(services, "Cluster IP {ip} is not allocated; repairing");
                    report.recorded.push(ip.to_string());
                }
                Err(e) => tracing::warn!(%ip, error = %e, "unable to record a cluster IP"),
            }
        }
    }
    for (port, owners) in &held_ports {
        let services = owners.join(", ");
        if !ports.contains(*port) {
            tracing::warn!(
                services,
                "Port {port} is not within the port range {}; please recreate service",
                ports.range_text()
            );
            report.out_of_range.push(format!("{port} ({services})"));
            continue;
        }
        if owners.len() > 1 {
            tracing::warn!(
                services,
                "Port {port} was assigned to multiple services; please recreate service"
            );
            report.duplicates.push(format!("{port} ({services})"));
        }
        if !recorded_ports.contains_key(port) {
            match ports.allocate(*port, &owners[0], false).await {
                Ok(()) | Err(AllocationError::PortAllocated) => {
                    tracing::warn!(services, "Port {port} is not allocated; repairing");
                    report.recorded.push(port.to_string());
                }
                Err(e) => tracing::warn!(port, error = %e, "unable to record a node port"),
            }
        }
    }

    // Records no Service holds: released on the PASSES_BEFORE_RELEASE-th pass in a row.
    let mut release_ips = Vec::new();
    let mut release_ports = Vec::new();
    {
        let mut unheld = unheld.lock().unwrap_or_else(|p| p.into_inner());
        let mut seen = HashMap::new();
        for ip in recorded_ips.keys().filter(|ip| !held_ips.contains_key(ip)) {
            let key = format!("ip:{ip}");
            let passes = unheld.get(&key).copied().unwrap_or(0) + 1;
            if passes >= PASSES_BEFORE_RELEASE {
                release_ips.push(*ip);
            } else {
                tracing::info!("the cluster IP {ip} may have leaked: flagging for later clean up");
                report.flagged.push(ip.to_string());
                seen.insert(key, passes);
            }
        }
        for port in recorded_ports
            .keys()
            .filter(|p| !held_ports.contains_key(p))
        {
            let key = format!("port:{port}");
            let passes = unheld.get(&key).copied().unwrap_or(0) + 1;
            if passes >= PASSES_BEFORE_RELEASE {
                release_ports.push(*port);
            } else {
                tracing::info!("the node port {port} may have leaked: flagging for later clean up");
                report.flagged.push(port.to_string());
                seen.insert(key, passes);
            }
        }
        // A record held again, or released, starts over.
        *unheld = seen;
    }
    for ip in release_ips {
        tracing::warn!("the cluster IP {ip} appears to have leaked: cleaning up");
        match ips.release(ip).await {
            Ok(()) => report.released.push(ip.to_string()),
            Err(e) => tracing::warn!(%ip, error = %e, "unable to release a leaked cluster IP"),
        }
    }
    for port in release_ports {
        tracing::warn!("the node port {port} appears to have leaked: cleaning up");
        match ports.release(port).await {
            Ok(()) => report.released.push(port.to_string()),
            Err(e) => tracing::warn!(port, error = %e, "unable to release a leaked node port"),
        }
    }
    report.flagged.sort();
    report.released.sort();
    report.recorded.sort();
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use apimachinery::meta::ObjectMeta;
    use kubernetes_api::core::v1::{ServicePort, ServiceSpec};
    use server::genericserver::service_network::IpNet;

    fn service(name: &str, ip: &str, node_port: Option<i32>) -> Service {
        Service {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                ..ObjectMeta::default()
            },
            spec: ServiceSpec {
                r#type: Some(
                    if node_port.is_some() {
                        "NodePort"
                    } else {
                        "ClusterIP"
                    }
                    .into(),
                ),
                cluster_ip: Some(ip.into()),
                cluster_ips: vec![ip.into()],
                ports: vec![ServicePort {
                    port: 80,
                    node_port,
                    ..ServicePort::default()
                }],
                ..ServiceSpec::default()
            },
            ..Service::default()
        }
    }

    /// The pass without a store: the allocators over an embedded backend, the Services given.
    struct Fixture {
        _dir: tempfile::TempDir,
        ips: IpAllocator,
        ports: PortAllocator,
        unheld: Mutex<HashMap<String, u32>>,
    }

    impl Fixture {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            let backend: Arc<dyn storage::backend::Backend> = Arc::new(
                storage::embedded::EmbeddedBackend::open_dir(dir.path())
                    .unwrap_or_else(|e| panic!("{e}")),
            );
            let range = IpNet::parse("10.0.0.0/24").unwrap_or_else(|| panic!("a range"));
            Self {
                _dir: dir,
                ips: IpAllocator::new(Arc::clone(&backend), "/registry", range),
                ports: PortAllocator::new(backend, "/registry", 30000..=32767),
                unheld: Mutex::new(HashMap::new()),
            }
        }

        async fn pass(&self, services: &[&Service]) -> RepairReport {
            let ip_records = self.ips.allocated().await.unwrap_or_default();
            let port_records = self.ports.allocated().await.unwrap_or_default();
            repair_pass(
                &self.ips,
                &self.ports,
                &self.unheld,
                services,
                ip_records,
                port_records,
            )
            .await
        }
    }

    #[tokio::test]
    async fn leaks_are_released_on_the_third_pass_and_missing_records_restored() {
        let f = Fixture::new();
        // A leak: recorded, no Service (a server killed between the record and the Service).
        f.ips
            .allocate(
                "10.0.0.50".parse().unwrap_or_else(|e| panic!("{e}")),
                "ns/gone",
                false,
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        f.ports
            .allocate(30500, "ns/gone", false)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        // A Service whose values have no records (restored from a backup).
        let restored = service("restored", "10.0.0.60", Some(30600));
        let first = f.pass(&[&restored]).await;
        assert_eq!(first.recorded, ["10.0.0.60", "30600"]);
        assert_eq!(first.flagged, ["10.0.0.50", "30500"]);
        assert!(first.released.is_empty());
        let ips: Vec<String> = f
            .ips
            .allocated()
            .await
            .unwrap_or_default()
            .into_iter()
            .map(|(ip, owner)| format!("{ip}={owner}"))
            .collect();
        assert_eq!(ips, ["10.0.0.50=ns/gone", "10.0.0.60=ns/restored"]);
        let second = f.pass(&[&restored]).await;
        assert!(second.recorded.is_empty());
        assert_eq!(second.flagged, ["10.0.0.50", "30500"]);
        let third = f.pass(&[&restored]).await;
        assert_eq!(third.released, ["10.0.0.50", "30500"]);
        assert!(third.flagged.is_empty());
        assert_eq!(f.ips.allocated().await.unwrap_or_default().len(), 1);
        assert_eq!(f.ports.allocated().await.unwrap_or_default().len(), 1);
    }

    #[tokio::test]
    async fn a_record_held_again_starts_over() {
        let f = Fixture::new();
        let ip = "10.0.0.70".parse().unwrap_or_else(|e| panic!("{e}"));
        f.ips
            .allocate(ip, "ns/slow", false)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let slow = service("slow", "10.0.0.70", None);
        // Two passes before the Service is stored, one after, two more without it: still there.
        assert_eq!(f.pass(&[]).await.flagged, ["10.0.0.70"]);
        assert_eq!(f.pass(&[]).await.flagged, ["10.0.0.70"]);
        assert!(f.pass(&[&slow]).await.flagged.is_empty());
        assert_eq!(f.pass(&[]).await.flagged, ["10.0.0.70"]);
        assert_eq!(f.pass(&[]).await.flagged, ["10.0.0.70"]);
        assert_eq!(f.pass(&[]).await.released, ["10.0.0.70"]);
    }

    #[tokio::test]
    async fn duplicates_and_values_out_of_range_are_reported_not_changed() {
        let f = Fixture::new();
        let a = service("a", "10.0.0.80", Some(30800));
        let b = service("b", "10.0.0.80", Some(30800));
        let outside = service("outside", "10.9.0.1", Some(40000));
        let report = f.pass(&[&a, &b, &outside]).await;
        assert_eq!(
            report.duplicates,
            ["10.0.0.80 (ns/a, ns/b)", "30800 (ns/a, ns/b)"]
        );
        assert_eq!(
            report.out_of_range,
            ["10.9.0.1 (ns/outside)", "40000 (ns/outside)"]
        );
        assert_eq!(report.recorded, ["10.0.0.80", "30800"]);
    }
}
