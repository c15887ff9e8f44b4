//! Atomic changes to one scope's extensions root: the lock, staging, rename into place,
//! replacement, removal, the journal that keeps install records matching trees whatever
//! instant a run is killed at, and cleanup after a killed run. This is the top of the
//! store: it uses the files below it ([`state`], [`staging`], [`journal`], [`backup`],
//! [`record`], [`filelist`]), which never use it.
//!
//! The state folder `<base>/.ext-store` (`lock`, `staging`, `trash`, `sources`, `files`,
//! `pending`, `backup`, and in `$ZOT_HOME` the fetch cache `cache`, see [`crate::source::git::cache`])
//! is untrusted: it is opened without following symbolic links (see [`fsx`] and
//! [`state`]), and anything there that is not what it must be is an error that names it.

mod backup;
pub(crate) mod carry;
pub(crate) mod filelist;
mod journal;
pub(crate) mod record;
mod staging;
pub(crate) mod state;

pub(crate) use backup::backups;
pub(crate) use staging::Staging;

use std::ffi::OsStr;
use std::fs::{self, File, TryLockError};
use std::io;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use rustix::fs::{Access, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::catalog::paths::{Scope, ScopeDirs};
use crate::fsx::{self, Flush, Folder, Identity, crashpoint};
use crate::output::printable;
use filelist::FileList;
use journal::Intent;
use record::Record;
use state::{lenient, open_state, state_error};

/// How long a second run waits for the store lock before giving up.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// An open, locked store for one scope. Dropping it releases the lock.
pub(crate) struct Store {
    pub dirs: ScopeDirs,
    folders: Folders,
    waited: bool,
    _lock: File,
}

/// The folders inside the state folder, each opened without following links.
struct Folders {
    staging: Folder,
    trash: Folder,
    sources: Folder,
    pending: Folder,
    /// File lists (`files/<name>.json`, see [`crate::store::filelist`]); made on first use, so a
    /// read-only command works on a store made by an older zot.
    files: Option<Folder>,
}

/// One staged tree for [`Store::publish_all`] to place as `extensions/<name>`, with its
/// install record and file list (`None` for a linked extension).
pub(crate) struct Placement<'a> {
    pub staging: &'a Staging,
    pub name: &'a str,
    /// Swap it with an installed copy of the same name.
    pub replace: bool,
    pub record: &'a Record,
    pub files: Option<&'a FileList>,
}

/// What [`Store::publish_all`] did: where the tree is, and whether its record could not be
/// saved (the journal saves it on the next run).
pub(crate) struct Published {
    pub dest: PathBuf,
    pub record_error: Option<anyhow::Error>,
}

impl Store {
    /// Locks the scope's store (waiting up to ten seconds), finishes what a killed run
    /// left in the journal and clears its leftovers.
    pub(crate) fn open(dirs: &ScopeDirs) -> Result<Store> {
        refuse_project_links(dirs)?;
        create_dir(&dirs.base)?;
        let state = open_state(dirs, true)?.expect("created");
        let lock = open_lock(&state, true)?.expect("created");
        let waited = acquire(&lock, state.path(), &dirs.extensions())?;
        let folders = Folders::open(&state, true)?;
        let store = Store {
            dirs: dirs.clone(),
            folders: folders.expect("created"),
            waited,
            _lock: lock,
        };
        store.resolve_journal()?;
        store.clear_leftovers();
        Ok(store)
    }

    /// Checks the state folder and, if the store is not in use right now, finishes what a
    /// killed run left (journal, staging, trash). Read-only commands call this: it creates
    /// nothing and waits for nothing; only a state folder that is not what it must be (a
    /// link, a file) is an error.
    pub(crate) fn tidy(dirs: &ScopeDirs) -> Result<()> {
        let Some(state) = open_state(dirs, false)? else {
            return Ok(());
        };
        let folders = Folders::open(&state, false)?;
        let lock = open_lock(&state, false)?;
        let (Some(folders), Some(lock)) = (folders, lock) else {
            return Ok(());
        };
        let busy = [&folders.staging, &folders.trash, &folders.pending]
            .iter()
            .any(|f| !f.is_empty().unwrap_or(true));
        if busy && lock.try_lock().is_ok() {
            let store = Store {
                dirs: dirs.clone(),
                folders,
                waited: false,
                _lock: lock,
            };
            let _ = store.resolve_journal();
            store.clear_leftovers();
        }
        Ok(())
    }

    /// Whether this run had to wait for another zot ext command to finish.
    pub(crate) fn waited(&self) -> bool {
        self.waited
    }

    /// The error for an extension that another command removed before this one got the lock.
    pub(crate) fn gone_meanwhile(&self, name: &str) -> anyhow::Error {
        let when = if self.waited {
            "while this one waited for the lock"
        } else {
            "meanwhile"
        };
        anyhow!(
            "\"{}\" was removed by another zot ext command {when}; nothing was changed",
            printable(name)
        )
    }

    fn clear_leftovers(&self) {
        for folder in [&self.folders.staging, &self.folders.trash] {
            for name in folder.names().unwrap_or_default() {
                let _ = folder.remove(&name);
            }
        }
    }

    /// A fresh staging directory on the same filesystem as the extensions root.
    pub(crate) fn stage(&self) -> Result<Staging> {
        self.check_same_filesystem()?;
        Staging::create_in(&self.folders.staging)
    }

