//! MutatingAdmissionWebhook and ValidatingAdmissionWebhook (kube-apiserver's plugins of those
//! names): the webhooks that `admissionregistration.k8s.io/v1` configurations register are
//! called with an `AdmissionReview` for every request their rules, selectors and match
//! conditions select.
//!
//! - The configurations are read from the watch cache and compiled again only when the cache
//!   of their kind changed ([`Configurations`]), so an edit takes effect on the next request,
//!   on every replica, as soon as its cache has seen it.
//! - Mutating webhooks run one after another in the order of their configurations' names,
//!   each on the object as the ones before left it; their JSON patches are applied to the
//!   object in the version the webhook was called in and the result is decoded, converted
//!   back and later validated like any request object. A webhook with
//!   `reinvocationPolicy: IfNeeded` is called once more when a later webhook changed the
//!   object.
//! - Validating webhooks run concurrently on the final object; the first denial (in
//!   configuration order) is the request's error.
//! - A call that fails (refused, timed out, garbage, too long an answer) is skipped under
//!   `failurePolicy: Ignore` and is a 500 naming the webhook under `Fail`.
//! - Requests on the kinds whose strategy says so (the configurations themselves, leases)
//!   are never sent.

pub mod call;
pub mod metrics;
pub mod rules;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use apimachinery::ResourceInfo;
use apimachinery::Scheme;
use apimachinery::admission::{Attributes, MutatingPlugin, Plugin, ValidatingPlugin};
use apimachinery::cel::CelActivation;
use apimachinery::cel::CelExpression;
use apimachinery::runtime::{Kind, Object};
use apimachinery::selectors::LabelSelector;
use apimachinery::status::ApiError;
use async_trait::async_trait;
use kubernetes_api::admissionregistration_k8s_io::v1::{
    MatchCondition, MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations,
    ValidatingWebhook, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use kubernetes_api::admissionregistration_k8s_io::{
    MUTATING_WEBHOOK_CONFIGURATION_KIND, VALIDATING_WEBHOOK_CONFIGURATION_KIND,
};
use parking_lot::RwLock;
use serde_json::Value;
use storage::interface::ListOptions;

use self::call::{Answer, CallError, Clients};
use crate::admission::review;
use server::registry::Registry;

/// The mutating plugin's name, as the admission flags spell it.
pub const MUTATING_NAME: &str = "MutatingAdmissionWebhook";

/// The validating plugin's name, as the admission flags spell it.
pub const VALIDATING_NAME: &str = "ValidatingAdmissionWebhook";

/// The plugins, when the scheme serves the configuration kinds.
pub fn plugins(registry: &Arc<Registry>, scheme: &Scheme) -> Vec<Plugin> {
    let clients = Arc::new(Clients::default());
    let mut out = Vec::new();
    if scheme
        .by_kind(
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration",
        )
        .is_some()
    {
        out.push(Plugin {
            name: MUTATING_NAME,
            default_enabled: true,
            mutating: Some(Arc::new(Mutating(Dispatcher::new(
                registry,
                &MUTATING_WEBHOOK_CONFIGURATION_KIND,
                clients.clone(),
            )))),
            validating: None,
        });
    }
    if scheme
        .by_kind(
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration",
        )
        .is_some()
    {
        out.push(Plugin {
            name: VALIDATING_NAME,
            default_enabled: true,
            mutating: None,
            validating: Some(Arc::new(Validating(Dispatcher::new(
                registry,
                &VALIDATING_WEBHOOK_CONFIGURATION_KIND,
                clients,
            )))),
        });
    }
    out
}

/// One webhook of a configuration, compiled for matching and calling.
pub struct Hook {
    /// The webhook's name (`deny.example.dev`).
    pub name: String,
    /// Where it is reached (a service is resolved at each call), parsed once, when the
    /// configuration is read.
    endpoint: Result<server::webhook::Endpoint, String>,
    ca_bundle: Vec<u8>,
    /// The HTTPS client that trusts `ca_bundle` and verifies the endpoint's name, once a call
    /// needed it.
    client: std::sync::OnceLock<reqwest::Client>,
    rules: Vec<rules::CompiledRule>,
    fail_closed: bool,
    exact: bool,
    namespace_selector: Result<LabelSelector, String>,
    object_selector: Result<LabelSelector, String>,
    side_effects: String,
    timeout: Duration,
    review_v1: bool,
    reinvoke: bool,
    conditions: Vec<(String, Result<CelExpression, String>)>,
}

/// The fields both webhook types share, read from either.
struct HookSpec<'a> {
    name: &'a str,
    client: &'a WebhookClientConfig,
    rules: &'a [RuleWithOperations],
    failure_policy: Option<&'a str>,
    match_policy: Option<&'a str>,
    namespace_selector: Option<&'a apimachinery::meta::LabelSelector>,
    object_selector: Option<&'a apimachinery::meta::LabelSelector>,
    side_effects: Option<&'a str>,
    timeout_seconds: Option<i32>,
    review_versions: &'a [String],
    reinvocation_policy: Option<&'a str>,
    match_conditions: &'a [MatchCondition],
}

