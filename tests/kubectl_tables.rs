//! kubectl (the one on PATH, 1.27 and 1.33) on the real binary: the Tables the kinds' own
//! convertors print, as kube-apiserver's printers do. Events in both styles (core
//! `firstTimestamp`/`lastTimestamp`/`count`, and events.k8s.io's `eventTime`/`series`) with
//! `-o wide`, the `source` field selector the Event strategy computes, and the columns of
//! Leases, ServiceAccounts, Namespaces and webhook configurations.

mod common;
#[path = "common/kubectl.rs"]
mod kubectl;

use std::time::{SystemTime, UNIX_EPOCH};

use apimachinery::meta::Time;
use common::Server;
use kubectl::{Checks, Kubectl, each_kubectl};

/// The header names of `kubectl get events -o wide`, in order.
const WIDE_EVENT_HEADER: [&str; 10] = [
    "LAST SEEN",
    "TYPE",
    "REASON",
    "OBJECT",
    "SUBOBJECT",
    "SOURCE",
    "MESSAGE",
    "FIRST SEEN",
    "COUNT",
    "NAME",
];

/// RFC 3339 (to the second) of `seconds_ago` seconds before now.
fn ago(seconds_ago: i64) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_else(|e| panic!("clock: {e}"));
    Time::from_timestamp(now - seconds_ago).to_rfc3339()
}

/// RFC 3339 with microseconds (`metav1.MicroTime`) of `seconds_ago` seconds before now.
fn micro_ago(seconds_ago: i64) -> String {
    ago(seconds_ago).replace('Z', ".000000Z")
}

/// Splits a kubectl table into cells by the header's column offsets (cells may hold spaces):
/// each column starts where its header name starts. `header` lists the expected names in
/// order; a missing name fails the parse with the header line.
fn parse_table(table: &str, header: &[&str]) -> Result<Vec<Vec<String>>, String> {
    let mut lines = table.lines();
    let head = lines.next().unwrap_or_default();
    let mut starts = Vec::new();
    let mut from = 0;
    for name in header {
        let at = head[from..]
            .find(name)
            .map(|i| i + from)
            .ok_or_else(|| format!("header {head:?} lacks {name:?} after column {from}"))?;
        starts.push(at);
        from = at + name.len();
    }
    if head[from..].trim() != "" {
        return Err(format!("header {head:?} has more than {header:?}"));
    }
    Ok(lines
        .map(|line| {
            (0..starts.len())
                .map(|i| {
                    let end = starts.get(i + 1).copied().unwrap_or(line.len());
                    line.get(starts[i]..end.min(line.len()))
                        .unwrap_or("")
                        .trim()
                        .to_string()
                })
                .collect()
        })
        .collect())
}

/// The parsed row whose cell `column` is `value`.
fn find_row(rows: &[Vec<String>], column: usize, value: &str) -> Option<Vec<String>> {
    rows.iter()
        .find(|r| r.get(column).is_some_and(|c| c == value))
        .cloned()
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Two events: a core-style one reported by the kubelet with first and last timestamps and a
/// count, and an events.k8s.io-style one with only `eventTime`, a series and the reporting
/// controller and instance.
fn events(ns: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Event
metadata:
  name: web.backoff
  namespace: {ns}
involvedObject:
  apiVersion: v1
  kind: Pod
  name: web
  namespace: {ns}
  fieldPath: spec.containers{{app}}
reason: BackOff
message: Back-off restarting failed container
source:
  component: kubelet
  host: node-1
firstTimestamp: "{first}"
lastTimestamp: "{last}"
count: 7
type: Warning
---
apiVersion: v1
kind: Event
metadata:
  name: leader.elected
  namespace: {ns}
involvedObject:
  apiVersion: coordination.k8s.io/v1
  kind: Lease
  name: controller
  namespace: {ns}
reason: LeaderElection
message: cm-1 became leader
action: Elect
reportingComponent: kube-controller-manager
reportingInstance: cm-1
eventTime: "{event_time}"
series:
  count: 4
  lastObservedTime: "{observed}"
type: Normal
"#,
        first = ago(2 * 3600 + 10),
        last = ago(30 * 60 + 10),
        event_time = micro_ago(3 * 3600 + 10),
        observed = micro_ago(45 * 60 + 10),
    )
}