    /// The staging folder, for temporary files that must be cleaned after a kill.
    pub(crate) fn scratch_folder(&self) -> &Folder {
        &self.folders.staging
    }

    /// The installed entry for `name` (which may be a symlink), if any.
    pub(crate) fn existing(&self, name: impl AsRef<OsStr>) -> Option<PathBuf> {
        let path = self.dirs.extensions().join(name.as_ref());
        fs::symlink_metadata(&path).ok().map(|_| path)
    }

    /// Places every staged tree of `batch` (see [`Store::move_into_place`]) with its record and file
    /// list, through the journal, flushing to disk four times for the whole batch: the
    /// journal entries are written and the file system flushed (entries and staged trees);
    /// the trees are renamed into place and the root flushed; records and file lists are
    /// committed and the file system flushed; the entries are deleted and `pending` flushed.
    /// Each step is on disk before the next begins, so whatever instant the run is killed
    /// at (or the power fails), each extension is its old version or its new one, and the
    /// next run commits the entry of every tree in place and drops the others. Results come
    /// in the batch's order; one that fails leaves the others going.
    pub(crate) fn publish_all(&self, batch: &[Placement]) -> Vec<Result<Published>> {
        let mut placed = self.announce(batch);
        self.flush_announced(batch, &mut placed);
        crashpoint::hit("place.before");
        self.move_announced(batch, &mut placed);
        crashpoint::hit("place.all");
        let saved = self.commit_placed(batch, &placed);
        crashpoint::hit("record.after");
        self.clear_committed(batch, &saved);
        placed
            .into_iter()
            .zip(saved)
            .map(|(dest, saved)| {
                Ok(Published {
                    dest: dest?,
                    record_error: saved.and_then(Result::err),
                })
            })
            .collect()
    }

    /// Writes the journal entry of every placement, unflushed; an error for each one that
    /// cannot be placed (a name twice in the batch, a missing tree, a full disk).
    fn announce(&self, batch: &[Placement]) -> Vec<Result<PathBuf>> {
        if let Err(e) = self.check_records_writable() {
            let shown = format!("{e:#}");
            return batch.iter().map(|_| Err(anyhow!("{shown}"))).collect();
        }
        let root = self.dirs.extensions();
        batch
            .iter()
            .enumerate()
            .map(|(i, p)| {
                if batch[..i].iter().any(|earlier| earlier.name == p.name) {
                    bail!("\"{}\" is placed twice in one batch", printable(p.name));
                }
                let tree = p.staging.identity()?;
                self.write_intent(p.name, p.record, tree, p.files)?;
                Ok(root.join(p.name))
            })
            .collect()
    }

    /// One flush of the file system puts the staged trees and their journal entries on disk;
    /// should it fail, nothing is placed and the entries go.
    fn flush_announced(&self, batch: &[Placement], placed: &mut [Result<PathBuf>]) {
        if !placed.iter().any(Result::is_ok) {
            return;
        }
        let Err(e) = self.folders.staging.sync_filesystem() else {
            return;
        };
        for (p, dest) in batch.iter().zip(placed.iter_mut()) {
            if dest.is_ok() {
                let _ = journal::clear(&self.folders.pending, p.name);
                journal::drop_list(&self.folders.pending, p.name);
                let tree = p.staging.tree();
                *dest = Err(anyhow!("cannot flush {} to disk: {e}", tree.display()));
            }
        }
    }

    /// Renames every announced tree into place, then flushes the root. A tree that cannot
    /// be moved gets its entry settled at once (dropped, or committed should the rename
    /// have happened after all), so that it never waits for the next run.
    fn move_announced(&self, batch: &[Placement], placed: &mut [Result<PathBuf>]) {
        if !placed.iter().any(Result::is_ok) {
            return;
        }
        let root = self.dirs.extensions();
        let made = create_dir(&root);
        let mut moved = 0;
        for (p, dest) in batch.iter().zip(placed.iter_mut()) {
            let Ok(to) = dest else { continue };
            let done = match &made {
                Ok(()) => self.move_into_place(p.staging, p.name, p.replace, to),
                Err(e) => Err(anyhow!("{e:#}")),
            };
            match done {
                Ok(()) => {
                    moved += 1;
                    crashpoint::hit("place.after");
                }
                Err(e) => {
                    let _ = self.settle_entry(p.name);
                    *dest = Err(e);
                }
            }
        }
        if moved == 0 {
            return;
        }
        let Err(e) = Folder::open_path(&root).and_then(|root| root.sync()) else {
            return;
        };
        for (p, dest) in batch.iter().zip(placed.iter_mut()) {
            if dest.is_ok() {
                let _ = self.settle_entry(p.name);
                *dest = Err(anyhow!("cannot flush {} to disk: {e}", root.display()));
            }
        }
    }

    /// Commits the record and file list of every placed tree, then flushes the file system
    /// once; `None` for a placement that was not placed.
    fn commit_placed(
        &self,
        batch: &[Placement],
        placed: &[Result<PathBuf>],
    ) -> Vec<Option<Result<()>>> {
        let mut saved: Vec<Option<Result<()>>> = batch
            .iter()
            .zip(placed)
            .map(|(p, dest)| {
                dest.is_ok().then(|| {
                    self.commit_files(p.name, p.files.is_some())
                        .and_then(|()| self.write_record(p.record, Flush::Later))
                })
            })
            .collect();
        if !saved.iter().flatten().any(Result::is_ok) {
            return saved;
        }
        if let Err(e) = self.folders.staging.sync_filesystem() {
            let sources = self.folders.sources.path().display().to_string();
            for one in saved.iter_mut().flatten() {
                if one.is_ok() {
                    *one = Err(anyhow!("cannot flush {sources} to disk: {e}"));
                }
            }
        }
        saved
    }

