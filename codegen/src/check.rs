//! Whole-model checks: everything the parser cannot see in one attribute.
//!
//! Each check records every problem in [`Diagnostics`] with a location and the fix, so one
//! build reports all mistakes at once.

use std::collections::BTreeMap;

use crate::convert::{hook_names, is_hub, plan};
use crate::diagnostics::{Diagnostics, suggestion};
use crate::model::{
    ApiModel, FieldModel, GroupModel, ListType, Loc, StructModel, TypeRef, VersionModel,
};

/// Checks the whole model; problems are added to `diags`.
pub fn check(model: &ApiModel, diags: &mut Diagnostics) {
    let shared = model.shared();
    for group in &model.groups {
        if group.is_shared() {
            check_shared_group(group, diags);
        } else {
            check_group(group, diags);
        }
        for v in group.versions.iter().chain(group.internal.iter()) {
            check_version(v, shared, diags);
        }
    }
}

/// The protobuf package of the shared version: its messages are Kubernetes' meta types, which
/// other files import from `k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto`.
pub const SHARED_PROTO_PACKAGE: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";

/// The shared group (`#![shared]`): one version, Kubernetes' meta package, no kinds, no hub
/// and no hand-written files; only one group may be shared.
fn check_shared_group(group: &GroupModel, diags: &mut Diagnostics) {
    for (i, v) in group.versions.iter().enumerate() {
        if !v.shared {
            diags.push(
                v.loc.clone(),
                "the shared group has one version: remove this file, or `#![shared]` from the other",
            );
            continue;
        }
        if i > 0 {
            diags.push(v.loc.clone(), "only one version may be `#![shared]`");
        }
        if v.proto_package_or_default() != SHARED_PROTO_PACKAGE {
            diags.push(
                v.loc.clone(),
                format!("the shared version holds Kubernetes' meta types: write `#![proto_package = \"{SHARED_PROTO_PACKAGE}\"]`"),
            );
        }
        if v.storage || !v.served {
            diags.push(
                v.loc.clone(),
                "the shared version is neither stored nor served on its own: remove `#![storage]` and `#![served]`",
            );
        }
        for s in v.kinds() {
            if let Some(k) = &s.kind {
                diags.push(
                    k.loc.clone(),
                    "the shared version has no kinds: define kinds in a group of their own",
                );
            }
        }
    }
    if let Some(internal) = &group.internal {
        diags.push(
            internal.loc.clone(),
            "the shared group has no internal hub: remove internal.rs",
        );
    }
    for file in [&group.hooks, &group.strategy, &group.admission]
        .into_iter()
        .flatten()
    {
        diags.push(
            Loc {
                file: file.file.clone(),
                line: 1,
                column: 1,
            },
            "the shared group has no hooks, strategies or admission plugins: remove this file",
        );
    }
}

