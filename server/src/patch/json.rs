//! JSON patch (RFC 6902) as Kubernetes applies it (evanphx/json-patch v4, the library behind
//! kube-apiserver's patch handler) and JSON merge patch (RFC 7386), both bounded: a patch can
//! copy at most [`MAX_COPY_BYTES`] of data in total and can never nest the object deeper than
//! [`MAX_DEPTH`], so the memory and time a patch costs stay proportional to the request and
//! the stored object.

use apimachinery::status::{ApiError, StatusReason};
use serde_json::{Map, Value};

use crate::negotiate::body::{MAX_DEPTH, depth};

/// The largest number of operations accepted in one JSON patch.
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The most bytes the `copy` operations of one JSON patch may add up to (measured as the
/// compact JSON of each copied value): Kubernetes' `--max-request-bytes`-derived
/// `JSONPatchMaxCopyBytes`, 3 MiB by default, which it sets as json-patch's
/// `AccumulatedCopySizeLimit`.
pub const MAX_COPY_BYTES: usize = 3 * 1024 * 1024;

/// The most nodes the depth checks of `move` operations that move a value deeper may visit
/// in one patch (a move to the same or a shallower level needs no check).
pub const MAX_MOVE_CHECK_NODES: usize = 3 * 1024 * 1024;

/// The answer Kubernetes gives for any operation that cannot be applied (missing path, failed
/// test, bad index, copy limit): `NewGenericServerResponse(422, …)`, whose message does not
/// carry json-patch's own text.
pub fn operation_failed() -> ApiError {
    ApiError::new(
        422,
        StatusReason::Invalid,
        "the server rejected our request due to an error in our request",
        Some(Default::default()),
    )
}

/// Why one operation failed: json-patch's error text (logged; clients get
/// [`operation_failed`], as from Kubernetes).
#[derive(Debug)]
struct OpError(String);

fn fail<T>(msg: impl Into<String>) -> Result<T, OpError> {
    Err(OpError(msg.into()))
}

/// Applies an RFC 6902 patch. A body that is not JSON is 400 `invalid JSON patch`, one that is
/// not a list of operations 400, more than [`MAX_JSON_PATCH_OPERATIONS`] operations 413, and an
/// operation that cannot be applied 422 (see [`operation_failed`]).
pub fn apply_json_patch(original: &Value, body: &[u8]) -> Result<Value, ApiError> {
    let raw = super::decode_patch_body(body)?;
    let ops = match raw {
        Value::Array(ops) => ops,
        Value::Null => Vec::new(),
        other => {
            return Err(ApiError::bad_request(format!(
                "error decoding patch: json: cannot unmarshal {} into Go value of type []handlers.jsonPatchOp",
                go_json_type(&other)
            )));
        }
    };
    for op in &ops {
        check_operation_shape(op)?;
    }
    if ops.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(ApiError::request_entity_too_large(&format!(
            "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
            ops.len()
        )));
    }
    let mut doc = original.clone();
    let mut state = PatchState::default();
    for (i, op) in ops.into_iter().enumerate() {
        if let Err(OpError(e)) = state.apply(&mut doc, op) {
            tracing::debug!(operation = i, error = %e, "JSON patch operation failed");
            return Err(operation_failed());
        }
    }
    Ok(doc)
}

/// How Go's JSON decoder names a JSON value's type in `cannot unmarshal` errors.
fn go_json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Checks an operation decodes into Kubernetes' `jsonPatchOp` (`op`, `path` and `from` are
/// strings when present).
fn check_operation_shape(op: &Value) -> Result<(), ApiError> {
    let Some(fields) = op.as_object() else {
        if op.is_null() {
            return Ok(());
        }
        return Err(ApiError::bad_request(format!(
            "error decoding patch: json: cannot unmarshal {} into Go value of type handlers.jsonPatchOp",
            go_json_type(op)
        )));
    };
    for name in ["op", "path", "from"] {
        if let Some(v) = fields.get(name)
            && !v.is_string()
            && !v.is_null()
        {
            return Err(ApiError::bad_request(format!(
                "error decoding patch: json: cannot unmarshal {} into Go struct field jsonPatchOp.{name} of type string",
                go_json_type(v)
            )));
        }
    }
    Ok(())
}

/// What the operations of one patch have used of the limits so far.
#[derive(Default)]
struct PatchState {
    copied: usize,
    move_checks: usize,
}

