//! Which step a staged extension folder needs, from its files alone:
//!
//! | found | step |
//! |---|---|
//! | `go.mod`, `exec` names a missing file | `go build -trimpath -o <exec> <main package>` |
//! | `go.mod`, `exec` is `go` with `run` | `go build ./...` (the build cache only) |
//! | `package.json` with `dependencies` and a lock | the lock's tool, frozen and script-free |
//! | `requirements.txt`, or `pyproject.toml` + `uv.lock` | a venv at `.venv` |
//! | `Cargo.toml`, `exec` names a missing file | `cargo build --release --locked`, then placed |
//!
//! A missing tool, a Go older than `go.mod` asks for, or dependencies without a lock file
//! are errors here, before anything runs.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};
use serde_json::Value;

use super::options::Options;
use super::toolchain::{self, find, on_path};
use crate::catalog::manifest::Manifest;
use crate::fsx::bounded;
use crate::output::printable;

/// How one step's program is found.
#[derive(Debug, Clone)]
pub(crate) enum Program {
    /// A tool on `PATH`, resolved.
    Tool(PathBuf),
    /// A program inside the staged folder (the venv's python), relative to it.
    InTree(&'static str),
}

/// One command run in the staged folder.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub name: &'static str,
    pub program: Program,
    pub args: Vec<String>,
    pub env: Vec<(&'static str, String)>,
    /// A variable set to the scratch folder beside the tree (`CARGO_TARGET_DIR`).
    pub scratch_env: Option<&'static str>,
}

impl Step {
    fn tool(name: &'static str, program: PathBuf, args: &[&str]) -> Step {
        Step {
            name,
            program: Program::Tool(program),
            args: args.iter().map(ToString::to_string).collect(),
            env: Vec::new(),
            scratch_env: None,
        }
    }

    /// The command as a user would type it in the extension folder.
    pub(crate) fn shown(&self) -> String {
        std::iter::once(self.name.to_string())
            .chain(self.args.iter().map(|a| printable(a)))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The steps a staged folder needs, and a file to move into it once they ran.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub steps: Vec<Step>,
    /// A built program: from this path in the scratch folder to this path in the tree.
    pub place: Option<(PathBuf, PathBuf)>,
    /// What the steps make, relative to the folder.
    pub outputs: Vec<String>,
    /// Whether lifecycle scripts run.
    pub scripts: bool,
}

impl Plan {
    fn one(step: Step, output: Option<&str>) -> Plan {
        Plan {
            steps: vec![step],
            place: None,
            outputs: output.into_iter().map(str::to_string).collect(),
            scripts: false,
        }
    }

    /// The tool the last step runs (`go`, `npm`, `uv`, `cargo`; `python3` for a venv).
    pub(crate) fn tool(&self) -> &'static str {
        match self.steps.first().map(|s| s.name) {
            Some("python3") => "python3",
            _ => self.steps.last().map_or("", |s| s.name),
        }
    }

