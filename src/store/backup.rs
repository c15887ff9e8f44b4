//! Saved copies: what `update` and `install --force` replaced or overwrote, in
//! `<base>/.ext-store/backup/<name>/<RFC 3339 time>/` (to the second, or to the nanosecond
//! when that would not be the newest name; outside the extensions root, so zot
//! never scans them). Only the last [`KEPT`] per extension are kept. The folders are made
//! and deleted through no-follow handles ([`crate::fsx::Folder`]); a saved copy is built in
//! the staging folder and renamed into place whole, so a kill never leaves half of one.

use std::path::PathBuf;

use anyhow::{Context, Result, anyhow};

use super::record::now_rfc3339;
use super::staging::Staging;
use super::state::{STATE, open_state, state_error};
use crate::catalog::paths::ScopeDirs;

/// How many saved copies are kept per extension.
pub(super) const KEPT: usize = 3;

const BACKUP: &str = "backup";

/// Moves the folder `sub` that `staging` holds beside its tree to
/// `backup/<name>/<now>/` in the state folder of `dirs`, then flushes it; returns where it
/// went.
pub(super) fn keep(dirs: &ScopeDirs, staging: &Staging, sub: &str, name: &str) -> Result<PathBuf> {
    let state = state_folder(dirs)?;
    let fail = |e: std::io::Error| anyhow!("cannot save to {}: {e}", backup_root(dirs).display());
    let backups = state
        .sub(BACKUP, true)
        .map_err(|e| state_error(&backup_root(dirs), e))?
        .ok_or_else(|| anyhow!("{BACKUP} is missing"))?;
    let mine = backups
        .sub(name, true)
        .map_err(|e| state_error(&backups.path().join(name), e))?
        .ok_or_else(|| anyhow!("{BACKUP}/{name} is missing"))?;
    let when = new_name(&mine.names().map_err(fail)?, now_rfc3339());
    staging.move_out(sub, &mine, &when).map_err(fail)?;
    Ok(mine.path().join(when))
}

/// The name of a new saved copy: `seconds` (the time to the second) when it sorts after
/// every name in `existing`, else the time to the nanosecond. A seconds name counts as the
/// start of its second, so taking it again after the copies named within that second were
/// made (and it was rotated away) would make the newest copy the oldest, deleted at once.
fn new_name(existing: &[std::ffi::OsString], seconds: String) -> String {
    let time = |n: &str| humantime::parse_rfc3339(n).ok();
    let newest = existing
        .iter()
        .filter_map(|n| n.to_str().and_then(time))
        .max();
    let taken = existing.iter().any(|n| n.as_os_str() == seconds.as_str());
    let older = matches!((time(&seconds), newest), (Some(at), Some(newest)) if at <= newest);
    if taken || older {
        return humantime::format_rfc3339_nanos(std::time::SystemTime::now()).to_string();
    }
    seconds
}

/// Deletes all but the newest [`KEPT`] saved copies of `name`.
pub(super) fn rotate(dirs: &ScopeDirs, name: &str) -> Result<()> {
    let state = state_folder(dirs)?;
    let Some(backups) = state.sub(BACKUP, false).ok().flatten() else {
        return Ok(());
    };
    let Some(mine) = backups.sub(name, false).ok().flatten() else {
        return Ok(());
    };
    let mut names = mine.names()?;
    sort_by_time(&mut names);
    let excess = names.len().saturating_sub(KEPT);
    for old in &names[..excess] {
        mine.remove(old)
            .with_context(|| format!("cannot delete {}", mine.path().join(old).display()))?;
    }
    Ok(())
}

fn backup_root(dirs: &ScopeDirs) -> PathBuf {
    dirs.state().join(BACKUP)
}

fn state_folder(dirs: &ScopeDirs) -> Result<crate::fsx::Folder> {
    open_state(dirs, true)?.ok_or_else(|| anyhow!("{STATE} is missing"))
}

