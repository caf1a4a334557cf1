//! A kind defined in one version only, outside the hub, is stored in that version and is its
//! own hub (Kubernetes' `MutatingAdmissionPolicy`, only in `admissionregistration.k8s.io/v1beta1`
//! while the group stores its other kinds in `v1`); a kind in two versions still needs the hub.

use std::path::Path;

use codegen::{Error, Generator};

/// The storage version: `Toy` only.
const V1: &str = r#"//! Gadgets, stable.
#![group = "gadgets.example"]
#![version = "v1"]
#![storage]
#![priority = 20]

/// A Toy is something to play with.
#[kind(cluster)]
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
    pub color: Option<Color>,
}

/// A color.
pub struct Color {
    /// Its name.
    #[proto(1)]
    pub name: String,
}
"#;

/// A preview version: `Toy` again, and `Gadget`, which only this version has.
const V1BETA1: &str = r#"//! Gadgets, preview.
#![group = "gadgets.example"]
#![version = "v1beta1"]

/// A Toy is something to play with.
#[kind(cluster)]
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
    pub color: Option<Color>,
}

/// A color.
pub struct Color {
    /// Its name.
    #[proto(1)]
    pub name: String,
}

/// A Gadget exists in this version only.
#[kind(namespaced, field_selectors = ["spec.mode"])]
pub struct Gadget {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The gadget.
    #[proto(2)]
    pub spec: GadgetSpec,
}

/// What the gadget does; the hub has no such struct.
pub struct GadgetSpec {
    /// How it runs.
    #[proto(1)]
    pub mode: String,
    /// Its color, a struct the hub has too.
    #[proto(2)]
    pub color: Option<Color>,
}
"#;

/// A definitions directory with the shipped shared group and the files given (group
/// directory, file name, text).
fn defs_with(files: &[(&str, &str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let meta = Path::new(env!("CARGO_MANIFEST_DIR")).join("api-defs/meta.k8s.io");
    std::fs::create_dir_all(dir.path().join("meta.k8s.io")).expect("mkdir");
    for entry in std::fs::read_dir(&meta).expect("read meta.k8s.io") {
        let path = entry.expect("entry").path();
        std::fs::copy(
            &path,
            dir.path()
                .join("meta.k8s.io")
                .join(path.file_name().unwrap()),
        )
        .expect("copy");
    }
    for (group, name, text) in files {
        std::fs::create_dir_all(dir.path().join(group)).expect("mkdir");
        std::fs::write(dir.path().join(group).join(name), text).expect("write");
    }
    dir
}

fn diagnostics(result: Result<impl std::fmt::Debug, Error>) -> Vec<codegen::Diagnostic> {
    match result {
        Err(Error::Definitions(d)) => d.errors,
        other => panic!("expected definition errors, got {other:?}"),
    }
}

/// The module `name` of a parsed group file.
fn module<'a>(file: &'a syn::File, name: &str) -> &'a [syn::Item] {
    file.items
        .iter()
        .find_map(|item| match item {
            syn::Item::Mod(m) if m.ident == name => m.content.as_ref().map(|(_, i)| &i[..]),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no module {name}"))
}

/// The `storage_version` field of the `ResourceInfo` constant `name` among `items`.
fn storage_flag(items: &[syn::Item], name: &str) -> bool {
    let expr = items
        .iter()
        .find_map(|item| match item {
            syn::Item::Const(c) if c.ident == name => Some(&*c.expr),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no const {name}"));
    let syn::Expr::Struct(s) = expr else {
        panic!("{name} is not a struct literal")
    };
    let field = s
        .fields
        .iter()
        .find(|f| matches!(&f.member, syn::Member::Named(i) if i == "storage_version"))
        .expect("storage_version field");
    match &field.expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Bool(b),
            ..
        }) => b.value,
        other => panic!("storage_version is not a boolean: {other:?}"),
    }
}

/// The names of the functions among `items`.
fn functions(items: &[syn::Item]) -> Vec<String> {
    items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Fn(f) => Some(f.sig.ident.to_string()),
            _ => None,
        })
        .collect()
}

