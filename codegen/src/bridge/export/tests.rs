use std::path::Path;

use serde_json::{Value, json};

use super::*;
use crate::Generator;

/// Definitions exercising what the export translates: shared types, the definitions' own
/// formats, a struct that contains itself, zero values, strategic merge markers.
const THINGS: &str = r#"//! Things.
#![group = "things.example"]
#![version = "v1"]
#![storage]

/// A Thing.
#[kind(namespaced, status, short_names = ["th"], field_selectors = ["spec.mode"])]
#[print_column(name = "Mode", type = "string", json_path = ".spec.mode")]
#[rule(cel = "self.metadata.name != 'forbidden'", message = "that name is forbidden")]
pub struct Thing {
    /// Standard object metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// The desired state.
    #[proto(2)]
    pub spec: ThingSpec,
    /// The observed state.
    #[proto(3)]
    pub status: Option<ThingStatus>,
}

/// The desired state of a Thing.
pub struct ThingSpec {
    /// The mode.
    #[proto(1)]
    #[validate(enum = ["Fast", "Slow"])]
    pub mode: Option<String>,
    /// A DNS label.
    #[proto(2)]
    #[validate(format = "dns1123-label")]
    pub host: Option<String>,
    /// A port by number or name.
    #[proto(3)]
    pub port: Option<IntOrString>,
    /// How much.
    #[proto(4)]
    pub size: Option<Quantity>,
    /// When.
    #[proto(5)]
    pub at: Option<Time>,
    /// Anything.
    #[proto(6)]
    pub extra: Option<Value>,
    /// A tree.
    #[proto(7)]
    pub tree: Option<Node>,
    /// Counted always.
    #[proto(8)]
    pub count: i32,
    /// Named items.
    #[proto(9)]
    #[list(type = "map", map_keys = ["name"])]
    #[patch(strategy = "merge", merge_key = "name")]
    pub items: Vec<Item>,
    /// Immutable once set.
    #[proto(10)]
    #[validate(immutable, pattern = "^[a-z]+$", format = "dns1123-label")]
    pub id: Option<String>,
}

/// A node of a tree.
pub struct Node {
    /// The node's value.
    #[proto(1)]
    pub value: Option<String>,
    /// Its children.
    #[proto(2)]
    pub children: Vec<Node>,
}

/// An item.
pub struct Item {
    /// Its name.
    #[proto(1)]
    #[validate(required)]
    pub name: String,
}

/// The observed state of a Thing.
pub struct ThingStatus {
    /// Whether it is ready.
    #[proto(1)]
    pub ready: bool,
}
"#;

fn things() -> Exported {
    let dir = tempfile::tempdir().expect("tempdir");
    let group = dir.path().join("things.example");
    std::fs::create_dir_all(&group).expect("mkdir");
    std::fs::write(group.join("v1.rs"), THINGS).expect("write");
    let model = Generator::new(dir.path())
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    export_group(&model, "things.example").unwrap_or_else(|e| panic!("{e}"))
}

fn no_refs(v: &Value, path: &str) {
    match v {
        Value::Object(m) => {
            assert!(!m.contains_key("$ref"), "a $ref is left at {path}");
            assert!(
                !m.contains_key("x-kubernetes-group-version-kind"),
                "x-kubernetes-group-version-kind at {path}"
            );
            for (k, v) in m {
                no_refs(v, &format!("{path}/{k}"));
            }
        }
        Value::Array(items) => items.iter().for_each(|v| no_refs(v, path)),
        _ => {}
    }
}

