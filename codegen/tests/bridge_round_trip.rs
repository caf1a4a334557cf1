//! The bridge both ways: definitions exported as CRDs and imported back are definitions that
//! export the same CRDs (a round trip keeps what a CRD can say), and what the definitions say
//! that a CRD cannot is reported by the export, not lost silently.

use std::path::Path;

use codegen::Generator;
use codegen::bridge::{export, import};
use serde_json::Value;

/// Exports `group` of the definitions in `dir`.
fn export_from(dir: &Path, group: &str) -> export::Exported {
    let model = Generator::new(dir).load().unwrap_or_else(|e| panic!("{e}"));
    export::export_group(&model, group).unwrap_or_else(|e| panic!("{e}"))
}

/// Imports each CRD into one definitions directory and exports the group again.
fn round_trip(crds: &[Value], group: &str) -> (Vec<Value>, Vec<String>) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut losses = Vec::new();
    for crd in crds {
        let imported = import::import_crd(&export::to_yaml(std::slice::from_ref(crd)))
            .unwrap_or_else(|e| panic!("{e}"));
        for (path, text) in &imported.files {
            let file = dir.path().join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, text).unwrap();
        }
        losses.extend(imported.losses.iter().map(ToString::to_string));
    }
    (export_from(dir.path(), group).crds, losses)
}

#[test]
fn widget_definitions_to_crd_to_definitions_export_the_same_crd() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../api-defs");
    let first = export_from(&root, "example.dev");
    let (again, import_losses) = round_trip(&first.crds, "example.dev");
    assert_eq!(again.len(), first.crds.len());
    for (a, b) in first.crds.iter().zip(&again) {
        // Equal as JSON (the importer orders a struct's fields by name, as kube-apiserver
        // writes a custom resource's keys; a schema's properties have no order).
        assert!(
            a == b,
            "the CRD exported from the imported definitions differs:\n{}\n---\n{}",
            export::to_yaml(std::slice::from_ref(a)),
            export::to_yaml(std::slice::from_ref(b))
        );
    }
    // What the definitions say and a CRD cannot is reported on the way out...
    let exported: Vec<String> = first.losses.iter().map(ToString::to_string).collect();
    for want in [
        "protobuf field numbers",
        "hooks.rs",
        "admission.rs",
        "compiled conversions",
    ] {
        assert!(
            exported.iter().any(|l| l.contains(want)),
            "the export reports no loss of {want}: {exported:#?}"
        );
    }
    // ... and where the compiled kind answers otherwise than the CRD, on the way in.
    assert!(
        import_losses.iter().any(|l| l.contains("must be of type")),
        "{import_losses:#?}"
    );
}
