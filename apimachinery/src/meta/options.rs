//! The request options of `meta.k8s.io/v1` — [`ListOptions`], [`GetOptions`],
//! [`CreateOptions`], [`UpdateOptions`], [`PatchOptions`] and [`DeleteOptions`] — with their JSON
//! names, decoded from a request's query by one decoder ([`crate::query::from_query`], Kubernetes'
//! parameter codec) and validated with Kubernetes' messages
//! (`k8s.io/apimachinery/pkg/apis/meta/v1/validation`,
//! `pkg/apis/meta/internalversion/validation`).
//!
//! A handler runs them as kube-apiserver's handlers do: decode (a malformed value is a 400
//! `BadRequest` with the `strconv` message), then validate (a 422 `Invalid` of
//! `<Kind>.meta.k8s.io ""` with every field error). The `parse` functions do both.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::errors::{FieldError, FieldErrorType};
use crate::query::{Query, QueryDecodeError, from_query};
use crate::selectors::{FieldSelector, LabelSelector, SelectorError};
use crate::status::ApiError;
use crate::strconv::{go_string_slice, is_print, quote};

/// The group the options belong to, which names them in `Invalid` errors.
pub const GROUP: &str = "meta.k8s.io";
/// The only `dryRun` value: `All`.
pub const DRY_RUN_ALL: &str = "All";
/// The longest `fieldManager`, in bytes.
pub const FIELD_MANAGER_MAX_LENGTH: usize = 128;

/// The 422 `Invalid` error of options of `kind` (such as `CreateOptions`):
/// `CreateOptions.meta.k8s.io "" is invalid: …`.
pub fn invalid_options(kind: &str, errors: &[FieldError]) -> ApiError {
    ApiError::invalid(GROUP, kind, "", errors)
}

fn check(kind: &str, errors: Vec<FieldError>) -> Result<(), ApiError> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(invalid_options(kind, &errors))
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

// ---------------------------------------------------------------------------------------------
// Shared rules.

/// `ValidateFieldManager`: at most 128 bytes, every character printable.
pub fn validate_field_manager(field_manager: &str, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if field_manager.len() > FIELD_MANAGER_MAX_LENGTH {
        errs.push(FieldError::new(
            FieldErrorType::TooLong,
            path,
            None,
            format!("may not be more than {FIELD_MANAGER_MAX_LENGTH} bytes"),
        ));
    }
    for (i, c) in field_manager.char_indices() {
        if !is_print(c) {
            errs.push(FieldError::new(
                FieldErrorType::Invalid,
                path,
                Some(quote(field_manager)),
                // Go's `%#U` of a non-printable rune, and its byte offset.
                format!("invalid character U+{:04X} (at position {i})", c as u32),
            ));
        }
    }
    errs
}

/// `ValidateDryRun`: every value is `All`; otherwise one `Unsupported value` error showing the
/// whole list as Go does (`[]string{"x"}`).
pub fn validate_dry_run(path: &str, dry_run: &[String]) -> Vec<FieldError> {
    if dry_run.iter().all(|v| v == DRY_RUN_ALL) {
        return Vec::new();
    }
    vec![FieldError::new(
        FieldErrorType::NotSupported,
        path,
        Some(go_string_slice(dry_run)),
        format!("supported values: {}", quote(DRY_RUN_ALL)),
    )]
}

/// How unknown and duplicate fields of a written object are treated (`fieldValidation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them and return a warning for each (the default).
    Warn,
    /// Fail the request.
    Strict,
}

impl FieldValidation {
    /// The directive of a `fieldValidation` value: empty is `Warn` (Kubernetes'
    /// `fieldValidation`); `None` for a value [`validate_field_validation`] rejects.
    pub fn directive(value: &str) -> Option<Self> {
        match value {
            "" | "Warn" => Some(Self::Warn),
            "Ignore" => Some(Self::Ignore),
            "Strict" => Some(Self::Strict),
            _ => None,
        }
    }

    /// The value's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ignore => "Ignore",
            Self::Warn => "Warn",
            Self::Strict => "Strict",
        }
    }
}

/// `ValidateFieldValidation`: empty, `Ignore`, `Warn` or `Strict`.
pub fn validate_field_validation(path: &str, value: &str) -> Vec<FieldError> {
    if FieldValidation::directive(value).is_some() {
        return Vec::new();
    }
    vec![FieldError::new(
        FieldErrorType::NotSupported,
        path,
        Some(quote(value)),
        // Kubernetes lists the set sorted, the empty value first.
        "supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"",
    )]
}

// ---------------------------------------------------------------------------------------------
// ListOptions.

/// How `resourceVersion` is matched by a list (`resourceVersionMatch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResourceVersionMatch {
    /// `NotOlderThan`: at least as new as `resourceVersion`.
    NotOlderThan,
    /// `Exact`: exactly `resourceVersion`.
    Exact,
}

impl ResourceVersionMatch {
    /// The value's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotOlderThan => "NotOlderThan",
            Self::Exact => "Exact",
        }
    }

    /// The match a value names; `None` for empty or unknown values.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "NotOlderThan" => Some(Self::NotOlderThan),
            "Exact" => Some(Self::Exact),
            _ => None,
        }
    }
}

/// `meta.k8s.io/v1` `ListOptions`: the query of `list`, `watch` and `deletecollection`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ListOptions {
    /// `labelSelector`: a label selector, parsed by [`ListOptions::parse_label_selector`].
    #[serde(skip_serializing_if = "String::is_empty")]
    pub label_selector: String,
    /// `fieldSelector`: a field selector, parsed by [`ListOptions::parse_field_selector`].
    #[serde(skip_serializing_if = "String::is_empty")]
    pub field_selector: String,
    /// `watch`: watch instead of list.
    #[serde(skip_serializing_if = "is_false")]
    pub watch: bool,
    /// `allowWatchBookmarks`: the watch may send `BOOKMARK` events.
    #[serde(skip_serializing_if = "is_false")]
    pub allow_watch_bookmarks: bool,
    /// `resourceVersion`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// `resourceVersionMatch`, as sent (see [`ListOptions::resource_version_match`]).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version_match: String,
    /// `timeoutSeconds`: how long a watch may last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i64>,
    /// `limit`: the most items of one list page (not positive: no limit).
    #[serde(skip_serializing_if = "is_zero")]
    pub limit: i64,
    /// `continue`: the token of the next list page.
    #[serde(rename = "continue", skip_serializing_if = "String::is_empty")]
    pub continue_: String,
    /// `sendInitialEvents`: a watch starts with the current objects (the WatchList protocol).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send_initial_events: Option<bool>,
}

