//! An extension to check or call: an installed one by name, or any folder given as a path
//! (a working copy, as with `zot --ext`).

use std::fs;
use std::path::Path;

use anyhow::{Result, bail};

use crate::catalog::manifest;
use crate::catalog::paths::{Layout, Scope};
use crate::catalog::{self, Found, Installed};
use crate::error;
use crate::fsx::bounded;
use crate::protocol::zot::Discovery;

/// One extension folder to check or call: `scope` is where it is installed, or `None` for a
/// folder named on the command line.
pub(crate) type Target = Found<Option<Scope>>;

/// How a target's place is shown (`--json` too): its scope, or `path` for a folder named on
/// the command line.
pub(crate) fn place(scope: Option<Scope>) -> &'static str {
    scope.map_or("path", Scope::as_str)
}

/// [`place`] for serde, whose `serialize_with` passes a reference.
#[allow(clippy::ref_option, clippy::trivially_copy_pass_by_ref)]
pub(crate) fn serialize_place<S: serde::Serializer>(
    scope: &Option<Scope>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(place(*scope))
}

impl Target {
    fn installed(e: Installed) -> Target {
        e.map_scope(Some)
    }

    /// Every installed extension of `scopes`, project first, folders sorted (the host's load
    /// order), as a host with these discovery rules sees them.
    pub(crate) fn all(layout: &Layout, scopes: &[Scope], rules: Discovery) -> Result<Vec<Target>> {
        let found = catalog::scan_as(layout, scopes, rules)?;
        Ok(found.into_iter().map(Target::installed).collect())
    }

    /// An installed extension by name ([`catalog::lookup`]: only its own manifest is read),
    /// or a folder when `arg` looks like a path.
    pub(crate) fn find(layout: &Layout, arg: &str) -> Result<Target> {
        if looks_like_path(arg) {
            return Target::at(Path::new(arg));
        }
        catalog::lookup(layout, arg, None)
            .map(Target::installed)
            .map_err(|e| with_folder_hint(e, arg))
    }

    /// [`Target::find`] as a host with these discovery rules sees it; a name is looked up in
    /// `scope` only when given (a path is a folder whatever the scope).
    pub(crate) fn find_as(
        layout: &Layout,
        arg: &str,
        scope: Option<Scope>,
        rules: Discovery,
    ) -> Result<Target> {
        if looks_like_path(arg) {
            return Target::at(Path::new(arg));
        }
        catalog::find_as(layout, arg, scope, rules)
            .map(Target::installed)
            .map_err(|e| with_folder_hint(e, arg))
    }

    fn at(path: &Path) -> Result<Target> {
        let dir = match fs::canonicalize(path) {
            Ok(dir) if dir.is_dir() => dir,
            Ok(dir) => bail!(
                "{} is {}, not a folder; give an extension folder or an installed name",
                path.display(),
                fs::metadata(&dir).map_or("a file", |m| bounded::kind_name(m.file_type()))
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
                "{} does not exist; give an extension folder or an installed name",
                path.display()
            ),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => bail!(
                "cannot open the extension folder {}: permission denied",
                path.display()
            ),
            Err(e) => bail!("cannot open the extension folder {}: {e}", path.display()),
        };
        Ok(Target {
            scope: None,
            dir_name: dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            manifest: manifest::read(&dir),
            dir,
            shadowed: false,
            skipped: false,
            twins: Vec::new(),
            link_target: None,
        })
    }
}

/// A "not installed" error for `arg` with no closer name, when `arg` is also a folder in
/// the current directory: it suggests `./arg`, the way to name that folder.
fn with_folder_hint(error: anyhow::Error, arg: &str) -> anyhow::Error {
    let Some(found) = error.downcast_ref::<error::Suggested>() else {
        return error;
    };
    let generic = "; `zot ext list` shows what is installed";
    if !found.suggestions.is_empty()
        || !found.message.ends_with(generic)
        || !Path::new(arg).is_dir()
    {
        return error;
    }
    let folder = format!("./{arg}");
    error::Suggested {
        message: format!(
            "{}; did you mean {folder}? (a folder in the current directory)",
            found
                .message
                .strip_suffix(generic)
                .unwrap_or(&found.message)
        ),
        suggestions: vec![folder],
    }
    .into()
}

/// A name never contains a separator, so anything with one (or `.`/`..`) is a path.
pub(crate) fn looks_like_path(arg: &str) -> bool {
    arg == "." || arg == ".." || arg.contains(std::path::is_separator)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_names() {
        for path in [".", "..", "./x", "/abs/x", "a/b"] {
            assert!(looks_like_path(path), "{path}");
        }
        for name in ["hello-py", "clock", "a.b"] {
            assert!(!looks_like_path(name), "{name}");
        }
    }

    #[test]
    fn a_folder_target_reads_its_manifest() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("wip");
        fs::create_dir(&dir).unwrap();
        fs::write(
            dir.join("extension.json"),
            r#"{"name":"real","exec":"./x"}"#,
        )
        .unwrap();
        let t = Target::at(&dir).unwrap();
        assert_eq!(
            (t.scope, t.name(), t.dir_name.as_str()),
            (None, "real", "wip")
        );
        assert!(t.loaded());
        assert!(Target::at(&tmp.path().join("nope")).is_err());
    }
}
