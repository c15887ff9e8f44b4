//! Python: `requirements.txt` (or `pyproject.toml` with `uv.lock` and uv on PATH) gets a
//! venv at `.venv` with the requirements installed as wheels, which runs no code of the
//! packages (a build backend would: an sdist's `setup.py`, a local folder, `-e .`).
//!
//! The interpreter is the `python3` on PATH, started by its path with `-I` (isolated: no
//! `PYTHON*` variables, no user site, and neither the working folder nor a script's folder
//! on `sys.path`, so a `venv.py` or `pip/` in the extension is not what runs). A `.venv`
//! shipped in the source is refused: its `.pth` files and `bin/python` would run. Each line
//! of the requirements (and of the files they name) is checked first: what pip would build
//! from source is refused with the fix, and with `--offline` so is what needs the network.
//! With `--allow-scripts --no-sandbox` pip and uv may build from source as before (a build
//! backend fetches its own build dependencies, so it cannot run without the network).

use std::path::{Component, Path, PathBuf};

use anyhow::{Result, bail};

use super::files::is_file;
use super::options::Options;
use super::step::{Phase, Plan, Program, Step};
use super::toolchain::{find, on_path};
use crate::catalog::manifest::Manifest;
use crate::fsx::bounded;
use crate::output::printable;

/// Bytes of a requirements file read.
const REQUIREMENTS_MAX: u64 = 4 * 1024 * 1024;

/// How deep `-r` and `-c` files may name further files.
const NESTING: usize = 8;

/// The plan for a Python extension at `tree`, or `None` when it names no requirements.
pub(super) fn plan(tree: &Path, manifest: &Manifest, options: &Options) -> Result<Option<Plan>> {
    let requirements = is_file(&tree.join("requirements.txt"));
    let uv_lock = is_file(&tree.join("pyproject.toml")) && is_file(&tree.join("uv.lock"));
    if !requirements && !uv_lock {
        return venv_alone(tree, manifest);
    }
    refuse_venv_script(&manifest.exec)?;
    refuse_shipped_venv(tree)?;
    let builds = options.allow_scripts && options.no_sandbox;
    if uv_lock {
        if let Some(uv) = on_path("uv") {
            return Ok(Some(Plan::one(uv_sync(uv, builds, options), Some(".venv"))));
        }
        if !requirements {
            bail!("uv.lock needs uv, which is not on PATH: install uv, or pass --no-prepare");
        }
    }
    if !builds {
        check_requirements(tree, Path::new("requirements.txt"), options.offline, 0)?;
    }
    let mut pip = Step {
        name: ".venv/bin/python",
        program: Program::InTree(".venv/bin/python"),
        ..Step::tool("", PathBuf::new(), &["-I", "-m", "pip", "install"])
    };
    if !builds {
        pip = pip.arg("--only-binary").arg(":all:");
    }
    pip = pip
        .arg("--no-input")
        .arg("--disable-pip-version-check")
        .arg("-r")
        .arg("requirements.txt");
    if options.offline {
        pip = pip.arg("--no-index");
    }
    if builds {
        pip.phase = Phase::Build;
    }
    Ok(Some(Plan {
        scripts: builds,
        ..Plan::of(vec![venv_step()?, pip], Some(".venv"))
    }))
}

/// An `exec` that is the venv's python (`.venv/bin/python`) with no requirements to
/// install: the venv alone, when the source has none.
fn venv_alone(tree: &Path, manifest: &Manifest) -> Result<Option<Plan>> {
    let exec = manifest.exec.strip_prefix("./").unwrap_or(&manifest.exec);
    let runs_venv = Path::new(exec)
        .strip_prefix(".venv/bin")
        .is_ok_and(|p| p.to_string_lossy().starts_with("python"));
    if !runs_venv || std::fs::symlink_metadata(tree.join(".venv")).is_ok() {
        return Ok(None);
    }
    Ok(Some(Plan::of(vec![venv_step()?], Some(".venv"))))
}

/// `python3 -I -m venv .venv`, with the `python3` on PATH.
fn venv_step() -> Result<Step> {
    find("python3", "install Python 3 (with its venv module)")
        .map(|python| Step::tool("python3", python, &["-I", "-m", "venv", ".venv"]))
}

