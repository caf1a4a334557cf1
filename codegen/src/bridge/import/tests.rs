//! Unit tests of the importer: types, markers, naming, versions, losses and errors. Every
//! import is parsed and checked by the generator before it is returned, so each successful
//! import here is also a definition the generator accepts.

use super::{ImportError, Imported, import_crd};

/// A one-version namespaced CRD of kind `Thing` in `things.example.com` whose root schema
/// properties are `properties` (YAML at the indentation of a property name, 8 spaces), and
/// extra version keys `version_extra` (at 2 spaces).
fn crd(properties: &str, version_extra: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {{plural: things, singular: thing, kind: Thing}}
  versions:
  - name: v1
    served: true
    storage: true
{version_extra}    schema:
      openAPIV3Schema:
        type: object
        properties:
{properties}"
    )
}

/// Imports, panicking with the error.
fn import(yaml: &str) -> Imported {
    import_crd(yaml).unwrap_or_else(|e| panic!("import failed: {e}\n{yaml}"))
}

/// The one version file of a [`crd`] import.
fn v1(imported: &Imported) -> &str {
    &imported.files["example.com/v1.rs"]
}

/// Asserts that `text` holds every line of `lines` in order (each trimmed line found after
/// the previous one).
fn assert_lines(text: &str, lines: &str) {
    let mut rest = text;
    for want in lines.lines().map(str::trim).filter(|l| !l.is_empty()) {
        match rest.find(want) {
            Some(i) => rest = &rest[i + want.len()..],
            None => panic!("missing (in order) `{want}` in:\n{text}"),
        }
    }
}

/// Whether some loss has a path ending with `path_end` and a text containing `what`.
fn has_loss(imported: &Imported, path_end: &str, what: &str) -> bool {
    imported
        .losses
        .iter()
        .any(|l| l.at.ends_with(path_end) && l.what.contains(what))
}

#[test]
fn schema_types_map_to_field_types() {
    let yaml = crd(
        "          spec:
            type: object
            properties:
              a32: {type: integer, format: int32}
              a64: {type: integer, format: int64}
              plain: {type: integer}
              ratio: {type: number}
              on: {type: boolean}
              name: {type: string}
              when: {type: string, format: date-time}
              blob: {type: string, format: byte}
              size: {x-kubernetes-int-or-string: true}
              anything: {x-kubernetes-preserve-unknown-fields: true}
              labels: {type: object, additionalProperties: {type: string}}
              counts: {type: object, additionalProperties: {type: integer}}
              names: {type: array, items: {type: string}}
              empty: {type: object}
              template: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
",
        "",
    );
    let out = import(&yaml);
    let text = v1(&out);
    for line in [
        "pub a32: Option<i32>,",
        "pub a64: Option<i64>,",
        "pub plain: Option<i64>,",
        "pub ratio: Option<f64>,",
        "pub on: Option<bool>,",
        "pub name: Option<String>,",
        "pub size: Option<IntOrString>,",
        "pub anything: Option<Value>,",
        "pub labels: Option<BTreeMap<String, String>>,",
        "pub counts: Option<BTreeMap<String, i64>>,",
        "pub names: Option<Vec<String>>,",
        "pub empty: Option<ThingSpecEmpty>,",
        "pub struct ThingSpecEmpty {}",
        "pub template: Option<Value>,",
    ] {
        assert!(text.contains(line), "missing `{line}` in:\n{text}");
    }
    // Strings keep what was written: date-time and byte are checked formats, not `Time`
    // (which would normalise the text) or `Bytes`.
    assert_lines(
        text,
        "#[validate(format = \"byte\")]
         pub blob: Option<String>,",
    );
    assert_lines(
        text,
        "#[validate(format = \"date-time\")]
         pub when: Option<String>,",
    );
    assert!(has_loss(
        &out,
        "properties.template.x-kubernetes-embedded-resource",
        "any JSON"
    ));
}

