//! Hand-written strategy of apiextensions.k8s.io: a CustomResourceDefinition's registry
//! behaviour (Kubernetes' `pkg/registry/customresourcedefinition`) and its validation
//! (`pkg/apis/apiextensions/validation`), with Kubernetes' messages and field paths.
//!
//! Kubernetes validates the *internal* form of a CRD, in which a per-version `schema`,
//! `subresources`, `additionalPrinterColumns` or `selectableFields` that is the same on every
//! version is moved to the top of the spec (`spec.validation`, `spec.subresources`, …), and
//! `spec.conversion.webhook.clientConfig` is `spec.conversion.webhookClientConfig`: the paths
//! of its errors name that form ([`Hoisted`]), so a one-version CRD's schema errors read
//! `spec.validation.openAPIV3Schema…`.

use ::apimachinery::errors::{FieldError, FieldErrorType};
use ::apimachinery::runtime::Object;
use ::apimachinery::strategy::{Strategy, TableConvertor};
use ::apimachinery::table::DefaultTableConvertor;
use ::apimachinery::validation::{is_dns1035_label, is_dns1123_subdomain};
use ::serde_json::Value;

/// A CustomResourceDefinition's registry behaviour: the storage version joins
/// `status.storedVersions` on every write of the main resource, `kubectl get` prints
/// kube-apiserver's default table (`NAME`, `CREATED AT`), and writes are validated as
/// Kubernetes validates them.
pub struct CustomResourceDefinitionStrategy;

impl Strategy for CustomResourceDefinitionStrategy {
    fn prepare_for_create(&self, object: &mut dyn Object) {
        if let Some(crd) = object.downcast_mut::<v1::CustomResourceDefinition>() {
            crd.status = v1::CustomResourceDefinitionStatus::default();
            add_storage_version(crd);
        }
    }

    fn prepare_for_update(&self, object: &mut dyn Object, _old: &dyn Object, subresource: &str) {
        if subresource.is_empty()
            && let Some(crd) = object.downcast_mut::<v1::CustomResourceDefinition>()
        {
            add_storage_version(crd);
        }
    }

    fn validate(&self, object: &dyn Object) -> Vec<FieldError> {
        object
            .downcast_ref::<v1::CustomResourceDefinition>()
            .map(|crd| validate_crd(crd, None))
            .unwrap_or_default()
    }

    fn validate_update(&self, object: &dyn Object, old: &dyn Object) -> Vec<FieldError> {
        match (
            object.downcast_ref::<v1::CustomResourceDefinition>(),
            old.downcast_ref::<v1::CustomResourceDefinition>(),
        ) {
            (Some(crd), Some(old)) => validate_crd(crd, Some(old)),
            _ => Vec::new(),
        }
    }

    /// Kubernetes' status strategy: only `status.acceptedNames` is checked (a storage
    /// migration removes entries of `status.storedVersions` this way).
    fn validate_status_update(&self, object: &dyn Object, _old: &dyn Object) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if let Some(crd) = object.downcast_ref::<v1::CustomResourceDefinition>() {
            validate_names(
                &crd.status.accepted_names,
                "status.acceptedNames",
                &mut errors,
            );
        }
        errors
    }

    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&DefaultTableConvertor)
    }
}

/// Appends the storage version (the first version with `storage: true`) to
/// `status.storedVersions` when it is not there yet, as Kubernetes' strategy does on create and
/// on every update of the main resource.
fn add_storage_version(crd: &mut v1::CustomResourceDefinition) {
    let Some(storage) = crd.spec.versions.iter().find(|v| v.storage) else {
        return;
    };
    let stored = crd.status.stored_versions.get_or_insert_with(Vec::new);
    if !stored.contains(&storage.name) {
        stored.push(storage.name.clone());
    }
}

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

