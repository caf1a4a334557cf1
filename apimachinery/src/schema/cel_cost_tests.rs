//! The estimated costs against the figures of kube-apiserver's own cost tests
//! (`TestCostEstimation` in apiextensions-apiserver's `pkg/apiserver/schema/cel`), and the
//! CRD write checks with Kubernetes' paths and messages.

use serde_json::{Value, json};

use super::super::props::Props;
use super::{cel_errors, cost_message, decl_of};
use crate::cel::CelExpression;

/// The estimated cost of `rule` declared on `schema` (not a resource root, as in Kubernetes'
/// cost tests).
fn cost(schema: Value, rule: &str) -> u64 {
    let props = Props::read(&schema, "", 0).expect("the schema reads");
    let decl = decl_of(&props, false).expect("rules can see the schema");
    CelExpression::compile(rule)
        .expect("the rule compiles")
        .estimated_cost(&decl)
}

/// A schema of `type` as Kubernetes' tests name them (`date`, `duration` and `date-time` are
/// string formats, `int-or-string` the extension).
fn scalar(t: &str) -> Value {
    match t {
        "date" | "duration" | "date-time" => json!({"type": "string", "format": t}),
        "int-or-string" => json!({"x-kubernetes-int-or-string": true}),
        _ => json!({"type": t}),
    }
}

/// Sets `key` to `n` when there is one.
fn bounded(mut schema: Value, key: &str, n: Option<i64>) -> Value {
    if let Some(n) = n {
        schema[key] = json!(n);
    }
    schema
}

fn array(item: Value, max_items: Option<i64>) -> Value {
    bounded(
        json!({"type": "array", "items": item}),
        "maxItems",
        max_items,
    )
}

fn map(value: Value, max_properties: Option<i64>) -> Value {
    bounded(
        json!({"type": "object", "additionalProperties": value}),
        "maxProperties",
        max_properties,
    )
}

fn string(max_length: Option<i64>) -> Value {
    bounded(json!({"type": "string"}), "maxLength", max_length)
}

fn required_object() -> Value {
    json!({"type": "object", "required": ["required"], "properties": {
        "required": {"type": "string"}, "optional": {"type": "string"}
    }})
}