impl Hook {
    fn compile(spec: HookSpec<'_>) -> Hook {
        let selector = |s: Option<&apimachinery::meta::LabelSelector>| match s {
            None => Ok(LabelSelector::default()),
            Some(s) => LabelSelector::try_from(s).map_err(|e| e.to_string()),
        };
        Hook {
            name: spec.name.to_string(),
            endpoint: endpoint_of(spec.client),
            ca_bundle: spec
                .client
                .ca_bundle
                .as_ref()
                .map(|b| b.0.clone())
                .unwrap_or_default(),
            client: std::sync::OnceLock::new(),
            rules: spec
                .rules
                .iter()
                .map(rules::CompiledRule::compile)
                .collect(),
            fail_closed: spec.failure_policy != Some("Ignore"),
            exact: spec.match_policy == Some("Exact"),
            namespace_selector: selector(spec.namespace_selector),
            object_selector: selector(spec.object_selector),
            side_effects: spec.side_effects.unwrap_or("").to_string(),
            timeout: Duration::from_secs(spec.timeout_seconds.unwrap_or(10).clamp(1, 30) as u64),
            review_v1: spec.review_versions.iter().any(|v| v == "v1"),
            reinvoke: spec.reinvocation_policy == Some("IfNeeded"),
            conditions: spec
                .match_conditions
                .iter()
                .map(|c| (c.name.clone(), CelExpression::compile(&c.expression)))
                .collect(),
        }
    }
}

/// Where a webhook is reached (see [`server::webhook::Endpoint::of`]).
fn endpoint_of(client: &WebhookClientConfig) -> Result<server::webhook::Endpoint, String> {
    let service = client
        .service
        .as_ref()
        .map(|s| server::webhook::ServiceReference {
            namespace: &s.namespace,
            name: &s.name,
            path: s.path.as_deref(),
            port: s.port,
        });
    server::webhook::Endpoint::of(client.url.as_deref(), service)
}

fn from_mutating(w: &MutatingWebhook) -> Hook {
    Hook::compile(HookSpec {
        name: &w.name,
        client: &w.client_config,
        rules: &w.rules,
        failure_policy: w.failure_policy.as_deref(),
        match_policy: w.match_policy.as_deref(),
        namespace_selector: w.namespace_selector.as_ref(),
        object_selector: w.object_selector.as_ref(),
        side_effects: w.side_effects.as_deref(),
        timeout_seconds: w.timeout_seconds,
        review_versions: &w.admission_review_versions,
        reinvocation_policy: w.reinvocation_policy.as_deref(),
        match_conditions: &w.match_conditions,
    })
}

