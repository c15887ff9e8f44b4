//! An installed extension staged again for `zot ext prepare`: the files its install placed
//! (its file list, less what an earlier step made) are copied from the installed copy into
//! a fresh staging folder of the store, as they are now (edits included), so the step runs
//! on a copy and the installed one is only read. The extension's runtime files are not
//! copied here: [`carry_plan`] says how they are carried over, as `update` does, and the
//! tree is placed as every install is.
//!
//! Links are never followed: an entry is copied only when its folder in the installed copy
//! was a real folder copied before it, files are opened without following a link or
//! blocking, and an entry that is no longer of its listed kind is left out (carry-over
//! then keeps or saves it).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

use super::fetch::Staged;
use crate::catalog::manifest::Manifest;
use crate::store::Store;
use crate::store::carry::{self, Plan};
use crate::store::filelist::{Entry, EntryKind, FileList};
use crate::store::record::Record;

/// Stages a copy of the installed `manifest.name` (at `dir`, listed by `files`, recorded
/// by `record`) with its record's earlier step cleared.
pub(crate) fn stage(
    store: &Store,
    dir: &Path,
    manifest: &Manifest,
    record: &Record,
    files: &FileList,
) -> Result<Staged> {
    let outputs = record
        .prepared
        .as_ref()
        .map(|p| p.outputs.clone())
        .unwrap_or_default();
    let staging = store.stage()?;
    let tree = staging.tree();
    fs::create_dir(&tree).with_context(|| format!("cannot create {}", tree.display()))?;
    let kept: Vec<Entry> = files
        .entries()
        .iter()
        .filter(|e| !made_by_step(&e.path, &outputs))
        .cloned()
        .collect();
    copy_listed(dir, &tree, &kept)?;
    Ok(Staged {
        staging,
        manifest: manifest.clone(),
        record: Record {
            prepared: None,
            ..record.clone()
        },
        outside_links: Vec::new(),
        left_out_project_state: false,
        files: FileList::from_entries(kept),
        origin: None,
    })
}

/// How the prepared `staged` tree takes over the installed copy (recorded by `old`): its
/// runtime files are carried over and its edits kept ([`carry`]), except what either step
/// made (the earlier one's outputs, or a `node_modules/` made by hand where this step made
/// one), which goes with the old copy.
pub(crate) fn carry_plan(store: &Store, staged: &Staged, old: &Record) -> Result<Plan> {
    let name = staged.manifest.name.clone();
    let mut outputs: Vec<String> = old
        .prepared
        .iter()
        .chain(staged.record.prepared.iter())
        .flat_map(|p| p.outputs.iter().cloned())
        .collect();
    outputs.sort();
    outputs.dedup();
    let options = carry::Options {
        keep_local: true,
        enabled: None,
        keep_unchanged_edits: false,
    };
    let dirs = &store.dirs;
    let installed = dirs.extension(&name);
    let tree = staged.staging.tree();
    // The installed copy is judged against its source files only: what this step made is
    // new, so the old step's outputs are neither edits to save nor files to carry.
    let source_only = FileList::from_entries(
        staged
            .files
            .entries()
            .iter()
            .filter(|e| !staged.files.is_prepared(&e.path))
            .cloned()
            .collect(),
    );
    carry::plan(&installed, Some(&source_only), &tree, options, &outputs)
}

/// Whether `path` is one of `outputs` or inside one.
fn made_by_step(path: &[u8], outputs: &[String]) -> bool {
    outputs.iter().any(|o| {
        path.strip_prefix(o.as_bytes())
            .is_some_and(|rest| rest.is_empty() || rest[0] == b'/')
    })
}

/// Copies the `entries` (parents before children) from `from` into `to`; folders get their
/// modes once everything in them is copied.
fn copy_listed(from: &Path, to: &Path, entries: &[Entry]) -> Result<()> {
    let mut folders: Vec<(PathBuf, u32)> = Vec::new();
    for entry in entries {
        let rel = entry.rel();
        let (src, dest) = (from.join(rel), to.join(rel));
        // Its folder was copied as a real folder: nothing above it in the installed copy
        // has become a link since.
        let parent_copied = dest
            .parent()
            .is_some_and(|p| fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()));
        if !parent_copied {
            continue;
        }
        let Ok(meta) = fs::symlink_metadata(&src) else {
            continue; // deleted since install: left out, as it is from the installed copy
        };
        let kind = meta.file_type();
        match entry.kind {
            EntryKind::Dir if kind.is_dir() => {
                fs::create_dir(&dest)
                    .with_context(|| format!("cannot create {}", dest.display()))?;
                fs::set_permissions(&dest, fs::Permissions::from_mode(0o700))?;
                folders.push((dest, meta.permissions().mode() & 0o7777));
            }
            EntryKind::Link if kind.is_symlink() => {
                std::os::unix::fs::symlink(fs::read_link(&src)?, &dest)
                    .with_context(|| format!("cannot create the link {}", dest.display()))?;
            }
            EntryKind::File if kind.is_file() => carry::copy_file(&src, &dest)?,
            _ => {}
        }
    }
    for (dir, mode) in folders.into_iter().rev() {
        fs::set_permissions(&dir, fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_cover_themselves_and_what_is_inside() {
        let outputs = vec!["node_modules".to_string(), "hello".to_string()];
        assert!(made_by_step(b"node_modules", &outputs));
        assert!(made_by_step(b"node_modules/x/index.js", &outputs));
        assert!(made_by_step(b"hello", &outputs));
        assert!(!made_by_step(b"hello.go", &outputs));
        assert!(!made_by_step(b"node_modules2", &outputs));
    }
}
