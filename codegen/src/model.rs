//! The parsed, checked model of `api-defs`: what every emitter reads.
//!
//! The parser ([`crate::parse`]) turns each definition file into a [`VersionModel`] and each
//! group directory into a [`GroupModel`]; the checks ([`crate::check`]) validate the whole
//! [`ApiModel`]; emitters ([`crate::emit`]) only read it. Every marker of `api-defs/README.md`
//! has a field here. Spans ([`Loc`]) point into the definition file for error messages.

use std::path::PathBuf;

use heck::{ToSnakeCase, ToUpperCamelCase};

mod externs;
mod field_markers;

pub use externs::{ExternCrate, ExternRef};
pub use field_markers::{
    FORMATS, ListMarker, ListType, MapMarker, MapType, PatchMarker, Validation,
};

/// A position in a definition file, for error messages (`file:line:column`, 1-based).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Loc {
    /// The definition file.
    pub file: PathBuf,
    /// The 1-based line.
    pub line: usize,
    /// The 1-based column.
    pub column: usize,
}

impl Loc {
    /// Creates a location from a span of a file parsed with span locations enabled.
    pub fn from_span(file: &std::path::Path, span: proc_macro2::Span) -> Self {
        let start = span.start();
        Self {
            file: file.to_path_buf(),
            line: start.line,
            column: start.column + 1,
        }
    }
}

impl std::fmt::Display for Loc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)
    }
}

/// Every group found under the definitions directory, sorted by directory name.
#[derive(Clone, Debug, Default)]
pub struct ApiModel {
    /// The groups.
    pub groups: Vec<GroupModel>,
    /// The groups of other crates the definitions may refer to ([`TypeRef::Extern`]): parsed
    /// and checked, never emitted.
    pub externs: Vec<ExternCrate>,
}

impl ApiModel {
    /// Finds a group by its API group name (`""` for core).
    pub fn group(&self, name: &str) -> Option<&GroupModel> {
        self.groups.iter().find(|g| g.name == name)
    }

    /// The shared version (`#![shared]`: `meta.k8s.io/v1`), whose structs every other
    /// definition may use by name ([`TypeRef::Meta`]).
    pub fn shared(&self) -> Option<&VersionModel> {
        self.groups
            .iter()
            .flat_map(|g| g.versions.iter())
            .find(|v| v.shared)
    }

    /// The groups whose code goes into the generated crate: every group but the shared one,
    /// whose Rust lives in `apimachinery::meta`.
    pub fn api_groups(&self) -> impl Iterator<Item = &GroupModel> {
        self.groups.iter().filter(|g| !g.is_shared())
    }
}

/// One API group: its versions, its hub and its hand-written hooks.
#[derive(Clone, Debug)]
pub struct GroupModel {
    /// The API group name, such as `example.dev`; empty for the core group.
    pub name: String,
    /// The directory under `api-defs`, such as `example.dev` or `core`.
    pub dir: PathBuf,
    /// The versions (served or not), in priority order (preferred first).
    pub versions: Vec<VersionModel>,
    /// The internal hub version (`internal.rs`), if the group has one. Without it the storage
    /// version is the hub.
    pub internal: Option<VersionModel>,
    /// The hand-written hooks (`hooks.rs`), if any.
    pub hooks: Option<HooksModel>,
    /// The hand-written strategies (`strategy.rs`: a `<Kind>Strategy` type per kind that has
    /// one), if any.
    pub strategy: Option<HooksModel>,
    /// The hand-written admission plugins (`admission.rs`: `fn admission_plugins()`), if any.
    pub admission: Option<HooksModel>,
}

impl GroupModel {
    /// Whether this is the shared group (its version file has `#![shared]`).
    pub fn is_shared(&self) -> bool {
        self.versions.iter().any(|v| v.shared)
    }

    /// The Rust module name of the group: the group name with `.`/`-` as `_`, `core` for `""`.
    pub fn module_name(&self) -> String {
        module_name_of_group(&self.name)
    }

    /// The storage version (exactly one after checks pass): every kind's, except a kind that is
    /// its own hub ([`GroupModel::kind_storage_version`]).
    pub fn storage_version(&self) -> Option<&VersionModel> {
        self.versions.iter().find(|v| v.storage)
    }