/// [`ListOptions`] with their selectors parsed, as Kubernetes' internal `ListOptions` holds them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParsedListOptions {
    /// The options as sent.
    pub options: ListOptions,
    /// The parsed `labelSelector`.
    pub labels: LabelSelector,
    /// The parsed `fieldSelector` (field labels not yet checked against the kind).
    pub fields: FieldSelector,
}

impl ListOptions {
    /// Decodes the options from a query; a malformed `limit` or `timeoutSeconds` fails with
    /// the `strconv` message.
    pub fn from_query(query: &Query<'_>) -> Result<Self, QueryDecodeError> {
        from_query(query)
    }

    /// Parses `labelSelector` (empty selects everything).
    pub fn parse_label_selector(&self) -> Result<LabelSelector, SelectorError> {
        LabelSelector::parse(&self.label_selector)
    }

    /// Parses `fieldSelector` (empty selects everything).
    pub fn parse_field_selector(&self) -> Result<FieldSelector, SelectorError> {
        FieldSelector::parse(&self.field_selector)
    }

    /// The `resourceVersionMatch`, if it is one Kubernetes knows.
    pub fn resource_version_match(&self) -> Option<ResourceVersionMatch> {
        ResourceVersionMatch::parse(&self.resource_version_match)
    }

    /// `SetListOptionsDefaults`: with the WatchList feature, a watch from no or `0`
    /// `resourceVersion` that sets neither `sendInitialEvents` nor `resourceVersionMatch` gets
    /// `sendInitialEvents=true` and `resourceVersionMatch=NotOlderThan`.
    pub fn set_defaults(&mut self, watch_list_enabled: bool) {
        if !watch_list_enabled
            || self.send_initial_events.is_some()
            || !self.resource_version_match.is_empty()
        {
            return;
        }
        let legacy = self.resource_version.is_empty() || self.resource_version == "0";
        if self.watch && legacy {
            self.send_initial_events = Some(true);
            self.resource_version_match = ResourceVersionMatch::NotOlderThan.as_str().into();
        }
    }

    /// `ValidateListOptions`; `watch_list_enabled` is the WatchList feature (which allows
    /// `sendInitialEvents` on watches).
    pub fn validate(&self, watch_list_enabled: bool) -> Vec<FieldError> {
        validate_list_options(self, watch_list_enabled)
    }

    /// Decodes the options and parses their selectors (400 `BadRequest` on failure), then
    /// validates them (422 `Invalid` of `ListOptions`), in kube-apiserver's order.
    pub fn parse(
        query: &Query<'_>,
        watch_list_enabled: bool,
    ) -> Result<ParsedListOptions, ApiError> {
        let options = Self::from_query(query)?;
        let labels = options
            .parse_label_selector()
            .map_err(|e| ApiError::bad_request(e.0))?;
        let fields = options
            .parse_field_selector()
            .map_err(|e| ApiError::bad_request(e.0))?;
        check("ListOptions", options.validate(watch_list_enabled))?;
        Ok(ParsedListOptions {
            options,
            labels,
            fields,
        })
    }
}

