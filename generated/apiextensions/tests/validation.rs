//! CustomResourceDefinition validation with kube-apiserver's messages and the field paths of
//! Kubernetes' internal form (`spec.validation…` when every version has the same schema).

use apimachinery::testing::KindOps;
use serde_json::{Value, json};

fn ops() -> KindOps {
    KindOps(
        apiextensions_api::scheme()
            .by_kind("apiextensions.k8s.io", "CustomResourceDefinition")
            .expect("CustomResourceDefinition registered"),
    )
}

/// A valid one-version CRD of `widgets.example.dev`.
fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.dev"},
        "spec": {
            "group": "example.dev",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}},
                "subresources": {"status": {}},
            }],
        },
    })
}

fn create_errors(value: &Value) -> Vec<String> {
    ops()
        .validate_create("v1", value)
        .expect("decodes")
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn update_errors(value: &Value, old: &Value) -> Vec<String> {
    ops()
        .validate_update("v1", value, old)
        .expect("decodes")
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// `crd()` with `edit` applied.
fn with(edit: impl FnOnce(&mut Value)) -> Value {
    let mut value = crd();
    edit(&mut value);
    value
}

#[test]
fn a_valid_crd_and_real_ones_have_no_errors() {
    assert_eq!(create_errors(&crd()), Vec::<String>::new());
    for text in [
        include_str!("data/cert-manager.io_certificates.yaml"),
        include_str!("data/gateway.networking.k8s.io_httproutes.yaml"),
        include_str!("data/monitoring.coreos.com_servicemonitors.yaml"),
    ] {
        let value: Value = serde_yaml_ng::from_str(text).unwrap();
        assert_eq!(create_errors(&value), Vec::<String>::new());
    }
}

#[test]
fn defaults_fill_singular_list_kind_conversion_and_stored_versions() {
    let out = ops()
        .default(
            "v1",
            with(|v| {
                v["spec"]["names"] = json!({"plural": "widgets", "kind": "Widget"});
            }),
        )
        .unwrap();
    assert_eq!(out["spec"]["names"]["singular"], "widget");
    assert_eq!(out["spec"]["names"]["listKind"], "WidgetList");
    assert_eq!(out["spec"]["conversion"], json!({"strategy": "None"}));
    assert_eq!(out["status"]["storedVersions"], json!(["v1"]));
}

#[test]
fn name_group_and_scope() {
    let value = with(|v| {
        v["metadata"]["name"] = json!("widgets.example");
        v["spec"]["group"] = json!("example");
        v["spec"]["scope"] = json!("Global");
    });
    assert_eq!(
        create_errors(&value),
        [
            r#"spec.group: Invalid value: "example": should be a domain with at least one dot"#,
            r#"spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced""#,
        ]
    );
    let value = with(|v| v["metadata"]["name"] = json!("gadgets.example.dev"));
    assert_eq!(
        create_errors(&value),
        [
            r#"metadata.name: Invalid value: "gadgets.example.dev": must be spec.names.plural+"."+spec.group"#
        ]
    );
    let value = with(|v| v["spec"]["scope"] = json!(""));
    assert_eq!(create_errors(&value), ["spec.scope: Required value"]);
}

#[test]
fn names() {
    let value = with(|v| {
        v["spec"]["names"] = json!({"plural": "Widgets", "singular": "widget", "kind": "Wid_get",
            "listKind": "Wid_get", "shortNames": ["w d"], "categories": ["all"]});
        v["metadata"]["name"] = json!("Widgets.example.dev");
    });
    let dns1035 = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
    let errors = create_errors(&value);
    let names: Vec<&String> = errors
        .iter()
        .filter(|e| e.starts_with("spec.names"))
        .collect();
    assert_eq!(
        names,
        [
            &format!(r#"spec.names.plural: Invalid value: "Widgets": {dns1035}"#),
            &format!(r#"spec.names.kind: Invalid value: "Wid_get": may have mixed case, but should otherwise match: {dns1035}"#),
            &format!(r#"spec.names.listKind: Invalid value: "Wid_get": may have mixed case, but should otherwise match: {dns1035}"#),
            &format!(r#"spec.names.shortNames[0]: Invalid value: "w d": {dns1035}"#),
            &r#"spec.names.listKind: Invalid value: "Wid_get": kind and listKind may not be the same"#.to_string(),
        ]
    );
    let value = with(|v| v["spec"]["names"] = json!({"plural": "widgets"}));
    assert_eq!(
        create_errors(&value),
        [
            "spec.names.singular: Required value",
            "spec.names.kind: Required value",
            "spec.names.listKind: Required value"
        ]
    );
}

#[test]
fn versions() {
    let value = with(|v| v["spec"]["versions"][0]["name"] = json!("V1"));
    let errors = create_errors(&value);
    assert!(
        errors[0].starts_with(r#"spec.versions[0].name: Invalid value: "V1": a DNS-1035 label"#),
        "{errors:#?}"
    );
    assert!(
        errors[1].starts_with(r#"spec.version: Invalid value: "V1": a DNS-1035 label"#),
        "{errors:#?}"
    );

    let value = with(|v| {
        let mut second = v["spec"]["versions"][0].clone();
        second["name"] = json!("v2");
        v["spec"]["versions"].as_array_mut().unwrap().push(second);
    });
    let errors = create_errors(&value);
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert!(errors[0].starts_with("spec.versions: Invalid value: "));
    assert!(errors[0].ends_with(": must have exactly one version marked as storage version"));
    // Defaulting stored the first storage version only.
    assert_eq!(
        errors[1],
        r#"status.storedVersions: Invalid value: ["v1"]: must have the storage version v2"#
    );

    let value = with(|v| {
        v["spec"]["versions"][0]["deprecationWarning"] = json!("old");
    });
    assert_eq!(
        create_errors(&value),
        [
            r#"spec.versions[0].deprecationWarning: Invalid value: "old": can only be set for deprecated versions"#
        ]
    );
}

#[test]
fn schemas_are_required_and_hoisted_paths_name_the_internal_form() {
    let value = with(|v| {
        v["spec"]["versions"][0]
            .as_object_mut()
            .unwrap()
            .remove("schema")
            .map(|_| ())
            .unwrap()
    });
    assert_eq!(
        create_errors(&value),
        ["spec.versions[0].schema.openAPIV3Schema: Required value"]
    );

    // One version: the schema is hoisted to spec.validation.
    let value =
        with(|v| v["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["type"] = json!("string"));
    assert_eq!(
        create_errors(&value),
        [
            r#"spec.validation.openAPIV3Schema.type: Invalid value: "string": only "object" is allowed as the type at the root of the schema if the status subresource is enabled"#,
            r#"spec.validation.openAPIV3Schema.type: Invalid value: "string": must be object at the root"#,
        ]
    );
    // Two versions with different schemas: the paths are per version.
    let value = with(|v| {
        let mut second = v["spec"]["versions"][0].clone();
        second["name"] = json!("v2");
        second["storage"] = json!(false);
        second["schema"]["openAPIV3Schema"] =
            json!({"properties": {"spec": {"type": "object"}}, "nullable": true});
        v["spec"]["versions"].as_array_mut().unwrap().push(second);
    });
    // `nullable` is not allowed at the root with status, nor true at any root.
    let errors = create_errors(&value);
    assert_eq!(errors.len(), 3, "{errors:#?}");
    assert!(errors[0].starts_with(r#"spec.versions[1].schema.openAPIV3Schema: Invalid value: {"properties":{"spec":{"type":"object"}},"nullable":true}: only [Description"#));
    assert_eq!(
        errors[1..],
        [
            "spec.versions[1].schema.openAPIV3Schema.nullable: Forbidden: nullable cannot be true at the root",
            "spec.versions[1].schema.openAPIV3Schema.type: Required value: must not be empty at the root",
        ]
    );
    // Fields not allowed at the root when status is enabled.
    let value = with(|v| {
        v["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["additionalProperties"] = json!(false)
    });
    // (With the per-node checks of `additionalProperties` beside `properties` at the root.)
    let errors = create_errors(&value);
    assert_eq!(errors.len(), 3, "{errors:#?}");
    assert!(
        errors[0].starts_with("spec.validation.openAPIV3Schema: Invalid value: {"),
        "{errors:#?}"
    );
    assert_eq!(
        errors[1..],
        [
            "spec.validation.openAPIV3Schema.additionalProperties: Forbidden: must not be used at the root",
            "spec.validation.openAPIV3Schema.additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
        ]
    );
    assert!(errors[0].ends_with(": only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled"), "{errors:#?}");
}

#[test]
fn subresources_and_printer_columns() {
    let value = with(|v| {
        v["spec"]["versions"][0]["subresources"]["scale"] = json!({"specReplicasPath": "spec.replicas", "statusReplicasPath": ".spec.replicas", "labelSelectorPath": ".metadata.x"});
        v["spec"]["versions"][0]["additionalPrinterColumns"] = json!([{"name": "", "type": "int", "format": "uuid", "jsonPath": "x"}, {"name": "A", "type": "", "jsonPath": ""}]);
    });
    assert_eq!(
        create_errors(&value),
        [
            r#"spec.subresources.scale.specReplicasPath: Invalid value: "spec.replicas": must be a simple json path starting with ."#,
            r#"spec.subresources.scale.statusReplicasPath: Invalid value: ".spec.replicas": should be a json path under .status"#,
            r#"spec.subresources.scale.labelSelectorPath: Invalid value: ".metadata.x": should be a json path under either .spec or .status"#,
            "spec.additionalPrinterColumns[0].name: Required value",
            r#"spec.additionalPrinterColumns[0].type: Invalid value: "int": must be one of boolean,date,integer,number,string"#,
            r#"spec.additionalPrinterColumns[0].format: Invalid value: "uuid": must be one of byte,date,date-time,double,float,int32,int64,password"#,
            r#"spec.additionalPrinterColumns[0].JSONPath: Invalid value: "x": must be a simple json path starting with ."#,
            "spec.additionalPrinterColumns[1].type: Required value: must be one of boolean,date,integer,number,string",
            "spec.additionalPrinterColumns[1].JSONPath: Required value",
        ]
    );
}

#[test]
fn selectable_fields() {
    let value = with(|v| {
        v["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"] =
            json!({"color": {"type": "string"}, "size": {"type": "object"}});
        v["spec"]["versions"][0]["selectableFields"] = json!([{"jsonPath": ".spec.color"}, {"jsonPath": ".spec.size"}, {"jsonPath": ".spec.nope"}, {"jsonPath": ".spec.color"}, {"jsonPath": ""}]);
    });
    assert_eq!(
        create_errors(&value),
        [
            r#"spec.selectableFields[1].jsonPath: Invalid value: ".spec.size": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."#,
            r#"spec.selectableFields[2].jsonPath: Invalid value: ".spec.nope": is an invalid path: does not refer to a valid field"#,
            r#"spec.selectableFields[3].jsonPath: Duplicate value: ".spec.color""#,
            "spec.selectableFields[4].jsonPath: Required value",
        ]
    );
}

#[test]
fn conversion_at_internal_paths() {
    let value = with(|v| {
        v["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": "http://user@example.dev/convert?x=1#f"},
            "conversionReviewVersions": ["v2", "v2"]}});
    });
    assert_eq!(
        create_errors(&value),
        [
            r#"spec.conversion.webhookClientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]"#,
            r#"spec.conversion.webhookClientConfig.url: Invalid value: "user": user information is not permitted in the URL"#,
            r#"spec.conversion.webhookClientConfig.url: Invalid value: "f": fragments are not permitted in the URL"#,
            r#"spec.conversion.webhookClientConfig.url: Invalid value: "x=1": query parameters are not permitted in the URL"#,
            r#"spec.conversion.conversionReviewVersions[1]: Invalid value: "v2": duplicate version"#,
            r#"spec.conversion.conversionReviewVersions: Invalid value: ["v2","v2"]: must include at least one of v1, v1beta1"#,
        ]
    );
    let value = with(|v| {
        v["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"service": {"namespace": "", "name": "conv", "port": 0, "path": "//"}},
            "conversionReviewVersions": ["v1"]}});
    });
    assert_eq!(
        create_errors(&value),
        [
            "spec.conversion.webhookClientConfig.service.namespace: Required value",
            "spec.conversion.webhookClientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
            r#"spec.conversion.webhookClientConfig.service.path: Invalid value: "//": segment[0] may not be empty"#,
        ]
    );
    let value = with(|v| {
        v["spec"]["conversion"] = json!({"strategy": "None", "webhook": {
            "clientConfig": {"url": "https://example.dev"}, "conversionReviewVersions": ["v1"]}});
    });
    assert_eq!(
        create_errors(&value),
        [
            "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
            "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook",
        ]
    );
    let value = with(|v| v["spec"]["conversion"] = json!({"strategy": "Webhook"}));
    assert_eq!(
        create_errors(&value),
        [
            "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
            "spec.conversion.conversionReviewVersions: Required value",
        ]
    );
}

#[test]
fn approval_and_preserve_unknown_fields() {
    let value = with(|v| {
        v["metadata"]["name"] = json!("widgets.apps.k8s.io");
        v["spec"]["group"] = json!("apps.k8s.io");
    });
    assert_eq!(
        create_errors(&value),
        [
            r#"metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111"#
        ]
    );
    let approved = with(|v| {
        v["metadata"]["name"] = json!("widgets.apps.k8s.io");
        v["spec"]["group"] = json!("apps.k8s.io");
        v["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/1"});
    });
    assert_eq!(create_errors(&approved), Vec::<String>::new());
    let value = with(|v| v["spec"]["preserveUnknownFields"] = json!(true));
    assert_eq!(
        create_errors(&value),
        [
            "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"
        ]
    );
}

#[test]
fn updates_keep_group_plural_and_stored_versions() {
    let old = with(|v| v["metadata"]["resourceVersion"] = json!("1"));
    let value = with(|v| {
        v["metadata"]["resourceVersion"] = json!("1");
        v["spec"]["group"] = json!("example.org");
        v["spec"]["names"]["plural"] = json!("gadgets");
    });
    assert_eq!(
        update_errors(&value, &old),
        [
            r#"spec.group: Invalid value: "example.org": field is immutable"#,
            r#"spec.names.plural: Invalid value: "gadgets": field is immutable"#,
        ]
    );
    // A version that was stored cannot leave spec.versions.
    let value = with(|v| {
        v["metadata"]["resourceVersion"] = json!("1");
        v["spec"]["versions"][0]["name"] = json!("v2");
        v["status"] = json!({"storedVersions": ["v1", "v2"]});
    });
    assert_eq!(
        update_errors(&value, &old),
        [
            "status.storedVersions[0]: Invalid value: \"v1\": missing from spec.versions; v1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1 and removes v1 from status.storedVersions"
        ]
    );
}

#[test]
fn a_status_update_checks_only_the_accepted_names() {
    let kind = apiextensions_api::scheme()
        .by_kind("apiextensions.k8s.io", "CustomResourceDefinition")
        .unwrap();
    let typed = |value: &Value| {
        kind.codec("v1")
            .unwrap()
            .decode_value(value)
            .unwrap()
            .object
    };
    let old = typed(&crd());
    // A storage migration drops the stored version through /status; the names are checked.
    let new = typed(&with(|v| {
        v["status"] = json!({"storedVersions": ["v0"], "acceptedNames": {"plural": "Widgets", "kind": "Widget"}});
    }));
    let errors: Vec<String> = kind
        .strategy()
        .validate_status_update(&*new, &*old)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].starts_with(
            r#"status.acceptedNames.plural: Invalid value: "Widgets": a DNS-1035 label"#
        )
    );
    // Through the main resource the same object is refused for its stored versions.
    let main = kind.strategy().validate_update(&*new, &*old);
    assert!(
        main.iter()
            .any(|e| e.field.starts_with("status.storedVersions")),
        "{main:?}"
    );
}

#[test]
fn an_update_keeps_what_the_old_crd_already_had_and_refuses_it_new() {
    // A set of non-atomic objects: refused on create, and on an update of a CRD without one;
    // kept on an update of a CRD that already had one (Kubernetes ratchets its rules so that a
    // CRD stored before a rule existed can still be updated).
    let set_of_objects = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "tags": {"type": "array", "x-kubernetes-list-type": "set",
                 "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
    }}}});
    let with_set = |rv: &str| {
        with(|v| {
            v["metadata"]["resourceVersion"] = json!(rv);
            v["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = set_of_objects.clone();
        })
    };
    let refused = "spec.validation.openAPIV3Schema.properties[spec].properties[tags].items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set";
    let created = create_errors(&with_set("1"));
    assert_eq!(created, [refused], "{created:?}");
    let plain = with(|v| v["metadata"]["resourceVersion"] = json!("1"));
    assert_eq!(update_errors(&with_set("1"), &plain), [refused]);
    // The old CRD had it: an update (here a new printer column) keeps it.
    let mut updated = with_set("1");
    updated["spec"]["versions"][0]["additionalPrinterColumns"] =
        json!([{"name": "Tags", "type": "string", "jsonPath": ".spec.tags"}]);
    let errors = update_errors(&updated, &with_set("1"));
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn a_rule_over_its_estimated_cost_budget_is_refused_unless_an_update_leaves_it_unchanged() {
    // 200 items, each an unbounded string (3 MiB - 2 bytes) checked with
    // `self.contains('abcdefghij')`: 1 + ceil(3145726 * 0.1) * ceil(10 * 0.1) = 314574 per
    // item, 62914800 in all: 6.3 times the per-rule limit of 10000000, under the total's.
    let costly = with(|v| {
        v["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = json!({
            "type": "object",
            "properties": {"items": {"type": "array", "maxItems": 200, "items": {
                "type": "string",
                "x-kubernetes-validations": [{"rule": "self.contains('abcdefghij')"}],
            }}},
        });
    });
    let refused = [
        "spec.validation.openAPIV3Schema.properties[spec].properties[items].items.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of 6.3x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
    ];
    assert_eq!(create_errors(&costly), refused);
    // An update that leaves the schema as it was keeps it (Kubernetes lifts the per-rule
    // limit for unchanged schemas); one that changes the schema does not.
    let relabeled = {
        let mut v = costly.clone();
        v["metadata"]["labels"] = json!({"a": "b"});
        v
    };
    assert_eq!(update_errors(&relabeled, &costly), Vec::<String>::new());
    let changed = {
        let mut v = costly.clone();
        v["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] = json!("changed");
        v
    };
    assert_eq!(update_errors(&changed, &costly), refused);
}
