//! What every source kind answers a fetch with: the tree it built in staging ([`Built`]) and
//! where it came from ([`Origin`]), and the checks each kind's tree gets the same way (a
//! subfolder that stays inside, its manifest read with errors naming the source rather than
//! staging).

use std::fs;
use std::path::{Component, Path, PathBuf};

use anyhow::{Result, anyhow, bail};

use crate::catalog::manifest::{self, Manifest, ManifestError};
use crate::source::copy::LooseLink;
use crate::store::Staging;
use crate::store::filelist::FileList;
use crate::store::record::Record;

/// What a kind built in staging, before the record gets its subfolder.
pub(crate) struct Built {
    pub manifest: Manifest,
    /// What the record pins of the source (and the lock with it).
    pub record: Record,
    pub origin: Option<Origin>,
    pub outside_links: Vec<LooseLink>,
    /// Whether the local source's own `.zot/` folder was left out of the copy.
    pub left_out_project_state: bool,
    /// The staged tree's list: made on the way by the step that built the tree where it
    /// could, else by listing it afterwards.
    pub files: FileList,
}

/// Where a staged extension folder came from, for a build that needs more than the folder:
/// a Go extension that belongs to a module above it (zot's own examples are packages of
/// the repository's root module).
#[derive(Debug, Clone)]
pub(crate) struct Origin {
    /// The folder the extension was staged from.
    pub folder: PathBuf,
    /// The highest folder a module is looked for in: the root of the git checkout, or the
    /// top of the repository a local folder is in (the folder itself outside one).
    pub top: PathBuf,
    /// Whether `top` is the user's own folder, so what a build needs of it is copied into
    /// staging first; a checkout is zot's own, in staging already.
    pub users: bool,
}

impl Origin {
    /// A local folder: up to the top of the repository it is in, if any.
    pub(crate) fn local(folder: &std::path::Path) -> Origin {
        let top = folder
            .ancestors()
            .find(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok())
            .unwrap_or(folder);
        Origin {
            folder: folder.to_path_buf(),
            top: top.to_path_buf(),
            users: true,
        }
    }
}

/// A subfolder must be a plain relative path inside the source.
pub(crate) fn check_subdir(subdir: &str) -> Result<PathBuf> {
    check_subdir_as(subdir, &format!("--subdir \"{subdir}\""))
}

/// [`check_subdir`], the error naming the subfolder as `form` says (the way the user wrote
/// it: `--subdir "x"`, or the `#x` part of a source).
pub(crate) fn check_subdir_as(subdir: &str, form: &str) -> Result<PathBuf> {
    let path = Path::new(subdir.trim_end_matches('/'));
    let plain = path.components().all(|c| matches!(c, Component::Normal(_)));
    if subdir.is_empty() || !plain {
        return Err(crate::error::usage(format!(
            "{form} must be a relative folder inside the source, without \"..\""
        )));
    }
    Ok(path.to_path_buf())
}

/// `base/sub`, checked one component at a time: every step must be a real folder, not a
/// symbolic link, so the path cannot lead outside `base` (and nothing outside is moved or
/// copied). `label` names `base` in messages.
pub(crate) fn real_subdir(base: &Path, sub: &Path, label: &str) -> Result<PathBuf> {
    let mut path = base.to_path_buf();
    let mut walked = PathBuf::new();
    for part in sub.components() {
        path.push(part);
        walked.push(part);
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => bail!(
                "{label}: {} is a symbolic link; the subfolder must be a real folder inside the source",
                walked.display()
            ),
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => bail!("{label}: {} is not a folder", walked.display()),
            Err(_) => bail!(
                "{label} has no folder {}; check the path inside the source",
                sub.display()
            ),
        }
    }
    Ok(path)
}

/// The first 12 characters of a commit id, or of a digest's hexadecimal digits after its
/// `sha256:` (all of it when shorter).
pub(crate) fn short(id: &str) -> &str {
    let hex = id.strip_prefix("sha256:").unwrap_or(id);
    hex.char_indices()
        .nth(12)
        .and_then(|(end, _)| hex.get(..end))
        .unwrap_or(hex)
}

/// Reads the staged manifest; errors name `shown` instead of the staging path.
pub(crate) fn validate(staging: &Staging, shown: &Path) -> Result<Manifest> {
    let tree = staging.tree();
    manifest::read(&tree).map_err(|e| manifest_error(e, &tree, shown))
}

/// The error of reading the manifest of `tree`, naming `shown` instead, with a hint at
/// manifests in subfolders when there is none.
pub(crate) fn manifest_error(e: ManifestError, tree: &Path, shown: &Path) -> anyhow::Error {
    let hint = if e.is_missing() {
        nested_manifest_hint(tree)
    } else {
        String::new()
    };
    let relabelled = ManifestError {
        path: shown.to_path_buf(),
        ..e
    };
    anyhow!("{relabelled}{hint} (nothing was changed)")
}

/// How many entries the search for manifests in subfolders looks at (a source folder can
/// be as big as `/usr`).
const HINT_ENTRIES: usize = 10_000;

/// Points at manifests in subfolders when the top level has none.
fn nested_manifest_hint(tree: &Path) -> String {
    let nested: Vec<String> = walkdir::WalkDir::new(tree)
        .min_depth(2)
        .max_depth(4)
        .into_iter()
        .take(HINT_ENTRIES)
        .flatten()
        .filter(|e| e.file_name() == manifest::FILE)
        .filter_map(|e| {
            e.path()
                .parent()?
                .strip_prefix(tree)
                .ok()
                .map(|p| p.display().to_string())
        })
        .take(3)
        .collect();
    if nested.is_empty() {
        String::new()
    } else {
        format!(
            "; there is one in {}/: install that folder instead (a path, or --subdir for a repository)",
            nested.join("/, ")
        )
    }
}

/// Runs `work` while the file system of `dir` is flushed on a second thread (joined
/// before this returns): the files just written go to the disk meanwhile, so the flush
/// that comes before the install is placed has little left to write.
pub(crate) fn while_flushing<T>(dir: &Path, work: impl FnOnce() -> T) -> T {
    let top = rustix::fs::openat(
        rustix::fs::CWD,
        dir,
        crate::fsx::DIR_FLAGS,
        rustix::fs::Mode::empty(),
    );
    std::thread::scope(|s| {
        if let Ok(top) = &top {
            let flush = move || rustix::fs::syncfs(top);
            // A thread that cannot be started only leaves the flush to the install.
            let _ = std::thread::Builder::new().spawn_scoped(s, flush);
        }
        work()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subdirs_must_stay_inside() {
        assert!(check_subdir("examples/extensions/clock").is_ok());
        assert!(check_subdir("ext/").is_ok());
        for bad in ["", "../x", "/abs", "a/../../b", "./"] {
            assert!(check_subdir(bad).is_err(), "{bad}");
        }
    }
}
