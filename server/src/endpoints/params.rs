//! From the typed request options (`apimachinery::meta::options`, decoded from the query by
//! one decoder with Kubernetes' messages) to what the handlers and storage take: the list and
//! watch parameters with their selectors checked against the kind's field labels.

use apimachinery::meta::options::{ListOptions as ListQuery, ResourceVersionMatch as RvMatch};
use apimachinery::selectors::{FieldSelector, LabelSelector};
use apimachinery::status::ApiError;
use storage::interface::{ListOptions, Predicate, ResourceVersionMatch};

use super::scope::RequestScope;

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
    /// `limit` (0: none).
    pub limit: i64,
    /// `continue`.
    pub continue_token: String,
    /// `allowWatchBookmarks`.
    pub allow_bookmarks: bool,
    /// `sendInitialEvents`.
    pub send_initial_events: Option<bool>,
    /// `timeoutSeconds`, when given.
    pub timeout_seconds: Option<i64>,
}

impl ListParams {
    /// Decodes and validates the list options of a request (400 for malformed values and
    /// selectors, 422 for invalid combinations), checks the field selector against the kind's
    /// field labels (400) and the resourceVersion's form (400).
    pub fn parse(scope: &RequestScope) -> Result<Self, ApiError> {
        let parsed = ListQuery::parse(&scope.query, true)?;
        let labels: Vec<&str> = scope.kind.field_labels();
        parsed
            .fields
            .check_supported(&labels)
            .map_err(|e| ApiError::bad_request(e.0))?;
        let o = parsed.options;
        let rv = o.resource_version.clone();
        if !rv.is_empty() && rv != "0" && rv.parse::<u64>().is_err() {
            return Err(ApiError::bad_request(format!(
                "invalid resource version {rv:?}"
            )));
        }
        Ok(Self {
            labels: parsed.labels,
            fields: parsed.fields,
            resource_version: rv,
            resource_version_match: o.resource_version_match().map(|m| match m {
                RvMatch::NotOlderThan => ResourceVersionMatch::NotOlderThan,
                RvMatch::Exact => ResourceVersionMatch::Exact,
            }),
            limit: o.limit.max(0),
            continue_token: o.continue_,
            allow_bookmarks: o.allow_watch_bookmarks,
            send_initial_events: o.send_initial_events,
            timeout_seconds: o.timeout_seconds,
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

    /// The options a user's storage is given ([`crate::registry::rest_storage::ListOptions`])
    /// for a list or watch in `namespace`.
    pub fn rest_options(&self, namespace: &str) -> crate::registry::rest_storage::ListOptions {
        crate::registry::rest_storage::ListOptions {
            namespace: namespace.to_string(),
            labels: self.labels.clone(),
            fields: self.fields.clone(),
            resource_version: self.resource_version.clone(),
            resource_version_match: self.resource_version_match,
            limit: self.limit,
            continue_token: self.continue_token.clone(),
            allow_bookmarks: self.allow_bookmarks,
            send_initial_events: self.send_initial_events,
        }
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
