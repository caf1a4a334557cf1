//! Widget through the scheme: decode, default, convert, validate, exactly as the server uses it.

mod support;

use serde_json::{Value, json};
use support::{Ops, ops};

fn widget_ops() -> Ops {
    ops("example.dev", "Widget")
}

fn messages(errors: &[apimachinery::errors::FieldError]) -> Vec<String> {
    errors.iter().map(ToString::to_string).collect()
}

#[test]
fn registered_with_resource_info() {
    let scheme = generated::scheme();
    let ops = Ops(scheme
        .by_resource("example.dev", "widgets")
        .expect("by resource"));
    let versions: Vec<&str> = ops.versions().iter().map(|v| v.version).collect();
    assert_eq!(versions, ["v1", "v1alpha1"]);
    let v1 = ops.storage_version();
    assert_eq!(
        (v1.version, v1.plural, v1.singular, v1.list_kind),
        ("v1", "widgets", "widget", "WidgetList")
    );
    assert_eq!(v1.short_names, ["wd"]);
    assert_eq!(v1.categories, ["all"]);
    assert!(v1.status_subresource);
    assert_eq!(
        v1.scale.as_ref().map(|s| s.spec_replicas_path),
        Some(".spec.replicas")
    );
    assert_eq!(
        v1.printer_columns
            .iter()
            .map(|c| (c.name, c.priority))
            .collect::<Vec<_>>(),
        [("Replicas", 0), ("Color", 1)]
    );
    assert!(
        scheme
            .openapi()
            .iter()
            .any(|d| d.group == "example.dev" && d.version == "v1")
    );
}

#[test]
fn decode_defaults_and_reports_unknown_fields() {
    let ops = widget_ops();
    let input = json!({
        "apiVersion": "example.dev/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default", "labels": {"b": "2", "a": "1"}},
        "spec": {"color": "blue", "foo": 1},
        "bogus": true
    });
    let decoded = ops.decode("v1", input).expect("decode");
    // In document order, as Kubernetes' strict decoder reports them.
    assert_eq!(decoded.unknown_fields, ["spec.foo", "bogus"]);
    assert_eq!(
        decoded.object,
        json!({
            "apiVersion": "example.dev/v1", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default", "labels": {"a": "1", "b": "2"}},
            "spec": {"replicas": 1, "color": "blue"}
        })
    );
    // Keys come out sorted in maps.
    let text = serde_json::to_string(&decoded.object).unwrap_or_default();
    assert!(text.contains(r#""labels":{"a":"1","b":"2"}"#), "{text}");
    let defaulted = ops
        .default(
            "v1",
            json!({"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": "x"}}),
        )
        .expect("default");
    assert_eq!(defaulted["spec"], json!({"replicas": 1}));
    let zero = ops
        .default("v1", json!({"spec": {"replicas": 0}}))
        .expect("default");
    assert_eq!(zero["spec"]["replicas"], json!(0));
}

#[test]
fn converts_between_versions_with_the_hand_written_hook() {
    let ops = widget_ops();
    let v1 = json!({"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": "w"},
                    "spec": {"replicas": 7, "color": "green"}, "status": {"replicas": 3, "selector": "app=w"}});
    let alpha = ops.convert(v1.clone(), "v1", "v1alpha1").expect("convert");
    assert_eq!(
        alpha,
        json!({"apiVersion": "example.dev/v1alpha1", "kind": "Widget", "metadata": {"name": "w"},
               "spec": {"size": 7, "color": "green"}, "status": {"replicas": 3, "selector": "app=w"}})
    );
    assert_eq!(ops.convert(alpha, "v1alpha1", "v1").expect("back"), v1);
    assert!(ops.convert(v1, "v1", "v9").is_err());
}

#[test]
fn validates_with_kubernetes_messages() {
    let ops = widget_ops();
    let bad = json!({"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"},
                     "spec": {"replicas": -1, "color": "Red"}});
    assert_eq!(
        messages(&ops.validate_create("v1", &bad).expect("validate")),
        [
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
            "spec.color: Invalid value: \"Red\": spec.color in body should match '^[a-z]+$'",
        ]
    );
    let red = json!({"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"},
                     "spec": {"replicas": 101, "color": "red"}});
    assert_eq!(
        messages(&ops.validate_create("v1", &red).expect("validate")),
        ["<nil>: Invalid value: \"object\": a red widget may have at most 100 replicas"]
    );
    let ok = json!({"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"},
                    "spec": {"replicas": 100, "color": "red"}});
    assert_eq!(ops.validate_create("v1", &ok).expect("validate"), []);
    let renamed: Value = json!({"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": "w2", "namespace": "ns"},
                    "spec": {"replicas": 1}});
    assert_eq!(
        messages(&ops.validate_update("v1", &renamed, &ok).expect("validate")),
        ["metadata.name: Invalid value: \"w2\": field is immutable"]
    );
    let alpha = json!({"apiVersion": "example.dev/v1alpha1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"},
                       "spec": {"size": 1001}});
    assert_eq!(
        messages(&ops.validate_create("v1alpha1", &alpha).expect("validate")),
        ["spec.size: Invalid value: 1001: must be less than or equal to 1000"]
    );
}

#[test]
fn runs_the_hand_written_validation_hook() {
    let ops = widget_ops();
    let obj = json!({"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"},
                     "spec": {"replicas": 1}, "status": {"replicas": -2}});
    assert_eq!(
        messages(&ops.validate_create("v1", &obj).expect("validate")),
        ["status.replicas: Invalid value: -2: must be greater than or equal to 0"]
    );
}

#[test]
fn route_table_has_widgets_and_their_subresources() {
    let routes = generated::routes();
    let widget: Vec<_> = routes
        .iter()
        .filter(|r| r.info.kind == "Widget" && r.info.version == "v1")
        .collect();
    assert_eq!(
        widget.iter().map(|r| r.subresource).collect::<Vec<_>>(),
        [None, Some("status"), Some("scale")]
    );
    assert_eq!(
        widget[0].collection_path,
        "/apis/example.dev/v1/namespaces/{namespace}/widgets"
    );
    assert_eq!(
        widget[0].all_namespaces_path.as_deref(),
        Some("/apis/example.dev/v1/widgets")
    );
    assert_eq!(
        widget[2].item_path,
        "/apis/example.dev/v1/namespaces/{namespace}/widgets/{name}/scale"
    );
    let ns = routes
        .iter()
        .find(|r| r.info.kind == "Namespace")
        .expect("namespaces");
    assert_eq!(ns.collection_path, "/api/v1/namespaces");
    let review = routes
        .iter()
        .find(|r| r.info.kind == "TokenReview")
        .expect("tokenreviews");
    assert_eq!(
        (review.verbs.as_slice(), review.item_path.as_str()),
        (["create"].as_slice(), "")
    );
}

#[test]
fn type_errors_name_the_field() {
    let ops = widget_ops();
    let err = ops
        .decode(
            "v1",
            json!({"apiVersion": "example.dev/v1", "kind": "Widget", "spec": {"replicas": "many"}}),
        )
        .err()
        .expect("type error");
    assert_eq!(
        err.to_string(),
        "spec.replicas: invalid type: string \"many\", expected i32"
    );
}

#[test]
fn namespace_names_are_dns_labels() {
    let ops = ops("", "Namespace");
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a.b"}});
    assert_eq!(
        messages(&ops.validate_create("v1", &ns).expect("validate")),
        [
            // Kubernetes' `IsDNS1123Label` (since 1.27): a valid subdomain with dots says so.
            "metadata.name: Invalid value: \"a.b\": must not contain dots"
        ]
    );
}
