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
