//! The `ConversionReview` exchange without the I/O: the review sent for some objects, and
//! kube-apiserver's checks of the answer (`webhook_converter.go`), with its messages.
//!
//! Messages come in two layers, as kube-apiserver words them: what [`converted_objects`]
//! finds wrong with the review is put after `conversion webhook for <gvk> failed: ` by the
//! caller; what [`restore`] finds wrong with the converted objects is a whole message.

use apimachinery::meta::ObjectMeta;
use apimachinery::runtime::Object;
use apimachinery::runtime::unstructured::Unstructured;
use apimachinery::validation::{aggregate, validate_annotations, validate_labels};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// The `apiextensions.k8s.io` versions of `ConversionReview` the server speaks, in no order.
const SUPPORTED: [&str; 2] = ["v1", "v1beta1"];

/// The review version to send: the first of the CRD's `conversionReviewVersions` the server
/// supports.
pub fn review_version(listed: &[String]) -> Result<&'static str, String> {
    listed
        .iter()
        .find_map(|v| SUPPORTED.iter().copied().find(|s| s == v))
        .ok_or_else(|| "no supported conversion review versions".to_string())
}

/// The `ConversionReview` asking for `objects` in `desired_api_version`, as JSON.
pub fn request(
    review_version: &str,
    uid: &str,
    desired_api_version: &str,
    objects: &[Unstructured],
) -> Vec<u8> {
    let objects: Vec<&Unstructured> = objects.iter().collect();
    serde_json::to_vec(&json!({
        "apiVersion": format!("apiextensions.k8s.io/{review_version}"),
        "kind": "ConversionReview",
        "request": {
            "uid": uid,
            "desiredAPIVersion": desired_api_version,
            "objects": objects,
        },
    }))
    .expect("JSON maps always serialize")
}

/// `<group>/<version>, Kind=<kind>` of an `apiVersion` and `kind` (Go's
/// `GroupVersionKind.String`).
pub fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    format!("{group}/{version}, Kind={kind}")
}

/// Go's `%T` of a decoded JSON value.
fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

fn str_of<'v>(value: &'v Value, key: &str) -> &'v str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The converted objects of a webhook's answer to the review `uid` sent as `review_version`:
/// an `apiextensions.k8s.io/v1` `ConversionReview` (its kind and uid checked; a `v1beta1`
/// answer is not), with a `response` whose `result.status` is `Success`. The error is what
/// follows `failed: `.
pub fn converted_objects(
    body: &[u8],
    review_version: &str,
    uid: &str,
) -> Result<Vec<Value>, String> {
    let review: Value = serde_json::from_slice(body)
        .map_err(|e| format!("the response is not a ConversionReview: {e}"))?;
    if !review.is_object() {
        return Err("the response is not a ConversionReview: not a JSON object".into());
    }
    let v1 = review_version == "v1";
    if v1 {
        let (api_version, kind) = (str_of(&review, "apiVersion"), str_of(&review, "kind"));
        if (api_version, kind) != ("apiextensions.k8s.io/v1", "ConversionReview") {
            return Err(format!(
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {}",
                gvk_string(api_version, kind)
            ));
        }
    }
    let Some(response) = review.get("response").filter(|r| !r.is_null()) else {
        return Err("no response provided".into());
    };
    if v1 {
        let got = str_of(response, "uid");
        if got != uid {
            return Err(format!("expected response.uid={uid:?}, got {got:?}"));
        }
    }
    let result = response.get("result").unwrap_or(&Value::Null);
    let status = str_of(result, "status");
    if status != "Success" {
        let message = str_of(result, "message");
        if !message.is_empty() {
            return Err(message.to_string());
        }
        return Err(format!(
            "response.result.status was '{status}', not 'Success'"
        ));
    }
    match response.get("convertedObjects") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(objects)) => Ok(objects.clone()),
        Some(other) => Err(format!(
            "the response's convertedObjects is a {}, not a list",
            go_type(other)
        )),
    }
}

/// What a conversion of `originals` into `desired_api_version` must satisfy, and how the
/// messages name it: `gvk` is the converted object's (or the list's) `GroupVersionKind`.
pub struct Expectation<'a> {
    /// The `apiVersion` asked for.
    pub desired_api_version: &'a str,
    /// `<group>/<version>, Kind=<kind>` of the object (or list) converted.
    pub gvk: &'a str,
    /// Whether the objects are the items of one list.
    pub list: bool,
}

