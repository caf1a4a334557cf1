//! Build metadata for `/version`: the git commit and tree state, the build date and the rustc
//! version, exported as `APIARY_*` environment variables for `env!`.

use std::process::Command;

fn output(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!text.is_empty()).then_some(text)
}

fn main() {
    let commit = output("git", &["rev-parse", "HEAD"]).unwrap_or_default();
    let tree_state = match output("git", &["status", "--porcelain", "--untracked-files=no"]) {
        Some(_) => "dirty",
        None => "clean",
    };
    let build_date = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|epoch| {
            output(
                "date",
                &["-u", "-d", &format!("@{epoch}"), "+%Y-%m-%dT%H:%M:%SZ"],
            )
        })
        .or_else(|| output("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"]))
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".to_string());
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let rustc_version = output(&rustc, &["--version"]).unwrap_or_else(|| "rustc".to_string());
    println!("cargo:rustc-env=APIARY_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=APIARY_GIT_TREE_STATE={tree_state}");
    println!("cargo:rustc-env=APIARY_BUILD_DATE={build_date}");
    println!("cargo:rustc-env=APIARY_RUSTC_VERSION={rustc_version}");
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/index");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
}
