//! Query parameters shared by the handlers: `dryRun`, `fieldManager`, list options and
//! their validation.

use apimachinery::errors::{FieldError, FieldErrorType};
use apimachinery::selectors::{FieldSelector, LabelSelector};
use apimachinery::status::{ApiError, StatusReason};
use serde_json::Value;
use storage::interface::{ListOptions, Predicate, ResourceVersionMatch};

use crate::apply::managed::MAX_MANAGER_LEN;
use crate::apply::manager_from_user_agent;

/// Parses `dryRun`: absent or `All`; anything else is 422.
pub fn dry_run(value: Option<&str>) -> Result<bool, ApiError> {
    match value {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(other) => Err(ApiError::new(
            422,
            StatusReason::Invalid,
            format!(
                "Invalid dry run value: dryRun: Unsupported value: {other:?}: supported values: \"All\""
            ),
            None,
        )),
    }
}

/// The field manager of a write; `fieldManager` must be at most 128 printable characters.
pub fn field_manager(value: Option<&str>, user_agent: Option<&str>) -> Result<String, ApiError> {
    match value {
        Some(m) if !m.is_empty() => {
            if m.chars().count() > MAX_MANAGER_LEN {
                return Err(invalid_options(
                    "fieldManager",
                    FieldError::new(
                        FieldErrorType::TooLong,
                        "fieldManager",
                        None,
                        format!("may not be longer than {MAX_MANAGER_LEN} characters"),
                    ),
                ));
            }
            if m.chars().any(|c| c.is_control()) {
                return Err(invalid_options(
                    "fieldManager",
                    FieldError::invalid(
                        "fieldManager",
                        &Value::from(m),
                        "may only contain printable characters",
                    ),
                ));
            }
            Ok(m.to_string())
        }
        _ => Ok(manager_from_user_agent(user_agent.unwrap_or(""))),
    }
}

fn invalid_options(_field: &str, err: FieldError) -> ApiError {
    ApiError::invalid("meta.k8s.io", "PatchOptions", "", &[err])
}

