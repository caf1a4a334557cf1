//! The OpenAPI documents of group versions other servers serve (an aggregator's APIServices),
//! merged into this server's as kube-aggregator merges them: `/openapi/v2` gains each remote
//! spec's paths under `/apis/<group>/<version>/` and the definitions they use (see
//! [`super::merge`] for conflicts), after the server's own and in the order of the remote
//! group versions' priorities; `/openapi/v3` lists each remote group version's document,
//! served at `/openapi/v3/apis/<group>/<version>` with the same `hash` query and `ETag` as the
//! server's own. A group version the source stops listing leaves both.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

use super::merge::{self, Spec};
use crate::genericserver::discovery::Priority;

/// One group version served by another server, as the OpenAPI documents show it.
///
/// ```
/// use std::sync::Arc;
/// use server::genericserver::discovery::Priority;
/// use server::genericserver::openapi::RemoteOpenApi;
///
/// let v2 = Arc::new(serde_json::json!({"swagger": "2.0", "paths": {}, "definitions": {}}));
/// let wardle = RemoteOpenApi {
///     group: "wardle.example.com".into(),
///     version: "v1alpha1".into(),
///     priority: Priority { group_priority_minimum: 2000, version_priority: 200 },
///     v2: Some(v2),
///     v3: Some(bytes::Bytes::from_static(br#"{"openapi":"3.0.0","paths":{}}"#)),
/// };
/// assert_eq!(wardle.v3_key(), "apis/wardle.example.com/v1alpha1");
/// ```
#[derive(Clone, Debug)]
pub struct RemoteOpenApi {
    /// The group (not empty).
    pub group: String,
    /// The version.
    pub version: String,
    /// Its APIService's priorities: remote specs merge into `/openapi/v2` by the highest
    /// `groupPriorityMinimum` of their group (descending), then by APIService name.
    pub priority: Priority,
    /// The remote server's whole `/openapi/v2` document, as fetched (one `Arc` may be shared
    /// by every group version of that server); `None` when none was fetched, and the group
    /// version then adds nothing to `/openapi/v2`.
    pub v2: Option<Arc<Value>>,
    /// The remote server's OpenAPI v3 document of `apis/<group>/<version>` (JSON), served as
    /// fetched; `None` when none was fetched, and the group version is then not listed.
    pub v3: Option<Bytes>,
}

impl RemoteOpenApi {
    /// The `/openapi/v3` key of the group version: `apis/<group>/<version>`.
    pub fn v3_key(&self) -> String {
        format!("apis/{}/{}", self.group, self.version)
    }

    fn apiservice_name(&self) -> String {
        format!("{}.{}", self.version, self.group)
    }
}

/// Documents of group versions served elsewhere, merged into the server's own: the documents
/// are built again on the first OpenAPI request after the generation moves.
pub trait RemoteOpenApiSource: Send + Sync + 'static {
    /// A number that increases whenever the documents change.
    fn generation(&self) -> u64;

    /// The remote group versions now.
    fn documents(&self) -> Vec<RemoteOpenApi>;
}

