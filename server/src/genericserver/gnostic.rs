//! Encodes an OpenAPI v2 JSON document as gnostic's `openapi.v2.Document` protobuf message,
//! the form client-go requests from `/openapi/v2`
//! (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`). Field numbers follow
//! `google/gnostic-models` `openapiv2/OpenAPIv2.proto`; vendor extensions, defaults, examples and
//! enum values travel as `Any{yaml}` (JSON text, which is YAML).

use serde_json::{Map, Value};

/// A protobuf writer for the handful of wire types gnostic uses.
#[derive(Default)]
struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    fn key(&mut self, field: u32, wire: u32) {
        self.varint(u64::from((field << 3) | wire));
    }

    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, 2);
        self.varint(b.len() as u64);
        self.buf.extend_from_slice(b);
    }

    fn string(&mut self, field: u32, s: &str) {
        if !s.is_empty() {
            self.bytes(field, s.as_bytes());
        }
    }

    fn strings(&mut self, field: u32, v: Option<&Value>) {
        for s in as_strings(v) {
            self.bytes(field, s.as_bytes());
        }
    }

    fn bool(&mut self, field: u32, b: bool) {
        if b {
            self.key(field, 0);
            self.varint(1);
        }
    }

    fn int64(&mut self, field: u32, v: Option<&Value>) {
        if let Some(n) = v.and_then(Value::as_i64).filter(|n| *n != 0) {
            self.key(field, 0);
            self.varint(n as u64);
        }
    }

    fn double(&mut self, field: u32, v: Option<&Value>) {
        if let Some(n) = v.and_then(Value::as_f64).filter(|n| *n != 0.0) {
            self.key(field, 1);
            self.buf.extend_from_slice(&n.to_le_bytes());
        }
    }

    fn message(&mut self, field: u32, f: impl FnOnce(&mut Writer)) {
        let mut inner = Writer::default();
        f(&mut inner);
        self.bytes(field, &inner.buf);
    }
}

fn as_strings(v: Option<&Value>) -> Vec<&str> {
    match v {
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        Some(Value::String(s)) => vec![s.as_str()],
        _ => Vec::new(),
    }
}

fn s<'a>(m: &'a Map<String, Value>, k: &str) -> &'a str {
    m.get(k).and_then(Value::as_str).unwrap_or("")
}

fn b(m: &Map<String, Value>, k: &str) -> bool {
    m.get(k).and_then(Value::as_bool).unwrap_or(false)
}

fn any(w: &mut Writer, field: u32, v: &Value) {
    let text = serde_json::to_string(v).unwrap_or_default();
    w.message(field, |a| a.string(2, &format!("{text}\n")));
}

fn vendor_extensions(w: &mut Writer, field: u32, m: &Map<String, Value>) {
    for (k, v) in m.iter().filter(|(k, _)| k.starts_with("x-")) {
        w.message(field, |n| {
            n.string(1, k);
            any(n, 2, v);
        });
    }
}

fn obj(v: &Value) -> Option<&Map<String, Value>> {
    v.as_object()
}

fn schema(w: &mut Writer, m: &Map<String, Value>) {
    w.string(1, s(m, "$ref"));
    w.string(2, s(m, "format"));
    w.string(3, s(m, "title"));
    w.string(4, s(m, "description"));
    if let Some(d) = m.get("default") {
        any(w, 5, d);
    }
    w.double(6, m.get("multipleOf"));
    w.double(7, m.get("maximum"));
    w.bool(8, b(m, "exclusiveMaximum"));
    w.double(9, m.get("minimum"));
    w.bool(10, b(m, "exclusiveMinimum"));
    w.int64(11, m.get("maxLength"));
    w.int64(12, m.get("minLength"));
    w.string(13, s(m, "pattern"));
    w.int64(14, m.get("maxItems"));
    w.int64(15, m.get("minItems"));
    w.bool(16, b(m, "uniqueItems"));
    w.int64(17, m.get("maxProperties"));
    w.int64(18, m.get("minProperties"));
    w.strings(19, m.get("required"));
    if let Some(Value::Array(values)) = m.get("enum") {
        for v in values {
            any(w, 20, v);
        }
    }
    match m.get("additionalProperties") {
        Some(Value::Object(ap)) => w.message(21, |x| x.message(1, |sc| schema(sc, ap))),
        Some(Value::Bool(flag)) => w.message(21, |x| {
            x.key(2, 0);
            x.varint(u64::from(*flag));
        }),
        _ => {}
    }
    if m.contains_key("type") {
        w.message(22, |t| t.strings(1, m.get("type")));
    }
    match m.get("items") {
        Some(Value::Object(it)) => w.message(23, |x| x.message(1, |sc| schema(sc, it))),
        Some(Value::Array(list)) => w.message(23, |x| {
            for it in list.iter().filter_map(obj) {
                x.message(1, |sc| schema(sc, it));
            }
        }),
        _ => {}
    }
    if let Some(Value::Array(all)) = m.get("allOf") {
        for it in all.iter().filter_map(obj) {
            w.message(24, |sc| schema(sc, it));
        }
    }
    if let Some(Value::Object(props)) = m.get("properties") {
        w.message(25, |p| {
            for (name, v) in props {
                if let Some(pm) = obj(v) {
                    p.message(1, |n| {
                        n.string(1, name);
                        n.message(2, |sc| schema(sc, pm));
                    });
                }
            }
        });
    }
    w.string(26, s(m, "discriminator"));
    w.bool(27, b(m, "readOnly"));
    if let Some(ex) = m.get("example") {
        any(w, 30, ex);
    }
    vendor_extensions(w, 31, m);
}

