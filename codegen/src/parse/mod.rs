//! From definition files to the model: discovery of files, `syn` parsing and marker reading.
//!
//! [`parse_api_dir`] reads every `<group-dir>/<version>.rs` (plus `internal.rs` and `hooks.rs`)
//! under a definitions directory. Problems are collected into [`Diagnostics`] and parsing goes
//! on, so one run reports every mistake; [`crate::check`] then checks the whole model.

pub mod externs;
pub mod markers;
pub mod types;

pub use externs::{link_externs, parse_extern};

use std::path::{Path, PathBuf};

use heck::ToLowerCamelCase;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Fields, Item, Lit, Meta};

use crate::diagnostics::{Diagnostics, suggestion};
use crate::model::{
    ApiModel, FieldModel, GroupModel, HooksModel, KindModel, Loc, StructModel, TypeRef, Validation,
    VersionModel,
};
use markers::{FIELD_MARKERS, JsonKeys, KindKeys, MarkerCx, STRUCT_MARKERS};

/// Why the definitions could not be read at all (as opposed to [`Diagnostics`] in them).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// A directory or file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Lists the `.rs` files of one group directory (sorted).
pub fn discover_files(dir: &Path) -> Result<Vec<PathBuf>, ReadError> {
    let io = |source| ReadError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut files = Vec::new();
    for f in std::fs::read_dir(dir).map_err(io)? {
        let f = f.map_err(io)?.path();
        if f.extension().is_some_and(|e| e == "rs") && f.is_file() {
            files.push(f);
        }
    }
    files.sort();
    Ok(files)
}

/// Lists the group directories under `dir` (sorted), and in each the `.rs` files (sorted).
pub fn discover(dir: &Path) -> Result<Vec<(PathBuf, Vec<PathBuf>)>, ReadError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ReadError::Io { path, source }
    };
    let mut groups = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        let mut files = Vec::new();
        for f in std::fs::read_dir(&path).map_err(io(&path))? {
            let f = f.map_err(io(&path))?.path();
            if f.extension().is_some_and(|e| e == "rs") && f.is_file() {
                files.push(f);
            }
        }
        files.sort();
        groups.push((path, files));
    }
    groups.sort();
    Ok(groups)
}

/// The directory name of the shared group, and the source of its definition as this generator
/// was built with (`codegen/api-defs/meta.k8s.io/v1.rs`, inside this crate), used when a
/// definitions directory has no shared group of its own: the types of `apimachinery::meta`
/// come from the same file.
pub const BUILTIN_SHARED: (&str, &str, &str) = (
    "meta.k8s.io",
    "v1.rs",
    include_str!("../../api-defs/meta.k8s.io/v1.rs"),
);

/// Reads and parses every definition under `dir`, plus the built-in shared version
/// ([`BUILTIN_SHARED`]) when no group of the directory is shared, and links the references to
/// shared structs ([`link_shared`]). Returns the model (possibly incomplete) and every problem
/// found while parsing.
pub fn parse_api_dir(dir: &Path) -> Result<(ApiModel, Diagnostics), ReadError> {
    let (mut model, mut diags) = parse_groups(dir)?;
    if !model.groups.iter().any(GroupModel::is_shared) {
        let (name, file, text) = BUILTIN_SHARED;
        let group_dir = dir.join(name);
        let sources = [(group_dir.join(file), text.to_string())];
        if let Some(g) = parse_group(&group_dir, &sources, &mut diags) {
            model.groups.push(g);
            model.groups.sort_by(|a, b| a.dir.cmp(&b.dir));
        }
    }
    link_shared(&mut model);
    Ok((model, diags))
}