/// Parses a Go-style boolean query value.
pub fn go_bool(value: Option<&str>) -> Option<bool> {
    match value? {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

/// The list and watch parameters of a request.
#[derive(Clone, Debug, Default)]
pub struct ListParams {
    /// `labelSelector`.
    pub labels: LabelSelector,
    /// `fieldSelector`.
    pub fields: FieldSelector,
    /// `resourceVersion`.
    pub resource_version: String,
    /// `resourceVersionMatch`.
    pub resource_version_match: Option<ResourceVersionMatch>,
    /// `limit`.
    pub limit: i64,
    /// `continue`.
    pub continue_token: String,
    /// `allowWatchBookmarks`.
    pub allow_bookmarks: bool,
    /// `sendInitialEvents`.
    pub send_initial_events: Option<bool>,
    /// `timeoutSeconds`.
    pub timeout_seconds: Option<u64>,
}

impl ListParams {
    /// Parses and validates the list options; `watch` says whether this is a watch.
    /// `field_labels` are the kind's selectable fields.
    pub fn parse(
        q: &impl Fn(&str) -> Option<String>,
        watch: bool,
        field_labels: &[String],
    ) -> Result<Self, ApiError> {
        let labels = LabelSelector::parse(&q("labelSelector").unwrap_or_default())
            .map_err(|e| ApiError::bad_request(e.0))?;
        let fields = FieldSelector::parse(&q("fieldSelector").unwrap_or_default())
            .map_err(|e| ApiError::bad_request(e.0))?;
        let supported: Vec<&str> = field_labels.iter().map(String::as_str).collect();
        fields
            .check_supported(&supported)
            .map_err(|e| ApiError::bad_request(e.0))?;
        let resource_version = q("resourceVersion").unwrap_or_default();
        let rvm = q("resourceVersionMatch").unwrap_or_default();
        let continue_token = q("continue").unwrap_or_default();
        let limit = match q("limit") {
            Some(l) if !l.is_empty() => l
                .parse::<i64>()
                .map_err(|_| ApiError::bad_request(format!("invalid limit {l:?}")))?
                .max(0),
            _ => 0,
        };
        let send_initial_events = go_bool(q("sendInitialEvents").as_deref());
        let allow_bookmarks = go_bool(q("allowWatchBookmarks").as_deref()).unwrap_or(false);
        let mut errs = Vec::new();
        let resource_version_match = match rvm.as_str() {
            "" => None,
            "NotOlderThan" => Some(ResourceVersionMatch::NotOlderThan),
            "Exact" => Some(ResourceVersionMatch::Exact),
            other => {
                errs.push(FieldError::new(
                    FieldErrorType::NotSupported,
                    "resourceVersionMatch",
                    Some(format!("{other:?}")),
                    "supported values: \"Exact\", \"NotOlderThan\", \"\"",
                ));
                None
            }
        };
        if !resource_version.is_empty()
            && resource_version != "0"
            && resource_version.parse::<u64>().is_err()
        {
            return Err(ApiError::bad_request(format!(
                "invalid resource version {resource_version:?}"
            )));
        }
        if watch {
            if send_initial_events.is_some() {
                if send_initial_events == Some(true)
                    && resource_version_match != Some(ResourceVersionMatch::NotOlderThan)
                {
                    errs.push(FieldError::forbidden(
                        "resourceVersionMatch",
                        "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                    ));
                }
                if send_initial_events == Some(true) && !allow_bookmarks {
                    errs.push(FieldError::new(
                        FieldErrorType::Forbidden,
                        "allowWatchBookmarks",
                        None,
                        "sendInitialEvents requires setting allowWatchBookmarks to true",
                    ));
                }
            } else if resource_version_match.is_some() {
                errs.push(FieldError::forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"));
            }
        } else {
            if send_initial_events.is_some() {
                errs.push(FieldError::forbidden(
                    "sendInitialEvents",
                    "sendInitialEvents is forbidden for list",
                ));
            }
            if let Some(m) = resource_version_match {
                if resource_version.is_empty() {
                    errs.push(FieldError::forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden unless resourceVersion is provided",
                    ));
                }
                if !continue_token.is_empty() {
                    errs.push(FieldError::forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden when continue is provided",
                    ));
                }
                if m == ResourceVersionMatch::Exact && resource_version == "0" {
                    errs.push(FieldError::forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                    ));
                }
            }
        }
        if !errs.is_empty() {
            return Err(ApiError::invalid("meta.k8s.io", "ListOptions", "", &errs));
        }
        let timeout_seconds = q("timeoutSeconds").and_then(|t| t.parse::<u64>().ok());
        Ok(Self {
            labels,
            fields,
            resource_version,
            resource_version_match,
            limit,
            continue_token,
            allow_bookmarks,
            send_initial_events,
            timeout_seconds,
        })
    }

    /// Whether any selector is set.
    pub fn filtered(&self) -> bool {
        !self.labels.is_empty() || !self.fields.is_empty()
    }

    /// The storage predicate of the selectors.
    pub fn predicate(&self) -> Predicate {
        if !self.filtered() {
            return Predicate::everything();
        }
        let labels = self.labels.clone();
        let fields = self.fields.clone();
        let mut p = Predicate::new(move |attrs| {
            labels.matches_with(|k| attrs.labels.get(k))
                && fields.requirements.iter().all(|r| {
                    let have = attrs.fields.get(&r.field).unwrap_or("");
                    match r.operator {
                        apimachinery::selectors::FieldOperator::Equals => have == r.value,
                        apimachinery::selectors::FieldOperator::NotEquals => have != r.value,
                    }
                })
        });
        p.label_selector = self.labels.to_string();
        p.field_selector = self.fields.to_string();
        p
    }

    /// The storage list options.
    pub fn storage_options(&self) -> ListOptions {
        ListOptions {
            resource_version: self.resource_version.clone(),
            resource_version_match: self.resource_version_match,
            predicate: self.predicate(),
            limit: self.limit,
            continue_token: self.continue_token.clone(),
            recursive: true,
            allow_bookmarks: self.allow_bookmarks,
            send_initial_events: self.send_initial_events,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(kk, _)| *kk == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn list_option_validation() {
        let labels = vec!["metadata.name".to_string()];
        let err = ListParams::parse(&q(&[("resourceVersionMatch", "Exact")]), false, &labels)
            .unwrap_err();
        assert_eq!(err.code(), 422);
        assert_eq!(
            err.message(),
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
        );
        let err =
            ListParams::parse(&q(&[("fieldSelector", "spec.x=1")]), false, &labels).unwrap_err();
        assert_eq!(err.message(), "field label not supported: spec.x");
        let ok = ListParams::parse(
            &q(&[
                ("sendInitialEvents", "true"),
                ("resourceVersionMatch", "NotOlderThan"),
                ("allowWatchBookmarks", "true"),
            ]),
            true,
            &labels,
        )
        .unwrap();
        assert_eq!(ok.send_initial_events, Some(true));
        assert_eq!(dry_run(Some("x")).unwrap_err().code(), 422);
        assert!(dry_run(Some("All")).unwrap());
    }
}
