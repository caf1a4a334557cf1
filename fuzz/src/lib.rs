//! The bodies of apiary's fuzz targets: each `fuzz_targets/<name>.rs` calls the function of
//! the same name here with libFuzzer's input. Every function calls the project's real entry
//! points, returns quietly on input they refuse with an error, and panics (a crash to
//! libFuzzer) when an entry point panics or a property below does not hold.
//!
//! Inputs that hold two documents (an object and a patch, a live object and an applied
//! configuration) separate them with the first NUL byte, which neither JSON nor YAML text
//! contains. Targets that act on an object of some kind pick the kind and version from the
//! first byte, over every version of every kind of the generated scheme.

use std::path::Path;
use std::sync::OnceLock;

use apimachinery::protobuf::{self, ProtoMessage};
use apimachinery::runtime::{Object, VersionCodec};
use apimachinery::selectors::{FieldSelector, LabelSelector};
use serde_json::Value;
use server::apply::ApplyRequest;
use server::apply::managed::entries;
use server::negotiate::body::{MAX_DEPTH, depth, json_too_deep, parse_json};
use server::negotiate::yaml::yaml_to_json;
use server::patch::{PatchType, SchemaNode, apply_patch, json::apply_merge_patch};

/// Every version of every kind the generated scheme serves.
fn codecs() -> &'static [&'static dyn VersionCodec] {
    static CODECS: OnceLock<Vec<&'static dyn VersionCodec>> = OnceLock::new();
    CODECS.get_or_init(|| {
        generated::scheme()
            .kinds()
            .iter()
            .flat_map(|k| k.codecs().iter().copied())
            .collect()
    })
}

/// The codec the first byte picks, and the rest of the input.
fn pick(data: &[u8]) -> Option<(&'static dyn VersionCodec, &[u8])> {
    let (&first, rest) = data.split_first()?;
    let all = codecs();
    Some((all[usize::from(first) % all.len()], rest))
}

/// The input split at its first NUL byte (all of it and nothing when there is none).
fn split_nul(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}

fn kind_of(codec: &dyn VersionCodec) -> String {
    let info = codec.info();
    format!("{} {}", info.api_version(), info.kind)
}

/// Asserts that the object survives JSON (bytes and tree) unchanged: what the server writes in
/// a response or hands to a patch decodes back to the same object.
fn assert_json_round_trip(codec: &dyn VersionCodec, object: &dyn Object) {
    let kind = kind_of(codec);
    let json = object
        .to_json()
        .unwrap_or_else(|e| panic!("{kind}: a decoded object does not encode to JSON: {e}"));
    let again = codec.decode_json(&json).unwrap_or_else(|e| {
        panic!(
            "{kind}: the JSON of a decoded object does not decode: {e}\n{}",
            String::from_utf8_lossy(&json)
        )
    });
    assert!(
        object.eq_object(&*again.object),
        "{kind}: the JSON round trip changed the object\nfirst:  {object:?}\nsecond: {:?}",
        again.object
    );
    let tree = object
        .to_value()
        .unwrap_or_else(|e| panic!("{kind}: a decoded object has no JSON tree: {e}"));
    let again = codec.decode_value(&tree).unwrap_or_else(|e| {
        panic!("{kind}: the JSON tree of a decoded object does not decode: {e}")
    });
    assert!(
        object.eq_object(&*again.object),
        "{kind}: the JSON tree round trip changed the object"
    );
}

/// A JSON request body of a kind (as `endpoints::decode` reads one: nesting bounded first, then
/// the kind's one-pass decoder). Property: decode → encode → decode gives the same object.
pub fn decode_json(data: &[u8]) {
    let Some((codec, body)) = pick(data) else {
        return;
    };
    if json_too_deep(body, MAX_DEPTH).is_some() {
        return;
    }
    if let Ok(decoded) = codec.decode_json(body) {
        assert_json_round_trip(codec, &*decoded.object);
    }
}

/// A YAML request body of a kind (bounded YAML → JSON tree → the kind's decoder). Property:
/// the decoded object survives JSON unchanged.
pub fn decode_yaml(data: &[u8]) {
    let Some((codec, body)) = pick(data) else {
        return;
    };
    let Ok(tree) = yaml_to_json(body) else {
        return;
    };
    assert!(
        depth(&tree) <= MAX_DEPTH,
        "yaml_to_json let a deep tree through"
    );
    if let Ok(decoded) = codec.decode_value(&tree) {
        assert_json_round_trip(codec, &*decoded.object);
    }
}