/// `uv sync` of the locked environment into `.venv`: without building anything (neither
/// the project itself nor an sdist) and without uv's configuration files from the
/// extension, unless `builds`.
fn uv_sync(uv: PathBuf, builds: bool, options: &Options) -> Step {
    let mut step = Step::tool("uv", uv, &["sync", "--locked", "--no-dev"]);
    if !builds {
        for flag in [
            "--no-install-project",
            "--no-editable",
            "--no-build",
            "--no-config",
        ] {
            step = step.arg(flag);
        }
        if let Some(python) = on_path("python3") {
            step = step
                .arg("--python")
                .arg(&python.to_string_lossy())
                .arg("--no-python-downloads");
        }
    }
    if options.offline {
        step = step.arg("--offline");
    }
    if builds {
        step.phase = Phase::Build;
    }
    step.env("UV_PROJECT_ENVIRONMENT", ".venv")
}

/// Scripts pip writes into `.venv/bin/` start with the venv's absolute path, which breaks
/// when the folder is moved into place.
pub(super) fn refuse_venv_script(exec: &str) -> Result<()> {
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

/// A `.venv` that came with the source survives the venv's creation: its `.pth` files run
/// at every start of its interpreter, and its `bin/python` is what pip would run.
fn refuse_shipped_venv(tree: &Path) -> Result<()> {
    if std::fs::symlink_metadata(tree.join(".venv")).is_ok() {
        bail!(
            "the extension ships a .venv/, which preparing would run (its .pth files and bin/python are code); delete .venv from the source, or pass --no-prepare to place the copy as fetched"
        );
    }
    Ok(())
}

/// Checks each line of the requirements file `file` (relative to `tree`), and of the files
/// it names with `-r` and `-c`.
fn check_requirements(tree: &Path, file: &Path, offline: bool, depth: usize) -> Result<()> {
    let shown = printable(&file.display().to_string());
    if depth > NESTING {
        bail!("{shown}: requirements files name each other more than {NESTING} deep");
    }
    let bytes = bounded::read(&tree.join(file), REQUIREMENTS_MAX)
        .map_err(|e| anyhow::anyhow!("cannot read {shown}: {e}"))?;
    let text = String::from_utf8_lossy(&bytes).replace("\\\n", " ");
    for (number, line) in text.lines().enumerate() {
        let line = strip_comment(line);
        if line.is_empty() {
            continue;
        }
        let at = |why: String| anyhow::anyhow!("{shown}:{}: {}: {why}", number + 1, quoted(line));
        match judge(line, offline) {
            Verdict::Fine => {}
            Verdict::Nested(name) => {
                let nested = inside(file.parent().unwrap_or(Path::new("")), &name)
                    .ok_or_else(|| at("names a file outside the extension".into()))?;
                check_requirements(tree, &nested, offline, depth + 1)?;
            }
            Verdict::Builds(what) => {
                return Err(at(format!(
                    "{what}, which runs its build backend (its code) at install; preparing installs wheels only: use a wheel, or pass --allow-scripts --no-sandbox to build it without the seal (a build fetches its own build dependencies), or --no-prepare"
                )));
            }
            Verdict::Online(what) => {
                return Err(at(format!(
                    "{what}, which --offline cannot do: run without --offline"
                )));
            }
            Verdict::Outside => {
                return Err(at("names a file outside the extension".into()));
            }
        }
    }
    Ok(())
}

/// What one requirements line asks of pip.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    Fine,
    /// `-r`/`-c`: another file to check.
    Nested(String),
    /// Builds from source.
    Builds(&'static str),
    /// Needs the network.
    Online(&'static str),
    /// A local path out of the folder.
    Outside,
}

fn judge(line: &str, offline: bool) -> Verdict {
    let (option, value) = split_option(line);
    match option {
        Some("-r" | "--requirement" | "-c" | "--constraint") => {
            return Verdict::Nested(value.to_string());
        }
        Some("-e" | "--editable") => {
            return Verdict::Builds("an editable install builds the package");
        }
        Some("--no-binary") => return Verdict::Builds("--no-binary has pip build from source"),
        Some("-i" | "--index-url" | "--extra-index-url" | "-f" | "--find-links")
            if offline && is_url(value) =>
        {
            return Verdict::Online("an index or link page is fetched from the network");
        }
        Some(_) => return Verdict::Fine,
        None => {}
    }
    let target = line.split_once(" @ ").map_or(line, |(_, url)| url.trim());
    let target = target.split(';').next().unwrap_or("").trim();
    let lower = target.to_ascii_lowercase();
    if ["git+", "hg+", "svn+", "bzr+"]
        .iter()
        .any(|p| lower.starts_with(p))
    {
        return Verdict::Builds("a version-control URL is built from its source");
    }
    let local = lower.starts_with("file:")
        || target.starts_with('.')
        || target.starts_with('/')
        || target.contains('/');
    if is_url(target) && !lower.starts_with("file:") {
        if offline {
            return Verdict::Online("a URL is fetched from the network");
        }
        return if is_wheel(target) {
            Verdict::Fine
        } else {
            Verdict::Builds("a source archive is built")
        };
    }
    if local {
        let path = target
            .strip_prefix("file://")
            .or_else(|| target.strip_prefix("file:"))
            .unwrap_or(target);
        if inside(Path::new(""), path).is_none() {
            return Verdict::Outside;
        }
        return if is_wheel(target) {
            Verdict::Fine
        } else {
            Verdict::Builds("a local folder or source archive is built")
        };
    }
    Verdict::Fine
}

/// Whether a requirement names a wheel file (`.whl`, in any case).
fn is_wheel(target: &str) -> bool {
    Path::new(target)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("whl"))
}

/// `--opt value`, `--opt=value` or `-x value` / `-xvalue`: the option and its value.
fn split_option(line: &str) -> (Option<&str>, &str) {
    if !line.starts_with('-') {
        return (None, "");
    }
    if let Some((option, value)) = line.split_once('=')
        && option.starts_with("--")
        && !option.contains(' ')
    {
        return (Some(option), value.trim());
    }
    match line.split_once(char::is_whitespace) {
        Some((option, value)) => (Some(option), value.trim()),
        None if line.len() > 2 && !line.starts_with("--") => {
            let (option, value) = line.split_at(2);
            (Some(option), value)
        }
        None => (Some(line), ""),
    }
}

fn is_url(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    ["http://", "https://", "ftp://"]
        .iter()
        .any(|p| lower.starts_with(p))
}

/// A line without its comment (`#` at its start or after whitespace) and outer spaces.
fn strip_comment(line: &str) -> &str {
    let cut = line
        .char_indices()
        .find(|&(i, c)| c == '#' && (i == 0 || line[..i].ends_with(char::is_whitespace)))
        .map_or(line.len(), |(i, _)| i);
    line[..cut].trim()
}

fn quoted(line: &str) -> String {
    format!("\"{}\"", printable(line))
}

/// `path` (relative to `base` in the folder) as a path in the folder, when it stays in it.
fn inside(base: &Path, path: &str) -> Option<PathBuf> {
    let path = Path::new(path);
    if path.is_absolute() {
        return None;
    }
    let mut parts: Vec<Component> = base.components().collect();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::Normal(_) => parts.push(part),
            _ => return None,
        }
    }
    Some(parts.iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn lines_that_build_from_source_are_told_apart() {
        for line in [
            "-e .",
            "--editable=./pkg",
            "./dep",
            "dep @ file:./dep",
            "pkg @ git+https://example.com/pkg.git",
            "https://example.com/pkg-1.0.tar.gz",
            "--no-binary :all:",
            "./vendor/pkg-1.0.tar.gz",
        ] {
            assert!(matches!(judge(line, false), Verdict::Builds(_)), "{line}");
        }
        for line in [
            "requests==2.31.0",
            "requests[socks]>=2 ; python_version >= '3.8'",
            "./vendor/tinydep-1.0-py3-none-any.whl",
            "--hash=sha256:abc",
            "-i https://pypi.example/simple",
            "--only-binary :all:",
            "https://example.com/pkg-1.0-py3-none-any.whl",
        ] {
            assert_eq!(judge(line, false), Verdict::Fine, "{line}");
        }
    }

    #[test]
    fn offline_refuses_what_needs_the_network() {
        for line in [
            "--find-links https://example.com/wheels/",
            "-i https://pypi.example/simple",
            "--extra-index-url=https://x/simple",
            "https://example.com/pkg-1.0-py3-none-any.whl",
        ] {
            assert!(matches!(judge(line, true), Verdict::Online(_)), "{line}");
        }
        assert_eq!(judge("--find-links ./wheels", true), Verdict::Fine);
    }

    #[test]
    fn nested_files_and_paths_outside_are_found() {
        assert_eq!(
            judge("-r dev.txt", false),
            Verdict::Nested("dev.txt".into())
        );
        assert_eq!(
            judge("-cconstraints.txt", false),
            Verdict::Nested("constraints.txt".into())
        );
        assert_eq!(
            judge("../../x-1.0-py3-none-any.whl", false),
            Verdict::Outside
        );
        assert_eq!(
            inside(Path::new("a"), "../b.txt"),
            Some(PathBuf::from("b.txt"))
        );
        assert_eq!(inside(Path::new(""), "../b.txt"), None);
    }

    #[test]
    fn comments_are_cut_only_where_pip_cuts_them() {
        assert_eq!(strip_comment("pkg==1 # pinned"), "pkg==1");
        assert_eq!(strip_comment("# all of it"), "");
        assert_eq!(
            strip_comment("pkg @ https://x/y#egg=pkg"),
            "pkg @ https://x/y#egg=pkg"
        );
    }
}