/// `ValidateListOptions` of `k8s.io/apimachinery/pkg/apis/meta/internalversion/validation`.
pub fn validate_list_options(options: &ListOptions, watch_list_enabled: bool) -> Vec<FieldError> {
    let forbidden = |path: &str, detail: &str| FieldError::forbidden(path, detail);
    let mut errs = Vec::new();
    let rvm = options.resource_version_match.as_str();
    if options.watch {
        if options.send_initial_events.is_some() {
            if rvm != "NotOlderThan" {
                errs.push(forbidden(
                    "resourceVersionMatch",
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                ));
            }
            if !watch_list_enabled {
                errs.push(forbidden(
                    "sendInitialEvents",
                    "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
                ));
            }
        }
        if !rvm.is_empty() {
            if options.send_initial_events.is_none() {
                errs.push(forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            if rvm != "NotOlderThan" {
                errs.push(FieldError::new(
                    FieldErrorType::NotSupported,
                    "resourceVersionMatch",
                    Some(quote(rvm)),
                    "supported values: \"NotOlderThan\"",
                ));
            }
            if !options.continue_.is_empty() {
                errs.push(forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
        }
        return errs;
    }
    if !rvm.is_empty() {
        if options.resource_version.is_empty() {
            errs.push(forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if !options.continue_.is_empty() {
            errs.push(forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if ResourceVersionMatch::parse(rvm).is_none() {
            errs.push(FieldError::new(
                FieldErrorType::NotSupported,
                "resourceVersionMatch",
                Some(quote(rvm)),
                "supported values: \"Exact\", \"NotOlderThan\", \"\"",
            ));
        }
        if rvm == "Exact" && options.resource_version == "0" {
            errs.push(forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
    }
    if options.send_initial_events.is_some() {
        errs.push(forbidden(
            "sendInitialEvents",
            "sendInitialEvents is forbidden for list",
        ));
    }
    errs
}

// ---------------------------------------------------------------------------------------------
// GetOptions, CreateOptions, UpdateOptions, PatchOptions.

/// `meta.k8s.io/v1` `GetOptions`: the query of `get`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct GetOptions {
    /// `resourceVersion`: `0` allows any cached version; empty reads the latest.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
}

impl GetOptions {
    /// Decodes the options from a query.
    pub fn from_query(query: &Query<'_>) -> Result<Self, QueryDecodeError> {
        from_query(query)
    }
}

/// `meta.k8s.io/v1` `CreateOptions`: the query of `create`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CreateOptions {
    /// `dryRun`: every value `All`; any value makes the request a dry run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dry_run: Vec<String>,
    /// `fieldManager`: the manager recorded in `managedFields`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub field_manager: String,
    /// `fieldValidation`: `Ignore`, `Warn` (the default) or `Strict`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub field_validation: String,
}

/// `meta.k8s.io/v1` `UpdateOptions`: the query of `update`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct UpdateOptions {
    /// `dryRun`: every value `All`; any value makes the request a dry run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dry_run: Vec<String>,
    /// `fieldManager`: the manager recorded in `managedFields`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub field_manager: String,
    /// `fieldValidation`: `Ignore`, `Warn` (the default) or `Strict`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub field_validation: String,
}

/// `meta.k8s.io/v1` `PatchOptions`: the query of `patch` (and server-side apply).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PatchOptions {
    /// `dryRun`: every value `All`; any value makes the request a dry run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dry_run: Vec<String>,
    /// `force`: an apply takes over conflicting fields; only for apply patches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
    /// `fieldManager`: the manager recorded in `managedFields`; required for apply.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub field_manager: String,
    /// `fieldValidation`: `Ignore`, `Warn` (the default) or `Strict`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub field_validation: String,
}

/// `ValidateCreateOptions`.
pub fn validate_create_options(options: &CreateOptions) -> Vec<FieldError> {
    let mut errs = validate_field_manager(&options.field_manager, "fieldManager");
    errs.extend(validate_dry_run("dryRun", &options.dry_run));
    errs.extend(validate_field_validation(
        "fieldValidation",
        &options.field_validation,
    ));
    errs
}

/// `ValidateUpdateOptions`.
pub fn validate_update_options(options: &UpdateOptions) -> Vec<FieldError> {
    let mut errs = validate_field_manager(&options.field_manager, "fieldManager");
    errs.extend(validate_dry_run("dryRun", &options.dry_run));
    errs.extend(validate_field_validation(
        "fieldValidation",
        &options.field_validation,
    ));
    errs
}

/// `ValidatePatchOptions`; `apply` says the patch is a server-side apply
/// (`application/apply-patch+yaml` or `+cbor`), which requires `fieldManager`, while any other
/// patch may not set `force`.
pub fn validate_patch_options(options: &PatchOptions, apply: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if apply {
        if options.field_manager.is_empty() {
            errs.push(FieldError::required(
                "fieldManager",
                "is required for apply patch",
            ));
        }
    } else if options.force.is_some() {
        errs.push(FieldError::forbidden(
            "force",
            "may not be specified for non-apply patch",
        ));
    }
    errs.extend(validate_field_manager(
        &options.field_manager,
        "fieldManager",
    ));
    errs.extend(validate_dry_run("dryRun", &options.dry_run));
    errs.extend(validate_field_validation(
        "fieldValidation",
        &options.field_validation,
    ));
    errs
}

macro_rules! write_options {
    ($ty:ident) => {
        impl $ty {
            /// Decodes the options from a query.
            pub fn from_query(query: &Query<'_>) -> Result<Self, QueryDecodeError> {
                from_query(query)
            }

            /// Whether the request is a dry run (any `dryRun` value; validation allows only
            /// `All`).
            pub fn is_dry_run(&self) -> bool {
                !self.dry_run.is_empty()
            }

            /// The `fieldValidation` directive (`Warn` when unset or, before validation,
            /// unknown).
            pub fn field_validation_directive(&self) -> FieldValidation {
                FieldValidation::directive(&self.field_validation).unwrap_or(FieldValidation::Warn)
            }
        }
    };
}

write_options!(CreateOptions);
write_options!(UpdateOptions);
write_options!(PatchOptions);

impl CreateOptions {
    /// `ValidateCreateOptions`.
    pub fn validate(&self) -> Vec<FieldError> {
        validate_create_options(self)
    }

    /// Decodes (400) and validates (422 `Invalid` of `CreateOptions`) the options of a query.
    pub fn parse(query: &Query<'_>) -> Result<Self, ApiError> {
        let options = Self::from_query(query)?;
        check("CreateOptions", options.validate())?;
        Ok(options)
    }
}

impl UpdateOptions {
    /// `ValidateUpdateOptions`.
    pub fn validate(&self) -> Vec<FieldError> {
        validate_update_options(self)
    }

    /// Decodes (400) and validates (422 `Invalid` of `UpdateOptions`) the options of a query.
    pub fn parse(query: &Query<'_>) -> Result<Self, ApiError> {
        let options = Self::from_query(query)?;
        check("UpdateOptions", options.validate())?;
        Ok(options)
    }
}

impl PatchOptions {
    /// `ValidatePatchOptions` for a server-side apply (`apply`) or another patch.
    pub fn validate(&self, apply: bool) -> Vec<FieldError> {
        validate_patch_options(self, apply)
    }

    /// Decodes (400) and validates (422 `Invalid` of `PatchOptions`) the options of a query.
    pub fn parse(query: &Query<'_>, apply: bool) -> Result<Self, ApiError> {
        let options = Self::from_query(query)?;
        check("PatchOptions", options.validate(apply))?;
        Ok(options)
    }

    /// Whether an apply forces conflicting fields (`force`, unset is false).
    pub fn is_force(&self) -> bool {
        self.force.unwrap_or(false)
    }
}

// ---------------------------------------------------------------------------------------------
// DeleteOptions.

/// How a deletion treats the dependents of the object (`propagationPolicy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeletionPropagation {
    /// `Orphan`: dependents are left, their owner reference removed.
    Orphan,
    /// `Background`: the object goes at once, the garbage collector removes dependents.
    Background,
    /// `Foreground`: the object stays (with the `foregroundDeletion` finalizer) until its
    /// blocking dependents are gone.
    Foreground,
}

impl DeletionPropagation {
    /// The value's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Orphan => "Orphan",
            Self::Background => "Background",
            Self::Foreground => "Foreground",
        }
    }

    /// The policy a value names; `None` for unknown values.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "Orphan" => Some(Self::Orphan),
            "Background" => Some(Self::Background),
            "Foreground" => Some(Self::Foreground),
            _ => None,
        }
    }
}

/// `meta.k8s.io/v1` `Preconditions`: what must hold of the object for a delete to proceed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Preconditions {
    /// `uid`: the object's UID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// `resourceVersion`: the object's resourceVersion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
}

