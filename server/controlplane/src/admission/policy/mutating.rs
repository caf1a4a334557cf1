//! MutatingAdmissionPolicy (kube-apiserver's plugin of that name): the CEL mutations of
//! `admissionregistration.k8s.io/v1beta1` MutatingAdmissionPolicies, applied to the objects
//! of the requests their MutatingAdmissionPolicyBindings select (see the
//! [parent module](super)).
//!
//! - A mutation's expression gives an apply configuration
//!   (`Object{spec: Object.spec{replicas: 3}}`), merged into the object as server-side apply
//!   merges it (maps by key, list-maps by their keys, sets as unions, atomic values
//!   replaced), or a list of JSON patch operations (`[JSONPatch{op: "add", …}]`, with
//!   `jsonpatch.escapeKey`). The mutations of a binding run in order, each seeing the object
//!   as the ones before it left it, in the version its rules matched; the result is decoded
//!   in that version and converted back, so the schema still checks it afterwards.
//! - `reinvocationPolicy: IfNeeded`: the policy's bindings run once more when a later
//!   binding, or a later plugin (the mutating webhooks), changed the object after them.
//! - DELETE requests are never mutated. An expression that cannot be evaluated, a result
//!   that is not an apply configuration or patch, or a patch that does not apply follows the
//!   policy's `failurePolicy`:
//!   `MutatingAdmissionPolicy 'p' with binding 'b' denied request: <why>`.
//!
//! - An apply configuration may not set an atomic struct, map or list (a merge would replace
//!   it whole), as in Kubernetes.

use std::collections::BTreeMap;
use std::sync::Arc;

use apimachinery::Scheme;
use apimachinery::admission::{Attributes, MutatingPlugin, Operation, Plugin};
use apimachinery::cel::CelExpression;
use apimachinery::runtime::Object;
use apimachinery::status::{ApiError, StatusReason};
use async_trait::async_trait;
use kubernetes_api::admissionregistration_k8s_io::v1::{MatchResources, ParamRef};
use kubernetes_api::admissionregistration_k8s_io::v1beta1::{
    MutatingAdmissionPolicy, MutatingAdmissionPolicyBinding,
};
use kubernetes_api::admissionregistration_k8s_io::{
    MUTATING_ADMISSION_POLICY_BINDING_KIND, MUTATING_ADMISSION_POLICY_KIND,
};
use parking_lot::RwLock;
use serde_json::Value;

use super::{
    Compiled, Matcher, Memo, Selected, Selection, Source, Uses, base_activation, bind_variables,
    compile, conditions_hold, param_kind_of,
};
use crate::admission::review;
use crate::admission::webhook::rules;
use server::apply::merge::merge;
use server::patch::SchemaNode;
use server::registry::Registry;

/// The plugin's name, as the admission flags spell it.
pub const NAME: &str = "MutatingAdmissionPolicy";

/// The plugin, when the scheme serves the policy kinds.
pub fn plugin(registry: &Arc<Registry>, scheme: &Scheme) -> Option<Plugin> {
    scheme.by_kind("admissionregistration.k8s.io", "MutatingAdmissionPolicy")?;
    scheme.by_kind(
        "admissionregistration.k8s.io",
        "MutatingAdmissionPolicyBinding",
    )?;
    Some(Plugin {
        name: NAME,
        default_enabled: true,
        mutating: Some(Arc::new(Policies {
            source: Source {
                registry: registry.clone(),
                scheme: scheme.clone(),
            },
            memo: RwLock::new(None),
        })),
        validating: None,
    })
}

/// How a mutation's result is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PatchType {
    ApplyConfiguration,
    JsonPatch,
}

/// One mutation of a policy.
struct CompiledMutation {
    patch_type: Result<PatchType, String>,
    expression: Compiled,
}

/// A policy, compiled.
struct CompiledPolicy {
    name: String,
    param_kind: Option<(String, String)>,
    constraints: Option<Matcher>,
    fail_closed: bool,
    reinvoke: bool,
    conditions: Vec<(String, Compiled)>,
    variables: Vec<(String, Compiled)>,
    mutations: Vec<CompiledMutation>,
    uses: Uses,
}

