//! Atomic changes to one scope's extensions root: the lock, staging, rename into place,
//! replacement, removal, and cleanup after a killed run.

use std::ffi::OsStr;
use std::fs::{self, File, TryLockError};
use std::io;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use tempfile::TempDir;

use crate::paths::ScopeDirs;
use crate::record::Record;

/// How long a second run waits for the store lock before giving up.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// An open, locked store for one scope. Dropping it releases the lock.
pub struct Store {
    pub dirs: ScopeDirs,
    _lock: File,
}

/// A directory under the store's staging folder, deleted on drop unless its tree was placed.
pub struct Staging {
    dir: TempDir,
}

impl Drop for Staging {
    fn drop(&mut self) {
        // A staged copy may hold read-only folders, which TempDir alone cannot empty.
        let _ = remove_entry(self.dir.path());
    }
}

impl Staging {
    /// Where the new extension tree is built.
    pub fn tree(&self) -> PathBuf {
        self.dir.path().join("tree")
    }

    /// Scratch space beside the tree (for example a git object store).
    pub fn scratch(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

impl Store {
    /// Locks the scope's store (waiting up to ten seconds) and clears leftovers of killed runs.
    pub fn open(dirs: &ScopeDirs) -> Result<Store> {
        let state = dirs.state();
        for sub in ["staging", "trash", "sources"] {
            create_dir(&state.join(sub))?;
        }
        let lock_path = state.join("lock");
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .with_context(|| format!("cannot open the lock file {}", lock_path.display()))?;
        acquire(&lock, &lock_path, &dirs.extensions())?;
        let store = Store {
            dirs: dirs.clone(),
            _lock: lock,
        };
        store.clear_leftovers();
        Ok(store)
    }

    fn clear_leftovers(&self) {
        clear_leftovers(&self.dirs);
    }

    /// Deletes what a killed run left in staging and trash, if the store is not in use
    /// right now. Read-only commands call this: it creates nothing, waits for nothing and
    /// ignores every error.
    pub fn tidy(dirs: &ScopeDirs) {
        let has_leftovers = ["staging", "trash"].iter().any(|sub| {
            fs::read_dir(dirs.state().join(sub)).is_ok_and(|mut entries| entries.next().is_some())
        });
        if !has_leftovers {
            return;
        }
        let Ok(lock) = File::options().write(true).open(dirs.state().join("lock")) else {
            return;
        };
        if lock.try_lock().is_ok() {
            clear_leftovers(dirs);
        }
    }

    /// A fresh staging directory on the same filesystem as the extensions root.
    pub fn stage(&self) -> Result<Staging> {
        let dir = tempfile::Builder::new()
            .prefix("stage-")
            .tempdir_in(self.dirs.state().join("staging"))
            .context("cannot create a staging directory")?;
        Ok(Staging { dir })
    }

    /// The installed entry for `name` (which may be a symlink), if any.
    pub fn existing(&self, name: impl AsRef<OsStr>) -> Option<PathBuf> {
        let path = self.dirs.extensions().join(name.as_ref());
        fs::symlink_metadata(&path).ok().map(|_| path)
    }

    /// Moves the staged tree to `extensions/<name>`; with `replace`, atomically swaps it with
    /// the installed copy, which stays in place until the new one is.
    /// `name` is the folder name (a manifest name, or an existing folder's own name).
    pub fn place(
        &self,
        staging: &Staging,
        name: impl AsRef<OsStr>,
        replace: bool,
    ) -> Result<PathBuf> {
        let root = self.dirs.extensions();
        create_dir(&root)?;
        let dest = root.join(name.as_ref());
        let tree = staging.tree();
        if replace && self.existing(&name).is_some() {
            exchange(&tree, &dest).with_context(|| format!("cannot replace {}", dest.display()))?;
        } else {
            rename_new(&tree, &dest)?;
        }
        Ok(dest)
    }

    /// Moves `extensions/<name>` out of the root, then deletes it. A symlinked extension
    /// loses only its link; nothing outside the root is followed.
    pub fn remove(&self, name: impl AsRef<OsStr>) -> Result<PathBuf> {
        let name = name.as_ref();
        let dest = self.dirs.extensions().join(name);
        let meta = fs::symlink_metadata(&dest)
            .with_context(|| format!("{} does not exist", dest.display()))?;
        if !meta.is_dir() && !meta.file_type().is_symlink() {
            bail!(
                "{} is not an extension folder; refusing to remove it",
                dest.display()
            );
        }
        let trash = tempfile::Builder::new()
            .prefix("removed-")
            .tempdir_in(self.dirs.state().join("trash"))
            .context("cannot create a trash directory")?;
        fs::rename(&dest, trash.path().join(name)).with_context(|| {
            format!(
                "cannot move {} out of the extensions folder",
                dest.display()
            )
        })?;
        Record::delete(&self.dirs, &name.to_string_lossy())?;
        // std's removal never follows symlinks.
        remove_entry(trash.path()).with_context(|| {
            format!(
                "the extension was removed, but deleting its files in {} failed",
                trash.path().display()
            )
        })?;
        Ok(dest)
    }
}

fn clear_leftovers(dirs: &ScopeDirs) {
    for sub in ["staging", "trash"] {
        let Ok(entries) = fs::read_dir(dirs.state().join(sub)) else {
            continue;
        };
        for entry in entries.flatten() {
            let _ = remove_entry(&entry.path());
        }
    }
}

fn create_dir(path: &Path) -> Result<()> {
    fs::create_dir_all(path).map_err(|e| match e.kind() {
        io::ErrorKind::PermissionDenied => anyhow!(
            "cannot create {}: permission denied; zot ext needs write access there",
            path.display()
        ),
        _ => anyhow!("cannot create {}: {e}", path.display()),
    })
}

fn acquire(lock: &File, lock_path: &Path, root: &Path) -> Result<()> {
    let started = Instant::now();
    loop {
        match lock.try_lock() {
            Ok(()) => return Ok(()),
            Err(TryLockError::WouldBlock) if started.elapsed() < LOCK_WAIT => {
                thread::sleep(Duration::from_millis(50));
            }
            Err(TryLockError::WouldBlock) => bail!(
                "another zot ext command is changing {} (it holds {}); wait for it to finish and try again",
                root.display(),
                lock_path.display()
            ),
            Err(TryLockError::Error(e)) => {
                return Err(anyhow!(e).context(format!("cannot lock {}", lock_path.display())));
            }
        }
    }
}

/// Deletes a file, link or whole tree without following links; folders without write
/// permission are made writable first (their contents could not be deleted otherwise).
fn remove_entry(path: &Path) -> io::Result<()> {
    let meta = match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        meta => meta?,
    };
    if !meta.is_dir() {
        return fs::remove_file(path);
    }
    if fs::remove_dir_all(path).is_ok() {
        return Ok(());
    }
    for entry in walkdir::WalkDir::new(path)
        .follow_links(false)
        .into_iter()
        .flatten()
    {
        if !entry.file_type().is_dir() {
            continue;
        }
        if let Ok(meta) = entry.metadata() {
            let mut permissions = meta.permissions();
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                permissions.set_mode(permissions.mode() | 0o700);
            }
            #[cfg(not(unix))]
            permissions.set_readonly(false);
            let _ = fs::set_permissions(entry.path(), permissions);
        }
    }
    fs::remove_dir_all(path)
}