    /// Moves the built program into place.
    pub(crate) fn finish(&self, tree: &Path, scratch: &Path) -> Result<()> {
        let Some((built, to)) = &self.place else {
            return Ok(());
        };
        let from = scratch.join(built);
        let dest = tree.join(to);
        if let Some(parent) = dest.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::rename(&from, &dest).map_err(|e| {
            anyhow!(
                "cargo build made no program {} to place at {}: {e}; name the binary target after \"exec\"",
                printable(&built.display().to_string()),
                printable(&to.display().to_string())
            )
        })
    }
}

/// The step `tree` needs, or `None`.
pub(crate) fn detect(tree: &Path, manifest: &Manifest, options: &Options) -> Result<Option<Plan>> {
    if is_file(&tree.join("go.mod"))
        && let Some(plan) = go(tree, manifest, options)?
    {
        return Ok(Some(plan));
    }
    if let Some(plan) = node(tree, options)? {
        return Ok(Some(plan));
    }
    if let Some(plan) = python(tree, manifest, options)? {
        return Ok(Some(plan));
    }
    if is_file(&tree.join("Cargo.toml")) {
        return cargo(tree, manifest, options);
    }
    Ok(None)
}

fn is_file(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
}

/// `exec` as a path inside the folder (`./hello`, `bin/x`) that names nothing yet.
fn missing_exec(tree: &Path, exec: &str) -> Option<PathBuf> {
    if Path::new(exec).is_absolute() || !exec.contains('/') {
        return None;
    }
    let rel: PathBuf = Path::new(exec)
        .components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect();
    let plain = rel
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    (plain && fs::symlink_metadata(tree.join(&rel)).is_err()).then_some(rel)
}

fn go(tree: &Path, manifest: &Manifest, options: &Options) -> Result<Option<Plan>> {
    let go_run = manifest.exec == "go" && manifest.args.first().is_some_and(|a| a == "run");
    let exec = missing_exec(tree, &manifest.exec);
    if !go_run && exec.is_none() {
        return Ok(None);
    }
    let want = toolchain::go_mod_version(&tree.join("go.mod"));
    let install = format!("install Go {} or later", want.as_deref().unwrap_or("1.22"));
    let go = find("go", &install)?;
    if let Some(want) = &want {
        toolchain::check_go(want, &toolchain::go_version(&go)?)?;
    }
    let output = exec.as_ref().map(|e| e.to_string_lossy().into_owned());
    let mut step = match exec {
        Some(exec) => {
            let out = format!("./{}", exec.display());
            let package = main_package(tree, &exec)?;
            Step::tool("go", go, &["build", "-trimpath", "-o", &out, &package])
        }
        None => Step::tool("go", go, &["build", "./..."]),
    };
    step.env = vec![
        ("GOFLAGS", "-mod=readonly".to_string()),
        ("GOTOOLCHAIN", "local".to_string()),
    ];
    if options.offline {
        step.env.push(("GOPROXY", "off".to_string()));
    }
    Ok(Some(Plan::one(step, output.as_deref())))
}

/// How deep the module is searched for main packages.
const GO_DEPTH: usize = 6;

/// The main package to build: the folder itself, else `cmd/<exec's base name>`, else the
/// one main package in the module.
pub(crate) fn main_package(tree: &Path, exec: &Path) -> Result<String> {
    if is_main(tree) {
        return Ok(".".into());
    }
    if let Some(base) = exec.file_name() {
        let cmd = Path::new("cmd").join(base);
        if is_main(&tree.join(&cmd)) {
            return Ok(format!("./{}", cmd.display()));
        }
    }
    let mut found = Vec::new();
    main_packages(tree, Path::new(""), GO_DEPTH, &mut found);
    match found.len() {
        1 => Ok(format!("./{}", found[0].display())),
        0 => bail!(
            "go.mod is there, but no main package was found to build \"exec\" {} from; put package main in the extension folder or in cmd/<name>",
            printable(&exec.display().to_string())
        ),
        _ => bail!(
            "the module has more than one main package ({}); put the extension's in the folder itself or in cmd/{}",
            found
                .iter()
                .map(|p| format!("./{}", printable(&p.display().to_string())))
                .collect::<Vec<_>>()
                .join(", "),
            printable(&exec.file_name().unwrap_or_default().to_string_lossy())
        ),
    }
}

fn main_packages(root: &Path, rel: &Path, depth: usize, found: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(root.join(rel)) else {
        return;
    };
    let mut subs: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name())
        .filter(|n| {
            let n = n.to_string_lossy();
            !(n.starts_with('.') || n.starts_with('_') || n == "vendor" || n == "testdata")
        })
        .map(|n| rel.join(n))
        .collect();
    subs.sort();
    for sub in subs {
        if is_main(&root.join(&sub)) {
            found.push(sub.clone());
        }
        if depth > 0 {
            main_packages(root, &sub, depth - 1, found);
        }
    }
}

/// Whether `dir` holds a Go file (not a test) of `package main`.
fn is_main(dir: &Path) -> bool {
    let Ok(entries) = fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let name = e.file_name();
        let name = name.to_string_lossy();
        name.ends_with(".go")
            && !name.ends_with("_test.go")
            && e.file_type().is_ok_and(|t| t.is_file())
            && package_clause(&e.path()).as_deref() == Some("main")
    })
}

