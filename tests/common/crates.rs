//! Builds crates that live outside the workspace (the examples under `examples/`, a user's
//! crate written into a temporary directory) the way their users build them: `cargo build` in
//! their own directory, with path dependencies on this repository.
//!
//! Every such crate builds into one shared target directory, `<target>/test-crates` (under
//! `CARGO_TARGET_DIR` when set, else the repository's `target/`), with the repository's
//! `Cargo.lock` versions and `[profile.dev]` settings, so the server stack compiles once for
//! all of them. A file lock beside it keeps the test binaries' builds from running at the same
//! time. A missing `cargo` fails the test.

#![allow(dead_code)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository's root (the root package's manifest directory).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The shared target directory of the crates built outside the workspace.
pub fn target_dir() -> PathBuf {
    let base = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| {
            if p.is_relative() {
                repo_root().join(p)
            } else {
                p
            }
        })
        .unwrap_or_else(|| repo_root().join("target"));
    base.join("test-crates")
}

/// The `[profile.dev]` settings of the repository's root `Cargo.toml`, for a crate's manifest.
pub const PROFILE: &str = r#"
[profile.dev]
debug = "line-tables-only"

[profile.dev.package."*"]
debug = false

[profile.dev.package.rsa]
opt-level = 3

[profile.dev.package.num-bigint-dig]
opt-level = 3
"#;

/// Holds the build lock of the shared target directory while alive.
pub struct BuildLock(File);

/// Takes the build lock of the shared target directory (waits for another test's build).
pub fn lock() -> BuildLock {
    let dir = target_dir();
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    let path = dir.with_extension("lock");
    let file = File::create(&path).unwrap_or_else(|e| panic!("creating {}: {e}", path.display()));
    file.lock()
        .unwrap_or_else(|e| panic!("locking {}: {e}", path.display()));
    BuildLock(file)
}

/// Runs `cargo <args>` in `dir` with the shared target directory; returns its output. Panics
/// when cargo cannot be started.
pub fn cargo(dir: &Path, args: &[&str]) -> Output {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    Command::new(&cargo)
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target_dir())
        // What the crate's own configuration says, not what this repository's gave the test.
        .env_remove("PROTOC")
        .env("CARGO_TERM_COLOR", "never")
        // The crates are built once per run: incremental state would only take disk.
        .env("CARGO_INCREMENTAL", "0")
        .output()
        .unwrap_or_else(|e| panic!("running {cargo:?} {args:?} in {}: {e}", dir.display()))
}

/// `cargo build` of the crate in `dir` (under the build lock); panics with cargo's output when it
/// fails. Returns how long it took.
pub fn build(dir: &Path) -> std::time::Duration {
    let _lock = lock();
    let started = std::time::Instant::now();
    let out = cargo(dir, &["build"]);
    assert!(
        out.status.success(),
        "cargo build in {} failed:\n{}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let took = started.elapsed();
    eprintln!("cargo build in {} took {took:?}", dir.display());
    took
}

/// The path of binary `name` built into the shared target directory.
pub fn binary(name: &str) -> PathBuf {
    let path = target_dir().join("debug").join(name);
    assert!(path.exists(), "{} was not built", path.display());
    path
}

/// The stdout of a command, as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The stderr of a command, as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}
