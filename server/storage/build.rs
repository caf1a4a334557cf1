//! The build-dependency on `protoc-bin-vendored` makes cargo download the vendored protoc
//! that `tools/protoc` runs for etcd-client's build script; this crate itself needs no step.
fn main() {
    println!("cargo::rerun-if-changed=build.rs");
}
