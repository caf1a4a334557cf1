//! Delegated authorization: a request is authorized by POSTing a `SubjectAccessReview`
//! (`authorization.k8s.io/v1`) to the main server, built as k8s.io/apiserver's webhook
//! authorizer builds it, its answers kept for `--authorization-webhook-cache-authorized-ttl`
//! (allowed) and `--authorization-webhook-cache-unauthorized-ttl` (not allowed); and the
//! always-allowed paths (`--authorization-always-allow-paths`).
//!
//! [`Authorizer`] is synchronous (it is cheap for every local mode): the delegated authorizer
//! answers from its cache, and on a miss sends the review on its own runtime and waits for the
//! answer (moving the caller's other tasks off the thread on a multi-threaded runtime). The
//! filter chain fills the cache without blocking first ([`DelegatedAuthorizer::prefetch`]).

use std::sync::Arc;
use std::time::Duration;

use apimachinery::authorization::{Attributes, Authorization, Authorizer, Decision};

use super::cache::TtlCache;
use super::kubeconfig::KubeClient;

/// The path `SubjectAccessReview`s are created at.
pub const SUBJECT_ACCESS_REVIEWS: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

/// The `spec` of the `SubjectAccessReview` of `attributes` (`omitempty` fields left out as Go
/// leaves them out).
pub fn review_spec(attributes: &Attributes<'_>) -> serde_json::Value {
    let mut spec = serde_json::Map::new();
    let user = &attributes.user;
    let put = |map: &mut serde_json::Map<String, serde_json::Value>, key: &str, value: &str| {
        if !value.is_empty() {
            map.insert(key.to_string(), value.into());
        }
    };
    if attributes.is_resource_request {
        let mut resource = serde_json::Map::new();
        put(&mut resource, "namespace", &attributes.namespace);
        put(&mut resource, "verb", &attributes.verb);
        put(&mut resource, "group", &attributes.api_group);
        put(&mut resource, "version", &attributes.api_version);
        put(&mut resource, "resource", &attributes.resource);
        put(&mut resource, "subresource", &attributes.subresource);
        put(&mut resource, "name", &attributes.name);
        spec.insert("resourceAttributes".into(), resource.into());
    } else {
        let mut path = serde_json::Map::new();
        put(&mut path, "path", &attributes.path);
        put(&mut path, "verb", &attributes.verb);
        spec.insert("nonResourceAttributes".into(), path.into());
    }
    put(&mut spec, "user", &user.name);
    if !user.groups.is_empty() {
        spec.insert("groups".into(), serde_json::json!(user.groups));
    }
    if !user.extra.is_empty() {
        spec.insert("extra".into(), serde_json::json!(user.extra));
    }
    put(&mut spec, "uid", &user.uid);
    spec.into()
}

/// The key the answer about `attributes` is cached under: every field the review carries, each
/// written as its length (four bytes) and its bytes, so two different reviews never share a key.
///
/// kube keys its cache with the review's JSON text; building that (a `serde_json::Value`, then
/// its text) on every request, once to prefetch and once to authorize, was most of what the
/// delegated authorizer cost an aggregated server per request with a warm cache. Writing the
/// lengths as decimal text (`write!`) still cost about 4,500 instructions per key, 9,000 of the
/// 11,000 the authorizer added to a GET; as bytes the key takes a few hundred (see
/// BENCHMARKS.md, "API aggregation").
pub fn cache_key(attributes: &Attributes<'_>) -> Vec<u8> {
    fn put(key: &mut Vec<u8>, bytes: &[u8]) {
        let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
        key.extend_from_slice(&len.to_le_bytes());
        key.extend_from_slice(bytes);
    }
    let mut key = Vec::with_capacity(192);
    if attributes.is_resource_request {
        put(&mut key, b"r");
        for field in [
            &attributes.namespace,
            &attributes.verb,
            &attributes.api_group,
            &attributes.api_version,
            &attributes.resource,
            &attributes.subresource,
            &attributes.name,
        ] {
            put(&mut key, field.as_bytes());
        }
    } else {
        put(&mut key, b"n");
        put(&mut key, attributes.path.as_bytes());
        put(&mut key, attributes.verb.as_bytes());
    }
    let user = &attributes.user;
    put(&mut key, user.name.as_bytes());
    put(&mut key, user.uid.as_bytes());
    put(&mut key, &(user.groups.len() as u64).to_le_bytes());
    for group in &user.groups {
        put(&mut key, group.as_bytes());
    }
    put(&mut key, &(user.extra.len() as u64).to_le_bytes());
    for (name, values) in &user.extra {
        put(&mut key, name.as_bytes());
        put(&mut key, &(values.len() as u64).to_le_bytes());
        for value in values {
            put(&mut key, value.as_bytes());
        }
    }
    key
}