fn primitives_items(w: &mut Writer, m: &Map<String, Value>) {
    w.string(1, s(m, "type"));
    w.string(2, s(m, "format"));
    if let Some(it) = m.get("items").and_then(obj) {
        w.message(3, |x| primitives_items(x, it));
    }
    w.string(4, s(m, "collectionFormat"));
    if let Some(d) = m.get("default") {
        any(w, 5, d);
    }
    vendor_extensions(w, 18, m);
}

/// Query/path/header parameter sub-schemas share one layout; form data has `allowEmptyValue`
/// at 5 and everything after shifted by one.
fn non_body_sub_schema(w: &mut Writer, m: &Map<String, Value>, has_allow_empty: bool) {
    let off = u32::from(has_allow_empty);
    w.bool(1, b(m, "required"));
    w.string(2, s(m, "in"));
    w.string(3, s(m, "description"));
    w.string(4, s(m, "name"));
    if has_allow_empty {
        w.bool(5, b(m, "allowEmptyValue"));
    }
    w.string(5 + off, s(m, "type"));
    w.string(6 + off, s(m, "format"));
    if let Some(it) = m.get("items").and_then(obj) {
        w.message(7 + off, |x| primitives_items(x, it));
    }
    w.string(8 + off, s(m, "collectionFormat"));
    if let Some(d) = m.get("default") {
        any(w, 9 + off, d);
    }
    w.double(10 + off, m.get("maximum"));
    w.bool(11 + off, b(m, "exclusiveMaximum"));
    w.double(12 + off, m.get("minimum"));
    w.bool(13 + off, b(m, "exclusiveMinimum"));
    w.int64(14 + off, m.get("maxLength"));
    w.int64(15 + off, m.get("minLength"));
    w.string(16 + off, s(m, "pattern"));
    w.int64(17 + off, m.get("maxItems"));
    w.int64(18 + off, m.get("minItems"));
    w.bool(19 + off, b(m, "uniqueItems"));
    if let Some(Value::Array(values)) = m.get("enum") {
        for v in values {
            any(w, 20 + off, v);
        }
    }
    w.double(21 + off, m.get("multipleOf"));
    vendor_extensions(w, 22 + off, m);
}

fn parameters_item(w: &mut Writer, m: &Map<String, Value>) {
    if m.contains_key("$ref") {
        w.message(2, |r| {
            r.string(1, s(m, "$ref"));
            r.string(2, s(m, "description"));
        });
        return;
    }
    w.message(1, |p| parameter(p, m));
}

fn parameter(p: &mut Writer, m: &Map<String, Value>) {
    match s(m, "in") {
        "body" => p.message(1, |bp| {
            bp.string(1, s(m, "description"));
            bp.string(2, s(m, "name"));
            bp.string(3, "body");
            bp.bool(4, b(m, "required"));
            if let Some(sc) = m.get("schema").and_then(obj) {
                bp.message(5, |x| schema(x, sc));
            }
            vendor_extensions(bp, 6, m);
        }),
        where_ => p.message(2, |nb| {
            let (field, allow_empty) = match where_ {
                "header" => (1, false),
                "formData" => (2, true),
                "path" => (4, false),
                _ => (3, true),
            };
            nb.message(field, |x| non_body_sub_schema(x, m, allow_empty));
        }),
    }
}