    /// The hub every version converts through: `internal` if present, else the storage version.
    /// A kind that is its own hub converts through its version instead
    /// ([`GroupModel::kind_hub`]).
    pub fn hub(&self) -> Option<&VersionModel> {
        self.internal.as_ref().or_else(|| self.storage_version())
    }

    /// The version a kind lives in alone, when that version is its own hub and its storage
    /// version: the kind is defined (with `#[kind]`) in exactly one version, that version is
    /// not the group's storage version, and neither `internal.rs` nor the storage version has
    /// a struct of its name. Kubernetes stores such a kind (`MutatingAdmissionPolicy` of
    /// `admissionregistration.k8s.io/v1beta1`) in the one version that has it, as storage
    /// versions are per resource.
    pub fn kind_own_version(&self, kind: &str) -> Option<&VersionModel> {
        let mut defining = self
            .versions
            .iter()
            .filter(|v| v.struct_named(kind).is_some_and(|s| s.kind.is_some()));
        let only = defining.next()?;
        if defining.next().is_some() || only.storage {
            return None;
        }
        let in_hub = self
            .internal
            .iter()
            .chain(self.storage_version())
            .any(|h| h.struct_named(kind).is_some());
        (!in_hub).then_some(only)
    }

    /// The hub a kind's versions convert through: the kind's own version
    /// ([`GroupModel::kind_own_version`]) when it has one, else the group's [`GroupModel::hub`].
    pub fn kind_hub(&self, kind: &str) -> Option<&VersionModel> {
        self.kind_own_version(kind).or_else(|| self.hub())
    }

    /// The version a kind is stored in: the kind's own version
    /// ([`GroupModel::kind_own_version`]) when it has one, else the group's
    /// [`GroupModel::storage_version`].
    pub fn kind_storage_version(&self, kind: &str) -> Option<&VersionModel> {
        self.kind_own_version(kind)
            .or_else(|| self.storage_version())
    }

    /// Finds a served version by name.
    pub fn version(&self, name: &str) -> Option<&VersionModel> {
        self.versions.iter().find(|v| v.version == name)
    }

    /// The versions the server serves, in priority order.
    pub fn served_versions(&self) -> impl Iterator<Item = &VersionModel> {
        self.versions.iter().filter(|v| v.served)
    }

    /// Every kind name served by some version, in first-seen order over priority order.
    pub fn kind_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for v in self.served_versions() {
            for k in v.kinds() {
                if !names.contains(&k.name) {
                    names.push(k.name.clone());
                }
            }
        }
        names
    }
}

/// Returns the Rust module name of an API group: `example.dev` → `example_dev`, `""` → `core`.
pub fn module_name_of_group(group: &str) -> String {
    if group.is_empty() {
        "core".to_string()
    } else {
        group.replace(['.', '-'], "_")
    }
}

/// One definition file: a version of a group (or its internal hub).
#[derive(Clone, Debug)]
pub struct VersionModel {
    /// The API group (from `#![group = "…"]`).
    pub group: String,
    /// The version name (from `#![version = "…"]`), `internal` for the hub file.
    pub version: String,
    /// The file this was parsed from.
    pub file: PathBuf,
    /// The file's inner doc comment (`//!`).
    pub docs: String,
    /// `#![storage]`: this version is the storage version.
    pub storage: bool,
    /// `#![served = false]` turns serving off: the version's types and conversions are still
    /// generated (clients may use them) but the server neither routes nor documents it.
    pub served: bool,
    /// `#![priority = N]`: version priority, higher preferred (default 10).
    pub priority: i32,
    /// `#![proto_package = "…"]`: the protobuf package, if given.
    pub proto_package: Option<String>,
    /// `#![shared]`: the version's structs are shared by every group (`meta.k8s.io/v1`):
    /// their Rust is compiled into `apimachinery::meta` rather than the generated crate, other
    /// definitions use them by name, and the version has no kinds, routes or OpenAPI document
    /// of its own.
    pub shared: bool,
    /// `#![crd_validation]`: the markers check as kube-apiserver checks a
    /// CustomResourceDefinition's schema (the files `codegen import-crd` writes):
    /// `#[validate(required)]` on an `Option` asks for the value to be present (an empty
    /// string, list or map is a value), and a number out of bounds reads `<path> in body should
    /// be less than or equal to N` (without it: `must be less than or equal to N`, as
    /// Kubernetes' built-in types say).
    pub crd_validation: bool,
    /// Whether this is the internal hub file.
    pub is_internal: bool,
    /// Every struct of the file, in file order (kinds included).
    pub structs: Vec<StructModel>,
    /// Location of the file's first line.
    pub loc: Loc,
}