/// Group-level rules: one storage version, kinds consistent across versions, hub coverage and
/// conversion hooks. A kind defined in one version only, outside the hub, needs no hub: it is
/// stored in that version ([`GroupModel::kind_own_version`]).
fn check_group(group: &GroupModel, diags: &mut Diagnostics) {
    let storage: Vec<&VersionModel> = group.versions.iter().filter(|v| v.storage).collect();
    match storage.as_slice() {
        [] => {
            if let Some(first) = group.versions.first() {
                diags.push(
                    first.loc.clone(),
                    format!(
                        "group `{}` has no storage version: add `#![storage]` to exactly one version file (such as this one)",
                        display_group(&group.name)
                    ),
                );
            }
        }
        [only] => {
            if !only.served {
                diags.push(
                    only.loc.clone(),
                    "the storage version must be served: remove `#![served = false]` or put `#![storage]` on a served version",
                );
            }
        }
        [_, rest @ ..] => {
            for v in rest {
                diags.push(
                    v.loc.clone(),
                    format!(
                        "group `{}` has more than one storage version: remove `#![storage]` from all but one file",
                        display_group(&group.name)
                    ),
                );
            }
        }
    }
    if let Some(internal) = &group.internal
        && internal.storage
    {
        diags.push(internal.loc.clone(), "the internal hub is never stored: remove `#![storage]` from internal.rs and put it on a served version");
    }
    // Kinds keep their resource names and scope across versions.
    let mut seen: BTreeMap<&str, (&VersionModel, &StructModel)> = BTreeMap::new();
    for v in &group.versions {
        for s in v.kinds() {
            let Some(k) = &s.kind else { continue };
            match seen.get(k.name.as_str()) {
                None => {
                    seen.insert(&k.name, (v, s));
                }
                Some((pv, ps)) => {
                    let Some(pk) = &ps.kind else { continue };
                    if pk.plural != k.plural || pk.singular != k.singular || pk.scope != k.scope {
                        diags.push(
                            k.loc.clone(),
                            format!(
                                "kind `{}` must have the same plural, singular and scope in every version; {} has plural `{}`, scope {:?}",
                                k.name,
                                pv.version,
                                pk.plural,
                                pk.scope
                            ),
                        );
                    }
                }
            }
        }
    }
    for (kind, (v, s)) in &seen {
        // A kind defined in one version only, outside the hub, is stored in that version.
        if let Some(own) = group.kind_own_version(kind) {
            if !own.served {
                diags.push(
                    s.loc.clone(),
                    format!("kind `{kind}` is defined only in {}, which would store it, but that version is not served: remove `#![served = false]` or define the kind in the storage version too", own.version),
                );
            }
            continue;
        }
        if let Some(st) = storage.first()
            && st
                .struct_named(kind)
                .and_then(|s| s.kind.as_ref())
                .is_none()
        {
            diags.push(
                    s.loc.clone(),
                    format!("kind `{kind}` (served by {}) is missing from the storage version {}: define it there too", v.version, st.version),
                );
        }
    }
    check_conversions(group, diags);
}

/// Every kind of every version converts through the hub, except a kind that is its own hub;
/// mismatched fields need hooks.
fn check_conversions(group: &GroupModel, diags: &mut Diagnostics) {
    let Some(hub) = group.hub() else { return };
    let hooks_file = group.dir.join("hooks.rs");
    for v in &group.versions {
        if is_hub(group, v) {
            continue;
        }
        for s in v.kinds() {
            // A kind that is its own hub converts to nothing.
            if group
                .kind_own_version(&s.name)
                .is_some_and(|own| own.version == v.version)
            {
                continue;
            }
            if hub.struct_named(&s.name).is_none() {
                diags.push(
                    s.loc.clone(),
                    format!(
                        "kind `{}` has no struct of the same name in the hub version `{}` ({}): define it there",
                        s.name,
                        hub.version,
                        hub.file.display()
                    ),
                );
            }
        }
        for p in plan(v, hub) {
            if !p.needs_hooks() {
                continue;
            }
            let (to, from) = hook_names(&v.version, &hub.version, &p.from.name);
            let has = |name: &str| group.hooks.as_ref().is_some_and(|h| h.has(name));
            let mut missing = Vec::new();
            if !has(&to) {
                missing.push(format!(
                    "pub fn {to}(src: &{}::{s}, dst: &mut {}::{s}) {{ … }}",
                    v.version,
                    hub.version,
                    s = p.from.name
                ));
            }
            if !has(&from) {
                missing.push(format!(
                    "pub fn {from}(src: &{}::{s}, dst: &mut {}::{s}) {{ … }}",
                    hub.version,
                    v.version,
                    s = p.from.name
                ));
            }
            if missing.is_empty() {
                continue;
            }
            let (loc, what) = match p.version_only.first().and_then(|n| p.from.field(n)) {
                Some(f) => (
                    f.loc.clone(),
                    format!("field `{}` of `{}`", f.name, p.from.name),
                ),
                None => {
                    let name = p.hub_only.first().copied().unwrap_or_default();
                    (
                        p.from.loc.clone(),
                        format!("hub field `{name}` of `{}`", p.from.name),
                    )
                }
            };
            diags.push(
                loc,
                format!(
                    "{what} in {} has no matching field (same name and type) in the hub version `{}`, so it needs a hand-written conversion; write in {}:\n    {}",
                    v.api_version(),
                    hub.version,
                    hooks_file.display(),
                    missing.join("\n    ")
                ),
            );
        }
    }
}