/// Turns every [`TypeRef::Struct`] of a non-shared version that names no struct of its own
/// file but a struct of the shared version into [`TypeRef::Meta`] (a file's own structs
/// shadow shared ones).
pub fn link_shared(model: &mut ApiModel) {
    let shared: Vec<String> = model
        .shared()
        .map(|v| v.structs.iter().map(|s| s.name.clone()).collect())
        .unwrap_or_default();
    fn link(t: &mut TypeRef, local: &[String], shared: &[String]) {
        match t {
            TypeRef::Struct(n) if !local.contains(n) && shared.contains(n) => {
                *t = TypeRef::Meta(std::mem::take(n));
            }
            TypeRef::Option(i) | TypeRef::Vec(i) | TypeRef::Map(i) => link(i, local, shared),
            _ => {}
        }
    }
    for group in &mut model.groups {
        for v in group.versions.iter_mut().chain(group.internal.iter_mut()) {
            if v.shared {
                continue;
            }
            let local: Vec<String> = v.structs.iter().map(|s| s.name.clone()).collect();
            for s in &mut v.structs {
                for f in &mut s.fields {
                    link(&mut f.ty, &local, &shared);
                }
            }
        }
    }
}

/// Parses every group directory under `dir`.
fn parse_groups(dir: &Path) -> Result<(ApiModel, Diagnostics), ReadError> {
    let mut diags = Diagnostics::default();
    let mut model = ApiModel::default();
    for (group_dir, files) in discover(dir)? {
        let mut sources = Vec::new();
        for f in files {
            let text = std::fs::read_to_string(&f).map_err(|source| ReadError::Io {
                path: f.clone(),
                source,
            })?;
            sources.push((f, text));
        }
        if let Some(g) = parse_group(&group_dir, &sources, &mut diags) {
            model.groups.push(g);
        }
    }
    Ok((model, diags))
}

/// Parses one group directory from its files' sources.
pub fn parse_group(
    dir: &Path,
    sources: &[(PathBuf, String)],
    diags: &mut Diagnostics,
) -> Option<GroupModel> {
    let dir_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let group_name = if dir_name == "core" {
        String::new()
    } else {
        dir_name.clone()
    };
    let mut group = GroupModel {
        name: group_name,
        dir: dir.to_path_buf(),
        versions: Vec::new(),
        internal: None,
        hooks: None,
        strategy: None,
        admission: None,
    };
    for (path, text) in sources {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let file = match syn::parse_file(text) {
            Ok(f) => f,
            Err(e) => {
                for e in e {
                    diags.push(
                        Loc::from_span(path, e.span()),
                        format!("Rust syntax error: {e}"),
                    );
                }
                continue;
            }
        };
        match stem.as_str() {
            "hooks" => {
                group.hooks = Some(parse_hooks(path, file));
                continue;
            }
            "strategy" => {
                group.strategy = Some(parse_hooks(path, file));
                continue;
            }
            "admission" => {
                group.admission = Some(parse_hooks(path, file));
                continue;
            }
            _ => {}
        }
        let v = parse_version_file(path, &file, diags);
        if v.group != group.name {
            let want = if group.name.is_empty() {
                "\"\"".to_string()
            } else {
                format!("{:?}", group.name)
            };
            diags.push(v.loc.clone(), format!("`#![group = {:?}]` does not match the directory `{dir_name}`: write `#![group = {want}]`", v.group));
        }
        if v.version != stem {
            diags.push(v.loc.clone(), format!("`#![version = {:?}]` does not match the file name `{stem}.rs`: write `#![version = {stem:?}]`", v.version));
        }
        if stem == "internal" {
            group.internal = Some(v);
        } else {
            group.versions.push(v);
        }
    }
    if group.versions.is_empty() {
        diags.push(
            Loc {
                file: dir.to_path_buf(),
                line: 1,
                column: 1,
            },
            "a group directory needs at least one version file, such as `v1.rs`",
        );
        return None;
    }
    group.versions.sort_by(|a, b| {
        b.priority
            .cmp(&a.priority)
            .then_with(|| version_order(&a.version, &b.version))
    });
    Some(group)
}

/// Kubernetes' version ordering for equal priorities: GA > beta > alpha, higher numbers first.
fn version_order(a: &str, b: &str) -> std::cmp::Ordering {
    fn key(v: &str) -> (u8, u64, u64, String) {
        let rest = v.strip_prefix('v').unwrap_or(v);
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        let major = digits.parse().unwrap_or(0);
        let tail = &rest[digits.len()..];
        let (level, n) = if tail.is_empty() {
            (3, 0)
        } else if let Some(n) = tail.strip_prefix("beta") {
            (2, n.parse().unwrap_or(0))
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (1, n.parse().unwrap_or(0))
        } else {
            (0, 0)
        };
        (level, major, n, v.to_string())
    }
    key(b).cmp(&key(a))
}

