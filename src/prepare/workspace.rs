//! The module a staged folder belongs to, lent to its steps: the module's root (a copy in
//! the scratch folder of a local source's, which zot never builds in; the checkout itself
//! for git, already in staging) with the staged folder moved into its place in it for the
//! time of the steps, and moved back after, however they end.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

use super::step::Workspace;
use crate::output::printable;
use crate::source::copy_tree;

/// The staged folder, lent to the module's root.
#[derive(Debug)]
pub(super) struct Lent {
    root: PathBuf,
    /// Where the staged folder is now.
    at: PathBuf,
    /// Where it goes back to.
    tree: PathBuf,
    returned: bool,
}

impl Lent {
    /// Puts the staged `tree` in its place in the module `workspace` describes.
    pub(super) fn open(workspace: &Workspace, tree: &Path, scratch: &Path) -> Result<Lent> {
        let root = if workspace.copy {
            fs::create_dir_all(scratch)?;
            let copy = scratch.join("module");
            let shown = format!("{}/", printable(&workspace.from.display().to_string()));
            copy_tree::copy_source(&workspace.from, &copy, &shown, &mut |_| {})
                .with_context(|| format!("cannot copy the module at {shown} into staging"))?;
            copy
        } else {
            workspace.from.clone()
        };
        let at = root.join(&workspace.rel);
        if fs::symlink_metadata(&at).is_ok() {
            fs::remove_dir_all(&at)
                .with_context(|| format!("cannot clear {} in the module's copy", at.display()))?;
        }
        if let Some(parent) = at.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::rename(tree, &at)
            .with_context(|| format!("cannot move the staged copy into {}", at.display()))?;
        Ok(Lent {
            root,
            at,
            tree: tree.to_path_buf(),
            returned: false,
        })
    }

    /// The module's root, where the steps run.
    pub(super) fn root(&self) -> &Path {
        &self.root
    }

    /// Moves the staged folder back.
    pub(super) fn give_back(mut self) -> Result<()> {
        self.returned = true;
        fs::rename(&self.at, &self.tree).with_context(|| {
            format!(
                "cannot move the staged copy back from {}",
                self.at.display()
            )
        })
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        if !self.returned {
            let _ = fs::rename(&self.at, &self.tree);
        }
    }
}
