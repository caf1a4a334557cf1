//! The parameters of operations: the type and description of every query parameter, the lists
//! of query parameters each verb takes, and the path parameters (`name`, `namespace`) and
//! `pretty` of a collection or item path.
//!
//! A parameter is written in the operation's dialect: with a `schema` in v3, with its `type`
//! inline in v2.

use serde_json::{Map, Value, json};

use super::operation::Ops;
use crate::emit::openapi::Dialect;

/// A parameter's type.
#[derive(Clone, Copy)]
enum P {
    Str,
    Int,
    Bool,
}

impl P {
    fn name(self) -> &'static str {
        match self {
            P::Str => "string",
            P::Int => "integer",
            P::Bool => "boolean",
        }
    }
}

impl Ops<'_> {
    fn param(&self, name: &str, location: &str, ty: P, description: &str) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), json!(name));
        m.insert("in".into(), json!(location));
        m.insert("description".into(), json!(description));
        if location == "path" {
            m.insert("required".into(), json!(true));
        }
        match self.dialect {
            Dialect::V3 => {
                m.insert(
                    "schema".into(),
                    json!({"type": ty.name(), "uniqueItems": true}),
                );
            }
            Dialect::V2 => {
                m.insert("type".into(), json!(ty.name()));
                m.insert("uniqueItems".into(), json!(true));
            }
        }
        Value::Object(m)
    }

    fn q(&self, name: &str) -> Value {
        let (ty, description) = match name {
            "allowWatchBookmarks" => (
                P::Bool,
                "Asks for BOOKMARK events in a watch; the server may send them or not.",
            ),
            "continue" => (
                P::Str,
                "The token of the next page of a chunked list, from the previous page's metadata.continue.",
            ),
            "dryRun" => (
                P::Str,
                "When present, the request is checked and answered but nothing is persisted. The only valid value is All.",
            ),
            "fieldManager" => (
                P::Str,
                "The name of the actor making the change, recorded in managedFields; at most 128 printable characters. Required for apply.",
            ),
            "fieldSelector" => (
                P::Str,
                "Restricts the objects returned by their fields, such as metadata.name=foo. Everything by default.",
            ),
            "fieldValidation" => (
                P::Str,
                "What to do with unknown or duplicate fields in the body: Ignore drops them, Warn (the default) drops them with a warning header each, Strict fails the request.",
            ),
            "force" => (
                P::Bool,
                "Apply only: take over fields owned by other managers instead of failing with a conflict.",
            ),
            "gracePeriodSeconds" => (
                P::Int,
                "Seconds before the object is deleted; zero deletes immediately. The kind's default when absent.",
            ),
            "ignoreStoreReadErrorWithClusterBreakingPotential" => (
                P::Bool,
                "Deletes an object that cannot be read from storage. Dangerous; requires extra permission.",
            ),
            "labelSelector" => (
                P::Str,
                "Restricts the objects returned by their labels, such as app=web,tier!=db. Everything by default.",
            ),
            "limit" => (
                P::Int,
                "The largest number of objects to return; more may follow, fetched with the continue token.",
            ),
            "orphanDependents" => (P::Bool, "Deprecated: use propagationPolicy."),
            "propagationPolicy" => (
                P::Str,
                "Whether and how dependents are garbage collected: Orphan, Background or Foreground.",
            ),
            "resourceVersion" => (
                P::Str,
                "Which version of the data to read: empty for the latest, 0 for any, or a version to read at or after (see resourceVersionMatch).",
            ),
            "resourceVersionMatch" => (
                P::Str,
                "How resourceVersion applies to a list: Exact or NotOlderThan.",
            ),
            "sendInitialEvents" => (
                P::Bool,
                "In a watch, first sends the current objects as ADDED events, then a bookmark annotated k8s.io/initial-events-end.",
            ),
            "timeoutSeconds" => (
                P::Int,
                "Ends a list or watch after this many seconds, regardless of activity.",
            ),
            "watch" => (
                P::Bool,
                "Streams changes (ADDED, MODIFIED, DELETED) instead of returning a list.",
            ),
            _ => (P::Str, ""),
        };
        self.param(name, "query", ty, description)
    }

    pub(super) fn qs(&self, names: &[&str]) -> Vec<Value> {
        names.iter().map(|n| self.q(n)).collect()
    }

    pub(super) fn path_params(&self, namespaced: bool, named: bool, kind: &str) -> Value {
        let mut params = Vec::new();
        if named {
            params.push(self.param("name", "path", P::Str, &format!("The name of the {kind}.")));
        }
        if namespaced {
            params.push(self.param("namespace", "path", P::Str, "The namespace of the objects."));
        }
        params.push(self.param(
            "pretty",
            "query",
            P::Str,
            "When true, the output is indented.",
        ));
        Value::Array(params)
    }
}

pub(super) const LIST_PARAMS: [&str; 10] = [
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
];
pub(super) const WRITE_PARAMS: [&str; 3] = ["dryRun", "fieldManager", "fieldValidation"];
pub(super) const PATCH_PARAMS: [&str; 4] = ["dryRun", "fieldManager", "fieldValidation", "force"];
pub(super) const DELETE_PARAMS: [&str; 5] = [
    "dryRun",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "orphanDependents",
    "propagationPolicy",
];
pub(super) const DELETE_COLLECTION_PARAMS: [&str; 14] = [
    "continue",
    "dryRun",
    "fieldSelector",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "labelSelector",
    "limit",
    "orphanDependents",
    "propagationPolicy",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
];
