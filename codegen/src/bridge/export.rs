//! Definitions → CustomResourceDefinitions: each kind of a group as one
//! `apiextensions.k8s.io/v1` CRD, served in every version that defines it.
//!
//! The schema of each version is the OpenAPI v3 schema the generator publishes for the kind
//! ([`crate::emit::openapi::schemas_v3`]), with every `$ref` inlined and the shared types
//! spelled as CRDs spell them: `Time` a `date-time` string, `IntOrString` and `Quantity`
//! `x-kubernetes-int-or-string`, `RawExtension` and `Value` preserved unknown fields, the
//! root's `metadata` a bare object (the server validates metadata itself). Field markers keep
//! their keywords (`default`, bounds, `pattern`, `enum`, lengths and counts, list and map
//! types) and CEL rules become `x-kubernetes-validations`; the definitions' own formats
//! (`dns1123-label`, …), which no CRD knows, become the pattern and length they check.
//!
//! A compiled kind writes a field that is not an `Option` even when it was not sent (a number
//! as `0`, a struct as `{}` with its own defaults): the CRD says so with a `default` of that
//! zero value, so that a custom resource reads back as the compiled kind does.
//!
//! Kind markers become the CRD's names, scope, subresources (`status`, `scale`),
//! `additionalPrinterColumns` (with the `Age` column every compiled kind prints last) and
//! `selectableFields`. What a CRD cannot say (protobuf numbers, hooks, strategies, admission
//! plugins, compiled conversions, strategic merge patch, …) is listed in
//! [`Exported::losses`].
//!
//! ```no_run
//! let model = codegen::Generator::new("api-defs").load().unwrap();
//! let exported = codegen::bridge::export::export_group(&model, "example.dev").unwrap();
//! print!("{}", codegen::bridge::export::to_yaml(&exported.crds));
//! for loss in &exported.losses {
//!     eprintln!("not exported: {loss}");
//! }
//! ```

use serde_json::{Map, Value, json};

use super::Loss;
use crate::emit::openapi::{definition_name, meta_definition_name, schemas_v3};
use crate::model::{ApiModel, FieldModel, KindModel, Scope, StructModel, TypeRef, VersionModel};

/// What [`export_group`] made: one CRD per kind, and what the CRDs do not carry.
#[derive(Clone, Debug, Default)]
pub struct Exported {
    /// The `CustomResourceDefinition` objects, one per kind, in the order the kinds are
    /// defined.
    pub crds: Vec<Value>,
    /// What the definitions say that the CRDs cannot, each with where it is.
    pub losses: Vec<Loss>,
}

/// Why a group could not be exported.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// No group of that name is defined.
    #[error("no group {0} in the definitions; the groups are: {1}")]
    UnknownGroup(String, String),
    /// The group defines no kind a CRD can serve.
    #[error("group {0} has no kind a CustomResourceDefinition can serve")]
    NoKinds(String),
}

/// The description CRDs give the `Age` column.
const CREATION_TIMESTAMP_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// The CRDs of every kind of `group` (its API group name, such as `example.dev`).
pub fn export_group(model: &ApiModel, group: &str) -> Result<Exported, ExportError> {
    let Some(g) = model.group(group).filter(|g| !g.is_shared()) else {
        let known: Vec<&str> = model.api_groups().map(|g| g.name.as_str()).collect();
        return Err(ExportError::UnknownGroup(group.into(), known.join(", ")));
    };
    let mut out = Exported::default();
    // Versions in the order clients prefer them (the definitions' priorities).
    let mut versions: Vec<&VersionModel> = g.versions.iter().filter(|v| !v.is_internal).collect();
    versions.sort_by(|a, b| b.priority.cmp(&a.priority).then(a.version.cmp(&b.version)));
    let mut kinds: Vec<&str> = Vec::new();
    for v in &versions {
        for k in v.kinds().filter_map(|s| s.kind.as_ref()) {
            if !kinds.contains(&k.name.as_str()) {
                kinds.push(&k.name);
            }
        }
    }
    for kind in kinds {
        let defined: Vec<(&VersionModel, &StructModel, &KindModel)> = versions
            .iter()
            .filter_map(|v| {
                let s = v.struct_named(kind)?;
                Some((*v, s, s.kind.as_ref()?))
            })
            .collect();
        if let Some(crd) = export_kind(model, &g.name, &defined, &mut out.losses) {
            out.crds.push(crd);
        }
    }
    for (file, present) in [
        ("hooks.rs", g.hooks.is_some()),
        ("strategy.rs", g.strategy.is_some()),
        ("admission.rs", g.admission.is_some()),
    ] {
        if present {
            out.losses.push(Loss {
                at: format!("{}/{file}", g.name),
                what: "hand-written code runs only in a compiled server; a CRD has no hooks, \
                       strategies or admission plugins (use admission webhooks or policies)"
                    .into(),
            });
        }
    }
    if let Some(internal) = &g.internal {
        let rules: usize = internal
            .structs
            .iter()
            .map(|s| s.rules.len() + s.fields.iter().map(|f| f.rules.len()).sum::<usize>())
            .sum();
        if rules > 0 {
            out.losses.push(Loss {
                at: format!("{}/internal.rs", g.name),
                what: format!(
                    "{rules} CEL rule(s) of the internal version check every version of a compiled \
                     kind; a CRD checks each version by its own schema, which has only the rules \
                     of that version's file"
                ),
            });
        }
    }
    if out.crds.is_empty() {
        return Err(ExportError::NoKinds(g.name.clone()));
    }
    Ok(out)
}

