//! A version's `openAPIV3Schema` → the structs of its definition file.
//!
//! Every object node with `properties` becomes a struct named from its path (`CronTab`,
//! `CronTabSpec`, `CronTabSpecPortsItem` for the items of `spec.ports`, `…Value` for the values
//! of a map), its properties fields in JSON-name order (the order kube-apiserver writes a custom
//! resource's keys in), numbered `1..n` for protobuf. What a node says that the definitions
//! cannot is recorded as a [`Loss`] with its path in the CRD.

use std::collections::BTreeSet;

use heck::{ToSnakeCase, ToUpperCamelCase};
use serde_json::{Map, Value};

use super::Loss;

#[path = "checks.rs"]
mod checks;

/// A struct of the definition file.
#[derive(Debug, Clone)]
pub(super) struct Def {
    /// The struct name.
    pub name: String,
    /// The doc comment (the node's `description`).
    pub docs: String,
    /// The fields, in JSON-name order.
    pub fields: Vec<Field>,
    /// `#[rule(…)]` markers of the struct, rendered.
    pub rules: Vec<String>,
    /// `#[map(type = "atomic")]` on the struct.
    pub atomic: bool,
}

/// A field of a struct.
#[derive(Debug, Clone)]
pub(super) struct Field {
    /// The JSON name.
    pub json: String,
    /// The Rust name (a raw identifier for a keyword, written `r#type`).
    pub rust: String,
    /// The doc comment.
    pub docs: String,
    /// The Rust type as written in the definitions.
    pub ty: String,
    /// The markers after `#[proto]` and `#[json(name)]`, rendered (`#[validate(required)]`).
    pub markers: Vec<String>,
    /// `#[json(always)]`.
    pub always: bool,
}

/// Builds the structs of one version's schema.
pub(super) struct Schemas<'a> {
    /// The structs, kind first, then in the order they were met.
    pub defs: Vec<Def>,
    /// Where losses go.
    pub losses: &'a mut Vec<Loss>,
    /// Struct names taken (and names reserved: the list kind, the shared meta structs).
    taken: BTreeSet<String>,
}

/// What the field-level markers collect while a node's type is read.
#[derive(Default)]
pub(super) struct Markers {
    /// `#[validate(…)]` keys, rendered (`minimum = 0`).
    pub validate: Vec<String>,
    /// `#[rule(…)]` on the field.
    rules: Vec<String>,
    /// `#[list(…)]`.
    list: Option<String>,
    /// `#[map(…)]`.
    map: Option<String>,
}

/// What a property node is, for the field's `Option`-ness and markers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Shape {
    /// A string-like scalar (`String`, `IntOrString`): empty counts as missing.
    Text,
    /// A number or boolean.
    Scalar,
    /// A struct.
    Struct,
    /// A list.
    List,
    /// A map.
    Map,
    /// Any JSON.
    Any,
}

/// The keys of a schema node the importer reads; any other key is reported as a loss.
const KNOWN_KEYS: [&str; 27] = [
    "type",
    "format",
    "description",
    "properties",
    "required",
    "items",
    "additionalProperties",
    "enum",
    "pattern",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "default",
    "nullable",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-int-or-string",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
];

/// Rust keywords that cannot be raw identifiers: such fields get a trailing `_`.
const NOT_RAW: [&str; 4] = ["self", "Self", "super", "crate"];

/// Rust keywords, written as raw identifiers (`r#type`).
const KEYWORDS: [&str; 47] = [
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "do", "dyn",
    "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl", "in", "let",
    "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref", "return",
    "static", "struct", "trait", "true", "try", "type", "typeof", "unsafe", "unsized", "use",
    "virtual", "where", "while",
];

/// Quotes a string as a Rust string literal.
pub(super) fn lit(s: &str) -> String {
    format!("{s:?}")
}