#[test]
fn builtin_kind_tables() {
    let server = Server::start(&[]);
    each_kubectl(&server, |k: &Kubectl, c: &mut Checks| {
        let ns = k.ns("tables");
        k.ok(&["create", "namespace", &ns]);
        let out = k.ok_stdin(&["create", "-f", "-"], &events(&ns));
        c.contains("create events", &out, "event/web.backoff created");
        c.contains("create events", &out, "event/leader.elected created");

        // -o wide: every column, computed by the server.
        let wide = k.ok(&["get", "events", "-n", &ns, "-o", "wide"]);
        match parse_table(&wide, &WIDE_EVENT_HEADER) {
            Err(e) => c.check(false, || format!("get events -o wide: {e}\n{wide}")),
            Ok(rows) => {
                c.eq("events -o wide rows", rows.len(), 2);
                c.eq(
                    "event with first/last timestamps",
                    find_row(&rows, 9, "web.backoff"),
                    Some(strings(&[
                        "30m",
                        "Warning",
                        "BackOff",
                        "pod/web",
                        "spec.containers{app}",
                        "kubelet, node-1",
                        "Back-off restarting failed container",
                        "120m",
                        "7",
                        "web.backoff",
                    ])),
                );
                c.eq(
                    "event with eventTime and series",
                    find_row(&rows, 9, "leader.elected"),
                    Some(strings(&[
                        "45m",
                        "Normal",
                        "LeaderElection",
                        "lease/controller",
                        "",
                        "kube-controller-manager, cm-1",
                        "cm-1 became leader",
                        "3h",
                        "4",
                        "leader.elected",
                    ])),
                );
            }
        }

        // Without -o wide: the columns of priority 0.
        let narrow = k.ok(&["get", "events", "-n", &ns]);
        let header = ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"];
        match parse_table(&narrow, &header) {
            Err(e) => c.check(false, || format!("get events: {e}\n{narrow}")),
            Ok(rows) => c.eq(
                "get events series row",
                find_row(&rows, 3, "lease/controller"),
                Some(strings(&[
                    "45m",
                    "Normal",
                    "LeaderElection",
                    "lease/controller",
                    "cm-1 became leader",
                ])),
            ),
        }

        // The `source` field label: source.component, else reportingComponent.
        for (source, want) in [
            ("kubelet", "web.backoff"),
            ("kube-controller-manager", "leader.elected"),
        ] {
            let selector = format!("source={source}");
            let names = k.ok(&[
                "get",
                "events",
                "-n",
                &ns,
                "--field-selector",
                &selector,
                "-o",
                "name",
            ]);
            c.eq(
                &format!("events --field-selector {selector}"),
                names.trim(),
                &*format!("event/{want}"),
            );
        }
        let table = k.ok(&[
            "get",
            "events",
            "-n",
            &ns,
            "--field-selector",
            "source=kubelet",
        ]);
        c.eq(
            "events --field-selector source=kubelet table rows",
            table.lines().count(),
            2,
        );
        c.contains(
            "events --field-selector source=kubelet table",
            &table,
            "pod/web",
        );
        let none = k.run(&[
            "get",
            "events",
            "-n",
            &ns,
            "--field-selector",
            "source=scheduler",
        ]);
        c.check(none.success() && none.stdout.trim().is_empty(), || {
            format!("no event has source=scheduler: {}", none.describe())
        });
        c.contains(
            "events --field-selector source=scheduler",
            &none.stderr,
            &format!("No resources found in {ns} namespace."),
        );

        // Leases print their holder (empty when nobody holds it).
        let leases = format!(
            "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: held\n  namespace: {ns}\nspec:\n  holderIdentity: cm-1\n  leaseDurationSeconds: 15\n---\napiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: free\n  namespace: {ns}\nspec: {{}}\n"
        );
        k.ok_stdin(&["create", "-f", "-"], &leases);
        let table = k.ok(&["get", "leases", "-n", &ns]);
        match parse_table(&table, &["NAME", "HOLDER", "AGE"]) {
            Err(e) => c.check(false, || format!("get leases: {e}\n{table}")),
            Ok(rows) => {
                c.eq(
                    "lease holder",
                    find_row(&rows, 0, "held").and_then(|r| r.get(1).cloned()),
                    Some("cm-1".to_string()),
                );
                c.eq(
                    "free lease holder",
                    find_row(&rows, 0, "free").and_then(|r| r.get(1).cloned()),
                    Some(String::new()),
                );
            }
        }

        // ServiceAccounts count their secrets.
        let sa = format!(
            "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: builder\n  namespace: {ns}\nsecrets:\n- name: a\n- name: b\n"
        );
        k.ok_stdin(&["create", "-f", "-"], &sa);
        let table = k.ok(&["get", "serviceaccount", "builder", "-n", &ns]);
        match parse_table(&table, &["NAME", "SECRETS", "AGE"]) {
            Err(e) => c.check(false, || format!("get serviceaccount: {e}\n{table}")),
            Ok(rows) => c.eq(
                "serviceaccount SECRETS",
                rows.first().and_then(|r| r.get(1).cloned()),
                Some("2".to_string()),
            ),
        }

        // ResourceQuotas print each enforced resource as used/hard in name order, `limits.*`
        // under LIMIT, once the server has counted the namespace (it holds the two leases).
        let quota = format!(
            "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: counts\n  namespace: {ns}\nspec:\n  hard:\n    secrets: \"4\"\n    limits.cpu: \"2\"\n    count/leases.coordination.k8s.io: \"9\"\n"
        );
        k.ok_stdin(&["create", "-f", "-"], &quota);
        let want = strings(&[
            "counts",
            "count/leases.coordination.k8s.io: 2/9, secrets: 0/4",
            "limits.cpu: 0/2",
        ]);
        let mut last = String::new();
        let mut got = None;
        for _ in 0..100 {
            last = k.ok(&["get", "resourcequota", "counts", "-n", &ns]);
            got = parse_table(&last, &["NAME", "AGE", "REQUEST", "LIMIT"])
                .ok()
                .and_then(|rows| rows.first().cloned())
                .map(|mut row| {
                    row.remove(1);
                    row
                });
            if got.as_ref() == Some(&want) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        c.check(got.as_ref() == Some(&want), || {
            format!("resourcequota row: want {want:?}, got {got:?}\n{last}")
        });

        // Namespaces print their phase.
        let table = k.ok(&["get", "namespace", &ns]);
        match parse_table(&table, &["NAME", "STATUS", "AGE"]) {
            Err(e) => c.check(false, || format!("get namespace: {e}\n{table}")),
            Ok(rows) => c.eq(
                "namespace STATUS",
                rows.first().and_then(|r| r.get(1).cloned()),
                Some("Active".to_string()),
            ),
        }

        // Webhook configurations count their webhooks (these match no request).
        let name = format!("tables-{}", k.label);
        let webhooks = format!(
            "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: {name}\nwebhooks:\n{}{}",
            webhook("a.tables.example.com"),
            webhook("b.tables.example.com"),
        );
        k.ok_stdin(&["create", "-f", "-"], &webhooks);
        let table = k.ok(&["get", "validatingwebhookconfiguration", &name]);
        match parse_table(&table, &["NAME", "WEBHOOKS", "AGE"]) {
            Err(e) => c.check(false, || {
                format!("get validatingwebhookconfiguration: {e}\n{table}")
            }),
            Ok(rows) => c.eq(
                "validatingwebhookconfiguration WEBHOOKS",
                rows.first().and_then(|r| r.get(1).cloned()),
                Some("2".to_string()),
            ),
        }
        k.ok(&["delete", "validatingwebhookconfiguration", &name]);
    });
}

/// A webhook that no request reaches (its rule names a resource nobody serves) and whose
/// failures are ignored.
fn webhook(name: &str) -> String {
    format!(
        "- name: {name}\n  clientConfig:\n    url: https://127.0.0.1:1/validate\n  rules:\n  - operations: [\"CREATE\"]\n    apiGroups: [\"nothing.example.com\"]\n    apiVersions: [\"v1\"]\n    resources: [\"nothing\"]\n  failurePolicy: Ignore\n  sideEffects: None\n  admissionReviewVersions: [\"v1\"]\n"
    )
}
