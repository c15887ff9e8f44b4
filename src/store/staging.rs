//! A directory under the store's staging folder (`<base>/.ext-store/staging/stage-…`) where
//! a new extension tree is built beside scratch space; deleted on drop, never through a
//! link, unless its tree was placed.

use std::io;
use std::path::PathBuf;

use anyhow::{Context, Result, anyhow};

use crate::fsx::{Folder, Identity, unique_name};

/// A directory under the store's staging folder, deleted on drop unless its tree was placed.
pub(crate) struct Staging {
    parent: Folder,
    name: String,
    path: PathBuf,
}

impl Drop for Staging {
    fn drop(&mut self) {
        // Never through a link, and read-only folders of a staged copy are emptied too.
        let _ = self.parent.remove(&self.name);
    }
}

impl Staging {
    /// A fresh staging directory in `staging` (the store's staging folder).
    pub(super) fn create_in(staging: &Folder) -> Result<Staging> {
        let name = unique_name("stage-");
        let path = staging.create_dir(&name).with_context(|| {
            format!(
                "cannot create a staging directory in {}",
                staging.path().display()
            )
        })?;
        Ok(Staging {
            parent: staging.try_clone()?,
            name,
            path,
        })
    }

    /// Where the new extension tree is built.
    pub(crate) fn tree(&self) -> PathBuf {
        self.path.join("tree")
    }

    /// Scratch space beside the tree (for example a git object store).
    pub(crate) fn scratch(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Deletes the scratch folder `name` beside the tree now, never through a link; what
    /// cannot be deleted goes with the staging folder.
    pub(crate) fn remove_scratch(&self, name: &str) {
        if let Ok(Some(folder)) = self.parent.sub(&self.name, false) {
            let _ = folder.remove(name);
        }
    }

    /// Renames the folder `sub` beside the tree to `to_name` in `to`, then flushes `to`.
    pub(crate) fn move_out(&self, sub: &str, to: &Folder, to_name: &str) -> io::Result<()> {
        self.parent
            .rename_to(&format!("{}/{sub}", self.name), to, to_name)
    }

    /// Deletes this staging folder (never through a link) if a signal ends zot while the
    /// guard lives: for a step that writes into it, ended with its group first.
    pub(crate) fn removed_on_signal(&self) -> Result<crate::host::interrupt::OnSignal> {
        let parent = self.parent.try_clone()?;
        let name = self.name.clone();
        Ok(crate::host::interrupt::on_signal(move || {
            // A process of the ended group may still finish a write: try a few times.
            for _ in 0..20 {
                let _ = parent.remove(&name);
                if matches!(parent.stat(&name), Ok(None)) {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(25));
            }
        }))
    }

    /// The staged tree's identity, which it keeps when renamed into place.
    pub(super) fn identity(&self) -> Result<Identity> {
        let stat = self
            .parent
            .stat(format!("{}/tree", self.name))
            .ok()
            .flatten()
            .ok_or_else(|| anyhow!("the staged tree in {} is missing", self.path.display()))?;
        Ok(Identity::of(&stat))
    }
}
