//! Which columns a kind's Table has and how each cell is computed. Custom kinds get `Name`,
//! their printer columns and `Age` (as for CustomResourceDefinitions); Kubernetes' built-in
//! kinds get the columns kube-apiserver's hand-written printers produce (`DATA` counts, role
//! references, ...), which simple JSONPaths cannot express.

use apimachinery::ResourceInfo;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use apimachinery::table::human_duration;

use super::jsonpath;

const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const AGE_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// How a cell is computed from an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cell {
    /// `metadata.name`.
    Name,
    /// The human age of `metadata.creationTimestamp`.
    Age,
    /// `metadata.creationTimestamp` as written.
    CreatedAt,
    /// A JSONPath; `date` columns render as human ages.
    Path(&'static str),
    /// The total number of entries of the maps or lists at these paths.
    Count(&'static [&'static str]),
    /// `roleRef` as `Kind/name`.
    RoleRef,
    /// The subjects of a binding with this kind, joined with `, `.
    Subjects(&'static str),
    /// `involvedObject` as `kind/name` (lowercase kind), as `kubectl get events` shows it.
    InvolvedObject,
}

/// One column: its definition and its cell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// The header.
    pub name: &'static str,
    /// The OpenAPI type of the cells.
    pub type_: &'static str,
    /// The OpenAPI format (`name` for the name column).
    pub format: &'static str,
    /// A description.
    pub description: &'static str,
    /// 0, or more for `-o wide` columns.
    pub priority: i32,
    /// How the cell is computed.
    pub cell: Cell,
}

fn col(name: &'static str, type_: &'static str, priority: i32, cell: Cell) -> Column {
    Column {
        name,
        type_,
        format: "",
        description: "",
        priority,
        cell,
    }
}

fn name_column() -> Column {
    Column {
        name: "Name",
        type_: "string",
        format: "name",
        description: NAME_DESCRIPTION,
        priority: 0,
        cell: Cell::Name,
    }
}

fn age_column() -> Column {
    Column {
        name: "Age",
        type_: "date",
        format: "",
        description: AGE_DESCRIPTION,
        priority: 0,
        cell: Cell::Age,
    }
}

/// The columns of a kind's Table.
pub fn columns_for(info: &ResourceInfo) -> Vec<Column> {
    let builtin = match (info.group, info.kind) {
        ("", "ConfigMap") => Some(vec![
            name_column(),
            col("Data", "integer", 0, Cell::Count(&[".data", ".binaryData"])),
            age_column(),
        ]),
        ("", "Secret") => Some(vec![
            name_column(),
            col("Type", "string", 0, Cell::Path(".type")),
            col("Data", "integer", 0, Cell::Count(&[".data"])),
            age_column(),
        ]),
        ("", "ServiceAccount") => Some(vec![
            name_column(),
            col("Secrets", "integer", 0, Cell::Count(&[".secrets"])),
            age_column(),
        ]),
        ("", "Event") => Some(vec![
            col("Last Seen", "string", 0, Cell::Path(".lastTimestamp")),
            col("Type", "string", 0, Cell::Path(".type")),
            col("Reason", "string", 0, Cell::Path(".reason")),
            col("Object", "string", 0, Cell::InvolvedObject),
            col("Message", "string", 0, Cell::Path(".message")),
            Column {
                priority: 1,
                ..name_column()
            },
        ]),
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => Some(vec![
            name_column(),
            col("Created At", "date", 0, Cell::CreatedAt),
        ]),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => Some(vec![
            name_column(),
            col("Role", "string", 0, Cell::RoleRef),
            age_column(),
            col("Users", "string", 1, Cell::Subjects("User")),
            col("Groups", "string", 1, Cell::Subjects("Group")),
            col(
                "ServiceAccounts",
                "string",
                1,
                Cell::Subjects("ServiceAccount"),
            ),
        ]),
        (
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration",
        ) => Some(vec![
            name_column(),
            col("Webhooks", "integer", 0, Cell::Count(&[".webhooks"])),
            age_column(),
        ]),
        _ => None,
    };
    if let Some(b) = builtin {
        return b;
    }
    let mut out = vec![name_column()];
    out.extend(info.printer_columns.iter().map(|c| Column {
        name: c.name,
        type_: c.type_,
        format: c.format,
        description: c.description,
        priority: c.priority,
        cell: Cell::Path(c.json_path),
    }));
    out.push(age_column());
    out
}

/// The `columnDefinitions` of a Table.
pub fn definitions(columns: &[Column]) -> Vec<Value> {
    columns.iter().map(|c| json!({"name": c.name, "type": c.type_, "format": c.format, "description": c.description, "priority": c.priority})).collect()
}

fn age_of(t: Option<&str>, now: DateTime<Utc>) -> Option<String> {
    let t = DateTime::parse_from_rfc3339(t?).ok()?;
    Some(human_duration(
        now.signed_duration_since(t.with_timezone(&Utc)),
    ))
}

/// Computes one cell.
pub fn cell(object: &Value, column: &Column, now: DateTime<Utc>) -> Value {
    match &column.cell {
        Cell::Name => object
            .pointer("/metadata/name")
            .cloned()
            .unwrap_or(Value::from("")),
        Cell::Age => Value::from(
            age_of(
                object
                    .pointer("/metadata/creationTimestamp")
                    .and_then(Value::as_str),
                now,
            )
            .unwrap_or_else(|| "<unknown>".into()),
        ),
        Cell::CreatedAt => object
            .pointer("/metadata/creationTimestamp")
            .cloned()
            .unwrap_or(Value::Null),
        Cell::Path(p) => {
            let Some(v) = jsonpath::select(object, p) else {
                return if column.name == "Last Seen" {
                    Value::from("<unknown>")
                } else {
                    Value::Null
                };
            };
            if (column.type_ == "date" || column.name == "Last Seen")
                && let Some(age) = age_of(v.as_str(), now)
            {
                return Value::from(age);
            }
            match v {
                Value::Array(_) | Value::Object(_) => Value::String(v.to_string()),
                other => other,
            }
        }
        Cell::Count(paths) => {
            let n: usize = paths
                .iter()
                .filter_map(|p| jsonpath::select(object, p))
                .map(|v| match v {
                    Value::Object(m) => m.len(),
                    Value::Array(a) => a.len(),
                    _ => 0,
                })
                .sum();
            Value::from(n)
        }
        Cell::RoleRef => {
            let kind = object
                .pointer("/roleRef/kind")
                .and_then(Value::as_str)
                .unwrap_or("");
            let name = object
                .pointer("/roleRef/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            Value::from(format!("{kind}/{name}"))
        }
        Cell::Subjects(kind) => {
            let names: Vec<String> = object
                .get("subjects")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter(|s| s.get("kind").and_then(Value::as_str) == Some(kind))
                        .map(|s| {
                            let name = s.get("name").and_then(Value::as_str).unwrap_or("");
                            match s.get("namespace").and_then(Value::as_str) {
                                Some(ns) if *kind == "ServiceAccount" => format!("{ns}/{name}"),
                                _ => name.to_string(),
                            }
                        })
                        .collect()
                })
                .unwrap_or_default();
            Value::from(names.join(", "))
        }
        Cell::InvolvedObject => {
            let kind = object
                .pointer("/involvedObject/kind")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_lowercase();
            let name = object
                .pointer("/involvedObject/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            Value::from(format!("{kind}/{name}"))
        }
    }
}
