//! Services, Endpoints and EndpointSlices through the REST handlers: defaults, cluster IPs
//! and node ports allocated (a taken or out-of-range value refused with kube-apiserver's
//! message, freed on delete or when an update stops using it), immutability of the cluster
//! IP, dry runs that take nothing, Endpoints refusing loopback addresses, the printers, and the
//! repair of leaked and missing allocation records over the stored Services.

mod rest_common;

use rest_common::Harness;
use serde_json::{Value, json};
use server::genericserver::service_network::ServiceNetwork;

const SERVICES: &str = "/api/v1/namespaces/default/services";
const ENDPOINTS: &str = "/api/v1/namespaces/default/endpoints";
const SLICES: &str = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices";

async fn harness() -> Harness {
    let h = Harness::new().await;
    let network = ServiceNetwork::parse("10.0.0.0/24", "30000-30099", None, false).unwrap();
    controlplane::services::install_allocation(&h.ctx, &network).unwrap();
    h
}

fn service(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
}

fn message(r: &rest_common::Reply) -> String {
    r.json()["message"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn a_cluster_ip_is_allocated_and_defaults_applied() {
    let h = harness().await;
    let r = h
        .post(
            SERVICES,
            &service(
                "web",
                json!({"selector": {"app": "web"}, "ports": [{"port": 80}]}),
            ),
        )
        .await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let svc = r.json();
    let ip = svc["spec"]["clusterIP"].as_str().unwrap().to_string();
    assert!(
        ip.starts_with("10.0.0.") && ip != "10.0.0.0" && ip != "10.0.0.1" && ip != "10.0.0.255",
        "{ip}"
    );
    assert_eq!(svc["spec"]["clusterIPs"], json!([ip]));
    assert_eq!(svc["spec"]["type"], "ClusterIP");
    assert_eq!(svc["spec"]["sessionAffinity"], "None");
    assert_eq!(svc["spec"]["ipFamilies"], json!(["IPv4"]));
    assert_eq!(svc["spec"]["ipFamilyPolicy"], "SingleStack");
    assert_eq!(svc["spec"]["internalTrafficPolicy"], "Cluster");
    assert_eq!(
        svc["spec"]["ports"][0],
        json!({"port": 80, "protocol": "TCP", "targetPort": 80})
    );
    assert_eq!(svc["status"], json!({"loadBalancer": {}}));

    // Another Service asking for the same address is refused; out of range too.
    let r = h
        .post(
            SERVICES,
            &service("copy", json!({"clusterIP": ip, "ports": [{"port": 80}]})),
        )
        .await;
    assert_eq!(r.status, 422);
    assert_eq!(
        message(&r),
        format!(
            "Service \"copy\" is invalid: spec.clusterIPs: Invalid value: [\"{ip}\"]: failed to allocate IP {ip}: provided IP is already allocated"
        )
    );
    let r = h
        .post(
            SERVICES,
            &service(
                "far",
                json!({"clusterIP": "10.0.1.5", "ports": [{"port": 80}]}),
            ),
        )
        .await;
    assert_eq!(
        message(&r),
        "Service \"far\" is invalid: spec.clusterIPs: Invalid value: [\"10.0.1.5\"]: failed to allocate IP 10.0.1.5: the provided IP (10.0.1.5) is not in the valid range. The range of valid IPs is 10.0.0.0/24"
    );
    // A dry run takes nothing; a refused create gives back what it took.
    let r = h
        .post(
            &format!("{SERVICES}?dryRun=All"),
            &service(
                "dry",
                json!({"clusterIP": "10.0.0.77", "ports": [{"port": 80}]}),
            ),
        )
        .await;
    assert_eq!(r.status, 201);
    let r = h
        .post(
            SERVICES,
            &service(
                "Bad",
                json!({"clusterIP": "10.0.0.78", "ports": [{"port": 80}]}),
            ),
        )
        .await;
    assert_eq!(r.status, 422);
    for (name, ip) in [("dry", "10.0.0.77"), ("bad", "10.0.0.78")] {
        let r = h
            .post(
                SERVICES,
                &service(name, json!({"clusterIP": ip, "ports": [{"port": 80}]})),
            )
            .await;
        assert_eq!(r.status, 201, "{name}: {}", message(&r));
    }

    // The cluster IP may not change; an update leaving it out keeps it.
    let mut changed = svc.clone();
    changed["spec"]["clusterIP"] = json!("10.0.0.99");
    let r = h.put(&format!("{SERVICES}/web"), &changed).await;
    assert_eq!(r.status, 422);
    assert_eq!(
        message(&r),
        "Service \"web\" is invalid: spec.clusterIPs[0]: Invalid value: [\"10.0.0.99\"]: may not change once set"
    );
    let r = h
        .patch(
            &format!("{SERVICES}/web"),
            "application/merge-patch+json",
            r#"{"spec":{"clusterIP":null,"clusterIPs":null,"ports":[{"port":81}]}}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", message(&r));
    assert_eq!(r.json()["spec"]["clusterIP"], json!(ip));

    // Deleting frees the address.
    assert_eq!(h.delete(&format!("{SERVICES}/web")).await.status, 200);
    let r = h
        .post(
            SERVICES,
            &service("again", json!({"clusterIP": ip, "ports": [{"port": 80}]})),
        )
        .await;
    assert_eq!(r.status, 201, "{}", message(&r));
}

#[tokio::test]
async fn node_ports_are_allocated_and_released() {
    let h = harness().await;
    let r = h
        .post(SERVICES, &service("np", json!({"type": "NodePort", "ports": [{"name": "a", "port": 80, "nodePort": 30080}, {"name": "b", "port": 81}]})))
        .await;
    assert_eq!(r.status, 201, "{}", message(&r));
    let svc = r.json();
    assert_eq!(svc["spec"]["ports"][0]["nodePort"], 30080);
    let other = svc["spec"]["ports"][1]["nodePort"].as_i64().unwrap();
    assert!((30000..=30099).contains(&other) && other != 30080);
    assert_eq!(svc["spec"]["externalTrafficPolicy"], "Cluster");
    let r = h
        .post(
            SERVICES,
            &service(
                "np2",
                json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}),
            ),
        )
        .await;
    assert_eq!(
        message(&r),
        "Service \"np2\" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated"
    );
    let r = h
        .post(
            SERVICES,
            &service(
                "np3",
                json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 31000}]}),
            ),
        )
        .await;
    assert_eq!(
        message(&r),
        "Service \"np3\" is invalid: spec.ports[0].nodePort: Invalid value: 31000: provided port is not in the valid range. The range of valid ports is 30000-30099"
    );
    // To ClusterIP: the node ports are dropped and released.
    let r = h
        .patch(
            &format!("{SERVICES}/np"),
            "application/merge-patch+json",
            r#"{"spec":{"type":"ClusterIP","externalTrafficPolicy":null}}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", message(&r));
    assert!(
        r.json()["spec"]["ports"][0].get("nodePort").is_none(),
        "{}",
        r.json()
    );
    let r = h
        .post(
            SERVICES,
            &service(
                "np2",
                json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}),
            ),
        )
        .await;
    assert_eq!(r.status, 201, "{}", message(&r));
    // Deleting releases.
    assert_eq!(h.delete(&format!("{SERVICES}/np2")).await.status, 200);
    let r = h
        .post(
            SERVICES,
            &service(
                "np4",
                json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}),
            ),
        )
        .await;
    assert_eq!(r.status, 201, "{}", message(&r));
}

