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
//! ```text
//! apimachinery::include_generated!();
//! ```
//!
//! which is `include!(concat!(env!("OUT_DIR"), "/apiary_generated.rs"));`: one module per
//! group of the crate (`example_dev`, with `v1`, …), `register_all(&mut Scheme)` and
//! `sample_object`. The generated code names one crate, `apimachinery`, by its absolute path
//! (serde, serde_json and the `Object` derive too, through it), so that is the one dependency
//! it needs, besides the API crates whose types the definitions refer to; hand-written
//! admission plugins beside the definitions use `async-trait`. A `kube` feature of the crate
//! that enables `apimachinery/kube` makes every kind a kube-rs resource
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
/// fails the build; it never emits code from definitions with mistakes.
///
/// The definitions may refer to the types of the API crates this crate depends on directly
/// that publish their definitions (such as `kubernetes-api`: `core::v1::ObjectReference`); see
/// [`dependency_definitions`]. A crate that declares `links` in its manifest publishes its own
/// to its dependents in the same way: the directory (`api_defs`), the Rust name of the crate
/// (`rust_crate`: its `[lib] name`, else its package name with `_` for `-`) and the directory
/// of its `.proto` files (`proto_dir`), as `cargo::metadata`.
pub fn compile(api_defs: impl AsRef<Path>) {
    let (generator, out_dir) = build_generator(api_defs.as_ref());
    generator.generate_for_build_script(&out_dir);
}

/// Like [`compile`], but returns the error instead of failing the build script and prints no
/// `cargo::rerun-if-changed` lines (the `links` metadata is printed the same), for build
/// scripts that do more (`Error`'s `Display` is every spanned error, as [`compile`] prints).
pub fn try_compile(api_defs: impl AsRef<Path>) -> Result<Generated, Error> {
    let (generator, out_dir) = build_generator(api_defs.as_ref());
    generator.generate(&out_dir)
}

/// The generator of a build script: the crate's directory, its dependencies' definitions as
/// extern crates, and (for a crate with `links`) the metadata its dependents read.
fn build_generator(api_defs: &Path) -> (Generator, PathBuf) {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    let dir = manifest.join(api_defs);
    if std::env::var_os("CARGO_MANIFEST_LINKS").is_some() {
        let package = std::env::var("CARGO_PKG_NAME").unwrap_or_default();
        let manifest_text =
            std::fs::read_to_string(manifest.join("Cargo.toml")).unwrap_or_default();
        let rust_crate = lib_name(&manifest_text).unwrap_or_else(|| package.replace('-', "_"));
        println!("cargo::metadata=api_defs={}", dir.display());
        println!("cargo::metadata=rust_crate={rust_crate}");
        println!(
            "cargo::metadata=proto_dir={}",
            out_dir.join("proto").display()
        );
    }
    let mut generator = Generator::new(dir);
    let vars = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
    for (rust_crate, dir) in dependency_definitions(vars) {
        generator = generator.extern_crate(rust_crate, dir);
    }
    (generator, out_dir)
}

/// The `name` of a manifest's `[lib]` table (`name = "kubernetes_api"`), if it sets one: the
/// name dependents use for the crate when it differs from the package's. Cargo gives a build
/// script the package name alone, so this reads the manifest's text (one key of one table).
pub fn lib_name(manifest: &str) -> Option<String> {
    let mut in_lib = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_lib = line == "[lib]";
            continue;
        }
        if !in_lib {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim() == "name" {
            let value = value.split('#').next().unwrap_or_default().trim();
            let name = value.trim_matches(|c| c == '"' || c == '\'');
            return (!name.is_empty()).then(|| name.to_string());
        }
    }
    None
}

/// The definitions the direct dependencies of a build script's crate publish, from its
/// environment: for a dependency with `links = "<name>"` whose build script ran [`compile`],
/// cargo sets `DEP_<NAME>_API_DEFS` (the directory) and `DEP_<NAME>_RUST_CRATE` (the Rust name
/// the generated code uses for it: its library's name, which is the name a dependent uses when
/// it does not rename the dependency). Returns (Rust crate name, directory) pairs, sorted.
pub fn dependency_definitions(
    vars: impl IntoIterator<Item = (String, String)>,
) -> Vec<(String, PathBuf)> {
    let vars: std::collections::BTreeMap<String, String> = vars.into_iter().collect();
    let mut out: Vec<(String, PathBuf)> = vars
        .iter()
        .filter_map(|(key, dir)| {
            let links = key.strip_prefix("DEP_")?.strip_suffix("_API_DEFS")?;
            let rust_crate = vars.get(&format!("DEP_{links}_RUST_CRATE"))?;
            Some((rust_crate.clone(), PathBuf::from(dir)))
        })
        .collect();
    out.sort();
    out
}