/// Reads the function and type names of a hand-written file (`hooks.rs`, `strategy.rs`,
/// `admission.rs`).
fn parse_hooks(path: &Path, file: syn::File) -> HooksModel {
    let functions = file
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Fn(f) => Some(f.sig.ident.to_string()),
            _ => None,
        })
        .collect();
    let types = file
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Struct(s) => Some(s.ident.to_string()),
            Item::Enum(e) => Some(e.ident.to_string()),
            _ => None,
        })
        .collect();
    HooksModel {
        file: path.to_path_buf(),
        functions,
        types,
        items: file.items,
    }
}

/// Parses one version (or internal) file into its model, recording problems.
pub fn parse_version_file(path: &Path, file: &syn::File, diags: &mut Diagnostics) -> VersionModel {
    let mut cx = MarkerCx { file: path, diags };
    let mut v = VersionModel {
        group: String::new(),
        version: String::new(),
        file: path.to_path_buf(),
        docs: markers::docs(&file.attrs),
        storage: false,
        served: true,
        priority: 10,
        proto_package: None,
        shared: false,
        crd_validation: false,
        is_internal: path.file_stem().is_some_and(|s| s == "internal"),
        structs: Vec::new(),
        loc: Loc {
            file: path.to_path_buf(),
            line: 1,
            column: 1,
        },
    };
    let mut saw_group = false;
    let mut saw_version = false;
    const FILE_MARKERS: [&str; 9] = [
        "group",
        "version",
        "storage",
        "served",
        "priority",
        "proto_package",
        "shared",
        "crd_validation",
        "doc",
    ];
    for attr in &file.attrs {
        let name = markers::attr_name(attr);
        match (name.as_str(), &attr.meta) {
            ("doc", _) => {}
            ("group", Meta::NameValue(nv)) => {
                saw_group = true;
                match str_lit(&nv.value) {
                    Some(s) => v.group = s,
                    None => cx.error(
                        nv.value.span(),
                        "write `#![group = \"example.dev\"]` (`\"\"` for core)",
                    ),
                }
            }
            ("version", Meta::NameValue(nv)) => {
                saw_version = true;
                match str_lit(&nv.value) {
                    Some(s) => v.version = s,
                    None => cx.error(nv.value.span(), "write `#![version = \"v1\"]`"),
                }
            }
            ("storage", Meta::Path(_)) => v.storage = true,
            ("shared", Meta::Path(_)) => v.shared = true,
            ("crd_validation", Meta::Path(_)) => v.crd_validation = true,
            ("served", Meta::NameValue(nv)) => match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Bool(b), ..
                }) => v.served = b.value,
                other => cx.error(
                    other.span(),
                    "write `#![served = false]` (or leave it out: versions are served by default)",
                ),
            },
            ("priority", Meta::NameValue(nv)) => match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Int(i), ..
                }) => match i.base10_parse::<i32>() {
                    Ok(p) => v.priority = p,
                    Err(_) => cx.error(i.span(), "`priority` must fit in a 32-bit integer"),
                },
                other => cx.error(
                    other.span(),
                    "write `#![priority = 10]` (an integer; higher is preferred)",
                ),
            },
            ("proto_package", Meta::NameValue(nv)) => match str_lit(&nv.value) {
                Some(s) => v.proto_package = Some(s),
                None => cx.error(
                    nv.value.span(),
                    "write `#![proto_package = \"k8s.io.api.core.v1\"]`",
                ),
            },
            ("group" | "version" | "priority" | "proto_package" | "served", _) => {
                cx.error(attr.span(), format!("write `#![{name} = …]`"));
            }
            ("storage" | "shared" | "crd_validation", _) => {
                cx.error(attr.span(), format!("write `#![{name}]` without arguments"))
            }
            _ => {
                let hint = suggestion(&name, FILE_MARKERS);
                let fix = if hint.is_empty() {
                    "; file markers are `group`, `version`, `storage`, `served`, `priority`, `proto_package`, `shared`, `crd_validation`"
                        .to_string()
                } else {
                    hint
                };
                cx.error(
                    attr.path().span(),
                    format!("unknown file marker `{name}`{fix}"),
                );
            }
        }
    }
    if !saw_group {
        cx.diags.push(
            v.loc.clone(),
            "missing `#![group = \"…\"]` at the top of the file",
        );
    }
    if !saw_version {
        cx.diags.push(
            v.loc.clone(),
            "missing `#![version = \"…\"]` at the top of the file",
        );
    }
    for item in &file.items {
        match item {
            Item::Struct(s) => {
                if let Some(sm) = parse_struct(&mut cx, s) {
                    v.structs.push(sm);
                }
            }
            Item::Use(_) => {}
            other => cx.error(
                other.span(),
                "only `pub struct` items are allowed in a definition file; put functions in `hooks.rs`",
            ),
        }
    }
    v
}