/// A binding, compiled, with its policy.
struct CompiledBinding {
    name: String,
    policy: Arc<CompiledPolicy>,
    param_ref: Option<ParamRef>,
    matcher: Option<Matcher>,
}

/// The bindings in the order they run, with the index of the resources each can match.
type Bindings = (Vec<CompiledBinding>, rules::ResourceIndex);

/// The plugin's state.
pub struct Policies {
    source: Source,
    memo: Memo<Bindings>,
}

/// The v1 form of a v1beta1 value of the same shape (match resources and parameter
/// references are written alike in both versions); `None` if it does not read as one.
fn as_v1<T: serde::Serialize, U: serde::de::DeserializeOwned>(value: &T) -> Option<U> {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| serde_json::from_value(v).ok())
}

fn compile_policy(p: &MutatingAdmissionPolicy) -> CompiledPolicy {
    let spec = &p.spec;
    let constraints: Option<MatchResources> = spec.match_constraints.as_ref().and_then(as_v1);
    let mut policy = CompiledPolicy {
        name: p.metadata.name.clone().unwrap_or_default(),
        param_kind: spec
            .param_kind
            .as_ref()
            .map(|k| param_kind_of(k.api_version.as_ref(), k.kind.as_ref())),
        constraints: constraints.as_ref().map(Matcher::compile),
        fail_closed: spec.failure_policy.as_deref() != Some("Ignore"),
        reinvoke: spec.reinvocation_policy.as_deref() == Some("IfNeeded"),
        conditions: spec
            .match_conditions
            .iter()
            .map(|c| (c.name.clone(), compile(&c.expression)))
            .collect(),
        variables: spec
            .variables
            .iter()
            .map(|v| (v.name.clone(), compile(&v.expression)))
            .collect(),
        mutations: spec.mutations.iter().map(compile_mutation).collect(),
        uses: Uses::default(),
    };
    let compiled = policy
        .conditions
        .iter()
        .chain(&policy.variables)
        .filter_map(|(_, e)| e.as_ref().ok())
        .chain(
            policy
                .mutations
                .iter()
                .filter_map(|m| m.expression.as_ref().ok()),
        );
    policy.uses = Uses::of(compiled);
    policy
}

fn compile_mutation(
    m: &kubernetes_api::admissionregistration_k8s_io::v1beta1::Mutation,
) -> CompiledMutation {
    let (patch_type, expression) = match m.patch_type.as_str() {
        "ApplyConfiguration" => (
            Ok(PatchType::ApplyConfiguration),
            m.apply_configuration
                .as_ref()
                .and_then(|a| a.expression.as_deref()),
        ),
        "JSONPatch" => (
            Ok(PatchType::JsonPatch),
            m.json_patch.as_ref().and_then(|j| j.expression.as_deref()),
        ),
        other => (Err(format!("unsupported patchType {other:?}")), None),
    };
    let expression = match expression {
        Some(e) => CelExpression::compile_with_object_types(e),
        None => Err(format!("patchType {} has no expression", m.patch_type)),
    };
    CompiledMutation {
        patch_type,
        expression,
    }
}

/// Compiles the bindings with their policies, in the order they run (by name).
fn compile_bindings(policies: &[Box<dyn Object>], bindings: &[Box<dyn Object>]) -> Bindings {
    let by_name: BTreeMap<String, Arc<CompiledPolicy>> = policies
        .iter()
        .filter_map(|o| o.downcast_ref::<MutatingAdmissionPolicy>())
        .map(|p| {
            let c = compile_policy(p);
            (c.name.clone(), Arc::new(c))
        })
        .collect();
    let mut compiled: Vec<CompiledBinding> = bindings
        .iter()
        .filter_map(|o| o.downcast_ref::<MutatingAdmissionPolicyBinding>())
        .filter_map(|b| {
            let policy = by_name.get(&b.spec.policy_name)?.clone();
            let matcher: Option<MatchResources> = b.spec.match_resources.as_ref().and_then(as_v1);
            Some(CompiledBinding {
                name: b.metadata.name.clone().unwrap_or_default(),
                policy,
                param_ref: b.spec.param_ref.as_ref().and_then(as_v1),
                matcher: matcher.as_ref().map(Matcher::compile),
            })
        })
        .collect();
    compiled.sort_by(|a, b| a.name.cmp(&b.name));
    let index = rules::ResourceIndex::build(compiled.iter().map(|b| {
        match b.policy.constraints.as_ref().map(|m| &m.rules) {
            Some(rules) if !rules.is_empty() => rules::resources_of(rules.iter().map(|r| &r.rule)),
            _ => None,
        }
    }));
    (compiled, index)
}

