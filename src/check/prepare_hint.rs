//! Whether an extension's build or dependency install (what `install` runs in staging, see
//! [`crate::prepare`]) is needed and has not run, and the fix: `zot ext prepare <name>` for
//! an installed copy, the command to run in a working copy (a linked folder or one given as
//! a path, which zot ext never builds in). doctor, info and call say so from the files
//! ([`missing_step`]) and from what the extension wrote to stderr as it failed to start
//! ([`stderr_says_missing`]).

use std::path::Path;

use crate::catalog::manifest::Manifest;
use crate::catalog::target::Target;
use crate::output::sh_quote;

/// Where an extension is, for the fix.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Place<'a> {
    /// A copy in an extensions root that the store placed: `zot ext prepare <name>`, with
    /// `-g` when it is not the copy a name finds (shadowed by the project's).
    Installed { name: &'a str, shadowed: bool },
    /// A working copy (linked, or a folder given as a path): prepared by hand there.
    WorkingCopy,
}

/// Where `target` is: an installed copy, unless it is linked or a folder given as a path.
pub(crate) fn place_of<'a>(target: &Target, manifest: &'a Manifest) -> Place<'a> {
    if target.scope.is_none() || target.link_target.is_some() {
        return Place::WorkingCopy;
    }
    Place::Installed {
        name: &manifest.name,
        shadowed: target.shadowed,
    }
}

/// The fix for an extension at `place` whose step is needed; the generic advice when a
/// working copy's files name no step zot ext knows.
pub(crate) fn fix_or_advice(dir: &Path, manifest: &Manifest, place: Place) -> String {
    fix(dir, manifest, place).unwrap_or_else(|| {
        "install its dependencies or build it in the working copy, as its README says".into()
    })
}

/// What a start says on stderr when its dependencies were never installed.
const MISSING_ON_STDERR: [&str; 4] = [
    "ERR_MODULE_NOT_FOUND",
    "Cannot find module",
    "ModuleNotFoundError",
    "replacement directory does not exist",
];

/// The first marker of a missing dependency in `stderr`, if any.
pub(crate) fn stderr_says_missing(stderr: &str) -> Option<&'static str> {
    MISSING_ON_STDERR
        .into_iter()
        .find(|marker| stderr.contains(marker))
}

/// What the folder `dir` lacks that a step makes, when its files call for one: the program
/// `exec` names beside a `go.mod` or a `Cargo.toml` (with its `Cargo.lock`), or `node_modules/` beside a
/// `package.json` with dependencies.
pub(crate) fn missing_step(dir: &Path, manifest: &Manifest) -> Option<String> {
    let exec = manifest.exec.as_str();
    let relative = exec.contains('/') && !Path::new(exec).is_absolute();
    // Cargo's step builds `--locked`: without a Cargo.lock it cannot, and the build hint
    // says what to run instead.
    let cargo = is_file(&dir.join("Cargo.toml")) && is_file(&dir.join("Cargo.lock"));
    let built_by = if is_file(&dir.join("go.mod")) {
        Some("go.mod")
    } else {
        cargo.then_some("Cargo.toml")
    };
    if relative
        && let Some(file) = built_by
        && std::fs::symlink_metadata(dir.join(exec)).is_err()
    {
        return Some(format!(
            "the program {exec} is not built (the folder has a {file}): its build has not run"
        ));
    }
    let venv = exec
        .strip_prefix("./")
        .unwrap_or(exec)
        .strip_prefix(".venv/bin/python");
    if venv.is_some() && std::fs::symlink_metadata(dir.join(".venv")).is_err() {
        return Some(format!(
            "the virtual environment {exec} is in was not made: its step has not run"
        ));
    }
    let no_modules = std::fs::symlink_metadata(dir.join("node_modules")).is_err();
    if no_modules && crate::prepare::node_dependencies(dir).unwrap_or(false) {
        return Some(
            "package.json lists dependencies but there is no node_modules/: they were never installed"
                .into(),
        );
    }
    None
}

