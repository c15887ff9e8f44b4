//! The store's journal. Before the rename that publishes an extension, its new record is
//! written to `<base>/.ext-store/pending/<name>.json` with the identity (device and inode,
//! which a rename keeps) of the staged tree. After the rename the record is committed and
//! the entry deleted. Entries are written and deleted unflushed: the store flushes the file
//! system once for a whole batch of them, before the renames
//! ([`crate::store::Store::publish_all`]). A run killed in between leaves the entry, and the next run decides
//! from what is in the extensions root whether the rename happened: it commits the record
//! or drops the entry. A removal's journal is its folder in the trash
//! (`trash/<name>/<name>`, see [`crate::store::Store::remove`]): an extension found there was
//! moved out, so its record goes. Only these two folders (normally empty) are read, so no
//! command's cost grows with the store.
//!
//! **The file list beside the entry.** The tree's file list (4 to 5 MB for 20,000 files) is
//! written once, as `pending/<name>.list` in the very bytes of `files/<name>.json`, and
//! committed by renaming it there: the entry itself holds only the record, the tree's
//! identity and `"files_beside": true`. An entry whose list is no longer beside it had its
//! list committed already (nothing else takes it away while the entry exists). Entries
//! written by earlier versions hold the list inline (`"files": {...}`) and are settled as
//! before.
//!
//! An entry is generic in the record and the inline file list it may hold: the store writes
//! and settles it with both types, while a reader parses only its own part
//! ([`crate::store::record::Record::load`], [`crate::store::filelist::FileList::load`]).

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::state::{MAX_FILE_LIST, MAX_STATE_FILE, identity_of, read_state_file_up_to};
use crate::catalog::paths::ScopeDirs;
use crate::fsx::{Flush, Folder, Identity};

/// The record `R` of a tree about to be placed as `extensions/<name>`, and its file list `F`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(bound(deserialize = "R: Deserialize<'de>, F: Deserialize<'de>"))]
pub(super) struct Intent<R, F> {
    pub(super) record: R,
    /// The staged tree.
    pub(super) tree: Identity,
    /// What the tree's install placed (committed with the record), inline: entries written
    /// by earlier versions; `None` when the list is beside the entry or there is none.
    #[serde(default)]
    pub(super) files: Option<F>,
    /// The list is `pending/<name>.list`, or committed already when that is gone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) files_beside: bool,
}

/// Longest journal entry read: a record and a file list.
const MAX_INTENT: u64 = MAX_STATE_FILE + MAX_FILE_LIST;

fn file_name(name: &str) -> String {
    format!("{name}.json")
}

/// The name of the file list written beside the entry of `name`.
pub(super) fn list_name(name: &str) -> String {
    format!("{name}.list")
}

/// Whether `entry` in `pending` is a list beside an entry (never an entry: those end in
/// `.json`).
fn is_list(entry: &std::ffi::OsStr) -> bool {
    entry.as_encoded_bytes().ends_with(b".list")
}

/// Writes the journal entry for `name` into `pending` (through `staging`), not flushed: the
/// caller flushes the file system before the rename the entry announces. `list`, the bytes
/// of the tree's file list, goes beside the entry (then `intent.files_beside` must be set).
pub(super) fn write<R: Serialize, F: Serialize>(
    staging: &Folder,
    pending: &Folder,
    name: &str,
    intent: &Intent<R, F>,
    list: Option<&[u8]>,
) -> Result<()> {
    debug_assert_eq!(intent.files_beside, list.is_some());
    let failed = || format!("cannot write to {}", pending.path().display());
    if let Some(list) = list {
        staging
            .replace_file(pending, list_name(name), list, 0o644, Flush::Later)
            .with_context(failed)?;
    }
    let bytes = serde_json::to_vec(intent)?;
    staging
        .replace_file(pending, file_name(name), &bytes, 0o644, Flush::Later)
        .with_context(failed)
        .inspect_err(|_| drop_list(pending, name))
}

/// Deletes the journal entry for `name` from `pending`, not flushed (an entry that outlives
/// a crash is settled again, to the same result). Its list was committed, or is deleted
/// with [`drop_list`].
pub(super) fn clear(pending: &Folder, name: &str) -> Result<()> {
    pending
        .unlink_unflushed(file_name(name))
        .map(drop)
        .with_context(|| format!("cannot delete from {}", pending.path().display()))
}

/// Deletes the list beside the entry for `name`, not flushed: its tree is not placed (one
/// left behind goes with the next settling).
pub(super) fn drop_list(pending: &Folder, name: &str) {
    let _ = pending.unlink_unflushed(list_name(name));
}