#[test]
fn a_kind_becomes_one_crd_with_its_names_scope_and_version() {
    let out = things();
    assert_eq!(out.crds.len(), 1);
    let crd = &out.crds[0];
    assert_eq!(crd["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(crd["metadata"]["name"], "things.things.example");
    assert_eq!(crd["spec"]["group"], "things.example");
    assert_eq!(crd["spec"]["scope"], "Namespaced");
    assert_eq!(
        crd["spec"]["names"],
        json!({"plural": "things", "singular": "thing", "kind": "Thing", "listKind": "ThingList", "shortNames": ["th"]})
    );
    let v1 = &crd["spec"]["versions"][0];
    assert_eq!(v1["name"], "v1");
    assert_eq!(v1["storage"], true);
    assert_eq!(v1["served"], true);
    assert_eq!(v1["subresources"], json!({"status": {}}));
    assert_eq!(v1["selectableFields"], json!([{"jsonPath": ".spec.mode"}]));
    let columns: Vec<&str> = v1["additionalPrinterColumns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(columns, ["Mode", "Age"]);
    no_refs(crd, "");
}

#[test]
fn shared_types_and_own_formats_are_spelled_as_crds_spell_them() {
    let out = things();
    let schema = &out.crds[0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    assert_eq!(schema["properties"]["metadata"], json!({"type": "object"}));
    assert_eq!(
        schema["x-kubernetes-validations"],
        json!([{"rule": "self.metadata.name != 'forbidden'", "message": "that name is forbidden"}])
    );
    let spec = &schema["properties"]["spec"];
    let p = &spec["properties"];
    assert_eq!(p["mode"]["enum"], json!(["Fast", "Slow"]));
    assert_eq!(p["host"]["pattern"], DNS1123_LABEL);
    assert_eq!(p["host"]["maxLength"], 63);
    assert!(p["host"].get("format").is_none(), "{}", p["host"]);
    assert_eq!(p["port"]["x-kubernetes-int-or-string"], true);
    assert_eq!(p["port"]["description"], "A port by number or name.");
    assert_eq!(p["size"]["pattern"], QUANTITY_PATTERN);
    assert_eq!(p["at"]["format"], "date-time");
    assert_eq!(p["at"]["type"], "string");
    assert_eq!(p["extra"]["x-kubernetes-preserve-unknown-fields"], true);
    // A field with its own pattern keeps it; the format's goes into allOf.
    assert_eq!(p["id"]["pattern"], "^[a-z]+$");
    assert_eq!(p["id"]["allOf"], json!([{"pattern": DNS1123_LABEL}]));
    assert_eq!(
        p["id"]["x-kubernetes-validations"],
        json!([{"rule": "self == oldSelf", "message": "field is immutable"}])
    );
    // List markers stay; strategic merge markers go (and are reported).
    assert_eq!(p["items"]["x-kubernetes-list-type"], "map");
    assert_eq!(p["items"]["x-kubernetes-list-map-keys"], json!(["name"]));
    assert!(p["items"].get("x-kubernetes-patch-strategy").is_none());
    assert_eq!(p["items"]["items"]["required"], json!(["name"]));
    assert!(
        out.losses
            .iter()
            .any(|l| l.at == "Thing v1 .spec.items" && l.what.contains("strategic merge")),
        "{:?}",
        out.losses
    );
}

#[test]
fn fields_that_are_not_options_default_to_their_zero_value() {
    let out = things();
    let schema = &out.crds[0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    let spec = &schema["properties"]["spec"];
    assert_eq!(spec["default"], json!({}));
    assert_eq!(spec["properties"]["count"]["default"], 0);
    assert!(spec["properties"]["mode"].get("default").is_none());
    // A list is left out when empty, as the compiled kind writes it.
    assert!(spec["properties"]["items"].get("default").is_none());
    let status = &schema["properties"]["status"];
    assert!(status.get("default").is_none());
    assert_eq!(status["properties"]["ready"]["default"], false);
    // An item's name is required: no zero default that would hide a missing one.
    assert!(
        spec["properties"]["items"]["items"]["properties"]["name"]
            .get("default")
            .is_none()
    );
}

#[test]
fn a_struct_that_contains_itself_is_kept_as_sent_below_itself_and_reported() {
    let out = things();
    let tree = &out.crds[0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        ["properties"]["tree"];
    assert_eq!(tree["properties"]["value"]["type"], "string");
    assert_eq!(
        tree["properties"]["children"]["items"],
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
    );
    assert!(
        out.losses.iter().any(
            |l| l.at == "Thing v1 .spec.tree.children[*]" && l.what.contains("contains itself")
        ),
        "{:?}",
        out.losses
    );
}

#[test]
fn what_a_crd_cannot_say_is_reported() {
    let out = things();
    let whats: Vec<String> = out.losses.iter().map(ToString::to_string).collect();
    for want in [
        "Thing v1: protobuf field numbers",
        "Thing v1 .spec.host: format dns1123-label",
    ] {
        assert!(
            whats.iter().any(|w| w.starts_with(want)),
            "no loss {want:?} in {whats:#?}"
        );
    }
}

#[test]
fn example_dev_exports_every_version_and_reports_compiled_conversions() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../api-defs");
    let model = Generator::new(root)
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    let out = export_group(&model, "example.dev").unwrap_or_else(|e| panic!("{e}"));
    let widgets = out
        .crds
        .iter()
        .find(|c| c["metadata"]["name"] == "widgets.example.dev")
        .expect("widgets.example.dev");
    let versions: Vec<(&str, bool)> = widgets["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["name"].as_str().unwrap(), v["storage"].as_bool().unwrap()))
        .collect();
    assert_eq!(versions, [("v1", true), ("v1alpha1", false)]);
    assert_eq!(
        widgets["spec"]["versions"][0]["subresources"]["scale"],
        json!({"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"})
    );
    let whats: Vec<String> = out.losses.iter().map(ToString::to_string).collect();
    for want in [
        "Widget: the versions' schemas differ",
        "example.dev/hooks.rs: hand-written code",
    ] {
        assert!(
            whats.iter().any(|w| w.starts_with(want)),
            "no loss {want:?} in {whats:#?}"
        );
    }
    assert!(matches!(
        export_group(&model, "nothing.example"),
        Err(ExportError::UnknownGroup(..))
    ));
}