/// The package a Go file declares, from its head.
fn package_clause(file: &Path) -> Option<String> {
    let mut head = vec![0; 16 * 1024];
    let len = bounded::read_head(file, &mut head).ok()?;
    let text = String::from_utf8_lossy(&head[..len]);
    let mut in_block = false;
    for line in text.lines() {
        let mut line = line.trim();
        if in_block {
            let Some(end) = line.find("*/") else { continue };
            line = line[end + 2..].trim();
            in_block = false;
        }
        if line.starts_with("/*") && !line.contains("*/") {
            in_block = true;
            continue;
        }
        if let Some(name) = line.strip_prefix("package ") {
            return name.split_whitespace().next().map(str::to_string);
        }
    }
    None
}

/// Bytes of a `package.json` read.
const PACKAGE_JSON_MAX: u64 = 4 * 1024 * 1024;

/// Whether `tree` has a `package.json` whose `dependencies` are not empty.
pub(crate) fn node_dependencies(tree: &Path) -> Result<bool> {
    let path = tree.join("package.json");
    if !is_file(&path) {
        return Ok(false);
    }
    let bytes = bounded::read(&path, PACKAGE_JSON_MAX)
        .map_err(|e| anyhow!("cannot read package.json: {e}"))?;
    let package: Value = serde_json::from_slice(&bytes)
        .map_err(|e| anyhow!("package.json:{}:{}: {e}", e.line(), e.column()))?;
    Ok(package
        .get("dependencies")
        .and_then(Value::as_object)
        .is_some_and(|d| !d.is_empty()))
}

/// The install a user runs by hand in a working copy with `package.json` dependencies, by
/// its lock file as [`detect`] picks the tool (`npm install` without one).
pub(crate) fn node_command(tree: &Path) -> &'static str {
    let lock = |name: &str| is_file(&tree.join(name));
    if lock("package-lock.json") || lock("npm-shrinkwrap.json") {
        "npm ci"
    } else if lock("pnpm-lock.yaml") {
        "pnpm install --frozen-lockfile"
    } else if lock("yarn.lock") {
        "yarn install --immutable"
    } else if lock("bun.lock") || lock("bun.lockb") {
        "bun install --frozen-lockfile"
    } else {
        "npm install"
    }
}

