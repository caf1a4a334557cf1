//! Subresources, printer columns and selectable fields of a version (or the hoisted ones).

use apimachinery::errors::{FieldError, FieldErrorType};
use serde_json::Value;

use crate::apiextensions_k8s_io::v1;

/// `ValidateCustomResourceDefinitionSubresources`: only scale has rules.
pub(super) fn validate_subresources(
    subresources: &v1::CustomResourceSubresources,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    let Some(scale) = &subresources.scale else {
        return;
    };
    let scale_path = format!("{path}.scale");
    for (value, field, prefix, detail) in [
        (
            &scale.spec_replicas_path,
            "specReplicasPath",
            ".spec.",
            "should be a json path under .spec",
        ),
        (
            &scale.status_replicas_path,
            "statusReplicasPath",
            ".status.",
            "should be a json path under .status",
        ),
    ] {
        let field_path = format!("{scale_path}.{field}");
        if value.is_empty() {
            errors.push(FieldError::required(field_path, ""));
            continue;
        }
        let problems = simple_json_path_problems(value, &field_path);
        if !problems.is_empty() {
            errors.extend(problems);
        } else if !value.starts_with(prefix) {
            errors.push(FieldError::invalid(
                field_path,
                &Value::from(value.as_str()),
                detail,
            ));
        }
    }
    if let Some(selector) = scale
        .label_selector_path
        .as_deref()
        .filter(|s| !s.is_empty())
    {
        let field_path = format!("{scale_path}.labelSelectorPath");
        let problems = simple_json_path_problems(selector, &field_path);
        if !problems.is_empty() {
            errors.extend(problems);
        } else if !selector.starts_with(".spec.") && !selector.starts_with(".status.") {
            errors.push(FieldError::invalid(
                field_path,
                &Value::from(selector),
                "should be a json path under either .spec or .status",
            ));
        }
    }
}

/// Kubernetes' `validateSimpleJSONPath`.
pub(super) fn simple_json_path_problems(path: &str, field: &str) -> Vec<FieldError> {
    if path.is_empty() {
        return vec![FieldError::invalid(
            field,
            &Value::from(path),
            "must not be empty",
        )];
    }
    if !path.starts_with('.') {
        return vec![FieldError::invalid(
            field,
            &Value::from(path),
            "must be a simple json path starting with .",
        )];
    }
    Vec::new()
}

/// `ValidateCustomResourceColumnDefinition`.
pub(super) fn validate_column(
    column: &v1::CustomResourceColumnDefinition,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    const TYPES: &str = "must be one of boolean,date,integer,number,string";
    const FORMATS: [&str; 8] = [
        "byte",
        "date",
        "date-time",
        "double",
        "float",
        "int32",
        "int64",
        "password",
    ];
    if column.name.is_empty() {
        errors.push(FieldError::required(format!("{path}.name"), ""));
    }
    if column.type_.is_empty() {
        errors.push(FieldError::required(format!("{path}.type"), TYPES));
    } else if !["boolean", "date", "integer", "number", "string"].contains(&column.type_.as_str()) {
        errors.push(FieldError::invalid(
            format!("{path}.type"),
            &Value::from(column.type_.as_str()),
            TYPES,
        ));
    }
    if let Some(format) = column.format.as_deref().filter(|f| !f.is_empty())
        && !FORMATS.contains(&format)
    {
        errors.push(FieldError::invalid(
            format!("{path}.format"),
            &Value::from(format),
            format!("must be one of {}", FORMATS.join(",")),
        ));
    }
    let json_path = format!("{path}.JSONPath");
    if column.json_path.is_empty() {
        errors.push(FieldError::required(json_path, ""));
    } else {
        errors.extend(simple_json_path_problems(&column.json_path, &json_path));
    }
}

/// The most selectable fields a version may have.
pub(super) const MAX_SELECTABLE_FIELDS: usize = 8;

/// `ValidateCustomResourceSelectableFields`, over the schema's properties.
pub(super) fn validate_selectable_fields(
    fields: &[v1::SelectableField],
    schema: Option<&v1::JSONSchemaProps>,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    let mut unique = std::collections::HashSet::new();
    for (i, field) in fields.iter().enumerate() {
        let entry = format!("{path}[{i}].jsonPath");
        let json_path = field.json_path.as_str();
        if json_path.is_empty() {
            errors.push(FieldError::required(entry, ""));
            continue;
        }
        let value = Value::from(json_path);
        let found = match resolve_field_path(json_path, schema) {
            Ok(found) => found,
            Err(e) => {
                errors.push(FieldError::invalid(
                    entry,
                    &value,
                    format!("is an invalid path: {e}"),
                ));
                continue;
            }
        };
        if json_path.trim_start_matches('.').split('.').next() == Some("metadata") {
            errors.push(FieldError::invalid(
                &entry,
                &value,
                "must not point to fields in metadata",
            ));
        }
        if !matches!(
            found.type_.as_deref(),
            Some("string" | "boolean" | "integer")
        ) {
            errors.push(FieldError::invalid(
                &entry,
                &value,
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        if !unique.insert(json_path.trim_start_matches('.').to_string()) {
            errors.push(FieldError::new(
                FieldErrorType::Duplicate,
                entry,
                Some(format!("{json_path:?}")),
                "",
            ));
        }
    }
    if unique.len() > MAX_SELECTABLE_FIELDS {
        errors.push(FieldError::new(
            FieldErrorType::TooMany,
            path,
            Some(unique.len().to_string()),
            format!("must have at most {MAX_SELECTABLE_FIELDS} items"),
        ));
    }
}

/// The schema a dotted field path (`.spec.color`) names, as Kubernetes' `ValidFieldPath`
/// without array notation, or its error text.
pub(super) fn resolve_field_path<'s>(
    path: &str,
    schema: Option<&'s v1::JSONSchemaProps>,
) -> Result<&'s v1::JSONSchemaProps, String> {
    let mut current = schema.ok_or_else(|| "does not refer to a valid field".to_string())?;
    if path.contains('[') {
        return Err("array notation is not allowed".to_string());
    }
    let Some(rest) = path.strip_prefix('.') else {
        let first = path.chars().next().map(String::from).unwrap_or_default();
        return Err(format!("expected [ or . but got: {first}"));
    };
    for segment in rest.split('.') {
        if segment.is_empty() {
            return Err("unexpected end of JSON path".to_string());
        }
        current = current
            .properties
            .get(segment)
            .ok_or_else(|| "does not refer to a valid field".to_string())?;
    }
    Ok(current)
}
