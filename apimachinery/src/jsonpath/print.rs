//! Kubernetes' text for results (client-go's `PrintResults`): objects and arrays as Go's
//! `encoding/json` writes them (keys sorted, `<`, `>` and `&` escaped), other values as Go's
//! `fmt.Print` does (strings bare, floats in Go's shortest form, `null` for null).

use serde_json::Value;

use super::evaluate::go_float;

/// The text Kubernetes prints for one result: a Table cell of type `string`, or one word of
/// `kubectl -o jsonpath`.
pub fn to_text(v: &Value) -> String {
    match v {
        Value::Object(_) | Value::Array(_) => {
            let mut out = String::new();
            go_json(v, &mut out);
            out
        }
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => go_float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => s.clone(),
    }
}

/// Go's `json.Marshal` of a decoded JSON value.
fn go_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_i64() {
            Some(i) => out.push_str(&i.to_string()),
            None => out.push_str(&go_json_float(n.as_f64().unwrap_or(0.0))),
        },
        Value::String(s) => go_json_string(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, e) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json(e, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, e)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json_string(k, out);
                out.push(':');
                go_json(e, out);
            }
            out.push('}');
        }
    }
}

/// Go's JSON float: plain digits, or an exponent below 1e-6 and from 1e21 (`1e-7`, `1e+21`).
fn go_json_float(f: f64) -> String {
    let abs = f.abs();
    if abs == 0.0 || (1e-6..1e21).contains(&abs) {
        return format!("{f}");
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    match exp.strip_prefix('-') {
        Some(neg) => format!("{mantissa}e-{neg}"),
        None => format!("{mantissa}e+{exp}"),
    }
}

/// Go's JSON string, with its HTML-safe escapes.
fn go_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prints_like_go() {
        assert_eq!(to_text(&json!("a<b")), "a<b");
        assert_eq!(to_text(&json!(1.5)), "1.5");
        assert_eq!(to_text(&json!(1e21)), "1e+21");
        assert_eq!(to_text(&json!(0.00001)), "1e-05");
        assert_eq!(to_text(&json!(4.0)), "4");
        assert_eq!(to_text(&json!(null)), "null");
        assert_eq!(
            to_text(&json!({"b": [1.0, 1e-7, 1e21], "a": "<&>\n"})),
            r#"{"a":"\u003c\u0026\u003e\n","b":[1,1e-7,1e+21]}"#
        );
    }
}
