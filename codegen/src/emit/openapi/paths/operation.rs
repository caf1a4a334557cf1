//! One OpenAPI operation object, in either dialect: its request body (`requestBody` in v3, a
//! `body` parameter and `consumes` in v2), its responses with their media types (`produces` in
//! v2), its operation id and tag, and the `x-kubernetes-action` and
//! `x-kubernetes-group-version-kind` extensions.
//!
//! [`Ops`] carries what every operation of a group version shares; the media types of object,
//! list and patch bodies are here too.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::emit::openapi::Dialect;
use crate::model::{KindModel, VersionModel};

pub(super) const OBJECT_MEDIA: [&str; 3] = [
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];
pub(super) const LIST_MEDIA: [&str; 5] = [
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/json;stream=watch",
    "application/vnd.kubernetes.protobuf;stream=watch",
];

/// What an operation's parameters and bodies look like in a dialect.
pub(super) struct Ops<'a> {
    pub(super) dialect: Dialect,
    pub(super) version: &'a VersionModel,
    pub(super) tag: String,
    pub(super) id_prefix: String,
    /// The definition names of the body types of the kinds' `#[subresource]`s, by
    /// `group/version/Kind`.
    pub(super) foreign: &'a BTreeMap<String, String>,
}

/// The body of a request or response: a definition, with media types.
pub(super) struct Body<'m> {
    pub(super) schema: String,
    pub(super) media: &'m [&'m str],
}

impl Ops<'_> {
    fn schema_ref(&self, name: &str) -> Value {
        json!({ "$ref": format!("{}{name}", self.dialect.ref_prefix()) })
    }

    /// One operation.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn op(
        &self,
        id: &str,
        description: &str,
        action: &str,
        gvk: (&str, &str, &str),
        params: Vec<Value>,
        request: Option<Body<'_>>,
        responses: &[(&str, Option<&Body<'_>>)],
    ) -> Value {
        let mut op = Map::new();
        op.insert("description".into(), json!(description));
        op.insert("operationId".into(), json!(id));
        op.insert("tags".into(), json!([self.tag]));
        let mut params = params;
        match (self.dialect, &request) {
            (Dialect::V3, Some(body)) => {
                let content: Map<String, Value> = body
                    .media
                    .iter()
                    .map(|m| {
                        (
                            m.to_string(),
                            json!({"schema": self.schema_ref(&body.schema)}),
                        )
                    })
                    .collect();
                op.insert(
                    "requestBody".into(),
                    json!({"content": content, "required": true}),
                );
            }
            (Dialect::V2, Some(body)) => {
                params.insert(0, json!({"name": "body", "in": "body", "required": true, "schema": self.schema_ref(&body.schema)}));
                op.insert("consumes".into(), json!(body.media));
            }
            _ => {}
        }
        if !params.is_empty() {
            op.insert("parameters".into(), Value::Array(params));
        }
        let mut resp = Map::new();
        for (code, body) in responses {
            let description = match *code {
                "200" => "OK",
                "201" => "Created",
                "202" => "Accepted",
                _ => "Unauthorized",
            };
            let entry = match (self.dialect, body) {
                (Dialect::V3, Some(b)) => {
                    let content: Map<String, Value> = b
                        .media
                        .iter()
                        .map(|m| (m.to_string(), json!({"schema": self.schema_ref(&b.schema)})))
                        .collect();
                    json!({"description": description, "content": content})
                }
                (Dialect::V2, Some(b)) => {
                    json!({"description": description, "schema": self.schema_ref(&b.schema)})
                }
                _ => json!({"description": description}),
            };
            resp.insert(code.to_string(), entry);
        }
        resp.insert("401".into(), json!({"description": "Unauthorized"}));
        op.insert("responses".into(), Value::Object(resp));
        if self.dialect == Dialect::V2 {
            let produces: Vec<&str> = responses
                .iter()
                .find_map(|(_, b)| b.map(|b| b.media.to_vec()))
                .unwrap_or_default();
            op.insert("produces".into(), json!(produces));
            op.insert("schemes".into(), json!(["https"]));
        }
        op.insert("x-kubernetes-action".into(), json!(action));
        op.insert(
            "x-kubernetes-group-version-kind".into(),
            json!({"group": gvk.0, "kind": gvk.2, "version": gvk.1}),
        );
        Value::Object(op)
    }
}

/// The patch media types a kind accepts.
pub(super) fn patch_media(kind: &KindModel) -> Vec<&'static str> {
    let mut media = vec![
        "application/apply-patch+yaml",
        "application/json-patch+json",
        "application/merge-patch+json",
    ];
    if kind.strategic_merge_patch {
        media.push("application/strategic-merge-patch+json");
    }
    media
}
