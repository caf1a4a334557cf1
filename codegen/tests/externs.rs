//! Definitions that refer to another crate's types (`core::v1::ObjectReference` of the
//! `kubernetes-api` crate): the Rust paths, the protobuf import, the OpenAPI `$ref`s with the
//! referenced definitions in the document, the validation and shape walks, and the errors for
//! a reference that names nothing.

mod support;

use std::path::{Path, PathBuf};

use codegen::emit::openapi::emit_openapi_v3;
use codegen::emit::proto::emit_proto;
use codegen::{Error, Generator};

/// A group whose kind refers to the Kubernetes groups' structs and to meta structs.
const THINGS_V1: &str = r#"//! Things.
#![group = "things.example.dev"]
#![version = "v1"]
#![storage]

/// A Thing points at other objects.
#[kind(namespaced)]
pub struct Thing {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The desired state.
    #[proto(2)]
    pub spec: ThingSpec,
}

/// What a Thing wants.
pub struct ThingSpec {
    /// The object this Thing points at.
    #[proto(1)]
    pub target: Option<core::v1::ObjectReference>,
    /// Who may use it.
    #[proto(2)]
    #[list(type = "map", map_keys = ["kind", "name"])]
    pub subjects: Vec<rbac_authorization_k8s_io::v1::Subject>,
    /// Which objects it selects.
    #[proto(3)]
    pub selector: Option<LabelSelector>,
}
"#;

/// The Kubernetes groups' definitions (the `kubernetes-api` crate's).
fn kubernetes_api_defs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../generated/kubernetes/api-defs")
}

/// A definitions directory with one group `things.example.dev` whose `v1.rs` is `text`.
fn things(text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let group = dir.path().join("things.example.dev");
    std::fs::create_dir_all(&group).expect("mkdir");
    std::fs::write(group.join("v1.rs"), text).expect("write");
    dir
}

fn generator(dir: &Path) -> Generator {
    Generator::new(dir).extern_crate("kubernetes_api", kubernetes_api_defs())
}

fn diagnostics(result: Result<impl std::fmt::Debug, Error>) -> Vec<codegen::Diagnostic> {
    match result {
        Err(Error::Definitions(d)) => d.errors,
        other => panic!("expected definition errors, got {other:?}"),
    }
}

#[test]
fn rust_names_the_extern_crates_types_and_walks_them() {
    let dir = things(THINGS_V1);
    let rust = generator(dir.path())
        .show_rust("things.example.dev/v1")
        .unwrap_or_else(|e| panic!("{e}"));
    let rust = rust.split_whitespace().collect::<Vec<_>>().join(" ");
    for expected in [
        "pub target: ::std::option::Option<::kubernetes_api::core::v1::ObjectReference>",
        "pub subjects: ::std::vec::Vec< ::kubernetes_api::rbac_authorization_k8s_io::v1::Subject, >",
        "pub selector: ::std::option::Option<::apimachinery::meta::LabelSelector>",
        "::apimachinery::structure::Shape::Struct( &::kubernetes_api::core::v1::SHAPE_OBJECT_REFERENCE, )",
        "&::kubernetes_api::rbac_authorization_k8s_io::v1::SHAPE_SUBJECT",
    ] {
        assert!(rust.contains(expected), "missing `{expected}` in:\n{rust}");
    }
    // The validation walk enters the extern struct (its own `Validate`) and checks the keys.
    assert!(
        rust.contains("::apimachinery::markers::Validate::validate(v, &p, errors)"),
        "{rust}"
    );
    assert!(
        rust.contains("check_list_map_keys( v, &p, &[\"kind\", \"name\"], errors, )"),
        "{rust}"
    );
}

#[test]
fn proto_imports_the_extern_package_and_openapi_includes_its_definitions() {
    let dir = things(THINGS_V1);
    let model = generator(dir.path())
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    let group = model.group("things.example.dev").expect("group");
    let version = group.version("v1").expect("v1");
    support::check_golden("things.example.dev_v1.proto", &emit_proto(group, version));
    let v3 = emit_openapi_v3(&model, group, version);
    support::check_golden(
        "things.example.dev_v1.openapi_v3.json",
        &(serde_json::to_string_pretty(&v3).expect("json") + "\n"),
    );
    let schemas = &v3["components"]["schemas"];
    assert_eq!(
        schemas["dev.example.things.v1.ThingSpec"]["properties"]["target"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.api.core.v1.ObjectReference"
    );
    // `kubectl explain` reads the referenced definitions from the same document.
    assert!(schemas["io.k8s.api.core.v1.ObjectReference"]["properties"]["fieldPath"].is_object());
    assert!(schemas["io.k8s.api.rbac.v1.Subject"]["properties"]["apiGroup"].is_object());
    assert!(schemas.get("io.k8s.api.core.v1.Pod").is_none());
}

#[test]
fn generated_proto_directory_compiles_with_the_extern_files() {
    let dir = things(THINGS_V1);
    let out = tempfile::tempdir().expect("out dir");
    let generated = generator(dir.path())
        .generate(out.path())
        .unwrap_or_else(|e| panic!("{e}"));
    // protoc ran over the output (it fails generation otherwise), which holds the imported files.
    for path in [
        "proto/dev.example.things.v1.proto",
        "proto/k8s.io.api.core.v1.proto",
        "proto/k8s.io.api.rbac.v1.proto",
    ] {
        assert!(generated.outputs.iter().any(|o| o == path), "{path}");
    }
    // Only this crate's groups are emitted as Rust.
    assert!(!generated.outputs.iter().any(|o| o == "core.rs"));
    assert!(generated.inputs.iter().any(|i| i.ends_with("core/v1.rs")));
}

#[test]
fn an_unknown_extern_type_is_a_spanned_error_with_the_fix() {
    let text = THINGS_V1
        .replace("core::v1::ObjectReference", "core::v1::ObjectRefrence")
        .replace(
            "rbac_authorization_k8s_io::v1",
            "rbac_authorization_k8s_io::v2",
        );
    let dir = things(&text);
    let errors = diagnostics(generator(dir.path()).load());
    let messages: Vec<&str> = errors.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "unknown type `core::v1::ObjectRefrence`: `core::v1` of crate `kubernetes_api` has no struct `ObjectRefrence`; did you mean `ObjectReference`?",
            "unknown type `rbac_authorization_k8s_io::v2::Subject`: group `rbac_authorization_k8s_io` of crate `kubernetes_api` has no version `v2`; did you mean `v1`?; its versions are v1",
        ]
    );
    assert!(errors[0].loc.file.ends_with("things.example.dev/v1.rs"));
    // The fields' lines in the file.
    assert_eq!((errors[0].loc.line, errors[1].loc.line), (21, 25));
}