/// Renames `from` to `to`, failing if `to` exists (even as an empty directory, which a plain
/// rename would silently replace).
fn rename_new(from: &Path, to: &Path) -> Result<()> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        match renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::EXIST) => bail!("{} already exists", to.display()),
            // Filesystems without RENAME_NOREPLACE: fall back to check-then-rename under the lock.
            Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {}
            Err(e) => {
                return Err(io::Error::from(e))
                    .with_context(|| format!("cannot move the new extension to {}", to.display()));
            }
        }
    }
    if fs::symlink_metadata(to).is_ok() {
        bail!("{} already exists", to.display());
    }
    fs::rename(from, to)
        .with_context(|| format!("cannot move the new extension to {}", to.display()))
}

/// Swaps `from` and `to` atomically where the platform can; elsewhere moves the old copy
/// aside first and puts it back if the second rename fails.
fn exchange(from: &Path, to: &Path) -> Result<()> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        match renameat_with(CWD, from, CWD, to, RenameFlags::EXCHANGE) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {}
            Err(e) => return Err(io::Error::from(e).into()),
        }
    }
    let aside = from.with_extension("old");
    fs::rename(to, &aside)?;
    if let Err(e) = fs::rename(from, to) {
        let _ = fs::rename(&aside, to);
        return Err(e.into());
    }
    // Leave the old copy where `from` was, so dropping the staging directory deletes it.
    fs::rename(&aside, from)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::Scope;

    fn store(dir: &Path) -> Store {
        Store::open(&ScopeDirs {
            scope: Scope::Global,
            base: dir.to_path_buf(),
        })
        .unwrap()
    }

    fn stage_with(store: &Store, file: &str) -> Staging {
        let staging = store.stage().unwrap();
        fs::create_dir(staging.tree()).unwrap();
        fs::write(staging.tree().join(file), "x").unwrap();
        staging
    }

    #[test]
    fn place_refuses_an_existing_empty_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let s = store(tmp.path());
        fs::create_dir_all(s.dirs.extension("a")).unwrap();
        let staging = stage_with(&s, "new");
        assert!(s.place(&staging, "a", false).is_err());
        assert!(!s.dirs.extension("a").join("new").exists());
    }

    #[test]
    fn replace_swaps_and_staging_drop_deletes_the_old_copy() {
        let tmp = tempfile::tempdir().unwrap();
        let s = store(tmp.path());
        let first = stage_with(&s, "old");
        s.place(&first, "a", false).unwrap();
        drop(first);
        let second = stage_with(&s, "new");
        let dest = s.place(&second, "a", true).unwrap();
        assert!(dest.join("new").exists());
        assert!(!dest.join("old").exists());
        drop(second);
        assert_eq!(
            fs::read_dir(s.dirs.state().join("staging"))
                .unwrap()
                .count(),
            0
        );
    }

    #[test]
    fn leftovers_are_cleared_on_open() {
        let tmp = tempfile::tempdir().unwrap();
        let s = store(tmp.path());
        let staging = stage_with(&s, "half");
        std::mem::forget(staging);
        drop(s);
        let s = store(tmp.path());
        assert_eq!(
            fs::read_dir(s.dirs.state().join("staging"))
                .unwrap()
                .count(),
            0
        );
    }

    #[test]
    fn remove_of_a_symlink_keeps_its_target() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tempfile::tempdir().unwrap();
        fs::write(target.path().join("keep"), "x").unwrap();
        let s = store(tmp.path());
        fs::create_dir_all(s.dirs.extensions()).unwrap();
        std::os::unix::fs::symlink(target.path(), s.dirs.extension("l")).unwrap();
        s.remove("l").unwrap();
        assert!(target.path().join("keep").exists());
        assert!(fs::symlink_metadata(s.dirs.extension("l")).is_err());
    }

    #[test]
    fn second_lock_holder_waits_then_fails() {
        let tmp = tempfile::tempdir().unwrap();
        let dirs = ScopeDirs {
            scope: Scope::Global,
            base: tmp.path().to_path_buf(),
        };
        let _held = Store::open(&dirs).unwrap();
        let file = File::options()
            .write(true)
            .open(dirs.state().join("lock"))
            .unwrap();
        assert!(matches!(file.try_lock(), Err(TryLockError::WouldBlock)));
    }
}
