//! The apiary generator: reads a crate's API definitions (`api-defs/<group>/<version>.rs`),
//! checks them, and emits the crate's typed Rust, `.proto` files and OpenAPI documents.
//!
//! An API crate generates its code from its `build.rs` in one call ([`compile`]), as
//! `prost-build` does for `.proto` files, and includes it with
//! `apimachinery::include_generated!()`:
//!
//! ```no_run
//! // build.rs (build-dependency: codegen), in `fn main()`:
//! codegen::compile("api-defs");
//! ```
//!
//! ```text
//! // src/lib.rs (dependencies: apimachinery, and kubernetes-api to use its types)
//! apimachinery::include_generated!();
//!
//! pub fn scheme() -> apimachinery::Scheme {
//!     let mut scheme = apimachinery::Scheme::new();
//!     kubernetes_api::register_all(&mut scheme); // the Kubernetes groups, if served too
//!     register_all(&mut scheme); // this crate's groups
//!     scheme
//! }
//! ```
//!
//! A mistake in a definition fails the build with every error, each with its file, line,
//! column and fix. The definitions may use the structs of the groups of a dependency that
//! publishes its definitions, as `core::v1::ObjectReference` ([`build`], `api-defs/README.md`).
//!
//! Pipeline: [`parse`] (files → [`model`], with `syn`; other crates' definitions become extern
//! groups, [`parse::externs`]) → [`check`] (whole-model checks, every error at once as a
//! [`diagnostics::Diagnostic`] naming file, line, column and the fix) → [`emit`] (Rust via
//! `quote` + `prettyplease`, `.proto`, OpenAPI). [`Generator`] drives it for build scripts and
//! the `codegen show` command. [`bridge::import`] turns a CustomResourceDefinition into the
//! definitions of its group (`codegen import-crd`).

pub mod bridge;
pub mod build;
pub mod check;
pub mod convert;
pub mod diagnostics;
pub mod emit;
pub mod model;
pub mod parse;

use std::path::{Path, PathBuf};

pub use build::{compile, try_compile};
pub use diagnostics::{Diagnostic, Diagnostics};
pub use model::{ApiModel, GroupModel, VersionModel};

