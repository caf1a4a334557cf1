//! The generator as a library, on temporary copies of `api-defs`.

mod support;

use std::path::{Path, PathBuf};

use codegen::{Error, Generator};

/// Copies the shipped definitions into a temporary directory.
fn copy_api_defs() -> tempfile::TempDir {
    let src = support::all_api_defs();
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(&src, dir.path());
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let path = entry.expect("entry").path();
        let target = to.join(path.file_name().expect("name"));
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).expect("copy");
        }
    }
}

fn diagnostics(result: Result<impl std::fmt::Debug, Error>) -> Vec<codegen::Diagnostic> {
    match result {
        Err(Error::Definitions(d)) => d.errors,
        other => panic!("expected definition errors, got {other:?}"),
    }
}

const TOY: &str = r#"//! Toys.
#![group = "toys.example"]
#![version = "v1"]
#![storage]

/// A Toy is something to play with.
#[kind(cluster, short_names = ["ty"])]
#[print_column(name = "Color", type = "string", json_path = ".spec.color")]
pub struct Toy {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The toy.
    #[proto(2)]
    pub spec: ToySpec,
}

/// What the toy is like.
pub struct ToySpec {
    /// Its color.
    #[proto(1)]
    #[validate(enum = ["red", "blue"])]
    #[default("red")]
    pub color: String,
}
"#;

#[test]
fn a_new_kind_file_yields_type_registration_openapi_and_route() {
    let defs = copy_api_defs();
    std::fs::create_dir_all(defs.path().join("toys.example")).expect("mkdir");
    std::fs::write(defs.path().join("toys.example/v1.rs"), TOY).expect("write");
    let out = tempfile::tempdir().expect("out");
    let generated = Generator::new(defs.path())
        .generate(out.path())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        generated
            .inputs
            .iter()
            .any(|p| p.ends_with("toys.example/v1.rs"))
    );
    let group = std::fs::read_to_string(out.path().join("toys_example.rs")).expect("group file");
    assert!(group.contains("pub struct Toy {"), "type");
    assert!(group.contains("pub struct ToyList {"), "list type");
    assert!(group.contains("scheme.add_kind(&TOY_KIND)"), "registration");
    assert!(
        group.contains("pub static TOY_KIND: ::apimachinery::runtime::Kind"),
        "kind table"
    );
    assert!(
        group.contains("&::apimachinery::strategy::DefaultStrategy"),
        "a new kind gets the default strategy"
    );
    assert!(
        group.contains("pub const TOY_RESOURCE: ::apimachinery::ResourceInfo"),
        "route entry"
    );
    assert!(group.contains("plural: \"toys\""), "plural via heck");
    assert!(group.contains("scope: ::apimachinery::Scope::Cluster"));
    let root = std::fs::read_to_string(out.path().join("apiary_generated.rs")).expect("root");
    assert!(root.contains("pub mod toys_example"));
    assert!(root.contains("toys_example::register(scheme);"));
    let v3 = out.path().join("openapi/toys_example_v1.v3.json");
    let v3: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(v3).expect("openapi v3")).expect("json");
    assert!(v3.is_object());
    if let Some(schemas) = v3
        .pointer("/components/schemas")
        .and_then(|s| s.as_object())
    {
        assert!(
            schemas.keys().any(|k| k.ends_with(".Toy")),
            "OpenAPI schema of Toy: {:?}",
            schemas.keys().collect::<Vec<_>>()
        );
    }
}

#[test]
fn generation_is_deterministic() {
    let defs = copy_api_defs();
    let (a, b) = (
        tempfile::tempdir().expect("a"),
        tempfile::tempdir().expect("b"),
    );
    let ga = Generator::new(defs.path()).generate(a.path()).expect("a");
    let gb = Generator::new(defs.path()).generate(b.path()).expect("b");
    assert_eq!(ga.outputs, gb.outputs);
    for f in &ga.outputs {
        let read = |d: &Path| std::fs::read(d.join(f)).expect("read");
        assert_eq!(read(a.path()), read(b.path()), "{f} differs between runs");
    }
}

