//! Table rendering for `kubectl get`: `meta.k8s.io` Tables built from a kind's printer
//! columns (`Name` first, then the kind's columns, then `Age`), with `includeObject` handling.

pub mod age;
pub mod jsonpath;

use apimachinery::PrinterColumn;
use apimachinery::status::ApiError;
use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

pub use age::human_duration;

/// What each row's `object` carries (`includeObject`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncludeObject {
    /// Nothing.
    None,
    /// `PartialObjectMetadata` (the default).
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// Parses the `includeObject` query parameter; other values are 400.
    pub fn parse(value: Option<&str>) -> Result<Self, ApiError> {
        match value.unwrap_or("") {
            "" | "Metadata" => Ok(Self::Metadata),
            "None" => Ok(Self::None),
            "Object" => Ok(Self::Object),
            other => Err(ApiError::bad_request(format!(
                "includeObject: Unsupported value: \"{other}\": supported values: \"Metadata\", \"None\", \"Object\""
            ))),
        }
    }
}

/// The column definitions of a kind's table.
pub fn column_definitions(columns: &[PrinterColumn]) -> Vec<Value> {
    let mut defs = vec![
        json!({"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names", "priority": 0}),
    ];
    for c in columns {
        defs.push(json!({"name": c.name, "type": c.type_, "format": c.format, "description": c.description, "priority": c.priority}));
    }
    defs.push(json!({"name": "Age", "type": "date", "format": "", "description": "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata", "priority": 0}));
    defs
}

/// Builds `PartialObjectMetadata` of an object in the given `meta.k8s.io` version.
pub fn partial_metadata(object: &Value, meta_version: &str) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": format!("meta.k8s.io/{meta_version}"),
        "metadata": object.get("metadata").cloned().unwrap_or_else(|| Value::Object(Map::new())),
    })
}

/// Renders one row.
pub fn row(
    object: &Value,
    columns: &[PrinterColumn],
    include: IncludeObject,
    meta_version: &str,
    now: DateTime<Utc>,
) -> Value {
    let mut cells = vec![
        object
            .pointer("/metadata/name")
            .cloned()
            .unwrap_or(Value::String(String::new())),
    ];
    for c in columns {
        let v = jsonpath::select(object, c.json_path);
        cells.push(cell(v, c, now));
    }
    let age = object
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| human_duration(now.signed_duration_since(t.with_timezone(&Utc))))
        .unwrap_or_else(|| "<unknown>".to_string());
    cells.push(Value::String(age));
    let mut row = Map::new();
    row.insert("cells".into(), Value::Array(cells));
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => {
            row.insert("object".into(), partial_metadata(object, meta_version));
        }
        IncludeObject::Object => {
            row.insert("object".into(), object.clone());
        }
    }
    Value::Object(row)
}

fn cell(value: Option<Value>, column: &PrinterColumn, now: DateTime<Utc>) -> Value {
    let Some(v) = value else { return Value::Null };
    if column.type_ == "date"
        && let Some(t) = v
            .as_str()
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
    {
        return Value::String(human_duration(
            now.signed_duration_since(t.with_timezone(&Utc)),
        ));
    }
    match v {
        Value::Array(_) | Value::Object(_) => Value::String(v.to_string()),
        other => other,
    }
}

/// Builds a whole Table from objects. `list_meta` is the list's metadata (resourceVersion,
/// continue, remainingItemCount); `with_columns` is false for watch events after the first.
pub fn table(
    objects: &[Value],
    columns: &[PrinterColumn],
    include: IncludeObject,
    meta_version: &str,
    list_meta: Value,
    with_columns: bool,
) -> Value {
    let now = Utc::now();
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| row(o, columns, include, meta_version, now))
        .collect();
    let mut t = Map::new();
    t.insert("kind".into(), Value::from("Table"));
    t.insert(
        "apiVersion".into(),
        Value::from(format!("meta.k8s.io/{meta_version}")),
    );
    t.insert("metadata".into(), list_meta);
    if with_columns {
        t.insert(
            "columnDefinitions".into(),
            Value::Array(column_definitions(columns)),
        );
    } else {
        t.insert("columnDefinitions".into(), Value::Null);
    }
    t.insert("rows".into(), Value::Array(rows));
    Value::Object(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    const COLS: &[PrinterColumn] = &[
        PrinterColumn {
            name: "Replicas",
            type_: "integer",
            format: "",
            description: "",
            priority: 0,
            json_path: ".spec.replicas",
        },
        PrinterColumn {
            name: "Color",
            type_: "string",
            format: "",
            description: "",
            priority: 1,
            json_path: ".spec.color",
        },
    ];

    #[test]
    fn renders_rows_and_columns() {
        let created = (Utc::now() - chrono::Duration::minutes(5)).to_rfc3339();
        let obj = json!({"metadata": {"name": "w", "creationTimestamp": created}, "spec": {"replicas": 3}});
        let t = table(
            &[obj],
            COLS,
            IncludeObject::Metadata,
            "v1",
            json!({"resourceVersion": "5"}),
            true,
        );
        let defs = t["columnDefinitions"].as_array().unwrap();
        assert_eq!(
            defs.iter()
                .map(|d| d["name"].as_str().unwrap())
                .collect::<Vec<_>>(),
            vec!["Name", "Replicas", "Color", "Age"]
        );
        assert_eq!(defs[0]["format"], "name");
        assert_eq!(defs[2]["priority"], 1);
        assert_eq!(t["rows"][0]["cells"], json!(["w", 3, null, "5m"]));
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    }

    #[test]
    fn include_object_values() {
        assert_eq!(IncludeObject::parse(None).unwrap(), IncludeObject::Metadata);
        assert_eq!(
            IncludeObject::parse(Some("Object")).unwrap(),
            IncludeObject::Object
        );
        assert_eq!(IncludeObject::parse(Some("x")).unwrap_err().code(), 400);
    }
}
