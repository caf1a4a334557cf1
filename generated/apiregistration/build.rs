//! Generates the apiregistration.k8s.io group from this crate's `api-defs/` into `OUT_DIR`.

fn main() {
    codegen::compile("api-defs");
}
