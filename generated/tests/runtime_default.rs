//! `runtime::default` decodes the defaulted value without path tracking and falls back to the
//! path-tracking decode only for the error: both give what the path-tracking decode alone gives.

use apimachinery::schema::Schema;
use generated::core::v1::ConfigMap;
use generated::example_dev::v1::Widget;
use generated::runtime;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// `runtime::default` as it was: defaults, the path-tracking decode, hooks, re-encoding.
fn tracked<T: DeserializeOwned + Serialize + Schema>(
    mut value: Value,
) -> Result<Value, apimachinery::scheme::CodecError> {
    T::apply_defaults(&mut value);
    let typed = runtime::from_json::<T>(value)?;
    runtime::to_json(&typed)
}

#[test]
fn valid_objects_decode_as_the_tracking_decode_does() {
    let cm = json!({
        "kind": "ConfigMap", "apiVersion": "v1",
        "metadata": {"name": "a", "labels": {"app": "x"}},
        "data": {"k": "v"}, "binaryData": {"b": "AAE="},
    });
    let out = runtime::default::<ConfigMap>(cm.clone(), runtime::no_hooks).unwrap();
    assert_eq!(out, tracked::<ConfigMap>(cm).unwrap());
    // A kind with defaults (and an unknown field, which the re-encoding drops).
    let widget = json!({
        "apiVersion": "example.dev/v1", "kind": "Widget",
        "metadata": {"name": "w", "labels": {"b": "2", "a": "1"}},
        "spec": {"color": "blue", "foo": 1},
    });
    let out = runtime::default::<Widget>(widget.clone(), runtime::no_hooks).unwrap();
    assert_eq!(out, tracked::<Widget>(widget).unwrap());
    assert_eq!(out["spec"], json!({"replicas": 1, "color": "blue"}));
}

#[test]
fn errors_name_the_field_path_as_the_tracking_decode_does() {
    for cm in [
        json!({"kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": 5}}),
        json!({"kind": "ConfigMap", "metadata": {"name": 1}}),
        json!({"kind": "ConfigMap", "metadata": {"name": "a"}, "binaryData": {"b": "%%"}}),
        json!({"kind": "ConfigMap", "metadata": {"name": "a", "labels": []}}),
    ] {
        let err = runtime::default::<ConfigMap>(cm.clone(), runtime::no_hooks).unwrap_err();
        assert_eq!(err, tracked::<ConfigMap>(cm).unwrap_err());
    }
    // An odd value serde accepts (a struct from an empty array) is accepted alike.
    let odd = json!({"kind": "ConfigMap", "metadata": []});
    assert_eq!(
        runtime::default::<ConfigMap>(odd.clone(), runtime::no_hooks),
        tracked::<ConfigMap>(odd)
    );
    let err = runtime::default::<ConfigMap>(
        json!({"metadata": {"name": "a"}, "data": {"k": 5}}),
        runtime::no_hooks,
    )
    .unwrap_err();
    assert!(err.to_string().starts_with("data.k: "), "{err}");
}
