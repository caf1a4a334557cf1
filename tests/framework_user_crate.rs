//! apiary as a framework, tried as a new user would: a fresh crate written into a temporary
//! directory (path dependencies on this repository, the definitions of `fleet.example.com` from
//! `tests/user_crate/api-defs/` — a namespaced Ship with status and scale, a cluster-scoped
//! Harbor, `v1` and `v1beta1` with a hand-written conversion, the `ShipStrategy` that keeps a
//! Ship's harbor and the `HarborExists` admission plugin —, a `build.rs` of one call and a
//! `main.rs` of at most 20 lines over `server::Server`), built with `cargo build`, started and
//! driven with kubectl: discovery lists the Kubernetes groups and its own and nothing else,
//! CRUD, watch, explain, scale, status, conversion, RBAC for a second user, its admission plugin
//! and its strategy. Then a mistake in its definitions fails `cargo build` naming the file, the
//! line and the fix.

mod common;
#[path = "common/crates.rs"]
mod crates;
#[path = "common/kubectl.rs"]
mod kubectl;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use common::Server;
use kubectl::Kubectl;

const BUILD_RS: &str = "fn main() {\n    codegen::compile(\"api-defs\");\n}\n";

const LIB_RS: &str =
    "//! The fleet.example.com API: Ships and Harbors.\n\napimachinery::include_generated!();\n";

const MAIN_RS: &str = r#"//! fleet-apiserver: the Kubernetes groups and fleet.example.com.
use clap::Parser;

/// The fleet API server.
#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    server: server::ServerOptions,
}

fn main() -> std::process::ExitCode {
    server::Server::new(Cli::parse().server)
        .install(controlplane::KubernetesApis::default())
        .install(fleet::register_all)
        .kubectl_hint("get ships -A")
        .main()
}
"#;

/// The manifest of the user's crate, with path dependencies on the repository at `repo`.
fn manifest(repo: &Path) -> String {
    let r = repo.display();
    format!(
        r#"[package]
name = "fleet"
version = "0.1.0"
edition = "2024"

[workspace]

[[bin]]
name = "fleet-apiserver"
path = "src/main.rs"

[dependencies]
apiary-server = {{ path = "{r}/server" }}
apiary-controlplane = {{ path = "{r}/server/controlplane" }}
apiary-kubernetes-api = {{ path = "{r}/generated/kubernetes" }}
apiary-apimachinery = {{ path = "{r}/apimachinery" }}
clap = {{ version = "4", features = ["derive"] }}
async-trait = "0.1"

[build-dependencies]
apiary-codegen = {{ path = "{r}/codegen" }}
{profile}"#,
        profile = crates::PROFILE
    )
}

/// Copies the files of directory `from` into `to` (one level of subdirectories).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("creating {}: {e}", to.display()));
    for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let entry = entry.unwrap_or_else(|e| panic!("{e}"));
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target)
                .unwrap_or_else(|e| panic!("copying {}: {e}", entry.path().display()));
        }
    }
}

/// Writes the user's crate into `dir`.
fn write_crate(dir: &Path) {
    let repo = crates::repo_root();
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    };
    write("Cargo.toml", &manifest(&repo));
    // As the README says: etcd's client needs protoc, the repository's wrapper here.
    write(
        ".cargo/config.toml",
        &format!(
            "[env]\nPROTOC = {:?}\n",
            repo.join("tools/protoc").display().to_string()
        ),
    );
    write("build.rs", BUILD_RS);
    write("src/lib.rs", LIB_RS);
    write("src/main.rs", MAIN_RS);
    // The repository's versions of every dependency: nothing new is resolved.
    std::fs::copy(repo.join("Cargo.lock"), dir.join("Cargo.lock"))
        .unwrap_or_else(|e| panic!("copying Cargo.lock: {e}"));
    copy_tree(
        &repo.join("tests/user_crate/api-defs"),
        &dir.join("api-defs"),
    );
}

fn ship(version: &str, name: &str, ns: &str, spec: &str) -> String {
    format!(
        "apiVersion: fleet.example.com/{version}\nkind: Ship\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec: {spec}\n"
    )
}