/// A list of string literals: `["a", "b"]`.
pub(super) fn lit_list<S: AsRef<str>>(items: &[S]) -> String {
    let inner: Vec<String> = items.iter().map(|s| lit(s.as_ref())).collect();
    format!("[{}]", inner.join(", "))
}

impl<'a> Schemas<'a> {
    /// A builder with `reserved` names taken.
    pub fn new(losses: &'a mut Vec<Loss>, reserved: impl IntoIterator<Item = String>) -> Self {
        Self {
            defs: Vec::new(),
            losses,
            taken: reserved.into_iter().collect(),
        }
    }

    fn loss(&mut self, path: &str, what: impl Into<String>) {
        self.losses.push(Loss {
            at: path.to_string(),
            what: what.into(),
        });
    }

    /// A struct name from `wanted`, made unique.
    fn unique(&mut self, wanted: &str) -> String {
        let mut base = wanted.to_upper_camel_case();
        if !base.starts_with(|c: char| c.is_ascii_alphabetic()) {
            base = format!("T{base}");
        }
        let mut name = base.clone();
        let mut n = 2;
        while self.taken.contains(&name) {
            name = format!("{base}{n}");
            n += 1;
        }
        self.taken.insert(name.clone());
        name
    }

    /// Reports every key of `node` the importer does not read.
    fn unknown_keys(&mut self, node: &Map<String, Value>, path: &str) {
        for key in node.keys() {
            if KNOWN_KEYS.contains(&key.as_str()) || key == "x-kubernetes-validations" {
                continue;
            }
            let what = match key.as_str() {
                "multipleOf" => "`multipleOf` has no marker: the constraint is not checked",
                "uniqueItems" => "`uniqueItems` has no marker: the constraint is not checked",
                "allOf" | "anyOf" | "oneOf" | "not" => {
                    "schema composition (`allOf`/`anyOf`/`oneOf`/`not`) has no marker: its value validation is not checked"
                }
                "$ref" | "id" | "$schema" | "definitions" | "patternProperties"
                | "dependencies" | "additionalItems" => {
                    "a keyword a structural schema does not allow: ignored"
                }
                "externalDocs" | "title" | "example" => {
                    "a documentation keyword with no marker: not carried into the OpenAPI"
                }
                _ => "a schema keyword the definitions cannot say: ignored",
            };
            self.loss(&format!("{path}.{key}"), what);
        }
    }