#[test]
fn markers_carry_checks_defaults_rules_and_merge_semantics() {
    let yaml = crd(
        "          spec:
            type: object
            required: [image, replicas, items]
            x-kubernetes-validations:
            - {rule: self.min <= self.replicas, message: min too big}
            - rule: self.image != 'x'
            properties:
              image: {type: string, minLength: 1, maxLength: 63, pattern: '^[a-z]+$'}
              replicas: {type: integer, minimum: 1, maximum: 10, exclusiveMaximum: true}
              min: {type: integer, default: 0}
              mode: {type: string, enum: [A, B], default: A}
              ratio: {type: number, default: 0.5, minimum: 0.25}
              on: {type: boolean, default: true}
              items:
                type: array
                minItems: 1
                maxItems: 3
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  x-kubernetes-map-type: atomic
                  properties:
                    name: {type: string}
              tags: {type: array, x-kubernetes-list-type: set, items: {type: string, maxLength: 5}}
              order: {type: array, default: [a, b], items: {type: string}}
              labels: {type: object, maxProperties: 4, x-kubernetes-map-type: atomic, additionalProperties: {type: string}}
              options: {type: object, default: {}, properties: {x: {type: integer, default: 3}}}
              extra: {type: object, default: {}, additionalProperties: {type: string}}
              name:
                type: string
                x-kubernetes-validations: [{rule: self.size() < 10, message: short}]
",
        "",
    );
    let out = import(&yaml);
    let text = v1(&out);
    assert_lines(
        text,
        r#"#[rule(cel = "self.min <= self.replicas", message = "min too big")]
        #[rule(cel = "self.image != 'x'")]
        pub struct ThingSpec {
            #[proto(1)]
            #[json(always)]
            pub extra: BTreeMap<String, String>,
            #[proto(2)]
            #[validate(required, min_length = 1, max_length = 63, pattern = "^[a-z]+$")]
            pub image: Option<String>,
            #[proto(3)]
            #[validate(required, min_items = 1, max_items = 3)]
            #[list(type = "map", map_keys = ["name"])]
            pub items: Option<Vec<ThingSpecItemsItem>>,
            #[proto(4)]
            #[validate(max_properties = 4)]
            #[map(type = "atomic")]
            pub labels: Option<BTreeMap<String, String>>,
            #[proto(5)]
            #[default(0)]
            pub min: i64,
            #[proto(6)]
            #[default("A")]
            #[validate(enum = ["A", "B"])]
            pub mode: String,
            #[proto(7)]
            #[rule(cel = "self.size() < 10", message = "short")]
            pub name: Option<String>,
            #[proto(8)]
            #[default(true)]
            pub on: bool,
            #[proto(9)]
            pub options: ThingSpecOptions,
            #[proto(10)]
            #[json(always)]
            #[default(["a", "b"])]
            pub order: Vec<String>,
            #[proto(11)]
            #[default(0.5)]
            #[validate(minimum = 0.25)]
            pub ratio: f64,
            #[proto(12)]
            #[validate(required, minimum = 1, exclusive_maximum = 10)]
            pub replicas: Option<i64>,
            #[proto(13)]
            #[validate(max_length = 5)]
            #[list(type = "set")]
            pub tags: Option<Vec<String>>,
        }
        #[map(type = "atomic")]
        pub struct ThingSpecItemsItem {
            #[validate(required)]
            pub name: Option<String>,
        }
        pub struct ThingSpecOptions {
            #[default(3)]
            pub x: i64,
        }"#,
    );
}

#[test]
fn kind_markers_come_from_names_subresources_and_columns() {
    let yaml = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd, w], categories: [all, toys]}
  versions:
  - name: v1alpha1
    served: false
    storage: false
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {replicas: {type: integer}}}}}}
  - name: v1
    served: true
    storage: true
    selectableFields: [{jsonPath: .spec.color}]
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    additionalPrinterColumns:
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type==\"Ready\")].status', priority: 1, format: word}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {replicas: {type: integer}, color: {type: string}}}
          status:
            type: object
            properties:
              replicas: {type: integer}
              conditions: {type: array, items: {type: object, properties: {type: {type: string}, status: {type: string}}}}
  - name: v1beta2
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {replicas: {type: integer}}}}}}
";
    let out = import(yaml);
    assert_eq!(
        out.files.keys().collect::<Vec<_>>(),
        [
            "example.com/hooks.rs",
            "example.com/v1.rs",
            "example.com/v1alpha1.rs",
            "example.com/v1beta2.rs"
        ]
    );
    let v1 = &out.files["example.com/v1.rs"];
    assert_lines(
        v1,
        r#"#![group = "example.com"]
        #![version = "v1"]
        #![storage]
        #![priority = 30]
        #![crd_validation]
        #[kind(cluster, status, plural = "widgets", singular = "widget", short_names = ["wd", "w"], categories = ["all", "toys"], field_selectors = ["spec.color"])]
        #[scale(spec_replicas = ".spec.replicas", status_replicas = ".status.replicas")]
        #[print_column(name = "Replicas", type = "integer", json_path = ".spec.replicas", description = "Custom resource definition column (in JSONPath format): .spec.replicas")]
        #[print_column(name = "Ready", type = "string", json_path = ".status.conditions[?(@.type==\"Ready\")].status", format = "word", description = "Custom resource definition column (in JSONPath format): .status.conditions[?(@.type==\"Ready\")].status", priority = 1)]
        pub struct Widget {
            #[proto(1)]
            pub metadata: ObjectMeta,
            #[proto(2)]
            pub spec: Option<WidgetSpec>,
            #[proto(3)]
            pub status: Option<WidgetStatus>,
        }"#,
    );
    assert!(!v1.contains("name = \"Age\""), "{v1}");
    let alpha = &out.files["example.com/v1alpha1.rs"];
    assert_lines(
        alpha,
        "#![version = \"v1alpha1\"]
         #![served = false]
         #![priority = 10]
         #[kind(cluster, plural = \"widgets\"",
    );
    assert!(!alpha.contains("#![storage]"), "{alpha}");
    assert!(out.files["example.com/v1beta2.rs"].contains("#![priority = 20]"));
    // v1's spec has `color`, the others do not: their specs convert through JSON.
    let hooks = &out.files["example.com/hooks.rs"];
    for f in [
        "pub fn v1alpha1_widget_spec_to_v1(src: &v1alpha1::WidgetSpec, dst: &mut v1::WidgetSpec)",
        "pub fn v1_widget_spec_to_v1alpha1(src: &v1::WidgetSpec, dst: &mut v1alpha1::WidgetSpec)",
        "pub fn v1beta2_widget_spec_to_v1(",
        "pub fn v1_widget_spec_to_v1beta2(",
    ] {
        assert!(hooks.contains(f), "missing `{f}` in:\n{hooks}");
    }
    // Only what every import loses: decoding refuses values of the wrong JSON type, and
    // errors of several checks come in another order.
    assert_eq!(out.losses.len(), 2, "{}", out.report());
    assert!(
        out.losses
            .iter()
            .all(|l| l.at == "spec.versions[*].schema.openAPIV3Schema"),
        "{}",
        out.report()
    );
}

