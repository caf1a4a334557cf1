//! Generates the `meta.k8s.io/v1` structs of `apimachinery::meta` into `OUT_DIR` from the
//! shared definitions embedded in `codegen` (`codegen/api-defs/meta.k8s.io/v1.rs`), with the
//! same generator every API crate uses, so the types here and every generated crate's
//! references to them come from one file.

use std::path::PathBuf;

fn main() {
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    codegen::Generator::generate_builtin_shared_for_build_script(&out_dir);
}