/// The CRDs as one YAML stream (`---` between documents), as `kubectl apply -f` reads it.
pub fn to_yaml(crds: &[Value]) -> String {
    crds.iter()
        .map(|crd| serde_yaml_ng::to_string(crd).expect("a JSON value is always YAML"))
        .collect::<Vec<_>>()
        .join("---\n")
}

/// The CRD of one kind, defined in `defined` (versions in preference order).
fn export_kind(
    model: &ApiModel,
    group: &str,
    defined: &[(&VersionModel, &StructModel, &KindModel)],
    losses: &mut Vec<Loss>,
) -> Option<Value> {
    let &(_, _, first) = defined.first()?;
    let (_, _, names_of) = defined
        .iter()
        .find(|(v, _, _)| v.storage)
        .copied()
        .unwrap_or(defined[0]);
    let mut lose = |at: String, what: &str| {
        losses.push(Loss {
            at,
            what: what.into(),
        })
    };
    if first.create_only {
        lose(
            first.name.clone(),
            "a create-only review kind is answered, never stored: a CRD cannot say it; not exported",
        );
        return None;
    }
    for (v, _, k) in defined {
        let at = format!("{} {}", k.name, v.version);
        if k.plural != names_of.plural
            || k.singular != names_of.singular
            || k.short_names != names_of.short_names
            || k.categories != names_of.categories
            || k.scope != names_of.scope
        {
            lose(
                at.clone(),
                "names or scope differ from the storage version's: a CRD has one set, the storage version's",
            );
        }
        kind_losses(v, k, &at, &mut lose);
    }
    let mut storage_seen = false;
    let mut crd_versions = Vec::new();
    for (v, s, k) in defined {
        let storage = v.storage && !storage_seen;
        storage_seen |= storage;
        let at = format!("{} {}", k.name, v.version);
        let schema = Inliner::new(model, v, &at).root_schema(s, losses);
        let mut version = json!({
            "name": v.version,
            "served": v.served,
            "storage": storage,
            "schema": {"openAPIV3Schema": schema},
        });
        let mut subresources = Map::new();
        if k.status {
            subresources.insert("status".into(), json!({}));
        }
        if let Some(scale) = &k.scale {
            let mut sc = json!({
                "specReplicasPath": scale.spec_replicas,
                "statusReplicasPath": scale.status_replicas,
            });
            if !scale.selector.is_empty() {
                sc["labelSelectorPath"] = Value::String(scale.selector.clone());
            }
            subresources.insert("scale".into(), sc);
        }
        if !subresources.is_empty() {
            version["subresources"] = Value::Object(subresources);
        }
        if !k.print_columns.is_empty() {
            let mut columns: Vec<Value> = k
                .print_columns
                .iter()
                .map(|c| {
                    let mut col = json!({"name": c.name, "type": c.type_, "jsonPath": c.json_path});
                    if !c.format.is_empty() {
                        col["format"] = Value::String(c.format.clone());
                    }
                    if !c.description.is_empty() {
                        col["description"] = Value::String(c.description.clone());
                    }
                    if c.priority != 0 {
                        col["priority"] = Value::from(c.priority);
                    }
                    col
                })
                .collect();
            // A compiled kind prints `Age` last; a CRD with columns prints only the ones it
            // lists.
            columns.push(json!({
                "name": "Age",
                "type": "date",
                "jsonPath": ".metadata.creationTimestamp",
                "description": CREATION_TIMESTAMP_DESCRIPTION,
            }));
            version["additionalPrinterColumns"] = Value::Array(columns);
        }
        if !k.field_selectors.is_empty() {
            version["selectableFields"] = Value::Array(
                k.field_selectors
                    .iter()
                    .map(|f| json!({"jsonPath": format!(".{f}")}))
                    .collect(),
            );
        }
        crd_versions.push(version);
    }
    if !storage_seen {
        // A group's storage version may not define every kind; the preferred one stores it.
        crd_versions[0]["storage"] = Value::Bool(true);
    }
    if defined.len() > 1 {
        let first_schema = &crd_versions[0]["schema"];
        if crd_versions.iter().any(|v| &v["schema"] != first_schema) {
            losses.push(Loss {
                at: first.name.clone(),
                what: "the versions' schemas differ and the compiled conversions between them \
                       (internal.rs and hooks) cannot be said in a CRD: it converts with strategy \
                       None (only apiVersion changes); serve a conversion webhook to convert"
                    .into(),
            });
        }
    }
    let mut names = json!({
        "plural": names_of.plural,
        "singular": names_of.singular,
        "kind": names_of.name,
        "listKind": names_of.list_name(),
    });
    if !names_of.short_names.is_empty() {
        names["shortNames"] = json!(names_of.short_names);
    }
    if !names_of.categories.is_empty() {
        names["categories"] = json!(names_of.categories);
    }
    Some(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{}.{group}", names_of.plural)},
        "spec": {
            "group": group,
            "names": names,
            "scope": match names_of.scope {
                Scope::Namespaced => "Namespaced",
                Scope::Cluster => "Cluster",
            },
            "versions": crd_versions,
            "conversion": {"strategy": "None"},
        },
    }))
}

