//! The store's journal, `<base>/.ext-store/pending/<name>.json`: before the rename that
//! publishes (or removes) an extension, the change it stands for is written down with the
//! identity (device and inode, which a rename keeps) of the tree involved. After the
//! rename the record is committed and the entry deleted. A run killed in between leaves the
//! entry, and the next run decides from what is in the extensions root whether the rename
//! happened: it applies the entry or drops it. Only this folder (normally empty) is read,
//! so no command's cost grows with the store.

use std::ffi::OsStr;
use std::fs;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::fsx::Identity;
use super::{MAX_STATE_FILE, Store, identity_of};
use crate::record::Record;

/// One pending change of `extensions/<name>`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Intent {
    /// The record of the new tree; `None` for a removal.
    record: Option<Record>,
    /// The staged tree about to be placed, or the entry about to be removed.
    tree: Identity,
}

impl Intent {
    pub fn install(record: &Record, tree: Identity) -> Intent {
        Intent {
            record: Some(record.clone()),
            tree,
        }
    }

    pub fn removal(tree: Identity) -> Intent {
        Intent { record: None, tree }
    }
}

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

    /// Applies or drops every journal entry a killed run left.
    pub(super) fn resolve_journal(&self) -> Result<()> {
        let pending = &self.folders.pending;
        for entry in pending.names()? {
            let name = entry
                .to_str()
                .and_then(|n| n.strip_suffix(".json"))
                .filter(|n| !n.is_empty());
            let intent = name.and_then(|_| read_intent(self, &entry));
            if let (Some(name), Some(intent)) = (name, intent) {
                self.apply(name, intent)?;
            }
            pending
                .remove(&entry)
                .with_context(|| format!("cannot delete from {}", pending.path().display()))?;
        }
        Ok(())
    }

    /// Finishes one change: the record follows what the extensions root holds now.
    fn apply(&self, name: &str, intent: Intent) -> Result<()> {
        let now = fs::symlink_metadata(self.dirs.extension(name))
            .ok()
            .map(|meta| identity_of(&meta));
        match intent.record {
            // The staged tree was placed: its record is the one.
            Some(record) if now == Some(intent.tree) => self.save_record(&record),
            // The entry was moved out: its record goes too.
            None if now != Some(intent.tree) => self.delete_record(name),
            // The rename never happened: the old record still describes the old tree.
            _ => Ok(()),
        }
    }
}

fn read_intent(store: &Store, entry: &OsStr) -> Option<Intent> {
    let bytes = store
        .folders
        .pending
        .read_file(entry, MAX_STATE_FILE)
        .ok()??;
    serde_json::from_slice(&bytes).ok()
}
