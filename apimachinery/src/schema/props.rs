//! One node of a CRD's `openAPIV3Schema` (`JSONSchemaProps`), read from its JSON with every
//! field, the unsupported ones included, so that the CRD checks can name them.
//!
//! Reading refuses what Kubernetes' decoder refuses (a string where a number belongs, an
//! `additionalProperties` that is neither a boolean nor a schema) and schemas nested deeper
//! than [`MAX_SCHEMA_DEPTH`] nodes: every walk over a node tree is then bounded.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::path::{child, index, key};

/// The deepest nesting of schema nodes (each `properties[k]`, `items`, `additionalProperties`,
/// `allOf[i]`, … is one level) a schema may have. Kubernetes has no bound of its own (only the
/// JSON decoder's); apiary's request bodies nest at most 100 JSON levels, which no schema
/// deeper than this fits in, so the bound refuses only schemas built by hand, and it keeps
/// every recursive walk of a schema (and of objects along it) well inside the stack.
pub const MAX_SCHEMA_DEPTH: usize = 64;

/// `items`: one schema, or an array of them (which CRDs refuse).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Items {
    /// `items: {…}`.
    Schema(Box<Props>),
    /// `items: [{…}, …]`.
    Array(Vec<Props>),
}

/// `additionalProperties` / `additionalItems`: a boolean or a schema.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum SchemaOrBool {
    /// `true` / `false`.
    Bool(bool),
    /// A schema (which allows).
    Schema(Box<Props>),
}

impl SchemaOrBool {
    /// The schema, if it is one.
    pub(crate) fn schema(&self) -> Option<&Props> {
        match self {
            SchemaOrBool::Schema(s) => Some(s),
            SchemaOrBool::Bool(_) => None,
        }
    }
}

/// A compiled `pattern`: its text, and the expression or the reason it does not compile.
#[derive(Clone, Debug)]
pub(crate) struct Pattern {
    /// As written.
    pub text: String,
    /// The expression, or the compiler's message.
    pub regex: Result<std::sync::Arc<regex::Regex>, String>,
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

/// Every field of `JSONSchemaProps` that validation looks at.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Props {
    pub id: String,
    pub schema: String,
    pub ref_: Option<String>,
    pub description: String,
    pub type_: String,
    pub format: String,
    pub title: String,
    pub default: Option<Value>,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub max_length: Option<i64>,
    pub min_length: Option<i64>,
    pub pattern: Option<Pattern>,
    pub max_items: Option<i64>,
    pub min_items: Option<i64>,
    pub unique_items: bool,
    pub multiple_of: Option<f64>,
    pub enum_: Vec<Value>,
    pub max_properties: Option<i64>,
    pub min_properties: Option<i64>,
    /// `None` when absent; `Some(empty)` for `required: []`.
    pub required: Option<Vec<String>>,
    pub items: Option<Items>,
    pub all_of: Vec<Props>,
    pub one_of: Vec<Props>,
    pub any_of: Vec<Props>,
    pub not: Option<Box<Props>>,
    pub properties: BTreeMap<String, Props>,
    pub additional_properties: Option<SchemaOrBool>,
    pub pattern_properties: BTreeMap<String, Props>,
    /// `dependencies`: the schema of each entry that is one (string lists need no checks).
    pub dependencies: Option<BTreeMap<String, Option<Props>>>,
    pub additional_items: Option<SchemaOrBool>,
    pub definitions: BTreeMap<String, Props>,
    /// `externalDocs` or `example` is set.
    pub has_docs_or_example: bool,
    pub nullable: bool,
    pub preserve_unknown_fields: Option<bool>,
    pub embedded_resource: bool,
    pub int_or_string: bool,
    /// `None` when absent; `Some(empty)` for `[]`.
    pub list_map_keys: Option<Vec<String>>,
    pub list_type: Option<String>,
    pub map_type: Option<String>,
    /// `x-kubernetes-validations`, as written: the seam for the CEL rules.
    pub validations: Vec<Value>,
}

/// Why a schema could not be read: the path of the field and what is wrong with it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ReadError {
    pub path: String,
    pub value: Value,
    pub detail: String,
}

type Read<T> = Result<T, ReadError>;

fn wrong(path: &str, value: &Value, what: &str) -> ReadError {
    ReadError {
        path: path.to_string(),
        value: value.clone(),
        detail: format!("must be {what}"),
    }
}

fn string(path: &str, v: &Value) -> Read<String> {
    match v {
        Value::Null => Ok(String::new()),
        Value::String(s) => Ok(s.clone()),
        other => Err(wrong(path, other, "a string")),
    }
}

fn boolean(path: &str, v: &Value) -> Read<bool> {
    match v {
        Value::Null => Ok(false),
        Value::Bool(b) => Ok(*b),
        other => Err(wrong(path, other, "a boolean")),
    }
}

