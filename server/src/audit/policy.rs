//! The audit policy (`audit.k8s.io/v1` `Policy`, read from `--audit-policy-file`) and its
//! evaluation: the first rule that matches a request decides its level, stages to omit and
//! whether managedFields are omitted (Kubernetes' `policy.Checker`). Rules are checked in order
//! over plain slices of owned strings: evaluation allocates nothing.

use std::path::Path;

use serde::Deserialize;

use crate::authn::UserInfo;
use crate::request_info::RequestInfo;

/// How much of a request is recorded, in increasing order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub enum Level {
    /// Nothing is recorded.
    None,
    /// The request's metadata: user, verb, resource, timestamps, response code.
    Metadata,
    /// Metadata and the request body.
    Request,
    /// Metadata, the request body and the response body.
    RequestResponse,
}

impl Level {
    /// The name written in events.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }
}

/// A point in a request's life at which an event is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub enum Stage {
    /// As soon as the request is authenticated and its level is known.
    RequestReceived,
    /// When the response headers are sent (long-running requests only).
    ResponseStarted,
    /// When the response body is complete.
    ResponseComplete,
    /// When the handler panicked.
    Panic,
}

impl Stage {
    /// The name written in events.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A set of stages (a bit set).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stages(u8);

impl Stages {
    /// Whether `stage` is in the set.
    pub fn contains(self, stage: Stage) -> bool {
        self.0 & stage.bit() != 0
    }

    fn of(stages: &[Stage]) -> Self {
        Self(stages.iter().fold(0, |acc, s| acc | s.bit()))
    }
}

/// A group and some of its resources in a rule.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupResources {
    /// The API group (`""` is the core group).
    #[serde(default)]
    pub group: String,
    /// Resources (`pods`, `pods/log`, `*`, `*/status`, `pods/*`); empty means all.
    #[serde(default)]
    pub resources: Vec<String>,
    /// Object names; empty means all.
    #[serde(default)]
    pub resource_names: Vec<String>,
}

/// One rule of a policy.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    /// The level of the requests the rule matches.
    pub level: Level,
    /// User names; empty means all.
    #[serde(default)]
    pub users: Vec<String>,
    /// Groups, any of which matches; empty means all.
    #[serde(default)]
    pub user_groups: Vec<String>,
    /// Verbs; empty means all.
    #[serde(default)]
    pub verbs: Vec<String>,
    /// Resources; empty means all.
    #[serde(default)]
    pub resources: Vec<GroupResources>,
    /// Namespaces (`""` matches cluster-scoped resources); empty means all.
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// Non-resource paths, exact or with a trailing `*`; empty means all.
    #[serde(default, rename = "nonResourceURLs")]
    pub non_resource_urls: Vec<String>,
    /// Stages not recorded for these requests, beyond the policy's.
    #[serde(default)]
    pub omit_stages: Vec<Stage>,
    /// Overrides the policy's `omitManagedFields` when set.
    #[serde(default)]
    pub omit_managed_fields: Option<bool>,
}

/// The policy document.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PolicyDocument {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    rules: Vec<PolicyRule>,
    #[serde(default)]
    omit_stages: Vec<Stage>,
    #[serde(default)]
    omit_managed_fields: bool,
}

/// A policy file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file cannot be read.
    #[error("reading audit policy file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a Policy document.
    #[error("failed decoding audit policy file {path}: {message}")]
    Decode {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
    /// A rule is invalid.
    #[error("invalid audit policy in {path}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
}

/// What the policy decided for one request (Kubernetes' `RequestAuditConfig`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestAuditConfig {
    /// The level.
    pub level: Level,
    /// The stages not recorded.
    pub omit_stages: Stages,
    /// Whether managedFields are removed from recorded objects.
    pub omit_managed_fields: bool,
}

/// A checked policy, ready to evaluate.
#[derive(Clone, Debug)]
pub struct Policy {
    rules: Vec<(PolicyRule, RequestAuditConfig)>,
}

