//! Finding the program the host would start: `exec` resolved like zot does, then checked to
//! exist, be executable and (for scripts) name an interpreter that exists.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};

use crate::fsx::bounded;

/// Why `exec` cannot be started, and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExecError {
    pub message: String,
    pub fix: String,
    /// Nothing is at the path: for a compiled extension, not built yet.
    pub missing: bool,
    /// A file is there without its executable bit.
    pub not_executable: bool,
}

fn fail(message: String, fix: impl Into<String>) -> ExecError {
    ExecError {
        message,
        fix: fix.into(),
        missing: false,
        not_executable: false,
    }
}

/// Resolves `exec` as zot does: absolute as-is; `./…`, `../…` or anything with a path
/// separator relative to the extension folder; a bare name looked up on `path_var`.
pub(crate) fn resolve(
    dir: &Path,
    exec: &str,
    path_var: Option<&OsStr>,
) -> Result<PathBuf, ExecError> {
    let program = Path::new(exec);
    let candidate = if program.is_absolute() {
        program.to_path_buf()
    } else if exec == "." || exec == ".." || exec.contains(std::path::is_separator) {
        // components() drops the `.` in `dir/./run` (it keeps `..`, which needs the disk).
        dir.join(program).components().collect()
    } else {
        return search_path(exec, path_var);
    };
    check_runnable(&candidate, exec)?;
    Ok(candidate)
}

fn search_path(name: &str, path_var: Option<&OsStr>) -> Result<PathBuf, ExecError> {
    let found = path_var
        .map(std::env::split_paths)
        .into_iter()
        .flatten()
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file() && is_executable(candidate));
    found.ok_or_else(|| {
        fail(
            format!("\"exec\" is \"{name}\", which is not on PATH"),
            format!(
                "install {name}, or set \"exec\" to a path (\"./{name}\" for a file in the extension folder)"
            ),
        )
    })
}

/// Checks that `path` is an executable file and, for a `#!` script, that its interpreter exists.
fn check_runnable(path: &Path, exec: &str) -> Result<(), ExecError> {
    let meta = fs::metadata(path).map_err(|_| ExecError {
        missing: true,
        ..fail(
            format!("\"exec\" {exec} does not exist ({})", path.display()),
            "create it (build it, for a compiled extension) or correct \"exec\" in extension.json",
        )
    })?;
    if !meta.is_file() {
        return Err(fail(
            format!("\"exec\" {exec} is not a file ({})", path.display()),
            "point \"exec\" at the program to run",
        ));
    }
    if !is_executable(path) {
        return Err(ExecError {
            not_executable: true,
            ..fail(
                format!("\"exec\" {exec} is not executable ({})", path.display()),
                format!("run: chmod +x {}", path.display()),
            )
        });
    }
    check_shebang(path)
}

fn is_executable(path: &Path) -> bool {
    rustix::fs::access(path, rustix::fs::Access::EXEC_OK).is_ok()
}

/// The first line of `path` when it starts with `#!`.
fn shebang_line(path: &Path) -> Option<String> {
    let mut head = [0u8; 256];
    let n = bounded::read_head(path, &mut head).ok()?;
    let head = &head[..n];
    let rest = head.strip_prefix(b"#!")?;
    let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
    Some(String::from_utf8_lossy(&rest[..end]).into_owned())
}

fn check_shebang(path: &Path) -> Result<(), ExecError> {
    let Some(line) = shebang_line(path) else {
        return Ok(());
    };
    if line.ends_with('\r') {
        return Err(fail(
            format!(
                "{} has Windows line endings: its #! line ends in a carriage return, so the interpreter is not found",
                path.display()
            ),
            format!(
                "convert it to LF line endings: sed -i 's/\\r$//' {}",
                path.display()
            ),
        ));
    }
    let mut words = line.split_whitespace();
    let Some(interpreter) = words.next() else {
        return Err(fail(
            format!("{} has an empty #! line", path.display()),
            "name the interpreter, e.g. #!/usr/bin/env python3",
        ));
    };
    if !Path::new(interpreter).is_file() {
        return Err(fail(
            format!(
                "the interpreter {interpreter} in the #! line of {} does not exist",
                path.display()
            ),
            format!(
                "in line 1 of {}, replace {interpreter} with an interpreter that exists, e.g. #!/usr/bin/env python3",
                path.display()
            ),
        ));
    }
    if Path::new(interpreter).file_name() == Some(OsStr::new("env")) {
        return check_env_program(words, path);
    }
    Ok(())
}

