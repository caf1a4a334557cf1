//! The estimated costs against the figures of kube-apiserver's own cost tests
//! (`TestCostEstimation` in apiextensions-apiserver's `pkg/apiserver/schema/cel`), and the
//! CRD write checks with Kubernetes' paths and messages.

use serde_json::{Value, json};

use super::super::props::Props;
use super::super::{CrdSchemaOptions, validate_crd_schema};
use super::{cost_message, decl_of};
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

const P: &str = "spec.validation.openAPIV3Schema";

const ADVICE: &str = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";

fn errors_with(schema: &Value, options: &CrdSchemaOptions) -> Vec<String> {
    validate_crd_schema(schema, P, options)
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn errors(schema: &Value) -> Vec<String> {
    errors_with(schema, &CrdSchemaOptions::default())
}

/// A root schema with `spec.items`: a list (bounded by `max_items`) of strings (bounded by
/// `max_length`) with `rule`.
fn list_of_strings(rule: &str, max_items: Option<i64>, max_length: Option<i64>) -> Value {
    let mut items = array(string(max_length), max_items);
    items["x-kubernetes-validations"] = json!([{"rule": rule}]);
    json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"items": items}}}})
}

#[test]
fn factors_print_as_kubernetes_prints_them() {
    let m = |cost| cost_message("estimated rule cost", cost, 10_000_000);
    assert_eq!(
        m(10_500_000),
        format!("estimated rule cost exceeds budget by factor of 1.050000x {ADVICE}")
    );
    assert_eq!(
        m(15_000_000),
        format!("estimated rule cost exceeds budget by factor of 1.5x {ADVICE}")
    );
    assert_eq!(
        m(250_000_000),
        format!("estimated rule cost exceeds budget by factor of 25.0x {ADVICE}")
    );
    assert_eq!(
        m(1_000_000_001),
        format!("estimated rule cost exceeds budget by factor of more than 100x {ADVICE}")
    );
}

#[test]
fn a_rule_over_unbounded_strings_is_refused_until_they_are_bounded() {
    // The strings are bounded by the request (3 MiB - 2 bytes = 3145726) and the list by as
    // many 2-byte strings and commas as fit (3145726 / 3 = 1048575 items). Each iteration costs
    // 2 (the loop condition: `@not_strictly_false(@result)`, a call and an identifier) plus
    // the step `@result && x.matches('^a.*')`: the identifier (1), the target `x` (1) and the
    // match, ceil((3145726 + 1) * 0.1) = 314573 times ceil(4 * 0.25) = 1; so 314577 per item.
    // With the range and the result (1 each): 2 + 1048575 * 314577 = 329857577777, over 100x
    // the limit of 10000000, and over the total's limit of 100000000 too.
    let rule = "self.all(x, x.matches('^a.*'))";
    let path = format!("{P}.properties[spec].properties[items].x-kubernetes-validations[0].rule");
    assert_eq!(cost(array(string(None), None), rule), 329_857_577_777);
    assert_eq!(
        errors(&list_of_strings(rule, None, None)),
        [
            format!(
                "{path}: Forbidden: estimated rule cost exceeds budget by factor of more than 100x {ADVICE}"
            ),
            format!(
                "{path}: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
            ),
            format!(
                "{P}: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {ADVICE}"
            ),
        ]
    );
    // Either bound is enough. Ten unbounded strings: 2 + 10 * 314577 = 3145772.
    assert!(errors(&list_of_strings(rule, Some(10), None)).is_empty());
    assert_eq!(cost(array(string(None), Some(10)), rule), 3_145_772);
    // Strings of at most 10 characters (40 bytes, 4 per character; a match costs ceil(41 *
    // 0.1) = 5, an item 9) in an unbounded list: 2 + 1048575 * 9 = 9437177.
    assert_eq!(cost(array(string(Some(10)), None), rule), 9_437_177);
    assert!(errors(&list_of_strings(rule, None, Some(10))).is_empty());
    // With both bounds: 40 bytes per string (4 per character), ceil(41 * 0.1) = 5 per
    // match, 9 per item: 2 + 10 * 9 = 92.
    assert_eq!(cost(array(string(Some(10)), Some(10)), rule), 92);
    assert!(errors(&list_of_strings(rule, Some(10), Some(10))).is_empty());
}

#[test]
fn a_rule_runs_as_many_times_as_its_node_can_occur() {
    // `self.name.contains('abc')` on an item: the select (2) and ceil(3145726 * 0.1) * ceil(3
    // * 0.1) = 314573, so 314575 per evaluation. Under a list of 5 it costs 1572875; under
    // an unbounded list, as many items as 3 MiB holds of the item's least size (`{}`, 2
    // bytes, and a comma): 3145728 / 3 = 1048576 evaluations.
    let schema = |max_items: Option<i64>| {
        let item = json!({"type": "object", "properties": {"name": {"type": "string"}},
            "x-kubernetes-validations": [{"rule": "self.name.contains('abc')"}]});
        json!({"type": "object", "properties": {"spec": array(item, max_items)}})
    };
    assert!(errors(&schema(Some(5))).is_empty());
    let path = format!("{P}.properties[spec].items.x-kubernetes-validations[0].rule");
    let errs = errors(&schema(None));
    assert_eq!(
        errs[0],
        format!(
            "{path}: Forbidden: estimated rule cost exceeds budget by factor of more than 100x {ADVICE}"
        )
    );
    assert_eq!(errs.len(), 3);
}