/// The `type Hub = …;` of the `TypedObject` impl for `self_ty` (such as `v1beta1::Gadget`).
fn hub_of(file: &syn::File, self_ty: &str) -> String {
    file.items
        .iter()
        .find_map(|item| match item {
            syn::Item::Impl(i)
                if quote::ToTokens::to_token_stream(&i.self_ty)
                    .to_string()
                    .replace(' ', "")
                    == self_ty =>
            {
                i.items.iter().find_map(|ii| match ii {
                    syn::ImplItem::Type(t) if t.ident == "Hub" => Some(
                        quote::ToTokens::to_token_stream(&t.ty)
                            .to_string()
                            .replace(' ', ""),
                    ),
                    _ => None,
                })
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no TypedObject impl for {self_ty}"))
}

#[test]
fn a_kind_only_in_a_non_storage_version_is_allowed_and_is_its_own_hub() {
    let defs = defs_with(&[
        ("gadgets.example", "v1.rs", V1),
        ("gadgets.example", "v1beta1.rs", V1BETA1),
    ]);
    let model = Generator::new(defs.path())
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    let group = model.group("gadgets.example").expect("group");
    let version_of = |v: Option<&codegen::VersionModel>| v.map(|v| v.version.clone());
    assert_eq!(
        version_of(group.kind_own_version("Gadget")),
        Some("v1beta1".into())
    );
    assert_eq!(version_of(group.kind_hub("Gadget")), Some("v1beta1".into()));
    assert_eq!(
        version_of(group.kind_storage_version("Gadget")),
        Some("v1beta1".into())
    );
    // A kind in the storage version keeps the group's hub.
    assert_eq!(version_of(group.kind_own_version("Toy")), None);
    assert_eq!(version_of(group.kind_hub("Toy")), Some("v1".into()));
    assert_eq!(
        version_of(group.kind_storage_version("Toy")),
        Some("v1".into())
    );
}

#[test]
fn a_kind_stored_in_its_own_version_has_no_hub_conversions() {
    let defs = defs_with(&[
        ("gadgets.example", "v1.rs", V1),
        ("gadgets.example", "v1beta1.rs", V1BETA1),
    ]);
    let out = tempfile::tempdir().expect("out");
    Generator::new(defs.path())
        .generate(out.path())
        .unwrap_or_else(|e| panic!("{e}"));
    let text = std::fs::read_to_string(out.path().join("gadgets_example.rs")).expect("group file");
    // `format_file` falls back to unformatted tokens when the output is not a Rust file.
    let file = syn::parse_file(&text).expect("the group file parses as Rust");

    let v1beta1 = module(&file, "v1beta1");
    assert!(
        storage_flag(v1beta1, "GADGET_RESOURCE"),
        "Gadget is stored in v1beta1"
    );
    assert!(
        !storage_flag(v1beta1, "TOY_RESOURCE"),
        "Toy is stored in v1"
    );
    assert!(storage_flag(module(&file, "v1"), "TOY_RESOURCE"));

    let fns = functions(v1beta1);
    for f in [
        "gadget_to_v1",
        "gadget_from_v1",
        "gadget_spec_to_v1",
        "gadget_spec_from_v1",
    ] {
        assert!(
            !fns.iter().any(|n| n == f),
            "{f} must not be emitted: {fns:?}"
        );
    }
    // The structs the hub has too convert as before.
    for f in [
        "toy_to_v1",
        "toy_from_v1",
        "toy_spec_to_v1",
        "color_to_v1",
        "color_from_v1",
    ] {
        assert!(fns.iter().any(|n| n == f), "{f} is emitted: {fns:?}");
    }

    assert_eq!(hub_of(&file, "v1beta1::Gadget"), "v1beta1::Gadget");
    assert_eq!(hub_of(&file, "v1beta1::Toy"), "v1::Toy");
    assert_eq!(hub_of(&file, "v1::Toy"), "v1::Toy");
    assert!(
        text.contains("fn to_hub(&self) -> Self::Hub {\n        ::std::clone::Clone::clone(self)"),
        "the own hub converts by cloning"
    );
    // Gadget's selectable fields read its own version's struct.
    assert!(
        text.contains("obj.downcast_ref::<v1beta1::Gadget>()"),
        "selectable fields of Gadget read v1beta1"
    );
    assert!(!text.contains("v1::Gadget"), "v1 has no Gadget");
    assert!(text.contains("scheme.add_kind(&GADGET_KIND)"));
}

#[test]
fn an_own_hub_kind_under_an_internal_hub_is_stored_in_its_version() {
    // The group converts through `internal.rs`, which has no `Gadget`.
    let internal = V1
        .replace(
            "#![version = \"v1\"]\n#![storage]\n#![priority = 20]",
            "#![version = \"internal\"]",
        )
        .replace("//! Gadgets, stable.", "//! Gadgets, the hub.");
    let defs = defs_with(&[
        ("gadgets.example", "v1.rs", V1),
        ("gadgets.example", "internal.rs", &internal),
        ("gadgets.example", "v1beta1.rs", V1BETA1),
    ]);
    let model = Generator::new(defs.path())
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    let group = model.group("gadgets.example").expect("group");
    assert_eq!(
        group.kind_hub("Gadget").map(|v| v.version.as_str()),
        Some("v1beta1")
    );
    assert_eq!(
        group.kind_hub("Toy").map(|v| v.version.as_str()),
        Some("internal")
    );
    let text = codegen::emit::rust::group_file(group);
    let file = syn::parse_file(&text).expect("the group file parses as Rust");
    assert_eq!(hub_of(&file, "v1beta1::Gadget"), "v1beta1::Gadget");
    assert_eq!(hub_of(&file, "v1::Toy"), "internal::Toy");
    assert!(storage_flag(module(&file, "v1beta1"), "GADGET_RESOURCE"));
    let fns = functions(module(&file, "v1beta1"));
    assert!(!fns.iter().any(|n| n.starts_with("gadget")), "{fns:?}");
}

#[test]
fn a_kind_in_two_versions_missing_from_the_hub_still_needs_the_hub() {
    let v1alpha1 = V1BETA1
        .replace("v1beta1", "v1alpha1")
        .replace("//! Gadgets, preview.", "//! Gadgets, first preview.");
    let defs = defs_with(&[
        ("gadgets.example", "v1.rs", V1),
        ("gadgets.example", "v1beta1.rs", V1BETA1),
        ("gadgets.example", "v1alpha1.rs", &v1alpha1),
    ]);
    let errors = diagnostics(Generator::new(defs.path()).load());
    let messages: Vec<&str> = errors.iter().map(|e| e.message.as_str()).collect();
    assert!(
        messages.iter().any(|m| m.starts_with(
            "kind `Gadget` (served by v1beta1) is missing from the storage version v1: define it there too"
        )),
        "{messages:#?}"
    );
    for version in ["v1beta1", "v1alpha1"] {
        assert!(
            errors.iter().any(|e| e.message.starts_with(
                "kind `Gadget` has no struct of the same name in the hub version `v1`"
            ) && e
                .loc
                .file
                .ends_with(format!("gadgets.example/{version}.rs"))),
            "{version}: {messages:#?}"
        );
    }
    assert_eq!(errors.len(), 3, "{messages:#?}");
}

#[test]
fn a_kind_stored_in_its_own_version_must_be_served() {
    let unserved = V1BETA1.replacen(
        "#![version = \"v1beta1\"]",
        "#![version = \"v1beta1\"]\n#![served = false]",
        1,
    );
    let defs = defs_with(&[
        ("gadgets.example", "v1.rs", V1),
        ("gadgets.example", "v1beta1.rs", &unserved),
    ]);
    let errors = diagnostics(Generator::new(defs.path()).load());
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0]
            .message
            .starts_with("kind `Gadget` is defined only in v1beta1, which would store it, but that version is not served"),
        "{}",
        errors[0].message
    );
    assert!(errors[0].loc.file.ends_with("gadgets.example/v1beta1.rs"));
}