    /// Adds the kind's struct from the root schema: `metadata` (`ObjectMeta`, number 1), then
    /// every root property but `apiVersion`, `kind` and `metadata`. Returns the index of the
    /// kind's `Def`.
    pub fn kind(&mut self, kind: &str, root: &Value, path: &str) -> usize {
        let node = root.as_object().cloned().unwrap_or_default();
        let name = self.unique(kind);
        let idx = self.defs.len();
        self.defs.push(Def {
            name: name.clone(),
            docs: describe(&node),
            fields: Vec::new(),
            rules: Vec::new(),
            atomic: false,
        });
        self.unknown_keys(&node, path);
        if node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
            self.loss(
                &format!("{path}.x-kubernetes-preserve-unknown-fields"),
                "unknown top-level fields are kept by kube-apiserver; a kind's struct keeps only its declared fields",
            );
        }
        let mut fields = vec![Field {
            json: "metadata".into(),
            rust: "metadata".into(),
            docs: "Standard object metadata.".into(),
            ty: "ObjectMeta".into(),
            markers: Vec::new(),
            always: false,
        }];
        let props = node
            .get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        if let Some(meta) = props.get("metadata") {
            let keys: Vec<&String> = meta
                .as_object()
                .map(|m| m.keys().filter(|k| *k != "type").collect())
                .unwrap_or_default();
            if !keys.is_empty() {
                self.loss(
                    &format!("{path}.properties.metadata"),
                    "constraints on `metadata` (name, generateName) have no marker: metadata is validated as ObjectMeta only",
                );
            }
        }
        let required = required_of(&node);
        let mut names: Vec<&String> = props
            .keys()
            .filter(|k| !matches!(k.as_str(), "apiVersion" | "kind" | "metadata"))
            .collect();
        names.sort();
        let mut used = BTreeSet::from(["metadata".to_string()]);
        for json in names {
            let prop_path = format!("{path}.properties.{json}");
            let f = self.field(
                &name,
                json,
                &props[json],
                required.contains(json),
                &prop_path,
            );
            fields.push(unique_field(f, &mut used));
        }
        let rules = self.rules(&node, path, true);
        let def = &mut self.defs[idx];
        def.fields = fields;
        def.rules = rules;
        idx
    }

    /// The `#[rule]` markers of a node's `x-kubernetes-validations` (what the language cannot
    /// carry is a loss).
    fn rules(&mut self, node: &Map<String, Value>, path: &str, carried: bool) -> Vec<String> {
        let Some(list) = node
            .get("x-kubernetes-validations")
            .and_then(Value::as_array)
        else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, r) in list.iter().enumerate() {
            let rpath = format!("{path}.x-kubernetes-validations[{i}]");
            let Some(rule) = r.get("rule").and_then(Value::as_str) else {
                self.loss(&rpath, "a validation rule without `rule`: dropped");
                continue;
            };
            if !carried {
                self.loss(
                    &rpath,
                    format!("a CEL rule on list items or map values has no marker there: `{rule}` is not checked"),
                );
                continue;
            }
            if mentions_old_self(rule) {
                self.loss(
                    &rpath,
                    format!("a transition rule (it reads `oldSelf`) has no marker: `{rule}` is not checked"),
                );
                continue;
            }
            for key in [
                "messageExpression",
                "reason",
                "fieldPath",
                "optionalOldSelf",
            ] {
                if let Some(v) = r.get(key) {
                    self.loss(
                        &format!("{rpath}.{key}"),
                        format!("`{key}` ({v}) has no marker: the rule reports `message` (or `failed rule: <rule>`) as an Invalid value at the rule's node"),
                    );
                }
            }
            let message = r
                .get("message")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|m| !m.is_empty());
            out.push(match message {
                Some(m) => format!("#[rule(cel = {}, message = {})]", lit(rule), lit(m)),
                None => format!("#[rule(cel = {})]", lit(rule)),
            });
        }
        out
    }

    /// An object node with properties → a struct named `name`; returns the struct name.
    fn object(&mut self, wanted: &str, node: &Map<String, Value>, path: &str) -> String {
        let name = self.unique(wanted);
        let idx = self.defs.len();
        self.defs.push(Def {
            name: name.clone(),
            docs: describe(node),
            fields: Vec::new(),
            rules: Vec::new(),
            atomic: false,
        });
        let props = node
            .get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let required = required_of(node);
        for r in &required {
            if !props.contains_key(r) {
                self.loss(
                    &format!("{path}.required"),
                    format!("`{r}` is required but not a property: a structural schema cannot have it, dropped"),
                );
            }
        }
        let mut names: Vec<&String> = props.keys().collect();
        names.sort();
        let mut fields = Vec::new();
        let mut used = BTreeSet::new();
        for json in names {
            let prop_path = format!("{path}.properties.{json}");
            let f = self.field(
                &name,
                json,
                &props[json],
                required.contains(json),
                &prop_path,
            );
            fields.push(unique_field(f, &mut used));
        }
        let rules = self.rules(node, path, true);
        let atomic = node.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic");
        let def = &mut self.defs[idx];
        def.fields = fields;
        def.rules = rules;
        def.atomic = atomic;
        name
    }

    /// One property of a struct named `parent`.
    fn field(
        &mut self,
        parent: &str,
        json: &str,
        node: &Value,
        required: bool,
        path: &str,
    ) -> Field {
        let empty = Map::new();
        let obj = node.as_object().unwrap_or(&empty);
        let mut m = Markers::default();
        let hint = format!("{parent}{}", json.to_upper_camel_case());
        let (ty, shape) = self.value_type(&hint, obj, path, &mut m, 0);
        let default = obj.get("default");
        let mut always = false;
        let mut markers = Vec::new();
        let ty = match (required, default) {
            (true, _) => {
                if default.is_some() {
                    self.loss(
                        &format!("{path}.default"),
                        "a default on a required property never applies (kube-apiserver applies it only to absent values, which fail as required): dropped",
                    );
                }
                // `#![crd_validation]`: a required `Option` need only be present.
                m.validate.insert(0, "required".into());
                format!("Option<{ty}>")
            }
            (false, None) => format!("Option<{ty}>"),
            (false, Some(d)) => match (shape, d) {
                (Shape::Struct, Value::Object(o)) if o.is_empty() => ty,
                (Shape::Map, Value::Object(o)) if o.is_empty() => {
                    always = true;
                    ty
                }
                (Shape::List, Value::Array(items)) if items.iter().all(is_literal) => {
                    always = true;
                    if !items.is_empty() {
                        markers.push(format!("#[default({})]", literal(d)));
                    }
                    ty
                }
                (Shape::Text | Shape::Scalar, d) if is_literal(d) && !d.is_null() => {
                    markers.push(format!("#[default({})]", literal(d)));
                    ty
                }
                (_, d) => {
                    self.loss(
                        &format!("{path}.default"),
                        format!("the default {d} has no marker (literals, `{{}}` for an object and lists of literals do): not applied"),
                    );
                    format!("Option<{ty}>")
                }
            },
        };
        if obj.get("nullable") == Some(&Value::Bool(true)) {
            self.loss(
                &format!("{path}.nullable"),
                "`nullable: true` has no marker: a null value is dropped (kube-apiserver keeps it)",
            );
        }
        if !m.validate.is_empty() {
            markers.push(format!("#[validate({})]", m.validate.join(", ")));
        }
        markers.extend(m.rules);
        markers.extend(m.list);
        markers.extend(m.map);
        Field {
            json: json.to_string(),
            rust: rust_field_name(json),
            docs: describe(obj),
            ty,
            markers,
            always,
        }
    }

    /// The type of a value node and its field-level markers. `depth` 0 is the property itself,
    /// 1 the items of a list or values of a map (whose scalar checks still fit the field's
    /// `#[validate]`), deeper nodes carry no markers.
    fn value_type(
        &mut self,
        hint: &str,
        node: &Map<String, Value>,
        path: &str,
        m: &mut Markers,
        depth: usize,
    ) -> (String, Shape) {
        self.unknown_keys(node, path);
        if depth > 0 {
            let object =
                node.contains_key("properties") && node.get("type") == Some(&Value::from("object"));
            if node.contains_key("description") && !object {
                self.loss(
                    &format!("{path}.description"),
                    "the description of list items or map values that are not structs has no place: not carried into the OpenAPI",
                );
            }
            for key in ["default", "nullable"] {
                if node.contains_key(key) {
                    self.loss(
                        &format!("{path}.{key}"),
                        format!("`{key}` on list items or map values has no marker: not applied"),
                    );
                }
            }
        }
        let flag = |k: &str| node.get(k) == Some(&Value::Bool(true));
        let ty = node.get("type").and_then(Value::as_str).unwrap_or("");
        if flag("x-kubernetes-int-or-string") {
            self.scalar_checks(node, path, m, depth, "IntOrString");
            self.node_rules(node, path, m, depth);
            return ("IntOrString".into(), Shape::Text);
        }
        if flag("x-kubernetes-embedded-resource") {
            self.loss(
                &format!("{path}.x-kubernetes-embedded-resource"),
                "an embedded resource is any JSON (`Value`): its apiVersion, kind and metadata are not checked and the schema under it is not applied",
            );
            self.node_rules(node, path, m, depth);
            return ("Value".into(), Shape::Any);
        }
        if flag("x-kubernetes-preserve-unknown-fields") {
            for key in ["x-kubernetes-map-type", "x-kubernetes-list-type"] {
                if node.contains_key(key) {
                    self.loss(
                        &format!("{path}.{key}"),
                        format!("`{key}` on a node that keeps unknown fields (`Value`) has no marker: server-side apply replaces it whole"),
                    );
                }
            }
            if node.contains_key("properties") || node.contains_key("additionalProperties") {
                self.loss(
                    &format!("{path}.properties"),
                    "the properties of a node that keeps unknown fields have no place in `Value`: their types and checks are not applied",
                );
            }
            if !ty.is_empty() {
                self.loss(
                    &format!("{path}.type"),
                    format!("`Value` holds any JSON: the type `{ty}` of a node that keeps unknown fields is not checked"),
                );
            }
            self.node_rules(node, path, m, depth);
            return ("Value".into(), Shape::Any);
        }
        match ty {
            "object" => {
                if let Some(ap) = node.get("additionalProperties") {
                    let inner = match ap {
                        Value::Object(o) => o.clone(),
                        _ => Map::from_iter([(
                            "x-kubernetes-preserve-unknown-fields".to_string(),
                            Value::Bool(true),
                        )]),
                    };
                    let mut inner_m = Markers::default();
                    let (t, _) = self.value_type(
                        &format!("{hint}Value"),
                        &inner,
                        &format!("{path}.additionalProperties"),
                        &mut inner_m,
                        depth + 1,
                    );
                    if depth == 0 {
                        m.validate.extend(inner_m.validate);
                        self.count_checks(node, path, m, "Properties");
                        if let Some(mt) = node.get("x-kubernetes-map-type").and_then(Value::as_str)
                        {
                            m.map = Some(format!("#[map(type = {})]", lit(mt)));
                        }
                        self.node_rules(node, path, m, depth);
                    } else {
                        self.deep_checks(node, path);
                    }
                    return (format!("BTreeMap<String, {t}>"), Shape::Map);
                }
                for key in ["minProperties", "maxProperties"] {
                    if node.contains_key(key) {
                        self.loss(
                            &format!("{path}.{key}"),
                            format!("`{key}` on an object with fixed properties has no marker (the definitions count the entries of maps)"),
                        );
                    }
                }
                let name = self.object(hint, node, path);
                if depth == 0
                    && let Some(mt) = node.get("x-kubernetes-map-type").and_then(Value::as_str)
                    && mt != "atomic"
                {
                    m.map = Some(format!("#[map(type = {})]", lit(mt)));
                }
                (name, Shape::Struct)
            }
            "array" => {
                let items = node
                    .get("items")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                let mut inner_m = Markers::default();
                let (t, item_shape) = self.value_type(
                    &format!("{hint}Item"),
                    &items,
                    &format!("{path}.items"),
                    &mut inner_m,
                    depth + 1,
                );
                if depth == 0 {
                    m.validate.extend(inner_m.validate);
                    self.count_checks(node, path, m, "Items");
                    if let Some(lt) = node.get("x-kubernetes-list-type").and_then(Value::as_str) {
                        let keys: Vec<String> = node
                            .get("x-kubernetes-list-map-keys")
                            .and_then(Value::as_array)
                            .map(|a| {
                                a.iter()
                                    .filter_map(|k| k.as_str().map(String::from))
                                    .collect()
                            })
                            .unwrap_or_default();
                        m.list = if lt != "map" {
                            Some(format!("#[list(type = {})]", lit(lt)))
                        } else if item_shape == Shape::Struct {
                            Some(format!(
                                "#[list(type = \"map\", map_keys = {})]",
                                lit_list(&keys)
                            ))
                        } else {
                            self.loss(
                                &format!("{path}.x-kubernetes-list-type"),
                                "a list-type map of items that are not a struct of properties has no marker: its keys are not checked and server-side apply replaces the list",
                            );
                            None
                        };
                    }
                    self.node_rules(node, path, m, depth);
                } else {
                    self.deep_checks(node, path);
                }
                (format!("Vec<{t}>"), Shape::List)
            }
            "string" => {
                self.scalar_checks(node, path, m, depth, "String");
                self.node_rules(node, path, m, depth);
                ("String".into(), Shape::Text)
            }
            "integer" | "number" | "boolean" => {
                let t = match (ty, node.get("format").and_then(Value::as_str)) {
                    ("integer", Some("int32")) => "i32",
                    ("integer", _) => "i64",
                    ("number", _) => "f64",
                    _ => "bool",
                };
                self.scalar_checks(node, path, m, depth, t);
                self.node_rules(node, path, m, depth);
                (t.into(), Shape::Scalar)
            }
            other => {
                self.loss(
                    &format!("{path}.type"),
                    format!("a node of type `{other}` (or none) that does not keep unknown fields: any JSON (`Value`) stands for it"),
                );
                ("Value".into(), Shape::Any)
            }
        }
    }

    /// `x-kubernetes-validations` of a node that is not a struct: on the field at depth 0,
    /// a loss deeper.
    fn node_rules(&mut self, node: &Map<String, Value>, path: &str, m: &mut Markers, depth: usize) {
        let rules = self.rules(node, path, depth == 0);
        m.rules.extend(rules);
    }
}

