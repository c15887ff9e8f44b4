//! An extension to check or call: an installed one by name, or any folder given as a path
//! (a working copy, as with `zot --ext`).

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use serde::Serialize;

use crate::catalog::manifest::{self, Manifest, ManifestError};
use crate::catalog::paths::{Layout, Scope};
use crate::catalog::{self, Installed, Twin};
use crate::fsx::bounded;
use crate::protocol::zot::{self, Discovery};

/// Where a target was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Origin {
    Project,
    Global,
    /// A folder named on the command line.
    Path,
}

impl Origin {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Origin::Project => "project",
            Origin::Global => "global",
            Origin::Path => "path",
        }
    }
}

impl From<Scope> for Origin {
    fn from(scope: Scope) -> Origin {
        match scope {
            Scope::Project => Origin::Project,
            Scope::Global => Origin::Global,
        }
    }
}

/// One extension folder and what its manifest says.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub origin: Origin,
    pub dir_name: String,
    pub dir: PathBuf,
    pub manifest: Result<Manifest, ManifestError>,
    /// A project folder of the same folder name hides it, so zot never starts this one.
    pub shadowed: bool,
    /// A linked folder the zot judged by skips.
    pub skipped: bool,
    /// Other folders whose manifests have the same name (zot starts every enabled one).
    pub twins: Vec<Twin>,
    /// Where the folder leads when it is a symbolic link (`zot ext link` makes one).
    // The link's target, not this struct.
    #[allow(clippy::struct_field_names)]
    pub link_target: Option<PathBuf>,
}

impl Target {
    fn installed(e: Installed) -> Target {
        Target {
            origin: e.scope.into(),
            dir_name: e.dir_name,
            dir: e.dir,
            manifest: e.manifest,
            shadowed: e.shadowed,
            skipped: e.skipped,
            twins: e.twins,
            link_target: e.link_target,
        }
    }

    /// The manifest's name, or the folder's when the manifest is unusable.
    pub(crate) fn name(&self) -> &str {
        match &self.manifest {
            Ok(m) => &m.name,
            Err(_) => &self.dir_name,
        }
    }

    /// Whether zot starts it: enabled, not hidden by a project folder of the same name, and
    /// not a linked folder the zot judged by skips.
    pub(crate) fn loaded(&self) -> bool {
        self.enabled() && !self.shadowed && !self.skipped
    }

    /// Whether its manifest is usable and says `enabled`.
    pub(crate) fn enabled(&self) -> bool {
        self.manifest.as_ref().is_ok_and(|m| m.enabled)
    }

    /// Every installed extension of `scopes`, project first, folders sorted (the host's load
    /// order), as a host with these discovery rules sees them.
    pub(crate) fn all(layout: &Layout, scopes: &[Scope], rules: Discovery) -> Result<Vec<Target>> {
        let found = catalog::scan_as(layout, scopes, rules)?;
        Ok(found.into_iter().map(Target::installed).collect())
    }

    /// An installed extension by name, or a folder when `arg` looks like a path.
    pub(crate) fn find(layout: &Layout, arg: &str) -> Result<Target> {
        Target::find_as(layout, arg, None, zot::newest().discovery)
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
        catalog::find_as(layout, arg, scope, rules).map(Target::installed)
    }

    fn at(path: &Path) -> Result<Target> {
        let dir = match fs::canonicalize(path) {
            Ok(dir) if dir.is_dir() => dir,
            Ok(dir) => bail!(
                "{} is {}, not a folder; give an extension folder or an installed name",
                path.display(),
                fs::metadata(&dir).map_or("a file", |m| bounded::kind_name(m.file_type()))
            ),
            Err(e) => bail!("cannot open the extension folder {}: {e}", path.display()),
        };
        Ok(Target {
            origin: Origin::Path,
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
            (t.origin, t.name(), t.dir_name.as_str()),
            (Origin::Path, "real", "wip")
        );
        assert!(t.loaded());
        assert!(Target::at(&tmp.path().join("nope")).is_err());
    }
}
