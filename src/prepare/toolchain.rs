//! The tools a step runs: found on `PATH` (a missing one is named with what to install),
//! and for Go the version on `PATH` compared with the one `go.mod` asks for (its lines read
//! bounded, as for the `module` line Go's plan notes); each tool's version is asked once
//! per run of zot (npm's read from its `package.json`, not asked).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock, PoisonError};

use anyhow::{Result, anyhow};

use crate::fsx::bounded;

/// `name` on `PATH`, or an error saying what to install (`install`).
pub(super) fn find(name: &str, install: &str) -> Result<PathBuf> {
    on_path(name).ok_or_else(|| MissingTool(format!("{name} not found on PATH: {install}")).into())
}

/// A step's tool is not on PATH; the message says what to install.
#[derive(Debug)]
pub(super) struct MissingTool(pub String);

impl std::fmt::Display for MissingTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MissingTool {}

/// `name` on `PATH`, when it is there as an executable file.
pub(super) fn on_path(name: &str) -> Option<PathBuf> {
    crate::host::resolve(Path::new("/"), name, std::env::var_os("PATH").as_deref()).ok()
}

/// Bytes of a `go.mod` read for a directive.
const GO_MOD_MAX: u64 = 256 * 1024;

/// What `directive` finds first among a `go.mod`'s lines (trimmed), read bounded.
pub(super) fn go_mod_line<T>(go_mod: &Path, directive: impl FnMut(&str) -> Option<T>) -> Option<T> {
    let bytes = bounded::read(go_mod, GO_MOD_MAX).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    text.lines().map(str::trim).find_map(directive)
}

/// The Go version a `go.mod` asks for (its `go 1.22` line), as written.
pub(super) fn go_mod_version(go_mod: &Path) -> Option<String> {
    go_mod_line(go_mod, |line| {
        let rest = line.strip_prefix("go")?;
        let rest = rest.strip_prefix([' ', '\t'])?;
        let version = rest.split("//").next()?.trim();
        (!version.is_empty()).then(|| version.to_string())
    })
}

/// The version `go version` prints (`1.19.8` of `go version go1.19.8 linux/amd64`).
pub(super) fn go_version(go: &Path) -> Result<String> {
    let text = match go_version_line(go) {
        Some(line) => line,
        None => {
            ask(go, &["version"])
                .map_err(|e| anyhow!("cannot run {} version: {e}", go.display()))?
                .stdout
        }
    };
    text.split_whitespace()
        .find_map(|word| {
            word.strip_prefix("go")
                .filter(|v| v.starts_with(|c: char| c.is_ascii_digit()))
        })
        .map(str::to_string)
        .ok_or_else(|| {
            anyhow!(
                "cannot tell the version of {}: `go version` printed {:?}",
                go.display(),
                text.trim()
            )
        })
}

/// What a tool printed on stdout, and whether it succeeded.
#[derive(Clone)]
struct Said {
    ok: bool,
    stdout: String,
}

/// Runs `program args` (with `GOTOOLCHAIN=local`) in `/`, once per run of zot: a tool asked
/// about itself from a folder of nobody's (not the staged copy, whose configuration could
/// name another program for it to run).
fn ask(program: &Path, args: &'static [&'static str]) -> Result<Said, String> {
    type Answers = HashMap<(PathBuf, &'static [&'static str]), Result<Said, String>>;
    static ANSWERS: OnceLock<Mutex<Answers>> = OnceLock::new();
    let key = (program.to_path_buf(), args);
    let answers = ANSWERS.get_or_init(Mutex::default);
    if let Some(said) = answers
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&key)
    {
        return said.clone();
    }
    let said = Command::new(program)
        .args(args)
        .current_dir("/")
        .env("GOTOOLCHAIN", "local")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map(|o| Said {
            ok: o.status.success(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        })
        .map_err(|e| e.to_string());
    answers
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(key, said.clone());
    said
}

/// The first line `program args` printed, when it succeeded and printed one.
pub(super) fn answer(program: &Path, args: &'static [&'static str]) -> Option<String> {
    let said = ask(program, args).ok()?;
    let line = said.stdout.lines().next()?.trim();
    (said.ok && !line.is_empty()).then(|| line.to_string())
}

/// A folder `go env NAME` names (GOROOT, GOMODCACHE), absolute.
pub(super) fn go_env(go: &Path, args: &'static [&'static str]) -> Option<PathBuf> {
    let path = PathBuf::from(answer(go, args)?);
    path.is_absolute().then_some(path)
}