impl PatchState {
    fn apply(&mut self, doc: &mut Value, op: Value) -> Result<(), OpError> {
        let mut op = match op {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let kind = op
            .get("op")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_string();
        let path = op.get("path").and_then(Value::as_str).map(str::to_string);
        let from = op.get("from").and_then(Value::as_str).map(str::to_string);
        // A missing `value` and `"value": null` are both null to json-patch.
        let value = op.remove("value");
        let need = |p: Option<String>, what: &str| {
            p.ok_or_else(|| OpError(format!("{kind} operation failed to decode {what}")))
        };
        match kind.as_str() {
            "add" => {
                let path = need(path, "path")?;
                let value = value.unwrap_or(Value::Null);
                check_depth(&path, depth(&value))?;
                add(doc, &path, value)
            }
            "remove" => remove(doc, &need(path, "path")?).map(drop),
            "replace" => {
                let path = need(path, "path")?;
                let value = value.unwrap_or(Value::Null);
                check_depth(&path, depth(&value))?;
                replace(doc, &path, value)
            }
            "move" => {
                let from = need(from, "from")?;
                let path = need(path, "path")?;
                let value = remove(doc, &from)?;
                if segments(&path) > segments(&from) {
                    let nodes = node_count(&value, MAX_MOVE_CHECK_NODES - self.move_checks)
                        .ok_or_else(|| OpError("move depth checks exceed their limit".into()))?;
                    self.move_checks += nodes;
                    check_depth(&path, depth(&value))?;
                }
                add(doc, &path, value)
            }
            "test" => test(doc, &need(path, "path")?, value),
            "copy" => {
                let from = need(from, "from")?;
                let path = need(path, "path")?;
                let source = get(doc, &from)?.unwrap_or(&Value::Null);
                let (size, d) = compact_size_and_depth(source, MAX_COPY_BYTES - self.copied)
                    .ok_or_else(|| {
                        OpError(format!(
                            "Unable to complete the copy, the accumulated size increase of copy is more than {}, exceeding the limit {MAX_COPY_BYTES}",
                            MAX_COPY_BYTES - self.copied
                        ))
                    })?;
                self.copied += size;
                check_depth(&path, d)?;
                let copy = source.clone();
                add(doc, &path, copy)
            }
            other => fail(format!("Unexpected kind: {other}")),
        }
    }
}

/// The number of reference tokens of a JSON pointer as json-patch splits it (the text before
/// the first `/` is dropped).
fn segments(path: &str) -> usize {
    path.split('/').count().saturating_sub(1)
}

/// Refuses a value of nesting `value_depth` placed at `path` when the object would nest
/// deeper than [`MAX_DEPTH`].
fn check_depth(path: &str, value_depth: usize) -> Result<(), OpError> {
    if segments(path) + value_depth > MAX_DEPTH {
        return fail(format!(
            "the value at {path} would nest deeper than {MAX_DEPTH}"
        ));
    }
    Ok(())
}

/// Decodes a reference token (`~1` is `/`, `~0` is `~`).
fn decode_token(t: &str) -> String {
    if t.contains('~') {
        t.replace("~1", "/").replace("~0", "~")
    } else {
        t.to_string()
    }
}

/// Parses an index as Go's `strconv.Atoi` does (optional sign, decimal digits).
fn go_atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// An array index: negative ones count from the end (json-patch's `SupportNegativeIndices`);
/// `len` is the number of valid positions.
fn index(key: &str, len: usize) -> Result<usize, OpError> {
    let i = go_atoi(key).ok_or_else(|| OpError(format!("invalid index: {key}")))?;
    let len = len as i64;
    let i = if i < 0 { i + len } else { i };
    if i < 0 || i >= len {
        return fail(format!("Unable to access invalid index: {key}"));
    }
    Ok(i as usize)
}

/// json-patch's `findObject`: the container holding the last token of `path`, and that token.
fn parent_mut<'a>(doc: &'a mut Value, path: &str) -> Result<(&'a mut Value, String), OpError> {
    let mut tokens = path.split('/');
    tokens.next();
    let tokens: Vec<&str> = tokens.collect();
    let Some((last, middle)) = tokens.split_last() else {
        return fail(format!("doc is missing path: {path:?}"));
    };
    let mut cur = doc;
    for t in middle {
        let key = decode_token(t);
        cur = match cur {
            Value::Object(m) => m.get_mut(&key),
            Value::Array(a) => {
                let len = a.len();
                a.get_mut(index(&key, len)?)
            }
            _ => None,
        }
        .filter(|v| v.is_object() || v.is_array())
        .ok_or_else(|| OpError(format!("doc is missing path: {path:?}")))?;
    }
    Ok((cur, decode_token(last)))
}

