//! The Python `kubernetes` client (from PyPI) against the real binary: runs
//! `tests/python/client_test.py` with the interpreter named by `APIARY_TEST_PYTHON` (set by
//! `./tools/test`, which installs the client into `target/py-venv`), on the admin kubeconfig
//! apiary wrote. CoreV1Api create/list/watch of ConfigMaps, a 409 on a stale update, the
//! dynamic client and CustomObjectsApi on Widgets; a CustomResourceDefinition and its objects.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::Server;

/// The interpreter to run; fails loudly when it is not configured or not usable.
fn python() -> PathBuf {
    let python = std::env::var_os("APIARY_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!(
                "APIARY_TEST_PYTHON is not set: run ./tools/test, or create the virtualenv with \
             `python3 -m venv target/py-venv && target/py-venv/bin/pip install kubernetes` and \
             export APIARY_TEST_PYTHON=$PWD/target/py-venv/bin/python"
            )
        });
    assert!(
        python.exists(),
        "APIARY_TEST_PYTHON={} does not exist",
        python.display()
    );
    let probe = Command::new(&python)
        .args(["-c", "import kubernetes; print(kubernetes.__version__)"])
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", python.display()));
    assert!(
        probe.status.success(),
        "{} cannot import the kubernetes package:\n{}",
        python.display(),
        String::from_utf8_lossy(&probe.stderr)
    );
    python
}

#[test]
fn python_kubernetes_client() {
    let python = python();
    let server = Server::start(&[]);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/client_test.py");
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let out = Command::new(&python)
        .arg(&script)
        .arg(server.kubeconfig())
        .arg("python")
        .env("HOME", home.path())
        .env_remove("KUBECONFIG")
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", script.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "{} failed ({}):\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
        script.display(),
        out.status
    );
    for part in [
        "CoreV1Api",
        "DynamicClient",
        "CustomObjectsApi",
        "CustomResourceDefinition",
    ] {
        assert!(
            stdout.contains(&format!("PASS: {part}")),
            "{part} did not pass:\n{stdout}"
        );
    }
}
