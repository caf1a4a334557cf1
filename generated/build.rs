//! Runs the apiary generator over `../api-defs` into `OUT_DIR`.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    codegen::Generator::new(manifest.join("../api-defs")).generate_for_build_script(&out_dir);
}