fn from_validating(w: &ValidatingWebhook) -> Hook {
    Hook::compile(HookSpec {
        name: &w.name,
        client: &w.client_config,
        rules: &w.rules,
        failure_policy: w.failure_policy.as_deref(),
        match_policy: w.match_policy.as_deref(),
        namespace_selector: w.namespace_selector.as_ref(),
        object_selector: w.object_selector.as_ref(),
        side_effects: w.side_effects.as_deref(),
        timeout_seconds: w.timeout_seconds,
        review_versions: &w.admission_review_versions,
        reinvocation_policy: None,
        match_conditions: &w.match_conditions,
    })
}

/// The compiled webhooks of one configuration kind, in the order they are called, with the
/// index of the resources each can match.
pub type Hooks = Arc<(Vec<Arc<Hook>>, rules::ResourceIndex)>;

/// The webhooks of one configuration kind, as the watch cache last showed them.
pub struct Configurations {
    registry: Arc<Registry>,
    kind: &'static Kind,
    /// The cache's change counter when `hooks` was read, and the hooks.
    memo: RwLock<Option<(u64, Hooks)>>,
}

impl Configurations {
    fn new(registry: &Arc<Registry>, kind: &'static Kind) -> Self {
        Self {
            registry: registry.clone(),
            kind,
            memo: RwLock::new(None),
        }
    }

    /// The webhooks, in the order of their configurations' names and then as listed.
    pub async fn hooks(&self) -> Result<Hooks, ApiError> {
        let store = self.registry.store(self.kind)?;
        let generation = store.changes().map(|c| c.load(Ordering::Acquire));
        if let (Some(g), Some((seen, hooks))) = (generation, &*self.memo.read())
            && *seen == g
        {
            return Ok(hooks.clone());
        }
        let (objects, _) = store
            .list(
                "",
                ListOptions {
                    resource_version: "0".into(),
                    ..ListOptions::default()
                },
            )
            .await?;
        let mut configs: Vec<(String, Vec<Arc<Hook>>)> = objects
            .iter()
            .filter_map(|o| {
                if let Some(c) = o.downcast_ref::<MutatingWebhookConfiguration>() {
                    let hooks = c.webhooks.iter().map(|w| Arc::new(from_mutating(w)));
                    return Some((o.name().to_string(), hooks.collect()));
                }
                let c = o.downcast_ref::<ValidatingWebhookConfiguration>()?;
                let hooks = c.webhooks.iter().map(|w| Arc::new(from_validating(w)));
                Some((o.name().to_string(), hooks.collect()))
            })
            .collect();
        configs.sort_by(|a, b| a.0.cmp(&b.0));
        let list: Vec<Arc<Hook>> = configs.into_iter().flat_map(|(_, h)| h).collect();
        let index = rules::ResourceIndex::build(list.iter().map(|h| rules::resources_of(&h.rules)));
        let hooks: Hooks = Arc::new((list, index));
        if let Some(g) = generation {
            *self.memo.write() = Some((g, hooks.clone()));
        }
        Ok(hooks)
    }
}

/// What both plugins share: the configurations, the namespaces, the HTTPS clients.
struct Dispatcher {
    registry: Arc<Registry>,
    configurations: Configurations,
    clients: Arc<Clients>,
    mutating: bool,
}

/// A webhook chosen for a request, with the version it is called in.
struct Invocation {
    hook: Arc<Hook>,
    version: &'static ResourceInfo,
}

impl Dispatcher {
    fn new(registry: &Arc<Registry>, kind: &'static Kind, clients: Arc<Clients>) -> Self {
        Self {
            registry: registry.clone(),
            configurations: Configurations::new(registry, kind),
            clients,
            mutating: std::ptr::eq(kind, &MUTATING_WEBHOOK_CONFIGURATION_KIND),
        }
    }

    fn handles(attributes: &Attributes<'_>) -> bool {
        !attributes.kind.strategy().exempt_from_admission_webhooks()
    }

