//! kube-rs integration: `KubeObject<T>` as `kube::Resource`, `ApiResource`, `DynamicObject`.

use generated::example_dev::v1::{Widget, WidgetSpec};
use generated::kube::{KubeObject, api_resource, from_dynamic, to_dynamic};
use kube::Resource;
use serde_json::json;

fn widget() -> Widget {
    let mut w = Widget {
        spec: WidgetSpec {
            replicas: 3,
            color: Some("blue".into()),
        },
        ..Widget::default()
    };
    w.metadata.name = Some("w".into());
    w.metadata.namespace = Some("ns".into());
    w.metadata.labels.insert("app".into(), "demo".into());
    w
}

#[test]
fn kube_object_is_a_resource_with_the_same_json() {
    let obj = KubeObject::new(widget()).expect("wrap");
    assert_eq!(
        KubeObject::<Widget>::url_path(&(), Some("ns")),
        "/apis/example.dev/v1/namespaces/ns/widgets"
    );
    assert_eq!(KubeObject::<Widget>::api_version(&()), "example.dev/v1");
    assert_eq!(obj.meta().name.as_deref(), Some("w"));
    let value = serde_json::to_value(&obj).expect("json");
    assert_eq!(value, serde_json::to_value(widget()).expect("json"));
    assert_eq!(
        value,
        json!({"apiVersion": "example.dev/v1", "kind": "Widget",
               "metadata": {"name": "w", "namespace": "ns", "labels": {"app": "demo"}},
               "spec": {"replicas": 3, "color": "blue"}})
    );
    let back: KubeObject<Widget> = serde_json::from_value(value).expect("decode");
    assert_eq!(back.spec.replicas, 3);
    assert_eq!(back.into_inner().expect("unwrap"), widget());
}

#[test]
fn api_resource_and_dynamic_object_round_trip() {
    let ar = api_resource::<Widget>();
    assert_eq!(
        (
            ar.group.as_str(),
            ar.version.as_str(),
            ar.kind.as_str(),
            ar.plural.as_str()
        ),
        ("example.dev", "v1", "Widget", "widgets")
    );
    let dynamic = to_dynamic(&widget()).expect("to dynamic");
    assert_eq!(dynamic.metadata.name.as_deref(), Some("w"));
    assert_eq!(dynamic.data["spec"]["replicas"], json!(3));
    assert_eq!(
        from_dynamic::<Widget>(&dynamic).expect("from dynamic"),
        widget()
    );
}