/// What a kind's markers say that a CRD cannot.
fn kind_losses(v: &VersionModel, k: &KindModel, at: &str, lose: &mut impl FnMut(String, &str)) {
    if v.structs
        .iter()
        .any(|s| s.fields.iter().any(|f| f.proto.is_some()))
    {
        lose(
            at.into(),
            "protobuf field numbers: custom resources are served as JSON and YAML (a protobuf request is answered 406)",
        );
    }
    if k.strategic_merge_patch {
        lose(
            at.into(),
            "strategic_merge_patch: custom resources take JSON, merge and apply patches only",
        );
    }
    if k.verbs.len() != crate::model::DEFAULT_VERBS.len() {
        lose(at.into(), "verbs: a custom resource serves every verb");
    }
    if k.unconditional_update {
        lose(
            at.into(),
            "unconditional_update: a custom resource's update needs a resourceVersion",
        );
    }
    if k.create_on_update {
        lose(
            at.into(),
            "create_on_update: a PUT of a missing custom resource is 404",
        );
    }
    if k.no_generation {
        lose(
            at.into(),
            "no_generation: a custom resource always tracks metadata.generation",
        );
    }
    if k.name_format != "dns1123-subdomain" {
        lose(
            at.into(),
            "name_format: a custom resource's name is a DNS subdomain",
        );
    }
    for sub in &k.subresources {
        lose(
            format!("{at} /{}", sub.name),
            "a subresource answered by a strategy: a CRD has only status and scale",
        );
    }
}

/// Inlines one version's schemas into a CRD's schema.
struct Inliner<'a> {
    version: &'a VersionModel,
    defs: Map<String, Value>,
    at: &'a str,
    /// The definitions being inlined (a struct that contains itself cannot be).
    stack: Vec<String>,
    losses: Vec<Loss>,
}

impl<'a> Inliner<'a> {
    fn new(model: &ApiModel, version: &'a VersionModel, at: &'a str) -> Self {
        let mut defs = schemas_v3(model, version);
        // A compiled kind writes a field that is not an `Option` even when it was not sent:
        // a `default` of the zero value makes the custom resource read the same.
        for s in &version.structs {
            let name = definition_name(version, &s.name);
            let Some(props) = defs
                .get_mut(&name)
                .and_then(|d| d.get_mut("properties"))
                .and_then(Value::as_object_mut)
            else {
                continue;
            };
            for f in &s.fields {
                if let (Some(zero), Some(Value::Object(prop))) =
                    (zero_value(version, f), props.get_mut(&f.json_name))
                {
                    prop.entry("default").or_insert(zero);
                }
            }
        }
        Self {
            version,
            defs,
            at,
            stack: Vec::new(),
            losses: Vec::new(),
        }
    }

