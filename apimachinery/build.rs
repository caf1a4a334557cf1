//! Generates the `meta.k8s.io/v1` structs of `apimachinery::meta` from
//! `../api-defs/meta.k8s.io` (the shared definitions every group uses) into `OUT_DIR`, with the
//! same generator the `generated` crate uses for every other group.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    codegen::Generator::generate_shared_for_build_script(
        &manifest.join("../api-defs/meta.k8s.io"),
        &out_dir,
    );
}
