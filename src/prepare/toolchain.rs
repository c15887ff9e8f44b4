//! The tools a step runs: found on `PATH` (a missing one is named with what to install),
//! and for Go the version on `PATH` compared with the one `go.mod` asks for.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Result, anyhow, bail};

use crate::fsx::bounded;

/// `name` on `PATH`, or an error saying what to install (`install`).
pub(super) fn find(name: &str, install: &str) -> Result<PathBuf> {
    on_path(name).ok_or_else(|| anyhow!("{name} not found on PATH: {install}"))
}

/// `name` on `PATH`, when it is there as an executable file.
pub(super) fn on_path(name: &str) -> Option<PathBuf> {
    crate::host::resolve(Path::new("/"), name, std::env::var_os("PATH").as_deref()).ok()
}

/// Bytes of a `go.mod` read for its `go` line.
const GO_MOD_MAX: u64 = 256 * 1024;

/// The Go version a `go.mod` asks for (its `go 1.22` line), as written.
pub(super) fn go_mod_version(go_mod: &Path) -> Option<String> {
    let bytes = bounded::read(go_mod, GO_MOD_MAX).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    text.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("go")?;
        let rest = rest.strip_prefix([' ', '\t'])?;
        let version = rest.split("//").next()?.trim();
        (!version.is_empty()).then(|| version.to_string())
    })
}

/// The version `go version` prints (`1.19.8` of `go version go1.19.8 linux/amd64`).
pub(super) fn go_version(go: &Path) -> Result<String> {
    let output = Command::new(go)
        .arg("version")
        .env("GOTOOLCHAIN", "local")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| anyhow!("cannot run {} version: {e}", go.display()))?;
    let text = String::from_utf8_lossy(&output.stdout);
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

/// What `tool` on `PATH` says its version is (`go version`, else `<tool> --version`): the
/// first line, trimmed.
pub(super) fn version(tool: &str) -> Option<String> {
    let program = on_path(tool)?;
    let arg = if tool == "go" { "version" } else { "--version" };
    let output = Command::new(program)
        .arg(arg)
        .env("GOTOOLCHAIN", "local")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text.lines().next()?.trim();
    (output.status.success() && !line.is_empty()).then(|| crate::output::printable(line))
}

/// Fails when the Go on `PATH` (`have`) is older than `go.mod` asks for (`want`).
pub(super) fn check_go(want: &str, have: &str) -> Result<()> {
    if numbers(have) < numbers(want) {
        bail!(
            "go.mod wants go {want}; go on PATH is {have}: install Go {want} or later, or pass --no-prepare"
        );
    }
    Ok(())
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
        assert!(check_go("1.19", "1.19.8").is_ok());
        assert!(check_go("1.9", "1.19").is_ok());
        assert!(check_go("1.21.0", "1.21").is_err());
        let e = check_go("1.99", "1.19.8").unwrap_err().to_string();
        assert!(
            e.starts_with("go.mod wants go 1.99; go on PATH is 1.19.8"),
            "{e}"
        );
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