    /// The webhooks this request is sent to, each with the version it is called in, in order.
    async fn select(&self, attributes: &Attributes<'_>) -> Result<Vec<Invocation>, ApiError> {
        let hooks = self.configurations.hooks().await?;
        let (list, index) = &*hooks;
        if list.is_empty() {
            return Ok(Vec::new());
        }
        let mut namespace: Option<Option<Box<dyn Object>>> = None;
        let mut chosen = Vec::new();
        for hook in index
            .candidates(attributes.version.plural)
            .into_iter()
            .map(|i| &list[i])
        {
            let Some(version) = self.matching_version(hook, attributes) else {
                continue;
            };
            if !self
                .namespace_matches(hook, attributes, &mut namespace)
                .await?
                || !object_matches(hook, attributes)?
            {
                continue;
            }
            chosen.push(Invocation {
                hook: hook.clone(),
                version,
            });
        }
        Ok(chosen)
    }

    /// The version whose rules match (see [`rules::matching_version`]).
    fn matching_version(
        &self,
        hook: &Hook,
        attributes: &Attributes<'_>,
    ) -> Option<&'static ResourceInfo> {
        rules::matching_version(attributes, hook.exact, |t| {
            rules::any_matches(&hook.rules, t)
        })
    }

    /// `namespaceSelector` (see [`rules::namespace_matches`]); the namespace is read once
    /// per request.
    async fn namespace_matches(
        &self,
        hook: &Hook,
        attributes: &Attributes<'_>,
        cached: &mut Option<Option<Box<dyn Object>>>,
    ) -> Result<bool, ApiError> {
        let selector = match &hook.namespace_selector {
            Ok(s) => s,
            Err(e) => return Err(selector_error(hook, "namespaceSelector", e)),
        };
        if selector.is_empty() {
            return Ok(true);
        }
        if cached.is_none() {
            *cached = Some(review::namespace_object(&self.registry, attributes).await?);
        }
        let namespace = cached.as_ref().and_then(|n| n.as_deref());
        Ok(rules::namespace_matches(selector, attributes, namespace))
    }

    /// Calls one webhook; `Ok(None)` when the call failed and the webhook fails open.
    async fn invoke(
        &self,
        invocation: &Invocation,
        attributes: &Attributes<'_>,
    ) -> Result<Option<Answer>, ApiError> {
        let hook = &invocation.hook;
        if attributes.dry_run && hook.side_effects != "None" && hook.side_effects != "NoneOnDryRun"
        {
            return Err(ApiError::bad_request(format!(
                "admission webhook {:?} does not support dry run",
                hook.name
            )));
        }
        let uid = uuid::Uuid::new_v4().to_string();
        let started = std::time::Instant::now();
        let holds = if hook.conditions.is_empty() {
            Ok(true)
        } else {
            let request = review::admission_request(attributes, invocation.version, &uid, true)?;
            self.conditions_hold(hook, &request, attributes)
        };
        let outcome = match holds {
            Err(e) => Err(e),
            Ok(false) => return Ok(None),
            Ok(true) => {
                let review = review::admission_review_json(attributes, invocation.version, &uid)?;
                self.send(hook, review, &uid).await
            }
        };
        let measured = match &outcome {
            Ok(a) if a.allowed => metrics::Outcome::Allowed,
            Ok(a) => metrics::Outcome::Denied(call::denial(&hook.name, a.status.as_ref()).code()),
            Err(_) if hook.fail_closed => metrics::Outcome::FailedClosed,
            Err(_) => metrics::Outcome::FailedOpen,
        };
        metrics::METRICS.record(
            &hook.name,
            self.mutating,
            attributes.operation.as_str(),
            measured,
            started.elapsed(),
        );
        match outcome {
            Ok(answer) => Ok(Some(answer)),
            Err(e) if hook.fail_closed => Err(call::call_failure(&hook.name, &e)),
            Err(e) => {
                tracing::warn!(webhook = %hook.name, error = %e, "failed calling webhook, failing open");
                Ok(None)
            }
        }
    }

    /// `matchConditions`: every condition must hold; one that cannot be evaluated is a
    /// failed call (its failure policy decides).
    fn conditions_hold(
        &self,
        hook: &Hook,
        request: &Value,
        attributes: &Attributes<'_>,
    ) -> Result<bool, CallError> {
        if hook.conditions.is_empty() {
            return Ok(true);
        }
        let mut activation = CelActivation::new();
        let bound = activation
            .set("object", &request["object"])
            .and_then(|()| activation.set("oldObject", &request["oldObject"]))
            .and_then(|()| activation.set("request", request));
        bound.map_err(CallError::Call)?;
        let compiled = || hook.conditions.iter().filter_map(|(_, e)| e.as_ref().ok());
        if compiled().any(|e| e.uses("authorizer")) {
            review::bind_authorizer(&mut activation, attributes);
        }
        for (name, expression) in &hook.conditions {
            let expression = expression.as_ref().map_err(|e| {
                CallError::Call(format!(
                    "compilation failed for matchCondition {name:?}: {e}"
                ))
            })?;
            match expression.evaluate_bool_in(&activation) {
                Ok(true) => {}
                Ok(false) => return Ok(false),
                Err(e) => {
                    return Err(CallError::Call(format!(
                        "evaluation failed for matchCondition {name:?}: {e}"
                    )));
                }
            }
        }
        Ok(true)
    }

    async fn send(&self, hook: &Hook, review: Vec<u8>, uid: &str) -> Result<Answer, CallError> {
        let endpoint = hook
            .endpoint
            .as_ref()
            .map_err(|e| CallError::Call(e.clone()))?;
        if !hook.review_v1 {
            return Err(CallError::Call(
                "webhook does not accept known AdmissionReview versions (v1)".into(),
            ));
        }
        // The client of the webhook's trust bundle, found once per compiled configuration
        // (looking it up by the bundle's bytes hashed them on every call: about 7k
        // instructions per create, measured with tools/callgrind-creates).
        let client = match hook.client.get() {
            Some(c) => c.clone(),
            None => {
                let c = self
                    .clients
                    .get(&hook.ca_bundle, endpoint.server_name().as_deref())?;
                let _ = hook.client.set(c.clone());
                c
            }
        };
        // A service is resolved on every call, so a changed Service serves the next one.
        let url = endpoint.resolve(&*self.registry.service_resolver())?;
        call::call(&client, &url, hook.timeout, review, uid, self.mutating).await
    }
}

