//! The build-script entry: [`compile`] generates an API crate's code from its own definitions
//! in one call, as `prost-build` and `tonic-build` do for `.proto` files.
//!
//! The `main` of the `build.rs` of a crate with its definitions in
//! `api-defs/<group>/<version>.rs` (and `codegen` as its build-dependency) is one line:
//!
//! ```no_run
//! codegen::compile("api-defs");
//! ```
//!
//! and in the crate's `lib.rs` (or `main.rs`, or any module):
//!
//! ```ignore
//! apimachinery::include_generated!();
//! ```
//!
//! which is `include!(concat!(env!("OUT_DIR"), "/apiary_generated.rs"));`: one module per
//! group of the crate (`example_dev`, with `v1`, …), `register_all(&mut Scheme)` and
//! `sample_object`. The crate depends on `apimachinery` (the generated code names it by its
//! absolute path) and on `serde`, `serde_json`, `prost`, `bytes`, `chrono`, `base64`,
//! `async-trait` and `thiserror`, as the generated items use them; a `kube` feature of the
//! crate that enables `apimachinery/kube` makes every kind a kube-rs resource
//! (`apimachinery::kube::KubeObject`).

use std::path::{Path, PathBuf};

use crate::{Error, Generated, Generator};

/// The name of the crate-level file [`compile`] writes into `OUT_DIR`.
pub const GENERATED_FILE: &str = "apiary_generated.rs";

/// Generates the code of the definitions directory `api_defs` (relative to the crate's
/// `CARGO_MANIFEST_DIR`, such as `"api-defs"`) into `OUT_DIR`, for a build script.
///
/// Prints `cargo::rerun-if-changed` for the directory, each group directory and each
/// definition file, so the build reruns when a definition changes. On any mistake in the
/// definitions it prints every error with its file, line, column and fix (rustc's format) and
/// fails the build; it never emits code from definitions with mistakes. A crate that declares
/// `links` also publishes the directory to its dependents' build scripts (see
/// [`Generator::generate_for_build_script`]).
pub fn compile(api_defs: impl AsRef<Path>) {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    Generator::new(manifest.join(api_defs.as_ref())).generate_for_build_script(&out_dir);
}

/// Like [`compile`], but returns the error instead of failing the build script, for build
/// scripts that do more (`Error`'s `Display` is every spanned error, as [`compile`] prints).
pub fn try_compile(api_defs: impl AsRef<Path>) -> Result<Generated, Error> {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    Generator::new(manifest.join(api_defs.as_ref())).generate(&out_dir)
}