/// `core` for the empty group name.
fn display_group(name: &str) -> &str {
    if name.is_empty() { "core" } else { name }
}

/// Per-file rules: names, types, markers that fit their field types, paths of kinds.
fn check_version(v: &VersionModel, shared: Option<&VersionModel>, diags: &mut Diagnostics) {
    if !v.is_internal && !valid_version_name(&v.version) {
        diags.push(
            v.loc.clone(),
            format!(
                "version `{}` is not a Kubernetes version name: use `v1`, `v1beta1`, `v2alpha3`, …",
                v.version
            ),
        );
    }
    let names: Vec<&str> = v.structs.iter().map(|s| s.name.as_str()).collect();
    for (i, s) in v.structs.iter().enumerate() {
        if names[..i].contains(&s.name.as_str()) {
            diags.push(
                s.loc.clone(),
                format!("struct `{}` is defined twice in this file", s.name),
            );
        }
        check_struct(v, s, &names, shared, diags);
    }
}

/// Whether a version name has Kubernetes' shape (`v1`, `v1beta1`, `v2alpha3`).
pub fn valid_version_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix('v') else {
        return false;
    };
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 || rest.starts_with('0') {
        return false;
    }
    let tail = &rest[digits..];
    tail.is_empty()
        || ["alpha", "beta"].iter().any(|p| {
            tail.strip_prefix(p).is_some_and(|n| {
                !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) && !n.starts_with('0')
            })
        })
}

/// Reports CEL rules that do not parse.
fn check_rules(rules: &[crate::model::CelRule], diags: &mut Diagnostics) {
    for r in rules {
        // The CEL parser may panic on some malformed input instead of returning an error.
        let result = std::panic::catch_unwind(|| {
            cel::Program::compile(&r.cel)
                .map(|_| ())
                .map_err(|e| e.to_string())
        });
        let problem = match result {
            Ok(Ok(())) => continue,
            Ok(Err(e)) => e.lines().next().unwrap_or_default().to_string(),
            Err(_) => "the CEL parser rejected it".to_string(),
        };
        diags.push(
            r.loc.clone(),
            format!("the CEL rule `{}` does not compile: {problem}", r.cel),
        );
    }
}

/// Checks one struct and its fields.
fn check_struct(
    v: &VersionModel,
    s: &StructModel,
    names: &[&str],
    shared: Option<&VersionModel>,
    diags: &mut Diagnostics,
) {
    check_rules(&s.rules, diags);
    if let (Some(_), Some(k)) = (&s.gvk, &s.kind) {
        diags.push(
            k.loc.clone(),
            "a kind has its group, version and kind already: remove `#[gvk]`",
        );
    }
    for f in &s.fields {
        check_rules(&f.rules, diags);
    }
    if let Some(k) = &s.kind {
        match s.field("metadata") {
            Some(f) if f.ty == TypeRef::Meta("ObjectMeta".into()) => {}
            Some(f) => diags.push(
                f.loc.clone(),
                "the `metadata` of a kind is `ObjectMeta`: write `pub metadata: ObjectMeta`",
            ),
            None => diags.push(
                k.loc.clone(),
                format!("kind `{}` needs a field `pub metadata: ObjectMeta`", k.name),
            ),
        }
        if let Some(scale) = &k.scale {
            for path in [
                &scale.spec_replicas,
                &scale.status_replicas,
                &scale.selector,
            ] {
                if !path.is_empty() {
                    check_json_path(v, s, path, false, &k.loc, diags);
                }
            }
        }
        for c in &k.print_columns {
            check_json_path(v, s, &c.json_path, true, &k.loc, diags);
        }
        if k.status && s.field("status").is_none() {
            diags.push(
                k.loc.clone(),
                "`status` needs a field `pub status: Option<…Status>` on the kind",
            );
        }
        for other in v.structs.iter() {
            if other.name == k.list_name() {
                diags.push(
                    other.loc.clone(),
                    format!(
                        "`{}` is generated for kind `{}`; rename this struct",
                        other.name, k.name
                    ),
                );
            }
        }
    }
    let fields = v.json_fields(s);
    let mut json_names: BTreeMap<&str, &FieldModel> = BTreeMap::new();
    for f in &fields {
        if let Some(prev) = json_names.insert(&f.json_name, f)
            && !std::ptr::eq(prev, *f)
        {
            diags.push(
                f.loc.clone(),
                format!(
                    "JSON name `{}` is used twice in `{}`; set `#[json(name = \"…\")]`",
                    f.json_name, s.name
                ),
            );
        }
    }
    let mut protos: BTreeMap<u32, &str> = BTreeMap::new();
    for f in &s.fields {
        if let Some(n) = f.proto
            && let Some(prev) = protos.insert(n, &f.name)
        {
            diags.push(
                f.loc.clone(),
                format!(
                    "protobuf field number {n} is already used by `{prev}`; pick another number"
                ),
            );
        }
        check_field(v, s, f, names, shared, diags);
    }
}