/// The string value of a string literal expression.
fn str_lit(e: &Expr) -> Option<String> {
    match e {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Some(s.value()),
        _ => None,
    }
}

/// Parses a struct and its markers.
fn parse_struct(cx: &mut MarkerCx<'_>, s: &syn::ItemStruct) -> Option<StructModel> {
    let name = s.ident.to_string();
    if !s.generics.params.is_empty() {
        cx.error(
            s.generics.span(),
            "definition structs take no generic parameters",
        );
    }
    let mut kind_keys = KindKeys::default();
    let mut kind_span = None;
    let mut scale = None;
    let mut subresources = Vec::new();
    let mut print_columns = Vec::new();
    let mut rules = Vec::new();
    let mut map = None;
    let mut gvk = None;
    let mut json_custom = false;
    for attr in &s.attrs {
        match markers::attr_name(attr).as_str() {
            "doc" => {}
            "gvk" => gvk = markers::parse_gvk(cx, attr, &name),
            "kind" => {
                kind_span.get_or_insert(attr.span());
                markers::parse_kind(cx, attr, &mut kind_keys);
            }
            "scale" => scale = markers::parse_scale(cx, attr),
            "subresource" => subresources.extend(markers::parse_subresource(cx, attr)),
            "print_column" => print_columns.extend(markers::parse_print_column(cx, attr)),
            "rule" => rules.extend(markers::parse_rule(cx, attr)),
            "map" => map = markers::parse_map(cx, attr),
            "json" => json_custom |= markers::parse_struct_json(cx, attr),
            _ => markers::unknown_marker(cx, attr, &STRUCT_MARKERS, "struct"),
        }
    }
    let loc = cx.loc(s.ident.span());
    if json_custom && kind_span.is_some() {
        cx.error(
            s.ident.span(),
            "a kind's JSON is generated: `#[json(custom)]` is for a value type whose JSON is not an object of its fields (such as a schema or a boolean)",
        );
    }
    let kind = match kind_span {
        Some(span) => {
            if kind_keys.scope.is_none() {
                cx.error(
                    span,
                    "a kind needs a scope: write `#[kind(namespaced)]` or `#[kind(cluster)]`",
                );
            }
            if kind_keys.create_on_update && kind_keys.create_only {
                cx.error(
                    span,
                    "`create_on_update` needs updates, and a `create_only` kind has none; keep one",
                );
            }
            let lower = name.to_lowercase();
            Some(KindModel {
                name: name.clone(),
                scope: kind_keys.scope.unwrap_or(crate::model::Scope::Namespaced),
                status: kind_keys.status,
                plural: kind_keys.plural.unwrap_or_else(|| plural_of(&lower)),
                singular: kind_keys.singular.unwrap_or(lower),
                short_names: kind_keys.short_names,
                categories: kind_keys.categories,
                // A review kind is only ever created (Kubernetes serves it with verb `create`).
                verbs: kind_keys.verbs.unwrap_or_else(|| {
                    if kind_keys.create_only {
                        vec!["create".to_string()]
                    } else {
                        crate::model::DEFAULT_VERBS
                            .iter()
                            .map(|v| v.to_string())
                            .collect()
                    }
                }),
                create_only: kind_keys.create_only,
                strategic_merge_patch: kind_keys.strategic_merge_patch,
                unconditional_update: kind_keys.unconditional_update,
                create_on_update: kind_keys.create_on_update,
                no_generation: kind_keys.no_generation,
                field_selectors: kind_keys.field_selectors,
                name_format: kind_keys
                    .name_format
                    .unwrap_or_else(|| "dns1123-subdomain".to_string()),
                scale,
                subresources,
                print_columns,
                loc: cx.loc(span),
            })
        }
        None => {
            if scale.is_some() || !print_columns.is_empty() || !subresources.is_empty() {
                cx.error(
                    s.ident.span(),
                    "`#[scale]`, `#[subresource]` and `#[print_column]` need `#[kind(…)]` on the same struct",
                );
            }
            None
        }
    };
    let Fields::Named(named) = &s.fields else {
        cx.error(
            s.ident.span(),
            "definition structs have named fields: `pub struct X { pub a: T }`",
        );
        return None;
    };
    let mut fields = Vec::new();
    for f in &named.named {
        if let Some(fm) = parse_field(cx, f) {
            fields.push(fm);
        }
    }
    Some(StructModel {
        name,
        docs: markers::docs(&s.attrs),
        fields,
        rules,
        kind,
        map,
        gvk,
        json_custom,
        loc,
    })
}