/// A converted object's metadata and its other fields (without `apiVersion` and `kind`).
pub type Restored = (ObjectMeta, Map<String, Value>);

/// The checked conversion of each original: `(metadata, fields)` of the converted object,
/// whose metadata is the original's but for the labels and annotations the webhook returned
/// (kube-apiserver's `validateConvertedObject` and `restoreObjectMeta`).
pub fn restore(
    originals: &[Unstructured],
    converted: Vec<Value>,
    expect: &Expectation<'_>,
) -> Result<Vec<Restored>, String> {
    let gvk = expect.gvk;
    if converted.len() != originals.len() {
        return Err(format!(
            "conversion webhook for {gvk} returned {} objects, expected {}",
            converted.len(),
            originals.len()
        ));
    }
    let mut out = Vec::with_capacity(originals.len());
    for (i, (original, object)) in originals.iter().zip(converted).enumerate() {
        // kube-apiserver counts a list's items from 1 once the object decoded, and names the
        // single object's index 0.
        let (invalid_object, invalid_metadata) = if expect.list {
            (
                format!(
                    "conversion webhook for {gvk} returned invalid converted object at index {}",
                    i + 1
                ),
                format!(
                    "conversion webhook for {gvk} returned invalid metadata in object at index {}",
                    i + 1
                ),
            )
        } else {
            (
                format!("conversion webhook for {gvk} returned invalid object at index 0"),
                format!("conversion webhook for {gvk} returned invalid metadata"),
            )
        };
        let Value::Object(mut object) = object else {
            let why = format!(
                "the converted object is a {}, not an object",
                go_type(&object)
            );
            return Err(if expect.list {
                format!(
                    "conversion webhook for {gvk} returned invalid converted object at index {i}: {why}"
                )
            } else {
                why
            });
        };
        let as_value = |o: &Map<String, Value>, key: &str| {
            o.get(key).and_then(Value::as_str).unwrap_or("").to_string()
        };
        let got_version = as_value(&object, "apiVersion");
        if got_version != expect.desired_api_version {
            return Err(format!(
                "{invalid_object}: invalid groupVersion (expected {}, received {got_version})",
                expect.desired_api_version
            ));
        }
        let original_kind = original.info().kind;
        let got_kind = as_value(&object, "kind");
        if got_kind != original_kind {
            return Err(format!(
                "{invalid_object}: invalid kind (expected {original_kind}, received {got_kind})"
            ));
        }
        // `validateConvertedObject`: the single object's message drops the index.
        let invalid_identity = if expect.list {
            invalid_object.clone()
        } else {
            format!("conversion webhook for {gvk} returned invalid object")
        };
        let meta = object.get("metadata");
        let meta_str = |key: &str| {
            meta.and_then(|m| m.get(key))
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        let original_meta = original.metadata();
        for (what, want, got) in [
            ("name", original_meta.name.as_deref(), meta_str("name")),
            (
                "namespace",
                original_meta.namespace.as_deref(),
                meta_str("namespace"),
            ),
            ("UID", original_meta.uid.as_deref(), meta_str("uid")),
        ] {
            let want = want.unwrap_or("");
            if want != got {
                return Err(format!(
                    "{invalid_identity}: must have the same {what}: {want} != {got}"
                ));
            }
        }
        let metadata = restore_metadata(original_meta, object.get("metadata"))
            .map_err(|e| format!("{invalid_metadata}: {e}"))?;
        object.shift_remove("apiVersion");
        object.shift_remove("kind");
        object.shift_remove("metadata");
        out.push((metadata, object));
    }
    Ok(out)
}

/// The original's metadata with the labels and annotations of the converted object's
/// (`restoreObjectMeta`): absent or null ones are removed, changed ones must be valid.
fn restore_metadata(original: &ObjectMeta, returned: Option<&Value>) -> Result<ObjectMeta, String> {
    let returned = match returned {
        None => return Err("missing metadata in converted object".into()),
        Some(Value::Object(m)) => m,
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in converted object",
                go_type(other)
            ));
        }
    };
    let mut restored = original.clone();
    for field in ["labels", "annotations"] {
        let current = if field == "labels" {
            &original.labels
        } else {
            &original.annotations
        };
        let map = match returned.get(field) {
            None | Some(Value::Null) => BTreeMap::new(),
            Some(Value::Object(m)) => {
                let mut map = BTreeMap::new();
                for (k, v) in m {
                    let Value::String(v) = v else {
                        return Err(format!(
                            "metadata.{field}[{k}] must be a string, but is {} in converted object",
                            go_type(v)
                        ));
                    };
                    map.insert(k.clone(), v.clone());
                }
                if &map != current {
                    let errors = if field == "labels" {
                        validate_labels(&map, "metadata.labels")
                    } else {
                        // The path kube-apiserver's converter gives.
                        validate_annotations(&map, "metadata.annotation")
                    };
                    if !errors.is_empty() {
                        return Err(aggregate(&errors));
                    }
                }
                map
            }
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    go_type(other)
                ));
            }
        };
        if field == "labels" {
            restored.labels = map;
        } else {
            restored.annotations = map;
        }
    }
    Ok(restored)
}

