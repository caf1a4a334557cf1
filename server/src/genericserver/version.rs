//! The `/version` document (`version.Info`).

use serde::Serialize;

/// Build facts served at `/version`; kubectl parses `gitVersion` as a semantic version and
/// compares `major`/`minor` with its own for skew warnings.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct VersionInfo {
    /// The Kubernetes API major version, `1`.
    pub major: String,
    /// The Kubernetes API minor version, such as `33`.
    pub minor: String,
    /// A semantic version, such as `v1.33.0-apiary.0.1.0`.
    pub git_version: String,
    /// The commit built from.
    pub git_commit: String,
    /// `clean` or `dirty`.
    pub git_tree_state: String,
    /// RFC 3339 build time.
    pub build_date: String,
    /// The toolchain version (rustc), in the field clients know.
    pub go_version: String,
    /// The compiler, `rustc`.
    pub compiler: String,
    /// `os/arch`, such as `linux/amd64`.
    pub platform: String,
}

impl VersionInfo {
    /// Facts known without a build script (used by tests and libraries).
    pub fn fallback() -> Self {
        Self {
            major: "1".into(),
            minor: "33".into(),
            git_version: format!("v1.33.0-apiary.{}", env!("CARGO_PKG_VERSION")),
            git_commit: String::new(),
            git_tree_state: "clean".into(),
            build_date: "1970-01-01T00:00:00Z".into(),
            go_version: "rustc".into(),
            compiler: "rustc".into(),
            platform: format!(
                "{}/{}",
                std::env::consts::OS,
                go_arch(std::env::consts::ARCH)
            ),
        }
    }
}

impl VersionInfo {
    /// The facts of a program's build: `package_version` (its `CARGO_PKG_VERSION`) in
    /// `gitVersion` after the Kubernetes version apiary follows, and whatever of the commit,
    /// tree state, build date and rustc version its build script recorded (see
    /// [`crate::version_info!`], which passes them).
    pub fn of_build(
        package_version: &str,
        git_commit: Option<&str>,
        git_tree_state: Option<&str>,
        build_date: Option<&str>,
        rustc_version: Option<&str>,
    ) -> Self {
        let fallback = Self::fallback();
        Self {
            git_version: format!("v1.33.0-apiary.{package_version}"),
            git_commit: git_commit.unwrap_or_default().to_string(),
            git_tree_state: git_tree_state.unwrap_or("clean").to_string(),
            build_date: build_date.map_or(fallback.build_date.clone(), str::to_string),
            go_version: rustc_version.map_or(fallback.go_version.clone(), str::to_string),
            ..fallback
        }
    }
}

/// Maps Rust architecture names to Go's (`x86_64` → `amd64`).
pub fn go_arch(arch: &str) -> &str {
    match arch {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        other => other,
    }
}