fn float(path: &str, v: &Value) -> Read<Option<f64>> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => Ok(n.as_f64()),
        other => Err(wrong(path, other, "a number")),
    }
}

fn integer(path: &str, v: &Value) -> Read<Option<i64>> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => n
            .as_i64()
            .map(Some)
            .ok_or_else(|| wrong(path, v, "an integer")),
        other => Err(wrong(path, other, "an integer")),
    }
}

/// An optional field: absent for `null`, else read by `read`.
fn optional<T>(path: &str, v: &Value, read: fn(&str, &Value) -> Read<T>) -> Read<Option<T>> {
    match v {
        Value::Null => Ok(None),
        v => read(path, v).map(Some),
    }
}

fn strings(path: &str, v: &Value) -> Read<Option<Vec<String>>> {
    match v {
        Value::Null => Ok(None),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, s)| string(&index(path, i), s))
            .collect::<Read<Vec<_>>>()
            .map(Some),
        other => Err(wrong(path, other, "a list of strings")),
    }
}

impl Props {
    /// Reads a schema node at `path`, `depth` levels below the root.
    pub(crate) fn read(v: &Value, path: &str, depth: usize) -> Read<Props> {
        Self::read_boxed(v, path, depth).map(|p| *p)
    }

    /// [`Props::read`] into a box: the recursion passes pointers, not nodes, so each level
    /// takes little stack.
    fn read_boxed(v: &Value, path: &str, depth: usize) -> Read<Box<Props>> {
        if depth >= MAX_SCHEMA_DEPTH {
            return Err(ReadError {
                path: path.to_string(),
                value: Value::String(String::new()),
                detail: format!("must not be nested more than {MAX_SCHEMA_DEPTH} levels deep"),
            });
        }
        let Value::Object(m) = v else {
            return Err(wrong(path, v, "an object"));
        };
        let mut p = Box::<Props>::default();
        for (k, v) in m {
            p.read_field(k, v, &child(path, k), depth)?;
        }
        Ok(p)
    }

    fn read_field(&mut self, k: &str, v: &Value, at: &str, depth: usize) -> Read<()> {
        let sub = |v: &Value, at: &str| Props::read_boxed(v, at, depth + 1);
        match k {
            "id" => self.id = string(at, v)?,
            "$schema" => self.schema = string(at, v)?,
            "$ref" => self.ref_ = optional(at, v, string)?,
            "description" => self.description = string(at, v)?,
            "type" => self.type_ = string(at, v)?,
            "format" => self.format = string(at, v)?,
            "title" => self.title = string(at, v)?,
            "default" => self.default = Some(v.clone()).filter(|v| !v.is_null()),
            "example" | "externalDocs" => self.has_docs_or_example |= !v.is_null(),
            "maximum" => self.maximum = float(at, v)?,
            "exclusiveMaximum" => self.exclusive_maximum = boolean(at, v)?,
            "minimum" => self.minimum = float(at, v)?,
            "exclusiveMinimum" => self.exclusive_minimum = boolean(at, v)?,
            "maxLength" => self.max_length = integer(at, v)?,
            "minLength" => self.min_length = integer(at, v)?,
            "pattern" => {
                let text = string(at, v)?;
                self.pattern = (!text.is_empty()).then(|| Pattern {
                    regex: super::regex::compile(&text),
                    text,
                });
            }
            "maxItems" => self.max_items = integer(at, v)?,
            "minItems" => self.min_items = integer(at, v)?,
            "uniqueItems" => self.unique_items = boolean(at, v)?,
            "multipleOf" => self.multiple_of = float(at, v)?,
            "enum" => {
                self.enum_ = match v {
                    Value::Null => Vec::new(),
                    Value::Array(a) => a.clone(),
                    other => return Err(wrong(at, other, "a list")),
                }
            }
            "maxProperties" => self.max_properties = integer(at, v)?,
            "minProperties" => self.min_properties = integer(at, v)?,
            "required" => self.required = strings(at, v)?,
            "items" => {
                self.items = match v {
                    Value::Object(_) => Some(Items::Schema(sub(v, at)?)),
                    Value::Array(_) => Some(Items::Array(list(v, at, depth)?)),
                    // As Go's decoder of `JSONSchemaPropsOrArray`: anything else is no items.
                    _ => None,
                }
            }
            "allOf" => self.all_of = list(v, at, depth)?,
            "oneOf" => self.one_of = list(v, at, depth)?,
            "anyOf" => self.any_of = list(v, at, depth)?,
            "not" => {
                self.not = match v {
                    Value::Null => None,
                    v => Some(sub(v, at)?),
                }
            }
            "properties" => self.properties = map(v, at, depth)?,
            "patternProperties" => self.pattern_properties = map(v, at, depth)?,
            "definitions" => self.definitions = map(v, at, depth)?,
            "additionalProperties" => self.additional_properties = schema_or_bool(v, at, depth)?,
            "additionalItems" => self.additional_items = schema_or_bool(v, at, depth)?,
            "dependencies" => {
                self.dependencies = match v {
                    Value::Null => None,
                    Value::Object(m) => Some(
                        m.iter()
                            .map(|(k, d)| {
                                let s = match d {
                                    Value::Object(_) => Some(*sub(d, &key(at, k))?),
                                    _ => None,
                                };
                                Ok((k.clone(), s))
                            })
                            .collect::<Read<_>>()?,
                    ),
                    other => return Err(wrong(at, other, "an object")),
                }
            }
            "nullable" => self.nullable = boolean(at, v)?,
            "x-kubernetes-preserve-unknown-fields" => {
                self.preserve_unknown_fields = optional(at, v, boolean)?
            }
            "x-kubernetes-embedded-resource" => self.embedded_resource = boolean(at, v)?,
            "x-kubernetes-int-or-string" => self.int_or_string = boolean(at, v)?,
            "x-kubernetes-list-map-keys" => self.list_map_keys = strings(at, v)?,
            "x-kubernetes-list-type" => self.list_type = optional(at, v, string)?,
            "x-kubernetes-map-type" => self.map_type = optional(at, v, string)?,
            "x-kubernetes-validations" => {
                self.validations = match v {
                    Value::Null => Vec::new(),
                    Value::Array(a) => a.clone(),
                    other => return Err(wrong(at, other, "a list")),
                }
            }
            // Fields JSONSchemaProps does not have are dropped by the decoder.
            _ => {}
        }
        Ok(())
    }

