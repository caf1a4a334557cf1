//! Generates wardle.example.com from `api-defs/` into `OUT_DIR`.

fn main() {
    codegen::compile("api-defs");
}