/// Applies or drops every install entry a killed run left in `pending`: `commit` is given
/// each entry whose staged tree is in place as `extensions/<name>` (otherwise the rename
/// never happened and the old record still describes the old tree); every entry is then
/// deleted, an unreadable one too, and every list beside an entry (`commit` moves away the
/// lists it commits; one written before a kill that came ahead of its entry has none).
pub(super) fn settle_installs<R, F>(
    dirs: &ScopeDirs,
    pending: &Folder,
    mut commit: impl FnMut(&str, &Intent<R, F>) -> Result<()>,
) -> Result<()>
where
    R: DeserializeOwned,
    F: DeserializeOwned,
{
    let names = pending.names()?;
    for entry in names.iter().filter(|n| !is_list(n)) {
        settle_entry(dirs, pending, entry, &mut commit)?;
    }
    for list in names.iter().filter(|n| is_list(n)) {
        pending
            .remove(list)
            .with_context(|| format!("cannot delete from {}", pending.path().display()))?;
    }
    Ok(())
}

/// [`settle_installs`] for the entry of `name` alone, if there is one: after a failed
/// rename, whose tree may or may not be in place.
pub(super) fn settle_one<R, F>(
    dirs: &ScopeDirs,
    pending: &Folder,
    name: &str,
    mut commit: impl FnMut(&str, &Intent<R, F>) -> Result<()>,
) -> Result<()>
where
    R: DeserializeOwned,
    F: DeserializeOwned,
{
    let entry = std::ffi::OsString::from(file_name(name));
    if pending.stat(&entry)?.is_none() {
        return Ok(());
    }
    settle_entry(dirs, pending, &entry, &mut commit)
}

/// Commits one entry of `pending` if its tree is in place, then deletes it (and its list,
/// when it was not committed).
fn settle_entry<R, F>(
    dirs: &ScopeDirs,
    pending: &Folder,
    entry: &std::ffi::OsStr,
    commit: &mut impl FnMut(&str, &Intent<R, F>) -> Result<()>,
) -> Result<()>
where
    R: DeserializeOwned,
    F: DeserializeOwned,
{
    let name = entry
        .to_str()
        .and_then(|n| n.strip_suffix(".json"))
        .filter(|n| !n.is_empty());
    let intent = name.and_then(|_| read_intent::<R, F>(pending, entry));
    if let (Some(name), Some(intent)) = (name, intent)
        && in_place(dirs, name, intent.tree)
    {
        commit(name, &intent)?;
    }
    let failed = || format!("cannot delete from {}", pending.path().display());
    if let Some(name) = name {
        pending.remove(list_name(name)).with_context(failed)?;
    }
    pending.remove(entry).with_context(failed)
}

/// An extension found in its folder in `trash` was moved out of the root by a killed
/// `remove`: `forget` is given its name so that its record goes too, unless the name is
/// installed again. (The trash is emptied afterwards.)
pub(super) fn settle_removals(
    dirs: &ScopeDirs,
    trash: &Folder,
    mut forget: impl FnMut(&str) -> Result<()>,
) -> Result<()> {
    for holder in trash.names()? {
        let moved = trash.stat(Path::new(&holder).join(&holder)).ok().flatten();
        let installed = fs::symlink_metadata(dirs.extensions().join(&holder)).is_ok();
        if moved.is_some() && !installed {
            forget(&holder.to_string_lossy())?;
        }
    }
    Ok(())
}

/// The journal entry of `extensions/<name>`, if the journal has one and its tree is the one
/// in place now (read without the lock: the rename happened, the record's commit may not
/// have). A reader names the part it does not need [`serde::de::IgnoredAny`].
pub(super) fn journalled<R, F>(dirs: &ScopeDirs, name: &str) -> Option<Intent<R, F>>
where
    R: DeserializeOwned,
    F: DeserializeOwned,
{
    let bytes = read_state_file_up_to(dirs, "pending", &file_name(name), MAX_INTENT)?;
    let intent: Intent<R, F> = serde_json::from_slice(&bytes).ok()?;
    let now = fs::symlink_metadata(dirs.extension(name)).ok()?;
    (identity_of(&now) == intent.tree).then_some(intent)
}

/// Whether the tree at `extensions/<name>` is `tree`.
fn in_place(dirs: &ScopeDirs, name: &str, tree: Identity) -> bool {
    let now = fs::symlink_metadata(dirs.extension(name))
        .ok()
        .map(|meta| identity_of(&meta));
    now == Some(tree)
}

fn read_intent<R: DeserializeOwned, F: DeserializeOwned>(
    pending: &Folder,
    entry: &std::ffi::OsStr,
) -> Option<Intent<R, F>> {
    let bytes = pending.read_file(entry, MAX_INTENT).ok()??;
    serde_json::from_slice(&bytes).ok()
}
