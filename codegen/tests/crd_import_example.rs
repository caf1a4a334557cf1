//! The example `examples/crd-import`: its `api-defs/` is exactly what `codegen import-crd
//! crd.yaml` writes (a golden test of the importer over a real CRD), and the generator builds
//! its group.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The example's directory.
fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/crd-import")
}

/// Every file under `dir`, by path relative to it.
fn files_under(dir: &Path, base: &Path, out: &mut BTreeMap<String, String>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
        if path.is_dir() {
            files_under(&path, base, out);
        } else {
            let rel = path
                .strip_prefix(base)
                .unwrap_or_else(|e| panic!("{e}"))
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
            out.insert(rel, text);
        }
    }
}

#[test]
fn committed_definitions_are_what_the_importer_writes() {
    let crd = std::fs::read_to_string(example().join("crd.yaml")).expect("crd.yaml");
    let imported = codegen::bridge::import::import_crd(&crd).unwrap_or_else(|e| panic!("{e}"));
    let dir = example().join("api-defs");
    let mut committed = BTreeMap::new();
    files_under(&dir, &dir, &mut committed);
    let fix = "regenerate with `cargo run -p apiary-codegen -- import-crd examples/crd-import/crd.yaml --out examples/crd-import/api-defs`";
    assert_eq!(
        committed.keys().collect::<Vec<_>>(),
        imported.files.keys().collect::<Vec<_>>(),
        "{fix}"
    );
    for (path, text) in &imported.files {
        assert_eq!(&committed[path], text, "{path} differs; {fix}");
    }
    // The group generates (Rust, protobuf checked by protoc, OpenAPI) from the directory.
    let out = tempfile::tempdir().expect("tempdir");
    codegen::Generator::new(&dir)
        .generate(out.path())
        .unwrap_or_else(|e| panic!("{e}"));
}

/// What the CronTab CRD says that the definitions cannot: only what every import loses (values
/// of the wrong JSON type fail at decoding; the order of several errors).
#[test]
fn the_example_reports_its_losses() {
    let crd = std::fs::read_to_string(example().join("crd.yaml")).expect("crd.yaml");
    let imported = codegen::bridge::import::import_crd(&crd).unwrap_or_else(|e| panic!("{e}"));
    let paths: Vec<&str> = imported.losses.iter().map(|l| l.at.as_str()).collect();
    let want = ["spec.versions[*].schema.openAPIV3Schema"; 2];
    assert_eq!(paths, want, "{}", imported.report());
}

/// Real CRDs (cert-manager's Certificate, Gateway API's HTTPRoute with its 178 CEL rules,
/// prometheus-operator's ServiceMonitor) import, check, and generate (Rust, `.proto` files that
/// protoc compiles, OpenAPI).
#[test]
fn real_crds_import_and_generate() {
    let data =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../generated/apiextensions/tests/data");
    for (file, group, files) in [
        ("cert-manager.io_certificates.yaml", "cert-manager.io", 1),
        (
            "gateway.networking.k8s.io_httproutes.yaml",
            "gateway.networking.k8s.io",
            2,
        ),
        (
            "monitoring.coreos.com_servicemonitors.yaml",
            "monitoring.coreos.com",
            1,
        ),
    ] {
        let crd =
            std::fs::read_to_string(data.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let imported =
            codegen::bridge::import::import_crd(&crd).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(imported.group, group);
        assert_eq!(
            imported.files.len(),
            files,
            "{file}: {:?}",
            imported.files.keys()
        );
        let dir = tempfile::tempdir().expect("tempdir");
        for (path, text) in &imported.files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(&path, text).expect("write");
        }
        let out = tempfile::tempdir().expect("tempdir");
        codegen::Generator::new(dir.path())
            .generate(out.path())
            .unwrap_or_else(|e| panic!("{file}: {e}"));
    }
}
