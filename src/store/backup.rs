//! Saved copies: what `update` and `install --force` replaced or overwrote, in
//! `<base>/.ext-store/backup/<name>/<RFC 3339 time>/` (outside the extensions root, so zot
//! never scans them). Only the last [`KEPT`] per extension are kept. The folders are made
//! and deleted through no-follow handles ([`super::fsx::Folder`]); a saved copy is built in
//! the staging folder and renamed into place whole, so a kill never leaves half of one.

use std::path::PathBuf;

use anyhow::{Context, Result, anyhow};

use super::{STATE, Staging, Store, open_state};
use crate::paths::ScopeDirs;

/// How many saved copies are kept per extension.
pub const KEPT: usize = 3;

const BACKUP: &str = "backup";

impl Store {
    /// Moves the folder `sub` that `staging` holds beside its tree to
    /// `backup/<name>/<now>/`, then flushes it; returns where it went.
    pub fn keep_backup(&self, staging: &Staging, sub: &str, name: &str) -> Result<PathBuf> {
        let state = self.state_folder()?;
        let fail =
            |e: std::io::Error| anyhow!("cannot save to {}: {e}", self.backup_root().display());
        let backups = state.sub(BACKUP, true).map_err(|e| anyhow!("{e:?}"))?;
        let backups = backups.ok_or_else(|| anyhow!("{BACKUP} is missing"))?;
        let mine = backups
            .sub(name, true)
            .map_err(|e| anyhow!("cannot open {}: {e:?}", backups.path().join(name).display()))?
            .ok_or_else(|| anyhow!("{BACKUP}/{name} is missing"))?;
        let mut when = crate::record::now_rfc3339();
        if mine.stat(&when).map_err(fail)?.is_some() {
            when = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
        }
        staging.move_out(sub, &mine, &when).map_err(fail)?;
        Ok(mine.path().join(when))
    }

    /// Deletes all but the newest [`KEPT`] saved copies of `name`.
    pub fn rotate_backups(&self, name: &str) -> Result<()> {
        let state = self.state_folder()?;
        let Some(backups) = state.sub(BACKUP, false).ok().flatten() else {
            return Ok(());
        };
        let Some(mine) = backups.sub(name, false).ok().flatten() else {
            return Ok(());
        };
        let mut names = mine.names()?;
        names.sort();
        let excess = names.len().saturating_sub(KEPT);
        for old in &names[..excess] {
            mine.remove(old)
                .with_context(|| format!("cannot delete {}", mine.path().join(old).display()))?;
        }
        Ok(())
    }

    fn backup_root(&self) -> PathBuf {
        self.dirs.state().join(BACKUP)
    }

    fn state_folder(&self) -> Result<super::fsx::Folder> {
        open_state(&self.dirs, true)?.ok_or_else(|| anyhow!("{STATE} is missing"))
    }
}

/// The saved copies of `name` in this scope, oldest first (read-only: nothing is made).
pub fn backups(dirs: &ScopeDirs, name: &str) -> Vec<PathBuf> {
    let Some(state) = open_state(dirs, false).ok().flatten() else {
        return Vec::new();
    };
    let Some(mine) = state
        .sub(BACKUP, false)
        .ok()
        .flatten()
        .and_then(|b| b.sub(name, false).ok().flatten())
    else {
        return Vec::new();
    };
    let mut names = mine.names().unwrap_or_default();
    names.sort();
    names.into_iter().map(|n| mine.path().join(n)).collect()
}
