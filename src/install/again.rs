//! An installed extension staged again for `zot ext prepare`: the files its install placed
//! (its file list, less what an earlier step made) are copied from the installed copy into
//! a fresh staging folder of the store, as they are now (edits included), so the step runs
//! on a copy and the installed one is only read. The extension's runtime files are not
//! copied here: [`carry_plan`] says how they are carried over, as `update` does, and the
//! tree is placed as every install is.
//!
//! The copy is the one copier's ([`crate::source::copy_tree::copy_listed`]): nothing is
//! followed, and an entry no longer of its listed kind (or a special file) is left out
//! (carry-over then keeps or saves it).

use std::path::Path;

use anyhow::Result;

use super::fetch::Staged;
use crate::catalog::manifest::Manifest;
use crate::store::Store;
use crate::store::carry::{self, Plan};
use crate::store::filelist::{FileList, at_or_under};
use crate::store::record::Record;

/// Stages a copy of the installed `manifest.name` (at `dir`, listed by `files`, recorded
/// by `record`) with its record's earlier step cleared (and the platform it was built
/// for by its publisher, if any: preparing again builds here).
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
    let kept = FileList::from_entries(
        files
            .entries()
            .iter()
            .filter(|e| !at_or_under(&e.path, &outputs))
            .cloned()
            .collect(),
    );
    // The list stays the install's: an edit made since is one carry-over keeps.
    crate::source::copy_tree::copy_listed(dir, &staging.tree(), &kept)?;
    Ok(Staged {
        staging,
        manifest: manifest.clone(),
        record: Record {
            prepared: None,
            platform: None,
            ..record.clone()
        },
        outside_links: Vec::new(),
        left_out_project_state: false,
        files: kept,
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
