//! Parsing the shipped definitions into the model.

mod support;

#[test]
fn parses_example_dev() {
    let dir = support::all_api_defs();
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

/// The kinds Kubernetes' strategies allow to be created by a `PUT` (`AllowCreateOnUpdate`)
/// carry `create_on_update`; the others do not.
#[test]
fn create_on_update_is_set_on_the_kinds_kubernetes_allows() {
    let dir = support::all_api_defs();
    let model = codegen::Generator::new(&dir)
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut allowed = Vec::new();
    let mut all = Vec::new();
    for g in &model.groups {
        for v in &g.versions {
            for s in &v.structs {
                if let Some(k) = &s.kind {
                    let id = format!("{}/{}", g.name, k.name);
                    if k.create_on_update {
                        allowed.push(id.clone());
                    }
                    all.push(id);
                }
            }
        }
    }
    allowed.sort();
    allowed.dedup();
    assert_eq!(
        allowed,
        [
            "/Event",
            "coordination.k8s.io/Lease",
            "rbac.authorization.k8s.io/ClusterRole",
            "rbac.authorization.k8s.io/ClusterRoleBinding",
            "rbac.authorization.k8s.io/Role",
            "rbac.authorization.k8s.io/RoleBinding",
        ]
    );
    for not_allowed in [
        "/ConfigMap",
        "/Secret",
        "/ServiceAccount",
        "/Namespace",
        "admissionregistration.k8s.io/ValidatingWebhookConfiguration",
        "admissionregistration.k8s.io/MutatingWebhookConfiguration",
        "example.dev/Widget",
    ] {
        assert!(all.iter().any(|k| k == not_allowed), "{not_allowed} exists");
    }
}

/// `#[subresource]` declares a ServiceAccount's `token` with its body's kind.
#[test]
fn service_account_declares_its_token_subresource() {
    let dir = support::all_api_defs();
    let model = codegen::Generator::new(&dir)
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    let core = model.group("").expect("core");
    let sa = core
        .version("v1")
        .and_then(|v| v.struct_named("ServiceAccount"))
        .and_then(|s| s.kind.as_ref())
        .expect("ServiceAccount");
    assert_eq!(
        sa.subresources,
        [codegen::model::SubresourceModel {
            name: "token".to_string(),
            group: "authentication.k8s.io".to_string(),
            version: "v1".to_string(),
            kind: "TokenRequest".to_string(),
            verbs: vec!["create".to_string()],
        }]
    );
}