/// Applies one mutation's result to the object (`object`, in the matched version).
fn apply_mutation(
    patch_type: PatchType,
    result: Value,
    object: &Value,
    schema: &SchemaNode,
) -> Result<Value, String> {
    match patch_type {
        PatchType::ApplyConfiguration => {
            if !result.is_object() {
                return Err(format!(
                    "the apply configuration must be an Object, not {}",
                    type_name(&result)
                ));
            }
            if let Some(path) = atomic_path(&result, schema, "") {
                return Err(format!(
                    "invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: {path}"
                ));
            }
            Ok(merge(Some(object), &result, schema))
        }
        PatchType::JsonPatch => {
            if !result.is_array() {
                return Err(format!(
                    "the JSON patch must be a list of JSONPatch, not {}",
                    type_name(&result)
                ));
            }
            let ops: json_patch::Patch = serde_json::from_value(result)
                .map_err(|e| format!("the JSON patch is invalid: {e}"))?;
            let mut patched = object.clone();
            json_patch::patch(&mut patched, &ops)
                .map_err(|e| format!("the JSON patch does not apply: {e}"))?;
            Ok(patched)
        }
    }
}

/// The path of the first value of an apply configuration that sets an atomic struct, map or
/// list, which a merge would replace whole (so values the configuration leaves out would be
/// lost): Kubernetes refuses such configurations. Lists of unknown type are atomic; free-form
/// values are not checked.
fn atomic_path(value: &Value, schema: &SchemaNode, path: &str) -> Option<String> {
    if !schema.is_known() {
        return None;
    }
    match value {
        Value::Object(map) => {
            if schema.map_atomic() && !path.is_empty() {
                return Some(path.to_string());
            }
            map.iter()
                .find_map(|(k, v)| atomic_path(v, &schema.field(k), &format!("{path}.{k}")))
        }
        Value::Array(items) => match schema.list_type().as_str() {
            "map" => items
                .iter()
                .enumerate()
                .find_map(|(i, v)| atomic_path(v, &schema.items(), &format!("{path}[{i}]"))),
            "set" => None,
            _ => Some(path.to_string()),
        },
        _ => None,
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "an object",
        Value::Array(_) => "a list",
        Value::String(_) => "a string",
        Value::Number(_) => "a number",
        Value::Bool(_) => "a boolean",
        Value::Null => "null",
    }
}