#[test]
fn struct_and_field_names_are_unique_and_valid() {
    let yaml = crd(
        "          list: {type: object, properties: {a: {type: string}}}
          spec:
            type: object
            properties:
              type: {type: string}
              self: {type: string}
              URL: {type: string}
              x-y: {type: string}
              fooBar: {type: string}
              foo_bar: {type: string}
              sub:
                type: object
                properties:
                  sub: {type: object, properties: {z: {type: string}}}
              subSub: {type: object, properties: {w: {type: string}}}
              items: {type: array, items: {type: object, properties: {v: {type: string}}}}
              byName: {type: object, additionalProperties: {type: object, properties: {u: {type: string}}}}
",
        "",
    );
    let out = import(&yaml);
    let text = v1(&out);
    for line in [
        // `ThingList` is the generated list kind.
        "pub list: Option<ThingList2>,",
        "pub struct ThingList2 {",
        "pub r#type: Option<String>,",
        "pub self_: Option<String>,",
        "#[json(name = \"URL\")]\n    pub url: Option<String>,",
        "#[json(name = \"x-y\")]\n    pub x_y: Option<String>,",
        "pub foo_bar: Option<String>,",
        "#[json(name = \"foo_bar\")]\n    pub foo_bar_2: Option<String>,",
        "pub sub: Option<ThingSpecSubSub>,",
        "pub struct ThingSpecSubSub {\n    #[proto(1)]\n    pub z:",
        "pub sub_sub: Option<ThingSpecSubSub2>,",
        "pub items: Option<Vec<ThingSpecItemsItem>>,",
        "pub by_name: Option<BTreeMap<String, ThingSpecByNameValue>>,",
    ] {
        assert!(text.contains(line), "missing `{line}` in:\n{text}");
    }
}