/// `#!/usr/bin/env [-S] program ...`: the program must be on PATH.
fn check_env_program<'a>(
    words: impl Iterator<Item = &'a str>,
    path: &Path,
) -> Result<(), ExecError> {
    let Some(program) = words
        .into_iter()
        .find(|w| !w.starts_with('-') && !w.contains('='))
    else {
        return Ok(());
    };
    let path_var = std::env::var_os("PATH");
    search_path(program, path_var.as_deref())
        .map(|_| ())
        .map_err(|_| {
            fail(
                format!(
                    "{program}, the interpreter named in the #! line of {}, is not on PATH",
                    path.display()
                ),
                format!("install {program} (or put it on PATH), or change the #! line"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn script(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
        let path = dir.join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, text).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn relative_forms_resolve_inside_the_extension_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let ok = script(tmp.path(), "bin/run", "#!/bin/sh\n", 0o755);
        assert_eq!(resolve(tmp.path(), "./bin/run", None).unwrap(), ok);
        assert_eq!(resolve(tmp.path(), "bin/run", None).unwrap(), ok);
        let abs = ok.to_str().unwrap();
        assert_eq!(resolve(Path::new("/elsewhere"), abs, None).unwrap(), ok);
    }

    #[test]
    fn bare_names_are_looked_up_on_path() {
        let tmp = tempfile::tempdir().unwrap();
        let tool = script(tmp.path(), "tools/mytool", "#!/bin/sh\n", 0o755);
        let path_var =
            std::env::join_paths([tmp.path().join("none"), tmp.path().join("tools")]).unwrap();
        assert_eq!(
            resolve(Path::new("/x"), "mytool", Some(&path_var)).unwrap(),
            tool
        );
        let err = resolve(Path::new("/x"), "nope", Some(&path_var)).unwrap_err();
        assert!(err.message.contains("not on PATH"), "{err:?}");
        // A bare name is never taken from the extension folder.
        script(tmp.path(), "local", "#!/bin/sh\n", 0o755);
        assert!(resolve(tmp.path(), "local", Some(&path_var)).is_err());
    }

    #[test]
    fn missing_directory_and_not_executable() {
        let tmp = tempfile::tempdir().unwrap();
        let err = resolve(tmp.path(), "./gone", None).unwrap_err();
        assert!(err.message.contains("does not exist"), "{err:?}");
        fs::create_dir(tmp.path().join("d")).unwrap();
        let err = resolve(tmp.path(), "./d", None).unwrap_err();
        assert!(err.message.contains("not a file"), "{err:?}");
        script(tmp.path(), "plain", "#!/bin/sh\n", 0o644);
        // access(2) refuses X_OK without any execute bit, even to root.
        let err = resolve(tmp.path(), "./plain", None).unwrap_err();
        assert!(err.fix.contains("chmod +x"), "{err:?}");
    }

    #[test]
    fn shebang_problems_are_named() {
        let tmp = tempfile::tempdir().unwrap();
        script(tmp.path(), "crlf", "#!/bin/sh\r\necho\r\n", 0o755);
        let err = resolve(tmp.path(), "./crlf", None).unwrap_err();
        assert!(err.message.contains("Windows line endings"), "{err:?}");
        script(tmp.path(), "gone", "#!/no/such/interpreter\n", 0o755);
        let err = resolve(tmp.path(), "./gone", None).unwrap_err();
        assert!(err.message.contains("/no/such/interpreter"), "{err:?}");
        script(
            tmp.path(),
            "env",
            "#!/usr/bin/env -S zot-no-such-program --flag\n",
            0o755,
        );
        let err = resolve(tmp.path(), "./env", None).unwrap_err();
        assert!(err.message.contains("zot-no-such-program"), "{err:?}");
        script(tmp.path(), "fine", "#!/usr/bin/env sh\n", 0o755);
        assert!(resolve(tmp.path(), "./fine", None).is_ok());
    }
}
