//! Create-only review kinds, answered without storage: access reviews through the
//! authorizer, `SelfSubjectReview` with the caller's identity, `TokenReview` (no token
//! authenticator is configured, so tokens are reported unauthenticated).

use std::borrow::Cow;
use std::collections::BTreeMap;

use apimachinery::status::ApiError;
use axum::body::Body;
use http::{Response, StatusCode};
use serde_json::{Value, json};

use super::ApiContext;
use super::request::RequestContext;
use super::response;
use crate::authn::{MASTERS_GROUP, UserInfo};
use crate::authz::{Attributes, Decision};

fn attributes_from_spec(user: UserInfo, spec: &Value) -> Attributes<'static> {
    let s =
        |v: &Value, k: &str| Cow::Owned(v.get(k).and_then(Value::as_str).unwrap_or("").to_string());
    if let Some(r) = spec.get("resourceAttributes") {
        Attributes {
            user: Cow::Owned(user),
            verb: s(r, "verb"),
            is_resource_request: true,
            path: Cow::Borrowed(""),
            namespace: s(r, "namespace"),
            api_group: s(r, "group"),
            api_version: s(r, "version"),
            resource: s(r, "resource"),
            subresource: s(r, "subresource"),
            name: s(r, "name"),
        }
    } else {
        let n = spec
            .get("nonResourceAttributes")
            .cloned()
            .unwrap_or(json!({}));
        Attributes {
            user: Cow::Owned(user),
            verb: s(&n, "verb"),
            is_resource_request: false,
            path: s(&n, "path"),
            ..Attributes::default()
        }
    }
}

fn user_from_spec(spec: &Value) -> UserInfo {
    let s = |k: &str| {
        spec.get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let groups = spec
        .get("groups")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let extra: BTreeMap<String, Vec<String>> = spec
        .get("extra")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_array()
                            .map(|a| {
                                a.iter()
                                    .filter_map(Value::as_str)
                                    .map(str::to_string)
                                    .collect()
                            })
                            .unwrap_or_default(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    UserInfo {
        name: s("user"),
        uid: s("uid"),
        groups,
        extra,
    }
}

fn access_status(rc: &RequestContext, attrs: &Attributes<'_>) -> Value {
    let Some(authz) = &rc.authorizer else {
        return json!({"allowed": false, "reason": "no authorizer is configured"});
    };
    let verdict = authz.0.authorize(attrs);
    let mut status = json!({"allowed": verdict.decision == Decision::Allow});
    if verdict.decision == Decision::Deny {
        status["denied"] = Value::Bool(true);
    }
    if !verdict.reason.is_empty() {
        status["reason"] = Value::from(verdict.reason);
    }
    status
}

fn user_info_json(user: &UserInfo) -> Value {
    let mut u = json!({"username": user.name, "groups": user.groups});
    if !user.uid.is_empty() {
        u["uid"] = Value::from(user.uid.clone());
    }
    if !user.extra.is_empty() {
        u["extra"] = json!(user.extra);
    }
    u
}

/// `POST` of a review kind.
pub async fn create(_ctx: &ApiContext, rc: RequestContext) -> Result<Response<Body>, ApiError> {
    let (mut obj, warnings) = rc.decode_object(None)?;
    let spec = obj.get("spec").cloned().unwrap_or(json!({}));
    let status = match rc.version_info.kind {
        "SelfSubjectAccessReview" => {
            let attrs = attributes_from_spec(rc.user.clone(), &spec);
            access_status(&rc, &attrs)
        }
        "SubjectAccessReview" => {
            let attrs = attributes_from_spec(user_from_spec(&spec), &spec);
            access_status(&rc, &attrs)
        }
        "LocalSubjectAccessReview" => {
            let ns = spec
                .pointer("/resourceAttributes/namespace")
                .and_then(Value::as_str)
                .unwrap_or("");
            if spec.get("resourceAttributes").is_none() || ns != rc.info.namespace {
                let err = apimachinery::errors::FieldError::invalid(
                    "spec.resourceAttributes.namespace",
                    &Value::from(ns),
                    "must match metadata.namespace",
                );
                return Err(ApiError::invalid(
                    rc.version_info.group,
                    "LocalSubjectAccessReview",
                    "",
                    &[err],
                ));
            }
            let attrs = attributes_from_spec(user_from_spec(&spec), &spec);
            access_status(&rc, &attrs)
        }
        "SelfSubjectRulesReview" => {
            if rc.user.in_group(MASTERS_GROUP) {
                json!({"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}], "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}], "incomplete": false})
            } else {
                json!({"resourceRules": [], "nonResourceRules": [], "incomplete": true, "evaluationError": "rules are not enumerable for this user"})
            }
        }
        "SelfSubjectReview" => json!({"userInfo": user_info_json(&rc.user)}),
        "TokenReview" => {
            json!({"authenticated": false, "user": {}, "error": "no token authenticator is configured"})
        }
        other => {
            return Err(ApiError::method_not_supported(
                &rc.store.resource,
                &format!("create of {other}"),
            ));
        }
    };
    if let Some(m) = obj.as_object_mut() {
        m.insert("status".into(), status);
        let meta = m.entry("metadata").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert("creationTimestamp".into(), Value::Null);
            meta.remove("managedFields");
        }
    }
    response::object(&rc, StatusCode::CREATED, obj, &warnings)
}
