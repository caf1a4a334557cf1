//! Services, Endpoints and the `kubernetes` Service with kubectl (every installed version) on
//! the real binary: `create service clusterip|nodeport|externalname` and their tables (`-o
//! wide` adds the selector), `get svc,ep`, a cluster IP asked for twice refused with
//! kube-apiserver's message and free again once its Service is deleted, Endpoints refusing a
//! loopback address, and `cluster-info` naming the control plane.

mod common;
#[path = "common/kubectl.rs"]
mod kubectl;

use common::Server;
use kubectl::{Checks, Kubectl, each_kubectl};

/// The whitespace-separated cells of each line.
fn cells(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

/// `text` without ANSI color sequences (older kubectls color `cluster-info`).
fn strip_colors(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(ch) = chars.next() {
        if ch == '\u{1b}' {
            for next in chars.by_ref() {
                if next == 'm' {
                    break;
                }
            }
        } else {
            out.push(ch);
        }
    }
    out
}

#[test]
fn services_with_kubectl() {
    let server = Server::start(&[]);
    let base = server.base.clone();
    each_kubectl(&server, |k: &Kubectl, c: &mut Checks| {
        let ns = k.ns("svc");
        k.ok(&["create", "namespace", &ns]);

        let out = c
            .run_ok(
                k,
                &[
                    "create",
                    "service",
                    "clusterip",
                    "web",
                    "--tcp=80:8080",
                    "-n",
                    &ns,
                ],
            )
            .stdout;
        c.eq("create clusterip", out.trim(), "service/web created");
        let svc = k.json(&["get", "svc", "web", "-n", &ns, "-o", "json"]);
        let ip = svc["spec"]["clusterIP"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        c.check(ip.starts_with("10.0.0.") && ip != "10.0.0.1", || {
            format!("cluster IP {ip}")
        });
        let table = cells(&k.ok(&["get", "svc", "web", "-n", &ns]));
        c.eq(
            "svc header",
            table[0].clone(),
            [
                "NAME",
                "TYPE",
                "CLUSTER-IP",
                "EXTERNAL-IP",
                "PORT(S)",
                "AGE",
            ]
            .map(String::from)
            .to_vec(),
        );
        c.eq(
            "svc row",
            table[1][..5].to_vec(),
            ["web", "ClusterIP", &ip, "<none>", "80/TCP"]
                .map(String::from)
                .to_vec(),
        );
        let wide = cells(&k.ok(&["get", "svc", "web", "-n", &ns, "-o", "wide"]));
        c.eq(
            "wide header",
            wide[0].last().cloned(),
            Some("SELECTOR".to_string()),
        );
        c.eq(
            "wide selector",
            wide[1].last().cloned(),
            Some("app=web".to_string()),
        );

        // Node ports are cluster-wide: this journey asks for the one it was given, in vain.
        let out = c
            .run_ok(
                k,
                &[
                    "create",
                    "service",
                    "nodeport",
                    "np",
                    "--tcp=80:8080",
                    "-n",
                    &ns,
                ],
            )
            .stdout;
        c.eq("create nodeport", out.trim(), "service/np created");
        let np = k.json(&["get", "svc", "np", "-n", &ns, "-o", "json"]);
        let node_port = np["spec"]["ports"][0]["nodePort"]
            .as_i64()
            .unwrap_or_default();
        c.check((30000..=32767).contains(&node_port), || {
            format!("node port {node_port}")
        });
        let run = c.run_code(
            k,
            &[
                "create",
                "service",
                "nodeport",
                "np2",
                "--tcp=80:8080",
                &format!("--node-port={node_port}"),
                "-n",
                &ns,
            ],
            1,
        );
        c.contains(
            "second service with the same node port",
            &run.stderr,
            &format!("Service \"np2\" is invalid: spec.ports[0].nodePort: Invalid value: {node_port}: provided port is already allocated"),
        );
        let out = c
            .run_ok(
                k,
                &[
                    "create",
                    "service",
                    "externalname",
                    "ext",
                    "--external-name=db.example.com",
                    "-n",
                    &ns,
                ],
            )
            .stdout;
        c.eq("create externalname", out.trim(), "service/ext created");
        let table = cells(&k.ok(&["get", "svc", "-n", &ns, "--sort-by=.metadata.name"]));
        c.eq(
            "externalname row",
            table[1][..5].to_vec(),
            ["ext", "ExternalName", "<none>", "db.example.com", "<none>"]
                .map(String::from)
                .to_vec(),
        );
        c.eq(
            "nodeport row",
            [table[2][1].clone(), table[2][4].clone()].to_vec(),
            ["NodePort".to_string(), format!("80:{node_port}/TCP")].to_vec(),
        );

        // The same cluster IP asked for by a second Service.
        let run = c.run_code(
            k,
            &[
                "create",
                "service",
                "clusterip",
                "copy",
                "--tcp=80",
                &format!("--clusterip={ip}"),
                "-n",
                &ns,
            ],
            1,
        );
        c.contains(
            "second service with the same IP",
            &run.stderr,
            &format!("Service \"copy\" is invalid: spec.clusterIPs: Invalid value: [\"{ip}\"]: failed to allocate IP {ip}: provided IP is already allocated"),
        );

        // Endpoints may not point at loopback addresses.
        let manifest = k.write(
            "ep.yaml",
            &format!(
                "apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: web\n  namespace: {ns}\nsubsets:\n- addresses:\n  - ip: 127.0.0.1\n  ports:\n  - port: 8080\n"
            ),
        );
        let run = c.run_code(k, &["apply", "-f", &manifest], 1);
        c.contains(
            "loopback endpoints",
            &run.stderr,
            "subsets[0].addresses[0].ip: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
        );
        let manifest = k.write(
            "ep.yaml",
            &std::fs::read_to_string(k.work_dir().join("ep.yaml"))
                .unwrap_or_default()
                .replace("127.0.0.1", "10.1.0.7"),
        );
        c.run_ok(k, &["apply", "-f", &manifest]);
        let out = c.run_ok(k, &["get", "svc,ep", "-n", &ns]).stdout;
        c.contains("get svc,ep services", &out, "service/web");
        c.contains("get svc,ep endpoints", &out, "10.1.0.7:8080");
        let table = cells(&k.ok(&["get", "ep", "web", "-n", &ns]));
        c.eq(
            "endpoints header",
            table[0].clone(),
            ["NAME", "ENDPOINTS", "AGE"].map(String::from).to_vec(),
        );
        c.eq(
            "endpoints row",
            table[1][..2].to_vec(),
            ["web", "10.1.0.7:8080"].map(String::from).to_vec(),
        );

        // Deleting the Service frees its address.
        c.run_ok(k, &["delete", "svc", "web", "-n", &ns]);
        let out = c
            .run_ok(
                k,
                &[
                    "create",
                    "service",
                    "clusterip",
                    "copy",
                    "--tcp=80",
                    &format!("--clusterip={ip}"),
                    "-n",
                    &ns,
                ],
            )
            .stdout;
        c.eq("the freed IP", out.trim(), "service/copy created");

        // The API's own Service, and cluster-info.
        let table = cells(&k.ok(&["get", "svc", "kubernetes", "-n", "default"]));
        c.eq(
            "kubernetes service",
            table[1][..5].to_vec(),
            ["kubernetes", "ClusterIP", "10.0.0.1", "<none>", "443/TCP"]
                .map(String::from)
                .to_vec(),
        );
        let out = strip_colors(&c.run_ok(k, &["cluster-info"]).stdout);
        c.contains(
            "cluster-info",
            &out,
            &format!("Kubernetes control plane is running at {base}"),
        );
    });
}
