//! Parsing the shipped definitions into the model.

use std::path::Path;

#[test]
fn parses_example_dev() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../api-defs");
    let generator = codegen::Generator::new(&dir);
    let model = generator.load().unwrap_or_else(|e| panic!("{e}"));
    let g = model.group("example.dev").expect("group");
    assert_eq!(
        g.versions
            .iter()
            .map(|v| v.version.as_str())
            .collect::<Vec<_>>(),
        ["v1", "v1alpha1"]
    );
    assert!(g.internal.is_some());
    let v1 = g.version("v1").expect("v1");
    assert!(v1.storage);
    let widget = v1.struct_named("Widget").expect("Widget");
    let kind = widget.kind.as_ref().expect("kind");
    assert_eq!(kind.plural, "widgets");
    assert_eq!(kind.short_names, ["wd"]);
    assert_eq!(kind.print_columns.len(), 2);
    assert_eq!(widget.rules.len(), 1);
    let spec = v1.struct_named("WidgetSpec").expect("spec");
    let replicas = spec.field("replicas").expect("replicas");
    assert_eq!(replicas.default, Some(serde_json::json!(1)));
    assert_eq!(replicas.validation.maximum, Some(1000.into()));
    assert!(replicas.json_always);
    assert_eq!(replicas.loc.line, 33);
    assert!(
        g.hooks
            .as_ref()
            .is_some_and(|h| h.has("v1alpha1_widget_spec_to_internal"))
    );
}