#[test]
fn what_the_definitions_cannot_say_is_reported() {
    let yaml = crd(
        "          spec:
            type: object
            x-kubernetes-validations:
            - {rule: self.a == oldSelf.a, message: immutable}
            - {rule: self.a != '', messageExpression: \"'a is ' + self.a\", reason: FieldValueForbidden, fieldPath: .a}
            properties:
              a: {type: string, format: email, nullable: true}
              n: {type: integer, multipleOf: 2, enum: [1, 2]}
              o: {type: object, default: {x: 1}, properties: {x: {type: integer}}}
              l: {type: array, items: {type: string, x-kubernetes-validations: [{rule: self != ''}]}}
              s: {x-kubernetes-int-or-string: true, pattern: '^[0-9]+%?$'}
              d: {type: string, example: abc}
              k: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [n], items: {type: object, x-kubernetes-preserve-unknown-fields: true}}
              u: {type: object, x-kubernetes-preserve-unknown-fields: true, x-kubernetes-map-type: atomic}
              r: {type: object, required: [x], minProperties: 1, properties: {x: {type: string, default: q}}}
",
        "    deprecated: true
    deprecationWarning: use v2
    additionalPrinterColumns:
    - {name: Gone, type: string, jsonPath: .spec.nothing}
",
    )
    .replace(
        "  versions:",
        "  conversion:\n    strategy: Webhook\n    webhook: {conversionReviewVersions: [v1], clientConfig: {url: 'https://conv.example.com'}}\n  versions:",
    );
    let out = import(&yaml);
    for (path, what) in [
        ("spec.conversion", "webhook is not called"),
        ("spec.versions[name=v1].deprecated", "deprecation"),
        ("spec.versions[name=v1].deprecationWarning", "deprecation"),
        (
            "spec.versions[name=v1].additionalPrinterColumns[0]",
            "`Gone`",
        ),
        (
            "spec.versions[name=v1].additionalPrinterColumns",
            "no Age column",
        ),
        (
            "properties.spec.x-kubernetes-validations[0]",
            "transition rule",
        ),
        (
            "properties.spec.x-kubernetes-validations[1].messageExpression",
            "`messageExpression`",
        ),
        (
            "properties.spec.x-kubernetes-validations[1].reason",
            "`reason`",
        ),
        (
            "properties.spec.x-kubernetes-validations[1].fieldPath",
            "`fieldPath`",
        ),
        ("properties.a.format", "`email`"),
        ("properties.a.nullable", "null value is dropped"),
        ("properties.n.multipleOf", "`multipleOf`"),
        ("properties.n.enum", "`enum` on a value of type `i64`"),
        ("properties.o.default", "not applied"),
        (
            "properties.l.items.x-kubernetes-validations[0]",
            "not checked",
        ),
        (
            "properties.s.pattern",
            "`pattern` on a value of type `IntOrString`",
        ),
        ("properties.d.example", "not carried"),
        ("properties.k.x-kubernetes-list-type", "not a struct"),
        ("properties.u.x-kubernetes-map-type", "keeps unknown fields"),
        ("properties.r.minProperties", "`minProperties`"),
        ("properties.r.properties.x.default", "never applies"),
    ] {
        assert!(
            has_loss(&out, path, what),
            "no loss `{path}`: `{what}` in:\n{}",
            out.report()
        );
    }
    let text = v1(&out);
    // The rule kept has its message; the transition rule is left out.
    assert!(text.contains("#[rule(cel = \"self.a != ''\")]"), "{text}");
    assert!(!text.contains("oldSelf"), "{text}");
    assert!(out.report().contains("thing(s) the definitions cannot say"));
}

#[test]
fn documents_that_are_not_one_v1_crd_are_refused() {
    let not = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n";
    assert!(matches!(import_crd(not), Err(ImportError::NotACrd(k)) if k == "v1/ConfigMap"));
    let one = crd("          spec: {type: object}\n", "");
    let two = format!("{one}---\n{one}");
    assert!(matches!(import_crd(&two), Err(ImportError::SeveralCrds(2))));
    assert!(matches!(import_crd("a: [b"), Err(ImportError::Yaml(_))));
    let no_storage = one.replace("storage: true", "storage: false");
    let err = import_crd(&no_storage).expect_err("no storage version");
    assert_eq!(
        err.to_string(),
        "spec.versions: 0 versions have `storage: true`; exactly one must"
    );
    let odd = one.replace("name: v1\n", "name: version1\n");
    let err = import_crd(&odd).expect_err("odd version name");
    assert!(
        err.to_string()
            .starts_with("spec.versions[0].name: `version1` is not a Kubernetes version name"),
        "{err}"
    );
    let no_group = one.replace("group: example.com", "group: ''");
    assert_eq!(
        import_crd(&no_group).expect_err("no group").to_string(),
        "spec.group is missing or invalid"
    );
}

/// A CRD with a document separator and a leading comment imports; the same CRD in JSON too.
#[test]
fn yaml_and_json_read_alike() {
    let yaml = format!(
        "# a comment\n---\n{}",
        crd(
            "          spec: {type: object, properties: {a: {type: string}}}\n",
            ""
        )
    );
    let from_yaml = import(&yaml);
    let value: serde_json::Value = serde_yaml_ng::from_str(&yaml).expect("yaml");
    let from_json = import(&value.to_string());
    assert_eq!(from_yaml.files, from_json.files);
}

/// The imported files are `#![crd_validation]`: a required `Option` is checked for presence
/// and bounds read as a CRD schema's (the generated Rust calls those checks).
#[test]
fn imported_files_check_as_a_crd_schema_does() {
    let yaml = crd(
        "          spec:
            type: object
            required: [name]
            properties:
              name: {type: string}
              replicas: {type: integer, maximum: 3}
",
        "",
    );
    let out = import(&yaml);
    assert!(v1(&out).contains("#![crd_validation]\n"), "{}", v1(&out));
    let (model, diags) = super::load(&out.files);
    assert!(diags.is_empty(), "{diags}");
    let group = model.group("example.com").expect("group");
    let rust = crate::emit::rust::version_file(group, group.version("v1").expect("v1"));
    assert!(rust.contains("check_present(&self.name"), "{rust}");
    assert!(rust.contains("check_schema_maximum("), "{rust}");
    assert!(!rust.contains("check_required("), "{rust}");
}