fn node(tree: &Path, options: &Options) -> Result<Option<Plan>> {
    if !node_dependencies(tree)? {
        return Ok(None);
    }
    let scripts = options.allow_scripts;
    let offline = options.offline;
    let lock = |name: &str| is_file(&tree.join(name));
    let (name, args, lock_file): (&'static str, Vec<&str>, &str) = if lock("package-lock.json")
        || lock("npm-shrinkwrap.json")
    {
        let mut args = vec!["ci", "--omit=dev", "--no-audit", "--no-fund"];
        if !scripts {
            args.insert(1, "--ignore-scripts");
        }
        if offline {
            args.push("--offline");
        }
        let step = Step::tool("npm", find("npm", "install Node.js and npm")?, &args);
        return Ok(Some(node_plan(step, scripts)));
    } else if lock("pnpm-lock.yaml") {
        let mut args = vec!["install", "--frozen-lockfile", "--prod"];
        if !scripts {
            args.push("--ignore-scripts");
        }
        if offline {
            args.push("--offline");
        }
        ("pnpm", args, "pnpm-lock.yaml")
    } else if lock("yarn.lock") {
        let mut args = vec!["install", "--immutable"];
        if !scripts {
            args.push("--mode=skip-build");
        }
        ("yarn", args, "yarn.lock")
    } else if lock("bun.lock") || lock("bun.lockb") {
        let mut args = vec!["install", "--frozen-lockfile", "--production"];
        if !scripts {
            args.push("--ignore-scripts");
        }
        let file = if lock("bun.lock") {
            "bun.lock"
        } else {
            "bun.lockb"
        };
        ("bun", args, file)
    } else {
        bail!(
            "package.json has dependencies but no lock file (package-lock.json, npm-shrinkwrap.json, pnpm-lock.yaml, yarn.lock or bun.lock): installs would not be reproducible; commit a lock file or pass --no-prepare"
        );
    };
    let program = on_path(name).ok_or_else(|| {
        anyhow!(
            "{lock_file} needs {name}, which is not on PATH: install {name}, or pass --no-prepare"
        )
    })?;
    Ok(Some(node_plan(Step::tool(name, program, &args), scripts)))
}

fn node_plan(step: Step, scripts: bool) -> Plan {
    Plan {
        scripts,
        ..Plan::one(step, Some("node_modules"))
    }
}

fn python(tree: &Path, manifest: &Manifest, options: &Options) -> Result<Option<Plan>> {
    let requirements = is_file(&tree.join("requirements.txt"));
    let uv_lock = is_file(&tree.join("pyproject.toml")) && is_file(&tree.join("uv.lock"));
    if !requirements && !uv_lock {
        return Ok(None);
    }
    refuse_venv_script(&manifest.exec)?;
    if uv_lock {
        if let Some(uv) = on_path("uv") {
            let mut args = vec!["sync", "--locked", "--no-dev"];
            if options.offline {
                args.push("--offline");
            }
            let mut step = Step::tool("uv", uv, &args);
            step.env.push(("UV_PROJECT_ENVIRONMENT", ".venv".into()));
            return Ok(Some(Plan::one(step, Some(".venv"))));
        }
        if !requirements {
            bail!("uv.lock needs uv, which is not on PATH: install uv, or pass --no-prepare");
        }
    }
    let python = find("python3", "install Python 3 (with its venv module)")?;
    let venv = Step::tool("python3", python, &["-m", "venv", ".venv"]);
    let mut args = vec![
        "-m",
        "pip",
        "install",
        "--no-input",
        "--disable-pip-version-check",
        "-r",
        "requirements.txt",
    ];
    if options.offline {
        args.push("--no-index");
    }
    let pip = Step {
        name: ".venv/bin/python",
        program: Program::InTree(".venv/bin/python"),
        ..Step::tool("", PathBuf::new(), &args)
    };
    Ok(Some(Plan {
        steps: vec![venv, pip],
        ..Plan::one(Step::tool("", PathBuf::new(), &[]), Some(".venv"))
    }))
}

/// Scripts pip writes into `.venv/bin/` start with the venv's absolute path, which breaks
/// when the folder is moved into place.
fn refuse_venv_script(exec: &str) -> Result<()> {
    let path = Path::new(exec.strip_prefix("./").unwrap_or(exec));
    let Ok(script) = path.strip_prefix(".venv/bin") else {
        return Ok(());
    };
    let name = script.to_string_lossy();
    if name.starts_with("python") {
        return Ok(());
    }
    bail!(
        "\"exec\" {} is a script in .venv/bin/, which names the venv by its absolute path and breaks when the folder is moved into place; set \"exec\" to \".venv/bin/python\" and \"args\" to [\"-m\", \"<module>\"]",
        printable(exec)
    )
}

fn cargo(tree: &Path, manifest: &Manifest, options: &Options) -> Result<Option<Plan>> {
    let Some(exec) = missing_exec(tree, &manifest.exec) else {
        return Ok(None);
    };
    let cargo = find("cargo", "install Rust (https://rustup.rs)")?;
    let mut args = vec!["build", "--release", "--locked"];
    if options.offline {
        args.push("--offline");
    }
    let mut step = Step::tool("cargo", cargo, &args);
    step.scratch_env = Some("CARGO_TARGET_DIR");
    let base = exec.file_name().unwrap_or_default();
    let output = exec.to_string_lossy().into_owned();
    Ok(Some(Plan {
        place: Some((Path::new("release").join(base), exec)),
        ..Plan::one(step, Some(&output))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_package_clause_skips_comments() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.go");
        fs::write(
            &file,
            "// Copyright\n/*\npackage nope\n*/\n\npackage main // x\n",
        )
        .unwrap();
        assert_eq!(package_clause(&file).as_deref(), Some("main"));
    }

    #[test]
    fn a_venv_script_as_exec_is_refused_but_its_python_is_not() {
        assert!(refuse_venv_script("./.venv/bin/python3").is_ok());
        assert!(refuse_venv_script("run.py").is_ok());
        let e = refuse_venv_script(".venv/bin/my-tool")
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"args\" to [\"-m\""), "{e}");
    }

    #[test]
    fn exec_outside_the_folder_is_never_built() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            missing_exec(dir.path(), "./hello"),
            Some(PathBuf::from("hello"))
        );
        assert_eq!(missing_exec(dir.path(), "../hello"), None);
        assert_eq!(missing_exec(dir.path(), "/bin/hello"), None);
        assert_eq!(missing_exec(dir.path(), "node"), None);
    }
}
