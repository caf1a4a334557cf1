//! Generates apiary's own demo group (`example.dev`, the Widgets) from the binary's
//! definitions, `../api-defs`, into `OUT_DIR`.

fn main() {
    codegen::compile("../api-defs");
}