/// A protobuf message of a kind (the `raw` of an enveloped body). Properties: decode → encode
/// → decode gives the same object, and the object encodes to JSON that decodes.
pub fn decode_protobuf(data: &[u8]) {
    let Some((codec, body)) = pick(data) else {
        return;
    };
    let Ok(object) = codec.decode_protobuf(body) else {
        return;
    };
    let kind = kind_of(codec);
    let mut encoded = Vec::new();
    object
        .write_protobuf(&mut encoded)
        .unwrap_or_else(|e| panic!("{kind}: a decoded object does not encode: {e}"));
    let again = codec.decode_protobuf(&encoded).unwrap_or_else(|e| {
        panic!("{kind}: the protobuf of a decoded object does not decode: {e}")
    });
    assert!(
        object.eq_object(&*again),
        "{kind}: the protobuf round trip changed the object\nfirst:  {object:?}\nsecond: {again:?}"
    );
    if let Ok(json) = object.to_json() {
        if let Err(e) = codec.decode_json(&json) {
            panic!(
                "{kind}: the JSON of a protobuf object does not decode: {e}\n{}",
                String::from_utf8_lossy(&json)
            );
        }
    }
}

/// The `k8s\0` envelope (`runtime.Unknown`), a watch event and a length-prefixed frame.
/// Properties: decode → encode → decode gives the same envelope; `encode_envelope` writes
/// what `decode_envelope` reads; a split frame accounts for every byte.
pub fn protobuf_envelope(data: &[u8]) {
    if let Ok(unknown) = protobuf::decode_envelope(data) {
        let mut encoded = protobuf::MAGIC.to_vec();
        encoded.extend(unknown.encode_to_vec());
        let again = protobuf::decode_envelope(&encoded).expect("an encoded envelope decodes");
        assert_eq!(unknown, again, "the envelope round trip changed it");
        if let Some(raw) = &unknown.raw {
            if unknown.content_encoding.is_empty() && unknown.content_type.is_empty() {
                let written = protobuf::encode_envelope(
                    &unknown.type_meta.api_version,
                    &unknown.type_meta.kind,
                    raw,
                );
                let again = protobuf::decode_envelope(&written).expect("encode_envelope decodes");
                assert_eq!(unknown, again, "encode_envelope wrote another envelope");
            }
        }
    }
    if let Ok(event) = protobuf::WatchEvent::decode(data) {
        let again = protobuf::WatchEvent::decode(&event.encode_to_vec())
            .expect("an encoded watch event decodes");
        assert_eq!(event, again, "the watch event round trip changed it");
    }
    if let Some((message, rest)) = protobuf::split_frame(data) {
        assert_eq!(
            message.len() + rest.len() + 4,
            data.len(),
            "a frame lost bytes"
        );
        assert_eq!(protobuf::frame(message), data[..data.len() - rest.len()]);
    }
}

/// The `labelSelector` parser. Property: a parsed selector prints as a selector that parses
/// to one that prints the same, and matching never panics.
pub fn label_selector(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(selector) = LabelSelector::parse(text) else {
        return;
    };
    let printed = selector.to_string();
    let again = LabelSelector::parse(&printed)
        .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}, which does not parse: {e}"));
    assert_eq!(
        printed,
        again.to_string(),
        "printing {text:?} is not stable"
    );
    let labels = selector
        .requirements
        .iter()
        .flat_map(|r| r.values.iter().map(|v| (r.key.clone(), v.clone())))
        .collect();
    let _ = selector.matches(&labels);
}

/// The `fieldSelector` parser. Property: a parsed selector prints as a selector that parses
/// to the same requirements.
pub fn field_selector(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(selector) = FieldSelector::parse(text) else {
        return;
    };
    let printed = selector.to_string();
    let again = FieldSelector::parse(&printed)
        .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}, which does not parse: {e}"));
    assert_eq!(
        printed,
        again.to_string(),
        "printing {text:?} is not stable"
    );
    let object = serde_json::json!({"metadata": {"name": "a", "namespace": "b"}});
    let _ = selector.matches_object(&object);
}

