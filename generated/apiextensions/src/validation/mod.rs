//! Kubernetes' CustomResourceDefinition validation (`pkg/apis/apiextensions/validation`),
//! with its messages and field paths, called by the kind's strategy
//! (`api-defs/apiextensions.k8s.io/strategy.rs`).
//!
//! Kubernetes validates the *internal* form of a CRD, in which a per-version `schema`,
//! `subresources`, `additionalPrinterColumns` or `selectableFields` that is the same on every
//! version is moved to the top of the spec (`spec.validation`, `spec.subresources`, …), and
//! `spec.conversion.webhook.clientConfig` is `spec.conversion.webhookClientConfig`: the paths
//! of its errors name that form ([`Hoisted`]), so a one-version CRD's schema errors read
//! `spec.validation.openAPIV3Schema…`.

mod conversion;
mod names;
mod parts;
mod schema;

use apimachinery::errors::{FieldError, FieldErrorType};
use apimachinery::validation::{is_dns1035_label, is_dns1123_subdomain};
use serde_json::Value;

use crate::apiextensions_k8s_io::v1;

use conversion::{has_recognized_review_version_or_none, validate_conversion};
pub use names::validate_names;
use names::{validate_api_approval, validate_preserve_unknown_fields, validate_stored_versions};
use parts::{validate_column, validate_selectable_fields, validate_subresources};
use schema::{schema_options, spec_has_defaults, validate_schema_of};

/// The per-version fields Kubernetes' conversion to the internal form moves to the top of the
/// spec because every version has the same value: `true` for each such field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hoisted {
    /// `versions[*].schema` → `spec.validation`.
    pub schema: bool,
    /// `versions[*].subresources` → `spec.subresources`.
    pub subresources: bool,
    /// `versions[*].additionalPrinterColumns` → `spec.additionalPrinterColumns`.
    pub columns: bool,
    /// `versions[*].selectableFields` → `spec.selectableFields`.
    pub selectable_fields: bool,
}

impl Hoisted {
    /// Which fields of `spec` Kubernetes' conversion hoists (none when there are no versions).
    pub fn of(spec: &v1::CustomResourceDefinitionSpec) -> Self {
        let Some(first) = spec.versions.first() else {
            return Self::default();
        };
        let all = |same: &dyn Fn(&v1::CustomResourceDefinitionVersion) -> bool| {
            spec.versions.iter().all(same)
        };
        Self {
            schema: all(&|v| v.schema == first.schema),
            subresources: all(&|v| v.subresources == first.subresources),
            columns: all(&|v| v.additional_printer_columns == first.additional_printer_columns),
            selectable_fields: all(&|v| v.selectable_fields == first.selectable_fields),
        }
    }
}

/// Kubernetes' CRD validation (`ValidateCustomResourceDefinition`, or
/// `ValidateCustomResourceDefinitionUpdate` with the old object), in its order: metadata name,
/// spec, status names, storedVersions, API approval, preserveUnknownFields.
pub fn validate_crd(
    crd: &v1::CustomResourceDefinition,
    old: Option<&v1::CustomResourceDefinition>,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if old.is_none() {
        validate_name(crd, &mut errors);
    }
    let options = SpecOptions {
        old_spec: old.map(|o| &o.spec),
        require_immutable_names: old.is_some_and(is_established),
        require_openapi_schema: old.is_none_or(|o| all_versions_have_schemas(&o.spec)),
        require_recognized_conversion_review_version: old.is_none_or(|o| {
            o.spec
                .conversion
                .as_ref()
                .is_none_or(has_recognized_review_version_or_none)
        }),
        schema: schema_options(&crd.spec, old.map(|o| &o.spec)),
    };
    validate_spec(&crd.spec, &options, &mut errors);
    if let Some(old) = old {
        if options.require_immutable_names {
            immutable(&crd.spec.scope, &old.spec.scope, "spec.scope", &mut errors);
            immutable(
                &crd.spec.names.kind,
                &old.spec.names.kind,
                "spec.names.kind",
                &mut errors,
            );
        }
        immutable(&crd.spec.group, &old.spec.group, "spec.group", &mut errors);
        immutable(
            &crd.spec.names.plural,
            &old.spec.names.plural,
            "spec.names.plural",
            &mut errors,
        );
    }
    validate_names(
        &crd.status.accepted_names,
        "status.acceptedNames",
        &mut errors,
    );
    validate_stored_versions(crd, &mut errors);
    validate_api_approval(crd, old, &mut errors);
    validate_preserve_unknown_fields(crd, old, &mut errors);
    errors
}