/// The whole review of `spec`.
pub fn review(spec: &serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": spec,
    })
}

/// The decision of a review's `status`: allowed, denied, or no opinion, with its reason.
pub fn decision(status: &serde_json::Value) -> Authorization {
    let reason = status["reason"].as_str().unwrap_or_default().to_string();
    let decision = if status["allowed"].as_bool() == Some(true) {
        Decision::Allow
    } else if status["denied"].as_bool() == Some(true) {
        Decision::Deny
    } else {
        Decision::NoOpinion
    };
    Authorization {
        decision,
        reason: reason.into(),
        error: None,
    }
}

/// The delegated authorizer. See the [module docs](self).
pub struct DelegatedAuthorizer {
    client: KubeClient,
    /// Requests the authorizers before this one decide (no review is sent for them ahead).
    decided_before: AlwaysAllowPaths,
    allowed_ttl: Duration,
    denied_ttl: Duration,
    /// Answers by [`cache_key`].
    cache: TtlCache<Vec<u8>, Authorization>,
    runtime: ReviewRuntime,
}

impl std::fmt::Debug for DelegatedAuthorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DelegatedAuthorizer")
            .field("server", &self.client.base().as_str())
            .finish_non_exhaustive()
    }
}

/// The runtime reviews are sent on, so a synchronous caller can wait for one from any thread.
struct ReviewRuntime(Option<tokio::runtime::Runtime>);