/// How to run the step for the extension `manifest` in `dir`, at `place`; `None` for a
/// working copy whose files name no step zot ext knows.
pub(crate) fn fix(dir: &Path, manifest: &Manifest, place: Place) -> Option<String> {
    match place {
        Place::Installed { name, shadowed } => Some(format!(
            "zot ext prepare{} {}",
            if shadowed { " -g" } else { "" },
            sh_quote(name)
        )),
        Place::WorkingCopy => in_working_copy(dir, manifest),
    }
}

/// The command a user runs in the working copy `dir` (zot ext never prepares there).
/// A linked folder is named by where its link leads.
pub(crate) fn in_working_copy(dir: &Path, manifest: &Manifest) -> Option<String> {
    let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let dir = real.as_path();
    let cd = format!("cd {}", sh_quote(&dir.to_string_lossy()));
    let exec = manifest.exec.as_str();
    let exec_missing = exec.contains('/')
        && !Path::new(exec).is_absolute()
        && std::fs::symlink_metadata(dir.join(exec)).is_err();
    if exec_missing && is_file(&dir.join("go.mod")) {
        return Some(format!("{cd} && {}", go_build(dir, exec)));
    }
    if exec_missing && is_file(&dir.join("Cargo.toml")) {
        return Some(format!("{cd} && cargo build --release"));
    }
    if crate::prepare::node_dependencies(dir).unwrap_or(false) {
        return Some(format!("{cd} && {}", crate::prepare::node_command(dir)));
    }
    let venv = exec
        .strip_prefix("./")
        .unwrap_or(exec)
        .starts_with(".venv/bin/python");
    if venv && exec_missing {
        let install = if is_file(&dir.join("requirements.txt")) {
            " && .venv/bin/python -m pip install -r requirements.txt"
        } else {
            ""
        };
        return Some(format!("{cd} && python3 -m venv .venv{install}"));
    }
    None
}

/// `go build -o <exec> <main package>`, the package found as install's step finds it (`.`
/// when there is none to find: go build then says why).
pub(crate) fn go_build(dir: &Path, exec: &str) -> String {
    let rel: std::path::PathBuf = Path::new(exec)
        .components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect();
    let package = crate::prepare::main_package(dir, &rel).unwrap_or_else(|_| ".".into());
    format!("go build -o {} {}", sh_quote(exec), sh_quote(&package))
}

fn is_file(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
}

/// Bytes of a script's head read for its `#!` line.
const SHEBANG_MAX: usize = 512;

/// When the folder `dir` has a venv (`.venv/bin/python`, what preparing makes for its
/// requirements) that `exec` does not run, because it runs another Python (the one on PATH,
/// or a script whose `#!` names one): what is wrong, and the manifest that runs the venv's.
pub(crate) fn venv_bypassed(dir: &Path, manifest: &Manifest) -> Option<(String, String)> {
    std::fs::symlink_metadata(dir.join(".venv/bin/python")).ok()?;
    let exec = manifest.exec.as_str();
    let plain = exec.strip_prefix("./").unwrap_or(exec);
    if plain.starts_with(".venv/") {
        return None;
    }
    let (how, args): (String, Vec<String>) = if is_python_name(exec) {
        (format!("the {exec} on PATH"), manifest.args.clone())
    } else {
        let line = shebang(&dir.join(plain))?;
        let script = std::iter::once(plain.to_string());
        (
            format!("its #! line, {line}"),
            script.chain(manifest.args.iter().cloned()).collect(),
        )
    };
    let quoted: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    Some((
        format!(
            "its dependencies are in .venv/, but \"exec\" {} runs another Python ({}), so they are not found or not the ones installed",
            crate::output::printable(exec),
            crate::output::printable(&how)
        ),
        format!(
            "set \"exec\" to \".venv/bin/python\" and \"args\" to [{}] in the source's extension.json, then install it again",
            crate::output::printable(&quoted.join(", "))
        ),
    ))
}