/// The options of the spec checks that an update derives from the old object.
#[derive(Clone, Debug)]
struct SpecOptions<'a> {
    /// The spec an update replaces: the per-expression limit of the CEL rules' estimated
    /// costs is lifted for a version whose schema it leaves unchanged.
    old_spec: Option<&'a v1::CustomResourceDefinitionSpec>,
    require_immutable_names: bool,
    require_openapi_schema: bool,
    require_recognized_conversion_review_version: bool,
    /// The schema checks' options (ratcheted on update).
    schema: apimachinery::schema::CrdSchemaOptions,
}

/// Whether the CRD's `Established` condition is `True`.
fn is_established(crd: &v1::CustomResourceDefinition) -> bool {
    crd.status
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == "Established" && c.status == "True")
}

/// Whether every version has a schema (Kubernetes' `allVersionsSpecifyOpenAPISchema`).
fn all_versions_have_schemas(spec: &v1::CustomResourceDefinitionSpec) -> bool {
    spec.versions.iter().all(|v| {
        v.schema
            .as_ref()
            .is_some_and(|s| s.open_api_v3_schema.is_some())
    })
}

/// `field is immutable` when `new` differs from `old`.
fn immutable(new: &str, old: &str, path: &str, errors: &mut Vec<FieldError>) {
    if new != old {
        errors.push(FieldError::invalid(
            path,
            &Value::from(new),
            "field is immutable",
        ));
    }
}

/// `metadata.name` (and `generateName`) must be `<plural>.<group>`; the registry has already
/// checked that it is a DNS-1123 subdomain.
fn validate_name(crd: &v1::CustomResourceDefinition, errors: &mut Vec<FieldError>) {
    let required = format!("{}.{}", crd.spec.names.plural, crd.spec.group);
    const DETAIL: &str = r#"must be spec.names.plural+"."+spec.group"#;
    let meta = &crd.metadata;
    if let Some(generate) = meta.generate_name.as_deref().filter(|g| !g.is_empty())
        && generate != required
    {
        errors.push(FieldError::invalid(
            "metadata.generateName",
            &Value::from(generate),
            DETAIL,
        ));
    }
    if let Some(name) = meta.name.as_deref().filter(|n| !n.is_empty())
        && name != required
    {
        errors.push(FieldError::invalid(
            "metadata.name",
            &Value::from(name),
            DETAIL,
        ));
    }
}

/// An `Unsupported value` error listing the supported values as Kubernetes does.
fn unsupported(path: &str, value: &str, supported: &[&str]) -> FieldError {
    let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    FieldError::new(
        FieldErrorType::NotSupported,
        path,
        Some(format!("{value:?}")),
        format!("supported values: {}", list.join(", ")),
    )
}

/// Kubernetes' `validateEnumStrings`: empty is `Required` when required, else one of `accepted`.
fn validate_enum(path: &str, value: &str, accepted: &[&str], errors: &mut Vec<FieldError>) {
    if value.is_empty() {
        errors.push(FieldError::required(path, ""));
    } else if !accepted.contains(&value) {
        errors.push(unsupported(path, value, accepted));
    }
}