#[test]
fn a_misspelt_marker_is_a_spanned_error_with_a_suggestion() {
    let defs = copy_api_defs();
    let file = defs.path().join("example.dev/v1.rs");
    let text = std::fs::read_to_string(&file).expect("read");
    let text = text.replacen(
        "#[validate(minimum = 0, maximum = 1000)]",
        "#[valdiate(minimum = 0, maximum = 1000)]",
        1,
    );
    let text = text.replacen(
        "#[kind(namespaced, status,",
        "#[kind(namespaced, stauts,",
        1,
    );
    std::fs::write(&file, &text).expect("write");
    let errors = diagnostics(Generator::new(defs.path()).load());
    let line_of = |needle: &str| {
        text.lines()
            .position(|l| l.contains(needle))
            .map(|i| i + 1)
            .expect("line")
    };
    let rendered: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(errors.len(), 2, "{rendered:#?}");
    assert_eq!(
        errors[0].message,
        "unknown key `stauts` in `#[kind]`; did you mean `status`?"
    );
    assert_eq!(
        (errors[0].loc.line, errors[0].loc.column),
        (line_of("stauts"), 20)
    );
    assert_eq!(
        errors[1].message,
        "unknown marker `valdiate`; did you mean `validate`?"
    );
    assert_eq!(
        (errors[1].loc.line, errors[1].loc.column),
        (line_of("valdiate"), 7)
    );
    assert!(
        rendered[1].ends_with(&format!("{}:{}:7", file.display(), line_of("valdiate"))),
        "{}",
        rendered[1]
    );
}

#[test]
fn a_missing_conversion_hook_names_the_field_and_the_signature() {
    let defs = copy_api_defs();
    std::fs::remove_file(defs.path().join("example.dev/hooks.rs")).expect("rm hooks");
    let errors = diagnostics(Generator::new(defs.path()).load());
    assert_eq!(errors.len(), 1, "{errors:#?}");
    let e = &errors[0];
    assert!(e.loc.file.ends_with("example.dev/v1alpha1.rs"));
    assert!(
        e.message.starts_with(
            "field `size` of `WidgetSpec` in example.dev/v1alpha1 has no matching field"
        ),
        "{}",
        e.message
    );
    assert!(e.message.contains(
        "pub fn v1alpha1_widget_spec_to_internal(src: &v1alpha1::WidgetSpec, dst: &mut internal::WidgetSpec) { … }"
    ));
    assert!(e.message.contains(
        "pub fn internal_widget_spec_to_v1alpha1(src: &internal::WidgetSpec, dst: &mut v1alpha1::WidgetSpec) { … }"
    ));
}

#[test]
fn type_and_marker_mistakes_are_all_reported_at_once() {
    let defs = copy_api_defs();
    let dir: PathBuf = defs.path().join("toys.example");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let bad = TOY
        .replace("pub color: String,", "pub color: Strng,\n    #[validate(pattern = \"^a\")]\n    pub size: i32,\n    pub map: HashMap<String, String>,")
        .replace("#![storage]\n", "");
    std::fs::write(dir.join("v1.rs"), bad).expect("write");
    let errors = diagnostics(Generator::new(defs.path()).load());
    let messages: Vec<&str> = errors.iter().map(|e| e.message.as_str()).collect();
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("group `toys.example` has no storage version")),
        "{messages:#?}"
    );
    assert!(messages.contains(&"unknown type `Strng`; did you mean `String`?; define `pub struct Strng { … }` in this file or use a known type"), "{messages:#?}");
    assert!(messages.contains(&"`pattern` applies to strings (`String`), not to `i32`; remove it or change the field type"), "{messages:#?}");
    assert!(
        messages
            .iter()
            .any(|m| m.contains("write `BTreeMap<String, T>`")),
        "{messages:#?}"
    );
}