/// Merges the remote v2 specs into `dest`, in kube-aggregator's order.
pub(super) fn merge_v2(dest: &mut Spec, remote: &[RemoteOpenApi]) {
    let mut with_v2: Vec<&RemoteOpenApi> = remote
        .iter()
        .filter(|r| r.v2.is_some() && !r.group.is_empty())
        .collect();
    let group_priority = |group: &str| {
        remote
            .iter()
            .filter(|r| r.group == group)
            .map(|r| r.priority.group_priority_minimum)
            .max()
            .unwrap_or(0)
    };
    with_v2.sort_by(|a, b| {
        group_priority(&b.group)
            .cmp(&group_priority(&a.group))
            .then_with(|| a.apiservice_name().cmp(&b.apiservice_name()))
    });
    for r in with_v2 {
        let Some(doc) = &r.v2 else { continue };
        let prefix = format!("/apis/{}/{}/", r.group, r.version);
        let filtered = merge::filter_by_paths(&Spec::of(doc), &[prefix.as_str()]);
        merge::merge_into(dest, filtered);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::genericserver::openapi::OpenApi;
    use crate::genericserver::runtime_config::RuntimeConfig;
    use http::HeaderMap;
    use serde_json::json;

    const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

    fn wardle_v2() -> Arc<Value> {
        Arc::new(json!({
            "swagger": "2.0",
            "paths": {
                "/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders": {"get": {
                    "responses": {"200": {"schema": {"$ref": "#/definitions/com.example.wardle.v1alpha1.FlunderList"}}}}},
                "/apis/wardle.example.com/v1beta1/flunders": {"get": {
                    "responses": {"200": {"schema": {"$ref": "#/definitions/com.example.wardle.v1beta1.Only"}}}}},
                "/api/v1/namespaces": {"get": {}}
            },
            "definitions": {
                "com.example.wardle.v1alpha1.FlunderList": {"type": "object",
                    "properties": {"metadata": {"$ref": format!("#/definitions/{META}")}}},
                "com.example.wardle.v1beta1.Only": {"type": "object"},
                META: {"description": "a different ObjectMeta", "type": "object"}
            }
        }))
    }

    fn remote(version: &str, v3: Option<&'static [u8]>) -> RemoteOpenApi {
        RemoteOpenApi {
            group: "wardle.example.com".into(),
            version: version.into(),
            priority: Priority {
                group_priority_minimum: 2000,
                version_priority: 200,
            },
            v2: Some(wardle_v2()),
            v3: v3.map(Bytes::from_static),
        }
    }

    fn build(remote: Vec<RemoteOpenApi>) -> OpenApi {
        OpenApi::with_runtime_documents(
            &kubernetes_api::scheme(),
            &RuntimeConfig::default(),
            "v1.0.0",
            &|_, _, _| true,
            Vec::new(),
            remote,
        )
    }

    fn v2(api: &OpenApi) -> Value {
        serde_json::from_slice(&api.v2_json).expect("JSON")
    }

    #[test]
    fn v2_gains_the_group_versions_paths_and_renames_conflicts() {
        let api = build(vec![remote("v1alpha1", None)]);
        let doc = v2(&api);
        let paths = doc["paths"].as_object().unwrap();
        assert!(
            paths.contains_key("/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders")
        );
        // Only the APIService's group version: not its other version, nor its core paths.
        assert!(!paths.contains_key("/apis/wardle.example.com/v1beta1/flunders"));
        let defs = doc["definitions"].as_object().unwrap();
        assert!(!defs.contains_key("com.example.wardle.v1beta1.Only"));
        // The local ObjectMeta stays; the remote's differing one is renamed and referenced so.
        assert_ne!(defs[META]["description"], "a different ObjectMeta");
        assert_eq!(
            defs[&format!("{META}_v2")]["description"],
            "a different ObjectMeta"
        );
        assert_eq!(
            defs["com.example.wardle.v1alpha1.FlunderList"]["properties"]["metadata"]["$ref"],
            json!(format!("#/definitions/{META}_v2"))
        );
        // The protobuf form carries the merged document too.
        let plain = build(Vec::new());
        assert!(api.v2_proto.len() > plain.v2_proto.len());
        assert_ne!(api.v2_etag, plain.v2_etag);
    }

    #[test]
    fn v3_lists_and_serves_remote_documents_until_they_go() {
        let doc: &'static [u8] =
            br#"{"openapi":"3.0.0","paths":{"/apis/wardle.example.com/v1alpha1/flunders":{}}}"#;
        let api = build(vec![remote("v1alpha1", Some(doc)), remote("v1beta1", None)]);
        let index: Value = serde_json::from_slice(&api.v3_index).unwrap();
        let url = index["paths"]["apis/wardle.example.com/v1alpha1"]["serverRelativeURL"]
            .as_str()
            .expect("listed")
            .to_string();
        assert!(
            index["paths"]
                .get("apis/wardle.example.com/v1beta1")
                .is_none()
        );
        let (path, query) = url.split_once('?').unwrap();
        let resp = api.serve(path, query, &HeaderMap::new()).expect("served");
        assert_eq!(resp.status(), http::StatusCode::OK);
        assert_eq!(
            api.v3["apis/wardle.example.com/v1alpha1"].0,
            Bytes::from_static(doc)
        );
        // A stale hash is redirected to the current one.
        let moved = api.serve(path, "hash=0", &HeaderMap::new()).unwrap();
        assert_eq!(moved.status(), http::StatusCode::MOVED_PERMANENTLY);

        let gone = build(Vec::new());
        let index: Value = serde_json::from_slice(&gone.v3_index).unwrap();
        assert!(
            index["paths"]
                .get("apis/wardle.example.com/v1alpha1")
                .is_none()
        );
        assert!(gone.serve(path, "", &HeaderMap::new()).is_none());
        assert!(!String::from_utf8_lossy(&gone.v2_json).contains("wardle"));
    }

    #[test]
    fn higher_priority_groups_merge_first() {
        let mut first = remote("v1alpha1", None);
        first.group = "b.example".into();
        first.priority.group_priority_minimum = 100;
        first.v2 = Some(Arc::new(
            json!({"paths": {"/apis/b.example/v1alpha1/x": {"get": {
            "responses": {"200": {"schema": {"$ref": "#/definitions/T"}}}}}},
            "definitions": {"T": {"type": "string"}}}),
        ));
        let mut second = first.clone();
        second.group = "a.example".into();
        second.priority.group_priority_minimum = 5000;
        second.v2 = Some(Arc::new(
            json!({"paths": {"/apis/a.example/v1alpha1/x": {"get": {
            "responses": {"200": {"schema": {"$ref": "#/definitions/T"}}}}}},
            "definitions": {"T": {"type": "integer"}}}),
        ));
        let doc = v2(&build(vec![first, second]));
        assert_eq!(doc["definitions"]["T"], json!({"type": "integer"}));
        assert_eq!(doc["definitions"]["T_v2"], json!({"type": "string"}));
    }
}