#[tokio::test]
async fn external_name_and_headless_services() {
    let h = harness().await;
    let r = h
        .post(
            SERVICES,
            &service(
                "ext",
                json!({"type": "ExternalName", "externalName": "db.example.com"}),
            ),
        )
        .await;
    assert_eq!(r.status, 201, "{}", message(&r));
    assert!(r.json()["spec"].get("clusterIP").is_none());
    let r = h
        .post(SERVICES, &service("ext2", json!({"type": "ExternalName", "externalName": "db.example.com", "clusterIP": "10.0.0.5"})))
        .await;
    assert_eq!(
        message(&r),
        "Service \"ext2\" is invalid: spec.clusterIPs: Forbidden: may not be set for ExternalName services"
    );
    let r = h
        .post(SERVICES, &service("ext3", json!({"type": "ExternalName"})))
        .await;
    assert_eq!(
        message(&r),
        "Service \"ext3\" is invalid: spec.externalName: Required value"
    );
    let r = h
        .post(
            SERVICES,
            &service(
                "headless",
                json!({"clusterIP": "None", "selector": {"a": "b"}}),
            ),
        )
        .await;
    assert_eq!(r.status, 201, "{}", message(&r));
    assert_eq!(r.json()["spec"]["clusterIPs"], json!(["None"]));
    let r = h
        .post(SERVICES, &service("1bad", json!({"ports": [{"port": 80}]})))
        .await;
    assert!(
        message(&r).starts_with(
            "Service \"1bad\" is invalid: metadata.name: Invalid value: \"1bad\": a DNS-1035 label"
        ),
        "{}",
        message(&r)
    );
    let r = h
        .post(
            SERVICES,
            &service("two", json!({"ports": [{"port": 80}, {"port": 81}]})),
        )
        .await;
    assert_eq!(
        message(&r),
        "Service \"two\" is invalid: [spec.ports[0].name: Required value, spec.ports[1].name: Required value]"
    );
}

