//! The emitted `.proto` files of every shipped group version are accepted by `protoc` (the
//! vendored binary; no system protoc is needed).

mod support;

use std::path::PathBuf;

use codegen::Generator;
use codegen::emit::proto::{check_with_protoc, emit_proto, proto_path, support_files};

fn api_defs() -> PathBuf {
    support::all_api_defs()
}

#[test]
fn every_group_version_compiles_with_protoc() {
    let model = Generator::new(api_defs()).load().expect("api-defs load");
    let dir = tempfile::tempdir().expect("temp dir");
    for (path, contents) in support_files() {
        let file = dir.path().join(path);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        std::fs::write(&file, contents).expect("write");
    }
    let mut files = Vec::new();
    for group in &model.groups {
        for version in &group.versions {
            let text = emit_proto(group, version);
            assert!(!text.is_empty(), "{} has no .proto", version.api_version());
            let name = PathBuf::from(proto_path(version));
            let file = dir.path().join(&name);
            std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
            std::fs::write(file, text).expect("write");
            files.push(name);
        }
    }
    assert!(
        files.len() >= 8,
        "expected every shipped group version, got {files:?}"
    );
    check_with_protoc(dir.path(), &files, &dir.path().join("all.pb"))
        .expect("protoc accepts the files");
}

#[test]
fn kubernetes_packages_and_numbers() {
    let model = Generator::new(api_defs()).load().expect("api-defs load");
    let core = model
        .group("")
        .and_then(|g| g.version("v1").map(|v| (g, v)))
        .expect("core/v1");
    let text = emit_proto(core.0, core.1);
    assert!(text.contains("package k8s.io.api.core.v1;"));
    assert!(text.contains("import \"k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto\";"));
    assert!(
        text.contains("  optional .k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta metadata = 1;")
    );
    assert!(text.contains("  map<string, bytes> binaryData = 3;"));
    assert!(text.contains("  optional bool immutable = 4;"));
    assert!(text.contains("message ConfigMapList {"));
    assert!(text.contains("  repeated ConfigMap items = 2;"));
    assert!(
        text.contains("  optional .k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime eventTime = 10;")
    );

    let authz = model.group("authorization.k8s.io").expect("authorization");
    let text = emit_proto(authz, &authz.versions[0]);
    assert!(text.contains("  map<string, ExtraValue> extra = 5;"));
    assert!(text.contains("message ExtraValue {"));
}

#[test]
fn by_value_marker_parses_and_a_bad_flag_is_a_spanned_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let group = dir.path().join("things.example.dev");
    std::fs::create_dir_all(&group).expect("mkdir");
    let good = r#"//! Things.
#![group = "things.example.dev"]
#![version = "v1"]
#![storage]

/// A thing.
#[kind(namespaced)]
pub struct Thing {
    /// Metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// A by-value string.
    #[proto(2, by_value)]
    pub note: Option<String>,
}
"#;
    std::fs::write(group.join("v1.rs"), good).expect("write");
    let model = Generator::new(dir.path()).load().expect("loads");
    let thing = model.group("things.example.dev").expect("group").versions[0]
        .struct_named("Thing")
        .expect("Thing");
    assert!(thing.field("note").expect("note").proto_by_value);
    assert!(!thing.field("metadata").expect("metadata").proto_by_value);

    std::fs::write(
        group.join("v1.rs"),
        good.replace("#[proto(2, by_value)]", "#[proto(2, by_reference)]"),
    )
    .expect("write");
    let err = Generator::new(dir.path())
        .load()
        .expect_err("a bad flag fails")
        .to_string();
    assert!(err.contains("v1.rs:13:"), "{err}");
    assert!(err.contains("#[proto(1, by_value)]"), "{err}");
}
