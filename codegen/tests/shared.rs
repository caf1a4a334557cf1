//! The shared definitions (`api-defs/meta.k8s.io/v1.rs`, `#![shared]`): other groups use their
//! structs by name, their Rust goes to apimachinery (not the generated crate), their `.proto`
//! is Kubernetes' meta package and their schemas are the shared OpenAPI definitions; and the
//! markers they need (`#[proto(skip)]`, `#[json(keep_zero)]`, `#[gvk]`, `by_value` times).

mod support;

use codegen::model::TypeRef;
use codegen::{Error, Generator};

fn api_defs() -> std::path::PathBuf {
    support::all_api_defs()
}

fn diagnostics(result: Result<impl std::fmt::Debug, Error>) -> Vec<codegen::Diagnostic> {
    match result {
        Err(Error::Definitions(d)) => d.errors,
        other => panic!("expected definition errors, got {other:?}"),
    }
}

const THING: &str = r#"//! Things.
#![group = "things.example.dev"]
#![version = "v1"]
#![storage]

/// A thing.
#[kind(namespaced)]
pub struct Thing {
    /// Metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// What selects it.
    #[proto(2)]
    pub selector: Option<LabelSelector>,
    /// A local struct named like a shared one.
    #[proto(3)]
    pub status: Option<Status>,
    /// Its conditions.
    #[proto(4)]
    #[list(type = "map", map_keys = ["type"])]
    pub conditions: Vec<Condition>,
}

/// The thing's own status, not meta's.
pub struct Status {
    /// A note.
    #[proto(1)]
    pub note: String,
}
"#;

/// A definitions directory holding only `files` (group directory, file name, text).
fn defs_with(files: &[(&str, &str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (group, name, text) in files {
        std::fs::create_dir_all(dir.path().join(group)).expect("mkdir");
        std::fs::write(dir.path().join(group).join(name), text).expect("write");
    }
    dir
}

#[test]
fn shared_structs_are_linked_by_name_and_local_ones_shadow_them() {
    // No `meta.k8s.io` directory: the generator's built-in copy of the shared file is used.
    let dir = defs_with(&[("things.example.dev", "v1.rs", THING)]);
    let model = Generator::new(dir.path())
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    let shared = model.shared().expect("the built-in shared version");
    assert_eq!(shared.group, "meta.k8s.io");
    assert!(shared.struct_named("ObjectMeta").is_some());
    let thing = model.group("things.example.dev").expect("group").versions[0]
        .struct_named("Thing")
        .expect("Thing");
    let ty = |name: &str| thing.field(name).expect("field").ty.clone();
    assert_eq!(ty("metadata"), TypeRef::Meta("ObjectMeta".into()));
    assert_eq!(
        ty("selector"),
        TypeRef::Option(Box::new(TypeRef::Meta("LabelSelector".into())))
    );
    assert_eq!(
        ty("status"),
        TypeRef::Option(Box::new(TypeRef::Struct("Status".into())))
    );
    assert_eq!(
        ty("conditions"),
        TypeRef::Vec(Box::new(TypeRef::Meta("Condition".into())))
    );
    assert_eq!(
        model
            .api_groups()
            .map(|g| g.name.as_str())
            .collect::<Vec<_>>(),
        ["things.example.dev"]
    );
}

#[test]
fn the_generated_crate_gets_no_rust_of_the_shared_group_but_its_proto_and_schemas() {
    let dir = defs_with(&[("things.example.dev", "v1.rs", THING)]);
    let out = tempfile::tempdir().expect("out");
    let generated = Generator::new(dir.path())
        .generate(out.path())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !generated
            .outputs
            .iter()
            .any(|f| f.starts_with("meta_k8s_io"))
    );
    assert!(
        !generated
            .outputs
            .iter()
            .any(|f| f.starts_with("openapi/meta"))
    );
    let root = std::fs::read_to_string(out.path().join("apiary_generated.rs")).expect("root");
    assert!(!root.contains("meta_k8s_io"), "{root}");
    let group = std::fs::read_to_string(out.path().join("things_example_dev.rs")).expect("rs");
    assert!(group.contains("pub metadata: ::apimachinery::meta::ObjectMeta,"));
    assert!(group.contains("&::apimachinery::meta::SHAPE_LABEL_SELECTOR"));
    assert!(group.contains("pub status: ::std::option::Option<Status>,"));

    let meta = std::fs::read_to_string(
        out.path()
            .join("proto/k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto"),
    )
    .expect("meta proto");
    assert!(meta.contains("package k8s.io.apimachinery.pkg.apis.meta.v1;"));
    assert!(!meta.contains("import \"k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto\""));
    for message in ["ObjectMeta", "Status", "Time", "FieldsV1", "WatchEvent"] {
        assert!(meta.contains(&format!("message {message} {{")), "{message}");
    }
    // Status's apiVersion and kind are `#[proto(skip)]`; a meta Time is named relatively.
    let status = &meta[meta.find("message Status {").expect("Status")..];
    let status = &status[..status.find("\n}").expect("end")];
    assert!(
        !status.contains("apiVersion") && !status.contains(" kind"),
        "{status}"
    );
    assert!(meta.contains("  optional Time creationTimestamp = 8;"));

    let v3: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("openapi/things_example_dev_v1.v3.json"))
            .expect("v3"),
    )
    .expect("json");
    let schemas = &v3["components"]["schemas"];
    let meta_def = |name: &str| &schemas[format!("io.k8s.apimachinery.pkg.apis.meta.v1.{name}")];
    assert_eq!(meta_def("LabelSelector")["x-kubernetes-map-type"], "atomic");
    assert_eq!(
        meta_def("Condition")["required"],
        serde_json::json!(["type", "status", "lastTransitionTime", "reason", "message"])
    );
    assert_eq!(
        meta_def("ObjectMeta")["properties"]["ownerReferences"]["x-kubernetes-list-map-keys"],
        serde_json::json!(["uid"])
    );
    assert_eq!(
        meta_def("Status")["x-kubernetes-group-version-kind"],
        serde_json::json!([{"group": "", "kind": "Status", "version": "v1"}])
    );
    assert!(meta_def("Status")["properties"]["apiVersion"].is_object());
}