/// The saved copies of `name` in this scope, oldest first (read-only: nothing is made).
pub(crate) fn backups(dirs: &ScopeDirs, name: &str) -> Vec<PathBuf> {
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
    sort_by_time(&mut names);
    names.into_iter().map(|n| mine.path().join(n)).collect()
}

/// Sorts saved-copy folder names oldest first by the time they name, not by their text:
/// `…:00Z` (seconds) is older than `…:00.132Z` (the millisecond name taken when the
/// seconds name exists) although `Z` sorts after `.`. Names that are not a time come first.
fn sort_by_time(names: &mut [std::ffi::OsString]) {
    names.sort_by_cached_key(|n| {
        let time = n.to_str().and_then(|s| humantime::parse_rfc3339(s).ok());
        (time, n.clone())
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::paths::Scope;
    use crate::store::Store;
    use std::fs;

    #[test]
    fn a_linked_backup_folder_is_refused_and_nothing_is_written_through_it() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let dirs = ScopeDirs {
            scope: Scope::Global,
            base: tmp.path().to_path_buf(),
        };
        let store = Store::open(&dirs).unwrap();
        std::os::unix::fs::symlink(outside.path(), dirs.state().join(BACKUP)).unwrap();
        let staging = store.stage().unwrap();
        fs::create_dir(staging.scratch("saved")).unwrap();
        let err = store
            .keep_backup(&staging, "saved", "x")
            .unwrap_err()
            .to_string();
        assert!(err.contains("is a symbolic link"), "{err}");
        assert!(fs::read_dir(outside.path()).unwrap().next().is_none());
        assert!(backups(&dirs, "x").is_empty());
    }

    /// Makes backups of `x` with these folder names, rotates them and returns those kept.
    fn rotated(names: &[String]) -> Vec<String> {
        let tmp = tempfile::tempdir().unwrap();
        let dirs = ScopeDirs {
            scope: Scope::Global,
            base: tmp.path().to_path_buf(),
        };
        let store = Store::open(&dirs).unwrap();
        let mine = dirs.state().join(BACKUP).join("x");
        for name in names {
            fs::create_dir_all(mine.join(name).join("sub")).unwrap();
        }
        store.rotate_backups("x").unwrap();
        backups(&dirs, "x")
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn the_newest_three_are_kept() {
        let names: Vec<String> = ["0", "1", "2"]
            .iter()
            .flat_map(|s| (0..2).map(move |i| format!("2026-01-01T00:00:{s}{i}Z")))
            .collect();
        assert_eq!(
            rotated(&names),
            [
                "2026-01-01T00:00:11Z",
                "2026-01-01T00:00:20Z",
                "2026-01-01T00:00:21Z"
            ]
        );
    }

    #[test]
    fn a_new_name_is_newer_than_every_kept_one() {
        let names = |n: &[&str]| n.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        let second = "2026-01-01T00:00:00Z".to_string();
        assert_eq!(new_name(&names(&[]), second.clone()), second);
        let earlier = names(&["2025-12-31T23:59:59.500Z"]);
        assert_eq!(new_name(&earlier, second.clone()), second);
        // The seconds name was rotated away; the three of that second stay.
        let same_second = names(&["2026-01-01T00:00:00.132Z", "2026-01-01T00:00:00.187Z"]);
        let now = new_name(&same_second, second.clone());
        assert_ne!(now, second);
        assert!(humantime::parse_rfc3339(&now).is_ok(), "{now}");
        assert_ne!(new_name(&names(&[&second]), second.clone()), second);
    }

    #[test]
    fn a_seconds_name_is_older_than_the_millisecond_names_of_the_same_second() {
        let names = [
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:00:00.132Z",
            "2026-01-01T00:00:00.187Z",
            "2026-01-01T00:00:00.241Z",
        ]
        .map(String::from);
        assert_eq!(
            rotated(&names),
            [
                "2026-01-01T00:00:00.132Z",
                "2026-01-01T00:00:00.187Z",
                "2026-01-01T00:00:00.241Z"
            ]
        );
    }
}