#[test]
fn cheap_rules_that_add_up_past_the_schema_limit_are_refused_together() {
    // Lists of 18 to 31 unbounded strings, each item with `self.contains('abcdefghij')`: the
    // identifier (1) and ceil(3145726 * 0.1) * ceil(10 * 0.1) = 314573, so 314574 per item
    // and 314574 * maxItems per rule (at most 9751794, under the per-rule limit). Together:
    // 314574 * (18 + … + 31) = 314574 * 343 = 107898882, 1.07898882 times the limit.
    let mut properties = serde_json::Map::new();
    for n in 18..=31 {
        let mut item = string(None);
        item["x-kubernetes-validations"] = json!([{"rule": "self.contains('abcdefghij')"}]);
        properties.insert(format!("l{n}"), array(item, Some(n)));
    }
    let schema = json!({"type": "object", "properties": properties});
    let contributed = |n: i64| {
        format!(
            "{P}.properties[l{n}].items.x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
        )
    };
    assert_eq!(
        errors(&schema),
        [
            contributed(31),
            contributed(30),
            contributed(29),
            contributed(28),
            format!(
                "{P}: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of 1.078989x {ADVICE}"
            ),
        ]
    );
    // Lifting the per-expression limit (an update leaving the schema as it was) keeps the
    // total's.
    let lifted = CrdSchemaOptions {
        suppress_per_expression_cost: true,
        ..CrdSchemaOptions::default()
    };
    assert_eq!(errors_with(&schema, &lifted).len(), 5);
}

#[test]
fn message_expressions_are_estimated_once_per_evaluation() {
    // `self.join(',')` over 1048575 strings of 3145726 bytes (and 1048574 one-byte
    // separators) is far over the limit; a message expression is not multiplied by its
    // rule's cardinality, and adds to the total.
    let mut schema = list_of_strings("self.size() < 5", None, None);
    schema["properties"]["spec"]["properties"]["items"]["x-kubernetes-validations"][0]["messageExpression"] =
        json!("'bad: ' + self.join(',')");
    let at = format!("{P}.properties[spec].properties[items].x-kubernetes-validations[0]");
    assert_eq!(
        errors(&schema),
        [
            format!(
                "{at}.messageExpression: Forbidden: estimated messageExpression cost exceeds budget by factor of more than 100x {ADVICE}"
            ),
            format!(
                "{at}.messageExpression: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
            ),
            format!(
                "{P}: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {ADVICE}"
            ),
        ]
    );
    let lifted = CrdSchemaOptions {
        suppress_per_expression_cost: true,
        ..CrdSchemaOptions::default()
    };
    assert_eq!(errors_with(&schema, &lifted).len(), 2);
}

#[test]
fn the_resource_root_declares_bounded_names() {
    // At the root, `metadata.name` is at most 253 characters (1012 bytes): `contains` costs
    // ceil(1012 * 0.1) * ceil(1 * 0.1) = 102, and the selects 3.
    let root = json!({"type": "object", "properties": {"metadata": {"type": "object"}}});
    let props = Props::read(&root, "", 0).unwrap();
    let decl = decl_of(&props, true).unwrap();
    let rule = CelExpression::compile("self.metadata.name.contains('x')").unwrap();
    assert_eq!(rule.estimated_cost(&decl), 105);
}

#[test]
fn gateway_api_path_match_rules_cost_what_kubernetes_estimates() {
    // The path match of Gateway API's HTTPRoute (standard channel), under its 16 rules of 64
    // matches each: each of its rules can run 16 * 64 = 1024 times. `value` is at most 1024
    // characters, 4096 bytes.
    // - `self.type in ['Exact','PathPrefix']`: the select (2), the list literal (10) and the
    //   membership test over its 2 items (2): 14.
    // - `!self.value.contains('//')`: the select (2), ceil(4096 * 0.1) * ceil(2 * 0.1) = 410,
    //   and the negation (1): 413; the conditional adds the condition: 427, 437248 in all.
    // - `self.value.matches(r"""…""")` with a 54-character pattern: ceil(4097 * 0.1) *
    //   ceil(54 * 0.25) = 410 * 14 = 5740, with the select 5742 and the condition 5756:
    //   5894144 in all, under the limit of 10000000.
    let contains = "(self.type in ['Exact','PathPrefix']) ? !self.value.contains('//') : true";
    let matches = r#"(self.type in ['Exact','PathPrefix']) ? self.value.matches(r"""^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$""") : true"#;
    let path = json!({"type": "object", "properties": {
        "type": {"type": "string", "enum": ["Exact", "PathPrefix", "RegularExpression"]},
        "value": {"type": "string", "maxLength": 1024}
    }});
    assert_eq!(cost(path.clone(), contains), 427);
    assert_eq!(cost(path.clone(), matches), 5756);
    let mut with_rules = path;
    with_rules["x-kubernetes-validations"] = json!([{"rule": contains}, {"rule": matches}]);
    let matches_list = array(
        json!({"type": "object", "properties": {"path": with_rules}}),
        Some(64),
    );
    let rules = array(
        json!({"type": "object", "properties": {"matches": matches_list}}),
        Some(16),
    );
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"rules": rules}}}});
    assert!(errors(&schema).is_empty());
    // Over the limit when the value is unbounded: ceil(3145727 * 0.1) * 14 = 4404022 per
    // evaluation, 1024 times (and so is the first rule).
    let mut unbounded = schema.clone();
    let value = "/properties/spec/properties/rules/items/properties/matches/items/properties/path/properties/value";
    unbounded
        .pointer_mut(value)
        .unwrap()
        .as_object_mut()
        .unwrap()
        .remove("maxLength");
    let rule = format!(
        "{P}.properties[spec].properties[rules].items.properties[matches].items.properties[path].x-kubernetes-validations[1].rule"
    );
    assert_eq!(
        errors(&unbounded)[1],
        format!(
            "{rule}: Forbidden: estimated rule cost exceeds budget by factor of more than 100x {ADVICE}"
        )
    );
}