    /// Drops the journal entry of every placement whose record is committed, then flushes
    /// `pending` once (an entry left behind is settled by the next run to the same result).
    fn clear_committed(&self, batch: &[Placement], saved: &[Option<Result<()>>]) {
        let mut cleared = false;
        for (p, saved) in batch.iter().zip(saved) {
            if matches!(saved, Some(Ok(()))) {
                cleared |= journal::clear(&self.folders.pending, p.name).is_ok();
            }
        }
        if cleared {
            let _ = self.folders.pending.sync();
        }
    }

    /// Settles the journal entry of `name` alone (see [`journal::settle_one`]).
    fn settle_entry(&self, name: &str) -> Result<()> {
        journal::settle_one(&self.dirs, &self.folders.pending, name, |name, intent| {
            self.commit_intent(name, intent)
        })
    }

    /// Moves one staged tree to `extensions/<name>`, flushed before and after (what
    /// [`Store::publish_all`] does with one tree, without the journal).
    #[cfg(test)]
    fn place(&self, staging: &Staging, name: &str, replace: bool) -> Result<PathBuf> {
        let root = self.dirs.extensions();
        create_dir(&root)?;
        let dest = root.join(name);
        self.folders.staging.sync_filesystem()?;
        self.move_into_place(staging, name, replace, &dest)?;
        Folder::open_path(&root)?.sync()?;
        Ok(dest)
    }

    /// Renames the staged tree to `dest` (`extensions/<name>`, whose folder exists); with
    /// `replace`, atomically swaps it with the installed copy, which stays in place until the
    /// new one is. Flushes nothing: the caller flushes the staged tree before and the root
    /// after. `name` is the folder name (a manifest name, or an existing folder's own name).
    fn move_into_place(
        &self,
        staging: &Staging,
        name: &str,
        replace: bool,
        dest: &Path,
    ) -> Result<()> {
        let tree = staging.tree();
        let placed = if replace && self.existing(name).is_some() {
            exchange(&tree, dest).with_context(|| format!("cannot replace {}", dest.display()))
        } else {
            rename_new(&tree, dest)
        };
        placed.map_err(|e| self.explain_cross_device(e))
    }

    /// Moves `extensions/<name>` out of the root to `trash/<name>/<name>`, deletes its
    /// record, then deletes it. A symlinked extension loses only its link; nothing outside
    /// the root is followed. The folder in the trash is the journal of a removal (it needs
    /// no data written, so `remove` works on a full disk): after a kill, the next run
    /// deletes the record of every extension it finds there.
    pub(crate) fn remove(&self, name: impl AsRef<OsStr>) -> Result<PathBuf> {
        self.check_same_filesystem()?;
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
        // The record is deleted after the move: make sure it can be, before anything changes.
        self.check_records_writable()?;
        self.check_record_deletable(&name.to_string_lossy())?;
        let trash = &self.folders.trash;
        let holder = trash.path().join(name);
        let made = trash.remove(name).and_then(|()| {
            rustix::fs::mkdirat(trash, name, Mode::from_raw_mode(0o700)).map_err(Into::into)
        });
        made.with_context(|| format!("cannot create {}", holder.display()))?;
        if let Err(e) = fs::rename(&dest, holder.join(name)) {
            let _ = trash.remove(name);
            let e = anyhow::Error::from(e).context(format!(
                "cannot move {} out of the extensions folder",
                dest.display()
            ));
            return Err(self.explain_cross_device(e));
        }
        let _ = Folder::open_path(&self.dirs.extensions()).and_then(|root| root.sync());
        crashpoint::hit("remove.moved");
        self.delete_record(&name.to_string_lossy())?;
        crashpoint::hit("remove.unrecorded");
        trash.remove(name).with_context(|| {
            format!(
                "the extension was removed, but deleting its files in {} failed",
                holder.display()
            )
        })?;
        Ok(dest)
    }

    /// A rename between the state folder and the extensions folder that failed because they
    /// are on different filesystems (the extensions folder is a link or a mount point
    /// elsewhere) said plainly, with what to do; any other error as it is.
    fn explain_cross_device(&self, e: anyhow::Error) -> anyhow::Error {
        let cross_device = e.chain().any(|cause| {
            cause
                .downcast_ref::<io::Error>()
                .and_then(io::Error::raw_os_error)
                == Some(Errno::XDEV.raw_os_error())
        });
        if !cross_device {
            return e;
        }
        self.cross_device_error()
    }

    /// Fails before anything is staged, saved or backed up when the extensions folder is on
    /// another filesystem than the state folder (no rename between them could succeed).
    pub(crate) fn check_same_filesystem(&self) -> Result<()> {
        let Ok(root) = fs::metadata(self.dirs.extensions()) else {
            return Ok(()); // created beside the state folder when first needed
        };
        let staging = rustix::fs::fstat(&self.folders.staging)?;
        if std::os::unix::fs::MetadataExt::dev(&root) != staging.st_dev {
            return Err(self.cross_device_error());
        }
        Ok(())
    }