/// `meta.k8s.io/v1` `DeleteOptions`: the query or body of `delete` and `deletecollection`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct DeleteOptions {
    /// `gracePeriodSeconds`: how long before the object is deleted (0: at once).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grace_period_seconds: Option<i64>,
    /// `preconditions` (only in a body).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preconditions: Option<Preconditions>,
    /// `orphanDependents` (deprecated; exclusive with `propagationPolicy`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orphan_dependents: Option<bool>,
    /// `propagationPolicy`, as sent (see [`DeleteOptions::propagation`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub propagation_policy: Option<String>,
    /// `dryRun`: every value `All`; any value makes the request a dry run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dry_run: Vec<String>,
    /// `ignoreStoreReadErrorWithClusterBreakingPotential`: delete an object that cannot be read
    /// (the AllowUnsafeMalformedObjectDeletion feature, which apiary does not have).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignore_store_read_error_with_cluster_breaking_potential: Option<bool>,
}

/// The fields of [`DeleteOptions`] a query can carry (Kubernetes' conversion skips
/// `preconditions`), in the order of the Go struct.
#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct DeleteQuery {
    grace_period_seconds: Option<i64>,
    orphan_dependents: Option<bool>,
    propagation_policy: Option<String>,
    dry_run: Vec<String>,
    ignore_store_read_error_with_cluster_breaking_potential: Option<bool>,
}

/// The API versions a `DeleteOptions` body may name besides the request's own group version
/// (with the kind `DeleteOptions` or none).
const DELETE_OPTIONS_API_VERSIONS: [&str; 4] = ["", "v1", "meta.k8s.io/v1", "meta.k8s.io/v1beta1"];

/// A JSON type error as Go's `encoding/json` words it.
fn json_type_error(value: &Value, strukt: &str, field: &str, go_type: &str) -> ApiError {
    let what = match value {
        Value::Null => "null".to_string(),
        Value::Bool(_) => "bool".to_string(),
        // A number that is not an integer, or out of range, is shown with its text.
        Value::Number(n) if go_type == "int64" => format!("number {n}"),
        Value::Number(_) => "number".to_string(),
        Value::String(_) => "string".to_string(),
        Value::Array(_) => "array".to_string(),
        Value::Object(_) => "object".to_string(),
    };
    ApiError::bad_request(format!(
        "json: cannot unmarshal {what} into Go struct field {strukt}.{field} of type {go_type}"
    ))
}

fn body_string(
    value: &Value,
    strukt: &str,
    field: &str,
    go_type: &str,
) -> Result<Option<String>, ApiError> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        other => Err(json_type_error(other, strukt, field, go_type)),
    }
}

fn body_bool(value: &Value, field: &str) -> Result<Option<bool>, ApiError> {
    match value {
        Value::Null => Ok(None),
        Value::Bool(b) => Ok(Some(*b)),
        other => Err(json_type_error(other, "DeleteOptions", field, "bool")),
    }
}

impl DeleteOptions {
    /// Decodes the options from a query (every field but `preconditions`).
    pub fn from_query(query: &Query<'_>) -> Result<Self, QueryDecodeError> {
        let q: DeleteQuery = from_query(query)?;
        Ok(Self {
            grace_period_seconds: q.grace_period_seconds,
            preconditions: None,
            orphan_dependents: q.orphan_dependents,
            propagation_policy: q.propagation_policy,
            dry_run: q.dry_run,
            ignore_store_read_error_with_cluster_breaking_potential: q
                .ignore_store_read_error_with_cluster_breaking_potential,
        })
    }

    /// Decodes the options from a request body already parsed from JSON or YAML. Its
    /// `apiVersion` may be empty, `v1`, `meta.k8s.io/v1`, `meta.k8s.io/v1beta1` or
    /// `request_group_version` (the group version of the request, which Kubernetes registers
    /// `DeleteOptions` in too), its `kind` empty or `DeleteOptions`; unknown fields are ignored
    /// and a member of the wrong type fails as Go's JSON decoder words it.
    pub fn from_body(body: &Value, request_group_version: Option<&str>) -> Result<Self, ApiError> {
        let map = match body {
            Value::Object(map) => map,
            Value::Null => return Ok(Self::default()),
            other => {
                let what = match other {
                    Value::Bool(_) => "bool",
                    Value::Number(_) => "number",
                    Value::String(_) => "string",
                    _ => "array",
                };
                return Err(ApiError::bad_request(format!(
                    "json: cannot unmarshal {what} into Go value of type v1.DeleteOptions"
                )));
            }
        };
        let type_member = |key: &str| -> Result<&str, ApiError> {
            match map.get(key) {
                None | Some(Value::Null) => Ok(""),
                Some(Value::String(s)) => Ok(s),
                Some(other) => Err(ApiError::bad_request(format!(
                    "couldn't get version/kind; json parse error: {}",
                    json_type_error(other, "", key, "string").message()
                ))),
            }
        };
        let api_version = type_member("apiVersion")?;
        let kind = type_member("kind")?;
        let known_version = DELETE_OPTIONS_API_VERSIONS.contains(&api_version)
            || request_group_version.is_some_and(|gv| gv == api_version);
        if !(kind.is_empty() || kind == "DeleteOptions") || !known_version {
            let kind = if kind.is_empty() {
                "DeleteOptions"
            } else {
                kind
            };
            return Err(ApiError::bad_request(format!(
                "the body of the request was in an unknown format - {api_version}, Kind={kind} is not a DeleteOptions"
            )));
        }
        let mut out = Self::default();
        for (key, value) in map {
            match key.as_str() {
                "gracePeriodSeconds" => {
                    out.grace_period_seconds = match value {
                        Value::Null => None,
                        Value::Number(n) if n.as_i64().is_some() => n.as_i64(),
                        other => {
                            return Err(json_type_error(
                                other,
                                "DeleteOptions",
                                "gracePeriodSeconds",
                                "int64",
                            ));
                        }
                    };
                }
                "preconditions" => {
                    out.preconditions = match value {
                        Value::Null => None,
                        Value::Object(p) => {
                            let mut pre = Preconditions::default();
                            for (k, v) in p {
                                match k.as_str() {
                                    "uid" => {
                                        pre.uid = body_string(
                                            v,
                                            "Preconditions",
                                            "preconditions.uid",
                                            "types.UID",
                                        )?;
                                    }
                                    "resourceVersion" => {
                                        pre.resource_version = body_string(
                                            v,
                                            "Preconditions",
                                            "preconditions.resourceVersion",
                                            "string",
                                        )?;
                                    }
                                    _ => {}
                                }
                            }
                            Some(pre)
                        }
                        other => {
                            return Err(json_type_error(
                                other,
                                "DeleteOptions",
                                "preconditions",
                                "v1.Preconditions",
                            ));
                        }
                    };
                }
                "orphanDependents" => out.orphan_dependents = body_bool(value, key)?,
                "propagationPolicy" => {
                    out.propagation_policy = body_string(
                        value,
                        "DeleteOptions",
                        "propagationPolicy",
                        "v1.DeletionPropagation",
                    )?;
                }
                "dryRun" => {
                    out.dry_run = match value {
                        Value::Null => Vec::new(),
                        Value::Array(items) => items
                            .iter()
                            .map(|v| {
                                body_string(v, "DeleteOptions", "dryRun", "string")
                                    .map(Option::unwrap_or_default)
                            })
                            .collect::<Result<_, _>>()?,
                        other => {
                            return Err(json_type_error(
                                other,
                                "DeleteOptions",
                                "dryRun",
                                "[]string",
                            ));
                        }
                    };
                }
                "ignoreStoreReadErrorWithClusterBreakingPotential" => {
                    out.ignore_store_read_error_with_cluster_breaking_potential =
                        body_bool(value, key)?;
                }
                _ => {}
            }
        }
        Ok(out)
    }

