//! What admission extensions see of a request: the object in the version they matched, and
//! the `AdmissionRequest` that webhooks receive in their `AdmissionReview` and that CEL
//! policies read as `request`.

use apimachinery::ResourceInfo;
use apimachinery::admission::{Attributes, Operation};
use apimachinery::cel::{AuthorizerContext, CelActivation};
use apimachinery::runtime::{Kind, Object};
use apimachinery::status::ApiError;
use generated::core::NAMESPACE_KIND;
use serde_json::{Value, json};

use crate::registry::Registry;

/// The namespace of a namespaced request, from the watch cache; `None` for a cluster-scoped
/// request, a Namespace request or a namespace that does not exist.
pub async fn namespace_object(
    registry: &Registry,
    attributes: &Attributes<'_>,
) -> Result<Option<Box<dyn Object>>, ApiError> {
    if attributes.namespace.is_empty() || std::ptr::eq(attributes.kind, &NAMESPACE_KIND) {
        return Ok(None);
    }
    let namespaces = registry.store(&NAMESPACE_KIND)?;
    match namespaces.get("", attributes.namespace, "0").await {
        Ok(ns) => Ok(Some(ns)),
        Err(e) if e.code() == 404 => Ok(None),
        Err(e) => Err(e),
    }
}

/// The JSON of `object` in `version`, with its `apiVersion` and `kind`.
pub fn json_in(
    kind: &Kind,
    object: &dyn Object,
    version: &ResourceInfo,
) -> Result<Value, ApiError> {
    let mut value = if object.info().version == version.version {
        object.to_value()
    } else {
        let codec = kind.codec(version.version).ok_or_else(|| {
            ApiError::internal(format!("no codec for version {}", version.version))
        })?;
        codec
            .convert_from_hub(&object.to_hub())
            .map_err(ApiError::internal)?
            .to_value()
    }
    .map_err(ApiError::internal)?;
    if let Some(map) = value.as_object_mut() {
        map.insert("apiVersion".into(), Value::from(version.api_version()));
        map.insert("kind".into(), Value::from(version.kind));
    }
    Ok(value)
}

/// The `request` of an `AdmissionReview` v1 (also CEL's `request` variable), for a hook or
/// policy that matched in `version`; without `with_objects` its `object` and `oldObject` are
/// null (CEL expressions read them as variables of their own).
pub fn admission_request(
    attributes: &Attributes<'_>,
    version: &ResourceInfo,
    uid: &str,
    with_objects: bool,
) -> Result<Value, ApiError> {
    let requested = attributes.version;
    let gvk = |i: &ResourceInfo| json!({"group": i.group, "version": i.version, "kind": i.kind});
    let gvr =
        |i: &ResourceInfo| json!({"group": i.group, "version": i.version, "resource": i.plural});
    let object = match attributes.object() {
        Some(o) if with_objects => json_in(attributes.kind, o, version)?,
        _ => Value::Null,
    };
    let old = match attributes.old_object {
        Some(o) if with_objects => json_in(attributes.kind, o, version)?,
        _ => Value::Null,
    };
    let user = attributes.user;
    let mut user_info = json!({"username": user.name, "groups": user.groups});
    if !user.uid.is_empty() {
        user_info["uid"] = Value::from(user.uid.clone());
    }
    if !user.extra.is_empty() {
        user_info["extra"] = json!(user.extra);
    }
    let options_kind = match attributes.operation {
        Operation::Create => "CreateOptions",
        Operation::Update => {
            if attributes.options.patch_type.is_some() {
                "PatchOptions"
            } else {
                "UpdateOptions"
            }
        }
        Operation::Delete => "DeleteOptions",
        Operation::Connect => "",
    };
    let mut request = json!({
        "uid": uid,
        "kind": gvk(version),
        "resource": gvr(version),
        "requestKind": gvk(requested),
        "requestResource": gvr(requested),
        "name": attributes.object_name(),
        "operation": attributes.operation.as_str(),
        "userInfo": user_info,
        "object": object,
        "oldObject": old,
        "dryRun": attributes.dry_run,
    });
    if !attributes.subresource.is_empty() {
        request["subResource"] = Value::from(attributes.subresource);
        request["requestSubResource"] = Value::from(attributes.subresource);
    }
    if !attributes.namespace.is_empty() {
        request["namespace"] = Value::from(attributes.namespace);
    }
    if !options_kind.is_empty() {
        let mut options = json!({"kind": options_kind, "apiVersion": "meta.k8s.io/v1"});
        let o = attributes.options;
        if !o.field_manager.is_empty() {
            options["fieldManager"] = Value::from(o.field_manager.clone());
        }
        if let Some(p) = &o.propagation_policy {
            options["propagationPolicy"] = Value::from(p.clone());
        }
        if o.force {
            options["force"] = Value::Bool(true);
        }
        if attributes.dry_run {
            options["dryRun"] = json!(["All"]);
        }
        request["options"] = options;
    }
    Ok(request)
}

/// Binds the `authorizer` variable of CEL expressions (Kubernetes' authorizer library) to the
/// server's authorizer and the requesting user, its `requestResource` being the request's own
/// resource; nothing when the request went through no authorizer (a check then fails).
pub fn bind_authorizer(activation: &mut CelActivation, attributes: &Attributes<'_>) {
    let Some(authorizer) = attributes.authorizer else {
        return;
    };
    let requested = attributes.version;
    activation.set_authorizer(
        AuthorizerContext {
            authorizer: authorizer.clone(),
            user: attributes.user.clone(),
        },
        &[
            ("group", requested.group),
            ("version", requested.version),
            ("resource", requested.plural),
            ("subresource", attributes.subresource),
            ("namespace", attributes.namespace),
            ("name", attributes.object_name()),
        ],
    );
}