fn operation(w: &mut Writer, m: &Map<String, Value>) {
    w.strings(1, m.get("tags"));
    w.string(2, s(m, "summary"));
    w.string(3, s(m, "description"));
    w.string(5, s(m, "operationId"));
    w.strings(6, m.get("produces"));
    w.strings(7, m.get("consumes"));
    if let Some(Value::Array(params)) = m.get("parameters") {
        for p in params.iter().filter_map(obj) {
            w.message(8, |x| parameters_item(x, p));
        }
    }
    if let Some(resps) = m.get("responses").and_then(obj) {
        w.message(9, |r| {
            for (code, v) in resps.iter().filter(|(k, _)| !k.starts_with("x-")) {
                let Some(rm) = obj(v) else { continue };
                r.message(1, |n| {
                    n.string(1, code);
                    n.message(2, |rv| {
                        if rm.contains_key("$ref") {
                            rv.message(2, |j| j.string(1, s(rm, "$ref")));
                        } else {
                            rv.message(1, |resp| {
                                resp.string(1, s(rm, "description"));
                                if let Some(sc) = rm.get("schema").and_then(obj) {
                                    resp.message(2, |si| si.message(1, |x| schema(x, sc)));
                                }
                                vendor_extensions(resp, 5, rm);
                            });
                        }
                    });
                });
            }
            vendor_extensions(r, 2, resps);
        });
    }
    w.strings(10, m.get("schemes"));
    w.bool(11, b(m, "deprecated"));
    vendor_extensions(w, 13, m);
}

fn path_item(w: &mut Writer, m: &Map<String, Value>) {
    w.string(1, s(m, "$ref"));
    for (field, verb) in [
        (2, "get"),
        (3, "put"),
        (4, "post"),
        (5, "delete"),
        (6, "options"),
        (7, "head"),
        (8, "patch"),
    ] {
        if let Some(op) = m.get(verb).and_then(obj) {
            w.message(field, |x| operation(x, op));
        }
    }
    if let Some(Value::Array(params)) = m.get("parameters") {
        for p in params.iter().filter_map(obj) {
            w.message(9, |x| parameters_item(x, p));
        }
    }
    vendor_extensions(w, 10, m);
}

/// Encodes an OpenAPI v2 document.
pub fn encode_document(doc: &Value) -> Vec<u8> {
    let empty = Map::new();
    let m = doc.as_object().unwrap_or(&empty);
    let mut w = Writer::default();
    w.string(1, s(m, "swagger"));
    if let Some(info) = m.get("info").and_then(obj) {
        w.message(2, |i| {
            i.string(1, s(info, "title"));
            i.string(2, s(info, "version"));
            i.string(3, s(info, "description"));
            vendor_extensions(i, 7, info);
        });
    }
    w.string(3, s(m, "host"));
    w.string(4, s(m, "basePath"));
    w.strings(5, m.get("schemes"));
    w.strings(6, m.get("consumes"));
    w.strings(7, m.get("produces"));
    if let Some(paths) = m.get("paths").and_then(obj) {
        w.message(8, |p| {
            vendor_extensions(p, 1, paths);
            for (path, item) in paths.iter().filter(|(k, _)| !k.starts_with("x-")) {
                if let Some(im) = obj(item) {
                    p.message(2, |n| {
                        n.string(1, path);
                        n.message(2, |x| path_item(x, im));
                    });
                }
            }
        });
    }
    if let Some(defs) = m.get("definitions").and_then(obj) {
        w.message(9, |d| {
            for (name, v) in defs {
                if let Some(sm) = obj(v) {
                    d.message(1, |n| {
                        n.string(1, name);
                        n.message(2, |x| schema(x, sm));
                    });
                }
            }
        });
    }
    if let Some(params) = m.get("parameters").and_then(obj) {
        w.message(10, |d| {
            for (name, v) in params {
                if let Some(pm) = obj(v) {
                    d.message(1, |n| {
                        n.string(1, name);
                        n.message(2, |x| parameter(x, pm));
                    });
                }
            }
        });
    }
    vendor_extensions(&mut w, 16, m);
    w.buf
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn encodes_swagger_and_definitions() {
        let doc = json!({"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.33.0"},
            "paths": {}, "definitions": {"a.B": {"type": "object", "properties": {"x": {"type": "integer", "format": "int32"}}}}});
        let bytes = encode_document(&doc);
        // field 1 (swagger), length 3, "2.0"
        assert_eq!(&bytes[..5], &[0x0a, 3, b'2', b'.', b'0']);
        assert!(bytes.windows(3).any(|w| w == b"a.B"));
    }
}
