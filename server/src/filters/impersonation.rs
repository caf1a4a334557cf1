//! Impersonation (Kubernetes' `WithImpersonation`): the `Impersonate-User`, `Impersonate-Group`,
//! `Impersonate-Uid` and `Impersonate-Extra-<key>` headers make a request run as another user.
//! Each impersonated attribute is authorized separately for the real user with the verb
//! `impersonate`: `users` (or `serviceaccounts` in the account's namespace for a
//! `system:serviceaccount:<ns>:<name>` user) and `groups` in the core group, `uids` and
//! `userextras/<key>` in `authentication.k8s.io`. The headers are removed before the handler
//! runs and the real user is kept as an [`Impersonator`] extension.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use apimachinery::GroupResource;
use apimachinery::status::ApiError;
use http::HeaderMap;

use super::ChainConfig;
use crate::authn::{ANONYMOUS_USER, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP, UserInfo};
use crate::authz::{Attributes, Decision};

/// The header naming the user to act as.
pub const USER_HEADER: &str = "impersonate-user";
/// The header naming a group to act as (repeatable).
pub const GROUP_HEADER: &str = "impersonate-group";
/// The header naming the uid to act as.
pub const UID_HEADER: &str = "impersonate-uid";
/// The prefix of the headers carrying extra attributes.
pub const EXTRA_HEADER_PREFIX: &str = "impersonate-extra-";

/// The user who really made a request that impersonates another, stored as a request
/// extension (the request's [`UserInfo`] is the impersonated user).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Impersonator(pub Arc<UserInfo>);

/// The service-account user name prefix.
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";
/// The group of every service account.
const SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";

/// One attribute a request asks to impersonate (Kubernetes builds an `ObjectReference` each).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    ServiceAccount { namespace: String, name: String },
    User(String),
    Group(String),
    Extra { key: String, value: String },
    Uid(String),
}

impl Target {
    /// The reference as Go's `%v` prints a `v1.ObjectReference` (Kind, Namespace, Name, UID,
    /// APIVersion, ResourceVersion, FieldPath), for the error message of a request without a
    /// user.
    fn go_format(&self) -> String {
        let (kind, namespace, name, api_version, field_path) = match self {
            Target::ServiceAccount { namespace, name } => {
                ("ServiceAccount", namespace.as_str(), name.as_str(), "", "")
            }
            Target::User(name) => ("User", "", name.as_str(), "", ""),
            Target::Group(name) => ("Group", "", name.as_str(), "", ""),
            Target::Extra { key, value } => (
                "UserExtra",
                "",
                value.as_str(),
                "authentication.k8s.io/v1",
                key.as_str(),
            ),
            Target::Uid(uid) => ("UID", "", uid.as_str(), "authentication.k8s.io/v1", ""),
        };
        format!("{{{kind} {namespace} {name}  {api_version}  {field_path}}}")
    }
}