impl VersionModel {
    /// The kinds (structs with `#[kind(…)]`), in file order.
    pub fn kinds(&self) -> impl Iterator<Item = &StructModel> {
        self.structs.iter().filter(|s| s.kind.is_some())
    }

    /// Finds a struct by name.
    pub fn struct_named(&self, name: &str) -> Option<&StructModel> {
        self.structs.iter().find(|s| s.name == name)
    }

    /// The fields of a struct as they appear in its JSON object: `#[json(inline)]` fields are
    /// replaced by the fields of the inlined struct, recursively.
    pub fn json_fields<'a>(&'a self, s: &'a StructModel) -> Vec<&'a FieldModel> {
        let mut out = Vec::new();
        self.collect_json_fields(s, &mut out, 0);
        out
    }

    fn collect_json_fields<'a>(
        &'a self,
        s: &'a StructModel,
        out: &mut Vec<&'a FieldModel>,
        depth: usize,
    ) {
        for f in &s.fields {
            match (&f.ty, f.json_inline) {
                (TypeRef::Struct(n), true) if depth < 8 => {
                    if let Some(inner) = self.struct_named(n) {
                        self.collect_json_fields(inner, out, depth + 1);
                    }
                }
                _ => out.push(f),
            }
        }
    }

    /// The `apiVersion` string: `v1` for core, `group/version` otherwise.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The protobuf package: the explicit one, or `<reversed group>.<version>`.
    pub fn proto_package_or_default(&self) -> String {
        if let Some(p) = &self.proto_package {
            return p.clone();
        }
        let mut parts: Vec<&str> = self.group.split('.').filter(|p| !p.is_empty()).collect();
        parts.reverse();
        parts.push(&self.version);
        parts.join(".").replace('-', "_")
    }
}

/// A struct of a definition file, optionally a kind.
#[derive(Clone, Debug)]
pub struct StructModel {
    /// The struct name, such as `WidgetSpec`.
    pub name: String,
    /// The doc comment, lines joined with `\n`, leading single space removed.
    pub docs: String,
    /// The fields, in declaration order.
    pub fields: Vec<FieldModel>,
    /// `#[rule(cel = "…", message = "…")]` rules, where `self` is this struct.
    pub rules: Vec<CelRule>,
    /// The kind markers, if this struct is a top-level kind.
    pub kind: Option<KindModel>,
    /// `#[map(type = "atomic")]` on a struct (Kubernetes' `+structType=atomic`): the struct's
    /// `x-kubernetes-map-type`, so that server-side apply and merges replace it as a whole.
    pub map: Option<MapMarker>,
    /// `#[gvk(group = "…", version = "…", kind = "…")]` on a struct that is not a kind of its
    /// own group but is sent as an object (meta's `Status`, which Kubernetes documents as
    /// `v1` `Status`): its OpenAPI `x-kubernetes-group-version-kind`.
    pub gvk: Option<GvkMarker>,
    /// `#[json(custom)]`: the struct's JSON encoding is written by hand in the group's
    /// `hooks.rs` (`Serialize` and `Deserialize` impls), as for Kubernetes' "either" types
    /// (`JSONSchemaPropsOrBool`); its protobuf message, shape and Rust struct are generated, its
    /// OpenAPI schema is its description alone (any JSON), and server-side apply treats its
    /// values as atomic.
    pub json_custom: bool,
    /// Where the struct is declared.
    pub loc: Loc,
}

impl StructModel {
    /// The snake-case name used in hook function names: `WidgetSpec` → `widget_spec`.
    pub fn snake_name(&self) -> String {
        self.name.to_snake_case()
    }

    /// Finds a field by Rust name.
    pub fn field(&self, name: &str) -> Option<&FieldModel> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// `#[gvk(group = "…", version = "…", kind = "…")]` of a non-kind struct.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GvkMarker {
    /// The group (`""` for core).
    pub group: String,
    /// The version.
    pub version: String,
    /// The kind (default: the struct name).
    pub kind: String,
}

/// Whether objects of a kind live in a namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// `#[kind(namespaced)]`.
    Namespaced,
    /// `#[kind(cluster)]`.
    Cluster,
}

