//! Kubernetes' own cases (client-go util/jsonpath's jsonpath_test.go and parser_test.go), over
//! the JSON form of their inputs, plus printer-column paths of real CRDs and bounds.

use serde_json::{Value, json};

use super::parse::{Node, Operator, Param};
use super::*;

/// `Execute` of `template` over `data`, with Kubernetes' default (missing keys are errors)
/// unless `allow_missing` is set.
fn run(template: &str, data: &Value, allow_missing: bool) -> Result<String, String> {
    let path = JsonPath::parse_template(template)
        .map_err(|e| format!("parse: {e}"))?
        .allow_missing_keys(allow_missing);
    path.execute(data).map_err(|e| e.to_string())
}

fn ok(template: &str, data: &Value, expect: &str) {
    assert_eq!(
        run(template, data, false).as_deref(),
        Ok(expect),
        "template {template}"
    );
}

fn fails(template: &str, data: &Value) {
    assert!(
        run(template, data, false).is_err(),
        "template {template} should fail"
    );
}

fn parse_err(template: &str) -> String {
    JsonPath::parse_template(template).unwrap_err().to_string()
}

fn types() -> Value {
    json!({
        "bools": [true, false, true, false],
        "integers": [1, 2, 3, 4],
        "floats": [1.0, 2.2, 3.3, 4.0],
        "strings": ["one", "two", "three", "four"],
        "interfaces": [true, "one", 1, 1.1],
        "maps": [
            {"name": "one", "value": 1},
            {"name": "two", "value": 2.02},
            {"name": "three", "value": 3.03},
            {"name": "four", "value": 4.04}
        ]
    })
}

