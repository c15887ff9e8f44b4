//! The store's journal. Before the rename that publishes an extension, its new record is
//! written to `<base>/.ext-store/pending/<name>.json` with the identity (device and inode,
//! which a rename keeps) of the staged tree. After the rename the record is committed and
//! the entry deleted. A run killed in between leaves the entry, and the next run decides
//! from what is in the extensions root whether the rename happened: it commits the record
//! or drops the entry. A removal's journal is its folder in the trash
//! (`trash/<name>/<name>`, see [`Store::remove`]): an extension found there was moved out,
//! so its record goes. Only these two folders (normally empty) are read, so no command's
//! cost grows with the store.

use std::ffi::OsStr;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::{MAX_STATE_FILE, Store, identity_of};
use crate::catalog::paths::ScopeDirs;
use crate::fsx::Identity;
use crate::store::filelist::{FileList, MAX_FILE_LIST};
use crate::store::record::Record;

/// The record of a tree about to be placed as `extensions/<name>`.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Intent {
    record: Record,
    /// The staged tree.
    tree: Identity,
    /// What the tree's install placed (committed with the record).
    #[serde(default)]
    files: Option<FileList>,
}

impl Intent {
    pub(super) fn install(record: &Record, tree: Identity) -> Intent {
        Intent {
            record: record.clone(),
            tree,
            files: None,
        }
    }

    pub(super) fn with_files(mut self, files: &FileList) -> Intent {
        self.files = Some(files.clone());
        self
    }
}

/// Longest journal entry read: a record and a file list.
const MAX_INTENT: u64 = MAX_STATE_FILE + MAX_FILE_LIST;

fn file_name(name: &str) -> String {
    format!("{name}.json")
}

impl Store {
    /// Writes the journal entry for `name`, flushed to disk.
    pub(super) fn write_intent(&self, name: &str, intent: &Intent) -> Result<()> {
        let pending = &self.folders.pending;
        let bytes = serde_json::to_vec(intent)?;
        self.folders
            .staging
            .replace_file(pending, file_name(name), &bytes, 0o644)
            .with_context(|| format!("cannot write to {}", pending.path().display()))
    }

    pub(super) fn clear_intent(&self, name: &str) -> Result<()> {
        let pending = &self.folders.pending;
        pending
            .unlink(file_name(name))
            .with_context(|| format!("cannot delete from {}", pending.path().display()))
    }

    /// Applies or drops every journal entry a killed run left, installs and removals.
    pub(super) fn resolve_journal(&self) -> Result<()> {
        self.resolve_removals()?;
        let pending = &self.folders.pending;
        for entry in pending.names()? {
            let name = entry
                .to_str()
                .and_then(|n| n.strip_suffix(".json"))
                .filter(|n| !n.is_empty());
            let intent = name.and_then(|_| read_intent(self, &entry));
            if let (Some(name), Some(intent)) = (name, intent) {
                self.apply(name, &intent)?;
            }
            pending
                .remove(&entry)
                .with_context(|| format!("cannot delete from {}", pending.path().display()))?;
        }
        Ok(())
    }

    /// Finishes one install: if the staged tree is in place, its record is the one;
    /// otherwise the rename never happened and the old record still describes the old tree.
    fn apply(&self, name: &str, intent: &Intent) -> Result<()> {
        let now = fs::symlink_metadata(self.dirs.extension(name))
            .ok()
            .map(|meta| identity_of(&meta));
        if now == Some(intent.tree) {
            self.save_files(name, intent.files.as_ref())?;
            self.save_record(&intent.record)?;
        }
        Ok(())
    }

    /// An extension found in its folder in the trash was moved out of the root by a killed
    /// `remove`: its record goes too, unless the name is installed again. (The trash is
    /// emptied afterwards.)
    fn resolve_removals(&self) -> Result<()> {
        let trash = &self.folders.trash;
        for holder in trash.names()? {
            let moved = trash.stat(Path::new(&holder).join(&holder)).ok().flatten();
            let installed = fs::symlink_metadata(self.dirs.extensions().join(&holder)).is_ok();
            if moved.is_some() && !installed {
                self.delete_record(&holder.to_string_lossy())?;
            }
        }
        Ok(())
    }
}

/// The record of `extensions/<name>` in the journal, if the journal has one and its tree is
/// the one in place now (read without the lock: the rename happened, the record's commit
/// may not have).
pub(crate) fn journalled_record(dirs: &ScopeDirs, name: &str) -> Option<Record> {
    journalled(dirs, name).map(|intent| intent.record)
}

/// The file list of `extensions/<name>` in the journal, as [`journalled_record`]. (An entry
/// without a list means the tree in place has none.)
pub(crate) fn journalled_files(dirs: &ScopeDirs, name: &str) -> Option<FileList> {
    journalled(dirs, name).and_then(|intent| intent.files)
}

fn journalled(dirs: &ScopeDirs, name: &str) -> Option<Intent> {
    let bytes = super::read_state_file_up_to(dirs, "pending", &file_name(name), MAX_INTENT)?;
    let intent: Intent = serde_json::from_slice(&bytes).ok()?;
    let now = fs::symlink_metadata(dirs.extension(name)).ok()?;
    (identity_of(&now) == intent.tree).then_some(intent)
}

fn read_intent(store: &Store, entry: &OsStr) -> Option<Intent> {
    let bytes = store.folders.pending.read_file(entry, MAX_INTENT).ok()??;
    serde_json::from_slice(&bytes).ok()
}
