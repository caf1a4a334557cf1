//! Kubernetes' CEL authorizer library (`k8s.io/apiserver/pkg/cel/library/authz`), as the
//! `authorizer` variable of admission policies sees it:
//!
//! ```text
//! authorizer.group('apps').resource('deployments').subresource('scale')
//!     .namespace('ns').name('web').check('update').allowed()
//! authorizer.path('/healthz').check('get').reason()
//! authorizer.serviceAccount('ns', 'sa').group('').resource('pods').check('list').allowed()
//! authorizer.requestResource.check('delete').errored()
//! ```
//!
//! The checks are maps tagged with what they are (`authorizer`, `group`, `resource`, `path`,
//! `decision`); `check` asks the [`Authorizer`] bound to the evaluation (see
//! [`CelActivation::set_authorizer`](super::CelActivation::set_authorizer)) through a
//! thread-local set for the duration of one synchronous evaluation.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use cel::extractors::This;
use cel::objects::Key;
use cel::{ExecutionError, Value};

use crate::authorization::{Attributes, Authorizer, Decision};
use crate::user::UserInfo;

/// What `check` asks: the authorizer and the user whose permissions the checks are about.
#[derive(Clone)]
pub struct AuthorizerContext {
    /// The server's authorizer.
    pub authorizer: Arc<dyn Authorizer>,
    /// The requesting user.
    pub user: UserInfo,
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<AuthorizerContext>>> = const { RefCell::new(None) };
}

/// Runs `f` with `context` as the authorizer `check` asks (none: `check` fails).
pub(super) fn with_context<R>(
    context: Option<&Arc<AuthorizerContext>>,
    f: impl FnOnce() -> R,
) -> R {
    let Some(context) = context else {
        return f();
    };
    let previous = CURRENT.with(|c| c.replace(Some(context.clone())));
    struct Restore(Option<Arc<AuthorizerContext>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = previous);
        }
    }
    let _restore = Restore(previous);
    f()
}

const TAG: &str = "@authz";

fn get<'a>(map: &'a HashMap<Key, Value>, key: &str) -> Option<&'a Value> {
    map.get(&Key::String(Arc::new(key.to_string())))
}

fn text(map: &HashMap<Key, Value>, key: &str) -> String {
    match get(map, key) {
        Some(Value::String(s)) => s.to_string(),
        _ => String::new(),
    }
}

fn tagged(fields: Vec<(&str, Value)>) -> Value {
    let map: HashMap<String, Value> = fields
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    Value::from(map)
}

fn string(s: &str) -> Value {
    Value::String(Arc::new(s.to_string()))
}

/// The map of a check value, with its tag, or a function error naming `function`.
fn check_map(
    function: &str,
    this: &Value,
    tags: &[&str],
) -> Result<Arc<HashMap<Key, Value>>, ExecutionError> {
    if let Value::Map(m) = this
        && let Some(Value::String(tag)) = get(&m.map, TAG)
        && tags.contains(&tag.as_str())
    {
        return Ok(m.map.clone());
    }
    Err(ExecutionError::function_error(
        function,
        format!("{function}() is called on {}", tags.join(" or ")),
    ))
}

/// A copy of `map` with `key` set and the tag changed to `tag`.
fn with(map: &HashMap<Key, Value>, tag: &str, key: &str, value: Value) -> Value {
    let mut out: HashMap<String, Value> = map
        .iter()
        .filter_map(|(k, v)| match k {
            Key::String(s) => Some((s.to_string(), v.clone())),
            _ => None,
        })
        .collect();
    out.insert(TAG.to_string(), string(tag));
    out.insert(key.to_string(), value);
    Value::from(out)
}

/// The `authorizer` value, with its `requestResource` check of the request's own resource.
pub fn authorizer_value(request_resource: &[(&str, &str)]) -> Value {
    let mut resource: Vec<(&str, Value)> = vec![(TAG, string("resource"))];
    resource.extend(request_resource.iter().map(|(k, v)| (*k, string(v))));
    tagged(vec![
        (TAG, string("authorizer")),
        ("requestResource", tagged(resource)),
    ])
}

fn group(This(this): This<Value>, name: Arc<String>) -> Result<Value, ExecutionError> {
    let m = check_map("group", &this, &["authorizer"])?;
    Ok(with(&m, "group", "group", Value::String(name)))
}

fn resource(This(this): This<Value>, name: Arc<String>) -> Result<Value, ExecutionError> {
    let m = check_map("resource", &this, &["group"])?;
    Ok(with(&m, "resource", "resource", Value::String(name)))
}

fn subresource(This(this): This<Value>, name: Arc<String>) -> Result<Value, ExecutionError> {
    let m = check_map("subresource", &this, &["resource"])?;
    Ok(with(&m, "resource", "subresource", Value::String(name)))
}