    fn cross_device_error(&self) -> anyhow::Error {
        anyhow!(
            "{} is on another filesystem than {}; zot ext prepares every change there and renames it into place, which works only within one filesystem: make {} a real folder (or put all of {} on that filesystem) (nothing was changed)",
            printable(&self.dirs.extensions().display().to_string()),
            printable(&self.dirs.state().display().to_string()),
            printable(&self.dirs.extensions().display().to_string()),
            printable(&self.dirs.base.display().to_string())
        )
    }

    /// Fails, before anything changes, when this user cannot write install records.
    fn check_records_writable(&self) -> Result<()> {
        let sources = &self.folders.sources;
        rustix::fs::accessat(sources, ".", Access::WRITE_OK, AtFlags::EACCESS).map_err(|e| {
            anyhow!(
                "cannot write the install records in {}: {}; zot ext needs write access there (nothing was changed)",
                sources.path().display(),
                io::Error::from(e)
            )
        })
    }

    /// Fails, before anything changes, when the install record of `name` is a folder
    /// (which unlinking cannot delete); a missing record or any other file is fine.
    fn check_record_deletable(&self, name: &str) -> Result<()> {
        let path = self.folders.sources.path().join(Record::file_name(name));
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => bail!(
                "{} is a folder, not an install record: remove it; zot ext recreates it (nothing was changed)",
                printable(&path.display().to_string())
            ),
            _ => Ok(()),
        }
    }

    /// Writes the journal entry of `name` (see [`journal`]): `record` for the staged `tree`,
    /// and `files` beside it in the bytes of `files/<name>.json`, not flushed (the caller
    /// flushes the file system before the rename).
    fn write_intent(
        &self,
        name: &str,
        record: &Record,
        tree: Identity,
        files: Option<&FileList>,
    ) -> Result<()> {
        let intent: Intent<&Record, FileList> = Intent {
            record,
            tree,
            files: None,
            files_beside: files.is_some(),
        };
        let list = files.map(FileList::to_bytes);
        let (staging, pending) = (&self.folders.staging, &self.folders.pending);
        journal::write(staging, pending, name, &intent, list.as_deref())
    }

    /// Applies or drops every journal entry a killed run left, removals and installs: an
    /// install whose tree is in place gets its file list and record committed.
    fn resolve_journal(&self) -> Result<()> {
        journal::settle_removals(&self.dirs, &self.folders.trash, |name| {
            self.delete_record(name)
        })?;
        journal::settle_installs(&self.dirs, &self.folders.pending, |name, intent| {
            self.commit_intent(name, intent)
        })
    }

    /// Commits the file list and record of a journal entry whose tree is in place: the list
    /// beside the entry is moved into `files/` (gone, it was moved already), an inline one
    /// (written by an earlier version) is written there.
    fn commit_intent(&self, name: &str, intent: &Intent<Record, FileList>) -> Result<()> {
        if intent.files_beside {
            let folder = self.files_folder()?;
            if self.move_list(name)? {
                folder
                    .sync()
                    .with_context(|| format!("cannot flush {} to disk", folder.path().display()))?;
            }
        } else {
            self.save_files(name, intent.files.as_ref())?;
        }
        self.save_record(&intent.record)
    }

    /// Moves the folder `sub` that `staging` holds beside its tree to
    /// `backup/<name>/<now>/`, then flushes it; returns where it went.
    pub(crate) fn keep_backup(&self, staging: &Staging, sub: &str, name: &str) -> Result<PathBuf> {
        backup::keep(&self.dirs, staging, sub, name)
    }

    /// Deletes all but the newest few saved copies of `name` (see [`backup`]).
    pub(crate) fn rotate_backups(&self, name: &str) -> Result<()> {
        backup::rotate(&self.dirs, name)
    }

    /// Writes the install record of `record.name` atomically and durably.
    pub(crate) fn save_record(&self, record: &Record) -> Result<()> {
        self.write_record(record, Flush::Now)
    }

    /// Writes the install record of `record.name` atomically; [`Flush::Now`]: durably too
    /// (else the caller flushes the file system).
    fn write_record(&self, record: &Record, flush: Flush) -> Result<()> {
        let file = Record::file_name(&record.name);
        let (staging, sources) = (&self.folders.staging, &self.folders.sources);
        let written = staging.replace_file(sources, &file, &record.to_bytes(), 0o644, flush);
        written.with_context(|| {
            format!(
                "cannot write the install record {}",
                self.folders.sources.path().join(&file).display()
            )
        })
    }

    /// Writes (with `None`, deletes) the file list of `name` atomically and durably.
    pub(crate) fn save_files(&self, name: &str, files: Option<&FileList>) -> Result<()> {
        self.write_files(name, files, Flush::Now)
    }

    /// Commits the file list of `name` placed by [`Store::publish_all`], unflushed (the caller
    /// flushes the file system): with `listed`, the list written beside its journal entry is
    /// renamed into `files/`; without, an older list there is deleted (a linked extension
    /// has none).
    fn commit_files(&self, name: &str, listed: bool) -> Result<()> {
        if !listed {
            return self.write_files(name, None, Flush::Later);
        }
        if self.move_list(name)? {
            return Ok(());
        }
        bail!(
            "the file list {} written before the rename is gone; the store is changed by something else than zot ext",
            self.folders
                .pending
                .path()
                .join(journal::list_name(name))
                .display()
        )
    }

    /// Renames `pending/<name>.list` to `files/<name>.json`, unflushed; `false` when there is
    /// no such list.
    fn move_list(&self, name: &str) -> Result<bool> {
        let folder = self.files_folder()?;
        let moved = rustix::fs::renameat(
            &self.folders.pending,
            journal::list_name(name),
            folder,
            FileList::file_name(name),
        );
        match moved {
            Ok(()) => Ok(true),
            Err(Errno::NOENT) => Ok(false),
            Err(e) => Err(io::Error::from(e)).with_context(|| {
                format!(
                    "cannot write the file list {}",
                    folder.path().join(FileList::file_name(name)).display()
                )
            }),
        }
    }

    /// The folder of file lists (`files/`).
    fn files_folder(&self) -> Result<&Folder> {
        self.folders.files.as_ref().ok_or_else(|| {
            anyhow!(
                "the file lists folder in {} is missing",
                self.dirs.state().display()
            )
        })
    }

    /// [`Store::save_files`]; with [`Flush::Later`], nothing is flushed (the caller flushes
    /// the file system).
    fn write_files(&self, name: &str, files: Option<&FileList>, flush: Flush) -> Result<()> {
        let file = FileList::file_name(name);
        let folder = self.files_folder()?;
        let path = || folder.path().join(&file);
        let staging = &self.folders.staging;
        match (files, flush) {
            (Some(list), _) => staging.replace_file(folder, &file, &list.to_bytes(), 0o644, flush),
            (None, Flush::Now) => folder.unlink(&file),
            (None, Flush::Later) => folder.unlink_unflushed(&file).map(drop),
        }
        .with_context(|| match files {
            Some(_) => format!("cannot write the file list {}", path().display()),
            None => format!("cannot delete the file list {}", path().display()),
        })
    }

    /// Deletes the install record of `name` and its file list.
    pub(crate) fn delete_record(&self, name: &str) -> Result<()> {
        if self.folders.files.is_some() {
            self.save_files(name, None)?;
        }
        let file = Record::file_name(name);
        self.folders.sources.unlink(&file).with_context(|| {
            format!(
                "cannot delete the install record {}",
                self.folders.sources.path().join(&file).display()
            )
        })
    }
}