/// Checks that a JSONPath such as `.spec.replicas` names fields of the kind. With `filters`
/// (a printer column's path, which the server evaluates as a Kubernetes JSONPath), the path may
/// go on past a field with an index or filter (`.status.conditions[?(@.type=="Ready")].status`):
/// the fields up to the first `[` are checked.
fn check_json_path(
    v: &VersionModel,
    s: &StructModel,
    path: &str,
    filters: bool,
    loc: &Loc,
    diags: &mut Diagnostics,
) {
    let Some(rest) = path.strip_prefix('.') else {
        diags.push(
            loc.clone(),
            format!("JSONPath `{path}` must start with `.`, such as `.spec.replicas`"),
        );
        return;
    };
    let (rest, more) = match rest.find('[') {
        Some(i) if filters => (&rest[..i], true),
        _ => (rest, false),
    };
    let mut current = Some(s);
    for segment in rest.split('.') {
        let Some(st) = current else { return };
        if more && segment.is_empty() {
            return;
        }
        let fields = v.json_fields(st);
        let Some(f) = fields.iter().find(|f| f.json_name == segment) else {
            let hint = suggestion(segment, fields.iter().map(|f| f.json_name.as_str()));
            diags.push(
                loc.clone(),
                format!(
                    "JSONPath `{path}`: `{}` has no field `{segment}`{hint}",
                    st.name
                ),
            );
            return;
        };
        current = match f.ty.unwrap_option() {
            TypeRef::Struct(n) => v.struct_named(n),
            _ => None,
        };
        if matches!(f.ty.unwrap_option(), TypeRef::Meta(_) | TypeRef::Extern(_)) {
            return;
        }
    }
}

