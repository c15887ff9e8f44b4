//! The staged tree around the steps. Before: a link that leads out of the extension, or
//! any link where a step writes (each output and the folders above it), makes preparing
//! refuse before anything runs, naming the link: a step would write through it. After:
//! every entry, listed or not, is read again without following links; a special file or
//! a link out of the tree is refused, setuid, setgid, sticky and group or other write bits
//! are dropped, and an entry that was there before gets its mode back (a step may not
//! change what the source placed). Nothing of the step is alive by then (the seal), so
//! nothing changes the tree behind these reads.

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
use std::path::{Component, Path, PathBuf};

use anyhow::{Context as _, Result, bail};

use crate::output::printable;
use crate::store::filelist::UNSAFE_MODE_BITS;

/// The modes of the tree's entries before the steps, by path in the tree.
#[derive(Debug, Default)]
pub(super) struct Before {
    modes: HashMap<PathBuf, u32>,
}

/// Folders a build writes in besides its outputs when told nothing else (Cargo's).
const ALSO_WRITTEN: [&str; 1] = ["target"];

/// Checks `tree` before the steps that write `outputs` (paths in it) run; its modes.
pub(super) fn check_before(tree: &Path, outputs: &[String]) -> Result<Before> {
    let written: Vec<PathBuf> = outputs
        .iter()
        .map(PathBuf::from)
        .chain(ALSO_WRITTEN.iter().map(PathBuf::from))
        .collect();
    let mut before = Before::default();
    for (rel, meta) in entries(tree)? {
        if meta.file_type().is_symlink() {
            let target = fs::read_link(tree.join(&rel)).unwrap_or_default();
            if leaves(&rel, &target) {
                bail!(
                    "{} is a link out of the extension (to {}), which a step could write through: remove it from the source, or pass --no-prepare",
                    shown(&rel),
                    printable(&target.display().to_string())
                );
            }
            if written.iter().any(|w| w.starts_with(&rel)) {
                bail!(
                    "{} is a link where preparing writes (to {}): remove it from the source, or pass --no-prepare",
                    shown(&rel),
                    printable(&target.display().to_string())
                );
            }
            continue;
        }
        before.modes.insert(rel, meta.permissions().mode() & 0o7777);
    }
    Ok(before)
}

/// Reads every entry of `tree` again after the steps; see the module doc.
pub(super) fn settle_after(tree: &Path, before: &Before) -> Result<()> {
    for (rel, meta) in entries(tree)? {
        let kind = meta.file_type();
        if kind.is_symlink() {
            let target = fs::read_link(tree.join(&rel)).unwrap_or_default();
            if leaves(&rel, &target) && !is_venv_interpreter(&rel, &target) {
                bail!(
                    "preparing made {} a link out of the extension (to {}); nothing was changed",
                    shown(&rel),
                    printable(&target.display().to_string())
                );
            }
            continue;
        }
        if kind.is_fifo() || kind.is_socket() || kind.is_char_device() || kind.is_block_device() {
            bail!(
                "preparing made {} a special file (a FIFO, socket or device), which an extension may not hold; nothing was changed",
                shown(&rel)
            );
        }
        let mode = meta.permissions().mode() & 0o7777;
        let want = before.modes.get(&rel).copied().unwrap_or(mode) & !UNSAFE_MODE_BITS;
        if mode != want {
            let path = tree.join(&rel);
            fs::set_permissions(&path, fs::Permissions::from_mode(want))
                .with_context(|| format!("cannot set the mode of {}", shown(&rel)))?;
        }
    }
    Ok(())
}

/// A venv's `bin/python*`, which `python -m venv` (and uv) link to the interpreter that
/// made the venv: the one link out of the tree preparing itself makes.
fn is_venv_interpreter(rel: &Path, target: &Path) -> bool {
    rel.parent() == Some(Path::new(".venv/bin"))
        && rel
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("python"))
        && target.is_absolute()
        && fs::metadata(target).is_ok_and(|m| m.is_file())
}

/// Every entry beneath `tree` (not itself), by path in it, links not followed.
fn entries(tree: &Path) -> Result<Vec<(PathBuf, fs::Metadata)>> {
    let mut found = Vec::new();
    for entry in walkdir::WalkDir::new(tree).min_depth(1).follow_links(false) {
        let entry = entry.with_context(|| format!("cannot read {}", tree.display()))?;
        let meta = entry
            .metadata()
            .with_context(|| format!("cannot read {}", entry.path().display()))?;
        let rel = entry.path().strip_prefix(tree).unwrap_or(entry.path());
        found.push((rel.to_path_buf(), meta));
    }
    Ok(found)
}

/// Whether the link at `rel` (a path in the tree) to `target` leads out of the tree.
/// The folders on `rel`'s way are real folders (the walk follows no link), so the target
/// is resolved by its words alone.
fn leaves(rel: &Path, target: &Path) -> bool {
    if target.is_absolute() {
        return true;
    }
    let mut depth = rel.components().count().saturating_sub(1);
    for part in target.components() {
        match part {
            Component::ParentDir => {
                if depth == 0 {
                    return true;
                }
                depth -= 1;
            }
            Component::Normal(_) => depth += 1,
            _ => {}
        }
    }
    false
}

fn shown(rel: &Path) -> String {
    printable(&rel.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_are_judged_by_where_they_lead() {
        assert!(!leaves(Path::new("a/b"), Path::new("../c")));
        assert!(leaves(Path::new("a/b"), Path::new("../../c")));
        assert!(leaves(Path::new("b"), Path::new("/etc/passwd")));
        assert!(!leaves(
            Path::new("node_modules/.bin/x"),
            Path::new("../x/cli.js")
        ));
        assert!(leaves(Path::new("x"), Path::new("a/../../y")));
    }

    #[test]
    fn a_link_out_or_where_a_step_writes_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        fs::create_dir_all(tree.join("src")).unwrap();
        symlink("src", tree.join("bin")).unwrap();
        let e = check_before(&tree, &["bin/git".into()])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("bin is a link where preparing writes"), "{e}");
        assert!(check_before(&tree, &["hello".into()]).is_ok());
        symlink("../../victim", tree.join("src/out")).unwrap();
        let e = check_before(&tree, &[]).unwrap_err().to_string();
        assert!(
            e.starts_with("src/out is a link out of the extension"),
            "{e}"
        );
    }

    #[test]
    fn after_the_steps_modes_are_made_safe_and_restored() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path();
        fs::write(tree.join("listed"), "x").unwrap();
        fs::set_permissions(tree.join("listed"), fs::Permissions::from_mode(0o644)).unwrap();
        let before = check_before(tree, &[]).unwrap();
        fs::set_permissions(tree.join("listed"), fs::Permissions::from_mode(0o6777)).unwrap();
        fs::write(tree.join("made"), "y").unwrap();
        fs::set_permissions(tree.join("made"), fs::Permissions::from_mode(0o4777)).unwrap();
        fs::create_dir(tree.join("open")).unwrap();
        fs::set_permissions(tree.join("open"), fs::Permissions::from_mode(0o777)).unwrap();
        settle_after(tree, &before).unwrap();
        let mode =
            |name: &str| fs::metadata(tree.join(name)).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode("listed"), 0o644);
        assert_eq!(mode("made"), 0o755);
        assert_eq!(mode("open"), 0o755);
    }
}