impl Policies {
    /// Runs one binding's mutations on the request's object; whether it changed.
    async fn run_binding(
        &self,
        binding: &CompiledBinding,
        attributes: &mut Attributes<'_>,
        namespace: &mut Option<Option<Box<dyn Object>>>,
    ) -> Result<bool, ApiError> {
        let policy = &binding.policy;
        let denied = |message: String| {
            ApiError::new(
                403,
                StatusReason::Forbidden,
                format!(
                    "MutatingAdmissionPolicy '{}' with binding '{}' denied request: {message}",
                    policy.name, binding.name
                ),
                None,
            )
        };
        let selection = Selection {
            constraints: policy.constraints.as_ref(),
            binding: binding.matcher.as_ref(),
            param_kind: policy.param_kind.as_ref(),
            param_ref: binding.param_ref.as_ref(),
            uses: Uses {
                // The object is always read: the mutations apply to it.
                object: true,
                ..policy.uses
            },
        };
        let (version, param_sets) = match self
            .source
            .select(&selection, attributes, namespace)
            .await?
        {
            Selected::No => return Ok(false),
            Selected::Yes(version, params) => (version, params),
            Selected::Error(e) if policy.fail_closed => return Err(denied(e)),
            Selected::Error(_) => return Ok(false),
            Selected::NoParams => {
                return Err(denied(
                    "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
                ));
            }
        };
        let kind = attributes.kind;
        let codec = kind
            .codec(version.version)
            .ok_or_else(|| ApiError::internal("no codec for the policy's version"))?;
        let schema = SchemaNode::of(codec.shape());
        let Some(current) = attributes.object() else {
            return Ok(false);
        };
        let original_version = current.info().version;
        let mut value = review::json_in(kind, current, version)?;
        let before = value.clone();
        let ns = namespace.as_ref().and_then(|n| n.as_deref());
        let base = base_activation(attributes, version, policy.uses, ns).map_err(denied)?;
        'params: for params in param_sets {
            let mut activation = base.clone();
            let mut bind = |name: &str, v: &Value| activation.set(name, v);
            bind("jsonpatch", &Value::Object(Default::default())).map_err(denied)?;
            if policy.uses.params {
                bind("params", &params).map_err(denied)?;
            }
            if policy.uses.object {
                bind("object", &value).map_err(denied)?;
            }
            match conditions_hold(&policy.conditions, &activation) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) if policy.fail_closed => return Err(denied(e)),
                Err(_) => continue,
            }
            if let Err(e) = bind_variables(&policy.variables, &mut activation) {
                if policy.fail_closed {
                    return Err(denied(e));
                }
                continue;
            }
            for (i, m) in policy.mutations.iter().enumerate() {
                let outcome = (|| -> Result<Value, String> {
                    let patch_type = m.patch_type.clone()?;
                    let expression = m
                        .expression
                        .as_ref()
                        .map_err(|e| format!("compilation failed: {e}"))?;
                    let result = expression
                        .evaluate_json_in(&activation)
                        .map_err(|e| format!("mutation {i} resulted in error: {e}"))?;
                    apply_mutation(patch_type, result, &value, &schema)
                        .map_err(|e| format!("mutation {i}: {e}"))
                })();
                match outcome {
                    Ok(patched) => {
                        value = patched;
                        if policy.uses.object {
                            activation.set("object", &value).map_err(denied)?;
                        }
                    }
                    Err(e) if policy.fail_closed => return Err(denied(e)),
                    Err(_) => continue 'params,
                }
            }
        }
        if value == before {
            return Ok(false);
        }
        let decoded = codec
            .decode_value(&value)
            .map_err(|e| denied(format!("the mutated object does not decode: {e}")))?;
        let mut patched = decoded.object;
        if patched.info().version != original_version {
            patched = kind
                .convert(patched, original_version)
                .map_err(ApiError::internal)?;
        }
        if let Some(object) = attributes.object_mut() {
            *object = patched;
        }
        attributes.object_changed();
        Ok(true)
    }
}

#[async_trait]
impl MutatingPlugin for Policies {
    fn handles(&self, attributes: &Attributes<'_>) -> bool {
        attributes.operation != Operation::Delete
            && !attributes.kind.strategy().exempt_from_admission_webhooks()
    }

    fn reinvocable(&self) -> bool {
        true
    }

    async fn admit(&self, attributes: &mut Attributes<'_>) -> Result<(), ApiError> {
        let bindings = self
            .source
            .compiled(
                (
                    &MUTATING_ADMISSION_POLICY_KIND,
                    &MUTATING_ADMISSION_POLICY_BINDING_KIND,
                ),
                &self.memo,
                compile_bindings,
            )
            .await?;
        if bindings.0.is_empty() || attributes.object().is_none() {
            return Ok(());
        }
        let (list, index) = &*bindings;
        let chosen = index.candidates(attributes.version.plural);
        let mut namespace: Option<Option<Box<dyn Object>>> = None;
        // The chain's second run, after a later plugin changed the object: the IfNeeded
        // bindings only, once.
        if attributes.is_reinvocation() {
            for &i in &chosen {
                if list[i].policy.reinvoke {
                    self.run_binding(&list[i], attributes, &mut namespace)
                        .await?;
                }
            }
            return Ok(());
        }
        let mut last_change: Option<usize> = None;
        for (position, &i) in chosen.iter().enumerate() {
            if self
                .run_binding(&list[i], attributes, &mut namespace)
                .await?
            {
                last_change = Some(position);
            }
        }
        // IfNeeded: run once more when a later binding changed the object after it ran.
        if let Some(changed_at) = last_change {
            for &i in &chosen[..changed_at] {
                if list[i].policy.reinvoke {
                    self.run_binding(&list[i], attributes, &mut namespace)
                        .await?;
                }
            }
        }
        Ok(())
    }
}
