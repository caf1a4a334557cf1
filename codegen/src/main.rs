//! `codegen show <group>/<version> [--proto | --openapi | --openapi-v2]`: prints what the
//! generator emits for one group version (the Rust by default), for reading generated code.
//!
//! `codegen export-crd <group>`: prints the group's kinds as CustomResourceDefinition manifests
//! (YAML, one document per kind) and lists on standard error what the CRDs cannot say.
//!
//! `--api-defs <dir>` selects the definitions directory. By default the group is looked up in
//! the workspace's `api-defs` (apiary's demo group, with the Kubernetes groups as extern
//! groups) and then in the Kubernetes crate's `generated/kubernetes/api-defs`.
//!
//! `codegen import-crd <crd.yaml> [--out <api-defs dir>]`: writes the definitions of a
//! CustomResourceDefinition's group into the directory (default `api-defs`), one file per
//! version, and prints to stderr what of the CRD the definitions cannot say
//! (`codegen::bridge::import`).

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str =
    "usage: codegen show <group>/<version> [--proto | --openapi | --openapi-v2] [--api-defs <dir>]
       codegen export-crd <group> [--api-defs <dir>]
  <group>/<version>: example.dev/v1, rbac.authorization.k8s.io/v1, v1 (core), or a group alone
  (default output: the generated Rust module)
       codegen import-crd <crd.yaml> [--out <api-defs dir>]
  writes the definitions of the CRD's group (default directory: api-defs) and prints what of
  the CRD they cannot say";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

/// What to print.
enum View {
    Rust,
    Proto,
    OpenApiV3,
    OpenApiV2,
}

fn run(args: &[String]) -> Result<String, String> {
    if args.first().map(String::as_str) == Some("import-crd") {
        return import_crd(&args[1..]);
    }
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let kubernetes = workspace.join("generated/kubernetes/api-defs");
    let mut api_defs = None;
    let mut view = View::Rust;
    let mut target = None;
    let mut command = None;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--proto" => view = View::Proto,
            "--openapi" => view = View::OpenApiV3,
            "--openapi-v2" => view = View::OpenApiV2,
            "--api-defs" => api_defs = Some(iter.next().map(PathBuf::from).ok_or(USAGE)?),
            "-h" | "--help" => return Ok(format!("{USAGE}\n")),
            other if command.is_none() => command = Some(other.to_string()),
            other if target.is_none() => target = Some(other.to_string()),
            other => return Err(format!("unexpected argument `{other}`\n{USAGE}")),
        }
    }
    let export = match command.as_deref() {
        Some("show") => false,
        Some("export-crd") => true,
        _ => return Err(USAGE.to_string()),
    };
    let target = target.ok_or(USAGE)?;
    let generators = match api_defs {
        Some(dir) => vec![codegen::Generator::new(dir)],
        None => vec![
            codegen::Generator::new(workspace.join("api-defs"))
                .extern_crate("kubernetes_api", &kubernetes),
            codegen::Generator::new(&kubernetes),
        ],
    };
    let mut first_error = None;
    for generator in &generators {
        let shown = if export {
            export_crd(generator, &target)
        } else {
            show(generator, &target, &view)
        };
        match shown {
            Ok(text) => return Ok(text),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or_else(|| USAGE.to_string()))
}

/// The CRDs of `group`; what they cannot say goes to standard error.
fn export_crd(generator: &codegen::Generator, group: &str) -> Result<String, String> {
    let model = generator.load().map_err(|e| e.to_string())?;
    let exported =
        codegen::bridge::export::export_group(&model, group).map_err(|e| e.to_string())?;
    for loss in &exported.losses {
        eprintln!("codegen export-crd: not exported: {loss}");
    }
    Ok(codegen::bridge::export::to_yaml(&exported.crds))
}

/// What `generator` emits for `target` in `view`.
fn show(generator: &codegen::Generator, target: &str, view: &View) -> Result<String, String> {
    let target = target.to_string();
    match view {
        View::Rust => generator.show_rust(&target).map_err(|e| e.to_string()),
        View::Proto => {
            let (_, g, v) = generator
                .group_version(&target)
                .map_err(|e| e.to_string())?;
            Ok(codegen::emit::proto::emit_proto(&g, &v))
        }
        View::OpenApiV3 | View::OpenApiV2 => {
            let (model, g, v) = generator
                .group_version(&target)
                .map_err(|e| e.to_string())?;
            let doc = if matches!(view, View::OpenApiV3) {
                codegen::emit::openapi::emit_openapi_v3(&model, &g, &v)
            } else {
                codegen::emit::openapi::emit_openapi_v2(&model, &g, &v)
            };
            serde_json::to_string_pretty(&doc)
                .map(|s| s + "\n")
                .map_err(|e| e.to_string())
        }
    }
}

/// `codegen import-crd <crd.yaml> [--out <dir>]`: writes the files, reports the losses on
/// stderr, and prints the paths written.
fn import_crd(args: &[String]) -> Result<String, String> {
    let mut input = None;
    let mut out = PathBuf::from("api-defs");
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--out" => out = iter.next().map(PathBuf::from).ok_or(USAGE)?,
            "-h" | "--help" => return Ok(format!("{USAGE}\n")),
            other if input.is_none() => input = Some(PathBuf::from(other)),
            other => return Err(format!("unexpected argument `{other}`\n{USAGE}")),
        }
    }
    let input = input.ok_or(USAGE)?;
    let text = std::fs::read_to_string(&input)
        .map_err(|e| format!("cannot read {}: {e}", input.display()))?;
    let imported = codegen::bridge::import::import_crd(&text)
        .map_err(|e| format!("{}: {e}", input.display()))?;
    let mut written = String::new();
    for (path, contents) in &imported.files {
        let path = out.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        std::fs::write(&path, contents)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        written.push_str(&format!("{}\n", path.display()));
    }
    eprint!("{}", imported.report());
    Ok(written)
}