/// Whether a CEL rule reads `oldSelf` (a transition rule).
fn mentions_old_self(rule: &str) -> bool {
    let bytes = rule.as_bytes();
    rule.match_indices("oldSelf").any(|(i, _)| {
        let before = i.checked_sub(1).map(|j| bytes[j]);
        let after = bytes.get(i + "oldSelf".len()).copied();
        let ident = |c: Option<u8>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_');
        !ident(before) && !ident(after)
    })
}

/// Whether a default is a literal the definitions write (`#[default(…)]`).
fn is_literal(v: &Value) -> bool {
    matches!(v, Value::Bool(_) | Value::Number(_) | Value::String(_))
}

/// A literal default as written in `#[default(…)]`.
fn literal(v: &Value) -> String {
    match v {
        Value::String(s) => lit(s),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(literal).collect::<Vec<_>>().join(", ")
        ),
        other => other.to_string(),
    }
}

/// A node's description.
fn describe(node: &Map<String, Value>) -> String {
    node.get("description")
        .and_then(Value::as_str)
        .map(|d| d.trim().to_string())
        .unwrap_or_default()
}

/// The names a node's `required` lists.
fn required_of(node: &Map<String, Value>) -> BTreeSet<String> {
    node.get("required")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|r| r.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The Rust field name of a JSON name: snake case, a raw identifier for a keyword.
pub(super) fn rust_field_name(json: &str) -> String {
    let mut snake: String = json
        .to_snake_case()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if snake.is_empty() || snake.starts_with(|c: char| c.is_ascii_digit()) {
        snake = format!("f_{snake}");
    }
    if NOT_RAW.contains(&snake.as_str()) {
        format!("{snake}_")
    } else if KEYWORDS.contains(&snake.as_str()) {
        format!("r#{snake}")
    } else {
        snake
    }
}

/// Makes a field's Rust name unique among `used` (JSON names such as `fooBar` and `foo_bar`
/// meet in `foo_bar`).
fn unique_field(mut f: Field, used: &mut BTreeSet<String>) -> Field {
    let base = f.rust.clone();
    let mut n = 2;
    while used.contains(&f.rust) {
        f.rust = format!("{}_{n}", base.trim_start_matches("r#"));
        n += 1;
    }
    used.insert(f.rust.clone());
    f
}