/// `python`, `python3`, `python3.11`: a Python found on PATH.
fn is_python_name(exec: &str) -> bool {
    exec.strip_prefix("python")
        .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// A script's `#!` line when it names a Python.
fn shebang(script: &Path) -> Option<String> {
    let mut head = [0; SHEBANG_MAX];
    let len = crate::fsx::bounded::read_head(script, &mut head).ok()?;
    let text = String::from_utf8_lossy(&head[..len]);
    let line = text.lines().next()?.strip_prefix("#!")?.trim().to_string();
    line.split_whitespace()
        .any(|word| word.rsplit('/').next().is_some_and(is_python_name))
        .then_some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn manifest(exec: &str) -> Manifest {
        let text = format!("{{\"name\": \"x\", \"exec\": \"{exec}\"}}");
        crate::catalog::manifest::parse(&text, Path::new("extension.json")).unwrap()
    }

    #[test]
    fn a_venv_the_manifest_does_not_run_is_found_with_the_manifest_that_does() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join(".venv/bin")).unwrap();
        fs::write(dir.path().join(".venv/bin/python"), "").unwrap();
        fs::write(
            dir.path().join("main.py"),
            "#!/usr/bin/env python3\nimport requests\n",
        )
        .unwrap();
        let (what, fix) = venv_bypassed(dir.path(), &manifest("./main.py")).unwrap();
        assert!(
            what.contains("runs another Python (its #! line, /usr/bin/env python3)"),
            "{what}"
        );
        assert!(
            fix.starts_with("set \"exec\" to \".venv/bin/python\" and \"args\" to [\"main.py\"]"),
            "{fix}"
        );
        let (what, _) = venv_bypassed(dir.path(), &manifest("python3")).unwrap();
        assert!(what.contains("(the python3 on PATH)"), "{what}");
        assert!(venv_bypassed(dir.path(), &manifest(".venv/bin/python")).is_none());
        assert!(venv_bypassed(dir.path(), &manifest("node")).is_none());
    }

    #[test]
    fn the_markers_of_a_missing_dependency_are_found() {
        assert_eq!(
            stderr_says_missing("node:internal\nError [ERR_MODULE_NOT_FOUND]: x"),
            Some("ERR_MODULE_NOT_FOUND")
        );
        assert_eq!(
            stderr_says_missing("ModuleNotFoundError: No module named 'requests'"),
            Some("ModuleNotFoundError")
        );
        assert_eq!(stderr_says_missing("panic: oops"), None);
    }

    #[test]
    fn a_go_program_under_cmd_is_built_from_there() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        fs::write(dir.join("go.mod"), "module x\n\ngo 1.22\n").unwrap();
        fs::write(dir.join("lib.go"), "package x\n").unwrap();
        fs::create_dir_all(dir.join("cmd/hello")).unwrap();
        fs::write(dir.join("cmd/hello/main.go"), "package main\n").unwrap();
        let m = manifest("./hello");
        assert!(
            missing_step(dir, &m)
                .unwrap()
                .contains("./hello is not built")
        );
        assert_eq!(
            in_working_copy(dir, &m).unwrap(),
            format!(
                "cd {} && go build -o ./hello ./cmd/hello",
                sh_quote(&dir.to_string_lossy())
            )
        );
        let installed = Place::Installed {
            name: "hello",
            shadowed: false,
        };
        assert_eq!(fix(dir, &m, installed).unwrap(), "zot ext prepare hello");
    }

    #[test]
    fn dependencies_without_node_modules_are_missing() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        fs::write(dir.join("package.json"), r#"{"dependencies": {"a": "1"}}"#).unwrap();
        fs::write(dir.join("package-lock.json"), "{}").unwrap();
        let m = manifest("node");
        assert!(missing_step(dir, &m).unwrap().contains("node_modules/"));
        assert!(in_working_copy(dir, &m).unwrap().ends_with("&& npm ci"));
        fs::create_dir(dir.join("node_modules")).unwrap();
        assert_eq!(missing_step(dir, &m), None);
    }
}