/// An object of a kind for a patch or an apply: the JSON text decoded by the kind's codec and
/// turned into its tree, as the handlers read the stored object.
fn typed_tree(codec: &dyn VersionCodec, json: &[u8]) -> Option<Value> {
    if json_too_deep(json, MAX_DEPTH).is_some() {
        return None;
    }
    let decoded = codec.decode_json(json).ok()?;
    decoded.object.to_value().ok()
}

/// JSON patch, merge patch and strategic merge patch (the second byte picks which) of an object
/// of a kind with an arbitrary body, as `endpoints::patch` runs them. Properties: a patch either
/// errors or yields a tree the kind's decoder reads without panicking; a merge patch applied
/// twice gives what it gave once, no deeper than its inputs.
pub fn patch(data: &[u8]) {
    let Some((codec, rest)) = pick(data) else {
        return;
    };
    let Some((&which, rest)) = rest.split_first() else {
        return;
    };
    let (original, body) = split_nul(rest);
    let Some(original) = typed_tree(codec, original) else {
        return;
    };
    let patch_type = match which % 3 {
        0 => PatchType::Json,
        1 => PatchType::Merge,
        _ => PatchType::Strategic,
    };
    let schema = SchemaNode::of(codec.shape());
    let Ok(patched) = apply_patch(patch_type, &original, body, &schema) else {
        return;
    };
    if patch_type == PatchType::Merge {
        let patch_depth = parse_json(body).map(|p| depth(&p)).unwrap_or(0);
        assert!(
            depth(&patched) <= depth(&original).max(patch_depth),
            "a merge patch made a deeper tree"
        );
        let twice = apply_merge_patch(&patched, body).expect("a merge patch applies again");
        assert_eq!(patched, twice, "a merge patch is not idempotent");
    }
    let _ = codec.decode_value(&patched);
}

/// Server-side apply of a YAML configuration (after the first NUL) to a live object of a kind
/// (before it; empty creates), as `endpoints::patch` runs it; the second byte sets `force`
/// and whether the status subresource is applied. Properties: apply either errors or yields
/// an object whose managedFields read back, which the kind's decoder reads without
/// panicking.
pub fn apply(data: &[u8]) {
    let Some((codec, rest)) = pick(data) else {
        return;
    };
    let Some((&flags, rest)) = rest.split_first() else {
        return;
    };
    let (live, applied) = split_nul(rest);
    let live = if live.is_empty() {
        None
    } else {
        match typed_tree(codec, live) {
            Some(tree) => Some(tree),
            None => return,
        }
    };
    let Ok(applied) = yaml_to_json(applied) else {
        return;
    };
    if !applied.is_object() {
        return;
    }
    let info = codec.info();
    let api_version = info.api_version();
    let req = ApplyRequest {
        manager: if flags & 4 == 0 { "fuzz" } else { "kubectl" },
        api_version: &api_version,
        force: flags & 1 != 0,
        subresource: if flags & 2 != 0 && info.status_subresource {
            "status"
        } else {
            ""
        },
        status_subresource: info.status_subresource,
    };
    let schema = SchemaNode::of(codec.shape());
    let Ok(merged) = server::apply::apply(live.as_ref(), &applied, &req, &schema) else {
        return;
    };
    assert!(merged.is_object(), "apply yielded a non-object");
    let managed = merged
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    assert_eq!(
        entries(&merged).len(),
        managed,
        "the managedFields apply wrote do not read back"
    );
    let _ = codec.decode_value(&merged);
}

/// The list prefixes continue tokens are decoded against.
const PREFIXES: [&str; 3] = ["/registry/widgets/", "/registry/widgets/ns1/", "/"];

/// The continue-token decoder (the first byte picks the listed prefix). Properties: a decoded
/// key stays under the prefix with no `.`, `..` or empty segment, and encoding it again
/// decodes to the same key and revision.
pub fn continue_token(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let Ok(token) = std::str::from_utf8(rest) else {
        return;
    };
    let prefix = PREFIXES[usize::from(first) % PREFIXES.len()];
    let Ok((key, revision)) = storage::continue_token::decode(token, prefix) else {
        return;
    };
    let relative = key
        .strip_prefix(prefix)
        .unwrap_or_else(|| panic!("{token:?} decoded to {key:?}, outside {prefix:?}"));
    assert!(
        !relative
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == ".."),
        "{token:?} decoded to {key:?}, which escapes {prefix:?}"
    );
    let again = storage::continue_token::encode(&key, prefix, revision).expect("encodes");
    let decoded = storage::continue_token::decode(&again, prefix).expect("decodes");
    assert_eq!(decoded, (key, revision), "the token round trip changed it");
}

