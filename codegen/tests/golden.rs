//! Golden files of the emitted `.proto`, OpenAPI v3 and OpenAPI v2 of `example.dev/v1`.
//!
//! Run with `UPDATE_GOLDEN=1` to rewrite the files after an intended change, then review the
//! diff.

mod support;

use std::path::Path;

use codegen::Generator;
use codegen::emit::openapi::{emit_openapi_v2, emit_openapi_v3};
use codegen::emit::proto::emit_proto;
use support::check_golden;

fn example_v1() -> (codegen::ApiModel, usize) {
    let model = Generator::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../api-defs"))
        .load()
        .expect("load api-defs");
    let index = model
        .groups
        .iter()
        .position(|g| g.name == "example.dev")
        .expect("example.dev group");
    (model, index)
}

#[test]
fn example_dev_v1_proto() {
    let (model, i) = example_v1();
    let group = &model.groups[i];
    let version = group.version("v1").expect("v1");
    check_golden("example.dev_v1.proto", &emit_proto(group, version));
}

#[test]
fn example_dev_v1_openapi_v3() {
    let (model, i) = example_v1();
    let group = &model.groups[i];
    let version = group.version("v1").expect("v1");
    let text = serde_json::to_string_pretty(&emit_openapi_v3(&model, group, version))
        .expect("json")
        + "\n";
    check_golden("example.dev_v1.openapi_v3.json", &text);
}

#[test]
fn example_dev_v1_openapi_v2() {
    let (model, i) = example_v1();
    let group = &model.groups[i];
    let version = group.version("v1").expect("v1");
    let text = serde_json::to_string_pretty(&emit_openapi_v2(&model, group, version))
        .expect("json")
        + "\n";
    check_golden("example.dev_v1.openapi_v2.json", &text);
}

#[test]
fn emission_is_deterministic() {
    let (a, i) = example_v1();
    let (b, _) = example_v1();
    let (ga, gb) = (&a.groups[i], &b.groups[i]);
    let (va, vb) = (ga.version("v1").expect("v1"), gb.version("v1").expect("v1"));
    assert_eq!(emit_proto(ga, va), emit_proto(gb, vb));
    assert_eq!(
        serde_json::to_string(&emit_openapi_v3(&a, ga, va)).expect("json"),
        serde_json::to_string(&emit_openapi_v3(&b, gb, vb)).expect("json")
    );
}