/// Checks one field's type references and markers.
fn check_field(
    v: &VersionModel,
    s: &StructModel,
    f: &FieldModel,
    names: &[&str],
    shared: Option<&VersionModel>,
    diags: &mut Diagnostics,
) {
    let shared_names: Vec<&str> = shared
        .map(|sv| sv.structs.iter().map(|s| s.name.as_str()).collect())
        .unwrap_or_default();
    check_type_refs(&f.ty, f, names, &shared_names, diags);
    if f.json_inline
        && let TypeRef::Struct(n) = &f.ty
        && v.struct_named(n).is_some_and(|st| st.json_custom)
    {
        diags.push(
            f.loc.clone(),
            format!("`{n}` writes its own JSON (`#[json(custom)]`), which is not an object of fields to inline: remove `#[json(inline)]`"),
        );
    }
    if f.boxed && f.default.is_some() {
        diags.push(
            f.loc.clone(),
            "a boxed field (`Box<T>`) takes no `#[default]`: default the fields of its struct instead",
        );
    }
    if f.proto_by_value
        && !matches!(&f.ty, TypeRef::Option(inner) if matches!(inner.as_ref(),
            TypeRef::String | TypeRef::Bool | TypeRef::I32 | TypeRef::I64 | TypeRef::F64
                | TypeRef::Time | TypeRef::MicroTime))
    {
        diags.push(
            f.loc.clone(),
            format!("`by_value` applies to an `Option` of a string, number, boolean or time, not to `{}`; remove it", type_display(&f.ty)),
        );
    }
    if f.json_keep_zero && !f.proto_by_value {
        diags.push(
            f.loc.clone(),
            "`#[json(keep_zero)]` applies to `#[proto(N, by_value)]` fields: add `by_value` or remove it",
        );
    }
    let base = f.ty.unwrap_option();
    let leaf = match base {
        TypeRef::Vec(i) | TypeRef::Map(i) => i.as_ref(),
        other => other,
    };
    let numeric = matches!(leaf, TypeRef::I32 | TypeRef::I64 | TypeRef::F64);
    let string = matches!(leaf, TypeRef::String);
    let val = &f.validation;
    let ty_name = type_display(&f.ty);
    let mut wrong = |marker: &str, wants: &str| {
        diags.push(f.loc.clone(), format!("`{marker}` applies to {wants}, not to `{ty_name}`; remove it or change the field type"));
    };
    if !numeric {
        for (name, set) in [
            ("minimum", val.minimum.is_some()),
            ("maximum", val.maximum.is_some()),
            ("exclusive_minimum", val.exclusive_minimum.is_some()),
            ("exclusive_maximum", val.exclusive_maximum.is_some()),
        ] {
            if set {
                wrong(name, "numbers (`i32`, `i64`, `f64`)");
            }
        }
    }
    if !string {
        for (name, set) in [
            ("pattern", val.pattern.is_some()),
            ("min_length", val.min_length.is_some()),
            ("max_length", val.max_length.is_some()),
            ("enum", !val.enum_values.is_empty()),
            ("format", val.format.is_some()),
        ] {
            if set {
                wrong(name, "strings (`String`)");
            }
        }
    }
    if !matches!(base, TypeRef::Vec(_)) {
        if val.min_items.is_some() {
            wrong("min_items", "lists (`Vec<T>`)");
        }
        if val.max_items.is_some() {
            wrong("max_items", "lists (`Vec<T>`)");
        }
        if f.list.is_some() {
            wrong("#[list]", "lists (`Vec<T>`)");
        }
    }
    if !matches!(base, TypeRef::Map(_)) {
        if val.min_properties.is_some() {
            wrong("min_properties", "maps (`BTreeMap<String, T>`)");
        }
        if val.max_properties.is_some() {
            wrong("max_properties", "maps (`BTreeMap<String, T>`)");
        }
    }
    if f.map.is_some() && !matches!(base, TypeRef::Map(_) | TypeRef::Struct(_)) {
        wrong("#[map]", "maps (`BTreeMap<String, T>`) and structs");
    }
    if f.json_inline && !matches!(f.ty, TypeRef::Struct(_)) {
        wrong("#[json(inline)]", "struct fields");
    }
    if let Some(l) = &f.list
        && l.type_ == ListType::Map
    {
        let item_of = |n: &str| match leaf {
            TypeRef::Meta(_) => shared.and_then(|sv| sv.struct_named(n).map(|st| (sv, st))),
            _ => v.struct_named(n).map(|st| (v, st)),
        };
        match leaf {
            TypeRef::Struct(n) | TypeRef::Meta(n) => {
                if let Some((iv, item)) = item_of(n) {
                    let keys: Vec<&str> = iv
                        .json_fields(item)
                        .iter()
                        .map(|f| f.json_name.as_str())
                        .collect();
                    for key in &l.map_keys {
                        if !keys.contains(&key.as_str()) {
                            diags.push(
                                f.loc.clone(),
                                format!(
                                    "map key `{key}` is not a JSON field of `{n}`{}",
                                    suggestion(key, keys.iter().copied())
                                ),
                            );
                        }
                    }
                }
            }
            // An extern struct's keys are checked where its definitions are known
            // (`crate::parse::link_externs`).
            TypeRef::Extern(_) => {}
            _ => wrong("#[list(type = \"map\")]", "lists of structs"),
        }
    }
    if let Some(d) = &f.default
        && !default_fits(d, base)
    {
        diags.push(
            f.loc.clone(),
            format!(
                "default `{d}` does not fit `{ty_name}`; write a {} literal",
                literal_kind(base)
            ),
        );
    }
    let _ = s;
}