/// The document the `jsonpath` target evaluates paths on: a custom resource with nested
/// objects, arrays of objects, escaped-dot label keys, nulls, strings, booleans, integers,
/// floats and a number beyond `int64`.
fn jsonpath_document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        serde_json::json!({
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": {
                "name": "web",
                "labels": {"app.kubernetes.io/name": "web", "tier": "front"},
                "annotations": null
            },
            "spec": {"replicas": 3, "ratio": 0.5, "big": 18446744073709551615u64, "dns": ["a", "b"]},
            "status": {
                "conditions": [
                    {"type": "Issuing", "status": "False", "observedGeneration": 1},
                    {"type": "Ready", "status": "True", "message": "ok", "ready": true},
                    {"type": null, "status": [], "nested": [[1, 2], {"x": {"y": "z"}}]}
                ],
                "empty": {}, "none": [], "text": ""
            }
        })
    })
}

/// Kubernetes' JSONPath: the text as a printer column's path and as a template. Property: no
/// panic; a path that parses evaluates to a result or an error within its bounds, and its
/// results print.
pub fn jsonpath(data: &[u8]) {
    use apimachinery::jsonpath::{JsonPath, MAX_VALUES, to_text};
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let doc = jsonpath_document();
    for parsed in [
        JsonPath::parse_printer_column(text),
        JsonPath::parse_template(text),
    ] {
        let Ok(path) = parsed else {
            continue;
        };
        for path in [path.clone(), path.allow_missing_keys(false)] {
            if let Ok(results) = path.evaluate(doc) {
                assert!(results.len() <= MAX_VALUES, "{text:?}: too many results");
                for r in results.iter().take(64) {
                    let _ = to_text(r);
                }
            }
            let _ = path.first(doc);
        }
    }
}

/// The api-defs parser and checker on one version file of a group `fuzz.example.dev` (with the
/// built-in shared meta group), and the emitters when it has no mistakes. Property: no panic;
/// every diagnostic names the file.
pub fn api_defs(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    allowing_caught_panics(|| check_api_defs(text));
}

/// The CRD schema engine on a schema and an object (the input split at its first NUL): the
/// CRD checks under strict and relaxed options, the `NonStructuralSchema` condition, and, when
/// the schema compiles, pruning, coercion, null dropping, defaulting, validation and ratcheted
/// validation of the object. Properties: no panic and no stack overflow whatever the nesting;
/// pruning a pruned object removes nothing more.
pub fn schema_compile(data: &[u8]) {
    use apimachinery::schema::{
        CrdSchemaOptions, Structural, nonstructural_condition, validate_crd_schema,
    };
    let (schema, object) = split_nul(data);
    let Ok(schema) = serde_json::from_slice::<Value>(schema) else {
        return;
    };
    let path = "spec.validation.openAPIV3Schema";
    let _ = validate_crd_schema(&schema, path, &CrdSchemaOptions::default());
    let relaxed = CrdSchemaOptions {
        require_structural_schema: false,
        require_valid_property_type: false,
        require_pruned_defaults: false,
        require_atomic_set_type: false,
        require_map_list_keys_map_set_validation: false,
        status_subresource_enabled: true,
        ..CrdSchemaOptions::default()
    };
    let _ = validate_crd_schema(&schema, path, &relaxed);
    let _ = CrdSchemaOptions::ratcheted_from([&schema], true, false, false);
    let _ = nonstructural_condition(true, &[("v1", Some(&schema)), ("v2", None)]);
    let Ok(compiled) = Structural::new(&schema) else {
        return;
    };
    let original = serde_json::from_slice::<Value>(object).unwrap_or(Value::Null);
    let mut object = original.clone();
    compiled.prune(&mut object);
    assert!(
        compiled.prune(&mut object.clone()).is_empty(),
        "pruning a pruned object removed more"
    );
    let _ = compiled.coerce_embedded(&mut object.clone(), false);
    let _ = compiled.coerce_embedded(&mut object, true);
    compiled.drop_nulls(&mut object);
    compiled.default(&mut object);
    let _ = compiled.validate(&object);
    let _ = compiled.validate_update(&object, &original);
}

