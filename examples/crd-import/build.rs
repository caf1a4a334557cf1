//! Generates stable.example.com from `api-defs/` (what `codegen import-crd crd.yaml` wrote)
//! into `OUT_DIR`.

fn main() {
    codegen::compile("api-defs");
}