#[test]
fn defaulting_and_validation_hooks_are_called_when_defined() {
    let defs = copy_api_defs();
    let hooks = defs.path().join("example.dev/hooks.rs");
    let mut text = std::fs::read_to_string(&hooks).expect("read hooks");
    text.push_str(
        "\npub fn default_v1_widget_spec(obj: &mut v1::WidgetSpec) { obj.replicas += 0; }\n",
    );
    std::fs::write(&hooks, text).expect("write hooks");
    let out = tempfile::tempdir().expect("out");
    Generator::new(defs.path())
        .generate(out.path())
        .unwrap_or_else(|e| panic!("{e}"));
    let group = std::fs::read_to_string(out.path().join("example_dev.rs")).expect("group file");
    let squashed: String = group
        .split_whitespace()
        .collect::<String>()
        .replace(",>", ">");
    assert!(squashed.contains("pubfnrun_default_hooks_widget_spec(obj:&mutWidgetSpec){super::hooks::default_v1_widget_spec(obj);}"), "spec hook");
    assert!(squashed.contains("pubfnrun_default_hooks_widget(obj:&mutWidget){run_default_hooks_widget_spec(&mutobj.spec);}"), "recursion");
    assert!(
        squashed.contains("fnrun_default_hooks(&mutself){v1::run_default_hooks_widget(self)}"),
        "decoding v1 runs the hooks"
    );
    assert_eq!(
        squashed.matches("fnrun_default_hooks(&mutself)").count(),
        1,
        "other versions do not"
    );
    assert!(
        squashed.contains("hooks::validate_v1_widget(self,errors);"),
        "validation hook"
    );
}

#[test]
fn a_cel_rule_that_does_not_compile_fails_the_build() {
    let defs = copy_api_defs();
    let file = defs.path().join("example.dev/v1.rs");
    let text = std::fs::read_to_string(&file).expect("read");
    std::fs::write(
        &file,
        text.replacen("self.spec.replicas > 100)", "self.spec.replicas > )", 1),
    )
    .expect("write");
    let errors = diagnostics(Generator::new(defs.path()).load());
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0]
            .message
            .starts_with("the CEL rule `!(has(self.spec.color)"),
        "{}",
        errors[0].message
    );
    assert!(errors[0].message.contains("does not compile"));
    assert!(errors[0].loc.file.ends_with("example.dev/v1.rs"));
}

#[test]
fn a_kind_key_given_twice_is_an_error() {
    let defs = copy_api_defs();
    let file = defs.path().join("example.dev/v1.rs");
    let text = std::fs::read_to_string(&file).expect("read");
    let text = text.replacen(
        "#[kind(namespaced, status,",
        "#[kind(plural = \"widgets\")]\n#[kind(plural = \"widgets\", namespaced, status,",
        1,
    );
    std::fs::write(&file, &text).expect("write");
    let errors = diagnostics(Generator::new(defs.path()).load());
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(
        errors[0].message,
        "`plural` is given twice in `#[kind]`; keep one"
    );
    let line = text
        .lines()
        .position(|l| l.contains("plural = \"widgets\", namespaced"))
        .map(|i| i + 1)
        .expect("line");
    assert_eq!((errors[0].loc.line, errors[0].loc.column), (line, 8));
}

#[test]
fn create_on_update_on_a_create_only_kind_is_an_error() {
    let defs = copy_api_defs();
    let file = defs.path().join("authentication.k8s.io/v1.rs");
    let text = std::fs::read_to_string(&file).expect("read");
    let text = text.replacen(
        "#[kind(cluster, create_only, strategic_merge_patch)]",
        "#[kind(cluster, create_only, strategic_merge_patch, create_on_update)]",
        1,
    );
    std::fs::write(&file, &text).expect("write");
    let errors = diagnostics(Generator::new(defs.path()).load());
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(
        errors[0].message,
        "`create_on_update` needs updates, and a `create_only` kind has none; keep one"
    );
    assert!(errors[0].loc.file.ends_with("authentication.k8s.io/v1.rs"));
}