#[tokio::test]
async fn endpoints_refuse_loopback_and_slices_are_checked() {
    let h = harness().await;
    let ep = |ip: &str| {
        json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"},
            "subsets": [{"addresses": [{"ip": ip}], "ports": [{"port": 8443}]}]})
    };
    let r = h.post(ENDPOINTS, &ep("127.0.0.1")).await;
    assert_eq!(r.status, 422);
    assert_eq!(
        message(&r),
        "Endpoints \"web\" is invalid: subsets[0].addresses[0].ip: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)"
    );
    let r = h.post(ENDPOINTS, &ep("10.1.2.3")).await;
    assert_eq!(r.status, 201, "{}", message(&r));
    assert_eq!(r.json()["subsets"][0]["ports"][0]["protocol"], "TCP");
    let slice = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web-1", "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4", "endpoints": [{"addresses": ["10.1.2.3"], "conditions": {"ready": true}}], "ports": [{"port": 8443}]});
    let r = h.post(SLICES, &slice).await;
    assert_eq!(r.status, 201, "{}", message(&r));
    assert_eq!(
        r.json()["ports"][0],
        json!({"name": "", "protocol": "TCP", "port": 8443})
    );
    let mut loopback = slice.clone();
    loopback["metadata"]["name"] = json!("web-2");
    loopback["endpoints"][0]["addresses"] = json!(["127.0.0.1"]);
    let r = h.post(SLICES, &loopback).await;
    assert_eq!(
        message(&r),
        "EndpointSlice.discovery.k8s.io \"web-2\" is invalid: endpoints[0].addresses[0]: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)"
    );
    let r = h
        .patch(
            &format!("{SLICES}/web-1"),
            "application/merge-patch+json",
            r#"{"addressType":"IPv6","endpoints":[]}"#,
        )
        .await;
    assert_eq!(
        message(&r),
        "EndpointSlice.discovery.k8s.io \"web-1\" is invalid: addressType: Invalid value: \"IPv6\": field is immutable"
    );
}

#[tokio::test]
async fn tables_print_as_kube_apiserver() {
    let h = harness().await;
    let r = h
        .post(SERVICES, &service("web", json!({"type": "NodePort", "clusterIP": "10.0.0.40", "selector": {"app": "web"}, "ports": [{"port": 80, "nodePort": 30001}]})))
        .await;
    assert_eq!(r.status, 201, "{}", message(&r));
    let table = h
        .send(
            "GET",
            SERVICES,
            &[("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")],
            Vec::new(),
        )
        .await
        .json();
    let names: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "Name",
            "Type",
            "Cluster-IP",
            "External-IP",
            "Port(s)",
            "Age",
            "Selector"
        ]
    );
    let cells = &table["rows"][0]["cells"];
    assert_eq!(
        cells.as_array().unwrap()[0..5],
        [
            json!("web"),
            json!("NodePort"),
            json!("10.0.0.40"),
            json!("<none>"),
            json!("80:30001/TCP")
        ]
    );
    assert_eq!(cells[6], "app=web");
    let r = h
        .post(
            ENDPOINTS,
            &json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"},
            "subsets": [{"addresses": [{"ip": "10.1.0.1"}], "ports": [{"port": 8080}]}]}),
        )
        .await;
    assert_eq!(r.status, 201);
    let table = h
        .send(
            "GET",
            ENDPOINTS,
            &[("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")],
            Vec::new(),
        )
        .await
        .json();
    assert_eq!(table["rows"][0]["cells"][1], "10.1.0.1:8080");
}

#[tokio::test]
async fn the_repair_releases_leaks_after_three_passes_and_restores_missing_records() {
    let h = Harness::new().await;
    let network = ServiceNetwork::parse("10.0.0.0/24", "30000-30099", None, false).unwrap();
    let repair = controlplane::services::install_allocation(&h.ctx, &network).unwrap();
    let r = h
        .post(
            SERVICES,
            &service(
                "web",
                json!({"type": "NodePort", "clusterIP": "10.0.0.40",
                       "ports": [{"port": 80, "nodePort": 30001}]}),
            ),
        )
        .await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let backend = h.ctx.registry.backend();
    let prefix = h.ctx.registry.prefix().trim_end_matches('/').to_string();
    // A record lost (as after a restore of the Services) and one leaked (a server killed
    // between its record and its Service).
    let web_ip = format!("{prefix}/ranges/serviceips/10.0.0.40");
    backend
        .delete(&web_ip, storage::backend::Condition::Always)
        .await
        .unwrap();
    backend
        .put(
            &format!("{prefix}/ranges/serviceips/10.0.0.99"),
            b"default/never-stored".to_vec().into(),
            storage::backend::Condition::Absent,
            None,
        )
        .await
        .unwrap();
    let first = repair.run_once().await.unwrap();
    assert_eq!(first.recorded, ["10.0.0.40"]);
    assert_eq!(first.flagged, ["10.0.0.99"]);
    let again = h
        .post(
            SERVICES,
            &service(
                "other",
                json!({"clusterIP": "10.0.0.40", "ports": [{"port": 80}]}),
            ),
        )
        .await;
    assert_eq!(again.status, 422, "the repaired record holds the address");
    assert_eq!(repair.run_once().await.unwrap().flagged, ["10.0.0.99"]);
    assert_eq!(repair.run_once().await.unwrap().released, ["10.0.0.99"]);
    let taken = h
        .post(
            SERVICES,
            &service(
                "late",
                json!({"clusterIP": "10.0.0.99", "ports": [{"port": 80}]}),
            ),
        )
        .await;
    assert_eq!(
        taken.status,
        201,
        "{}",
        String::from_utf8_lossy(&taken.body)
    );
    // Nothing held is ever flagged.
    let quiet = repair.run_once().await.unwrap();
    assert!(
        quiet.flagged.is_empty() && quiet.released.is_empty(),
        "{quiet:?}"
    );
}