#[test]
fn generate_shared_writes_the_rust_of_apimachinery_meta() {
    let out = tempfile::tempdir().expect("out");
    let path = Generator::generate_shared(&api_defs().join("meta.k8s.io"), out.path())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(path.ends_with("meta_k8s_io_v1.rs"));
    let rust = std::fs::read_to_string(&path).expect("read");
    for needle in [
        "pub struct ObjectMeta {",
        "pub struct Status {",
        "impl ::apimachinery::protobuf::ProtoMessage for ObjectMeta",
        "impl ::apimachinery::markers::Validate for OwnerReference",
        "pub static SHAPE_OBJECT_META: ::apimachinery::structure::StructShape",
        "impl ::apimachinery::sample::Sample for Condition",
    ] {
        assert!(rust.contains(needle), "{needle}");
    }
    // `#[proto(8, by_value)]` on `Option<Time>`: an unset creation time is an empty message.
    let compact: String = rust.split_whitespace().collect();
    assert!(
        compact.contains(
            "::apimachinery::protobuf::meta::put_value_time(buf,8u32,&self.creation_timestamp,);"
        ),
        "creationTimestamp is a by-value time"
    );
    assert!(!rust.contains("ResourceInfo") && !rust.contains("register"));
    // `#[json(keep_zero)]`: `Some("")` of a by-value string is written to JSON.
    let name = &rust[rust.find("impl ObjectMeta {").expect("impl")..];
    let name = &name[..name.find("\"generateName\"").expect("generateName")];
    assert!(
        !name.contains("::std::default::Default>::default()"),
        "name keeps its zero value in JSON: {name}"
    );

    let bad = defs_with(&[("things", "v1.rs", THING)]);
    let errors = diagnostics(Generator::generate_shared(
        &bad.path().join("things"),
        out.path(),
    ));
    assert!(
        errors.iter().any(|e| e.message.contains("`#![shared]`")),
        "{errors:#?}"
    );
}

#[test]
fn marker_mistakes_of_shared_features_are_spanned_errors() {
    let text = THING
        .replace(
            "    /// A note.\n    #[proto(1)]\n    pub note: String,",
            "    /// A note.\n    #[proto(1)]\n    #[json(keep_zero)]\n    pub note: String,\n    /// Notes.\n    #[proto(2, by_value)]\n    pub notes: Vec<String>,\n    /// Bad.\n    #[proto(skip, 3)]\n    pub bad: String,",
        )
        .replace(
            "#[kind(namespaced)]",
            "#[kind(namespaced)]\n#[gvk(group = \"\", version = \"v1\")]",
        );
    let dir = defs_with(&[("things.example.dev", "v1.rs", &text)]);
    let errors = diagnostics(Generator::new(dir.path()).load());
    let messages: Vec<&str> = errors.iter().map(|e| e.message.as_str()).collect();
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("`#[proto]` takes a field number")),
        "{messages:#?}"
    );
    assert!(
        messages.contains(
            &"`#[json(keep_zero)]` applies to `#[proto(N, by_value)]` fields: add `by_value` or remove it"
        ),
        "{messages:#?}"
    );
    assert!(
        messages.iter().any(
            |m| m.starts_with("`by_value` applies to an `Option`") && m.contains("Vec<String>")
        ),
        "{messages:#?}"
    );
    assert!(
        messages.contains(&"a kind has its group, version and kind already: remove `#[gvk]`"),
        "{messages:#?}"
    );
    assert!(errors.iter().all(|e| e.loc.line > 1), "{errors:#?}");
}

#[test]
fn a_shared_version_has_no_kinds_and_an_unknown_type_suggests_shared_names() {
    let meta = std::fs::read_to_string(api_defs().join("meta.k8s.io/v1.rs")).expect("read");
    let meta = meta.replacen(
        "/// The metadata of a list.\npub struct ListMeta {",
        "/// The metadata of a list.\n#[kind(cluster)]\npub struct ListMeta {",
        1,
    );
    let thing = THING.replace(
        "pub selector: Option<LabelSelector>",
        "pub selector: Option<LabelSelectr>",
    );
    let dir = defs_with(&[
        ("meta.k8s.io", "v1.rs", &meta),
        ("things.example.dev", "v1.rs", &thing),
    ]);
    let errors = diagnostics(Generator::new(dir.path()).load());
    let messages: Vec<&str> = errors.iter().map(|e| e.message.as_str()).collect();
    assert!(
        messages.contains(&"the shared version has no kinds: define kinds in a group of their own"),
        "{messages:#?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("unknown type `LabelSelectr`; did you mean `LabelSelector`?")),
        "{messages:#?}"
    );
}