/// The decoder of custom resources: arbitrary bytes decoded as a request body of a version
/// whose schema is a Widget-like CRD's (nested objects, a list map, an int-or-string, defaults,
/// preserved unknown fields, an embedded resource), then validated, re-encoded, converted to
/// a second version and decoded again. Properties: no panic; what a decode produced decodes
/// again to the same object.
pub fn custom_resource_decode(data: &[u8]) {
    use apimachinery::runtime::VersionCodec;
    use apimachinery::runtime::unstructured::{UnstructuredCodec, UnstructuredVersion};
    use std::sync::{Arc, OnceLock};

    static CODECS: OnceLock<(UnstructuredCodec, UnstructuredCodec)> = OnceLock::new();
    let (v1, v2) = CODECS.get_or_init(|| {
        let schema: Value = serde_json::from_str(CUSTOM_RESOURCE_SCHEMA).expect("the schema");
        let structural = Arc::new(
            apimachinery::schema::Structural::new(&schema).expect("the schema compiles"),
        );
        let info = |version: &'static str| -> &'static apimachinery::ResourceInfo {
            Box::leak(Box::new(apimachinery::ResourceInfo {
                version,
                ..apimachinery::runtime::unstructured::tests_support::widget_info().clone()
            }))
        };
        let codec = |version| {
            UnstructuredCodec::new(Arc::new(UnstructuredVersion::new(
                info(version),
                Some(structural.clone()),
            )))
        };
        (codec("v1"), codec("v2"))
    });
    let Ok(decoded) = v1.decode_json(data) else {
        return;
    };
    let _ = decoded.object.validate();
    let json = decoded.object.to_json().expect("an object encodes");
    let again = v1.decode_json(&json).expect("what was decoded decodes again");
    assert!(
        again.object.eq_object(&*decoded.object),
        "a decoded object changed when decoded again"
    );
    let _ = again.object.validate_update(&*decoded.object);
    let converted = v2
        .convert_from_hub(&decoded.object.to_hub())
        .expect("conversion to a sibling version");
    assert_eq!(converted.info().version, "v2");
}

/// The schema of [`custom_resource_decode`].
const CUSTOM_RESOURCE_SCHEMA: &str = r#"{"type": "object", "properties": {
  "spec": {"type": "object", "required": ["color"], "properties": {
    "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
    "replicas": {"type": "integer", "minimum": 0, "maximum": 1000, "default": 1},
    "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
    "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 63}},
    "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
      "items": {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string", "pattern": "^[a-z]+$"}, "port": {"type": "integer", "nullable": true}}}},
    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
    "template": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {
      "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
    "when": {"type": "string", "format": "date-time"}
  }},
  "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
}}"#;

/// Runs `f` with a panic hook that does not abort. The CEL parser (a dependency) panics on some
/// malformed expressions; codegen catches that and reports the rule as not compiling, but
/// libFuzzer's panic hook would abort the process on the caught panic. A panic that `f` does
/// not catch is printed and resumed, so the harness still aborts on it and keeps the input.
fn allowing_caught_panics<R>(f: impl FnOnce() -> R) -> R {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(hook);
    match out {
        Ok(v) => v,
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("a panic without a message");
            eprintln!("panicked: {message}");
            std::panic::resume_unwind(payload)
        }
    }
}

/// Parses, checks and emits one definitions file (`v1.rs` of a group `fuzz.example.dev`).
fn check_api_defs(text: &str) {
    let dir = Path::new("api-defs/fuzz.example.dev");
    let file = dir.join("v1.rs");
    let mut diags = codegen::Diagnostics::default();
    let mut model = codegen::ApiModel::default();
    if let Some(group) =
        codegen::parse::parse_group(dir, &[(file.clone(), text.to_string())], &mut diags)
    {
        model.groups.push(group);
    }
    let (name, shared_file, shared_text) = codegen::parse::BUILTIN_SHARED;
    let shared_dir = Path::new("api-defs").join(name);
    let sources = [(shared_dir.join(shared_file), shared_text.to_string())];
    if let Some(group) = codegen::parse::parse_group(&shared_dir, &sources, &mut diags) {
        model.groups.push(group);
    }
    model.groups.sort_by(|a, b| a.dir.cmp(&b.dir));
    codegen::parse::link_shared(&mut model);
    codegen::check::check(&model, &mut diags);
    if diags.is_empty() {
        let _ = codegen::emit::emit(&model);
    }
}
