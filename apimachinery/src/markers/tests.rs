use super::*;

#[test]
fn paths_render_as_kubernetes_prints_them() {
    let root = FieldPath::Root;
    let spec = root.field("spec");
    let items = spec.field("items");
    let first = items.index(0);
    let name = first.field("name");
    assert_eq!(name.to_string(), "spec.items[0].name");
    let meta = root.field("metadata");
    let labels = meta.field("labels");
    assert_eq!(labels.key("app").to_string(), "metadata.labels[app]");
    assert_eq!(root.to_string(), "");
}

#[test]
fn numeric_and_text_checks_word_their_errors() {
    let root = FieldPath::Root;
    let p = root.field("replicas");
    let mut errors = Vec::new();
    check_maximum(&1001i32, &p, 1000.0, "1000", false, &mut errors);
    check_minimum(&Some(-1i64), &p, 0.0, "0", false, &mut errors);
    check_minimum(&None::<i64>, &p, 0.0, "0", false, &mut errors);
    check_pattern(
        &"Red".to_string(),
        &root.field("color"),
        "^[a-z]+$",
        &mut errors,
    );
    check_enum(
        &"C".to_string(),
        &root.field("mode"),
        &["A", "B"],
        &mut errors,
    );
    let rendered: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        rendered,
        [
            "replicas: Invalid value: 1001: must be less than or equal to 1000",
            "replicas: Invalid value: -1: must be greater than or equal to 0",
            "color: Invalid value: \"Red\": color in body should match '^[a-z]+$'",
            "mode: Unsupported value: \"C\": supported values: \"A\", \"B\"",
        ]
    );
}

/// `#![crd_validation]`: bounds word their errors as kube-apiserver does for a CRD's
/// schema, and a required `Option` is only asked to be present.
#[test]
fn crd_schema_checks_word_their_errors_as_kube_openapi() {
    let root = FieldPath::Root;
    let spec = root.field("spec");
    let p = spec.field("replicas");
    let mut errors = Vec::new();
    check_schema_maximum(&101i32, &p, 100.0, "100", false, &mut errors);
    check_schema_maximum(&100i32, &p, 100.0, "100", false, &mut errors);
    check_schema_maximum(&Some(10i64), &p, 10.0, "10", true, &mut errors);
    check_schema_minimum(&-1i64, &p, 0.0, "0", false, &mut errors);
    check_schema_minimum(&0.5f64, &p, 0.5, "0.5", true, &mut errors);
    check_schema_minimum(&None::<i64>, &p, 0.0, "0", false, &mut errors);
    check_present(&None::<String>, &spec.field("image"), &mut errors);
    check_present(&Some(String::new()), &spec.field("empty"), &mut errors);
    check_present(
        &Some(Vec::<String>::new()),
        &spec.field("list"),
        &mut errors,
    );
    let rendered: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        rendered,
        [
            "spec.replicas: Invalid value: 101: spec.replicas in body should be less than or equal to 100",
            "spec.replicas: Invalid value: 10: spec.replicas in body should be less than 10",
            "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
            "spec.replicas: Invalid value: 0.5: spec.replicas in body should be greater than 0.5",
            "spec.image: Required value",
        ]
    );
}

#[test]
fn presence_follows_the_json_form() {
    let root = FieldPath::Root;
    let mut errors = Vec::new();
    check_required(&None::<String>, &root.field("a"), &mut errors);
    check_required(&Some(String::new()), &root.field("b"), &mut errors);
    check_required(&Vec::<String>::new(), &root.field("c"), &mut errors);
    check_required(&0i32, &root.field("d"), &mut errors);
    check_required(&Some("x".to_string()), &root.field("e"), &mut errors);
    let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["a", "b", "c"]);
    let mut errors = Vec::new();
    check_immutable(&Some(2), &None, &root.field("x"), &mut errors);
    check_immutable(&Some(2), &Some(2), &root.field("y"), &mut errors);
    check_immutable(&None, &Some(2), &root.field("z"), &mut errors);
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0].to_string(),
        "z: Invalid value: null: field is immutable"
    );
}

#[test]
fn list_markers_find_duplicates() {
    let root = FieldPath::Root;
    let mut errors = Vec::new();
    let verbs = vec!["get".to_string(), "list".into(), "get".into()];
    check_list_set(&verbs, &root.field("verbs"), &mut errors);
    let ports = vec![
        serde_json::json!({"name": "http", "port": 80}),
        serde_json::json!({"name": "http", "port": 81}),
    ];
    check_list_map_keys(&ports, &root.field("ports"), &["name"], &mut errors);
    let rendered: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        rendered,
        [
            "verbs[2]: Duplicate value: \"get\"",
            "ports[1]: Duplicate value: {\"name\":\"http\"}",
        ]
    );
}