    /// The `openAPIV3Schema` of kind `s`.
    fn root_schema(mut self, s: &StructModel, losses: &mut Vec<Loss>) -> Value {
        let name = definition_name(self.version, &s.name);
        let mut root = self.resolve(&name, "");
        if let Some(props) = root.get_mut("properties").and_then(Value::as_object_mut)
            && let Some(meta) = props.get_mut("metadata")
        {
            // The server validates metadata itself; a CRD's root may say only that it is an
            // object.
            *meta = json!({"type": "object"});
        }
        losses.append(&mut self.losses);
        root
    }

    fn lose(&mut self, path: &str, what: String) {
        let at = if path.is_empty() {
            self.at.to_string()
        } else {
            format!("{} {path}", self.at)
        };
        if !self.losses.iter().any(|l| l.at == at && l.what == what) {
            self.losses.push(Loss { at, what });
        }
    }

    /// The inlined schema of definition `name`.
    fn resolve(&mut self, name: &str, path: &str) -> Value {
        let shared = |n: &str| meta_definition_name(n) == name;
        let string = |format: Option<&str>| match format {
            Some(f) => json!({"type": "string", "format": f}),
            None => json!({"type": "string"}),
        };
        let preserved = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        if shared("Time") || shared("MicroTime") {
            return string(Some("date-time"));
        }
        if shared("Duration") {
            return string(None);
        }
        if shared("IntOrString") {
            return int_or_string(None);
        }
        if shared("Quantity") {
            return int_or_string(Some(QUANTITY_PATTERN));
        }
        if shared("RawExtension") || shared("FieldsV1") {
            return preserved;
        }
        if shared("ObjectMeta") {
            // Below the root (a template's metadata) the server does not validate it: kept as
            // sent.
            return preserved;
        }
        if self.stack.iter().any(|n| n == name) {
            self.lose(
                path,
                format!(
                    "{} contains itself: a CRD schema cannot refer to itself, so from here on \
                     values are kept as sent, unvalidated",
                    short_name(name)
                ),
            );
            return preserved;
        }
        let Some(def) = self.defs.get(name).cloned() else {
            self.lose(
                path,
                format!("no schema for {name}: values are kept as sent"),
            );
            return json!({"x-kubernetes-preserve-unknown-fields": true});
        };
        self.stack.push(name.to_string());
        let out = self.node(&def, path);
        self.stack.pop();
        out
    }

    /// The inlined form of one schema node at `path` (`.spec.replicas`).
    fn node(&mut self, v: &Value, path: &str) -> Value {
        let Value::Object(obj) = v else {
            return v.clone();
        };
        if let Some(name) = ref_name(obj) {
            return self.resolve(&name, path);
        }
        let mut out = match obj.get("allOf").and_then(Value::as_array) {
            // `allOf: [{$ref}]` plus the field's keywords: the referenced schema, with the
            // field's keywords over it (its rules after the type's).
            Some(list) if list.len() == 1 && list[0].get("$ref").is_some() => {
                let Value::Object(mut base) = self.node(&list[0], path) else {
                    unreachable!("an inlined definition is an object")
                };
                for (k, value) in obj.iter().filter(|(k, _)| *k != "allOf") {
                    match (k.as_str(), base.get_mut(k)) {
                        ("x-kubernetes-validations", Some(Value::Array(rules))) => {
                            rules.extend(value.as_array().into_iter().flatten().cloned())
                        }
                        _ => {
                            base.insert(k.clone(), value.clone());
                        }
                    }
                }
                base
            }
            _ => obj.clone(),
        };
        out.remove("x-kubernetes-group-version-kind");
        if out.remove("x-kubernetes-patch-strategy").is_some() {
            out.remove("x-kubernetes-patch-merge-key");
            self.lose(
                path,
                "strategic merge patch strategy: custom resources take no strategic merge patches"
                    .into(),
            );
        }
        self.translate_format(&mut out, path);
        if let Some(Value::Object(props)) = out.get("properties").cloned() {
            let inlined: Map<String, Value> = props
                .iter()
                .map(|(k, p)| (k.clone(), self.node(p, &format!("{path}.{k}"))))
                .collect();
            out.insert("properties".into(), Value::Object(inlined));
        }
        if let Some(items) = out.get("items").cloned() {
            let inlined = self.node(&items, &format!("{path}[*]"));
            out.insert("items".into(), inlined);
        }
        if let Some(additional @ Value::Object(_)) = out.get("additionalProperties").cloned() {
            let inlined = self.node(&additional, &format!("{path}[*]"));
            out.insert("additionalProperties".into(), inlined);
        }
        Value::Object(out)
    }