    /// The one `items` schema, if `items` is one.
    pub(crate) fn item_schema(&self) -> Option<&Props> {
        match &self.items {
            Some(Items::Schema(s)) => Some(s),
            _ => None,
        }
    }

    /// The `additionalProperties` schema, if it is one.
    pub(crate) fn additional_schema(&self) -> Option<&Props> {
        self.additional_properties
            .as_ref()
            .and_then(SchemaOrBool::schema)
    }

    /// Whether `x-kubernetes-preserve-unknown-fields` is `true`.
    pub(crate) fn preserves_unknown(&self) -> bool {
        self.preserve_unknown_fields == Some(true)
    }

    /// Whether this node or any below it (along every kind of child) satisfies `pred`.
    pub(crate) fn any(&self, pred: &dyn Fn(&Props) -> bool) -> bool {
        pred(self) || self.children().any(|c| c.any(pred))
    }

    /// Every child schema node, of every kind.
    pub(crate) fn children(&self) -> impl Iterator<Item = &Props> {
        let items: Vec<&Props> = match &self.items {
            Some(Items::Schema(s)) => vec![s],
            Some(Items::Array(a)) => a.iter().collect(),
            None => Vec::new(),
        };
        items
            .into_iter()
            .chain(self.all_of.iter())
            .chain(self.one_of.iter())
            .chain(self.any_of.iter())
            .chain(self.not.as_deref())
            .chain(self.properties.values())
            .chain(self.additional_schema())
            .chain(self.pattern_properties.values())
            .chain(
                self.dependencies
                    .iter()
                    .flat_map(|d| d.values().filter_map(Option::as_ref)),
            )
            .chain(
                self.additional_items
                    .as_ref()
                    .and_then(SchemaOrBool::schema),
            )
            .chain(self.definitions.values())
    }
}

fn list(v: &Value, at: &str, depth: usize) -> Read<Vec<Props>> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Array(a) => {
            // Plain loops: this recursion is as deep as the schema, so its frames stay small.
            let mut out = Vec::with_capacity(a.len());
            for (i, s) in a.iter().enumerate() {
                out.push(*Props::read_boxed(s, &index(at, i), depth + 1)?);
            }
            Ok(out)
        }
        other => Err(wrong(at, other, "a list")),
    }
}

fn map(v: &Value, at: &str, depth: usize) -> Read<BTreeMap<String, Props>> {
    match v {
        Value::Null => Ok(BTreeMap::new()),
        Value::Object(m) => read_map(m, at, depth),
        other => Err(wrong(at, other, "an object")),
    }
}

fn read_map(m: &Map<String, Value>, at: &str, depth: usize) -> Read<BTreeMap<String, Props>> {
    let mut out = BTreeMap::new();
    for (k, s) in m {
        out.insert(k.clone(), *Props::read_boxed(s, &key(at, k), depth + 1)?);
    }
    Ok(out)
}

fn schema_or_bool(v: &Value, at: &str, depth: usize) -> Read<Option<SchemaOrBool>> {
    match v {
        Value::Null => Ok(None),
        Value::Bool(b) => Ok(Some(SchemaOrBool::Bool(*b))),
        Value::Object(_) => Ok(Some(SchemaOrBool::Schema(Props::read_boxed(
            v,
            at,
            depth + 1,
        )?))),
        other => Err(ReadError {
            path: at.to_string(),
            value: other.clone(),
            detail: "boolean or JSON schema expected".to_string(),
        }),
    }
}