impl Folders {
    /// Opens (with `create`, makes) every folder of the state folder; `None` when one is
    /// missing and not created.
    fn open(state: &Folder, create: bool) -> Result<Option<Folders>> {
        let sub = |name: &str| {
            lenient(state.sub(name, create), create)
                .map_err(|e| state_error(&state.path().join(name), e))
        };
        let (Some(staging), Some(trash), Some(sources), Some(pending)) = (
            sub("staging")?,
            sub("trash")?,
            sub("sources")?,
            sub("pending")?,
        ) else {
            return Ok(None);
        };
        let files = sub("files")?;
        Ok(Some(Folders {
            staging,
            trash,
            sources,
            pending,
            files,
        }))
    }
}

/// A project's `.zot` and `.zot/extensions` come with the repository, which anyone may
/// have written: zot ext never changes a project scope through a link there, since the link
/// could lead anywhere (a global `$ZOT_HOME` and its `extensions` folder are the user's
/// own choice and may be links).
fn refuse_project_links(dirs: &ScopeDirs) -> Result<()> {
    if dirs.scope != Scope::Project {
        return Ok(());
    }
    for path in [dirs.base.clone(), dirs.extensions()] {
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            let target = fs::read_link(&path).unwrap_or_default();
            bail!(
                "{} is a symbolic link to {}; zot ext never changes a project's extensions through a link (a cloned repository could point it anywhere): replace it with a real folder, or use --global (nothing was changed)",
                printable(&path.display().to_string()),
                printable(&target.display().to_string())
            );
        }
    }
    Ok(())
}

/// The lock file, never through a link and never blocking on a special file; `None` when
/// it is missing and not created.
fn open_lock(state: &Folder, create: bool) -> Result<Option<File>> {
    let path = state.path().join("lock");
    let shown = printable(&path.display().to_string());
    let mut flags = OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    if create {
        flags |= OFlags::CREATE;
    }
    let wrong = |kind: &str| {
        anyhow!(
            "{shown} is {kind}, not the store's lock file: remove it; zot ext recreates it (nothing was changed)"
        )
    };
    let fd = match rustix::fs::openat(state, "lock", flags, Mode::from_raw_mode(0o644)) {
        Ok(fd) => fd,
        Err(e @ (Errno::LOOP | Errno::ISDIR | Errno::NXIO | Errno::OPNOTSUPP | Errno::NOTDIR)) => {
            return Err(match state.stat("lock") {
                Ok(Some(stat)) => wrong(fsx::kind_of(&stat)),
                _ => anyhow!("cannot open the lock file {shown}: {}", io::Error::from(e)),
            });
        }
        Err(_) if !create => return Ok(None),
        Err(e) => {
            return Err(anyhow!(
                "cannot open the lock file {shown}: {}",
                io::Error::from(e)
            ));
        }
    };
    let stat = rustix::fs::fstat(&fd)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(wrong(fsx::kind_of(&stat)));
    }
    Ok(Some(File::from(fd)))
}