/// Options of the schema check ([`validate_openapi_schema`]), as Kubernetes'
/// `validationOptions` gives them for one schema.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CrdSchemaOptions {
    /// The status subresource applies to the schema: only some fields are allowed at its root.
    pub status_subresource_enabled: bool,
    /// Every schema must be structural (always on create, and whenever
    /// `preserveUnknownFields` is false).
    pub require_structural_schema: bool,
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
        require_immutable_names: old.is_some_and(is_established),
        require_openapi_schema: old.is_none_or(|o| all_versions_have_schemas(&o.spec)),
        require_recognized_conversion_review_version: old.is_none_or(|o| {
            o.spec
                .conversion
                .as_ref()
                .is_none_or(has_recognized_review_version_or_none)
        }),
    };
    validate_spec(&crd.spec, options, &mut errors);
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
#[derive(Clone, Copy, Debug)]
struct SpecOptions {
    require_immutable_names: bool,
    require_openapi_schema: bool,
    require_recognized_conversion_review_version: bool,
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
    options: SpecOptions,
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
            spec,
            v,
            &path,
            hoisted,
            status_enabled(subresources),
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
        validate_schema_of(
            validation,
            "spec.validation",
            any_status,
            preserve_unknown,
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

/// An `Invalid value` error on the whole `spec.versions` list.
fn versions_error(spec: &v1::CustomResourceDefinitionSpec, detail: &str) -> FieldError {
    let value = ::serde_json::to_value(&spec.versions).unwrap_or(Value::Null);
    FieldError::invalid("spec.versions", &value, detail)
}

/// Whether subresources enable `/status`.
fn status_enabled(subresources: Option<&v1::CustomResourceSubresources>) -> bool {
    subresources.is_some_and(|s| s.status.is_some())
}

/// Whether any schema of the spec has a `default` anywhere.
fn spec_has_defaults(spec: &v1::CustomResourceDefinitionSpec) -> bool {
    spec.versions
        .iter()
        .filter_map(|v| v.schema.as_ref()?.open_api_v3_schema.as_ref())
        .any(|s| schema_has_default(&::serde_json::to_value(s).unwrap_or(Value::Null)))
}

/// Whether a schema (as JSON) has a `default` at any level.
fn schema_has_default(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            map.contains_key("default")
                || map
                    .iter()
                    .filter(|(k, _)| !matches!(k.as_str(), "enum" | "example"))
                    .any(|(_, v)| schema_has_default(v))
        }
        Value::Array(items) => items.iter().any(schema_has_default),
        _ => false,
    }
}

