//! The repository's definitions in one directory, as the generator read them before they were
//! split between crates: the Kubernetes groups (`generated/kubernetes/api-defs`), apiary's demo
//! group (`api-defs`) and the shared `meta.k8s.io` (`codegen/api-defs`); and the golden-file
//! comparison.

// Each test binary uses some of these helpers.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A directory (one per test binary, made once per run) with every group directory of the
/// repository's definitions.
pub fn all_api_defs() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(concat!("all-api-defs-", env!("CARGO_CRATE_NAME")));
        let _ = std::fs::remove_dir_all(&dir);
        for src in [
            manifest.join("api-defs"),
            manifest.join("../api-defs"),
            manifest.join("../generated/kubernetes/api-defs"),
        ] {
            copy_groups(&src, &dir);
        }
        dir
    })
    .clone()
}

/// Copies every group directory (with its `.rs` files) of `src` into `dst`.
pub fn copy_groups(src: &Path, dst: &Path) {
    for group in std::fs::read_dir(src).expect("read definitions") {
        let group = group.expect("entry").path();
        if !group.is_dir() {
            continue;
        }
        let to = dst.join(group.file_name().expect("name"));
        std::fs::create_dir_all(&to).expect("mkdir");
        for file in std::fs::read_dir(&group).expect("read group") {
            let file = file.expect("entry").path();
            if file.is_file() {
                std::fs::copy(&file, to.join(file.file_name().expect("name"))).expect("copy");
            }
        }
    }
}

/// Compares `actual` with the golden file, or rewrites it under `UPDATE_GOLDEN=1`.
pub fn check_golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).expect("write golden file");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run with UPDATE_GOLDEN=1 to create it",
            path.display()
        )
    });
    if expected != actual {
        let line = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .map_or_else(
                || "the files differ in length".to_string(),
                |i| {
                    format!(
                        "first difference at line {}:\n  golden: {}\n  actual: {}",
                        i + 1,
                        expected.lines().nth(i).unwrap_or(""),
                        actual.lines().nth(i).unwrap_or("")
                    )
                },
            );
        panic!(
            "{} is out of date ({line}); run with UPDATE_GOLDEN=1 and review the diff",
            path.display()
        );
    }
}