fn selector_error(hook: &Hook, field: &str, e: &str) -> ApiError {
    ApiError::internal(format!(
        "failed calling webhook {:?}: invalid {field}: {e}",
        hook.name
    ))
}

/// `objectSelector`: the new or the old object's labels match.
fn object_matches(hook: &Hook, attributes: &Attributes<'_>) -> Result<bool, ApiError> {
    let selector = match &hook.object_selector {
        Ok(s) => s,
        Err(e) => return Err(selector_error(hook, "objectSelector", e)),
    };
    if selector.is_empty() {
        return Ok(true);
    }
    let labels_match =
        |o: Option<&dyn Object>| o.is_some_and(|o| selector.matches(&o.metadata().labels));
    Ok(labels_match(attributes.object()) || labels_match(attributes.old_object))
}

/// The mutating plugin.
struct Mutating(Dispatcher);

/// The validating plugin.
struct Validating(Dispatcher);

#[async_trait]
impl MutatingPlugin for Mutating {
    fn handles(&self, attributes: &Attributes<'_>) -> bool {
        Dispatcher::handles(attributes)
    }

    fn reinvocable(&self) -> bool {
        true
    }

    async fn admit(&self, attributes: &mut Attributes<'_>) -> Result<(), ApiError> {
        let chosen = self.0.select(attributes).await?;
        if chosen.is_empty() {
            return Ok(());
        }
        // The chain's second run, after a later plugin changed the object: the IfNeeded
        // webhooks only, once.
        if attributes.is_reinvocation() {
            for invocation in chosen.iter().filter(|i| i.hook.reinvoke) {
                self.call_and_patch(invocation, attributes).await?;
            }
            return Ok(());
        }
        // The index of the last webhook that changed the object, and which ran before it.
        let mut last_change: Option<usize> = None;
        let mut ran = Vec::with_capacity(chosen.len());
        for (i, invocation) in chosen.iter().enumerate() {
            if self.call_and_patch(invocation, attributes).await? {
                last_change = Some(i);
            }
            ran.push(i);
        }
        // IfNeeded: called once more when a later webhook changed the object after it ran.
        if let Some(changed_at) = last_change {
            for i in ran {
                let invocation = &chosen[i];
                if invocation.hook.reinvoke && i < changed_at {
                    self.call_and_patch(invocation, attributes).await?;
                }
            }
        }
        Ok(())
    }
}

