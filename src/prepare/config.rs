//! Package managers' configuration files shipped in an extension are set aside while its
//! steps run, and put back after: each can name a program the tool runs (`.npmrc`'s `git`,
//! `script-shell`, `node-options`; yarn classic's `yarn-path`; yarn berry's `yarnPath` and
//! `plugins`; pnpm's hooks file; bun's `preload`) or turn scripts back on. The user's own
//! configuration (in their home) still applies to fetching. Yarn berry's `nodeLinker`, which
//! decides the layout of what it installs, is passed on through its variable.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

use crate::fsx::bounded;
use crate::output::printable;

/// The files set aside, at the extension folder's top (where the tools read them).
const FILES: [&str; 8] = [
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".yarnrc.yaml",
    ".pnpmfile.cjs",
    ".pnpmfile.mjs",
    "pnpmfile.js",
    "bunfig.toml",
];

/// Files moved out of the staged folder into the scratch folder; put back when dropped.
#[derive(Debug)]
pub(super) struct SetAside {
    moved: Vec<(PathBuf, PathBuf)>,
    /// The `nodeLinker` the `.yarnrc.yml` set aside names.
    node_linker: Option<String>,
}

impl SetAside {
    /// Moves the configuration files of `tree` (a link in their place too) into `scratch`.
    pub(super) fn of(tree: &Path, scratch: &Path) -> Result<SetAside> {
        let mut set = SetAside {
            moved: Vec::new(),
            node_linker: yarn_node_linker(&tree.join(".yarnrc.yml")),
        };
        let aside = scratch.join("set-aside");
        for name in FILES {
            let from = tree.join(name);
            if fs::symlink_metadata(&from).is_err() {
                continue;
            }
            fs::create_dir_all(&aside)
                .with_context(|| format!("cannot create {}", aside.display()))?;
            let to = aside.join(name);
            fs::rename(&from, &to)
                .with_context(|| format!("cannot set {} aside while preparing", printable(name)))?;
            set.moved.push((from, to));
        }
        Ok(set)
    }

    /// The names set aside, for the log.
    pub(super) fn names(&self) -> Vec<String> {
        self.moved
            .iter()
            .filter_map(|(from, _)| from.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .collect()
    }

    /// Yarn berry's `nodeLinker` from the `.yarnrc.yml` set aside.
    pub(super) fn node_linker(&self) -> Option<&str> {
        self.node_linker.as_deref()
    }

    /// Puts every file back where it was, over whatever a step left in its place.
    pub(super) fn restore(mut self) -> Result<()> {
        self.put_back()
    }

    fn put_back(&mut self) -> Result<()> {
        for (from, to) in std::mem::take(&mut self.moved) {
            if let Ok(meta) = fs::symlink_metadata(&from)
                && meta.is_dir()
            {
                fs::remove_dir_all(&from)?;
            }
            fs::rename(&to, &from).with_context(|| {
                format!(
                    "cannot put {} back",
                    printable(&from.file_name().unwrap_or_default().to_string_lossy())
                )
            })?;
        }
        Ok(())
    }
}

impl Drop for SetAside {
    fn drop(&mut self) {
        let _ = self.put_back();
    }
}

/// Bytes of a `.yarnrc.yml` read for its `nodeLinker`.
const YARNRC_MAX: u64 = 256 * 1024;

/// The `nodeLinker` a `.yarnrc.yml` at `path` names (`node-modules`, `pnp`, `pnpm`).
fn yarn_node_linker(path: &Path) -> Option<String> {
    if !fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let bytes = bounded::read(path, YARNRC_MAX).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    text.lines().find_map(|line| {
        let value = line
            .strip_prefix("nodeLinker:")?
            .trim()
            .trim_matches(['"', '\'']);
        matches!(value, "node-modules" | "pnp" | "pnpm").then(|| value.to_string())
    })
}