/// `validateCustomResourceDefinitionSpec` on the internal form of `spec`.
fn validate_spec(
    spec: &v1::CustomResourceDefinitionSpec,
    options: &SpecOptions<'_>,
    errors: &mut Vec<FieldError>,
) {
    let hoisted = Hoisted::of(spec);
    if spec.group.is_empty() {
        errors.push(FieldError::required("spec.group", ""));
    } else {
        let problems = is_dns1123_subdomain(&spec.group);
        if !problems.is_empty() {
            errors.push(FieldError::invalid(
                "spec.group",
                &Value::from(spec.group.as_str()),
                problems.join(","),
            ));
        } else if !spec.group.contains('.') {
            errors.push(FieldError::invalid(
                "spec.group",
                &Value::from(spec.group.as_str()),
                "should be a domain with at least one dot",
            ));
        }
    }
    validate_enum(
        "spec.scope",
        &spec.scope,
        &["Cluster", "Namespaced"],
        errors,
    );

    let preserve_unknown = spec.preserve_unknown_fields.unwrap_or(false);
    // The top-level schema of the internal form, when the versions' schemas are hoisted.
    let top_schema = hoisted
        .schema
        .then(|| spec.versions.first().and_then(|v| v.schema.as_ref()))
        .flatten();
    let top_has_schema = top_schema.is_some_and(|s| s.open_api_v3_schema.is_some());
    let version_has_schema = |v: &v1::CustomResourceDefinitionVersion| {
        !hoisted.schema
            && v.schema
                .as_ref()
                .is_some_and(|s| s.open_api_v3_schema.is_some())
    };
    if !top_has_schema {
        for (i, v) in spec.versions.iter().enumerate() {
            let path = format!("spec.versions[{i}].schema.openAPIV3Schema");
            if version_has_schema(v) {
                continue;
            }
            if options.require_openapi_schema {
                errors.push(FieldError::required(path, ""));
            } else if !preserve_unknown && v.served {
                errors.push(FieldError::required(
                    path,
                    "because otherwise all fields are pruned",
                ));
            }
        }
    }
    if spec_has_defaults(spec) && spec.preserve_unknown_fields.unwrap_or(false) {
        errors.push(FieldError::invalid(
            "spec.preserveUnknownFields",
            &Value::Bool(true),
            "must be false in order to use defaults in the schema",
        ));
    }

    let mut storage_count = 0;
    let mut names = std::collections::HashSet::new();
    let mut unique = true;
    for (i, v) in spec.versions.iter().enumerate() {
        storage_count += usize::from(v.storage);
        unique &= names.insert(v.name.as_str());
        let path = format!("spec.versions[{i}]");
        let problems = is_dns1035_label(&v.name);
        if !problems.is_empty() {
            errors.push(FieldError::invalid(
                format!("{path}.name"),
                &Value::from(v.name.as_str()),
                problems.join(","),
            ));
        }
        let subresources = if hoisted.subresources {
            spec.versions.first().and_then(|v| v.subresources.as_ref())
        } else {
            v.subresources.as_ref()
        };
        validate_version(
            v,
            &path,
            hoisted,
            status_enabled(subresources),
            &options.schema,
            schema_unchanged(options.old_spec, v),
            errors,
        );
    }
    if !unique {
        errors.push(versions_error(spec, "must contain unique version names"));
    }
    if storage_count != 1 {
        errors.push(versions_error(
            spec,
            "must have exactly one version marked as storage version",
        ));
    }
    // The internal `spec.version` is a copy of the first version's name, checked again.
    if let Some(first) = spec.versions.first().filter(|v| !v.name.is_empty()) {
        let problems = is_dns1035_label(&first.name);
        if !problems.is_empty() {
            errors.push(FieldError::invalid(
                "spec.version",
                &Value::from(first.name.as_str()),
                problems.join(","),
            ));
        }
    }
    let names = &spec.names;
    for (value, field) in [
        (names.plural.as_str(), "plural"),
        (names.singular.as_deref().unwrap_or_default(), "singular"),
        (names.kind.as_str(), "kind"),
        (names.list_kind.as_deref().unwrap_or_default(), "listKind"),
    ] {
        if value.is_empty() {
            errors.push(FieldError::required(format!("spec.names.{field}"), ""));
        }
    }
    validate_names(&spec.names, "spec.names", errors);

    if hoisted.schema
        && let Some(validation) = top_schema
    {
        let any_status = spec
            .versions
            .iter()
            .any(|v| status_enabled(v.subresources.as_ref()));
        let unchanged = spec
            .versions
            .first()
            .is_some_and(|v| schema_unchanged(options.old_spec, v));
        validate_schema_of(
            validation,
            "spec.validation",
            any_status,
            &options.schema,
            unchanged,
            errors,
        );
    }
    if hoisted.subresources
        && let Some(subresources) = spec.versions.first().and_then(|v| v.subresources.as_ref())
    {
        validate_subresources(subresources, "spec.subresources", errors);
    }
    if hoisted.columns
        && let Some(first) = spec.versions.first()
    {
        for (i, c) in first.additional_printer_columns.iter().enumerate() {
            validate_column(c, &format!("spec.additionalPrinterColumns[{i}]"), errors);
        }
    }
    if hoisted.selectable_fields
        && let Some(first) = spec.versions.first()
        && !first.selectable_fields.is_empty()
    {
        match top_schema {
            None => errors.push(FieldError::invalid(
                "spec.selectableFields",
                &Value::from(""),
                "may only be set when validations.schema is included",
            )),
            Some(validation) => validate_selectable_fields(
                &first.selectable_fields,
                validation.open_api_v3_schema.as_ref(),
                "spec.selectableFields",
                errors,
            ),
        }
    }
    if let Some(conversion) = &spec.conversion {
        if conversion.strategy != "None" && preserve_unknown {
            errors.push(FieldError::invalid(
                "spec.conversion.strategy",
                &Value::from(conversion.strategy.as_str()),
                "must be None if spec.preserveUnknownFields is true",
            ));
        }
        validate_conversion(
            conversion,
            options.require_recognized_conversion_review_version,
            errors,
        );
    }
}