    /// Decodes the options of a request as kube-apiserver's delete handlers do: from the body
    /// when there is one (its fields replace the query's entirely: the query is then not read),
    /// otherwise from the query.
    pub fn decode(
        query: &Query<'_>,
        body: Option<&Value>,
        request_group_version: Option<&str>,
    ) -> Result<Self, ApiError> {
        match body {
            Some(body) => Self::from_body(body, request_group_version),
            None => Ok(Self::from_query(query)?),
        }
    }

    /// `ValidateDeleteOptions`.
    pub fn validate(&self) -> Vec<FieldError> {
        validate_delete_options(self)
    }

    /// Decodes ([`DeleteOptions::decode`]) and validates (422 `Invalid` of `DeleteOptions`) the
    /// options of a request. As kube-apiserver without the AllowUnsafeMalformedObjectDeletion
    /// feature, `ignoreStoreReadErrorWithClusterBreakingPotential` is dropped first.
    pub fn parse(
        query: &Query<'_>,
        body: Option<&Value>,
        request_group_version: Option<&str>,
    ) -> Result<Self, ApiError> {
        let mut options = Self::decode(query, body, request_group_version)?;
        options.ignore_store_read_error_with_cluster_breaking_potential = None;
        check("DeleteOptions", options.validate())?;
        Ok(options)
    }

    /// The `propagationPolicy`, if it is one Kubernetes knows.
    pub fn propagation(&self) -> Option<DeletionPropagation> {
        self.propagation_policy
            .as_deref()
            .and_then(DeletionPropagation::parse)
    }

    /// Whether the request is a dry run (any `dryRun` value; validation allows only `All`).
    pub fn is_dry_run(&self) -> bool {
        !self.dry_run.is_empty()
    }
}