impl Mutating {
    /// Calls one mutating webhook and applies its patch; whether the object changed.
    async fn call_and_patch(
        &self,
        invocation: &Invocation,
        attributes: &mut Attributes<'_>,
    ) -> Result<bool, ApiError> {
        let Some(answer) = self.0.invoke(invocation, attributes).await? else {
            return Ok(false);
        };
        for w in &answer.warnings {
            attributes.warn(w.clone());
        }
        record_audit_annotations(&invocation.hook.name, &answer, attributes);
        if !answer.allowed {
            return Err(call::denial(&invocation.hook.name, answer.status.as_ref()));
        }
        let Some(patch) = answer.patch else {
            return Ok(false);
        };
        let kind = attributes.kind;
        let Some(object) = attributes.object_mut() else {
            return Ok(false);
        };
        let original_version = object.info().version;
        let mut value = review::json_in(kind, &**object, invocation.version)?;
        let before = value.clone();
        let hook = &invocation.hook;
        let failed = |why: String| -> ApiError {
            let e = CallError::InvalidResponse(why);
            call::call_failure(&hook.name, &e)
        };
        let ops: json_patch::Patch = serde_json::from_value(patch)
            .map_err(|e| failed(format!("the patch is invalid: {e}")))?;
        json_patch::patch(&mut value, &ops)
            .map_err(|e| failed(format!("the patch does not apply: {e}")))?;
        if value == before {
            return Ok(false);
        }
        let codec = kind
            .codec(invocation.version.version)
            .ok_or_else(|| ApiError::internal("no codec for the webhook's version"))?;
        let decoded = codec
            .decode_value(&value)
            .map_err(|e| failed(format!("the patched object does not decode: {e}")))?;
        let mut patched = decoded.object;
        if patched.info().version != original_version {
            patched = kind
                .convert(patched, original_version)
                .map_err(ApiError::internal)?;
        }
        *object = patched;
        attributes.object_changed();
        Ok(true)
    }
}

/// Records a webhook's `auditAnnotations` in the request's audit event, each key qualified
/// with the webhook's name (`<webhook>/<key>`), in key order.
fn record_audit_annotations(hook: &str, answer: &call::Answer, attributes: &Attributes<'_>) {
    let mut keys: Vec<&String> = answer.audit_annotations.keys().collect();
    keys.sort();
    for k in keys {
        attributes.annotate_audit(format!("{hook}/{k}"), answer.audit_annotations[k].clone());
    }
}

#[async_trait]
impl ValidatingPlugin for Validating {
    fn handles(&self, attributes: &Attributes<'_>) -> bool {
        Dispatcher::handles(attributes)
    }

    async fn validate(&self, attributes: &Attributes<'_>) -> Result<(), ApiError> {
        let chosen = self.0.select(attributes).await?;
        if chosen.is_empty() {
            return Ok(());
        }
        let calls = chosen.iter().map(|inv| self.0.invoke(inv, attributes));
        let answers = futures::future::join_all(calls).await;
        for (invocation, answer) in chosen.iter().zip(answers) {
            let Some(answer) = answer? else { continue };
            for w in &answer.warnings {
                attributes.warn(w.clone());
            }
            record_audit_annotations(&invocation.hook.name, &answer, attributes);
            if !answer.allowed {
                return Err(call::denial(&invocation.hook.name, answer.status.as_ref()));
            }
        }
        Ok(())
    }
}
