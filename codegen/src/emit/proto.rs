//! Protobuf emission: the `.proto` file of a group version and the Rust codecs of its types.
//!
//! Contract with the rest of the generator:
//!
//! - [`emit_proto`] returns the text of the `.proto` file of `version` (package
//!   [`VersionModel::proto_package_or_default`], Kubernetes' field numbers from `#[proto(N)]`;
//!   a field without a number gets the next one after the largest of its struct). The
//!   generator writes it to `OUT_DIR/proto/` + [`proto_path`]; an empty string writes no file.
//!   [`support_files`] are the apimachinery `.proto` files it imports, to be written under
//!   `OUT_DIR/proto/` at their import paths; [`check_with_protoc`] runs the vendored `protoc`
//!   over the result.
//! - [`emit_proto_impls`] returns Rust items that are placed inside the generated module of
//!   `version` (for example `generated::example_dev::v1`), where every struct of the file and
//!   `<Kind>List` are in scope by name and `apimachinery` is a dependency. They implement
//!   `apimachinery::protobuf::ProtoMessage` for every struct and list, and for every kind `K`
//!   (snake case `k`, for example `config_map`) define:
//!
//!   ```text
//!   pub fn encode_protobuf_k(obj: &K) -> Vec<u8>;
//!   pub fn decode_protobuf_k(bytes: &[u8]) -> Result<K, apimachinery::scheme::CodecError>;
//!   pub fn encode_protobuf_k_list(list: &KList) -> Vec<u8>;
//!   pub fn decode_protobuf_k_list(bytes: &[u8]) -> Result<KList, apimachinery::scheme::CodecError>;
//!   ```
//!
//!   (message bytes without the `k8s\0` envelope, which `apimachinery::protobuf::encode_envelope`
//!   adds).

mod codec;
pub mod schema;
pub mod support;

use proc_macro2::TokenStream;

pub use support::{ProtocError, check_with_protoc, support_files};

use crate::model::{GroupModel, VersionModel};

/// The path of a group version's `.proto` file under `OUT_DIR/proto/`: `<package>.proto`, or,
/// for the shared version, the meta package's import path, where the other files import it
/// from.
pub fn proto_path(version: &VersionModel) -> String {
    if version.shared {
        schema::META_IMPORT.to_string()
    } else {
        format!("{}.proto", version.proto_package_or_default())
    }
}

/// Returns the `.proto` file text of one group version (empty for the internal hub version,
/// which is never sent over the wire).
pub fn emit_proto(group: &GroupModel, version: &VersionModel) -> String {
    let _ = group;
    if version.is_internal {
        return String::new();
    }
    schema::render(version)
}

/// Returns the Rust protobuf codec items of one group version (see the module docs for the
/// functions they define).
pub fn emit_proto_impls(group: &GroupModel, version: &VersionModel) -> TokenStream {
    let _ = group;
    codec::emit(version)
}