#[test]
fn types_input() {
    let t = types();
    for (template, expect) in [
        ("{ .bools }", "[true,false,true,false]"),
        ("{ .bools[0] }", "true"),
        ("{ .bools[-1] }", "false"),
        ("{ .bools[0:2] }", "true false"),
        ("{ .bools[:2] }", "true false"),
        ("{ .bools[:4:2] }", "true true"),
        ("{ .integers }", "[1,2,3,4]"),
        ("{ .integers[-2] }", "3"),
        ("{ .integers[:4:2] }", "1 3"),
        ("{ .floats }", "[1,2.2,3.3,4]"),
        ("{ .floats[0] }", "1"),
        ("{ .floats[-2] }", "3.3"),
        ("{ .floats[:4:2] }", "1 3.3"),
        ("{ .strings }", r#"["one","two","three","four"]"#),
        ("{ .strings[-2] }", "three"),
        ("{ .strings[:4:2] }", "one three"),
        ("{ .interfaces }", r#"[true,"one",1,1.1]"#),
        ("{ .interfaces[0:2] }", "true one"),
        ("{ .interfaces[:4:2] }", "true 1"),
        ("{ .maps[0] }", r#"{"name":"one","value":1}"#),
        ("{ .maps[-2] }", r#"{"name":"three","value":3.03}"#),
        (
            "{ .maps[::2] }",
            r#"{"name":"one","value":1} {"name":"three","value":3.03}"#,
        ),
        (
            "{ .maps[1::2] }",
            r#"{"name":"two","value":2.02} {"name":"four","value":4.04}"#,
        ),
    ] {
        ok(template, &t, expect);
    }
}

fn store() -> Value {
    json!({
        "Book": [
            {"Category": "reference", "Author": "Nigel Rees", "Title": "Sayings of the Centurey", "Price": 8.95},
            {"Category": "fiction", "Author": "Evelyn Waugh", "Title": "Sword of Honour", "Price": 12.99},
            {"Category": "fiction", "Author": "Herman Melville", "Title": "Moby Dick", "Price": 8.99}
        ],
        "Bicycle": [
            {"Color": "red", "Price": 19.95, "IsNew": true},
            {"Color": "green", "Price": 20.01, "IsNew": false}
        ],
        "Name": "jsonpath",
        "Labels": {"engieer": 10, "web/html": 15, "k8s-app": 20},
        "Employees": {"jason": "manager", "dan": "clerk"}
    })
}

#[test]
fn store_input() {
    let s = store();
    ok("hello jsonpath", &Value::Null, "hello jsonpath");
    ok("{..}", &json!([1, 2, 3]), "[1,2,3]");
    ok("{[?(@<5)]}", &json!([2, 6, 3, 7]), "2 3");
    ok(r#"{"{"}"#, &Value::Null, "{");
    ok("{[1,3,4]}", &json!([0, 1, 2, 3, 4]), "1 3 4");
    ok("{[0:2]}", &json!(["Monday", "Tudesday"]), "Monday Tudesday");
    ok("hello {.Name}", &s, "hello jsonpath");
    ok("{$.Labels.web/html}", &s, "15");
    ok("{$.Employees.jason}", &s, "manager");
    ok("{$.Employees.dan}", &s, "clerk");
    ok("{.Labels.k8s-app}", &s, "20");
    ok("{.Bicycle[*].Color}", &s, "red green");
    ok(
        "{.Book[*].Author}",
        &s,
        "Nigel Rees Evelyn Waugh Herman Melville",
    );
    ok(
        r#"{range .Bicycle[*]}{ "{" }{ @.* }{ "} " }{end}"#,
        &s,
        "{red 19.95 true} {green 20.01 false} ",
    );
    ok("{..Price}", &s, "8.95 12.99 8.99 19.95 20.01");
    ok("{...Price}", &s, "8.95 12.99 8.99 19.95 20.01");
    assert_eq!(
        parse_err("{............................................................Price}"),
        "invalid multiple recursive descent"
    );
    ok(
        r#"{range .Bicycle[*]}{ @ }{ " " }{end}"#,
        &s,
        r#"{"Color":"red","IsNew":true,"Price":19.95} {"Color":"green","IsNew":false,"Price":20.01} "#,
    );
    ok(
        "{.Book[-1:]}",
        &s,
        r#"{"Author":"Herman Melville","Category":"fiction","Price":8.99,"Title":"Moby Dick"}"#,
    );
    ok(
        "{..Book[2]}",
        &s,
        r#"{"Author":"Herman Melville","Category":"fiction","Price":8.99,"Title":"Moby Dick"}"#,
    );
    ok(
        "{.Bicycle[?(@.IsNew==true)]}",
        &s,
        r#"{"Color":"red","IsNew":true,"Price":19.95}"#,
    );

    // Missing keys allowed.
    assert_eq!(run("{.hello}", &s, true).as_deref(), Ok(""));
    assert_eq!(
        run("before-{.hello}after", &s, true).as_deref(),
        Ok("before-after")
    );

    // Kubernetes' failures, with its messages.
    let err = |t: &str| run(t, &s, false).unwrap_err();
    assert_eq!(err("{hello}"), "unrecognized identifier hello");
    assert_eq!(err("{.hello}"), "hello is not found");
    assert_eq!(
        err("{.Labels[0]}"),
        "map[string]interface {} is not array or slice"
    );
    assert_eq!(
        err("{.Book[?(@.Price<>10)]}"),
        "unrecognized filter operator <>"
    );
    assert_eq!(
        err("{range .Labels.*}{@}{end}{end}"),
        "not in range, nothing to end"
    );
}

fn points() -> Value {
    json!([
        {"id": "i1", "x": 4, "y": -5},
        {"id": "i2", "x": -2, "y": -5, "z": 1},
        {"id": "i3", "x": 8, "y": 3},
        {"id": "i4", "x": -6, "y": -1},
        {"id": "i5", "x": 0, "y": 2, "z": 1},
        {"id": "i6", "x": 1, "y": 4},
        {"id": "i7", "x": null, "y": 4}
    ])
}

#[test]
fn json_input() {
    let p = points();
    ok("{[?(@.z)].id}", &p, "i2 i5");
    ok("{[0]['id']}", &p, "i1");
    ok("{[-1]['x']}", &p, "null");
}

fn nodes() -> Value {
    json!({
        "kind": "List",
        "items": [
            {
                "kind": "None",
                "metadata": {"name": "127.0.0.1", "labels": {"kubernetes.io/hostname": "127.0.0.1"}},
                "status": {
                    "capacity": {"cpu": "4"},
                    "ready": true,
                    "addresses": [{"type": "LegacyHostIP", "address": "127.0.0.1"}]
                }
            },
            {
                "kind": "None",
                "metadata": {"name": "127.0.0.2", "labels": {"kubernetes.io/hostname": "127.0.0.2"}},
                "status": {
                    "capacity": {"cpu": "8"},
                    "ready": false,
                    "addresses": [
                        {"type": "LegacyHostIP", "address": "127.0.0.2"},
                        {"type": "another", "address": "127.0.0.3"}
                    ]
                }
            }
        ],
        "users": [
            {"name": "myself", "user": {}},
            {"name": "e2e", "user": {"username": "admin", "password": "secret"}}
        ]
    })
}

#[test]
fn kubernetes_cases() {
    let n = nodes();
    ok(
        "{range .items[*]}{.metadata.name}, {end}{.kind}",
        &n,
        "127.0.0.1, 127.0.0.2, List",
    );
    ok(
        r#"{range .items[*]}{.metadata.name}{"\t"}{end}"#,
        &n,
        "127.0.0.1\t127.0.0.2\t",
    );
    ok(
        "{.items[*].status.addresses[*].address}",
        &n,
        "127.0.0.1 127.0.0.2 127.0.0.3",
    );
    ok(
        "{range .items[*]}{range .status.addresses[*]}{.address}, {end}{end}",
        &n,
        "127.0.0.1, 127.0.0.2, 127.0.0.3, ",
    );
    ok("{.items[*].metadata.name}", &n, "127.0.0.1 127.0.0.2");
    ok(
        "{.items[*]['metadata.name', 'status.capacity']}",
        &n,
        r#"127.0.0.1 127.0.0.2 {"cpu":"4"} {"cpu":"8"}"#,
    );
    ok(
        "{range .items[*]}[{.metadata.name}, {.status.capacity}] {end}",
        &n,
        r#"[127.0.0.1, {"cpu":"4"}] [127.0.0.2, {"cpu":"8"}] "#,
    );
    ok(r#"{.users[?(@.name=="e2e")].user.password}"#, &n, "secret");
    ok(
        r"{.items[0].metadata.labels.kubernetes\.io/hostname}",
        &n,
        "127.0.0.1",
    );
    ok(
        r#"{.items[?(@.metadata.labels.kubernetes\.io/hostname=="127.0.0.1")].kind}"#,
        &n,
        "None",
    );
    ok("{.items[?(@..ready==true)].metadata.name}", &n, "127.0.0.1");
    // Kubernetes sorts this one's words (Go's maps have no order); ours follow the document.
    ok("{..name}", &n, "127.0.0.1 127.0.0.2 myself e2e");
}

#[test]
fn empty_and_nested_ranges() {
    // Kubernetes runs these with missing keys allowed.
    let empty = json!({"items": []});
    let nested = r#"{range .items[*]}{.metadata.name}{":"}{range @.spec.containers[*]}{.name}{","}{end}{"+"}{end}"#;
    for t in ["{range .items[*]}{.metadata.name}{end}", nested] {
        assert_eq!(run(t, &empty, true).as_deref(), Ok(""), "template {t}");
    }
    let pods = json!({"items": [
        {"metadata": {"name": "a"}, "spec": {"containers": [{"name": "x"}, {"name": "y"}]}},
        {"metadata": {"name": "b"}, "spec": {"containers": [{"name": "z"}]}}
    ]});
    ok(
        r#"{range .items[*]}{.metadata.name}{":"}{range @.spec.containers[*]}{.name}{","}{end}{"+"}{end}"#,
        &pods,
        "a:x,y,+b:z,+",
    );
}

#[test]
fn filter_with_missing_annotations() {
    let data = json!({"kind": "List", "items": [
        {"kind": "Pod", "metadata": {"name": "pod1", "annotations": {"color": "blue"}}},
        {"kind": "Pod", "metadata": {"name": "pod2"}},
        {"kind": "Pod", "metadata": {"name": "pod3", "annotations": {"color": "green"}}},
        {"kind": "Pod", "metadata": {"name": "pod4", "annotations": {"color": "blue"}}}
    ]});
    let t = r#"{.items[?(@.metadata.annotations.color=="blue")].metadata.name}"#;
    assert_eq!(run(t, &data, true).as_deref(), Ok("pod1 pod4"));
    assert_eq!(
        run(t, &data, false),
        Err("annotations is not found".to_string())
    );
}

fn containers(n: usize) -> Value {
    let list: Vec<Value> = (0..n)
        .map(|i| json!({"image": "radial/busyboxplus:curl", "name": format!("fake{i}")}))
        .collect();
    json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": list}})
}

#[test]
fn negative_index() {
    let d = containers(4);
    for (t, expect) in [
        ("{.spec.containers[0].name}", Some("fake0")),
        ("{.spec.containers[0:0].name}", Some("")),
        ("{.spec.containers[0:-1].name}", Some("fake0 fake1 fake2")),
        ("{.spec.containers[-1:0].name}", None),
        ("{.spec.containers[-1].name}", Some("fake3")),
        ("{.spec.containers[-1:].name}", Some("fake3")),
        ("{.spec.containers[-2].name}", Some("fake2")),
        ("{.spec.containers[-2:].name}", Some("fake2 fake3")),
        ("{.spec.containers[-3].name}", Some("fake1")),
        ("{.spec.containers[-4].name}", Some("fake0")),
        (
            "{.spec.containers[-4:].name}",
            Some("fake0 fake1 fake2 fake3"),
        ),
        ("{.spec.containers[-5].name}", None),
        ("{.spec.containers[5:5].name}", Some("")),
        ("{.spec.containers[-5:-5].name}", Some("")),
        ("{.spec.containers[3:1].name}", None),
        ("{.spec.containers[-1:-2].name}", None),
    ] {
        match expect {
            Some(e) => ok(t, &d, e),
            None => fails(t, &d),
        }
    }
    let err = |t: &str| run(t, &d, false).unwrap_err();
    assert_eq!(
        err("{.spec.containers[-5].name}"),
        "array index out of bounds: index -1, length 4"
    );
    assert_eq!(
        err("{.spec.containers[3:1].name}"),
        "starting index 3 is greater than ending index 1"
    );
    assert_eq!(
        err("{.spec.containers[4]}"),
        "array index out of bounds: index 4, length 4"
    );
}

#[test]
fn running_pods() {
    let data = json!({"kind": "List", "items": [
        {"kind": "Pod", "metadata": {"name": "pod1"}, "status": {"phase": "Running"}},
        {"kind": "Pod", "metadata": {"name": "pod2"}, "status": {"phase": "Running"}},
        {"kind": "Pod", "metadata": {"name": "pod3"}, "status": {"phase": "Running"}},
        {"resourceVersion": ""}
    ]});
    assert_eq!(
        run(
            r#"{range .items[?(.status.phase=="Running")]}{.metadata.name}{" is Running\n"}{end}"#,
            &data,
            true
        )
        .as_deref(),
        Ok("pod1 is Running\npod2 is Running\npod3 is Running\n")
    );
}

#[test]
fn step() {
    let d = containers(6);
    for (t, expect) in [
        (
            "{.spec.containers[0:].name}",
            Some("fake0 fake1 fake2 fake3 fake4 fake5"),
        ),
        (
            "{.spec.containers[0:6:].name}",
            Some("fake0 fake1 fake2 fake3 fake4 fake5"),
        ),
        (
            "{.spec.containers[0:6:1].name}",
            Some("fake0 fake1 fake2 fake3 fake4 fake5"),
        ),
        ("{.spec.containers[0:6:0].name}", None),
        ("{.spec.containers[0:6:-1].name}", None),
        ("{.spec.containers[1:4:2].name}", Some("fake1 fake3")),
        ("{.spec.containers[1:4:3].name}", Some("fake1")),
        ("{.spec.containers[1:4:4].name}", Some("fake1")),
        ("{.spec.containers[0:6:2].name}", Some("fake0 fake2 fake4")),
        ("{.spec.containers[0:6:3].name}", Some("fake0 fake3")),
        ("{.spec.containers[0:6:5].name}", Some("fake0 fake5")),
        ("{.spec.containers[0:6:6].name}", Some("fake0")),
    ] {
        match expect {
            Some(e) => ok(t, &d, e),
            None => assert_eq!(run(t, &d, false).unwrap_err(), "step must be > 0"),
        }
    }
}

fn p(value: i64, known: bool, derived: bool) -> Param {
    Param {
        value,
        known,
        derived,
    }
}

#[test]
fn parser_trees() {
    let tree = |t: &str| JsonPath::parse_template(t).unwrap().root;
    let list = |nodes: Vec<Node>| vec![Node::List(nodes)];
    let field = |f: &str| Node::Field(f.into());
    let text = |t: &str| Node::Text(t.into());
    let status_os = || vec![field("status"), field("nodeInfo"), field("osImage")];
    let os_filter = |right: &str| {
        list(vec![Node::Filter {
            left: status_os(),
            right: vec![text(right)],
            op: Operator::Eq,
        }])
    };
    assert_eq!(tree("hello jsonpath"), vec![text("hello jsonpath")]);
    assert_eq!(
        tree("hello {.jsonpath}"),
        vec![text("hello "), Node::List(vec![field("jsonpath")])]
    );
    assert_eq!(
        tree("hello {['jsonpath']}"),
        vec![text("hello "), Node::List(vec![field("jsonpath")])]
    );
    assert_eq!(tree(r#"{"{"}"#), list(vec![text("{")]));
    assert_eq!(
        tree("{[1:3]}"),
        list(vec![Node::Array([
            p(1, true, false),
            p(3, true, false),
            p(0, false, false)
        ])])
    );
    let open = p(0, false, false);
    assert_eq!(
        tree("{.book[*].author}"),
        list(vec![
            field("book"),
            Node::Array([open, open, open]),
            field("author")
        ])
    );
    assert_eq!(
        tree("{.bicycle.*}"),
        list(vec![field("bicycle"), Node::Wildcard])
    );
    assert_eq!(
        tree("{[?(@.price<3)]}"),
        list(vec![Node::Filter {
            left: vec![field("price")],
            right: vec![Node::Int(3)],
            op: Operator::Lt
        }])
    );
    assert_eq!(tree("{..}"), list(vec![Node::Recursive]));
    assert_eq!(
        tree("{..price}"),
        list(vec![Node::Recursive, field("price")])
    );
    assert_eq!(
        tree("{['book.price']}"),
        list(vec![field("book"), field("price")])
    );
    assert_eq!(
        tree("{['bicycle.price', 3, 'book.price']}"),
        list(vec![Node::Union(vec![
            vec![field("bicycle"), field("price")],
            vec![Node::Array([p(3, true, false), p(4, true, true), open])],
            vec![field("book"), field("price")],
        ])])
    );
    assert_eq!(
        tree("{range .items}{.name},{end}"),
        vec![
            Node::List(vec![Node::Identifier("range".into()), field("items")]),
            Node::List(vec![field("name")]),
            text(","),
            Node::List(vec![Node::Identifier("end".into())]),
        ]
    );
    assert!(JsonPath::parse_template(r"{\\\}").is_err());
    assert_eq!(
        tree(r#"{[?(@.status.nodeInfo.osImage == "()")]}"#),
        os_filter("()")
    );
    assert_eq!(
        tree(r#"{[?(@.status.nodeInfo.osImage == "(\"\")")]}"#),
        os_filter("(\"\")")
    );
    assert_eq!(
        tree(r#"{[?(@.status.nodeInfo.osImage == 'Linux')]}"#),
        os_filter("Linux")
    );
    assert_eq!(
        tree(r#"{[?(@.status.nodeInfo.osImage == "{[()]}")]}"#),
        os_filter("{[()]}")
    );
    assert_eq!(
        tree(r#"{[?(@.status.nodeInfo.osImage == "''")]}"#),
        os_filter("''")
    );
    assert_eq!(
        tree(r#"{[?(@.status.nodeInfo.osImage == '""')]}"#),
        os_filter("\"\"")
    );
    assert_eq!(
        tree(r#"{[?(@.status.nodeInfo.osImage == '\\\'')]}"#),
        os_filter("\\'")
    );
    assert_eq!(
        tree(r#"{[?(@.test == "())(")]}"#),
        list(vec![Node::Filter {
            left: vec![field("test")],
            right: vec![text("())(")],
            op: Operator::Eq
        }])
    );
    assert_eq!(
        tree("{[-5:]}"),
        list(vec![Node::Array([p(-5, true, false), open, open])])
    );
    assert_eq!(
        tree("{[-1]}"),
        list(vec![Node::Array([
            p(-1, true, false),
            p(0, true, true),
            open
        ])])
    );
    assert_eq!(
        tree("{[1:-1]}"),
        list(vec![Node::Array([
            p(1, true, false),
            p(-1, true, false),
            open
        ])])
    );
    assert_eq!(
        tree("{.a[?(@.x > 1.5)]}"),
        list(vec![
            field("a"),
            Node::Filter {
                left: vec![field("x")],
                right: vec![Node::Float(1.5)],
                op: Operator::Gt
            }
        ])
    );
}

#[test]
fn parser_failures() {
    assert_eq!(parse_err("{.hello"), "unclosed action");
    assert_eq!(
        parse_err("{*}"),
        "unrecognized character in action: U+002A '*'"
    );
    assert_eq!(parse_err("{+12.3.0}"), "cannot parse number +12.3.0");
    assert_eq!(parse_err("{[1}"), "unterminated array");
    assert_eq!(parse_err("{[?(.price]}"), "unterminated filter");
    assert_eq!(
        parse_err("{........}"),
        "invalid multiple recursive descent"
    );
    assert_eq!(parse_err("{.a[?(@.b)x}"), "unclosed array expect ]");
    assert_eq!(parse_err("{\"abc}"), "unterminated quoted string");
    assert_eq!(parse_err("{[a]}"), "invalid array index a");
    assert_eq!(
        parse_err("{[?(@.a==)]}"),
        "unrecognized character in action: U+003D '='"
    );
    assert_eq!(
        parse_err("{\t}"),
        "unrecognized character in action: U+0009"
    );
    assert_eq!(
        parse_err(r#"{"\q"}"#),
        r#"unquote string "\q" error invalid syntax"#
    );
}

/// Printer-column paths of real CRDs, parsed as the extension server parses them.
#[test]
fn printer_columns() {
    let certificate = json!({
        "metadata": {"name": "web", "labels": {"app.kubernetes.io/name": "web"}},
        "spec": {"secretName": "web-tls", "replicas": 3},
        "status": {"conditions": [
            {"type": "Issuing", "status": "False"},
            {"type": "Ready", "status": "True", "message": "Certificate is up to date"}
        ]}
    });
    let cell = |path: &str| {
        JsonPath::parse_printer_column(path)
            .unwrap()
            .first(&certificate)
            .map(|v| v.into_owned())
    };
    assert_eq!(
        cell(r#".status.conditions[?(@.type=="Ready")].status"#),
        Some(json!("True"))
    );
    assert_eq!(
        cell(r#".status.conditions[?(@.type=="Ready")].message"#),
        Some(json!("Certificate is up to date"))
    );
    assert_eq!(
        cell(r".metadata.labels['app\.kubernetes\.io/name']"),
        Some(json!("web"))
    );
    assert_eq!(
        cell(r".metadata.labels.app\.kubernetes\.io/name"),
        Some(json!("web"))
    );
    assert_eq!(cell(".spec.replicas"), Some(json!(3)));
    assert_eq!(cell(".spec.missing"), None);
    assert_eq!(cell(".status.conditions[5].type"), None);
    assert_eq!(cell(".status.conditions[*].type"), Some(json!("Issuing")));
    // `{…}` inside a column is an error there, as in Kubernetes; `parse` accepts templates.
    assert_eq!(
        JsonPath::parse_printer_column("{.spec.replicas}")
            .unwrap_err()
            .to_string(),
        "unrecognized character in action: U+007B '{'"
    );
    assert_eq!(
        JsonPath::parse("{.spec.replicas}")
            .unwrap()
            .first(&certificate)
            .map(|v| v.into_owned()),
        Some(json!(3))
    );
    assert_eq!(
        JsonPath::parse(".spec.replicas")
            .unwrap()
            .evaluate(&certificate)
            .unwrap(),
        vec![std::borrow::Cow::Borrowed(&json!(3))]
    );
}

#[test]
fn comparisons() {
    let d = json!({"a": [
        {"n": 1, "f": 1.5, "s": "b", "b": true, "o": {}},
        {"n": 2, "f": 2.5, "s": "c", "b": false, "o": null}
    ]});
    ok("{.a[?(@.n >= 2)].s}", &d, "c");
    ok("{.a[?(@.n != 2)].s}", &d, "b");
    ok("{.a[?(@.f < 2.0)].s}", &d, "b");
    ok("{.a[?(@.f <= 2.5)].s}", &d, "b c");
    ok(r#"{.a[?(@.s > "b")].n}"#, &d, "2");
    ok("{.a[?(@.b == false)].n}", &d, "2");
    let err = |t: &str| run(t, &d, false).unwrap_err();
    // An integer never compares with a float.
    assert_eq!(
        err("{.a[?(@.n == 1.0)]}"),
        "incompatible types for comparison"
    );
    assert_eq!(err("{.a[?(@.o == 1)]}"), "invalid type for comparison");
    assert_eq!(err("{.a[?(@.b < true)]}"), "invalid type for comparison");
    assert_eq!(
        err("{.a[?(@.* == 1)]}"),
        "can only compare one element at a time"
    );
    assert_eq!(
        err("{.a[0][?(@.n)]}"),
        "map[b:true f:1.5 n:1 o:map[] s:b] is not array or slice and cannot be filtered"
    );
}

#[test]
fn strings_and_recursion() {
    // Wildcards and recursive descent see a string's bytes, as Go's reflection does.
    let d = json!({"s": "ab", "e": "", "n": null});
    ok("{.s.*}", &d, "97 98");
    ok("{..}", &d, r#"{"e":"","n":null,"s":"ab"} ab"#);
}

#[test]
fn bounded_on_adversarial_input() {
    // Deep documents: recursive descent walks them without the thread's stack.
    let mut deep = json!(1);
    for _ in 0..100_000 {
        deep = Value::Array(vec![deep]);
    }
    let path = JsonPath::parse("..").unwrap();
    assert_eq!(path.evaluate(&deep).unwrap().len(), 100_000);
    // Quadratic work is cut off.
    let path = JsonPath::parse("...*...*").unwrap();
    assert_eq!(path.evaluate(&deep).unwrap_err(), EvalError::TooManyValues);
    // Long templates parse in a loop.
    let long = ".a".repeat(200_000);
    assert_eq!(
        JsonPath::parse(&long)
            .unwrap()
            .evaluate(&json!({}))
            .unwrap()
            .len(),
        0
    );
    let unions = format!("[{}]", vec!["0"; 100_000].join(","));
    assert!(JsonPath::parse(&unions).is_ok());
    // Ranges nest at most MAX_RANGE_DEPTH deep.
    let ranges = "{range @}".repeat(MAX_RANGE_DEPTH + 1);
    assert_eq!(
        JsonPath::parse_template(&ranges)
            .unwrap()
            .evaluate(&json!(1))
            .unwrap_err(),
        EvalError::RangeTooDeep
    );
    // Dropped a level at a time (a Value's own drop recurses).
    while let Value::Array(mut inner) = deep {
        deep = inner.pop().unwrap_or(Value::Null);
    }
}

/// Random texts over the language's characters parse or fail, and evaluate or fail, without
/// panicking (a short run of what the `jsonpath` fuzz target checks).
#[test]
fn random_texts_do_not_panic() {
    const ALPHABET: &[&str] = &[
        ".", "..", "[", "]", "?(", ")", "@", "$", "*", ":", ",", "-", "1", "0", "9", "'", "\"",
        "\\", "{", "}", "=", "==", "!=", "<", ">=", "a", "b", "range", "end", "true", " ", "\t",
        "é", "x",
    ];
    let doc = nodes();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..20_000 {
        let len = next() % 24;
        let text: String = (0..len)
            .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize])
            .collect();
        for path in [
            JsonPath::parse_printer_column(&text),
            JsonPath::parse_template(&text),
        ]
        .into_iter()
        .flatten()
        {
            let _ = path.execute(&doc);
            let _ = path.clone().allow_missing_keys(false).execute(&doc);
            let _ = path.first(&doc);
        }
    }
}
