//! Emission: from the checked [`ApiModel`] to the files the `generated` crate includes.
//!
//! The entry point is [`emit`], which returns every output file (relative path and contents);
//! [`crate::Generator`] writes them to `OUT_DIR`. Emitters only read the model:
//!
//! - [`rust`]: typed structs, serde, conversions to and from the hub, defaulters, validation,
//!   structure statics, and the `TypedObject` facts and `Kind` table of each kind (one
//!   `<group>.rs` per group plus the crate-level `apiary_generated.rs`).
//! - [`proto`]: `.proto` files and protobuf codecs (see its module docs for the contract).
//! - [`openapi`]: OpenAPI v3 and v2 documents per group version.
//!
//! Output is deterministic: the same model always gives byte-identical files.

pub mod openapi;
pub mod proto;
pub mod rust;

use crate::model::{ApiModel, GroupModel, VersionModel};

/// One emitted file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputFile {
    /// The path relative to the output directory, such as `example_dev.rs`.
    pub path: String,
    /// The file contents.
    pub contents: String,
}

/// Every file emitted for a model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Output {
    /// The files, in a deterministic order.
    pub files: Vec<OutputFile>,
}

impl Output {
    /// Finds a file by relative path.
    pub fn file(&self, path: &str) -> Option<&OutputFile> {
        self.files.iter().find(|f| f.path == path)
    }
}

/// The relative path of the OpenAPI file of a group version: `openapi/<group>_<version>.<v>.json`.
pub fn openapi_path(group: &GroupModel, version: &VersionModel, which: &str) -> String {
    format!(
        "openapi/{}_{}.{which}.json",
        group.module_name(),
        version.version
    )
}

/// Emits every file for the model: one Rust file per group, the crate root file, the `.proto`
/// files and the OpenAPI documents. The shared group (`meta.k8s.io`) has only its `.proto`
/// file here: its Rust is apimachinery's ([`rust::shared_file`]) and its schemas are part of
/// every document that references them.
pub fn emit(model: &ApiModel) -> Output {
    let mut out = Output::default();
    for group in &model.groups {
        let shared = group.is_shared();
        if !shared {
            out.files.push(OutputFile {
                path: format!("{}.rs", group.module_name()),
                contents: rust::group_file(group),
            });
        }
        for version in &group.versions {
            let proto = proto::emit_proto(group, version);
            if !proto.is_empty() {
                out.files.push(OutputFile {
                    path: format!("proto/{}", proto::proto_path(version)),
                    contents: proto,
                });
            }
            if shared {
                continue;
            }
            for (which, value) in [
                ("v3", openapi::emit_openapi_v3(model, group, version)),
                ("v2", openapi::emit_openapi_v2(model, group, version)),
            ] {
                let text = if value.is_null() {
                    "{}".to_string()
                } else {
                    serde_json::to_string_pretty(&value).unwrap_or_else(|_| "{}".to_string())
                };
                out.files.push(OutputFile {
                    path: openapi_path(group, version, which),
                    contents: text,
                });
            }
        }
    }
    // The `.proto` files of the other crates' group versions the definitions refer to, which
    // the emitted files import: the output's `proto/` directory is complete for protoc.
    for (_, group, version) in openapi::referenced_externs(model) {
        out.files.push(OutputFile {
            path: format!("proto/{}", proto::proto_path(version)),
            contents: proto::emit_proto(group, version),
        });
    }
    for (path, contents) in proto::support_files() {
        out.files.push(OutputFile {
            path: format!("proto/{path}"),
            contents: contents.to_string(),
        });
    }
    out.files.push(OutputFile {
        path: "apiary_generated.rs".to_string(),
        contents: rust::root_file(model),
    });
    out
}