/// Why generation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The definitions could not be read.
    #[error(transparent)]
    Read(#[from] parse::ReadError),
    /// The definitions have mistakes; every one is listed.
    #[error("{0}")]
    Definitions(Diagnostics),
    /// An output file could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// protoc rejected the emitted `.proto` files (a generator bug, not a definition mistake).
    #[error(transparent)]
    Protoc(#[from] emit::proto::ProtocError),
    /// `show` was asked for a group version that does not exist.
    #[error("no definition for {0}; known group versions: {1}")]
    UnknownGroupVersion(String, String),
}

/// What [`Generator::generate`] produced.
#[derive(Debug, Clone)]
pub struct Generated {
    /// Every definition file read (for `cargo::rerun-if-changed`).
    pub inputs: Vec<PathBuf>,
    /// Every file written, relative to the output directory.
    pub outputs: Vec<String>,
}

/// Drives parsing, checking and emission for one definitions directory.
#[derive(Debug, Clone)]
pub struct Generator {
    api_defs: PathBuf,
    externs: Vec<(String, PathBuf)>,
}

impl Generator {
    /// Creates a generator over a definitions directory (such as `../api-defs`).
    pub fn new(api_defs: impl Into<PathBuf>) -> Self {
        Self {
            api_defs: api_defs.into(),
            externs: Vec::new(),
        }
    }

    /// Adds another crate's definitions directory as extern groups: the definitions may refer
    /// to its structs as `<group module>::<version>::<Type>` (`core::v1::ObjectReference`),
    /// and the generated code names them through the crate's Rust name `rust_crate`
    /// (`kubernetes_api`). Its groups are parsed and checked, and not emitted (except the
    /// `.proto` files of the versions referred to, which the emitted ones import).
    /// [`compile`] adds every direct dependency that publishes its definitions.
    pub fn extern_crate(
        mut self,
        rust_crate: impl Into<String>,
        api_defs: impl Into<PathBuf>,
    ) -> Self {
        self.externs.push((rust_crate.into(), api_defs.into()));
        self
    }

    /// Parses and checks the definitions, with the extern crates' groups linked.
    pub fn load(&self) -> Result<ApiModel, Error> {
        let (mut model, mut diags) = parse::parse_api_dir(&self.api_defs)?;
        for (rust_crate, dir) in &self.externs {
            let krate = parse::parse_extern(&model, rust_crate, dir, &mut diags)?;
            model.externs.push(krate);
        }
        parse::link_externs(&mut model, &mut diags);
        check::check(&model, &mut diags);
        diags.into_result().map_err(Error::Definitions)?;
        Ok(model)
    }

    /// Every definition file under the directory and the extern crates' directories.
    pub fn inputs(&self) -> Result<Vec<PathBuf>, Error> {
        let mut out = Vec::new();
        for dir in std::iter::once(&self.api_defs).chain(self.externs.iter().map(|(_, d)| d)) {
            out.extend(
                parse::discover(dir)?
                    .into_iter()
                    .flat_map(|(_, files)| files),
            );
        }
        Ok(out)
    }

    /// Parses, checks and emits into `out_dir`. Files whose contents did not change are not
    /// rewritten, so their timestamps stay put.
    pub fn generate(&self, out_dir: &Path) -> Result<Generated, Error> {
        let inputs = self.inputs()?;
        let model = self.load()?;
        let output = emit::emit(&model);
        let mut outputs = Vec::new();
        for file in &output.files {
            let path = out_dir.join(&file.path);
            let write_err = |source| Error::Write {
                path: path.clone(),
                source,
            };
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(write_err)?;
            }
            let unchanged = std::fs::read_to_string(&path).is_ok_and(|old| old == file.contents);
            if !unchanged {
                std::fs::write(&path, &file.contents).map_err(write_err)?;
            }
            outputs.push(file.path.clone());
        }
        // The top-level `.proto` files (one per group version) must compile with protoc.
        let protos: Vec<PathBuf> = output
            .files
            .iter()
            .filter_map(|f| f.path.strip_prefix("proto/"))
            .filter(|p| !p.contains('/'))
            .map(PathBuf::from)
            .collect();
        if !protos.is_empty() {
            let proto_dir = out_dir.join("proto");
            emit::proto::check_with_protoc(
                &proto_dir,
                &protos,
                &out_dir.join("descriptor_set.pb"),
            )?;
        }
        Ok(Generated { inputs, outputs })
    }

    /// Runs [`Generator::generate`] for a build script: prints `cargo::rerun-if-changed` for
    /// the directory, every group directory and every definition file, and on failure prints
    /// every error and exits the build script with status 1.
    pub fn generate_for_build_script(&self, out_dir: &Path) {
        // The generated kinds implement `apimachinery::kube::KubeKind` under the crate's own
        // `kube` feature; a crate without one gets no `unexpected_cfgs` warning for it.
        println!("cargo::rustc-check-cfg=cfg(feature, values(\"kube\"))");
        for api_defs in std::iter::once(&self.api_defs).chain(self.externs.iter().map(|(_, d)| d)) {
            println!("cargo::rerun-if-changed={}", api_defs.display());
            if let Ok(groups) = parse::discover(api_defs) {
                for (dir, files) in groups {
                    println!("cargo::rerun-if-changed={}", dir.display());
                    for f in files {
                        println!("cargo::rerun-if-changed={}", f.display());
                    }
                }
            }
        }
        if let Err(e) = self.generate(out_dir) {
            fail_build_script(&e);
        }
    }

    /// The generated Rust of one group version (`example.dev/v1`, `core/v1` or `v1`), or of
    /// a whole group when only the group is given.
    pub fn show_rust(&self, group_version: &str) -> Result<String, Error> {
        let model = self.load()?;
        let (group, version) = split_group_version(group_version);
        let known = || {
            model
                .groups
                .iter()
                .flat_map(|g| g.versions.iter().map(|v| v.api_version()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let g = model
            .group(&group)
            .ok_or_else(|| Error::UnknownGroupVersion(group_version.to_string(), known()))?;
        if let Some(shared) = g.versions.iter().find(|v| v.shared) {
            // `apimachinery::meta`'s generated items.
            return Ok(emit::rust::shared_file(g, shared));
        }
        match version {
            None => Ok(emit::rust::group_file(g)),
            Some(v) => {
                let vm = g
                    .version(&v)
                    .or(g.internal.as_ref().filter(|i| i.version == v))
                    .ok_or_else(|| {
                        Error::UnknownGroupVersion(group_version.to_string(), known())
                    })?;
                Ok(emit::rust::version_file(g, vm))
            }
        }
    }

    /// The model with one group version picked out, for the proto and OpenAPI views of
    /// `codegen show`.
    pub fn group_version(
        &self,
        group_version: &str,
    ) -> Result<(ApiModel, GroupModel, VersionModel), Error> {
        let model = self.load()?;
        let (group, version) = split_group_version(group_version);
        let not_found = || Error::UnknownGroupVersion(group_version.to_string(), String::new());
        let g = model.group(&group).ok_or_else(not_found)?.clone();
        let v = g
            .version(version.as_deref().unwrap_or("v1"))
            .ok_or_else(not_found)?
            .clone();
        Ok((model, g, v))
    }

    /// Generates the Rust of the shared version (`#![shared]`, `meta.k8s.io/v1`) from the one
    /// group directory `group_dir` into `out_dir/<group module>_<version>.rs` (for
    /// apimachinery's build script, which includes it into `apimachinery::meta`), and returns
    /// the file's path. Only that directory is read, so other definitions do not rebuild
    /// apimachinery. The file is not rewritten when its contents did not change.
    pub fn generate_shared(group_dir: &Path, out_dir: &Path) -> Result<PathBuf, Error> {
        let mut sources = Vec::new();
        let files = parse::discover_files(group_dir)?;
        for f in files {
            let text = std::fs::read_to_string(&f).map_err(|source| parse::ReadError::Io {
                path: f.clone(),
                source,
            })?;
            sources.push((f, text));
        }
        Self::generate_shared_sources(group_dir, &sources, out_dir)
    }

    /// Generates the Rust of the shared version this generator was built with
    /// ([`parse::BUILTIN_SHARED`], `meta.k8s.io/v1`) into `out_dir/meta_k8s_io_v1.rs`, as
    /// [`Generator::generate_shared`] does from a directory, and returns the file's path.
    /// apimachinery's build script uses it, so apimachinery's `meta` types and every generated
    /// crate's references to them come from the same embedded file.
    pub fn generate_builtin_shared(out_dir: &Path) -> Result<PathBuf, Error> {
        let (name, file, text) = parse::BUILTIN_SHARED;
        let group_dir = PathBuf::from(name);
        let sources = [(group_dir.join(file), text.to_string())];
        Self::generate_shared_sources(&group_dir, &sources, out_dir)
    }

    /// Runs [`Generator::generate_builtin_shared`] for a build script: on failure prints every
    /// error and exits the build script with status 1. The definitions are compiled into this
    /// crate, so there is nothing to watch.
    pub fn generate_builtin_shared_for_build_script(out_dir: &Path) {
        if let Err(e) = Self::generate_builtin_shared(out_dir) {
            fail_build_script(&e);
        }
    }

    /// [`Generator::generate_shared`] over sources already read.
    fn generate_shared_sources(
        group_dir: &Path,
        sources: &[(PathBuf, String)],
        out_dir: &Path,
    ) -> Result<PathBuf, Error> {
        let mut diags = Diagnostics::default();
        let mut model = ApiModel::default();
        model
            .groups
            .extend(parse::parse_group(group_dir, sources, &mut diags));
        check::check(&model, &mut diags);
        let (group, version) = model
            .groups
            .iter()
            .find_map(|g| g.versions.iter().find(|v| v.shared).map(|v| (g, v)))
            .ok_or_else(|| {
                diags.push(
                    model::Loc {
                        file: group_dir.to_path_buf(),
                        line: 1,
                        column: 1,
                    },
                    "no version file here is `#![shared]`",
                );
                Error::Definitions(diags.clone())
            })?;
        diags.into_result().map_err(Error::Definitions)?;
        let path = out_dir.join(format!("{}_{}.rs", group.module_name(), version.version));
        let contents = emit::rust::shared_file(group, version);
        let unchanged = std::fs::read_to_string(&path).is_ok_and(|old| old == contents);
        if !unchanged {
            std::fs::write(&path, contents).map_err(|source| Error::Write {
                path: path.clone(),
                source,
            })?;
        }
        Ok(path)
    }

    /// Runs [`Generator::generate_shared`] for a build script: prints
    /// `cargo::rerun-if-changed` for the directory and its files, and on failure prints every
    /// error and exits the build script with status 1.
    pub fn generate_shared_for_build_script(group_dir: &Path, out_dir: &Path) {
        println!("cargo::rerun-if-changed={}", group_dir.display());
        if let Ok(files) = parse::discover_files(group_dir) {
            for f in files {
                println!("cargo::rerun-if-changed={}", f.display());
            }
        }
        if let Err(e) = Self::generate_shared(group_dir, out_dir) {
            fail_build_script(&e);
        }
    }
}

/// Prints every line of a build script's error (to stderr, which cargo shows when the build
/// script fails, and as `cargo::warning`s) and exits the build script with status 1.
fn fail_build_script(e: &Error) -> ! {
    eprintln!("{e}");
    for line in e.to_string().lines() {
        println!("cargo::warning={line}");
    }
    std::process::exit(1);
}

/// Splits `example.dev/v1` into (`example.dev`, `v1`); `v1` and `core/v1` name the core group.
fn split_group_version(s: &str) -> (String, Option<String>) {
    match s.split_once('/') {
        Some(("core", v)) => (String::new(), Some(v.to_string())),
        Some((g, v)) => (g.to_string(), Some(v.to_string())),
        None if s.starts_with('v') && s[1..].starts_with(|c: char| c.is_ascii_digit()) => {
            (String::new(), Some(s.to_string()))
        }
        None if s == "core" => (String::new(), None),
        None => (s.to_string(), None),
    }
}