/// The English plural of a lowercase kind, as Kubernetes' `UnsafeGuessKindToResource` does.
pub fn plural_of(lower: &str) -> String {
    if lower.is_empty() {
        return String::new();
    }
    if lower.ends_with('s')
        || lower.ends_with("x")
        || lower.ends_with("z")
        || lower.ends_with("ch")
        || lower.ends_with("sh")
    {
        return format!("{lower}es");
    }
    if let Some(stem) = lower.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'i', 'o', 'u'])
    {
        return format!("{stem}ies");
    }
    format!("{lower}s")
}

/// Parses a field and its markers.
fn parse_field(cx: &mut MarkerCx<'_>, f: &syn::Field) -> Option<FieldModel> {
    let ident = f.ident.as_ref()?;
    let name = ident.to_string().trim_start_matches("r#").to_string();
    if !matches!(f.vis, syn::Visibility::Public(_)) {
        cx.error(
            ident.span(),
            format!("definition fields are public: write `pub {name}: …`"),
        );
    }
    let (unboxed, boxed) = types::unbox(cx, &f.ty);
    let ty = types::parse_type(cx, &unboxed);
    let mut json = JsonKeys::default();
    let mut proto = None;
    let mut default = None;
    let mut validation = Validation::default();
    let mut rules = Vec::new();
    let mut list = None;
    let mut map = None;
    let mut patch = None;
    for attr in &f.attrs {
        match markers::attr_name(attr).as_str() {
            "doc" => {}
            "proto" => proto = markers::parse_proto(cx, attr),
            "json" => markers::parse_json(cx, attr, &mut json),
            "default" => default = markers::parse_default(cx, attr),
            "validate" => markers::parse_validate(cx, attr, &mut validation),
            "rule" => rules.extend(markers::parse_rule(cx, attr)),
            "list" => list = markers::parse_list(cx, attr),
            "map" => map = markers::parse_map(cx, attr),
            "patch" => patch = markers::parse_patch(cx, attr),
            _ => markers::unknown_marker(cx, attr, &FIELD_MARKERS, "field"),
        }
    }
    let ty = ty?;
    Some(FieldModel {
        json_name: json.name.unwrap_or_else(|| json_name_of(&name)),
        name,
        docs: markers::docs(&f.attrs),
        ty,
        proto: match proto {
            Some(markers::ProtoMarker::Number(n, _)) => Some(n),
            _ => None,
        },
        proto_skip: proto == Some(markers::ProtoMarker::Skip),
        proto_by_value: matches!(proto, Some(markers::ProtoMarker::Number(_, true))),
        json_always: json.always,
        json_keep_zero: json.keep_zero,
        json_inline: json.inline,
        boxed,
        default,
        validation,
        rules,
        list,
        map,
        patch,
        loc: cx.loc(ident.span()),
    })
}

/// The default JSON name of a Rust field: lowerCamelCase (`type_` → `type`).
pub fn json_name_of(rust_name: &str) -> String {
    let trimmed = rust_name.trim_end_matches('_');
    trimmed.to_lower_camel_case()
}