/// The value at `path` (`None` for a missing member of an object, which json-patch reads as
/// null), or an error when the path does not lead into the document.
fn get<'a>(doc: &'a Value, path: &str) -> Result<Option<&'a Value>, OpError> {
    let mut tokens = path.split('/');
    tokens.next();
    let tokens: Vec<&str> = tokens.collect();
    let Some((last, middle)) = tokens.split_last() else {
        return fail(format!("doc is missing path: {path:?}"));
    };
    let mut cur = doc;
    for t in middle {
        let key = decode_token(t);
        cur = match cur {
            Value::Object(m) => m.get(&key),
            Value::Array(a) => a.get(index(&key, a.len())?),
            _ => None,
        }
        .filter(|v| v.is_object() || v.is_array())
        .ok_or_else(|| OpError(format!("doc is missing path: {path:?}")))?;
    }
    let key = decode_token(last);
    match cur {
        Value::Object(m) => Ok(m.get(&key)),
        Value::Array(a) => Ok(Some(&a[index(&key, a.len())?])),
        _ => fail(format!("doc is missing path: {path:?}")),
    }
}

fn add(doc: &mut Value, path: &str, value: Value) -> Result<(), OpError> {
    let (parent, key) = parent_mut(doc, path)?;
    match parent {
        Value::Object(m) => {
            m.insert(key, value);
        }
        Value::Array(a) => {
            if key == "-" {
                a.push(value);
            } else {
                let i = index(&key, a.len() + 1)?;
                a.insert(i, value);
            }
        }
        _ => return fail(format!("doc is missing path: {path:?}")),
    }
    Ok(())
}

fn remove(doc: &mut Value, path: &str) -> Result<Value, OpError> {
    let (parent, key) = parent_mut(doc, path)?;
    match parent {
        Value::Object(m) => m
            .shift_remove(&key)
            .ok_or_else(|| OpError(format!("Unable to remove nonexistent key: {key}"))),
        Value::Array(a) => {
            let i = index(&key, a.len())?;
            Ok(a.remove(i))
        }
        _ => fail(format!("doc is missing path: {path:?}")),
    }
}

fn replace(doc: &mut Value, path: &str, value: Value) -> Result<(), OpError> {
    if path.is_empty() {
        if !(value.is_object() || value.is_array()) {
            return fail("replace operation value must be object or array");
        }
        *doc = value;
        return Ok(());
    }
    let (parent, key) = parent_mut(doc, path)?;
    match parent {
        // json-patch v4 does not check that the member exists.
        Value::Object(m) => {
            m.insert(key, value);
        }
        Value::Array(a) => {
            let i = index(&key, a.len())?;
            a[i] = value;
        }
        _ => return fail(format!("doc is missing path: {path:?}")),
    }
    Ok(())
}

fn test(doc: &Value, path: &str, value: Option<Value>) -> Result<(), OpError> {
    if path.is_empty() {
        return if value.as_ref() == Some(doc) {
            Ok(())
        } else {
            fail("testing value failed")
        };
    }
    match (get(doc, path)?, value) {
        (None, None | Some(Value::Null)) => Ok(()),
        (Some(actual), Some(expected)) if *actual == expected => Ok(()),
        _ => fail(format!("testing value {path} failed")),
    }
}

/// The number of nodes of `v`, or `None` past `limit`.
fn node_count(v: &Value, limit: usize) -> Option<usize> {
    let mut n = 0;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        n += 1;
        if n > limit {
            return None;
        }
        match v {
            Value::Array(a) => stack.extend(a.iter()),
            Value::Object(o) => stack.extend(o.values()),
            _ => {}
        }
    }
    Some(n)
}

/// The length of `v`'s compact JSON as Go's `json.Marshal` writes it (which escapes `<`, `>`,
/// `&`, U+2028 and U+2029), and its nesting depth; `None` as soon as the length passes
/// `limit`, so measuring never costs more than the limit.
fn compact_size_and_depth(v: &Value, limit: usize) -> Option<(usize, usize)> {
    let mut size = 0usize;
    let mut deepest = 0;
    let mut stack = vec![(v, 0usize)];
    while let Some((v, d)) = stack.pop() {
        size += match v {
            Value::Null => 4,
            Value::Bool(true) => 4,
            Value::Bool(false) => 5,
            Value::Number(n) => n.to_string().len(),
            Value::String(s) => go_string_len(s),
            Value::Array(a) => {
                deepest = deepest.max(d + 1);
                stack.extend(a.iter().map(|c| (c, d + 1)));
                // Brackets and commas.
                2 + a.len().saturating_sub(1)
            }
            Value::Object(o) => {
                deepest = deepest.max(d + 1);
                stack.extend(o.values().map(|c| (c, d + 1)));
                // Braces, commas, colons and the keys.
                2 + o.len().saturating_sub(1)
                    + o.keys().map(|k| go_string_len(k) + 1).sum::<usize>()
            }
        };
        if size > limit {
            return None;
        }
    }
    Some((size, deepest))
}