/// Splits `system:serviceaccount:<ns>:<name>` (Kubernetes' `serviceaccount.SplitUsername`):
/// the namespace must be a DNS label and the name a DNS subdomain.
pub fn split_service_account(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix(SERVICE_ACCOUNT_PREFIX)?;
    let mut parts = rest.split(':');
    let (namespace, name) = (parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let ok = apimachinery::validation::is_dns1123_label(namespace).is_empty()
        && apimachinery::validation::is_dns1123_subdomain(name).is_empty();
    ok.then_some((namespace, name))
}

/// Go's `url.PathUnescape`, or the key as written when an escape is malformed (Kubernetes'
/// `unescapeExtraKey`).
fn unescape_extra_key(key: &str) -> String {
    let bytes = key.as_bytes();
    let valid = bytes.iter().enumerate().all(|(i, b)| {
        *b != b'%'
            || (bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    });
    if valid {
        crate::request_info::percent_decode_path(key).into_owned()
    } else {
        key.to_string()
    }
}

/// Reads the impersonation headers in Kubernetes' order: user, groups, extras, uid.
fn targets(headers: &HeaderMap) -> Result<Vec<Target>, ApiError> {
    let mut out = Vec::new();
    let text = |v: &http::HeaderValue| String::from_utf8_lossy(v.as_bytes()).into_owned();
    let user = headers.get(USER_HEADER).map(text).unwrap_or_default();
    let has_user = !user.is_empty();
    if has_user {
        out.push(match split_service_account(&user) {
            Some((namespace, name)) => Target::ServiceAccount {
                namespace: namespace.to_string(),
                name: name.to_string(),
            },
            None => Target::User(user),
        });
    }
    let mut others = false;
    for group in headers.get_all(GROUP_HEADER) {
        others = true;
        out.push(Target::Group(text(group)));
    }
    for (name, value) in headers {
        if let Some(key) = name.as_str().strip_prefix(EXTRA_HEADER_PREFIX) {
            others = true;
            out.push(Target::Extra {
                key: unescape_extra_key(key),
                value: text(value),
            });
        }
    }
    let uid = headers.get(UID_HEADER).map(text).unwrap_or_default();
    if !uid.is_empty() {
        others = true;
        out.push(Target::Uid(uid));
    }
    if others && !has_user {
        let list: Vec<String> = out.iter().map(Target::go_format).collect();
        return Err(ApiError::bad_request(format!(
            "requested [{}] without impersonating a user",
            list.join(" ")
        )));
    }
    Ok(out)
}

/// The authorization attributes of impersonating one target.
fn attributes<'a>(requestor: &'a UserInfo, target: &'a Target) -> Attributes<'a> {
    let (group, version, resource, subresource, namespace, name) = match target {
        Target::ServiceAccount { namespace, name } => {
            ("", "v1", "serviceaccounts", "", namespace.as_str(), name)
        }
        Target::User(name) => ("", "v1", "users", "", "", name),
        Target::Group(name) => ("", "v1", "groups", "", "", name),
        Target::Extra { key, value } => (
            "authentication.k8s.io",
            "v1",
            "userextras",
            key.as_str(),
            "",
            value,
        ),
        Target::Uid(uid) => ("authentication.k8s.io", "v1", "uids", "", "", uid),
    };
    Attributes {
        user: Cow::Borrowed(requestor),
        verb: Cow::Borrowed("impersonate"),
        is_resource_request: true,
        path: Cow::Borrowed(""),
        namespace: Cow::Borrowed(namespace),
        api_group: Cow::Borrowed(group),
        api_version: Cow::Borrowed(version),
        resource: Cow::Borrowed(resource),
        subresource: Cow::Borrowed(subresource),
        name: Cow::Borrowed(name.as_str()),
    }
}

/// Whether a request carries any impersonation header (cheap; checked on every request).
pub fn requested(headers: &HeaderMap) -> bool {
    headers.contains_key(USER_HEADER)
        || headers.contains_key(GROUP_HEADER)
        || headers.contains_key(UID_HEADER)
        || headers
            .keys()
            .any(|k| k.as_str().starts_with(EXTRA_HEADER_PREFIX))
}

/// Applies the impersonation headers: `Ok(None)` when there are none, `Ok(Some(user))` with the
/// user to act as once every attribute is authorized for `requestor` (the headers are then
/// removed), a 400 for groups, extras or a uid without a user, or the 403 of the first attribute
/// the authorizer does not allow.
pub fn impersonate(
    config: &ChainConfig,
    requestor: &UserInfo,
    headers: &mut HeaderMap,
) -> Result<Option<UserInfo>, ApiError> {
    if !requested(headers) {
        return Ok(None);
    }
    let targets = targets(headers)?;
    if targets.is_empty() {
        // Only empty user or uid headers: nothing is impersonated (Kubernetes ignores them).
        return Ok(None);
    }
    let groups_specified = headers.contains_key(GROUP_HEADER);
    let mut name = String::new();
    let mut uid = String::new();
    let mut groups: Vec<String> = Vec::new();
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for target in &targets {
        let attrs = attributes(requestor, target);
        let verdict = config.authorizer.authorize(&attrs);
        if verdict.decision != Decision::Allow {
            let mut message = attrs.forbidden_message();
            if !verdict.reason.is_empty() {
                message = format!("{message}: {}", verdict.reason);
            }
            let resource =
                GroupResource::new(attrs.api_group.to_string(), attrs.resource.to_string());
            return Err(ApiError::forbidden(&resource, &attrs.name, &message));
        }
        match target {
            Target::ServiceAccount {
                namespace,
                name: sa,
            } => {
                name = format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{sa}");
                if !groups_specified {
                    groups = vec![
                        SERVICE_ACCOUNTS_GROUP.to_string(),
                        format!("{SERVICE_ACCOUNTS_GROUP}:{namespace}"),
                    ];
                }
            }
            Target::User(user) => name = user.clone(),
            Target::Group(group) => groups.push(group.clone()),
            Target::Extra { key, value } => {
                extra.entry(key.clone()).or_default().push(value.clone())
            }
            Target::Uid(u) => uid = u.clone(),
        }
    }
    if name != ANONYMOUS_USER {
        let has_either = groups
            .iter()
            .any(|g| g == AUTHENTICATED_GROUP || g == UNAUTHENTICATED_GROUP);
        if !has_either {
            groups.push(AUTHENTICATED_GROUP.to_string());
        }
    } else if !groups.iter().any(|g| g == UNAUTHENTICATED_GROUP) {
        groups.push(UNAUTHENTICATED_GROUP.to_string());
    }
    headers.remove(USER_HEADER);
    headers.remove(GROUP_HEADER);
    headers.remove(UID_HEADER);
    let extras: Vec<_> = headers
        .keys()
        .filter(|k| k.as_str().starts_with(EXTRA_HEADER_PREFIX))
        .cloned()
        .collect();
    for k in extras {
        headers.remove(k);
    }
    Ok(Some(UserInfo {
        name,
        uid,
        groups,
        extra,
    }))
}