impl Policy {
    /// Reads and checks a policy file (YAML or JSON).
    pub fn from_file(path: &Path) -> Result<Self, PolicyError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Read {
            path: shown.clone(),
            source,
        })?;
        Self::parse(&text).map_err(|(invalid, message)| {
            if invalid {
                PolicyError::Invalid {
                    path: shown,
                    message,
                }
            } else {
                PolicyError::Decode {
                    path: shown,
                    message,
                }
            }
        })
    }

    /// Parses a policy document; `Err((invalid, message))` tells a document that does not
    /// decode (`false`) from one whose rules are invalid (`true`).
    pub fn parse(text: &str) -> Result<Self, (bool, String)> {
        let doc: PolicyDocument =
            serde_yaml_ng::from_str(text).map_err(|e| (false, e.to_string()))?;
        if doc.kind != "Policy" || doc.api_version != "audit.k8s.io/v1" {
            return Err((
                false,
                format!(
                    "expected apiVersion audit.k8s.io/v1 and kind Policy, got {:?} {:?}",
                    doc.api_version, doc.kind
                ),
            ));
        }
        if doc.rules.is_empty() {
            return Err((true, "loaded illegal policy with 0 rules".to_string()));
        }
        let policy_omit = Stages::of(&doc.omit_stages);
        let mut rules = Vec::with_capacity(doc.rules.len());
        for (i, rule) in doc.rules.into_iter().enumerate() {
            if !rule.non_resource_urls.is_empty()
                && (!rule.resources.is_empty() || !rule.namespaces.is_empty())
            {
                return Err((
                    true,
                    format!(
                        "rules[{i}].nonResourceURLs: Invalid value: {:?}: rules cannot apply to both regular resources and non-resource URLs",
                        rule.non_resource_urls
                    ),
                ));
            }
            for url in &rule.non_resource_urls {
                if url != "*" && !url.starts_with('/') {
                    return Err((
                        true,
                        format!(
                            "rules[{i}].nonResourceURLs: Invalid value: {url:?}: non-resource URL rules must begin with a '/' character"
                        ),
                    ));
                }
                if url.trim_end_matches('*').contains('*') {
                    return Err((
                        true,
                        format!(
                            "rules[{i}].nonResourceURLs: Invalid value: {url:?}: non-resource URL wildcards '*' must be the final character of the rule"
                        ),
                    ));
                }
            }
            for (j, gr) in rule.resources.iter().enumerate() {
                if !gr.resource_names.is_empty() && gr.resources.is_empty() {
                    return Err((
                        true,
                        format!(
                            "rules[{i}].resources[{j}].resourceNames: Invalid value: {:?}: using resourceNames requires at least one resource",
                            gr.resource_names
                        ),
                    ));
                }
            }
            let decided = RequestAuditConfig {
                level: rule.level,
                omit_stages: Stages(policy_omit.0 | Stages::of(&rule.omit_stages).0),
                omit_managed_fields: rule.omit_managed_fields.unwrap_or(doc.omit_managed_fields),
            };
            rules.push((rule, decided));
        }
        Ok(Self { rules })
    }

    /// The decision for a request by `user` (absent when authentication failed); a request no
    /// rule matches is not recorded.
    pub fn evaluate(&self, user: Option<&UserInfo>, info: &RequestInfo) -> RequestAuditConfig {
        self.rules
            .iter()
            .find(|(rule, _)| matches(rule, user, info))
            .map(|(_, decided)| *decided)
            .unwrap_or(RequestAuditConfig {
                level: Level::None,
                omit_stages: Stages::default(),
                omit_managed_fields: false,
            })
    }
}

fn has(list: &[String], s: &str) -> bool {
    list.iter().any(|x| x == s)
}

fn matches(rule: &PolicyRule, user: Option<&UserInfo>, info: &RequestInfo) -> bool {
    if !rule.users.is_empty() && !user.is_some_and(|u| has(&rule.users, &u.name)) {
        return false;
    }
    if !rule.user_groups.is_empty()
        && !user.is_some_and(|u| u.groups.iter().any(|g| has(&rule.user_groups, g)))
    {
        return false;
    }
    if !rule.verbs.is_empty() && !has(&rule.verbs, &info.verb) {
        return false;
    }
    if !rule.namespaces.is_empty() || !rule.resources.is_empty() {
        return matches_resource(rule, info);
    }
    if !rule.non_resource_urls.is_empty() {
        return !info.is_resource_request
            && rule
                .non_resource_urls
                .iter()
                .any(|spec| path_matches(&info.path, spec));
    }
    true
}

fn path_matches(path: &str, spec: &str) -> bool {
    spec == "*"
        || spec == path
        || spec
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
}

