//! What admission extensions see of a request: the object in the version they matched, and
//! the `AdmissionRequest` that webhooks receive in their `AdmissionReview` and that CEL
//! policies read as `request`.

use apimachinery::ResourceInfo;
use apimachinery::admission::{Attributes, Operation};
use apimachinery::cel::{AuthorizerContext, CelActivation};
use apimachinery::runtime::{Kind, Object};
use apimachinery::status::ApiError;
use kubernetes_api::core::NAMESPACE_KIND;
use serde::Serialize;
use serde_json::{Value, json};

use server::registry::Registry;

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

/// `f` of `object` in `version`: of the object itself when it is already in it, else of its
/// conversion through the hub.
fn in_version<R>(
    kind: &Kind,
    object: &dyn Object,
    version: &ResourceInfo,
    f: impl FnOnce(&dyn Object) -> Result<R, apimachinery::scheme::CodecError>,
) -> Result<R, ApiError> {
    if object.info().version == version.version {
        return f(object).map_err(ApiError::internal);
    }
    let codec = kind
        .codec(version.version)
        .ok_or_else(|| ApiError::internal(format!("no codec for version {}", version.version)))?;
    let converted = codec
        .convert_from_hub(&object.to_hub())
        .map_err(ApiError::internal)?;
    f(&*converted).map_err(ApiError::internal)
}

/// The JSON of `object` in `version`, with its `apiVersion` and `kind`.
pub fn json_in(
    kind: &Kind,
    object: &dyn Object,
    version: &ResourceInfo,
) -> Result<Value, ApiError> {
    let mut value = in_version(kind, object, version, |o| o.to_value())?;
    if let Some(map) = value.as_object_mut() {
        map.insert("apiVersion".into(), Value::from(version.api_version()));
        map.insert("kind".into(), Value::from(version.kind));
    }
    Ok(value)
}

/// A group, version and kind (or resource) as an `AdmissionRequest` writes them.
#[derive(Serialize)]
struct GroupVersion<'a> {
    group: &'a str,
    version: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resource: Option<&'a str>,
}

fn gvk(i: &ResourceInfo) -> GroupVersion<'_> {
    GroupVersion {
        group: i.group,
        version: i.version,
        kind: Some(i.kind),
        resource: None,
    }
}

fn gvr(i: &ResourceInfo) -> GroupVersion<'_> {
    GroupVersion {
        group: i.group,
        version: i.version,
        kind: None,
        resource: Some(i.plural),
    }
}

/// The requesting user, as an `AdmissionRequest` writes it.
#[derive(Serialize)]
struct UserJson<'a> {
    username: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    uid: &'a str,
    groups: &'a [String],
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    extra: &'a std::collections::BTreeMap<String, Vec<String>>,
}

/// An `AdmissionRequest` v1; `O` is how its objects are held (a JSON tree or JSON text).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RequestJson<'a, O: Serialize> {
    uid: &'a str,
    kind: GroupVersion<'a>,
    resource: GroupVersion<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sub_resource: Option<&'a str>,
    request_kind: GroupVersion<'a>,
    request_resource: GroupVersion<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_sub_resource: Option<&'a str>,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<&'a str>,
    operation: &'static str,
    user_info: UserJson<'a>,
    object: Option<O>,
    old_object: Option<O>,
    dry_run: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    options: Option<Value>,
}

/// The request's fields, with `object` and `oldObject` as given.
fn request_json<'a, O: Serialize>(
    attributes: &'a Attributes<'_>,
    version: &'a ResourceInfo,
    uid: &'a str,
    object: Option<O>,
    old_object: Option<O>,
) -> RequestJson<'a, O> {
    let requested = attributes.version;
    let user = attributes.user;
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
    let options = (!options_kind.is_empty()).then(|| {
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
        options
    });
    let subresource = (!attributes.subresource.is_empty()).then_some(attributes.subresource);
    RequestJson {
        uid,
        kind: gvk(version),
        resource: gvr(version),
        sub_resource: subresource,
        request_kind: gvk(requested),
        request_resource: gvr(requested),
        request_sub_resource: subresource,
        name: attributes.object_name(),
        namespace: (!attributes.namespace.is_empty()).then_some(attributes.namespace),
        operation: attributes.operation.as_str(),
        user_info: UserJson {
            username: &user.name,
            uid: &user.uid,
            groups: &user.groups,
            extra: &user.extra,
        },
        object,
        old_object,
        dry_run: attributes.dry_run,
        options,
    }
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
    let json = |o: Option<&dyn Object>| match o {
        Some(o) if with_objects => json_in(attributes.kind, o, version).map(Some),
        _ => Ok(None),
    };
    let request = request_json(
        attributes,
        version,
        uid,
        json(attributes.object())?,
        json(attributes.old_object)?,
    );
    serde_json::to_value(request).map_err(ApiError::internal)
}

/// The JSON of `object` in `version` (its `apiVersion` and `kind` first), written from its
/// typed form.
fn json_text_in(
    kind: &Kind,
    object: &dyn Object,
    version: &ResourceInfo,
) -> Result<Box<serde_json::value::RawValue>, ApiError> {
    let bytes = in_version(kind, object, version, |o| o.to_json())?;
    let text = String::from_utf8(bytes).map_err(ApiError::internal)?;
    serde_json::value::RawValue::from_string(text).map_err(ApiError::internal)
}

/// The `AdmissionReview` v1 a webhook that matched in `version` is sent, as JSON: its objects
/// are written straight from their typed form, with no JSON tree in between (building and
/// writing the tree cost about 120k instructions per ConfigMap create with one webhook:
/// 559k before, 439k after, measured with `tools/callgrind-creates`).
pub fn admission_review_json(
    attributes: &Attributes<'_>,
    version: &ResourceInfo,
    uid: &str,
) -> Result<Vec<u8>, ApiError> {
    let text = |o: Option<&dyn Object>| match o {
        Some(o) => json_text_in(attributes.kind, o, version).map(Some),
        None => Ok(None),
    };
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Review<'a> {
        api_version: &'static str,
        kind: &'static str,
        request: RequestJson<'a, Box<serde_json::value::RawValue>>,
    }
    let review = Review {
        api_version: "admission.k8s.io/v1",
        kind: "AdmissionReview",
        request: request_json(
            attributes,
            version,
            uid,
            text(attributes.object())?,
            text(attributes.old_object)?,
        ),
    };
    let mut out = Vec::with_capacity(2048);
    serde_json::to_writer(&mut out, &review).map_err(ApiError::internal)?;
    Ok(out)
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