/// Reports struct names that do not exist in the file.
fn check_type_refs(
    t: &TypeRef,
    f: &FieldModel,
    names: &[&str],
    shared: &[&str],
    diags: &mut Diagnostics,
) {
    match t {
        TypeRef::Struct(n) if !names.contains(&n.as_str()) => {
            let candidates = names
                .iter()
                .copied()
                .chain(shared.iter().copied())
                .chain(crate::model::SCALAR_TYPE_NAMES);
            diags.push(
                f.loc.clone(),
                format!("unknown type `{n}`{}; define `pub struct {n} {{ … }}` in this file or use a known type", suggestion(n, candidates)),
            );
        }
        TypeRef::Option(i) | TypeRef::Vec(i) | TypeRef::Map(i) => {
            check_type_refs(i, f, names, shared, diags)
        }
        _ => {}
    }
}

/// Whether a default literal fits a type.
fn default_fits(d: &serde_json::Value, t: &TypeRef) -> bool {
    match (t, d) {
        (TypeRef::Bool, serde_json::Value::Bool(_)) => true,
        (TypeRef::I32 | TypeRef::I64, serde_json::Value::Number(n)) => n.is_i64() || n.is_u64(),
        (TypeRef::F64, serde_json::Value::Number(_)) => true,
        (
            TypeRef::String
            | TypeRef::Quantity
            | TypeRef::Time
            | TypeRef::MicroTime
            | TypeRef::Duration,
            serde_json::Value::String(_),
        ) => true,
        (TypeRef::IntOrString, serde_json::Value::String(_) | serde_json::Value::Number(_)) => true,
        (TypeRef::Quantity, serde_json::Value::Number(_)) => true,
        (TypeRef::Vec(i), serde_json::Value::Array(items)) => {
            items.iter().all(|x| default_fits(x, i))
        }
        (TypeRef::Option(i), _) => default_fits(d, i),
        (TypeRef::Json | TypeRef::RawExtension, _) => true,
        _ => false,
    }
}

/// The kind of literal a type takes, for messages.
fn literal_kind(t: &TypeRef) -> &'static str {
    match t {
        TypeRef::Bool => "boolean",
        TypeRef::I32 | TypeRef::I64 => "integer",
        TypeRef::F64 => "number",
        TypeRef::Vec(_) => "list (`[…]`)",
        TypeRef::Option(i) => literal_kind(i),
        _ => "string",
    }
}

/// A type as written in definitions.
fn type_display(t: &TypeRef) -> String {
    match t {
        TypeRef::Bool => "bool".into(),
        TypeRef::I32 => "i32".into(),
        TypeRef::I64 => "i64".into(),
        TypeRef::F64 => "f64".into(),
        TypeRef::String => "String".into(),
        TypeRef::Bytes => "Bytes".into(),
        TypeRef::Time => "Time".into(),
        TypeRef::MicroTime => "MicroTime".into(),
        TypeRef::Quantity => "Quantity".into(),
        TypeRef::IntOrString => "IntOrString".into(),
        TypeRef::RawExtension => "RawExtension".into(),
        TypeRef::Duration => "Duration".into(),
        TypeRef::FieldsV1 => "FieldsV1".into(),
        TypeRef::Json => "Value".into(),
        TypeRef::Meta(m) => m.clone(),
        TypeRef::Extern(r) => r.path(),
        TypeRef::Struct(n) => n.clone(),
        TypeRef::Option(i) => format!("Option<{}>", type_display(i)),
        TypeRef::Vec(i) => format!("Vec<{}>", type_display(i)),
        TypeRef::Map(i) => format!("BTreeMap<String, {}>", type_display(i)),
    }
}
