//! `spec.conversion`, at the internal form's paths (`spec.conversion.webhookClientConfig`,
//! `spec.conversion.conversionReviewVersions`), with the webhook URL and service checks.

use apimachinery::errors::FieldError;
use apimachinery::validation::{is_dns1035_label, is_dns1123_subdomain};
use serde_json::Value;

use super::validate_enum;
use crate::apiextensions_k8s_io::v1;

/// Whether a conversion's review versions include a recognised one (or are empty).
pub(super) fn has_recognized_review_version_or_none(
    conversion: &v1::CustomResourceConversion,
) -> bool {
    let versions = conversion
        .webhook
        .as_ref()
        .and_then(|w| w.conversion_review_versions.as_deref())
        .unwrap_or_default();
    versions.is_empty() || versions.iter().any(|v| v == "v1" || v == "v1beta1")
}

/// `validateCustomResourceConversion`, at the internal paths
/// (`spec.conversion.webhookClientConfig`, `spec.conversion.conversionReviewVersions`).
pub(super) fn validate_conversion(
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
pub(super) fn validate_review_versions(
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
pub(super) fn validate_webhook_url(url: &str, path: &str, errors: &mut Vec<FieldError>) {
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
pub(super) fn validate_webhook_service(
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