#[test]
fn an_unknown_extern_group_names_the_known_ones() {
    let dir = things(&THINGS_V1.replace("core::v1::", "corr::v1::"));
    let errors = diagnostics(generator(dir.path()).load());
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].message.starts_with(
            "unknown type `corr::v1::ObjectReference`: no group `corr`; did you mean `core`?; the groups of the crates this one depends on are "
        ),
        "{}",
        errors[0].message
    );
    // Without the dependency, the message says where extern groups come from.
    let errors = diagnostics(Generator::new(dir.path()).load());
    assert!(
        errors[0]
            .message
            .contains("no crate this one depends on publishes its definitions"),
        "{}",
        errors[0].message
    );
}

#[test]
fn paths_of_other_shapes_and_redefined_groups_are_errors() {
    let dir = things(&THINGS_V1.replace("core::v1::ObjectReference", "v1::ObjectReference"));
    let errors = diagnostics(generator(dir.path()).load());
    assert_eq!(
        errors[0].message,
        "a type of another crate's group is written `<group module>::<version>::<Type>`, such as `core::v1::ObjectReference`"
    );
    let keys = THINGS_V1.replace(
        "map_keys = [\"kind\", \"name\"]",
        "map_keys = [\"kind\", \"nmae\"]",
    );
    let dir = things(&keys);
    let errors = diagnostics(generator(dir.path()).load());
    assert_eq!(
        errors[0].message,
        "map key `nmae` is not a JSON field of `rbac_authorization_k8s_io::v1::Subject`; did you mean `name`?"
    );
    // A crate defining a group its dependency defines.
    let dir = tempfile::tempdir().expect("temp dir");
    support::copy_groups(&kubernetes_api_defs(), dir.path());
    let errors = diagnostics(generator(dir.path()).load());
    assert!(
        errors.iter().any(|e| e.message
            == "group `coordination.k8s.io` is defined by the crate `kubernetes_api` this crate depends on; use its types as `coordination_k8s_io::<version>::<Type>` instead of defining the group again"),
        "{errors:?}"
    );
}

#[test]
fn dependency_definitions_come_from_the_links_metadata() {
    let vars = [
        (
            "DEP_APIARY_KUBERNETES_API_API_DEFS",
            "/src/kubernetes/api-defs",
        ),
        ("DEP_APIARY_KUBERNETES_API_RUST_CRATE", "kubernetes_api"),
        ("DEP_APIARY_KUBERNETES_API_PROTO_DIR", "/out/proto"),
        // A dependency without the crate name is not one `compile` published.
        ("DEP_OTHER_API_DEFS", "/elsewhere"),
        ("PATH", "/bin"),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()));
    assert_eq!(
        codegen::build::dependency_definitions(vars),
        [(
            "kubernetes_api".to_string(),
            PathBuf::from("/src/kubernetes/api-defs")
        )]
    );
}

#[test]
fn the_published_crate_name_is_the_library_name() {
    // The Kubernetes crate's manifest: the package `apiary-kubernetes-api`, the library
    // `kubernetes_api`, which is the name its dependents' generated code uses.
    let manifest = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../generated/kubernetes/Cargo.toml"),
    )
    .expect("the Kubernetes crate's manifest");
    assert_eq!(
        codegen::build::lib_name(&manifest).as_deref(),
        Some("kubernetes_api")
    );
    // As `cargo package` writes it, and without a `[lib]` name.
    assert_eq!(
        codegen::build::lib_name(
            "[package]\nname = \"apiary-x\"\n\n[lib]\nname = \"x\" # short\npath = \"src/lib.rs\"\n"
        )
        .as_deref(),
        Some("x")
    );
    assert_eq!(
        codegen::build::lib_name("[package]\nname = \"x\"\n\n[lib]\nproc-macro = true\n"),
        None
    );
}