/// Creates `yaml`, retrying while `HarborExists` has not yet seen a Harbor created just before
/// (it reads the watch cache, which a write reaches a moment later).
fn create_ship(k: &Kubectl, yaml: &str) {
    let mut last = None;
    for _ in 0..100 {
        let run = k.run_with(&["create", "-f", "-"], &[], yaml);
        if run.success() {
            return;
        }
        last = Some(run);
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!(
        "creating a Ship: {}",
        last.map(|r| r.describe()).unwrap_or_default()
    );
}

#[test]
fn a_users_crate_builds_and_serves_its_api() {
    assert!(
        MAIN_RS.lines().count() <= 20,
        "main.rs is {} lines",
        MAIN_RS.lines().count()
    );
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let dir = tmp.path().join("fleet");
    write_crate(&dir);
    crates::build(&dir);

    let server = Server::start_binary(&crates::binary("fleet-apiserver"), &[]);
    let k = Kubectl::new(&server, &common::kubectls()[0]);

    // Discovery: the Kubernetes groups and fleet.example.com, nothing else.
    let names = k.ok(&["api-resources", "-o", "name"]);
    let groups: BTreeSet<&str> = names
        .lines()
        .map(|l| l.split_once('.').map_or("", |(_, group)| group))
        .collect();
    let want: BTreeSet<&str> = [
        "",
        "admissionregistration.k8s.io",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "rbac.authorization.k8s.io",
        "fleet.example.com",
    ]
    .into();
    assert_eq!(groups, want, "api-resources:\n{names}");
    let fleet = k.ok(&["api-resources", "--api-group=fleet.example.com"]);
    assert!(
        fleet.contains("ships") && fleet.contains("sh") && fleet.contains("fleet.example.com/v1"),
        "{fleet}"
    );
    assert!(fleet.contains("harbors") && fleet.contains("hb"), "{fleet}");

    // CRUD, with a watch open on the namespace.
    k.ok(&["create", "namespace", "fleet"]);
    let watch = k.spawn(&[
        "get",
        "ships",
        "-n",
        "fleet",
        "-w",
        "--output-watch-events",
        "--request-timeout=60s",
    ]);
    k.ok_stdin(
        &["create", "-f", "-"],
        "apiVersion: fleet.example.com/v1\nkind: Harbor\nmetadata:\n  name: rotterdam\nspec:\n  capacity: 5\n",
    );
    k.ok_stdin(
        &["create", "-f", "-"],
        "apiVersion: fleet.example.com/v1\nkind: Harbor\nmetadata:\n  name: hamburg\n",
    );
    let harbor = k.json(&["get", "harbor", "hamburg", "-o", "json"]);
    assert_eq!(
        harbor["spec"]["capacity"], 10,
        "the marker default: {harbor}"
    );
    create_ship(
        &k,
        &ship("v1", "endeavour", "fleet", "{harbor: rotterdam, crew: 3}"),
    );
    let table = k.ok(&["get", "sh", "-n", "fleet"]);
    assert!(
        table.contains("HARBOR") && table.contains("endeavour") && table.contains("rotterdam"),
        "{table}"
    );
    assert!(
        watch.wait_for(Duration::from_secs(30), |out| out.contains("ADDED")
            && out.contains("endeavour")),
        "the watch saw no ADDED endeavour: {}",
        watch.describe()
    );
    k.ok(&[
        "label",
        "ship",
        "endeavour",
        "-n",
        "fleet",
        "class=explorer",
    ]);
    let got = k.json(&["get", "ship", "endeavour", "-n", "fleet", "-o", "json"]);
    assert_eq!(got["metadata"]["labels"]["class"], "explorer");
    assert!(
        watch.wait_for(Duration::from_secs(30), |out| out.contains("MODIFIED")),
        "the watch saw no MODIFIED: {}",
        watch.describe()
    );

    // Conversion: written in v1beta1 (`sailors`), read in v1 (`crew`), and back.
    create_ship(
        &k,
        &ship(
            "v1beta1",
            "beagle",
            "fleet",
            "{harbor: hamburg, sailors: 7}",
        ),
    );
    let v1 = k.json(&[
        "get",
        "ships.v1.fleet.example.com",
        "beagle",
        "-n",
        "fleet",
        "-o",
        "json",
    ]);
    assert_eq!(
        v1["spec"],
        serde_json::json!({"harbor": "hamburg", "crew": 7})
    );
    let beta = k.json(&[
        "get",
        "ships.v1beta1.fleet.example.com",
        "endeavour",
        "-n",
        "fleet",
        "-o",
        "json",
    ]);
    assert_eq!(beta["apiVersion"], "fleet.example.com/v1beta1");
    assert_eq!(
        beta["spec"],
        serde_json::json!({"harbor": "rotterdam", "sailors": 3})
    );

    // Scale and status subresources.
    k.ok(&["scale", "ship", "endeavour", "-n", "fleet", "--replicas=9"]);
    let scaled = k.json(&["get", "ship", "endeavour", "-n", "fleet", "-o", "json"]);
    assert_eq!(scaled["spec"]["crew"], 9);
    let scale = k.json(&[
        "get",
        "--raw",
        "/apis/fleet.example.com/v1/namespaces/fleet/ships/endeavour/scale",
    ]);
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 9);
    k.ok(&[
        "patch",
        "ship",
        "endeavour",
        "-n",
        "fleet",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"crew":8,"selector":"ship=endeavour"}}"#,
    ]);
    let status = k.json(&["get", "ship", "endeavour", "-n", "fleet", "-o", "json"]);
    assert_eq!(
        status["status"],
        serde_json::json!({"crew": 8, "selector": "ship=endeavour"})
    );
    // An update of the main resource keeps the status.
    k.ok(&[
        "patch",
        "ship",
        "endeavour",
        "-n",
        "fleet",
        "--type=merge",
        "-p",
        r#"{"status":{"crew":1}}"#,
    ]);
    let kept = k.json(&["get", "ship", "endeavour", "-n", "fleet", "-o", "json"]);
    assert_eq!(kept["status"]["crew"], 8, "{kept}");

    // Validation from the markers.
    let invalid = k.run_with(
        &["create", "-f", "-"],
        &[],
        &ship("v1", "titanic", "fleet", "{harbor: hamburg, crew: 501}"),
    );
    assert!(
        invalid
            .stderr
            .contains("spec.crew: Invalid value: 501: must be less than or equal to 500"),
        "{}",
        invalid.describe()
    );

    // The strategy: a Ship keeps its harbor.
    let moved = k.run(&[
        "patch",
        "ship",
        "endeavour",
        "-n",
        "fleet",
        "--type=merge",
        "-p",
        r#"{"spec":{"harbor":"hamburg"}}"#,
    ]);
    assert!(
        moved
            .stderr
            .contains("spec.harbor: Invalid value: \"hamburg\": a ship may not change harbors"),
        "{}",
        moved.describe()
    );

    // The admission plugin: a Ship needs an existing Harbor (403).
    let nowhere = k.run_with(
        &["create", "-f", "-"],
        &[],
        &ship("v1", "flying-dutchman", "fleet", "{harbor: atlantis}"),
    );
    assert!(
        nowhere.stderr.contains("Error from server (Forbidden)")
            && nowhere
                .stderr
                .contains("harbor \"atlantis\" does not exist"),
        "{}",
        nowhere.describe()
    );

    // kubectl explain reads the published schema.
    let explain = k.ok(&["explain", "ships.spec"]);
    for want in [
        "GROUP:      fleet.example.com",
        "VERSION:    v1",
        "harbor",
        "crew",
        "The Harbor the ship berths in.",
    ] {
        assert!(explain.contains(want), "explain lacks {want}:\n{explain}");
    }

    // RBAC for a second user: nothing until a Role grants reading Ships in one namespace.
    let alice = k.with_kubeconfig(&server.user_kubeconfig("alice", ""));
    let denied = alice.run(&["get", "ships", "-n", "fleet"]);
    assert!(
        denied.stderr.contains("ships.fleet.example.com is forbidden: User \"alice\" cannot list resource \"ships\" in API group \"fleet.example.com\" in the namespace \"fleet\""),
        "{}",
        denied.describe()
    );
    k.ok(&[
        "create",
        "role",
        "ship-reader",
        "-n",
        "fleet",
        "--verb=get,list,watch",
        "--resource=ships.fleet.example.com",
    ]);
    k.ok(&[
        "create",
        "rolebinding",
        "alice-reads-ships",
        "-n",
        "fleet",
        "--role=ship-reader",
        "--user=alice",
    ]);
    let listed = alice.until(
        &["get", "ships", "-n", "fleet", "-o", "name"],
        "ship.fleet.example.com/beagle\nship.fleet.example.com/endeavour",
    );
    assert_eq!(
        listed,
        "ship.fleet.example.com/beagle\nship.fleet.example.com/endeavour"
    );
    let write = alice.run(&["delete", "ship", "beagle", "-n", "fleet"]);
    assert!(
        write.stderr.contains("cannot delete resource \"ships\""),
        "{}",
        write.describe()
    );
    let harbors = alice.run(&["get", "harbors"]);
    assert!(
        harbors.stderr.contains("cannot list resource \"harbors\""),
        "{}",
        harbors.describe()
    );

    // Delete.
    k.ok(&["delete", "ship", "beagle", "-n", "fleet"]);
    let gone = k.run(&["get", "ship", "beagle", "-n", "fleet"]);
    assert!(
        gone.stderr
            .contains("ships.fleet.example.com \"beagle\" not found"),
        "{}",
        gone.describe()
    );
    assert!(
        watch.wait_for(Duration::from_secs(30), |out| out.contains("DELETED")),
        "the watch saw no DELETED: {}",
        watch.describe()
    );
    drop(watch);
    drop(server);

    // A mistake in the definitions fails the build with the file, the line and the fix.
    let v1 = dir.join("api-defs/fleet.example.com/v1.rs");
    let text = std::fs::read_to_string(&v1).unwrap_or_else(|e| panic!("{e}"));
    let marker = "#[kind(cluster, short_names = [\"hb\"])]";
    let line = text
        .lines()
        .position(|l| l == marker)
        .unwrap_or_else(|| panic!("no {marker} in v1.rs"))
        + 2;
    std::fs::write(
        &v1,
        text.replace(marker, &format!("{marker}\n#[colour = \"red\"]")),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let out = {
        let _lock = crates::lock();
        crates::cargo(&dir, &["build"])
    };
    let stderr = crates::stderr(&out);
    assert!(
        !out.status.success(),
        "the build with an unknown marker succeeded:\n{stderr}"
    );
    let location = format!("{}:{line}:3", v1.display());
    assert!(
        stderr.contains("error: unknown marker `colour`; markers allowed on a struct are `kind`, `scale`, `subresource`, `print_column`, `rule`, `map`, `gvk`")
            && stderr.contains(&location),
        "the build error does not name the marker, {location} and the fix:\n{stderr}"
    );
}