/// `validateCustomResourceDefinitionVersion`: one version's own fields (those not hoisted).
fn validate_version(
    spec: &v1::CustomResourceDefinitionSpec,
    version: &v1::CustomResourceDefinitionVersion,
    path: &str,
    hoisted: Hoisted,
    status: bool,
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
    let preserve_unknown = spec.preserve_unknown_fields.unwrap_or(false);
    if !hoisted.schema
        && let Some(validation) = &version.schema
    {
        validate_schema_of(
            validation,
            &format!("{path}.schema"),
            status,
            preserve_unknown,
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

/// The schema check of one `CustomResourceValidation` at `path` (`spec.validation` or
/// `spec.versions[i].schema`).
fn validate_schema_of(
    validation: &v1::CustomResourceValidation,
    path: &str,
    status_subresource_enabled: bool,
    preserve_unknown_fields: bool,
    errors: &mut Vec<FieldError>,
) {
    let Some(schema) = &validation.open_api_v3_schema else {
        return;
    };
    let schema = ::serde_json::to_value(schema).unwrap_or(Value::Null);
    let options = CrdSchemaOptions {
        status_subresource_enabled,
        require_structural_schema: !preserve_unknown_fields,
    };
    // THE SCHEMA CHECK (the one call site): when apimachinery has
    // `apimachinery::schema::validate_crd_schema`, this call becomes
    // `::apimachinery::schema::validate_crd_schema(&schema, &format!("{path}.openAPIV3Schema"), &options)`
    // and `validate_openapi_schema` below (with this file's `CrdSchemaOptions`) goes away.
    errors.extend(validate_openapi_schema(
        &schema,
        &format!("{path}.openAPIV3Schema"),
        &options,
    ));
}

/// The fields allowed at the root of a schema whose status subresource is enabled, by JSON
/// name, with their Go names for the message, in the internal struct's order.
const ROOT_FIELDS: [(&str, &str); 41] = [
    ("id", ""),
    ("$schema", ""),
    ("$ref", ""),
    ("description", "Description"),
    ("type", "Type"),
    ("nullable", ""),
    ("format", "Format"),
    ("title", "Title"),
    ("default", ""),
    ("maximum", "Maximum"),
    ("exclusiveMaximum", "ExclusiveMaximum"),
    ("minimum", "Minimum"),
    ("exclusiveMinimum", "ExclusiveMinimum"),
    ("maxLength", "MaxLength"),
    ("minLength", "MinLength"),
    ("pattern", "Pattern"),
    ("maxItems", "MaxItems"),
    ("minItems", "MinItems"),
    ("uniqueItems", "UniqueItems"),
    ("multipleOf", "MultipleOf"),
    ("enum", ""),
    ("maxProperties", ""),
    ("minProperties", ""),
    ("required", "Required"),
    ("items", "Items"),
    ("allOf", ""),
    ("oneOf", ""),
    ("anyOf", ""),
    ("not", ""),
    ("properties", "Properties"),
    ("additionalProperties", ""),
    ("patternProperties", ""),
    ("dependencies", ""),
    ("additionalItems", ""),
    ("definitions", ""),
    ("externalDocs", "ExternalDocs"),
    ("example", "Example"),
    (
        "x-kubernetes-preserve-unknown-fields",
        "XPreserveUnknownFields",
    ),
    ("x-kubernetes-embedded-resource", ""),
    ("x-kubernetes-int-or-string", ""),
    ("x-kubernetes-list-map-keys", ""),
];

/// Fields after `x-kubernetes-list-map-keys` in the internal struct (none allowed at the root
/// but `x-kubernetes-validations`).
const ROOT_FIELDS_TAIL: [(&str, &str); 3] = [
    ("x-kubernetes-list-type", ""),
    ("x-kubernetes-map-type", ""),
    ("x-kubernetes-validations", "XValidations"),
];

/// The checks around a schema that this crate makes until apimachinery's schema validation
/// (`apimachinery::schema::validate_crd_schema`, same signature) replaces this function at its
/// one call site in [`validate_schema_of`]: the status subresource's restrictions on the root
/// (`type` object, only some fields), `nullable` at the root, and the root's `type` (set, and
/// `object`) that a structural schema needs. Kubernetes makes these checks first, in this
/// order, and apimachinery's function makes them too.
fn validate_openapi_schema(
    schema: &Value,
    path: &str,
    options: &CrdSchemaOptions,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let Some(map) = schema.as_object() else {
        return errors;
    };
    // The schema is written from its typed form, which leaves out Go's zero values of
    // by-value fields: a key that is present (and not null) is a field Go sees as set.
    let set = |key: &str| map.get(key).is_some_and(|v| !v.is_null());
    if options.status_subresource_enabled {
        let allowed: Vec<&str> = ROOT_FIELDS
            .iter()
            .chain(&ROOT_FIELDS_TAIL)
            .filter(|(_, go)| !go.is_empty())
            .map(|(_, go)| *go)
            .collect();
        for (json, go) in ROOT_FIELDS.iter().chain(&ROOT_FIELDS_TAIL) {
            if !set(json) {
                continue;
            }
            if *json == "type" {
                let t = map.get("type").and_then(Value::as_str).unwrap_or_default();
                if t != "object" {
                    errors.push(FieldError::invalid(
                        format!("{path}.type"),
                        &Value::from(t),
                        r#"only "object" is allowed as the type at the root of the schema if the status subresource is enabled"#,
                    ));
                    break;
                }
                continue;
            }
            if go.is_empty() {
                errors.push(FieldError::invalid(
                    path,
                    schema,
                    format!(
                        "only [{}] fields are allowed at the root of the schema if the status subresource is enabled",
                        allowed.join(" ")
                    ),
                ));
                break;
            }
        }
    }
    if map.get("nullable") == Some(&Value::Bool(true)) {
        errors.push(FieldError::forbidden(
            format!("{path}.nullable"),
            "nullable cannot be true at the root",
        ));
    }
    if options.require_structural_schema {
        match map.get("type").and_then(Value::as_str).unwrap_or_default() {
            "" => errors.push(FieldError::required(
                format!("{path}.type"),
                "must not be empty at the root",
            )),
            "object" => {}
            other => errors.push(FieldError::invalid(
                format!("{path}.type"),
                &Value::from(other),
                "must be object at the root",
            )),
        }
    }
    errors
}

/// `ValidateCustomResourceDefinitionSubresources`: only scale has rules.
fn validate_subresources(
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
fn simple_json_path_problems(path: &str, field: &str) -> Vec<FieldError> {
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
fn validate_column(
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
const MAX_SELECTABLE_FIELDS: usize = 8;

/// `ValidateCustomResourceSelectableFields`, over the schema's properties.
fn validate_selectable_fields(
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
fn resolve_field_path<'s>(
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

/// Whether a conversion's review versions include a recognised one (or are empty).
fn has_recognized_review_version_or_none(conversion: &v1::CustomResourceConversion) -> bool {
    let versions = conversion
        .webhook
        .as_ref()
        .and_then(|w| w.conversion_review_versions.as_deref())
        .unwrap_or_default();
    versions.is_empty() || versions.iter().any(|v| v == "v1" || v == "v1beta1")
}

/// `validateCustomResourceConversion`, at the internal paths
/// (`spec.conversion.webhookClientConfig`, `spec.conversion.conversionReviewVersions`).
fn validate_conversion(
    conversion: &v1::CustomResourceConversion,
    require_recognized_version: bool,
    errors: &mut Vec<FieldError>,
) {
    const K: &str = "spec.conversion";
    validate_enum(
        &format!("{K}.strategy"),
        &conversion.strategy,
        &["None", "Webhook"],
        errors,
    );
    let client_config = conversion
        .webhook
        .as_ref()
        .and_then(|w| w.client_config.as_ref());
    let review_versions = conversion
        .webhook
        .as_ref()
        .and_then(|w| w.conversion_review_versions.as_deref())
        .unwrap_or_default();
    if conversion.strategy == "Webhook" {
        match client_config {
            None => errors.push(FieldError::required(
                format!("{K}.webhookClientConfig"),
                "required when strategy is set to Webhook",
            )),
            Some(cc) => match (&cc.url, &cc.service) {
                (Some(url), None) => {
                    validate_webhook_url(url, &format!("{K}.webhookClientConfig.url"), errors)
                }
                (None, Some(service)) => validate_webhook_service(
                    service,
                    &format!("{K}.webhookClientConfig.service"),
                    errors,
                ),
                _ => errors.push(FieldError::required(
                    format!("{K}.webhookClientConfig"),
                    "exactly one of url or service is required",
                )),
            },
        }
        validate_review_versions(
            review_versions,
            require_recognized_version,
            &format!("{K}.conversionReviewVersions"),
            errors,
        );
    } else {
        if client_config.is_some() {
            errors.push(FieldError::forbidden(
                format!("{K}.webhookClientConfig"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if !review_versions.is_empty() {
            errors.push(FieldError::forbidden(
                format!("{K}.conversionReviewVersions"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
}

/// Kubernetes' `validateConversionReviewVersions`.
fn validate_review_versions(
    versions: &[String],
    require_recognized: bool,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    if versions.is_empty() {
        errors.push(FieldError::required(path, ""));
        return;
    }
    let mut seen = std::collections::HashSet::new();
    let mut recognized = false;
    for (i, v) in versions.iter().enumerate() {
        let entry = format!("{path}[{i}]");
        if !seen.insert(v.as_str()) {
            errors.push(FieldError::invalid(
                entry,
                &Value::from(v.as_str()),
                "duplicate version",
            ));
            continue;
        }
        for problem in is_dns1035_label(v) {
            errors.push(FieldError::invalid(
                &entry,
                &Value::from(v.as_str()),
                problem,
            ));
        }
        recognized |= v == "v1" || v == "v1beta1";
    }
    if require_recognized && !recognized {
        errors.push(FieldError::invalid(
            path,
            &Value::from(versions.to_vec()),
            "must include at least one of v1, v1beta1",
        ));
    }
}

/// Kubernetes' `ValidateWebhookURL` with https forced.
fn validate_webhook_url(url: &str, path: &str, errors: &mut Vec<FieldError>) {
    const FORM: &str = "; desired format: https://host[/path]";
    if url.chars().any(|c| c.is_ascii_control()) {
        errors.push(FieldError::required(
            path,
            format!("url must be a valid URL: parse {url:?}: net/url: invalid control character in URL{FORM}"),
        ));
        return;
    }
    let (rest, fragment) = url.split_once('#').unwrap_or((url, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (scheme, after) = match rest.split_once("://") {
        Some((s, a))
            if !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
        {
            (s.to_ascii_lowercase(), Some(a))
        }
        _ => (String::new(), None),
    };
    let authority = after
        .map(|a| a.split('/').next().unwrap_or_default())
        .unwrap_or_default();
    let (user, host) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    if scheme != "https" {
        errors.push(FieldError::invalid(
            path,
            &Value::from(scheme.as_str()),
            format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if host.is_empty() {
        errors.push(FieldError::invalid(
            path,
            &Value::from(host),
            format!("host must be specified{FORM}"),
        ));
    }
    if let Some(user) = user {
        errors.push(FieldError::invalid(
            path,
            &Value::from(user),
            "user information is not permitted in the URL",
        ));
    }
    if !fragment.is_empty() {
        errors.push(FieldError::invalid(
            path,
            &Value::from(fragment),
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        errors.push(FieldError::invalid(
            path,
            &Value::from(query),
            "query parameters are not permitted in the URL",
        ));
    }
}

/// Kubernetes' `ValidateWebhookService`.
fn validate_webhook_service(
    service: &v1::ServiceReference,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    if service.name.is_empty() {
        errors.push(FieldError::required(format!("{path}.name"), ""));
    }
    if service.namespace.is_empty() {
        errors.push(FieldError::required(format!("{path}.namespace"), ""));
    }
    let port = service.port.unwrap_or(443);
    if !(1..=65535).contains(&port) {
        errors.push(FieldError::invalid(
            format!("{path}.port"),
            &Value::from(port),
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(url_path) = service.path.as_deref() else {
        return;
    };
    let field = format!("{path}.path");
    let value = Value::from(url_path);
    if url_path.is_empty() || url_path == "/" {
        return;
    }
    if url_path == "//" {
        errors.push(FieldError::invalid(
            field,
            &value,
            "segment[0] may not be empty",
        ));
        return;
    }
    if !url_path.starts_with('/') {
        errors.push(FieldError::invalid(&field, &value, "must start with a '/'"));
    }
    let mut to_check = &url_path[1..];
    if let Some(trimmed) = to_check.strip_suffix('/') {
        to_check = trimmed;
    }
    for (i, step) in to_check.split('/').enumerate() {
        if step.is_empty() {
            errors.push(FieldError::invalid(
                &field,
                &value,
                format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for failure in is_dns1123_subdomain(step) {
            errors.push(FieldError::invalid(
                &field,
                &value,
                format!("segment[{i}]: {failure}"),
            ));
        }
    }
}

/// `ValidateCustomResourceDefinitionNames` (for `spec.names` and `status.acceptedNames`).
fn validate_names(
    names: &v1::CustomResourceDefinitionNames,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    let label = |value: &str, field: String, prefix: &str, errors: &mut Vec<FieldError>| {
        if value.is_empty() {
            return;
        }
        let problems = is_dns1035_label(&value.to_lowercase());
        if !problems.is_empty() {
            errors.push(FieldError::invalid(
                field,
                &Value::from(value),
                format!("{prefix}{}", problems.join(",")),
            ));
        }
    };
    const MIXED: &str = "may have mixed case, but should otherwise match: ";
    // Plural and singular are checked as written (no lowercasing): lowercase them only
    // for kinds.
    for (value, field) in [
        (names.plural.as_str(), "plural"),
        (names.singular.as_deref().unwrap_or_default(), "singular"),
    ] {
        if !value.is_empty() {
            let problems = is_dns1035_label(value);
            if !problems.is_empty() {
                errors.push(FieldError::invalid(
                    format!("{path}.{field}"),
                    &Value::from(value),
                    problems.join(","),
                ));
            }
        }
    }
    label(&names.kind, format!("{path}.kind"), MIXED, errors);
    let list_kind = names.list_kind.as_deref().unwrap_or_default();
    label(list_kind, format!("{path}.listKind"), MIXED, errors);
    for (i, short) in names.short_names.iter().enumerate() {
        let problems = is_dns1035_label(short);
        if !problems.is_empty() {
            errors.push(FieldError::invalid(
                format!("{path}.shortNames[{i}]"),
                &Value::from(short.as_str()),
                problems.join(","),
            ));
        }
    }
    if !names.kind.is_empty() && names.kind == list_kind {
        errors.push(FieldError::invalid(
            format!("{path}.listKind"),
            &Value::from(list_kind),
            "kind and listKind may not be the same",
        ));
    }
    for (i, category) in names.categories.iter().enumerate() {
        let problems = is_dns1035_label(category);
        if !problems.is_empty() {
            errors.push(FieldError::invalid(
                format!("{path}.categories[{i}]"),
                &Value::from(category.as_str()),
                problems.join(","),
            ));
        }
    }
}

/// `ValidateCustomResourceDefinitionStoredVersions`.
fn validate_stored_versions(crd: &v1::CustomResourceDefinition, errors: &mut Vec<FieldError>) {
    const PATH: &str = "status.storedVersions";
    let stored = crd.status.stored_versions.as_deref().unwrap_or_default();
    let value = Value::from(stored.to_vec());
    if stored.is_empty() {
        errors.push(FieldError::invalid(
            PATH,
            &value,
            "must have at least one stored version",
        ));
        return;
    }
    let mut remaining: Vec<(usize, &String)> = stored.iter().enumerate().collect();
    for v in &crd.spec.versions {
        let present = stored.contains(&v.name);
        if v.storage && !present {
            errors.push(FieldError::invalid(
                PATH,
                &value,
                format!("must have the storage version {}", v.name),
            ));
        }
        remaining.retain(|(_, s)| **s != v.name);
    }
    for (i, v) in remaining {
        errors.push(FieldError::invalid(
            format!("{PATH}[{i}]"),
            &Value::from(v.as_str()),
            format!("missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"),
        ));
    }
}

/// The approval annotation of protected groups.
const APPROVAL_ANNOTATION: &str = "api-approved.kubernetes.io";

/// Kubernetes' API approval state of a CRD's annotation (`GetAPIApprovalState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Approval {
    /// Not a protected group.
    Unprotected,
    /// No annotation (or empty).
    Missing,
    /// A URL with a scheme and a host.
    Approved,
    /// A reason starting with `unapproved`.
    Bypassed,
    /// Anything else.
    Invalid,
}

/// The approval state of a CRD.
fn approval_of(crd: &v1::CustomResourceDefinition) -> Approval {
    let group = crd.spec.group.as_str();
    let protected = ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|d| group == *d || group.ends_with(&format!(".{d}")));
    if !protected {
        return Approval::Unprotected;
    }
    let value = crd
        .metadata
        .annotations
        .get(APPROVAL_ANNOTATION)
        .map(String::as_str)
        .unwrap_or_default();
    if value.is_empty() {
        return Approval::Missing;
    }
    if value.starts_with("unapproved") {
        return Approval::Bypassed;
    }
    match value.split_once("://") {
        Some((scheme, rest))
            if !scheme.is_empty() && !rest.is_empty() && !rest.starts_with('/') =>
        {
            Approval::Approved
        }
        _ => Approval::Invalid,
    }
}

/// Kubernetes' `validateAPIApproval` (skipped on update when the state is unchanged).
fn validate_api_approval(
    crd: &v1::CustomResourceDefinition,
    old: Option<&v1::CustomResourceDefinition>,
    errors: &mut Vec<FieldError>,
) {
    let state = approval_of(crd);
    if old.is_some_and(|o| approval_of(o) == state) {
        return;
    }
    let path = format!("metadata.annotations[{APPROVAL_ANNOTATION}]");
    match state {
        Approval::Missing => errors.push(FieldError::required(
            path,
            format!("protected groups must have approval annotation {APPROVAL_ANNOTATION:?}, see https://github.com/kubernetes/enhancements/pull/1111"),
        )),
        Approval::Invalid => {
            let value = crd.metadata.annotations.get(APPROVAL_ANNOTATION).cloned().unwrap_or_default();
            errors.push(FieldError::invalid(
                path,
                &Value::from(value),
                format!("protected groups must have approval annotation {APPROVAL_ANNOTATION:?} with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"),
            ));
        }
        Approval::Unprotected | Approval::Approved | Approval::Bypassed => {}
    }
}

/// Kubernetes' `validatePreserveUnknownFields`: v1 refuses `true` (unless the old CRD had it).
fn validate_preserve_unknown_fields(
    crd: &v1::CustomResourceDefinition,
    old: Option<&v1::CustomResourceDefinition>,
    errors: &mut Vec<FieldError>,
) {
    if old.is_some_and(|o| o.spec.preserve_unknown_fields == Some(true)) {
        return;
    }
    if crd.spec.preserve_unknown_fields == Some(true) {
        errors.push(FieldError::invalid(
            "spec.preserveUnknownFields",
            &Value::Bool(true),
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
}