/// The length of a string in Go's JSON encoding, quotes included.
fn go_string_len(s: &str) -> usize {
    2 + s
        .chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' => 2,
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => 6,
            c if (c as u32) < 0x20 => 6,
            c => c.len_utf8(),
        })
        .sum::<usize>()
}

/// Applies an RFC 7386 merge patch; the patch must be a JSON object. The result is never
/// larger than the original and the patch together, nor deeper than the deeper of them.
pub fn apply_merge_patch(original: &Value, body: &[u8]) -> Result<Value, ApiError> {
    let patch = super::decode_patch_body(body)?;
    if !patch.is_object() {
        return Err(ApiError::bad_request(
            "error decoding patch: a merge patch must be a JSON object",
        ));
    }
    let mut doc = original.clone();
    json_patch::merge(&mut doc, &patch);
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patch(doc: Value, ops: Value) -> Result<Value, ApiError> {
        apply_json_patch(&doc, &serde_json::to_vec(&ops).unwrap())
    }

    #[test]
    fn json_patch_applies() {
        let out = apply_json_patch(
            &json!({"a": 1}),
            br#"[{"op":"add","path":"/b","value":2},{"op":"replace","path":"/a","value":3}]"#,
        )
        .unwrap();
        assert_eq!(out, json!({"a": 3, "b": 2}));
    }

    #[test]
    fn operations_follow_json_patch_v4() {
        let doc = json!({"a": [1, 2, 3], "m": {"x": 1}});
        let ops = json!([
            {"op": "add", "path": "/a/-", "value": 4},
            {"op": "add", "path": "/a/0", "value": 0},
            {"op": "remove", "path": "/a/-1"},
            {"op": "move", "from": "/m/x", "path": "/m/y"},
            {"op": "copy", "from": "/m", "path": "/n"},
            {"op": "test", "path": "/n", "value": {"y": 1}},
            {"op": "test", "path": "/missing", "value": null},
            {"op": "replace", "path": "/m/new", "value": "v"},
            {"op": "add", "path": "/a~1b", "value": true},
        ]);
        assert_eq!(
            patch(doc, ops).unwrap(),
            json!({"a": [0, 1, 2, 3], "m": {"y": 1, "new": "v"}, "n": {"y": 1}, "a/b": true})
        );
    }

    #[test]
    fn json_patch_errors() {
        let err = apply_json_patch(&json!({}), br#"[{"op":"remove","path":"/x"}]"#).unwrap_err();
        assert_eq!(err.code(), 422);
        assert_eq!(err.reason(), StatusReason::Invalid);
        assert_eq!(
            err.message(),
            "the server rejected our request due to an error in our request"
        );
        for bad in [
            json!([{"op": "test", "path": "/a", "value": 2}]),
            json!([{"op": "add", "path": "/a/b/c", "value": 2}]),
            json!([{"op": "add", "path": "/l/5", "value": 2}]),
            json!([{"op": "move", "from": "/l", "path": "/l/0"}]),
            json!([{"op": "frobnicate", "path": "/a"}]),
            json!([{"op": "add", "value": 1}]),
        ] {
            let err = patch(json!({"a": 1, "l": [1]}), bad.clone()).unwrap_err();
            assert_eq!(err.code(), 422, "{bad}");
        }
        let err = apply_json_patch(&json!({}), b"{").unwrap_err();
        assert_eq!(err.code(), 400);
        assert_eq!(err.message(), "invalid JSON patch");
        let err = apply_json_patch(&json!({}), br#"{"op":"add"}"#).unwrap_err();
        assert_eq!(
            err.message(),
            "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"
        );
        let err = apply_json_patch(&json!({}), br#"[{"op":1}]"#).unwrap_err();
        assert_eq!(
            err.message(),
            "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.op of type string"
        );
        let ops: Vec<Value> = (0..10_001)
            .map(|_| json!({"op":"test","path":"/a","value":1}))
            .collect();
        let err =
            apply_json_patch(&json!({"a": 1}), &serde_json::to_vec(&ops).unwrap()).unwrap_err();
        assert_eq!(err.code(), 413);
        assert_eq!(
            err.message(),
            "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
        );
    }

    /// Doubling a value by copies stops at the copy limit, after at most that much was copied.
    #[test]
    fn copies_are_bounded() {
        let mut ops = vec![json!({"op": "add", "path": "/d", "value": ["x".repeat(80)]})];
        for _ in 0..30 {
            ops.push(json!({"op": "copy", "from": "/d", "path": "/d/-"}));
        }
        let err = patch(json!({}), json!(ops)).unwrap_err();
        assert_eq!(err.code(), 422);
        // Within the limit copies work, and the sizes are those of compact JSON.
        let doc = json!({"s": "a<b"});
        assert_eq!(compact_size_and_depth(&doc, usize::MAX), Some((16, 1)));
        assert_eq!(
            compact_size_and_depth(&json!([{"a": [1, true, null]}]), usize::MAX),
            Some((21, 3))
        );
        assert_eq!(
            serde_json::to_string(&json!([{"a": [1, true, null]}]))
                .unwrap()
                .len(),
            21
        );
        let out = patch(doc, json!([{"op": "copy", "from": "/s", "path": "/t"}])).unwrap();
        assert_eq!(out, json!({"s": "a<b", "t": "a<b"}));
        // 3 MiB of copies in total are allowed, a byte more is not.
        let big = "y".repeat(MAX_COPY_BYTES / 2 - 2);
        let doc = json!({"s": big});
        let twice = json!([
            {"op": "copy", "from": "/s", "path": "/t"},
            {"op": "copy", "from": "/s", "path": "/u"},
        ]);
        assert!(patch(doc.clone(), twice).is_ok());
        let thrice = json!([
            {"op": "copy", "from": "/s", "path": "/t"},
            {"op": "copy", "from": "/s", "path": "/u"},
            {"op": "copy", "from": "/s", "path": "/v"},
        ]);
        assert_eq!(patch(doc, thrice).unwrap_err().code(), 422);
    }

    /// Adds, copies and moves cannot nest the object deeper than the decoders allow.
    #[test]
    fn nesting_is_bounded() {
        // The deepest value a patch body can carry: the list and the operation are two levels.
        let deep = (0..MAX_DEPTH - 2).fold(json!(1), |v, _| json!([v]));
        assert_eq!(depth(&deep), MAX_DEPTH - 2);
        let doc = json!({"b": {"c": {}}});
        let add = |path: &str| json!([{"op": "add", "path": path, "value": deep}]);
        assert!(patch(doc.clone(), add("/b/a")).is_ok());
        assert_eq!(patch(doc, add("/b/c/a")).unwrap_err().code(), 422);
        let doc = json!({"a": {"b": (0..MAX_DEPTH - 3).fold(json!(1), |v, _| json!([v]))}});
        assert!(
            patch(
                doc.clone(),
                json!([{"op": "copy", "from": "/a/b", "path": "/c"}])
            )
            .is_ok()
        );
        let err = patch(
            doc.clone(),
            json!([{"op": "copy", "from": "/a/b", "path": "/a/b/0/0/0/0"}]),
        )
        .unwrap_err();
        assert_eq!(err.code(), 422);
        let doc =
            json!({"a": {"x": {}}, "b": (0..MAX_DEPTH - 2).fold(json!(1), |v, _| json!([v]))});
        assert_eq!(
            patch(doc, json!([{"op": "move", "from": "/b", "path": "/a/x/b"}]))
                .unwrap_err()
                .code(),
            422
        );
        // Growing one level per operation is refused too.
        let mut ops = vec![json!({"op": "add", "path": "/a", "value": {}})];
        let mut path = String::from("/a");
        for _ in 0..200 {
            path.push_str("/a");
            ops.push(json!({"op": "add", "path": path, "value": {}}));
        }
        assert_eq!(patch(json!({}), json!(ops)).unwrap_err().code(), 422);
    }

    #[test]
    fn merge_patch_removes_nulls() {
        let out = apply_merge_patch(
            &json!({"metadata": {"labels": {"a": "1", "b": "2"}}}),
            br#"{"metadata":{"labels":{"a":null,"c":"3"}}}"#,
        )
        .unwrap();
        assert_eq!(out, json!({"metadata": {"labels": {"b": "2", "c": "3"}}}));
    }
}