/// The installation a program on `PATH` belongs to: the folder above the `bin` folder its
/// file (links resolved) is in (`/usr/lib/go-1.19` for `/usr/bin/go`).
pub(super) fn prefix_of(program: &Path) -> Option<PathBuf> {
    let file = std::fs::canonicalize(program).ok()?;
    let bin = file.parent()?;
    Some(bin.parent().unwrap_or(bin).to_path_buf())
}

/// What `tool` on `PATH` says its version is (`go version`, else `<tool> --version`): the
/// first line, trimmed. npm, pnpm and yarn are not run: their own `package.json` says it
/// (starting node takes about as long as an `npm ci` of a few hundred cached packages).
pub(super) fn version(tool: &str) -> Option<String> {
    let program = on_path(tool)?;
    if matches!(tool, "npm" | "pnpm" | "yarn")
        && let Some(version) = package_version(tool, &program)
    {
        return Some(version);
    }
    if tool == "go"
        && let Some(line) = go_version_line(&program)
    {
        return Some(crate::output::printable(&line));
    }
    let args: &'static [&'static str] = if tool == "go" {
        &["version"]
    } else {
        &["--version"]
    };
    answer(&program, args).map(|line| crate::output::printable(&line))
}

/// What `go version` would print, from the `VERSION` file of the installation `go` belongs
/// to (`go1.19.8`, its first line), without starting go (3.6 ms, about 2% of a small Go
/// install); `None` where there is no such file or the system's name is not one Go's.
fn go_version_line(go: &Path) -> Option<String> {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "riscv64" => "riscv64",
        "s390x" => "s390x",
        "loongarch64" => "loong64",
        _ => return None,
    };
    let bytes = bounded::read(&prefix_of(go)?.join("VERSION"), 4096).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let version = text.lines().next()?.trim();
    let digits = version.strip_prefix("go")?;
    digits
        .starts_with(|c: char| c.is_ascii_digit())
        .then(|| format!("go version {version} {}/{arch}", std::env::consts::OS))
}

/// Bytes of a tool's `package.json` read at most.
const PACKAGE_JSON_MAX: u64 = 1 << 20;

/// The version in the `package.json` of the JavaScript package `tool` whose script
/// `program` links to (`bin/npm` -> `lib/node_modules/npm/bin/npm-cli.js`): the nearest
/// `package.json` above the script, when it names `tool`.
fn package_version(tool: &str, program: &Path) -> Option<String> {
    let script = std::fs::canonicalize(program).ok()?;
    let json = script
        .ancestors()
        .skip(1)
        .take(3)
        .map(|dir| dir.join("package.json"))
        .find(|path| path.is_file())?;
    let bytes = bounded::read(&json, PACKAGE_JSON_MAX).ok()?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let version = value.get("version")?.as_str()?;
    (value.get("name")? == tool && !version.is_empty()).then(|| crate::output::printable(version))
}

/// Whether the version `have` is older than `want` (by their numbers: `1.19.8` < `1.22`).
pub(super) fn older(have: &str, want: &str) -> bool {
    numbers(have) < numbers(want)
}

/// The leading numbers of a version (`1.22rc1` is 1, 22).
fn numbers(version: &str) -> Vec<u64> {
    version
        .split('.')
        .map_while(|part| {
            let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_by_number() {
        assert!(!older("1.19.8", "1.19"));
        assert!(!older("1.19", "1.9"));
        assert!(older("1.21", "1.21.0"));
        assert!(older("1.19.8", "1.22"));
    }

    #[test]
    fn npm_s_version_is_read_from_its_package_json() {
        let dir = tempfile::tempdir().unwrap();
        let npm = dir.path().join("lib/node_modules/npm");
        std::fs::create_dir_all(npm.join("bin")).unwrap();
        std::fs::write(npm.join("bin/npm-cli.js"), "").unwrap();
        std::fs::write(
            npm.join("package.json"),
            r#"{"version": "11.19.1", "name": "npm"}"#,
        )
        .unwrap();
        let link = dir.path().join("npm");
        std::os::unix::fs::symlink(npm.join("bin/npm-cli.js"), &link).unwrap();
        assert_eq!(package_version("npm", &link).as_deref(), Some("11.19.1"));
        // Another package's manifest says nothing of this tool.
        assert_eq!(package_version("pnpm", &link), None);
    }

    #[test]
    fn the_go_line_is_read_from_go_mod() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("go.mod");
        std::fs::write(&path, "module x\n\ngo 1.22 // note\n\nrequire y v1\n").unwrap();
        assert_eq!(go_mod_version(&path).as_deref(), Some("1.22"));
        std::fs::write(&path, "module gopher\n").unwrap();
        assert_eq!(go_mod_version(&path), None);
    }
}
