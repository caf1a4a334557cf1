//! kube-aggregator's APIService validation (`pkg/apis/apiregistration/validation`), with its
//! messages and field paths. The generic store has already checked `metadata` (the name as a
//! path segment, labels, …); these are the APIService's own checks.

use apimachinery::errors::{FieldError, FieldErrorType};
use apimachinery::validation::{is_dns1035_label, is_dns1123_subdomain, is_path_segment_name};
use serde_json::Value;

use crate::apiregistration_k8s_io::v1::{APIService, APIServiceStatus};

/// The highest `spec.groupPriorityMinimum` accepted.
pub const MAX_GROUP_PRIORITY_MINIMUM: i32 = 20000;

/// The highest `spec.versionPriority` accepted.
pub const MAX_VERSION_PRIORITY: i32 = 1000;

/// The name an APIService must have: `<spec.version>.<spec.group>` (`v1.` for the legacy
/// core group).
pub fn required_name(service: &APIService) -> String {
    format!(
        "{}.{}",
        service.spec.version.as_deref().unwrap_or(""),
        service.spec.group.as_deref().unwrap_or("")
    )
}

/// `ValidateAPIService`: the name is `<version>.<group>`, the group a DNS subdomain (empty only
/// for `v1`), the version a DNS label, the priorities in range, and a local APIService (no
/// `service`) has neither `caBundle` nor `insecureSkipTLSVerify`; a remote one names its
/// service's namespace, name and a valid port, and does not combine both TLS settings.
pub fn validate_api_service(service: &APIService) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let name = service.metadata.name.as_deref().unwrap_or("");
    let required = required_name(service);
    // The store reported a name that is no path segment; the name function stops there.
    if !name.is_empty() && is_path_segment_name(name).is_empty() && name != required {
        errors.push(FieldError::invalid(
            "metadata.name",
            &Value::from(name),
            format!("must be `spec.version+\".\"+spec.group`: {required:?}"),
        ));
    }
    let spec = &service.spec;
    let group = spec.group.as_deref().unwrap_or("");
    let version = spec.version.as_deref().unwrap_or("");
    if group.is_empty() && version != "v1" {
        errors.push(FieldError::required(
            "spec.group",
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if !group.is_empty() {
        for m in is_dns1123_subdomain(group) {
            errors.push(FieldError::invalid("spec.group", &Value::from(group), m));
        }
    }
    for m in is_dns1035_label(version) {
        errors.push(FieldError::invalid(
            "spec.version",
            &Value::from(version),
            m,
        ));
    }
    if spec.group_priority_minimum <= 0 || spec.group_priority_minimum > MAX_GROUP_PRIORITY_MINIMUM
    {
        errors.push(FieldError::invalid(
            "spec.groupPriorityMinimum",
            &Value::from(spec.group_priority_minimum),
            "must be positive and less than 20000",
        ));
    }
    if spec.version_priority <= 0 || spec.version_priority > MAX_VERSION_PRIORITY {
        errors.push(FieldError::invalid(
            "spec.versionPriority",
            &Value::from(spec.version_priority),
            "must be positive and less than 1000",
        ));
    }
    let ca_bundle = spec.ca_bundle.as_ref().map_or(0, |b| b.0.len());
    let insecure = spec.insecure_skip_tls_verify.unwrap_or(false);
    let Some(reference) = &spec.service else {
        if ca_bundle != 0 {
            errors.push(FieldError::invalid(
                "spec.caBundle",
                &Value::from(format!("{ca_bundle} bytes")),
                "local APIServices may not have a caBundle",
            ));
        }
        if insecure {
            errors.push(FieldError::invalid(
                "spec.insecureSkipTLSVerify",
                &Value::from(insecure),
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
        return errors;
    };
    if reference.namespace.as_deref().unwrap_or("").is_empty() {
        errors.push(FieldError::required("spec.service.namespace", ""));
    }
    if reference.name.as_deref().unwrap_or("").is_empty() {
        errors.push(FieldError::required("spec.service.name", ""));
    }
    let port = reference.port.unwrap_or(0);
    if !(1..=65535).contains(&port) {
        errors.push(FieldError::invalid(
            "spec.service.port",
            &Value::from(port),
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    if insecure && ca_bundle > 0 {
        errors.push(FieldError::invalid(
            "spec.insecureSkipTLSVerify",
            &Value::from(insecure),
            "may not be true if caBundle is present",
        ));
    }
    errors
}

/// `ValidateAPIServiceStatus`: every condition's status is `True`, `False` or `Unknown`.
pub fn validate_api_service_status(status: &APIServiceStatus) -> Vec<FieldError> {
    let supported = ["True", "False", "Unknown"];
    status
        .conditions
        .iter()
        .flatten()
        .enumerate()
        .filter(|(_, c)| !supported.contains(&c.status.as_str()))
        .map(|(i, c)| {
            FieldError::new(
                FieldErrorType::NotSupported,
                format!("status.conditions[{i}].status"),
                Some(format!("{:?}", c.status)),
                "supported values: \"True\", \"False\", \"Unknown\"",
            )
        })
        .collect()
}