    /// The definitions' own string formats, which CRDs do not know, as the checks they make.
    fn translate_format(&mut self, out: &mut Map<String, Value>, path: &str) {
        let Some(format) = out
            .get("format")
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            return;
        };
        let (pattern, max_length) = match format.as_str() {
            "int-or-string" => {
                out.remove("format");
                out.remove("type");
                if let Value::Object(ios) = int_or_string(None) {
                    out.extend(ios);
                }
                return;
            }
            "dns1123-label" => (DNS1123_LABEL, 63),
            "dns1123-subdomain" => (DNS1123_SUBDOMAIN, 253),
            "label-value" => (LABEL_VALUE, 63),
            "qualified-name" => (QUALIFIED_NAME, 316),
            "path-segment" => {
                out.remove("format");
                let rule = json!({
                    "rule": "self != '.' && self != '..' && !self.contains('/') && !self.contains('%')",
                    "message": "may not be '.' or '..' and may not contain '/' or '%'",
                });
                match out.get_mut("x-kubernetes-validations") {
                    Some(Value::Array(rules)) => rules.push(rule),
                    _ => {
                        out.insert("x-kubernetes-validations".into(), json!([rule]));
                    }
                }
                self.lose(
                    path,
                    "format path-segment: exported as a CEL rule (its message is not the compiled kind's)".into(),
                );
                return;
            }
            _ => return,
        };
        out.remove("format");
        if out.contains_key("pattern") {
            let all_of = out.entry("allOf").or_insert_with(|| json!([]));
            if let Value::Array(list) = all_of {
                list.push(json!({"pattern": pattern}));
            }
        } else {
            out.insert("pattern".into(), Value::String(pattern.into()));
        }
        let bound = out
            .get("maxLength")
            .and_then(Value::as_u64)
            .map_or(max_length, |m| m.min(max_length));
        out.insert("maxLength".into(), Value::from(bound));
        self.lose(
            path,
            format!(
                "format {format}: CRDs have no such format; exported as the pattern and length it \
                 checks (errors read as schema errors, not the compiled kind's messages)"
            ),
        );
    }
}

/// The definition name a `{"$ref": …}` schema points at.
fn ref_name(obj: &Map<String, Value>) -> Option<String> {
    let r = obj.get("$ref")?.as_str()?;
    Some(
        r.strip_prefix(crate::emit::openapi::Dialect::V3.ref_prefix())
            .unwrap_or(r)
            .to_string(),
    )
}

/// The last segment of a definition name (`dev.example.v1.Widget` → `Widget`).
fn short_name(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// An integer or a string, as CRDs say it.
fn int_or_string(pattern: Option<&str>) -> Value {
    let mut v = json!({
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": true,
    });
    if let Some(p) = pattern {
        v["pattern"] = Value::String(p.into());
    }
    v
}

/// The value a compiled kind writes for a field that was not sent, when it writes one: the
/// zero value of a scalar that is not an `Option`, `{}` for a struct that is not one (when
/// none of its fields is required, so that the default is valid). A required field gets none:
/// a missing one is an error.
fn zero_value(version: &VersionModel, f: &FieldModel) -> Option<Value> {
    if f.default.is_some() || f.json_inline || f.required() {
        return None;
    }
    match &f.ty {
        TypeRef::Bool => Some(json!(false)),
        TypeRef::I32 | TypeRef::I64 => Some(json!(0)),
        TypeRef::F64 => Some(json!(0)),
        TypeRef::String => Some(json!("")),
        TypeRef::Struct(name) => {
            let s = version.struct_named(name)?;
            let required = s.fields.iter().any(FieldModel::required);
            (!required && s.kind.is_none() && !s.json_custom).then(|| json!({}))
        }
        _ => None,
    }
}

/// Kubernetes' quantity syntax, as CRDs generated for Go types check it.
const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";
/// An RFC 1123 label.
const DNS1123_LABEL: &str = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";
/// An RFC 1123 subdomain.
const DNS1123_SUBDOMAIN: &str =
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
/// A label value (empty, or alphanumerics with `-`, `_`, `.` inside).
const LABEL_VALUE: &str = "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$";
/// A qualified name: an optional DNS subdomain prefix and `/`, and a name of at most 63
/// characters.
const QUALIFIED_NAME: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$";

#[cfg(test)]
mod tests;
