//! The advice for a compiled extension whose program has not been built yet: the command
//! that builds it, worked out from the files around its folder so that it runs exactly as
//! printed in sh (paths quoted). doctor, call, info and new all print it from [`build_hint`].
//!
//! An installed copy whose program the install's step builds (a `go.mod` or `Cargo.toml`
//! beside a missing `exec`) gets `zot ext prepare <name>` instead ([`prepare_hint`]).
//!
//! Go: `go build` needs the module the package belongs to. With a go.mod in the extension
//! folder the build runs there, of the main package the install's step would build (the
//! folder, else `cmd/<exec's base name>`, else the one main package); with one in a folder above (an example inside a larger
//! module, as zot's own examples are) it runs from that module's root, and an installed
//! copy, which has no go.mod, cannot be built at all until the extension gets its own; with
//! none, the command makes one first. Only the folders above the extension's path as given
//! are looked at (a bounded number, links are not followed), and of a go.mod only the head
//! is read, for its `module` line.
//!
//! Rust: `cargo build --release` when the folder has a Cargo.toml; otherwise the hint says
//! there is none instead of guessing.

use std::path::{Path, PathBuf};

use super::prepare_hint::{self, Place, missing_step};
use crate::catalog::manifest::Manifest;
use crate::fsx::bounded;
use crate::host::{self, ExecError};
use crate::output::sh_quote;

/// How many folders above the extension are searched for the go.mod it belongs to.
const MODULE_LEVELS: usize = 8;

/// Bytes of a go.mod read to find its `module` line.
const GO_MOD_HEAD: usize = 4096;

/// A go.mod found in a folder above the extension.
#[derive(Debug, PartialEq, Eq)]
struct Module {
    root: PathBuf,
    /// The module path from its `module` line, when it could be read.
    path: Option<String>,
}

/// The program zot would start for `manifest` in `dir`, or why it cannot; for a compiled
/// extension not built yet the fix is the command that builds it. Every command that
/// resolves an extension's program (doctor, call, info) goes through here.
/// An installed copy (at `place`) whose program its install's step builds gets that step
/// as the fix (`zot ext prepare <name>`), never a command to run inside the store.
pub(crate) fn resolve(dir: &Path, manifest: &Manifest, place: Place) -> Result<PathBuf, ExecError> {
    let path_var = std::env::var_os("PATH");
    host::resolve(dir, &manifest.exec, path_var.as_deref()).map_err(|e| {
        if let (Place::Installed { name, .. }, true) = (place, e.not_executable) {
            // The bit comes from the source: a chmod in the store is undone by the next
            // update or --force.
            let path = dir.join(&manifest.exec);
            return ExecError {
                fix: format!(
                    "set its executable bit in the source (chmod +x, or git update-index --chmod=+x and a commit), then zot ext update {} (a copy placed by hand: chmod +x {})",
                    sh_quote(name),
                    sh_quote(&path.to_string_lossy())
                ),
                ..e
            };
        }
        if !e.missing {
            return e;
        }
        if let (Place::Installed { .. }, Some(what)) = (place, missing_step(dir, manifest))
            && let Some(fix) = prepare_hint::fix(dir, manifest, place)
        {
            return ExecError {
                fix: format!("{what}; run it: {fix}"),
                ..e
            };
        }
        let language = manifest.language.as_deref();
        match build_hint(dir, language, &manifest.exec, &manifest.name) {
            Some(fix) => ExecError { fix, ..e },
            None => e,
        }
    })
}

/// How to build the program `exec` (relative to `dir`) of the extension `name` written in
/// `language`; `None` for languages that are not compiled.
pub(crate) fn build_hint(
    dir: &Path,
    language: Option<&str>,
    exec: &str,
    name: &str,
) -> Option<String> {
    if let Some(hint) = venv_hint(dir, exec) {
        return Some(hint);
    }
    match language? {
        "go" => Some(go_hint(dir, exec, name)),
        "rust" => Some(rust_hint(dir, exec)),
        _ => None,
    }
}

