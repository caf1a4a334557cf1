//! Field errors, as Kubernetes' `field.Error`: a path, a reason type, the bad value and a detail.

use std::fmt;

/// The reason a field is invalid; the `reason` of a `StatusCause`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldErrorType {
    /// `FieldValueNotFound`.
    NotFound,
    /// `FieldValueRequired`.
    Required,
    /// `FieldValueDuplicate`.
    Duplicate,
    /// `FieldValueInvalid`.
    Invalid,
    /// `FieldValueNotSupported`.
    NotSupported,
    /// `FieldValueForbidden`.
    Forbidden,
    /// `FieldValueTooLong`.
    TooLong,
    /// `FieldValueTooMany`.
    TooMany,
    /// `InternalError`.
    Internal,
    /// `FieldValueTypeInvalid`.
    TypeInvalid,
}

impl FieldErrorType {
    /// The `StatusCause.reason` string.
    pub fn reason(self) -> &'static str {
        match self {
            Self::NotFound => "FieldValueNotFound",
            Self::Required => "FieldValueRequired",
            Self::Duplicate => "FieldValueDuplicate",
            Self::Invalid => "FieldValueInvalid",
            Self::NotSupported => "FieldValueNotSupported",
            Self::Forbidden => "FieldValueForbidden",
            Self::TooLong => "FieldValueTooLong",
            Self::TooMany => "FieldValueTooMany",
            Self::Internal => "InternalError",
            Self::TypeInvalid => "FieldValueTypeInvalid",
        }
    }
}

/// One invalid field.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    /// The reason type.
    pub type_: FieldErrorType,
    /// The field path, such as `spec.items[0].name` or `metadata.labels[app]`.
    pub field: String,
    /// The offending value rendered as Kubernetes renders it (`-1`, `"red"`), if any.
    pub bad_value: Option<String>,
    /// Human detail, such as `must be greater than or equal to 0`.
    pub detail: String,
}

impl FieldError {
    /// Creates an error of the given type.
    pub fn new(
        type_: FieldErrorType,
        field: impl Into<String>,
        bad_value: Option<String>,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            type_,
            field: field.into(),
            bad_value,
            detail: detail.into(),
        }
    }

    /// `FieldValueInvalid` with the value rendered from JSON.
    pub fn invalid(
        field: impl Into<String>,
        value: &serde_json::Value,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(
            FieldErrorType::Invalid,
            field,
            Some(render_value(value)),
            detail,
        )
    }

    /// `FieldValueRequired`.
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorType::Required, field, None, detail)
    }

    /// `FieldValueForbidden`.
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorType::Forbidden, field, None, detail)
    }
}

/// Renders a value as Kubernetes' field errors do: strings quoted, numbers and booleans bare.
pub fn render_value(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => format!("{s:?}"),
        serde_json::Value::Null => "null".to_string(),
        other => other.to_string(),
    }
}

impl fmt::Display for FieldError {
    /// Formats as `field.Error.Error()`: `spec.replicas: Invalid value: -1: must be ...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.type_ {
            FieldErrorType::NotFound => "Not found",
            FieldErrorType::Required => "Required value",
            FieldErrorType::Duplicate => "Duplicate value",
            FieldErrorType::Invalid => "Invalid value",
            FieldErrorType::NotSupported => "Unsupported value",
            FieldErrorType::Forbidden => "Forbidden",
            FieldErrorType::TooLong => "Too long",
            FieldErrorType::TooMany => "Too many",
            FieldErrorType::Internal => "Internal error",
            FieldErrorType::TypeInvalid => "Invalid value",
        };
        write!(f, "{}: {}", self.field, what)?;
        // As `field.Error.ErrorBody`: these types never print the value.
        let omits_value = matches!(
            self.type_,
            FieldErrorType::Required
                | FieldErrorType::Forbidden
                | FieldErrorType::TooLong
                | FieldErrorType::Internal
        );
        if let Some(v) = self.bad_value.as_ref().filter(|_| !omits_value) {
            write!(f, ": {v}")?;
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_matches_kubernetes_error_body() {
        let e = FieldError::invalid(
            "spec.replicas",
            &serde_json::json!(-1),
            "must be greater than or equal to 0",
        );
        assert_eq!(
            e.to_string(),
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
        let e = FieldError::new(
            FieldErrorType::TooMany,
            "spec.items",
            Some("11".into()),
            "must have at most 10 items",
        );
        assert_eq!(
            e.to_string(),
            "spec.items: Too many: 11: must have at most 10 items"
        );
        let e = FieldError::new(
            FieldErrorType::TooLong,
            "spec.color",
            Some("\"abc\"".into()),
            "may not be more than 2 bytes",
        );
        assert_eq!(
            e.to_string(),
            "spec.color: Too long: may not be more than 2 bytes"
        );
        let e = FieldError::required("metadata.name", "name or generateName is required");
        assert_eq!(
            e.to_string(),
            "metadata.name: Required value: name or generateName is required"
        );
        let e = FieldError::invalid("spec.color", &serde_json::json!("Red"), "bad");
        assert_eq!(e.to_string(), "spec.color: Invalid value: \"Red\": bad");
    }
}