/// The markers of a kind.
#[derive(Clone, Debug)]
pub struct KindModel {
    /// The kind name (the struct name), such as `Widget`.
    pub name: String,
    /// Namespaced or cluster-scoped.
    pub scope: Scope,
    /// `status`: the kind has a `/status` subresource.
    pub status: bool,
    /// The plural resource name (override or heck lowercase plural).
    pub plural: String,
    /// The singular resource name (override or lowercase kind).
    pub singular: String,
    /// `short_names = […]`.
    pub short_names: Vec<String>,
    /// `categories = […]`.
    pub categories: Vec<String>,
    /// `verbs = […]`, default all eight in Kubernetes' order.
    pub verbs: Vec<String>,
    /// `create_only`: a review kind that is created and never stored.
    pub create_only: bool,
    /// `strategic_merge_patch`: the kind accepts strategic merge patch.
    pub strategic_merge_patch: bool,
    /// `unconditional_update`: updates without a resourceVersion are allowed.
    pub unconditional_update: bool,
    /// `create_on_update`: a `PUT` of a missing object creates it (Kubernetes'
    /// `AllowCreateOnUpdate`, true for Events, Leases and the RBAC kinds).
    pub create_on_update: bool,
    /// `no_generation`: the kind does not track `metadata.generation` (Kubernetes' ConfigMap,
    /// Secret, RBAC kinds, …); by default a kind tracks it, as custom resources do.
    pub no_generation: bool,
    /// `field_selectors = […]`: extra field selector paths beyond name and namespace.
    pub field_selectors: Vec<String>,
    /// `name_format = "…"`: how `metadata.name` is validated: `dns1123-subdomain` (default),
    /// `dns1123-label`, `dns1035-label` or `path-segment`.
    pub name_format: String,
    /// `#[scale(…)]`, if the kind has a scale subresource.
    pub scale: Option<ScaleModel>,
    /// `#[subresource(…)]`s: the kind's own subresources, answered by its strategy.
    pub subresources: Vec<SubresourceModel>,
    /// `#[print_column(…)]`s in order.
    pub print_columns: Vec<PrintColumn>,
    /// Where the `#[kind]` marker is.
    pub loc: Loc,
}

impl KindModel {
    /// The list kind name, such as `WidgetList`.
    pub fn list_name(&self) -> String {
        format!("{}List", self.name)
    }
}

/// The default verbs of a kind, in Kubernetes' order.
pub const DEFAULT_VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// `#[subresource(name = "…", group = "…", version = "…", kind = "…", verbs = […])]`: a
/// subresource whose body is a kind of another group (a ServiceAccount's `token`, a
/// `TokenRequest`), answered by the kind's strategy (`create_subresource`); or
/// `#[subresource(name = "…", verbs = ["update"])]`: an update of the object itself through the
/// subresource (a Namespace's `finalize`), which the strategy's `prepare_for_update` sees by
/// name. The latter has no group, version or kind of its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubresourceModel {
    /// The path segment.
    pub name: String,
    /// The body kind's group.
    pub group: String,
    /// The body kind's version.
    pub version: String,
    /// The body kind.
    pub kind: String,
    /// The verbs served (default `create`, the only one served).
    pub verbs: Vec<String>,
}

/// `#[scale(spec_replicas = "…", status_replicas = "…", selector = "…")]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaleModel {
    /// JSONPath of the desired replicas.
    pub spec_replicas: String,
    /// JSONPath of the observed replicas.
    pub status_replicas: String,
    /// JSONPath of the selector string; may be empty.
    pub selector: String,
}

/// `#[print_column(name, type, json_path, format?, description?, priority?)]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrintColumn {
    /// The header.
    pub name: String,
    /// `integer`, `number`, `string`, `boolean` or `date`.
    pub type_: String,
    /// The JSONPath of the cell.
    pub json_path: String,
    /// An OpenAPI format, or empty.
    pub format: String,
    /// A description, or empty.
    pub description: String,
    /// 0 = always shown; greater = `-o wide`.
    pub priority: i32,
}

/// `#[rule(cel = "…", message = "…")]`: a CEL validation rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CelRule {
    /// The CEL expression; `self` is the value of the struct or field.
    pub cel: String,
    /// The message on failure (default: `failed rule: <cel>`).
    pub message: String,
    /// Where the rule is.
    pub loc: Loc,
}