pub(crate) fn create_dir(path: &Path) -> Result<()> {
    fs::create_dir_all(path).map_err(|e| match e.kind() {
        io::ErrorKind::PermissionDenied => anyhow!(
            "cannot create {}: permission denied; zot ext needs write access there",
            path.display()
        ),
        _ => anyhow!("cannot create {}: {e}", path.display()),
    })
}

/// Takes the lock, waiting up to [`LOCK_WAIT`]; returns whether it had to wait.
fn acquire(lock: &File, state: &Path, root: &Path) -> Result<bool> {
    let started = Instant::now();
    let mut waited = false;
    loop {
        match lock.try_lock() {
            Ok(()) => return Ok(waited),
            Err(TryLockError::WouldBlock) if started.elapsed() < LOCK_WAIT => {
                waited = true;
                thread::sleep(Duration::from_millis(50));
            }
            Err(TryLockError::WouldBlock) => bail!(
                "another zot ext command is changing {} (it holds {}); wait for it to finish and try again",
                root.display(),
                state.join("lock").display()
            ),
            Err(TryLockError::Error(e)) => {
                return Err(
                    anyhow!(e).context(format!("cannot lock {}", state.join("lock").display()))
                );
            }
        }
    }
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

    impl Store {
        /// One tree published alone, listed as it is (a link: no list).
        fn publish(
            &self,
            staging: &Staging,
            name: &str,
            replace: bool,
            record: &Record,
        ) -> Result<Published> {
            let tree = staging.tree();
            let files = match fs::symlink_metadata(&tree) {
                Ok(meta) if meta.is_dir() => Some(FileList::scan(&tree)?),
                _ => None,
            };
            let placement = Placement {
                staging,
                name,
                replace,
                record,
                files: files.as_ref(),
            };
            let mut published = self.publish_all(&[placement]);
            published.pop().expect("one result for one placement")
        }
    }
    use crate::catalog::paths::Scope;

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

    fn record(name: &str, source: &str) -> Record {
        Record::new(name, source.into(), crate::store::record::Kind::Path)
    }

    fn pending_names(s: &Store) -> Vec<std::ffi::OsString> {
        s.folders.pending.names().unwrap()
    }

    /// Installs `a` from `/src/old` (a tree holding the file `old`), as a first version to
    /// replace.
    fn publish_old(s: &Store) {
        let first = stage_with(s, "old");
        s.publish(&first, "a", false, &record("a", "/src/old"))
            .unwrap();
    }

    #[test]
    fn a_placed_tree_gets_its_journalled_record_on_the_next_open() {
        let tmp = tempfile::tempdir().unwrap();
        let s = store(tmp.path());
        let staging = stage_with(&s, "new");
        let r = record("a", "/src/new");
        // What publish does up to a kill right after the rename.
        s.write_intent("a", &r, staging.identity().unwrap(), None)
            .unwrap();
        s.place(&staging, "a", false).unwrap();
        std::mem::forget(staging);
        let dirs = s.dirs.clone();
        drop(s);
        let s = Store::open(&dirs).unwrap();
        assert_eq!(Record::load(&dirs, "a").unwrap().source, "/src/new");
        assert!(pending_names(&s).is_empty());
        assert!(s.folders.staging.is_empty().unwrap());
    }

    #[test]
    fn a_reader_without_the_lock_sees_the_journalled_record_once_the_tree_is_placed() {
        let tmp = tempfile::tempdir().unwrap();
        let s = store(tmp.path());
        publish_old(&s);
        let second = stage_with(&s, "new");
        let r = record("a", "/src/new");
        s.write_intent("a", &r, second.identity().unwrap(), None)
            .unwrap();
        // Before the rename: the old record describes the old tree.
        assert_eq!(Record::load(&s.dirs, "a").unwrap().source, "/src/old");
        s.place(&second, "a", true).unwrap();
        // After it, before the record's commit: the journal's record.
        assert_eq!(Record::load(&s.dirs, "a").unwrap().source, "/src/new");
    }

    #[test]
    fn publish_commits_the_file_list_with_the_record_and_the_journal_finishes_both() {
        let tmp = tempfile::tempdir().unwrap();
        let s = store(tmp.path());
        publish_old(&s);
        let listed = FileList::load(&s.dirs, "a").unwrap();
        assert!(listed.get(b"old").is_some());
        // A kill right after the rename of a second version: the journal's list counts
        // for readers at once, and the next open commits it.
        let second = stage_with(&s, "new");
        let files = FileList::scan(&second.tree()).unwrap();
        let r = record("a", "/src/new");
        s.write_intent("a", &r, second.identity().unwrap(), Some(&files))
            .unwrap();
        s.place(&second, "a", true).unwrap();
        assert_eq!(FileList::load(&s.dirs, "a").unwrap(), files);
        std::mem::forget(second);
        let dirs = s.dirs.clone();
        drop(s);
        let s = Store::open(&dirs).unwrap();
        assert!(pending_names(&s).is_empty());
        assert_eq!(FileList::load(&dirs, "a").unwrap(), files);
        s.remove("a").unwrap();
        assert!(FileList::load(&dirs, "a").is_none());
        assert!(!dirs.state().join("files/a.json").exists());
    }

    fn placements<'a>(stagings: &'a [(&'a str, Staging, Record)]) -> Vec<Placement<'a>> {
        stagings
            .iter()
            .map(|(name, staging, record)| Placement {
                staging,
                name,
                replace: false,
                record,
                files: None,
            })
            .collect()
    }

    #[test]
    fn a_batch_places_every_tree_with_its_record_and_leaves_the_journal_empty() {
        let tmp = tempfile::tempdir().unwrap();
        let s = store(tmp.path());
        let stagings: Vec<(&str, Staging, Record)> = ["a", "b", "c"]
            .into_iter()
            .map(|name| (name, stage_with(&s, name), record(name, name)))
            .collect();
        let published = s.publish_all(&placements(&stagings));
        for (name, result) in ["a", "b", "c"].into_iter().zip(published) {
            let published = result.unwrap();
            assert!(published.record_error.is_none());
            assert!(published.dest.join(name).is_file());
            assert_eq!(Record::load(&s.dirs, name).unwrap().source, name);
        }
        assert!(pending_names(&s).is_empty());
    }

    #[test]
    fn one_tree_of_a_batch_that_cannot_be_placed_leaves_the_others_placed() {
        let tmp = tempfile::tempdir().unwrap();
        let s = store(tmp.path());
        // "b" is taken by a folder zot did not place, and "a" is in the batch twice.
        fs::create_dir_all(s.dirs.extension("b")).unwrap();
        let stagings: Vec<(&str, Staging, Record)> = ["a", "b", "c", "a"]
            .into_iter()
            .map(|name| (name, stage_with(&s, name), record(name, name)))
            .collect();
        let published = s.publish_all(&placements(&stagings));
        let failed: Vec<bool> = published.iter().map(Result::is_err).collect();
        assert_eq!(failed, [false, true, false, true]);
        assert!(s.dirs.extension("a").join("a").is_file());
        assert!(s.dirs.extension("c").join("c").is_file());
        assert!(!s.dirs.extension("b").join("b").exists());
        assert!(Record::load(&s.dirs, "b").is_none());
        assert!(pending_names(&s).is_empty());
    }

    /// A journal entry as earlier versions of zot ext wrote it (the list inline), typed.
    #[derive(serde::Serialize)]
    struct EarlierIntent {
        record: Record,
        tree: Identity,
        files: Option<FileList>,
    }

    #[test]
    fn a_journal_entry_holds_the_record_and_its_list_is_beside_it_as_committed() {
        let tmp = tempfile::tempdir().unwrap();
        let s = store(tmp.path());
        let staging = stage_with(&s, "f");
        let tree = staging.identity().unwrap();
        let files = FileList::scan(&staging.tree()).unwrap();
        let r = record("a", "/src");
        s.write_intent("a", &r, tree, Some(&files)).unwrap();
        let pending = s.dirs.state().join("pending");
        let entry: serde_json::Value =
            serde_json::from_slice(&fs::read(pending.join("a.json")).unwrap()).unwrap();
        assert_eq!(entry["files"], serde_json::Value::Null);
        assert_eq!(entry["files_beside"], true);
        assert_eq!(fs::read(pending.join("a.list")).unwrap(), files.to_bytes());
        // Without a list (a linked extension), the entry is what earlier versions wrote.
        s.write_intent("a", &r, tree, None).unwrap();
        let earlier = EarlierIntent {
            record: r.clone(),
            tree,
            files: None,
        };
        let written = fs::read(pending.join("a.json")).unwrap();
        assert_eq!(written, serde_json::to_vec(&earlier).unwrap());
    }

    #[test]
    fn an_entry_written_by_an_earlier_version_with_its_list_inline_is_settled() {
        let tmp = tempfile::tempdir().unwrap();
        let s = store(tmp.path());
        let staging = stage_with(&s, "new");
        let files = FileList::scan(&staging.tree()).unwrap();
        let earlier = EarlierIntent {
            record: record("a", "/src/new"),
            tree: staging.identity().unwrap(),
            files: Some(files.clone()),
        };
        let entry = serde_json::to_vec(&earlier).unwrap();
        fs::write(s.dirs.state().join("pending/a.json"), entry).unwrap();
        s.place(&staging, "a", false).unwrap();
        std::mem::forget(staging);
        let dirs = s.dirs.clone();
        assert_eq!(FileList::load(&dirs, "a").unwrap(), files);
        drop(s);
        let s = Store::open(&dirs).unwrap();
        assert!(pending_names(&s).is_empty());
        assert_eq!(Record::load(&dirs, "a").unwrap().source, "/src/new");
        let committed = fs::read(dirs.state().join("files/a.json")).unwrap();
        assert_eq!(committed, files.to_bytes());
    }

    #[test]
    fn an_entry_whose_list_was_committed_before_a_kill_settles_to_that_list() {
        let tmp = tempfile::tempdir().unwrap();
        let s = store(tmp.path());
        publish_old(&s);
        let second = stage_with(&s, "new");
        let files = FileList::scan(&second.tree()).unwrap();
        let r = record("a", "/src/new");
        s.write_intent("a", &r, second.identity().unwrap(), Some(&files))
            .unwrap();
        s.place(&second, "a", true).unwrap();
        // Killed after the list's rename into files/, before the record's commit.
        assert!(s.move_list("a").unwrap());
        assert_eq!(FileList::load(&s.dirs, "a").unwrap(), files);
        assert_eq!(Record::load(&s.dirs, "a").unwrap().source, "/src/new");
        std::mem::forget(second);
        let dirs = s.dirs.clone();
        drop(s);
        let s = Store::open(&dirs).unwrap();
        assert!(pending_names(&s).is_empty());
        assert_eq!(FileList::load(&dirs, "a").unwrap(), files);
        assert_eq!(Record::load(&dirs, "a").unwrap().source, "/src/new");
    }

    #[test]
    fn a_list_whose_tree_was_never_placed_goes_with_its_entry_or_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let s = store(tmp.path());
        publish_old(&s);
        let old = FileList::load(&s.dirs, "a").unwrap();
        let second = stage_with(&s, "new");
        let files = FileList::scan(&second.tree()).unwrap();
        let r = record("a", "/src/new");
        s.write_intent("a", &r, second.identity().unwrap(), Some(&files))
            .unwrap();
        // Before the rename, readers see the old list; "b" has a list but no entry (a kill
        // between the two writes).
        assert_eq!(FileList::load(&s.dirs, "a").unwrap(), old);
        fs::write(s.dirs.state().join("pending/b.list"), files.to_bytes()).unwrap();
        std::mem::forget(second);
        let dirs = s.dirs.clone();
        drop(s);
        let s = Store::open(&dirs).unwrap();
        assert!(pending_names(&s).is_empty());
        assert_eq!(FileList::load(&dirs, "a").unwrap(), old);
        assert!(FileList::load(&dirs, "b").is_none());
    }

    #[test]
    fn an_entry_left_by_a_run_without_file_lists_is_settled() {
        let tmp = tempfile::tempdir().unwrap();
        let s = store(tmp.path());
        let staging = stage_with(&s, "new");
        let tree = staging.identity().unwrap();
        let entry = format!(
            r#"{{"record":{{"name":"a","source":"/src/new","kind":"path","ref":null,"commit":null,"installed_at":"2026-01-01T00:00:00Z"}},"tree":{{"dev":{},"ino":{}}}}}"#,
            tree.dev, tree.ino
        );
        fs::write(s.dirs.state().join("pending/a.json"), entry).unwrap();
        s.place(&staging, "a", false).unwrap();
        std::mem::forget(staging);
        let dirs = s.dirs.clone();
        assert_eq!(Record::load(&dirs, "a").unwrap().source, "/src/new");
        drop(s);
        let s = Store::open(&dirs).unwrap();
        assert!(pending_names(&s).is_empty());
        let committed = fs::read(dirs.state().join("sources/a.json")).unwrap();
        let committed: Record = serde_json::from_slice(&committed).unwrap();
        assert_eq!(committed.installed_at, "2026-01-01T00:00:00Z");
        assert!(FileList::load(&dirs, "a").is_none());
    }

    #[test]
    fn a_tree_never_placed_keeps_the_old_record() {
        let tmp = tempfile::tempdir().unwrap();
        let s = store(tmp.path());
        publish_old(&s);
        let second = stage_with(&s, "new");
        s.write_intent(
            "a",
            &record("a", "/src/new"),
            second.identity().unwrap(),
            None,
        )
        .unwrap();
        std::mem::forget(second);
        let dirs = s.dirs.clone();
        drop(s);
        let s = Store::open(&dirs).unwrap();
        assert_eq!(Record::load(&dirs, "a").unwrap().source, "/src/old");
        assert!(dirs.extension("a").join("old").exists());
        assert!(pending_names(&s).is_empty());
    }

    #[test]
    fn a_removal_is_finished_only_if_the_entry_moved_out() {
        let tmp = tempfile::tempdir().unwrap();
        let s = store(tmp.path());
        for name in ["moved", "stayed", "back"] {
            let staging = stage_with(&s, "f");
            s.publish(&staging, name, false, &record(name, "/src"))
                .unwrap();
        }
        // What remove does up to a kill after the move: the folder in the trash is the
        // journal. "stayed" was killed before its move; "back" was installed again since.
        let trash = s.dirs.state().join("trash");
        for name in ["moved", "stayed", "back"] {
            fs::create_dir(trash.join(name)).unwrap();
        }
        fs::rename(s.dirs.extension("moved"), trash.join("moved/moved")).unwrap();
        fs::create_dir(trash.join("back/back")).unwrap();
        let dirs = s.dirs.clone();
        drop(s);
        let s = Store::open(&dirs).unwrap();
        assert!(Record::load(&dirs, "moved").is_none());
        assert!(Record::load(&dirs, "stayed").is_some());
        assert!(Record::load(&dirs, "back").is_some());
        assert!(s.folders.trash.is_empty().unwrap());
    }

    #[test]
    fn a_linked_state_subfolder_is_refused_and_nothing_is_deleted() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("keep"), "x").unwrap();
        let dirs = ScopeDirs {
            scope: Scope::Global,
            base: tmp.path().to_path_buf(),
        };
        drop(Store::open(&dirs).unwrap());
        for sub in ["staging", "trash", "sources", "pending"] {
            let path = dirs.state().join(sub);
            fs::remove_dir(&path).unwrap();
            std::os::unix::fs::symlink(outside.path(), &path).unwrap();
            let err = Store::open(&dirs).err().unwrap().to_string();
            assert!(
                err.contains("is a symbolic link") && err.contains(sub),
                "{err}"
            );
            assert!(Store::tidy(&dirs).is_err());
            assert!(outside.path().join("keep").exists());
            fs::remove_file(&path).unwrap();
            fs::create_dir(&path).unwrap();
        }
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