/// Each case: a schema generator (given the bound, or none), the rule, the cost without
/// bounds, the bound, and the cost with it. The figures are Kubernetes' own (its test cases
/// of the same names, kept where both sides state one).
#[allow(clippy::type_complexity)]
fn kubernetes_cases() -> Vec<(
    &'static str,
    Box<dyn Fn(Option<i64>) -> Value>,
    &'static str,
    u64,
    i64,
    u64,
)> {
    let arr = |t: &'static str| -> Box<dyn Fn(Option<i64>) -> Value> {
        Box::new(move |n| array(scalar(t), n))
    };
    let mp = |t: &'static str| -> Box<dyn Fn(Option<i64>) -> Value> {
        Box::new(move |n| map(scalar(t), n))
    };
    let st: Box<dyn Fn(Option<i64>) -> Value> = Box::new(string);
    vec![
        (
            "number array with all",
            arr("number"),
            "self.all(x, true)",
            4718591,
            10,
            32,
        ),
        (
            "string array with all",
            arr("string"),
            "self.all(x, true)",
            3145727,
            20,
            62,
        ),
        (
            "boolean array with all",
            arr("boolean"),
            "self.all(x, true)",
            1887437,
            5,
            17,
        ),
        (
            "array of number arrays with all",
            Box::new(|n| array(array(scalar("number"), None), n)),
            "self.all(x, true)",
            3145727,
            100,
            302,
        ),
        (
            "array of objects with all",
            Box::new(|n| array(required_object(), n)),
            "self.all(x, true)",
            555128,
            50,
            152,
        ),
        (
            "map of numbers with all",
            mp("number"),
            "self.all(x, true)",
            1348169,
            10,
            32,
        ),
        (
            "map of strings with all",
            mp("string"),
            "self.all(x, true)",
            1179647,
            3,
            11,
        ),
        (
            "map of booleans with all",
            mp("boolean"),
            "self.all(x, true)",
            943718,
            100,
            302,
        ),
        (
            "string with contains",
            st,
            "self.contains('test')",
            314574,
            10,
            5,
        ),
        (
            "string with startsWith",
            Box::new(string),
            "self.startsWith('test')",
            2,
            15,
            2,
        ),
        (
            "concat string",
            Box::new(string),
            r#"size(self + "hello") > size("hello")"#,
            314578,
            4,
            7,
        ),
        (
            "index of array with numbers",
            arr("number"),
            "self[1] == 0.0",
            2,
            5000,
            2,
        ),
        (
            "index of array with strings",
            arr("string"),
            "self[1] == self[1]",
            314577,
            8,
            314577,
        ),
        (
            "O(n^3) loop with numbers",
            arr("number"),
            "self.all(x, self.all(y, self.all(z, true)))",
            0,
            10,
            3552,
        ),
        (
            "regex matches simple",
            Box::new(string),
            r#"self.matches("x")"#,
            314574,
            50,
            22,
        ),
        (
            "regex matches empty string",
            Box::new(string),
            r#""".matches("(((((((((())))))))))[0-9]")"#,
            7,
            10,
            7,
        ),
        (
            "regex matches empty regex",
            Box::new(string),
            r#"self.matches("")"#,
            1,
            100,
            1,
        ),
        (
            "map of strings with value length",
            Box::new(|n| map(string(n), n)),
            "self.all(x, x.contains(self[x]))",
            2752507,
            10,
            72,
        ),
        (
            "set string maxLength to zero",
            Box::new(string),
            r#"self == "x""#,
            2,
            0,
            1,
        ),
        (
            "set bytes maxLength to zero",
            Box::new(|n| bounded(json!({"type": "string", "format": "byte"}), "maxLength", n)),
            r#"self == b"x""#,
            2,
            0,
            1,
        ),
        (
            "set maxLength greater than estimated maxLength",
            arr("number"),
            "self.all(x, x == 0.0)",
            6291454,
            3 * 1024 * 2048,
            25165826,
        ),
        (
            "nested types with root rule with all supporting maxLength",
            Box::new(|n| {
                let inner = bounded(required_object(), "maxProperties", n);
                array(map(inner, n), n)
            }),
            r#"self.all(x, x["y"].required == "z")"#,
            7340027,
            10,
            72,
        ),
        (
            "int-or-string array with all",
            arr("int-or-string"),
            "self.all(x, true)",
            4718591,
            10,
            32,
        ),
        (
            "index of array with int-or-strings",
            arr("int-or-string"),
            "self[0] == 5",
            3,
            10,
            3,
        ),
        (
            "index of array of array of numbers",
            Box::new(|n| array(array(scalar("number"), None), n)),
            "self[0][0] == -1.0",
            3,
            51,
            3,
        ),
        (
            "array of number maps with all",
            Box::new(|n| array(map(scalar("number"), None), n)),
            "self.all(x, x.y == 25.2)",
            6291452,
            12,
            74,
        ),
        (
            "duration array with all",
            arr("duration"),
            "self.all(x, true)",
            2359295,
            5,
            17,
        ),
        (
            "index of duration array",
            arr("duration"),
            "self[0].getHours() == 2",
            4,
            525,
            4,
        ),
        (
            "date array with all",
            arr("date"),
            "self.all(x, true)",
            725936,
            15,
            47,
        ),
        (
            "date-time array with all",
            arr("date-time"),
            "self.all(x, true)",
            428963,
            25,
            77,
        ),
        (
            "map of int-or-strings with all",
            mp("int-or-string"),
            "self.all(x, true)",
            1348169,
            15,
            47,
        ),
        (
            "map of objects with all",
            Box::new(|n| map(required_object(), n)),
            "self.all(x, true)",
            428963,
            20,
            62,
        ),
        (
            "map of durations with all",
            mp("duration"),
            "self.all(x, true)",
            1048577,
            5,
            17,
        ),
        (
            "map of dates with all",
            mp("date"),
            "self.all(x, true)",
            524288,
            10,
            32,
        ),
        (
            "map of date-times with all",
            mp("date-time"),
            "self.all(x, true)",
            349526,
            25,
            77,
        ),
        (
            "extended library regex find",
            Box::new(string),
            "self.find('[0-9]+') == ''",
            629147,
            10,
            11,
        ),
        (
            "extended library join",
            Box::new(|n| array(string(n), n)),
            "self.join(' ') == 'aa bb'",
            329853068905,
            10,
            43,
        ),
        (
            "extended library isSorted",
            Box::new(|n| array(string(n), n)),
            "self.isSorted() == true",
            329854432052,
            10,
            52,
        ),
        (
            "extended library replace",
            Box::new(|n| {
                json!({"type": "object", "properties": {
                    "str": string(n), "before": string(Some(2)), "after": string(Some(4))
                }})
            }),
            "self.str.replace(self.before, self.after) == 'does not matter'",
            629154,
            4,
            12,
        ),
        (
            "extended library split",
            Box::new(
                |n| json!({"type": "object", "properties": {"str": string(n), "separator": string(n)}}),
            ),
            "self.str.split(self.separator) == []",
            629160,
            10,
            22,
        ),
        (
            "extended library lowerAscii",
            Box::new(string),
            "self.lowerAscii() == 'lower!'",
            314575,
            10,
            6,
        ),
        (
            "check cost of size call",
            mp("integer"),
            "oldSelf.size() == self.size()",
            5,
            10,
            5,
        ),
        (
            "check cost of timestamp comparison",
            mp("date-time"),
            r#"self["a"] == self["b"]"#,
            8,
            7,
            8,
        ),
        (
            "enums with maxLength equals to the longest possible value",
            Box::new(|n| {
                bounded(
                    json!({"type": "string", "enum": ["A", "B", "C", "LongValue"]}),
                    "maxLength",
                    n,
                )
            }),
            "self.contains('A')",
            2,
            1000,
            401,
        ),
        (
            "IntOrString type with quantity rule",
            Box::new(|n| bounded(scalar("int-or-string"), "maxLength", n)),
            "isQuantity(self)",
            314574,
            20,
            9,
        ),
    ]
}

#[test]
fn estimates_match_kubernetes_figures() {
    let mut wrong = Vec::new();
    for (name, schema, rule, unbounded, bound, bounded) in kubernetes_cases() {
        let got = cost(schema(None), rule);
        // Kubernetes states no figure for a cost it only requires over the limit.
        let unbounded_ok = if unbounded == 0 {
            got > 1_000_000
        } else {
            got == unbounded
        };
        if !unbounded_ok {
            wrong.push(format!("{name}: unbounded {got}, Kubernetes {unbounded}"));
        }
        let got = cost(schema(Some(bound)), rule);
        if got != bounded {
            wrong.push(format!("{name}: bounded {got}, Kubernetes {bounded}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