/// A field of a struct.
#[derive(Clone, Debug)]
pub struct FieldModel {
    /// The Rust field name, such as `replicas` (raw identifiers without `r#`).
    pub name: String,
    /// The JSON name (`#[json(name)]` or lowerCamelCase of the Rust name).
    pub json_name: String,
    /// The doc comment.
    pub docs: String,
    /// The type tree.
    pub ty: TypeRef,
    /// `#[proto(N)]`.
    pub proto: Option<u32>,
    /// `#[proto(skip)]`: the field is not part of the protobuf message (a `Status`'s
    /// `apiVersion` and `kind`, which travel in the envelope), and gets no number.
    pub proto_skip: bool,
    /// `#[proto(N, by_value)]`: Go holds this field by value (a non-pointer string, number or
    /// bool tagged `omitempty`), which the definition writes as `Option<T>` so that JSON omits
    /// it when empty. Kubernetes' marshaller always writes such a field, so the protobuf codec
    /// writes `None` as the zero value, and reads the zero value back as `None`; JSON leaves
    /// out `Some` of the zero value too, as Go's `omitempty` does.
    pub proto_by_value: bool,
    /// `#[json(always)]`: emitted even when empty.
    pub json_always: bool,
    /// `#[json(keep_zero)]` on a `#[proto(N, by_value)]` field: JSON still writes `Some` of the
    /// zero value (only `None` is left out), so that `"name": ""` reads back as written; the
    /// protobuf codec is unchanged (the zero value is written for `None` and read as `None`).
    pub json_keep_zero: bool,
    /// `#[json(inline)]`: the struct's fields are flattened into the parent.
    pub json_inline: bool,
    /// The field is written `Box<T>` or `Option<Box<T>>` (a struct that contains itself, such
    /// as a JSON schema's `not`): `ty` is the type without the box, which only the Rust field
    /// type shows.
    pub boxed: bool,
    /// `#[default(…)]`: the JSON form of the default.
    pub default: Option<serde_json::Value>,
    /// `#[validate(…)]`.
    pub validation: Validation,
    /// `#[rule(…)]` on a field: `self` is the field's value.
    pub rules: Vec<CelRule>,
    /// `#[list(…)]`.
    pub list: Option<ListMarker>,
    /// `#[map(…)]`.
    pub map: Option<MapMarker>,
    /// `#[patch(…)]`.
    pub patch: Option<PatchMarker>,
    /// Where the field is.
    pub loc: Loc,
}

impl FieldModel {
    /// The field's name in the `.proto` file: its JSON name when that is an identifier, else
    /// the lowerCamelCase of its Rust name (`x-kubernetes-list-type` → `xKubernetesListType`,
    /// `$ref` of a field `ref_` → `ref`), as Kubernetes' generated.proto names such fields.
    pub fn proto_name(&self) -> String {
        let ident = |n: &str| {
            n.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        if ident(&self.json_name) {
            self.json_name.clone()
        } else {
            crate::parse::json_name_of(&self.name)
        }
    }

    /// Whether an empty value is left out of JSON: `Option` when `None`, `Vec`/maps when empty,
    /// unless `#[json(always)]`. Scalars and structs are always emitted.
    pub fn omit_empty(&self) -> bool {
        !self.json_always
            && matches!(
                self.ty,
                TypeRef::Option(_) | TypeRef::Vec(_) | TypeRef::Map(_)
            )
    }

    /// Whether the field must be present (`#[validate(required)]`).
    pub fn required(&self) -> bool {
        self.validation.required
    }
}

/// The type of a field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeRef {
    /// `bool`.
    Bool,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `f64`.
    F64,
    /// `String`.
    String,
    /// `Bytes`: base64 in JSON, `bytes` in protobuf.
    Bytes,
    /// `Time`: RFC 3339 with second precision.
    Time,
    /// `MicroTime`: RFC 3339 with microseconds.
    MicroTime,
    /// `Quantity`: a resource quantity string.
    Quantity,
    /// `IntOrString`.
    IntOrString,
    /// `RawExtension`: any embedded JSON object.
    RawExtension,
    /// `Duration`: a Go duration string such as `1h0m0s` (nanoseconds in protobuf).
    Duration,
    /// `FieldsV1`: a managed field set, kept as raw JSON text.
    FieldsV1,
    /// `Value`: arbitrary JSON (`x-kubernetes-preserve-unknown-fields`).
    Json,
    /// A struct of the shared version (`meta.k8s.io/v1`), such as `ObjectMeta`, used from
    /// another group (`apimachinery::meta::ObjectMeta` in Rust).
    Meta(String),
    /// A struct of the same file.
    Struct(String),
    /// A struct of another crate's group version (`core::v1::ObjectReference`).
    Extern(Box<ExternRef>),
    /// `Option<T>`.
    Option(Box<TypeRef>),
    /// `Vec<T>`.
    Vec(Box<TypeRef>),
    /// `BTreeMap<String, T>`.
    Map(Box<TypeRef>),
}

