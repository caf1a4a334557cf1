//! Generates the Kubernetes groups from this crate's `api-defs/` into `OUT_DIR`.

fn main() {
    codegen::compile("api-defs");
}
