//! Structs that contain themselves (`Option<Box<T>>`) and structs whose JSON is written by hand
//! (`#[json(custom)]`), as the JSON schema types of apiextensions.k8s.io need, and the errors
//! for their misuse.

use std::path::Path;

use codegen::{Error, Generator};

const SCHEMAS: &str = r#"//! Schemas.
#![group = "schemas.example"]
#![version = "v1"]
#![storage]

/// A Shape holds a schema.
#[kind(cluster)]
pub struct Shape {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The schema.
    #[proto(2)]
    pub schema: Option<Schema>,
}

/// A schema of a value.
pub struct Schema {
    /// The type of the value.
    #[proto(1, by_value)]
    #[json(name = "x-type")]
    pub x_type: Option<String>,
    /// A schema the value must not match.
    #[proto(2)]
    pub not: Option<Box<Schema>>,
    /// Whether other properties are allowed, or their schema.
    #[proto(3)]
    pub additional: Option<SchemaOrBool>,
}

/// A schema or a boolean.
#[json(custom)]
pub struct SchemaOrBool {
    /// Whether it is allowed.
    #[proto(1)]
    pub allows: bool,
    /// The schema.
    #[proto(2)]
    pub schema: Option<Box<Schema>>,
}
"#;

/// Writes the definitions (with `SCHEMAS` edited by `edit`) into a new directory.
fn defs(edit: impl FnOnce(String) -> String) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let group = dir.path().join("schemas.example");
    std::fs::create_dir_all(&group).expect("mkdir");
    std::fs::write(group.join("v1.rs"), edit(SCHEMAS.to_string())).expect("write");
    dir
}

fn errors_of(dir: &Path) -> Vec<String> {
    match Generator::new(dir).load() {
        Err(Error::Definitions(d)) => d.errors.iter().map(|e| e.message.clone()).collect(),
        other => panic!("expected definition errors, got {other:?}"),
    }
}

#[test]
fn boxed_fields_and_custom_json_generate() {
    let dir = defs(|s| s);
    let model = Generator::new(dir.path())
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    let v1 = model
        .group("schemas.example")
        .unwrap()
        .version("v1")
        .unwrap();
    let schema = v1.struct_named("Schema").unwrap();
    assert!(schema.field("not").unwrap().boxed);
    assert!(!schema.json_custom);
    assert!(v1.struct_named("SchemaOrBool").unwrap().json_custom);
    // A JSON name that is no identifier gives the proto field the Rust name's lowerCamelCase.
    assert_eq!(schema.field("x_type").unwrap().proto_name(), "xType");

    let out = tempfile::tempdir().expect("out");
    Generator::new(dir.path())
        .generate(out.path())
        .unwrap_or_else(|e| panic!("{e}"));
    let rust = std::fs::read_to_string(out.path().join("schemas_example.rs")).expect("rust");
    let compact: String = rust.split_whitespace().collect();
    assert!(
        compact.contains("pubnot:::std::option::Option<::std::boxed::Box<Schema>>"),
        "the boxed field"
    );
    // The custom struct has no generated serde impls; the others do.
    assert!(
        !compact.contains("Serializefor SchemaOrBool")
            && !compact.contains("SerializeforSchemaOrBool")
    );
    assert!(compact.contains("SerializeforSchema{"));

    let proto = std::fs::read_dir(out.path().join("proto"))
        .expect("proto dir")
        .map(|e| e.expect("entry").path())
        .find(|p| p.extension().is_some_and(|x| x == "proto"))
        .map(|p| std::fs::read_to_string(p).expect("proto"))
        .expect("a .proto file");
    assert!(proto.contains("optional string xType = 1;"), "{proto}");
    assert!(proto.contains("optional Schema not = 2;"), "{proto}");
    assert!(
        proto.contains("optional SchemaOrBool additional = 3;"),
        "{proto}"
    );

    let v3: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("openapi/schemas_example_v1.v3.json"))
            .expect("openapi"),
    )
    .expect("json");
    let schemas = v3
        .pointer("/components/schemas")
        .unwrap()
        .as_object()
        .unwrap();
    let (_, or_bool) = schemas
        .iter()
        .find(|(k, _)| k.ends_with(".SchemaOrBool"))
        .expect("SchemaOrBool schema");
    assert_eq!(
        or_bool,
        &serde_json::json!({"description": "A schema or a boolean."}),
        "a custom-JSON struct's schema says nothing of its shape"
    );
}

#[test]
fn a_box_of_anything_but_a_struct_is_an_error() {
    let dir = defs(|s| {
        s.replace(
            "pub x_type: Option<String>",
            "pub x_type: Option<Box<String>>",
        )
    });
    let errors = errors_of(dir.path());
    assert!(
        errors
            .iter()
            .any(|e| e.contains("`Box` holds a struct of this file")),
        "{errors:#?}"
    );
    let dir = defs(|s| s.replace("pub not: Option<Box<Schema>>", "pub not: Vec<Box<Schema>>"));
    let errors = errors_of(dir.path());
    assert!(
        errors
            .iter()
            .any(|e| e.contains("`Box` is only for a struct that contains itself")),
        "{errors:#?}"
    );
}

#[test]
fn custom_json_is_refused_on_kinds_and_inline_fields_and_takes_one_key() {
    let dir = defs(|s| s.replace("#[kind(cluster)]", "#[kind(cluster)]\n#[json(custom)]"));
    let errors = errors_of(dir.path());
    assert!(
        errors
            .iter()
            .any(|e| e.contains("a kind's JSON is generated")),
        "{errors:#?}"
    );
    let dir = defs(|s| s.replace("#[json(custom)]", "#[json(hand)]"));
    let errors = errors_of(dir.path());
    assert!(
        errors
            .iter()
            .any(|e| e.contains("on a struct, `#[json]` takes only `custom`")),
        "{errors:#?}"
    );
    let dir = defs(|s| {
        s.replace(
            "    #[proto(3)]\n    pub additional: Option<SchemaOrBool>,",
            "    #[proto(3)]\n    #[json(inline)]\n    pub additional: SchemaOrBool,",
        )
    });
    let errors = errors_of(dir.path());
    assert!(
        errors
            .iter()
            .any(|e| e.contains("writes its own JSON (`#[json(custom)]`)")),
        "{errors:#?}"
    );
}