/// For a Python interpreter inside a virtual environment (`.venv/bin/python`), the command
/// that creates that environment; `None` for any other program.
fn venv_hint(dir: &Path, exec: &str) -> Option<String> {
    let program = Path::new(exec);
    let python = program
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("python"));
    let venv = program
        .parent()
        .filter(|bin| bin.file_name().is_some_and(|n| n == "bin"))
        .and_then(Path::parent)
        .filter(|venv| !venv.as_os_str().is_empty())?;
    python.then(|| {
        format!(
            "create the virtual environment: cd {} && python3 -m venv {} (then install into it what the extension needs), or correct \"exec\" in extension.json",
            sh_quote(&dir.to_string_lossy()),
            sh_quote(&venv.to_string_lossy())
        )
    })
}

fn go_hint(dir: &Path, exec: &str, name: &str) -> String {
    let cd = format!("cd {}", sh_quote(&dir.to_string_lossy()));
    if std::fs::symlink_metadata(dir.join("go.mod")).is_ok() {
        return format!("build it: {cd} && {}", prepare_hint::go_build(dir, exec));
    }
    let init = format!(
        "go mod init {} && go mod tidy",
        sh_quote(&module_name(name))
    );
    match enclosing_module(dir) {
        Some(module) => module_hint(dir, exec, &module, &format!("{cd} && {init}")),
        None => format!(
            "there is no go.mod in {} or the folders above it; create one and build: {cd} && {init} && go build -o {} .",
            dir.display(),
            sh_quote(exec)
        ),
    }
}

/// The extension is a package inside a larger module: built from the module root.
fn module_hint(dir: &Path, exec: &str, module: &Module, add_go_mod: &str) -> String {
    let named = match &module.path {
        Some(path) => format!("the Go module {path}"),
        None => "the Go module".to_string(),
    };
    let package = dir.strip_prefix(&module.root).map_or_else(
        |_| dir.to_string_lossy().into_owned(),
        |rel| format!("./{}", rel.to_string_lossy()),
    );
    let output: PathBuf = dir.join(exec).components().collect();
    format!(
        "the extension is part of {named} at {}; build it: cd {} && go build -o {} {}; an installed copy will not have that module (the copied folder has no go.mod), so give the extension its own: {add_go_mod}",
        module.root.display(),
        sh_quote(&module.root.to_string_lossy()),
        sh_quote(&output.to_string_lossy()),
        sh_quote(&package),
    )
}

fn rust_hint(dir: &Path, exec: &str) -> String {
    if is_regular_file(&dir.join("Cargo.toml")) {
        return format!(
            "build it: cd {} && cargo build --release",
            sh_quote(&dir.to_string_lossy())
        );
    }
    format!(
        "there is no Cargo.toml in {}, so zot ext cannot tell how to build it; build the program to {exec} there, or correct \"exec\" in extension.json",
        dir.display()
    )
}

/// The nearest go.mod in the folders above `dir` (by its path as given, so a link to the
/// extension is not followed out to wherever it points).
fn enclosing_module(dir: &Path) -> Option<Module> {
    dir.ancestors()
        .skip(1)
        .take(MODULE_LEVELS)
        .find(|folder| std::fs::symlink_metadata(folder.join("go.mod")).is_ok())
        .map(|root| Module {
            root: root.to_path_buf(),
            path: module_path(&root.join("go.mod")),
        })
}

/// The path on the `module` line of the go.mod at `file`, when it is a regular file (not a
/// link) whose first directive is that line, within its first [`GO_MOD_HEAD`] bytes.
fn module_path(file: &Path) -> Option<String> {
    if !is_regular_file(file) {
        return None;
    }
    let mut head = vec![0u8; GO_MOD_HEAD];
    let n = bounded::read_head(file, &mut head).ok()?;
    let text = String::from_utf8_lossy(&head[..n]);
    let line = text
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with("//"))?;
    let rest = line.strip_prefix("module")?;
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let path = rest.split("//").next()?.trim().trim_matches('"');
    (!path.is_empty()).then(|| path.to_string())
}

/// `name` as a module path `go mod init` accepts: letters, digits and `-._~`, not starting
/// with a dot or dash, not ending with a dot.
fn module_name(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-._~".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    let clean = clean.trim_start_matches(['.', '-']).trim_end_matches('.');
    if clean.is_empty() {
        "extension".to_string()
    } else {
        clean.to_string()
    }
}