impl Drop for ReviewRuntime {
    fn drop(&mut self) {
        // Dropped from async code as well: its threads are left to end on their own.
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// Why the delegated authorizer could not be created.
#[derive(Debug, thiserror::Error)]
#[error("starting the authorization runtime: {0}")]
pub struct AuthorizerStartError(#[from] std::io::Error);

impl DelegatedAuthorizer {
    /// An authorizer asking the server `client` reaches, keeping allowed answers for
    /// `allowed_ttl` and the others for `denied_ttl`; `always_allowed` are the paths allowed
    /// before it is asked (so [`prefetch`](Self::prefetch) sends no review for them).
    pub fn new(
        client: KubeClient,
        always_allowed: AlwaysAllowPaths,
        allowed_ttl: Duration,
        denied_ttl: Duration,
    ) -> Result<Arc<Self>, AuthorizerStartError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("apiary-sar")
            .enable_all()
            .build()?;
        Ok(Arc::new(Self {
            client,
            decided_before: always_allowed,
            allowed_ttl,
            denied_ttl,
            cache: TtlCache::default(),
            runtime: ReviewRuntime(Some(runtime)),
        }))
    }

    /// Asks the main server about `attributes` unless the answer is cached, without blocking:
    /// the filter chain calls it before the synchronous [`Authorizer::authorize`].
    pub async fn prefetch(&self, attributes: &Attributes<'_>) {
        if attributes.user.in_group(apimachinery::user::MASTERS_GROUP)
            || self.decided_before.authorize(attributes).decision == Decision::Allow
        {
            return;
        }
        let key = cache_key(attributes);
        if self.cache.get(&key).is_some() {
            return;
        }
        let Some(runtime) = &self.runtime.0 else {
            return;
        };
        let spec = review_spec(attributes);
        let client = self.client.clone();
        let answer = runtime
            .spawn(async move {
                client
                    .post_json(SUBJECT_ACCESS_REVIEWS, &review(&spec))
                    .await
            })
            .await;
        if let Ok(Ok(answer)) = answer {
            self.remember(key, decision(&answer["status"]));
        }
    }

    /// Keeps a verdict for its time-to-live.
    fn remember(&self, key: Vec<u8>, verdict: Authorization) {
        let ttl = if verdict.decision == Decision::Allow {
            self.allowed_ttl
        } else {
            self.denied_ttl
        };
        self.cache.insert(key, verdict, ttl);
    }

    /// Sends the review of `key` and waits for the answer on this thread.
    fn review_blocking(&self, key: serde_json::Value) -> Result<serde_json::Value, String> {
        let Some(runtime) = &self.runtime.0 else {
            return Err("the authorizer is stopped".into());
        };
        let client = self.client.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        runtime.spawn(async move {
            let answer = client
                .post_json(SUBJECT_ACCESS_REVIEWS, &review(&key))
                .await;
            let _ = tx.send(answer.map_err(|e| e.to_string()));
        });
        let wait = move || {
            rx.recv()
                .unwrap_or_else(|_| Err("the review was abandoned".to_string()))
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(wait)
            }
            _ => wait(),
        }
    }
}

impl Authorizer for DelegatedAuthorizer {
    fn authorize(&self, attributes: &Attributes<'_>) -> Authorization {
        let key = cache_key(attributes);
        if let Some(known) = self.cache.get(&key) {
            return known;
        }
        match self.review_blocking(review_spec(attributes)) {
            Ok(answer) => {
                let verdict = decision(&answer["status"]);
                self.remember(key, verdict.clone());
                verdict
            }
            Err(e) => {
                tracing::error!(error = %e, "Failed to make webhook authorizer request");
                Authorization::failed(e)
            }
        }
    }
}

/// Allows the non-resource requests of some paths (`--authorization-always-allow-paths`;
/// k8s.io/apiserver's `path` authorizer: an exact path, or a prefix ending in `*`).
#[derive(Debug, Clone, Default)]
pub struct AlwaysAllowPaths {
    exact: Vec<String>,
    prefixes: Vec<String>,
}

impl AlwaysAllowPaths {
    /// The authorizer of `paths` (leading slashes optional, as in kube).
    pub fn new(paths: &[String]) -> Self {
        let mut allowed = Self::default();
        for path in paths {
            let path = path.trim_start_matches('/');
            match path.strip_suffix('*') {
                Some(prefix) => allowed.prefixes.push(prefix.to_string()),
                None => allowed.exact.push(path.to_string()),
            }
        }
        allowed
    }
}

impl Authorizer for AlwaysAllowPaths {
    fn authorize(&self, attributes: &Attributes<'_>) -> Authorization {
        if attributes.is_resource_request {
            return Authorization::no_opinion();
        }
        let path = attributes.path.trim_start_matches('/');
        if self.exact.iter().any(|p| p == path)
            || self.prefixes.iter().any(|p| path.starts_with(p.as_str()))
        {
            Authorization::allow("")
        } else {
            Authorization::no_opinion()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request_info::RequestInfo;
    use apimachinery::user::UserInfo;

    fn attrs(user: &UserInfo, method: http::Method, path: &str) -> Attributes<'static> {
        let info = RequestInfo::parse(&method, path, "").unwrap_or_default();
        crate::authz::request_attributes(user, &info).into_owned()
    }

    fn jane() -> UserInfo {
        UserInfo {
            name: "jane".into(),
            uid: "u-1".into(),
            groups: vec!["devs".into(), "system:authenticated".into()],
            extra: [("scopes".to_string(), vec!["a".to_string()])].into(),
        }
    }

    #[test]
    fn reviews_carry_the_attributes_as_kube_builds_them() {
        let spec = review_spec(&attrs(
            &jane(),
            http::Method::GET,
            "/apis/wardle.example.com/v1beta1/namespaces/ns/flunders/f",
        ));
        assert_eq!(
            spec,
            serde_json::json!({
                "resourceAttributes": {"namespace": "ns", "verb": "get", "group": "wardle.example.com",
                    "version": "v1beta1", "resource": "flunders", "name": "f"},
                "user": "jane", "groups": ["devs", "system:authenticated"],
                "extra": {"scopes": ["a"]}, "uid": "u-1",
            })
        );
        let anonymous = UserInfo {
            name: "system:anonymous".into(),
            ..UserInfo::default()
        };
        let spec = review_spec(&attrs(&anonymous, http::Method::GET, "/metrics"));
        assert_eq!(
            spec,
            serde_json::json!({"nonResourceAttributes": {"path": "/metrics", "verb": "get"}, "user": "system:anonymous"})
        );
        assert_eq!(review(&spec)["kind"], "SubjectAccessReview");
    }

    #[test]
    fn cache_keys_tell_every_field_apart() {
        let base = attrs(
            &jane(),
            http::Method::GET,
            "/apis/wardle.example.com/v1beta1/namespaces/ns/flunders/f",
        );
        let key = cache_key(&base);
        assert_eq!(key, cache_key(&base.clone()));
        let mut variants = Vec::new();
        let mut changed = |change: &dyn Fn(&mut Attributes<'static>)| {
            let mut a = base.clone();
            change(&mut a);
            variants.push(cache_key(&a));
        };
        changed(&|a| a.namespace = "n".into());
        changed(&|a| a.verb = "list".into());
        changed(&|a| a.name = "".into());
        changed(&|a| a.subresource = "status".into());
        changed(&|a| a.is_resource_request = false);
        changed(&|a| a.user.to_mut().uid = "u-2".into());
        changed(&|a| a.user.to_mut().groups.pop().map(|_| ()).unwrap_or(()));
        // A value moved from one field to the next is another review.
        changed(&|a| {
            a.namespace = "nsf".into();
            a.name = "".into();
        });
        changed(&|a| {
            a.user
                .to_mut()
                .extra
                .insert("scopes".into(), vec!["a".into(), "b".into()]);
        });
        changed(&|a| {
            a.user
                .to_mut()
                .extra
                .insert("scopes".into(), vec!["ab".into()]);
        });
        for (i, v) in variants.iter().enumerate() {
            assert_ne!(v, &key, "variant {i}");
            for w in &variants[i + 1..] {
                assert_ne!(v, w);
            }
        }
    }

    #[test]
    fn answers_decide() {
        assert_eq!(
            decision(&serde_json::json!({"allowed": true, "reason": "RBAC: allowed"})),
            Authorization::allow("RBAC: allowed")
        );
        assert_eq!(
            decision(&serde_json::json!({"allowed": false, "denied": true, "reason": "no"}))
                .decision,
            Decision::Deny
        );
        let verdict = decision(&serde_json::json!({"allowed": false}));
        assert_eq!(verdict.decision, Decision::NoOpinion);
        assert!(verdict.reason.is_empty());
    }

    #[test]
    fn always_allowed_paths() {
        let paths = AlwaysAllowPaths::new(&["/healthz".into(), "livez".into(), "/debug/*".into()]);
        let user = UserInfo::anonymous();
        let decide = |method: http::Method, path: &str| {
            paths.authorize(&attrs(&user, method, path)).decision
        };
        assert_eq!(decide(http::Method::GET, "/healthz"), Decision::Allow);
        assert_eq!(decide(http::Method::GET, "/livez"), Decision::Allow);
        assert_eq!(decide(http::Method::GET, "/debug/pprof"), Decision::Allow);
        assert_eq!(
            decide(http::Method::GET, "/healthz/etcd"),
            Decision::NoOpinion
        );
        assert_eq!(decide(http::Method::GET, "/readyz"), Decision::NoOpinion);
        assert_eq!(
            decide(http::Method::GET, "/api/v1/namespaces"),
            Decision::NoOpinion
        );
    }

    /// A one-shot HTTPS-less stand-in is not needed: an unreachable server is a failed review,
    /// answered with no opinion and the error (a 500 in the filter chain), and not cached.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_unreachable_server_is_a_failed_decision_and_not_cached() {
        let config: super::super::kubeconfig::Kubeconfig = serde_yaml_ng::from_str(
            "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1', insecure-skip-tls-verify: true}\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let client = KubeClient::from_config(&config, std::path::Path::new("."))
            .unwrap_or_else(|e| panic!("{e}"));
        let authz = DelegatedAuthorizer::new(
            client,
            AlwaysAllowPaths::new(&["/healthz".into()]),
            Duration::from_secs(10),
            Duration::from_secs(10),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let a = attrs(&jane(), http::Method::GET, "/api/v1/namespaces");
        authz.prefetch(&a).await;
        let verdict = authz.authorize(&a);
        assert_eq!(verdict.decision, Decision::NoOpinion);
        assert!(verdict.error.is_some_and(|e| !e.is_empty()));
        assert!(authz.cache.is_empty());
    }
}