#[test]
fn an_unserved_version_is_generated_but_not_registered() {
    let defs = copy_api_defs();
    let file = defs.path().join("example.dev/v1alpha1.rs");
    let text = std::fs::read_to_string(&file).expect("read");
    let text = text.replacen(
        "#![version = \"v1alpha1\"]",
        "#![version = \"v1alpha1\"]\n#![served = false]",
        1,
    );
    std::fs::write(&file, &text).expect("write");
    let out = tempfile::tempdir().expect("out");
    Generator::new(defs.path())
        .generate(out.path())
        .unwrap_or_else(|e| panic!("{e}"));
    let group = std::fs::read_to_string(out.path().join("example_dev.rs")).expect("group file");
    // The types and conversions stay available to clients...
    assert!(group.contains("pub mod v1alpha1"), "v1alpha1 module");
    assert!(group.contains("pub const WIDGET_RESOURCE: ::apimachinery::ResourceInfo"));
    // ...but the kind's served versions and the OpenAPI registrations name only v1.
    assert!(group.contains("v1::WIDGET_RESOURCE"), "v1 is served");
    assert!(
        !group.contains("v1alpha1::WIDGET_RESOURCE"),
        "v1alpha1 must not be served"
    );
    assert_eq!(group.matches(".add_openapi(").count(), 1);
    assert!(!group.contains("/openapi/example_dev_v1alpha1.v3.json"));
}

#[test]
fn the_storage_version_must_be_served() {
    let defs = copy_api_defs();
    let file = defs.path().join("example.dev/v1.rs");
    let text = std::fs::read_to_string(&file).expect("read");
    std::fs::write(
        &file,
        text.replacen("#![storage]", "#![storage]\n#![served = false]", 1),
    )
    .expect("write");
    let errors = diagnostics(Generator::new(defs.path()).load());
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0]
            .message
            .starts_with("the storage version must be served"),
        "{}",
        errors[0].message
    );
    assert!(errors[0].loc.file.ends_with("example.dev/v1.rs"));
}

#[test]
fn a_served_marker_that_is_not_a_boolean_is_a_spanned_error() {
    let defs = copy_api_defs();
    let file = defs.path().join("example.dev/v1alpha1.rs");
    let text = std::fs::read_to_string(&file).expect("read");
    let text = text.replacen(
        "#![version = \"v1alpha1\"]",
        "#![version = \"v1alpha1\"]\n#![served = \"no\"]",
        1,
    );
    std::fs::write(&file, &text).expect("write");
    let errors = diagnostics(Generator::new(defs.path()).load());
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(
        errors[0].message,
        "write `#![served = false]` (or leave it out: versions are served by default)"
    );
    let line = text
        .lines()
        .position(|l| l.contains("#![served = \"no\"]"))
        .map(|i| i + 1)
        .expect("line");
    assert_eq!((errors[0].loc.line, errors[0].loc.column), (line, 13));
}

#[test]
fn a_subresource_without_a_kind_with_other_verbs_or_an_update_of_another_kind_is_an_error() {
    let defs = copy_api_defs();
    let file = defs.path().join("core/v1.rs");
    let text = std::fs::read_to_string(&file).expect("read");
    let text = text.replacen(
        "#[subresource(name = \"token\", group = \"authentication.k8s.io\", version = \"v1\", kind = \"TokenRequest\")]",
        "#[subresource(name = \"token\", version = \"v1\")]\n#[subresource(name = \"other\", version = \"v1\", kind = \"X\", verbs = [\"get\"])]\n#[subresource(name = \"mine\", kind = \"X\", verbs = [\"update\"])]",
        1,
    );
    std::fs::write(&file, &text).expect("write");
    let errors = diagnostics(Generator::new(defs.path()).load());
    let messages: Vec<&str> = errors.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "`#[subresource]` needs a name, a version and a kind, such as `#[subresource(name = \"token\", group = \"authentication.k8s.io\", version = \"v1\", kind = \"TokenRequest\")]`",
            "`#[subresource]` serves `create` (of another kind, the default) or `update` (of the kind itself): write `verbs = [\"create\"]` or `verbs = [\"update\"]`",
            "an `update` `#[subresource]` writes the kind itself: give it a name and leave out group, version and kind, such as `#[subresource(name = \"finalize\", verbs = [\"update\"])]`",
        ]
    );
}