fn is_regular_file(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn folder(root: &Path, rel: &str) -> PathBuf {
        let dir = root.join(rel);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn go_with_its_own_module_builds_in_its_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = folder(tmp.path(), "hello");
        fs::write(dir.join("go.mod"), "module hello\n").unwrap();
        assert_eq!(
            build_hint(&dir, Some("go"), "./hello", "hello").unwrap(),
            format!("build it: cd {} && go build -o ./hello .", dir.display())
        );
    }

    #[test]
    fn go_inside_a_larger_module_builds_from_its_root() {
        let tmp = tempfile::tempdir().unwrap();
        let root = folder(tmp.path(), "zot");
        fs::write(
            root.join("go.mod"),
            "// the host\nmodule github.com/patriceckhart/zot // main\n\ngo 1.22\n",
        )
        .unwrap();
        let dir = folder(&root, "examples/extensions/hello");
        let root = root.display();
        assert_eq!(
            build_hint(&dir, Some("go"), "./hello", "hello").unwrap(),
            format!(
                "the extension is part of the Go module github.com/patriceckhart/zot at {root}; \
                 build it: cd {root} && go build -o {root}/examples/extensions/hello/hello \
                 ./examples/extensions/hello; an installed copy will not have that module \
                 (the copied folder has no go.mod), so give the extension its own: \
                 cd {root}/examples/extensions/hello && go mod init hello && go mod tidy"
            )
        );
    }

    #[test]
    fn go_without_a_module_makes_one_first() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = folder(tmp.path(), "my ext");
        let shown = dir.display();
        assert_eq!(
            build_hint(&dir, Some("go"), "./bin/my ext", "my ext").unwrap(),
            format!(
                "there is no go.mod in {shown} or the folders above it; create one and build: \
                 cd '{shown}' && go mod init my-ext && go mod tidy && go build -o './bin/my ext' ."
            )
        );
    }

    #[test]
    fn the_search_upward_is_bounded() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("go.mod"), "module far\n").unwrap();
        let near = folder(tmp.path(), &"d/".repeat(MODULE_LEVELS));
        assert_eq!(enclosing_module(&near).unwrap().root, tmp.path());
        let far = folder(tmp.path(), &"d/".repeat(MODULE_LEVELS + 1));
        assert_eq!(enclosing_module(&far), None);
    }

    #[test]
    fn a_linked_go_mod_is_not_read() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("real.mod"), "module secret\n").unwrap();
        let root = folder(tmp.path(), "m");
        std::os::unix::fs::symlink(tmp.path().join("real.mod"), root.join("go.mod")).unwrap();
        let dir = folder(&root, "ext");
        let found = enclosing_module(&dir).unwrap();
        assert_eq!((found.root, found.path), (root, None));
    }

    #[test]
    fn module_lines() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("go.mod");
        for (text, path) in [
            ("module a.b/c\n", Some("a.b/c")),
            ("\n// x\nmodule \"q\"\n", Some("q")),
            ("go 1.22\nmodule late\n", None),
            ("modulex y\n", None),
            ("", None),
        ] {
            fs::write(&file, text).unwrap();
            assert_eq!(module_path(&file).as_deref(), path, "{text:?}");
        }
        fs::write(&file, format!("{}\nmodule far\n", " ".repeat(GO_MOD_HEAD))).unwrap();
        assert_eq!(module_path(&file), None);
    }

    #[test]
    fn rust_needs_a_cargo_toml_in_the_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = folder(tmp.path(), "r");
        let exec = "./target/release/r";
        assert_eq!(
            build_hint(&dir, Some("rust"), exec, "r").unwrap(),
            format!(
                "there is no Cargo.toml in {}, so zot ext cannot tell how to build it; \
                 build the program to ./target/release/r there, or correct \"exec\" in extension.json",
                dir.display()
            )
        );
        fs::write(dir.join("Cargo.toml"), "[package]\n").unwrap();
        assert_eq!(
            build_hint(&dir, Some("rust"), exec, "r").unwrap(),
            format!("build it: cd {} && cargo build --release", dir.display())
        );
        assert_eq!(build_hint(&dir, Some("python"), "./x", "x"), None);
        assert_eq!(build_hint(&dir, None, "./x", "x"), None);
    }

    #[test]
    fn module_names_are_words_go_takes() {
        assert_eq!(module_name("..my ext."), "my-ext");
        assert_eq!(module_name("ünï"), "n-");
        assert_eq!(module_name("ü"), "extension");
    }
}