/// Whether the update replacing `old` leaves the schema of `version` as it was
/// (Kubernetes' `findVersionsWithUnchangedSchemas`).
fn schema_unchanged(
    old: Option<&v1::CustomResourceDefinitionSpec>,
    version: &v1::CustomResourceDefinitionVersion,
) -> bool {
    let Some(old) = old else {
        return false;
    };
    old.versions
        .iter()
        .find(|o| o.name == version.name)
        .is_some_and(|o| {
            ::serde_json::to_value(&o.schema).ok() == ::serde_json::to_value(&version.schema).ok()
        })
}

/// An `Invalid value` error on the whole `spec.versions` list.
fn versions_error(spec: &v1::CustomResourceDefinitionSpec, detail: &str) -> FieldError {
    let value = ::serde_json::to_value(&spec.versions).unwrap_or(Value::Null);
    FieldError::invalid("spec.versions", &value, detail)
}

/// Whether subresources enable `/status`.
fn status_enabled(subresources: Option<&v1::CustomResourceSubresources>) -> bool {
    subresources.is_some_and(|s| s.status.is_some())
}

/// `validateCustomResourceDefinitionVersion`: one version's own fields (those not hoisted).
fn validate_version(
    version: &v1::CustomResourceDefinitionVersion,
    path: &str,
    hoisted: Hoisted,
    status: bool,
    schema_options: &apimachinery::schema::CrdSchemaOptions,
    schema_unchanged: bool,
    errors: &mut Vec<FieldError>,
) {
    let warning = version.deprecation_warning.as_ref();
    for detail in deprecation_warning_problems(version.deprecated.unwrap_or(false), warning) {
        let value = warning.map_or(Value::Null, |w| Value::from(w.as_str()));
        errors.push(FieldError::invalid(
            format!("{path}.deprecationWarning"),
            &value,
            detail,
        ));
    }
    if !hoisted.schema
        && let Some(validation) = &version.schema
    {
        validate_schema_of(
            validation,
            &format!("{path}.schema"),
            status,
            schema_options,
            schema_unchanged,
            errors,
        );
    }
    if !hoisted.subresources
        && let Some(subresources) = &version.subresources
    {
        validate_subresources(subresources, &format!("{path}.subresources"), errors);
    }
    if !hoisted.columns {
        for (i, c) in version.additional_printer_columns.iter().enumerate() {
            validate_column(c, &format!("{path}.additionalPrinterColumns[{i}]"), errors);
        }
    }
    if !hoisted.selectable_fields && !version.selectable_fields.is_empty() {
        let schema = (!hoisted.schema)
            .then(|| version.schema.as_ref()?.open_api_v3_schema.as_ref())
            .flatten();
        match schema {
            None => errors.push(FieldError::invalid(
                format!("{path}.selectableFields"),
                &Value::from(""),
                "may only be set when `version.schema.openAPIV3Schema` is not included",
            )),
            Some(schema) => validate_selectable_fields(
                &version.selectable_fields,
                Some(schema),
                &format!("{path}.selectableFields"),
                errors,
            ),
        }
    }
}

/// Kubernetes' `validateDeprecationWarning`.
fn deprecation_warning_problems(deprecated: bool, warning: Option<&String>) -> Vec<String> {
    let Some(warning) = warning else {
        return Vec::new();
    };
    if !deprecated {
        return vec!["can only be set for deprecated versions".to_string()];
    }
    let mut problems = Vec::new();
    if warning.len() > 256 {
        problems.push("must be <= 256 characters long".to_string());
    }
    if warning.is_empty() {
        problems.push("must not be an empty string".to_string());
    }
    for (i, c) in warning.char_indices() {
        // Go's `unicode.IsPrint` is false for controls and for spaces other than U+0020.
        let printable = !c.is_control() && (c == ' ' || !c.is_whitespace());
        if !printable {
            let what = if c.is_control() {
                "control"
            } else {
                "non-printable"
            };
            problems.push(format!(
                "must only contain printable UTF-8 characters; {what} character found at index {i}"
            ));
            break;
        }
    }
    problems
}