/// `ValidateDeleteOptions`: `orphanDependents` and `propagationPolicy` are exclusive, the
/// policy is known, `dryRun` is `All`, and `ignoreStoreReadErrorWithClusterBreakingPotential`
/// stands alone.
pub fn validate_delete_options(options: &DeleteOptions) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let policy = options.propagation_policy.as_deref();
    if let Some(p) = policy
        && options.orphan_dependents.is_some()
    {
        errs.push(FieldError::new(
            FieldErrorType::Invalid,
            "propagationPolicy",
            Some(quote(p)),
            "orphanDependents and deletionPropagation cannot be both set",
        ));
    }
    if let Some(p) = policy
        && DeletionPropagation::parse(p).is_none()
    {
        errs.push(FieldError::new(
            FieldErrorType::NotSupported,
            "propagationPolicy",
            Some(quote(p)),
            "supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
        ));
    }
    errs.extend(validate_dry_run("dryRun", &options.dry_run));
    if options
        .ignore_store_read_error_with_cluster_breaking_potential
        .unwrap_or(false)
    {
        let path = "ignoreStoreReadErrorWithClusterBreakingPotential";
        let set = [
            (!options.dry_run.is_empty(), ".dryRun"),
            (policy.is_some(), ".propagationPolicy"),
            (options.orphan_dependents.is_some(), ".orphanDependents"),
            (
                options.grace_period_seconds.is_some(),
                ".gracePeriodSeconds",
            ),
            (options.preconditions.is_some(), ".preconditions"),
        ];
        for (_, what) in set.iter().filter(|(is_set, _)| *is_set) {
            errs.push(FieldError::new(
                FieldErrorType::Invalid,
                path,
                Some("true".to_string()),
                format!("cannot be set together with {what}"),
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(raw: &str) -> Query<'_> {
        Query::parse(raw)
    }

    fn strings(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn list_errors(raw: &str) -> Vec<String> {
        strings(&ListOptions::from_query(&q(raw)).unwrap().validate(true))
    }

    #[test]
    fn list_options_decode_every_field() {
        let o = ListOptions::from_query(&q(
            "labelSelector=app%3Dweb&fieldSelector=metadata.name%3Dx&watch=1&allowWatchBookmarks=true\
             &resourceVersion=5&resourceVersionMatch=NotOlderThan&timeoutSeconds=30&limit=10\
             &continue=tok&sendInitialEvents=true&pretty=1",
        ))
        .unwrap();
        assert_eq!(
            o,
            ListOptions {
                label_selector: "app=web".into(),
                field_selector: "metadata.name=x".into(),
                watch: true,
                allow_watch_bookmarks: true,
                resource_version: "5".into(),
                resource_version_match: "NotOlderThan".into(),
                timeout_seconds: Some(30),
                limit: 10,
                continue_: "tok".into(),
                send_initial_events: Some(true),
            }
        );
        assert_eq!(
            o.resource_version_match(),
            Some(ResourceVersionMatch::NotOlderThan)
        );
        assert_eq!(
            serde_json::to_value(&o).unwrap(),
            json!({"labelSelector": "app=web", "fieldSelector": "metadata.name=x", "watch": true,
                "allowWatchBookmarks": true, "resourceVersion": "5",
                "resourceVersionMatch": "NotOlderThan", "timeoutSeconds": 30, "limit": 10,
                "continue": "tok", "sendInitialEvents": true})
        );
        assert_eq!(
            serde_json::to_value(ListOptions::default()).unwrap(),
            json!({})
        );
        // Booleans follow the parameter codec: only `0` and `false` are false.
        let o =
            ListOptions::from_query(&q("watch=f&allowWatchBookmarks=FALSE&sendInitialEvents=0"))
                .unwrap();
        assert!(o.watch);
        assert!(!o.allow_watch_bookmarks);
        assert_eq!(o.send_initial_events, Some(false));
    }

    #[test]
    fn list_options_malformed_numbers_are_bad_requests() {
        let err = ListOptions::parse(&q("limit=ten"), true).unwrap_err();
        assert_eq!(err.code(), 400);
        assert_eq!(
            err.message(),
            "strconv.ParseInt: parsing \"ten\": invalid syntax"
        );
        let err = ListOptions::parse(&q("timeoutSeconds=1.5&limit=x"), true).unwrap_err();
        // `timeoutSeconds` comes before `limit` in the Go struct.
        assert_eq!(
            err.message(),
            "strconv.ParseInt: parsing \"1.5\": invalid syntax"
        );
        let err = ListOptions::parse(&q("limit=99999999999999999999"), true).unwrap_err();
        assert_eq!(
            err.message(),
            "strconv.ParseInt: parsing \"99999999999999999999\": value out of range"
        );
    }

    #[test]
    fn list_options_selectors_are_bad_requests() {
        let err = ListOptions::parse(&q("labelSelector=a%20b"), true).unwrap_err();
        assert_eq!(err.code(), 400);
        assert_eq!(
            err.message(),
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
        );
        let err = ListOptions::parse(&q("fieldSelector=foo"), true).unwrap_err();
        assert_eq!(
            err.message(),
            "invalid selector: 'foo'; can't understand 'foo'"
        );
        let parsed = ListOptions::parse(
            &q("labelSelector=app%3Dweb&fieldSelector=metadata.name%3Dx"),
            true,
        )
        .unwrap();
        assert_eq!(parsed.labels.to_string(), "app=web");
        assert_eq!(parsed.fields.exact("metadata.name"), Some("x"));
    }

    #[test]
    fn list_validation_messages() {
        assert_eq!(
            list_errors("resourceVersionMatch=Exact"),
            [
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
            ]
        );
        assert_eq!(
            list_errors("resourceVersionMatch=NotOlderThan&resourceVersion=5&continue=c"),
            [
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided"
            ]
        );
        assert_eq!(
            list_errors("resourceVersionMatch=Newest&resourceVersion=5"),
            [
                "resourceVersionMatch: Unsupported value: \"Newest\": supported values: \"Exact\", \"NotOlderThan\", \"\""
            ]
        );
        assert_eq!(
            list_errors("resourceVersionMatch=Exact&resourceVersion=0"),
            [
                "resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""
            ]
        );
        assert_eq!(
            list_errors("sendInitialEvents=true"),
            ["sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"]
        );
        assert_eq!(
            list_errors("resourceVersionMatch=Bad&continue=c&sendInitialEvents=false"),
            [
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided",
                "resourceVersionMatch: Unsupported value: \"Bad\": supported values: \"Exact\", \"NotOlderThan\", \"\"",
                "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list",
            ]
        );
        assert!(list_errors("resourceVersionMatch=Exact&resourceVersion=7").is_empty());
        assert!(list_errors("resourceVersionMatch=NotOlderThan&resourceVersion=0").is_empty());
        let err = ListOptions::parse(&q("resourceVersionMatch=Exact"), true).unwrap_err();
        assert_eq!(err.code(), 422);
        assert_eq!(
            err.message(),
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
        );
    }

    #[test]
    fn watch_validation_messages() {
        assert!(list_errors(
            "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
        )
        .is_empty());
        // Kubernetes has no rule tying sendInitialEvents to allowWatchBookmarks.
        assert!(
            list_errors("watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan")
                .is_empty()
        );
        assert_eq!(
            list_errors("watch=1&sendInitialEvents=false"),
            [
                "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
            ]
        );
        assert_eq!(
            list_errors("watch=1&resourceVersionMatch=NotOlderThan"),
            [
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"
            ]
        );
        assert_eq!(
            list_errors("watch=1&sendInitialEvents=1&resourceVersionMatch=Exact&continue=c"),
            [
                "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                "resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"",
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided",
            ]
        );
        let o = ListOptions::from_query(&q(
            "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
        ))
        .unwrap();
        assert_eq!(
            strings(&o.validate(false)),
            [
                "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"
            ]
        );
        // A watch may carry list-only options Kubernetes ignores there.
        assert!(list_errors("watch=1&resourceVersion=0").is_empty());
    }

    #[test]
    fn list_defaults_turn_legacy_watches_into_watch_lists() {
        let mut o = ListOptions::from_query(&q("watch=1")).unwrap();
        o.set_defaults(true);
        assert_eq!(o.send_initial_events, Some(true));
        assert_eq!(o.resource_version_match, "NotOlderThan");
        assert!(o.validate(true).is_empty());
        for raw in [
            "watch=1&resourceVersion=5",
            "watch=1&sendInitialEvents=false",
            "limit=1",
        ] {
            let mut o = ListOptions::from_query(&q(raw)).unwrap();
            let before = o.clone();
            o.set_defaults(true);
            assert_eq!(o, before, "{raw}");
        }
        let mut o = ListOptions::from_query(&q("watch=1&resourceVersion=0")).unwrap();
        o.set_defaults(false);
        assert_eq!(o.send_initial_events, None);
    }

    #[test]
    fn get_options() {
        assert_eq!(
            GetOptions::from_query(&q("resourceVersion=0&other=x")).unwrap(),
            GetOptions {
                resource_version: "0".into()
            }
        );
    }

    #[test]
    fn dry_run_messages() {
        let ok = CreateOptions::parse(&q("dryRun=All")).unwrap();
        assert!(ok.is_dry_run());
        assert!(!CreateOptions::parse(&q("")).unwrap().is_dry_run());
        let err = CreateOptions::parse(&q("dryRun=x")).unwrap_err();
        assert_eq!(err.code(), 422);
        assert_eq!(
            err.message(),
            "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: []string{\"x\"}: supported values: \"All\""
        );
        let err = UpdateOptions::parse(&q("dryRun=All&dryRun=")).unwrap_err();
        assert_eq!(
            err.message(),
            "UpdateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: []string{\"All\", \"\"}: supported values: \"All\""
        );
        let details = err.details().unwrap();
        assert_eq!(details.causes[0].field, "dryRun");
        assert_eq!(details.causes[0].reason, "FieldValueNotSupported");
        assert!(
            UpdateOptions::parse(&q("dryRun=All&dryRun=All"))
                .unwrap()
                .is_dry_run()
        );
    }

    #[test]
    fn field_manager_messages() {
        assert!(validate_field_manager(&"m".repeat(128), "fieldManager").is_empty());
        assert!(validate_field_manager("kubectl-client-side-apply é", "fieldManager").is_empty());
        assert_eq!(
            strings(&validate_field_manager(&"m".repeat(129), "fieldManager")),
            ["fieldManager: Too long: may not be more than 128 bytes"]
        );
        // Bytes, not characters: 65 two-byte characters are too long.
        assert_eq!(
            validate_field_manager(&"é".repeat(65), "fieldManager").len(),
            1
        );
        assert_eq!(
            strings(&validate_field_manager("a\u{7}b\tc", "fieldManager")),
            [
                "fieldManager: Invalid value: \"a\\ab\\tc\": invalid character U+0007 (at position 1)",
                "fieldManager: Invalid value: \"a\\ab\\tc\": invalid character U+0009 (at position 3)",
            ]
        );
        assert_eq!(
            strings(&validate_field_manager("é\u{200b}", "fieldManager")),
            ["fieldManager: Invalid value: \"é\\u200b\": invalid character U+200B (at position 2)"]
        );
        let err =
            CreateOptions::parse(&q(&format!("fieldManager={}", "m".repeat(129)))).unwrap_err();
        assert_eq!(
            err.message(),
            "CreateOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes"
        );
    }

    #[test]
    fn field_validation_messages() {
        for (raw, want) in [
            ("", FieldValidation::Warn),
            ("fieldValidation=", FieldValidation::Warn),
            ("fieldValidation=Warn", FieldValidation::Warn),
            ("fieldValidation=Ignore", FieldValidation::Ignore),
            ("fieldValidation=Strict", FieldValidation::Strict),
        ] {
            let o = CreateOptions::parse(&q(raw)).unwrap();
            assert_eq!(o.field_validation_directive(), want, "{raw}");
        }
        let err = UpdateOptions::parse(&q("fieldValidation=strict")).unwrap_err();
        assert_eq!(err.code(), 422);
        assert_eq!(
            err.message(),
            "UpdateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"strict\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
        );
        assert_eq!(FieldValidation::Strict.as_str(), "Strict");
    }

    #[test]
    fn patch_options_force_and_apply() {
        let o = PatchOptions::parse(&q("fieldManager=me&force=true"), true).unwrap();
        assert!(o.is_force());
        assert!(
            !PatchOptions::parse(&q("fieldManager=me"), true)
                .unwrap()
                .is_force()
        );
        assert!(
            !PatchOptions::parse(&q("fieldManager=me&force=false"), true)
                .unwrap()
                .is_force()
        );
        let err = PatchOptions::parse(&q("force=false"), false).unwrap_err();
        assert_eq!(
            err.message(),
            "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
        );
        let err = PatchOptions::parse(&q("force=true"), true).unwrap_err();
        assert_eq!(
            err.message(),
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
        );
        let err = PatchOptions::parse(
            &q("force&dryRun=Some&fieldValidation=x&fieldManager=a%00"),
            false,
        )
        .unwrap_err();
        assert_eq!(
            err.message(),
            "PatchOptions.meta.k8s.io \"\" is invalid: [force: Forbidden: may not be specified for non-apply patch, fieldManager: Invalid value: \"a\\x00\": invalid character U+0000 (at position 1), dryRun: Unsupported value: []string{\"Some\"}: supported values: \"All\", fieldValidation: Unsupported value: \"x\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"]"
        );
        assert_eq!(err.details().unwrap().causes.len(), 4);
    }

    #[test]
    fn delete_options_from_the_query() {
        let o = DeleteOptions::from_query(&q(
            "gracePeriodSeconds=0&orphanDependents=false&dryRun=All&propagationPolicy=Foreground&preconditions=x",
        ))
        .unwrap();
        assert_eq!(
            o,
            DeleteOptions {
                grace_period_seconds: Some(0),
                orphan_dependents: Some(false),
                propagation_policy: Some("Foreground".into()),
                dry_run: vec!["All".into()],
                ..DeleteOptions::default()
            }
        );
        assert_eq!(o.propagation(), Some(DeletionPropagation::Foreground));
        assert!(o.is_dry_run());
        let err = DeleteOptions::parse(&q("gracePeriodSeconds=soon"), None, None).unwrap_err();
        assert_eq!(err.code(), 400);
        assert_eq!(
            err.message(),
            "strconv.ParseInt: parsing \"soon\": invalid syntax"
        );
    }

    #[test]
    fn delete_validation_messages() {
        let err = DeleteOptions::parse(&q("propagationPolicy=Later"), None, None).unwrap_err();
        assert_eq!(err.code(), 422);
        assert_eq!(
            err.message(),
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Later\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
        );
        // The rule holds for the query too, not only for bodies.
        let err = DeleteOptions::parse(
            &q("propagationPolicy=Orphan&orphanDependents=true&dryRun=x"),
            None,
            None,
        )
        .unwrap_err();
        assert_eq!(
            err.message(),
            "DeleteOptions.meta.k8s.io \"\" is invalid: [propagationPolicy: Invalid value: \"Orphan\": orphanDependents and deletionPropagation cannot be both set, dryRun: Unsupported value: []string{\"x\"}: supported values: \"All\"]"
        );
        let o = DeleteOptions {
            ignore_store_read_error_with_cluster_breaking_potential: Some(true),
            grace_period_seconds: Some(1),
            preconditions: Some(Preconditions::default()),
            dry_run: vec!["All".into()],
            orphan_dependents: Some(true),
            propagation_policy: None,
        };
        assert_eq!(
            strings(&o.validate()),
            [
                "ignoreStoreReadErrorWithClusterBreakingPotential: Invalid value: true: cannot be set together with .dryRun",
                "ignoreStoreReadErrorWithClusterBreakingPotential: Invalid value: true: cannot be set together with .orphanDependents",
                "ignoreStoreReadErrorWithClusterBreakingPotential: Invalid value: true: cannot be set together with .gracePeriodSeconds",
                "ignoreStoreReadErrorWithClusterBreakingPotential: Invalid value: true: cannot be set together with .preconditions",
            ]
        );
        // Without the AllowUnsafeMalformedObjectDeletion feature the option is dropped.
        let o = DeleteOptions::parse(
            &q("ignoreStoreReadErrorWithClusterBreakingPotential=true&dryRun=All"),
            None,
            None,
        )
        .unwrap();
        assert_eq!(
            o.ignore_store_read_error_with_cluster_breaking_potential,
            None
        );
    }

    #[test]
    fn delete_options_from_a_body() {
        let body = json!({"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions",
            "gracePeriodSeconds": 5, "preconditions": {"uid": "u1", "resourceVersion": "9"},
            "propagationPolicy": "Background", "dryRun": ["All"], "unknown": {"x": 1}});
        let o = DeleteOptions::from_body(&body, None).unwrap();
        assert_eq!(
            o,
            DeleteOptions {
                grace_period_seconds: Some(5),
                preconditions: Some(Preconditions {
                    uid: Some("u1".into()),
                    resource_version: Some("9".into()),
                }),
                propagation_policy: Some("Background".into()),
                dry_run: vec!["All".into()],
                ..DeleteOptions::default()
            }
        );
        // The body is the DeleteOptions' JSON.
        assert_eq!(
            serde_json::from_value::<DeleteOptions>(body.clone()).unwrap(),
            o
        );
        for av in ["", "v1", "meta.k8s.io/v1", "meta.k8s.io/v1beta1"] {
            assert!(
                DeleteOptions::from_body(&json!({"apiVersion": av, "kind": "DeleteOptions"}), None)
                    .is_ok(),
                "{av}"
            );
        }
        assert!(DeleteOptions::from_body(&json!({"apiVersion": "v1"}), None).is_ok());
        assert!(
            DeleteOptions::from_body(
                &json!({"apiVersion": "example.dev/v1"}),
                Some("example.dev/v1")
            )
            .is_ok()
        );
        assert_eq!(
            DeleteOptions::from_body(&json!(null), None).unwrap(),
            DeleteOptions::default()
        );
        let err = DeleteOptions::from_body(&json!({"apiVersion": "apps/v1"}), None).unwrap_err();
        assert_eq!(err.code(), 400);
        assert_eq!(
            err.message(),
            "the body of the request was in an unknown format - apps/v1, Kind=DeleteOptions is not a DeleteOptions"
        );
        let err = DeleteOptions::from_body(&json!({"apiVersion": "v1", "kind": "Pod"}), None)
            .unwrap_err();
        assert_eq!(
            err.message(),
            "the body of the request was in an unknown format - v1, Kind=Pod is not a DeleteOptions"
        );
    }

    #[test]
    fn delete_body_type_errors_are_go_json_errors() {
        let err = |body: Value| {
            DeleteOptions::from_body(&body, None)
                .unwrap_err()
                .message()
                .to_string()
        };
        assert_eq!(
            err(json!({"gracePeriodSeconds": "5"})),
            "json: cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds of type int64"
        );
        assert_eq!(
            err(json!({"gracePeriodSeconds": 1.5})),
            "json: cannot unmarshal number 1.5 into Go struct field DeleteOptions.gracePeriodSeconds of type int64"
        );
        assert_eq!(
            err(json!({"orphanDependents": "yes"})),
            "json: cannot unmarshal string into Go struct field DeleteOptions.orphanDependents of type bool"
        );
        assert_eq!(
            err(json!({"propagationPolicy": 1})),
            "json: cannot unmarshal number into Go struct field DeleteOptions.propagationPolicy of type v1.DeletionPropagation"
        );
        assert_eq!(
            err(json!({"dryRun": "All"})),
            "json: cannot unmarshal string into Go struct field DeleteOptions.dryRun of type []string"
        );
        assert_eq!(
            err(json!({"dryRun": ["All", 1]})),
            "json: cannot unmarshal number into Go struct field DeleteOptions.dryRun of type string"
        );
        assert_eq!(
            err(json!({"preconditions": []})),
            "json: cannot unmarshal array into Go struct field DeleteOptions.preconditions of type v1.Preconditions"
        );
        assert_eq!(
            err(json!({"preconditions": {"uid": 7}})),
            "json: cannot unmarshal number into Go struct field Preconditions.preconditions.uid of type types.UID"
        );
        assert_eq!(
            err(json!({"apiVersion": 1})),
            "couldn't get version/kind; json parse error: json: cannot unmarshal number into Go struct field .apiVersion of type string"
        );
        assert_eq!(
            err(json!([1])),
            "json: cannot unmarshal array into Go value of type v1.DeleteOptions"
        );
        // The first problem in document order is reported.
        assert_eq!(
            err(json!({"orphanDependents": 1, "gracePeriodSeconds": "x"})),
            "json: cannot unmarshal number into Go struct field DeleteOptions.orphanDependents of type bool"
        );
        // Null members are unset, as in Go.
        let o = DeleteOptions::from_body(
            &json!({"gracePeriodSeconds": null, "preconditions": {}, "dryRun": null}),
            None,
        )
        .unwrap();
        assert_eq!(o.grace_period_seconds, None);
        assert_eq!(o.preconditions, Some(Preconditions::default()));
    }

    #[test]
    fn a_delete_body_replaces_the_query() {
        let query = q("dryRun=All&propagationPolicy=Nope&gracePeriodSeconds=x");
        let o = DeleteOptions::parse(&query, Some(&json!({"propagationPolicy": "Orphan"})), None)
            .unwrap();
        assert_eq!(o.propagation(), Some(DeletionPropagation::Orphan));
        assert!(!o.is_dry_run());
        assert_eq!(o.grace_period_seconds, None);
        let err = DeleteOptions::parse(
            &q(""),
            Some(&json!({"propagationPolicy": "Orphan", "orphanDependents": false})),
            None,
        )
        .unwrap_err();
        assert_eq!(
            err.message(),
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"Orphan\": orphanDependents and deletionPropagation cannot be both set"
        );
    }
}