impl TypeRef {
    /// The type inside `Option`, or the type itself.
    pub fn unwrap_option(&self) -> &TypeRef {
        match self {
            TypeRef::Option(inner) => inner,
            other => other,
        }
    }

    /// Whether this is a scalar that has no nested fields.
    pub fn is_scalar(&self) -> bool {
        !matches!(
            self,
            TypeRef::Struct(_)
                | TypeRef::Meta(_)
                | TypeRef::Extern(_)
                | TypeRef::Option(_)
                | TypeRef::Vec(_)
                | TypeRef::Map(_)
        )
    }

    /// The name of the local struct referenced in this type, if any.
    pub fn struct_name(&self) -> Option<&str> {
        match self {
            TypeRef::Struct(n) => Some(n),
            TypeRef::Option(i) | TypeRef::Vec(i) | TypeRef::Map(i) => i.struct_name(),
            _ => None,
        }
    }

    /// The struct of another crate referenced in this type, if any.
    pub fn extern_ref(&self) -> Option<&ExternRef> {
        match self {
            TypeRef::Extern(r) => Some(r),
            TypeRef::Option(i) | TypeRef::Vec(i) | TypeRef::Map(i) => i.extern_ref(),
            _ => None,
        }
    }
}

/// The scalar type names a definition may use, for "did you mean" suggestions.
pub const SCALAR_TYPE_NAMES: [&str; 14] = [
    "bool",
    "i32",
    "i64",
    "f64",
    "String",
    "Bytes",
    "Time",
    "MicroTime",
    "Quantity",
    "IntOrString",
    "RawExtension",
    "Duration",
    "FieldsV1",
    "Value",
];

/// The items of one of a group's hand-written files (`hooks.rs`, `strategy.rs`,
/// `admission.rs`).
#[derive(Clone, Debug)]
pub struct HooksModel {
    /// The file.
    pub file: PathBuf,
    /// The names of its functions.
    pub functions: Vec<String>,
    /// The names of its structs and enums.
    pub types: Vec<String>,
    /// The file's items, emitted into the group's `hooks` module.
    pub items: Vec<syn::Item>,
}

impl HooksModel {
    /// Whether the file defines a function of that name.
    pub fn has(&self, name: &str) -> bool {
        self.functions.iter().any(|f| f == name)
    }

    /// Whether the file defines a struct or enum of that name.
    pub fn has_type(&self, name: &str) -> bool {
        self.types.iter().any(|t| t == name)
    }
}

/// The name of the conversion hook from version `from` to `to` for struct `name`.
pub fn conversion_hook_name(from: &str, struct_name: &str, to: &str) -> String {
    format!("{}_{}_to_{}", from, struct_name.to_snake_case(), to)
}

/// The name of the optional defaulting hook of `struct_name` in `version`:
/// `default_<version>_<struct>` taking `&mut <version>::<Struct>`.
pub fn default_hook_name(version: &str, struct_name: &str) -> String {
    format!("default_{}_{}", version, struct_name.to_snake_case())
}

/// The name of the optional validation hook of kind `struct_name` in `version`:
/// `validate_<version>_<kind>(obj: &<version>::<Kind>, errors: &mut Vec<FieldError>)`, run after
/// the marker and CEL checks on create and update.
pub fn validate_hook_name(version: &str, struct_name: &str) -> String {
    format!("validate_{}_{}", version, struct_name.to_snake_case())
}

/// The name of a kind's hand-written strategy in `strategy.rs`: `Widget` → `WidgetStrategy`.
pub fn strategy_type_name(kind: &str) -> String {
    format!("{}Strategy", kind.to_upper_camel_case())
}

/// The name of the function of `admission.rs` that lists the group's admission plugins.
pub const ADMISSION_PLUGINS_FN: &str = "admission_plugins";