fn matches_resource(rule: &PolicyRule, info: &RequestInfo) -> bool {
    if !info.is_resource_request {
        return false;
    }
    if !rule.namespaces.is_empty() && !has(&rule.namespaces, &info.namespace) {
        return false;
    }
    if rule.resources.is_empty() {
        return true;
    }
    let resource = info.resource.as_str();
    let subresource = info.subresource.as_str();
    for gr in &rule.resources {
        if gr.group != info.api_group {
            continue;
        }
        if gr.resources.is_empty() {
            return true;
        }
        if !gr.resource_names.is_empty() && !has(&gr.resource_names, &info.name) {
            continue;
        }
        for res in &gr.resources {
            let combined = match res.split_once('/') {
                Some((r, s)) => r == resource && s == subresource,
                None => subresource.is_empty() && res == resource,
            };
            if combined || res == "*" {
                return true;
            }
            if !subresource.is_empty()
                && res
                    .strip_prefix("*/")
                    .is_some_and(|s| s.trim_start_matches(['*', '/']) == subresource)
            {
                return true;
            }
            if res
                .strip_suffix("/*")
                .is_some_and(|r| r.trim_end_matches(['/', '*']) == resource)
            {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(method: http::Method, path: &str) -> RequestInfo {
        RequestInfo::parse(&method, path, "").unwrap_or_default()
    }

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        }
    }

    const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: None
    users: ["system:kube-proxy"]
  - level: None
    nonResourceURLs: ["/healthz*", "/version"]
  - level: RequestResponse
    resources:
      - group: ""
        resources: ["secrets"]
        resourceNames: ["top"]
  - level: Request
    userGroups: ["devs"]
    verbs: ["create", "update"]
    namespaces: ["team"]
  - level: Metadata
    resources:
      - group: "example.dev"
        resources: ["*/status"]
      - group: ""
        resources: ["pods/*"]
    omitStages: ["ResponseStarted"]
    omitManagedFields: true
  - level: Request
    resources:
      - group: ""
"#;

    #[test]
    fn first_matching_rule_wins() {
        let p = Policy::parse(POLICY).unwrap_or_else(|e| panic!("{e:?}"));
        let admin = user("admin", &["system:masters"]);
        let dev = user("jane", &["devs"]);
        let level = |u: Option<&UserInfo>, i: RequestInfo| p.evaluate(u, &i).level;
        assert_eq!(
            level(
                Some(&user("system:kube-proxy", &[])),
                info(http::Method::GET, "/api/v1/pods")
            ),
            Level::None
        );
        assert_eq!(
            level(Some(&admin), info(http::Method::GET, "/healthz/ping")),
            Level::None
        );
        assert_eq!(
            level(Some(&admin), info(http::Method::GET, "/versionz")),
            Level::None,
            "no rule matches a non-resource path not listed"
        );
        assert_eq!(
            level(
                Some(&admin),
                info(http::Method::GET, "/api/v1/namespaces/a/secrets/top")
            ),
            Level::RequestResponse
        );
        assert_eq!(
            level(
                Some(&admin),
                info(http::Method::GET, "/api/v1/namespaces/a/secrets/other")
            ),
            Level::Request
        );
        assert_eq!(
            level(
                Some(&dev),
                info(
                    http::Method::POST,
                    "/apis/example.dev/v1/namespaces/team/widgets"
                )
            ),
            Level::Request
        );
        assert_eq!(
            level(
                Some(&dev),
                info(
                    http::Method::POST,
                    "/apis/example.dev/v1/namespaces/other/widgets"
                )
            ),
            Level::None
        );
        let status = p.evaluate(
            Some(&admin),
            &info(
                http::Method::PUT,
                "/apis/example.dev/v1/namespaces/a/widgets/w/status",
            ),
        );
        assert_eq!(status.level, Level::Metadata);
        assert!(status.omit_managed_fields);
        assert!(status.omit_stages.contains(Stage::RequestReceived));
        assert!(status.omit_stages.contains(Stage::ResponseStarted));
        assert!(!status.omit_stages.contains(Stage::ResponseComplete));
        assert_eq!(
            level(
                Some(&admin),
                info(http::Method::GET, "/api/v1/namespaces/a/pods/p/log")
            ),
            Level::Metadata
        );
        assert_eq!(
            level(
                None,
                info(http::Method::GET, "/api/v1/namespaces/a/configmaps/c")
            ),
            Level::Request,
            "users/groups rules never match a request without a user"
        );
    }

    #[test]
    fn json_and_invalid_policies() {
        let json =
            r#"{"apiVersion":"audit.k8s.io/v1","kind":"Policy","rules":[{"level":"Metadata"}]}"#;
        let p = Policy::parse(json).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            p.evaluate(None, &info(http::Method::GET, "/")).level,
            Level::Metadata
        );
        for bad in [
            r#"{"apiVersion":"audit.k8s.io/v1","kind":"Policy","rules":[]}"#,
            r#"{"apiVersion":"audit.k8s.io/v1","kind":"Policy","rules":[{"level":"Loud"}]}"#,
            r#"{"apiVersion":"v1","kind":"Policy","rules":[{"level":"None"}]}"#,
            r#"{"apiVersion":"audit.k8s.io/v1","kind":"Policy","rules":[{"level":"None","nonResourceURLs":["/x"],"namespaces":["a"]}]}"#,
            r#"{"apiVersion":"audit.k8s.io/v1","kind":"Policy","rules":[{"level":"None","omitStages":["Later"]}]}"#,
        ] {
            assert!(Policy::parse(bad).is_err(), "{bad}");
        }
    }
}