#[cfg(test)]
mod tests {
    use super::*;
    use apimachinery::runtime::VersionCodec;
    use apimachinery::runtime::unstructured::{UnstructuredCodec, UnstructuredVersion};
    use std::sync::Arc;

    fn original() -> Unstructured {
        let info = apimachinery::runtime::unstructured::tests_support::widget_info();
        let codec = UnstructuredCodec::new(Arc::new(UnstructuredVersion::new(info, None)));
        let decoded = codec
            .decode_json(
                br#"{"apiVersion":"example.dev/v1","kind":"Gadget","metadata":{"name":"a","namespace":"ns","uid":"u1","generation":3,"labels":{"keep":"me"}},"spec":{"size":3}}"#,
            )
            .unwrap();
        decoded
            .object
            .downcast_ref::<Unstructured>()
            .unwrap()
            .clone()
    }

    fn answer(response: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": response
        }))
        .unwrap()
    }

    const GVK: &str = "example.dev/v1, Kind=Gadget";

    fn single() -> Expectation<'static> {
        Expectation {
            desired_api_version: "example.dev/v2",
            gvk: GVK,
            list: false,
        }
    }

    fn converted(meta: Value) -> Value {
        json!({"apiVersion": "example.dev/v2", "kind": "Gadget", "metadata": meta, "spec": {"sizes": [3]}})
    }

    #[test]
    fn the_review_version_is_the_first_supported() {
        assert_eq!(
            review_version(&["v2".into(), "v1beta1".into(), "v1".into()]),
            Ok("v1beta1")
        );
        assert_eq!(
            review_version(&["v3".into()]).unwrap_err(),
            "no supported conversion review versions"
        );
        let body: Value =
            serde_json::from_slice(&request("v1", "x", "example.dev/v2", &[original()])).unwrap();
        assert_eq!(body["apiVersion"], "apiextensions.k8s.io/v1");
        assert_eq!(body["request"]["desiredAPIVersion"], "example.dev/v2");
        assert_eq!(body["request"]["objects"][0]["metadata"]["name"], "a");
    }

    #[test]
    fn reviews_are_checked_as_kube_apiserver_checks_them() {
        let ok =
            json!({"uid": "u", "result": {"status": "Success"}, "convertedObjects": [{"a": 1}]});
        assert_eq!(
            converted_objects(&answer(ok.clone()), "v1", "u")
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            converted_objects(&answer(ok.clone()), "v1", "other").unwrap_err(),
            "expected response.uid=\"other\", got \"u\""
        );
        // v1beta1 answers are not checked for their uid or kind.
        let beta = serde_json::to_vec(&json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "ConversionReview", "response": ok})).unwrap();
        assert!(converted_objects(&beta, "v1beta1", "other").is_ok());
        assert_eq!(
            converted_objects(&beta, "v1", "u").unwrap_err(),
            "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got apiextensions.k8s.io/v1beta1, Kind=ConversionReview"
        );
        assert_eq!(
            converted_objects(&answer(Value::Null), "v1", "u").unwrap_err(),
            "no response provided"
        );
        let failed = json!({"uid": "u", "result": {"status": "Failure", "message": "custom webhook conversion error"}});
        assert_eq!(
            converted_objects(&answer(failed), "v1", "u").unwrap_err(),
            "custom webhook conversion error"
        );
        let bare = json!({"uid": "u", "result": {"status": "Failure"}});
        assert_eq!(
            converted_objects(&answer(bare), "v1", "u").unwrap_err(),
            "response.result.status was 'Failure', not 'Success'"
        );
    }

    #[test]
    fn converted_objects_keep_the_original_metadata_but_labels_and_annotations() {
        let restored = restore(
            &[original()],
            vec![converted(
                json!({"name": "a", "namespace": "ns", "uid": "u1", "generation": 42,
                "labels": {"to": "v2"}, "annotations": {"from": "v1"}, "finalizers": ["foo"]}),
            )],
            &single(),
        )
        .unwrap();
        let (meta, fields) = &restored[0];
        assert_eq!(meta.generation, Some(3));
        assert!(meta.finalizers.is_empty());
        assert_eq!(meta.labels.get("to").map(String::as_str), Some("v2"));
        assert_eq!(meta.labels.get("keep"), None);
        assert_eq!(meta.annotations.get("from").map(String::as_str), Some("v1"));
        assert_eq!(fields.get("spec"), Some(&json!({"sizes": [3]})));
        assert!(!fields.contains_key("apiVersion") && !fields.contains_key("metadata"));
    }

    #[test]
    fn wrong_conversions_read_as_kube_apiserver_words_them() {
        let meta = json!({"name": "a", "namespace": "ns", "uid": "u1"});
        let err = |objects: Vec<Value>, expect: &Expectation<'_>| {
            restore(&[original()], objects, expect).unwrap_err()
        };
        assert_eq!(
            err(vec![], &single()),
            "conversion webhook for example.dev/v1, Kind=Gadget returned 0 objects, expected 1"
        );
        let mut wrong_version = converted(meta.clone());
        wrong_version["apiVersion"] = json!("example.dev/v1");
        assert_eq!(
            err(vec![wrong_version.clone()], &single()),
            "conversion webhook for example.dev/v1, Kind=Gadget returned invalid object at index 0: invalid groupVersion (expected example.dev/v2, received example.dev/v1)"
        );
        let list = Expectation {
            desired_api_version: "example.dev/v2",
            gvk: "example.dev/v2, Kind=GadgetList",
            list: true,
        };
        assert_eq!(
            err(vec![wrong_version], &list),
            "conversion webhook for example.dev/v2, Kind=GadgetList returned invalid converted object at index 1: invalid groupVersion (expected example.dev/v2, received example.dev/v1)"
        );
        let mut wrong_kind = converted(meta.clone());
        wrong_kind["kind"] = json!("Gizmo");
        assert_eq!(
            err(vec![wrong_kind], &single()),
            "conversion webhook for example.dev/v1, Kind=Gadget returned invalid object at index 0: invalid kind (expected Gadget, received Gizmo)"
        );
        let renamed = converted(json!({"name": "b", "namespace": "ns", "uid": "u1"}));
        assert_eq!(
            err(vec![renamed], &single()),
            "conversion webhook for example.dev/v1, Kind=Gadget returned invalid object: must have the same name: a != b"
        );
        let new_uid = converted(json!({"name": "a", "namespace": "ns", "uid": "u2"}));
        assert_eq!(
            err(vec![new_uid], &list),
            "conversion webhook for example.dev/v2, Kind=GadgetList returned invalid converted object at index 1: must have the same UID: u1 != u2"
        );
        let mut no_meta = converted(meta.clone());
        no_meta.as_object_mut().unwrap().remove("metadata");
        // Without metadata the name differs first.
        assert!(err(vec![no_meta], &single()).contains("must have the same name: a != "));
        let bad_label = converted(
            json!({"name": "a", "namespace": "ns", "uid": "u1", "labels": {"bad key!": "x"}}),
        );
        assert!(
            err(vec![bad_label], &single()).starts_with(
                "conversion webhook for example.dev/v1, Kind=Gadget returned invalid metadata: metadata.labels: Invalid value: \"bad key!\": "
            )
        );
        let number = converted(
            json!({"name": "a", "namespace": "ns", "uid": "u1", "annotations": {"n": 1}}),
        );
        assert_eq!(
            err(vec![number], &list),
            "conversion webhook for example.dev/v2, Kind=GadgetList returned invalid metadata in object at index 1: metadata.annotations[n] must be a string, but is float64 in converted object"
        );
    }
}
