//! Unit tests of run-time kinds' objects and codecs.

use super::*;

#[derive(Debug)]
struct KeepSpec;

impl UnstructuredSchema for KeepSpec {
    fn prune(&self, fields: &mut Value, pruned: &mut Vec<String>) {
        let Value::Object(fields) = fields else {
            return;
        };
        fields.retain(|k, _| {
            let keep = k == "spec" || k == "status";
            if !keep {
                pruned.push(k.clone());
            }
            keep
        });
    }

    fn default(&self, fields: &mut Value) {
        if let Some(Value::Object(spec)) = fields.get_mut("spec") {
            spec.entry("size").or_insert(Value::from(1));
        }
    }

    fn validate(&self, object: &Unstructured) -> Vec<FieldError> {
        match object.fields().get("spec").and_then(|s| s.get("size")) {
            Some(Value::Number(n)) if n.as_i64().is_some_and(|n| n < 0) => {
                vec![FieldError::invalid(
                    "spec.size",
                    &Value::Number(n.clone()),
                    "should be greater than or equal to 0",
                )]
            }
            _ => Vec::new(),
        }
    }

    fn validate_update(&self, object: &Unstructured, _old: &Unstructured) -> Vec<FieldError> {
        self.validate(object)
    }
}

fn codec(schema: bool) -> UnstructuredCodec {
    let schema: Option<Arc<dyn UnstructuredSchema>> =
        schema.then(|| Arc::new(KeepSpec) as Arc<dyn UnstructuredSchema>);
    UnstructuredCodec::new(Arc::new(UnstructuredVersion::new(
        tests_support::widget_info(),
        schema,
    )))
}

#[test]
fn decodes_prunes_and_defaults() {
    let decoded = codec(true)
        .decode_json(
            br#"{"apiVersion":"example.dev/v1","kind":"Gadget","metadata":{"name":"a","bogus":1},"spec":{},"extra":true}"#,
        )
        .unwrap();
    assert_eq!(
        decoded.tracker.api_version.as_deref(),
        Some("example.dev/v1")
    );
    assert_eq!(decoded.tracker.kind.as_deref(), Some("Gadget"));
    assert_eq!(
        decoded.tracker.unknown_fields(),
        vec!["metadata.bogus", "extra"]
    );
    assert_eq!(
        String::from_utf8(decoded.object.to_json().unwrap()).unwrap(),
        r#"{"apiVersion":"example.dev/v1","kind":"Gadget","metadata":{"name":"a"},"spec":{"size":1}}"#
    );
}

#[test]
fn duplicates_are_reported_and_the_last_wins() {
    let decoded = codec(false)
        .decode_json(br#"{"metadata":{"name":"a"},"spec":{"x":1,"x":2}}"#)
        .unwrap();
    assert_eq!(decoded.tracker.duplicate_fields(), vec!["spec.x"]);
    assert_eq!(
        decoded.object.to_value().unwrap()["spec"]["x"],
        Value::from(2)
    );
}

#[test]
fn bad_metadata_names_its_path() {
    let err = codec(false)
        .decode_json(br#"{"metadata":{"labels":[]}}"#)
        .unwrap_err();
    assert_eq!(err.path, "metadata.labels");
}

#[test]
fn status_is_apart_from_the_spec() {
    let c = codec(false);
    let a = c
        .decode_json(br#"{"spec":{"x":1},"status":{"y":1}}"#)
        .unwrap()
        .object;
    let mut b = c
        .decode_json(br#"{"spec":{"x":1},"status":{"y":2}}"#)
        .unwrap()
        .object;
    assert!(a.spec_eq(&*b));
    assert!(!a.eq_object(&*b));
    b.copy_status(&*a);
    assert!(a.eq_object(&*b));
    b.reset_status();
    assert_eq!(b.to_value().unwrap().get("status"), None);
}

#[test]
fn validation_comes_from_the_schema() {
    let object = codec(true)
        .decode_json(br#"{"spec":{"size":-1}}"#)
        .unwrap()
        .object;
    let errors = object.validate();
    assert_eq!(
        errors[0].to_string(),
        "spec.size: Invalid value: -1: should be greater than or equal to 0"
    );
}

#[test]
fn a_retired_codec_refuses_to_decode() {
    let c = codec(true);
    let object = c.decode_json(br#"{"spec":{}}"#).unwrap().object;
    c.retire();
    assert!(c.decode_json(br#"{"spec":{}}"#).is_err());
    // Objects decoded before keep their schema.
    assert_eq!(object.to_value().unwrap()["spec"]["size"], Value::from(1));
    assert!(c.convert_from_hub(&object.to_hub()).is_err());
}

/// Renames `spec.size` to `spec.count` and records what it was asked.
#[derive(Debug, Default)]
struct Renamer(std::sync::Mutex<Vec<(usize, bool)>>);

impl UnstructuredConverter for Renamer {
    fn convert(
        &self,
        objects: Vec<Unstructured>,
        to: &Arc<UnstructuredVersion>,
        list: bool,
    ) -> Result<Vec<Unstructured>, CodecError> {
        self.0.lock().unwrap().push((objects.len(), list));
        Ok(objects
            .into_iter()
            .map(|o| {
                let mut fields = o.fields().clone();
                if let Some(Value::Object(spec)) = fields.get_mut("spec")
                    && let Some(size) = spec.remove("size")
                {
                    spec.insert("count".into(), size);
                }
                fields.insert("junk".into(), Value::from(true));
                Unstructured::new(to.clone(), o.metadata.clone(), fields)
            })
            .collect())
    }
}

#[test]
fn a_converter_gets_only_what_needs_converting_and_its_output_is_pruned() {
    static V2: std::sync::OnceLock<ResourceInfo> = std::sync::OnceLock::new();
    let v2_info = V2.get_or_init(|| ResourceInfo {
        version: "v2",
        storage_version: false,
        ..tests_support::widget_info().clone()
    });
    let renamer = Arc::new(Renamer::default());
    let v1 = codec(false);
    let v2 = UnstructuredCodec::new(Arc::new(
        UnstructuredVersion::new(v2_info, Some(Arc::new(KeepSpec))).with_converter(renamer.clone()),
    ));
    let a = v1
        .decode_json(br#"{"metadata":{"name":"a"},"spec":{"size":2}}"#)
        .unwrap()
        .object;
    let already = v2
        .decode_json(br#"{"metadata":{"name":"b"},"spec":{"count":5}}"#)
        .unwrap()
        .object;
    let converted = v2.convert_from_hub(&a.to_hub()).unwrap();
    assert_eq!(converted.info().version, "v2");
    // Pruned (no `junk`) by v2's schema, not defaulted (no `size`).
    assert_eq!(
        converted.to_value().unwrap()["spec"],
        serde_json::json!({"count": 2})
    );
    assert!(converted.to_value().unwrap().get("junk").is_none());
    let all = v2
        .convert_all_from_hub(vec![a.to_hub(), already.to_hub(), v1.new_object().to_hub()])
        .unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(all[1].to_value().unwrap()["spec"]["count"], Value::from(5));
    assert_eq!(all[2].info().version, "v2");
    // One call per object, one for the list with the one object of another version (the
    // empty object is relabelled, as Kubernetes never sends one).
    assert_eq!(*renamer.0.lock().unwrap(), vec![(1, false), (1, true)]);
}

#[test]
fn protobuf_is_refused() {
    let c = codec(false);
    let object = c.new_object();
    assert!(matches!(
        object.write_protobuf(&mut Vec::new()),
        Err(CodecError::Protobuf(_))
    ));
    assert!(c.decode_protobuf(b"").is_err());
}