fn namespace(This(this): This<Value>, name: Arc<String>) -> Result<Value, ExecutionError> {
    let m = check_map("namespace", &this, &["resource"])?;
    Ok(with(&m, "resource", "namespace", Value::String(name)))
}

fn name(This(this): This<Value>, name: Arc<String>) -> Result<Value, ExecutionError> {
    let m = check_map("name", &this, &["resource"])?;
    Ok(with(&m, "resource", "name", Value::String(name)))
}

fn path(This(this): This<Value>, path: Arc<String>) -> Result<Value, ExecutionError> {
    let m = check_map("path", &this, &["authorizer"])?;
    Ok(with(&m, "path", "path", Value::String(path)))
}

fn service_account(
    This(this): This<Value>,
    namespace: Arc<String>,
    name: Arc<String>,
) -> Result<Value, ExecutionError> {
    let m = check_map("serviceAccount", &this, &["authorizer"])?;
    let user = format!("system:serviceaccount:{namespace}:{name}");
    let with_user = with(&m, "authorizer", "serviceAccount", string(&user));
    let Value::Map(map) = &with_user else {
        return Ok(with_user);
    };
    Ok(with(
        &map.map,
        "authorizer",
        "serviceAccountNamespace",
        Value::String(namespace),
    ))
}

fn check(This(this): This<Value>, verb: Arc<String>) -> Result<Value, ExecutionError> {
    let m = check_map("check", &this, &["resource", "path"])?;
    let context = CURRENT.with(|c| c.borrow().clone()).ok_or_else(|| {
        ExecutionError::function_error("check", "no authorizer is bound to this evaluation")
    })?;
    let is_path = matches!(get(&m, TAG), Some(Value::String(t)) if t.as_str() == "path");
    let user = match get(&m, "serviceAccount") {
        Some(Value::String(sa)) => {
            let namespace = text(&m, "serviceAccountNamespace");
            UserInfo {
                name: sa.to_string(),
                uid: String::new(),
                groups: vec![
                    "system:serviceaccounts".to_string(),
                    format!("system:serviceaccounts:{namespace}"),
                    "system:authenticated".to_string(),
                ],
                extra: Default::default(),
            }
        }
        _ => context.user.clone(),
    };
    let attributes = Attributes {
        user: std::borrow::Cow::Owned(user),
        verb: std::borrow::Cow::Owned(verb.to_string()),
        is_resource_request: !is_path,
        path: std::borrow::Cow::Owned(text(&m, "path")),
        namespace: std::borrow::Cow::Owned(text(&m, "namespace")),
        api_group: std::borrow::Cow::Owned(text(&m, "group")),
        api_version: std::borrow::Cow::Owned(text(&m, "version")),
        resource: std::borrow::Cow::Owned(text(&m, "resource")),
        subresource: std::borrow::Cow::Owned(text(&m, "subresource")),
        name: std::borrow::Cow::Owned(text(&m, "name")),
    };
    let verdict = context.authorizer.authorize(&attributes);
    let decision = match verdict.decision {
        Decision::Allow => "allow",
        Decision::Deny => "deny",
        Decision::NoOpinion => "noOpinion",
    };
    Ok(tagged(vec![
        (TAG, string("decision")),
        ("decision", string(decision)),
        ("reason", string(&verdict.reason.to_string())),
    ]))
}

fn allowed(This(this): This<Value>) -> Result<bool, ExecutionError> {
    let m = check_map("allowed", &this, &["decision"])?;
    Ok(text(&m, "decision") == "allow")
}

fn reason(This(this): This<Value>) -> Result<Value, ExecutionError> {
    let m = check_map("reason", &this, &["decision"])?;
    Ok(string(&text(&m, "reason")))
}

fn errored(This(this): This<Value>) -> Result<bool, ExecutionError> {
    check_map("errored", &this, &["decision"])?;
    Ok(false)
}

fn error(This(this): This<Value>) -> Result<Value, ExecutionError> {
    check_map("error", &this, &["decision"])?;
    Ok(string(""))
}

/// Registers the library's functions; an error names one that clashes with a standard one.
pub(super) fn register(
    cx: &mut cel::Context<'static, 'static>,
) -> Result<(), cel::DeclarationError> {
    cx.add_function("group", group)?;
    cx.add_function("resource", resource)?;
    cx.add_function("subresource", subresource)?;
    cx.add_function("namespace", namespace)?;
    cx.add_function("name", name)?;
    cx.add_function("path", path)?;
    cx.add_function("serviceAccount", service_account)?;
    cx.add_function("check", check)?;
    cx.add_function("allowed", allowed)?;
    cx.add_function("reason", reason)?;
    cx.add_function("errored", errored)?;
    cx.add_function("error", error)?;
    Ok(())
}
